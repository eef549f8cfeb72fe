//! Terminal DWA vs direct lexing, and bounded-horizon equivalence against brute force.

use super::*;

/// Direct lexing of `bytes` from lexer state `q` (no carried inhibitors), byte by byte, every
/// branch kept apart: `None` when a prefix has more than [`MAX_LEXINGS`] branches or a lexing
/// more than [`MAX_STEPS`] steps (the compiler leaves such tokens UNDECIDED).
fn direct_lexings(lex: &LexerTables, q: u32, bytes: &[u8]) -> Option<BTreeSet<Lexing>> {
    type Branch = (u32, Vec<Inhibitor>, Vec<PlainStep>);
    let mut branches: Vec<Branch> = vec![(q, Vec::new(), Vec::new())];
    let mut h1 = Vec::new();
    for &b in bytes {
        let mut next: Vec<Branch> = Vec::new();
        for (q, h, steps) in &branches {
            if lex.step_inhibitors(h, b, &mut h1).is_none() {
                continue;
            }
            for q2 in lex.successors(*q, b) {
                if lex.can_continue(q2) {
                    next.push((q2, h1.clone(), steps.clone()));
                }
                // Priority groups, highest first. Within a group, the terminals leaving the same
                // inhibitors form one step (a fork the parser resolves); each lower group is
                // guarded by every terminal above it; an ignored terminal ends the descent.
                let mut prios: Vec<i32> = lex.accepts(q2).iter().map(|&t| lex.priority_of(t)).collect();
                prios.sort_unstable_by(|a, b| b.cmp(a));
                prios.dedup();
                let mut higher: Vec<u32> = Vec::new();
                for p in prios {
                    let group: Vec<u32> =
                        lex.accepts(q2).iter().copied().filter(|&t| lex.priority_of(t) == p).collect();
                    let mut by_inh: HashMap<Vec<Inhibitor>, (Vec<u32>, bool)> = HashMap::new();
                    for &t in &group {
                        let mut h2 = h1.clone();
                        h2.extend(lex.inhibitor_for(t, q2));
                        h2.sort_unstable();
                        h2.dedup();
                        let e = by_inh.entry(h2).or_default();
                        if lex.is_ignored(t) {
                            e.1 = true;
                        } else {
                            e.0.push(t);
                        }
                    }
                    let mut guard = higher.clone();
                    guard.sort_unstable();
                    for (h2, (mut shifts, ignored)) in by_inh {
                        if !shifts.is_empty() {
                            shifts.sort_unstable();
                            let mut s = steps.clone();
                            s.push((false, shifts, guard.clone()));
                            next.push((lex.start, h2.clone(), s));
                        }
                        if ignored {
                            let mut s = steps.clone();
                            if !guard.is_empty() {
                                s.push((true, Vec::new(), guard.clone()));
                            }
                            next.push((lex.start, h2, s));
                        }
                    }
                    if group.iter().any(|&t| lex.is_ignored(t)) {
                        break;
                    }
                    higher.extend(group);
                }
            }
        }
        // The same future (lexer state, inhibitors) and lexings equal up to the terminals of a
        // last shift with the same guard: one branch shifting their union (the compiler's
        // `merge_forks`; a shift of a set is a fork over its terminals).
        let mut shifts: BTreeMap<Branch, BTreeSet<u32>> = BTreeMap::new();
        let mut kept: Vec<Branch> = Vec::new();
        for (q, h, mut steps) in next {
            match steps.pop() {
                Some((false, ts, guard)) => {
                    steps.push((false, Vec::new(), guard));
                    shifts.entry((q, h, steps)).or_default().extend(ts);
                }
                last => {
                    steps.extend(last);
                    kept.push((q, h, steps));
                }
            }
        }
        for ((q, h, mut steps), ts) in shifts {
            if let Some(last) = steps.last_mut() {
                last.1 = ts.into_iter().collect();
            }
            kept.push((q, h, steps));
        }
        let mut next = kept;
        next.sort();
        next.dedup();
        if next.len() > MAX_LEXINGS || next.iter().any(|b| b.2.len() > MAX_STEPS as usize) {
            return None;
        }
        branches = next;
    }
    Some(branches.into_iter().map(|(q, _, steps)| (steps, plain_class(lex, q))).collect())
}

/// Terminal DWA vs direct lexing: every (boundary lexer state, token) pair, with classes derived
/// from base states of at least `bases_from` tokens (`Walker::with_bases`; 1: every state a base
/// and every state derived from one when there is one). Returns the pairs
/// compared, how many had a lexing, and how many states were derived from a base or took the
/// classes of an equivalent state (bounded-horizon equivalence).
fn check_terminal_dwa(
    name: &str,
    tables: &GrammarTables,
    vocab: &Vocabulary,
    bases_from: usize,
) -> (usize, usize, usize) {
    let lex = &tables.lexer;
    let trie = trie_of(vocab);
    let mut terms = SetPool::new();
    let mut walker = Walker::new(lex, &trie).with_bases(bases_from, bases_from == 1);
    let (mut pairs, mut lexed) = (0, 0);
    for q in boundary_states(lex) {
        let (classes, undecided) = walker.classes(q, &mut terms);
        let mut of_token: HashMap<u32, usize> = HashMap::new();
        let mut seen: HashMap<BTreeSet<Lexing>, usize> = HashMap::new();
        let mut plain: Vec<BTreeSet<Lexing>> = Vec::new();
        for (ci, c) in classes.iter().enumerate() {
            let tokens = c.tokens.to_vec();
            assert!(!tokens.is_empty(), "{name} q{q}: empty class {ci}");
            assert_eq!(tokens.len(), c.tokens.len(), "{name} q{q}: class {ci} miscounts its tokens");
            assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{name} q{q}: class {ci} not sorted");
            let set: BTreeSet<Lexing> = c.sigs.iter().map(|&s| plain_sig(&walker, &terms, s)).collect();
            assert_eq!(set.len(), c.sigs.len(), "{name} q{q}: class {ci} repeats a lexing");
            if let Some(other) = seen.insert(set.clone(), ci) {
                panic!("{name} q{q}: classes {other} and {ci} have the same lexings");
            }
            plain.push(set);
            for t in tokens {
                assert!(of_token.insert(t, ci).is_none(), "{name} q{q}: token {t} in two classes");
            }
        }
        for v in 0..vocab.len() as u32 {
            if vocab.is_special(v) {
                continue;
            }
            let bytes = vocab.token_bytes(v).unwrap_or_default();
            let is_undecided = undecided.binary_search(&v).is_ok();
            pairs += 1;
            match direct_lexings(lex, q, bytes) {
                None => assert!(is_undecided, "{name} q{q}: token {v} {:?} should be UNDECIDED", show(bytes)),
                Some(l) if l.is_empty() => {
                    assert!(
                        !is_undecided && !of_token.contains_key(&v),
                        "{name} q{q}: dead token {v} {:?} has a class",
                        show(bytes)
                    );
                }
                Some(l) => {
                    lexed += 1;
                    assert!(!is_undecided, "{name} q{q}: token {v} {:?} is UNDECIDED", show(bytes));
                    let c = of_token
                        .get(&v)
                        .unwrap_or_else(|| panic!("{name} q{q}: token {v} {:?} has no class", show(bytes)));
                    assert_eq!(plain[*c], l, "{name} q{q}: token {v} {:?}", show(bytes));
                }
            }
        }
    }
    (pairs, lexed, walker.derived + walker.equivalent)
}

#[test]
fn terminal_dwa_equals_direct_lexing() {
    let vocab = gpt2();
    let mut total = (0, 0);
    let mut derived = 0;
    // Each grammar twice: with the default bases (large states only) and with every state
    // derived from a base, so that small vocabularies exercise the derivation too.
    for rel in ["grammars/json.lark", "schemas/person.json"] {
        for bases_from in [BASE_FROM, 1] {
            let (p, l, d) = check_terminal_dwa(rel, &file_tables(rel), &vocab, bases_from);
            println!("{rel} (bases from {bases_from}): {p} (state, token) pairs, {l} with lexings, {d} states derived");
            total = (total.0 + p, total.1 + l);
            derived += d;
        }
    }
    let small = vocab_over(b"0123456789+-*() ", 3, &["12 + 3", "((", "))", "--1", "  ", "1*-2"]);
    for bases_from in [BASE_FROM, 1] {
        let (p, l, d) = check_terminal_dwa("expression", &tables_of(SourceKind::Lark, EXPR), &small, bases_from);
        total = (total.0 + p, total.1 + l);
        derived += d;
    }
    let small = vocab_over(b"abc (),", 3, &["abc", "a b", "(ab", "),", "c c", "abab", " (", "ca,"]);
    let mut rng = Rng(0x00c0_ffee_0000_0001);
    let mut grammars = 0;
    for _ in 0..60 {
        let src = random_grammar(&mut rng);
        let Ok(g) = parse_source(SourceKind::Lark, &src) else { continue };
        let Ok(c) = compile_grammar(&g) else { continue };
        for bases_from in [BASE_FROM, 1] {
            let (p, l, d) = check_terminal_dwa(&src, &c.tables, &small, bases_from);
            total = (total.0 + p, total.1 + l);
            derived += d;
        }
        grammars += 1;
    }
    println!(
        "{grammars} random grammars; total {} pairs, {} with lexings, {derived} states derived from bases",
        total.0, total.1
    );
    assert!(grammars >= 30 && total.1 > 100_000, "{grammars} grammars, {total:?}");
    assert!(derived > 500, "only {derived} states derived from bases");
}

/// Counting terminals (bounded repetitions longer than the vocabulary's tokens) whose positions
/// far from the bound share classes by bounded-horizon equivalence, next to terminals that
/// create inhibitors (maximal munch), an ignored terminal and a priority.
const COUNTERS: &str = r#"
start: item ("," item)*
item: WORD | NUM | STR | KEY
WORD: /[ab]{2,9}/
NUM: /[0-9]{1,7}/
STR: /"[ab ,]{0,24}"/
KEY.2: /"a{3,30}"/
%ignore " "
"#;

/// A JSON Schema with `maxLength` and `pattern` counters longer than the tokens.
const COUNTER_SCHEMA: &str = r#"{
  "type": "object",
  "properties": {
    "a": {"type": "string", "maxLength": 25},
    "b": {"type": "string", "pattern": "^[ab0]{3,20}$"},
    "c": {"type": "array", "items": {"type": "string", "minLength": 2, "maxLength": 18}, "maxItems": 3}
  },
  "required": ["a"],
  "additionalProperties": false
}"#;

#[test]
fn terminal_dwa_equals_direct_lexing_on_counters() {
    let mut shared = 0;
    let mut lexed = 0;
    let lark_vocab = vocab_over(
        b"ab0\" ,",
        3,
        &[
            "aaaa",
            "ababab",
            "abababab",
            "\"aaaa",
            "bbbbbbbbb",
            "a b a b",
            "  \"ab",
            "0000000",
            "a\",\"b",
            "\"aaaaaaa\"",
        ],
    );
    let schema_vocab = vocab_over(
        b"{}[]\":,ab0 ",
        3,
        &["{\"a\":\"", "\"b\":\"", "aaaaaaa", "ab0ab0ab", "\",\"", "\"]}", "bbbbbbbbbb", "a a a a"],
    );
    for (name, tables, vocab) in [
        ("counters", tables_of(SourceKind::Lark, COUNTERS), &lark_vocab),
        ("counter schema", tables_of(SourceKind::JsonSchema, COUNTER_SCHEMA), &schema_vocab),
    ] {
        for bases_from in [BASE_FROM, 1] {
            let (p, l, d) = check_terminal_dwa(name, &tables, vocab, bases_from);
            println!("{name} (bases from {bases_from}): {p} pairs, {l} with lexings, {d} states shared or derived");
            shared += d;
            lexed += l;
        }
    }
    assert!(lexed > 100_000, "{lexed} pairs with lexings");
    assert!(shared > 300, "only {shared} states shared or derived");
}

/// Live heights (`terminal_dwa::live`): the states of an RFC 3339 `time` string remember the
/// hour and minute until the offset (a leap second is valid only at 23:59 UTC), so no two of
/// them are equivalent to the height of a vocabulary with long tokens after `\`; but those
/// tokens die within a few bytes, and the walker keys each state by what its walks read. The
/// classes still equal direct lexing for every (state, token) pair, with most states taking an
/// equivalent state's classes (no bases: every other state is walked in full).
#[test]
fn live_heights_share_format_states() {
    let tables = tables_of(SourceKind::JsonSchema, r#"{"type": "string", "format": "time"}"#);
    let vocab = vocab_over(
        b"0123456789:+-.Zz\"\\u",
        1,
        &[
            "\\u003",
            "\\u0036",
            "\\u00",
            "\\u0032\\u0033",
            "\\\\\\\\\\\\\\\\",
            "\\\"\\\"\\\"\\\"",
            "\\n\\n\\n\\n\\n\\n",
            "23:59:60Z\"",
            "01:29:60+01:30\"",
            "12",
            ":60",
            "60.5Z\"",
            "+01:30\"",
            "\"\"\"\"\"\"\"\"",
        ],
    );
    let states = boundary_states(&tables.lexer).count();
    assert!(states > 5000, "{states} boundary states: not the exact leap-second lexer");
    let (pairs, lexed, equivalent) = check_terminal_dwa("time", &tables, &vocab, usize::MAX);
    println!("time: {states} states, {pairs} pairs, {lexed} with lexings, {equivalent} states equivalent");
    assert!(lexed > 50_000, "{lexed} pairs with lexings");
    assert!(equivalent * 10 > states * 9, "only {equivalent} of {states} states equivalent");
}

/// Bounded-horizon equivalence against its definition: `x ≡_d y` iff every byte string of
/// length at most `d` leads both to dead, or both to live states with the same start flag,
/// accept list and `Next⁺`; and `inhibitor_free(x, d)` iff no state within `d` bytes of `x`
/// creates an inhibitor when it accepts.
#[test]
fn horizon_equals_brute_force() {
    use dwac_compile::dwa::horizon::Horizon;
    fn obs(lex: &LexerTables, x: u32) -> (bool, Vec<u32>, Vec<u64>) {
        (x == lex.start, lex.accepts(x).to_vec(), lex.next_plus(x).to_vec())
    }
    let mut checked = 0usize;
    let mut equivalent = 0usize;
    for (name, tables) in [
        ("counters", tables_of(SourceKind::Lark, COUNTERS)),
        ("expression", tables_of(SourceKind::Lark, EXPR)),
        ("counter schema", tables_of(SourceKind::JsonSchema, COUNTER_SCHEMA)),
    ] {
        let lex = &tables.lexer;
        // One byte per column of the transition table (bytes every state treats alike).
        let mut alpha: Vec<u8> = Vec::new();
        for b in 0..=255u8 {
            if !alpha.iter().any(|&a| (0..lex.num_states).all(|q| lex.step(q, a) == lex.step(q, b))) {
                alpha.push(b);
            }
        }
        // The definition level by level over all pairs (DEAD as state `n`): `eq[d][x][y]`,
        // and `inh[d][x]`: some state within `d` bytes of `x` creates an inhibitor.
        let depth = 4u32;
        let n = lex.num_states as usize;
        let idx = |q: u32| if q == DEAD { n } else { q as usize };
        let mut eq: Vec<Vec<bool>> = vec![vec![false; (n + 1) * (n + 1)]];
        let mut inh: Vec<Vec<bool>> = vec![vec![false; n + 1]];
        for x in 0..=n {
            for y in 0..=n {
                eq[0][x * (n + 1) + y] = match (x == n, y == n) {
                    (true, true) => true,
                    (false, false) => obs(lex, x as u32) == obs(lex, y as u32),
                    _ => false,
                };
            }
            inh[0][x] = x < n && lex.accepts(x as u32).iter().any(|&t| lex.inhibitor_for(t, x as u32).is_some());
        }
        let succ = |x: usize, b: u8| if x == n { n } else { idx(lex.step(x as u32, b)) };
        for d in 1..=depth as usize {
            let mut e = vec![false; (n + 1) * (n + 1)];
            let mut c = vec![false; n + 1];
            for x in 0..=n {
                for y in 0..=n {
                    e[x * (n + 1) + y] =
                        eq[0][x * (n + 1) + y] && alpha.iter().all(|&b| eq[d - 1][succ(x, b) * (n + 1) + succ(y, b)]);
                }
                c[x] = inh[0][x] || alpha.iter().any(|&b| inh[d - 1][succ(x, b)]);
            }
            eq.push(e);
            inh.push(c);
        }
        let h = Horizon::new(lex, depth);
        for x in 0..n {
            for d in 0..=depth {
                assert_eq!(h.inhibitor_free(x as u32, d), !inh[d as usize][x], "{name}: inhibitors within {d} of q{x}");
            }
            for y in 0..n {
                for d in 0..=depth {
                    let want = eq[d as usize][x * (n + 1) + y];
                    assert_eq!(h.equivalent(x as u32, y as u32, d), want, "{name}: q{x} ≡_{d} q{y}");
                    checked += 1;
                    equivalent += (want && x != y) as usize;
                }
            }
        }
    }
    println!("{checked} (x, y, d) triples, {equivalent} equivalent pairs of distinct states");
    assert!(checked > 50_000 && equivalent > 1_000, "{checked} triples, {equivalent} equivalent");
}
