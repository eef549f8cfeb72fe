//! Reuse of earlier lexer states' automata: a lexer state's automaton depends only on its
//! thread's class and its classes' lexings (classes referred to by index), so a state with the
//! same lexings takes an earlier state's automaton instead of determinizing again. Its classes
//! are first put in that state's order ([`Assembler::align`]). An automaton built with links
//! (to states assembled with its own tokens) serves only states with those tokens; the others
//! share one built without links.

use std::rc::Rc;

use super::later::{self, Built, Lexings};
use super::{Assembler, Determinizer, FastMap, StateKey, TokenClass, TokenSets, Union};
use crate::dwa::compose::Step;
use crate::dwa::determinize::Assembled;

/// The assembled tables as [`Determinizer::build`] sees them: token sets of the lexer state's
/// classes, and the states already assembled by key.
pub(super) struct Tables<'a> {
    pub(super) union: &'a mut Union,
    pub(super) sets: &'a mut TokenSets,
    pub(super) classes: &'a [TokenClass],
    pub(super) n_tokens: u32,
    pub(super) keys: &'a FastMap<StateKey, u32>,
    pub(super) link: bool,
}

impl Assembled for Tables<'_> {
    fn tokens(&mut self, members: &[u32]) -> u32 {
        self.union.intern(members, self.classes, self.sets, self.n_tokens)
    }

    fn state(&self, key: &StateKey) -> Option<u32> {
        self.keys.get(key).copied()
    }

    fn links(&self) -> bool {
        self.link
    }
}

impl Assembler {
    /// `classes` in the order of the first state with the same thread class and the same set
    /// of lexings. A state's automaton depends only on its thread class and its classes'
    /// lexings, with classes referred to by index ([`later::lexings_key`]); the walk lists
    /// classes by their smallest token, so two states whose classes lex alike but hold other
    /// tokens (the positions of a whitespace counter, where the longer whitespace tokens drop
    /// out one by one) can list them in other orders, and would build the same automaton twice.
    /// A permutation of the classes changes no mask: each class keeps its tokens and lexings.
    pub(super) fn align(&mut self, thread: u32, classes: Vec<TokenClass>) -> Vec<TokenClass> {
        // The classes by their lexings (the walk never gives two classes the same lexings).
        let mut by_lexings: Vec<u32> = (0..classes.len() as u32).collect();
        by_lexings.sort_by(|&a, &b| classes[a as usize].sigs.cmp(&classes[b as usize].sigs));
        let sorted: Lexings = by_lexings.iter().map(|&i| classes[i as usize].sigs.clone()).collect();
        // Per sorted lexings, the first state's position of that class.
        let first = self.orders.entry((thread, sorted)).or_insert_with(|| by_lexings.clone());
        if *first == by_lexings {
            return classes;
        }
        let mut slots: Vec<Option<TokenClass>> = classes.into_iter().map(Some).collect();
        let mut out: Vec<Option<TokenClass>> = (0..slots.len()).map(|_| None).collect();
        for (&at, &from) in first.iter().zip(&by_lexings) {
            out[at as usize] = slots[from as usize].take();
        }
        out.into_iter().flatten().collect()
    }

    /// The automaton of a lexer state with these classes: built within `budget` (work), or an
    /// earlier state's with the same thread class and lexings (`None`: over budget). Classes are
    /// referred to by index.
    pub(super) fn build_or_reuse(
        &mut self,
        det: &mut Determinizer,
        nodes: &[(u32, Step)],
        thread: u32,
        classes: &[TokenClass],
        budget: u64,
    ) -> Option<Built> {
        self.attempt(det, nodes, thread, classes, budget).ok()
    }

    /// [`Assembler::build_or_reuse`], telling what a build over budget cost: `Err` holds its
    /// [`Race`](super::race::Race) ticks (`Composer::ticks`).
    pub(super) fn attempt(
        &mut self,
        det: &mut Determinizer,
        nodes: &[(u32, Step)],
        thread: u32,
        classes: &[TokenClass],
        budget: u64,
    ) -> Result<Built, u64> {
        // A lexer state's automaton depends only on its thread's class and its classes'
        // lexings (classes are referred to by index): states with the same share one.
        let key = later::lexings_key(thread, classes);
        // (An automaton with links was built for its classes' tokens: another state with the
        // same lexings but other tokens builds its own, unless assembly finds it has the
        // same tokens too. That one is built without links, so it serves every later state
        // with these lexings, whatever its tokens: the positions of a whitespace counter.)
        let mut link = self.link;
        // (A build that went over a budget at least this one's would again.)
        let fits = |b: &Result<Built, (u64, u64)>| b.as_ref().map_or_else(|(over, _)| *over >= budget, |_| true);
        let reusable = match self.built_for.get(&key) {
            Some(Ok((local, _, id))) if !local.links.is_empty() => {
                let akey = (*id, classes.iter().map(|c| c.tokens.len()).collect::<Vec<_>>());
                let same_tokens = self.assembled.get(&akey).is_some_and(|variants| {
                    variants.iter().any(|v| v.0.iter().zip(classes.iter()).all(|(t, c)| t.same(&c.tokens)))
                });
                if same_tokens {
                    self.built_for.get(&key)
                } else {
                    link = false;
                    self.unlinked.get(&key).filter(|b| fits(b))
                }
            }
            b => b.filter(|b| fits(b)),
        };
        match reusable {
            Some(b) => {
                self.stats.automata_reused += b.is_ok() as usize;
                b.clone().map_err(|(_, ticks)| ticks)
            }
            None => {
                let mut asm = Tables {
                    union: &mut self.union,
                    sets: &mut self.sets,
                    classes,
                    n_tokens: self.n_tokens,
                    keys: &self.keys,
                    link,
                };
                det.work_budget = budget;
                let b = match det.build(classes, nodes, thread, &mut asm) {
                    Ok(l) => {
                        self.serial += 1;
                        Ok((Rc::new(l), det.num_configs(), self.serial))
                    }
                    Err(_) => Err((budget, det.comp.ticks())),
                };
                if link {
                    self.built_for.insert(key, b.clone());
                } else {
                    self.unlinked.insert(key, b.clone());
                }
                b.map_err(|(_, ticks)| ticks)
            }
        }
    }
}
