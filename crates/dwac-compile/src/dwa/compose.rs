//! Composition (ALGORITHM.md §3): what one lexing of one token does to a stack.
//!
//! A lexing of a token from a lexer state is a sequence of [`Step`]s, each a terminal to shift
//! (or a guarded ignored terminal), followed by a lookahead check: the pending partial lexeme
//! must still be able to become a terminal that can be shifted (DESIGN.md §2, one-lexeme
//! lookahead). A [`Config`] is one such lexing part-way through, on one stack read top-down: the
//! steps still to do, the lookahead class, and the simulations in flight ([`Phase`]). Each step
//! runs its terminal's template ([`templates`](super::templates)) on the known segment the previous
//! step left, so pushes of one terminal are consumed by the pops of the next before anything of
//! the real stack is read: the push/pop cancellation of ALGORITHM.md §3.
//!
//! **Priorities** (DESIGN.md §2) are per stack: a step `shift t` carries a *guard*, the
//! higher-priority terminals that matched the same lexeme. On a stack where a guard terminal can be
//! shifted, the step (and the whole lexing) dies. A guard can need deeper reads than the step
//! itself; its outcomes then wait in `done` and absorb each real state read meanwhile, which is why
//! such a configuration needs every label explicit ([`Labels::All`]).

use std::collections::HashMap;

use super::sets::SetPool;
use super::templates::{Lr, Outcome, Read, Wait};

/// One terminal of a lexing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Step {
    /// Shift `t`, unless a terminal of the guard set (ids in [`Composer::terms`]) can be shifted.
    Shift { t: u32, guard: u32 },
    /// An ignored terminal, used only where no terminal of the (non-empty) guard set can be shifted.
    Pass { guard: u32 },
}

/// Interned step sequences as (first step, rest) lists; id 0 is the empty sequence.
#[derive(Default)]
pub struct Steps {
    seqs: Vec<(Step, u32)>,
    index: HashMap<(Step, u32), u32>,
}

impl Steps {
    pub fn new() -> Steps {
        Steps { seqs: vec![(Step::Pass { guard: 0 }, 0)], index: HashMap::new() }
    }

    pub fn cons(&mut self, step: Step, rest: u32) -> u32 {
        if let Some(&id) = self.index.get(&(step, rest)) {
            return id;
        }
        let id = self.seqs.len() as u32;
        self.seqs.push((step, rest));
        self.index.insert((step, rest), id);
        id
    }

    /// The sequence of `steps` (in order).
    pub fn of(&mut self, steps: &[Step]) -> u32 {
        steps.iter().rev().fold(0, |rest, &s| self.cons(s, rest))
    }

    pub fn get(&self, id: u32) -> Option<(Step, u32)> {
        (id != 0).then(|| self.seqs[id as usize])
    }

    /// The steps of sequence `id`, in order.
    pub fn to_vec(&self, mut id: u32) -> Vec<Step> {
        let mut v = Vec::new();
        while let Some((s, rest)) = self.get(id) {
            v.push(s);
            id = rest;
        }
        v
    }
}

/// The lookahead class of a lexing's end: any terminal may come ([`ANY`]: the pending lexeme is
/// empty or can become an ignored terminal), or one of a set of terminals must be shiftable.
pub const ANY: u32 = u32::MAX;

/// The `term` of a [`Phase::Step`] for a guarded ignored terminal.
pub const NO_TERM: u32 = u32::MAX;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// Doing a step: `main` are the waiting simulations of `term`, `done` its shifted stacks held
    /// while the `guard` simulations (terminal, wait) are undecided.
    Step { term: u32, main: Vec<Wait>, done: Vec<Vec<u32>>, guard: Vec<(u32, Wait)> },
    /// The lookahead check: some terminal of the class can be shifted; (terminal, wait) pairs.
    Look { sims: Vec<(u32, Wait)> },
}

/// One lexing, part-way through, on one stack: every simulation in it waits for the next real
/// state of that stack.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Config {
    /// Steps still to do after the current one.
    pub rest: u32,
    /// Lookahead class ([`ANY`] or a terminal set id).
    pub class: u32,
    pub phase: Phase,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Settled {
    /// The lexing is possible on this stack: the token is allowed.
    Accept,
    Config(Config),
}

/// Which real states a configuration tells apart.
pub enum Labels {
    /// Every state (held outcomes absorb the state read).
    All,
    /// These states; any other has the DEFAULT effect.
    Some(Vec<u32>),
}

/// Runs lexings on stacks: the LR tables, the step sequences and the terminal sets.
pub struct Composer<'a> {
    pub lr: Lr<'a>,
    pub steps: Steps,
    pub terms: SetPool,
}

fn canon<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort_unstable();
    v.dedup();
    v
}

impl Composer<'_> {
    /// Start the lexing `seq` with lookahead `class` on the known segment `k`.
    pub fn start(&mut self, seq: u32, class: u32, k: Vec<u32>, out: &mut Vec<Settled>) {
        let Some((step, rest)) = self.steps.get(seq) else {
            return self.start_look(class, k, out);
        };
        let guard_set = match step {
            Step::Shift { guard, .. } | Step::Pass { guard } => guard,
        };
        let mut guard = Vec::new();
        for &g in self.terms.get(guard_set).to_vec().iter() {
            let mut o = Outcome::default();
            self.lr.run(g, k.clone(), &mut o);
            if o.success {
                return; // a higher-priority terminal can be shifted on this stack
            }
            guard.extend(o.waiting.into_iter().map(|w| (g, w)));
        }
        let (term, main, done) = match step {
            Step::Shift { t, .. } => {
                let mut o = Outcome::default();
                self.lr.run(t, k, &mut o);
                (t, o.waiting, o.shifted)
            }
            Step::Pass { .. } => (NO_TERM, Vec::new(), vec![k]),
        };
        self.settle_step(rest, class, term, main, done, guard, out);
    }

    fn start_look(&mut self, class: u32, k: Vec<u32>, out: &mut Vec<Settled>) {
        if class == ANY {
            out.push(Settled::Accept);
            return;
        }
        let mut sims = Vec::new();
        for &t in self.terms.get(class).to_vec().iter() {
            let mut o = Outcome::default();
            self.lr.run(t, k.clone(), &mut o);
            if o.success {
                out.push(Settled::Accept);
                return;
            }
            sims.extend(o.waiting.into_iter().map(|w| (t, w)));
        }
        if !sims.is_empty() {
            out.push(Settled::Config(Config { rest: 0, class, phase: Phase::Look { sims: canon(sims) } }));
        }
    }

    /// After a step's simulations have run as far as they can without reading.
    #[allow(clippy::too_many_arguments)]
    fn settle_step(
        &mut self,
        rest: u32,
        class: u32,
        term: u32,
        main: Vec<Wait>,
        done: Vec<Vec<u32>>,
        guard: Vec<(u32, Wait)>,
        out: &mut Vec<Settled>,
    ) {
        if guard.is_empty() {
            for k in done {
                self.start(rest, class, k, out);
            }
            if !main.is_empty() {
                let phase = Phase::Step { term, main: canon(main), done: Vec::new(), guard: Vec::new() };
                out.push(Settled::Config(Config { rest, class, phase }));
            }
        } else if !(main.is_empty() && done.is_empty()) {
            let phase = Phase::Step { term, main: canon(main), done: canon(done), guard: canon(guard) };
            out.push(Settled::Config(Config { rest, class, phase }));
        }
    }

    /// Read the next real state of the stack (`None`: a state none of `labels(c)` names).
    pub fn read(&mut self, c: &Config, label: Option<u32>, out: &mut Vec<Settled>) {
        match &c.phase {
            Phase::Step { term, main, done, guard } => {
                let mut new_guard = Vec::new();
                for &(g, w) in guard {
                    match self.lr.read(w, label) {
                        Read::Wait(w2) => new_guard.push((g, w2)),
                        Read::Run(k) => {
                            let mut o = Outcome::default();
                            self.lr.run(g, k, &mut o);
                            if o.success {
                                return;
                            }
                            new_guard.extend(o.waiting.into_iter().map(|w| (g, w)));
                        }
                        Read::Dead => {}
                    }
                }
                // Held outcomes keep the state just read below their known segment.
                let mut new_done = Vec::new();
                if !done.is_empty() {
                    let Some(p) = label else { return };
                    for k in done {
                        let mut k2 = Vec::with_capacity(k.len() + 1);
                        k2.push(p);
                        k2.extend_from_slice(k);
                        new_done.push(k2);
                    }
                }
                let mut new_main = Vec::new();
                for &w in main {
                    match self.lr.read(w, label) {
                        Read::Wait(w2) => new_main.push(w2),
                        Read::Run(k) => {
                            let mut o = Outcome::default();
                            self.lr.run(*term, k, &mut o);
                            new_main.extend(o.waiting);
                            new_done.extend(o.shifted);
                        }
                        Read::Dead => {}
                    }
                }
                self.settle_step(c.rest, c.class, *term, new_main, new_done, new_guard, out);
            }
            Phase::Look { sims } => {
                let mut new_sims = Vec::new();
                for &(t, w) in sims {
                    match self.lr.read(w, label) {
                        Read::Wait(w2) => new_sims.push((t, w2)),
                        Read::Run(k) => {
                            let mut o = Outcome::default();
                            self.lr.run(t, k, &mut o);
                            if o.success {
                                out.push(Settled::Accept);
                                return;
                            }
                            new_sims.extend(o.waiting.into_iter().map(|w| (t, w)));
                        }
                        Read::Dead => {}
                    }
                }
                if !new_sims.is_empty() {
                    let phase = Phase::Look { sims: canon(new_sims) };
                    out.push(Settled::Config(Config { rest: 0, class: c.class, phase }));
                }
            }
        }
    }

    /// The real states `c` tells apart.
    pub fn labels(&mut self, c: &Config) -> Labels {
        let mut v: Vec<u32> = Vec::new();
        match &c.phase {
            Phase::Step { term, main, done, guard } => {
                if !done.is_empty() {
                    return Labels::All;
                }
                for &w in main {
                    v.extend_from_slice(self.lr.labels(*term, w));
                }
                for &(g, w) in guard {
                    v.extend_from_slice(self.lr.labels(g, w));
                }
            }
            Phase::Look { sims } => {
                for &(t, w) in sims {
                    v.extend_from_slice(self.lr.labels(t, w));
                }
            }
        }
        Labels::Some(canon(v))
    }
}
