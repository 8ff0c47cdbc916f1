//! Hostile input: the bad files of `tests/corpus/` (and the big ones made
//! here: a 1 MB cell, a 1 MB column name, 10,000 columns) through
//! `listpipe check`, each a clear error or row-level rejects, never a panic,
//! under a 2 GiB address-space limit; then the fuzz targets
//! (`tests/fuzz/targets.rs`) on seeded random and mutated input.

#[path = "../fuzz/targets.rs"]
mod targets;

use std::path::{Path, PathBuf};
use std::process::Command;

fn corpus(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name)
}

struct Checked {
    code: i32,
    stdout: String,
    stderr: String,
}

/// `listpipe check` of a pipeline mapping `email` (and `name`, when `name`)
/// of `bytes` saved as `file`, under `ulimit -v` of 2 GiB.
fn check(file: &str, bytes: &[u8], name: bool) -> Checked {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(file), bytes).unwrap();
    let mut toml = format!(
        "[[import]]\nsource = \"{file}\"\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n"
    );
    if name {
        toml.push_str("[import.global_attributes]\nname = \"name\"\n");
    }
    std::fs::write(dir.path().join("p.toml"), toml).unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 2097152 && exec \"$0\" check p.toml")
        .arg(crate::support::BINARY)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let checked = Checked {
        // None: killed by a signal (an abort on a failed allocation).
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(
        !checked.stderr.contains("panicked") && checked.code != 101 && checked.code >= 0,
        "{file}: exit {}, stderr:\n{}",
        checked.code,
        checked.stderr
    );
    checked
}

fn check_corpus(file: &str, name: bool) -> Checked {
    check(file, &std::fs::read(corpus(file)).unwrap(), name)
}

#[test]
fn unreadable_files_are_usage_errors_that_say_why() {
    let cases: &[(&str, &str)] = &[
        (
            "empty.csv",
            "empty.csv is empty (no rows, not even a header); export the list again or remove the file from `paths`",
        ),
        (
            "garbage.csv",
            "garbage.csv is not text (NUL byte at byte 4); if it is a spreadsheet, name it .xlsx, .xls or .ods or set format = \"xlsx\" (or \"xls\", \"ods\")",
        ),
        ("nul.csv", "nul.csv is not text (NUL byte at byte 8)"),
        (
            "truncated.xlsx",
            "truncated.xlsx is not a spreadsheet (Xlsx error: Zip error: invalid Zip archive: Could not find EOCD); for CSV text set format = \"csv\"",
        ),
        (
            "truncated-header.xlsx",
            "truncated-header.xlsx is not a spreadsheet (Xlsx error: Zip error",
        ),
        (
            "zeroed-middle.xlsx",
            "zeroed-middle.xlsx: cannot read sheet \"Kontakte\": Xlsx error: Zip error",
        ),
        (
            "only-delimiters.csv",
            "p.toml:5:9: the source has no column \"email\"; its columns: `;;;;`",
        ),
    ];
    for (file, message) in cases {
        let c = check_corpus(file, false);
        assert_eq!(c.code, 2, "{file}: {}", c.stderr);
        assert!(c.stderr.contains(message), "{file}: {}", c.stderr);
    }
}

#[test]
fn a_header_only_file_is_an_empty_import() {
    let c = check_corpus("header-only.csv", false);
    assert_eq!(c.code, 0, "{}", c.stderr);
    assert!(
        c.stdout
            .contains("0 rows read, 0 rejected, 0 duplicates, 0 tags normalised"),
        "{}",
        c.stdout
    );
}

/// UTF-16 without a byte order mark and Windows-1252 where UTF-8 was
/// expected are recognised and read as the text they are.
#[test]
fn wrong_encodings_are_detected_and_read_correctly() {
    for file in [
        "utf16le-no-bom.csv",
        "utf16be-no-bom.csv",
        "cp1252-as-utf8.csv",
    ] {
        let c = check_corpus(file, true);
        assert_eq!(c.code, 0, "{file}: {}", c.stderr);
        // No consent mapped: the create body carries `registered` (the run's time).
        let row2 = c
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("  row 2: "))
            .unwrap_or_else(|| panic!("{file}: {}", c.stdout));
        assert!(
            row2.starts_with(r#"{"email":"anna@example.com","registered":"#)
                && row2.ends_with(r#","global_attributes":{"name":"Anna Müller"}}"#),
            "{file}: {}",
            c.stdout
        );
        assert!(c.stdout.contains("Bernd Weiß"), "{file}: {}", c.stdout);
    }
}

#[test]
fn a_one_megabyte_email_cell_is_a_rejected_row() {
    let mut csv = b"email,name\n".to_vec();
    csv.extend(std::iter::repeat_n(b'a', 1 << 20));
    csv.extend_from_slice(b"@x.de,A\nb@x.de,B\n");
    let c = check("big-cell.csv", &csv, true);
    assert_eq!(c.code, 1, "{}", c.stderr);
    assert!(
        c.stdout
            .contains("2 rows read, 1 rejected, 0 duplicates, 0 tags normalised"),
        "{}",
        c.stdout
    );
    assert!(c.stdout.contains("invalid email: 1"), "{}", c.stdout);
}

/// Regression: the "no column" error listed every column name in full, so
/// a 1 MB header cell or 10,000 columns made a message of megabytes.
#[test]
fn a_one_megabyte_column_name_is_cut_in_the_error() {
    let mut csv = b"email,".to_vec();
    csv.extend(std::iter::repeat_n(b'h', 1 << 20));
    csv.extend_from_slice(b"\na@x.de,B\n");
    let c = check("big-header.csv", &csv, true);
    assert_eq!(c.code, 2, "{}", c.stderr);
    let want = format!(
        "p.toml:7:8: the source has no column \"name\"; its columns: `email` or `{}... (1048576 characters)`\n",
        "h".repeat(60)
    );
    assert!(
        c.stderr.ends_with(&want),
        "{}",
        c.stderr.chars().take(500).collect::<String>()
    );
}

fn wide_csv() -> Vec<u8> {
    let mut header: Vec<String> = (0..9_999).map(|i| format!("c{i}")).collect();
    header.push("email".into());
    let mut csv = header.join(",");
    csv.push('\n');
    for r in 0..20 {
        csv.push_str(&"v,".repeat(9_999));
        csv.push_str(&format!("r{r}@x.de\n"));
    }
    csv.into_bytes()
}

#[test]
fn ten_thousand_columns_are_read_and_listed_briefly() {
    let csv = wide_csv();
    let c = check("wide.csv", &csv, false);
    assert_eq!(c.code, 0, "{}", c.stderr);
    assert!(
        c.stdout
            .contains("20 rows read, 0 rejected, 0 duplicates, 0 tags normalised"),
        "{}",
        c.stdout
    );
    let c = check("wide.csv", &csv, true);
    assert_eq!(c.code, 2, "{}", c.stderr);
    assert!(
        c.stderr
            .contains("its columns: `c0`, `c1`, `c2`, `c3`, `c4`, `c5`, `c6`"),
        "{}",
        c.stderr
    );
    assert!(
        c.stderr.ends_with(", `c28`, `c29` and 9970 more\n"),
        "{}",
        c.stderr
    );
}

/// A small seeded generator (xorshift64*), so every run tries the same inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let n = self.below(max + 1);
        (0..n).map(|_| self.next() as u8).collect()
    }

    /// `seed` with a few bytes changed, inserted, removed or cut off.
    fn mutate(&mut self, seed: &[u8]) -> Vec<u8> {
        let mut v = seed.to_vec();
        for _ in 0..1 + self.below(8) {
            let at = self.below(v.len());
            match self.below(5) {
                0 if !v.is_empty() => v[at] = self.next() as u8,
                1 => v.insert(at, self.next() as u8),
                2 if !v.is_empty() => {
                    v.remove(at);
                }
                3 => v.truncate(at),
                _ => {
                    let b = *b",;\"\n\r=[]{}<>.%&0aZ\xff\x00"
                        .get(self.below(20))
                        .unwrap();
                    v.insert(at, b);
                }
            }
        }
        v
    }

    /// Half fresh random bytes, half mutations of one of `seeds`.
    fn input(&mut self, seeds: &[&[u8]], max: usize) -> Vec<u8> {
        if seeds.is_empty() || self.below(2) == 0 {
            self.bytes(max)
        } else {
            let seed = seeds[self.below(seeds.len())];
            self.mutate(seed)
        }
    }
}

/// Inputs per target; `LISTPIPE_HOSTILE_CASES` sets more for a longer hunt.
fn cases() -> usize {
    std::env::var("LISTPIPE_HOSTILE_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2_000)
}

fn run(seed: u64, seeds: &[&[u8]], max: usize, target: impl Fn(&[u8])) {
    let mut rng = Rng(seed);
    for _ in 0..cases() {
        let input = rng.input(seeds, max);
        target(&input);
    }
}

#[test]
fn random_csv_sources_through_prepare_never_panic() {
    let seeds: &[&[u8]] = &[
        b"\x00email,name,joined,points,tags\na@x.de,ann lee,01.02.2024,3,\"a,b\"\nA@X.DE,,31.02.2024,x,c\n",
        b"\x01email;name;joined\r\n\"a@x.de\";\"B\"\"\";1.1.1\r\n",
        b"\x02a@x.de,\xe4\xf6,99.99.9999,-1,\xff\n\n\n",
    ];
    run(1, seeds, 256, |d| targets::source_and_prepare("csv", d));
}

#[test]
fn random_xlsx_sources_through_prepare_never_panic() {
    let sample =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/kontakte.xlsx")).unwrap();
    run(2, &[&sample], 256, |d| {
        targets::source_and_prepare("xlsx", d)
    });
}

#[test]
fn random_pipeline_files_never_panic() {
    let seeds: &[&[u8]] = &[
        b"[target]\nurl = \"builtin\"\n[[import]]\nsource = \"in.csv\"\ngroup = \"News\"\ndedupe = \"last\"\n[import.receiver]\nemail = \"email\"\nregistered = { column = \"name\", format = \"%d\" }\n[import.tags]\nfixed = [\"a\"]\n",
        b"[[blacklist]]\nsource = { path = \"in.csv\", delimiter = \";\", header_row = 2 }\nemail = \"email\"\n",
        b"[[export]]\nname = \"e\"\ngroup = 7\nout = \"x.csv\"\nrules = [{ field = \"email\", logic = \"ends\", condition = \"@x\" }]\n",
    ];
    run(3, seeds, 256, targets::pipeline_file);
}

#[test]
fn random_request_bodies_never_panic() {
    let seeds: &[&[u8]] = &[
        b"\x00{\"a\":[1,{\"b\":null}],\"c\":\"\\u0001\"}",
        b"\x02<r><a>1</a><a>2</a><entry key=\"x y\">&amp;&#65;</entry><![CDATA[z]]></r>",
        b"\x03a[b][c]=1&a[]=2&d=%ff&e[0]=x&e[1]=y",
        b"\x04--XyZ\r\nContent-Disposition: form-data; name=\"a[0]\"\r\n\r\nv\r\n--XyZ--\r\n",
    ];
    run(4, seeds, 256, targets::request_body);
}

#[test]
fn random_requests_never_get_a_server_error() {
    let seeds: &[&[u8]] = &[
        b"\x00.json/1\xffpagesize=2&page=x&detail=8\xff",
        b"\x06/a%40b.de.xml\xfforderby=email%20desc\xff<r><email>a@b.de</email></r>",
        b"\x0b\xff\xff{\"rules\":[{\"field\":\"email\",\"logic\":\"eq\",\"condition\":\"\"}]}",
        b"\x01/0/receivers\xffgroup_id=9999999999999999999999\xffemail=x",
    ];
    run(5, seeds, 200, targets::request);
}

#[test]
fn a_spreadsheet_of_ten_thousand_columns_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wide.xlsx");
    let mut book = rust_xlsxwriter::Workbook::new();
    let sheet = book.add_worksheet();
    for c in 0..10_000u16 {
        let name = if c == 9_999 {
            "email".to_string()
        } else {
            format!("c{c}")
        };
        sheet.write_string(0, c, name).unwrap();
    }
    for r in 1..=20u32 {
        sheet.write_string(r, 0, "v").unwrap();
        sheet.write_string(r, 9_999, format!("r{r}@x.de")).unwrap();
    }
    book.save(&path).unwrap();
    let c = check("wide.xlsx", &std::fs::read(&path).unwrap(), false);
    assert_eq!(c.code, 0, "{}", c.stderr);
    assert!(
        c.stdout
            .contains("20 rows read, 0 rejected, 0 duplicates, 0 tags normalised"),
        "{}",
        c.stdout
    );
}
