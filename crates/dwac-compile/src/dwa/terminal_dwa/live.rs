//! Live heights: how far below a trie node a walk entered with one fresh branch actually reads.
//!
//! A subtree of height `h` entered at lexer state `e` yields the same lexings from every state
//! `≡_h` to `e` ([`Horizon`]), which is how [`Walker::root_memo`] and [`Walker::block`] share
//! walks between lexer states. But `≡_h` compares every byte string of length `h`, while the walk
//! reads only the strings the trie has. Inside a format string most of the vocabulary dies on the
//! first byte or two: from the states of an RFC 3339 `time` before its seconds, which remember
//! the hour and minute (a leap second is valid only at 23:59 UTC, so the offset that may follow
//! depends on them), the tokens below `\` read at most `\u003` before they die, and those states
//! are all alike that far, although no two of them are `≡_h` for the `\` subtree's height.
//!
//! [`live_height`] finds `L`, the deepest node below the child (at depth 0) that the walk reaches
//! with its branch still moving the lexer on, and returns `min(h, L + 1)` when no byte on the way
//! does more than that ([`step_action`] neither accepts a lexeme nor goes back to the start).
//! Then the walk below, from `e`, is [`Walker::walk_single`] alone: at each node it records the
//! node's tokens with `e`'s branch's lookahead class there, and steps each child byte to a state
//! that moves on, or to none. Both are read off the successors' level-0 facts (dead, start, accept
//! list, `Next⁺`), and every node at depth `L + 1` is dead. A state `y ≡_{L+1} e` therefore
//! reaches the same nodes alive, in states of the same classes, and dies at the same nodes
//! below (dead states stay dead): the walk yields the same (token, signature) pairs. So the
//! subtree can be keyed by `e`'s block of `≡_{min(h, L+1)}` instead of `≡_h`.
//!
//! The search goes tallest child first and skips a subtree that ends no deeper than the deepest
//! live node found: whatever the walk does there (even more than move the lexer on), it reads
//! no further than that depth, and the general argument of bounded-horizon equivalence (one
//! fresh branch in states `≡` to the subtree's height, no inhibitor created within it:
//! `Walker::equivalent_branches`) makes its results equal. So a free string, where the tallest
//! path is alive, is settled at the subtree's height in about that many steps. The search
//! examines at most [`LIVE_BUDGET`] edges; past it, the height is `h`, as before. The answer
//! depends on `(e, child)` alone, so the walker and the prewalking thread each keep their own
//! memo and agree.
//!
//! The search itself reads only what `≡_h` compares: the action of each byte (dead, moving on,
//! or accepting / back at the start: [`step_action`], from the level-0 facts) on the strings of
//! fewer than `h` bytes below the child. So two entry states `≡_h` explore the same nodes in the
//! same order with the same actions, spend the same budget and return the same height: the memo
//! is keyed by `e`'s block of `≡_h` where the horizon knows it. The states of a long counter
//! (`maxLength: 2048`), all alike that far from their bound, are searched once.

use super::{step_action, FastMap, Horizon, LexerTables, Trie, TrieIndex, ACT_LEAVE, ACT_SKIP};

/// Trie edges [`live_height`] examines before it settles for the subtree's height.
pub(super) const LIVE_BUDGET: u32 = 1024;

/// [`live_height`] per (entry state, trie node), shared by equivalent entry states.
#[derive(Default)]
pub(super) struct LiveHeights {
    /// By (entry key, child): the key is the entry state's block of `≡_h` tagged with bit 32, or
    /// the state itself where the horizon has no block at `h`.
    memo: FastMap<(u64, u32), u32>,
    stack: Vec<(u32, u32, u32)>,
}

impl LiveHeights {
    /// The bytes a walk of `child`'s subtree entered at `e` with one fresh branch reads past
    /// `child`: `min(h, L + 1)` as the module explains, or the subtree's height `h`.
    pub(super) fn get(
        &mut self,
        (lex, trie, index, horizon): (&LexerTables, &Trie, &TrieIndex, &Horizon),
        e: u32,
        child: u32,
    ) -> u32 {
        let h = index.height[child as usize];
        if h <= 1 || e == lex.start {
            return h;
        }
        // States `≡_h` search alike (the module's argument).
        let key = horizon.block_at(e, h).map_or(e as u64, |b| 1 << 32 | b as u64);
        if let Some(&l) = self.memo.get(&(key, child)) {
            return l;
        }
        let l = self.search(lex, trie, index, e, child, h);
        self.memo.insert((key, child), l);
        l
    }

    fn search(&mut self, lex: &LexerTables, trie: &Trie, index: &TrieIndex, e: u32, child: u32, h: u32) -> u32 {
        let stack = &mut self.stack;
        stack.clear();
        stack.push((child, e, 0));
        let (mut deepest, mut budget) = (0, LIVE_BUDGET);
        while let Some((node, q, depth)) = stack.pop() {
            // A subtree that ends no deeper than the deepest live node found cannot raise it,
            // and whatever its walk does, it reads no further (the module's argument).
            if depth + index.height[node as usize] <= deepest {
                continue;
            }
            deepest = deepest.max(depth);
            if deepest + 1 >= h {
                return h;
            }
            let (a, b) = (trie.child_off[node as usize] as usize, trie.child_off[node as usize + 1] as usize);
            // Pushed shortest first, so the tallest is searched first.
            for &(byte, c) in index.tallest[a..b].iter().rev() {
                if depth + 1 + index.height[c as usize] <= deepest {
                    continue;
                }
                budget = match budget.checked_sub(1) {
                    Some(b) => b,
                    None => return h,
                };
                match step_action(lex, lex.step(q, byte)) {
                    ACT_SKIP => {}
                    ACT_LEAVE => return h,
                    q2 => stack.push((c, q2, depth + 1)),
                }
            }
        }
        (deepest + 1).min(h)
    }
}
