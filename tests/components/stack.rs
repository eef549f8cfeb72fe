//! Templates vs LR simulation; determinized vs non-deterministic.

use super::*;

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
                want.extend(vocab.eos().iter().copied());
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
