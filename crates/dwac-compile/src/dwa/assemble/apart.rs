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
//!
//! Its classes are built in two halves at once, each with a determinizer of its own on a
//! thread of its own, and the two automata joined into one ([`joined`]: their product). A
//! class's output depends only on its own lexings, so the product decides what one build
//! would, and minimization makes the tables the same. robots.txt's state 0 under qwen3: the
//! halves took 285 and 368 ms one after the other, 656 ms built whole; the grammar compiles
//! in about 0.72 s instead of 0.88 (same bytes).

use std::sync::Arc;

use super::helper::Helper;
use super::{Assembler, Job};
use crate::dwa::compose::{Composer, Step};
use crate::dwa::determinize::{Assembled, DState, Determinizer, LocalDwa, StateKey};
use crate::dwa::race::Race;
use crate::dwa::set_pool::SetPool;
use crate::dwa::templates::Lr;
use crate::dwa::terminal_dwa::TokenClass;
use crate::dwa::FastMap;
use crate::threads::carry;
use dwac_runtime::unstable::DEAD;

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
            let half = |cs: &[TokenClass]| -> Option<(LocalDwa, usize)> {
                let mut comp = Composer::new(Lr::new(&lr));
                comp.terms = terms.clone();
                comp.race = Some(Arc::clone(&race));
                let mut det = Determinizer::new(comp, max_states);
                det.work_budget = budget;
                let local = det.build(cs, &owned, thread, &mut NoLinks).ok()?;
                Some((local, det.num_configs()))
            };
            if classes.len() < 2 {
                return half(&classes);
            }
            // (Two halves at once, the second on one more thread; in turn if it cannot start.)
            let (a, b) = classes.split_at(classes.len() / 2);
            let (built_a, built_b) = std::thread::scope(|scope| {
                let side =
                    std::thread::Builder::new().name("dwac-apart".into()).spawn_scoped(scope, carry(|| half(b))).ok();
                let built_a = half(a);
                let built_b = match side {
                    Some(h) => h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)),
                    None => half(b),
                };
                (built_a, built_b)
            });
            let ((la, ca), (lb, cb)) = (built_a?, built_b?);
            Some((joined(&la, &lb, a.len() as u32), ca + cb))
        };
        let handle = std::thread::Builder::new().name("dwac-apart".into()).spawn(carry(building)).ok()?;
        self.stats.lexer_states_apart += 1;
        Some(Helper::new(handle, stop, forward_loses))
    }
}

/// One automaton deciding the classes of both `a` and `b`, which are built for two halves of a
/// state's classes (`b`'s numbered after `a`'s `n_a`): their product, each pair of states
/// reading a label as both do (a side at `DEAD` reads nothing more), its outputs the union of
/// both sides' (`b`'s renumbered), `DEAD` where both sides are. A class's output depends only on
/// its own lexings, so this is what one build of all the classes decides; minimization makes
/// the tables the same (robots.txt, byte for byte). No keys: a build apart makes none.
fn joined(a: &LocalDwa, b: &LocalDwa, n_a: u32) -> LocalDwa {
    let mut sets = SetPool::new();
    let mut outputs: FastMap<(u32, u32), u32> = FastMap::default();
    let mut output = |ra: u32, rb: u32, sets: &mut SetPool| -> u32 {
        if ra == 0 && rb == 0 {
            return 0;
        }
        *outputs.entry((ra, rb)).or_insert_with(|| {
            let mut v = a.sets.get(ra).to_vec();
            v.extend(b.sets.get(rb).iter().map(|&k| k + n_a));
            sets.intern(v)
        })
    };
    // (A side's move on `label` from its state `d`: its edge, or its DEFAULT.)
    let step = |dwa: &LocalDwa, d: u32, label: Option<u32>| -> (u32, u32) {
        if d == DEAD {
            return (DEAD, 0);
        }
        let st = &dwa.states[d as usize];
        label
            .and_then(|l| st.edges.binary_search_by_key(&l, |e| e.0).ok())
            .map_or(st.default, |i| (st.edges[i].1, st.edges[i].2))
    };
    let mut ids: FastMap<(u32, u32), u32> = FastMap::default();
    let mut todo: Vec<(u32, u32)> = Vec::new();
    let mut id = |pair: (u32, u32), todo: &mut Vec<(u32, u32)>| -> u32 {
        if pair == (DEAD, DEAD) {
            return DEAD;
        }
        let next = ids.len() as u32;
        *ids.entry(pair).or_insert_with(|| {
            todo.push(pair);
            next
        })
    };
    let start = id((a.start, b.start), &mut todo);
    let start_rho = output(a.start_rho, b.start_rho, &mut sets);
    let mut states = Vec::new();
    let mut done = 0;
    while done < todo.len() {
        let (da, db) = todo[done];
        done += 1;
        let mut labels: Vec<u32> = Vec::new();
        for (dwa, d) in [(a, da), (b, db)] {
            if d != DEAD {
                labels.extend(dwa.states[d as usize].edges.iter().map(|e| e.0));
            }
        }
        labels.sort_unstable();
        labels.dedup();
        let mut on = |label: Option<u32>, todo: &mut Vec<(u32, u32)>| -> (u32, u32) {
            let ((ta, ra), (tb, rb)) = (step(a, da, label), step(b, db, label));
            (id((ta, tb), todo), output(ra, rb, &mut sets))
        };
        let default = on(None, &mut todo);
        let edges = labels
            .into_iter()
            .filter_map(|l| {
                let (t, r) = on(Some(l), &mut todo);
                ((t, r) != default).then_some((l, t, r))
            })
            .collect();
        states.push(DState { edges, default });
    }
    let keys = vec![None; states.len()];
    LocalDwa { start, start_rho, states, sets, links: FastMap::default(), keys }
}
