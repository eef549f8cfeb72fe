//! Lexer inference, the compiler's half (ARCHITECTURE.md, "Lexer inference"): after
//! [`dwac_grammar::lift`] has made terminals of a character-level grammar's regular parts, each
//! terminal that allows every segmentation ([`Munch::None`]) is lexed by its own longest match
//! ([`Munch::Own`], `K_t = {t}`) wherever that provably changes nothing.
//!
//! **The argument.** `K_t = {t}` removes a split after a lexeme `w` of `t` exactly when `t`
//! matches a strictly longer prefix of `w·r`, `r` the rest of the input. In a sentence, `r` is
//! empty or starts with the lexeme of a terminal that may follow `t` (`FOLLOW(t)` over the
//! normalized grammar, a superset of the adjacencies sentences have), possibly after ignored
//! terminals' lexemes. So if, for every `w ∈ L(t)` and every byte `b` that can begin such a
//! lexeme, no string of `L(t)` starts with `w·b`, longest match never removes a split that any
//! sentence needs: the languages are equal, and so are the masks (the mask is defined by which
//! token sequences stay inside the language). In the union automaton of the lexer, the state
//! `q` reached by `w` holds `t`'s own automaton state after `w`, so "some string of `L(t)`
//! starts with `w·b`" is `t ∈ accepts(δ(q, b)) ∪ Next⁺(δ(q, b))`; the check reads every state
//! accepting `t` and every such `b`.
//!
//! Why it matters: with every segmentation allowed, a token `123` inside a number terminal has
//! the lexings `123`, `1·23`, `12·3`, `1·2·3`, …, which the vocabulary walk cannot tell apart
//! from the grammar's point of view; with longest match it has one.

use dwac_grammar::{Grammar, Munch, Symbol};
use dwac_runtime::tables::{LexerTables, DEAD, MUNCH_OWN};

/// Upgrade the grammar's [`Munch::None`] terminals to [`Munch::Own`] where the argument above
/// holds, in `g` and in `lexer` alike; returns the terminals upgraded. `ng` is the normalized
/// grammar (same terminals as `g`).
pub(crate) fn longest_match_where_exact(lexer: &mut LexerTables, g: &mut Grammar, ng: &Grammar) -> Vec<u32> {
    let nt = g.terminals.len();
    let has = |bits: &[u64], t: usize| bits[t / 64] >> (t % 64) & 1 == 1;
    // The bytes each terminal's lexemes can start with.
    let mut first_bytes = vec![[0u64; 4]; nt];
    for b in 0..=255u8 {
        for q in lexer.successors(lexer.start, b) {
            for &t in lexer.accepts(q) {
                first_bytes[t as usize][b as usize / 64] |= 1 << (b % 64);
            }
            let np = lexer.next_plus(q);
            for (t, fb) in first_bytes.iter_mut().enumerate() {
                if has(np, t) {
                    fb[b as usize / 64] |= 1 << (b % 64);
                }
            }
        }
    }
    let follow = follow_sets(ng);
    let mut ignored_bytes = [0u64; 4];
    for (t, term) in g.terminals.iter().enumerate() {
        if term.ignored {
            (0..4).for_each(|w| ignored_bytes[w] |= first_bytes[t][w]);
        }
    }
    let mut upgraded = Vec::new();
    for (t, fol) in follow.iter().enumerate() {
        if g.terminals[t].munch != Munch::None || g.terminals[t].ignored {
            continue;
        }
        let mut bytes = ignored_bytes;
        for &u in fol {
            (0..4).for_each(|w| bytes[w] |= first_bytes[u as usize][w]);
        }
        let continues = (0..lexer.num_states).filter(|&q| lexer.accepts(q).contains(&(t as u32))).any(|q| {
            (0..=255u8).filter(|&b| bytes[b as usize / 64] >> (b % 64) & 1 == 1).any(|b| {
                let q2 = lexer.step(q, b);
                q2 != DEAD && (lexer.accepts(q2).contains(&(t as u32)) || has(lexer.next_plus(q2), t))
            })
        });
        if !continues {
            g.terminals[t].munch = Munch::Own;
            lexer.munch.to_mut()[t] = MUNCH_OWN;
            upgraded.push(t as u32);
        }
    }
    upgraded
}

/// `FOLLOW(t)` for every terminal `t` of the ε-free grammar `ng`: the terminals that may come
/// right after it in a sentential form (the end of input is not listed: it has no bytes).
fn follow_sets(ng: &Grammar) -> Vec<Vec<u32>> {
    let (nt, nn) = (ng.terminals.len(), ng.nonterminals.len());
    // FIRST of each nonterminal (ε-free: the first symbol decides).
    let mut first = vec![vec![false; nt]; nn];
    let mut changed = true;
    while changed {
        changed = false;
        for r in &ng.rules {
            let Some(&s) = r.rhs.first() else { continue };
            match s {
                Symbol::T(t) => {
                    if !first[r.lhs as usize][t as usize] {
                        first[r.lhs as usize][t as usize] = true;
                        changed = true;
                    }
                }
                Symbol::N(m) if m != r.lhs => {
                    let from = first[m as usize].clone();
                    for (f, &x) in first[r.lhs as usize].iter_mut().zip(&from) {
                        if x && !*f {
                            *f = true;
                            changed = true;
                        }
                    }
                }
                Symbol::N(_) => {}
            }
        }
    }
    let first_of = |s: Symbol, t: usize| match s {
        Symbol::T(u) => u as usize == t,
        Symbol::N(m) => first[m as usize][t],
    };
    // FOLLOW of nonterminals and terminals.
    let mut fol_n = vec![vec![false; nt]; nn];
    let mut fol_t = vec![vec![false; nt]; nt];
    changed = true;
    while changed {
        changed = false;
        for r in &ng.rules {
            for (i, &s) in r.rhs.iter().enumerate() {
                for t in 0..nt {
                    let after = match r.rhs.get(i + 1) {
                        Some(&next) => first_of(next, t),
                        None => fol_n[r.lhs as usize][t],
                    };
                    if !after {
                        continue;
                    }
                    let slot = match s {
                        Symbol::T(u) => &mut fol_t[u as usize][t],
                        Symbol::N(m) => &mut fol_n[m as usize][t],
                    };
                    if !*slot {
                        *slot = true;
                        changed = true;
                    }
                }
            }
        }
    }
    fol_t.into_iter().map(|row| (0..nt as u32).filter(|&t| row[t as usize]).collect()).collect()
}
