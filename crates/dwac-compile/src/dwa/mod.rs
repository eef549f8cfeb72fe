//! The Parser DWA compiler (DESIGN.md §4): grammar tables + vocabulary → [`MaskTables`].
//!
//! One module per stage of the pipeline:
//!
//! | module | stage |
//! |---|---|
//! | `dwac_runtime::trie` | the vocabulary as a byte trie (shared with the runtime's reference mask) |
//! | [`terminal_dwa`] | Terminal DWA: each token's lexings from each lexer state (token classes), `KILL` sets |
//! | [`templates`] | per-terminal stack effects, run symbolically on a known segment above the real stack |
//! | [`compose`] | composition of a token's terminals and its lookahead check, with push/pop cancellation and priority guards |
//! | [`horizon`] | bounded-horizon equivalence of lexer states |
//! | [`determinize`] | weighted determinization into the Parser DWA of each lexer state, sharing states between lexer states by key |
//! | [`minimize`] | minimization of the assembled automaton across lexer states; token sets compacted and cut into blocks |
//! | [`sets`] | interned terminal and token-class sets |
//! | `tokensets` | interned token sets over token ids, unions of token classes |
//!
//! This module drives the build (the walking thread, the `KILL` sets, the budget) and
//! assembles the per-lexer-state DWAs into the runtime's flat [`MaskTables`], expanding
//! token-class outputs into token sets.

pub mod compose;
pub mod determinize;
pub mod horizon;
pub mod minimize;
pub mod sets;
pub mod templates;
pub mod terminal_dwa;
mod tokensets;

use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// Hash map with a fast, fixed-seed hasher (compile-time memo tables; deterministic).
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

use dwac_runtime::dwa::{MaskTables, NONE};
use dwac_runtime::lexer::Inhibitor;
use dwac_runtime::{GrammarTables, LexerTables, Vocabulary, DEAD};

use crate::pipeline::Stages;
use crate::CompileError;
use compose::{Composer, Step};
use determinize::{Assembled, Determinizer, LocalDwa, StateKey};
use dwac_runtime::trie::Trie;
use sets::SetPool;
use templates::Lr;
use terminal_dwa::{carried_inhibitors, kill_set_shared, TokenClass, Tokens, TrieIndex, Walker};
use tokensets::{TokenSets, Union};

/// Limits of one mask-table build.
#[derive(Clone, Debug)]
pub struct MaskOptions {
    /// DWA states one lexer state's automaton may have.
    pub max_states_per_lexer_state: usize,
    /// Lexing-trie expansions one lexer state's automaton may take. Past either limit, the lexer
    /// state gets no automaton: all its tokens are UNDECIDED, decided at run time by commit
    /// (exact, at reference-mask speed for threads in that state), and counted in the stats.
    pub work_per_lexer_state: u64,
    /// Walk the vocabulary on a thread of its own, beside determinization and assembly (the
    /// tables are the same either way; not part of the grammar fingerprint).
    pub walk_thread: bool,
    /// Link a lexer state's automaton to states already assembled for earlier lexer states
    /// when their keys are equal (`determinize::StateKey`), instead of building them again (the
    /// minimized tables are the same either way; not part of the grammar fingerprint).
    pub link_states: bool,
    /// States the assembled Parser DWA may have (before minimization): past it the build stops
    /// with [`CompileError::Budget`] naming the lexer state it got to and the grammar's lexer and
    /// LR state counts, rather than growing until memory runs out.
    pub max_dwa_states: usize,
}

impl Default for MaskOptions {
    fn default() -> Self {
        MaskOptions {
            max_states_per_lexer_state: 200_000,
            work_per_lexer_state: 4_000_000,
            walk_thread: true,
            link_states: true,
            max_dwa_states: 8_000_000,
        }
    }
}

/// Sizes and timings of one mask-table build.
#[derive(Clone, Debug, Default)]
pub struct MaskStats {
    /// States of the minimized Parser DWA (the artifact's).
    pub dwa_states: usize,
    /// States assembled before minimization.
    pub dwa_states_assembled: usize,
    /// Determinized states not built because an assembled state had their key (links).
    pub dwa_states_linked: usize,
    pub lexer_states_with_dwa: usize,
    pub token_classes: usize,
    /// Composition configurations made (each once: they are shared between lexer states).
    pub configurations: usize,
    pub token_sets: usize,
    /// The most stack states `get_mask` can read from one head (`u32::MAX`: unbounded, a cycle).
    pub max_lookback: u32,
    pub carried_inhibitors: usize,
    /// (lexer state, token) pairs left UNDECIDED, decided at run time by committing the token.
    pub undecided_tokens: usize,
    /// Lexer states whose automaton exceeded its budget (all their tokens are UNDECIDED).
    pub lexer_states_over_budget: usize,
    /// Lexer states that share the automaton of an equivalent state, or of a state with the
    /// same automaton and the same tokens in every class (counted in the fields above as if
    /// they had their own).
    pub lexer_states_shared: usize,
    /// The longest time one lexer state's automaton took (including one that ran over budget).
    pub slowest_lexer_state_ms: f64,
    pub build_ms: f64,
    /// Time per stage: `trie`, `walk` (Terminal DWA), `determinize`, `assemble` (class sets
    /// to interned token sets), `kill`. `walk` runs on its own thread beside the others
    /// ([`MaskOptions::walk_thread`]), so the stages can add up to more than `build_ms`.
    pub stages_ms: Vec<(&'static str, f64)>,
}

/// What one lexer state adds to the statistics.
#[derive(Clone, Copy)]
struct StateCounts {
    lexer_states_with_dwa: usize,
    token_classes: usize,
    configurations: usize,
    undecided_tokens: usize,
    lexer_states_over_budget: usize,
}

impl StateCounts {
    fn of(s: &MaskStats) -> StateCounts {
        StateCounts {
            lexer_states_with_dwa: s.lexer_states_with_dwa,
            token_classes: s.token_classes,
            configurations: s.configurations,
            undecided_tokens: s.undecided_tokens,
            lexer_states_over_budget: s.lexer_states_over_budget,
        }
    }

    /// The counts added since `self` was taken of `s`.
    fn since(&self, s: &MaskStats) -> StateCounts {
        let now = StateCounts::of(s);
        StateCounts {
            lexer_states_with_dwa: now.lexer_states_with_dwa - self.lexer_states_with_dwa,
            token_classes: now.token_classes - self.token_classes,
            configurations: now.configurations - self.configurations,
            undecided_tokens: now.undecided_tokens - self.undecided_tokens,
            lexer_states_over_budget: now.lexer_states_over_budget - self.lexer_states_over_budget,
        }
    }

    fn add_to(&self, s: &mut MaskStats) {
        s.lexer_states_with_dwa += self.lexer_states_with_dwa;
        s.token_classes += self.token_classes;
        s.configurations += self.configurations;
        s.undecided_tokens += self.undecided_tokens;
        s.lexer_states_over_budget += self.lexer_states_over_budget;
    }
}

/// A lexer state's entries in the mask tables, for the states that share them.
struct Shared {
    start: u32,
    start_rho: u32,
    undecided: u32,
    counts: StateCounts,
}

impl Shared {
    fn of(out: &MaskTables, q: u32, counts: StateCounts) -> Shared {
        let q = q as usize;
        Shared { start: out.start[q], start_rho: out.start_rho[q], undecided: out.undecided[q], counts }
    }
}

/// The assembled tables as [`Determinizer::build`] sees them: token sets of the lexer state's
/// classes, and the states already assembled by key.
struct Tables<'a> {
    union: &'a mut Union,
    sets: &'a mut TokenSets,
    classes: &'a [TokenClass],
    n_tokens: u32,
    keys: &'a FastMap<StateKey, u32>,
    link: bool,
}

impl Assembled for Tables<'_> {
    fn tokens(&mut self, members: &[u32]) -> u32 {
        self.union.intern(members, self.classes, self.sets, self.n_tokens)
    }

    fn state(&self, key: &StateKey) -> Option<u32> {
        self.keys.get(key).copied()
    }

    fn links(&self) -> bool {
        self.link
    }
}

/// The byte trie of `vocab`'s non-special tokens. The vocabulary side of the build: the last
/// vocabulary's trie is kept for the process, so compiling many grammars against one vocabulary
/// (a batch, a benchmark, a server compiling schemas on demand) builds it once. The cache is
/// keyed by the vocabulary itself (compared in full, not by a hash), so it can never be stale.
fn shared_trie(vocab: &Vocabulary) -> (Arc<Trie>, Arc<TrieIndex>) {
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

/// Build the mask tables of `tables` for `vocab`.
pub fn build_mask_tables(
    tables: &GrammarTables,
    vocab: &Vocabulary,
    opts: &MaskOptions,
) -> Result<(MaskTables, MaskStats), CompileError> {
    build_mask_tables_with_progress(tables, vocab, opts, &mut |_, _| {})
}

/// What the walking thread hands the assembling thread for one lexer state, in state order.
enum Walked {
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

/// The `KILL` sets of the carried inhibitors (ALGORITHM.md §4.1), each computed by whichever
/// thread is free first: the assembling thread while it waits for classes, the walker once it
/// has walked every state. Kept in inhibitor order, so the tables do not depend on who did which.
/// Each is taken from the vocabulary's cache when another grammar had an inhibitor that moves
/// alike ([`kill_set_shared`]).
struct Kills<'a> {
    lex: &'a LexerTables,
    trie: &'a Trie,
    index: &'a TrieIndex,
    carried: Vec<Inhibitor>,
    next: AtomicUsize,
    done: Mutex<Vec<Option<Vec<u32>>>>,
    /// Time spent on them, in both threads (ns).
    busy: AtomicU64,
}

impl<'a> Kills<'a> {
    fn new(lex: &'a LexerTables, trie: &'a Trie, index: &'a TrieIndex) -> Kills<'a> {
        let carried = carried_inhibitors(lex);
        let done = Mutex::new(vec![None; carried.len()]);
        Kills { lex, trie, index, carried, next: AtomicUsize::new(0), done, busy: AtomicU64::new(0) }
    }

    /// Compute the next kill set not yet taken; false if none is left.
    fn one(&self) -> bool {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        let Some(&inh) = self.carried.get(i) else { return false };
        let t = Instant::now();
        let set = kill_set_shared(self.lex, self.trie, self.index, inh);
        self.done.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(set);
        self.busy.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        true
    }

    fn all(&self) {
        while self.one() {}
    }

    /// Every kill set, in inhibitor order (after [`Kills::all`] in every thread that helped).
    fn into_sets(self) -> (Vec<Inhibitor>, Vec<Vec<u32>>, Duration) {
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

/// The walking half of [`build_mask_tables`]: the Terminal DWA of every lexer state reachable at
/// a token boundary, in state order, sent to `tx` as it goes. `terms` holds the sets the
/// assembling thread's pool has (it mirrors this one). Returns the time spent walking.
fn walk_states(
    lex: &LexerTables,
    trie: &Trie,
    index: Arc<TrieIndex>,
    mut terms: SetPool,
    (eof_class, eos): (u32, Vec<u32>),
    tx: mpsc::Sender<Walked>,
    kills: &Kills,
) -> Duration {
    let t0 = Instant::now();
    let mut walker = Walker::with_index(lex, trie, index);
    let mut seen: FastMap<(u64, u32), ()> = FastMap::default();
    let (mut nodes_sent, mut sets_sent) = (0, terms.len());
    for q in 0..lex.num_states {
        if q != lex.start && !lex.can_continue(q) {
            continue;
        }
        let tq = Instant::now();
        // States of one block of bounded-horizon equivalence with the same thread class have
        // the same classes, UNDECIDED tokens and automaton (`Walker::block`): they share the
        // first one's copy of it.
        let thread = walker.class(q, &mut terms);
        let share_key = walker.block(q).filter(|_| q != lex.start).map(|b| (b, thread));
        let msg = match share_key {
            Some(key) if seen.insert(key, ()).is_some() => Walked::Shared { q, key },
            _ => {
                let (mut classes, undecided) = walker.classes(q, &mut terms);
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
        if tx.send(msg).is_err() {
            break;
        }
    }
    drop(tx);
    let walked = t0.elapsed();
    kills.all();
    walked
}

/// [`build_mask_tables`], reporting `(lexer states done, lexer states)` as it goes.
///
/// Two threads: one walks the vocabulary trie from each lexer state ([`walk_states`]), the other
/// (this one) determinizes and assembles each state's automaton as its classes arrive, in state
/// order, so the tables are the same as one thread's. Everything the walker interns (terminal
/// sets, step sequences) comes along with the classes that first name it.
pub fn build_mask_tables_with_progress(
    tables: &GrammarTables,
    vocab: &Vocabulary,
    opts: &MaskOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(MaskTables, MaskStats), CompileError> {
    let t0 = Instant::now();
    let mut stages = Stages::new();
    let lex = &tables.lexer;
    let n_tokens = vocab.len() as u32;
    let (trie, trie_index) = shared_trie(vocab);
    let trie = &*trie;
    stages.lap("trie");
    let comp = Composer::new(Lr::new(&tables.lr));
    let mut det = Determinizer::new(comp, opts.max_states_per_lexer_state);
    det.work_budget = opts.work_per_lexer_state;
    // The walker's terminal sets; the composer's pool mirrors them.
    let mut terms = SetPool::new();
    let eof_class = terms.intern(vec![tables.lr.eof()]);
    det.comp.terms.extend_from(terms.since(det.comp.terms.len()));
    let mut nodes: Vec<(u32, Step)> = Vec::new();
    let mut sets = TokenSets::new(n_tokens);
    let mut union = Union::default();
    let mut out = MaskTables {
        num_tokens: n_tokens,
        start: vec![NONE; lex.num_states as usize].into(),
        start_rho: vec![NONE; lex.num_states as usize].into(),
        undecided: vec![NONE; lex.num_states as usize].into(),
        edge_off: vec![0].into(),
        ..MaskTables::default()
    };
    let mut stats = MaskStats::default();
    #[allow(clippy::type_complexity)]
    let mut built_for: FastMap<(u32, Vec<Vec<terminal_dwa::Sig>>), Option<(Rc<LocalDwa>, usize, usize)>> =
        FastMap::default();
    // Local automata are told apart by a serial number (the third field above), never by
    // address: an automaton replaced in `built_for` is freed, and a later one may get its
    // address, which would then find the freed one's entries in `assembled`.
    let mut serial = 0usize;
    let mut shared: FastMap<(u64, u32), Shared> = FastMap::default();
    // Assembled states by their key (`determinize::StateKey`): a lexer state's automaton links
    // to these instead of building them again.
    let mut keys: FastMap<StateKey, u32> = FastMap::default();
    // Assembled automata by (their local automaton's serial number, class sizes): the class tokens they were
    // assembled with and their start entries. A state with the same automaton and the same
    // tokens in every class has the same tables: it takes those entries.
    #[allow(clippy::type_complexity)]
    let mut assembled: FastMap<(usize, Vec<usize>), Vec<(Vec<Tokens>, u32, u32)>> = FastMap::default();
    let (tx, rx) = mpsc::channel();
    // The walker's inputs, taken by its thread, or by this one if no thread can be started.
    let walk_args = Mutex::new(Some((terms, (eof_class, vocab.eos.to_vec()), tx)));
    let kills = Kills::new(lex, trie, &trie_index);
    let walk = || {
        let (terms, eos, tx) = walk_args.lock().unwrap_or_else(|e| e.into_inner()).take()?;
        Some(walk_states(lex, trie, Arc::clone(&trie_index), terms, eos, tx, &kills))
    };
    let mut over: Option<String> = None;
    let walk_time = std::thread::scope(|scope| {
        let walking = opts
            .walk_thread
            .then(|| std::thread::Builder::new().name("dwac-walk".into()).spawn_scoped(scope, walk).ok())
            .flatten();
        let inline = if walking.is_none() { walk() } else { None };
        loop {
            // Kill sets while no classes are waiting (interned after the states).
            let msg = match rx.try_recv() {
                Ok(msg) => msg,
                Err(mpsc::TryRecvError::Disconnected) => break,
                Err(mpsc::TryRecvError::Empty) => {
                    if kills.one() {
                        continue;
                    }
                    match rx.recv() {
                        Ok(msg) => msg,
                        Err(_) => break,
                    }
                }
            };
            let tq = Instant::now();
            let (q, thread, share_key, classes, undecided, walk) = match msg {
                Walked::Shared { q, key } => {
                    progress(q as u64, lex.num_states as u64);
                    let sh = &shared[&key];
                    out.start.to_mut()[q as usize] = sh.start;
                    out.start_rho.to_mut()[q as usize] = sh.start_rho;
                    out.undecided.to_mut()[q as usize] = sh.undecided;
                    sh.counts.add_to(&mut stats);
                    stats.lexer_states_shared += 1;
                    continue;
                }
                Walked::State { q, thread, share_key, classes, undecided, nodes: new_nodes, sets: new_sets, walk } => {
                    nodes.extend_from_slice(&new_nodes);
                    det.comp.terms.extend_from(new_sets);
                    (q, thread, share_key, classes, undecided, walk)
                }
            };
            progress(q as u64, lex.num_states as u64);
            let before = StateCounts::of(&stats);
            stats.undecided_tokens += undecided.len();
            out.undecided.to_mut()[q as usize] = sets.intern(undecided);
            stats.token_classes += classes.len();
            stages.skip();
            // A lexer state's automaton depends only on its thread's class and its classes'
            // lexings (classes are referred to by index): states with the same share one.
            let key = (thread, classes.iter().map(|c| c.sigs.clone()).collect::<Vec<_>>());
            // (An automaton with links was built for its classes' tokens: another state with the
            // same lexings but other tokens builds its own, unless assembly finds it has the
            // same tokens too.)
            let reusable = built_for.get(&key).filter(|b| match b {
                Some((local, _, id)) => {
                    local.links.is_empty() || {
                        let akey = (*id, classes.iter().map(|c| c.tokens.len()).collect::<Vec<_>>());
                        assembled.get(&akey).is_some_and(|variants| {
                            variants.iter().any(|v| v.0.iter().zip(classes.iter()).all(|(t, c)| t.same(&c.tokens)))
                        })
                    }
                }
                None => true,
            });
            let built = match reusable {
                Some(b) => b.clone(),
                None => {
                    let mut asm = Tables {
                        union: &mut union,
                        sets: &mut sets,
                        classes: &classes,
                        n_tokens,
                        keys: &keys,
                        link: opts.link_states,
                    };
                    let b = det.build(&classes, &nodes, thread, &mut asm).ok().map(|l| {
                        serial += 1;
                        (Rc::new(l), det.num_configs(), serial)
                    });
                    built_for.insert(key, b.clone());
                    b
                }
            };
            stages.lap("determinize");
            let slowest = (walk + tq.elapsed()).as_secs_f64() * 1e3;
            stats.slowest_lexer_state_ms = stats.slowest_lexer_state_ms.max(slowest);
            let (local, local_id) = match built {
                Some((local, configs, id)) => {
                    stats.configurations += configs;
                    (local, id)
                }
                None => {
                    // Over budget: every token with a lexing here is decided at run time.
                    let mut all: Vec<u32> = sets.members(out.undecided[q as usize]);
                    all.extend(classes.iter().flat_map(|c| c.tokens.iter()));
                    all.sort_unstable();
                    all.dedup();
                    stats.undecided_tokens += all.len() - sets.members(out.undecided[q as usize]).len();
                    stats.lexer_states_over_budget += 1;
                    out.undecided.to_mut()[q as usize] = sets.intern(all);
                    if let Some(k) = share_key {
                        shared.insert(k, Shared::of(&out, q, before.since(&stats)));
                    }
                    continue;
                }
            };
            stats.lexer_states_with_dwa += 1;
            let akey = (local_id, classes.iter().map(|c| c.tokens.len()).collect::<Vec<_>>());
            let same = assembled.get(&akey).and_then(|variants| {
                variants.iter().find(|v| v.0.iter().zip(classes.iter()).all(|(t, c)| t.same(&c.tokens)))
            });
            if let Some(&(_, start, start_rho)) = same {
                out.start.to_mut()[q as usize] = start;
                out.start_rho.to_mut()[q as usize] = start_rho;
                stats.lexer_states_shared += 1;
                if let Some(k) = share_key {
                    shared.insert(k, Shared::of(&out, q, before.since(&stats)));
                }
                stages.lap("assemble");
                continue;
            }
            // Class sets → token sets (memoized per local set).
            let classes = &classes;
            let mut expand: FastMap<u32, u32> = FastMap::default();
            let mut to_tokens = |set: u32, sets: &mut TokenSets| -> u32 {
                if set == 0 {
                    return NONE;
                }
                *expand.entry(set).or_insert_with(|| union.intern(local.sets.get(set), classes, sets, n_tokens))
            };
            // Local ids → assembled ids: links stand for their assembled state, the others are
            // appended in order.
            let base = out.default_target.len() as u32;
            let mut ids = Vec::with_capacity(local.states.len());
            let mut next = base;
            for d in 0..local.states.len() as u32 {
                match local.links.get(&d) {
                    Some(&g) => ids.push(g),
                    None => {
                        ids.push(next);
                        next += 1;
                    }
                }
            }
            let global = |d: u32| if d == DEAD { DEAD } else { ids[d as usize] };
            out.start.to_mut()[q as usize] = if local.start == DEAD { NONE } else { global(local.start) };
            out.start_rho.to_mut()[q as usize] = to_tokens(local.start_rho, &mut sets);
            for (d, st) in local.states.iter().enumerate() {
                if local.links.contains_key(&(d as u32)) {
                    continue;
                }
                for &(label, target, rho) in &st.edges {
                    out.edge_label.push(label);
                    out.edge_target.push(global(target));
                    out.edge_rho.push(to_tokens(rho, &mut sets));
                }
                out.edge_off.push(out.edge_label.len() as u32);
                out.default_target.push(global(st.default.0));
                out.default_rho.push(to_tokens(st.default.1, &mut sets));
            }
            for (d, k) in local.keys.iter().enumerate() {
                if let Some(k) = k {
                    keys.entry(k.clone()).or_insert(ids[d]);
                }
            }
            if let Some(k) = share_key {
                shared.insert(k, Shared::of(&out, q, before.since(&stats)));
            }
            let tokens = classes.iter().map(|c| c.tokens.clone()).collect();
            assembled.entry(akey).or_default().push((tokens, out.start[q as usize], out.start_rho[q as usize]));
            stages.lap("assemble");
            if out.default_target.len() > opts.max_dwa_states {
                over = Some(format!(
                    "the Parser DWA grew past {} states (MaskOptions::max_dwa_states) at lexer state {q} of {} \
                     (the grammar has {} LR states)",
                    opts.max_dwa_states, lex.num_states, tables.lr.num_states
                ));
                // (Dropping the receiver stops the walker at its next state.)
                drop(rx);
                break;
            }
        }
        let walk_time = match walking.map(|h| h.join()) {
            Some(Ok(t)) => t,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => inline,
        };
        kills.all();
        walk_time.unwrap_or_default()
    });
    if let Some(why) = over {
        return Err(CompileError::Budget(why));
    }
    stages.add("walk", walk_time);
    let (carried, kills, kill_time) = kills.into_sets();
    stages.add("kill", kill_time);
    stats.carried_inhibitors = carried.len();
    for (i, kill) in carried.into_iter().zip(kills) {
        let set = sets.intern(kill);
        // An empty kill set kills nothing: store no entry, and a missing entry would be a bug, so
        // store it as an empty range list.
        let set = if set == NONE { sets.intern_empty() } else { set };
        out.kill_s.push(i.s);
        out.kill_k.push(i.k);
        out.kill_set.push(set);
    }
    out.set_off = sets.off.into();
    out.set_ranges = sets.ranges.into();
    let t_min = Instant::now();
    let (assembled_states, _) = minimize::minimize(&mut out);
    // The sets the minimized automaton refers to, renumbered; bitmaps cut into interned blocks.
    let words = sets.words;
    let bitmap = |s: u32| {
        let d = sets.dense[s as usize];
        (d != NONE).then(|| &sets.bitmaps[d as usize..d as usize + words])
    };
    minimize::compact_sets(&mut out, bitmap);
    stages.add("minimize", t_min.elapsed());
    stats.dwa_states_assembled = assembled_states;
    stats.dwa_states_linked = det.linked;
    stats.dwa_states = out.default_target.len();
    stats.token_sets = out.num_sets();
    stats.max_lookback = max_lookback(&out);
    stats.build_ms = t0.elapsed().as_secs_f64() * 1e3;
    stats.stages_ms = stages.done;
    Ok((out, stats))
}

/// The longest chain of reads from any start state (`u32::MAX` if the DWA has a cycle).
fn max_lookback(t: &MaskTables) -> u32 {
    let n = t.num_states();
    // 0 = unvisited, 1 = on the stack, 2 = done.
    let mut mark = vec![0u8; n];
    let mut depth = vec![0u32; n];
    let mut best = 0;
    let succ =
        |d: u32| t.edges(d).map(|e| e.1).chain(std::iter::once(t.default_target[d as usize])).filter(|&x| x != DEAD);
    let mut stack: Vec<(u32, bool)> = Vec::new();
    for &s in t.start.iter().filter(|&&s| s != NONE) {
        stack.clear();
        stack.push((s, false));
        while let Some((d, post)) = stack.pop() {
            let di = d as usize;
            if post {
                let deepest = succ(d).map(|x| if t.is_final(x) { 0 } else { depth[x as usize] }).max();
                depth[di] = 1u32.saturating_add(deepest.unwrap_or(0));
                mark[di] = 2;
                continue;
            }
            match mark[di] {
                2 => continue,
                1 => return u32::MAX,
                _ => {}
            }
            mark[di] = 1;
            stack.push((d, true));
            for x in succ(d) {
                if t.is_final(x) {
                    continue;
                }
                match mark[x as usize] {
                    0 => stack.push((x, false)),
                    1 => return u32::MAX,
                    _ => {}
                }
            }
        }
        best = best.max(depth[s as usize]);
    }
    best
}
