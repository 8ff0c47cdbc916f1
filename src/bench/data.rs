//! The benchmark's data: deterministic, realistic subscriber files of any
//! size, and the pipelines that read them.
//!
//! Every value is a function of the row number and a fixed seed (SplitMix64,
//! written out here because a library's generator may change its stream
//! between versions, and runs must stay comparable). The traits are the
//! ones real exports have: about 2% of rows repeat an earlier address (in
//! another case, with spaces), about 0.5% hold an address that is not one,
//! five attributes (two global, three of the group: text, date, number),
//! zero to three tags and zero to three orders per receiver.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

const FIRST: &[&str] = &[
    "Anna", "Ben", "Clara", "David", "Emma", "Felix", "Greta", "Hannes", "Ida", "Jonas", "Karla",
    "Lukas", "Mia", "Noah", "Olga", "Paul", "Rosa", "Samuel", "Tilda", "Uwe", "Vera", "Wim", "Zoë",
    "José", "Łukasz", "Søren",
];
const LAST: &[&str] = &[
    "Schmidt",
    "Müller",
    "Meyer",
    "Schulz",
    "Becker",
    "Hoffmann",
    "Koch",
    "Richter",
    "Wolf",
    "Neumann",
    "Schwarz",
    "Zimmermann",
    "Braun",
    "Krüger",
    "Hartmann",
    "Lange",
    "O'Neill",
    "García",
    "Nowak",
    "Andersson",
];
const CITY: &[&str] = &[
    "Berlin",
    "Hamburg",
    "München",
    "Köln",
    "Frankfurt am Main",
    "Stuttgart",
    "Leipzig",
    "Wien",
    "Zürich",
    "Graz",
    "Basel",
    "Dresden",
];
const DOMAIN: &[&str] = &[
    "example.com",
    "mail.example",
    "post.example.de",
    "web.example.at",
    "example.ch",
];
const TAGS: &[&str] = &["news", "sale", "vip", "b2b", "events", "de", "at", "ch"];
const PRODUCTS: &[&str] = &[
    "Coffee beans 1kg",
    "Espresso cups, set of 2",
    "Grinder \"Classic\"",
    "Milk jug",
    "Descaler",
    "Gift card",
];
/// Addresses no mail server accepts, one of each kind the address check
/// refuses (and an empty cell, a "missing email"): the rows holding them are
/// known ([`bad_address`]), so a benchmark can tell that the rejects are
/// exactly those rows.
const INVALID: &[&str] = &[
    "no-at-sign.example.com",
    "two@@example.com",
    "trailing@",
    "spaces in@example.com",
    "a..b@example.com",
    ".leading@example.com",
    "trailing.@example.com",
    "user@host",
    "user@[192.0.2.1]",
    "\"quoted\"@example.com",
    "zero-width@example.com\u{200B}",
    "line\nbreak@example.com",
    "user@-hyphen.example.com",
    "user@example.123",
    "user@exam_ple.com",
    "user@example..com",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa@too-long.example.com",
    "",
];

/// SplitMix64 of `x`: a well-mixed 64-bit value for each input.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The `k`-th random number of row `row` (independent streams per field).
fn draw(row: u64, k: u64) -> u64 {
    mix(mix(row ^ 0x6C69_7374_7069_7065).wrapping_add(k))
}

fn pick<'a>(list: &[&'a str], row: u64, k: u64) -> &'a str {
    list[(draw(row, k) % list.len() as u64) as usize]
}

/// The address of row `row` when the generator made it invalid on purpose
/// (`Some("")` for an empty cell).
pub fn bad_address(row: u64) -> Option<&'static str> {
    (20..=24)
        .contains(&(draw(row, 0) % 1000))
        .then(|| pick(INVALID, row, 9))
}

/// One generated receiver row.
pub struct Row {
    pub email: String,
    pub first_name: &'static str,
    pub last_name: &'static str,
    pub city: &'static str,
    pub birthday: String,
    pub score: u64,
    pub signup: String,
    pub tags: String,
    /// Orders of this row's receiver (empty for duplicates and bad rows).
    pub orders: Vec<OrderLine>,
}

pub struct OrderLine {
    pub order_id: String,
    pub product_id: String,
    pub product: &'static str,
    pub price: String,
    pub quantity: u64,
    pub ordered_at: String,
}

/// The address of row `row` when it is an original (not a repeat).
fn address(row: u64) -> String {
    format!(
        "{}.{}.{row}@{}",
        ascii(pick(FIRST, row, 1)),
        ascii(pick(LAST, row, 2)),
        pick(DOMAIN, row, 3)
    )
}

/// The ASCII local-part form of a name (addresses stay plain ASCII).
fn ascii(name: &str) -> String {
    name.chars()
        .filter_map(|c| match c {
            'ä' => Some('a'),
            'ö' | 'ø' => Some('o'),
            'ü' => Some('u'),
            'é' | 'ë' => Some('e'),
            'ł' | 'Ł' => Some('l'),
            'ß' => Some('s'),
            'Ø' | 'Ö' => Some('o'),
            c if c.is_ascii_alphanumeric() => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

fn date(row: u64, k: u64, from_year: u64, years: u64) -> (u64, u64, u64) {
    let d = draw(row, k);
    (from_year + d % years, 1 + (d >> 8) % 12, 1 + (d >> 16) % 28)
}

/// Row `row` of the file; `changed` gives the variant where about 5% of
/// the receivers moved city and gained a point of score.
pub fn row(row: u64, changed: bool) -> Row {
    let kind = draw(row, 0) % 1000;
    let (email, original) = match kind {
        // A repeat of an earlier row's address, written differently.
        0..=19 if row > 0 => {
            let earlier = draw(row, 9) % row;
            let e = address(earlier);
            (format!("  {}  ", e.to_uppercase()), false)
        }
        20..=24 => (bad_address(row).unwrap_or_default().to_string(), false),
        _ => (address(row), true),
    };
    let (y, m, d) = date(row, 4, 1950, 56);
    let (sy, sm, sd) = date(row, 5, 2019, 7);
    let moved = changed && draw(row, 20) % 100 < 5;
    let city_k = if moved { 21 } else { 6 };
    let ntags = draw(row, 7) % 4;
    let mut tags: Vec<&str> = (0..ntags).map(|t| pick(TAGS, row, 30 + t)).collect();
    tags.dedup();
    let norders = if original { draw(row, 8) % 4 } else { 0 };
    let orders = (0..norders)
        .map(|o| {
            let (oy, om, od) = date(row, 40 + o, 2020, 6);
            let p = draw(row, 50 + o) % PRODUCTS.len() as u64;
            OrderLine {
                order_id: format!("O{row}-{o}"),
                product_id: format!("P{p}"),
                product: PRODUCTS[p as usize],
                price: format!(
                    "{}.{:02}",
                    3 + draw(row, 60 + o) % 90,
                    draw(row, 70 + o) % 100
                ),
                quantity: 1 + draw(row, 80 + o) % 3,
                ordered_at: format!("{oy}-{om:02}-{od:02} 12:{:02}:00", draw(row, 90 + o) % 60),
            }
        })
        .collect();
    Row {
        email,
        first_name: pick(FIRST, row, 1),
        last_name: pick(LAST, row, 2),
        city: pick(CITY, row, city_k),
        birthday: format!("{y}-{m:02}-{d:02}"),
        score: draw(row, 10) % 1000 + u64::from(moved),
        signup: format!(
            "{sy}-{sm:02}-{sd:02} {:02}:{:02}:00",
            draw(row, 11) % 24,
            draw(row, 12) % 60
        ),
        tags: tags.join(","),
        orders,
    }
}

const HEADER: [&str; 8] = [
    "email",
    "first_name",
    "last_name",
    "city",
    "birthday",
    "score",
    "signup",
    "tags",
];

fn fields(r: &Row) -> [String; 8] {
    [
        r.email.clone(),
        r.first_name.to_string(),
        r.last_name.to_string(),
        r.city.to_string(),
        r.birthday.clone(),
        r.score.to_string(),
        r.signup.clone(),
        r.tags.clone(),
    ]
}

/// The files of a benchmark of `rows` receivers and `blacklist` entries.
pub struct Files {
    pub receivers: PathBuf,
    pub changed: PathBuf,
    pub orders: PathBuf,
    pub xlsx: PathBuf,
    pub blacklist: PathBuf,
    /// Orders written (lines of the orders file).
    pub order_lines: u64,
}

/// Writes the CSV files (and the XLSX copy unless `xlsx` is false) into `dir`.
pub fn generate(dir: &Path, rows: u64, blacklist: u64, xlsx: bool) -> io::Result<Files> {
    std::fs::create_dir_all(dir)?;
    let files = Files {
        receivers: dir.join("receivers.csv"),
        changed: dir.join("receivers-changed.csv"),
        orders: dir.join("orders.csv"),
        xlsx: dir.join("receivers.xlsx"),
        blacklist: dir.join("blacklist.csv"),
        order_lines: 0,
    };
    let csv_out = |p: &Path| -> io::Result<csv::Writer<BufWriter<std::fs::File>>> {
        Ok(csv::Writer::from_writer(BufWriter::with_capacity(
            1 << 20,
            std::fs::File::create(p)?,
        )))
    };
    let mut plain = csv_out(&files.receivers)?;
    let mut changed = csv_out(&files.changed)?;
    let mut orders = csv_out(&files.orders)?;
    plain.write_record(HEADER)?;
    changed.write_record(HEADER)?;
    orders.write_record([
        "email",
        "order_id",
        "product_id",
        "product",
        "price",
        "currency",
        "quantity",
        "ordered_at",
    ])?;
    let mut order_lines = 0;
    for i in 0..rows {
        let r = row(i, false);
        plain.write_record(fields(&r))?;
        changed.write_record(fields(&row(i, true)))?;
        for o in &r.orders {
            order_lines += 1;
            orders.write_record([
                r.email.as_str(),
                &o.order_id,
                &o.product_id,
                o.product,
                &o.price,
                "EUR",
                &o.quantity.to_string(),
                &o.ordered_at,
            ])?;
        }
    }
    for w in [&mut plain, &mut changed, &mut orders] {
        w.flush()?;
    }
    let mut bl = csv_out(&files.blacklist)?;
    bl.write_record(["email", "comment"])?;
    for i in 0..blacklist {
        let email = match draw(i, 100) % 1000 {
            0..=4 => pick(INVALID, i, 101).to_string(),
            _ => format!("blocked.{i}@{}", pick(DOMAIN, i, 102)),
        };
        bl.write_record([email.as_str(), "complaint"])?;
    }
    bl.flush()?;
    if xlsx {
        write_xlsx(&files.xlsx, rows).map_err(io::Error::other)?;
    }
    Ok(Files {
        order_lines,
        ..files
    })
}

/// The receivers as a spreadsheet: dates as date cells, scores as numbers,
/// the rest as text, written in constant memory.
fn write_xlsx(path: &Path, rows: u64) -> Result<(), rust_xlsxwriter::XlsxError> {
    use rust_xlsxwriter::{ExcelDateTime, Format, Workbook};
    let mut book = Workbook::new();
    let date = Format::new().set_num_format("yyyy-mm-dd");
    let stamp = Format::new().set_num_format("yyyy-mm-dd hh:mm:ss");
    let sheet = book.add_worksheet_with_constant_memory()?;
    for (c, h) in HEADER.iter().enumerate() {
        sheet.write_string(0, c as u16, *h)?;
    }
    for i in 0..rows {
        let r = row(i, false);
        let y = (i + 1) as u32;
        sheet.write_string(y, 0, &r.email)?;
        sheet.write_string(y, 1, r.first_name)?;
        sheet.write_string(y, 2, r.last_name)?;
        sheet.write_string(y, 3, r.city)?;
        sheet.write_datetime_with_format(
            y,
            4,
            ExcelDateTime::parse_from_str(&r.birthday)?,
            &date,
        )?;
        sheet.write_number(y, 5, r.score as f64)?;
        sheet.write_datetime_with_format(
            y,
            6,
            ExcelDateTime::parse_from_str(&r.signup)?,
            &stamp,
        )?;
        sheet.write_string(y, 7, &r.tags)?;
    }
    book.save(path)
}

/// The import pipeline over `source` into group `group` (orders from the
/// orders file when `orders` is set).
pub fn import_pipeline(name: &str, source: &Path, group: &str, orders: Option<&Path>) -> String {
    let mut p = format!(
        r#"# Written by `listpipe bench`.
[target]
url = "builtin"

[[import]]
name = "{name}"
source = {source:?}
group = "{group}"
create_group = true

[import.receiver]
email = "email"
registered = {{ column = "signup", format = "%Y-%m-%d %H:%M:%S" }}
activated = {{ column = "signup", format = "%Y-%m-%d %H:%M:%S" }}

[import.global_attributes]
firstname = "first_name"
lastname = "last_name"

[import.attributes]
city = "city"
birthday = {{ column = "birthday", type = "date" }}
score = {{ column = "score", type = "number" }}

[import.tags]
columns = "tags"
"#,
        source = source.display().to_string(),
    );
    if let Some(orders) = orders {
        p.push_str(&format!(
            r#"
[import.orders]
source = {orders:?}
email = "email"
order_id = "order_id"
product_id = "product_id"
product = "product"
price = "price"
currency = "currency"
quantity = "quantity"
stamp = {{ column = "ordered_at", format = "%Y-%m-%d %H:%M:%S" }}
"#,
            orders = orders.display().to_string(),
        ));
    }
    p
}

/// The blacklist pipeline over `source`.
pub fn blacklist_pipeline(source: &Path) -> String {
    format!(
        r#"# Written by `listpipe bench`.
[target]
url = "builtin"

[[blacklist]]
name = "blacklist"
source = {source:?}
email = "email"
comment = "comment"
"#,
        source = source.display().to_string(),
    )
}

/// Writes `text` to `dir/name` and answers the path.
pub fn write_file(dir: &Path, name: &str, text: &str) -> io::Result<PathBuf> {
    let path = dir.join(name);
    let mut f = std::fs::File::create(&path)?;
    f.write_all(text.as_bytes())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_deterministic_and_have_the_promised_traits() {
        let a: Vec<String> = (0..5000).map(|i| row(i, false).email).collect();
        let b: Vec<String> = (0..5000).map(|i| row(i, false).email).collect();
        assert_eq!(a, b);
        let repeats = a.iter().filter(|e| e.starts_with("  ")).count();
        let invalid = a.iter().filter(|e| INVALID.contains(&e.as_str())).count();
        assert!((50..150).contains(&repeats), "{repeats} repeats");
        assert!((10..50).contains(&invalid), "{invalid} invalid");
        let moved = (0..5000)
            .filter(|&i| row(i, true).city != row(i, false).city)
            .count();
        assert!((150..350).contains(&moved), "{moved} moved");
    }
}
