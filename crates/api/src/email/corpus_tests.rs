//! The isemail test corpus's categories, with addresses of our own that
//! show each diagnosis: nothing of the ERR category is ever accepted, under
//! the strict rules or under everything the RFCs allow; of the others the
//! sender's choice is pinned (the VALID category's `test@io` included).

use super::{Invalid, Rules, parse};

/// One address per ERR diagnosis of the corpus (its name, then ours).
const ERR: &[(&str, &str)] = &[
    ("ERR_NOLOCALPART", "@shop.example"),
    ("ERR_NODOMAIN", "anna@"),
    ("ERR_NODOMAIN", "anna"),
    ("ERR_CONSECUTIVEDOTS", "anna..berg@shop.example"),
    ("ERR_CONSECUTIVEDOTS", "anna@shop..example"),
    ("ERR_DOT_START", ".anna@shop.example"),
    ("ERR_DOT_START", "anna@.shop.example"),
    ("ERR_DOT_END", "anna.@shop.example"),
    ("ERR_DOT_END", "anna@shop.example."),
    ("ERR_DOMAINHYPHENSTART", "anna@-shop.example"),
    ("ERR_DOMAINHYPHENEND", "anna@shop-.example"),
    ("ERR_EXPECTING_ATEXT", "an\"na@shop.example"),
    ("ERR_EXPECTING_ATEXT", "an(na@shop.example"),
    ("ERR_EXPECTING_ATEXT", "an]na@shop.example"),
    ("ERR_EXPECTING_ATEXT", "anna@sh\\op.example"),
    ("ERR_EXPECTING_ATEXT", "anna@shop.exa)mple"),
    ("ERR_ATEXT_AFTER_CFWS", "anna (note) berg@shop.example"),
    ("ERR_ATEXT_AFTER_QS", "\"anna\"berg@shop.example"),
    ("ERR_ATEXT_AFTER_DOMLIT", "anna@[192.0.2.7]shop"),
    ("ERR_EXPECTING_DTEXT", "anna@[192.0.2.[7]]"),
    ("ERR_EXPECTING_QPAIR", "\"an\\\u{0}na\"@shop.example"),
    ("ERR_EXPECTING_QTEXT", "\"an\"na\"@shop.example"),
    ("ERR_EXPECTING_CTEXT", "(note(@shop.example"),
    ("ERR_BACKSLASHEND", "anna\\@shop.example"),
    ("ERR_BACKSLASHEND", "\"anna\\\"@shop.example"),
    ("ERR_UNCLOSEDQUOTEDSTR", "\"anna@shop.example"),
    ("ERR_UNCLOSEDCOMMENT", "(anna@shop.example"),
    ("ERR_UNCLOSEDDOMLIT", "anna@[192.0.2.7"),
    ("ERR_FWS_CRLF_X2", "anna@shop.example\r\n\r\n x"),
    ("ERR_FWS_CRLF_END", "anna@shop.example\r\n"),
    ("ERR_FWS_CRLF_END", "\r\nanna@shop.example"),
    ("ERR_CR_NO_LF", "anna@shop.example\r"),
    ("ERR_CR_NO_LF", "anna\r@shop.example"),
    // Line feeds, NULs and other controls anywhere, at the ends too.
    ("ERR_EXPECTING_ATEXT", "anna@shop.example\n"),
    ("ERR_EXPECTING_ATEXT", "\nanna@shop.example"),
    ("ERR_EXPECTING_ATEXT", "anna@shop.example\u{0}"),
    ("ERR_EXPECTING_ATEXT", "anna@shop.example\u{7}"),
    ("ERR_EXPECTING_ATEXT", "anna@shop.example\u{85}"),
];

#[test]
fn no_address_of_the_error_category_is_ever_accepted() {
    for (diagnosis, address) in ERR {
        for rules in [Rules::STRICT, Rules::RFC] {
            assert!(
                parse(address, rules).is_err(),
                "{diagnosis}: {address:?} accepted under {rules:?} as {:?}",
                parse(address, rules)
            );
        }
    }
}

#[test]
fn line_breaks_at_the_ends_are_refused_and_only_spaces_and_tabs_are_trimmed() {
    for address in [
        "x@example.com\r\n",
        "x@example.com\n",
        "\r\nx@example.com",
        "\nx@example.com",
    ] {
        let why = parse(address, Rules::STRICT).unwrap_err();
        assert!(
            matches!(why, Invalid::Invisible(0x0A | 0x0D)),
            "{address:?}"
        );
    }
    assert_eq!(
        parse(" \tx@example.com\t ", Rules::STRICT),
        Ok("x@example.com".to_string())
    );
    // A no-break space copied from a web page is a space, not a control.
    assert_eq!(
        parse("\u{00A0}x@example.com\u{3000}", Rules::STRICT),
        Ok("x@example.com".to_string())
    );
    assert_eq!(
        parse("x@example.com\r\n", Rules::STRICT)
            .unwrap_err()
            .to_string(),
        "an invisible or control character (U+000D)"
    );
}

#[test]
fn symbols_and_control_pictures_in_a_domain_are_refused_never_made_punycode() {
    let reason = |a: &str| parse(a, Rules::RFC).unwrap_err().to_string();
    assert_eq!(
        reason("test@iana.org\u{240A}"),
        "'\u{240A}' (U+240A) is not allowed in a domain: a label takes letters, digits and hyphens only (IDNA 2008)"
    );
    assert_eq!(
        reason("test@\u{2407}.org"),
        "'\u{2407}' (U+2407) is not allowed in a domain: a label takes letters, digits and hyphens only (IDNA 2008)"
    );
    for address in [
        "test@\u{2665}.example",
        "test@\u{1F600}.example",
        "test@sh\u{00A7}op.example",
        "test@\u{2192}.example",
    ] {
        let stored = parse(address, Rules::RFC);
        assert!(
            matches!(stored, Err(Invalid::Symbol(_) | Invalid::Idna)),
            "{address:?}: {stored:?}"
        );
    }
}

#[test]
fn u_labels_of_real_scripts_are_still_taken_in_their_ascii_form() {
    for (address, stored) in [
        ("user@bücher.example", "user@xn--bcher-kva.example"),
        ("user@пример.рф", "user@xn--e1afmkfd.xn--p1ai"),
        ("user@例子.广告", "user@xn--fsqu00a.xn--4rr70v"),
        ("user@ｅｘａｍｐｌｅ.com", "user@example.com"),
    ] {
        assert_eq!(
            parse(address, Rules::STRICT),
            Ok(stored.to_string()),
            "{address}"
        );
    }
    // Scripts whose words need combining marks (vowel signs, viramas).
    for address in [
        "user@उदाहरण.भारत",
        "user@क्षेत्र.भारत",
        "user@ตัวอย่าง.ไทย",
        "user@مثال.إختبار",
    ] {
        let stored = parse(address, Rules::STRICT);
        assert!(
            stored.as_deref().is_ok_and(|s| s.starts_with("user@xn--")),
            "{address}: {stored:?}"
        );
    }
}

#[test]
fn a_top_level_domain_alone_is_refused_as_a_domain_without_a_dot() {
    // The corpus calls `test@io` valid (RFC 5321 allows it); a list mails
    // registered domains only, so it is refused, with the reason saying why.
    for address in ["test@io", "test@localhost", "test@com"] {
        assert_eq!(parse(address, Rules::RFC), Err(Invalid::NoTld), "{address}");
    }
    assert_eq!(
        Invalid::NoTld.to_string(),
        "a domain without a dot (a host name or a top-level domain alone)"
    );
}
