//! Backward saturation: an automaton for tokens whose lexings the determinizer could not compose
//! within its budget (docs/CONSTRUCTION.md, "Saturated lexings").
//!
//! The forward composition ([`compose`](super::compose)) keeps every distinct known segment a
//! lexing can push above the real stack. Under an ambiguous grammar whose operators may stand
//! alone (Lua's `exp binop exp` and `unop exp` with an empty operand), a run of `n` operator
//! characters pushes ~2ⁿ distinct segments (each character an operator or a prefix): no forward
//! build of such a lexer state fits a budget, and committing those tokens at run time is a GLR
//! parse cubic in the run's length (milliseconds per token).
//!
//! Here the same question is answered backwards. The lexing trie and the LR tables form a
//! pushdown system: a control state is a position in the trie (a node whose step is done, a
//! terminal of a step or lookahead check being run, a reduction popping its right-hand side, a
//! lexing accepted), its stack the LR stack. The set of stacks from which a control state
//! reaches acceptance is regular, and the classic saturation (pre*, Bouajjani–Esparza–Maler)
//! computes an automaton for it in polynomial time, reading the stack top down. The runtime
//! reads GSS paths top down through a DWA, so that automaton, determinized, is one more DWA:
//! the lexer state's start, or its second start (`MaskTables::aux_start`) beside a forward build
//! of the classes it does not express; its outputs are the token classes whose lexings are
//! accepted. Transitions carry sets of LR states (see [`System`]).
//!
//! Rules, for a terminal `t` run by control state `x` (a step's terminal, or a lookahead check's):
//! * `ACTION(s, t) ∋ reduce A → α`: pop `s` and `|α| − 1` more states (any), reveal `r`, push
//!   `GOTO(r, A)` and continue as `x`;
//! * `ACTION(s, t) ∋ shift p`: a step continues at its node with `p` pushed; a lookahead check
//!   accepts (so does `accept` for `$`);
//! * a node whose step is done continues into each child step's terminals and each end's
//!   lookahead check; an end whose class is [`ANY`] accepts at once.
//!
//! These are the rules [`Lr::run`](super::templates::Lr::run) applies forward, and the runtime's
//! GLR (which explores every action) reaches exactly the stacks the nondeterministic system
//! does. Steps with a priority guard (a negative condition: no guard terminal shiftable) or an
//! ignored terminal's pass are not expressed; classes with such a lexing stay UNDECIDED.
//!
//! Rules are made only for the LR states that can be on top where they apply (the root: any;
//! a node: what its step shifts to; a step or check: its node's, and what the reductions it
//! enters push), so no configuration reached from the root loses a rule
//! ([`System::tops_running`]; docs/CONSTRUCTION.md).

use std::rc::Rc;
use std::sync::Arc;

use dwac_runtime::unstable::{Action, LrTables, DEAD};

use super::compose::{Step, ANY};
use super::determinize::LocalDwa;
use super::race::{Race, SATURATION_CONTROL, SATURATION_EDGE, SATURATION_POP};
use super::set_pool::SetPool;
use super::terminal_dwa::TokenClass;
use super::FastMap;
use subset::determinize;

mod split;
mod subset;
mod tops;

pub use split::{saturate_split, split, SPLIT_MIN_CLASSES};

/// Control states running a terminal (one per step or lookahead check and terminal) past which
/// saturation is not tried: its automaton grows with them (`robotstxt.lark`'s lexer state 0,
/// 44,448 classes, makes 1.7 million control states in all, and subsets that outgrow memory).
const MAX_STEPS: usize = 250_000;

/// Transitions and derived rules (pairs of control states) the saturation may add before it
/// gives up (and the forward build takes over, `assemble/`).
const MAX_PAIRS: usize = 8_000_000;

/// Words of their label sets (256 MB).
const MAX_WORDS: usize = 32 << 20;

/// Control states of the pushdown system.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Ctl {
    /// Trie node `n` with its step done (the root: nothing done yet).
    Node(u32),
    /// Running terminal `t` of node `n`'s step.
    Step(u32, u32),
    /// Running terminal `t` of end `e`'s lookahead check.
    Look(u32, u32),
    /// A reduction to nonterminal `a` for control state `x` (a `Step` or `Look`), `j` more
    /// states to pop before the revealed one is read.
    Reduce { x: u32, a: u32, j: u32 },
    /// End `e`'s lexing is accepted.
    Accept(u32),
}

/// What [`saturate`] found: the automaton, and which of the given classes it decides.
#[derive(Clone)]
pub struct Saturated {
    pub dwa: Arc<LocalDwa>,
    /// Indices (into the classes given) of the classes the automaton decides; the others keep
    /// their tokens UNDECIDED.
    pub decided: Vec<usize>,
    /// What the saturation cost, in [`Race`] ticks.
    pub ticks: u64,
    /// A second automaton beside the first, for other classes (their indices, as `decided`):
    /// [`saturate_split`]'s.
    pub second: Option<(Arc<LocalDwa>, Vec<usize>)>,
}

/// The states with an action on a terminal, and those actions.
type ActionsOn = Vec<(u32, Vec<Action>)>;

/// A control state's transitions: their targets and label sets in the order they were made,
/// and an index by target (open addressing: pairs (target + 1, index), 0 an empty slot; a power
/// of two long and at most half full). A state's transitions lie in one place: a derived rule
/// copies one state's transitions to another, and the subset construction reads all its
/// members', each a run of reads from one row (transitions numbered across states scattered
/// them, a cache miss per transition).
#[derive(Default)]
struct Row {
    slots: Vec<(u32, u32)>,
    to: Vec<u32>,
    labels: Vec<u64>,
}

impl Row {
    /// The slot of `to` in `slots` (a power of two long): where it is, or the empty slot where
    /// it goes.
    fn slot(slots: &[(u32, u32)], to: u32) -> usize {
        let mask = slots.len() - 1;
        let mut i = ((u64::from(to) * 0x9E37_79B9_7F4A_7C15) >> 40) as usize & mask;
        while slots[i].0 != 0 && slots[i].0 != to + 1 {
            i = (i + 1) & mask;
        }
        i
    }

    /// The index of the transition to `to`, made with an empty label set of `w` words if there
    /// is none (the second value: it is new).
    fn get_or_insert(&mut self, to: u32, w: usize) -> (usize, bool) {
        if !self.slots.is_empty() {
            let i = Self::slot(&self.slots, to);
            if self.slots[i].0 != 0 {
                return (self.slots[i].1 as usize, false);
            }
        }
        let k = self.to.len();
        if (k + 1) * 2 > self.slots.len() {
            self.slots = vec![(0, 0); (self.slots.len() * 2).max(4)];
            for (j, &t) in self.to.iter().enumerate() {
                let i = Self::slot(&self.slots, t);
                self.slots[i] = (t + 1, j as u32);
            }
        }
        let i = Self::slot(&self.slots, to);
        self.slots[i] = (to + 1, k as u32);
        self.to.push(to);
        self.labels.extend(std::iter::repeat_n(0, w));
        (k, true)
    }

    /// The label set of transition `k`, `w` words wide.
    fn label(&self, k: usize, w: usize) -> &Bits {
        &self.labels[k * w..(k + 1) * w]
    }
}

/// The rules of running one terminal, the same for every control state `x` that runs it (a
/// step's or a lookahead check's; [`System::template`]).
struct Template {
    /// A step's shifts: (state shifted to, the states that shift to it as a set in `gsets`).
    shifts: Vec<(u32, u32)>,
    /// A check's: the states that shift or accept (empty if none).
    accepts: Vec<u64>,
    /// Per nonterminal reduced to, GOTO's rules: (the state pushed, the revealed states that
    /// push it as a set in `gsets`).
    reveals: Vec<(u32, Vec<(u32, u32)>)>,
    /// Per (nonterminal, length) of a reduction, the states that pop by it.
    pops: Vec<((u32, u32), Vec<u64>)>,
}

/// A set of LR states (a transition's labels), [`System::w`] 64-bit words wide.
type Bits = [u64];

fn has(b: &Bits, s: u32) -> bool {
    b[s as usize / 64] >> (s % 64) & 1 == 1
}

fn set(b: &mut Bits, s: u32) {
    b[s as usize / 64] |= 1 << (s % 64);
}

fn is_empty(b: &Bits) -> bool {
    b.iter().all(|&w| w == 0)
}

/// The pushdown system and its saturated automaton. Transitions carry sets of LR states: the
/// rules of one terminal treat all the states with the same action alike (every state that
/// shifts `t` to `p`), so a set per (from, to) pair keeps the saturation's work per pair, not
/// per state.
struct System<'a> {
    lr: &'a LrTables,
    /// Words per label set.
    w: usize,
    /// The set of every LR state (the label of a transition that pops any state).
    all: Vec<u64>,
    ctl: Vec<Ctl>,
    ids: FastMap<Ctl, u32>,
    /// Per control state, its transitions.
    rows: Vec<Row>,
    /// Transitions in all.
    n_edges: usize,
    /// Transitions (from, to) whose sets grew, the new states of each in `work_bits`.
    work: Vec<(u32, u32)>,
    work_bits: Vec<u64>,
    /// Control states that take every transition of this one (a node's step continues into its
    /// children's terminals and its ends' checks).
    eps_preds: Vec<Vec<u32>>,
    /// Push rules ⟨p1, g⟩ → ⟨p2, h g⟩ for every `g` of a set, by p2, as (h, p1, the set's index in
    /// `gsets`).
    push: Vec<Vec<(u32, u32, u32)>>,
    gsets: Vec<u64>,
    /// Rules derived from push rules: "p1 reads g wherever q1 reads g" for every `g` of a set,
    /// by (p1, q1) as the index of the set in `derived_bits`, and by q1 as (p1, that index).
    derived_ix: FastMap<(u32, u32), u32>,
    derived_bits: Vec<u64>,
    derived_by: Vec<Vec<(u32, u32)>>,
    /// Per terminal: (state, its actions on the terminal).
    actions: FastMap<u32, Rc<ActionsOn>>,
    /// Per (terminal, lookahead check or not): the rules of running it.
    templates: FastMap<(u32, bool), Rc<Template>>,
    /// Per state, the states with a shift or GOTO into it (the LR automaton backwards).
    lr_preds: Vec<Vec<u32>>,
    /// Per (state, m): the states `m` edges back from it, as a set id in `revealed`: the states a
    /// reduction by a rule of length `m` from that state can reveal (in an LR automaton every
    /// path into a state spells its items' prefixes, so on any real stack these are the ones).
    back: FastMap<(u32, u32), u32>,
    revealed: SetPool,
    /// Per control state `Node(n)` (by id) other than the root, the states that can be on top
    /// when it is entered: the states its step shifts to (see [`System::tops_running`]).
    tops: FastMap<u32, Vec<u64>>,
    /// The work so far, in [`Race`] ticks.
    ticks: u64,
    /// The race this saturation runs, if any: it stops once it has lost.
    race: Option<&'a Race>,
}

impl<'a> System<'a> {
    fn new(lr: &'a LrTables, race: Option<&'a Race>) -> System<'a> {
        let w = (lr.num_states as usize).div_ceil(64).max(1);
        let mut all = vec![0u64; w];
        for s in 0..lr.num_states {
            set(&mut all, s);
        }
        System {
            lr,
            w,
            all,
            ctl: Vec::new(),
            ids: FastMap::default(),
            rows: Vec::new(),
            n_edges: 0,
            work: Vec::new(),
            work_bits: Vec::new(),
            eps_preds: Vec::new(),
            push: Vec::new(),
            gsets: Vec::new(),
            derived_ix: FastMap::default(),
            derived_bits: Vec::new(),
            derived_by: Vec::new(),
            actions: FastMap::default(),
            templates: FastMap::default(),
            lr_preds: Vec::new(),
            back: FastMap::default(),
            revealed: SetPool::new(),
            tops: FastMap::default(),
            ticks: 0,
            race,
        }
    }

    /// The id of control state `c` (new ones get their rules).
    fn id(&mut self, c: Ctl) -> u32 {
        if let Some(&i) = self.ids.get(&c) {
            return i;
        }
        let i = self.ctl.len() as u32;
        self.ticks += SATURATION_CONTROL;
        self.ctl.push(c);
        self.ids.insert(c, i);
        self.rows.push(Row::default());
        self.eps_preds.push(Vec::new());
        self.push.push(Vec::new());
        self.derived_by.push(Vec::new());
        i
    }

    /// Add the states `l` to the transition from `from` to `to`.
    fn add(&mut self, from: u32, l: &Bits, to: u32) {
        let w = self.w;
        self.ticks += SATURATION_EDGE + w as u64;
        let row = &mut self.rows[from as usize];
        let (k, new) = row.get_or_insert(to, w);
        if new {
            self.n_edges += 1;
        }
        let at = self.work_bits.len();
        let mut grew = false;
        for (old, &x) in row.labels[k * w..(k + 1) * w].iter_mut().zip(l) {
            let new = x & !*old;
            *old |= new;
            grew |= new != 0;
            self.work_bits.push(new);
        }
        if grew {
            self.work.push((from, to));
        } else {
            self.work_bits.truncate(at);
        }
    }

    /// A set of the given LR states (an index into `gsets`).
    fn gset(&mut self, states: &[u32]) -> u32 {
        let i = (self.gsets.len() / self.w) as u32;
        self.gsets.extend(std::iter::repeat_n(0, self.w));
        let w = self.w;
        let b = &mut self.gsets[i as usize * w..];
        for &s in states {
            set(b, s);
        }
        i
    }

    /// A set given as its bits (an index into `gsets`).
    fn gset_of(&mut self, bits: &Bits) -> u32 {
        let i = (self.gsets.len() / self.w) as u32;
        self.gsets.extend_from_slice(bits);
        i
    }

    /// Every state with an action on `t`, and those actions.
    fn actions_on(&mut self, t: u32) -> Rc<ActionsOn> {
        let lr = self.lr;
        self.actions
            .entry(t)
            .or_insert_with(|| {
                Rc::new(
                    (0..lr.num_states)
                        .filter_map(|s| {
                            let a = lr.actions(s, t);
                            (!a.is_empty()).then(|| (s, a.iter().map(|&x| Action::unpack(x)).collect()))
                        })
                        .collect(),
                )
            })
            .clone()
    }

    /// The states a reduction of length `m` from state `s` can reveal (a set id in `revealed`).
    fn revealed_by(&mut self, s: u32, m: u32) -> u32 {
        if let Some(&id) = self.back.get(&(s, m)) {
            return id;
        }
        if self.lr_preds.is_empty() {
            let lr = self.lr;
            let mut preds = vec![Vec::new(); lr.num_states as usize];
            for p in 0..lr.num_states {
                for &t in lr.action_terminals(p) {
                    for &x in lr.actions(p, t) {
                        if let Action::Shift(q) = Action::unpack(x) {
                            preds[q as usize].push(p);
                        }
                    }
                }
                for a in 0..lr.num_nonterminals {
                    let g = lr.goto(p, a);
                    if g != DEAD {
                        preds[g as usize].push(p);
                    }
                }
            }
            for v in &mut preds {
                v.sort_unstable();
                v.dedup();
            }
            self.lr_preds = preds;
        }
        let mut layer = vec![s];
        for _ in 0..m {
            let mut next: Vec<u32> = layer.iter().flat_map(|&q| self.lr_preds[q as usize].iter().copied()).collect();
            next.sort_unstable();
            next.dedup();
            layer = next;
        }
        let id = self.revealed.intern(layer);
        self.back.insert((s, m), id);
        id
    }

    /// The rules of running terminal `t` in a step (`check` false) or a lookahead check, made
    /// once per terminal and kind.
    fn template(&mut self, t: u32, check: bool) -> Rc<Template> {
        if let Some(tpl) = self.templates.get(&(t, check)) {
            return tpl.clone();
        }
        let lr = self.lr;
        // Per nonterminal reduced to, the states its reductions can reveal (GOTO rules are made
        // for those only); the states that shift to each state; those that accept; those that
        // pop by (nonterminal, length).
        let mut reveals: FastMap<u32, Vec<u32>> = FastMap::default();
        let mut shifts: FastMap<u32, Vec<u32>> = FastMap::default();
        let mut accepts: Vec<u32> = Vec::new();
        let mut pops: FastMap<(u32, u32), Vec<u32>> = FastMap::default();
        for (s, acts) in self.actions_on(t).iter() {
            for &a in acts {
                match (a, check) {
                    (Action::Shift(p), false) => shifts.entry(p).or_default().push(*s),
                    (Action::Shift(_) | Action::Accept, true) => accepts.push(*s),
                    (Action::Accept, false) => {}
                    (Action::Reduce(r), _) => {
                        let (Some(&m), Some(&a)) = (lr.rule_len.get(r as usize), lr.rule_lhs.get(r as usize)) else {
                            continue;
                        };
                        if m == 0 {
                            continue;
                        }
                        let from = self.revealed_by(*s, m);
                        reveals.entry(a).or_default().extend(self.revealed.get(from));
                        pops.entry((a, m)).or_default().push(*s);
                    }
                }
            }
        }
        let mut shifts: Vec<(u32, Vec<u32>)> = shifts.into_iter().collect();
        shifts.sort_unstable();
        let shifts = shifts.into_iter().map(|(p, ss)| (p, self.gset(&ss))).collect();
        let accepts = if accepts.is_empty() { Vec::new() } else { self.bits(&accepts) };
        let mut reveals: Vec<(u32, Vec<u32>)> = reveals.into_iter().collect();
        reveals.sort_unstable();
        let reveals = reveals
            .into_iter()
            .map(|(a, rs)| {
                // By the state GOTO pushes: the revealed states that push it.
                let mut by_goto: Vec<(u32, u32)> =
                    rs.iter().map(|&r| (lr.goto(r, a), r)).filter(|&(g, _)| g != DEAD).collect();
                by_goto.sort_unstable();
                by_goto.dedup();
                let groups = by_goto
                    .chunk_by(|p, q| p.0 == q.0)
                    .map(|group| {
                        let gs: Vec<u32> = group.iter().map(|&(_, r)| r).collect();
                        (group[0].0, self.gset(&gs))
                    })
                    .collect();
                (a, groups)
            })
            .collect();
        let mut pops: Vec<((u32, u32), Vec<u32>)> = pops.into_iter().collect();
        pops.sort_unstable();
        let pops = pops.into_iter().map(|(am, ss)| (am, self.bits(&ss))).collect();
        let tpl = Rc::new(Template { shifts, accepts, reveals, pops });
        self.templates.insert((t, check), tpl.clone());
        tpl
    }

    /// The set of the given LR states.
    fn bits(&self, states: &[u32]) -> Vec<u64> {
        let mut b = vec![0u64; self.w];
        states.iter().for_each(|&s| set(&mut b, s));
        b
    }

    /// The rules of a control state running terminal `t`: `on_shift` is where a shift goes
    /// (`Ok(node)`: a step continuing at that node; `Err(accept)`: a check accepting). `top`:
    /// the states that can be on top when it runs ([`System::tops_running`]; `None`: any);
    /// rules for the others are not made (no configuration reached from the root has them).
    fn terminal_rules(&mut self, x: u32, t: u32, on_shift: Result<u32, u32>, top: Option<&Bits>) {
        let tpl = self.template(t, on_shift.is_err());
        let w = self.w;
        // (`b` cut to the possible tops, in `buf`; `false` if nothing is left.)
        let mut buf = vec![0u64; w];
        let cut = |b: &Bits, buf: &mut Vec<u64>| -> bool {
            match top {
                Some(tp) => buf.iter_mut().zip(b.iter().zip(tp)).for_each(|(o, (x, y))| *o = x & y),
                None => buf.copy_from_slice(b),
            }
            !is_empty(buf)
        };
        match on_shift {
            // ⟨x, s⟩ → ⟨node, p s⟩ for every `s` that shifts to `p`.
            Ok(node) => {
                for &(p, g) in &tpl.shifts {
                    let g = match top {
                        None => Some(g),
                        Some(_) => {
                            let kept = cut(&self.gsets[g as usize * w..(g as usize + 1) * w], &mut buf);
                            kept.then(|| self.gset_of(&buf))
                        }
                    };
                    if let Some(g) = g {
                        self.push[node as usize].push((p, x, g));
                    }
                }
            }
            Err(acc) => {
                if !tpl.accepts.is_empty() && cut(&tpl.accepts, &mut buf) {
                    self.add(x, &buf, acc);
                }
            }
        }
        // The reductions entered: those some state that can be on top pops by.
        let entered: Vec<bool> = tpl.pops.iter().map(|(_, b)| top.is_none_or(|tp| tops::meets(b, tp))).collect();
        for (a, groups) in &tpl.reveals {
            if !tpl.pops.iter().zip(&entered).any(|(&((b, _), _), &e)| e && b == *a) {
                continue;
            }
            // ⟨r0, r⟩ → ⟨x, GOTO(r, a) r⟩.
            let r0 = self.id(Ctl::Reduce { x, a: *a, j: 0 });
            self.push[x as usize].extend(groups.iter().map(|&(h, g)| (h, r0, g)));
        }
        for (&((a, m), ref b), &e) in tpl.pops.iter().zip(&entered) {
            if e && cut(b, &mut buf) {
                let top = self.reduction(x, a, m);
                self.add(x, &buf, top);
            }
        }
    }

    /// The control state that has popped the first state of a reduction to `a` of length `m`
    /// for `x` (its chain of pops made on first use; its GOTO rules are `terminal_rules`').
    fn reduction(&mut self, x: u32, a: u32, m: u32) -> u32 {
        let key = Ctl::Reduce { x, a, j: m - 1 };
        if let Some(&i) = self.ids.get(&key) {
            return i;
        }
        let mut below = self.id(Ctl::Reduce { x, a, j: 0 });
        for j in 1..m {
            let c = Ctl::Reduce { x, a, j };
            let fresh = !self.ids.contains_key(&c);
            let i = self.id(c);
            if fresh {
                let all = std::mem::take(&mut self.all);
                self.add(i, &all, below);
                self.all = all;
            }
            below = i;
        }
        below
    }

    /// Add derived rule "p1 reads g wherever q1 reads g" for every `g` of `gs`, applying it to
    /// what q1 has.
    fn derive(&mut self, p1: u32, gs: &Bits, q1: u32) {
        let w = self.w;
        let next = (self.derived_bits.len() / w) as u32;
        let d = *self.derived_ix.entry((p1, q1)).or_insert(next) as usize;
        if d as u32 == next {
            self.derived_bits.extend(std::iter::repeat_n(0, w));
            self.derived_by[q1 as usize].push((p1, d as u32));
        }
        let mut new = vec![0u64; w];
        for (i, &x) in gs.iter().enumerate() {
            let old = &mut self.derived_bits[d * w + i];
            new[i] = x & !*old;
            *old |= new[i];
        }
        if is_empty(&new) {
            return;
        }
        self.ticks += SATURATION_POP;
        let mut l = vec![0u64; w];
        for k in 0..self.rows[q1 as usize].to.len() {
            let row = &self.rows[q1 as usize];
            l.iter_mut().zip(row.label(k, w)).zip(&new).for_each(|((o, a), b)| *o = a & b);
            if !is_empty(&l) {
                let to = row.to[k];
                self.add(p1, &l, to);
            }
        }
    }

    /// Has the system outgrown the saturation's budgets ([`MAX_WORDS`], [`MAX_PAIRS`]) while
    /// its rules are made?
    fn too_big(&self) -> bool {
        self.n_edges * self.w + self.derived_bits.len() > MAX_WORDS || self.n_edges + self.derived_ix.len() > MAX_PAIRS
    }

    /// Has this saturation lost its race (or its compile been asked to stop)?
    fn lost(&self) -> bool {
        self.race.is_some_and(|r| r.saturation_lost(self.ticks)) || crate::threads::stopping()
    }

    /// The saturation loop; `false` past the transition budget or once the race is lost.
    fn saturate(&mut self) -> bool {
        let w = self.w;
        let mut d = vec![0u64; w];
        let mut l = vec![0u64; w];
        let mut pops = 0u32;
        while let Some((q, q2)) = self.work.pop() {
            if self.n_edges * w + self.derived_bits.len() > MAX_WORDS
                || self.n_edges + self.derived_ix.len() > MAX_PAIRS
            {
                return false;
            }
            pops = pops.wrapping_add(1);
            self.ticks += SATURATION_POP;
            if pops.is_multiple_of(4096) && self.lost() {
                return false;
            }
            let at = self.work_bits.len() - w;
            d.copy_from_slice(&self.work_bits[at..]);
            self.work_bits.truncate(at);
            let qi = q as usize;
            for i in 0..self.eps_preds[qi].len() {
                let p = self.eps_preds[qi][i];
                // (Only what the node can have on top.)
                match self.tops.get(&p) {
                    Some(top) => {
                        l.iter_mut().zip(top).zip(&d).for_each(|((o, a), b)| *o = a & b);
                        if !is_empty(&l) {
                            self.add(p, &l, q2);
                        }
                    }
                    None => self.add(p, &d, q2),
                }
            }
            // ⟨p1, g⟩ → ⟨q, h g⟩ and q reads h to q2: p1 reads g wherever q2 reads g.
            for i in 0..self.push[qi].len() {
                let (h, p1, g) = self.push[qi][i];
                if has(&d, h) {
                    l.copy_from_slice(&self.gsets[g as usize * w..(g as usize + 1) * w]);
                    self.derive(p1, &l, q2);
                }
            }
            // Rules waiting on q reading what it now reads.
            for i in 0..self.derived_by[qi].len() {
                let (p1, di) = self.derived_by[qi][i];
                let g = &self.derived_bits[di as usize * w..(di as usize + 1) * w];
                l.iter_mut().zip(g).zip(&d).for_each(|((o, a), b)| *o = a & b);
                if !is_empty(&l) {
                    self.add(p1, &l, q2);
                }
            }
        }
        true
    }
}

/// Whether saturation expresses every lexing of `class`: steps without a priority guard only.
pub fn expressible(nodes: &[(u32, Step)], class: &TokenClass) -> bool {
    class.sigs.iter().all(|&(mut n, _)| {
        while n != 0 {
            match nodes[n as usize] {
                (parent, Step::Shift { guard: 0, .. }) => n = parent,
                _ => return false,
            }
        }
        true
    })
}

/// The part of the lexing trie a saturation covers: the classes it decides, their ends (a
/// lexing's last node and lookahead class), the classes at each end, and the children of each
/// node on the way to them.
pub struct SubTrie {
    /// Terminals run by its steps and lookahead checks (each a control state, with a set of
    /// possible tops: one LR-state bitset each).
    steps: usize,
    decided: Vec<usize>,
    ends: FastMap<(u32, u32), u32>,
    at_end: Vec<Vec<u32>>,
    children: FastMap<u32, Vec<u32>>,
}

impl SubTrie {
    /// The sub-trie of the classes of `classes` that saturation expresses; `None` if there is
    /// none, or if it runs more terminals than [`MAX_STEPS`] (the saturation would outgrow its
    /// budgets).
    pub fn of(terms: &SetPool, nodes: &[(u32, Step)], classes: &[TokenClass]) -> Option<SubTrie> {
        let decided: Vec<usize> = (0..classes.len()).filter(|&i| expressible(nodes, &classes[i])).collect();
        if decided.is_empty() {
            return None;
        }
        let mut ends: FastMap<(u32, u32), u32> = FastMap::default();
        let mut at_end: Vec<Vec<u32>> = Vec::new();
        let mut children: FastMap<u32, Vec<u32>> = FastMap::default();
        for (k, &ci) in decided.iter().enumerate() {
            for &(node, la) in &classes[ci].sigs {
                let next = ends.len() as u32;
                let e = *ends.entry((node, la)).or_insert(next);
                if e as usize == at_end.len() {
                    at_end.push(Vec::new());
                }
                at_end[e as usize].push(k as u32);
                let mut n = node;
                while n != 0 {
                    let parent = nodes[n as usize].0;
                    let kids = children.entry(parent).or_default();
                    if kids.contains(&n) {
                        break;
                    }
                    kids.push(n);
                    n = parent;
                }
            }
        }
        let steps: usize = ends.keys().map(|&(_, la)| if la == ANY { 0 } else { terms.get(la).len() }).sum::<usize>()
            + children
                .values()
                .flatten()
                .map(|&c| match nodes[c as usize].1 {
                    Step::Shift { terms: set, .. } => terms.get(set).len(),
                    _ => 0,
                })
                .sum::<usize>();
        (steps <= MAX_STEPS).then_some(SubTrie { steps, decided, ends, at_end, children })
    }
}

/// Build the automaton of `classes` (lexings as [`TokenClass::sigs`] over the trie `nodes`,
/// step terminal sets and lookahead classes in `terms`) on the LR tables `lr`; `None` if no
/// class can be expressed or a budget is exceeded.
pub fn saturate(lr: &LrTables, terms: &SetPool, nodes: &[(u32, Step)], classes: &[TokenClass]) -> Option<Saturated> {
    saturate_sub(lr, terms, nodes, SubTrie::of(terms, nodes, classes)?, None)
}

/// [`saturate`] on the sub-trie found by [`SubTrie::of`], in a `race` if one is given: `None`
/// as soon as it has lost (checked every few thousand rules and every determinized state).
pub fn saturate_sub(
    lr: &LrTables,
    terms: &SetPool,
    nodes: &[(u32, Step)],
    sub: SubTrie,
    race: Option<&Race>,
) -> Option<Saturated> {
    let SubTrie { steps, decided, ends, at_end, children } = sub;
    let mut sys = System::new(lr, race);
    // (Each step keeps a set of possible tops, an LR-state bitset: past the words budget with
    // those alone, the saturation cannot fit; 500 open tools' lexer state 0 would need
    // gigabytes before its first rule.)
    if steps.saturating_mul(sys.w) > MAX_WORDS {
        return None;
    }
    let root = sys.id(Ctl::Node(0));
    let mut kids: Vec<(u32, Vec<u32>)> = children.into_iter().collect();
    kids.sort_unstable();
    let (node_top, step_top) = tops::from_root(&mut sys, terms, nodes, &kids)?;
    let node_id = |sys: &mut System, n: u32| -> u32 {
        let id = sys.id(Ctl::Node(n));
        if let Some(Some(top)) = node_top.get(&n) {
            sys.tops.entry(id).or_insert_with(|| top.clone());
        }
        id
    };
    let mut ends_sorted: Vec<((u32, u32), u32)> = ends.iter().map(|(&k, &e)| (k, e)).collect();
    ends_sorted.sort_unstable();
    for ((node, la), e) in ends_sorted {
        let at = node_id(&mut sys, node);
        let acc = sys.id(Ctl::Accept(e));
        let all = sys.all.clone();
        sys.add(acc, &all, acc);
        if la == ANY {
            sys.add(at, &all, acc);
            continue;
        }
        let above = node_top.get(&node).cloned().flatten();
        if sys.lost() || sys.too_big() {
            return None;
        }
        for &t in terms.get(la) {
            let x = sys.id(Ctl::Look(e, t));
            sys.eps_preds[x as usize].push(at);
            let top = sys.tops_running(t, true, above.as_deref());
            sys.terminal_rules(x, t, Err(acc), top.as_deref());
        }
    }
    for (parent, cs) in kids {
        if sys.lost() || sys.too_big() {
            return None;
        }
        let at = node_id(&mut sys, parent);
        for c in cs {
            let Step::Shift { terms: set, .. } = nodes[c as usize].1 else { continue };
            let done = node_id(&mut sys, c);
            for &t in terms.get(set) {
                let x = sys.id(Ctl::Step(c, t));
                sys.eps_preds[x as usize].push(at);
                let top = step_top.get(&(c, t)).cloned().flatten();
                sys.terminal_rules(x, t, Ok(done), top.as_deref());
            }
        }
    }
    if !sys.saturate() {
        return None;
    }
    let (dwa, ticks) = determinize(&sys, root, &at_end, decided.len())?;
    Some(Saturated { dwa: Arc::new(dwa), decided, ticks, second: None })
}
