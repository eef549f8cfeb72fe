//! Prewalks: the assembling thread, while it has no classes to determinize, walks ahead of the
//! walker. The large subtrees below the root's children that the walker's coming lexer states
//! enter with one fresh branch are walked (recorded as a closure walk is, with lexer states for
//! closure states) and handed to the walker, which replays them instead of walking them.
//!
//! A grammar whose lexer counts (`minLength`, `maxLength`, `{m,n}`) walks the whole vocabulary
//! once per counter position, one state after the other, while the other core waits for their
//! classes; with prewalks both cores walk.
//!
//! The tables do not depend on who walked what: a subtree is keyed as [`Walker::root_memo`]
//! keys it (the root child and the entry state's block of bounded-horizon equivalence at the
//! child's height), so its recorded walk yields the (token, signature) pairs the walker's own
//! walk would (the argument of `Walker::equivalent_branches` at the root), and the replay
//! interns every id in the walk's order ([`Walker::closure_walk`]'s argument).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Condvar, Mutex};

use super::closure::{closure, closure_walk_of};
use super::{
    step_action, Arc, Closure, ClosureWalk, Event, FastMap, Horizon, LexerTables, LiveHeights, Scratch, SetPool,
    StepRows, Trie, TrieIndex, Walker, ACT_LEAVE, ACT_SKIP, CLOSURE_WALK_FROM,
};

/// Tokens below a root child from which its walk may be a prewalk.
pub(super) const PREWALK_FROM: u32 = 128;

/// Lexer states past the walker's a prewalk may look at.
const WINDOW: u32 = 64;

/// Events and tokens the finished prewalks not yet replayed may hold in all (a memory bound;
/// past it, nothing more is prewalked until the walker takes or passes some).
const HELD: usize = 16 << 20;

/// A subtree walk recorded by [`Prewalker`]: its lexer states (the closure states of its
/// events) and events.
pub(super) struct Recorded {
    pub(super) states: Vec<u32>,
    pub(super) walk: Arc<ClosureWalk>,
}

impl Recorded {
    fn size(&self) -> usize {
        self.walk.size()
    }
}

enum Slot {
    /// Walked (or being walked) by the walker itself.
    Walker,
    /// Being walked by the assembling thread.
    Helper,
    Done(Arc<Recorded>),
}

#[derive(Default)]
struct Shared {
    slots: FastMap<(u32, u64), Slot>,
    /// Sizes of the `Done` slots, summed.
    held: usize,
    /// Where the next prewalk looks: lexer state and index of the root's child.
    cursor: (u32, usize),
    /// The keys of the walks recorded, with the lexer state each was recorded for, in that
    /// order: one the walker has passed without taking it is dropped.
    order: std::collections::VecDeque<(u32, (u32, u64))>,
}

/// The prewalks of one build, shared by the walker and the assembling thread.
#[derive(Default)]
pub struct Prewalks {
    shared: Mutex<Shared>,
    done: Condvar,
    /// The lexer state the walker is at.
    progress: AtomicU32,
    /// Subtrees the walker replayed (statistics).
    replayed: AtomicU32,
}

impl Prewalks {
    /// The walker is at lexer state `q`.
    pub fn at(&self, q: u32) {
        self.progress.store(q, Ordering::Relaxed);
    }

    /// Subtrees the walker took from prewalks.
    pub fn replayed(&self) -> u32 {
        self.replayed.load(Ordering::Relaxed)
    }

    /// The walker's side: the recorded walk of `key`, waiting for it if the assembling thread
    /// is at it; `None` (and the key is the walker's from now on) if no one has walked it.
    pub(super) fn take(&self, key: (u32, u64)) -> Option<Arc<Recorded>> {
        let mut sh = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match sh.slots.get(&key) {
                None | Some(Slot::Walker) => {
                    sh.slots.insert(key, Slot::Walker);
                    return None;
                }
                Some(Slot::Helper) => sh = self.done.wait(sh).unwrap_or_else(|e| e.into_inner()),
                Some(Slot::Done(r)) => {
                    let r = Arc::clone(r);
                    self.replayed.fetch_add(1, Ordering::Relaxed);
                    sh.held -= r.size();
                    sh.slots.insert(key, Slot::Walker);
                    return Some(r);
                }
            }
        }
    }
}

/// Puts a slot taken by the assembling thread back to the walker if its walk does not finish
/// (the walker would otherwise wait for it for ever).
struct Release<'p> {
    prewalks: &'p Prewalks,
    key: Option<(u32, u64)>,
}

impl Drop for Release<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            let mut sh = self.prewalks.shared.lock().unwrap_or_else(|e| e.into_inner());
            sh.slots.insert(key, Slot::Walker);
            self.prewalks.done.notify_all();
        }
    }
}

/// The assembling thread's side: records the walks of subtrees the walker will need.
pub struct Prewalker<'a> {
    lex: &'a LexerTables,
    trie: &'a Trie,
    index: Arc<TrieIndex>,
    horizon: Arc<Horizon>,
    /// As the walker's.
    step_rows: StepRows,
    /// Scratch for [`Prewalker::record`]: per lexer state, its number in the walk being
    /// recorded (all `u32::MAX` between walks).
    cs_of: Vec<u32>,
    /// As the walker's (the same keys).
    live: LiveHeights,
    /// The closure of each entry state looked up so far ([`closure`]), as the walker's memo.
    closures: FastMap<u32, Option<Arc<Closure>>>,
}

impl<'a> Prewalker<'a> {
    /// A prewalker of `trie` through `lex`, with the walker's trie index and bounded-horizon
    /// equivalence of lexer states.
    pub fn new(lex: &'a LexerTables, trie: &'a Trie, index: Arc<TrieIndex>, horizon: Arc<Horizon>) -> Prewalker<'a> {
        Prewalker {
            lex,
            trie,
            index,
            horizon,
            step_rows: StepRows::new(lex),
            cs_of: Vec::new(),
            live: LiveHeights::default(),
            closures: FastMap::default(),
        }
    }

    /// Record one subtree walk the walker will need soon and no one has walked; false if there
    /// is none within 64 lexer states of the walker (or the held walks are at their bound).
    pub fn one(&mut self, prewalks: &Prewalks) -> bool {
        let lex = self.lex;
        let root = self.trie.children(0);
        let key = {
            let mut sh = prewalks.shared.lock().unwrap_or_else(|e| e.into_inner());
            if sh.held >= HELD {
                return false;
            }
            let progress = prewalks.progress.load(Ordering::Relaxed);
            while let Some(&(_, key)) = sh.order.front().filter(|(q, _)| *q < progress) {
                sh.order.pop_front();
                if let Some(Slot::Done(r)) = sh.slots.get(&key) {
                    sh.held -= r.size();
                    sh.slots.remove(&key);
                }
            }
            let end = progress.saturating_add(WINDOW + 1).min(lex.num_states);
            if sh.cursor.0 <= progress {
                sh.cursor = (progress + 1, 0);
            }
            let mut found = None;
            'states: while sh.cursor.0 < end {
                let q = sh.cursor.0;
                if q != lex.start && lex.can_continue(q) {
                    while sh.cursor.1 < root.len() {
                        let (b, child) = root[sh.cursor.1];
                        sh.cursor.1 += 1;
                        if self.index.subtree_len[child as usize] < PREWALK_FROM {
                            continue;
                        }
                        let Some(e) = fresh_entry(lex, q, b) else { continue };
                        let parts = (lex, self.trie, &*self.index, &*self.horizon);
                        let key = (child, live_entry_key(parts, &mut self.live, e, child));
                        if let std::collections::hash_map::Entry::Vacant(v) = sh.slots.entry(key) {
                            v.insert(Slot::Helper);
                            found = Some((key, e, q));
                            break 'states;
                        }
                    }
                }
                sh.cursor = (q + 1, 0);
            }
            found
        };
        let Some((key, e, q)) = key else { return false };
        let mut release = Release { prewalks, key: Some(key) };
        // A large subtree through `e`'s closure, as the walker would take it
        // ([`Walker::closure_walk`]): the walk of another grammar's (or an earlier compile's)
        // state with the same closure table, recorded once per process; else recorded here.
        let large = self.index.subtree_len[key.0 as usize] >= CLOSURE_WALK_FROM;
        let through = large
            .then(|| self.closures.entry(e).or_insert_with(|| closure(lex, &self.index.closures, e)).clone())
            .flatten();
        let rec = match through {
            Some(cl) => {
                let (walk, _) = closure_walk_of(self.trie, &self.index.closures, &cl, key.0);
                Arc::new(Recorded { states: cl.states.clone(), walk })
            }
            None => Arc::new(self.record_walk(key.0, e)),
        };
        release.key = None;
        let mut sh = prewalks.shared.lock().unwrap_or_else(|e| e.into_inner());
        sh.held += rec.size();
        sh.slots.insert(key, Slot::Done(rec));
        sh.order.push_back((q, key));
        prewalks.done.notify_all();
        true
    }

    /// The walk below `child` entered at lexer state `e` (one fresh branch), recorded with
    /// its lexer states numbered at their first use ([`Prewalker::record`]).
    fn record_walk(&mut self, child: u32, e: u32) -> Recorded {
        let mut states = Vec::new();
        let mut cs_of = std::mem::take(&mut self.cs_of);
        cs_of.resize(self.lex.num_states as usize, u32::MAX);
        let mut events = Vec::new();
        let mut by_cs: Vec<Vec<u32>> = Vec::new();
        self.record(child, e, &mut states, &mut cs_of, &mut events, &mut by_cs);
        for &q in &states {
            cs_of[q as usize] = u32::MAX;
        }
        self.cs_of = cs_of;
        Recorded { states, walk: Arc::new(ClosureWalk::new(events, by_cs)) }
    }

    /// [`Walker::walk_single`] below `node` at lexer state `q` (one fresh branch), recorded as
    /// [`Walker::record`] records a closure walk, each lexer state numbered at its first use.
    fn record(
        &mut self,
        node: u32,
        q: u32,
        states: &mut Vec<u32>,
        cs_of: &mut [u32],
        out: &mut Vec<Event>,
        by_cs: &mut Vec<Vec<u32>>,
    ) {
        let cs = |cs_of: &mut [u32], states: &mut Vec<u32>, by_cs: &mut Vec<Vec<u32>>| {
            if cs_of[q as usize] == u32::MAX {
                cs_of[q as usize] = states.len() as u32;
                states.push(q);
                by_cs.push(Vec::new());
            }
            cs_of[q as usize]
        };
        let at = self.trie.tokens_at(node);
        if !at.is_empty() {
            let c = cs(cs_of, states, by_cs);
            if by_cs[c as usize].is_empty() {
                out.push(Event::First { cs: c });
            }
            by_cs[c as usize].extend_from_slice(at);
        }
        let row = self.step_rows.row(self.lex, q);
        for &(b, child) in self.trie.children(node) {
            match self.step_rows.at(row, b) {
                ACT_SKIP => {}
                ACT_LEAVE => {
                    let c = cs(cs_of, states, by_cs);
                    out.push(Event::Leave { node, b, child, cs: c });
                }
                q2 => self.record(child, q2, states, cs_of, out, by_cs),
            }
        }
    }
}

/// The state a token's first byte `b` enters from `q` (not the start) when it enters one fresh
/// branch there and [`Walker::walk_single`] walks on below (`Walker::entries`' fast path).
fn fresh_entry(lex: &LexerTables, q: u32, b: u8) -> Option<u32> {
    match step_action(lex, lex.step(q, b)) {
        ACT_SKIP | ACT_LEAVE => None,
        q2 => Some(q2),
    }
}

/// [`Walker::entry_key`] of a live entry state `e`: its block of `≡_d` when no inhibitor is
/// created within `d` bytes, where `d` is the bytes the walk below `child` reads (the child's
/// height, or less: [`LiveHeights`]); the tag above the block id tells the levels apart.
pub(super) fn live_entry_key(
    (lex, trie, index, horizon): (&LexerTables, &Trie, &TrieIndex, &Horizon),
    live: &mut LiveHeights,
    e: u32,
    child: u32,
) -> u64 {
    let h = index.height[child as usize];
    let d = live.get((lex, trie, index, horizon), e, child);
    match horizon.block_at(e, d).filter(|_| horizon.inhibitor_free(e, d)) {
        Some(block) if d == h => 1 << 32 | block as u64,
        Some(block) => (3 + d as u64) << 32 | block as u64,
        None => 2 << 32 | e as u64,
    }
}

impl<'a> Walker<'a> {
    /// Replay a recorded walk (as [`Walker::closure_walk`] replays a closure walk).
    pub(super) fn replay(&mut self, rec: &Recorded, sc: &mut Scratch, terms: &mut SetPool) {
        self.replay_events(&rec.states, &rec.walk, sc, terms);
    }
}
