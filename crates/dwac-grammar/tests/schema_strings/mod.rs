//! `schema::strings`: the JSON-Schema-Test-Suite (draft 2020-12) string groups, and differential
//! property tests (random values, random encodings) against independent oracles: `suite.rs`,
//! `properties.rs`, and `formats.rs` (formats against independent oracles); the shared helpers
//! here.
//!
//! Every regex returned by the module is matched against the whole literal (`^(?:r)$`) with the
//! `regex` crate; a literal is accepted when all returned regexes match.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::str::FromStr;

use dwac_grammar::schema::strings::{
    is_supported_format, json_string_any, json_string_literal, pattern_regex, string_regexes, StringConstraints,
    StringError,
};
use regex::{Regex, RegexBuilder};
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn build(r: &str) -> Regex {
    RegexBuilder::new(&format!("^(?:{r})$"))
        .size_limit(1 << 30)
        .dfa_size_limit(1 << 30)
        .build()
        .unwrap_or_else(|e| panic!("regex does not compile: {e}\n{}", &r[..r.len().min(300)]))
}

fn build_all(rs: &[String]) -> Vec<Regex> {
    rs.iter().map(|r| build(r)).collect()
}

fn all_match(res: &[Regex], lit: &str) -> bool {
    res.iter().all(|r| r.is_match(lit))
}

fn canonical(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

fn push_u(out: &mut String, unit: u32, upper: bool) {
    if upper {
        out.push_str(&format!("\\u{unit:04X}"));
    } else {
        out.push_str(&format!("\\u{unit:04x}"));
    }
}

fn push_u_char(out: &mut String, c: char, upper: bool) {
    let mut buf = [0u16; 2];
    for unit in c.encode_utf16(&mut buf) {
        push_u(out, u32::from(*unit), upper);
    }
}

/// Every character as `\uXXXX` (surrogate pairs for astral characters).
fn all_escaped(s: &str, upper: bool) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        push_u_char(&mut out, c, upper);
    }
    out.push('"');
    out
}

/// xorshift64*.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
    fn percent(&mut self, p: usize) -> bool {
        self.below(100) < p
    }
}

/// A random JSON encoding of `s` (per character: canonical, `\u` in random case, or short escape).
fn random_encoding(rng: &mut Rng, s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        let short = match c {
            '"' => Some("\\\""),
            '\\' => Some("\\\\"),
            '/' => Some("\\/"),
            '\u{8}' => Some("\\b"),
            '\u{c}' => Some("\\f"),
            '\n' => Some("\\n"),
            '\r' => Some("\\r"),
            '\t' => Some("\\t"),
            _ => None,
        };
        match rng.below(3) {
            0 => {
                let one = canonical(&c.to_string());
                out.push_str(&one[1..one.len() - 1]);
            }
            1 => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    let mut hex = format!("{:04x}", *unit);
                    hex = hex.chars().map(|h| if rng.percent(50) { h.to_ascii_uppercase() } else { h }).collect();
                    out.push_str("\\u");
                    out.push_str(&hex);
                }
            }
            _ => match short {
                Some(e) => out.push_str(e),
                None => {
                    let one = canonical(&c.to_string());
                    out.push_str(&one[1..one.len() - 1]);
                }
            },
        }
    }
    out.push('"');
    out
}

const POOL: &[char] = &[
    'a',
    'b',
    'c',
    'x',
    'Z',
    '0',
    '1',
    '9',
    ' ',
    '_',
    '-',
    '.',
    '/',
    '"',
    '\\',
    '~',
    '@',
    ':',
    '\0',
    '\u{1}',
    '\u{8}',
    '\t',
    '\n',
    '\u{b}',
    '\u{c}',
    '\r',
    '\u{1f}',
    '\u{7f}',
    '\u{a0}',
    'é',
    'É',
    'π',
    'ß',
    '中',
    '\u{2028}',
    '\u{2029}',
    '\u{2003}',
    '\u{feff}',
    '\u{ffff}',
    '٣',
    '😀',
    '𝕏',
    '🐲',
    '\u{10ffff}',
];

fn random_string(rng: &mut Rng, pool: &[char], max_len: usize) -> String {
    let n = rng.below(max_len + 1);
    (0..n).map(|_| *rng.pick(pool)).collect()
}

fn suite_dir() -> PathBuf {
    dwac_testdata::schema_test_suite("draft2020-12")
}

mod formats;
mod properties;
mod suite;
