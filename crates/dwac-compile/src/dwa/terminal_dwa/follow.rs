//! The follow-byte filter of character-level terminals (docs/CONSTRUCTION.md, "Lexer inference").
//!
//! A terminal that allows every segmentation (`MUNCH_NONE`) may end at each of its accepting
//! states, and the walk forks there: one branch goes on inside the lexeme, the other emits the
//! terminal and starts a fresh lexeme with the next byte. Inside a token such as `123` of a
//! number, that is a lexing per split (`1·23`, `12·3`, `1·2·3`, …), exponentially many, which
//! the walk cannot tell apart without the parser and leaves UNDECIDED past `MAX_LEXINGS`.
//!
//! Right after a lexeme of `t`, the parser acts only on terminals of
//! `FOLLOW(t) = ⋃ { ACTION terminals of q : q entered by shifting t }` (a shift or a reduction
//! on each lookahead: with GLR every action is taken, so any terminal that can come next is
//! there). A fresh lexeme whose first byte begins no terminal of `FOLLOW(t)` (nor an ignored
//! terminal) can therefore never be shifted: `commit` keeps such a branch only until the parser
//! or the viability check drops it, and it adds nothing to any mask. The walk drops it at once.
//! This removes only lexings that contribute no token to any mask, so the Parser DWA's masks
//! are the same with and without the filter; the walk just stops listing the dead splits.
//!
//! The argument holds for any terminal; the compiler uses the filter for the character-level
//! grammars lexer inference ran on (`MaskOptions::follow_bytes`), whose lifted terminals would
//! otherwise split at every accepting state, and builds the tables of other grammars exactly
//! as before.

use dwac_runtime::unstable::{Action, LexerTables, LrTables};

/// Per terminal: the bytes a fresh lexeme may begin with right after a lexeme of it.
pub struct FollowBytes {
    allowed: Vec<[u64; 4]>,
}

impl FollowBytes {
    /// The filter of a grammar.
    pub fn of(lex: &LexerTables, lr: &LrTables) -> FollowBytes {
        let nt = lex.num_terminals as usize;
        let has = |bits: &[u64], t: usize| bits[t / 64] >> (t % 64) & 1 == 1;
        // The bytes each terminal's lexemes can begin with.
        let mut first = vec![[0u64; 4]; nt];
        for b in 0..=255u8 {
            for q in lex.successors(lex.start, b) {
                let np = lex.next_plus(q);
                for (t, f) in first.iter_mut().enumerate() {
                    if has(np, t) || lex.accepts(q).contains(&(t as u32)) {
                        f[b as usize / 64] |= 1 << (b % 64);
                    }
                }
            }
        }
        let mut ignored = [0u64; 4];
        for (t, f) in first.iter().enumerate() {
            if lex.is_ignored(t as u32) {
                (0..4).for_each(|w| ignored[w] |= f[w]);
            }
        }
        // FOLLOW(t) from the LR tables: the terminals acted on in a state entered by shifting t.
        let mut follow_bytes = vec![ignored; nt];
        for p in 0..lr.num_states {
            for &t in lr.action_terminals(p) {
                for &a in lr.actions(p, t) {
                    if let Action::Shift(q) = Action::unpack(a) {
                        for &u in lr.action_terminals(q) {
                            if let (Some(fb), Some(f)) = (follow_bytes.get_mut(t as usize), first.get(u as usize)) {
                                (0..4).for_each(|w| fb[w] |= f[w]);
                            }
                        }
                    }
                }
            }
        }
        FollowBytes { allowed: follow_bytes }
    }

    /// The bytes a fresh lexeme may begin with after a step shifting one of `terms`.
    pub fn after(&self, terms: &[u32]) -> [u64; 4] {
        let mut out = [0u64; 4];
        for &t in terms {
            let a = self.allowed.get(t as usize).copied().unwrap_or([u64::MAX; 4]);
            (0..4).for_each(|w| out[w] |= a[w]);
        }
        out
    }
}
