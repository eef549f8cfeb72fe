//! Closure walks: subtrees of the vocabulary trie that stay inside a lexer state's closure
//! (no lexeme ends, the lexer never returns to its start) are walked once per closure table and
//! replayed for every lexer state, of any grammar, that has the same table.

use super::{step_action, Branch, FastMap, LexerTables, Scratch, SetPool, Trie, Walker, ACT_LEAVE, ACT_SKIP};
use std::sync::{Arc, Mutex};

/// One event of a subtree walk inside a closure ([`Walker::closure_walk`]), in the walk's
/// order: the first tokens ending in closure state `cs` (where the walk interns its
/// signature); or byte `b` leaves the closure from `cs` at `node` (into `child`), where the
/// walk goes on the general way.
#[derive(Clone, Copy)]
pub(super) enum Event {
    First { cs: u32 },
    Leave { node: u32, b: u8, child: u32, cs: u32 },
}

/// A recorded subtree walk inside a closure: its events, and per closure state with tokens
/// ending there, those tokens (in walk order) and the smallest of them.
pub(super) struct ClosureWalk {
    pub(super) events: Vec<Event>,
    pub(super) tokens: Vec<(u32, u32, Arc<[u32]>)>,
}

impl ClosureWalk {
    /// A walk of `events` whose tokens ending in closure state `s` are `by_cs[s]`.
    pub(super) fn new(events: Vec<Event>, by_cs: Vec<Vec<u32>>) -> ClosureWalk {
        let tokens = by_cs
            .into_iter()
            .enumerate()
            .filter(|(_, t)| !t.is_empty())
            .map(|(cs, t)| (cs as u32, t.iter().copied().min().unwrap_or(0), Arc::<[u32]>::from(t)))
            .collect();
        ClosureWalk { events, tokens }
    }

    /// Events and tokens it holds (what the caches bound).
    pub(super) fn size(&self) -> usize {
        self.events.len() + self.tokens.iter().map(|t| t.2.len()).sum::<usize>()
    }
}

/// Closure walks by (closure id, root child), closures by their canonical table.
#[derive(Default)]
pub(super) struct ClosureCache {
    pub(super) ids: FastMap<Arc<[u32]>, u32>,
    pub(super) tables: Vec<Arc<[u32]>>,
    /// Words the tables hold in all (bounded by [`CLOSURE_TABLE_WORDS`]).
    pub(super) table_words: usize,
    pub(super) walks: FastMap<(u32, u32), Arc<ClosureWalk>>,
    /// Events and tokens held in all (bounded by [`CLOSURE_EVENTS`]).
    pub(super) events: usize,
}

/// Tokens below a root child from which its walk goes through the closure cache
/// ([`Walker::closure_walk`]); smaller subtrees are walked directly.
pub(super) const CLOSURE_WALK_FROM: u32 = 256;

/// Closure states a closure walk may have (a bound on the canonical table's size).
pub(super) const MAX_CLOSURE: usize = 64;

/// Events and tokens the closure cache may hold in all (a memory bound; past it, walks are not kept).
pub(super) const CLOSURE_EVENTS: usize = 8 << 20;

/// Table words the closure cache may hold in all (a memory bound; past it, new closures are
/// walked as before).
pub(super) const CLOSURE_TABLE_WORDS: usize = 8 << 20;

/// [`Walker::closure_of`]'s table: no lexing (dead, or a state that can neither continue nor
/// accept).
pub(super) const CL_DEAD: u32 = u32::MAX;

/// [`Walker::closure_of`]'s table: the byte leaves the closure (a lexeme is accepted, or the
/// lexer is back at its start).
pub(super) const CL_LEAVE: u32 = u32::MAX - 1;

/// A lexer state's closure for [`Walker::closure_walk`]: its id in the shared cache, its
/// states (closure state → lexer state; 0 is the entry state) and canonical table.
pub(super) struct Closure {
    pub(super) id: u32,
    pub(super) states: Vec<u32>,
    pub(super) table: Arc<[u32]>,
}

impl<'a> Walker<'a> {
    /// The closure of lexer state `e` (not the start), memoized per walker ([`closure`]).
    pub(super) fn closure_of(&mut self, e: u32) -> Option<Arc<Closure>> {
        if let Some(c) = self.closure_memo.get(&e) {
            return c.clone();
        }
        let c = closure(self.lex, &self.index.closures, e);
        self.closure_memo.insert(e, c.clone());
        c
    }

    /// [`Self::walk_single`] below the root's `child` entered at lexer state `e` with one fresh
    /// branch, from the cached events of an earlier walk of `child` in a closure with the same
    /// table (this grammar's or another's), recorded on a miss: tokens that stay in the
    /// closure take the signature of the lexer state they end in, and where a byte leaves it
    /// the walk goes on the general way, in the same order as the walk itself (so every id
    /// is interned as it would be). False if `e` has no closure.
    pub(super) fn closure_walk(&mut self, child: u32, e: u32, sc: &mut Scratch, terms: &mut SetPool) -> bool {
        let Some(cl) = self.closure_of(e) else { return false };
        let (walk, hit) = closure_walk_of(self.trie, &self.index.closures, &cl, child);
        self.closure_hits += hit as usize;
        self.replay_events(&cl.states, &walk, sc, terms);
        true
    }

    /// Replay `walk`'s events, closure state `s` standing for lexer state `states[s]`: tokens
    /// ending in a closure state take the signature of its lexer state, handed over as whole
    /// lists; where a byte leaves the closure the walk goes on the general way, in the walk's
    /// order (so every id is interned as the walk itself would).
    pub(super) fn replay_events(&mut self, states: &[u32], walk: &ClosureWalk, sc: &mut Scratch, terms: &mut SetPool) {
        let mut sig = vec![u32::MAX; states.len()];
        for &event in &walk.events {
            match event {
                Event::First { cs } => {
                    let class = self.class(states[cs as usize], terms);
                    sig[cs as usize] = self.single_sig_id((0, class));
                }
                Event::Leave { node, b, child, cs } => {
                    let br = Branch { q: states[cs as usize], inh: 0, prefix: 0 };
                    self.leave(node, b, child, br, sc, terms);
                }
            }
        }
        for (cs, min, tokens) in &walk.tokens {
            sc.bulk.push((sig[*cs as usize], *min, Arc::clone(tokens)));
        }
    }
}

/// The closure of lexer state `e` (not the start): the states reachable from it by bytes that
/// only move the lexer on (no lexeme accepted, not back at the start), numbered in
/// breadth-first order from `e` over bytes in order, and per (closure state, byte) the closure
/// state reached, [`CL_DEAD`] or [`CL_LEAVE`]. The table is what [`Walker::walk_single`] reads
/// while it stays in the closure, so two states with equal tables (in any grammar) walk a
/// subtree alike up to where they leave it. `None` past [`MAX_CLOSURE`] states, or when the
/// vocabulary's cache of tables (`TrieIndex::closures`) is full.
pub(super) fn closure(lex: &LexerTables, caches: &Mutex<ClosureCache>, e: u32) -> Option<Arc<Closure>> {
    let mut states = vec![e];
    let mut canon: FastMap<u32, u32> = FastMap::from_iter([(e, 0)]);
    let mut table = Vec::new();
    let mut i = 0;
    // (Each byte class's code once per state: the bytes of a class step alike. Bytes are still
    // visited in order, so new closure states are numbered as over the bytes.)
    const UNSET: u32 = u32::MAX - 2;
    let mut by_class = vec![UNSET; lex.num_classes as usize];
    while i < states.len() {
        let q = states[i];
        by_class.fill(UNSET);
        for b in 0..=255u8 {
            let c = lex.byte_class[b as usize] as usize;
            if by_class[c] == UNSET {
                by_class[c] = match step_action(lex, lex.step(q, b)) {
                    ACT_SKIP => CL_DEAD,
                    ACT_LEAVE => CL_LEAVE,
                    q2 => {
                        let next = states.len() as u32;
                        *canon.entry(q2).or_insert_with(|| {
                            states.push(q2);
                            next
                        })
                    }
                };
            }
            table.push(by_class[c]);
        }
        if states.len() > MAX_CLOSURE {
            return None;
        }
        i += 1;
    }
    // One copy of each table per process, shared by the states that have it.
    let mut cache = caches.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(&id) = cache.ids.get(table.as_slice()) {
        let table = Arc::clone(&cache.tables[id as usize]);
        return Some(Arc::new(Closure { id, states, table }));
    }
    if cache.table_words + table.len() > CLOSURE_TABLE_WORDS {
        return None;
    }
    let id = cache.tables.len() as u32;
    let table: Arc<[u32]> = table.into();
    cache.table_words += table.len();
    cache.tables.push(Arc::clone(&table));
    cache.ids.insert(Arc::clone(&table), id);
    Some(Arc::new(Closure { id, states, table }))
}

/// The walk below the root's `child` inside closure `cl`: the cached one of any grammar whose
/// state had the same table (`true`), else recorded now and kept while the cache has room.
pub(super) fn closure_walk_of(
    trie: &Trie,
    caches: &Mutex<ClosureCache>,
    cl: &Closure,
    child: u32,
) -> (Arc<ClosureWalk>, bool) {
    let cached = {
        let cache = caches.lock().unwrap_or_else(|p| p.into_inner());
        cache.walks.get(&(cl.id, child)).cloned()
    };
    if let Some(w) = cached {
        return (w, true);
    }
    let mut events = Vec::new();
    let mut by_cs: Vec<Vec<u32>> = vec![Vec::new(); cl.states.len()];
    record(trie, child, 0, &cl.table, &mut events, &mut by_cs);
    let walk = Arc::new(ClosureWalk::new(events, by_cs));
    let size = walk.size();
    let mut cache = caches.lock().unwrap_or_else(|p| p.into_inner());
    if cache.events + size <= CLOSURE_EVENTS {
        cache.events += size;
        cache.walks.insert((cl.id, child), Arc::clone(&walk));
    }
    (walk, false)
}

/// The events of a walk below `node` at closure state `cs`, and its tokens by the closure
/// state they end in (see [`Walker::closure_walk`]).
fn record(trie: &Trie, node: u32, cs: u32, table: &[u32], out: &mut Vec<Event>, by_cs: &mut [Vec<u32>]) {
    let at = trie.tokens_at(node);
    if !at.is_empty() {
        if by_cs[cs as usize].is_empty() {
            out.push(Event::First { cs });
        }
        by_cs[cs as usize].extend_from_slice(at);
    }
    for &(b, child) in trie.children(node) {
        match table[cs as usize * 256 + b as usize] {
            CL_DEAD => {}
            CL_LEAVE => out.push(Event::Leave { node, b, child, cs }),
            next => record(trie, child, next, table, out, by_cs),
        }
    }
}
