//! The vocabulary as a byte trie, so that tokens sharing a prefix are lexed once.

/// Node `i` has children `edges[child_off[i]..child_off[i+1]]` (byte, node), sorted by byte,
/// and ends tokens `tokens[tok_off[i]..tok_off[i+1]]`. Node 0 is the root (the empty prefix).
#[derive(Debug)]
pub struct Trie {
    /// Per node: its first edge (nodes + 1 entries).
    pub child_off: Vec<u32>,
    /// Edges (byte, child), sorted by byte within a node.
    pub edges: Vec<(u8, u32)>,
    /// Per node: its first token (nodes + 1 entries).
    pub tok_off: Vec<u32>,
    /// The tokens each node ends.
    pub tokens: Vec<u32>,
}

impl Trie {
    /// The trie of `(id, bytes)` for every token with at least one byte.
    pub fn build(tokens: &[(u32, &[u8])]) -> Trie {
        let mut sorted: Vec<&(u32, &[u8])> = tokens.iter().filter(|t| !t.1.is_empty()).collect();
        sorted.sort_unstable_by(|a, b| a.1.cmp(b.1).then(a.0.cmp(&b.0)));
        // Nodes in pre-order: (depth, range of `sorted` sharing the prefix). A node's children
        // get consecutive ids when it is expanded; its edges and tokens are first collected in
        // expansion order (flat, no allocation per node), then laid out by node id.
        struct Pending {
            lo: usize,
            hi: usize,
            depth: usize,
            node: u32,
        }
        // Per node: (start, len) of its edges in `edges` and of its tokens in `ends`.
        let mut edge_span: Vec<(u32, u32)> = vec![(0, 0)];
        let mut tok_span: Vec<(u32, u32)> = vec![(0, 0)];
        let mut edges: Vec<(u8, u32)> = Vec::new();
        let mut ends: Vec<u32> = Vec::new();
        let mut stack = vec![Pending { lo: 0, hi: sorted.len(), depth: 0, node: 0 }];
        while let Some(Pending { lo, hi, depth, node }) = stack.pop() {
            let mut i = lo;
            let t0 = ends.len() as u32;
            while i < hi && sorted[i].1.len() == depth {
                ends.push(sorted[i].0);
                i += 1;
            }
            tok_span[node as usize] = (t0, ends.len() as u32 - t0);
            let e0 = edges.len() as u32;
            while i < hi {
                let b = sorted[i].1[depth];
                let mut j = i;
                while j < hi && sorted[j].1[depth] == b {
                    j += 1;
                }
                let child = edge_span.len() as u32;
                edge_span.push((0, 0));
                tok_span.push((0, 0));
                edges.push((b, child));
                stack.push(Pending { lo: i, hi: j, depth: depth + 1, node: child });
                i = j;
            }
            edge_span[node as usize] = (e0, edges.len() as u32 - e0);
        }
        let mut t = Trie {
            child_off: Vec::with_capacity(edge_span.len() + 1),
            edges: Vec::with_capacity(edges.len()),
            tok_off: Vec::with_capacity(tok_span.len() + 1),
            tokens: Vec::with_capacity(ends.len()),
        };
        t.child_off.push(0);
        t.tok_off.push(0);
        for (&(e0, el), &(t0, tl)) in edge_span.iter().zip(&tok_span) {
            t.edges.extend_from_slice(&edges[e0 as usize..(e0 + el) as usize]);
            t.child_off.push(t.edges.len() as u32);
            t.tokens.extend_from_slice(&ends[t0 as usize..(t0 + tl) as usize]);
            t.tok_off.push(t.tokens.len() as u32);
        }
        t
    }

    #[inline]
    /// Node `n`'s children (byte, node), sorted by byte.
    pub fn children(&self, n: u32) -> &[(u8, u32)] {
        &self.edges[self.child_off[n as usize] as usize..self.child_off[n as usize + 1] as usize]
    }

    #[inline]
    /// The tokens ending at node `n`.
    pub fn tokens_at(&self, n: u32) -> &[u32] {
        &self.tokens[self.tok_off[n as usize] as usize..self.tok_off[n as usize + 1] as usize]
    }

    /// Every token in the subtree of `n` (its own and its descendants').
    #[cfg(feature = "unstable")]
    pub fn subtree_tokens(&self, n: u32, out: &mut Vec<u32>) {
        let mut stack = vec![n];
        while let Some(x) = stack.pop() {
            out.extend_from_slice(self.tokens_at(x));
            stack.extend(self.children(x).iter().map(|e| e.1));
        }
    }
}

// (The tests build tables with the writer's side: feature `unstable`.)
#[cfg(all(test, feature = "unstable"))]
mod tests {
    use super::*;

    #[test]
    fn trie_spells_every_token() {
        let toks: Vec<(u32, &[u8])> =
            vec![(0, b"ab"), (1, b"a"), (2, b"abc"), (3, b"b"), (4, b""), (5, b"ab"), (6, b"ba")];
        let t = Trie::build(&toks);
        // Walk every path and collect (bytes, token).
        let mut got = Vec::new();
        let mut stack = vec![(0u32, Vec::new())];
        while let Some((n, prefix)) = stack.pop() {
            for &tok in t.tokens_at(n) {
                got.push((prefix.clone(), tok));
            }
            for &(b, c) in t.children(n) {
                let mut p = prefix.clone();
                p.push(b);
                stack.push((c, p));
            }
        }
        got.sort();
        let mut want: Vec<(Vec<u8>, u32)> =
            toks.iter().filter(|t| !t.1.is_empty()).map(|t| (t.1.to_vec(), t.0)).collect();
        want.sort();
        assert_eq!(got, want);
        let mut all = Vec::new();
        t.subtree_tokens(0, &mut all);
        all.sort();
        assert_eq!(all, vec![0, 1, 2, 3, 5, 6]);
    }
}
