//! The Terminal DWA (ALGORITHM.md §4.1): from a lexer state a thread can be in, every token's
//! possible lexings, found by walking the vocabulary trie through the lexer exactly as `commit`
//! steps (lexer components forked at `q0`, maximal munch with inhibitors created inside the token,
//! same-length forks, contextual priorities as guards), and the `KILL` sets of inhibitors carried
//! across token boundaries.
//!
//! A lexing is a *signature*: its step sequence (terminals to shift, each with its guard), as a node
//! of the walker's trie of step sequences (shared by all lexer states, so lexings with a common
//! beginning share their simulation), and the lookahead class of the pending lexeme at the token's
//! end. Tokens with the same set of signatures from a state behave identically there: they form
//! one token class of that state.

use std::collections::{BTreeMap, HashMap};

use dwac_runtime::lexer::Inhibitor;
use dwac_runtime::LexerTables;

use super::compose::{Step, ANY};
use super::sets::SetPool;
use dwac_runtime::trie::Trie;

/// One lexing of a token: (node of the step-sequence trie, lookahead class).
pub type Sig = (u32, u32);

/// Lexings a token prefix may have before its tokens are left to run time (UNDECIDED).
pub const MAX_LEXINGS: usize = 64;
/// Steps (lexemes) a lexing may have before its token is left to run time (UNDECIDED).
pub const MAX_STEPS: u32 = 64;

/// The tokens of one class at one lexer state, and their lexings.
pub struct TokenClass {
    pub sigs: Vec<Sig>,
    pub tokens: Vec<u32>,
}

#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Branch {
    q: u32,
    inh: Vec<Inhibitor>,
    /// Steps so far, as a node of `Walker::prefixes`.
    prefix: u32,
}

/// Walks the trie from lexer states; owns the prefix trie of step sequences built on the way.
pub struct Walker<'a> {
    pub lex: &'a LexerTables,
    pub trie: &'a Trie,
    /// The trie of step sequences: (parent, step); node 0 is the empty sequence.
    prefixes: Vec<(u32, Step)>,
    prefix_index: HashMap<(u32, Step), u32>,
    /// Steps of each node's sequence.
    depth: Vec<u32>,
}

impl<'a> Walker<'a> {
    pub fn new(lex: &'a LexerTables, trie: &'a Trie) -> Walker<'a> {
        Walker { lex, trie, prefixes: vec![(0, Step::Pass { guard: 0 })], prefix_index: HashMap::new(), depth: vec![0] }
    }

    fn extend(&mut self, prefix: u32, step: Step) -> u32 {
        if let Some(&id) = self.prefix_index.get(&(prefix, step)) {
            return id;
        }
        let id = self.prefixes.len() as u32;
        self.prefixes.push((prefix, step));
        self.depth.push(self.depth[prefix as usize] + 1);
        self.prefix_index.insert((prefix, step), id);
        id
    }

    /// Node `n` of the step-sequence trie: (parent, step). Node 0 (the root) has no step.
    pub fn node(&self, n: u32) -> (u32, Step) {
        self.prefixes[n as usize]
    }

    /// The lookahead class of a pending lexeme at lexer state `q`.
    pub fn class(&self, q: u32, terms: &mut SetPool) -> u32 {
        let lex = self.lex;
        if q == lex.start || lex.may_become_ignored(q) {
            ANY
        } else {
            terms.intern(lex.pending_terminals(q).collect())
        }
    }

    /// Every branch after byte `b` from `br` (`commit`'s step, without the parser).
    fn advance(&mut self, br: &Branch, b: u8, terms: &mut SetPool, out: &mut Vec<Branch>) {
        let lex = self.lex;
        let mut h1 = Vec::new();
        if lex.step_inhibitors(&br.inh, b, &mut h1).is_none() {
            return;
        }
        for q2 in lex.successors(br.q, b) {
            if lex.can_continue(q2) {
                out.push(Branch { q: q2, inh: h1.clone(), prefix: br.prefix });
            }
            let acc = lex.accepts(q2);
            if acc.is_empty() {
                continue;
            }
            // Priority groups, highest first; a lower group is guarded by every non-ignored terminal
            // above it, and never used below a group with an ignored terminal (always usable).
            let mut sorted = acc.to_vec();
            sorted.sort_by_key(|&t| (std::cmp::Reverse(lex.priority_of(t)), t));
            let mut higher: Vec<u32> = Vec::new();
            let mut i = 0;
            while i < sorted.len() {
                let p = lex.priority_of(sorted[i]);
                let group: Vec<u32> = sorted[i..].iter().copied().take_while(|&t| lex.priority_of(t) == p).collect();
                i += group.len();
                let guard = terms.intern(higher.clone());
                // One branch per resulting inhibitor set: its non-ignored terminals form one step
                // (a fork the parser resolves), each ignored terminal a pass.
                let mut by_inh: BTreeMap<Vec<Inhibitor>, (Vec<u32>, bool)> = BTreeMap::new();
                for &t in &group {
                    let mut h2 = h1.clone();
                    if let Some(inh) = lex.inhibitor_for(t, q2) {
                        h2.push(inh);
                        h2.sort_unstable();
                        h2.dedup();
                    }
                    let e = by_inh.entry(h2).or_default();
                    if lex.is_ignored(t) {
                        e.1 = true;
                    } else {
                        e.0.push(t);
                    }
                }
                for (h2, (shifts, ignored)) in by_inh {
                    if !shifts.is_empty() {
                        let step = Step::Shift { terms: terms.intern(shifts), guard };
                        let prefix = self.extend(br.prefix, step);
                        out.push(Branch { q: lex.start, inh: h2.clone(), prefix });
                    }
                    if ignored {
                        let prefix = if guard == 0 { br.prefix } else { self.extend(br.prefix, Step::Pass { guard }) };
                        out.push(Branch { q: lex.start, inh: h2, prefix });
                    }
                }
                if group.iter().any(|&t| lex.is_ignored(t)) {
                    break;
                }
                higher.extend(group);
            }
        }
    }

    /// The token classes at lexer state `q`: every token with at least one lexing, grouped by its
    /// set of signatures, deterministic order (by first token); and the tokens left undecided
    /// (more than [`MAX_LEXINGS`] lexings of a prefix, or one longer than [`MAX_STEPS`] steps),
    /// sorted.
    pub fn classes(&mut self, q: u32, terms: &mut SetPool) -> (Vec<TokenClass>, Vec<u32>) {
        let mut per_token: Vec<(u32, Vec<Sig>)> = Vec::new();
        let mut undecided: Vec<u32> = Vec::new();
        let mut stack: Vec<(u32, Vec<Branch>)> = vec![(0, vec![Branch { q, inh: Vec::new(), prefix: 0 }])];
        let mut next = Vec::new();
        while let Some((node, branches)) = stack.pop() {
            if node != 0 && !self.trie.tokens_at(node).is_empty() {
                let mut sigs: Vec<Sig> = Vec::with_capacity(branches.len());
                for br in &branches {
                    sigs.push((br.prefix, self.class(br.q, terms)));
                }
                sigs.sort_unstable();
                sigs.dedup();
                for &tok in self.trie.tokens_at(node) {
                    per_token.push((tok, sigs.clone()));
                }
            }
            for &(b, child) in self.trie.children(node) {
                next.clear();
                for br in &branches {
                    self.advance(br, b, terms, &mut next);
                }
                if next.is_empty() {
                    continue;
                }
                let mut nb = std::mem::take(&mut next);
                nb.sort_unstable();
                nb.dedup();
                if nb.len() > MAX_LEXINGS || nb.iter().any(|b| self.depth[b.prefix as usize] > MAX_STEPS) {
                    // Too many lexings (same-length forks or every-segmentation grammars) or too
                    // long ones: these tokens are decided at run time by committing them.
                    self.trie.subtree_tokens(child, &mut undecided);
                    continue;
                }
                stack.push((child, nb));
            }
        }
        let mut by_sigs: BTreeMap<Vec<Sig>, Vec<u32>> = BTreeMap::new();
        for (tok, sigs) in per_token {
            by_sigs.entry(sigs).or_default().push(tok);
        }
        let mut classes: Vec<TokenClass> = by_sigs
            .into_iter()
            .map(|(sigs, mut tokens)| {
                tokens.sort_unstable();
                TokenClass { sigs, tokens }
            })
            .collect();
        classes.sort_by_key(|c| c.tokens[0]);
        undecided.sort_unstable();
        undecided.dedup();
        (classes, undecided)
    }
}

/// Every carried inhibitor `(s, k)` that can exist at a token boundary: the inhibitors tokens
/// create, advanced over any bytes that neither fire nor drop them. Sorted.
pub fn carried_inhibitors(lex: &LexerTables) -> Vec<Inhibitor> {
    let mut seen: std::collections::BTreeSet<Inhibitor> = Default::default();
    let mut stack = Vec::new();
    for q in 0..lex.num_states {
        for &t in lex.accepts(q) {
            if let Some(i) = lex.inhibitor_for(t, q) {
                if seen.insert(i) {
                    stack.push(i);
                }
            }
        }
    }
    let mut out = Vec::new();
    while let Some(i) = stack.pop() {
        for b in 0..=255u8 {
            if lex.step_inhibitors(&[i], b, &mut out).is_some() {
                for &j in &out {
                    if seen.insert(j) {
                        stack.push(j);
                    }
                }
            }
        }
    }
    seen.into_iter().collect()
}

/// The tokens whose bytes fire inhibitor `i` (ALGORITHM.md §4.1 `KILL`).
pub fn kill_set(lex: &LexerTables, trie: &Trie, i: Inhibitor) -> Vec<u32> {
    let mut out = Vec::new();
    let mut stack = vec![(0u32, i)];
    let mut next = Vec::new();
    while let Some((node, inh)) = stack.pop() {
        for &(b, child) in trie.children(node) {
            match lex.step_inhibitors(&[inh], b, &mut next) {
                None => trie.subtree_tokens(child, &mut out),
                Some(()) => {
                    if let Some(&j) = next.first() {
                        stack.push((child, j));
                    }
                }
            }
        }
    }
    out.sort_unstable();
    out
}
