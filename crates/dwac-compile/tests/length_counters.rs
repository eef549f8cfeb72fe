//! JSON string length bounds are built as counters beside the subset construction
//! (`lexer/length.rs`); the lexer must be the one the bound's own pattern gives. The pattern
//! wrapped in a group is not recognized as a bound, so it is built as an automaton: both
//! lexers must accept the same terminals after every byte string (a product search over both
//! automata), with the same number of states (both are minimal).

use std::collections::{HashSet, VecDeque};

use dwac_compile::build_lexer;
use dwac_grammar::schema::strings::{string_regexes, StringConstraints};
use dwac_grammar::{Munch, Terminal};
use dwac_runtime::unstable::LexerTables;

fn regexes(min: Option<u64>, max: Option<u64>, pattern: Option<&str>, format: Option<&str>) -> Vec<String> {
    let len = StringConstraints { min_length: min, max_length: max, ..Default::default() };
    let mut out = string_regexes(&len).unwrap();
    let other = StringConstraints {
        pattern: pattern.map(String::from),
        format: format.map(String::from),
        ..Default::default()
    };
    out.extend(string_regexes(&other).unwrap());
    out
}

/// A string terminal as the schema front-end makes it (its first regex the main one), and the
/// same with every pattern wrapped in a group, which the lexer builds as automata only.
fn terminal(name: &str, mut res: Vec<String>, wrap: bool) -> Terminal {
    if res.is_empty() {
        res.push(dwac_grammar::schema::strings::json_string_any());
    }
    if wrap {
        res = res.into_iter().map(|r| format!("(?:{r})")).collect();
    }
    let mut t = Terminal::new(name, res.remove(0));
    t.also = res;
    t.munch = Munch::Global;
    t
}

/// The terminals accepted after each byte string, compared over both lexers' reachable states
/// (forks of `q0` included). Returns the number of state pairs visited.
fn same_language(a: &LexerTables, b: &LexerTables) -> usize {
    let live = |lex: &LexerTables, q: u32| lex.can_continue(q) || !lex.accepts(q).is_empty();
    let next = |lex: &LexerTables, qs: &[u32], byte: u8| -> Vec<u32> {
        let mut out: Vec<u32> = qs.iter().flat_map(|&q| lex.successors(q, byte)).filter(|&q| live(lex, q)).collect();
        out.sort_unstable();
        out.dedup();
        out
    };
    let accepted = |lex: &LexerTables, qs: &[u32]| -> Vec<u32> {
        let mut out: Vec<u32> = qs.iter().flat_map(|&q| lex.accepts(q).iter().copied()).collect();
        out.sort_unstable();
        out.dedup();
        out
    };
    let start = (vec![a.start], vec![b.start]);
    let mut seen: HashSet<(Vec<u32>, Vec<u32>)> = HashSet::from([start.clone()]);
    let mut queue = VecDeque::from([(start, Vec::<u8>::new())]);
    while let Some(((qa, qb), path)) = queue.pop_front() {
        assert_eq!(accepted(a, &qa), accepted(b, &qb), "after {:?}", String::from_utf8_lossy(&path));
        for byte in 0..=255u8 {
            let (na, nb) = (next(a, &qa, byte), next(b, &qb, byte));
            let mut p = path.clone();
            p.push(byte);
            assert_eq!(na.is_empty(), nb.is_empty(), "alive after {:?}", String::from_utf8_lossy(&p));
            if !na.is_empty() && seen.insert((na.clone(), nb.clone())) {
                queue.push_back(((na, nb), p));
            }
        }
    }
    seen.len()
}

fn check(cases: &[(&str, Vec<String>)]) -> usize {
    let build = |wrap: bool| {
        let terms: Vec<Terminal> = cases.iter().map(|(n, r)| terminal(n, r.clone(), wrap)).collect();
        build_lexer(&terms, &vec![true; terms.len()]).unwrap()
    };
    let (counted, automaton) = (build(false), build(true));
    counted.validate().unwrap();
    let pairs = same_language(&counted, &automaton);
    let names: Vec<(&str, &[String])> = cases.iter().map(|c| (c.0, c.1.as_slice())).collect();
    assert_eq!(counted.num_states, automaton.num_states, "{names:?}");
    pairs
}

#[test]
fn bounded_strings_lex_as_their_patterns_do() {
    let any = || regexes(None, None, None, None);
    for (min, max) in [(Some(1), Some(3)), (Some(2), Some(2)), (Some(3), None), (None, Some(4)), (Some(4), Some(2))] {
        let pairs = check(&[("S", regexes(min, max, None, None))]);
        // (4, 2) accepts nothing: the start alone.
        assert!(pairs > 5 || min > max, "{min:?} {max:?}: {pairs}");
    }
    // A pattern longer, shorter and as long as the bound; alternatives of different lengths.
    for max in [2, 3, 5, 9] {
        check(&[("P", regexes(Some(1), Some(max), Some("^(ab|c[0-9]{1,3})$"), None))]);
    }
    // An unbounded pattern and a format, each with a plain string beside it in the component.
    check(&[("W", regexes(Some(2), Some(6), Some("^[a-z]+( [a-z]+)*$"), None)), ("STRING", any())]);
    check(&[("E", regexes(None, Some(12), None, Some("email"))), ("STRING", any())]);
    // Two bounded terminals at once, and a date (bounded by its format) under a larger bound.
    check(&[("A", regexes(Some(1), Some(3), None, None)), ("B", regexes(Some(2), Some(5), Some("^x"), None))]);
    check(&[("D", regexes(None, Some(40), None, Some("date"))), ("S", regexes(Some(1), Some(2), None, None))]);
}

#[test]
fn a_large_bound_on_an_email_fits_the_budget() {
    // 160 email states × 1,025 counts before minimization as an automaton; with the counter the
    // subsets whose count can no longer matter are one state.
    let t = terminal("E", regexes(None, Some(1024), None, Some("email")), false);
    let lex = build_lexer(&[t], &[true]).unwrap();
    lex.validate().unwrap();
    assert!(lex.num_states > 1024, "{}", lex.num_states);
    let accepts = |s: &str| {
        let mut q = lex.start;
        for &b in s.as_bytes() {
            q = lex.step(q, b);
            if q == dwac_runtime::unstable::DEAD {
                return false;
            }
        }
        !lex.accepts(q).is_empty()
    };
    let local = "a".repeat(1019);
    assert!(accepts(&format!("\"{local}@b.cd\"")));
    assert!(!accepts(&format!("\"{local}@b.cde\"")));
    assert!(accepts(&format!("\"{}@[IPv6:::1]\"", "a".repeat(1013))));
    assert!(!accepts(&format!("\"{}@[IPv6:::1]\"", "a".repeat(1014))));
    assert!(accepts(&format!("\"{}\\/@b.cd\"", "a".repeat(1018))));
    assert!(!accepts(&format!("\"{}\\/@b.cd\"", "a".repeat(1019))));
}
