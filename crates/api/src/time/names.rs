//! Month and weekday names as people write them, for the chrono formats that read
//! names (`%b`, `%B`, `%a`, `%A`). chrono reads English names only; before it reads a
//! value, the value's month word, in English, German, French or Spanish (full or
//! abbreviated, any case, with or without its accents or a trailing dot: `März`,
//! `Maerz`, `Mär.`, `févr.`, `fevrier`, `ene.`, `setiembre`, `Sept.`), is replaced by
//! its English name, or abbreviation when it is one: `%B` reads both, `%b` the
//! abbreviations, as chrono's English does. The rest of the format is
//! the user's and is read as written: `"%d. %B %Y"` reads `15. März 2023`, `"%d de %B de
//! %Y"` reads `12 de enero de 2020`.
//!
//! Decision: a weekday word (English, German, French or Spanish: `Mon`, `Montag`,
//! `lun.`, `miércoles`) is taken out of the value with the format's weekday item and is
//! not checked against the date, as mail readers do with `Mon, 15 Jan 2023`: the date
//! says which day it is, and a weekday that disagrees is a slip of whoever typed it.
//! A format with a weekday item still needs a weekday word in the value.

use chrono::format::{Fixed, Item};

/// What a format reads as names, and how a value's names are put for chrono.
#[derive(Debug, Clone)]
pub(super) struct Names {
    /// The format reads a month name: a value's month word becomes English.
    month: bool,
    /// The format writes a `.` right after its month name (`"%b. %d"`): a dot after the
    /// value's month word is kept for it, else dropped (`févr.` read by `%b`).
    month_dot: bool,
    /// The format's weekday item, taken out of its items.
    weekday: Option<WeekdayItem>,
}

#[derive(Debug, Clone, Copy)]
struct WeekdayItem {
    /// It comes before the month name (or there is none): the value's first weekday
    /// word is its weekday, else its last.
    first: bool,
    /// The format writes a `.` right after it, kept for it.
    dot: bool,
}

/// The English abbreviations, which chrono's `%b` and `%B` read.
const SHORT: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// The English names, which chrono's `%B` reads.
const FULL: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// The names `items` read; `None` when it reads none. A weekday item is taken out of
/// `items`: [`Names::english`] takes the weekday word out of the value.
pub(super) fn compile(items: &mut Vec<Item<'static>>) -> Option<Names> {
    let month_at = items
        .iter()
        .position(|i| matches!(i, Item::Fixed(Fixed::ShortMonthName | Fixed::LongMonthName)));
    let weekday_at = items.iter().position(|i| {
        matches!(
            i,
            Item::Fixed(Fixed::ShortWeekdayName | Fixed::LongWeekdayName)
        )
    });
    if month_at.is_none() && weekday_at.is_none() {
        return None;
    }
    let dot_after = |at: usize| match items.get(at + 1) {
        Some(Item::Literal(l)) => l.starts_with('.'),
        Some(Item::OwnedLiteral(l)) => l.starts_with('.'),
        _ => false,
    };
    let names = Names {
        month: month_at.is_some(),
        month_dot: month_at.is_some_and(dot_after),
        weekday: weekday_at.map(|at| WeekdayItem {
            first: month_at.is_none_or(|m| at < m),
            dot: dot_after(at),
        }),
    };
    if let Some(at) = weekday_at {
        items.remove(at);
    }
    Some(names)
}

impl Names {
    /// `s` with its month word in English and its weekday word taken out, for chrono;
    /// `None` when the format reads a weekday and `s` has no weekday word.
    pub(super) fn english(&self, s: &str) -> Option<String> {
        let words = words(s);
        let weekday = match self.weekday {
            None => None,
            Some(w) => {
                let mut days = words.iter().filter(|&&(a, b)| is_weekday(&s[a..b]));
                let day = if w.first {
                    days.next()
                } else {
                    days.next_back()
                };
                Some(*day?)
            }
        };
        let mut out = String::with_capacity(s.len() + 8);
        let mut at = 0;
        for &(a, b) in &words {
            let (english, keep_dot) = if Some((a, b)) == weekday {
                ("", self.weekday.is_some_and(|w| w.dot))
            } else if let Some((m, full)) = self.month.then(|| month(&s[a..b])).flatten() {
                (if full { FULL[m] } else { SHORT[m] }, self.month_dot)
            } else {
                continue;
            };
            out.push_str(&s[at..a]);
            out.push_str(english);
            at = b;
            if !keep_dot && s[b..].starts_with('.') {
                at += 1;
            }
        }
        out.push_str(&s[at..]);
        Some(out)
    }
}

/// The byte ranges of the runs of letters in `s`.
fn words(s: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        match (c.is_alphabetic(), start) {
            (true, None) => start = Some(i),
            (false, Some(a)) => {
                out.push((a, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(a) = start {
        out.push((a, s.len()));
    }
    out
}

/// A word lower-cased and without its accents (`März` is `marz`, `févr` is `fevr`).
fn folded(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    for c in word.chars().flat_map(char::to_lowercase) {
        match c {
            'ä' | 'à' | 'â' | 'á' => out.push('a'),
            'é' | 'è' | 'ê' | 'ë' => out.push('e'),
            'î' | 'ï' | 'í' => out.push('i'),
            'ö' | 'ô' | 'ó' => out.push('o'),
            'ü' | 'û' | 'ù' | 'ú' => out.push('u'),
            'ç' => out.push('c'),
            'ñ' => out.push('n'),
            c => out.push(c),
        }
    }
    out
}

/// The month a month word names (0 for January) in English, German, French or
/// Spanish, and whether it is the full name (`Januar`, `janvier`, `enero`) rather than
/// an abbreviation (`Jan.`, `janv.`, `ene.`): `%b` reads abbreviations only, as chrono
/// does in English (`May`, `Mai`, `juin` are both).
fn month(word: &str) -> Option<(usize, bool)> {
    Some(match folded(word).as_str() {
        "jan" | "janv" | "ene" => (0, false),
        "january" | "januar" | "janner" | "jaenner" | "janvier" | "enero" => (0, true),
        "feb" | "febr" | "fev" | "fevr" => (1, false),
        "february" | "februar" | "feber" | "fevrier" | "febrero" => (1, true),
        "mar" | "mrz" => (2, false),
        "march" | "marz" | "maerz" | "mars" | "marzo" => (2, true),
        "apr" | "avr" | "abr" => (3, false),
        "april" | "avril" | "abril" => (3, true),
        "may" | "mai" | "mayo" => (4, false),
        "jun" => (5, false),
        "june" | "juni" | "juin" | "junio" => (5, true),
        "jul" | "juil" => (6, false),
        "july" | "juli" | "juillet" | "julio" => (6, true),
        "aug" | "ago" => (7, false),
        "august" | "aout" | "agosto" => (7, true),
        "sep" | "sept" | "set" => (8, false),
        "september" | "septembre" | "septiembre" | "setiembre" => (8, true),
        "oct" | "okt" => (9, false),
        "october" | "oktober" | "octobre" | "octubre" => (9, true),
        "nov" => (10, false),
        "november" | "novembre" | "noviembre" => (10, true),
        "dec" | "dez" | "dic" => (11, false),
        "december" | "dezember" | "decembre" | "diciembre" => (11, true),
        _ => return None,
    })
}

/// Whether a word is a weekday, in English, German, French or Spanish, full or
/// abbreviated.
fn is_weekday(word: &str) -> bool {
    matches!(
        folded(word).as_str(),
        "mon"
            | "monday"
            | "tue"
            | "tues"
            | "tuesday"
            | "wed"
            | "weds"
            | "wednesday"
            | "thu"
            | "thur"
            | "thurs"
            | "thursday"
            | "fri"
            | "friday"
            | "sat"
            | "saturday"
            | "sun"
            | "sunday"
            | "mo"
            | "montag"
            | "di"
            | "dienstag"
            | "mi"
            | "mittwoch"
            | "do"
            | "donnerstag"
            | "fr"
            | "freitag"
            | "sa"
            | "samstag"
            | "sonnabend"
            | "so"
            | "sonntag"
            | "lun"
            | "lundi"
            | "mar"
            | "mardi"
            | "mer"
            | "mercredi"
            | "jeu"
            | "jeudi"
            | "ven"
            | "vendredi"
            | "sam"
            | "samedi"
            | "dim"
            | "dimanche"
            | "lunes"
            | "martes"
            | "mie"
            | "miercoles"
            | "jue"
            | "jueves"
            | "vie"
            | "viernes"
            | "sab"
            | "sabado"
            | "dom"
            | "domingo"
    )
}
