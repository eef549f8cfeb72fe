//! Streaming maximal munch with inhibitors (ARCHITECTURE.md "The contract"), one byte at a time.

use crate::tables::{LexerTables, DEAD, MUNCH_GLOBAL, MUNCH_NONE, MUNCH_OWN};

/// `K` of an inhibitor: every terminal.
pub const K_ALL: u32 = u32::MAX;

/// An already-emitted lexeme that may not be extended to a match of `K`:
/// `s` is the DFA state reached by continuing it; `k` is [`K_ALL`] or one terminal id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Inhibitor {
    /// The lexer state the inhibitor was carried from.
    pub s: u32,
    /// Its inhibition set: a terminal, or [`K_ALL`].
    pub k: u32,
}

fn bit(set: &[u64], t: u32) -> bool {
    set.get((t / 64) as usize).is_some_and(|w| w >> (t % 64) & 1 == 1)
}

fn any(set: &[u64]) -> bool {
    set.iter().any(|&w| w != 0)
}

impl LexerTables {
    /// Does a lexeme ending in state `s` match some terminal of `K`?
    fn acc_hits(&self, s: u32, k: u32) -> bool {
        let acc = self.accepts(s);
        if k == K_ALL {
            !acc.is_empty()
        } else {
            acc.binary_search(&k).is_ok()
        }
    }

    /// Can continuing from `s` still reach a terminal of `K`?
    fn next_hits(&self, s: u32, k: u32) -> bool {
        let np = self.next_plus(s);
        if k == K_ALL {
            any(np)
        } else {
            bit(np, k)
        }
    }

    /// The inhibitor created by emitting `t` at state `q`, if it can ever fire.
    pub fn inhibitor_for(&self, t: u32, q: u32) -> Option<Inhibitor> {
        let k = match self.munch.get(t as usize).copied().unwrap_or(MUNCH_GLOBAL) {
            MUNCH_GLOBAL => K_ALL,
            MUNCH_OWN => t,
            MUNCH_NONE => return None,
            _ => K_ALL,
        };
        self.next_hits(q, k).then_some(Inhibitor { s: q, k })
    }

    /// Advance carried inhibitors over byte `b`. `None`: a longer match appeared, the branch dies.
    pub fn step_inhibitors(&self, h: &[Inhibitor], b: u8, out: &mut Vec<Inhibitor>) -> Option<()> {
        out.clear();
        for i in h {
            let s = self.step(i.s, b);
            if s == DEAD {
                continue;
            }
            if self.acc_hits(s, i.k) {
                return None;
            }
            if self.next_hits(s, i.k) {
                out.push(Inhibitor { s, k: i.k });
            }
        }
        out.sort_unstable();
        out.dedup();
        Some(())
    }

    /// Is `Next⁺(q)` non-empty?
    pub fn can_continue(&self, q: u32) -> bool {
        any(self.next_plus(q))
    }

    /// Can the partial lexeme at `q` still become an ignored terminal?
    pub fn may_become_ignored(&self, q: u32) -> bool {
        self.next_plus(q).iter().zip(&self.ignored).any(|(a, b)| a & b != 0)
    }

    /// Non-ignored terminals of `Next⁺(q)`.
    pub fn pending_terminals(&self, q: u32) -> impl Iterator<Item = u32> + '_ {
        self.next_plus(q).iter().zip(&self.ignored).enumerate().flat_map(|(wi, (&w, &ig))| {
            let mut w = w & !ig;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros();
                w &= w - 1;
                Some(wi as u32 * 64 + b)
            })
        })
    }
}
