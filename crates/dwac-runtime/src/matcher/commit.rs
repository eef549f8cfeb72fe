//! `commit`: the incremental lexer stepped byte by byte over every thread, each lexeme emitted
//! (reduced and shifted) on the GSS, with priorities per path, viability pruning, and `rollback`.

use super::{
    prio, push_unique, Arc, CommitError, CommitTokensError, Config, History, Inhibitor, Matcher, Node, NodeRef,
    Scratch, Shifted, Thread,
};

pub(super) fn add_thread(out: &mut Vec<Thread>, q: u32, inh: &[Inhibitor], heads: &[NodeRef]) {
    if let Some(t) = out.iter_mut().find(|t| t.q == q && t.inh == inh) {
        for h in heads {
            push_unique(&mut t.heads, h);
        }
    } else {
        out.push(Thread { q, inh: inh.to_vec(), heads: heads.to_vec() });
    }
}

pub(super) fn add_shifted(shifted: &mut Vec<Shifted>, p: u32, h2: &[Inhibitor], below: NodeRef) {
    match shifted.iter_mut().find(|s| s.0 == p && s.1 == h2) {
        Some(s) => {
            push_unique(&mut s.2, &below);
        }
        None => shifted.push((p, h2.to_vec(), vec![below])),
    }
}

impl Matcher {
    pub(super) fn accepts_eof(&self, threads: &[Thread], sc: &mut Scratch) -> bool {
        let t = &self.engine.tables;
        let eof = t.lr.eof();
        threads.iter().any(|th| {
            th.q == t.lexer.start && {
                sc.closure.run(&t.lr, &th.heads, eof);
                sc.closure.can_shift(&t.lr, eof)
            }
        })
    }

    /// One byte through every thread (no lookahead pruning). `pos` is the byte count after `b`.
    pub(super) fn step_byte(&self, threads: &[Thread], b: u8, pos: u32, sc: &mut Scratch) -> Vec<Thread> {
        let t = &self.engine.tables;
        let lex = &t.lexer;
        let mut out: Vec<Thread> = Vec::new();
        // Shifted nodes at this byte, merged by (LR state, inhibitors): (state, inhibitors, preds).
        // Nodes are only merged under equal inhibitors, so a stack never escapes the inhibitors
        // of the lexing that built it.
        let mut shifted: Vec<Shifted> = Vec::new();
        for th in threads {
            if lex.step_inhibitors(&th.inh, b, &mut sc.h1).is_none() {
                continue;
            }
            for q2 in lex.successors(th.q, b) {
                if lex.can_continue(q2) {
                    add_thread(&mut out, q2, &sc.h1, &th.heads);
                }
                let acc = lex.accepts(q2);
                if !self.engine.mixed_priorities || lex.uniform_priority(acc) {
                    for &term in acc {
                        self.emit(term, q2, &th.heads, pos, sc, &mut out, &mut shifted);
                    }
                } else {
                    self.emit_prioritized(acc, q2, &th.heads, pos, sc, &mut out, &mut shifted);
                }
            }
        }
        for (p, h2, preds) in shifted {
            let n = Node::new(p, 2 * pos, preds);
            add_thread(&mut out, lex.start, &h2, std::slice::from_ref(&n));
        }
        out
    }

    /// The inhibitors after emitting `term` at lexer state `q2`: the carried ones (`sc.h1`) plus
    /// the one `term` creates.
    pub(super) fn inhibitors_after(&self, term: u32, q2: u32, h1: &[Inhibitor]) -> Vec<Inhibitor> {
        let mut h2 = h1.to_vec();
        if let Some(i) = self.engine.tables.lexer.inhibitor_for(term, q2) {
            h2.push(i);
            h2.sort_unstable();
            h2.dedup();
        }
        h2
    }

    /// Emit `term` (a lexeme ending at lexer state `q2`) on every stack of `heads`: an ignored
    /// terminal leaves the stacks as they are; any other is reduced to and shifted.
    #[allow(
        clippy::too_many_arguments,
        reason = "the hot commit path: the lexeme, its end state and the caller's scratch buffers, passed apart so that none is borrowed through `self`"
    )]
    #[inline]
    pub(super) fn emit(
        &self,
        term: u32,
        q2: u32,
        heads: &[NodeRef],
        pos: u32,
        sc: &mut Scratch,
        out: &mut Vec<Thread>,
        shifted: &mut Vec<Shifted>,
    ) {
        let t = &self.engine.tables;
        if t.lexer.is_ignored(term) {
            let h2 = self.inhibitors_after(term, q2, &sc.h1);
            add_thread(out, t.lexer.start, &h2, heads);
            return;
        }
        sc.closure.run(&t.lr, heads, term);
        sc.shifts.clear();
        sc.closure.shifts(&t.lr, term, (2 * pos).saturating_sub(1), &mut sc.shifts);
        if sc.shifts.is_empty() {
            return;
        }
        let h2 = self.inhibitors_after(term, q2, &sc.h1);
        for (p, n) in sc.shifts.drain(..) {
            add_shifted(shifted, p, &h2, n);
        }
    }

    /// Emit a lexeme whose terminals have different priorities (ARCHITECTURE.md, "The contract"; `prio.rs`): per
    /// stack, only the highest-priority group that can be used there.
    #[allow(clippy::too_many_arguments, reason = "as `emit`, plus the priority groups of the lexeme")]
    pub(super) fn emit_prioritized(
        &self,
        acc: &[u32],
        q2: u32,
        heads: &[NodeRef],
        pos: u32,
        sc: &mut Scratch,
        out: &mut Vec<Thread>,
        shifted: &mut Vec<Shifted>,
    ) {
        let t = &self.engine.tables;
        let (lex, lr) = (&t.lexer, &t.lr);
        let mut sorted = acc.to_vec();
        sorted.sort_by_key(|&x| std::cmp::Reverse(lex.priority_of(x)));
        let mut groups: Vec<Vec<u32>> = Vec::new();
        for x in sorted {
            match groups.last_mut() {
                Some(g) if lex.priority_of(g[0]) == lex.priority_of(x) => g.push(x),
                _ => groups.push(vec![x]),
            }
        }
        // Heads decided by their top state, bucketed by the group they use.
        let mut buckets: Vec<Vec<NodeRef>> = vec![Vec::new(); groups.len()];
        let mut outcomes = Vec::new();
        for h in heads {
            match prio::decide(lr, lex, h.state, &groups) {
                prio::Decision::Nothing => {}
                prio::Decision::Group(i) => buckets[i].push(h.clone()),
                prio::Decision::PerPath => {
                    sc.resolver.resolve(lr, lex, h, &groups, (2 * pos).saturating_sub(1), &mut outcomes)
                }
            }
        }
        for (g, bucket) in groups.iter().zip(&buckets) {
            if !bucket.is_empty() {
                for &term in g {
                    self.emit(term, q2, bucket, pos, sc, out, shifted);
                }
            }
        }
        for o in outcomes {
            match o {
                prio::Outcome::Shift { term, target, below } => {
                    let h2 = self.inhibitors_after(term, q2, &sc.h1);
                    add_shifted(shifted, target, &h2, below);
                }
                prio::Outcome::Ignored { term, head } => {
                    let h2 = self.inhibitors_after(term, q2, &sc.h1);
                    add_thread(out, lex.start, &h2, std::slice::from_ref(&head));
                }
            }
        }
    }

    /// Keep only branches satisfying the one-lexeme lookahead `LA` (ARCHITECTURE.md, "The contract").
    pub(super) fn prune(&self, threads: Vec<Thread>, sc: &mut Scratch) -> Vec<Thread> {
        let t = &self.engine.tables;
        let (lex, lr) = (&t.lexer, &t.lr);
        let mut out = Vec::with_capacity(threads.len());
        for mut th in threads {
            if th.q == lex.start || lex.may_become_ignored(th.q) {
                out.push(th);
                continue;
            }
            th.heads.retain(|h| {
                lex.pending_terminals(th.q).any(|term| {
                    sc.closure.run(lr, std::slice::from_ref(h), term);
                    sc.closure.can_shift(lr, term)
                })
            });
            if !th.heads.is_empty() {
                out.push(th);
            }
        }
        out
    }

    /// Run `bytes` from `threads`; `Err(i)` if no live branch remains, `i` = index of the byte
    /// after which that became certain.
    pub(super) fn advance(
        &self,
        threads: &[Thread],
        pos: u32,
        bytes: &[u8],
        sc: &mut Scratch,
    ) -> Result<Vec<Thread>, usize> {
        let mut cur: Vec<Thread> = threads.to_vec();
        for (i, &b) in bytes.iter().enumerate() {
            cur = self.step_byte(&cur, b, pos.saturating_add(i as u32 + 1), sc);
            if cur.is_empty() {
                return Err(self.first_dead_byte(threads, pos, &bytes[..=i], sc));
            }
        }
        let out = self.prune(cur, sc);
        if out.is_empty() && !bytes.is_empty() {
            return Err(self.first_dead_byte(threads, pos, bytes, sc));
        }
        Ok(out)
    }

    /// Error path only: prune after every byte to find the first byte after which nothing is live.
    pub(super) fn first_dead_byte(&self, threads: &[Thread], pos: u32, bytes: &[u8], sc: &mut Scratch) -> usize {
        let mut cur: Vec<Thread> = threads.to_vec();
        for (i, &b) in bytes.iter().enumerate() {
            let next = self.step_byte(&cur, b, pos.saturating_add(i as u32 + 1), sc);
            cur = self.prune(next, sc);
            if cur.is_empty() {
                return i;
            }
        }
        bytes.len().saturating_sub(1)
    }

    pub(super) fn push(&mut self, next: Config) {
        let prev = std::mem::replace(&mut self.cur, next);
        if self.max_rollback > 0 {
            self.history.push(prev, self.max_rollback);
        }
    }

    /// Commit raw bytes (e.g. a prompt prefix), with no token alignment.
    pub fn commit_bytes(&mut self, bytes: &[u8]) -> Result<(), CommitError> {
        self.commit_inner(bytes, None)
    }

    pub(super) fn commit_inner(&mut self, bytes: &[u8], token: Option<u32>) -> Result<(), CommitError> {
        if self.cur.terminated {
            return Err(CommitError::Terminated);
        }
        let mut sc = Scratch::default();
        match self.advance(&self.cur.threads, self.cur.pos, bytes, &mut sc) {
            Ok(threads) => {
                let pos = self.cur.pos.saturating_add(bytes.len() as u32);
                self.push(Config { threads: Arc::new(threads), pos, terminated: false });
                Ok(())
            }
            Err(i) => Err(CommitError::Rejected {
                token,
                offset: self.cur.pos.saturating_add(i as u32),
                byte: bytes.get(i).copied(),
            }),
        }
    }

    /// Commit one sampled token.
    pub fn commit(&mut self, token: u32) -> Result<(), CommitError> {
        // An `Arc` clone (not a copy of the token's bytes) frees `self` for the commit below.
        let engine = Arc::clone(&self.engine);
        let vocab = &engine.vocab;
        let Some(bytes) = vocab.token_bytes(token) else {
            return Err(CommitError::TokenOutOfRange { token, vocab_size: vocab.len() as u32 });
        };
        if self.cur.terminated {
            return Err(CommitError::Terminated);
        }
        if vocab.is_eos(token) {
            if !self.is_accepting() {
                return Err(CommitError::Rejected { token: Some(token), offset: self.cur.pos, byte: None });
            }
            let mut next = self.cur.clone();
            next.terminated = true;
            self.push(next);
            return Ok(());
        }
        if vocab.is_special(token) || bytes.is_empty() {
            return Err(CommitError::SpecialToken { token });
        }
        self.commit_inner(bytes, Some(token))
    }

    /// Commit a run of tokens (e.g. the accepted prefix of a speculative draft): each in turn,
    /// stopping at the first refused one, which is not committed (the matcher is then as after
    /// the tokens before it). `Ok(())` when all were committed; each commit can be undone by
    /// [`rollback`](Self::rollback) on its own.
    pub fn commit_tokens(&mut self, tokens: &[u32]) -> Result<(), CommitTokensError> {
        for (i, &t) in tokens.iter().enumerate() {
            self.commit(t).map_err(|error| CommitTokensError { accepted: i, error })?;
        }
        Ok(())
    }

    /// The length of the longest prefix of `tokens` that could be committed in turn, without
    /// changing the matcher (speculative decoding checks every draft with this). Tokens after
    /// an end token are never accepted.
    pub fn validate_tokens(&self, tokens: &[u32]) -> usize {
        let mut m = Matcher { max_rollback: 0, history: History::default(), ..self.clone() };
        for (i, &t) in tokens.iter().enumerate() {
            if m.commit(t).is_err() {
                return i;
            }
        }
        tokens.len()
    }

    /// Undo the last `n` commits (tokens or byte strings).
    pub fn rollback(&mut self, n: usize) -> Result<(), CommitError> {
        let available = self.history_len();
        if n > available {
            return Err(CommitError::RollbackTooFar { requested: n, available });
        }
        if n > 0 {
            if let Some(c) = self.history.pop_n(n) {
                self.cur = c;
            }
        }
        Ok(())
    }
}
