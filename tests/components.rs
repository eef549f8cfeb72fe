//! Component oracles (ARCHITECTURE.md "Invariants"): each stage of the Parser DWA compiler against a direct,
//! unshared computation of what it stands for.
//!
//! * **Terminal DWA vs direct lexing**: from every lexer state, every token's set of lexings as
//!   the trie walk finds them (memoized, shared, grouped into token classes) equals stepping the
//!   token's bytes one by one through the lexer tables.
//! * **Templates vs LR simulation**: on random valid stacks (prefixes of random parses), split
//!   at every height into a known segment and a real stack below it, running a terminal's
//!   template and answering its waits from the real stack gives exactly the stacks (push words)
//!   and the success of shifting that terminal with the LR tables.
//! * **Determinized vs non-deterministic**: on the same stacks, reading the Parser DWA of a
//!   lexer state top-down gives exactly the tokens one of whose lexings survives a direct LR
//!   simulation of its steps (per-stack priority guards, then the lookahead check).
//!
//! Grammars: the JSON grammar and a JSON Schema with lexer components (embedded GPT-2), the
//! ambiguous expression grammar, and seeded random small grammars (overlapping terminals,
//! priorities, ignored spaces, GLR conflicts) over a synthetic vocabulary.

use std::collections::{BTreeSet, HashMap};

use dwac_compile::dwa::compose::{Step, ANY};
use dwac_compile::dwa::sets::SetPool;
use dwac_compile::dwa::templates::{Lr, Outcome, Read, Wait};
use dwac_compile::dwa::terminal_dwa::{
    carried_inhibitors, kill_set_shared, Prewalker, Prewalks, TokenClass, TrieIndex, Walker, BASE_FROM, MAX_LEXINGS,
    MAX_STEPS,
};
use dwac_compile::dwa::{build_mask_tables, MaskOptions};
use dwac_compile::{compile_grammar, parse_source, SourceKind};
use dwac_runtime::dwa::{MaskTables, NONE};
use dwac_runtime::lexer::Inhibitor;
use dwac_runtime::trie::Trie;
use dwac_runtime::{GrammarTables, LexerTables, LrTables, Vocabulary, DEAD};
use dwac_tests::*;

/// One step of a lexing in plain terms: (an ignored terminal's pass?, terminals, guard).
type PlainStep = (bool, Vec<u32>, Vec<u32>);
/// A lexing: its steps and the lookahead class of the pending lexeme (`None`: any).
type Lexing = (Vec<PlainStep>, Option<Vec<u32>>);

fn tables_of(kind: SourceKind, src: &str) -> GrammarTables {
    let g = parse_source(kind, src).unwrap_or_else(|e| panic!("{e}"));
    compile_grammar(&g).unwrap_or_else(|e| panic!("{e}")).tables
}

fn file_tables(rel: &str) -> GrammarTables {
    let path = repo_root().join(rel);
    let kind = SourceKind::from_path(&path).unwrap();
    tables_of(kind, &std::fs::read_to_string(&path).unwrap())
}

fn trie_of(vocab: &Vocabulary) -> Trie {
    let toks: Vec<(u32, &[u8])> = (0..vocab.len() as u32)
        .filter(|&v| !vocab.is_special(v))
        .filter_map(|v| vocab.token_bytes(v).map(|b| (v, b)))
        .collect();
    Trie::build(&toks)
}

/// The lexer states the compiler builds an automaton for.
fn boundary_states(lex: &LexerTables) -> impl Iterator<Item = u32> + '_ {
    (0..lex.num_states).filter(move |&q| q == lex.start || lex.can_continue(q))
}

/// The lookahead class of a pending lexeme at `q`, in plain terms.
fn plain_class(lex: &LexerTables, q: u32) -> Option<Vec<u32>> {
    if q == lex.start || lex.may_become_ignored(q) {
        None
    } else {
        Some(lex.pending_terminals(q).collect())
    }
}

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
        next.sort();
        next.dedup();
        if next.len() > MAX_LEXINGS || next.iter().any(|b| b.2.len() > MAX_STEPS as usize) {
            return None;
        }
        branches = next;
    }
    Some(branches.into_iter().map(|(q, _, steps)| (steps, plain_class(lex, q))).collect())
}

/// A walker signature in plain terms.
fn plain_sig(walker: &Walker, terms: &SetPool, (node, class): (u32, u32)) -> Lexing {
    let mut steps = Vec::new();
    let mut n = node;
    while n != 0 {
        let (parent, step) = walker.node(n);
        steps.push(match step {
            Step::Shift { terms: t, guard } => (false, terms.get(t).to_vec(), terms.get(guard).to_vec()),
            Step::Pass { guard } => (true, Vec::new(), terms.get(guard).to_vec()),
        });
        n = parent;
    }
    steps.reverse();
    (steps, (class != ANY).then(|| terms.get(class).to_vec()))
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

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn shiftable(lr: &LrTables, stack: &[u32], t: u32) -> bool {
    let (s, acc) = lr_shift(lr, stack, t);
    acc || !s.is_empty()
}

/// Random valid stacks: prefixes of random parses (random shiftable terminals), each distinct.
fn random_stacks(lr: &LrTables, rng: &mut Rng, walks: usize, steps: usize) -> Vec<Vec<u32>> {
    let mut out: BTreeSet<Vec<u32>> = BTreeSet::new();
    for _ in 0..walks {
        let mut stack = vec![0u32];
        out.insert(stack.clone());
        for _ in 0..steps {
            let mut options: Vec<Vec<u32>> = Vec::new();
            for t in 0..lr.num_terminals {
                if t != lr.eof() {
                    options.extend(lr_shift(lr, &stack, t).0);
                }
            }
            if options.is_empty() {
                break;
            }
            stack = options.swap_remove(rng.below(options.len()));
            out.insert(stack.clone());
        }
    }
    out.into_iter().collect()
}

/// Answer a template's waits from the real stack `real[..base]`, collecting full stacks.
fn resolve(lr: &Lr, t: u32, w: Wait, real: &[u32], base: usize, shifted: &mut BTreeSet<Vec<u32>>, success: &mut bool) {
    if base == 0 {
        return;
    }
    let p = real[base - 1];
    // A state the template does not list as a label must behave as DEFAULT (die, for a read).
    let listed = match w {
        Wait::Pop { j, .. } if j > 0 => true,
        _ => lr.tables.num_states > 0 && labels_of(lr, t, w).contains(&p),
    };
    let mut out = Outcome::default();
    match lr.read(w, Some(p)) {
        Read::Dead => {
            return;
        }
        Read::Wait(w2) => return resolve(lr, t, w2, real, base - 1, shifted, success),
        Read::Peek(p) => lr.run_peek(t, p, &mut out),
        Read::Run(k) => lr.run(t, k, &mut out),
    }
    assert!(listed || (!out.success && out.waiting.is_empty()), "a read of unlisted state {p} did something");
    *success |= out.success;
    for seg in out.shifted {
        let mut full = real[..base - 1].to_vec();
        full.extend(seg);
        shifted.insert(full);
    }
    for w2 in out.waiting {
        resolve(lr, t, w2, real, base - 1, shifted, success);
    }
}

fn labels_of(lr: &Lr, t: u32, w: Wait) -> Vec<u32> {
    let tables = lr.tables;
    (0..tables.num_states)
        .filter(|&p| match w {
            Wait::Peek => !tables.actions(p, t).is_empty(),
            Wait::Pop { j: 0, a } => tables.goto(p, a) != DEAD,
            Wait::Pop { .. } => true,
        })
        .collect()
}

/// Templates vs LR simulation over `stacks`, every terminal and `$`, every split. Returns the
/// (stack, split, terminal) triples compared.
fn check_templates(name: &str, lr_tables: &LrTables, stacks: &[Vec<u32>]) -> usize {
    let lr = Lr::new(lr_tables);
    let mut n = 0;
    for stack in stacks {
        for t in 0..lr_tables.num_terminals {
            let (want, accepted) = lr_shift(lr_tables, stack, t);
            // The real stack always keeps its bottom state (the LR start state is never popped).
            for split in 1..=stack.len() {
                let (real, known) = stack.split_at(split);
                let mut out = Outcome::default();
                if known.is_empty() {
                    let (mut got, mut success) = (BTreeSet::new(), false);
                    resolve(&lr, t, Wait::Peek, real, real.len(), &mut got, &mut success);
                    assert_eq!(got, want, "{name}: t{t} on {stack:?} fully real");
                    assert_eq!(success, accepted || !want.is_empty(), "{name}: t{t} on {stack:?}");
                    n += 1;
                    continue;
                }
                lr.run(t, known.to_vec(), &mut out);
                let mut got: BTreeSet<Vec<u32>> = out
                    .shifted
                    .iter()
                    .map(|seg| {
                        let mut full = real.to_vec();
                        full.extend(seg);
                        full
                    })
                    .collect();
                let mut success = out.success;
                for &w in &out.waiting {
                    resolve(&lr, t, w, real, real.len(), &mut got, &mut success);
                }
                assert_eq!(got, want, "{name}: t{t} on {stack:?}, known {known:?}");
                assert_eq!(success, accepted || !want.is_empty(), "{name}: t{t} on {stack:?}, known {known:?}");
                n += 1;
            }
        }
    }
    n
}

/// The tokens of a mask-table set.
fn set_tokens(m: &MaskTables, s: u32, out: &mut BTreeSet<u32>) {
    if s != NONE {
        m.for_each_token(s, |t| {
            out.insert(t);
        });
    }
}

/// The Parser DWA of lexer state `q` read down one explicit stack, as `get_mask` reads a path.
fn dwa_tokens(m: &MaskTables, q: u32, stack: &[u32]) -> BTreeSet<u32> {
    let mut out = BTreeSet::new();
    set_tokens(m, m.start_rho[q as usize], &mut out);
    let mut d = m.start[q as usize];
    if d == NONE {
        return out;
    }
    for &label in stack.iter().rev() {
        if m.is_final(d) {
            break;
        }
        let (d2, rho) = m.step(d, label);
        set_tokens(m, rho, &mut out);
        if d2 == DEAD {
            break;
        }
        d = d2;
    }
    out
}

/// Does lexing `l` survive on `stack`: each step shifts one of its terminals (every conflict
/// path followed) on every stack where no guard terminal can be shifted, then the pending
/// lexeme's class must be shiftable somewhere.
fn survives(lr: &LrTables, stack: &[u32], l: &Lexing) -> bool {
    let mut stacks: BTreeSet<Vec<u32>> = BTreeSet::from([stack.to_vec()]);
    for (pass, ts, guard) in &l.0 {
        let mut next = BTreeSet::new();
        for s in &stacks {
            if guard.iter().any(|&g| shiftable(lr, s, g)) {
                continue;
            }
            if *pass {
                next.insert(s.clone());
            } else {
                for &t in ts {
                    next.extend(lr_shift(lr, s, t).0);
                }
            }
        }
        stacks = next;
    }
    match &l.1 {
        None => !stacks.is_empty(),
        Some(c) => stacks.iter().any(|s| c.iter().any(|&t| shiftable(lr, s, t))),
    }
}

/// Determinized vs non-deterministic evaluation over `stacks` and every boundary lexer state
/// whose own lookahead class holds on the stack (a thread can be there). Returns the
/// (stack, state) pairs compared.
fn check_determinized(name: &str, tables: &GrammarTables, vocab: &Vocabulary, stacks: &[Vec<u32>]) -> usize {
    let (m, _) = build_mask_tables(tables, vocab, &MaskOptions::default()).unwrap();
    let lex = &tables.lexer;
    let lr = &tables.lr;
    let trie = trie_of(vocab);
    let mut terms = SetPool::new();
    let mut walker = Walker::new(lex, &trie);
    let mut n = 0;
    for q in boundary_states(lex) {
        let (classes, undecided) = walker.classes(q, &mut terms);
        let lexings: Vec<Vec<Lexing>> =
            classes.iter().map(|c| c.sigs.iter().map(|&s| plain_sig(&walker, &terms, s)).collect()).collect();
        let own = plain_class(lex, q);
        for stack in stacks {
            if let Some(c) = &own {
                if !c.iter().any(|&t| shiftable(lr, stack, t)) {
                    continue;
                }
            }
            let mut want = BTreeSet::new();
            for (c, ls) in classes.iter().zip(&lexings) {
                if ls.iter().any(|l| survives(lr, stack, l)) {
                    want.extend(c.tokens.iter());
                }
            }
            if q == lex.start && shiftable(lr, stack, lr.eof()) {
                want.extend(vocab.eos.iter().copied());
            }
            for u in &undecided {
                want.remove(u);
            }
            let got = dwa_tokens(&m, q, stack);
            if got != want {
                let extra: Vec<_> =
                    got.difference(&want).take(5).map(|&v| show(vocab.token_bytes(v).unwrap_or_default())).collect();
                let missing: Vec<_> =
                    want.difference(&got).take(5).map(|&v| show(vocab.token_bytes(v).unwrap_or_default())).collect();
                panic!("{name} q{q} on {stack:?}: DWA extra {extra:?}, missing {missing:?}");
            }
            n += 1;
        }
    }
    n
}

fn gpt2() -> Vocabulary {
    dwac_vocab::Tokenizer::default_embedded().unwrap().into_vocab()
}

const EXPR: &str = r#"
start: e
e: e "+" e | e "*" e | "(" e ")" | NUM | e "-" e | "-" e
NUM: /[0-9]+/
%ignore " "
"#;

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

#[test]
fn templates_equal_lr_simulation() {
    let mut rng = Rng(0x7e3a_1a7e_0000_5151);
    let mut total = 0;
    for rel in ["grammars/json.lark", "schemas/person.json"] {
        let t = file_tables(rel);
        let stacks = random_stacks(&t.lr, &mut rng, 20, 40);
        total += check_templates(rel, &t.lr, &stacks);
    }
    let t = tables_of(SourceKind::Lark, EXPR);
    let stacks = random_stacks(&t.lr, &mut rng, 20, 30);
    total += check_templates("expression", &t.lr, &stacks);
    let mut grammars = 0;
    for _ in 0..80 {
        let src = random_grammar(&mut rng);
        let Ok(g) = parse_source(SourceKind::Lark, &src) else { continue };
        let Ok(c) = compile_grammar(&g) else { continue };
        let stacks = random_stacks(&c.tables.lr, &mut rng, 8, 12);
        total += check_templates(&src, &c.tables.lr, &stacks);
        grammars += 1;
    }
    println!("{grammars} random grammars; {total} (stack, split, terminal) triples");
    assert!(grammars >= 40 && total > 50_000, "{grammars} grammars, {total} triples");
}

/// The label lists of waiting simulations (`Lr::labels`, the tables inverted in one pass) are
/// the states a scan of every state finds: with an action on the terminal (a peek), with a GOTO
/// on the nonterminal (a pop that reads its GOTO source), and none for a pop still discarding.
#[test]
fn label_lists_equal_a_scan_of_the_tables() {
    let mut checked = 0;
    for rel in ["grammars/json.lark", "schemas/large/tools-10.json"] {
        let t = file_tables(rel);
        let lr = &t.lr;
        let mut sims = Lr::new(lr);
        for term in 0..=lr.eof() {
            let want: Vec<u32> = (0..lr.num_states).filter(|&p| !lr.actions(p, term).is_empty()).collect();
            assert_eq!(sims.labels(term, Wait::Peek), &want[..], "{rel}: terminal {term}");
            checked += want.len();
        }
        for a in 0..lr.num_nonterminals + 2 {
            let want: Vec<u32> = (0..lr.num_states).filter(|&p| lr.goto(p, a) != DEAD).collect();
            assert_eq!(sims.labels(0, Wait::Pop { j: 0, a }), &want[..], "{rel}: nonterminal {a}");
            assert!(sims.labels(0, Wait::Pop { j: 1, a }).is_empty());
            checked += want.len();
        }
    }
    assert!(checked > 1_000, "{checked} labels");
}

#[test]
fn determinized_equals_nondeterministic() {
    let mut rng = Rng(0xde7e_4411_0000_0003);
    let mut total = 0;
    let small = vocab_over(b"0123456789+-*() ", 2, &["12 + 3", "((", "))", "--1", "  ", "1*-2", "+(", ")*"]);
    let t = tables_of(SourceKind::Lark, EXPR);
    let stacks = random_stacks(&t.lr, &mut rng, 10, 20);
    total += check_determinized("expression", &t, &small, &stacks);
    let json_small = vocab_over(b"{}[],:\"a1 ", 2, &["true", "null", "false", "\":", "\",\"", "[{\"", "-1.5e", "\"}]"]);
    let t = file_tables("grammars/json.lark");
    let stacks = random_stacks(&t.lr, &mut rng, 10, 25);
    total += check_determinized("json", &t, &json_small, &stacks);
    let small = vocab_over(b"abc (),", 2, &["abc", "a b", "(ab", "),", "c c", "abab", " (", "ca,"]);
    let mut grammars = 0;
    for _ in 0..80 {
        let src = random_grammar(&mut rng);
        let Ok(g) = parse_source(SourceKind::Lark, &src) else { continue };
        let Ok(c) = compile_grammar(&g) else { continue };
        let stacks = random_stacks(&c.tables.lr, &mut rng, 6, 10);
        total += check_determinized(&src, &c.tables, &small, &stacks);
        grammars += 1;
    }
    println!("{grammars} random grammars; {total} (stack, lexer state) pairs");
    assert!(grammars >= 40 && total > 2_000, "{grammars} grammars, {total} pairs");
}

/// The walker on its own thread (the default) and on the calling thread build equal tables: the
/// composer's mirror of the walker's terminal sets and step sequences keeps their ids, and the
/// states are assembled in the same order either way.
#[test]
fn walk_thread_builds_the_same_tables() {
    let vocab = dwac_vocab::Tokenizer::default_embedded().unwrap().vocab().clone();
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{3}$"},
            "name": {"type": "string", "maxLength": 12},
            "n": {"type": "integer"},
            "kind": {"enum": ["alpha", "beta", 3]},
            "tags": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["code", "n"]
    });
    let sg = dwac_grammar::schema::compile_schema(&schema, &Default::default()).unwrap();
    let schema_tables = compile_grammar(&sg.grammar).unwrap().tables;
    for (name, tables) in [("json.lark", file_tables("grammars/json.lark")), ("schema", schema_tables)] {
        let (threaded, stats) = build_mask_tables(&tables, &vocab, &MaskOptions::default()).unwrap();
        let one_thread = MaskOptions { walk_thread: false, ..MaskOptions::default() };
        let (inline, _) = build_mask_tables(&tables, &vocab, &one_thread).unwrap();
        assert!(stats.dwa_states > 10 && stats.token_classes > 10, "{name}: {stats:?}");
        assert!(threaded == inline, "{name}: the tables differ with and without the walking thread");
    }
}

/// Two walkers' classes and UNDECIDED tokens of one state are the same, ids included.
fn assert_same_classes(at: &str, (ca, ua): (Vec<TokenClass>, Vec<u32>), (cb, ub): (Vec<TokenClass>, Vec<u32>)) {
    assert_eq!(ua, ub, "{at}: UNDECIDED tokens differ");
    assert_eq!(ca.len(), cb.len(), "{at}: class counts differ");
    for (a, b) in ca.iter().zip(&cb) {
        assert_eq!(a.sigs, b.sigs, "{at}: lexings differ");
        assert_eq!(a.tokens.to_vec(), b.tokens.to_vec(), "{at}: tokens differ");
    }
}

/// Subtree walks recorded by one grammar's walker and replayed by another's
/// (`Walker::closure_walk`, shared through the vocabulary's `TrieIndex`) give the classes, with
/// the same ids, that a walker that walks every subtree in full finds.
#[test]
fn closure_walks_shared_between_grammars() {
    let vocab = dwac_vocab::Tokenizer::default_embedded().unwrap().vocab().clone();
    let trie = trie_of(&vocab);
    let index = std::sync::Arc::new(TrieIndex::new(&trie));
    let schemas = [
        serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}, "n": {"type": "integer"}}}),
        serde_json::json!({"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}}}, "required": ["name"]}}),
    ];
    let mut hits = 0;
    for (i, schema) in schemas.iter().enumerate() {
        let sg = dwac_grammar::schema::compile_schema(schema, &Default::default()).unwrap();
        let tables = compile_grammar(&sg.grammar).unwrap().tables;
        let lex = &tables.lexer;
        let mut shared = Walker::with_index(lex, &trie, std::sync::Arc::clone(&index));
        let mut fresh = Walker::new(lex, &trie).without_closure_walks();
        let (mut terms_s, mut terms_f) = (SetPool::new(), SetPool::new());
        for q in boundary_states(lex) {
            let at = format!("schema {i}, state {q}");
            assert_same_classes(&at, shared.classes(q, &mut terms_s), fresh.classes(q, &mut terms_f));
        }
        assert_eq!(fresh.closure_hits, 0);
        if i > 0 {
            hits += shared.closure_hits;
        }
    }
    assert!(hits > 0, "the second grammar replayed no walk of the first");
}

/// Subtrees walked ahead by the assembling thread (`Prewalker`) and replayed by the walker give
/// the classes, with the same ids, that a walker that walks them itself finds. Driven by hand,
/// so that every state's subtrees are prewalked before the walker gets there: strings with
/// `minLength` and `maxLength` counters (the case prewalks are for, a lexer state per counter
/// position, each walked in full) and a plain string.
#[test]
fn prewalked_subtrees_replay_as_walked() {
    let vocab = dwac_vocab::Tokenizer::default_embedded().unwrap().vocab().clone();
    let trie = trie_of(&vocab);
    let index = std::sync::Arc::new(TrieIndex::new(&trie));
    let schema = serde_json::json!({"type": "object", "properties": {
        "id": {"type": "string", "minLength": 6, "maxLength": 16},
        "secret": {"type": "string", "minLength": 9},
        "note": {"type": "string"}
    }, "required": ["id", "secret"]});
    let sg = dwac_grammar::schema::compile_schema(&schema, &Default::default()).unwrap();
    let tables = compile_grammar(&sg.grammar).unwrap().tables;
    let lex = &tables.lexer;
    let horizon = Walker::horizon_for(lex, &index);
    let prewalks = Prewalks::default();
    let mut prewalker = Prewalker::new(lex, &trie, std::sync::Arc::clone(&index), std::sync::Arc::clone(&horizon));
    let mut replaying =
        Walker::with_horizon(lex, &trie, std::sync::Arc::clone(&index), horizon).with_prewalks(&prewalks);
    let mut walking = Walker::new(lex, &trie);
    let (mut terms_r, mut terms_w) = (SetPool::new(), SetPool::new());
    let mut recorded = 0;
    for q in boundary_states(lex) {
        // Everything within the prewalks' window past the state before this one.
        prewalks.at(q.saturating_sub(1));
        while prewalker.one(&prewalks) {
            recorded += 1;
        }
        prewalks.at(q);
        let at = format!("state {q}");
        assert_same_classes(&at, replaying.classes(q, &mut terms_r), walking.classes(q, &mut terms_w));
    }
    assert_eq!(replaying.nodes(), walking.nodes(), "the step-sequence tries differ");
    assert!(prewalks.replayed() > 10, "{} of {recorded} prewalks replayed", prewalks.replayed());
}

/// Does a token of `bytes` fire inhibitor `i` (a longer match appears before the inhibitor is
/// dropped)? Stepped byte by byte.
fn fires(lex: &LexerTables, i: Inhibitor, bytes: &[u8]) -> bool {
    let mut h = vec![i];
    let mut out = Vec::new();
    for &b in bytes {
        match lex.step_inhibitors(&h, b, &mut out) {
            None => return true,
            Some(()) if out.is_empty() => return false,
            Some(()) => h.clone_from(&out),
        }
    }
    false
}

/// `KILL` sets shared between grammars through the vocabulary's cache: for every carried
/// inhibitor of several grammars, compiled one after the other against one trie index, the set
/// is exactly the tokens whose bytes fire it, and the later grammars take sets from the cache.
#[test]
fn kill_sets_shared_between_grammars() {
    let vocab = gpt2();
    let trie = trie_of(&vocab);
    let index = TrieIndex::new(&trie);
    let schemas = [
        serde_json::json!({"type": "object", "properties": {"n": {"type": "integer"}, "x": {"type": "number"}}}),
        serde_json::json!({"type": "array", "items": {"type": "number"}}),
        serde_json::json!({"type": "object", "properties": {"m": {"type": "number"}, "s": {"type": "string"}}}),
    ];
    let mut checked = 0;
    for (gi, schema) in schemas.iter().enumerate() {
        let sg = dwac_grammar::schema::compile_schema(schema, &Default::default()).unwrap();
        let tables = compile_grammar(&sg.grammar).unwrap().tables;
        let lex = &tables.lexer;
        let hits_before = index.kill_cache_hits();
        for inh in carried_inhibitors(lex) {
            let set = kill_set_shared(lex, &trie, &index, inh);
            let want: Vec<u32> = (0..vocab.len() as u32)
                .filter(|&v| !vocab.is_special(v) && fires(lex, inh, vocab.token_bytes(v).unwrap_or_default()))
                .collect();
            assert_eq!(set, want, "schema {gi}: kill set of {inh:?}");
            checked += 1;
        }
        if gi > 0 {
            assert!(index.kill_cache_hits() > hits_before, "schema {gi} took no kill set from the cache");
        }
    }
    assert!(checked >= 6, "{checked}");
}
