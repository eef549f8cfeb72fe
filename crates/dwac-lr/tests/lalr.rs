//! LALR(1) tables: checked against the bounded language of the source grammar with a
//! deterministic LR driver (conflict-free grammars) and a backtracking GLR driver
//! (ambiguous and random grammars).

#[path = "../../dwac-grammar/tests/normalize_support/mod.rs"]
mod support;

use dwac_grammar::normalize::{eliminate_epsilon, normalize, remove_unit_cycles, remove_useless, Normalized};
use dwac_grammar::{Grammar, Symbol};
use dwac_lr::{build, build_with, LrBuild, LrConfig, LrError};
use dwac_runtime::unstable::{Action, LrTables, DEAD};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use support::*;

/// Wrap an ε-free grammar as-is (no normalization), to test the table builder alone.
fn raw(g: Grammar) -> Normalized {
    Normalized { grammar: g, accepts_empty: false, right_recursive_left: Vec::new() }
}

fn reduce(t: &LrTables, stack: &mut Vec<u32>, r: u32) -> bool {
    let len = t.rule_len[r as usize] as usize;
    assert!(len >= 1 && len < stack.len(), "reduce {r} pops the whole stack");
    stack.truncate(stack.len() - len);
    let g = t.goto(*stack.last().unwrap(), t.rule_lhs[r as usize]);
    if g == DEAD {
        return false;
    }
    stack.push(g);
    true
}

/// A plain LR driver; panics on a conflict it has to resolve.
fn lr_accepts(t: &LrTables, input: &[u32]) -> bool {
    let mut stack = vec![0u32];
    let mut i = 0;
    loop {
        let a = input.get(i).copied().unwrap_or(t.eof());
        match t.actions(*stack.last().unwrap(), a) {
            [] => return false,
            [x] => match Action::unpack(*x) {
                Action::Shift(s) => {
                    stack.push(s);
                    i += 1;
                }
                Action::Reduce(r) => assert!(reduce(t, &mut stack, r), "GOTO missing after reduce {r}"),
                Action::Accept => {
                    assert_eq!(a, t.eof(), "accept on a real terminal");
                    return true;
                }
            },
            many => panic!("conflict in state {} on {a}: {many:?}", stack.last().unwrap()),
        }
    }
}

/// GLR by exhaustive backtracking: explore every action, memoizing configurations.
fn glr_accepts(t: &LrTables, input: &[u32]) -> bool {
    let mut seen: HashSet<(Vec<u32>, usize)> = HashSet::new();
    let mut todo = vec![(vec![0u32], 0usize)];
    let mut steps = 0usize;
    while let Some((stack, i)) = todo.pop() {
        steps += 1;
        assert!(steps < 1_000_000, "GLR exploration does not terminate");
        assert!(stack.len() <= 2 * input.len() + 4, "stack grows without shifting: {stack:?}");
        if !seen.insert((stack.clone(), i)) {
            continue;
        }
        let a = input.get(i).copied().unwrap_or(t.eof());
        for &x in t.actions(*stack.last().unwrap(), a) {
            match Action::unpack(x) {
                Action::Shift(s) => {
                    let mut st = stack.clone();
                    st.push(s);
                    todo.push((st, i + 1));
                }
                Action::Reduce(r) => {
                    let mut st = stack.clone();
                    assert!(reduce(t, &mut st, r), "GOTO missing after reduce {r}");
                    todo.push((st, i));
                }
                Action::Accept => {
                    assert_eq!(a, t.eof());
                    return true;
                }
            }
        }
    }
    false
}

/// Structural sanity of the tables, and the conflict counts against the cells.
fn check_tables(b: &LrBuild, g: &Grammar) {
    let t = &b.tables;
    assert_eq!(t.num_states as usize, b.states);
    assert_eq!(b.kernels.len(), b.states);
    assert_eq!(t.num_terminals as usize, g.terminals.len());
    assert_eq!(t.num_nonterminals as usize, g.nonterminals.len());
    assert_eq!(t.rule_lhs.len(), g.rules.len());
    for (r, rule) in g.rules.iter().enumerate() {
        assert_eq!(t.rule_lhs[r], rule.lhs);
        assert_eq!(t.rule_len[r] as usize, rule.rhs.len());
    }
    let mut conflicts = 0;
    for p in 0..t.num_states {
        let (a, z) = (t.action_row[p as usize] as usize, t.action_row[p as usize + 1] as usize);
        assert!(t.action_term[a..z].windows(2).all(|w| w[0] < w[1]));
        for e in a..z {
            let acts: Vec<Action> = t.actions[t.action_off[e] as usize..t.action_off[e + 1] as usize]
                .iter()
                .map(|&x| Action::unpack(x))
                .collect();
            assert!(!acts.is_empty() && acts.windows(2).all(|w| w[0] < w[1]));
            conflicts += (acts.len() > 1) as usize;
            for act in acts {
                match act {
                    Action::Shift(s) => {
                        assert!(s < t.num_states);
                        assert!(t.action_term[e] < t.eof());
                    }
                    Action::Reduce(r) => assert!((r as usize) < g.rules.len()),
                    Action::Accept => assert_eq!(t.action_term[e], t.eof()),
                }
            }
        }
        let (a, z) = (t.goto_row[p as usize] as usize, t.goto_row[p as usize + 1] as usize);
        assert!(t.goto_nt[a..z].windows(2).all(|w| w[0] < w[1]));
        assert!(t.goto_target[a..z].iter().all(|&s| s < t.num_states));
    }
    assert_eq!(conflicts, b.conflicts);
    assert!(b.shift_reduce + b.reduce_reduce >= b.conflicts.min(1));
}

fn lang_with_empty(n: &Normalized, k: usize) -> BTreeSet<Vec<u32>> {
    let mut l = lang(&n.grammar, k);
    if n.accepts_empty {
        l.insert(Vec::new());
    }
    l
}

/// The module docs argue that no row merging is needed: check it.
fn assert_no_identical_rows(b: &LrBuild) {
    let t = &b.tables;
    let mut seen = HashSet::new();
    for p in 0..t.num_states {
        let actions: Vec<(u32, Vec<u32>)> =
            (0..=t.eof()).map(|a| (a, t.actions(p, a).to_vec())).filter(|(_, x)| !x.is_empty()).collect();
        let gotos: Vec<(u32, u32)> =
            (0..t.num_nonterminals).map(|a| (a, t.goto(p, a))).filter(|x| x.1 != DEAD).collect();
        assert!(seen.insert((actions, gotos)), "state {p} duplicates an earlier row");
    }
}

/// Every terminal string of length ≤ k: accepted by `accepts` iff in `expected`.
#[track_caller]
fn check_driver(
    name: &str,
    t: &LrTables,
    expected: &BTreeSet<Vec<u32>>,
    k: usize,
    accepts: impl Fn(&LrTables, &[u32]) -> bool,
) {
    let mut n = 0;
    for w in all_strings(t.num_terminals, k) {
        let want = expected.contains(&w);
        assert_eq!(accepts(t, &w), want, "{name}: {w:?} should be {}", if want { "accepted" } else { "rejected" });
        n += want as usize;
    }
    assert_eq!(n, expected.len(), "{name}: expected language has strings longer than {k}");
}

const UNAMBIGUOUS: &[(&str, &str, usize)] = &[
    ("expression layers", "E -> E + T | E - T | T; T -> T * F | T / F | F; F -> ( E ) | n | - F", 6),
    (
        "json-like",
        "V -> O | A | s | n; O -> { } | { M }; M -> P | M , P; P -> s : V; A -> [ ] | [ L ]; L -> V | L , V",
        6,
    ),
    ("left list", "S -> S , a | a", 7),
    ("right list", "L -> a L | a", 7),
    ("right list with sep", "L -> a , L | a", 7),
    ("nullable list", "S -> ( L ); L -> L a | ε", 7),
    ("statements", "B -> { L }; L -> St L | ε; St -> B | w ( n ) St | x ;", 6),
    ("nested parens", "S -> ( S ) S | ε", 7),
];

#[test]
fn unambiguous_grammars_have_no_conflicts_and_parse_exactly_their_language() {
    for &(name, src, k) in UNAMBIGUOUS {
        let g = bnf(src);
        let n = normalize(&g).unwrap();
        let b = build(&n).unwrap();
        check_tables(&b, &n.grammar);
        assert_eq!(b.conflicts, 0, "{name}:\n{}\n{}", n.grammar, b.describe(&n.grammar));
        check_driver(name, &b.tables, &lang(&g, k), k, lr_accepts);
    }
}

#[test]
fn dragon_book_expression_grammar() {
    // Aho et al., grammar 4.1: 12 LR(0) states, LALR(1) without conflicts.
    let g = bnf("E -> E + T | T; T -> T * F | F; F -> ( E ) | id");
    let b = build(&raw(g.clone())).unwrap();
    assert_eq!((b.states, b.conflicts), (12, 0));
    check_tables(&b, &g);
    check_driver("dragon", &b.tables, &lang(&g, 7), 7, lr_accepts);
}

#[test]
fn lalr_is_not_slr() {
    // LALR(1) but not SLR(1): SLR has a shift/reduce conflict on `=` (dragon book 4.49).
    let g = bnf("S -> L = R | R; L -> * R | id; R -> L");
    let b = build(&raw(g.clone())).unwrap();
    assert_eq!(b.conflicts, 0, "{}", b.describe(&g));
    check_driver("S -> L = R", &b.tables, &lang(&g, 7), 7, lr_accepts);
}

#[test]
fn lr1_but_not_lalr_has_reduce_reduce_conflicts() {
    // LR(1) but not LALR(1): merging the two `c •` states mixes the lookaheads d and e.
    let g = bnf("S -> a A d | b B d | a B e | b A e; A -> c; B -> c");
    let b = build(&raw(g.clone())).unwrap();
    assert_eq!((b.conflicts, b.reduce_reduce, b.shift_reduce), (2, 2, 0), "{}", b.describe(&g));
    check_tables(&b, &g);
    check_driver("lr1 not lalr", &b.tables, &lang(&g, 5), 5, glr_accepts);
}

const AMBIGUOUS: &[(&str, &str, usize)] = &[
    ("ambiguous expr", "E -> E + E | E * E | n", 7),
    ("dangling else", "S -> i E t S | i E t S e S | w E d S | x; E -> n", 7),
    ("dyck, highly ambiguous", "S -> S S | ( S ) | [ S ] | ε", 6),
    ("palindromes", "S -> a S a | b S b | a | b | ε", 7),
    ("prefix and postfix", "E -> - E | E ! | ( E ) | n", 7),
    ("two right-recursive layers", "A -> a A | B; B -> b B | c | A d", 6),
];

#[test]
fn ambiguous_grammars_keep_conflicts_and_glr_accepts_exactly_the_language() {
    // The raw ambiguous expression grammar, without normalization.
    let g = bnf("E -> E + E | E * E | n");
    let b = build(&raw(g.clone())).unwrap();
    check_tables(&b, &g);
    assert_eq!(b.shift_reduce, 4, "{}", b.describe(&g));
    assert_eq!(b.conflicts, 4);
    check_driver("raw ambiguous expr", &b.tables, &lang(&g, 7), 7, glr_accepts);

    for &(name, src, k) in AMBIGUOUS {
        let g = bnf(src);
        let n = normalize(&g).unwrap();
        let b = build(&n).unwrap();
        check_tables(&b, &n.grammar);
        assert!(b.conflicts > 0, "{name}: expected conflicts");
        check_driver(name, &b.tables, &lang(&g, k), k, glr_accepts);
    }
}

#[test]
fn random_grammars_glr_accepts_exactly_the_language() {
    let (mut built, mut with_conflicts) = (0, 0);
    for seed in 0..400u64 {
        let g = random_grammar(seed);
        let Ok(n) = normalize(&g) else {
            assert!(!generates_something(&g));
            continue;
        };
        let b = build(&n).unwrap();
        check_tables(&b, &n.grammar);
        let k = 5;
        let expected = lang(&g, k);
        assert_eq!(lang_with_empty(&n, k), expected);
        check_driver(&format!("random #{seed}"), &b.tables, &expected, k, glr_accepts);
        built += 1;
        with_conflicts += (b.conflicts > 0) as usize;
        assert_no_identical_rows(&b);
    }
    assert!(built > 250, "{built}");
    assert!(with_conflicts > 20, "{with_conflicts}");
}

#[test]
fn right_recursive_grammars_glr_accepts_exactly_the_language() {
    // Right recursion is what is left when the rewrite exceeds its budget; it also makes
    // the `includes` relation cyclic, which the digraph algorithm must close over.
    let mut with_rr = 0;
    let mut grammars: Vec<Grammar> = (1000..1400u64).map(random_grammar).collect();
    grammars.extend(AMBIGUOUS.iter().chain(UNAMBIGUOUS).map(|&(_, src, _)| bnf(src)));
    grammars.push(bnf("A -> x B | a A; B -> y A | z | b B A"));
    for g in grammars {
        let Ok(g1) = remove_useless(&g) else { continue };
        let e = eliminate_epsilon(&g1);
        let Ok(g2) = remove_useless(&remove_unit_cycles(&e.grammar)) else { continue };
        let n = Normalized { grammar: g2, accepts_empty: e.accepts_empty, right_recursive_left: Vec::new() };
        with_rr += !right_recursive(&n.grammar).is_empty() as usize;
        let b = build(&n).unwrap();
        check_tables(&b, &n.grammar);
        assert_no_identical_rows(&b);
        let k = 5;
        check_driver(&format!("{}", g), &b.tables, &lang(&g, k), k, glr_accepts);
    }
    assert!(with_rr > 100, "{with_rr}");
}

/// Per LR(0) kernel, its (lookahead, rule) reductions.
type Reductions = BTreeMap<Vec<(u32, u32)>, BTreeSet<(u32, u32)>>;

/// Reference LALR(1): canonical LR(1) item sets, merged by core. Returns, per LR(0)
/// kernel (as sorted (rule, dot) pairs, augmented rule = `rules.len()`), the set of
/// (lookahead, reduced rule) pairs, with `u32::MAX` as the rule for Accept.
fn reference_lalr(g: &Grammar) -> Reductions {
    let nt = g.terminals.len() as u32;
    let aug = g.rules.len() as u32;
    let rhs = |r: u32| -> Vec<Symbol> {
        if r == aug {
            vec![Symbol::N(g.start)]
        } else {
            g.rules[r as usize].rhs.clone()
        }
    };
    // FIRST of each nonterminal (ε-free grammar).
    let mut first = vec![BTreeSet::new(); g.nonterminals.len()];
    loop {
        let mut changed = false;
        for r in &g.rules {
            let add: BTreeSet<u32> = match r.rhs[0] {
                Symbol::T(t) => BTreeSet::from([t]),
                Symbol::N(b) => first[b as usize].clone(),
            };
            for t in add {
                changed |= first[r.lhs as usize].insert(t);
            }
        }
        if !changed {
            break;
        }
    }
    type State = BTreeSet<(u32, u32, u32)>; // (rule, dot, lookahead)
    let closure = |mut items: State| -> State {
        let mut todo: Vec<_> = items.iter().copied().collect();
        while let Some((r, d, la)) = todo.pop() {
            let rs = rhs(r);
            let Some(&Symbol::N(b)) = rs.get(d as usize) else { continue };
            let las: BTreeSet<u32> = match rs.get(d as usize + 1) {
                None => BTreeSet::from([la]),
                Some(&Symbol::T(t)) => BTreeSet::from([t]),
                Some(&Symbol::N(c)) => first[c as usize].clone(),
            };
            for (i, rule) in g.rules.iter().enumerate() {
                if rule.lhs == b {
                    for &l in &las {
                        if items.insert((i as u32, 0, l)) {
                            todo.push((i as u32, 0, l));
                        }
                    }
                }
            }
        }
        items
    };
    let start = closure(State::from([(aug, 0, nt)]));
    let mut states = vec![start.clone()];
    let mut seen = HashSet::from([start]);
    let mut out: Reductions = BTreeMap::new();
    let mut i = 0;
    while i < states.len() {
        let st = states[i].clone();
        i += 1;
        let mut core: Vec<(u32, u32)> =
            st.iter().filter(|&&(r, d, _)| d > 0 || r == aug).map(|&(r, d, _)| (r, d)).collect();
        core.dedup();
        let entry = out.entry(core).or_default();
        let mut by_sym: BTreeMap<Symbol, State> = BTreeMap::new();
        for &(r, d, la) in &st {
            match rhs(r).get(d as usize) {
                Some(&x) => {
                    by_sym.entry(x).or_default().insert((r, d + 1, la));
                }
                None if r == aug => {
                    entry.insert((la, u32::MAX));
                }
                None => {
                    entry.insert((la, r));
                }
            }
        }
        for (_, k) in by_sym {
            let c = closure(k);
            if seen.insert(c.clone()) {
                states.push(c);
            }
        }
    }
    out
}

/// Our reduce/accept actions per state, keyed by kernel, must be the reference's exactly.
fn assert_exactly_lalr(g: &Grammar, b: &LrBuild) {
    let want = reference_lalr(g);
    let t = &b.tables;
    let mut got: Reductions = BTreeMap::new();
    for p in 0..t.num_states {
        let core: Vec<(u32, u32)> = b.kernels[p as usize].iter().map(|it| (it.rule, it.dot)).collect();
        let mut acts = BTreeSet::new();
        for a in 0..=t.eof() {
            for &x in t.actions(p, a) {
                match Action::unpack(x) {
                    Action::Reduce(r) => {
                        acts.insert((a, r));
                    }
                    Action::Accept => {
                        acts.insert((a, u32::MAX));
                    }
                    Action::Shift(_) => {}
                }
            }
        }
        assert!(got.insert(core, acts).is_none(), "two states with one kernel");
    }
    assert_eq!(got, want, "not LALR(1):\n{g}\n{}", b.describe(g));
}

#[test]
fn lookaheads_are_exactly_lalr1() {
    let mut grammars: Vec<Grammar> = (2000..2300u64).map(random_grammar).collect();
    grammars.extend(AMBIGUOUS.iter().chain(UNAMBIGUOUS).map(|&(_, src, _)| bnf(src)));
    grammars.push(bnf("S -> L = R | R; L -> * R | id; R -> L"));
    grammars.push(bnf("S -> a A d | b B d | a B e | b A e; A -> c; B -> c"));
    grammars.push(bnf("E -> E + T | T; T -> T * F | F; F -> ( E ) | id"));
    let mut checked = 0;
    for g in grammars {
        // Both with and without right-recursion elimination (the latter has cyclic `includes`).
        let Ok(n) = normalize(&g) else { continue };
        let b = build(&n).unwrap();
        if !n.accepts_empty {
            assert_exactly_lalr(&n.grammar, &b);
        }
        let e = eliminate_epsilon(&g);
        let Ok(g2) = remove_useless(&remove_unit_cycles(&e.grammar)) else { continue };
        let b =
            build(&Normalized { grammar: g2.clone(), accepts_empty: false, right_recursive_left: Vec::new() }).unwrap();
        assert_exactly_lalr(&g2, &b);
        checked += 1;
    }
    assert!(checked > 200, "{checked}");
}

#[test]
fn accepts_empty_adds_accept_at_the_start_state() {
    let n = normalize(&bnf("S -> S a | ε")).unwrap();
    assert!(n.accepts_empty);
    let b = build(&n).unwrap();
    assert!(b.tables.actions(0, b.tables.eof()).contains(&Action::Accept.pack()));
    check_driver("a*", &b.tables, &lang_with_empty(&n, 6), 6, lr_accepts);

    // The language {ε}: no rules at all.
    let n = normalize(&bnf("S -> ε | A; A -> A x")).unwrap();
    assert!(n.grammar.rules.is_empty());
    let b = build(&n).unwrap();
    check_driver("{ε}", &b.tables, &BTreeSet::from([vec![]]), 4, lr_accepts);
}

#[test]
fn errors() {
    let g = bnf("S -> a | ε");
    assert_eq!(build(&raw(g)).unwrap_err(), LrError::EpsilonRule { rule: 1 });
    let mut g = bnf("S -> a");
    g.rules[0].rhs.push(Symbol::N(5));
    assert_eq!(build(&raw(g)).unwrap_err(), LrError::BadSymbol { rule: 0 });
    let mut g = bnf("S -> a");
    g.start = 2;
    assert_eq!(build(&raw(g)).unwrap_err(), LrError::BadStart { start: 2 });
    let g = bnf("E -> E + T | T; T -> T * F | F; F -> ( E ) | id");
    let e = build_with(&raw(g), &LrConfig { max_states: 5 }).unwrap_err();
    assert_eq!(e, LrError::TooManyStates { limit: 5 });
}

#[test]
fn describe_shows_items_and_actions() {
    let g = bnf("L -> L , a | a");
    let b = build(&raw(g.clone())).unwrap();
    let d = b.describe(&g);
    assert!(d.starts_with("state 0\n  S' → • L\n  on a: shift "), "{d}");
    assert!(d.contains("  L → L • , a\n  S' → L •\n  on ,: shift "), "{d}");
    assert!(d.contains("on $: accept"), "{d}");
    assert!(d.contains("on $: reduce 1"), "{d}");
}

#[test]
fn output_is_deterministic() {
    for &(_, src, _) in UNAMBIGUOUS.iter().chain(AMBIGUOUS) {
        let n = normalize(&bnf(src)).unwrap();
        assert_eq!(build(&n).unwrap(), build(&n).unwrap());
    }
}

/// A big grammar: `blocks` expression-like sublanguages over 200 terminals that refer
/// to each other, eleven rules each (one right-recursive), joined by a list at the top.
pub fn big_grammar(blocks: usize, seed: u64) -> Grammar {
    let mut rng = Rng(seed);
    let mut g = Grammar::default();
    for t in 0..200 {
        g.add_terminal(terminal(&format!("t{t}")));
    }
    let top = g.add_nonterminal("Top", None);
    let item = g.add_nonterminal("Item", None);
    let base = g.nonterminals.len() as u32;
    for b in 0..blocks {
        for part in ["E", "T", "F", "G"] {
            g.add_nonterminal(format!("{part}{b}"), None);
        }
    }
    let t = |rng: &mut Rng| Symbol::T(rng.below(200) as u32);
    g.add_rule(top, vec![Symbol::N(top), t(&mut rng), Symbol::N(item)], None);
    g.add_rule(top, vec![Symbol::N(item)], None);
    for b in 0..blocks as u32 {
        let (e, tt, f, gg) = (base + 4 * b, base + 4 * b + 1, base + 4 * b + 2, base + 4 * b + 3);
        let other = base + 4 * (rng.below(blocks as u64) as u32);
        g.add_rule(item, vec![t(&mut rng), Symbol::N(e)], None);
        g.add_rule(e, vec![Symbol::N(e), t(&mut rng), Symbol::N(tt)], None);
        g.add_rule(e, vec![Symbol::N(tt)], None);
        g.add_rule(tt, vec![Symbol::N(tt), t(&mut rng), Symbol::N(f)], None);
        g.add_rule(tt, vec![Symbol::N(f)], None);
        g.add_rule(f, vec![t(&mut rng), Symbol::N(e), t(&mut rng)], None);
        g.add_rule(f, vec![t(&mut rng)], None);
        g.add_rule(f, vec![t(&mut rng), Symbol::N(f)], None); // prefix operator: right recursion
        g.add_rule(f, vec![t(&mut rng), Symbol::N(gg), t(&mut rng)], None);
        g.add_rule(gg, vec![Symbol::N(other)], None);
        g.add_rule(gg, vec![Symbol::N(gg), t(&mut rng), Symbol::N(other)], None);
    }
    g
}

#[test]
fn big_grammar_builds_quickly() {
    let g = big_grammar(1000, 7);
    let t0 = std::time::Instant::now();
    let n = normalize(&g).unwrap();
    let t1 = t0.elapsed();
    let b = build(&n).unwrap();
    let t2 = t0.elapsed();
    eprintln!(
        "big grammar: {} rules, {} terminals; normalize {:?}, LALR {:?}: {} states, {} conflicts",
        n.grammar.rules.len(),
        n.grammar.terminals.len(),
        t1,
        t2 - t1,
        b.states,
        b.conflicts
    );
    assert!(n.grammar.rules.len() >= 10_000);
    check_tables(&b, &n.grammar);
    // Generous: the test profile is barely optimized and the machine may be busy.
    assert!(t2.as_secs() < 20);
}
