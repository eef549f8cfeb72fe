//! Minimization of the assembled Parser DWA (docs/CONSTRUCTION.md "The Parser DWA", step 7), across lexer
//! states: two states are merged when they have the same future, that is the same output set
//! and an equivalent target on every label (explicit edges and the DEFAULT edge).
//!
//! A state's row is `(default target, default output, [(label, target, output)])` with the
//! explicit edges sorted by label and every explicit edge equal to the DEFAULT edge dropped (so
//! the row is canonical: two states that read every label alike have equal rows once their
//! targets are replaced by their classes). Token sets are interned, so outputs compare by id.
//!
//! * **Acyclic** automata (every grammar whose reduction chains are bounded, ARCHITECTURE.md "The contract") are
//!   minimized in one pass: rows are interned in reverse topological order, targets replaced by
//!   their class first, which gives the minimum by construction (two states are equivalent iff
//!   their canonical rows over classes are equal, by induction on height).
//! * An automaton with a cycle (right recursion past the normalization budget) is refined
//!   Moore-style: all states start in one class, each round splits by (class, row over the
//!   previous round's classes), until a round splits nothing.
//!
//! States unreachable from any start are dropped. The classes are numbered in the order a
//! breadth-first walk from the start states (in lexer-state order, edges in label order, DEFAULT
//! last) first reaches them, so the output is deterministic.

use std::collections::VecDeque;

use dwac_runtime::unstable::DEAD;
use dwac_runtime::unstable::{pack_bitmaps, DwaWriter, MaskTables, NONE};

use super::FastMap;

/// A canonical row: default (target, output), then explicit (label, target, output).
type Row = (u32, u32, Vec<(u32, u32, u32)>);

/// The row of state `d` with targets mapped by `class` (DEAD stays DEAD).
fn row(t: &MaskTables, d: u32, class: &[u32]) -> Row {
    let map = |x: u32| if x == DEAD { DEAD } else { class[x as usize] };
    let (dt, dr) = t.default_edge(d);
    let def = (map(dt), dr);
    let edges = t.edges(d).map(|(l, x, r)| (l, map(x), r)).filter(|&(_, x, r)| (x, r) != def).collect();
    (def.0, def.1, edges)
}

/// The start states, then the second starts (`MaskTables::aux_start`), in lexer-state order.
pub fn roots(t: &MaskTables) -> Vec<u32> {
    t.start.iter().chain(t.aux_start.iter()).copied().filter(|&s| s != NONE).collect()
}

/// The states reachable from the start states, in reverse topological order if there is no
/// cycle (`Err(reachable)` otherwise).
fn postorder(t: &MaskTables) -> Result<Vec<u32>, Vec<bool>> {
    let n = t.num_states();
    // 0 = unvisited, 1 = on the stack, 2 = done.
    let mut mark = vec![0u8; n];
    let mut order = Vec::with_capacity(n);
    let mut cyclic = false;
    let mut stack: Vec<(u32, bool)> = Vec::new();
    for s in roots(t) {
        stack.push((s, false));
        while let Some((d, post)) = stack.pop() {
            let di = d as usize;
            if post {
                mark[di] = 2;
                order.push(d);
                continue;
            }
            if mark[di] != 0 {
                continue;
            }
            mark[di] = 1;
            stack.push((d, true));
            for x in t.edges(d).map(|e| e.1).chain(std::iter::once(t.default_edge(d).0)) {
                if x == DEAD {
                    continue;
                }
                match mark[x as usize] {
                    0 => stack.push((x, false)),
                    1 => cyclic = true,
                    _ => {}
                }
            }
        }
    }
    if cyclic {
        Err(mark.into_iter().map(|m| m != 0).collect())
    } else {
        Ok(order)
    }
}

/// The class of every state (`NONE` for unreachable ones) and the number of classes, before
/// renumbering.
fn classes(t: &MaskTables) -> (Vec<u32>, u32) {
    let n = t.num_states();
    match postorder(t) {
        Ok(order) => {
            let mut class = vec![NONE; n];
            let mut index: FastMap<Row, u32> = FastMap::default();
            for d in order {
                let r = row(t, d, &class);
                let next = index.len() as u32;
                class[d as usize] = *index.entry(r).or_insert(next);
            }
            let k = index.len() as u32;
            (class, k)
        }
        Err(reachable) => {
            let mut class: Vec<u32> = reachable.iter().map(|&r| if r { 0 } else { NONE }).collect();
            let mut count = 1;
            loop {
                let mut index: FastMap<(u32, Row), u32> = FastMap::default();
                let mut next = vec![NONE; n];
                for d in 0..n as u32 {
                    if class[d as usize] == NONE {
                        continue;
                    }
                    let key = (class[d as usize], row(t, d, &class));
                    let id = index.len() as u32;
                    next[d as usize] = *index.entry(key).or_insert(id);
                }
                let now = index.len() as u32;
                class = next;
                if now == count {
                    return (class, now);
                }
                count = now;
            }
        }
    }
}

/// Minimize `t`'s automaton in place (token sets and kill tables are kept as they are).
/// Returns the number of states before and after.
pub fn minimize(t: &mut MaskTables) -> (usize, usize) {
    let before = t.num_states();
    let (class, k) = classes(t);
    // A representative per class, and the classes renumbered in breadth-first order.
    let mut rep = vec![NONE; k as usize];
    for (d, &c) in class.iter().enumerate() {
        if c != NONE && rep[c as usize] == NONE {
            rep[c as usize] = d as u32;
        }
    }
    let mut new_id = vec![NONE; k as usize];
    let mut order: Vec<u32> = Vec::with_capacity(k as usize);
    let mut queue = VecDeque::new();
    let mut visit = |c: u32, order: &mut Vec<u32>, queue: &mut VecDeque<u32>| {
        if new_id[c as usize] == NONE {
            new_id[c as usize] = order.len() as u32;
            order.push(c);
            queue.push_back(c);
        }
    };
    for s in roots(t) {
        visit(class[s as usize], &mut order, &mut queue);
        while let Some(c) = queue.pop_front() {
            let (d, _, edges) = {
                let r = row(t, rep[c as usize], &class);
                (r.0, r.1, r.2)
            };
            for &(_, x, _) in &edges {
                if x != DEAD {
                    visit(x, &mut order, &mut queue);
                }
            }
            if d != DEAD {
                visit(d, &mut order, &mut queue);
            }
        }
    }
    let map = |c: u32| if c == DEAD { DEAD } else { new_id[c as usize] };
    let mut out = MaskTables { edge_off: vec![0].into(), outcome_off: vec![0].into(), ..MaskTables::default() };
    let mut writer = DwaWriter::new();
    for &c in &order {
        let (d, r, edges) = row(t, rep[c as usize], &class);
        writer.push(&mut out, (map(d), r), edges.into_iter().map(|(l, x, o)| (l, map(x), o)));
    }
    let start: Vec<u32> =
        t.start.iter().map(|&s| if s == NONE { NONE } else { new_id[class[s as usize] as usize] }).collect();
    t.start = start.into();
    let aux: Vec<u32> =
        t.aux_start.iter().map(|&s| if s == NONE { NONE } else { new_id[class[s as usize] as usize] }).collect();
    t.aux_start = aux.into();
    (t.edge_off, t.label_off, t.edge_label, t.edge_outcome) =
        (out.edge_off, out.label_off, out.edge_label, out.edge_outcome);
    (t.outcome_off, t.outcome_target, t.outcome_rho) = (out.outcome_off, out.outcome_target, out.outcome_rho);
    (before, t.num_states())
}

/// Keep only the token sets the tables refer to, renumbered in the order they are first
/// referred to (start outputs, UNDECIDED sets, then state by state the outputs of its outcomes,
/// DEFAULT first, then the kill sets), so that equal automata have equal set tables however
/// the sets were interned while building, and cut the bitmaps kept into interned blocks
/// (format 3.0). `bitmap(s)` is set `s`'s bitmap (`words` words) if it is a bitmap set: `t`'s
/// `set_dense`, `block_refs` and `blocks` are not read. Returns the number of sets before and
/// after.
pub fn compact_sets<'b>(t: &mut MaskTables, bitmap: impl Fn(u32) -> Option<&'b [u32]>) -> (usize, usize) {
    let before = t.num_sets();
    let mut new_id = vec![NONE; before];
    let mut order: Vec<u32> = Vec::new();
    let mut renumber = |s: u32, order: &mut Vec<u32>| -> u32 {
        if s == NONE {
            return NONE;
        }
        if new_id[s as usize] == NONE {
            new_id[s as usize] = order.len() as u32;
            order.push(s);
        }
        new_id[s as usize]
    };
    let start_rho: Vec<u32> = t.start_rho.iter().map(|&s| renumber(s, &mut order)).collect();
    let undecided: Vec<u32> = t.undecided.iter().map(|&s| renumber(s, &mut order)).collect();
    let mut outcome_rho = Vec::with_capacity(t.outcome_rho.len());
    for s in t.outcome_rho.iter() {
        outcome_rho.push(renumber(s, &mut order));
    }
    let kill_set: Vec<u32> = t.kill_set.iter().map(|&s| renumber(s, &mut order)).collect();
    let words = t.words();
    let per_set = t.blocks_per_set() as u32;
    let (mut off, mut ranges, mut dense_of, mut dense) = (vec![0u32], Vec::new(), Vec::new(), Vec::new());
    for &s in &order {
        match bitmap(s) {
            Some(bits) => {
                dense_of.push(dense.len() as u32 * per_set);
                dense.push(bits);
            }
            None => {
                dense_of.push(NONE);
                ranges.extend_from_slice(t.set(s));
            }
        }
        off.push((ranges.len() / 2) as u32);
    }
    // The blocks of the sets kept, interned again (no block of a dropped set is left).
    let (block_refs, blocks) = pack_bitmaps(dense, words);
    t.start_rho = start_rho.into();
    t.undecided = undecided.into();
    t.outcome_rho = outcome_rho.into();
    t.kill_set = kill_set.into();
    t.set_off = off.into();
    t.set_ranges = ranges.into();
    t.set_dense = dense_of.into();
    t.block_refs = block_refs.into();
    t.blocks = blocks.into();
    (before, t.num_sets())
}
