//! Backward saturation: an automaton for tokens whose lexings the determinizer could not compose
//! within its budget (ARCHITECTURE.md, "Saturated lexings").
//!
//! The forward composition ([`compose`](super::compose)) keeps every distinct known segment a
//! lexing can push above the real stack. Under an ambiguous grammar whose operators may stand
//! alone (Lua's `exp binop exp` and `unop exp` with an empty operand), a run of `n` operator
//! characters pushes ~2ⁿ distinct segments (each character an operator or a prefix), so those
//! tokens are cut from the build and were decided at run time by committing them, a GLR parse
//! that is cubic in the run's length (milliseconds per token).
//!
//! Here the same question is answered backwards. The lexing trie and the LR tables form a
//! pushdown system: a control state is a position in the trie (a node whose step is done, a
//! terminal of a step or lookahead check being run, a reduction popping its right-hand side, a
//! lexing accepted), its stack the LR stack. The set of stacks from which a control state
//! reaches acceptance is regular, and the classic saturation (pre*, Bouajjani–Esparza–Maler)
//! computes an automaton for it in polynomial time, reading the stack top down. The runtime
//! reads GSS paths top down through a DWA, so that automaton, determinized, is one more DWA:
//! its start is the lexer state's second start (`MaskTables::aux_start`), its outputs the token
//! classes whose lexings are accepted.
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

use dwac_runtime::{Action, LrTables, DEAD};

use super::compose::{Step, ANY};
use super::determinize::{DState, LocalDwa};
use super::sets::SetPool;
use super::terminal_dwa::TokenClass;
use super::FastMap;

/// A set with the compile-time maps' fixed-seed hasher (deterministic).
type FastSet<T> = std::collections::HashSet<T, foldhash::fast::FixedState>;

/// A transition label that matches every LR state.
const WILD: u32 = u32::MAX;

/// Transitions the saturation may add before it gives up (the tokens stay UNDECIDED).
const MAX_TRANSITIONS: usize = 8_000_000;

/// States the determinized automaton may have.
const MAX_STATES: usize = 1 << 15;

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
pub struct Saturated {
    pub dwa: LocalDwa,
    /// Indices (into the classes given) of the classes the automaton decides; the others keep
    /// their tokens UNDECIDED.
    pub decided: Vec<usize>,
}

struct System<'a> {
    lr: &'a LrTables,
    ctl: Vec<Ctl>,
    ids: FastMap<Ctl, u32>,
    /// Transitions (from, label, to), and their indices.
    trans: FastSet<(u32, u32, u32)>,
    out_by: FastMap<(u32, u32), Vec<u32>>,
    out_labels: Vec<Vec<u32>>,
    wild_out: Vec<Vec<u32>>,
    /// Control states that take every transition of this one (a node's step continues into its
    /// children's terminals and its ends' checks).
    eps_preds: Vec<Vec<u32>>,
    /// Push rules ⟨p1, g⟩ → ⟨p2, h g⟩ (`h` pushed on top of `g`) by (p2, h), as (p1, g), and by
    /// p2, as (h, p1, g).
    push_by: FastMap<(u32, u32), Vec<(u32, u32)>>,
    push_all: Vec<Vec<(u32, u32, u32)>>,
    /// Rules derived from push rules: "p1 reads g wherever q1 reads g", by (q1, g) as p1 and by
    /// q1 as (p1, g).
    derived: FastSet<(u32, u32, u32)>,
    derived_by: FastMap<(u32, u32), Vec<u32>>,
    derived_all: Vec<Vec<(u32, u32)>>,
    work: Vec<(u32, u32, u32)>,
    /// Per terminal: (state, its actions on the terminal).
    actions: FastMap<u32, Vec<(u32, Vec<Action>)>>,
    /// Per state, the states with a shift or GOTO into it (the LR automaton backwards).
    lr_preds: Vec<Vec<u32>>,
    /// Per (state, m): the states `m` edges back from it, as a set id in `revealed`: the states a
    /// reduction by a rule of length `m` from that state can reveal (in an LR automaton every
    /// path into a state spells its items' prefixes, so on any real stack these are the ones).
    back: FastMap<(u32, u32), u32>,
    revealed: SetPool,
}

impl<'a> System<'a> {
    fn new(lr: &'a LrTables) -> System<'a> {
        System {
            lr,
            ctl: Vec::new(),
            ids: FastMap::default(),
            trans: Default::default(),
            out_by: FastMap::default(),
            out_labels: Vec::new(),
            wild_out: Vec::new(),
            eps_preds: Vec::new(),
            push_by: FastMap::default(),
            push_all: Vec::new(),
            derived: Default::default(),
            derived_by: FastMap::default(),
            derived_all: Vec::new(),
            work: Vec::new(),
            actions: FastMap::default(),
            lr_preds: Vec::new(),
            back: FastMap::default(),
            revealed: SetPool::new(),
        }
    }

    /// The id of control state `c` (new ones get their rules).
    fn id(&mut self, c: Ctl) -> u32 {
        if let Some(&i) = self.ids.get(&c) {
            return i;
        }
        let i = self.ctl.len() as u32;
        self.ctl.push(c);
        self.ids.insert(c, i);
        self.out_labels.push(Vec::new());
        self.wild_out.push(Vec::new());
        self.eps_preds.push(Vec::new());
        self.push_all.push(Vec::new());
        self.derived_all.push(Vec::new());
        i
    }

    fn add(&mut self, from: u32, label: u32, to: u32) {
        if self.trans.insert((from, label, to)) {
            self.work.push((from, label, to));
        }
    }

    /// Rule ⟨p1, g⟩ → ⟨p2, h g⟩: on top `g`, `p1` pushes `h` and continues as `p2`.
    fn add_push(&mut self, p1: u32, g: u32, p2: u32, h: u32) {
        self.push_by.entry((p2, h)).or_default().push((p1, g));
        self.push_all[p2 as usize].push((h, p1, g));
    }

    /// Every state with an action on `t`, and those actions.
    fn actions_on(&mut self, t: u32) -> Vec<(u32, Vec<Action>)> {
        let lr = self.lr;
        self.actions
            .entry(t)
            .or_insert_with(|| {
                (0..lr.num_states)
                    .filter_map(|s| {
                        let a = lr.actions(s, t);
                        (!a.is_empty()).then(|| (s, a.iter().map(|&x| Action::unpack(x)).collect()))
                    })
                    .collect()
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

    /// The rules of a control state running terminal `t`: `on_shift` is where a shift goes
    /// (`Ok(node)`: a step continuing at that node; `Err(accept)`: a check accepting).
    fn terminal_rules(&mut self, x: u32, t: u32, on_shift: Result<u32, u32>) {
        let lr = self.lr;
        // Per nonterminal reduced to, the states its reductions can reveal (GOTO rules are made
        // for those only).
        let mut reveals: FastMap<u32, Vec<u32>> = FastMap::default();
        let mut pops: Vec<(u32, u32, u32)> = Vec::new();
        for (s, acts) in self.actions_on(t) {
            for a in acts {
                match (a, on_shift) {
                    (Action::Shift(p), Ok(node)) => self.add_push(x, s, node, p),
                    (Action::Shift(_) | Action::Accept, Err(acc)) => self.add(x, s, acc),
                    (Action::Accept, Ok(_)) => {}
                    (Action::Reduce(r), _) => {
                        let (Some(&m), Some(&a)) = (lr.rule_len.get(r as usize), lr.rule_lhs.get(r as usize)) else {
                            continue;
                        };
                        if m == 0 {
                            continue;
                        }
                        let from = self.revealed_by(s, m);
                        reveals.entry(a).or_default().extend(self.revealed.get(from));
                        pops.push((s, a, m));
                    }
                }
            }
        }
        let mut reveals: Vec<(u32, Vec<u32>)> = reveals.into_iter().collect();
        reveals.sort_unstable();
        for (a, mut rs) in reveals {
            rs.sort_unstable();
            rs.dedup();
            let r0 = self.id(Ctl::Reduce { x, a, j: 0 });
            for r in rs {
                let g = lr.goto(r, a);
                if g != DEAD {
                    self.add_push(r0, r, x, g);
                }
            }
        }
        for (s, a, m) in pops {
            let top = self.reduction(x, a, m);
            self.add(x, s, top);
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
                self.add(i, WILD, below);
            }
            below = i;
        }
        below
    }

    /// Add derived rule "p1 reads g wherever q1 reads g", applying it to what q1 has.
    fn derive(&mut self, p1: u32, g: u32, q1: u32) {
        if !self.derived.insert((p1, g, q1)) {
            return;
        }
        self.derived_by.entry((q1, g)).or_default().push(p1);
        self.derived_all[q1 as usize].push((p1, g));
        if let Some(v) = self.out_by.get(&(q1, g)) {
            for i in 0..v.len() {
                let q2 = self.out_by[&(q1, g)][i];
                self.add(p1, g, q2);
            }
        }
        for i in 0..self.wild_out[q1 as usize].len() {
            let q2 = self.wild_out[q1 as usize][i];
            self.add(p1, g, q2);
        }
    }

    /// The saturation loop; `false` past the transition budget.
    fn saturate(&mut self) -> bool {
        while let Some((q, l, q2)) = self.work.pop() {
            if self.trans.len() > MAX_TRANSITIONS {
                return false;
            }
            let qi = q as usize;
            if l == WILD {
                self.wild_out[qi].push(q2);
            } else {
                let e = self.out_by.entry((q, l)).or_default();
                if e.is_empty() {
                    self.out_labels[qi].push(l);
                }
                e.push(q2);
            }
            for i in 0..self.eps_preds[qi].len() {
                let p = self.eps_preds[qi][i];
                self.add(p, l, q2);
            }
            // ⟨p1, g⟩ → ⟨q, l g⟩ and q reads l to q2: p1 reads g wherever q2 reads g.
            if l == WILD {
                for i in 0..self.push_all[qi].len() {
                    let (_, p1, g) = self.push_all[qi][i];
                    self.derive(p1, g, q2);
                }
            } else if let Some(v) = self.push_by.get(&(q, l)) {
                for i in 0..v.len() {
                    let (p1, g) = self.push_by[&(q, l)][i];
                    self.derive(p1, g, q2);
                }
            }
            // Rules waiting on q reading l.
            if l == WILD {
                let mut i = 0;
                while i < self.derived_all[qi].len() {
                    let (p1, g) = self.derived_all[qi][i];
                    self.add(p1, g, q2);
                    i += 1;
                }
            } else if self.derived_by.contains_key(&(q, l)) {
                let mut i = 0;
                while i < self.derived_by[&(q, l)].len() {
                    let p1 = self.derived_by[&(q, l)][i];
                    self.add(p1, l, q2);
                    i += 1;
                }
            }
        }
        true
    }
}

/// Build the automaton of `classes` (lexings as [`TokenClass::sigs`] over the trie `nodes`,
/// step terminal sets and lookahead classes in `terms`) on the LR tables `lr`; `None` if no
/// class can be expressed or a budget is exceeded.
pub fn saturate(lr: &LrTables, terms: &SetPool, nodes: &[(u32, Step)], classes: &[TokenClass]) -> Option<Saturated> {
    let expressible = |mut n: u32| {
        while n != 0 {
            match nodes[n as usize] {
                (parent, Step::Shift { guard: 0, .. }) => n = parent,
                _ => return false,
            }
        }
        true
    };
    let decided: Vec<usize> =
        (0..classes.len()).filter(|&i| classes[i].sigs.iter().all(|&(n, _)| expressible(n))).collect();
    if decided.is_empty() {
        return None;
    }
    let mut sys = System::new(lr);
    // The sub-trie of those classes: ends, the classes at each, and the children of each node.
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
    let root = sys.id(Ctl::Node(0));
    let mut ends_sorted: Vec<((u32, u32), u32)> = ends.iter().map(|(&k, &e)| (k, e)).collect();
    ends_sorted.sort_unstable();
    for ((node, la), e) in ends_sorted {
        let at = sys.id(Ctl::Node(node));
        let acc = sys.id(Ctl::Accept(e));
        sys.add(acc, WILD, acc);
        if la == ANY {
            sys.add(at, WILD, acc);
            continue;
        }
        for &t in terms.get(la) {
            let x = sys.id(Ctl::Look(e, t));
            sys.eps_preds[x as usize].push(at);
            sys.terminal_rules(x, t, Err(acc));
        }
    }
    let mut kids: Vec<(u32, Vec<u32>)> = children.into_iter().collect();
    kids.sort_unstable();
    for (parent, cs) in kids {
        let at = sys.id(Ctl::Node(parent));
        for c in cs {
            let Step::Shift { terms: set, .. } = nodes[c as usize].1 else { continue };
            let done = sys.id(Ctl::Node(c));
            for &t in terms.get(set) {
                let x = sys.id(Ctl::Step(c, t));
                sys.eps_preds[x as usize].push(at);
                sys.terminal_rules(x, t, Ok(done));
            }
        }
    }
    if !sys.saturate() {
        return None;
    }
    let dwa = determinize(&sys, root, &at_end, decided.len())?;
    Some(Saturated { dwa, decided })
}

/// The subset construction over the saturated automaton from `root`, reading LR states;
/// entering an accepting control state outputs its end's classes (`classes` of them in all).
///
/// A subset keeps only the control states that can still reach a class not output on the way
/// to it, and a DWA state is (that subset, those classes): once a class is output, the paths
/// that could only output it again are not followed (outputs are unions, so a class output
/// twice is the same mask).
fn determinize(sys: &System, root: u32, at_end: &[Vec<u32>], classes: usize) -> Option<LocalDwa> {
    let n = sys.ctl.len();
    let words = classes.div_ceil(64).max(1);
    // Per control state, the classes it can reach (a backward fixpoint over the transitions).
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
    for &(f, _, t) in &sys.trans {
        if f != t {
            preds[t as usize].push(f);
        }
    }
    let mut reach = vec![0u64; n * words];
    let mut stack: Vec<u32> = Vec::new();
    for i in 0..n {
        if let Ctl::Accept(e) = sys.ctl[i] {
            for &c in &at_end[e as usize] {
                reach[i * words + c as usize / 64] |= 1 << (c % 64);
            }
            stack.push(i as u32);
        }
    }
    while let Some(i) = stack.pop() {
        let from: Vec<u64> = reach[i as usize * words..(i as usize + 1) * words].to_vec();
        for &p in &preds[i as usize] {
            let row = &mut reach[p as usize * words..(p as usize + 1) * words];
            let mut grew = false;
            for (r, f) in row.iter_mut().zip(&from) {
                if *f & !*r != 0 {
                    *r |= f;
                    grew = true;
                }
            }
            if grew {
                stack.push(p);
            }
        }
    }
    let accept_of = |i: u32| match sys.ctl[i as usize] {
        Ctl::Accept(e) => Some(e),
        _ => None,
    };
    type Key = (Vec<u32>, Vec<u64>);
    let mut sets = SetPool::new();
    let mut states: Vec<DState> = Vec::new();
    let mut index: FastMap<Key, u32> = FastMap::default();
    let mut todo: Vec<Key> = Vec::new();
    // The successor of a state whose open classes are `open` on reaching control states `next`:
    // (target id or DEAD, output class set).
    let target = |next: Vec<u32>,
                  open: &[u64],
                  sets: &mut SetPool,
                  index: &mut FastMap<Key, u32>,
                  todo: &mut Vec<Key>|
     -> (u32, u32) {
        let mut out: Vec<u32> = Vec::new();
        let mut open = open.to_vec();
        for &q in &next {
            if let Some(e) = accept_of(q) {
                for &c in &at_end[e as usize] {
                    if open[c as usize / 64] >> (c % 64) & 1 == 1 {
                        open[c as usize / 64] &= !(1 << (c % 64));
                        out.push(c);
                    }
                }
            }
        }
        let mut rest: Vec<u32> = next
            .into_iter()
            .filter(|&q| {
                accept_of(q).is_none()
                    && reach[q as usize * words..(q as usize + 1) * words].iter().zip(&open).any(|(r, o)| r & o != 0)
            })
            .collect();
        rest.sort_unstable();
        rest.dedup();
        let out = sets.intern(out);
        if rest.is_empty() {
            return (DEAD, out);
        }
        // Only the open classes the subset can still reach.
        let mut still = vec![0u64; words];
        for &q in &rest {
            for (s, r) in still.iter_mut().zip(&reach[q as usize * words..(q as usize + 1) * words]) {
                *s |= r;
            }
        }
        still.iter_mut().zip(&open).for_each(|(s, o)| *s &= o);
        let key = (rest, still);
        let next_id = index.len() as u32;
        let id = *index.entry(key.clone()).or_insert_with(|| {
            todo.push(key);
            next_id
        });
        (id, out)
    };
    let all: Vec<u64> = (0..words)
        .map(|w| {
            let bits = classes.saturating_sub(w * 64).min(64);
            if bits == 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            }
        })
        .collect();
    let (start, start_rho) = target(vec![root], &all, &mut sets, &mut index, &mut todo);
    let mut done = 0usize;
    while done < todo.len() {
        if todo.len() > MAX_STATES {
            return None;
        }
        let (subset, open) = todo[done].clone();
        done += 1;
        let wild: Vec<u32> = subset.iter().flat_map(|&q| sys.wild_out[q as usize].iter().copied()).collect();
        let mut labels: Vec<u32> = subset.iter().flat_map(|&q| sys.out_labels[q as usize].iter().copied()).collect();
        labels.sort_unstable();
        labels.dedup();
        let default = target(wild.clone(), &open, &mut sets, &mut index, &mut todo);
        let mut edges = Vec::with_capacity(labels.len());
        for l in labels {
            let mut next = wild.clone();
            for &q in &subset {
                if let Some(v) = sys.out_by.get(&(q, l)) {
                    next.extend(v);
                }
            }
            let (t, o) = target(next, &open, &mut sets, &mut index, &mut todo);
            if (t, o) != default {
                edges.push((l, t, o));
            }
        }
        states.push(DState { edges, default });
    }
    let count = states.len();
    Some(LocalDwa { start, start_rho, states, sets, links: FastMap::default(), keys: vec![None; count] })
}
