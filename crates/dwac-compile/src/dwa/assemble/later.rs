//! The first forward attempt of a lexer state's automaton, raced against its saturation
//! ([`Race`]), and the states whose race the attempt did not win: completed after every other
//! state, once their saturation is done, so the driving thread goes on with the next states
//! meanwhile.

use std::rc::Rc;
use std::sync::Arc;

use super::apart::Apart;
use super::helper::Helper;
use super::{Assembler, Job, StateCounts};
use crate::dwa::compose::Step;
use crate::dwa::determinize::{Determinizer, LocalDwa};
use crate::dwa::race::Race;
use crate::dwa::saturate::{self, Saturated};
use crate::dwa::terminal_dwa::{Sig, TokenClass};
use crate::dwa::FastMap;
use crate::stages::Stages;
use crate::threads::carry;

/// A built automaton as `Assembler::build_or_reuse` gives it: (automaton, configurations,
/// serial number).
pub(super) type Built = (Rc<LocalDwa>, usize, usize);

/// What a first attempt leaves to do.
pub(super) enum Attempt {
    /// Go on now with this build (`None`: it failed) and, if one ran, the saturation's result
    /// (`Some(None)`: it failed too, no need to run it again).
    Now(Option<Built>, Option<Option<Saturated>>),
    /// The saturation decides, or both fail: the state is completed after the others.
    Later(Saturation),
}

/// The saturation of a state completed later.
pub(super) enum Saturation {
    /// Done: its result.
    Done(Option<Saturated>),
    /// Still running on its thread.
    Running(Running),
    /// The same lexings as an earlier state waiting too: its result, once that one is done.
    Same,
    /// Lexings all among those of the saturation of an earlier state waiting too
    /// (`Assembler::sources`, by index): its result restricted to this state's classes
    /// ([`Saturated::restricted`]), once that one is done.
    Of(usize),
}

/// A saturation running on its own thread.
pub(super) type Running = Helper<Saturated>;

/// Tell a saturation it lost: the forward build is over, in no ticks.
fn saturation_loses(race: &Race) {
    race.forward_done(0);
    race.forward_over();
}

/// What waits to be completed, in the order the states came.
pub(super) enum Pending {
    /// A lexer state's job and its saturation.
    State(Box<Job>, Saturation),
    /// A lexer state sharing the entries of one that waits.
    Shared { q: u32, key: (u64, u32) },
    /// A lexer state's job and its forward build on a thread of its own (`apart.rs`).
    Apart(Box<Job>, Apart),
}

/// Lexings longer than this many lexemes make a state's first attempt worth racing
/// ([`has_long_lexings`]).
pub(super) const RACE_MIN_DEPTH: u32 = super::MIN_CUT_DEPTH;

/// Does some lexing of `classes` have more than [`RACE_MIN_DEPTH`] lexemes? Only then is a long
/// first attempt raced against the saturation ([`Assembler::first_attempt`]). A forward build
/// blows up where one token's lexings run through many lexemes, each a GLR fork (runs of
/// one-character operators under an ambiguous grammar: Lua's races had lexings of 41 to 114
/// lexemes, regex's 42 and 96), and there the saturation decides the state in a fraction of
/// the work. Where every lexing is short, the work of a long first attempt comes from the
/// number of LR states its few lexemes are read against (JSON Schemas, structural tags: every
/// race of JSONSchemaBench's JsonSchemaStore split, of a theme schema with 30,090 LR states,
/// of 100 open tools, had lexings of at most 8 lexemes), a polynomial build the saturation
/// never decided in fewer steps where it mattered: with the race, the 491 JsonSchemaStore
/// schemas (deepseek-r1) took 160 s instead of 104 s, a theme schema 9.9 s and 2.3 GB instead
/// of 2.9 s and 0.37 GB, 100 open tools 4.0 s and 1.7 GB instead of 1.9 s and 0.41 GB (the same
/// tables either way: the forward build was kept, or the saturation's automaton minimized to
/// the same). Same cut as [`super::MIN_CUT_DEPTH`], the length below which a cut keeps every
/// lexing.
pub(super) fn has_long_lexings(nodes: &[(u32, Step)], classes: &[TokenClass]) -> bool {
    let deeper = |mut n: u32| {
        let mut d = 0u32;
        while n != 0 {
            if d >= RACE_MIN_DEPTH {
                return true;
            }
            n = nodes[n as usize].0;
            d += 1;
        }
        false
    };
    classes.iter().any(|c| c.sigs.iter().any(|&(n, _)| deeper(n)))
}

/// The lexings of a state's classes, by index.
pub(super) type Lexings = Vec<Vec<Sig>>;

/// The key of a state's automaton: its thread's class and its classes' lexings (an automaton
/// depends on nothing else; classes are referred to by index).
pub(super) type LexingsKey = (u32, Lexings);

/// The [`LexingsKey`] of a state.
pub(super) fn lexings_key(thread: u32, classes: &[TokenClass]) -> LexingsKey {
    (thread, classes.iter().map(|c| c.sigs.clone()).collect())
}

impl Assembler {
    /// The first forward attempt at a lexer state's automaton, with `first` work. With
    /// saturation on, an attempt still running at [`crate::dwa::MaskOptions::saturate_beside`]
    /// is started again with `first`, in a race ([`Race`]) with the saturation of the classes
    /// saturation expresses, on a thread of its own. The saturation wins if it succeeds in
    /// fewer ticks than the attempt (or the attempt fails). Both counts are functions of the
    /// state and of what was memoized before it, so the winner, and the tables, do not depend
    /// on which thread runs faster.
    ///
    /// Where the attempt wins, the state goes on now. Where it does not (it failed, was
    /// stopped, or lost), the determinizer's memos are forgotten (the attempt may have been
    /// stopped anywhere) and the state waits, [`Attempt::Later`], to be completed after every
    /// other state by [`Assembler::complete_later`], its saturation running meanwhile: the
    /// driving thread goes on with the next states. A state's place in the order never
    /// depends on timing. (A forward build on a few hundred classes can fit its budget with
    /// tens of thousands of DWA states, seconds where the saturation takes a tenth: Lua's lexer
    /// state 0 under phi-3's vocabulary.)
    pub(super) fn first_attempt(
        &mut self,
        det: &mut Determinizer,
        nodes: &[(u32, Step)],
        thread: u32,
        classes: &[TokenClass],
        first: u64,
        at: u64,
    ) -> Attempt {
        if !self.saturate || first <= at {
            return Attempt::Now(self.build_or_reuse(det, nodes, thread, classes, first), None);
        }
        if let Some(i) = self.source_of(nodes, classes) {
            // (Its lexings are all among those of an earlier state whose forward build lost
            // to its saturation, or failed: that saturation decides this state too, restricted
            // to its classes, and no attempt is made. Lua under qwen3: lexer state 1's 414
            // classes are all among state 0's 1,587; its own first attempt failed, and its
            // saturation took 69M ticks.)
            self.stats.saturations_beside += 1;
            self.stats.saturations_shared += 1;
            return Attempt::Later(Saturation::Of(i));
        }
        if !has_long_lexings(nodes, classes) {
            return Attempt::Now(self.build_or_reuse(det, nodes, thread, classes, first), None);
        }
        let spent = match self.attempt(det, nodes, thread, classes, at) {
            Ok(b) => return Attempt::Now(Some(b), None),
            Err(ticks) => ticks,
        };
        let key = lexings_key(thread, classes);
        if self.won.contains_key(&key) || self.later_keys.contains_key(&key) {
            // (The saturation of an earlier state with these lexings won, or will decide.)
            self.stats.saturations_beside += 1;
            return Attempt::Later(Saturation::Same);
        }
        let ours: Vec<TokenClass> = classes.iter().filter(|c| saturate::expressible(nodes, c)).cloned().collect();
        let Some(sub) = saturate::SubTrie::of(&det.comp.terms, nodes, &ours) else {
            // (Nothing saturation could decide: it would find the same.)
            return Attempt::Now(self.build_or_reuse(det, nodes, thread, classes, first), Some(None));
        };
        self.stats.saturations_beside += 1;
        let race = Arc::new(Race::capped(spent));
        let (lr, terms, owned) = (Arc::new(det.comp.lr.tables.clone()), det.comp.terms.clone(), nodes.to_vec());
        let theirs = Arc::clone(&race);
        // (Every class saturated: the long lexings can be apart, the second automaton at the
        // state's second start.)
        let halves = if ours.len() == classes.len() && ours.len() >= saturate::SPLIT_MIN_CLASSES {
            saturate::split(nodes, &ours)
        } else {
            None
        };
        let split = halves.clone().map(|h| (ours.clone(), h));
        let split_decides = split.is_some();
        let saturating = move || {
            let sat = match split {
                Some((cs, h)) => saturate::saturate_split(&lr, &terms, &owned, &cs, h, Some(&theirs)),
                None => saturate::saturate_sub(&lr, &terms, &owned, sub, Some(&theirs)),
            };
            if let Some(s) = &sat {
                theirs.saturation_done(s.ticks);
            }
            sat
        };
        // (With the caller's context: the CLI charges its allocations to the input's memory
        // budget.)
        let side = std::thread::Builder::new().name("dwac-saturate".into()).spawn(carry(saturating));
        let (built, saturation) = match side {
            Ok(handle) => {
                det.comp.race = Some(Arc::clone(&race));
                let built = self.build_or_reuse(det, nodes, thread, classes, first);
                det.comp.race = None;
                if built.is_some() {
                    // (A split saturation decides only where the forward build fails: told it
                    // lost at once, it stops now rather than once past this build's ticks.)
                    race.forward_done(if split_decides { 0 } else { det.comp.ticks() });
                }
                race.forward_over();
                let running = Running::new(handle, Arc::clone(&race), saturation_loses);
                match &built {
                    Some(_) => (built, Saturation::Done(running.join())),
                    None => (None, Saturation::Running(running)),
                }
            }
            // (No second thread: both to their ends, one after the other.)
            Err(_) => {
                let built = self.build_or_reuse(det, nodes, thread, classes, first);
                (built, Saturation::Done(saturate_alone(det, nodes, &ours, halves)))
            }
        };
        if let (Some(_), Saturation::Done(sat)) = (&built, &saturation) {
            if !Race::saturation_wins(Some(det.comp.ticks()), sat.as_ref().map(|s| s.ticks)) {
                return Attempt::Now(built, None);
            }
        }
        // The attempt did not win: stopped at some point, finished, or failed, it leaves
        // nothing behind, so what comes next does not depend on where it was.
        self.built_for.remove(&key);
        self.unlinked.remove(&key);
        det.forget();
        self.sources.push((key.clone(), ours.iter().map(|c| c.sigs.clone()).collect()));
        self.later_keys.insert(key, ());
        Attempt::Later(saturation)
    }

    /// The earlier saturation that decides a state with these classes, if one does: every
    /// class expressed (so that the automata are the state's own starts), and its lexings
    /// among those the saturation was made for ([`Saturated::restricted`]).
    fn source_of(&self, nodes: &[(u32, Step)], classes: &[TokenClass]) -> Option<usize> {
        if self.sources.is_empty() || !classes.iter().all(|c| saturate::expressible(nodes, c)) {
            return None;
        }
        self.sources.iter().position(|(_, made_for)| {
            let have: FastMap<&[Sig], ()> = made_for.iter().map(|s| (&s[..], ())).collect();
            classes.iter().all(|c| have.contains_key(&c.sigs[..]))
        })
    }

    /// A waiting job, its statistics as they are now: what the state added when it came is
    /// its own, not the states' between.
    fn resumed(&self, mut job: Job) -> Job {
        let mut before = StateCounts::of(&self.stats);
        before.undecided_tokens -= job.own.0;
        before.token_classes -= job.own.1;
        job.before = before;
        job
    }

    /// Complete the states that wait ([`Attempt::Later`], and a state built apart:
    /// `apart.rs`), in the order they came, each once its saturation (or build) is done.
    pub(in crate::dwa) fn complete_later(
        &mut self,
        det: &mut Determinizer,
        nodes: &[(u32, Step)],
        stages: &mut Stages,
    ) {
        for p in std::mem::take(&mut self.later) {
            match p {
                Pending::Shared { q, key } => self.shared_now(q, key),
                Pending::State(job, saturation) => {
                    let key = lexings_key(job.thread, &job.classes);
                    let sat = match saturation {
                        Saturation::Done(sat) => sat,
                        Saturation::Running(running) => running.join(),
                        Saturation::Same => self.won.get(&key).cloned(),
                        Saturation::Of(i) => {
                            let (source, made_for) = &self.sources[i];
                            self.won.get(source).map(|s| s.restricted(made_for, &job.classes))
                        }
                    };
                    if let Some(s) = &sat {
                        self.stats.saturations_won += 1;
                        self.won.entry(key).or_insert_with(|| s.clone());
                    }
                    stages.skip();
                    let job = self.resumed(*job);
                    self.finish_state(det, nodes, job, None, Some(sat), stages);
                }
                Pending::Apart(job, apart) => {
                    let built = apart.join().map(|(local, configs)| {
                        self.serial += 1;
                        (Rc::new(local), configs, self.serial)
                    });
                    stages.skip();
                    let job = self.resumed(*job);
                    self.finish_state(det, nodes, job, built, None, stages);
                }
            }
        }
        self.later_keys.clear();
        self.later_shares.clear();
        self.sources.clear();
    }
}

/// The saturation of `classes` on the driving thread (no second one could be started): split
/// into `halves` if given ([`saturate::split`]).
fn saturate_alone(
    det: &Determinizer,
    nodes: &[(u32, Step)],
    classes: &[TokenClass],
    halves: Option<(Vec<usize>, Vec<usize>)>,
) -> Option<Saturated> {
    let (lr, terms) = (det.comp.lr.tables, &det.comp.terms);
    match halves {
        Some(h) => saturate::saturate_split(lr, terms, nodes, classes, h, None),
        None => saturate::saturate(lr, terms, nodes, classes),
    }
}
