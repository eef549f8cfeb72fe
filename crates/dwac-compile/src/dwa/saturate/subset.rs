//! The subset construction over a saturated automaton ([`super::System`]): the DWA of a
//! saturated lexer state, reading LR states top down.

use dwac_runtime::unstable::DEAD;

use super::super::determinize::{DState, LocalDwa};
use super::super::race::{SATURATION_EDGE, SATURATION_REACH, SATURATION_TARGET};
use super::super::set_pool::SetPool;
use super::super::FastMap;
use super::{Ctl, System};

/// Control states in the subsets of the determinized automaton, summed over its states.
const MAX_SUBSET_SIZES: usize = 16 << 20;

/// States the determinized automaton may have.
const MAX_STATES: usize = 1 << 15;

/// The subset construction over the saturated automaton from `root`, reading LR states;
/// entering an accepting control state outputs its end's classes (`classes` of them in all).
/// Returns the automaton and the whole saturation's ticks (the system's, then this
/// construction's); `None` past its budgets or once the system's race is lost.
///
/// A subset keeps only the control states that can still reach a class not output on the way
/// to it, and a DWA state is (that subset, those classes): once a class is output, the paths
/// that could only output it again are not followed (outputs are unions, so a class output
/// twice is the same mask).
pub(super) fn determinize(sys: &System, root: u32, at_end: &[Vec<u32>], classes: usize) -> Option<(LocalDwa, u64)> {
    let n = sys.ctl.len();
    let words = classes.div_ceil(64).max(1);
    let mut ticks = sys.ticks;
    let lost = |ticks: u64| sys.race.is_some_and(|r| r.saturation_lost(ticks));
    // Per control state, the classes it can reach: per strongly connected component of the
    // transitions, in the order Tarjan's algorithm closes them (every component after those it
    // leads to), its own acceptances and its successors' classes. Each transition is read once
    // (a fixpoint over the transitions backwards read them again and again: 0.6 s of regex's
    // largest saturation).
    if lost(ticks) {
        return None;
    }
    ticks += (SATURATION_REACH + words as u64 / 4) * sys.n_edges as u64;
    let (component, members) = components(sys);
    let mut reach = vec![0u64; n * words];
    let mut row = vec![0u64; words];
    for (c, ms) in members.iter().enumerate() {
        row.iter_mut().for_each(|x| *x = 0);
        for &q in ms {
            if let Ctl::Accept(e) = sys.ctl[q as usize] {
                for &k in &at_end[e as usize] {
                    row[k as usize / 64] |= 1 << (k % 64);
                }
            }
            for &t in &sys.rows[q as usize].to {
                let t = t as usize;
                if component[t] != c as u32 {
                    row.iter_mut().zip(&reach[t * words..(t + 1) * words]).for_each(|(r, x)| *r |= x);
                }
            }
        }
        for &q in ms {
            reach[q as usize * words..(q as usize + 1) * words].copy_from_slice(&row);
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
                  todo: &mut Vec<Key>,
                  sizes: &mut usize,
                  ticks: &mut u64|
     -> (u32, u32) {
        *ticks += (SATURATION_TARGET + words as u64 / 16) * next.len() as u64;
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
            *sizes += key.0.len();
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
    let mut sizes = 0usize;
    let (start, start_rho) = target(vec![root], &all, &mut sets, &mut index, &mut todo, &mut sizes, &mut ticks);
    // Per LR state, the control states the subset's transitions that read it (but not every
    // state) lead to.
    let mut by_label: Vec<Vec<u32>> = vec![Vec::new(); sys.lr.num_states as usize];
    // Per control state reached from the subset: the union of the labels of the transitions
    // into it that do not read every state, and whether one does (each target then goes into
    // a label's list once, however many members of the subset lead to it).
    let w = sys.w;
    let mut reached: Vec<u64> = vec![0; n * w];
    let mut reached_wild: Vec<bool> = vec![false; n];
    let mut touched: Vec<u32> = Vec::new();
    let mut seen: Vec<bool> = vec![false; n];
    let mut same_list: FastMap<Vec<u32>, (u32, u32)> = FastMap::default();
    let mut done = 0usize;
    while done < todo.len() {
        if todo.len() > MAX_STATES || sizes > MAX_SUBSET_SIZES || lost(ticks) {
            return None;
        }
        let (subset, open) = todo[done].clone();
        done += 1;
        for &q in &subset {
            let row = &sys.rows[q as usize];
            ticks += (SATURATION_EDGE + w as u64) * row.to.len() as u64;
            for (k, &to) in row.to.iter().enumerate() {
                let (l, to) = (row.label(k, w), to as usize);
                if !seen[to] {
                    seen[to] = true;
                    touched.push(to as u32);
                }
                if l == &sys.all[..] {
                    reached_wild[to] = true;
                } else {
                    reached[to * w..(to + 1) * w].iter_mut().zip(l).for_each(|(r, x)| *r |= x);
                }
            }
        }
        let mut wild: Vec<u32> = Vec::new();
        let mut labels: Vec<u32> = Vec::new();
        for &to in &touched {
            let t = to as usize;
            seen[t] = false;
            let is_wild = std::mem::take(&mut reached_wild[t]);
            // (A target that is no acceptance and reaches no open class is dropped by every
            // successor: the open classes only shrink.)
            let live =
                accept_of(to).is_some() || reach[t * words..(t + 1) * words].iter().zip(&open).any(|(r, o)| r & o != 0);
            if !live {
                reached[t * w..(t + 1) * w].iter_mut().for_each(|x| *x = 0);
                continue;
            }
            if is_wild {
                wild.push(to);
            }
            for (i, word) in reached[t * w..(t + 1) * w].iter_mut().enumerate() {
                let mut bits = std::mem::take(word);
                while bits != 0 {
                    let s = (i * 64) as u32 + bits.trailing_zeros();
                    bits &= bits - 1;
                    let v = &mut by_label[s as usize];
                    if v.is_empty() {
                        labels.push(s);
                    }
                    v.push(to);
                }
            }
        }
        touched.clear();
        labels.sort_unstable();
        let default = target(wild.clone(), &open, &mut sets, &mut index, &mut todo, &mut sizes, &mut ticks);
        let mut edges = Vec::with_capacity(labels.len());
        // Labels whose lists are equal (built in one order, so equal as vectors) have one
        // successor.
        same_list.clear();
        for l in labels {
            let list = std::mem::take(&mut by_label[l as usize]);
            let (t, o) = match same_list.get(&list) {
                Some(&to) => to,
                None => {
                    let mut next = wild.clone();
                    next.extend_from_slice(&list);
                    let to = target(next, &open, &mut sets, &mut index, &mut todo, &mut sizes, &mut ticks);
                    same_list.insert(list, to);
                    to
                }
            };
            if (t, o) != default {
                edges.push((l, t, o));
            }
        }
        states.push(DState { edges, default });
    }
    let count = states.len();
    let local = LocalDwa { start, start_rho, states, sets, links: FastMap::default(), keys: vec![None; count] };
    Some((local, ticks))
}

/// The strongly connected components of the saturated automaton's transitions (Tarjan's
/// algorithm, without recursion): per control state its component, and per component its
/// states, components numbered in the order they close (a component after every one it leads
/// to).
fn components(sys: &System) -> (Vec<u32>, Vec<Vec<u32>>) {
    const NONE: u32 = u32::MAX;
    let n = sys.ctl.len();
    let mut index = vec![NONE; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut component = vec![NONE; n];
    let mut members: Vec<Vec<u32>> = Vec::new();
    let mut stack: Vec<u32> = Vec::new();
    // (The depth-first path: a state and the next of its transitions to follow.)
    let mut path: Vec<(u32, usize)> = Vec::new();
    let mut next = 0u32;
    for root in 0..n as u32 {
        if index[root as usize] != NONE {
            continue;
        }
        // (A state entered: numbered, on the stack and the path.)
        let mut entering = Some(root);
        loop {
            if let Some(v) = entering.take() {
                index[v as usize] = next;
                low[v as usize] = next;
                next += 1;
                stack.push(v);
                on_stack[v as usize] = true;
                path.push((v, 0));
            }
            let Some(&(v, i)) = path.last() else { break };
            let out = &sys.rows[v as usize].to;
            if i < out.len() {
                path.last_mut().expect("a state on the path").1 += 1;
                let w = out[i];
                if index[w as usize] == NONE {
                    entering = Some(w);
                } else if on_stack[w as usize] {
                    low[v as usize] = low[v as usize].min(index[w as usize]);
                }
                continue;
            }
            path.pop();
            if let Some(&(u, _)) = path.last() {
                low[u as usize] = low[u as usize].min(low[v as usize]);
            }
            if low[v as usize] == index[v as usize] {
                let c = members.len() as u32;
                let mut ms = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w as usize] = false;
                    component[w as usize] = c;
                    ms.push(w);
                    if w == v {
                        break;
                    }
                }
                members.push(ms);
            }
        }
    }
    (component, members)
}
