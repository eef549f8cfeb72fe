//! Normalization passes: each must preserve the bounded language `L_k` and establish its
//! structural postcondition, on hand-written grammars and on random small CFGs.

#[path = "normalize_support/mod.rs"]
mod support;

use dwac_grammar::normalize::{
    eliminate_epsilon, eliminate_right_recursion, normalize, normalize_with, remove_unit_cycles, remove_useless,
    right_recursive_nonterminals, NormalizeOptions, Normalized,
};
use dwac_grammar::{Grammar, Symbol};
use std::collections::BTreeSet;
use support::*;

/// Hand-written grammars: (name, BNF, k).
const GRAMMARS: &[(&str, &str, usize)] = &[
    ("left list", "S -> S , a | a", 8),
    ("parens", "S -> ( S ) S | ε", 8),
    ("expr", "E -> E + T | T; T -> T * F | F; F -> ( E ) | n | - F", 7),
    ("ambiguous expr", "E -> E + E | E * E | n", 7),
    ("right list", "L -> a L | a", 8),
    ("right list with sep", "L -> a , L | a", 8),
    ("indirect right recursion", "A -> x B; B -> y A | z", 8),
    ("three-step right recursion", "A -> x B; B -> y C; C -> z A | w", 8),
    ("mutual recursion", "A -> a B | a; B -> b A | b C; C -> c A | c", 7),
    ("unit into right recursion", "A -> B | x; B -> y A | C; C -> z B | w", 7),
    ("nullable heavy", "S -> A B C D E; A -> a | ε; B -> b | ε; C -> c | ε; D -> d | ε; E -> e | ε", 6),
    (
        "nullable run in context",
        "S -> x A B C D E F y | S z; A -> a | ε; B -> b | ε; C -> A B | ε; D -> d | ε; E -> ε; F -> D D | ε",
        6,
    ),
    ("cyclic", "A -> B; B -> A | a", 8),
    ("cyclic with ε", "A -> B C; B -> A | b; C -> c | ε", 7),
    ("useless", "S -> a | A | C; A -> A b; B -> c; C -> x | D; D -> D d; E -> S", 8),
    ("hidden right recursion", "S -> a S B | b; B -> c | ε", 7),
    ("hidden left recursion", "S -> A S a | b; A -> ε | c", 7),
    ("start in rhs, nullable", "S -> S a | ε", 8),
    ("palindromes", "S -> a S a | b S b | a | b | ε", 7),
    ("dyck, highly ambiguous", "S -> S S | ( S ) | [ S ] | ε", 6),
    ("dangling else", "S -> i E t S | i E t S e S | w E d S | x; E -> n", 7),
    (
        "json-like",
        "V -> O | A | s | n; O -> { } | { M }; M -> P | M , P; P -> s : V; A -> [ ] | [ L ]; L -> V | L , V",
        6,
    ),
    (
        "right-recursive json-like",
        "V -> O | A | s; O -> { } | { M }; M -> P | P , M; P -> s : V; A -> [ ] | [ L ]; L -> V | V , L",
        6,
    ),
    ("statements", "B -> { L }; L -> St L | ε; St -> B | i ( n ) St | x ;", 6),
    ("prefix and postfix", "E -> - E | E ! | ( E ) | n", 7),
    ("two right-recursive layers", "A -> a A | B; B -> b B | c | A d", 7),
];

fn grammars() -> Vec<(String, Grammar, usize)> {
    let mut out: Vec<_> = GRAMMARS.iter().map(|&(n, s, k)| (n.to_string(), bnf(s), k)).collect();
    for seed in 0..300u64 {
        out.push((format!("random #{seed}"), random_grammar(seed), 7));
    }
    out
}

fn with_empty(mut l: BTreeSet<Vec<u32>>, accepts_empty: bool) -> BTreeSet<Vec<u32>> {
    if accepts_empty {
        l.insert(Vec::new());
    }
    l
}

fn normalized_lang(n: &Normalized, k: usize) -> BTreeSet<Vec<u32>> {
    with_empty(lang(&n.grammar, k), n.accepts_empty)
}

#[track_caller]
fn assert_same_lang(name: &str, pass: &str, before: &BTreeSet<Vec<u32>>, after: &BTreeSet<Vec<u32>>, g: &Grammar) {
    if before != after {
        let lost: Vec<_> = before.difference(after).take(5).collect();
        let gained: Vec<_> = after.difference(before).take(5).collect();
        panic!("{name}: {pass} changed the language: lost {lost:?}, gained {gained:?}\nresult:\n{g}");
    }
}

#[test]
fn remove_useless_preserves_language_and_reduces() {
    let mut checked = 0;
    for (name, g, k) in grammars() {
        let before = lang(&g, k);
        match remove_useless(&g) {
            Ok(out) => {
                assert_same_lang(&name, "remove_useless", &before, &lang(&out, k), &out);
                assert_reduced(&out);
                assert_no_duplicate_rules(&out);
                assert_eq!(out.terminals, g.terminals, "{name}: terminal table changed");
                assert_eq!(remove_useless(&out).unwrap(), out, "{name}: not idempotent");
                checked += 1;
            }
            Err(e) => {
                assert!(!generates_something(&g), "{name}: unexpected error {e}");
                assert!(e.message.contains("grammar generates no sentence"), "{}", e.message);
            }
        }
    }
    assert!(checked > 200, "only {checked} grammars generate something");
}

#[test]
fn eliminate_epsilon_preserves_language_and_is_epsilon_free() {
    for (name, g, k) in grammars() {
        let before = lang(&g, k);
        let out = eliminate_epsilon(&g);
        assert_epsilon_free(&out.grammar);
        assert_eq!(out.accepts_empty, before.contains(&Vec::new()), "{name}: accepts_empty");
        let after = with_empty(lang(&out.grammar, k), out.accepts_empty);
        assert_same_lang(&name, "eliminate_epsilon", &before, &after, &out.grammar);
        assert_eq!(out.grammar.terminals, g.terminals);
    }
}

#[test]
fn eliminate_epsilon_stays_linear_on_long_nullable_rules() {
    // S -> A1 … A20 with every Ai -> ai | ε: the power set would be 2^20 rules.
    let mut src = String::from("S ->");
    for i in 0..20 {
        src.push_str(&format!(" A{i}"));
    }
    for i in 0..20 {
        src.push_str(&format!("; A{i} -> t{i} | ε"));
    }
    let g = bnf(&src);
    let out = eliminate_epsilon(&g);
    assert_epsilon_free(&out.grammar);
    assert!(out.accepts_empty);
    assert!(out.grammar.rules.len() < 200, "{} rules", out.grammar.rules.len());
    // Spot-check the language on a prefix of the alphabet: every increasing subsequence.
    let l = lang(&out.grammar, 3);
    assert!(l.contains(&vec![0, 7, 19]) && l.contains(&vec![19]) && !l.contains(&vec![3, 2]));
    assert_eq!(l, lang(&g, 3).into_iter().filter(|w| !w.is_empty()).collect());
}

#[test]
fn remove_unit_cycles_preserves_language_and_breaks_cycles() {
    for (name, g, k) in grammars() {
        // Language preservation holds on any grammar.
        let raw = remove_unit_cycles(&g);
        assert_same_lang(&name, "remove_unit_cycles (raw)", &lang(&g, k), &lang(&raw, k), &raw);
        // Cycle-freedom needs an ε-free input.
        let eps = eliminate_epsilon(&g).grammar;
        let before = lang(&eps, k);
        let out = remove_unit_cycles(&eps);
        assert_same_lang(&name, "remove_unit_cycles", &before, &lang(&out, k), &out);
        assert_no_unit_cycles(&out);
        assert_epsilon_free(&out);
        assert_no_duplicate_rules(&out);
    }
}

#[test]
fn eliminate_right_recursion_preserves_language_and_removes_it() {
    let mut rewritten = 0;
    for (name, g, k) in grammars() {
        // Language preservation holds on any grammar.
        let raw = eliminate_right_recursion(&g, 10_000).grammar;
        assert_same_lang(&name, "eliminate_right_recursion (raw)", &lang(&g, k), &lang(&raw, k), &raw);
        // The postcondition needs ε-free, cycle-free input.
        let prepared = remove_unit_cycles(&eliminate_epsilon(&g).grammar);
        let before = lang(&prepared, k);
        let out = eliminate_right_recursion(&prepared, 10_000);
        assert!(out.right_recursive_left.is_empty(), "{name}: budget exceeded");
        assert_same_lang(&name, "eliminate_right_recursion", &before, &lang(&out.grammar, k), &out.grammar);
        assert_no_right_recursion(&out.grammar);
        assert_epsilon_free(&out.grammar);
        assert_no_unit_cycles(&out.grammar);
        if !right_recursive(&prepared).is_empty() {
            rewritten += 1;
        }
    }
    assert!(rewritten > 50, "only {rewritten} grammars had right recursion");
}

#[test]
fn right_recursion_budget_leaves_recursion_in_place() {
    // Two recursive components: {C} (rewrite adds 2 rules) and {A, B} (adds 6).
    let g = bnf("S -> C; C -> c C | A; A -> x B | a A; B -> y A | z");
    let out = eliminate_right_recursion(&g, 0);
    assert_eq!(out.grammar, g, "nothing fits a zero budget");
    assert_eq!(out.right_recursive_left, right_recursive(&g));
    assert_eq!(right_recursive_nonterminals(&g), right_recursive(&g));
    assert_eq!(right_recursive(&g).len(), 3);

    let k = 7;
    let names = |n: &Normalized| -> Vec<String> {
        n.right_recursive_left.iter().map(|&a| n.grammar.nonterminals[a as usize].name.clone()).collect()
    };
    for (budget, left) in [(0, vec!["C", "A", "B"]), (4, vec!["A", "B"]), (8, vec![])] {
        let n = normalize_with(&g, &NormalizeOptions { rule_budget: Some(budget), ..Default::default() }).unwrap();
        let what = format!("budget {budget}");
        assert_same_lang(&what, "normalize", &lang(&g, k), &normalized_lang(&n, k), &n.grammar);
        assert_eq!(names(&n), left, "{what}");
        assert_eq!(n.right_recursive_left, right_recursive(&n.grammar), "{what}");
        assert_epsilon_free(&n.grammar);
        assert_no_unit_cycles(&n.grammar);
        assert_reduced(&n.grammar);
    }
}

#[test]
fn normalize_pipeline_establishes_all_invariants() {
    let mut ok = 0;
    for (name, g, k) in grammars() {
        let before = lang(&g, k);
        let n = match normalize(&g) {
            Ok(n) => n,
            Err(e) => {
                assert!(!generates_something(&g), "{name}: unexpected error {e}");
                assert!(e.message.contains("grammar generates no sentence"));
                continue;
            }
        };
        ok += 1;
        assert_same_lang(&name, "normalize", &before, &normalized_lang(&n, k), &n.grammar);
        assert_eq!(n.grammar.terminals, g.terminals, "{name}: terminal table changed");
        assert_epsilon_free(&n.grammar);
        assert_no_unit_cycles(&n.grammar);
        assert!(n.right_recursive_left.is_empty(), "{name}: budget exceeded");
        assert_no_right_recursion(&n.grammar);
        assert_no_duplicate_rules(&n.grammar);
        if n.grammar.rules.is_empty() {
            // The language is exactly {ε}.
            assert!(n.accepts_empty);
            assert_eq!(n.grammar.nonterminals.len(), 1);
        } else {
            assert_reduced(&n.grammar);
        }
        // A fixed point: normalizing again changes nothing.
        let again = normalize(&n.grammar);
        if n.grammar.rules.is_empty() {
            assert!(again.is_err());
        } else {
            let again = again.unwrap();
            assert_eq!(again.grammar, n.grammar, "{name}: not a fixed point");
            assert!(!again.accepts_empty);
        }
        // Deterministic.
        assert_eq!(normalize(&g).unwrap(), n);
    }
    assert!(ok > 200);
}

#[test]
fn empty_language_is_an_error() {
    let g = bnf("S -> a S; T -> b");
    let e = normalize(&g).unwrap_err();
    assert!(e.message.contains("grammar generates no sentence"), "{}", e.message);
    assert!(remove_useless(&g).is_err());
}

#[test]
fn epsilon_only_language() {
    let g = bnf("S -> ε | A; A -> A x");
    let n = normalize(&g).unwrap();
    assert!(n.accepts_empty);
    assert!(n.grammar.rules.is_empty());
    assert_eq!(n.grammar.nonterminals.len(), 1);
    assert_eq!(n.grammar.start, 0);
    assert_eq!(n.grammar.terminals, g.terminals);
}

#[test]
fn terminal_table_is_kept_even_when_unused() {
    let mut g = bnf("S -> a | B; B -> b B");
    let mut ws = terminal("ws");
    ws.ignored = true;
    g.add_terminal(ws);
    let n = normalize(&g).unwrap();
    assert_eq!(n.grammar.terminals, g.terminals);
    assert_eq!(n.grammar.rules.len(), 1);
    assert_eq!(n.grammar.rules[0].rhs, vec![Symbol::T(0)]);
}

#[test]
fn right_list_becomes_left_recursive() {
    let n = normalize(&bnf("L -> a L | a")).unwrap();
    let text = n.grammar.to_string();
    assert_eq!(text, "start: L\n%term a = /a/\nL ::= a\nL ::= L'rr a\nL'rr ::= a\nL'rr ::= L'rr a\n");
}

#[test]
fn cyclic_grammar_is_merged() {
    let n = normalize(&bnf("A -> B; B -> A | a")).unwrap();
    assert_eq!(n.grammar.to_string(), "start: A\n%term a = /a/\nA ::= a\n");
}

#[test]
fn helper_names_are_unique() {
    for (name, g, _) in grammars() {
        if let Ok(n) = normalize(&g) {
            let names: BTreeSet<_> = n.grammar.nonterminals.iter().map(|x| &x.name).collect();
            assert_eq!(names.len(), n.grammar.nonterminals.len(), "{name}");
        }
    }
}

#[test]
fn bad_ids_are_errors() {
    let mut g = bnf("S -> a");
    g.rules[0].rhs.push(Symbol::N(7));
    assert!(normalize(&g).is_err());
    let mut g = bnf("S -> a");
    g.start = 3;
    assert!(normalize(&g).is_err());
}
