//! Weighted determinization (ALGORITHM.md §4.2–4.3): the Parser DWA of one lexer state.
//!
//! A DWA state is a map from configurations ([`Config`]) to the token classes still riding on
//! them (absolute residuals: the state alone says which tokens are undecided). Reading a real
//! stack state moves every configuration one read further; the classes of configurations that
//! accept are the edge's output, the rest form the next state. Token classes are those of the
//! lexer state ([`TokenClass`]), so weights are small sets, interned with memoized unions.
//! Explicit edges equal to the DEFAULT edge are dropped.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use dwac_runtime::DEAD;

use super::compose::{Composer, Config, Labels, Settled, ANY};
use super::sets::SetPool;
use super::terminal_dwa::{Sig, TokenClass};

/// A settled id meaning "the lexing is accepted" (others are configuration ids).
const ACCEPT: u32 = u32::MAX;
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

pub struct Determinizer<'a> {
    pub comp: Composer<'a>,
    configs: Vec<Config>,
    config_ids: HashMap<Config, u32>,
    reads: HashMap<(u32, u32), Box<[u32]>>,
    labels: HashMap<u32, Option<Box<[u32]>>>,
    starts: HashMap<Sig, Box<[u32]>>,
    /// States a single lexer state's DWA may have.
    pub max_states: usize,
}

impl<'a> Determinizer<'a> {
    pub fn new(comp: Composer<'a>, max_states: usize) -> Determinizer<'a> {
        Determinizer {
            comp,
            configs: Vec::new(),
            config_ids: HashMap::new(),
            reads: HashMap::new(),
            labels: HashMap::new(),
            starts: HashMap::new(),
            max_states,
        }
    }

    pub fn num_configs(&self) -> usize {
        self.configs.len()
    }

    fn ids(&mut self, settled: Vec<Settled>) -> Box<[u32]> {
        let mut v: Vec<u32> = settled
            .into_iter()
            .map(|s| match s {
                Settled::Accept => ACCEPT,
                Settled::Config(c) => match self.config_ids.get(&c) {
                    Some(&id) => id,
                    None => {
                        let id = self.configs.len() as u32;
                        self.configs.push(c.clone());
                        self.config_ids.insert(c, id);
                        id
                    }
                },
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v.into_boxed_slice()
    }

    fn start_ids(&mut self, sig: Sig) -> Box<[u32]> {
        if let Some(s) = self.starts.get(&sig) {
            return s.clone();
        }
        let mut out = Vec::new();
        self.comp.start(sig.0, sig.1, Vec::new(), &mut out);
        let ids = self.ids(out);
        self.starts.insert(sig, ids.clone());
        ids
    }

    fn read_ids(&mut self, c: u32, label: Option<u32>) -> Box<[u32]> {
        let key = (c, label.unwrap_or(DEFAULT));
        if let Some(r) = self.reads.get(&key) {
            return r.clone();
        }
        let mut out = Vec::new();
        let config = self.configs[c as usize].clone();
        self.comp.read(&config, label, &mut out);
        let ids = self.ids(out);
        self.reads.insert(key, ids.clone());
        ids
    }

    /// The labels configuration `c` tells apart (`None`: all).
    fn labels_of(&mut self, c: u32) -> Option<Box<[u32]>> {
        if let Some(l) = self.labels.get(&c) {
            return l.clone();
        }
        let config = self.configs[c as usize].clone();
        let l = match self.comp.labels(&config) {
            Labels::All => None,
            Labels::Some(v) => Some(v.into_boxed_slice()),
        };
        self.labels.insert(c, l.clone());
        l
    }

    /// Is a lexing with no steps and lookahead `class` allowed on every stack a thread of lookahead
    /// class `thread` can have? (`ALWAYS`: every live stack satisfies the thread's own class.)
    fn always(&self, sig: Sig, thread: u32) -> bool {
        if sig.0 != 0 {
            return false;
        }
        if sig.1 == ANY {
            return true;
        }
        if thread == ANY {
            return false;
        }
        let (have, need) = (self.comp.terms.get(sig.1), self.comp.terms.get(thread));
        need.iter().all(|t| have.binary_search(t).is_ok())
    }

    /// The DWA for a thread of lookahead class `thread` whose tokens form `classes`.
    pub fn build(&mut self, classes: &[TokenClass], thread: u32) -> Result<LocalDwa, TooLarge> {
        let mut sets = SetPool::new();
        let mut entries: BTreeMap<u32, u32> = BTreeMap::new();
        let mut start_rho = 0;
        for (ci, cls) in classes.iter().enumerate() {
            let single = sets.intern(vec![ci as u32]);
            for &sig in &cls.sigs {
                if self.always(sig, thread) {
                    start_rho = sets.union(start_rho, single);
                    continue;
                }
                for &id in self.start_ids(sig).iter() {
                    if id == ACCEPT {
                        start_rho = sets.union(start_rho, single);
                    } else {
                        let e = entries.entry(id).or_insert(0);
                        *e = sets.union(*e, single);
                    }
                }
            }
        }
        let max_states = self.max_states;
        let mut index: HashMap<Vec<(u32, u32)>, u32> = HashMap::new();
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
            let mut all = false;
            let mut labels: BTreeSet<u32> = BTreeSet::new();
            for &(c, _) in &state {
                match self.labels_of(c) {
                    None => all = true,
                    Some(l) => labels.extend(l.iter().copied()),
                }
            }
            let labels: Vec<u32> = if all { (0..lr_states).collect() } else { labels.into_iter().collect() };
            let step = |label: Option<u32>, det: &mut Self, sets: &mut SetPool| {
                let mut rho = 0;
                let mut next: BTreeMap<u32, u32> = BTreeMap::new();
                for &(c, s) in &state {
                    for &id in det.read_ids(c, label).iter() {
                        if id == ACCEPT {
                            rho = sets.union(rho, s);
                        } else {
                            let e = next.entry(id).or_insert(0);
                            *e = sets.union(*e, s);
                        }
                    }
                }
                (next.into_iter().collect::<Vec<_>>(), rho)
            };
            let (dn, drho) = step(None, self, &mut sets);
            let default = (intern(dn, &mut contents, &mut queue)?, drho);
            let mut edges = Vec::new();
            for x in labels {
                let (n, rho) = step(Some(x), self, &mut sets);
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
