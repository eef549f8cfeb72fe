//! Lexer states alike up to their lexeme's terminal share one walk.
//!
//! A schema's length-bounded strings are each a terminal and a lexer component of their own,
//! and near its bound every position of each is a state the walk must visit in full (the
//! states of one string cannot share with each other there, [`Horizon`]). Yet two such strings
//! read the same bytes the same way: their states differ only in the terminal the pending
//! lexeme becomes. [`Horizon::renaming`] finds the states that are equivalent up to that
//! terminal (`x ≡ y` at the trie's height, with sole terminals `s` and `t`, and no inhibitor
//! within that height), and the walk of `x` gives `y`'s classes once `s` is renamed `t` where
//! it names the pending lexeme:
//! * in the first step of every lexing (the lexeme pending at `x` ending: a shift of `s`, with
//!   its guard set), and
//! * in the lookahead class of the lexings that end before that lexeme does (the pending
//!   terminals of a state inside it).
//!
//! Every later step starts from the start state, which neither `x` nor `y` owns, and is the same
//! for both. The tokens of each class and the UNDECIDED tokens are the same. A set that already
//! names `t` (which a walk from `x` could only do after its first lexeme) is not renamed: the
//! state is walked instead.

use super::{FastMap, Horizon, SetPool, Step, TokenClass, Walker, ANY};
use std::sync::Arc;

impl<'a> Walker<'a> {
    /// Compare lexer states up to their lexeme's terminal ([`Walker::renaming_key`]).
    pub fn with_renaming(mut self, renaming: Arc<Horizon>) -> Self {
        self.renaming = Some(renaming);
        self
    }

    /// `q`'s block of equivalence up to its lexeme's terminal, at the trie's height, and that
    /// terminal: states with the same block have the same classes once their terminals are
    /// renamed ([`Walker::renamed`]). `None`: not a state with a sole terminal, an inhibitor
    /// within that height, or the follow-byte filter on (it reads what the parser allows after
    /// the terminal shifted).
    pub fn renaming_key(&self, q: u32) -> Option<(u64, u32)> {
        let renaming = self.renaming.as_ref()?;
        if self.follow.is_some() {
            return None;
        }
        let t = super::super::horizon::sole_terminal(self.lex, q)?;
        let h = self.index.height[0];
        let block = renaming.block_at(q, h).filter(|_| renaming.inhibitor_free(q, h))?;
        Some((block as u64, t))
    }

    /// The classes of a state with sole terminal `to`, from those of a state of the same
    /// renaming block whose sole terminal is `from` (see the module's docs); `None` where a
    /// set to rename already names `to`.
    pub fn renamed(
        &mut self,
        classes: &[TokenClass],
        from: u32,
        to: u32,
        terms: &mut SetPool,
    ) -> Option<Vec<TokenClass>> {
        let mut nodes: FastMap<u32, u32> = FastMap::from_iter([(0, 0)]);
        let mut sets: FastMap<u32, u32> = FastMap::default();
        let mut rename_set = |id: u32, terms: &mut SetPool| -> Option<u32> {
            if id == ANY {
                return Some(ANY);
            }
            if let Some(&r) = sets.get(&id) {
                return Some(r);
            }
            let members = terms.get(id);
            if members.contains(&to) {
                return None;
            }
            let r = if members.contains(&from) {
                terms.intern(members.iter().map(|&m| if m == from { to } else { m }).collect())
            } else {
                id
            };
            sets.insert(id, r);
            Some(r)
        };
        let mut out = Vec::with_capacity(classes.len());
        let mut path: Vec<Step> = Vec::new();
        for c in classes {
            let mut sigs = Vec::with_capacity(c.sigs.len());
            for &(n, la) in &c.sigs {
                let n2 = match nodes.get(&n) {
                    Some(&m) => m,
                    None => {
                        // The steps from the root, the first (the pending lexeme's) renamed.
                        path.clear();
                        let mut m = n;
                        while m != 0 {
                            let (parent, step) = self.prefixes[m as usize];
                            path.push(step);
                            m = parent;
                        }
                        let first = match path.pop()? {
                            Step::Shift { terms: t, guard } => {
                                Step::Shift { terms: rename_set(t, terms)?, guard: rename_set(guard, terms)? }
                            }
                            Step::Pass { .. } => return None,
                        };
                        let mut m = self.extend(0, first);
                        while let Some(step) = path.pop() {
                            m = self.extend(m, step);
                        }
                        nodes.insert(n, m);
                        m
                    }
                };
                let la2 = if n == 0 { rename_set(la, terms)? } else { la };
                sigs.push((n2, la2));
            }
            sigs.sort_unstable();
            sigs.dedup();
            out.push(TokenClass { sigs, tokens: c.tokens.clone() });
        }
        Some(out)
    }
}
