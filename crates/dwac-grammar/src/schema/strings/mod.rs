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

mod anchors;
mod disjoint;
mod ecma;
mod encode;
mod formats;

use anchors::pattern_literal;
pub use disjoint::{format_superset, regexes_disjoint};
use ecma::{parse_rust, Ecma};
pub use encode::length_bounds;
use encode::{any_char_group, enc_class, enc_hir, enc_hir_mode, length_regex, push_scalar, Encodings, HEX, NEVER};
use formats::{format_regexes, value_literal};

/// Why a string constraint could not be compiled.
#[derive(Debug, thiserror::Error)]
pub enum StringError {
    /// A valid construct we cannot honour exactly (the caller should refuse the schema loudly).
    #[error("unsupported string constraint: {what}")]
    Unsupported {
        /// The construct, with the pattern or format it is in where there is one.
        what: String,
    },
    /// The constraint itself is malformed (e.g. a pattern that is not an ECMA-262 regex).
    #[error("invalid string constraint: {what}")]
    Invalid {
        /// What is malformed, and the pattern it is in.
        what: String,
    },
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
    /// `minLength`, in Unicode code points of the decoded value.
    pub min_length: Option<u64>,
    /// `maxLength`, in Unicode code points of the decoded value.
    pub max_length: Option<u64>,
    /// `pattern`: an ECMA-262 regex the decoded value must contain a match of.
    pub pattern: Option<String>,
    /// `format`: the format's name (see [`is_supported_format`]).
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

/// A pattern that starts with `^` and lookaheads, `^(?=A)…(?!B)…C` with no `|` at the top of
/// `C`: the positive lookaheads, the negative ones and `C`, each to be read as a pattern anchored
/// at the start (`^(?:A)`). A string matches the pattern exactly when it matches every `^(?:A)`,
/// no `^(?:B)` and `^(?:C)` (each lookahead is tried at position 0 only, where `^` holds), so the
/// pattern is an intersection of patterns and a difference: the string terminal's `also` and
/// `except` lists. `None` for any other pattern (lookarounds elsewhere stay refused by name).
pub fn split_leading_lookaheads(pattern: &str) -> Option<(Vec<String>, Vec<String>, String)> {
    let mut rest = pattern.strip_prefix('^')?;
    let (mut pos, mut neg) = (Vec::new(), Vec::new());
    while let Some(kind @ ('=' | '!')) = rest.strip_prefix("(?").and_then(|r| r.chars().next()) {
        let close = group_end(rest)?;
        let inner = format!("^(?:{})", &rest[3..close]);
        if kind == '=' {
            pos.push(inner);
        } else {
            neg.push(inner);
        }
        rest = &rest[close + 1..];
    }
    if pos.is_empty() && neg.is_empty() || has_top_level_bar(rest) {
        return None;
    }
    Some((pos, neg, format!("^(?:{rest})")))
}

/// The characters of a pattern that are neither escaped nor inside a character class, with
/// their byte index and the group depth around them (a `(` counts from itself on, a `)` up to
/// itself).
fn syntax_chars(s: &str) -> impl Iterator<Item = (usize, char, usize)> + '_ {
    let mut depth = 0usize;
    let mut class = false;
    let mut escaped = false;
    s.char_indices().filter_map(move |(i, c)| {
        if escaped {
            escaped = false;
            return None;
        }
        match c {
            '\\' => escaped = true,
            '[' if !class => class = true,
            ']' if class => class = false,
            _ if class => {}
            '(' => {
                depth += 1;
                return Some((i, c, depth));
            }
            ')' => {
                let d = depth;
                depth = depth.saturating_sub(1);
                return Some((i, c, d));
            }
            _ => return Some((i, c, depth)),
        }
        None
    })
}

/// The byte index of the `)` closing the group that `s` starts with.
fn group_end(s: &str) -> Option<usize> {
    syntax_chars(s).find(|&(_, c, d)| c == ')' && d == 1).map(|(i, _, _)| i)
}

/// Whether `s` has a `|` outside every group and character class.
fn has_top_level_bar(s: &str) -> bool {
    syntax_chars(s).any(|(_, c, d)| c == '|' && d == 0)
}
