//! A step with a mapping of its own, as `init` writes it: the receiver's
//! fields and consent, the global attributes, the group's attributes, the
//! tags, the orders, then the columns left out.

use super::columns::{self, Role};
use super::dates::DateFormat;
use super::parts::{choose_address, mangled_warning, write_consent, write_left_out};
use super::render::{self, key, mapping, string};
use super::rules::{AttrType, Target};
use super::{InitError, Writer, ask::Ask, consent, date_order, sample};

/// What each part of the step reads: the sample, each column's role, and
/// why the order of a column's dates was settled.
struct Columns<'a> {
    sample: &'a sample::Sample,
    roles: &'a [Role],
    settled: &'a [(usize, String)],
}

impl Columns<'_> {
    /// Column `i`'s header.
    fn col(&self, i: usize) -> &str {
        self.sample.columns[i].as_str()
    }

    /// Why the order of column `i`'s dates was settled, if it was.
    fn settled_note(&self, i: usize) -> Option<String> {
        self.settled
            .iter()
            .find(|(c, _)| *c == i)
            .map(|(_, why)| why.clone())
    }
}

/// A step with a mapping of its own.
pub(super) fn mapped_step(
    w: &mut Writer,
    sample: &sample::Sample,
    ask: &mut dyn Ask,
) -> Result<(), InitError> {
    let mut roles = columns::roles(sample);
    choose_address(&mut roles, sample, ask);
    let settled = date_order::settle(&mut roles, &sample.columns, ask);
    for (_, why) in &settled {
        w.decided(why.clone());
    }
    let Some(email) = roles
        .iter()
        .position(|r| *r == Role::Email { primary: true })
    else {
        return Err(InitError::NoAddress {
            columns: sample
                .columns
                .iter()
                .map(|c| format!("\"{c}\""))
                .collect::<Vec<_>>()
                .join(", "),
        });
    };
    let cols = Columns {
        sample,
        roles: &roles,
        settled: &settled,
    };
    let registered = roles.iter().enumerate().find_map(|(i, r)| match r {
        Role::Registered(d) => Some((cols.col(i).to_string(), d.clone())),
        _ => None,
    });
    let consent = consent::decide(sample, &roles, registered.clone(), ask);
    write_receiver(w, &cols, email, registered.as_ref(), &consent);
    let taken = write_globals(w, &cols);
    write_attributes(w, &cols, taken);
    write_tags(w, &cols);
    write_orders(w, &cols);
    write_left_out(w, sample, &roles);
    Ok(())
}

/// `[import.receiver]`: the address column `email`, when they signed up
/// (`registered`), the consent, the receiver's other fields.
fn write_receiver(
    w: &mut Writer,
    cols: &Columns<'_>,
    email: usize,
    registered: Option<&(String, DateFormat)>,
    consent: &consent::Consent,
) {
    let (sample, roles) = (cols.sample, cols.roles);
    w.line("");
    w.line("[import.receiver]");
    let share = columns::address_share(sample.values(email));
    w.comment(&format!(
        "The address: \"{}\" ({:.0}% of its values are addresses).",
        cols.col(email),
        share * 100.0
    ));
    w.line(&format!("email = {}", string(cols.col(email))));
    w.decided(format!("address column \"{}\"", cols.col(email)));
    for (i, r) in roles.iter().enumerate() {
        if *r == (Role::Email { primary: false }) {
            w.look_at(format!(
                "\"{}\" holds addresses too; \"{}\" was taken as the receiver's (it is kept as an attribute)",
                cols.col(i),
                cols.col(email)
            ));
        }
    }
    if let Some((c, d)) = registered {
        w.comment(&format!("When they signed up: \"{c}\"."));
        if let Some(i) = sample.columns.iter().position(|h| h == c)
            && let Some(why) = cols.settled_note(i)
        {
            w.comment(&why);
        }
        if let Some(text) = render::ambiguity_comment(c, Some(d)) {
            w.comment(&text);
            w.look_at(format!("the date format of \"{c}\""));
        }
        w.line(&format!(
            "registered = {}",
            mapping(c, &render::format_keys(Some(d)))
        ));
    }
    write_consent(w, consent);
    for (i, r) in roles.iter().enumerate() {
        if let Role::Named {
            target: Target::Receiver(field),
            ..
        } = r
        {
            w.line(&format!("{field} = {}", string(cols.col(i))));
        }
    }
}

/// `[import.global_attributes]`: the columns named as global attributes.
/// Returns the names taken.
fn write_globals(w: &mut Writer, cols: &Columns<'_>) -> Vec<String> {
    let mut taken: Vec<String> = Vec::new();
    let named: Vec<(usize, &Role)> = cols
        .roles
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            matches!(
                r,
                Role::Named {
                    target: Target::Global(..),
                    ..
                }
            )
        })
        .collect();
    if named.is_empty() {
        return taken;
    }
    w.line("");
    w.line("[import.global_attributes]");
    for (i, r) in named {
        let Role::Named {
            target: Target::Global(name, kind),
            date,
            gender_map,
        } = r
        else {
            continue;
        };
        taken.push(name.to_string());
        if let Some(why) = cols.settled_note(i) {
            w.comment(&why);
        }
        if let Some(text) = render::ambiguity_comment(cols.col(i), date.as_ref()) {
            w.comment(&text);
            w.look_at(format!("the date format of \"{}\"", cols.col(i)));
        }
        if *kind == AttrType::Gender && !gender_map.is_empty() {
            w.comment(&format!(
                "Values that are no gender are left empty: {}.",
                consent::quoted(
                    &gender_map
                        .iter()
                        .map(|(f, _)| f.clone())
                        .collect::<Vec<_>>()
                )
            ));
        }
        mangled_warning(w, cols.sample, i);
        w.line(&format!(
            "{} = {}",
            key(name),
            mapping(cols.col(i), &render::attribute_keys(r))
        ));
    }
    taken
}

/// `[import.attributes]`: the file's other columns, as attributes of the
/// group, named apart from the names `taken`.
fn write_attributes(w: &mut Writer, cols: &Columns<'_>, mut taken: Vec<String>) {
    let others: Vec<usize> = cols
        .roles
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            matches!(
                r,
                Role::Attribute { .. }
                    | Role::Email { primary: false }
                    | Role::Consent(
                        consent::Reading::State { .. }
                            | consent::Reading::Unknown
                            | consent::Reading::Superseded { .. }
                    )
            )
        })
        .map(|(i, _)| i)
        .collect();
    if others.is_empty() {
        return;
    }
    w.line("");
    w.comment("The file's other columns, as attributes of this group, typed by their values.");
    w.line("[import.attributes]");
    for i in others {
        let col = cols.col(i);
        let name = columns::unique_name(columns::attribute_name(col), &taken);
        taken.push(name.clone());
        if !col.is_ascii() {
            w.comment(&format!(
                "{name}: the header {} spelled in the letters attribute names take.",
                string(col)
            ));
        }
        let r = &cols.roles[i];
        if let Some(why) = cols.settled_note(i) {
            w.comment(&why);
        }
        if let Role::Attribute { date, .. } = r
            && let Some(text) = render::ambiguity_comment(col, date.as_ref())
        {
            w.comment(&text);
            w.look_at(format!("the date format of \"{col}\""));
        }
        mangled_warning(w, cols.sample, i);
        w.line(&format!(
            "{} = {}",
            key(&name),
            mapping(col, &render::attribute_keys(r))
        ));
    }
}

/// `[import.tags]`: the tags column, if there is one.
fn write_tags(w: &mut Writer, cols: &Columns<'_>) {
    let Some((i, sep)) = cols.roles.iter().enumerate().find_map(|(i, r)| match r {
        Role::Tags(sep) => Some((i, *sep)),
        _ => None,
    }) else {
        return;
    };
    w.line("");
    w.comment(&format!(
        "Tags: \"{}\", separated by \"{sep}\".",
        cols.col(i)
    ));
    w.line("[import.tags]");
    w.line(&format!("columns = {}", string(cols.col(i))));
    w.line(&format!("separator = {}", string(sep)));
    w.decided(format!(
        "tags from \"{}\" (separator \"{sep}\")",
        cols.col(i)
    ));
}

/// `[import.orders]`: when the rows are order lines, the order's columns.
fn write_orders(w: &mut Writer, cols: &Columns<'_>) {
    let orders: Vec<(usize, &Role)> = cols
        .roles
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r, Role::Order { .. }))
        .collect();
    if orders.is_empty() {
        return;
    }
    w.line("");
    w.comment("The rows are order lines: each becomes an order of its address.");
    w.line("[import.orders]");
    for (i, r) in orders {
        let Role::Order {
            field,
            date,
            decimal_comma,
        } = r
        else {
            continue;
        };
        let mut extra = render::format_keys(date.as_ref());
        if *decimal_comma {
            extra.push("decimal = \",\"".into());
        }
        if let Some(why) = cols.settled_note(i) {
            w.comment(&why);
        }
        if let Some(text) = render::ambiguity_comment(cols.col(i), date.as_ref()) {
            w.comment(&text);
        }
        w.line(&format!("{field} = {}", mapping(cols.col(i), &extra)));
    }
    w.decided("orders on the rows".into());
}
