//! Every vector of the lexing contract (`shared/spec/lexing.jsonl`, copied into
//! tests/data) reproduces exactly: the streaming lexer with inhibitors, run over the
//! input, ends with exactly the expected terminal sequences on its boundary branches.

use std::sync::Arc;

use dwac_compile::{build_lexer, compile_engine};
use dwac_grammar::{Grammar, Munch, Symbol, Terminal};
use dwac_runtime::unstable::Inhibitor;
use dwac_runtime::{
    unstable::{LexerTables, DEAD},
    Matcher, Vocabulary,
};

/// Run the streaming lexer (ARCHITECTURE.md "The contract"), returning the terminal sequences of the
/// branches at a lexeme boundary after `input`. The "parser" is `shiftable(seq, t)`: can `t`
/// follow the non-ignored terminals `seq`? Priorities are contextual (ARCHITECTURE.md, "The contract"): at each
/// lexeme, only the highest-priority group with a usable terminal (ignored ones always are) is used.
fn lexings(lex: &LexerTables, input: &[u8], shiftable: &dyn Fn(&[u32], u32) -> bool) -> Vec<Vec<String>> {
    type Branch = (u32, Vec<Inhibitor>, Vec<u32>);
    let mut branches: Vec<Branch> = vec![(lex.start, vec![], vec![])];
    let mut h1 = Vec::new();
    for &b in input {
        let mut next: Vec<Branch> = Vec::new();
        for (q, h, seq) in &branches {
            if lex.step_inhibitors(h, b, &mut h1).is_none() {
                continue;
            }
            for q2 in lex.successors(*q, b) {
                if lex.can_continue(q2) {
                    next.push((q2, h1.clone(), seq.clone()));
                }
                let usable = |t: u32| lex.is_ignored(t) || shiftable(seq, t);
                let best = lex.accepts(q2).iter().filter(|&&t| usable(t)).map(|&t| lex.priority_of(t)).max();
                for &t in lex.accepts(q2) {
                    if !usable(t) || Some(lex.priority_of(t)) != best {
                        continue;
                    }
                    let mut h2 = h1.clone();
                    if let Some(i) = lex.inhibitor_for(t, q2) {
                        h2.push(i);
                        h2.sort_unstable();
                        h2.dedup();
                    }
                    let mut s2 = seq.clone();
                    if !lex.is_ignored(t) {
                        s2.push(t);
                    }
                    next.push((lex.start, h2, s2));
                }
            }
        }
        next.sort();
        next.dedup();
        branches = next;
    }
    let mut out: Vec<Vec<u32>> = branches.into_iter().filter(|b| b.0 == lex.start).map(|b| b.2).collect();
    out.sort();
    out.dedup();
    out.into_iter().map(|s| s.into_iter().map(|t| t.to_string()).collect()).collect()
}

/// A vector's terminals: `[name, regex]` or `[name, regex, priority]`, its `ignore` list and `mode`.
fn vector_terminals(v: &serde_json::Value) -> Vec<Terminal> {
    let mode = match v["mode"].as_str().unwrap() {
        "global" => Munch::Global,
        "per_terminal" => Munch::Own,
        m => panic!("unknown mode {m}"),
    };
    let ignore: Vec<&str> = v["ignore"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
    v["terminals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let mut t = Terminal::new(p[0].as_str().unwrap(), p[1].as_str().unwrap());
            t.priority = p.get(2).map_or(0, |x| x.as_i64().unwrap() as i32);
            t.ignored = ignore.contains(&t.name.as_str());
            t.munch = mode;
            t
        })
        .collect()
}

/// Lexings as terminal names.
fn named(terms: &[Terminal], l: Vec<Vec<String>>) -> Vec<Vec<String>> {
    l.into_iter().map(|s| s.into_iter().map(|t| terms[t.parse::<usize>().unwrap()].name.clone()).collect()).collect()
}

/// No parser: every terminal can always be shifted.
fn anything(_: &[u32], _: u32) -> bool {
    true
}

#[test]
fn lexing_vectors_reproduce_exactly() {
    let text = include_str!("data/lexing.jsonl");
    let mut n = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let terms = vector_terminals(&v);
        let lex = build_lexer(&terms, &vec![true; terms.len()]).unwrap();
        lex.validate().unwrap();
        let mut got = named(&terms, lexings(&lex, v["input"].as_str().unwrap().as_bytes(), &anything));
        got.sort();
        let mut want: Vec<Vec<String>> = serde_json::from_value(v["lexings"].clone()).unwrap();
        want.sort();
        assert_eq!(got, want, "case {} mode {} input {:?}", v["case"], v["mode"], v["input"]);
        n += 1;
    }
    assert!(n >= 60, "only {n} vectors");
}

/// Contextual priorities (ARCHITECTURE.md, "The contract"), our own vectors in the spec's format plus a priority per
/// terminal and, optionally, `sentences`: the terminal sequences a parser allows (a terminal is
/// shiftable where it extends the lexed sequence to a prefix of one of them; without `sentences`
/// every terminal is). `lexings` are the sequences on boundary branches after `input`. Each
/// vector with sentences is also run through the real engine (grammar `start: s1 | s2 | ...`):
/// it must accept `input` exactly when some lexing is a whole sentence.
#[test]
fn priority_vectors_reproduce_exactly() {
    let text = include_str!("data/lexing_priorities.jsonl");
    let mut n = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let terms = vector_terminals(&v);
        let id = |name: &str| terms.iter().position(|t| t.name == name).unwrap() as u32;
        let sentences: Option<Vec<Vec<u32>>> = v.get("sentences").map(|s| {
            s.as_array()
                .unwrap()
                .iter()
                .map(|seq| seq.as_array().unwrap().iter().map(|t| id(t.as_str().unwrap())).collect())
                .collect()
        });
        let lex = build_lexer(&terms, &vec![true; terms.len()]).unwrap();
        lex.validate().unwrap();
        let input = v["input"].as_str().unwrap();
        let shiftable = |seq: &[u32], t: u32| match &sentences {
            None => true,
            Some(ss) => ss.iter().any(|s| s.len() > seq.len() && s[..seq.len()] == *seq && s[seq.len()] == t),
        };
        let got = named(&terms, lexings(&lex, input.as_bytes(), &shiftable));
        let want: Vec<Vec<String>> = serde_json::from_value(v["lexings"].clone()).unwrap();
        assert_eq!(got, want, "case {} input {input:?}", v["case"]);
        if let Some(ss) = &sentences {
            let mut g = Grammar::default();
            for t in &terms {
                g.add_terminal(t.clone());
            }
            let start = g.add_nonterminal("start", None);
            for s in ss {
                g.add_rule(start, s.iter().map(|&t| Symbol::T(t)).collect(), None);
            }
            g.start = start;
            let vocab = Vocabulary::from_tokens(&[b"x".to_vec(), Vec::new()], vec![false, true], vec![1]);
            let engine = Arc::new(compile_engine(&g, vocab).unwrap().0);
            let mut m = Matcher::new(engine);
            let accepted = m.commit_bytes(input.as_bytes()).is_ok() && m.is_accepting();
            let whole = want.iter().any(|l| ss.iter().any(|s| s.iter().map(|&t| &terms[t as usize].name).eq(l.iter())));
            assert_eq!(accepted, whole, "case {} input {input:?}: engine accepts {accepted}", v["case"]);
        }
        n += 1;
    }
    assert!(n >= 20, "only {n} vectors");
}

#[test]
fn start_state_has_no_incoming_edges_and_dfa_is_minimal_enough() {
    let terms: Vec<Terminal> = [("A", "a+"), ("B", "(ab)*c")].iter().map(|(n, r)| Terminal::new(*n, *r)).collect();
    let lex = build_lexer(&terms, &[true, true]).unwrap();
    lex.validate().unwrap();
    assert!(!lex.trans.contains(lex.start));
    // q0, "a"(A), "a+"... a and aa are equivalent (both accept A, may continue with a or b→ only first)
    // so: q0, after-a, after-a+ (no b), after-ab, after-c.
    assert!(lex.num_states <= 6, "{} states", lex.num_states);
}

#[test]
fn empty_matching_terminal_is_refused() {
    let t = Terminal::new("E", "a*");
    let err = build_lexer(&[t], &[true]).unwrap_err();
    assert!(err.to_string().contains("empty string"), "{err}");
}

#[test]
fn intersection_and_difference_terminals() {
    let mut other = Terminal::new("OTHER", "[a-z]+");
    other.except = vec!["name|age".into()];
    let mut short = Terminal::new("SHORT", "[a-z]+");
    short.also = vec![".{2,3}".into()];
    let name = Terminal::new("NAME", "name");
    let terms = vec![other, short, name];
    let lex = build_lexer(&terms, &[true, true, true]).unwrap();
    lex.validate().unwrap();
    let accepted = |s: &str| {
        let mut q = lex.start;
        for &b in s.as_bytes() {
            q = lex.step(q, b);
            assert_ne!(q, DEAD, "{s}");
        }
        lex.accepts(q).iter().map(|&t| terms[t as usize].name.as_str()).collect::<Vec<_>>()
    };
    assert_eq!(accepted("name"), ["NAME"]);
    assert_eq!(accepted("age"), ["SHORT"]);
    assert_eq!(accepted("ag"), ["OTHER", "SHORT"]);
    assert_eq!(accepted("a"), ["OTHER"]);
    assert_eq!(accepted("names"), ["OTHER"]);
    assert_eq!(accepted("nam"), ["OTHER", "SHORT"]);
}

#[allow(
    clippy::needless_range_loop,
    reason = "state indices address two tables at once (the DFA's and the partition's)"
)]
/// The minimized DFA agrees with the `regex` crate on every terminal, for random strings over
/// a small alphabet, and no two of its states are equivalent.
#[test]
fn lexer_dfa_matches_regex_crate_and_is_minimal() {
    let sets: &[&[&str]] = &[
        &["a+", "ab", "(ab)*c", "[a-c]{2,4}"],
        &["x(yx)*", "(xy)+", "y", "[xy]{3}"],
        &["[0-9]+(\\.[0-9]+)?", "\\.\\.", "\\.", "-?[0-9]{1,3}"],
        &["\"([^\"\\\\]|\\\\.){0,5}\"", "\"a\"", "\"[ab]*\""],
    ];
    let mut seed = 12345u64;
    let mut rnd = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for set in sets {
        let terms: Vec<Terminal> = set.iter().enumerate().map(|(i, r)| Terminal::new(format!("T{i}"), *r)).collect();
        let lex = build_lexer(&terms, &vec![true; terms.len()]).unwrap();
        lex.validate().unwrap();
        let res: Vec<regex::Regex> = set.iter().map(|r| regex::Regex::new(&format!("^(?:{r})$")).unwrap()).collect();
        let alphabet: Vec<char> =
            set.join("").chars().filter(|c| c.is_ascii_alphanumeric() || "\".\\-".contains(*c)).collect();
        for _ in 0..3000 {
            let len = (rnd() % 8) as usize + 1;
            let s: String = (0..len).map(|_| alphabet[(rnd() % alphabet.len() as u64) as usize]).collect();
            let mut q = lex.start;
            for &b in s.as_bytes() {
                if q != DEAD {
                    q = lex.step(q, b);
                }
            }
            let got: Vec<u32> = if q == DEAD { vec![] } else { lex.accepts(q).to_vec() };
            let want: Vec<u32> = (0..res.len() as u32).filter(|&i| res[i as usize].is_match(&s)).collect();
            assert_eq!(got, want, "{set:?} on {s:?}");
        }
        // Minimality: distinguish every pair of states by a fixpoint over (acc, successors).
        let n = lex.num_states as usize;
        let mut diff = vec![vec![false; n]; n];
        for p in 0..n {
            for q in 0..n {
                diff[p][q] = lex.accepts(p as u32) != lex.accepts(q as u32) || (p == 0) != (q == 0);
            }
        }
        let mut changed = true;
        while changed {
            changed = false;
            for p in 0..n {
                for q in 0..n {
                    if diff[p][q] {
                        continue;
                    }
                    let d = (0..=255u8).any(|b| {
                        let (a, c) = (lex.step(p as u32, b), lex.step(q as u32, b));
                        match (a == DEAD, c == DEAD) {
                            (true, true) => false,
                            (false, false) => diff[a as usize][c as usize],
                            _ => true,
                        }
                    });
                    if d {
                        diff[p][q] = true;
                        changed = true;
                    }
                }
            }
        }
        for p in 0..n {
            for q in p + 1..n {
                assert!(diff[p][q], "{set:?}: states {p} and {q} are equivalent");
            }
        }
    }
}

/// Terminals in separate components lex exactly as in one automaton when no terminal of one
/// component matches a strict extension of another's lexeme (here: quoted strings).
#[test]
fn lexer_components_fork_at_q0() {
    let mut a = Terminal::new("A", "\"[a-z]{0,3}\"");
    a.component = 1;
    let mut b = Terminal::new("B", "\"[a-c]+\"");
    b.component = 2;
    let n = Terminal::new("N", "[0-9]+");
    let terms = vec![a, b, n];
    let lex = build_lexer(&terms, &[true, true, true]).unwrap();
    lex.validate().unwrap();
    assert!(!lex.fork.is_empty());
    for (input, want) in [
        ("\"ab\"", vec![vec!["A"], vec!["B"]]),
        ("\"abca\"", vec![vec!["B"]]),
        ("\"abcd\"", vec![]),
        ("\"xyz\"", vec![vec!["A"]]),
        ("\"\"", vec![vec!["A"]]),
        ("12\"a\"", vec![vec!["N", "A"], vec!["N", "B"]]),
    ] {
        let mut got = named(&terms, lexings(&lex, input.as_bytes(), &anything));
        got.sort();
        let want: Vec<Vec<String>> = want.into_iter().map(|v| v.into_iter().map(String::from).collect()).collect();
        assert_eq!(got, want, "{input}");
    }
}

/// A lazy terminal is read leftmost-first: on any input, the longest prefix its DFA accepts is
/// the match a backtracking engine returns. The `regex` crate's anchored leftmost-first search
/// has the same preference order (lazy, greedy, alternation order), so it is the oracle.
#[test]
fn lazy_terminals_end_where_a_leftmost_first_match_ends() {
    let patterns = [
        "a+?",
        "\"[a-c\"]*?\"",
        "\".*?\"b?",
        "(?:a|ab)*?c",
        "(?:ab|a)+?b",
        "a{2,4}?b?",
        "x(?:ab|a)??b",
        "(?:a|b)*?(?:bb|ba)",
        "c(?:a*?|b)c",
        "(?:a+?b)+c?",
    ];
    let mut seed = 0x1a2b_3c4d_u64;
    let mut rnd = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let alphabet = ['a', 'b', 'c', 'x', '"'];
    let mut matched = 0;
    for pat in patterns {
        let mut t = Terminal::new("LAZY", pat);
        t.lazy = true;
        let lex = build_lexer(std::slice::from_ref(&t), &[true]).unwrap();
        let re = regex::Regex::new(&format!("^(?:{pat})")).unwrap();
        for _ in 0..4000 {
            let len = (rnd() % 9) as usize;
            let s: String = (0..len).map(|_| alphabet[(rnd() % alphabet.len() as u64) as usize]).collect();
            let mut q = lex.start;
            let mut longest = None;
            for (i, &b) in s.as_bytes().iter().enumerate() {
                q = lex.step(q, b);
                if q == DEAD {
                    break;
                }
                if !lex.accepts(q).is_empty() {
                    longest = Some(i + 1);
                }
            }
            let want = re.find(&s).map(|m| m.end()).filter(|&e| e > 0);
            assert_eq!(longest, want, "{pat} on {s:?}");
            matched += want.is_some() as usize;
        }
    }
    assert!(matched > 3000, "only {matched} inputs matched: the inputs do not exercise the patterns");
}
