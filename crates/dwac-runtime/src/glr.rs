//! GLR reductions over the persistent GSS (Tomita style, for ε-free grammars).
//!
//! For one terminal `t` and a set of heads, [`Closure::run`] computes every node reachable
//! by reductions on lookahead `t`, merging nodes with equal LR state (the heads all share
//! one future: the same lexer thread). Nodes created here have only frozen predecessors,
//! because every reduction pops at least one symbol.

use std::collections::HashSet;
use std::sync::Arc;

use crate::gss::{push_unique, Node, NodeRef};
use crate::tables::{Action, LrTables, DEAD};

struct Local {
    state: u32,
    preds: Vec<NodeRef>,
    /// The unchanged original node, while no edge has been added to it.
    orig: Option<NodeRef>,
}

/// Scratch space for one reduction closure; reused across calls to avoid allocation.
#[derive(Default)]
pub(crate) struct Closure {
    locals: Vec<Local>,
    /// (local node, rule, restrict the first popped edge to this pred index)
    work: Vec<(u32, u32, u32)>,
    /// The nodes revealed by a reduction (each once), and the next level of its walk.
    revealed: Vec<NodeRef>,
    next: Vec<NodeRef>,
    /// The nodes of a large level, by address (the level holds them, so addresses are stable).
    seen: HashSet<usize>,
}

/// A level of a reduction's walk up to this many nodes is deduplicated by a linear scan.
const SMALL_LEVEL: usize = 16;

const ANY_EDGE: u32 = u32::MAX;

impl Closure {
    /// Reduce `heads` to closure on lookahead `t`.
    pub(crate) fn run(&mut self, lr: &LrTables, heads: &[NodeRef], t: u32) {
        self.locals.clear();
        self.work.clear();
        for h in heads {
            match self.locals.iter_mut().find(|l| l.state == h.state) {
                Some(l) => {
                    // Two heads in one state: merge them (same future), as a fresh node.
                    if let Some(o) = l.orig.take() {
                        l.preds = o.preds.to_vec();
                    }
                    for p in h.preds.iter() {
                        push_unique(&mut l.preds, p);
                    }
                }
                None => self.locals.push(Local { state: h.state, preds: Vec::new(), orig: Some(h.clone()) }),
            }
        }
        for i in 0..self.locals.len() {
            self.schedule(lr, i as u32, t, ANY_EDGE);
        }
        while let Some((i, rule, edge)) = self.work.pop() {
            self.reduce(lr, i, rule, edge, t);
        }
    }

    fn schedule(&mut self, lr: &LrTables, i: u32, t: u32, edge: u32) {
        for &a in lr.actions(self.locals[i as usize].state, t) {
            if let Action::Reduce(r) = Action::unpack(a) {
                self.work.push((i, r, edge));
            }
        }
    }

    fn preds_of(&self, i: u32) -> &[NodeRef] {
        let l = &self.locals[i as usize];
        match &l.orig {
            Some(o) => &o.preds,
            None => &l.preds,
        }
    }

    fn reduce(&mut self, lr: &LrTables, i: u32, rule: u32, edge: u32, t: u32) {
        let (Some(&len), Some(&lhs)) = (lr.rule_len.get(rule as usize), lr.rule_lhs.get(rule as usize)) else {
            return;
        };
        if len == 0 {
            return;
        }
        // Nodes revealed by popping `len` symbols, the first edge from local node `i`: the nodes
        // `len - 1` edges below that edge's targets, level by level, each node once per level
        // (under an ambiguous prefix many paths meet in one node; walked path by path, a
        // reduction of length 3 visited every pair of edges).
        let mut frontier = std::mem::take(&mut self.revealed);
        let mut next = std::mem::take(&mut self.next);
        frontier.clear();
        let preds = self.preds_of(i);
        if edge == ANY_EDGE {
            frontier.extend(preds.iter().cloned());
        } else if let Some(p) = preds.get(edge as usize) {
            frontier.push(p.clone());
        }
        for _ in 1..len {
            next.clear();
            self.seen.clear();
            for n in &frontier {
                for p in n.preds.iter() {
                    // (A linear scan while the level is small: most grammars' stacks have one
                    // predecessor per node.)
                    let fresh = if next.len() < SMALL_LEVEL {
                        !next.iter().any(|m| Arc::ptr_eq(m, p))
                    } else {
                        if self.seen.is_empty() {
                            self.seen.extend(next.iter().map(|m| Arc::as_ptr(m) as usize));
                        }
                        self.seen.insert(Arc::as_ptr(p) as usize)
                    };
                    if fresh {
                        next.push(p.clone());
                    }
                }
            }
            std::mem::swap(&mut frontier, &mut next);
        }
        next.clear();
        self.next = next;
        self.revealed = frontier;
        let revealed = std::mem::take(&mut self.revealed);
        for r in &revealed {
            let target = lr.goto(r.state, lhs);
            if target == DEAD {
                continue;
            }
            match self.locals.iter().position(|l| l.state == target) {
                None => {
                    self.locals.push(Local { state: target, preds: vec![r.clone()], orig: None });
                    let j = (self.locals.len() - 1) as u32;
                    self.schedule(lr, j, t, ANY_EDGE);
                }
                Some(j) => {
                    let l = &mut self.locals[j];
                    if let Some(o) = &l.orig {
                        if o.preds.iter().any(|p| Arc::ptr_eq(p, r)) {
                            continue;
                        }
                        l.preds = o.preds.to_vec();
                        l.orig = None;
                    }
                    if push_unique(&mut l.preds, r) {
                        let e = (l.preds.len() - 1) as u32;
                        self.schedule(lr, j as u32, t, e);
                    }
                }
            }
        }
        self.revealed = revealed;
        self.revealed.clear();
    }

    /// After [`run`](Self::run): every `(target state, node)` shift on `t`, with nodes frozen at `level`.
    pub(crate) fn shifts(&mut self, lr: &LrTables, t: u32, level: u32, out: &mut Vec<(u32, NodeRef)>) {
        for l in &mut self.locals {
            let mut frozen: Option<NodeRef> = None;
            for &a in lr.actions(l.state, t) {
                if let Action::Shift(p) = Action::unpack(a) {
                    let n = frozen.get_or_insert_with(|| match &l.orig {
                        Some(o) => o.clone(),
                        None => Node::new(l.state, level, std::mem::take(&mut l.preds)),
                    });
                    out.push((p, n.clone()));
                }
            }
        }
    }

    /// After [`run`](Self::run): does some node shift (or accept) `t`?
    pub(crate) fn can_shift(&self, lr: &LrTables, t: u32) -> bool {
        self.locals.iter().any(|l| {
            lr.actions(l.state, t).iter().any(|&a| matches!(Action::unpack(a), Action::Shift(_) | Action::Accept))
        })
    }
}
