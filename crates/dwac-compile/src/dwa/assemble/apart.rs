//! The first lexer state with very many token classes, determinized forward on a thread of its
//! own, with a determinizer of its own, while the driving thread goes on with the other states
//! (docs/CONSTRUCTION.md, "The Parser DWA", step 4).
//!
//! A character-level grammar's first lexer state is where nearly every token is its own class:
//! `robotstxt.lark`'s lexer state 0 under qwen3 has 44,448 classes and took 0.67 s of the
//! grammar's 1.05 s, the other 36 states the rest, one after the other on the same thread.
//! Its automaton depends only on its thread's class and its classes' lexings; built with a fresh
//! determinizer it is the same (its memos serve no other state: robots.txt's next states took
//! as long with a fresh determinizer, and the artifact was byte-identical). It is built without
//! links to assembled states (there are none yet when a grammar's first big state comes) and
//! gives none, and is completed in its place among the states that wait (`later.rs`).

use std::sync::Arc;

use super::helper::Helper;
use super::{Assembler, Job};
use crate::dwa::compose::{Composer, Step};
use crate::dwa::determinize::{Assembled, Determinizer, LocalDwa, StateKey};
use crate::dwa::race::Race;
use crate::dwa::templates::Lr;
use crate::threads::carry;

/// A forward build running on its own thread: the automaton and its configurations (`None`:
/// over budget).
pub(super) type Apart = Helper<(LocalDwa, usize)>;

/// Tell a forward build it lost: a saturation "done" in no ticks.
fn forward_loses(race: &Race) {
    race.saturation_done(0);
}

/// What a build apart asks of the tables assembled so far: nothing, since it makes no links.
struct NoLinks;

impl Assembled for NoLinks {
    fn tokens(&mut self, _: &[u32]) -> u32 {
        unreachable!("no keys are made without links")
    }

    fn state(&self, _: &StateKey) -> Option<u32> {
        None
    }

    fn links(&self) -> bool {
        false
    }
}

impl Assembler {
    /// Start the forward build of `job`'s automaton on a thread of its own, within `job.first`
    /// work, if it is the grammar's first lexer state with
    /// [`MaskOptions::apart_classes`](crate::dwa::MaskOptions::apart_classes) classes or more
    /// whose first attempt would not be raced (`at`: where a race would start; by default, at
    /// 20,000 classes it never is: the first attempt gets at most 2,000,000 work, and the race
    /// starts at 100 per class), and a thread can be started. Whether a state is built apart
    /// depends only on the states before it.
    pub(super) fn apart(&mut self, det: &Determinizer, nodes: &[(u32, Step)], job: &Job, at: u64) -> Option<Apart> {
        if self.built_apart || job.classes.len() < self.apart_classes || (self.saturate && job.first > at) {
            return None;
        }
        self.built_apart = true;
        let lr = Arc::new(det.comp.lr.tables.clone());
        let terms = det.comp.terms.clone();
        let (owned, classes, thread) = (nodes.to_vec(), job.classes.clone(), job.thread);
        let (budget, max_states) = (job.first, det.max_states);
        let stop = Arc::new(Race::default());
        let race = Arc::clone(&stop);
        let building = move || {
            let mut comp = Composer::new(Lr::new(&lr));
            comp.terms = terms;
            comp.race = Some(race);
            let mut det = Determinizer::new(comp, max_states);
            det.work_budget = budget;
            let local = det.build(&classes, &owned, thread, &mut NoLinks).ok()?;
            Some((local, det.num_configs()))
        };
        let handle = std::thread::Builder::new().name("dwac-apart".into()).spawn(carry(building)).ok()?;
        self.stats.lexer_states_apart += 1;
        Some(Helper::new(handle, stop, forward_loses))
    }
}
