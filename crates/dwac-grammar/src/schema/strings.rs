//! String constraints (pattern, format, length, literals) compiled to regexes over JSON string lexemes.
//!
//! Every regex produced here is a Rust regex (regex crate syntax, Unicode/UTF-8 mode) that is meant to
//! match a *whole* JSON string literal, surrounding quotes included. None of them contains anchors,
//! look-around or capture groups. A constraint may produce several regexes; the lexer intersects them
//! (all must match). The guarantee is **zero false positives**: a regex never matches a literal whose
//! decoded value violates the constraint. Where a constraint is not honoured exactly the regex is
//! stricter, and the exact deviation is listed below; constructs that cannot be honoured either way
//! are refused with [`StringError`] naming the construct.
//!
//! # Encoding policy: every encoding of every character
//!
//! All regexes (unconstrained strings, lengths, patterns, formats, `const`/`enum` literals and
//! property names) accept **every** RFC 8259 encoding of the decoded value, not just the canonical one:
//! each decoded character `c` may appear as
//! * the raw character, unless it is `"`, `\` or U+0000–U+001F (those must be escaped);
//! * a short escape where one exists: `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`;
//! * `\uXXXX` (hex digits in any case) for a BMP character, or a surrogate pair `\uD83D\uDE00`
//!   (again any case) for a supplementary-plane character — the pair is one character.
//!
//! Lone surrogates (`\uD800` alone, a low surrogate first, ...) are rejected everywhere: they do not
//! encode a Unicode scalar value (serde_json refuses them too). Because the split of a valid literal
//! into per-character encodings is unique, a regex built as "encodings of the characters of a value
//! language L" accepts exactly the literals whose decoded value is in L. So the canonical output of
//! serde_json / `json.dumps(ensure_ascii=False)` is accepted, and so is `ensure_ascii=True` output.
//!
//! Lengths (`minLength`/`maxLength`) count Unicode code points of the decoded value: an escape or an
//! escaped surrogate pair is one character. `minLength > maxLength` yields a regex matching nothing.
//! Lengths are expressed as a bounded repetition (`{min,max}`), so very large bounds make large
//! automata; bounds above `u32::MAX` are refused.
//!
//! # Patterns (ECMA-262, as JSON Schema specifies)
//!
//! A pattern is translated by a small ECMA-262 tokenizer of our own into an unambiguous Rust regex
//! (every literal character is emitted as `\x{..}`, so Rust-only syntax such as `[[:alpha:]]`,
//! `&&`/`--`/`~~` class operators, `(?i)` flags, `\A`, `\z`, `\pL`, `\x{..}` cannot leak in), which
//! `regex_syntax` then turns into HIR. Semantics are those of a `u`-flag ECMAScript regex without
//! other flags:
//! * unanchored: the value must *contain* a match; `^`/`$` anchor to the start/end of the value.
//!   Anchors may appear anywhere outside a quantified group (`^a|b$`, `(^|,)x(,|$)`, `^(?:a$|b)`):
//!   the pattern is expanded into alternatives with start/end anchoring. An anchor inside a
//!   repeated group (other than `?`) is refused;
//! * `\d` = `[0-9]`, `\w` = `[A-Za-z0-9_]`, `\s` = ECMA white space and line terminators
//!   (U+0009–U+000D, U+0020, U+00A0, U+1680, U+2000–U+200A, U+2028, U+2029, U+202F, U+205F,
//!   U+3000, U+FEFF), `\D \W \S` their complements, `.` = any character except `\n \r` U+2028 U+2029;
//! * escapes `\t \n \v \f \r \0 \cX \xHH \uHHHH \u{H..}` (an escaped surrogate pair `\uD83D\uDC32`
//!   is one character; an escaped lone surrogate is refused), `[\b]` = backspace, `\p{..}`/`\P{..}`
//!   Unicode properties (resolved with `regex_syntax`'s Unicode tables, whose name matching is
//!   looser than ECMA's, e.g. `\p{digit}` = `\p{Nd}`);
//! * groups `(..)`, `(?:..)`, `(?<name>..)`; quantifiers `* + ? {n} {n,} {n,m}`, lazy or not;
//!   empty classes `[]` (nothing) and `[^]` (any character).
//!
//! Refused as [`StringError::Unsupported`]: look-ahead/look-behind, back-references (`\1`, `\k<n>`),
//! word boundaries `\b`/`\B`, escaped lone surrogates, Unicode property names unknown to
//! `regex_syntax` (e.g. properties of strings). Refused as [`StringError::Invalid`]: syntax errors,
//! non-ECMA group syntax (`(?i)`, `(?P<n>..)`, `(?#..)`), `\a`-style unknown letter escapes,
//! octal escapes, quantifiers without an operand or stacked quantifiers (`a**`), ranges out of order.
//! Lenient (Annex B like) where ECMA `u` mode would throw: a `{`, `}` or `]` that is not part of a
//! quantifier/class is a literal, and an escaped ASCII punctuation character (`\@`, `\-`, `\"`) is
//! that character.
//!
//! # Formats
//!
//! Format regexes accept raw characters and the short escapes, but `\uXXXX` only for characters
//! that cannot appear raw (**stricter**: `"\u0032020-01-01"` is rejected): escaping a digit is
//! never produced by JSON serializers, and accepting it multiplies automaton sizes (a date-time
//! went from 138k to a few thousand lexer states).
//!
//! [`is_supported_format`] lists the enforced formats; [`string_regexes`] refuses any other format
//! (the caller decides whether an unknown/unsupported format is an annotation). Exact (RFC ABNF and
//! the JSON-Schema-Test-Suite expectations) unless noted:
//! * `date`, `time`, `date-time`: RFC 3339 `full-date`, `full-time` (offset required), `date-time`;
//!   month lengths and Gregorian leap years; `T`/`Z` in either case; seconds `60` only when the
//!   time converted to UTC is 23:59:60 (checked by two extra intersected regexes). The date of a
//!   leap second is not checked against the leap-second table.
//! * `duration`: RFC 3339 Appendix A (`P1Y2M3DT4H5M6S`, `P2W`, no fractions, upper-case only).
//! * `email`: RFC 5321 `Mailbox` ABNF (dot-string or quoted-string local part; domain of LDH
//!   labels; `[IPv4]` or `[IPv6:..]` address literals with RFC 5321's own IPv6 rules).
//!   **Stricter:** RFC 5321 general address literals (`[tag:content]`) are rejected.
//!   No length limits are applied (the ABNF has none).
//! * `hostname`: RFC 1123 LDH labels of 1–63 characters, total length ≤ 253.
//!   **Stricter:** every label with `--` in its 3rd and 4th positions (IDNA2008 "R-LDH", which
//!   includes all `xn--` A-labels, valid or not) is rejected, because Punycode/IDNA validity is not
//!   regular in practice.
//! * `ipv4` (dotted quad, no leading zeros), `ipv6` (RFC 3986 `IPv6address`: all `::` forms,
//!   embedded IPv4 without leading zeros; no zone id), `uuid` (8-4-4-4-12 hex, any case).
//! * `uri`, `uri-reference` (RFC 3986), `iri`, `iri-reference` (RFC 3987), exact ABNF.
//! * `uri-template` (RFC 6570 level 4 ABNF; like the test suite, `'` is allowed in literals).
//!   **Stricter:** the reserved operators `= , ! @ |` are rejected.
//! * `json-pointer` (RFC 6901), `relative-json-pointer` (draft-bhutton-relative-json-pointer-00).
//!
//! Not supported (not regular or not practical): `regex`, `idn-hostname`, `idn-email`, and any
//! other name.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::OnceLock;

use regex_syntax::hir::{Class, Hir, HirKind, Look};

/// Why a string constraint could not be compiled.
#[derive(Debug, thiserror::Error)]
pub enum StringError {
    /// A valid construct we cannot honour exactly (the caller should refuse the schema loudly).
    #[error("unsupported string constraint: {what}")]
    Unsupported { what: String },
    /// The constraint itself is malformed (e.g. a pattern that is not an ECMA-262 regex).
    #[error("invalid string constraint: {what}")]
    Invalid { what: String },
}

fn unsupported(what: impl Into<String>) -> StringError {
    StringError::Unsupported { what: what.into() }
}

fn invalid(what: impl Into<String>) -> StringError {
    StringError::Invalid { what: what.into() }
}

/// Constraints of a string schema (the keywords this module understands).
#[derive(Clone, Debug, Default)]
pub struct StringConstraints {
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub pattern: Option<String>,
    pub format: Option<String>,
}

/// Any JSON string literal (with quotes).
pub fn json_string_any() -> String {
    static ANY: OnceLock<String> = OnceLock::new();
    ANY.get_or_init(|| format!("\"{}*\"", any_char_group())).clone()
}

/// Exactly the literals whose decoded value is `s` (every encoding of every character).
pub fn json_string_literal(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        out.push_str(&enc_class(&[(c as u32, c as u32)]));
    }
    out.push('"');
    out
}

/// Regexes that must all match (empty vec = any string).
///
/// `Err(Unsupported)` for a pattern feature or format we can't honour exactly,
/// `Err(Invalid)` for a malformed pattern.
pub fn string_regexes(c: &StringConstraints) -> Result<Vec<String>, StringError> {
    let mut out = Vec::new();
    let min = c.min_length.unwrap_or(0);
    if c.max_length.is_some_and(|max| max < min) {
        return Ok(vec![format!("\"{NEVER}\"")]);
    }
    if min > 0 || c.max_length.is_some() {
        out.push(length_regex(min, c.max_length)?);
    }
    if let Some(p) = &c.pattern {
        if let Some(r) = pattern_literal(p)? {
            out.push(r);
        }
    }
    if let Some(f) = &c.format {
        out.extend(format_regexes(f)?);
    }
    Ok(out)
}

/// Known format names that we enforce (see the module doc for exactness).
pub fn is_supported_format(name: &str) -> bool {
    matches!(
        name,
        "date-time"
            | "date"
            | "time"
            | "duration"
            | "email"
            | "hostname"
            | "ipv4"
            | "ipv6"
            | "uuid"
            | "uri"
            | "uri-reference"
            | "iri"
            | "iri-reference"
            | "uri-template"
            | "json-pointer"
            | "relative-json-pointer"
    )
}

/// The key-matching regex for a patternProperties/propertyNames pattern (same semantics as `pattern`).
pub fn pattern_regex(ecma_pattern: &str) -> Result<String, StringError> {
    Ok(pattern_literal(ecma_pattern)?.unwrap_or_else(json_string_any))
}

// ---------------------------------------------------------------------------------------------
// Encoding of decoded-character sets as JSON-literal fragments.
// ---------------------------------------------------------------------------------------------

/// A class matching no character (valid Rust regex syntax).
const NEVER: &str = r"[^\x{0}-\x{10FFFF}]";
/// Any hex digit, either case.
const HEX: &str = "[0-9A-Fa-f]";

/// Inclusive ranges of scalar values, sorted and non-overlapping.
type Ranges = Vec<(u32, u32)>;

/// `(?:<one encoded character>)`, cached.
fn any_char_group() -> &'static str {
    static ANY: OnceLock<String> = OnceLock::new();
    ANY.get_or_init(|| format!("(?:{})", enc_class(&[(0, 0x10FFFF)])))
}

fn push_scalar(out: &mut String, c: u32) {
    match char::from_u32(c) {
        Some(ch) if ch.is_ascii_alphanumeric() => out.push(ch),
        _ => {
            let _ = write!(out, "\\x{{{c:X}}}");
        }
    }
}

/// A Rust regex atom matching exactly the scalar values in `ranges` (non-empty).
fn class_str(ranges: &[(u32, u32)]) -> String {
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

fn intersect(ranges: &[(u32, u32)], lo: u32, hi: u32) -> Ranges {
    ranges.iter().filter(|&&(a, b)| b >= lo && a <= hi).map(|&(a, b)| (a.max(lo), b.min(hi))).collect()
}

fn subtract(ranges: &[(u32, u32)], lo: u32, hi: u32) -> Ranges {
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

fn contains(ranges: &[(u32, u32)], c: u32) -> bool {
    ranges.iter().any(|&(a, b)| a <= c && c <= b)
}

fn add_range(ranges: &mut Ranges, a: u32, b: u32) {
    if let Some(last) = ranges.last_mut() {
        if last.1 + 1 == a {
            last.1 = b;
            return;
        }
    }
    ranges.push((a, b));
}

/// A character class of hex digit values (0..16), accepting both letter cases.
fn hex_digits_class(ds: &[u32]) -> String {
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
fn hex_set(ranges: &[(u32, u32)], n: u32) -> String {
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
fn enc_class(ranges: &[(u32, u32)]) -> String {
    enc_class_mode(ranges, Encodings::All)
}

/// Which encodings of each character a regex accepts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Encodings {
    /// Raw, short escapes and `\uXXXX` (patterns, lengths, literals).
    All,
    /// Raw where allowed, short escapes, and `\uXXXX` only for characters that cannot be raw
    /// (formats: an escaped digit in a date is never produced and multiplies automaton sizes).
    Plain,
}

fn enc_class_mode(ranges: &[(u32, u32)], mode: Encodings) -> String {
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
fn enc_hir(h: &Hir, out: &mut String) -> Result<(), StringError> {
    enc_hir_mode(h, out, Encodings::All)
}

fn enc_hir_mode(h: &Hir, out: &mut String, mode: Encodings) -> Result<(), StringError> {
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

fn length_regex(min: u64, max: Option<u64>) -> Result<String, StringError> {
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

// ---------------------------------------------------------------------------------------------
// ECMA-262 pattern → Rust regex (semantics-preserving tokenizer).
// ---------------------------------------------------------------------------------------------

const ECMA_DIGIT: &str = "[0-9]";
const ECMA_NOT_DIGIT: &str = "[^0-9]";
const ECMA_WORD: &str = "[A-Za-z0-9_]";
const ECMA_NOT_WORD: &str = "[^A-Za-z0-9_]";
const ECMA_SPACE: &str =
    r"[\x{9}-\x{D}\x{20}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}]";
const ECMA_NOT_SPACE: &str =
    r"[^\x{9}-\x{D}\x{20}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}]";
const ECMA_DOT: &str = r"[^\x{A}\x{D}\x{2028}\x{2029}]";
const ALL_CHARS: &str = r"[\x{0}-\x{10FFFF}]";

/// One parsed ECMA atom: a single character or a set (as a Rust class expression).
enum Atom {
    Char(u32),
    Set(String),
}

impl Atom {
    fn to_rust(&self) -> String {
        match self {
            Atom::Char(c) => {
                let mut s = String::new();
                push_scalar(&mut s, *c);
                s
            }
            Atom::Set(s) => s.clone(),
        }
    }
}

struct Ecma<'a> {
    src: &'a str,
    chars: Vec<char>,
    pos: usize,
    out: String,
}

impl<'a> Ecma<'a> {
    fn new(src: &'a str) -> Self {
        Ecma { src, chars: src.chars().collect(), pos: 0, out: String::new() }
    }

    fn peek(&self, off: usize) -> Option<char> {
        self.chars.get(self.pos + off).copied()
    }

    fn err_invalid(&self, what: &str) -> StringError {
        invalid(format!("{what} in pattern {:?}", self.src))
    }

    fn err_unsupported(&self, what: &str) -> StringError {
        unsupported(format!("{what} in pattern {:?}", self.src))
    }

    fn translate(mut self) -> Result<String, StringError> {
        let mut depth = 0usize;
        let mut can_quantify = false;
        while let Some(c) = self.peek(0) {
            match c {
                '\\' => {
                    self.pos += 1;
                    let atom = self.escape(false)?;
                    self.out.push_str(&atom.to_rust());
                    can_quantify = true;
                }
                '[' => {
                    self.pos += 1;
                    let cls = self.class()?;
                    self.out.push_str(&cls);
                    can_quantify = true;
                }
                '(' => {
                    self.pos += 1;
                    self.group_open()?;
                    depth += 1;
                    can_quantify = false;
                }
                ')' => {
                    if depth == 0 {
                        return Err(self.err_invalid("unmatched `)`"));
                    }
                    depth -= 1;
                    self.pos += 1;
                    self.out.push(')');
                    can_quantify = true;
                }
                '|' | '^' | '$' => {
                    self.pos += 1;
                    self.out.push(c);
                    can_quantify = false;
                }
                '.' => {
                    self.pos += 1;
                    self.out.push_str(ECMA_DOT);
                    can_quantify = true;
                }
                '*' | '+' | '?' => {
                    if !can_quantify {
                        return Err(self.err_invalid(&format!("quantifier `{c}` without operand")));
                    }
                    self.pos += 1;
                    self.out.push(c);
                    self.skip_lazy();
                    can_quantify = false;
                }
                '{' => match self.quantifier()? {
                    Some(q) => {
                        if !can_quantify {
                            return Err(self.err_invalid("quantifier `{..}` without operand"));
                        }
                        self.out.push_str(&q);
                        self.skip_lazy();
                        can_quantify = false;
                    }
                    None => {
                        // Annex B: a `{` that does not start a quantifier is a literal.
                        self.pos += 1;
                        push_scalar(&mut self.out, '{' as u32);
                        can_quantify = true;
                    }
                },
                _ => {
                    self.pos += 1;
                    push_scalar(&mut self.out, c as u32);
                    can_quantify = true;
                }
            }
        }
        if depth != 0 {
            return Err(self.err_invalid("unterminated group"));
        }
        Ok(self.out)
    }

    fn skip_lazy(&mut self) {
        if self.peek(0) == Some('?') {
            self.pos += 1;
        }
    }

    /// At `{`: parses `{n}`, `{n,}`, `{n,m}`; returns the Rust quantifier and advances, or `None`.
    fn quantifier(&mut self) -> Result<Option<String>, StringError> {
        let mut i = self.pos + 1;
        let read_num = |i: &mut usize| -> Option<String> {
            let start = *i;
            while self.chars.get(*i).is_some_and(|c| c.is_ascii_digit()) {
                *i += 1;
            }
            (*i > start).then(|| self.chars[start..*i].iter().collect())
        };
        let Some(min) = read_num(&mut i) else { return Ok(None) };
        let max = if self.chars.get(i) == Some(&',') {
            i += 1;
            match read_num(&mut i) {
                Some(m) => Some(Some(m)),
                None => Some(None),
            }
        } else {
            None
        };
        if self.chars.get(i) != Some(&'}') {
            return Ok(None);
        }
        let parse = |s: &str| s.parse::<u32>().map_err(|_| self.err_unsupported("repetition count too large"));
        let min_v = parse(&min)?;
        let q = match max {
            None => format!("{{{min_v}}}"),
            Some(None) => format!("{{{min_v},}}"),
            Some(Some(m)) => {
                let max_v = parse(&m)?;
                if max_v < min_v {
                    return Err(self.err_invalid("quantifier range out of order"));
                }
                format!("{{{min_v},{max_v}}}")
            }
        };
        self.pos = i + 1;
        Ok(Some(q))
    }

    /// After `(`.
    fn group_open(&mut self) -> Result<(), StringError> {
        if self.peek(0) != Some('?') {
            self.out.push_str("(?:");
            return Ok(());
        }
        match (self.peek(1), self.peek(2)) {
            (Some(':'), _) => {
                self.pos += 2;
                self.out.push_str("(?:");
                Ok(())
            }
            (Some('='), _) => Err(self.err_unsupported("lookahead `(?=`")),
            (Some('!'), _) => Err(self.err_unsupported("negative lookahead `(?!`")),
            (Some('<'), Some('=')) => Err(self.err_unsupported("lookbehind `(?<=`")),
            (Some('<'), Some('!')) => Err(self.err_unsupported("negative lookbehind `(?<!`")),
            (Some('<'), _) => {
                let mut i = self.pos + 2;
                while self.chars.get(i).is_some_and(|&c| c == '_' || c == '$' || c.is_alphanumeric()) {
                    i += 1;
                }
                if i == self.pos + 2 || self.chars.get(i) != Some(&'>') {
                    return Err(self.err_invalid("malformed group name"));
                }
                self.pos = i + 1;
                self.out.push_str("(?:");
                Ok(())
            }
            (Some(c), _) => Err(self.err_invalid(&format!("`(?{c}` is not ECMA-262 group syntax"))),
            (None, _) => Err(self.err_invalid("unterminated group")),
        }
    }

    /// After `\`.
    fn escape(&mut self, in_class: bool) -> Result<Atom, StringError> {
        let Some(c) = self.peek(0) else { return Err(self.err_invalid("trailing backslash")) };
        self.pos += 1;
        Ok(match c {
            'd' => Atom::Set(ECMA_DIGIT.into()),
            'D' => Atom::Set(ECMA_NOT_DIGIT.into()),
            'w' => Atom::Set(ECMA_WORD.into()),
            'W' => Atom::Set(ECMA_NOT_WORD.into()),
            's' => Atom::Set(ECMA_SPACE.into()),
            'S' => Atom::Set(ECMA_NOT_SPACE.into()),
            'b' if in_class => Atom::Char(8),
            'b' => return Err(self.err_unsupported("word boundary `\\b`")),
            'B' if in_class => return Err(self.err_invalid("`\\B` in a character class")),
            'B' => return Err(self.err_unsupported("non-word boundary `\\B`")),
            'p' | 'P' => {
                if self.peek(0) != Some('{') {
                    return Err(self.err_invalid(&format!("`\\{c}` without `{{name}}`")));
                }
                let start = self.pos + 1;
                let mut i = start;
                while self.chars.get(i).is_some_and(|&ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '=') {
                    i += 1;
                }
                if i == start || self.chars.get(i) != Some(&'}') {
                    return Err(self.err_invalid(&format!("malformed `\\{c}{{..}}` property escape")));
                }
                let name: String = self.chars[start..i].iter().collect();
                self.pos = i + 1;
                Atom::Set(format!("\\{c}{{{name}}}"))
            }
            't' => Atom::Char(9),
            'n' => Atom::Char(10),
            'v' => Atom::Char(11),
            'f' => Atom::Char(12),
            'r' => Atom::Char(13),
            '0' if self.peek(0).is_some_and(|d| d.is_ascii_digit()) => {
                return Err(self.err_invalid("octal escape"));
            }
            '0' => Atom::Char(0),
            '1'..='9' if in_class => return Err(self.err_invalid("octal escape in a character class")),
            '1'..='9' => return Err(self.err_unsupported(&format!("backreference `\\{c}`"))),
            'k' => return Err(self.err_unsupported("named backreference `\\k<..>`")),
            'c' => match self.peek(0) {
                Some(l) if l.is_ascii_alphabetic() => {
                    self.pos += 1;
                    Atom::Char(l as u32 % 32)
                }
                _ => return Err(self.err_invalid("`\\c` not followed by an ASCII letter")),
            },
            'x' => {
                let v = self.hex_digits(2).ok_or_else(|| self.err_invalid("`\\x` needs two hex digits"))?;
                Atom::Char(v)
            }
            'u' => Atom::Char(self.unicode_escape()?),
            c if c.is_ascii_punctuation() => Atom::Char(c as u32),
            c => return Err(self.err_invalid(&format!("`\\{c}` is not an ECMA-262 escape"))),
        })
    }

    fn hex_digits(&mut self, n: usize) -> Option<u32> {
        let mut v = 0u32;
        for k in 0..n {
            v = v * 16 + self.peek(k)?.to_digit(16)?;
        }
        self.pos += n;
        Some(v)
    }

    /// After `\u`.
    fn unicode_escape(&mut self) -> Result<u32, StringError> {
        if self.peek(0) == Some('{') {
            let start = self.pos + 1;
            let mut i = start;
            let mut v: u32 = 0;
            while let Some(d) = self.chars.get(i).and_then(|c| c.to_digit(16)) {
                v = v.saturating_mul(16).saturating_add(d);
                i += 1;
            }
            if i == start || self.chars.get(i) != Some(&'}') || v > 0x10FFFF {
                return Err(self.err_invalid("malformed `\\u{..}` escape"));
            }
            self.pos = i + 1;
            if (0xD800..=0xDFFF).contains(&v) {
                return Err(self.err_unsupported("escaped lone surrogate"));
            }
            return Ok(v);
        }
        let v = self.hex_digits(4).ok_or_else(|| self.err_invalid("`\\u` needs four hex digits"))?;
        if (0xD800..=0xDBFF).contains(&v) && self.peek(0) == Some('\\') && self.peek(1) == Some('u') {
            let save = self.pos;
            self.pos += 2;
            match self.hex_digits(4) {
                Some(lo) if (0xDC00..=0xDFFF).contains(&lo) => {
                    return Ok(0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00));
                }
                _ => self.pos = save,
            }
        }
        if (0xD800..=0xDFFF).contains(&v) {
            return Err(self.err_unsupported("escaped lone surrogate"));
        }
        Ok(v)
    }

    fn class_atom(&mut self) -> Result<Atom, StringError> {
        let Some(c) = self.peek(0) else { return Err(self.err_invalid("unterminated character class")) };
        self.pos += 1;
        if c == '\\' {
            self.escape(true)
        } else {
            Ok(Atom::Char(c as u32))
        }
    }

    /// After `[`.
    fn class(&mut self) -> Result<String, StringError> {
        let negated = self.peek(0) == Some('^');
        if negated {
            self.pos += 1;
        }
        if self.peek(0) == Some(']') {
            self.pos += 1;
            return Ok(if negated { ALL_CHARS } else { NEVER }.to_string());
        }
        let mut items = String::new();
        loop {
            match self.peek(0) {
                None => return Err(self.err_invalid("unterminated character class")),
                Some(']') => {
                    self.pos += 1;
                    break;
                }
                Some(_) => {}
            }
            let a = self.class_atom()?;
            if self.peek(0) == Some('-') && self.peek(1).is_some_and(|n| n != ']') {
                self.pos += 1;
                let b = self.class_atom()?;
                match (a, b) {
                    (Atom::Char(x), Atom::Char(y)) => {
                        if x > y {
                            return Err(self.err_invalid("character class range out of order"));
                        }
                        push_scalar(&mut items, x);
                        items.push('-');
                        push_scalar(&mut items, y);
                    }
                    _ => return Err(self.err_invalid("class escape used as a range endpoint")),
                }
            } else {
                items.push_str(&a.to_rust());
            }
        }
        Ok(format!("[{}{items}]", if negated { "^" } else { "" }))
    }
}

/// Parses a Rust-syntax regex (as produced by the ECMA tokenizer or written in this module).
fn parse_rust(rust: &str, what: &str) -> Result<Hir, StringError> {
    regex_syntax::ParserBuilder::new().unicode(true).utf8(true).build().parse(rust).map_err(|e| {
        let msg = e.to_string();
        let detail = msg.lines().last().unwrap_or_default().trim().to_string();
        match &e {
            regex_syntax::Error::Translate(t)
                if matches!(
                    t.kind(),
                    regex_syntax::hir::ErrorKind::UnicodePropertyNotFound
                        | regex_syntax::hir::ErrorKind::UnicodePropertyValueNotFound
                ) =>
            {
                unsupported(format!("{detail} in {what}"))
            }
            _ => invalid(format!("{detail} in {what}")),
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Anchors: expansion of a pattern into start/end-anchored, look-free branches.
// ---------------------------------------------------------------------------------------------

struct Branch {
    start: bool,
    end: bool,
    body: Hir,
}

const MAX_BRANCHES: usize = 256;

fn nullable(h: &Hir) -> bool {
    h.properties().minimum_len() == Some(0)
}

fn combine(r: &Branch, c: &Branch) -> Option<Branch> {
    let mut rb = r.body.clone();
    let mut cb = c.body.clone();
    if c.start {
        // `^` inside `c` forces everything before it to be empty and at position 0.
        if !nullable(&rb) {
            return None;
        }
        rb = Hir::empty();
    }
    if r.end {
        // `$` inside `r` forces everything after it to be empty.
        if !nullable(&cb) {
            return None;
        }
        cb = Hir::empty();
    }
    Some(Branch { start: r.start || c.start, end: r.end || c.end, body: Hir::concat(vec![rb, cb]) })
}

fn expand(h: &Hir, src: &str) -> Result<Vec<Branch>, StringError> {
    if h.properties().look_set().is_empty() {
        return Ok(vec![Branch { start: false, end: false, body: h.clone() }]);
    }
    let too_many = || unsupported(format!("too many anchored alternatives in pattern {src:?}"));
    match h.kind() {
        HirKind::Look(Look::Start) => Ok(vec![Branch { start: true, end: false, body: Hir::empty() }]),
        HirKind::Look(Look::End) => Ok(vec![Branch { start: false, end: true, body: Hir::empty() }]),
        HirKind::Look(other) => Err(unsupported(format!("assertion {other:?} in pattern {src:?}"))),
        HirKind::Capture(cap) => expand(&cap.sub, src),
        HirKind::Alternation(hs) => {
            let mut out = Vec::new();
            for h in hs {
                out.extend(expand(h, src)?);
                if out.len() > MAX_BRANCHES {
                    return Err(too_many());
                }
            }
            Ok(out)
        }
        HirKind::Concat(hs) => {
            let mut acc = vec![Branch { start: false, end: false, body: Hir::empty() }];
            for h in hs {
                let cs = expand(h, src)?;
                let mut next = Vec::new();
                for r in &acc {
                    for c in &cs {
                        next.extend(combine(r, c));
                    }
                }
                if next.len() > MAX_BRANCHES {
                    return Err(too_many());
                }
                acc = next;
            }
            Ok(acc)
        }
        HirKind::Repetition(rep) if rep.max == Some(1) && rep.min <= 1 => {
            let mut out = expand(&rep.sub, src)?;
            if rep.min == 0 {
                out.push(Branch { start: false, end: false, body: Hir::empty() });
            }
            Ok(out)
        }
        _ => Err(unsupported(format!("anchor inside a repeated group in pattern {src:?}"))),
    }
}

/// The literal regex for an ECMA pattern, or `None` if the pattern matches every string.
fn pattern_literal(ecma: &str) -> Result<Option<String>, StringError> {
    let rust = Ecma::new(ecma).translate()?;
    let hir = parse_rust(&rust, &format!("pattern {ecma:?}"))?;
    let branches = expand(&hir, ecma)?;
    let any_star = format!("{}*", any_char_group());
    let mut alts: Vec<String> = Vec::new();
    for b in branches {
        if b.body.properties().minimum_len().is_none() {
            continue; // never matches
        }
        if nullable(&b.body) && !(b.start && b.end) {
            return Ok(None); // matches every string
        }
        let mut s = String::new();
        if !b.start {
            s.push_str(&any_star);
        }
        enc_hir(&b.body, &mut s)?;
        if !b.end {
            s.push_str(&any_star);
        }
        if !alts.contains(&s) {
            alts.push(s);
        }
    }
    Ok(Some(match alts.len() {
        0 => format!("\"{NEVER}\""),
        1 => format!("\"{}\"", alts[0]),
        _ => format!("\"(?:{})\"", alts.join("|")),
    }))
}

// ---------------------------------------------------------------------------------------------
// Formats: Rust regexes over the decoded value (fully anchored), encoded like patterns.
// ---------------------------------------------------------------------------------------------

fn value_literal(value_regex: &str, what: &str) -> Result<String, StringError> {
    let hir = parse_rust(value_regex, what)?;
    if !hir.properties().look_set().is_empty() {
        return Err(unsupported(format!("assertion in {what}")));
    }
    let mut s = String::from("\"");
    enc_hir_mode(&hir, &mut s, Encodings::Plain)?;
    s.push('"');
    Ok(s)
}

fn format_regexes(name: &str) -> Result<Vec<String>, StringError> {
    let what = format!("format {name:?}");
    let values: Vec<String> = match name {
        "date" => vec![date_src()],
        "time" => vec![time_src(), leap_hour_src(), leap_minute_src()],
        "date-time" => {
            let any_date = "[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt]";
            vec![
                format!("{}[Tt]{}", date_src(), time_src()),
                format!("{any_date}{}", leap_hour_src()),
                format!("{any_date}{}", leap_minute_src()),
            ]
        }
        "duration" => vec![duration_src()],
        "email" => vec![email_src()],
        // The total-length regex only needs LDH characters and dots: the label regex allows no others.
        "hostname" => return Ok(vec![value_literal(&hostname_src(), &what)?, "\"[-.0-9A-Za-z]{1,253}\"".to_string()]),
        "ipv4" => vec![ipv4_src()],
        "ipv6" => vec![ipv6_src()],
        "uuid" => vec![format!("{HEX}{{8}}-{HEX}{{4}}-{HEX}{{4}}-{HEX}{{4}}-{HEX}{{12}}")],
        "uri" => vec![uri_src(false, false)],
        "uri-reference" => vec![uri_src(false, true)],
        "iri" => vec![uri_src(true, false)],
        "iri-reference" => vec![uri_src(true, true)],
        "uri-template" => vec![uri_template_src()],
        "json-pointer" => vec![JSON_POINTER.to_string()],
        "relative-json-pointer" => vec![format!("(?:0|[1-9][0-9]*)(?:#|{JSON_POINTER})")],
        _ => return Err(unsupported(format!("format {name:?} is not enforced"))),
    };
    values.iter().map(|v| value_literal(v, &what)).collect()
}

const IPV4_OCTET: &str = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
const JSON_POINTER: &str = "(?:/(?:[^/~]|~[01])*)*";
const FRAC: &str = r"(?:\.[0-9]+)?";

fn ipv4_src() -> String {
    format!(r"{IPV4_OCTET}(?:\.{IPV4_OCTET}){{3}}")
}

fn date_src() -> String {
    let d31 = "(?:0[1-9]|[12][0-9]|3[01])";
    let d30 = "(?:0[1-9]|[12][0-9]|30)";
    let d28 = "(?:0[1-9]|1[0-9]|2[0-8])";
    let leap = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[048]|[2468][048]|[13579][26])00)";
    format!("(?:[0-9]{{4}}-(?:(?:0[13578]|1[02])-{d31}|(?:0[469]|11)-{d30}|02-{d28})|{leap}-02-29)")
}

fn time_src() -> String {
    format!("(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60){FRAC}(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])")
}

/// Any time whose seconds are not 60 (the leap-second checks only constrain `:60`).
fn no_leap_second_time() -> String {
    format!("[0-9]{{2}}:[0-9]{{2}}:[0-5][0-9]{FRAC}(?:[Zz]|[+-][0-9]{{2}}:[0-9]{{2}})")
}

/// Leap seconds, hour part: a `:60` second must be 23:59:60 in UTC. With local `hh:mm` and offset
/// `±oh:om`: for `+`, `oh = hh` when `mm < 59` and `oh = hh + 1 (mod 24)` when `mm = 59`; for `-`,
/// `oh = 23 - hh`; for `Z`, `hh = 23`. The minute part is checked by [`leap_minute_src`].
fn leap_hour_src() -> String {
    let mut alts = vec![no_leap_second_time()];
    alts.push(format!("23:[0-9]{{2}}:60{FRAC}[Zz]"));
    for hh in 0..24u32 {
        alts.push(format!(
            r"{hh:02}:(?:(?:[0-4][0-9]|5[0-8]):60{FRAC}\+{hh:02}|59:60{FRAC}\+{next:02}|[0-9]{{2}}:60{FRAC}-{minus:02}):[0-9]{{2}}",
            next = (hh + 1) % 24,
            minus = 23 - hh
        ));
    }
    format!("(?:{})", alts.join("|"))
}

/// Leap seconds, minute part: for `+`, `om = mm + 1 (mod 60)`; for `-`, `om = 59 - mm`; for `Z`,
/// `mm = 59`.
fn leap_minute_src() -> String {
    let mut alts = vec![no_leap_second_time()];
    alts.push(format!("[0-9]{{2}}:59:60{FRAC}[Zz]"));
    for mm in 0..60u32 {
        alts.push(format!(
            r"[0-9]{{2}}:{mm:02}:60{FRAC}(?:\+[0-9]{{2}}:{plus:02}|-[0-9]{{2}}:{minus:02})",
            plus = (mm + 1) % 60,
            minus = 59 - mm
        ));
    }
    format!("(?:{})", alts.join("|"))
}

fn duration_src() -> String {
    let n = "[0-9]+";
    let time = format!("T(?:{n}H(?:{n}M(?:{n}S)?)?|{n}M(?:{n}S)?|{n}S)");
    let date = format!("(?:{n}D|{n}M(?:{n}D)?|{n}Y(?:{n}M(?:{n}D)?)?)");
    format!("P(?:{date}(?:{time})?|{time}|{n}W)")
}

fn ipv6_src() -> String {
    let h = format!("{HEX}{{1,4}}");
    let ls32 = format!("(?:{h}:{h}|{})", ipv4_src());
    let rep = |k: usize| format!("(?:{h}:){{{k}}}");
    let pre = |k: usize| if k == 0 { format!("(?:{h})?") } else { format!("(?:(?:{h}:){{0,{k}}}{h})?") };
    let alts = [
        format!("{}{ls32}", rep(6)),
        format!("::{}{ls32}", rep(5)),
        format!("{}::{}{ls32}", pre(0), rep(4)),
        format!("{}::{}{ls32}", pre(1), rep(3)),
        format!("{}::{}{ls32}", pre(2), rep(2)),
        format!("{}::{h}:{ls32}", pre(3)),
        format!("{}::{ls32}", pre(4)),
        format!("{}::{h}", pre(5)),
        format!("{}::", pre(6)),
    ];
    format!("(?:{})", alts.join("|"))
}

fn hostname_src() -> String {
    let a = "[A-Za-z0-9]";
    let l = "[A-Za-z0-9-]";
    // 1–3 characters; exactly 4; 5–63 with no `--` at positions 3–4.
    let label = format!("(?:{a}(?:{l}?{a})?|{a}{l}{l}{a}|{a}{l}(?:{a}{l}|-{a}){l}{{0,58}}{a})");
    format!(r"{label}(?:\.{label})*")
}

fn email_src() -> String {
    let atext = r"[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~]";
    let dot_string = format!(r"{atext}+(?:\.{atext}+)*");
    let quoted = r#""(?:[\x20\x21\x23-\x5B\x5D-\x7E]|\\[\x20-\x7E])*""#;
    let sub_domain = "[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?";
    let domain = format!(r"{sub_domain}(?:\.{sub_domain})*");
    let snum = "(?:25[0-5]|2[0-4][0-9]|[01][0-9]{2}|[0-9]{1,2})";
    let v4 = format!(r"{snum}(?:\.{snum}){{3}}");
    // RFC 5321 IPv6: "::" stands for at least two groups.
    let h = format!("{HEX}{{1,4}}");
    let groups = |k: usize| match k {
        0 => String::new(),
        1 => h.clone(),
        _ => format!("{h}(?::{h}){{{}}}", k - 1),
    };
    let mut v6 = vec![format!("{h}(?::{h}){{7}}"), format!("{h}(?::{h}){{5}}:{v4}")];
    for l in 0..=6 {
        for r in 0..=(6 - l) {
            v6.push(format!("{}::{}", groups(l), groups(r)));
        }
    }
    for l in 0..=4 {
        for r in 0..=(4 - l) {
            let right = if r == 0 { String::new() } else { format!("{}:", groups(r)) };
            v6.push(format!("{}::{right}{v4}", groups(l)));
        }
    }
    let addr = format!(r"\[(?:{v4}|[Ii][Pp][Vv]6:(?:{}))\]", v6.join("|"));
    format!("(?:{dot_string}|{quoted})@(?:{domain}|{addr})")
}

const UCSCHAR: &str = r"\x{A0}-\x{D7FF}\x{F900}-\x{FDCF}\x{FDF0}-\x{FFEF}\x{10000}-\x{1FFFD}\x{20000}-\x{2FFFD}\x{30000}-\x{3FFFD}\x{40000}-\x{4FFFD}\x{50000}-\x{5FFFD}\x{60000}-\x{6FFFD}\x{70000}-\x{7FFFD}\x{80000}-\x{8FFFD}\x{90000}-\x{9FFFD}\x{A0000}-\x{AFFFD}\x{B0000}-\x{BFFFD}\x{C0000}-\x{CFFFD}\x{D0000}-\x{DFFFD}\x{E1000}-\x{EFFFD}";
const IPRIVATE: &str = r"\x{E000}-\x{F8FF}\x{F0000}-\x{FFFFD}\x{100000}-\x{10FFFD}";

/// RFC 3986 `URI` / `URI-reference`, or RFC 3987 `IRI` / `IRI-reference` when `iri`.
fn uri_src(iri: bool, reference: bool) -> String {
    let ucs = if iri { UCSCHAR } else { "" };
    let unreserved = format!(r"A-Za-z0-9\-._~{ucs}");
    let sub_delims = r"!$&'()*+,;=";
    let pct = format!("%{HEX}{{2}}");
    let class = |extra: &str| format!("(?:[{unreserved}{sub_delims}{extra}]|{pct})");
    let pchar = class(":@");
    let userinfo = format!("{}*", class(":"));
    let reg_name = format!("{}*", class(""));
    let ipv_future = format!(r"[vV]{HEX}+\.[A-Za-z0-9\-._~{sub_delims}:]+");
    let host = format!(r"(?:\[(?:{}|{ipv_future})\]|{reg_name})", ipv6_src());
    let authority = format!("(?:{userinfo}@)?{host}(?::[0-9]*)?");
    let segment = format!("{pchar}*");
    let segment_nz = format!("{pchar}+");
    let path_abempty = format!("(?:/{segment})*");
    let path_absolute = format!("/(?:{segment_nz}(?:/{segment})*)?");
    let path_rootless = format!("{segment_nz}(?:/{segment})*");
    let path_noscheme = format!("{}+(?:/{segment})*", class("@"));
    let private = if iri { IPRIVATE } else { "" };
    let query = format!("(?:{pchar}|[/?{private}])*");
    let fragment = format!("(?:{pchar}|[/?])*");
    let tail = format!(r"(?:\?{query})?(?:#{fragment})?");
    let scheme = r"[A-Za-z][A-Za-z0-9+\-.]*";
    let absolute = format!("{scheme}:(?://{authority}{path_abempty}|{path_absolute}|{path_rootless}|){tail}");
    if reference {
        let relative = format!("(?://{authority}{path_abempty}|{path_absolute}|{path_noscheme}|){tail}");
        format!("(?:{absolute}|{relative})")
    } else {
        absolute
    }
}

fn uri_template_src() -> String {
    let pct = format!("%{HEX}{{2}}");
    let literals = format!(r"(?:[\x21\x23\x24\x26-\x3B\x3D\x3F-\x5B\x5D\x5F\x61-\x7A\x7E{UCSCHAR}{IPRIVATE}]|{pct})");
    let varchar = format!("(?:[A-Za-z0-9_]|{pct})");
    let varname = format!(r"{varchar}(?:\.?{varchar})*");
    let varspec = format!(r"{varname}(?::[1-9][0-9]{{0,3}}|\*)?");
    let expression = format!(r"\{{[+#./;?&]?{varspec}(?:,{varspec})*\}}");
    format!("(?:{literals}|{expression})*")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_set_shapes() {
        assert_eq!(hex_set(&[(0, 0xFFFF)], 4), "[0-9A-Fa-f]{4}");
        assert_eq!(hex_set(&[(0x61, 0x61)], 4), "0061");
        assert_eq!(hex_set(&[(0xE9, 0xE9)], 4), "00[Ee]9");
    }
}
