//! Persistent graph-structured stack. Nodes are immutable once built and shared by
//! `Arc`, so cloning a parser configuration (for speculation, rollback or the
//! reference oracle) copies only head pointers.

use std::sync::Arc;

/// A GSS node: an LR state with the set of nodes below it.
#[derive(Debug)]
pub struct Node {
    /// LR state.
    pub state: u32,
    /// Byte level: `2·pos` for a node created by shifting a terminal that ends at byte
    /// `pos`, `2·pos − 1` for a node created by reductions before that shift. Every edge
    /// goes strictly down in level.
    pub level: u32,
    /// Predecessors (the nodes one symbol below).
    pub preds: Box<[NodeRef]>,
}

pub type NodeRef = Arc<Node>;

impl Node {
    pub fn new(state: u32, level: u32, preds: Vec<NodeRef>) -> NodeRef {
        Arc::new(Node { state, level, preds: preds.into_boxed_slice() })
    }
}

impl Drop for Node {
    /// Iterative drop: a deep stack must not overflow the call stack when released.
    fn drop(&mut self) {
        let mut stack: Vec<NodeRef> = std::mem::take(&mut self.preds).into_vec();
        while let Some(n) = stack.pop() {
            if let Ok(mut inner) = Arc::try_unwrap(n) {
                stack.extend(std::mem::take(&mut inner.preds).into_vec());
            }
        }
    }
}

/// Push `n` onto `v` unless the same node (by identity) is already there.
pub(crate) fn push_unique(v: &mut Vec<NodeRef>, n: &NodeRef) -> bool {
    if v.iter().any(|m| Arc::ptr_eq(m, n)) {
        false
    } else {
        v.push(n.clone());
        true
    }
}
