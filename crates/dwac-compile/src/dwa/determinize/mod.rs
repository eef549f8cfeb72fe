//! Weighted determinization (docs/CONSTRUCTION.md "The Parser DWA", step 4): the Parser DWA of one lexer state.
//!
//! A DWA state is a map from configurations ([`Config`]) to the token classes still riding on
//! them (absolute residuals: the state alone says which tokens are undecided). Reading a real
//! stack state moves every configuration one read further; the classes of configurations that
//! accept are the edge's output, the rest form the next state. A configuration that moves on in
//! the lexing trie keeps only the classes with a lexing through its new position (memoized set
//! intersections). Token classes are those of the lexer state ([`TokenClass`]), so weights are
//! small interned sets. Explicit edges equal to the DEFAULT edge are dropped.

use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

use super::FastMap;

use dwac_runtime::unstable::DEAD;

use super::compose::Step;
use super::compose::{Composer, Config, Labels, Phase, Settled, NO_PLAN};
use super::set_pool::SetPool;
use super::terminal_dwa::TokenClass;

mod plan;

/// Marks an accepting settled entry (the end id is in the low bits).
const ACCEPT_BIT: u64 = 1 << 40;
/// [`Determinizer::canon_ids`]: not found yet.
const NO_CANON: u32 = u32::MAX;
/// The DEFAULT label in the read memo.
const DEFAULT: u32 = u32::MAX;

/// One state of a lexer state's DWA: explicit edges (label, target, output class set) sorted by
/// label, and the DEFAULT edge (target, output). Targets are local state indices or [`DEAD`].
pub struct DState {
    /// Explicit edges as (label, target, output class set), sorted by label.
    pub edges: Vec<(u32, u32, u32)>,
    /// The DEFAULT edge as (target, output class set), taken for every label without an
    /// explicit edge.
    pub default: (u32, u32),
}

/// The DWA of one lexer state; outputs are ids of class sets in `sets`.
///
/// A local state whose [`StateKey`] equals that of a state already in the assembled tables
/// (of an earlier lexer state) is not built again: it is a *link* to that state, and its
/// `states` entry is an empty placeholder. Every other state carries its key, for the tables
/// to register once it is assembled.
pub struct LocalDwa {
    /// The local start state.
    pub start: u32,
    /// The class set accepted before any stack read (the start's output).
    pub start_rho: u32,
    /// The local states, by index.
    pub states: Vec<DState>,
    /// The class sets the outputs name: sets of indices into the lexer state's token classes.
    pub sets: SetPool,
    /// Local state → the assembled state it stands for (links only).
    pub links: FastMap<u32, u32>,
    /// Per local state: its key (`None` for links).
    pub keys: Vec<Option<StateKey>>,
}

/// The canonical key of a determinized state, the same in every lexer state: per
/// (configuration without its trie node, the riding tokens' lexings below that node) the
/// tokens riding it, as an interned token set. A state's future (the outputs on every sequence
/// of reads) depends only on this: a configuration's reads depend on its simulations, and on
/// the lexing trie only through the plan below its node, of which a token follows exactly its
/// own lexings (the rest are filtered out); per token, the state is the set of (configuration,
/// lexings below) it rides. So two states with equal keys, in any two lexer states, have the
/// same future, and one is built (docs/CONSTRUCTION.md, "Sharing between lexer states").
pub type StateKey = Box<[(u32, u32, u32)]>;

/// The budget was exceeded.
pub struct TooLarge;

/// The interned plans below nodes ([`Plan::below`]), each flat: the number of its ends, their
/// lookahead classes, per child its step (kind, terminal set, guard set) and the plan below it,
/// then the thread's class at the root (`u32::MAX` elsewhere). No node or end id: nodes with the
/// same one have the same subtree up to renaming.
type SubPlan = Vec<u32>;

/// Memory bounds of the memos kept across lexer states: past any of them, they are all dropped
/// before the next lexer state's automaton is built.
const MAX_CONFIGS: usize = 1 << 18;
const MAX_READS: usize = 1 << 20;
const MAX_EXPANSIONS: usize = 1 << 18;
/// Shared-read lookups a configuration may miss in a row before it stops making them.
const MAX_SHARE_MISSES: u32 = 128;
/// Shared-read lookups of one build after which it stops making them if fewer than one in
/// [`SHARE_HIT_RATIO`] has hit (`palindrome.lark`: 350 hits in 781,454 lookups, each a
/// signature built, hashed and kept).
const SHARE_TRIAL: u64 = 4096;
const SHARE_HIT_RATIO: u64 = 64;

/// (Configuration, class) pairs past which a state gets no [`StateKey`]: it neither links to an
/// assembled state nor can be linked to. Keys are for the many small states that recur between
/// lexer states (every link made on the test corpora, 17,690 with qwen3, has at most 206 pairs);
/// a state with thousands of pairs (robots.txt's lexer state 0: 65 states of 1,000 to 27,000
/// groups, 270 ms of keys, no link anywhere) would pay a token-set union per group for nothing.
/// Links never change the minimized tables (`tests/minimize.rs`), only the work of building them.
const MAX_KEY_PAIRS: usize = 1024;

/// A read's outcome: configuration ids, or `ACCEPT_BIT | end`, sorted.
type ReadIds = Rc<[u64]>;

/// Where a configuration's reads under one plan below its node are kept
/// ([`Determinizer::read_table`]).
#[derive(Clone, Copy)]
enum ReadTable {
    /// In `dense_reads`: one slot per label the configuration tells apart, in their order, then
    /// one for DEFAULT.
    Dense(u32),
    /// In `label_reads`, by label (a configuration that tells every state apart).
    ByLabel(u32),
}

/// Builds the DWA of each lexer state in turn ([`Determinizer::build`]), keeping its memos
/// across lexer states (within their memory bounds).
pub struct Determinizer<'a> {
    /// The composer whose configurations the DWA states are made of.
    pub comp: Composer<'a>,
    /// Configurations, kept across lexer states (a configuration names trie nodes, not plans).
    configs: Vec<Config>,
    config_ids: FastMap<Config, u32>,
    /// Configurations there were when the current automaton's build began.
    configs_before: usize,
    /// (config, plan below the config's node) → its table of reads (label or DEFAULT →
    /// settled): how a configuration continues depends on the plan only through the plan below
    /// its node, so lexer states with the same one there share the reads. The table is found
    /// once per DWA state; each read is then a slot (or a probe of a small map) that stays in
    /// cache, not a probe of one map of millions.
    read_tables: FastMap<(u32, u32), ReadTable>,
    dense_reads: Vec<Box<[Option<ReadIds>]>>,
    label_reads: Vec<FastMap<u32, Rc<[u64]>>>,
    /// Reads and dense slots in all tables.
    reads_len: usize,
    /// (config, plan below its node, first-use signature of the state read) → settled, for reads
    /// whose outcome touched nothing else of the state read (shared by every state with that
    /// signature).
    shared_reads: FastMap<(u32, u32, Vec<u32>), Rc<[u64]>>,
    /// Per configuration: shared-read lookups since its last hit. Past [`MAX_SHARE_MISSES`], its
    /// reads are neither looked up nor kept there (a memo policy: the reads are the same).
    share_misses: Vec<u32>,
    /// This build's shared-read lookups and hits, and whether it still makes them
    /// ([`SHARE_TRIAL`]).
    share_lookups: u64,
    share_hits: u64,
    sharing: bool,
    labels: FastMap<u32, Option<Rc<[u32]>>>,
    /// Interned plans below nodes; id 0 is [`NO_PLAN`].
    sub_plans: FastMap<SubPlan, u32>,
    /// Configurations without their trie node (or end), interned for [`StateKey`]s; kept for
    /// the whole build (never dropped with the memos, since the tables' keys name them).
    canon: FastMap<Config, u32>,
    /// Per configuration: its canonical id and trie node ([`Determinizer::canon_of`]) once
    /// found, `(NO_CANON, None)` until then; dropped with the configurations, so found once
    /// per configuration rather than once per lexer state whose keys name it.
    canon_ids: Vec<(u32, Option<u32>)>,
    /// Lexings below a node (steps from it, lookahead class), interned for [`StateKey`]s.
    relsigs: FastMap<Vec<(Vec<Step>, u32)>, u32>,
    /// Per trie node, its index in the plan being made (`u32::MAX` between plans): scratch of
    /// [`Determinizer::plan`], kept to spare a map of the nodes.
    plan_local: Vec<u32>,
    /// States of the automata built so far that were linked to an assembled state.
    pub linked: usize,
    /// States a single lexer state's DWA may have.
    pub max_states: usize,
    /// Lexing-trie expansions a single lexer state's DWA may take.
    pub work_budget: u64,
}

impl<'a> Determinizer<'a> {
    /// A determinizer over `comp` allowing `max_states` states per lexer state's DWA, with no
    /// work budget.
    pub fn new(comp: Composer<'a>, max_states: usize) -> Determinizer<'a> {
        Determinizer {
            comp,
            configs: Vec::new(),
            config_ids: FastMap::default(),
            configs_before: 0,
            read_tables: FastMap::default(),
            dense_reads: Vec::new(),
            label_reads: Vec::new(),
            reads_len: 0,
            shared_reads: FastMap::default(),
            share_misses: Vec::new(),
            share_lookups: 0,
            share_hits: 0,
            sharing: true,
            labels: FastMap::default(),
            sub_plans: FastMap::default(),
            canon: FastMap::default(),
            canon_ids: Vec::new(),
            relsigs: FastMap::default(),
            plan_local: Vec::new(),
            linked: 0,
            max_states,
            work_budget: u64::MAX,
        }
    }

    /// Configurations the last automaton's build made (the others it used were made before).
    pub fn num_configs(&self) -> usize {
        self.configs.len() - self.configs_before
    }

    /// Settled outcomes as ids: configuration ids, or `ACCEPT_BIT | end`.
    fn ids(&mut self, settled: Vec<Settled>) -> Rc<[u64]> {
        let mut v: Vec<u64> = settled
            .into_iter()
            .map(|s| match s {
                Settled::Accept(e) => ACCEPT_BIT | e as u64,
                Settled::Config(c) => match self.config_ids.entry(c) {
                    std::collections::hash_map::Entry::Occupied(o) => *o.get() as u64,
                    std::collections::hash_map::Entry::Vacant(slot) => {
                        let id = self.configs.len() as u32;
                        self.configs.push(slot.key().clone());
                        self.share_misses.push(0);
                        slot.insert(id);
                        id as u64
                    }
                },
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v.into()
    }

    /// Where `c`'s reads under the current plan are kept: a dense table if it tells `labels`
    /// states apart, one by label if it tells every state apart (`None`).
    fn read_table(&mut self, c: u32, labels: Option<usize>) -> ReadTable {
        let below = self.below_of(c);
        if let Some(&t) = self.read_tables.get(&(c, below)) {
            return t;
        }
        let t = match labels {
            Some(n) => {
                self.dense_reads.push(vec![None; n + 1].into());
                self.reads_len += n + 1;
                ReadTable::Dense(self.dense_reads.len() as u32 - 1)
            }
            None => {
                self.label_reads.push(FastMap::default());
                ReadTable::ByLabel(self.label_reads.len() as u32 - 1)
            }
        };
        self.read_tables.insert((c, below), t);
        t
    }

    /// The memo slot of a read: `slot` is the label's place among the configuration's labels
    /// (dense tables), `key` the label or [`DEFAULT`].
    fn memo_get(&self, table: ReadTable, key: u32, slot: usize) -> Option<&Rc<[u64]>> {
        match table {
            ReadTable::Dense(t) => self.dense_reads[t as usize][slot].as_ref(),
            ReadTable::ByLabel(t) => self.label_reads[t as usize].get(&key),
        }
    }

    fn memo_insert(&mut self, table: ReadTable, key: u32, slot: usize, r: Rc<[u64]>) {
        match table {
            ReadTable::Dense(t) => self.dense_reads[t as usize][slot] = Some(r),
            ReadTable::ByLabel(t) => {
                self.label_reads[t as usize].insert(key, r);
                self.reads_len += 1;
            }
        }
    }

    /// The plan below the node of configuration `c` (what its reads depend on besides itself).
    fn below_of(&self, c: u32) -> u32 {
        // (A lookahead check reads no plan.)
        match &self.configs[c as usize].phase {
            Phase::Step { node, .. } => self.comp.plan_below(*node),
            Phase::Look { .. } => NO_PLAN,
        }
    }

    /// What configuration `c` becomes on reading `label` (`None`: DEFAULT); `table` is where
    /// [`Determinizer::read_table`] keeps `c`'s reads, `slot` the label's place among the
    /// labels `c` tells apart (their number for DEFAULT; any for a table by label).
    fn read_ids(&mut self, table: ReadTable, c: u32, label: Option<u32>, slot: usize) -> Rc<[u64]> {
        let key = label.unwrap_or(DEFAULT);
        if let Some(r) = self.memo_get(table, key, slot) {
            return r.clone();
        }
        let below = self.below_of(c);
        let config = &self.configs[c as usize];
        // A read whose outcome depends on the state read only through its first lookup is shared
        // by all states with the same first-lookup signature.
        // (A configuration whose lookups keep missing stops making them. Inside an object key of
        // a schema with hundreds of objects, a configuration holds a simulation per object's
        // KEY_ADDITIONAL terminal and tells thousands of states apart, each its own way: on
        // tools-500, 2.8M lookups skipped for 874 hits lost.)
        let signature = label.filter(|_| self.sharing && self.share_misses[c as usize] < MAX_SHARE_MISSES).map(|p| {
            let mut sig = Vec::new();
            self.comp.first_uses(config, p, &mut sig);
            (c, below, sig)
        });
        if let Some(sig) = &signature {
            self.share_lookups += 1;
            if let Some(r) = self.shared_reads.get(sig) {
                let r = r.clone();
                self.share_hits += 1;
                self.share_misses[c as usize] = 0;
                self.memo_insert(table, key, slot, r.clone());
                return r;
            }
            self.share_misses[c as usize] += 1;
            if self.share_lookups >= SHARE_TRIAL && self.share_hits * SHARE_HIT_RATIO < self.share_lookups {
                self.sharing = false;
            }
        }
        let mut out = Vec::new();
        self.comp.lr.bottom_touched.set(false);
        self.comp.read(&self.configs[c as usize], label, &mut out);
        let touched = self.comp.lr.bottom_touched.get()
            || out
                .iter()
                .any(|s| matches!(s, Settled::Config(Config { phase: Phase::Step { done, .. } }) if !done.is_empty()));
        let ids = self.ids(out);
        if self.comp.exhausted {
            // (Cut short by the work budget: the build fails, and the read is not kept for a
            // later one.)
            return ids;
        }
        if let (Some(sig), false) = (signature, touched) {
            self.shared_reads.insert(sig, ids.clone());
        }
        self.memo_insert(table, key, slot, ids.clone());
        ids
    }

    /// The labels configuration `c` tells apart (`None`: all).
    fn labels_of(&mut self, c: u32) -> Option<Rc<[u32]>> {
        if let Some(l) = self.labels.get(&c) {
            return l.clone();
        }
        let config = self.configs[c as usize].clone();
        let l = match self.comp.labels(&config) {
            Labels::All => None,
            Labels::Some(v) => Some(v.into()),
        };
        self.labels.insert(c, l.clone());
        l
    }

    /// The canonical id of configuration `c` without its trie node (or end), and the node.
    fn canon_of(&mut self, c: u32) -> (u32, Option<u32>) {
        let (canon, node) = match &self.configs[c as usize].phase {
            Phase::Step { node, main, done, guard } => (
                Config { phase: Phase::Step { node: 0, main: main.clone(), done: done.clone(), guard: guard.clone() } },
                Some(*node),
            ),
            Phase::Look { sims, .. } => (Config { phase: Phase::Look { end: 0, sims: sims.clone() } }, None),
        };
        let next = self.canon.len() as u32;
        (*self.canon.entry(canon).or_insert(next), node)
    }

    /// The id of the lexings of `cls` below trie node `n` (steps from `n`, lookahead class);
    /// ids start at 1 (0 stands for "the tokens of a lookahead check", which need none).
    fn relsig(&mut self, cls: &TokenClass, n: u32, nodes: &[(u32, Step)]) -> u32 {
        let mut below = Vec::new();
        for &(sn, la) in &cls.sigs {
            let mut m = sn;
            let mut path = Vec::new();
            let found = loop {
                if m == n {
                    break true;
                }
                if m == 0 {
                    break false;
                }
                let (parent, step) = nodes[m as usize];
                path.push(step);
                m = parent;
            };
            if found {
                path.reverse();
                below.push((path, la));
            }
        }
        below.sort_unstable();
        let next = self.relsigs.len() as u32 + 1;
        *self.relsigs.entry(below).or_insert(next)
    }

    /// The [`StateKey`] of local state `v` (configuration → class set).
    fn key_of(&mut self, v: &[(u32, u32)], ctx: &mut KeyCtx, sets: &SetPool, asm: &mut dyn Assembled) -> StateKey {
        // (canonical configuration, lexings below, class), sorted: the groups in key order.
        let triples = &mut ctx.triples;
        triples.clear();
        for &(c, set) in v {
            let (cc, node) = match self.canon_ids.get(c as usize) {
                Some(&x) if x.0 != NO_CANON => x,
                _ => {
                    let x = self.canon_of(c);
                    if self.canon_ids.len() <= c as usize {
                        self.canon_ids.resize(c as usize + 1, (NO_CANON, None));
                    }
                    self.canon_ids[c as usize] = x;
                    x
                }
            };
            for &ci in sets.get(set) {
                let r = match node {
                    None => 0,
                    Some(n) => match ctx.relsig.get(&(ci, n)) {
                        Some(&r) => r,
                        None => {
                            let r = self.relsig(&ctx.classes[ci as usize], n, ctx.nodes);
                            ctx.relsig.insert((ci, n), r);
                            r
                        }
                    },
                };
                triples.push((cc, r, ci));
            }
        }
        triples.sort_unstable();
        triples.dedup();
        let mut key = Vec::new();
        let mut i = 0;
        while i < triples.len() {
            let (cc, r, _) = triples[i];
            ctx.cis.clear();
            while i < triples.len() && (triples[i].0, triples[i].1) == (cc, r) {
                ctx.cis.push(triples[i].2);
                i += 1;
            }
            key.push((cc, r, asm.tokens(&ctx.cis)));
        }
        key.into()
    }

    /// A new local state's id: a link if an assembled state has its key, else a state to build.
    fn intern_state(
        &mut self,
        v: Vec<(u32, u32)>,
        local: &mut Building,
        ctx: &mut KeyCtx,
        sets: &SetPool,
        asm: &mut dyn Assembled,
    ) -> Result<u32, TooLarge> {
        if v.is_empty() {
            return Ok(DEAD);
        }
        if let Some(&id) = local.index.get(&v) {
            return Ok(id);
        }
        let id = local.contents.len() as u32;
        local.index.insert(v.clone(), id);
        if !asm.links() || v.iter().map(|&(_, set)| sets.get(set).len()).sum::<usize>() > MAX_KEY_PAIRS {
            local.contents.push(v);
            if local.contents.len() > self.max_states {
                return Err(TooLarge);
            }
            local.keys.push(None);
            local.queue.push_back(id);
            return Ok(id);
        }
        let key = self.key_of(&v, ctx, sets, asm);
        local.contents.push(v);
        if let Some(g) = asm.state(&key) {
            local.links.insert(id, g);
            local.keys.push(None);
            self.linked += 1;
            return Ok(id);
        }
        if local.contents.len() - local.links.len() > self.max_states {
            return Err(TooLarge);
        }
        local.keys.push(Some(key));
        local.queue.push_back(id);
        Ok(id)
    }

    /// Drop the memos kept across lexer states once any is past its memory bound.
    fn forget_if_large(&mut self) {
        if self.configs.len() > MAX_CONFIGS || self.reads_len > MAX_READS || self.comp.memoized() > MAX_EXPANSIONS {
            self.forget();
        }
    }

    /// Forget every memo of earlier builds (configurations, reads, expansions): the next build
    /// starts as the first did.
    pub fn forget(&mut self) {
        self.configs.clear();
        self.config_ids.clear();
        self.canon_ids.clear();
        self.labels.clear();
        self.read_tables.clear();
        self.dense_reads.clear();
        self.label_reads.clear();
        self.reads_len = 0;
        self.shared_reads.clear();
        self.share_misses.clear();
        self.sub_plans.clear();
        self.comp.forget();
    }

    /// The DWA for a thread of lookahead class `thread` whose tokens form `classes`; `nodes` is
    /// the walker's trie of step sequences ([`super::terminal_dwa::Walker::nodes`]), at least up
    /// to the nodes the classes name. `asm` gives the token sets of class unions and the states
    /// already assembled (for [`StateKey`] links).
    pub fn build(
        &mut self,
        classes: &[TokenClass],
        nodes: &[(u32, Step)],
        thread: u32,
        asm: &mut dyn Assembled,
    ) -> Result<LocalDwa, TooLarge> {
        self.forget_if_large();
        let mut sets = SetPool::new();
        let (plan, below, at_end) = self.plan(classes, nodes, thread, &mut sets);
        self.comp.set_plan(plan);
        self.comp.budget = self.work_budget;
        self.configs_before = self.configs.len();
        (self.share_lookups, self.share_hits, self.sharing) = (0, 0, true);

        // Where a settled outcome's classes may be: below its trie node, or at its end.
        let filter = |det: &Self, id: u64| -> u32 {
            if id & ACCEPT_BIT != 0 {
                return at_end.get(&((id & !ACCEPT_BIT) as u32)).copied().unwrap_or(0);
            }
            match &det.configs[id as usize].phase {
                Phase::Step { node, .. } => below.get(node).copied().unwrap_or(0),
                Phase::Look { end, .. } => at_end.get(end).copied().unwrap_or(0),
            }
        };
        let all = sets.intern((0..classes.len() as u32).collect());
        let mut start_out = Vec::new();
        self.comp.expand(0, Vec::new(), &mut start_out);
        if self.comp.exhausted {
            return Err(TooLarge);
        }
        let start_ids = self.ids(start_out);
        let mut parts: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        let mut rho_parts = Vec::new();
        for &id in start_ids.iter() {
            let w = sets.intersect(all, filter(self, id));
            if id & ACCEPT_BIT != 0 {
                rho_parts.push(w);
            } else if w != 0 {
                parts.entry(id as u32).or_default().push(w);
            }
        }
        let start_rho = sets.union_many(&rho_parts);
        let entries: BTreeMap<u32, u32> = parts.into_iter().map(|(c, p)| (c, sets.union_many(&p))).collect();

        let mut local = Building::default();
        let mut ctx = KeyCtx { classes, nodes, relsig: FastMap::default(), triples: Vec::new(), cis: Vec::new() };
        let start = self.intern_state(entries.into_iter().collect(), &mut local, &mut ctx, &sets, asm)?;
        let mut states: Vec<DState> = Vec::new();
        let lr_states = self.comp.lr.tables.num_states;
        while let Some(d) = local.queue.pop_front() {
            if self.comp.stopped() {
                return Err(TooLarge);
            }
            // (Links get ids but are not built: their entries stay empty placeholders.)
            while states.len() < d as usize {
                states.push(DState { edges: Vec::new(), default: (DEAD, 0) });
            }
            let state = local.contents[d as usize].clone();
            let mut all_labels = false;
            let mut labels: Vec<u32> = Vec::new();
            // Per configuration, the labels it tells apart (sorted; `None`: all).
            let mut own: Vec<Option<Rc<[u32]>>> = Vec::with_capacity(state.len());
            // Per configuration, its table of reads.
            let mut tables: Vec<ReadTable> = Vec::with_capacity(state.len());
            for &(c, _) in &state {
                let l = self.labels_of(c);
                tables.push(self.read_table(c, l.as_ref().map(|l| l.len())));
                match &l {
                    None => all_labels = true,
                    Some(l) => labels.extend(l.iter().copied()),
                }
                own.push(l);
            }
            let labels: Vec<u32> = if all_labels {
                (0..lr_states).collect()
            } else {
                labels.sort_unstable();
                labels.dedup();
                labels
            };
            // (`parts`: (configuration, class set) in the order found, grouped by configuration
            // with a stable sort: each configuration's parts are united in that order.)
            let mut rho_parts = Vec::new();
            let mut parts: Vec<(u32, u32)> = Vec::new();
            let mut united = Vec::new();
            // Each configuration's DEFAULT read (the first step): a label the configuration
            // does not tell apart has the DEFAULT effect on it (`Labels`), so its read is that.
            let mut defaults: Vec<Rc<[u64]>> = Vec::with_capacity(state.len());
            let mut step = |label: Option<u32>, det: &mut Self, sets: &mut SetPool| {
                rho_parts.clear();
                parts.clear();
                det.comp.reads += state.len() as u64;
                for (i, &(c, s)) in state.iter().enumerate() {
                    let read = match (label, &own[i]) {
                        (None, l) => {
                            let r = det.read_ids(tables[i], c, None, l.as_ref().map_or(0, |l| l.len()));
                            defaults.push(r.clone());
                            r
                        }
                        (Some(x), Some(l)) => match l.binary_search(&x) {
                            Ok(slot) => det.read_ids(tables[i], c, Some(x), slot),
                            Err(_) => defaults[i].clone(),
                        },
                        (Some(x), None) => det.read_ids(tables[i], c, Some(x), 0),
                    };
                    for &id in read.iter() {
                        let w = sets.intersect(s, filter(det, id));
                        if w == 0 {
                            continue;
                        }
                        if id & ACCEPT_BIT != 0 {
                            rho_parts.push(w);
                        } else {
                            parts.push((id as u32, w));
                        }
                    }
                }
                let rho = sets.union_many(&rho_parts);
                parts.sort_by_key(|p| p.0);
                let mut next: Vec<(u32, u32)> = Vec::new();
                let mut i = 0;
                while i < parts.len() {
                    let c = parts[i].0;
                    united.clear();
                    while i < parts.len() && parts[i].0 == c {
                        united.push(parts[i].1);
                        i += 1;
                    }
                    next.push((c, sets.union_many(&united)));
                }
                (next, rho)
            };
            let (dn, drho) = step(None, self, &mut sets);
            if self.comp.exhausted {
                return Err(TooLarge);
            }
            let default = (self.intern_state(dn, &mut local, &mut ctx, &sets, asm)?, drho);
            let mut edges = Vec::new();
            for x in labels {
                let (n, rho) = step(Some(x), self, &mut sets);
                if self.comp.exhausted {
                    return Err(TooLarge);
                }
                let target = self.intern_state(n, &mut local, &mut ctx, &sets, asm)?;
                if (target, rho) != default {
                    edges.push((x, target, rho));
                }
            }
            debug_assert_eq!(states.len(), d as usize);
            states.push(DState { edges, default });
        }
        while states.len() < local.contents.len() {
            states.push(DState { edges: Vec::new(), default: (DEAD, 0) });
        }
        Ok(LocalDwa { start, start_rho, states, sets, links: local.links, keys: local.keys })
    }
}

/// What [`Determinizer::build`] asks of the tables assembled so far.
pub trait Assembled {
    /// The interned token set of the union of the tokens of these classes (indices into the
    /// classes being built).
    fn tokens(&mut self, classes: &[u32]) -> u32;
    /// The assembled state with this key, if there is one.
    fn state(&self, key: &StateKey) -> Option<u32>;
    /// Are states linked at all ([`super::MaskOptions::link_states`])?
    fn links(&self) -> bool;
}

/// The local states of one automaton under construction.
#[derive(Default)]
struct Building {
    index: FastMap<Vec<(u32, u32)>, u32>,
    contents: Vec<Vec<(u32, u32)>>,
    queue: VecDeque<u32>,
    links: FastMap<u32, u32>,
    keys: Vec<Option<StateKey>>,
}

/// Memos of one build for [`Determinizer::key_of`].
struct KeyCtx<'c> {
    classes: &'c [TokenClass],
    nodes: &'c [(u32, Step)],
    /// (class, node) → lexings below.
    relsig: FastMap<(u32, u32), u32>,
    /// Scratch of [`Determinizer::key_of`].
    triples: Vec<(u32, u32, u32)>,
    cis: Vec<u32>,
}
