//! Which characters an address may hold: the byte classes of the plain
//! path and the character tests of the full checks.

/// What a byte may be in a plain address: [`ATEXT`] for the local part,
/// [`LDH`] (letter, digit, hyphen) for a domain label; `.` and `@` are
/// looked at on their own.
pub(super) const ATEXT: u8 = 1;
pub(super) const LDH: u8 = 2;
pub(super) const CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        if c.is_ascii_alphanumeric() || c == b'-' {
            t[b] = ATEXT | LDH;
        } else if matches!(
            c,
            b'!' | b'#'
                | b'$'
                | b'%'
                | b'&'
                | b'\''
                | b'*'
                | b'+'
                | b'/'
                | b'='
                | b'?'
                | b'^'
                | b'_'
                | b'`'
                | b'{'
                | b'|'
                | b'}'
                | b'~'
        ) {
            t[b] = ATEXT;
        }
        b += 1;
    }
    t
};

/// Control characters, line and paragraph separators, and the format
/// characters (Unicode category Cf) that show as nothing.
pub(super) fn is_invisible(c: char) -> bool {
    c.is_control()
        || matches!(u32::from(c),
            0x00AD | 0x061C | 0x180E | 0x200B..=0x200F | 0x2028..=0x202E
            | 0x2060..=0x2064 | 0x2066..=0x206F | 0xFEFF | 0xFFF9..=0xFFFB
            | 0x1D173..=0x1D17A | 0xE0001 | 0xE0020..=0xE007F)
}

/// What a label of an international domain may hold once UTS 46 has mapped
/// it: the dot between labels, ASCII letters, digits and hyphens, and beyond
/// ASCII the letters and digits of a script and the combining marks its words
/// need (IDNA 2008's PVALID, near enough: symbols, punctuation, control
/// pictures and emoji are not letters).
pub(super) fn idna_2008_letter(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric() || c == '-' || c == '.';
    }
    c.is_alphanumeric() || is_combining_mark(c) || matches!(c, '\u{00B7}' | '\u{30FB}')
}

/// The combining marks (general categories Mn and Mc) of the scripts whose
/// words need them and that `char::is_alphabetic` does not already cover.
fn is_combining_mark(c: char) -> bool {
    matches!(u32::from(c),
        0x0300..=0x036F | 0x0483..=0x0487 | 0x0591..=0x05BD | 0x05BF | 0x05C1..=0x05C2
        | 0x05C4..=0x05C5 | 0x05C7 | 0x0610..=0x061A | 0x064B..=0x065F | 0x0670
        | 0x06D6..=0x06DC | 0x06DF..=0x06E4 | 0x06E7..=0x06E8 | 0x06EA..=0x06ED
        | 0x0900..=0x0963 | 0x0966..=0x096F | 0x0971..=0x0DFF
        | 0x0E31 | 0x0E34..=0x0E3A | 0x0E47..=0x0E4E | 0x0EB1 | 0x0EB4..=0x0EBC
        | 0x0EC8..=0x0ECD | 0x0F18..=0x0F19 | 0x0F35 | 0x0F37 | 0x0F39 | 0x0F71..=0x0F84
        | 0x0F86..=0x0F87 | 0x0F8D..=0x0FBC | 0x102B..=0x103E | 0x1056..=0x1059
        | 0x17B4..=0x17D3 | 0x1AB0..=0x1ABD | 0x1DC0..=0x1DFF | 0x302A..=0x302F
        | 0x3099..=0x309A | 0xFE20..=0xFE2F)
}

/// `atext` of RFC 5322 §3.2.3.
pub(super) fn is_atext(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            '!' | '#'
                | '$'
                | '%'
                | '&'
                | '\''
                | '*'
                | '+'
                | '-'
                | '/'
                | '='
                | '?'
                | '^'
                | '_'
                | '`'
                | '{'
                | '|'
                | '}'
                | '~'
        )
}
