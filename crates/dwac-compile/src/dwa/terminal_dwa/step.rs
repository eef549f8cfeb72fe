//! One byte of the lexer simulation: branches (lexer state, carried inhibitors, steps so far)
//! advanced over a byte, the step-sequence trie and interned signature sets.

use super::{Inhibitor, LexerTables, SetPool, Sig, Step, Walker, ANY, DEAD};
use std::collections::BTreeMap;
use std::sync::Arc;

/// [`step_action`]: the byte leaves no lexing.
pub(super) const ACT_SKIP: u32 = u32::MAX;

/// [`step_action`]: the byte does more than move the lexer on ([`Walker::leave`]).
pub(super) const ACT_LEAVE: u32 = u32::MAX - 1;

/// What [`Walker::walk_single`] does with a byte that takes its branch's lexer state to `q2`:
/// [`ACT_SKIP`] when no lexing is left (dead, or a state that neither accepts nor can
/// continue), [`ACT_LEAVE`] when it does more than move the lexer on (a lexeme is accepted,
/// or the lexer is back at its start), else `q2`, where the walk goes on in place.
pub(super) fn step_action(lex: &LexerTables, q2: u32) -> u32 {
    if q2 == DEAD {
        ACT_SKIP
    } else if !lex.accepts(q2).is_empty() {
        ACT_LEAVE
    } else if !lex.can_continue(q2) {
        ACT_SKIP
    } else if q2 == lex.start {
        ACT_LEAVE
    } else {
        q2
    }
}

/// [`step_action`] per lexer state and byte class (`rows[q * num_classes + class]`), each
/// state's row filled when a walk first needs it: one load per trie edge instead of a DFA
/// step, an accept list and a `Next⁺` row.
pub(super) struct StepRows {
    rows: Vec<u32>,
    ready: Vec<bool>,
    classes: usize,
    byte_class: [u8; 256],
}

impl StepRows {
    pub(super) fn new(lex: &LexerTables) -> StepRows {
        StepRows {
            rows: Vec::new(),
            ready: vec![false; lex.num_states as usize],
            classes: lex.num_classes as usize,
            byte_class: std::array::from_fn(|b| lex.byte_class[b]),
        }
    }

    /// Where `q`'s row starts (filled first if need be), for [`StepRows::at`].
    pub(super) fn row(&mut self, lex: &LexerTables, q: u32) -> usize {
        let (k, at) = (self.classes, q as usize * self.classes);
        if !self.ready[q as usize] {
            if self.rows.is_empty() {
                self.rows = vec![ACT_SKIP; lex.num_states as usize * k];
            }
            for c in 0..k {
                self.rows[at + c] = step_action(lex, lex.trans.get(at + c));
            }
            self.ready[q as usize] = true;
        }
        at
    }

    /// [`step_action`] of byte `b` in the row starting at `row`.
    #[inline]
    pub(super) fn at(&self, row: usize, b: u8) -> u32 {
        self.rows[row + self.byte_class[b as usize] as usize]
    }
}

/// Per-walk scratch: the branch arena, the (token, signature set) pairs found and the token
/// lists found in bulk, undecided tokens.
#[derive(Default)]
pub(super) struct Scratch {
    pub(super) arena: Vec<Branch>,
    pub(super) sigs: Vec<Sig>,
    pub(super) per_token: Vec<(u32, u32)>,
    pub(super) bulk: Vec<Bulk>,
    pub(super) undecided: Vec<u32>,
}

/// Tokens that share one signature set without being listed pair by pair: (signature set id,
/// smallest token, tokens), from a closure walk ([`Walker::closure_walk`]).
pub(super) type Bulk = (u32, u32, Arc<[u32]>);

/// One way the lexer can be after a token prefix: lexer state, carried inhibitors (an interned
/// set, `Walker::inh_sets`; 0 is the empty set) and the steps so far (a node of
/// `Walker::prefixes`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct Branch {
    pub(super) q: u32,
    pub(super) inh: u32,
    pub(super) prefix: u32,
}

/// One outcome of a byte from (lexer state, inhibitors), relative to the branch's steps: the new
/// lexer state and inhibitors, and the step taken (if a lexeme ended).
#[derive(Clone, Copy)]
pub(super) struct Outcome {
    pub(super) q: u32,
    pub(super) inh: u32,
    pub(super) step: Option<Step>,
}

impl<'a> Walker<'a> {
    pub(super) fn extend(&mut self, prefix: u32, step: Step) -> u32 {
        if let Some(&id) = self.prefix_index.get(&(prefix, step)) {
            return id;
        }
        let id = self.prefixes.len() as u32;
        self.prefixes.push((prefix, step));
        self.depth.push(self.depth[prefix as usize] + 1);
        self.prefix_index.insert((prefix, step), id);
        id
    }

    pub(super) fn intern_inh(&mut self, h: &[Inhibitor]) -> u32 {
        if let Some(&id) = self.inh_index.get(h) {
            return id;
        }
        let id = self.inh_sets.len() as u32;
        self.inh_sets.push(h.to_vec());
        self.inh_index.insert(h.to_vec(), id);
        id
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
    pub(super) fn advance(&mut self, br: Branch, b: u8, terms: &mut SetPool, out: &mut Vec<Branch>) {
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
        // A fresh lexeme right after a character-level terminal: only bytes the parser can take
        // next (`follow.rs`).
        if br.q == lex.start && br.prefix != 0 {
            if let (Some(f), Step::Shift { terms: ts, .. }) = (&self.follow, self.prefixes[br.prefix as usize].1) {
                let allowed = *self.after_shift.entry(ts).or_insert_with(|| f.after(terms.get(ts)));
                if allowed[b as usize / 64] >> (b % 64) & 1 == 0 {
                    return;
                }
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
    pub(super) fn advance_outcomes(&mut self, q: u32, inh: u32, b: u8, terms: &mut SetPool) {
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
    pub(super) fn sig_set(&mut self, sc: &mut Scratch, off: usize, len: usize, terms: &mut SetPool) -> u32 {
        if len == 1 {
            let br = sc.arena[off];
            let sig = (br.prefix, self.class(br.q, terms));
            return self.single_sig_id(sig);
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
    pub(super) fn intern_sigs(&mut self, sigs: Vec<Sig>) -> u32 {
        if let Some(&id) = self.sig_index.get(&sigs) {
            return id;
        }
        let id = self.sig_sets.len() as u32;
        self.sig_sets.push(sigs.clone());
        self.sig_index.insert(sigs, id);
        id
    }

    /// The id of the one-lexing signature set `{sig}`.
    pub(super) fn single_sig_id(&mut self, sig: Sig) -> u32 {
        if let Some(&id) = self.single_sig.get(&sig) {
            return id;
        }
        let id = self.intern_sigs(vec![sig]);
        self.single_sig.insert(sig, id);
        id
    }

    /// The branches after byte `b` from `arena[off..off + len]`, appended to the arena sorted and
    /// distinct: their (start, count).
    pub(super) fn step_branches(
        &mut self,
        off: usize,
        len: usize,
        b: u8,
        sc: &mut Scratch,
        terms: &mut SetPool,
    ) -> (usize, usize) {
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
            n = self.merge_forks(start, n, sc, terms);
        }
        (start, n)
    }

    /// Merge branches with the same future whose lexings differ only in their last shift: among
    /// the sorted, distinct branches `arena[start..start + n]`, those with the same lexer state and
    /// inhibitors whose steps are the same up to a last `Shift` with the same guard become one
    /// branch shifting the union of those terminal sets. Returns the new count (sorted and
    /// distinct again).
    ///
    /// Exact: a `Shift` of a set is a GLR fork over its terminals, so `[P, {a}]` and `[P, {b}]`
    /// followed by the same lexer state and inhibitors are the terminal sequences of
    /// `[P, {a, b}]` followed by it. It matters where several lexer components end a lexeme at
    /// the same byte (a JSON Schema's bounded strings each have a component of their own: without
    /// it, `"","","` under eight string terminals is 72 lexings, past [`MAX_LEXINGS`], and its
    /// tokens were left UNDECIDED).
    fn merge_forks(&mut self, start: usize, n: usize, sc: &mut Scratch, terms: &mut SetPool) -> usize {
        let end = start + n;
        let same_future = |a: &Branch, b: &Branch| (a.q, a.inh) == (b.q, b.inh);
        if !(start + 1..end).any(|k| same_future(&sc.arena[k - 1], &sc.arena[k])) {
            return n;
        }
        let mut out: Vec<Branch> = Vec::with_capacity(n);
        let mut shifts: BTreeMap<(u32, u32), Vec<u32>> = BTreeMap::new();
        let mut i = start;
        while i < end {
            let mut j = i + 1;
            while j < end && same_future(&sc.arena[i], &sc.arena[j]) {
                j += 1;
            }
            if j - i == 1 {
                out.push(sc.arena[i]);
                i = j;
                continue;
            }
            shifts.clear();
            for k in i..j {
                let br = sc.arena[k];
                match self.prefixes[br.prefix as usize] {
                    (parent, Step::Shift { terms: ts, guard }) if br.prefix != 0 => {
                        shifts.entry((parent, guard)).or_default().push(ts);
                    }
                    _ => out.push(br),
                }
            }
            let (q, inh) = (sc.arena[i].q, sc.arena[i].inh);
            for (&(parent, guard), sets) in &shifts {
                let ts = match sets.as_slice() {
                    [one] => *one,
                    _ => terms.intern(sets.iter().flat_map(|&s| terms.get(s).iter().copied()).collect()),
                };
                out.push(Branch { q, inh, prefix: self.extend(parent, Step::Shift { terms: ts, guard }) });
            }
            i = j;
        }
        out.sort_unstable();
        out.dedup();
        sc.arena.truncate(start);
        sc.arena.extend_from_slice(&out);
        out.len()
    }
}
