//! Contextual terminal priorities (ARCHITECTURE.md, "The contract"): where several terminals match the same
//! lexeme, a lower-priority terminal is used only on stacks where none of the higher-priority
//! ones can be shifted; equal priorities fork; longest match comes first.
//!
//! * Hand-derived verdicts on grammars built to exercise each case, including a GLR grammar
//!   where one GSS head stands for two stacks that resolve a lexeme differently.
//! * A differential test against an independent oracle: a GLR parser over *explicit* stacks
//!   (no GSS, no path resolution: every stack is a `Vec` and is judged on its own), run on every
//!   sentence built from a small word list, committed at once and byte by byte.
//!
//! Sentences checked against Python Lark are in `lark_verdicts.rs`.

use std::collections::BTreeSet;
use std::sync::Arc;

use dwac_runtime::unstable::Inhibitor;
use dwac_runtime::{Engine, Matcher};
use dwac_tests::*;

fn engine(src: &str) -> Arc<Engine> {
    engine_from_lark(src, synthetic_vocab(&[b"x"]))
}

fn accepts(engine: &Arc<Engine>, text: &str) -> bool {
    let mut m = Matcher::new(engine.clone());
    m.commit_bytes(text.as_bytes()).is_ok() && m.is_accepting()
}

/// The issue's example: after `get`, only the anonymous `"all"` can be shifted, so `MODE.5`
/// must not shadow it there.
const GET_ALL: &str = r#"
start: "get" "all" NAME | MODE NAME
MODE.5: "all" | "some"
NAME: /[a-z]+/
%ignore " "
"#;

/// A reduce/reduce conflict (`a` or `b` from `<`) makes one GSS node after `<()` stand for two
/// stacks. On the `a` stack the keyword `KW.5` can be shifted (after reducing `w`), so it is
/// used there and `NAME` is not; on the `b` stack `KW` cannot be shifted, so `NAME` is used.
const TWO_STACKS: &str = r#"
start: a w KW "1" | a v "2" | b w ";" | b v "3"
a: "<"
b: "<"
w: "(" ")"
v: "(" ")" NAME
KW.5: "k"
NAME: /[a-z]+/
"#;

#[test]
fn hand_derived_verdicts() {
    let cases: &[(&str, &[&str], &[&str])] = &[
        (
            GET_ALL,
            &["get all x", "all x", "some x", "get all all", "get all some", "all all", "some all"],
            &["get some x", "get x", "x y", "get all", "getall x"],
        ),
        (
            TWO_STACKS,
            // <()k1: the `a` stack uses KW. <()k3: the `b` stack uses NAME (KW cannot be shifted
            // there). <()ab2, <()ab3: `ab` is only a NAME, no priority question.
            &["<()k1", "<()k3", "<();", "<()ab3", "<()ab2"],
            // <()k2: on the `a` stack KW can be shifted, so NAME (needed by `a v "2"`) is not used
            // there. A GSS that attached NAME's shift to the shared node would accept it.
            &["<()k2", "<()k;", "<()", "<()k", "<()ab1"],
        ),
    ];
    for (src, good, bad) in cases {
        let e = engine(src);
        for s in *good {
            assert!(accepts(&e, s), "{s:?} should be accepted by\n{src}");
        }
        for s in *bad {
            assert!(!accepts(&e, s), "{s:?} should be rejected by\n{src}");
        }
    }
}

// --- the explicit-stack oracle -------------------------------------------------------------

#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Config {
    q: u32,
    inh: Vec<Inhibitor>,
    stack: Vec<u32>,
}

/// [`lr_shift`] on the engine's LR tables.
fn explicit_glr(e: &Engine, stack: &[u32], t: u32) -> (BTreeSet<Vec<u32>>, bool) {
    lr_shift(&e.tables().lr, stack, t)
}

/// The contract, stack by stack: `None` if the configurations exceed `cap`.
fn oracle_accepts(e: &Engine, text: &[u8], cap: usize) -> Option<bool> {
    let lex = &e.tables().lexer;
    let mut cur: BTreeSet<Config> = BTreeSet::new();
    cur.insert(Config { q: lex.start, inh: vec![], stack: vec![0] });
    let mut h1 = Vec::new();
    for &b in text {
        let mut next = BTreeSet::new();
        for c in &cur {
            if lex.step_inhibitors(&c.inh, b, &mut h1).is_none() {
                continue;
            }
            for q2 in lex.successors(c.q, b) {
                if lex.can_continue(q2) {
                    next.insert(Config { q: q2, inh: h1.clone(), stack: c.stack.clone() });
                }
                // Priority groups, highest first: the first group with a usable terminal is used.
                let mut acc = lex.accepts(q2).to_vec();
                acc.sort_by_key(|&t| std::cmp::Reverse(lex.priority_of(t)));
                let mut i = 0;
                while i < acc.len() {
                    let p = lex.priority_of(acc[i]);
                    let group: Vec<u32> = acc[i..].iter().copied().take_while(|&t| lex.priority_of(t) == p).collect();
                    i += group.len();
                    let mut used = false;
                    for &t in &group {
                        let mut h2 = h1.clone();
                        if let Some(x) = lex.inhibitor_for(t, q2) {
                            h2.push(x);
                            h2.sort_unstable();
                            h2.dedup();
                        }
                        let stacks = if lex.is_ignored(t) {
                            BTreeSet::from([c.stack.clone()])
                        } else {
                            explicit_glr(e, &c.stack, t).0
                        };
                        for s in stacks {
                            used = true;
                            next.insert(Config { q: lex.start, inh: h2.clone(), stack: s });
                        }
                    }
                    if used {
                        break;
                    }
                }
            }
        }
        if next.len() > cap {
            return None;
        }
        cur = next;
    }
    Some(cur.iter().any(|c| c.q == lex.start && explicit_glr(e, &c.stack, e.tables().lr.eof()).1))
}

/// Every concatenation of up to `n` words.
fn sentences(words: &[&str], n: usize) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut layer = vec![String::new()];
    for _ in 0..n {
        let mut next = Vec::new();
        for s in &layer {
            for w in words {
                next.push(format!("{s}{w}"));
            }
        }
        out.extend(next.iter().cloned());
        layer = next;
    }
    out
}

/// Grammars with priorities in every role, and the words their test sentences are made of.
const DIFFERENTIAL: &[(&str, &str, &[&str], usize)] = &[
    ("get_all", GET_ALL, &["get", "all", "some", "x", " ", "al"], 5),
    ("two_stacks", TWO_STACKS, &["<", "(", ")", "k", "1", "2", "3", ";", "ab"], 6),
    (
        // A keyword that is only shiftable after a reduction; an identifier elsewhere.
        "stmts",
        r#"
start: stmt+
stmt: NAME "=" expr ";" | IF expr "then" stmt
expr: expr "+" atom | atom
atom: NAME | NUM
IF.2: "if"
NAME: /[a-z]+/
NUM: /[0-9]+/
%ignore " "
"#,
        &["if", "x", "=", ";", "+", "1", " ", "then"],
        5,
    ),
    (
        // An ignored terminal below and above a non-ignored one on the same lexeme.
        "ignored",
        r##"
start: NAME (SP NAME)* HASH?
SP.3: " "
WS: " "
HASH: "#"
COMMENT.5: "#"
%ignore WS
%ignore COMMENT
NAME: /[a-z]+/
"##,
        &["a", " ", "#", "b"],
        6,
    ),
    (
        // Negative priority, equal priorities forking, and a third level.
        "levels",
        r#"
start: A x | B y | C z | D w
A.1: "q"
B.1: "q"
C: "q"
D.-1: /[a-z]/
x: "1"
y: "2"
z: "3"
w: "4"
"#,
        &["q", "r", "1", "2", "3", "4"],
        3,
    ),
    (
        // Operators with a prioritized binary minus over a unary dash; GLR ambiguity.
        "minus",
        r#"
start: e
e: e MINUS e | DASH e | NUM | "(" e ")"
MINUS.2: "-"
DASH: "-"
NUM: /[0-9]+/
"#,
        &["1", "-", "(", ")", "--"],
        6,
    ),
    (
        // SQL-like: `UNION ALL` next to a prioritized set quantifier.
        "sql",
        r#"
start: query
query: select | query "UNION" "ALL" select | query "UNION" select
select: "SELECT" QUANT? NAME
QUANT.2: "ALL" | "DISTINCT"
NAME: /[A-Za-z]+/
%ignore " "
"#,
        &["SELECT", "UNION", "ALL", "DISTINCT", "a", " "],
        5,
    ),
];

#[test]
fn gss_commit_equals_explicit_stack_oracle() {
    let mut total = 0;
    let mut accepted = 0;
    for (name, src, words, n) in DIFFERENTIAL {
        let e = engine(src);
        let mut compared = 0;
        for s in sentences(words, *n) {
            let Some(want) = oracle_accepts(&e, s.as_bytes(), 20_000) else { continue };
            let at_once = accepts(&e, &s);
            let mut m = Matcher::new(e.clone());
            let bytewise =
                s.as_bytes().iter().all(|b| m.commit_bytes(std::slice::from_ref(b)).is_ok()) && m.is_accepting();
            assert_eq!(at_once, want, "{name}: {s:?}: commit {at_once}, oracle {want}");
            assert_eq!(bytewise, want, "{name}: {s:?}: byte by byte {bytewise}, oracle {want}");
            compared += 1;
            accepted += want as usize;
        }
        assert!(compared > 100, "{name}: only {compared} sentences compared");
        total += compared;
    }
    println!("{total} sentences compared, {accepted} accepted");
    assert!(accepted > 200, "too few accepted sentences ({accepted}): the word lists do not reach the languages");
}
