//! Disjointness of string languages, for `oneOf`s whose branches are strings told apart by
//! patterns and formats (`"format": "uri"` next to `"pattern": "^\\./"`): each branch's language
//! is over-approximated by regexes (its patterns exactly, each format by a shape every string of
//! the format has by its specification), and the branches are disjoint when no lexeme matches
//! all the regexes of both: an emptiness check on the product of their DFAs.
//!
//! A format's own regex here may be stricter than the format (see the module docs of
//! `strings`), so it is never used to prove disjointness: a string the regex misses but the
//! format allows could match both branches. The shapes below are necessary conditions only.

use std::collections::{HashSet, VecDeque};

use regex_automata::dfa::{dense, Automaton, StartKind};
use regex_automata::util::primitives::StateID;
use regex_automata::{Anchored, Input};

use super::{format_regexes, value_literal};

/// Product states the emptiness check may visit before it answers "unsure".
const MAX_PRODUCT_STATES: usize = 20_000;
/// Size limits of each regex's DFA (bytes); a larger one makes the check answer "unsure".
const DFA_SIZE_LIMIT: usize = 1 << 20;

/// A lexeme regex every string of format `name` matches (by the format's specification), or
/// `None` when the format has no shape worth checking (anything may be such a string, as far as
/// this check knows).
pub fn format_superset(name: &str) -> Option<String> {
    // (Exact where dwac's regex is the specification's grammar itself.)
    let value = match name {
        // RFC 3986 / 3987: an absolute URI or IRI starts with its scheme and a colon.
        "uri" | "iri" => "[A-Za-z][-A-Za-z0-9+.]*:.*",
        // RFC 3339.
        "date" => "[0-9]{4}-[0-9]{2}-[0-9]{2}",
        "date-time" => "[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt].*",
        "time" => "[0-9]{2}:[0-9]{2}:[0-9]{2}.*",
        // ISO 8601 durations.
        "duration" => "P.*",
        // RFC 5321 mailboxes: a local part, an at sign, a domain.
        "email" => ".+@.+",
        // RFC 1123 host names: letters, digits, hyphens and dots.
        "hostname" => "[-.0-9A-Za-z]{1,253}",
        "ipv4" => "[0-9]{1,3}(?:\\.[0-9]{1,3}){3}",
        "ipv6" => "[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*",
        "uuid" | "json-pointer" | "relative-json-pointer" => {
            return format_regexes(name).ok().filter(|r| r.len() == 1).map(|mut r| r.remove(0))
        }
        _ => return None,
    };
    value_literal(&format!("(?s:{value})"), name).ok()
}

/// Does no lexeme match every one of `regexes`? `false` when some does, and when unsure (a
/// regex the DFA builder refuses or too large, or more than `MAX_PRODUCT_STATES` product
/// states).
pub fn regexes_disjoint(regexes: &[String]) -> bool {
    if regexes.is_empty() {
        return false;
    }
    let config = dense::Config::new()
        .start_kind(StartKind::Anchored)
        .dfa_size_limit(Some(DFA_SIZE_LIMIT))
        .determinize_size_limit(Some(4 * DFA_SIZE_LIMIT));
    let mut dfas = Vec::with_capacity(regexes.len());
    for r in regexes {
        match dense::Builder::new().configure(config.clone()).build(r) {
            Ok(d) => dfas.push(d),
            Err(_) => return false,
        }
    }
    let input = Input::new("").anchored(Anchored::Yes);
    let mut start = Vec::with_capacity(dfas.len());
    for d in &dfas {
        match d.start_state_forward(&input) {
            Ok(s) => start.push(s),
            Err(_) => return false,
        }
    }
    let mut seen: HashSet<Vec<StateID>> = HashSet::from([start.clone()]);
    let mut queue: VecDeque<Vec<StateID>> = VecDeque::from([start]);
    while let Some(states) = queue.pop_front() {
        if dfas.iter().zip(&states).all(|(d, &s)| d.is_match_state(d.next_eoi_state(s))) {
            return false;
        }
        for b in 0..=255u8 {
            let next: Vec<StateID> = dfas.iter().zip(&states).map(|(d, &s)| d.next_state(s, b)).collect();
            if dfas.iter().zip(&next).any(|(d, &s)| d.is_dead_state(s) || d.is_quit_state(s)) {
                continue;
            }
            if seen.insert(next.clone()) {
                if seen.len() > MAX_PRODUCT_STATES {
                    return false;
                }
                queue.push_back(next);
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::super::{json_string_literal, pattern_regex};
    use super::*;

    #[test]
    fn absolute_uris_and_dot_relative_paths_are_disjoint() {
        let uri = format_superset("uri").unwrap();
        let rel = pattern_regex("^\\./.+$").unwrap();
        assert!(regexes_disjoint(&[uri.clone(), rel.clone()]));
        // (A scheme may be followed by anything, "./" included.)
        assert!(!regexes_disjoint(&[uri.clone(), pattern_regex("\\./").unwrap()]));
        assert!(!regexes_disjoint(&[uri, pattern_regex("^a").unwrap()]));
        assert!(!regexes_disjoint(&[rel.clone(), json_string_literal("./x")]));
        assert!(regexes_disjoint(&[rel, json_string_literal("x/.")]));
    }

    #[test]
    fn each_shape_holds_for_its_format_examples() {
        let cases = [
            ("uri", "https://example.com/a?b#c"),
            ("iri", "urn:isbn:0451450523"),
            ("date", "2024-02-29"),
            ("date-time", "2024-02-29t23:59:60Z"),
            ("time", "23:59:60+01:00"),
            ("duration", "P1Y2M3DT4H"),
            ("email", "\"a b\"@[127.0.0.1]"),
            ("hostname", "xn--bcher-kva.example"),
            ("ipv4", "192.168.0.1"),
            ("ipv6", "::ffff:192.0.2.128"),
            ("uuid", "2EB8AA08-AA98-11EA-B4AA-73B441D16380"),
            ("json-pointer", "/a~1b/~0"),
        ];
        for (format, value) in cases {
            let shape = format_superset(format).unwrap_or_else(|| panic!("{format}"));
            assert!(!regexes_disjoint(&[shape, json_string_literal(value)]), "{format}: {value}");
        }
        assert!(format_superset("uri-reference").is_none());
    }

    #[test]
    fn dates_are_not_date_times() {
        let (d, dt) = (format_superset("date").unwrap(), format_superset("date-time").unwrap());
        assert!(regexes_disjoint(&[d, dt]));
    }
}
