//! Pipeline-file errors, pinned: input → every message, exactly.

use listpipe::pipeline;

/// Loads `toml` as `p.toml` beside a small CSV `in.csv` (columns email, name, joined).
fn errors(toml: &str) -> Vec<String> {
    errors_beside(
        &[(
            "in.csv",
            b"email,name,joined\na@example.com,Ann,2024-01-01\n",
        )],
        toml,
    )
}

/// Loads `toml` as `p.toml` in a folder holding `files`; returns every error,
/// with the file's path written `p.toml` and the folder's `DIR`.
pub(crate) fn errors_beside(files: &[(&str, &[u8])], toml: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in files {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    let path = dir.path().join("p.toml");
    std::fs::write(&path, toml).unwrap();
    match pipeline::load(&path) {
        Ok(_) => vec![],
        Err(e) => {
            e.0.iter()
                .map(|l| {
                    l.replace(&path.display().to_string(), "p.toml")
                        .replace(&dir.path().display().to_string(), "DIR")
                })
                .collect()
        }
    }
}

const VALID: &str =
    "[[import]]\nsource = \"in.csv\"\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n";

#[test]
fn a_valid_file_has_no_errors() {
    assert_eq!(errors(VALID), Vec::<String>::new());
}

#[test]
fn errors_name_file_line_column_and_the_valid_choices() {
    let cases: &[(&str, &[&str])] = &[
        (
            "[[import]]\nsource = \"in.csv\"\ngroup = \"News\"\nmode = \"sync\"\n[import.receiver]\nemail = \"email\"\n",
            &["p.toml:4:8: unknown mode \"sync\"; valid values: `import` or `mirror`"],
        ),
        (
            "[[import]]\nsource = \"in.csv\"\ngroup = \"News\"\nmode = \"mirror\"\nremoval = \"drop\"\nmax_removal = \"lots\"\n[import.receiver]\nemail = \"email\"\n",
            &[
                "p.toml:5:11: unknown removal \"drop\"; valid values: deactivate, delete",
                "p.toml:6:15: max_removal \"lots\" must be a percentage of the group from 0% to 100%, such as \"10%\"",
            ],
        ),
        (
            "[[import]]\nsource = \"in.csv\"\ngroup = \"News\"\nremoval = \"delete\"\n[import.receiver]\nemail = \"email\"\n",
            &[
                "p.toml:4:11: `removal` applies to mode = \"mirror\" only; add mode = \"mirror\" or remove it",
            ],
        ),
        (
            "[[import]]\nsorce = \"in.csv\"\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n",
            &[
                "p.toml:1:1: [[import]] step 1 needs `source` (a file path, or a table with `path`)",
                "p.toml:2:1: unknown key `sorce` in [[import]] step 1; valid keys: `name`, `source`, `group`, `create_group`, `preset`, `dedupe`, `rejects`, `receiver`, `global_attributes`, `attributes`, `tags`, `orders`, `mode`, `removal`, `max_removal`, `fill_down`, `other_columns`, `ignore_columns`, `json_attributes`, `date_format`, `ambiguous`, `null_values`, `rejects_bom`, `update`, `empty` or `limit`",
            ],
        ),
        (
            "[[import]]\nsource = \"in.csv\"\ngroup = \"News\"\ndedupe = \"newest\"\n[import.receiver]\nemail = \"mail\"\nactivated = { column = \"joined\", case = \"shout\" }\n",
            &[
                "p.toml:4:10: unknown dedupe \"newest\"; valid values: `first`, `last` or `merge`",
                "p.toml:6:9: the source has no column \"mail\"; its columns: `email`, `name` or `joined`",
                "p.toml:7:41: unknown case \"shout\"; valid values: `keep`, `lower`, `upper` or `title`",
            ],
        ),
        (
            "[[import]]\nsource = \"in.csv\"\ngroup = \"News\"\n[import.receiver]\nemail = \"Email\"\n[import.global_attributes]\nname = { column = \"name\", type = \"colour\" }\n",
            &[
                "p.toml:5:9: the source has no column \"Email\" (did you mean \"email\"?); its columns: `email`, `name` or `joined`",
                "p.toml:7:34: unknown attribute type \"colour\" for `name`; valid types: `text`, `number`, `gender` or `date`",
            ],
        ),
        (
            "[target]\nurl = \"ftp://x\"\nconcurrency = 0\n[[import]]\nsource = { path = \"in.csv\", encoding = \"ebcdic\" }\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n",
            &[
                "p.toml:2:7: `url` must be \"builtin\" or an http:// or https:// address, not \"ftp://x\"",
                "p.toml:3:15: `concurrency` in [target] must be a whole number from 1 to 1024",
                "p.toml:5:40: unknown encoding \"ebcdic\"; valid encodings: utf-8, utf-8-bom, utf-16, utf-16le, utf-16be, windows-1252, latin-1, windows-1250 to windows-1258, windows-874, iso-8859-2 to iso-8859-16, koi8-r, koi8-u, ibm866, x-mac-cyrillic, macintosh, shift_jis (cp932), euc-jp, iso-2022-jp, gbk, gb18030, big5, euc-kr",
            ],
        ),
        (
            "[[import]]\nsource = \"missing.csv\"\ngroup = \"News\"\n",
            &[
                "p.toml:1:1: [[import]] step 1 needs `receiver`: a [import.receiver] table with at least `email`",
                "p.toml:2:10: DIR/missing.csv does not exist; check the path in `source`",
            ],
        ),
        (
            "[[import]\n",
            &["p.toml:1:10: unclosed array table, expected `]`"],
        ),
        (
            "title = \"x\"\n",
            &[
                "p.toml:1:1: unknown key `title` in the pipeline file; valid keys: `target`, `timezone`, `metrics`, `report`, `import`, `blacklist` or `export`",
            ],
        ),
        (
            "[[import]]\nsource = \"in.csv\"\ngroup = \"News\"\nother_columns = \"tags\"\nfill_down = { within = \"name\" }\n[import.receiver]\nemail = { column = [\"mail\", \"email\"] }\nactivated = { column = \"joined\", only_if = { column = \"name\", equals = \"x\", in_file = true } }\nregistered = { column = \"joined\", only_if = [{ any = [], column = \"name\" }] }\n",
            &[
                "p.toml:4:17: unknown other_columns \"tags\"; valid values: `global_attributes` or `attributes`",
                "p.toml:5:13: `fill_down` of [[import]] step 1 needs `within` and `columns`: the column naming the order (or record) and the columns to fill",
                "p.toml:7:21: the source has no column \"mail\"; its columns: `email`, `name` or `joined`",
                "p.toml:8:44: `only_if` of `activated` of `receiver` of [[import]] step 1 needs exactly one test: `equals`, `not_equals` or `in_file`",
                "p.toml:9:46: `only_if` of `registered` of `receiver` of [[import]] step 1 has `any` beside other keys; put every test inside `any`",
            ],
        ),
        (
            "[[import]]\nname = \"../../escape\"\nsource = \"in.csv\"\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n[[export]]\nname = \".hidden\"\ngroup = \"News\"\nout = \"x.csv\"\n",
            &[
                "p.toml:2:8: step name \"../../escape\" cannot name the step's files: it contains '/', a folder separator; use letters, digits, spaces, `-`, `_` and `.` (not first), up to 100 characters",
                "p.toml:8:8: step name \".hidden\" cannot name the step's files: it starts with a dot; use letters, digits, spaces, `-`, `_` and `.` (not first), up to 100 characters",
            ],
        ),
        (
            "timezone = \"Europe/Berln\"\n[[import]]\nsource = \"in.csv\"\ngroup = \"News\"\ndate_format = [\"%d.%m.%Y\", \"%Q\"]\n[import.receiver]\nemail = \"email\"\nregistered = { column = \"joined\", format = [], timezone = \"berlin\" }\nactivated = { column = \"joined\", format = \"%d.%m.%Y\", ambiguous = \"first\" }\ndeactivated = { column = \"joined\", ambiguous = \"last\" }\n[import.global_attributes]\nbirthday = { column = \"joined\", type = \"date\", timezone = \"UTC\" }\nname = { column = \"name\", ambiguous = \"first\", timezone = \"UTC\" }\n",
            &[
                "p.toml:1:12: unknown timezone \"Europe/Berln\" (did you mean \"Europe/Berlin\"?); write an IANA zone name such as \"Europe/Berlin\"",
                "p.toml:5:28: \"%Q\" is not a chrono format (such as \"%d.%m.%Y %H:%M\"), \"unix\" or \"excel\"",
                "p.toml:8:44: `format` in `registered` of `receiver` of [[import]] step 1 lists no format; give one, or several to try in order",
                "p.toml:8:59: unknown timezone \"berlin\" (did you mean \"Europe/Berlin\"?); write an IANA zone name such as \"Europe/Berlin\"",
                "p.toml:9:67: `ambiguous` decides between the formats of a `format` list, and `activated` has fewer than two; list them (format = [\"%d/%m/%Y\", \"%m/%d/%Y\"]) or remove it",
                "p.toml:10:48: unknown ambiguous \"last\"; valid values: `reject`, `first` or `omit`",
                "p.toml:12:59: `timezone` has no effect on `birthday`: a date is a calendar date, read as written; remove it",
                "p.toml:13:39: `ambiguous` decides between the date and time formats of `format`, and `name` is text; remove it",
                "p.toml:13:59: `timezone` reads times, and `name` is text; remove it",
            ],
        ),
        (
            "# nothing yet\n",
            &[
                "p.toml:1:1: the pipeline has no steps: add an [[import]], a [[blacklist]] or an [[export]] table",
            ],
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(errors(input), *expected, "for input:\n{input}");
    }
}

#[test]
fn tag_separators_and_cleaning_keys_are_refused_with_the_ways_to_say_them() {
    let toml = "[[import]]\nsource = \"in.csv\"\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n[import.tags]\ncolumns = \"name\"\nseparator = \";,\"\ntrim_start = \"\"\nmap = { vip = 1 }\n";
    assert_eq!(
        errors(toml),
        [
            "p.toml:8:13: separator \";,\" splits only where \";\" and \",\" stand together; to split at each of them, write separator = [\";\", \",\"]; to split at \";,\" as written, separator = [\";,\"]",
            "p.toml:9:14: `trim_start` names the characters taken off the start of each tag, such as \"* \"; it is empty: name them or remove it",
            "p.toml:10:15: values in the tags' `map` must be strings (\"vip\" = \"new tag\", or \"\" to drop it)",
        ]
    );
    let listed = toml
        .replace("\";,\"", "[\";\", \"\"]")
        .replace("trim_start = \"\"\nmap = { vip = 1 }\n", "");
    assert_eq!(
        errors(&listed),
        ["p.toml:8:13: `separator` in the tags table must not be empty"]
    );
}

#[test]
fn mapped_columns_found_on_a_lower_row_are_one_error_naming_header_row() {
    let toml = "[[import]]\nsource = \"report.csv\"\ngroup = \"News\"\n[import.receiver]\nemail = \"E-Mail\"\n[import.global_attributes]\nfirstname = \"Vorname\"\n";
    let report: &[u8] = b"Mitglieder\n\nE-Mail,Vorname\na@example.com,Anna\n";
    assert_eq!(
        errors_beside(&[("report.csv", report)], toml),
        [
            "p.toml:2:10: the source's header (row 1) lacks the mapped columns \"E-Mail\", \"Vorname\"; row 3 holds them all: set header_row = 3 in the source, e.g. source = { path = \"report.csv\", header_row = 3 }"
        ]
    );
    // Names on no row are each an error listing the header's columns, as before.
    let elsewhere = toml.replace("\"Vorname\"", "\"Nachname\"");
    assert_eq!(
        errors_beside(&[("report.csv", report)], &elsewhere),
        [
            "p.toml:5:9: the source has no column \"E-Mail\"; its columns: `Mitglieder`",
            "p.toml:7:13: the source has no column \"Nachname\"; its columns: `Mitglieder`",
        ]
    );
}
