//! The Parser DWA compiler (docs/CONSTRUCTION.md "The Parser DWA"): grammar tables + vocabulary → [`MaskTables`].
//!
//! One module per stage of the pipeline:
//!
//! | module | stage |
//! |---|---|
//! | `dwac_runtime::unstable::Trie` | the vocabulary as a byte trie (shared with the runtime's reference mask) |
//! | [`terminal_dwa`] | Terminal DWA: each token's lexings from each lexer state (token classes), `KILL` sets |
//! | [`templates`] | per-terminal stack effects, run symbolically on a known segment above the real stack |
//! | [`compose`] | composition of a token's terminals and its lookahead check, with push/pop cancellation and priority guards |
//! | [`horizon`] | bounded-horizon equivalence of lexer states |
//! | [`determinize`] | weighted determinization into the Parser DWA of each lexer state, sharing states between lexer states by key |
//! | `saturate` | backward saturation (pre*) of the lexings a lexer state's build had to leave out: a second automaton per lexer state |
//! | [`minimize`] | minimization of the assembled automaton across lexer states; token sets compacted and cut into blocks |
//! | [`set_pool`] | interned terminal and token-class sets |
//! | `token_sets` | interned token sets over token ids, unions of token classes |
//! | `walk_thread` | the walking thread: the vocabulary trie per process, each lexer state's classes sent on, `KILL` sets by whichever thread is free |
//! | `assemble` | each lexer state's automaton appended to the flat [`MaskTables`] (class outputs expanded into token sets, entries shared between states), then the `KILL` sets and minimization |
//!
//! This module holds the options and statistics and drives the build: the walking thread beside
//! the determinizing and assembling one ([`build_mask_tables_with_progress`]), and the budget.

mod assemble;
pub mod compose;
pub mod determinize;
pub mod horizon;
pub mod minimize;
mod race;
mod saturate;
pub mod set_pool;
pub mod templates;
pub mod terminal_dwa;
mod token_sets;
mod walk_thread;

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Instant;

/// Hash map with a fast, fixed-seed hasher (compile-time memo tables; deterministic).
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

use dwac_runtime::unstable::MaskTables;
use dwac_runtime::{unstable::GrammarTables, Vocabulary};

use crate::stages::Stages;
use crate::threads::carry;
use crate::CompileError;
use assemble::Assembler;
use compose::{Composer, Step};
use determinize::Determinizer;
use dwac_runtime::unstable::Trie;
use horizon::Horizon;
use set_pool::SetPool;
use templates::Lr;
pub use terminal_dwa::LimitHits;
use terminal_dwa::{FollowBytes, Prewalker, Prewalks, TrieIndex, Walker};
use walk_thread::{shared_trie, walk_states, Kills, Walked};

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
    /// Drop, in the vocabulary walk, the splits after a terminal whose next lexeme no parser
    /// can take (`terminal_dwa/follow.rs`; the masks do not change, the walk lists fewer dead
    /// lexings). Set by the compiler for character-level grammars (lexer inference ran); it
    /// follows from the grammar, so it is not part of the grammar fingerprint.
    pub follow_bytes: bool,
    /// Give a lexer state the classes of a state alike up to its lexeme's terminal, renamed,
    /// instead of walking it (`terminal_dwa/rename.rs`; the tables are the same either way; not
    /// part of the grammar fingerprint).
    pub rename_states: bool,
    /// Decide the tokens a lexer state's build had to leave out (or, over budget even when
    /// cut, all its tokens) by an automaton saturated backwards (`saturate/`) where their
    /// lexings allow it, instead of leaving them UNDECIDED. Off only to exercise the run-time
    /// path of UNDECIDED tokens (written to the fingerprint when off).
    pub saturate: bool,
    /// With saturation on, a lexer state's first forward attempt that has taken this much work,
    /// (base, per token class), whichever is more, is run again in a race with the saturation
    /// of its classes on a second thread (`assemble/later.rs`, `Assembler::first_attempt`;
    /// `race.rs`); `(u64::MAX, 0)`: never. The automaton that costs fewer counted steps is kept
    /// (the saturation also where the attempt fails), so the tables do not depend on which
    /// thread finishes first; the masks are exact either way. Written to the grammar
    /// fingerprint when changed. (25,000 by default, 100,000 before: Lua's four 68-class lexer
    /// states under qwen3 spent 7.6M ticks each failing a first attempt their saturation beats
    /// in 0.9M; no state of the qwen3 corpus raced any differently, and its 3,748 artifacts
    /// stayed byte-identical.)
    pub saturate_beside: (u64, u64),
    /// A grammar's first lexer state with this many token classes or more (whose first
    /// attempt would not be raced) is built forward apart, in two halves on two threads of
    /// their own, each with a determinizer of its own and no links, joined into one automaton,
    /// while the other states are built (`assemble/apart.rs`); `usize::MAX`: never. It changes
    /// how the tables are built, not what they are (minimization).
    pub apart_classes: usize,
}

impl Default for MaskOptions {
    fn default() -> Self {
        MaskOptions {
            max_states_per_lexer_state: 200_000,
            work_per_lexer_state: 4_000_000,
            walk_thread: true,
            link_states: true,
            max_dwa_states: 8_000_000,
            follow_bytes: false,
            rename_states: true,
            saturate: true,
            saturate_beside: (25_000, 100),
            apart_classes: 20_000,
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
    /// Lexer states whose automaton was built within the budget (whole or cut).
    pub lexer_states_with_dwa: usize,
    /// Token classes, summed over the lexer states.
    pub token_classes: usize,
    /// Composition configurations made (each once: they are shared between lexer states).
    pub configurations: usize,
    /// Token sets in the finished tables.
    pub token_sets: usize,
    /// The most stack states `get_mask` can read from one head (`u32::MAX`: unbounded, a cycle).
    pub max_lookback: u32,
    /// Carried inhibitors, each with a `KILL` set in the tables.
    pub carried_inhibitors: usize,
    /// (lexer state, token) pairs left UNDECIDED, decided at run time by committing the token.
    pub undecided_tokens: usize,
    /// Lexer states whose automaton exceeded its budget (all their tokens are UNDECIDED).
    pub lexer_states_over_budget: usize,
    /// Lexer states whose automaton exceeded its budget with every token, and was built for the
    /// tokens whose lexings are shorter (the others UNDECIDED).
    pub lexer_states_cut: usize,
    /// Tokens left out of a cut lexer state's build and decided by its second automaton,
    /// saturated backwards (`saturate`) instead of being left UNDECIDED.
    pub tokens_saturated: usize,
    /// Lexer states whose classes were saturated on a second thread beside a long first
    /// forward attempt ([`MaskOptions::saturate_beside`]), whichever won.
    pub saturations_beside: usize,
    /// Of those, the states where the saturation won the race: it succeeded, and in fewer
    /// counted steps than the forward attempt (or the attempt failed).
    pub saturations_won: usize,
    /// Of `saturations_beside`, the states decided by an earlier state's saturation, their
    /// lexings all among its classes': restricted to their classes, with no attempt of their
    /// own.
    pub saturations_shared: usize,
    /// Lexer states built forward on a thread of their own, with a determinizer of their own,
    /// while the others were built (`assemble/apart.rs`): a grammar's first state with
    /// [`MaskOptions::apart_classes`] token classes or more.
    pub lexer_states_apart: usize,
    /// Lexer states whose saturated classes were split by the length of their lexings into two
    /// automata, the second at the state's second start (`saturate::saturate_split`).
    pub saturations_split: usize,
    /// Lexer states with a second start (`MaskTables::aux_start`, format 4.1).
    pub second_starts: usize,
    /// Tokens the vocabulary walk left UNDECIDED, by the limit that made it so (counted per
    /// subtree walked, so an upper bound on distinct pairs; the rest of `undecided_tokens`
    /// comes from lexer states over the work budget).
    pub undecided_by_walk_limits: LimitHits,
    /// Lexer states that share the automaton of an equivalent state, or of a state with the
    /// same automaton and the same tokens in every class (counted in the fields above as if
    /// they had their own).
    pub lexer_states_shared: usize,
    /// Lexer states whose classes were those of a state alike up to its lexeme's terminal,
    /// renamed rather than walked ([`Walker::renaming_key`]).
    pub lexer_states_renamed: usize,
    /// Automata taken from an earlier lexer state with the same lexings instead of being
    /// determinized again (`assemble/reuse.rs`): the positions of a counter, such as a bounded
    /// run of whitespace, whose classes lex alike.
    pub automata_reused: usize,
    /// The longest time one lexer state's automaton took (including one that ran over budget).
    pub slowest_lexer_state_ms: f64,
    /// Wall time of the whole build, ms.
    pub build_ms: f64,
    /// Time per stage: `trie`, `walk` (Terminal DWA), `determinize`, `assemble` (class sets
    /// to interned token sets), `kill`. `walk` runs on its own thread beside the others
    /// ([`MaskOptions::walk_thread`]), so the stages can add up to more than `build_ms`.
    pub stages_ms: Vec<(&'static str, f64)>,
}

/// A vocabulary's trie and its index, made ahead of [`build_mask_tables_prepared`].
pub struct PreparedVocabulary(Arc<Trie>, Arc<TrieIndex>);

/// `vocab`'s trie and index (from the process's cache, or built into it): what the Parser DWA
/// build walks. It needs no grammar, so a caller may make it on another thread while the
/// grammar's tables are built.
pub fn prepare_vocabulary(vocab: &Vocabulary) -> PreparedVocabulary {
    let (trie, index) = shared_trie(vocab);
    PreparedVocabulary(trie, index)
}

/// Build the mask tables of `tables` for `vocab`.
pub fn build_mask_tables(
    tables: &GrammarTables,
    vocab: &Vocabulary,
    opts: &MaskOptions,
) -> Result<(MaskTables, MaskStats), CompileError> {
    build_mask_tables_with_progress(tables, vocab, opts, &mut |_, _| ControlFlow::Continue(()))
}

/// [`build_mask_tables`], reporting `(lexer states done, lexer states)` before each lexer state;
/// a `Break(why)` from `progress` stops the build there with [`CompileError::Stopped`].
///
/// Two threads: one walks the vocabulary trie from each lexer state (`walk_thread::walk_states`), the other
/// (this one) determinizes and assembles each state's automaton as its classes arrive, in state
/// order, so the tables are the same as one thread's. Everything the walker interns (terminal
/// sets, step sequences) comes along with the classes that first name it.
pub fn build_mask_tables_with_progress(
    tables: &GrammarTables,
    vocab: &Vocabulary,
    opts: &MaskOptions,
    progress: &mut dyn FnMut(u64, u64) -> ControlFlow<String>,
) -> Result<(MaskTables, MaskStats), CompileError> {
    let t0 = Instant::now();
    let prepared = prepare_vocabulary(vocab);
    build_mask_tables_prepared(tables, vocab, prepared, opts, progress, t0)
}

/// [`build_mask_tables_with_progress`] with `vocab`'s trie made beforehand
/// ([`prepare_vocabulary`]; the `trie` stage is then about 0); the build time counts from `t0`.
pub fn build_mask_tables_prepared(
    tables: &GrammarTables,
    vocab: &Vocabulary,
    PreparedVocabulary(trie, trie_index): PreparedVocabulary,
    opts: &MaskOptions,
    progress: &mut dyn FnMut(u64, u64) -> ControlFlow<String>,
    t0: Instant,
) -> Result<(MaskTables, MaskStats), CompileError> {
    let mut stages = Stages::new();
    let lex = &tables.lexer;
    let n_tokens = vocab.len() as u32;
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
    let mut asm = Assembler::new(n_tokens, lex.num_states, opts);
    let (tx, rx) = mpsc::channel();
    // The walker's inputs, taken by its thread, or by this one if no thread can be started.
    let walk_args = Mutex::new(Some((terms, (eof_class, vocab.eos().to_vec()), tx)));
    let kills = Kills::new(lex, trie, &trie_index);
    // Bounded-horizon equivalence, and (for a lexer of several components, without the
    // follow-byte filter) the same up to the lexeme's terminal, on a second thread.
    let renames = opts.rename_states && !opts.follow_bytes && lex.fork_off.last().is_some_and(|&n| n > 0);
    let (horizon, renaming) = std::thread::scope(|scope| {
        let height = trie_index.height[0];
        let renaming = renames.then(|| scope.spawn(carry(move || Arc::new(Horizon::renaming(lex, height)))));
        let horizon = Walker::horizon_for(lex, &trie_index);
        (horizon, renaming.map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))))
    });
    let prewalks = Prewalks::default();
    let mut prewalker = Prewalker::new(lex, trie, Arc::clone(&trie_index), Arc::clone(&horizon));
    let follow = opts.follow_bytes.then(|| Arc::new(FollowBytes::of(lex, &tables.lr)));
    let walk = || {
        let (terms, eos, tx) = walk_args.lock().unwrap_or_else(|e| e.into_inner()).take()?;
        let parts = (trie, Arc::clone(&trie_index), (Arc::clone(&horizon), renaming.clone()), follow.clone());
        Some(walk_states(lex, parts, terms, eos, tx, &kills, &prewalks))
    };
    let (mut over, mut stopped): (Option<String>, Option<String>) = (None, None);
    let (walk_time, limit_hits, renamed) = std::thread::scope(|scope| {
        let walking = opts
            .walk_thread
            .then(|| std::thread::Builder::new().name("dwac-walk".into()).spawn_scoped(scope, carry(walk)).ok())
            .flatten();
        let inline = if walking.is_none() { walk() } else { None };
        let mut pending = std::collections::VecDeque::new();
        loop {
            // Kill sets while no classes are waiting (interned after the states).
            let msg = match pending.pop_front() {
                Some(msg) => msg,
                None => {
                    let batch = match rx.try_recv() {
                        Ok(batch) => batch,
                        Err(mpsc::TryRecvError::Disconnected) => break,
                        Err(mpsc::TryRecvError::Empty) => {
                            // (Then subtrees the walker will need: [`Prewalks`].)
                            if kills.one() || prewalker.one(&prewalks) {
                                continue;
                            }
                            match rx.recv() {
                                Ok(batch) => batch,
                                Err(_) => break,
                            }
                        }
                    };
                    pending.extend(batch);
                    continue;
                }
            };
            let tq = Instant::now();
            let q = match &msg {
                Walked::Shared { q, .. } | Walked::State { q, .. } => *q,
            };
            let asked = crate::threads::stop_requested().map(ControlFlow::Break);
            if let ControlFlow::Break(why) = asked.unwrap_or_else(|| progress(q as u64, lex.num_states as u64)) {
                stopped = Some(why);
                // (Dropping the receiver stops the walker at its next state.)
                drop(rx);
                break;
            }
            match msg {
                Walked::Shared { q, key } => asm.shared_state(q, key),
                Walked::State { q, thread, share_key, classes, undecided, nodes: new_nodes, sets: new_sets, walk } => {
                    nodes.extend_from_slice(&new_nodes);
                    det.comp.terms.extend_from(new_sets);
                    let timing = (walk, tq);
                    asm.state(&mut det, &nodes, q, thread, share_key, classes, undecided, timing, &mut stages);
                    if asm.over_budget() {
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
            }
        }
        // The states that waited for their saturation ([`Assembler::state`]), in order.
        if over.is_none() && stopped.is_none() {
            asm.complete_later(&mut det, &nodes, &mut stages);
            if asm.over_budget() {
                over = Some(format!(
                    "the Parser DWA grew past {} states (MaskOptions::max_dwa_states) once the states that waited \
                     for their saturation were complete (the grammar has {} LR states)",
                    opts.max_dwa_states, tables.lr.num_states
                ));
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
    if let Some(why) = stopped {
        return Err(CompileError::Stopped(why));
    }
    stages.add("walk", walk_time);
    let (carried, kills, kill_time) = kills.into_sets();
    stages.add("kill", kill_time);
    let (out, mut stats) = asm.finish(carried, kills, det.linked, &mut stages);
    stats.undecided_by_walk_limits = limit_hits;
    stats.lexer_states_renamed = renamed;
    stats.build_ms = t0.elapsed().as_secs_f64() * 1e3;
    stats.stages_ms = stages.done;
    Ok((out, stats))
}
