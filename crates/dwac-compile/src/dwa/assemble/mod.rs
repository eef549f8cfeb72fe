//! Assembly: each lexer state's determinized automaton ([`LocalDwa`]) appended to the flat
//! [`MaskTables`], its class outputs expanded into interned token sets; states with the same
//! automaton and the same tokens share entries, and so do the states of one block of
//! bounded-horizon equivalence. Then the `KILL` sets, minimization across lexer states and
//! the compaction of token sets.

use std::time::{Duration, Instant};

use dwac_runtime::unstable::Inhibitor;
use dwac_runtime::unstable::DEAD;
use dwac_runtime::unstable::{DwaWriter, MaskTables, NONE};

use super::compose::Step;
use super::determinize::{Determinizer, LocalDwa, StateKey};
use super::minimize;
use super::saturate;
use super::terminal_dwa::{TokenClass, Tokens};
use super::token_sets::{TokenSets, Union};
use super::{FastMap, MaskOptions, MaskStats};
use crate::stages::Stages;
use later::{Attempt, Built, Lexings, LexingsKey, Pending};

mod apart;
mod helper;
mod later;
mod reuse;

/// The shortest lexing length an over-budget lexer state is cut at (`Assembler::state`): below
/// it, the state's tokens are all left UNDECIDED, as they were.
const MIN_CUT_DEPTH: u32 = 8;

/// With saturation on, a lexer state's forward build first gets at most this share of the work
/// budget (1/2), and within that [`FIRST_ATTEMPT_BASE`] plus [`FIRST_ATTEMPT_PER_CLASS`] per token
/// class: a build that fits the budget spends work in proportion to its classes (every build of
/// the test corpora that fits takes at most 2,430 per class when it takes over 100,000: Lua's
/// lexer state of 68 classes; robots.txt's 44,448 classes take 39 each), while an exponential
/// blow-up such as Lua's operator runs (over 1,260 and 4,800 per class when it stops) fails at
/// a fraction of the budget before saturation decides it. The share is a function of the state
/// alone, so the automaton is too.
const FIRST_ATTEMPT_SHARE: u64 = 2;

/// Work every lexer state's first forward attempt may take (see [`FIRST_ATTEMPT_SHARE`]).
const FIRST_ATTEMPT_BASE: u64 = 250_000;

/// Work a first forward attempt may take per token class, past [`FIRST_ATTEMPT_BASE`].
const FIRST_ATTEMPT_PER_CLASS: u64 = 300;

/// The longest lexing length an over-budget lexer state is first cut at.
const MAX_CUT_DEPTH: u32 = 32;

/// A lexer state being assembled: its message from the walking thread, taken apart, and what
/// [`Assembler::state`] made of it before its first attempt.
struct Job {
    q: u32,
    thread: u32,
    share_key: Option<(u64, u32)>,
    classes: Vec<TokenClass>,
    /// The work of its first forward attempt.
    first: u64,
    /// The statistics before it (for the counts of the states that share its entries).
    before: StateCounts,
    /// What it added to them on coming: its UNDECIDED tokens and its classes.
    own: (usize, usize),
    /// How long its walk took, and when its message came.
    timing: (Duration, Instant),
}

/// What one lexer state adds to the statistics.
#[derive(Clone, Copy)]
struct StateCounts {
    lexer_states_with_dwa: usize,
    token_classes: usize,
    configurations: usize,
    undecided_tokens: usize,
    lexer_states_over_budget: usize,
    lexer_states_cut: usize,
}

impl StateCounts {
    fn of(s: &MaskStats) -> StateCounts {
        StateCounts {
            lexer_states_with_dwa: s.lexer_states_with_dwa,
            token_classes: s.token_classes,
            configurations: s.configurations,
            undecided_tokens: s.undecided_tokens,
            lexer_states_over_budget: s.lexer_states_over_budget,
            lexer_states_cut: s.lexer_states_cut,
        }
    }

    /// The counts added since `self` was taken of `s`.
    fn since(&self, s: &MaskStats) -> StateCounts {
        let now = StateCounts::of(s);
        StateCounts {
            lexer_states_with_dwa: now.lexer_states_with_dwa - self.lexer_states_with_dwa,
            token_classes: now.token_classes - self.token_classes,
            configurations: now.configurations - self.configurations,
            undecided_tokens: now.undecided_tokens - self.undecided_tokens,
            lexer_states_over_budget: now.lexer_states_over_budget - self.lexer_states_over_budget,
            lexer_states_cut: now.lexer_states_cut - self.lexer_states_cut,
        }
    }

    fn add_to(&self, s: &mut MaskStats) {
        s.lexer_states_with_dwa += self.lexer_states_with_dwa;
        s.token_classes += self.token_classes;
        s.configurations += self.configurations;
        s.undecided_tokens += self.undecided_tokens;
        s.lexer_states_over_budget += self.lexer_states_over_budget;
        s.lexer_states_cut += self.lexer_states_cut;
    }
}

/// A lexer state's entries in the mask tables, for the states that share them.
struct Shared {
    start: u32,
    start_rho: u32,
    undecided: u32,
    aux_start: u32,
    counts: StateCounts,
}

impl Shared {
    fn of(out: &MaskTables, q: u32, counts: StateCounts) -> Shared {
        let q = q as usize;
        let aux_start = out.aux_start.get(q).copied().unwrap_or(NONE);
        Shared { start: out.start[q], start_rho: out.start_rho[q], undecided: out.undecided[q], aux_start, counts }
    }
}

/// The mask tables as they are assembled, lexer state by lexer state in state order, and what
/// lets later states reuse the work of earlier ones.
pub(super) struct Assembler {
    pub(super) out: MaskTables,
    /// Appends the assembled states to `out`.
    writer: DwaWriter,
    pub(super) stats: MaskStats,
    sets: TokenSets,
    union: Union,
    n_tokens: u32,
    /// [`MaskOptions::link_states`].
    link: bool,
    /// [`MaskOptions::max_dwa_states`].
    max_dwa_states: usize,
    /// [`MaskOptions::saturate`].
    saturate: bool,
    /// [`MaskOptions::saturate_beside`].
    saturate_beside: (u64, u64),
    /// [`MaskOptions::work_per_lexer_state`].
    work_per_lexer_state: u64,
    /// The automaton built for (thread class, the classes' lexings), with its configurations and
    /// serial number; `Err((budget, ticks))`: over that work budget, after that many
    /// [`Race`](super::race::Race) ticks.
    built_for: FastMap<LexingsKey, Result<Built, (u64, u64)>>,
    /// A state was built apart ([`Assembler::apart`]): only the first may be.
    built_apart: bool,
    /// [`MaskOptions::apart_classes`].
    apart_classes: usize,
    /// Local automata are told apart by a serial number, never by address: an automaton
    /// replaced in `built_for` is freed, and a later one may get its address, which would then
    /// find the freed one's entries in `assembled`.
    serial: usize,
    /// The saturations that won their race ([`Assembler::first_attempt`]), by the same key as
    /// `built_for`: a later state with the same lexings takes the same automaton.
    won: FastMap<LexingsKey, saturate::Saturated>,
    /// The states that wait to be completed, in order ([`later::Pending`]), their lexings, and
    /// their share keys (a state sharing one waits too).
    later: Vec<Pending>,
    later_keys: FastMap<LexingsKey, ()>,
    /// The saturations started for the states that wait, in order: each state's key and the
    /// lexings of the classes it saturates, by index ([`later::Saturation::Of`]).
    sources: Vec<(LexingsKey, Lexings)>,
    later_shares: FastMap<(u64, u32), ()>,
    /// Entries of the first state of each (block, thread class), for the states that share them.
    shared: FastMap<(u64, u32), Shared>,
    /// Assembled states by their key (`determinize::StateKey`): a lexer state's automaton links
    /// to these instead of building them again.
    keys: FastMap<StateKey, u32>,
    /// Assembled automata by (their local automaton's serial number, class sizes): the class
    /// tokens they were assembled with and their start entries. A state with the same automaton
    /// and the same tokens in every class has the same tables: it takes those entries.
    #[allow(clippy::type_complexity, reason = "a memo table whose key and value are documented above")]
    assembled: FastMap<(usize, Vec<usize>), Vec<(Vec<Tokens>, u32, u32)>>,
    /// Per (thread class, lexings of its classes in sorted order): the first such state's
    /// position of each of those classes. A later state with the same lexings in another
    /// order takes that order ([`Assembler::align`]).
    orders: FastMap<(u32, Lexings), Vec<u32>>,
    /// Automata built without links, by the same key as `built_for`: for the states whose
    /// lexings `built_for` has with links but whose tokens differ ([`Assembler::attempt`]).
    unlinked: FastMap<LexingsKey, Result<Built, (u64, u64)>>,
}

impl Assembler {
    pub(super) fn new(n_tokens: u32, lexer_states: u32, opts: &MaskOptions) -> Assembler {
        let n = lexer_states as usize;
        Assembler {
            out: MaskTables {
                num_tokens: n_tokens,
                start: vec![NONE; n].into(),
                start_rho: vec![NONE; n].into(),
                undecided: vec![NONE; n].into(),
                edge_off: vec![0].into(),
                outcome_off: vec![0].into(),
                ..MaskTables::default()
            },
            writer: DwaWriter::new(),
            stats: MaskStats::default(),
            sets: TokenSets::new(n_tokens),
            union: Union::default(),
            n_tokens,
            link: opts.link_states,
            max_dwa_states: opts.max_dwa_states,
            saturate: opts.saturate,
            saturate_beside: opts.saturate_beside,
            work_per_lexer_state: opts.work_per_lexer_state,
            built_for: FastMap::default(),
            built_apart: false,
            apart_classes: opts.apart_classes,
            serial: 0,
            won: FastMap::default(),
            later: Vec::new(),
            later_keys: FastMap::default(),
            sources: Vec::new(),
            later_shares: FastMap::default(),
            shared: FastMap::default(),
            keys: FastMap::default(),
            assembled: FastMap::default(),
            orders: FastMap::default(),
            unlinked: FastMap::default(),
        }
    }

    /// Lexer state `q` takes the entries of the first state with its share key (once that
    /// state is complete: after it, if it waits).
    pub(super) fn shared_state(&mut self, q: u32, key: (u64, u32)) {
        if self.later_shares.contains_key(&key) {
            self.later.push(Pending::Shared { q, key });
        } else {
            self.shared_now(q, key);
        }
    }

    /// [`Assembler::shared_state`], the state it shares with complete.
    fn shared_now(&mut self, q: u32, key: (u64, u32)) {
        let sh = &self.shared[&key];
        self.out.start.to_mut()[q as usize] = sh.start;
        self.out.start_rho.to_mut()[q as usize] = sh.start_rho;
        self.out.undecided.to_mut()[q as usize] = sh.undecided;
        let aux = sh.aux_start;
        sh.counts.add_to(&mut self.stats);
        if aux != NONE {
            self.set_aux_start(q, aux);
        }
        self.stats.lexer_states_shared += 1;
    }

    /// Determinize (unless an earlier state's automaton serves) and assemble the automaton of
    /// lexer state `q` from its classes and UNDECIDED tokens. `walk`: the time its walk took,
    /// `tq`: when its message arrived (for the slowest-state statistic).
    #[allow(
        clippy::too_many_arguments,
        reason = "one lexer state's message from the walking thread, taken apart, plus the determinizer and the stage timer the driver owns"
    )]
    pub(super) fn state(
        &mut self,
        det: &mut Determinizer,
        nodes: &[(u32, Step)],
        q: u32,
        thread: u32,
        share_key: Option<(u64, u32)>,
        classes: Vec<TokenClass>,
        undecided: Vec<u32>,
        (walk, tq): (Duration, Instant),
        stages: &mut Stages,
    ) {
        let classes = self.align(thread, classes);
        let before = StateCounts::of(&self.stats);
        self.stats.undecided_tokens += undecided.len();
        self.out.undecided.to_mut()[q as usize] = self.sets.intern(&undecided);
        self.stats.token_classes += classes.len();
        stages.skip();
        // With saturation on, the forward build first gets a share of the work budget: a state
        // past it whose lexings saturation expresses is decided by saturation, and only if that
        // fails does the forward build get the whole budget.
        let full = self.work_per_lexer_state;
        let first = if self.saturate {
            (full / FIRST_ATTEMPT_SHARE).min(FIRST_ATTEMPT_BASE + FIRST_ATTEMPT_PER_CLASS * classes.len() as u64)
        } else {
            full
        };
        let own = (self.stats.undecided_tokens - before.undecided_tokens, classes.len());
        let job = Job { q, thread, share_key, classes, first, before, own, timing: (walk, tq) };
        let (base, per_class) = self.saturate_beside;
        let at = base.max(per_class.saturating_mul(job.classes.len() as u64));
        if let Some(apart) = self.apart(det, nodes, &job, at) {
            if let Some(k) = share_key {
                self.later_shares.insert(k, ());
            }
            self.later.push(Pending::Apart(Box::new(job), apart));
            stages.lap("determinize");
            return;
        }
        match self.first_attempt(det, nodes, thread, &job.classes, first, at) {
            Attempt::Now(built, speculated) => self.finish_state(det, nodes, job, built, speculated, stages),
            Attempt::Later(saturation) => {
                if let Some(k) = share_key {
                    self.later_shares.insert(k, ());
                }
                self.later.push(Pending::State(Box::new(job), saturation));
                stages.lap("determinize");
            }
        }
    }

    /// The rest of [`Assembler::state`], from the first attempt's outcome (`built`, and the
    /// saturation's result if one ran: [`Attempt::Now`]) on; or, for a state that waited
    /// ([`Attempt::Later`]), from its saturation's.
    fn finish_state(
        &mut self,
        det: &mut Determinizer,
        nodes: &[(u32, Step)],
        job: Job,
        mut built: Option<Built>,
        mut speculated: Option<Option<saturate::Saturated>>,
        stages: &mut Stages,
    ) {
        let Job { q, thread, share_key, classes, first, before, own: _, timing: (walk, tq) } = job;
        let full = self.work_per_lexer_state;
        let mut classes = classes;
        // Over budget: the classes saturation expresses get the saturated automaton (below),
        // the others are built forward, cut if need be.
        let mut saturated: Option<(Vec<TokenClass>, saturate::Saturated)> = None;
        // A state whose lexings are all short (`later::has_long_lexings`) is a polynomial
        // forward build over its LR states: it gets the whole budget before any saturation,
        // which over many LR states can take seconds to fail (500 open tools' lexer state 0:
        // 9 s) and is then the state's only way out.
        let mut tried_full = false;
        if built.is_none()
            && self.saturate
            && first < full
            && speculated.is_none()
            && !classes.is_empty()
            && !later::has_long_lexings(nodes, &classes)
        {
            built = self.build_or_reuse(det, nodes, thread, &classes, full);
            tried_full = true;
        }
        if built.is_none() && self.saturate && !classes.is_empty() {
            let (ours, rest): (Vec<TokenClass>, Vec<TokenClass>) =
                classes.iter().cloned().partition(|c| saturate::expressible(nodes, c));
            if !ours.is_empty() {
                let sat = match speculated.take() {
                    Some(sat) => sat,
                    None => saturate::saturate(det.comp.lr.tables, &det.comp.terms, nodes, &ours),
                };
                if let Some(sat) = sat {
                    saturated = Some((ours, sat));
                    if !rest.is_empty() {
                        built = self.build_or_reuse(det, nodes, thread, &rest, full);
                    }
                    classes = rest;
                }
            }
            if saturated.is_none() && first < full && !tried_full {
                built = self.build_or_reuse(det, nodes, thread, &classes, full);
            }
        }
        // Still over budget: rather than leave every token UNDECIDED, leave only the tokens whose
        // lexings are longest and build the rest ([`Assembler::cut`]).
        let mut dropped: Vec<TokenClass> = Vec::new();
        if built.is_none() && !classes.is_empty() {
            (built, classes, dropped) = self.cut(det, nodes, thread, classes);
        }
        let main = built.is_none();
        if let Some((ours, sat)) = saturated {
            // The saturated automaton: the state's own if nothing else was built, else its
            // second start.
            let left = self.saturated(q, &ours, Some(sat), main);
            self.undecide(q, left);
            if main {
                // The classes neither saturation nor a cut build decides.
                let left: Vec<u32> = classes.iter().chain(&dropped).flat_map(|c| c.tokens.iter()).collect();
                self.undecide(q, left);
                classes.clear();
                dropped.clear();
            }
        } else if main && !classes.is_empty() {
            // Over budget even when cut (or saturation over its own budget): the automaton
            // saturated backwards is the state's own, and the tokens it cannot express are
            // decided at run time.
            let sat = self.saturate_if_on(det, nodes, &classes);
            let left = self.saturated(q, &classes, sat, true);
            self.undecide(q, left);
            classes.clear();
        }
        if !dropped.is_empty() {
            // The tokens a cut left out, decided by a second automaton saturated backwards
            // where their lexings allow it, else UNDECIDED.
            let sat = self.saturate_if_on(det, nodes, &dropped);
            let left = self.saturated(q, &dropped, sat, false);
            self.undecide(q, left);
        }
        stages.lap("determinize");
        let slowest = (walk + tq.elapsed()).as_secs_f64() * 1e3;
        self.stats.slowest_lexer_state_ms = self.stats.slowest_lexer_state_ms.max(slowest);
        let (local, local_id) = match built {
            Some((local, configs, id)) => {
                self.stats.configurations += configs;
                (local, id)
            }
            None => {
                self.stats.lexer_states_over_budget += 1;
                if let Some(k) = share_key {
                    self.shared.insert(k, Shared::of(&self.out, q, before.since(&self.stats)));
                }
                return;
            }
        };
        self.stats.lexer_states_with_dwa += 1;
        let akey = (local_id, classes.iter().map(|c| c.tokens.len()).collect::<Vec<_>>());
        let same = self.assembled.get(&akey).and_then(|variants| {
            variants.iter().find(|v| v.0.iter().zip(classes.iter()).all(|(t, c)| t.same(&c.tokens)))
        });
        if let Some(&(_, start, start_rho)) = same {
            self.out.start.to_mut()[q as usize] = start;
            self.out.start_rho.to_mut()[q as usize] = start_rho;
            self.stats.lexer_states_shared += 1;
            if let Some(k) = share_key {
                self.shared.insert(k, Shared::of(&self.out, q, before.since(&self.stats)));
            }
            stages.lap("assemble");
            return;
        }
        let (start, start_rho, ids) = self.append(&local, &classes);
        self.out.start.to_mut()[q as usize] = start;
        self.out.start_rho.to_mut()[q as usize] = start_rho;
        for (d, k) in local.keys.iter().enumerate() {
            if let Some(k) = k {
                self.keys.entry(k.clone()).or_insert(ids[d]);
            }
        }
        if let Some(k) = share_key {
            self.shared.insert(k, Shared::of(&self.out, q, before.since(&self.stats)));
        }
        let tokens = classes.iter().map(|c| c.tokens.clone()).collect();
        self.assembled.entry(akey).or_default().push((
            tokens,
            self.out.start[q as usize],
            self.out.start_rho[q as usize],
        ));
        stages.lap("assemble");
    }

    /// A lexer state over budget even so: rather than leave every token UNDECIDED, leave only
    /// the tokens whose lexings are longest (a character-level grammar's runs of punctuation,
    /// each character a lexeme: `----…` under an ambiguous expression grammar) and build the
    /// rest, halving the longest lexing kept until the build fits. Returns the build (if some
    /// cut fits), the classes it decides, and those it left out.
    fn cut(
        &mut self,
        det: &mut Determinizer,
        nodes: &[(u32, Step)],
        thread: u32,
        mut classes: Vec<TokenClass>,
    ) -> (Option<Built>, Vec<TokenClass>, Vec<TokenClass>) {
        let mut dropped: Vec<TokenClass> = Vec::new();
        let mut built = None;
        let depth_of = |mut n: u32| {
            let mut d = 0u32;
            while n != 0 {
                n = nodes[n as usize].0;
                d += 1;
            }
            d
        };
        let depths: Vec<u32> =
            classes.iter().map(|c| c.sigs.iter().map(|&(n, _)| depth_of(n)).max().unwrap_or(0)).collect();
        // (Each failed attempt costs a whole budget: start where long runs are already out,
        // and with saturation, which decides the tokens left out, at the shortest cut.)
        let longest = depths.iter().copied().max().unwrap_or(0);
        let mut limit = if self.saturate { MIN_CUT_DEPTH.min(longest / 2) } else { (longest / 2).min(MAX_CUT_DEPTH) };
        while limit >= MIN_CUT_DEPTH {
            let keep: Vec<TokenClass> =
                classes.iter().zip(&depths).filter(|&(_, &d)| d <= limit).map(|(c, _)| c.clone()).collect();
            if keep.len() < classes.len() {
                if let Some(b) = self.build_or_reuse(det, nodes, thread, &keep, self.work_per_lexer_state) {
                    for (c, &d) in classes.iter().zip(&depths) {
                        if d > limit {
                            dropped.push(c.clone());
                        }
                    }
                    classes = keep;
                    built = Some(b);
                    self.stats.lexer_states_cut += 1;
                    break;
                }
            }
            limit /= 2;
        }
        (built, classes, dropped)
    }

    /// Append `local`'s states (its class outputs expanded into token sets of `classes`):
    /// its start state and start output in the assembled tables (or `NONE`), and the
    /// assembled id of every local state (links: the state they stand for).
    fn append(&mut self, local: &LocalDwa, classes: &[TokenClass]) -> (u32, u32, Vec<u32>) {
        // Class sets → token sets (memoized per local set).
        let mut expand: FastMap<u32, u32> = FastMap::default();
        let mut to_tokens = |set: u32, sets: &mut TokenSets| -> u32 {
            if set == 0 {
                return NONE;
            }
            *expand.entry(set).or_insert_with(|| self.union.intern(local.sets.get(set), classes, sets, self.n_tokens))
        };
        // Local ids → assembled ids: links stand for their assembled state, the others are
        // appended in order.
        let base = self.out.num_states() as u32;
        let mut ids = Vec::with_capacity(local.states.len());
        let mut next = base;
        for d in 0..local.states.len() as u32 {
            match local.links.get(&d) {
                Some(&g) => ids.push(g),
                None => {
                    ids.push(next);
                    next += 1;
                }
            }
        }
        let global = |d: u32| if d == DEAD { DEAD } else { ids[d as usize] };
        let start = if local.start == DEAD { NONE } else { global(local.start) };
        let start_rho = to_tokens(local.start_rho, &mut self.sets);
        for (d, st) in local.states.iter().enumerate() {
            if local.links.contains_key(&(d as u32)) {
                continue;
            }
            let edges: Vec<(u32, u32, u32)> = st
                .edges
                .iter()
                .map(|&(label, target, rho)| (label, global(target), to_tokens(rho, &mut self.sets)))
                .collect();
            let default = (global(st.default.0), to_tokens(st.default.1, &mut self.sets));
            self.writer.push(&mut self.out, default, edges);
        }
        (start, start_rho, ids)
    }

    /// Decide `classes` of lexer state `q` by an automaton saturated backwards
    /// ([`saturate`]), appended as the state's start (`main`) or second start: the tokens of
    /// the classes it cannot express are returned (to be left UNDECIDED).
    fn saturated(&mut self, q: u32, classes: &[TokenClass], sat: Option<saturate::Saturated>, main: bool) -> Vec<u32> {
        let mut decided = vec![false; classes.len()];
        if let Some(sat) = sat {
            let ours: Vec<TokenClass> = sat.decided.iter().map(|&i| classes[i].clone()).collect();
            let (start, _, _) = self.append(&sat.dwa, &ours);
            if main {
                self.out.start.to_mut()[q as usize] = start;
            } else if start != NONE {
                self.set_aux_start(q, start);
            }
            for &i in &sat.decided {
                decided[i] = true;
                self.stats.tokens_saturated += classes[i].tokens.len();
            }
            if let Some((dwa, which)) = &sat.second {
                // (Split only where every class is saturated: the first is the state's own
                // start, this one its second start.)
                debug_assert!(main, "a split saturation beside a forward build");
                self.stats.saturations_split += 1;
                let ours: Vec<TokenClass> = which.iter().map(|&i| classes[i].clone()).collect();
                let (start, _, _) = self.append(dwa, &ours);
                if start != NONE {
                    self.set_aux_start(q, start);
                }
                for &i in which {
                    decided[i] = true;
                    self.stats.tokens_saturated += classes[i].tokens.len();
                }
            }
        }
        classes.iter().zip(&decided).filter(|&(_, &d)| !d).flat_map(|(c, _)| c.tokens.iter()).collect()
    }

    /// The automaton saturated backwards for `classes`, if saturation is on and within budget.
    fn saturate_if_on(
        &self,
        det: &Determinizer,
        nodes: &[(u32, Step)],
        classes: &[TokenClass],
    ) -> Option<saturate::Saturated> {
        if self.saturate {
            saturate::saturate(det.comp.lr.tables, &det.comp.terms, nodes, classes)
        } else {
            None
        }
    }

    /// Add `tokens` to lexer state `q`'s UNDECIDED set.
    fn undecide(&mut self, q: u32, tokens: Vec<u32>) {
        if tokens.is_empty() {
            return;
        }
        let mut all: Vec<u32> = self.sets.members(self.out.undecided[q as usize]);
        let had = all.len();
        all.extend(tokens);
        all.sort_unstable();
        all.dedup();
        self.stats.undecided_tokens += all.len() - had;
        self.out.undecided.to_mut()[q as usize] = self.sets.intern(&all);
    }

    /// Lexer state `q`'s second start (`MaskTables::aux_start`, filled with `NONE` on first use).
    fn set_aux_start(&mut self, q: u32, d: u32) {
        if self.out.aux_start.is_empty() {
            self.out.aux_start = vec![NONE; self.out.start.len()].into();
        }
        self.out.aux_start.to_mut()[q as usize] = d;
    }

    /// The assembled automaton has grown past [`MaskOptions::max_dwa_states`].
    pub(super) fn over_budget(&self) -> bool {
        self.out.num_states() > self.max_dwa_states
    }

    /// The `KILL` sets of the carried inhibitors, then minimization across lexer states and the
    /// compaction of the token sets: the finished tables and their statistics.
    pub(super) fn finish(
        mut self,
        carried: Vec<Inhibitor>,
        kills: Vec<std::sync::Arc<[u32]>>,
        linked: usize,
        stages: &mut Stages,
    ) -> (MaskTables, MaskStats) {
        let (out, sets, stats) = (&mut self.out, &mut self.sets, &mut self.stats);
        stats.carried_inhibitors = carried.len();
        // (Inhibitors that move alike share one kill set from the vocabulary's cache, as one
        // allocation: the positions of a bounded whitespace run carry an inhibitor each, all
        // with Qwen3's 54,000 tokens that start with whitespace. Interned once per allocation.)
        let mut interned: FastMap<*const u32, u32> = FastMap::default();
        for (i, kill) in carried.into_iter().zip(&kills) {
            let set = *interned.entry(kill.as_ptr()).or_insert_with(|| sets.intern(kill));
            // An empty kill set kills nothing: store no entry, and a missing entry would be a
            // bug, so store it as an empty range list.
            let set = if set == NONE { sets.intern_empty() } else { set };
            out.kill_s.push(i.s);
            out.kill_k.push(i.k);
            out.kill_set.push(set);
        }
        out.set_off = std::mem::take(&mut sets.off).into();
        out.set_ranges = std::mem::take(&mut sets.ranges).into();
        let t_min = Instant::now();
        let (assembled_states, _) = minimize::minimize(out);
        // The sets the minimized automaton refers to, renumbered; bitmaps cut into interned blocks.
        let words = sets.words;
        let bitmap = |s: u32| {
            let d = sets.dense[s as usize];
            (d != NONE).then(|| &sets.bitmaps[d as usize..d as usize + words])
        };
        minimize::compact_sets(out, bitmap);
        stages.add("minimize", t_min.elapsed());
        stats.dwa_states_assembled = assembled_states;
        stats.second_starts = out.aux_start.iter().filter(|&&d| d != NONE).count();
        stats.dwa_states_linked = linked;
        stats.dwa_states = out.num_states();
        stats.token_sets = out.num_sets();
        stats.max_lookback = max_lookback(out);
        (self.out, self.stats)
    }
}

/// The longest chain of reads from any start state (`u32::MAX` if the DWA has a cycle).
fn max_lookback(t: &MaskTables) -> u32 {
    let n = t.num_states();
    // 0 = unvisited, 1 = on the stack, 2 = done.
    let mut mark = vec![0u8; n];
    let mut depth = vec![0u32; n];
    let mut best = 0;
    let succ = |d: u32| t.edges(d).map(|e| e.1).chain(std::iter::once(t.default_edge(d).0)).filter(|&x| x != DEAD);
    let mut stack: Vec<(u32, bool)> = Vec::new();
    for s in minimize::roots(t) {
        stack.clear();
        stack.push((s, false));
        while let Some((d, post)) = stack.pop() {
            let di = d as usize;
            if post {
                let deepest = succ(d).map(|x| if t.is_final(x) { 0 } else { depth[x as usize] }).max();
                depth[di] = 1u32.saturating_add(deepest.unwrap_or(0));
                mark[di] = 2;
                continue;
            }
            match mark[di] {
                2 => continue,
                1 => return u32::MAX,
                _ => {}
            }
            mark[di] = 1;
            stack.push((d, true));
            for x in succ(d) {
                if t.is_final(x) {
                    continue;
                }
                match mark[x as usize] {
                    0 => stack.push((x, false)),
                    1 => return u32::MAX,
                    _ => {}
                }
            }
        }
        best = best.max(depth[s as usize]);
    }
    best
}
