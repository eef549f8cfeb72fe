//! Composition (docs/CONSTRUCTION.md "The Parser DWA", step 3): what the lexings of a lexer state's tokens do to a stack.
//!
//! A lexing is a sequence of [`Step`]s (a lexeme's terminals to shift, or a guarded ignored
//! terminal) followed by a lookahead check: the pending partial lexeme must still be able to become
//! a terminal that can be shifted (one-lexeme lookahead, ARCHITECTURE.md "The contract"). The lexings of a lexer
//! state's tokens form a trie of steps ([`Plan`]): a node is a step sequence, its children extend it
//! by one step, and its *ends* are lexings that stop there, each with a lookahead class.
//!
//! A [`Config`] is a position in that trie on one stack read top-down: the step in progress (or
//! the end whose lookahead is being checked) and the simulations in flight. Each step runs its
//! terminals' templates ([`templates`](super::templates)) on the known segment the previous step
//! left, so pushes of one terminal are consumed by the pops of the next before anything of the real
//! stack is read: the push/pop cancellation of docs/CONSTRUCTION.md "The Parser DWA", step 3. A finished step continues into every
//! child and end of its node: lexings with a common beginning share its simulation, and the token
//! classes riding on a configuration are split among the children by the determinizer.
//!
//! **Priorities** (ARCHITECTURE.md, "The contract") are per stack: a step carries a *guard*, the higher-priority
//! terminals that matched the same lexeme. On a stack where a guard terminal can be shifted, the step
//! dies. A guard can need deeper reads than the step itself; its outcomes then wait in `done` and
//! absorb each real state read meanwhile, which is why such a configuration needs every label
//! explicit ([`Labels::All`]).

use std::rc::Rc;
use std::sync::Arc;

use super::race::{Race, FORWARD_EXPANSION, FORWARD_READ};
use super::FastMap;

use super::set_pool::SetPool;
use super::templates::{Lr, Outcome, Read, Wait};

/// One lexeme of a lexing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Step {
    /// Shift one of the terminals of set `terms` (same-length matches of equal priority: a GLR
    /// fork, every one tried), unless a terminal of the guard set can be shifted. Set ids are in
    /// [`Composer::terms`].
    Shift {
        /// The id of the set of terminals to shift.
        terms: u32,
        /// The id of the guard set: the higher-priority terminals that matched the same lexeme
        /// (0: none).
        guard: u32,
    },
    /// An ignored terminal, used only where no terminal of the (non-empty) guard set can be shifted.
    Pass {
        /// The id of the guard set in [`Composer::terms`] (never the empty set).
        guard: u32,
    },
}

/// The lookahead class of a lexing's end: any terminal may come ([`ANY`]: the pending lexeme is
/// empty or can become an ignored terminal), or one of a set of terminals must be shiftable.
pub const ANY: u32 = u32::MAX;

/// The trie of a lexer state's lexings: children (node, step) and ends (end id, lookahead class)
/// per node. Node 0 is the empty sequence. End ids are global (`Composer::end`).
#[derive(Default)]
pub struct Plan {
    /// Per node: its children as (child node, step), in step order.
    pub children: FastMap<u32, Vec<(u32, Step)>>,
    /// Per node: the lexings that end there as (end id, lookahead class), in class order.
    pub ends: FastMap<u32, Vec<(u32, u32)>>,
    /// The lookahead class of the thread itself: an end at the root whose class covers it is
    /// allowed without reading (`ALWAYS`: every live stack of the thread satisfies its own class).
    pub thread: u32,
    /// Per node with children or ends: the id of the plan below it (its ends' lookahead classes,
    /// and its children's steps with the plans below them; at the root, the thread's class too),
    /// interned across lexer states ([`NO_PLAN`]: nothing below). It names no node or end: two
    /// nodes with the same one, in one lexer state or two, have the same subtree up to renaming,
    /// children taken in step order and ends in class order (the order `children` and `ends`
    /// keep). What a configuration at a node does depends on the plan only through it, so the
    /// memos of expansions and reads are kept across lexer states under it, and an expansion is
    /// shared between nodes ([`Composer::expand`]).
    pub below: FastMap<u32, u32>,
}

/// The id of the empty plan below a node (no children, no ends).
pub const NO_PLAN: u32 = 0;

impl Plan {
    /// The id of the plan below `node` (see [`Plan::below`]).
    pub fn below(&self, node: u32) -> u32 {
        self.below.get(&node).copied().unwrap_or(NO_PLAN)
    }
}

/// What a configuration is doing: a step of the lexing trie, or the lookahead check of an end.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// Doing the step of trie node `node`: `main` are its waiting simulations (terminal, wait),
    /// `done` its shifted stacks held while the `guard` simulations (terminal, wait) are undecided.
    Step {
        /// The trie node whose step is in progress.
        node: u32,
        /// The step's own simulations waiting for the real stack, as (terminal, wait).
        main: Rc<[(u32, Wait)]>,
        /// Known segments after shifting, held until the guard simulations are decided.
        done: Rc<[Vec<u32>]>,
        /// The guard terminals' simulations waiting for the real stack, as (terminal, wait): if
        /// one can shift, the step dies.
        guard: Rc<[(u32, Wait)]>,
    },
    /// The lookahead check of end `end`: some terminal of its class can be shifted.
    Look {
        /// The end id ([`Composer::end`]) whose lookahead is checked.
        end: u32,
        /// The class's terminals' simulations waiting for the real stack, as (terminal, wait).
        sims: Rc<[(u32, Wait)]>,
    },
}

/// A position in a lexing trie on one stack: every simulation in it waits for the next real state
/// of that stack.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Config {
    /// The step in progress or the lookahead check, with its waiting simulations.
    pub phase: Phase,
}

/// Where a lexing stands once it has run as far as it can without reading a real state: accepted,
/// or a configuration waiting for the next real state.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Settled {
    /// The lexing ending at this end id is possible on this stack: its tokens are allowed.
    Accept(u32),
    /// A configuration waiting for the next real state of the stack.
    Config(Config),
}

/// Which real states a configuration tells apart.
pub enum Labels {
    /// Every state (held outcomes absorb the state read).
    All,
    /// These states; any other has the DEFAULT effect.
    Some(Vec<u32>),
}

/// The most outcomes one expansion may collect (its own and its sub-expansions', memo hits
/// included) before its lexer state is over the work budget: a time and memory bound for
/// lexings that reach very many *distinct* stacks. (Repeats are merged as they are found, so an
/// ambiguous character-level grammar, whose 2^(n-1) splits of an n-letter word end on a few
/// stacks, stays far below it: `dedup_in_order`.)
const MAX_OUTCOMES: u64 = 1 << 16;

/// Runs lexings on stacks: the LR tables, the terminal sets, the end ids and the current plan.
pub struct Composer<'a> {
    /// The LR tables, with the simulations' label sets.
    pub lr: Lr<'a>,
    /// The terminal sets that steps, guards and lookahead classes name, by id (a mirror of the
    /// walker's pool).
    pub terms: SetPool,
    plan: Rc<Plan>,
    ends: Vec<(u32, u32)>,
    end_ids: FastMap<(u32, u32), u32>,
    /// Expansions keyed by (plan below the node, whether the key is the whole known segment,
    /// the segment or the part of it above its bottom), with the nodes and ends of the outcomes
    /// named by their place in the node's subtree ([`Subtree`]): the same for every node, in any
    /// lexer state, with that plan below it, and, for an expansion that never looked at the
    /// segment's bottom (a state read), for every state read there.
    /// (Keys as [`expansion_key`] lays them out, so that a lookup borrows a scratch buffer.)
    expansions: FastMap<Vec<u32>, Vec<Settled>>,
    /// Scratch for expansion keys.
    key: Vec<u32>,
    /// The current plan's nodes and ends in canonical order (for [`Subtree`]s).
    order: Rc<Preorder>,
    /// Lookahead checks by (class, known segment): `None` if some terminal of the class can be
    /// shifted, else the simulations left waiting; and whether the check looked at the
    /// segment's bottom beyond a first lookup ([`Lr::bottom_touched`]).
    #[allow(
        clippy::type_complexity,
        reason = "a memo table whose key and value are documented above; a named type would be used only here"
    )]
    looks: FastMap<(u32, Vec<u32>), (Option<Rc<[(u32, Wait)]>>, bool)>,
    /// Expansions done for the current plan, and the most allowed (work budget): past it,
    /// `exhausted` is set and expansions stop producing outcomes.
    pub work: u64,
    /// The most work allowed for the current plan (`u64::MAX`: no limit).
    pub budget: u64,
    /// The work budget is exceeded (or one expansion collected too many outcomes): expansions
    /// stop producing outcomes, and the lexer state's build fails.
    pub exhausted: bool,
    /// Configurations read in the current plan's DWA states (counted by the determinizer).
    pub(crate) reads: u64,
    /// A race the build under way runs against a saturation ([`Race`]): once the build has
    /// lost it, it stops as if over budget (checked every few hundred expansions and every DWA
    /// state).
    pub(crate) race: Option<Arc<Race>>,
    /// The work at which the race is next looked at.
    check_race_at: u64,
}

/// The plan's nodes and ends in its canonical order: depth first from the root, children in
/// step order, each node's ends (in class order) right after it. The nodes and ends below a node
/// (itself included) are a contiguous run of each list, and nodes with the same plan below them
/// ([`Plan::below`]) have runs that correspond place by place: a node's or end's place below an
/// ancestor is its rank minus the ancestor's ([`Subtree`]).
#[derive(Default)]
struct Preorder {
    nodes: Vec<u32>,
    ends: Vec<u32>,
    /// Per node id, its rank (`u32::MAX`: not in the plan); as long as the largest node id
    /// met so far (the vector is reused from plan to plan, only its plan's entries reset).
    node_rank: Vec<u32>,
    /// Per end id, its rank, the same way.
    end_rank: Vec<u32>,
    /// Per node rank: the ends ranked before the node (the rank of its first end, if any).
    ends_before: Vec<u32>,
}

impl Preorder {
    /// The preorder of `plan`, in the vectors of an earlier one (`reuse`) if there is one.
    fn of(plan: &Plan, reuse: Option<Preorder>) -> Preorder {
        let mut t = reuse.unwrap_or_default();
        for &n in &t.nodes {
            t.node_rank[n as usize] = u32::MAX;
        }
        for &e in &t.ends {
            t.end_rank[e as usize] = u32::MAX;
        }
        t.nodes.clear();
        t.ends.clear();
        t.ends_before.clear();
        let mut stack = vec![0];
        while let Some(n) = stack.pop() {
            if t.node_rank.len() <= n as usize {
                t.node_rank.resize(n as usize + 1, u32::MAX);
            }
            t.node_rank[n as usize] = t.nodes.len() as u32;
            t.nodes.push(n);
            t.ends_before.push(t.ends.len() as u32);
            for &(e, _) in plan.ends.get(&n).map_or(&[][..], |v| v) {
                if t.end_rank.len() <= e as usize {
                    t.end_rank.resize(e as usize + 1, u32::MAX);
                }
                t.end_rank[e as usize] = t.ends.len() as u32;
                t.ends.push(e);
            }
            // (Pushed in reverse: popped in step order.)
            stack.extend(plan.children.get(&n).map_or(&[][..], |v| v).iter().rev().map(|&(c, _)| c));
        }
        t
    }
}

/// The nodes and ends below a node (itself included), by place: their ranks in the plan's
/// [`Preorder`] from the node's own on.
struct Subtree<'p> {
    order: &'p Preorder,
    node0: u32,
    end0: u32,
}

impl<'p> Subtree<'p> {
    fn of(order: &'p Preorder, root: u32) -> Subtree<'p> {
        let node0 = order.node_rank[root as usize];
        Subtree { order, node0, end0: order.ends_before[node0 as usize] }
    }

    /// An outcome with its node or end replaced: `f(node)` for a node, `g(end)` for an end.
    fn rename(s: &Settled, f: impl Fn(u32) -> u32, g: impl Fn(u32) -> u32) -> Settled {
        match s {
            Settled::Accept(e) => Settled::Accept(g(*e)),
            Settled::Config(Config { phase: Phase::Step { node, main, done, guard } }) => Settled::Config(Config {
                phase: Phase::Step { node: f(*node), main: main.clone(), done: done.clone(), guard: guard.clone() },
            }),
            Settled::Config(Config { phase: Phase::Look { end, sims } }) => {
                Settled::Config(Config { phase: Phase::Look { end: g(*end), sims: sims.clone() } })
            }
        }
    }

    /// Absolute ids → places in this subtree.
    fn to_places(&self, s: &Settled) -> Settled {
        Self::rename(
            s,
            |n| self.order.node_rank[n as usize] - self.node0,
            |e| self.order.end_rank[e as usize] - self.end0,
        )
    }

    /// Places in this subtree → absolute ids.
    fn to_ids(&self, s: &Settled) -> Settled {
        Self::rename(s, |n| self.order.nodes[(self.node0 + n) as usize], |e| self.order.ends[(self.end0 + e) as usize])
    }
}

/// The key of an expansion in [`Composer::expand`]'s memo: the plan below the node, whether the
/// key is the whole known segment (1) or the part of it above its bottom (0), then that segment.
fn expansion_key(key: &mut Vec<u32>, below: u32, whole: bool, segment: &[u32]) {
    key.clear();
    key.push(below);
    key.push(u32::from(whole));
    key.extend_from_slice(segment);
}

/// Lookahead checks memoized at most (a memory bound; past it, checks are recomputed).
const MAX_LOOKS: usize = 1 << 20;

/// Drop repeated elements, keeping each one's first place (the order is left as built, so that
/// lists without repeats are unchanged).
fn dedup_in_order<T: Clone + Eq + std::hash::Hash>(v: &mut Vec<T>) {
    if v.len() < 2 {
        return;
    }
    if v.len() <= 16 {
        let mut i = 1;
        while i < v.len() {
            if v[..i].contains(&v[i]) {
                v.remove(i);
            } else {
                i += 1;
            }
        }
        return;
    }
    let mut seen = std::collections::HashSet::with_capacity_and_hasher(v.len(), foldhash::fast::FixedState::default());
    v.retain(|x| seen.insert(x.clone()));
}

fn canon<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort_unstable();
    v.dedup();
    v
}

impl<'a> Composer<'a> {
    /// A composer over `lr`, its terminal pool holding only the empty set, with an empty plan and
    /// no work budget.
    pub fn new(lr: Lr<'a>) -> Composer<'a> {
        Composer {
            lr,
            terms: SetPool::new(),
            plan: Default::default(),
            ends: Vec::new(),
            end_ids: FastMap::default(),
            expansions: FastMap::default(),
            key: Vec::new(),
            order: Default::default(),
            looks: FastMap::default(),
            work: 0,
            budget: u64::MAX,
            exhausted: false,
            reads: 0,
            race: None,
            check_race_at: 0,
        }
    }

    /// Use `plan` for the lexings of the next lexer state.
    pub fn set_plan(&mut self, plan: Plan) {
        // (The last plan's preorder lends its vectors: nothing else holds it between plans.)
        let reuse = Rc::try_unwrap(std::mem::take(&mut self.order)).ok();
        self.order = Rc::new(Preorder::of(&plan, reuse));
        self.plan = Rc::new(plan);
        self.work = 0;
        self.reads = 0;
        self.check_race_at = 0;
        self.exhausted = false;
    }

    /// The id of the plan below `node` in the current plan.
    pub fn plan_below(&self, node: u32) -> u32 {
        self.plan.below(node)
    }

    /// Expansions memoized (across lexer states).
    pub fn memoized(&self) -> usize {
        self.expansions.len()
    }

    /// The current plan's build so far, in [`Race`] ticks.
    pub(crate) fn ticks(&self) -> u64 {
        self.work.saturating_mul(FORWARD_EXPANSION).saturating_add(self.reads.saturating_mul(FORWARD_READ))
    }

    /// Has the build under way lost its race ([`Composer::race`])?
    pub(crate) fn stopped(&self) -> bool {
        self.race.as_ref().is_some_and(|r| r.forward_lost(self.ticks()))
    }

    /// [`Composer::stopped`], looked at again a few hundred expansions on; or the compile asked
    /// to stop (`threads::Stop`): the build then fails at once, as past its budget.
    fn race_lost(&mut self) -> bool {
        self.check_race_at = self.work + 256;
        self.stopped() || crate::threads::stopping()
    }

    /// Forget the memoized expansions (a memory bound).
    pub fn forget(&mut self) {
        self.expansions.clear();
    }

    /// The id of the end (trie node, lookahead class).
    pub fn end(&mut self, node: u32, class: u32) -> u32 {
        if let Some(&e) = self.end_ids.get(&(node, class)) {
            return e;
        }
        let e = self.ends.len() as u32;
        self.ends.push((node, class));
        self.end_ids.insert((node, class), e);
        e
    }

    fn end_class(&self, e: u32) -> u32 {
        self.ends[e as usize].1
    }

    /// Continue every lexing through trie node `node` from known segment `k`.
    ///
    /// Memoized under the plan below `node` (so across nodes and lexer states, outcomes named by
    /// their place in the subtree): an expansion is a function of that plan and `k`. Below the
    /// bottom of `k` is a state read for some configuration: an expansion that did not look at
    /// it is memoized without it, and is the same whichever state that was.
    pub fn expand(&mut self, node: u32, k: Vec<u32>, out: &mut Vec<Settled>) {
        // (Past the work budget the build fails whatever comes next: stop at once, memo hits
        // included, rather than finishing the expansions already under way.)
        if self.exhausted {
            return;
        }
        let below = self.plan.below(node);
        let order = Rc::clone(&self.order);
        let sub = Subtree::of(&order, node);
        // An expansion whose outcome list grows past `MAX_OUTCOMES` is over the work budget by
        // itself: stop before building the list (memo hits are not counted as work otherwise,
        // and an expansion over many stacks can collect them by the million).
        let cap = self.budget.min(MAX_OUTCOMES);
        let over = |out: &Vec<Settled>, more: usize| (out.len() + more) as u64 > cap;
        let mut key = std::mem::take(&mut self.key);
        // (The part above the bottom, then the whole segment.)
        for whole in [false, true] {
            if !whole && k.len() < 2 {
                continue;
            }
            expansion_key(&mut key, below, whole, &k[usize::from(!whole)..]);
            if let Some(r) = self.expansions.get(&key[..]) {
                if over(out, r.len()) {
                    self.exhausted = true;
                } else {
                    out.extend(r.iter().map(|s| sub.to_ids(s)));
                    if whole {
                        self.lr.bottom_touched.set(true);
                    }
                }
                self.key = key;
                return;
            }
        }
        self.key = key;
        self.work += 1;
        if self.work > self.budget || (self.work >= self.check_race_at && self.race_lost()) {
            self.exhausted = true;
            return;
        }
        let outer = self.lr.bottom_touched.replace(false);
        let mut local = Vec::new();
        let plan = Rc::clone(&self.plan);
        if let Some(ends) = plan.ends.get(&node) {
            for &(e, class) in ends {
                if node == 0 && self.always(class) {
                    local.push(Settled::Accept(e));
                } else {
                    self.begin_look(e, class, k.clone(), &mut local);
                }
            }
        }
        if let Some(children) = plan.children.get(&node) {
            for &(c, step) in children {
                self.begin_step(c, step, k.clone(), &mut local);
            }
        }
        let touched = self.lr.bottom_touched.get();
        // The same outcome reached along different lexings or parses (an ambiguous grammar's
        // segmentations: `word+` over `LETTER+`) is one outcome: without this, the list doubles
        // with every character of such a token.
        dedup_in_order(&mut local);
        // Outcomes count as work too: they are what the memo holds.
        self.work += local.len() as u64;
        if over(out, local.len()) {
            self.exhausted = true;
        }
        // (An expansion cut short by the work budget is not memoized, and the build fails:
        // its outcomes are dropped.)
        if !self.exhausted {
            let whole = k.len() < 2 || touched;
            let mut key = Vec::with_capacity(k.len() + 2);
            expansion_key(&mut key, below, whole, &k[usize::from(!whole)..]);
            self.expansions.insert(key, local.iter().map(|s| sub.to_places(s)).collect());
            out.extend(local);
        }
        self.lr.bottom_touched.set(outer || touched);
    }

    /// Does lookahead class `class` cover the thread's own class (`ALWAYS`)?
    fn always(&self, class: u32) -> bool {
        let thread = self.plan.thread;
        if class == ANY {
            return true;
        }
        if thread == ANY {
            return false;
        }
        let (have, need) = (self.terms.get(class), self.terms.get(thread));
        need.iter().all(|t| have.binary_search(t).is_ok())
    }

    /// The terminals of set `set` whose run on known segment `k` can do anything: on a
    /// non-empty segment, those with an action on its top state (the others neither shift,
    /// reduce nor wait: [`Lr::run`] looks up nothing else first), found by merging the sorted
    /// set with the state's ACTION row; on an empty one, all (they wait for a peek).
    fn acting(&self, set: u32, k: &[u32]) -> Vec<u32> {
        let terms = self.terms.get(set);
        let Some(&top) = k.last() else { return terms.to_vec() };
        if k.len() == 1 {
            // (The row read is the segment's bottom, as `Lr::run` would have read it.)
            self.lr.bottom_touched.set(true);
        }
        super::set_pool::intersect_sorted(terms, self.lr.tables.action_terminals(top))
    }

    fn begin_step(&mut self, node: u32, step: Step, k: Vec<u32>, out: &mut Vec<Settled>) {
        let guard_set = match step {
            Step::Shift { guard, .. } | Step::Pass { guard } => guard,
        };
        let mut guard = Vec::new();
        for g in self.acting(guard_set, &k) {
            let mut o = Outcome::default();
            self.lr.run(g, k.clone(), &mut o);
            if o.success {
                return; // a higher-priority terminal can be shifted on this stack
            }
            guard.extend(o.waiting.into_iter().map(|w| (g, w)));
        }
        let (main, done) = match step {
            Step::Shift { terms, .. } => {
                let mut main = Vec::new();
                let mut done = Vec::new();
                for t in self.acting(terms, &k) {
                    let mut o = Outcome::default();
                    self.lr.run(t, k.clone(), &mut o);
                    main.extend(o.waiting.into_iter().map(|w| (t, w)));
                    done.extend(o.shifted);
                }
                (main, done)
            }
            Step::Pass { .. } => (Vec::new(), vec![k]),
        };
        self.settle_step(node, main, done, guard, out);
    }

    fn begin_look(&mut self, end: u32, class: u32, k: Vec<u32>, out: &mut Vec<Settled>) {
        if class == ANY {
            out.push(Settled::Accept(end));
            return;
        }
        // The check depends only on (class, known segment): memoized for every end, lexer
        // state and configuration (a class can hold hundreds of terminals, each a simulation).
        let key = (class, k);
        let (look, touched) = match self.looks.get(&key) {
            Some(r) => r.clone(),
            None => {
                let outer = self.lr.bottom_touched.replace(false);
                let mut sims = Vec::new();
                let mut accept = false;
                for t in self.acting(class, &key.1) {
                    let mut o = Outcome::default();
                    self.lr.run(t, key.1.clone(), &mut o);
                    if o.success {
                        accept = true;
                        break;
                    }
                    sims.extend(o.waiting.into_iter().map(|w| (t, w)));
                }
                let look: Option<Rc<[(u32, Wait)]>> = (!accept).then(|| canon(sims).into());
                let touched = self.lr.bottom_touched.get();
                self.lr.bottom_touched.set(outer || touched);
                if self.looks.len() < MAX_LOOKS {
                    self.looks.insert(key, (look.clone(), touched));
                }
                (look, touched)
            }
        };
        if touched {
            self.lr.bottom_touched.set(true);
        }
        match look {
            None => out.push(Settled::Accept(end)),
            Some(sims) if !sims.is_empty() => out.push(Settled::Config(Config { phase: Phase::Look { end, sims } })),
            Some(_) => {}
        }
    }

    /// After a step's simulations have run as far as they can without reading.
    fn settle_step(
        &mut self,
        node: u32,
        main: Vec<(u32, Wait)>,
        done: Vec<Vec<u32>>,
        guard: Vec<(u32, Wait)>,
        out: &mut Vec<Settled>,
    ) {
        if guard.is_empty() {
            for k in canon(done) {
                self.expand(node, k, out);
            }
            if !main.is_empty() {
                let phase = Phase::Step { node, main: canon(main).into(), done: Rc::from([]), guard: Rc::from([]) };
                out.push(Settled::Config(Config { phase }));
            }
        } else if !(main.is_empty() && done.is_empty()) {
            if !done.is_empty() {
                // Held outcomes carry the bottom state: the result depends on it.
                self.lr.bottom_touched.set(true);
            }
            let phase =
                Phase::Step { node, main: canon(main).into(), done: canon(done).into(), guard: canon(guard).into() };
            out.push(Settled::Config(Config { phase }));
        }
    }

    /// The simulations of `sims` (sorted by terminal) that can do anything on reading `label`:
    /// a peek of a state without an action for its terminal (or of an unnamed state) dies, so
    /// only the terminals of the state's ACTION row are looked at (a merge of two sorted lists,
    /// not a lookup per simulation: a lookahead class can hold hundreds of terminals).
    fn live_sims(&self, sims: &[(u32, Wait)], label: Option<u32>, out: &mut Vec<(u32, Wait)>) {
        out.clear();
        let row: &[u32] = match label {
            Some(p) => self.lr.tables.action_terminals(p),
            None => &[],
        };
        let mut i = 0;
        for &(t, w) in sims {
            if w != Wait::Peek {
                out.push((t, w));
                continue;
            }
            while i < row.len() && row[i] < t {
                i += 1;
            }
            if i < row.len() && row[i] == t {
                out.push((t, w));
            }
        }
    }

    /// Read the next real state of the stack (`None`: a state none of `labels(c)` names).
    pub fn read(&mut self, c: &Config, label: Option<u32>, out: &mut Vec<Settled>) {
        let mut live = Vec::new();
        match &c.phase {
            Phase::Step { node, main, done, guard } => {
                let mut new_guard = Vec::new();
                self.live_sims(guard, label, &mut live);
                for &(g, w) in &live {
                    let o = self.read_sim(g, w, label);
                    match o {
                        Err(w2) => new_guard.push((g, w2)),
                        Ok(o) => {
                            if o.success {
                                return;
                            }
                            new_guard.extend(o.waiting.into_iter().map(|w| (g, w)));
                        }
                    }
                }
                // Held outcomes keep the state just read below their known segment.
                let mut new_done = Vec::new();
                if !done.is_empty() {
                    let Some(p) = label else { return };
                    for k in done.iter() {
                        let mut k2 = Vec::with_capacity(k.len() + 1);
                        k2.push(p);
                        k2.extend_from_slice(k);
                        new_done.push(k2);
                    }
                }
                let mut new_main = Vec::new();
                self.live_sims(main, label, &mut live);
                for &(t, w) in &live {
                    match self.read_sim(t, w, label) {
                        Err(w2) => new_main.push((t, w2)),
                        Ok(o) => {
                            new_main.extend(o.waiting.into_iter().map(|w| (t, w)));
                            new_done.extend(o.shifted);
                        }
                    }
                }
                self.settle_step(*node, new_main, new_done, new_guard, out);
            }
            Phase::Look { end, sims } => {
                let mut new_sims = Vec::new();
                self.live_sims(sims, label, &mut live);
                for &(t, w) in &live {
                    match self.read_sim(t, w, label) {
                        Err(w2) => new_sims.push((t, w2)),
                        Ok(o) => {
                            if o.success {
                                out.push(Settled::Accept(*end));
                                return;
                            }
                            new_sims.extend(o.waiting.into_iter().map(|w| (t, w)));
                        }
                    }
                }
                if !new_sims.is_empty() {
                    out.push(Settled::Config(Config {
                        phase: Phase::Look { end: *end, sims: canon(new_sims).into() },
                    }));
                }
            }
        }
    }

    /// One waiting simulation of `t` reads `label`: still waiting (`Err`), or run on.
    fn read_sim(&self, t: u32, w: Wait, label: Option<u32>) -> Result<Outcome, Wait> {
        let mut o = Outcome::default();
        match self.lr.read(w, label) {
            Read::Wait(w2) => return Err(w2),
            Read::Run(k) => self.lr.run(t, k, &mut o),
            Read::Peek(p) => self.lr.run_peek(t, p, &mut o),
            Read::Dead => {}
        }
        Ok(o)
    }

    /// What reading `p` tells the simulations of `c` before anything else runs (see
    /// [`Lr::first_use`]): when a read touches nothing else of `p`, its outcome is the same for
    /// every state with this signature.
    ///
    /// Only live simulations (`Composer::live_sims`) are looked at, each with its terminal
    /// (a dead peek does nothing whatever the state, so two states that differ only in which
    /// dead peeks they kill still differ in which simulations are live, hence in the terminals
    /// listed).
    pub fn first_uses(&self, c: &Config, p: u32, out: &mut Vec<u32>) {
        let mut live = Vec::new();
        let lists: [&[(u32, Wait)]; 2] = match &c.phase {
            Phase::Step { main, guard, .. } => [main, guard],
            Phase::Look { sims, .. } => [sims, &[]],
        };
        for (i, sims) in lists.into_iter().enumerate() {
            // (The main and guard lists are told apart by a separator.)
            out.push(u32::MAX - 2 - i as u32);
            self.live_sims(sims, Some(p), &mut live);
            for &(t, w) in &live {
                out.push(t);
                self.lr.first_use(t, w, p, out);
            }
        }
    }

    /// The real states `c` tells apart.
    pub fn labels(&mut self, c: &Config) -> Labels {
        let mut v: Vec<u32> = Vec::new();
        match &c.phase {
            Phase::Step { main, done, guard, .. } => {
                if !done.is_empty() {
                    return Labels::All;
                }
                for &(t, w) in main.iter().chain(guard.iter()) {
                    v.extend_from_slice(self.lr.labels(t, w));
                }
            }
            Phase::Look { sims, .. } => {
                for &(t, w) in sims.iter() {
                    v.extend_from_slice(self.lr.labels(t, w));
                }
            }
        }
        Labels::Some(canon(v))
    }

    /// The lookahead class of end `e` (for diagnostics).
    pub fn class_of_end(&self, e: u32) -> u32 {
        self.end_class(e)
    }
}
