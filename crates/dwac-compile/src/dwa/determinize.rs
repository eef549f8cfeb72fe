//! Weighted determinization (ALGORITHM.md §4.2–4.3): the Parser DWA of one lexer state.
//!
//! A DWA state is a map from configurations ([`Config`]) to the token classes still riding on
//! them (absolute residuals: the state alone says which tokens are undecided). Reading a real
//! stack state moves every configuration one read further; the classes of configurations that
//! accept are the edge's output, the rest form the next state. A configuration that moves on in
//! the lexing trie keeps only the classes with a lexing through its new position (memoized set
//! intersections). Token classes are those of the lexer state ([`TokenClass`]), so weights are
//! small interned sets. Explicit edges equal to the DEFAULT edge are dropped.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::rc::Rc;

use super::FastMap;

use dwac_runtime::DEAD;

use super::compose::Step;
use super::compose::{Composer, Config, Labels, Phase, Plan, Settled, NO_PLAN};
use super::sets::SetPool;
use super::terminal_dwa::TokenClass;

/// Marks an accepting settled entry (the end id is in the low bits).
const ACCEPT_BIT: u64 = 1 << 40;
/// The DEFAULT label in the read memo.
const DEFAULT: u32 = u32::MAX;

/// One state of a lexer state's DWA: explicit edges (label, target, output class set) sorted by
/// label, and the DEFAULT edge (target, output). Targets are local state indices or [`DEAD`].
pub struct DState {
    pub edges: Vec<(u32, u32, u32)>,
    pub default: (u32, u32),
}

/// The DWA of one lexer state; outputs are ids of class sets in `sets`.
pub struct LocalDwa {
    pub start: u32,
    pub start_rho: u32,
    pub states: Vec<DState>,
    pub sets: SetPool,
}

/// The budget was exceeded.
pub struct TooLarge;

/// The interned plans below nodes ([`Plan::below`]): (ends, children with their steps and the
/// plans below them, the thread's class at the root).
type SubPlan = (Vec<(u32, u32)>, Vec<(u32, Step, u32)>, u32);

/// Memory bounds of the memos kept across lexer states: past any of them, they are all dropped
/// before the next lexer state's automaton is built.
const MAX_CONFIGS: usize = 1 << 18;
const MAX_READS: usize = 1 << 20;
const MAX_EXPANSIONS: usize = 1 << 18;

pub struct Determinizer<'a> {
    pub comp: Composer<'a>,
    /// Configurations, kept across lexer states (a configuration names trie nodes, not plans).
    configs: Vec<Config>,
    config_ids: FastMap<Config, u32>,
    /// Configurations there were when the current automaton's build began.
    configs_before: usize,
    /// (config, label, plan below the config's node) → settled: how a configuration continues
    /// depends on the plan only through the plan below its node, so lexer states with the same
    /// one there share the read.
    reads: FastMap<(u32, u32, u32), Rc<[u64]>>,
    /// (config, plan below its node, first-use signature of the state read) → settled, for reads
    /// whose outcome touched nothing else of the state read (shared by every state with that
    /// signature).
    shared_reads: FastMap<(u32, u32, Vec<u32>), Rc<[u64]>>,
    labels: FastMap<u32, Option<Rc<[u32]>>>,
    /// Interned plans below nodes; id 0 is [`NO_PLAN`].
    sub_plans: FastMap<SubPlan, u32>,
    /// States a single lexer state's DWA may have.
    pub max_states: usize,
    /// Lexing-trie expansions a single lexer state's DWA may take.
    pub work_budget: u64,
}

impl<'a> Determinizer<'a> {
    pub fn new(comp: Composer<'a>, max_states: usize) -> Determinizer<'a> {
        Determinizer {
            comp,
            configs: Vec::new(),
            config_ids: FastMap::default(),
            configs_before: 0,
            reads: FastMap::default(),
            shared_reads: FastMap::default(),
            labels: FastMap::default(),
            sub_plans: FastMap::default(),
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
                Settled::Config(c) => match self.config_ids.get(&c) {
                    Some(&id) => id as u64,
                    None => {
                        let id = self.configs.len() as u32;
                        self.configs.push(c.clone());
                        self.config_ids.insert(c, id);
                        id as u64
                    }
                },
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v.into()
    }

    fn read_ids(&mut self, c: u32, label: Option<u32>) -> Rc<[u64]> {
        // (A lookahead check reads no plan.)
        let below = match &self.configs[c as usize].phase {
            Phase::Step { node, .. } => self.comp.plan_below(*node),
            Phase::Look { .. } => NO_PLAN,
        };
        let key = (c, label.unwrap_or(DEFAULT), below);
        if let Some(r) = self.reads.get(&key) {
            return r.clone();
        }
        let config = self.configs[c as usize].clone();
        // A read whose outcome depends on the state read only through its first lookup is shared
        // by all states with the same first-lookup signature.
        let signature = label.map(|p| {
            let mut sig = Vec::new();
            self.comp.first_uses(&config, p, &mut sig);
            (c, below, sig)
        });
        if let Some(r) = signature.as_ref().and_then(|s| self.shared_reads.get(s)) {
            let r = r.clone();
            self.reads.insert(key, r.clone());
            return r;
        }
        let mut out = Vec::new();
        self.comp.lr.bottom_touched.set(false);
        self.comp.read(&config, label, &mut out);
        let touched = self.comp.lr.bottom_touched.get()
            || out
                .iter()
                .any(|s| matches!(s, Settled::Config(Config { phase: Phase::Step { done, .. } }) if !done.is_empty()));
        let ids = self.ids(out);
        if let (Some(sig), false) = (signature, touched) {
            self.shared_reads.insert(sig, ids.clone());
        }
        self.reads.insert(key, ids.clone());
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

    /// The DWA for a thread of lookahead class `thread` whose tokens form `classes`; `nodes` is
    /// the walker's trie of step sequences ([`super::terminal_dwa::Walker::nodes`]), at least up
    /// to the nodes the classes name.
    pub fn build(&mut self, classes: &[TokenClass], nodes: &[(u32, Step)], thread: u32) -> Result<LocalDwa, TooLarge> {
        if self.configs.len() > MAX_CONFIGS || self.reads.len() > MAX_READS || self.comp.memoized() > MAX_EXPANSIONS {
            self.configs.clear();
            self.config_ids.clear();
            self.labels.clear();
            self.reads.clear();
            self.shared_reads.clear();
            self.sub_plans.clear();
            self.comp.forget();
        }
        let mut sets = SetPool::new();
        // The lexing trie of this state, and which classes lie below each node / end there.
        let mut plan = Plan { thread, ..Plan::default() };
        let mut below: FastMap<u32, Vec<u32>> = FastMap::default();
        let mut at_end: FastMap<u32, Vec<u32>> = FastMap::default();
        let mut children: FastMap<u32, BTreeSet<u32>> = FastMap::default();
        let mut ends: FastMap<u32, BTreeSet<(u32, u32)>> = FastMap::default();
        for (ci, cls) in classes.iter().enumerate() {
            let ci = ci as u32;
            for &(node, la) in &cls.sigs {
                let e = self.comp.end(node, la);
                ends.entry(node).or_default().insert((e, la));
                at_end.entry(e).or_default().push(ci);
                let mut n = node;
                loop {
                    below.entry(n).or_default().push(ci);
                    if n == 0 {
                        break;
                    }
                    let (parent, _) = nodes[n as usize];
                    children.entry(parent).or_default().insert(n);
                    n = parent;
                }
            }
        }
        for (p, cs) in children {
            plan.children.insert(p, cs.into_iter().map(|c| (c, nodes[c as usize].1)).collect());
        }
        for (n, es) in ends {
            plan.ends.insert(n, es.into_iter().collect());
        }
        // The plans below nodes, children first (a child's id is larger than its parent's).
        let mut in_plan: Vec<u32> = plan.children.keys().chain(plan.ends.keys()).copied().collect();
        in_plan.sort_unstable_by(|a, b| b.cmp(a));
        in_plan.dedup();
        for n in in_plan {
            let ends = plan.ends.get(&n).cloned().unwrap_or_default();
            let kids = plan
                .children
                .get(&n)
                .map(|cs| cs.iter().map(|&(c, step)| (c, step, plan.below(c))).collect())
                .unwrap_or_default();
            let key = (ends, kids, if n == 0 { thread } else { u32::MAX });
            let next = self.sub_plans.len() as u32 + 1;
            let id = *self.sub_plans.entry(key).or_insert(next);
            plan.below.insert(n, id);
        }
        let below: FastMap<u32, u32> = below.into_iter().map(|(n, v)| (n, sets.intern(v))).collect();
        let at_end: FastMap<u32, u32> = at_end.into_iter().map(|(e, v)| (e, sets.intern(v))).collect();
        self.comp.set_plan(plan);
        self.comp.budget = self.work_budget;
        self.configs_before = self.configs.len();

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

        let max_states = self.max_states;
        let mut index: FastMap<Vec<(u32, u32)>, u32> = FastMap::default();
        let mut contents: Vec<Vec<(u32, u32)>> = Vec::new();
        let mut queue = VecDeque::new();
        let mut intern = |v: Vec<(u32, u32)>, contents: &mut Vec<Vec<(u32, u32)>>, queue: &mut VecDeque<u32>| {
            if v.is_empty() {
                return Ok(DEAD);
            }
            if let Some(&id) = index.get(&v) {
                return Ok(id);
            }
            let id = contents.len() as u32;
            if contents.len() >= max_states {
                return Err(TooLarge);
            }
            index.insert(v.clone(), id);
            contents.push(v);
            queue.push_back(id);
            Ok(id)
        };
        let start = intern(entries.into_iter().collect(), &mut contents, &mut queue)?;
        let mut states: Vec<DState> = Vec::new();
        let lr_states = self.comp.lr.tables.num_states;
        while let Some(d) = queue.pop_front() {
            let state = contents[d as usize].clone();
            let mut all_labels = false;
            let mut labels: BTreeSet<u32> = BTreeSet::new();
            for &(c, _) in &state {
                match self.labels_of(c) {
                    None => all_labels = true,
                    Some(l) => labels.extend(l.iter().copied()),
                }
            }
            let labels: Vec<u32> = if all_labels { (0..lr_states).collect() } else { labels.into_iter().collect() };
            // (`parts`: (configuration, class set) in the order found, grouped by configuration
            // with a stable sort: each configuration's parts are united in that order.)
            let mut rho_parts = Vec::new();
            let mut parts: Vec<(u32, u32)> = Vec::new();
            let mut united = Vec::new();
            let mut step = |label: Option<u32>, det: &mut Self, sets: &mut SetPool| {
                rho_parts.clear();
                parts.clear();
                for &(c, s) in &state {
                    for &id in det.read_ids(c, label).iter() {
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
            let default = (intern(dn, &mut contents, &mut queue)?, drho);
            let mut edges = Vec::new();
            for x in labels {
                let (n, rho) = step(Some(x), self, &mut sets);
                if self.comp.exhausted {
                    return Err(TooLarge);
                }
                let target = intern(n, &mut contents, &mut queue)?;
                if (target, rho) != default {
                    edges.push((x, target, rho));
                }
            }
            debug_assert_eq!(states.len(), d as usize);
            states.push(DState { edges, default });
        }
        Ok(LocalDwa { start, start_rho, states, sets })
    }
}
