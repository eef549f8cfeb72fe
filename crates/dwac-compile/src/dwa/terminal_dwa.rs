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

use std::collections::BTreeMap;

use dwac_runtime::lexer::Inhibitor;
use dwac_runtime::tables::DEAD;
use dwac_runtime::LexerTables;

use super::compose::{Step, ANY};
use super::sets::SetPool;
use super::FastMap;
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

/// One way the lexer can be after a token prefix: lexer state, carried inhibitors (an interned
/// set, `Walker::inh_sets`; 0 is the empty set) and the steps so far (a node of
/// `Walker::prefixes`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Branch {
    q: u32,
    inh: u32,
    prefix: u32,
}

/// One outcome of a byte from (lexer state, inhibitors), relative to the branch's steps: the new
/// lexer state and inhibitors, and the step taken (if a lexeme ended).
#[derive(Clone, Copy)]
struct Outcome {
    q: u32,
    inh: u32,
    step: Option<Step>,
}

/// Walks the trie from lexer states; owns the prefix trie of step sequences built on the way.
/// Everything it memoizes (byte outcomes, lookahead classes, signature sets) depends on the lexer
/// alone, so one walker serves every lexer state of a grammar.
pub struct Walker<'a> {
    pub lex: &'a LexerTables,
    pub trie: &'a Trie,
    /// The trie of step sequences: (parent, step); node 0 is the empty sequence.
    prefixes: Vec<(u32, Step)>,
    prefix_index: FastMap<(u32, Step), u32>,
    /// Steps of each node's sequence.
    depth: Vec<u32>,
    /// Interned inhibitor sets (sorted, distinct); id 0 is the empty set.
    inh_sets: Vec<Vec<Inhibitor>>,
    inh_index: FastMap<Vec<Inhibitor>, u32>,
    /// Byte outcomes of (lexer state, inhibitor set, byte) that need more than one DFA step:
    /// ranges of `outcomes`.
    advance_memo: FastMap<(u32, u32, u8), (u32, u32)>,
    outcomes: Vec<Outcome>,
    /// Per lexer state: its lookahead class, or `u32::MAX` until computed.
    class_memo: Vec<u32>,
    /// Interned signature sets (sorted, distinct).
    sig_sets: Vec<Vec<Sig>>,
    sig_index: FastMap<Vec<Sig>, u32>,
    /// Interned one-lexing signature sets, by their lexing (the common case, without a hash of
    /// a vector).
    single_sig: FastMap<Sig, u32>,
    /// Results of the subtrees below the root's children entered with one fresh branch (still
    /// inside the token's first lexeme, nothing emitted, no inhibitor): `(child, lexer state)` →
    /// range of `root_results`. They depend on that pair alone, and many lexer states share
    /// them (e.g. every state inside a JSON string enters most first bytes into the same
    /// string-interior state), so each is walked once per grammar instead of once per state.
    root_memo: FastMap<(u32, u32), (u32, u32)>,
    /// (token, signature set) pairs of the memoized subtrees.
    root_results: Vec<(u32, u32)>,
}

/// Pairs [`Walker::root_memo`] may hold in all (a memory bound; past it subtrees are walked).
const ROOT_MEMO_PAIRS: usize = 24 << 20;

/// Per-walk scratch: the branch arena, the (token, signature set) pairs found, undecided tokens.
#[derive(Default)]
struct Scratch {
    arena: Vec<Branch>,
    sigs: Vec<Sig>,
    per_token: Vec<(u32, u32)>,
    undecided: Vec<u32>,
}

impl<'a> Walker<'a> {
    pub fn new(lex: &'a LexerTables, trie: &'a Trie) -> Walker<'a> {
        Walker {
            lex,
            trie,
            prefixes: vec![(0, Step::Pass { guard: 0 })],
            prefix_index: FastMap::default(),
            depth: vec![0],
            inh_sets: vec![Vec::new()],
            inh_index: FastMap::from_iter([(Vec::new(), 0)]),
            advance_memo: FastMap::default(),
            outcomes: Vec::new(),
            class_memo: vec![u32::MAX; lex.num_states as usize],
            sig_sets: Vec::new(),
            sig_index: FastMap::default(),
            single_sig: FastMap::default(),
            root_memo: FastMap::default(),
            root_results: Vec::new(),
        }
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

    fn intern_inh(&mut self, h: &[Inhibitor]) -> u32 {
        if let Some(&id) = self.inh_index.get(h) {
            return id;
        }
        let id = self.inh_sets.len() as u32;
        self.inh_sets.push(h.to_vec());
        self.inh_index.insert(h.to_vec(), id);
        id
    }

    /// Node `n` of the step-sequence trie: (parent, step). Node 0 (the root) has no step.
    pub fn node(&self, n: u32) -> (u32, Step) {
        self.prefixes[n as usize]
    }

    /// The lookahead class of a pending lexeme at lexer state `q`.
    pub fn class(&mut self, q: u32, terms: &mut SetPool) -> u32 {
        if let Some(&c) = self.class_memo.get(q as usize).filter(|c| **c != u32::MAX) {
            return c;
        }
        let lex = self.lex;
        let c = if q == lex.start || lex.may_become_ignored(q) {
            ANY
        } else {
            terms.intern(lex.pending_terminals(q).collect())
        };
        if let Some(m) = self.class_memo.get_mut(q as usize) {
            *m = c;
        }
        c
    }

    /// Every branch after byte `b` from `br` (`commit`'s step, without the parser), appended to
    /// `out`.
    fn advance(&mut self, br: Branch, b: u8, terms: &mut SetPool, out: &mut Vec<Branch>) {
        let lex = self.lex;
        // Fast path, most of the walk: no inhibitors, no forks, no lexeme ends here.
        if br.inh == 0 && br.q != lex.start {
            let q2 = lex.step(br.q, b);
            if q2 == DEAD {
                return;
            }
            if lex.accepts(q2).is_empty() {
                if lex.can_continue(q2) {
                    out.push(Branch { q: q2, inh: 0, prefix: br.prefix });
                }
                return;
            }
        }
        let (off, len) = match self.advance_memo.get(&(br.q, br.inh, b)) {
            Some(&r) => r,
            None => {
                let off = self.outcomes.len() as u32;
                self.advance_outcomes(br.q, br.inh, b, terms);
                let r = (off, self.outcomes.len() as u32 - off);
                self.advance_memo.insert((br.q, br.inh, b), r);
                r
            }
        };
        for i in off..off + len {
            let o = self.outcomes[i as usize];
            let prefix = match o.step {
                None => br.prefix,
                Some(step) => self.extend(br.prefix, step),
            };
            out.push(Branch { q: o.q, inh: o.inh, prefix });
        }
    }

    /// The outcomes of byte `b` from lexer state `q` with inhibitor set `inh`, appended to
    /// `self.outcomes`.
    fn advance_outcomes(&mut self, q: u32, inh: u32, b: u8, terms: &mut SetPool) {
        let lex = self.lex;
        let mut h1 = Vec::new();
        let h = self.inh_sets[inh as usize].clone();
        if lex.step_inhibitors(&h, b, &mut h1).is_none() {
            return;
        }
        let inh1 = self.intern_inh(&h1);
        for q2 in lex.successors(q, b) {
            if lex.can_continue(q2) {
                self.outcomes.push(Outcome { q: q2, inh: inh1, step: None });
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
                    let inh2 = self.intern_inh(&h2);
                    if !shifts.is_empty() {
                        let step = Step::Shift { terms: terms.intern(shifts), guard };
                        self.outcomes.push(Outcome { q: lex.start, inh: inh2, step: Some(step) });
                    }
                    if ignored {
                        let step = (guard != 0).then_some(Step::Pass { guard });
                        self.outcomes.push(Outcome { q: lex.start, inh: inh2, step });
                    }
                }
                if group.iter().any(|&t| lex.is_ignored(t)) {
                    break;
                }
                higher.extend(group);
            }
        }
    }

    /// The signature set of the branches `arena[off..off + len]`, interned.
    fn sig_set(&mut self, sc: &mut Scratch, off: usize, len: usize, terms: &mut SetPool) -> u32 {
        if len == 1 {
            let br = sc.arena[off];
            let sig = (br.prefix, self.class(br.q, terms));
            if let Some(&id) = self.single_sig.get(&sig) {
                return id;
            }
            let id = self.intern_sigs(vec![sig]);
            self.single_sig.insert(sig, id);
            return id;
        }
        sc.sigs.clear();
        for i in off..off + len {
            let br = sc.arena[i];
            let c = self.class(br.q, terms);
            sc.sigs.push((br.prefix, c));
        }
        sc.sigs.sort_unstable();
        sc.sigs.dedup();
        if let Some(&id) = self.sig_index.get(sc.sigs.as_slice()) {
            return id;
        }
        self.intern_sigs(sc.sigs.clone())
    }

    /// Intern a new (sorted, distinct) signature set.
    fn intern_sigs(&mut self, sigs: Vec<Sig>) -> u32 {
        if let Some(&id) = self.sig_index.get(&sigs) {
            return id;
        }
        let id = self.sig_sets.len() as u32;
        self.sig_sets.push(sigs.clone());
        self.sig_index.insert(sigs, id);
        id
    }

    /// Walk the trie below `node` with the branches `arena[off..off + len]`.
    fn walk(&mut self, node: u32, off: usize, len: usize, sc: &mut Scratch, terms: &mut SetPool) {
        if node != 0 && !self.trie.tokens_at(node).is_empty() {
            let id = self.sig_set(sc, off, len, terms);
            for &tok in self.trie.tokens_at(node) {
                sc.per_token.push((tok, id));
            }
        }
        for &(b, child) in self.trie.children(node) {
            let start = sc.arena.len();
            for i in off..off + len {
                let br = sc.arena[i];
                self.advance(br, b, terms, &mut sc.arena);
            }
            let mut n = sc.arena.len() - start;
            if n > 1 {
                sc.arena[start..].sort_unstable();
                let mut w = start + 1;
                for r in start + 1..start + n {
                    if sc.arena[r] != sc.arena[w - 1] {
                        sc.arena[w] = sc.arena[r];
                        w += 1;
                    }
                }
                sc.arena.truncate(w);
                n = w - start;
            }
            if n == 0 {
                continue;
            }
            if n > MAX_LEXINGS || sc.arena[start..].iter().any(|b| self.depth[b.prefix as usize] > MAX_STEPS) {
                // Too many lexings (same-length forks or every-segmentation grammars) or too
                // long ones: these tokens are decided at run time by committing them.
                self.trie.subtree_tokens(child, &mut sc.undecided);
            } else if node == 0 && n == 1 && sc.arena[start].inh == 0 && sc.arena[start].prefix == 0 {
                let key = (child, sc.arena[start].q);
                if let Some(&(off, len)) = self.root_memo.get(&key) {
                    sc.per_token.extend_from_slice(&self.root_results[off as usize..(off + len) as usize]);
                } else {
                    let (before, undecided_before) = (sc.per_token.len(), sc.undecided.len());
                    self.walk(child, start, n, sc, terms);
                    let found = &sc.per_token[before..];
                    // Subtrees with UNDECIDED tokens are not memoized (rare; walked again).
                    if sc.undecided.len() == undecided_before
                        && self.root_results.len() + found.len() <= ROOT_MEMO_PAIRS
                    {
                        let off = self.root_results.len() as u32;
                        self.root_results.extend_from_slice(found);
                        self.root_memo.insert(key, (off, found.len() as u32));
                    }
                }
            } else {
                self.walk(child, start, n, sc, terms);
            }
            sc.arena.truncate(start);
        }
    }

    /// The token classes at lexer state `q`: every token with at least one lexing, grouped by its
    /// set of signatures, deterministic order (by first token), tokens sorted; and the tokens left
    /// undecided (more than [`MAX_LEXINGS`] lexings of a prefix, or one longer than [`MAX_STEPS`]
    /// steps), sorted.
    pub fn classes(&mut self, q: u32, terms: &mut SetPool) -> (Vec<TokenClass>, Vec<u32>) {
        let mut sc = Scratch::default();
        sc.arena.push(Branch { q, inh: 0, prefix: 0 });
        self.walk(0, 0, 1, &mut sc, terms);
        // Group by signature set, classes in order of their first token, tokens ascending: many
        // tokens through a table indexed by token id, few by sorting.
        // Class of each signature set id (ids are dense): a table, not a hash per token.
        let mut class_of: Vec<u32> = vec![u32::MAX; self.sig_sets.len()];
        let mut classes: Vec<TokenClass> = Vec::new();
        let mut add = |tok: u32, id: u32, classes: &mut Vec<TokenClass>| {
            let slot = &mut class_of[id as usize];
            if *slot == u32::MAX {
                classes.push(TokenClass { sigs: self.sig_sets[id as usize].clone(), tokens: Vec::new() });
                *slot = (classes.len() - 1) as u32;
            }
            classes[*slot as usize].tokens.push(tok);
        };
        if sc.per_token.len() > 4096 {
            let max = sc.per_token.iter().map(|p| p.0).max().unwrap_or(0) as usize + 1;
            let mut by_tok = vec![u32::MAX; max];
            for &(tok, id) in &sc.per_token {
                by_tok[tok as usize] = id;
            }
            for (tok, &id) in by_tok.iter().enumerate() {
                if id != u32::MAX {
                    add(tok as u32, id, &mut classes);
                }
            }
        } else {
            sc.per_token.sort_unstable();
            for &(tok, id) in &sc.per_token {
                add(tok, id, &mut classes);
            }
        }
        sc.undecided.sort_unstable();
        sc.undecided.dedup();
        (classes, sc.undecided)
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
