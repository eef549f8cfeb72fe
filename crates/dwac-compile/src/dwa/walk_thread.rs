//! The walking side of the build: the vocabulary trie (one per vocabulary per process), the
//! walking thread that sends each lexer state's token classes to the assembling thread, and the
//! `KILL` sets, computed by whichever thread is free.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use dwac_runtime::unstable::Inhibitor;
use dwac_runtime::unstable::Trie;
use dwac_runtime::{unstable::LexerTables, Vocabulary};

use super::compose::Step;
use super::horizon::Horizon;
use super::set_pool::SetPool;
use super::terminal_dwa::{
    carried_inhibitors, kill_set_shared, FollowBytes, LimitHits, Prewalks, TokenClass, Tokens, TrieIndex, Walker,
};
use super::FastMap;

/// The byte trie of `vocab`'s non-special tokens. The vocabulary side of the build: the last
/// vocabulary's trie is kept for the process, so compiling many grammars against one vocabulary
/// (a batch, a benchmark, a server compiling schemas on demand) builds it once. The cache is
/// keyed by the vocabulary itself (compared in full, not by a hash), so it can never be stale.
pub(super) fn shared_trie(vocab: &Vocabulary) -> (Arc<Trie>, Arc<TrieIndex>) {
    type Shared = (Vocabulary, Arc<Trie>, Arc<TrieIndex>);
    static LAST: Mutex<Option<Shared>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((v, t, i)) = last.as_ref() {
        if v == vocab {
            return (Arc::clone(t), Arc::clone(i));
        }
    }
    let toks: Vec<(u32, &[u8])> = (0..vocab.len() as u32)
        .filter(|&v| !vocab.is_special(v))
        .filter_map(|v| vocab.token_bytes(v).map(|b| (v, b)))
        .collect();
    let trie = Arc::new(Trie::build(&toks));
    let index = Arc::new(TrieIndex::new(&trie));
    *last = Some((vocab.clone(), Arc::clone(&trie), Arc::clone(&index)));
    (trie, index)
}

/// The walking thread sends its states once it has walked for this long since its last
/// batch (or [`BATCH_STATES`] states): the assembling thread, which waits for them, lags by at
/// most this.
const BATCH_FOR: Duration = Duration::from_micros(100);

/// States a batch holds at most.
const BATCH_STATES: usize = 64;

/// What the walking thread hands the assembling thread for one lexer state, in state order.
pub(super) enum Walked {
    /// A state with the automaton of the earlier state of the same key (its block of
    /// bounded-horizon equivalence, [`Walker::block`], and its thread class).
    Shared { q: u32, key: (u64, u32) },
    /// A state's classes and UNDECIDED tokens, with what the walker added to its trie of step
    /// sequences and to the terminal sets since its previous message, and the walk's time.
    State {
        q: u32,
        thread: u32,
        share_key: Option<(u64, u32)>,
        classes: Vec<TokenClass>,
        undecided: Vec<u32>,
        nodes: Vec<(u32, Step)>,
        sets: Vec<Box<[u32]>>,
        walk: Duration,
    },
}

/// The `KILL` sets of the carried inhibitors (docs/CONSTRUCTION.md "The Parser DWA", step 1), each computed by whichever
/// thread is free first: the assembling thread while it waits for classes, the walker once it
/// has walked every state. Kept in inhibitor order, so the tables do not depend on who did which.
/// Each is taken from the vocabulary's cache when another grammar had an inhibitor that moves
/// alike ([`kill_set_shared`]).
pub(super) struct Kills<'a> {
    lex: &'a LexerTables,
    trie: &'a Trie,
    index: &'a TrieIndex,
    carried: Vec<Inhibitor>,
    next: AtomicUsize,
    done: Mutex<Vec<Option<Arc<[u32]>>>>,
    /// Time spent on them, in both threads (ns).
    busy: AtomicU64,
}

impl<'a> Kills<'a> {
    pub(super) fn new(lex: &'a LexerTables, trie: &'a Trie, index: &'a TrieIndex) -> Kills<'a> {
        let carried = carried_inhibitors(lex);
        let done = Mutex::new(vec![None; carried.len()]);
        Kills { lex, trie, index, carried, next: AtomicUsize::new(0), done, busy: AtomicU64::new(0) }
    }

    /// Compute the next kill set not yet taken; false if none is left.
    pub(super) fn one(&self) -> bool {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        let Some(&inh) = self.carried.get(i) else { return false };
        let t = Instant::now();
        let set = kill_set_shared(self.lex, self.trie, self.index, inh);
        self.done.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(set);
        self.busy.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        true
    }

    pub(super) fn all(&self) {
        while self.one() {}
    }

    /// Every kill set, in inhibitor order (after [`Kills::all`] in every thread that helped).
    pub(super) fn into_sets(self) -> (Vec<Inhibitor>, Vec<Arc<[u32]>>, Duration) {
        let done = self.done.into_inner().unwrap_or_else(|e| e.into_inner());
        // (Every one is done by then; one that is not is computed here rather than left empty.)
        let sets = done
            .into_iter()
            .zip(&self.carried)
            .map(|(s, &inh)| s.unwrap_or_else(|| kill_set_shared(self.lex, self.trie, self.index, inh)))
            .collect();
        (self.carried, sets, Duration::from_nanos(self.busy.into_inner()))
    }
}

/// What the walking thread reads besides the lexer: the vocabulary's trie and its index, the
/// bounded-horizon equivalence (and the one up to the lexeme's terminal, when states are
/// renamed), the follow-byte filter.
pub(super) type Parts<'t> = (&'t Trie, Arc<TrieIndex>, (Arc<Horizon>, Option<Arc<Horizon>>), Option<Arc<FollowBytes>>);

/// The walking half of [`build_mask_tables`]: the Terminal DWA of every lexer state reachable at
/// a token boundary, in state order, sent to `tx` as it goes. `terms` holds the sets the
/// assembling thread's pool has (it mirrors this one). Returns the time spent walking, the
/// tokens the walk's limits left UNDECIDED and the states given renamed classes
/// ([`Walker::renaming_key`]).
pub(super) fn walk_states(
    lex: &LexerTables,
    (trie, index, (horizon, renaming), follow): Parts<'_>,
    mut terms: SetPool,
    (eof_class, eos): (u32, Vec<u32>),
    tx: mpsc::Sender<Vec<Walked>>,
    kills: &Kills,
    prewalks: &Prewalks,
) -> (Duration, LimitHits, usize) {
    let t0 = Instant::now();
    let mut walker = Walker::with_horizon(lex, trie, index, horizon).with_prewalks(prewalks).with_follow_bytes(follow);
    if let Some(r) = renaming {
        walker = walker.with_renaming(r);
    }
    // Classes of the first state walked in each block of equivalence up to the lexeme's
    // terminal, with that terminal ([`Walker::renaming_key`]); states renamed from them.
    let mut by_renaming: FastMap<u64, (u32, Vec<TokenClass>, Vec<u32>)> = FastMap::default();
    let mut renamed = 0;
    let mut seen: FastMap<(u64, u32), ()> = FastMap::default();
    let (mut nodes_sent, mut sets_sent) = (0, terms.len());
    // States go to the assembling thread in batches: a message per state would wake it (a
    // system call) hundreds of times in a small grammar's walk.
    let (mut batch, mut batch_start) = (Vec::new(), Instant::now());
    for q in 0..lex.num_states {
        if q != lex.start && !lex.can_continue(q) {
            continue;
        }
        let tq = Instant::now();
        prewalks.at(q);
        // States of one block of bounded-horizon equivalence with the same thread class have
        // the same classes, UNDECIDED tokens and automaton (`Walker::block`): they share the
        // first one's copy of it.
        let thread = walker.class(q, &mut terms);
        let share_key = walker.block(q).filter(|_| q != lex.start).map(|b| (b, thread));
        let msg = match share_key {
            Some(key) if seen.insert(key, ()).is_some() => Walked::Shared { q, key },
            _ => {
                let rkey = walker.renaming_key(q);
                let from = rkey.and_then(|(b, t)| by_renaming.get(&b).filter(|e| e.0 != t).map(|e| (e, t)));
                let reused = from.and_then(|((s, classes, undecided), t)| {
                    Some((walker.renamed(classes, *s, t, &mut terms)?, undecided.clone()))
                });
                renamed += reused.is_some() as usize;
                let (mut classes, undecided) = reused.unwrap_or_else(|| {
                    let (classes, undecided) = walker.classes(q, &mut terms);
                    if let Some((b, t)) = rkey {
                        by_renaming.entry(b).or_insert_with(|| (t, classes.clone(), undecided.clone()));
                    }
                    (classes, undecided)
                });
                if q == lex.start && !eos.is_empty() {
                    classes.push(TokenClass { sigs: vec![(0, eof_class)], tokens: Tokens::List(eos.clone().into()) });
                }
                let nodes = walker.nodes()[nodes_sent..].to_vec();
                nodes_sent = walker.nodes().len();
                let sets = terms.since(sets_sent);
                sets_sent = terms.len();
                Walked::State { q, thread, share_key, classes, undecided, nodes, sets, walk: tq.elapsed() }
            }
        };
        batch.push(msg);
        if batch_start.elapsed() >= BATCH_FOR || batch.len() >= BATCH_STATES {
            if tx.send(std::mem::take(&mut batch)).is_err() {
                break;
            }
            batch_start = Instant::now();
        }
    }
    if !batch.is_empty() {
        let _ = tx.send(batch);
    }
    drop(tx);
    let walked = t0.elapsed();
    kills.all();
    (walked, walker.limit_hits, renamed)
}
