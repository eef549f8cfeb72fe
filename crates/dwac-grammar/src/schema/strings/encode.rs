//! Encoding of decoded-character sets as JSON-literal fragments: a set of characters of the
//! decoded value becomes the alternatives that spell them inside a JSON string (raw, short
//! escapes, `\uXXXX`, surrogate pairs).

use super::*;

/// A class matching no character (valid Rust regex syntax).
pub(super) const NEVER: &str = r"[^\x{0}-\x{10FFFF}]";
/// Any hex digit, either case.
pub(super) const HEX: &str = "[0-9A-Fa-f]";

/// Inclusive ranges of scalar values, sorted and non-overlapping.
pub(super) type Ranges = Vec<(u32, u32)>;

/// `(?:<one encoded character>)`, cached.
pub(super) fn any_char_group() -> &'static str {
    static ANY: OnceLock<String> = OnceLock::new();
    ANY.get_or_init(|| format!("(?:{})", enc_class(&[(0, 0x10FFFF)])))
}

pub(super) fn push_scalar(out: &mut String, c: u32) {
    match char::from_u32(c) {
        Some(ch) if ch.is_ascii_alphanumeric() => out.push(ch),
        _ => {
            let _ = write!(out, "\\x{{{c:X}}}");
        }
    }
}

/// A Rust regex atom matching exactly the scalar values in `ranges` (non-empty).
pub(super) fn class_str(ranges: &[(u32, u32)]) -> String {
    let mut s = String::new();
    if let [(a, b)] = ranges {
        if a == b {
            push_scalar(&mut s, *a);
            return s;
        }
    }
    s.push('[');
    for &(a, b) in ranges {
        push_scalar(&mut s, a);
        if b > a {
            if b > a + 1 {
                s.push('-');
            }
            push_scalar(&mut s, b);
        }
    }
    s.push(']');
    s
}

pub(super) fn intersect(ranges: &[(u32, u32)], lo: u32, hi: u32) -> Ranges {
    ranges.iter().filter(|&&(a, b)| b >= lo && a <= hi).map(|&(a, b)| (a.max(lo), b.min(hi))).collect()
}

pub(super) fn subtract(ranges: &[(u32, u32)], lo: u32, hi: u32) -> Ranges {
    let mut out = Vec::with_capacity(ranges.len() + 1);
    for &(a, b) in ranges {
        if b < lo || a > hi {
            out.push((a, b));
            continue;
        }
        if a < lo {
            out.push((a, lo - 1));
        }
        if b > hi {
            out.push((hi + 1, b));
        }
    }
    out
}

pub(super) fn contains(ranges: &[(u32, u32)], c: u32) -> bool {
    ranges.iter().any(|&(a, b)| a <= c && c <= b)
}

pub(super) fn add_range(ranges: &mut Ranges, a: u32, b: u32) {
    if let Some(last) = ranges.last_mut() {
        if last.1 + 1 == a {
            last.1 = b;
            return;
        }
    }
    ranges.push((a, b));
}

/// A character class of hex digit values (0..16), accepting both letter cases.
pub(super) fn hex_digits_class(ds: &[u32]) -> String {
    let digit = |d: u32, upper: bool| -> char {
        if d < 10 {
            char::from(b'0' + d as u8)
        } else if upper {
            char::from(b'A' + (d - 10) as u8)
        } else {
            char::from(b'a' + (d - 10) as u8)
        }
    };
    if let [d] = ds {
        return if *d < 10 {
            digit(*d, true).to_string()
        } else {
            format!("[{}{}]", digit(*d, true), digit(*d, false))
        };
    }
    let mut runs: Ranges = Vec::new();
    for &d in ds {
        add_range(&mut runs, d, d);
    }
    let push_run = |s: &mut String, a: u32, b: u32, upper: bool| {
        s.push(digit(a, upper));
        if b > a {
            if b > a + 1 {
                s.push('-');
            }
            s.push(digit(b, upper));
        }
    };
    let (mut dec, mut up, mut low) = (String::new(), String::new(), String::new());
    for (a, b) in runs {
        if a <= 9 {
            push_run(&mut dec, a, b.min(9), true);
        }
        if b >= 10 {
            push_run(&mut up, a.max(10), b, true);
            push_run(&mut low, a.max(10), b, false);
        }
    }
    format!("[{dec}{up}{low}]")
}

/// A regex over exactly `n` hex digits (either case) whose value lies in `ranges` (⊆ [0, 16^n)).
pub(super) fn hex_set(ranges: &[(u32, u32)], n: u32) -> String {
    if n == 0 {
        return String::new();
    }
    let size = 16u32.pow(n);
    if ranges == [(0, size - 1)] {
        return if n == 1 { HEX.to_string() } else { format!("{HEX}{{{n}}}") };
    }
    let sub = size / 16;
    let mut groups: Vec<(String, Vec<u32>)> = Vec::new();
    for d in 0..16 {
        let lo = d * sub;
        let part: Ranges = intersect(ranges, lo, lo + sub - 1).into_iter().map(|(a, b)| (a - lo, b - lo)).collect();
        if part.is_empty() {
            continue;
        }
        let child = hex_set(&part, n - 1);
        match groups.iter_mut().find(|g| g.0 == child) {
            Some(g) => g.1.push(d),
            None => groups.push((child, vec![d])),
        }
    }
    let mut parts: Vec<String> =
        groups.iter().map(|(child, ds)| format!("{}{}", hex_digits_class(ds), child)).collect();
    if parts.len() == 1 {
        parts.pop().unwrap_or_default()
    } else {
        format!("(?:{})", parts.join("|"))
    }
}

/// A concatenation-safe regex matching every JSON encoding of every scalar value in `ranges`.
pub(super) fn enc_class(ranges: &[(u32, u32)]) -> String {
    enc_class_mode(ranges, Encodings::All)
}

/// Which encodings of each character a regex accepts.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Encodings {
    /// Raw, short escapes and `\uXXXX` (patterns, lengths, literals).
    All,
    /// Raw where allowed, short escapes, and `\uXXXX` only for characters that cannot be raw
    /// (formats: an escaped digit in a date is never produced and multiplies automaton sizes).
    Plain,
}

pub(super) fn enc_class_mode(ranges: &[(u32, u32)], mode: Encodings) -> String {
    let mut alts: Vec<String> = Vec::new();
    // Raw characters.
    let raw = subtract(&subtract(&subtract(ranges, 0, 0x1F), 0x22, 0x22), 0x5C, 0x5C);
    if !raw.is_empty() {
        alts.push(class_str(&raw));
    }
    // Short escapes.
    const SHORT: [(u32, char); 8] =
        [(0x22, '"'), (0x5C, '\\'), (0x2F, '/'), (0x08, 'b'), (0x0C, 'f'), (0x0A, 'n'), (0x0D, 'r'), (0x09, 't')];
    let mut letters: Vec<u32> = SHORT.iter().filter(|(c, _)| contains(ranges, *c)).map(|(_, l)| *l as u32).collect();
    letters.sort_unstable();
    if !letters.is_empty() {
        let mut lr = Ranges::new();
        for l in letters {
            add_range(&mut lr, l, l);
        }
        alts.push(format!(r"\\{}", class_str(&lr)));
    }
    // \uXXXX for BMP characters (in `Plain` mode only for those that cannot appear raw).
    let mut bmp = subtract(&intersect(ranges, 0, 0xFFFF), 0xD800, 0xDFFF);
    if mode == Encodings::Plain {
        bmp = intersect(&bmp, 0, 0x1F);
    }
    if !bmp.is_empty() {
        alts.push(format!(r"\\u{}", hex_set(&bmp, 4)));
    }
    // Surrogate pairs for supplementary characters, grouped by identical low-surrogate sets.
    let astral = intersect(ranges, 0x10000, 0x10FFFF);
    if !astral.is_empty() && mode == Encodings::All {
        let split = |c: u32| (0xD800 + ((c - 0x10000) >> 10), 0xDC00 + ((c - 0x10000) & 0x3FF));
        let mut per_hi: BTreeMap<u32, Ranges> = BTreeMap::new();
        for &(a, b) in &astral {
            let ((ha, la), (hb, lb)) = (split(a), split(b));
            for h in ha..=hb {
                let lo_s = if h == ha { la } else { 0xDC00 };
                let lo_e = if h == hb { lb } else { 0xDFFF };
                add_range(per_hi.entry(h).or_default(), lo_s, lo_e);
            }
        }
        let mut by_lo: BTreeMap<Ranges, Ranges> = BTreeMap::new();
        for (h, los) in per_hi {
            add_range(by_lo.entry(los).or_default(), h, h);
        }
        for (los, his) in by_lo {
            alts.push(format!(r"\\u{}\\u{}", hex_set(&his, 4), hex_set(&los, 4)));
        }
    }
    match alts.len() {
        0 => NEVER.to_string(),
        1 => alts.pop().unwrap_or_default(),
        _ => format!("(?:{})", alts.join("|")),
    }
}

/// Encodes a look-free HIR over decoded values as a regex over encoded literal content (no quotes).
pub(super) fn enc_hir(h: &Hir, out: &mut String) -> Result<(), StringError> {
    enc_hir_mode(h, out, Encodings::All)
}

pub(super) fn enc_hir_mode(h: &Hir, out: &mut String, mode: Encodings) -> Result<(), StringError> {
    match h.kind() {
        HirKind::Empty => {}
        HirKind::Literal(lit) => {
            let s = std::str::from_utf8(&lit.0).map_err(|_| unsupported("non-UTF-8 literal in pattern"))?;
            for c in s.chars() {
                out.push_str(&enc_class_mode(&[(c as u32, c as u32)], mode));
            }
        }
        HirKind::Class(Class::Unicode(cls)) => {
            let ranges: Ranges = cls.ranges().iter().map(|r| (r.start() as u32, r.end() as u32)).collect();
            out.push_str(&enc_class_mode(&ranges, mode));
        }
        HirKind::Class(Class::Bytes(_)) => return Err(unsupported("byte-oriented class in pattern")),
        HirKind::Look(look) => return Err(unsupported(format!("assertion {look:?} in pattern"))),
        HirKind::Repetition(rep) => {
            out.push_str("(?:");
            enc_hir_mode(&rep.sub, out, mode)?;
            out.push(')');
            match (rep.min, rep.max) {
                (0, None) => out.push('*'),
                (1, None) => out.push('+'),
                (0, Some(1)) => out.push('?'),
                (m, None) => {
                    let _ = write!(out, "{{{m},}}");
                }
                (m, Some(n)) if m == n => {
                    let _ = write!(out, "{{{m}}}");
                }
                (m, Some(n)) => {
                    let _ = write!(out, "{{{m},{n}}}");
                }
            }
        }
        HirKind::Capture(cap) => enc_hir_mode(&cap.sub, out, mode)?,
        HirKind::Concat(hs) => {
            for h in hs {
                enc_hir_mode(h, out, mode)?;
            }
        }
        HirKind::Alternation(hs) => {
            out.push_str("(?:");
            for (i, h) in hs.iter().enumerate() {
                if i > 0 {
                    out.push('|');
                }
                enc_hir_mode(h, out, mode)?;
            }
            out.push(')');
        }
    }
    Ok(())
}

pub(super) fn length_regex(min: u64, max: Option<u64>) -> Result<String, StringError> {
    let limit = u64::from(u32::MAX);
    if min > limit || max.is_some_and(|m| m > limit) {
        return Err(unsupported(format!("string length bound above {limit}")));
    }
    let any = any_char_group();
    Ok(match max {
        None => format!("\"{any}{{{min},}}\""),
        Some(m) if m == min => format!("\"{any}{{{min}}}\""),
        Some(m) => format!("\"{any}{{{min},{m}}}\""),
    })
}

/// The bounds `(min, max)` of a length regex (what `minLength`/`maxLength` compile to), `None`
/// for any other regex.
///
/// A length regex is `"` and between `min` and `max` JSON string characters (any character, in
/// any of its encodings) and `"`; the lexer keeps such a bound as a counter beside the other
/// patterns of its terminal rather than as an automaton of its own (`dwac-compile`'s
/// `lexer::length`). The answer is checked by writing the regex again from the bounds found.
pub fn length_bounds(regex: &str) -> Option<(u64, Option<u64>)> {
    let any = any_char_group();
    let body = regex.strip_prefix('"')?.strip_prefix(any)?.strip_prefix('{')?.strip_suffix("}\"")?;
    let (min, max) = match body.split_once(',') {
        None => {
            let n = body.parse().ok()?;
            (n, Some(n))
        }
        Some((a, "")) => (a.parse().ok()?, None),
        Some((a, b)) => (a.parse().ok()?, Some(b.parse().ok()?)),
    };
    (length_regex(min, max).ok()? == regex).then_some((min, max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_bounds_read_back_what_length_regex_wrote() {
        for (min, max) in [(0, Some(5)), (3, Some(3)), (2, None), (0, Some(1024)), (7, Some(250))] {
            let re = length_regex(min, max).unwrap();
            assert_eq!(length_bounds(&re), Some((min, max)), "{re}");
        }
        let any = any_char_group();
        for other in [
            format!("\"{any}*\""),
            format!("\"{any}{{1,2}}x\""),
            format!("\"{any}{{01,2}}\""),
            format!("\"{any}{{2,x}}\""),
            "\"a{1,2}\"".to_string(),
        ] {
            assert_eq!(length_bounds(&other), None, "{other}");
        }
    }

    #[test]
    fn hex_set_shapes() {
        assert_eq!(hex_set(&[(0, 0xFFFF)], 4), "[0-9A-Fa-f]{4}");
        assert_eq!(hex_set(&[(0x61, 0x61)], 4), "0061");
        assert_eq!(hex_set(&[(0xE9, 0xE9)], 4), "00[Ee]9");
    }
}
