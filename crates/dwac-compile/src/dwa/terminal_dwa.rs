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
use std::sync::{Arc, Mutex};

use dwac_runtime::lexer::Inhibitor;
use dwac_runtime::tables::DEAD;
use dwac_runtime::LexerTables;

use super::compose::{Step, ANY};
use super::horizon::Horizon;
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
    pub tokens: Tokens,
}

/// Classes with more tokens than this are kept as bitmaps: they are copied between lexer states
/// and OR-ed into unions a word at a time, never listed token by token.
pub const BITMAP_FROM: usize = 2048;

/// The tokens of a class: a sorted list, or (large classes) a bitmap over token ids (bit
/// `t % 64` of word `t / 64`), both shared (lexer states derived from a base keep the base's
/// untouched lists and bitmaps, and the memos hand out copies of the handle, not the tokens).
#[derive(Clone, Debug)]
pub enum Tokens {
    List(Arc<[u32]>),
    Bits { bits: Arc<[u64]>, len: usize },
}

impl Tokens {
    /// A list, or a bitmap of `words` words when longer than [`BITMAP_FROM`].
    fn from_sorted(list: Vec<u32>, words: usize) -> Tokens {
        if list.len() <= BITMAP_FROM {
            return Tokens::List(list.into());
        }
        let mut bits = vec![0u64; words];
        for &t in &list {
            bits[(t / 64) as usize] |= 1 << (t % 64);
        }
        Tokens::Bits { bits: bits.into(), len: list.len() }
    }

    /// The address of the shared storage: equal addresses of live values mean equal tokens.
    pub fn addr(&self) -> usize {
        match self {
            Tokens::List(l) => Arc::as_ptr(l) as *const u8 as usize,
            Tokens::Bits { bits, .. } => Arc::as_ptr(bits) as *const u8 as usize,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Tokens::List(l) => l.len(),
            Tokens::Bits { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The tokens, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let (list, bits): (&[u32], &[u64]) = match self {
            Tokens::List(l) => (&l[..], &[]),
            Tokens::Bits { bits, .. } => (&[], bits),
        };
        list.iter().copied().chain(bits.iter().enumerate().flat_map(|(wi, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                (w != 0).then(|| {
                    let b = w.trailing_zeros();
                    w &= w - 1;
                    wi as u32 * 64 + b
                })
            })
        }))
    }

    /// Are these the same tokens as `other`'s?
    pub fn same(&self, other: &Tokens) -> bool {
        match (self, other) {
            (Tokens::List(a), Tokens::List(b)) => Arc::ptr_eq(a, b) || a == b,
            (Tokens::Bits { bits: a, len: la }, Tokens::Bits { bits: b, len: lb }) => {
                la == lb && (Arc::ptr_eq(a, b) || a == b)
            }
            _ => self.len() == other.len() && self.iter().eq(other.iter()),
        }
    }

    /// The smallest token.
    fn first(&self) -> Option<u32> {
        self.iter().next()
    }

    /// The tokens as a sorted vector.
    pub fn to_vec(&self) -> Vec<u32> {
        self.iter().collect()
    }
}

/// A lexer state whose classes were found by a full walk, kept so that later states entering
/// most first bytes the same way reuse its classes (see [`Walker::classes`]).
struct Base {
    q: u32,
    /// When it was made or last derived from ([`Walker::clock`]): the least recently used base
    /// makes way for a new one.
    used: u64,
    /// Per child of the trie's root: how a token starting there is entered ([`Walker::entries`]).
    entry: Vec<u32>,
    /// [`Walker::entry_keys`] of `entry`.
    keys: Vec<u64>,
    /// A quarter of the tokens below each child it enters, summed (see [`Walker::classes`]).
    quarter: usize,
    /// Its classes: (signature set id, tokens).
    classes: Vec<(u32, Tokens)>,
}

/// States with fewer tokens with a lexing than this are not kept as bases (a walk of theirs costs little).
pub const BASE_FROM: usize = 4096;
/// [`Walker::diff`] walks a subtree with at most this many tokens rather than comparing it
/// level by level.
const DIFF_WALK_UPTO: u32 = 32;

/// Per node of a trie: the number of tokens below it (its own and its descendants'), and its
/// height (the most bytes a token below it has past the node).
pub struct TrieIndex {
    pub subtree_len: Vec<u32>,
    pub height: Vec<u32>,
    /// Per child `i` of the root (in [`Trie::children`] order), `reach[reach_off[i] + a]` for
    /// `a` from 0 to the child's height: over the nodes `v` below it (the child included) whose
    /// reach, `v`'s depth below the child plus `v`'s height, exceeds `a`, their tokens plus two
    /// per child. Entered in two lexer states that agree for `a` bytes
    /// ([`Horizon::agreement`]), those are the nodes [`Walker::diff`] may have to visit (a step
    /// of both sides per child) and the tokens it may have to walk; the other nodes lie in
    /// subtrees it skips. A cost estimate, in tokens.
    pub reach_off: Vec<u32>,
    pub reach: Vec<u32>,
    /// Subtree walks inside lexer-state closures, shared by every grammar compiled against this
    /// trie ([`Walker::closure_walk`]).
    closures: Mutex<ClosureCache>,
    /// Kill sets by the canonical table of their inhibitor, shared by every grammar compiled
    /// against this trie ([`kill_set_shared`]).
    kills: Mutex<KillCache>,
}

/// Kill sets by their inhibitor's canonical table ([`kill_set_shared`]).
#[derive(Default)]
struct KillCache {
    sets: FastMap<Arc<[u32]>, Arc<[u32]>>,
    /// Words the tables and sets hold in all (bounded by [`KILL_CACHE_WORDS`]).
    words: usize,
    /// Kill sets taken from the cache.
    hits: usize,
}

/// Inhibitor states a kill set's canonical table may have (past it, the set is computed
/// without the cache).
const MAX_KILL_TABLE: usize = 256;
/// Words the kill cache may hold in all (a memory bound).
const KILL_CACHE_WORDS: usize = 8 << 20;
/// [`kill_set_shared`]'s table: the byte fires the inhibitor (a longer match appeared).
const KILL_FIRES: u32 = u32::MAX;
/// [`kill_set_shared`]'s table: the byte drops the inhibitor (no longer match can appear).
const KILL_DROPS: u32 = u32::MAX - 1;

/// One event of a subtree walk inside a closure ([`Walker::closure_walk`]), in the walk's
/// order: the first tokens ending in closure state `cs` (where the walk interns its
/// signature); or byte `b` leaves the closure from `cs` at `node` (into `child`), where the
/// walk goes on the general way.
#[derive(Clone, Copy)]
enum Event {
    First { cs: u32 },
    Leave { node: u32, b: u8, child: u32, cs: u32 },
}

/// A recorded subtree walk inside a closure: its events, and per closure state with tokens
/// ending there, those tokens (in walk order) and the smallest of them.
struct ClosureWalk {
    events: Vec<Event>,
    tokens: Vec<(u32, u32, Arc<[u32]>)>,
}

/// Tokens that share one signature set without being listed pair by pair: (signature set id,
/// smallest token, tokens), from a closure walk ([`Walker::closure_walk`]).
type Bulk = (u32, u32, Arc<[u32]>);

/// Closure walks by (closure id, root child), closures by their canonical table.
#[derive(Default)]
struct ClosureCache {
    ids: FastMap<Arc<[u32]>, u32>,
    tables: Vec<Arc<[u32]>>,
    /// Words the tables hold in all (bounded by [`CLOSURE_TABLE_WORDS`]).
    table_words: usize,
    walks: FastMap<(u32, u32), Arc<ClosureWalk>>,
    /// Events and tokens held in all (bounded by [`CLOSURE_EVENTS`]).
    events: usize,
}

/// Tokens below a root child from which its walk goes through the closure cache
/// ([`Walker::closure_walk`]); smaller subtrees are walked directly.
const CLOSURE_WALK_FROM: u32 = 1024;
/// Closure states a closure walk may have (a bound on the canonical table's size).
const MAX_CLOSURE: usize = 64;
/// Events and tokens the closure cache may hold in all (a memory bound; past it, walks are not kept).
const CLOSURE_EVENTS: usize = 8 << 20;
/// Table words the closure cache may hold in all (a memory bound; past it, new closures are
/// walked as before).
const CLOSURE_TABLE_WORDS: usize = 8 << 20;
/// [`Walker::closure_of`]'s table: no lexing (dead, or a state that can neither continue nor
/// accept).
const CL_DEAD: u32 = u32::MAX;
/// [`Walker::closure_of`]'s table: the byte leaves the closure (a lexeme is accepted, or the
/// lexer is back at its start).
const CL_LEAVE: u32 = u32::MAX - 1;

/// A lexer state's closure for [`Walker::closure_walk`]: its id in the shared cache, its
/// states (closure state → lexer state; 0 is the entry state) and canonical table.
struct Closure {
    id: u32,
    states: Vec<u32>,
    table: Arc<[u32]>,
}

impl TrieIndex {
    pub fn new(trie: &Trie) -> TrieIndex {
        let n = trie.child_off.len() - 1;
        let mut subtree_len = vec![0u32; n];
        let mut height = vec![0u32; n];
        // Children have larger ids than their parent: one pass from the last node up.
        for v in (0..n).rev() {
            let children = trie.children(v as u32);
            let below: u32 = children.iter().map(|&(_, c)| subtree_len[c as usize]).sum();
            subtree_len[v] = trie.tokens_at(v as u32).len() as u32 + below;
            height[v] = children.iter().map(|&(_, c)| height[c as usize] + 1).max().unwrap_or(0);
        }
        // Reach per node, below each child of the root.
        let root = trie.children(0);
        let mut top = vec![u32::MAX; n];
        let mut depth = vec![0u32; n];
        for (i, &(_, c)) in root.iter().enumerate() {
            top[c as usize] = i as u32;
        }
        let mut reach_off = Vec::with_capacity(root.len() + 1);
        reach_off.push(0u32);
        for &(_, c) in root {
            reach_off.push(reach_off.last().unwrap() + height[c as usize] + 1);
        }
        let mut reach = vec![0u32; *reach_off.last().unwrap() as usize];
        for v in 1..n {
            let i = top[v] as usize;
            for &(_, c) in trie.children(v as u32) {
                top[c as usize] = top[v];
                depth[c as usize] = depth[v] + 1;
            }
            let r = depth[v] + height[v];
            // Counted at every `a < r` (a difference array, summed below): its tokens and a
            // step of both sides per child.
            let k = (trie.tokens_at(v as u32).len() + 2 * trie.children(v as u32).len()) as u32;
            let at = &mut reach[reach_off[i] as usize];
            *at = at.wrapping_add(k);
            if r < reach_off[i + 1] - reach_off[i] {
                let at = &mut reach[(reach_off[i] + r) as usize];
                *at = at.wrapping_sub(k);
            }
        }
        for i in 0..root.len() {
            for a in reach_off[i] + 1..reach_off[i + 1] {
                reach[a as usize] = reach[a as usize].wrapping_add(reach[a as usize - 1]);
            }
        }
        TrieIndex { subtree_len, height, reach_off, reach, closures: Mutex::default(), kills: Mutex::default() }
    }

    /// Kill sets [`kill_set_shared`] took from this trie's cache.
    pub fn kill_cache_hits(&self) -> usize {
        self.kills.lock().unwrap_or_else(|p| p.into_inner()).hits
    }

    /// The cost of a diff below the root's `i`-th child entered in states that agree for `a`
    /// bytes (see [`TrieIndex::reach`]).
    pub fn reaching(&self, i: usize, a: u32) -> u32 {
        let (lo, hi) = (self.reach_off[i], self.reach_off[i + 1]);
        if a >= hi - lo {
            0
        } else {
            self.reach[(lo + a) as usize]
        }
    }
}

/// Bases a walker keeps (a memory bound: each holds its classes' bitmaps).
const MAX_BASES: usize = 64;
/// [`Walker::entries`]: no lexing of the byte from the state.
const ENTRY_DEAD: u32 = u32::MAX - 1;
/// [`Walker::entries`]: the byte does something other than entering one fresh branch.
const ENTRY_WALK: u32 = u32::MAX;

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
    /// inside the token's first lexeme, nothing emitted, no inhibitor): `(child, entry key)` →
    /// range of `root_results`. They depend on that pair alone (the key is the lexer state, or
    /// its block of bounded-horizon equivalence at the child's height, [`Walker::entry_key`]),
    /// and many lexer states share them (e.g. every state inside a JSON string enters most
    /// first bytes into the same string-interior state), so each is walked once per grammar
    /// instead of once per state.
    root_memo: FastMap<(u32, u64), RootResult>,
    /// Classes and UNDECIDED tokens of lexer states walked in full or derived, by their key of
    /// bounded-horizon equivalence ([`Walker::block`]): an equivalent state has the same.
    state_memo: FastMap<u64, StateClasses>,
    /// Token ids and bitmap words [`Walker::state_memo`] holds (bounded by [`STATE_MEMO_WORDS`]).
    state_memo_words: usize,
    /// (token, signature set) pairs and bulk token lists of the memoized subtrees.
    root_results: Vec<(u32, u32)>,
    root_bulk: Vec<Bulk>,
    /// Lexer states whose classes other states derive theirs from.
    bases: Vec<Base>,
    /// Token counts below the trie's nodes.
    index: Arc<TrieIndex>,
    /// Bounded-horizon equivalence of lexer states, up to the trie's height.
    horizon: Horizon,
    /// States with at least this many tokens with a lexing become bases.
    base_from: usize,
    /// Scratch: a token bitmap, all zero between uses.
    gone: Vec<u64>,
    /// Scratch for [`Walker::group`]: the class of each signature set id (all `u32::MAX` between
    /// uses).
    class_of: Vec<u32>,
    /// Derive from a base whatever it costs (tests).
    always_derive: bool,
    /// States whose classes were derived from a base.
    pub derived: usize,
    /// Ticks at each base made or used.
    clock: u64,
    /// States whose classes are those of an equivalent state ([`Walker::state_memo`]).
    pub equivalent: usize,
    /// Words of a token bitmap.
    words: usize,
    /// Per child of the trie's root: the tokens below it.
    root_len: Arc<[usize]>,
    /// Per lexer state `q`: `(prefix, id)`, the id of the signature set `{(prefix, class(q))}`
    /// last asked for ([`Walker::walk_single`] asks for one per trie node with tokens, mostly
    /// with one prefix).
    sig_cache: Vec<(u32, u32)>,
    /// Per entry lexer state: its closure, or `None` if it has none worth sharing.
    closure_memo: FastMap<u32, Option<Arc<Closure>>>,
    /// Subtree walks replayed from the closure cache rather than recorded.
    pub closure_hits: usize,
    /// Walk subtrees through closures ([`Walker::closure_walk`]); off: always walk them.
    closure_walks: bool,
}

/// A lexer state's classes (signature set id, tokens) and UNDECIDED tokens.
type StateClasses = (Vec<(u32, Tokens)>, Vec<u32>);

/// Token ids and bitmap words [`Walker::state_memo`] may hold (a memory bound).
const STATE_MEMO_WORDS: usize = 16 << 20;

/// Pairs [`Walker::root_memo`] may hold in all (a memory bound; past it subtrees are walked).
const ROOT_MEMO_PAIRS: usize = 24 << 20;

/// Per-walk scratch: the branch arena, the (token, signature set) pairs found and the token
/// lists found in bulk, undecided tokens.
#[derive(Default)]
struct Scratch {
    arena: Vec<Branch>,
    sigs: Vec<Sig>,
    per_token: Vec<(u32, u32)>,
    bulk: Vec<Bulk>,
    undecided: Vec<u32>,
}

/// A memoized subtree below a root child: ranges of [`Walker::root_results`] and
/// [`Walker::root_bulk`].
#[derive(Clone, Copy)]
struct RootResult {
    pairs: (u32, u32),
    bulk: (u32, u32),
}

impl<'a> Walker<'a> {
    pub fn new(lex: &'a LexerTables, trie: &'a Trie) -> Walker<'a> {
        Walker::with_index(lex, trie, Arc::new(TrieIndex::new(trie)))
    }

    /// [`Walker::new`] with `trie`'s index already built (shared by the grammars compiled
    /// against one vocabulary).
    pub fn with_index(lex: &'a LexerTables, trie: &'a Trie, index: Arc<TrieIndex>) -> Walker<'a> {
        let root_len = trie.children(0).iter().map(|&(_, c)| index.subtree_len[c as usize] as usize).collect();
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
            state_memo: FastMap::default(),
            state_memo_words: 0,
            root_results: Vec::new(),
            root_bulk: Vec::new(),
            bases: Vec::new(),
            horizon: Horizon::new(lex, index.height[0]),
            index,
            base_from: BASE_FROM,
            always_derive: false,
            gone: Vec::new(),
            class_of: Vec::new(),
            derived: 0,
            clock: 0,
            equivalent: 0,
            words: (trie.tokens.iter().max().map_or(0, |&t| t as usize + 1)).div_ceil(64),
            root_len,
            sig_cache: vec![(u32::MAX, 0); lex.num_states as usize],
            closure_memo: FastMap::default(),
            closure_hits: 0,
            closure_walks: true,
        }
    }

    /// Keep states with at least `from` tokens with a lexing as bases (default [`BASE_FROM`];
    /// `usize::MAX`: every state walked in full), and with `always`, derive every state from
    /// its cheapest base whatever it costs. For tests of the derivation from bases.
    pub fn with_bases(mut self, from: usize, always: bool) -> Self {
        self.base_from = from;
        self.always_derive = always;
        self
    }

    /// Walk every subtree in full rather than through the closure cache (tests).
    pub fn without_closure_walks(mut self) -> Self {
        self.closure_walks = false;
        self
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

    /// The trie of step sequences so far: node `n` is `(parent, step)`; nodes are only ever
    /// appended.
    pub fn nodes(&self) -> &[(u32, Step)] {
        &self.prefixes
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
        if node != 0 && len == 1 && sc.arena[off].inh == 0 && sc.arena[off].q != self.lex.start {
            let br = sc.arena[off];
            return self.walk_single(node, br, sc, terms);
        }
        if node != 0 && !self.trie.tokens_at(node).is_empty() {
            let id = self.sig_set(sc, off, len, terms);
            for &tok in self.trie.tokens_at(node) {
                sc.per_token.push((tok, id));
            }
        }
        for &(b, child) in self.trie.children(node) {
            self.walk_child(node, b, child, off, len, sc, terms);
        }
    }

    /// [`Self::walk`] with one branch, without inhibitors and not at the lexer's start (most of
    /// the trie): bytes that only move the lexer on are followed in place, without the branch
    /// arena; any other byte goes the general way.
    fn walk_single(&mut self, node: u32, br: Branch, sc: &mut Scratch, terms: &mut SetPool) {
        let lex = self.lex;
        let trie = self.trie;
        if !trie.tokens_at(node).is_empty() {
            let id = match self.sig_cache[br.q as usize] {
                (p, id) if p == br.prefix => id,
                _ => {
                    let class = self.class(br.q, terms);
                    let id = self.single_sig_id((br.prefix, class));
                    self.sig_cache[br.q as usize] = (br.prefix, id);
                    id
                }
            };
            sc.per_token.extend(trie.tokens_at(node).iter().map(|&tok| (tok, id)));
        }
        for &(b, child) in trie.children(node) {
            let q2 = lex.step(br.q, b);
            if q2 == DEAD {
                continue;
            }
            if lex.accepts(q2).is_empty() {
                if lex.can_continue(q2) {
                    if q2 != lex.start {
                        self.walk_single(child, Branch { q: q2, inh: 0, prefix: br.prefix }, sc, terms);
                    } else {
                        self.leave(node, b, child, br, sc, terms);
                    }
                }
                continue;
            }
            self.leave(node, b, child, br, sc, terms);
        }
    }

    /// [`Self::walk_single`] below `child` (of `node`, by byte `b`) where the byte does more
    /// than move the lexer on: a lexeme is accepted, or the lexer is back at its start.
    fn leave(&mut self, node: u32, b: u8, child: u32, br: Branch, sc: &mut Scratch, terms: &mut SetPool) {
        let q2 = self.lex.step(br.q, b);
        if self.lex.accepts(q2).is_empty() {
            sc.arena.push(Branch { q: q2, inh: 0, prefix: br.prefix });
            let at = sc.arena.len() - 1;
            self.walk(child, at, 1, sc, terms);
            sc.arena.truncate(at);
            return;
        }
        sc.arena.push(br);
        let at = sc.arena.len() - 1;
        self.walk_child(node, b, child, at, 1, sc, terms);
        sc.arena.truncate(at);
    }

    /// The closure of lexer state `e` (not the start): the states reachable from it by bytes
    /// that only move the lexer on (no lexeme accepted, not back at the start), numbered in
    /// breadth-first order from `e` over bytes in order, and per (closure state, byte) the
    /// closure state reached, [`CL_DEAD`] or [`CL_LEAVE`]. The table is what
    /// [`Self::walk_single`] reads while it stays in the closure, so two states with equal
    /// tables (in any grammar) walk a subtree alike up to where they leave it. `None` past
    /// [`MAX_CLOSURE`] states.
    fn closure_of(&mut self, e: u32) -> Option<Arc<Closure>> {
        if let Some(c) = self.closure_memo.get(&e) {
            return c.clone();
        }
        let lex = self.lex;
        let mut states = vec![e];
        let mut canon: FastMap<u32, u32> = FastMap::from_iter([(e, 0)]);
        let mut table = Vec::new();
        let mut i = 0;
        let mut ok = true;
        while i < states.len() {
            let q = states[i];
            for b in 0..=255u8 {
                let q2 = lex.step(q, b);
                let code = if q2 == DEAD {
                    CL_DEAD
                } else if lex.accepts(q2).is_empty() {
                    if !lex.can_continue(q2) {
                        CL_DEAD
                    } else if q2 == lex.start {
                        CL_LEAVE
                    } else {
                        let next = states.len() as u32;
                        *canon.entry(q2).or_insert_with(|| {
                            states.push(q2);
                            next
                        })
                    }
                } else {
                    CL_LEAVE
                };
                table.push(code);
            }
            if states.len() > MAX_CLOSURE {
                ok = false;
                break;
            }
            i += 1;
        }
        let closure = ok
            .then(|| {
                // One copy of each table per process, shared by the states that have it.
                let mut cache = self.index.closures.lock().unwrap_or_else(|p| p.into_inner());
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
            })
            .flatten();
        self.closure_memo.insert(e, closure.clone());
        closure
    }

    /// [`Self::walk_single`] below the root's `child` entered at lexer state `e` with one fresh
    /// branch, from the cached events of an earlier walk of `child` in a closure with the same
    /// table (this grammar's or another's), recorded on a miss: tokens that stay in the
    /// closure take the signature of the lexer state they end in, and where a byte leaves it
    /// the walk goes on the general way, in the same order as the walk itself (so every id
    /// is interned as it would be). False if `e` has no closure.
    fn closure_walk(&mut self, child: u32, e: u32, sc: &mut Scratch, terms: &mut SetPool) -> bool {
        let Some(cl) = self.closure_of(e) else { return false };
        let cached = {
            let cache = self.index.closures.lock().unwrap_or_else(|p| p.into_inner());
            cache.walks.get(&(cl.id, child)).cloned()
        };
        let walk = match cached {
            Some(w) => {
                self.closure_hits += 1;
                w
            }
            None => {
                let mut events = Vec::new();
                let mut by_cs: Vec<Vec<u32>> = vec![Vec::new(); cl.states.len()];
                self.record(child, 0, &cl.table, &mut events, &mut by_cs);
                let tokens = by_cs
                    .into_iter()
                    .enumerate()
                    .filter(|(_, t)| !t.is_empty())
                    .map(|(cs, t)| (cs as u32, t.iter().copied().min().unwrap_or(0), Arc::<[u32]>::from(t)))
                    .collect::<Vec<_>>();
                let size = events.len() + tokens.iter().map(|t| t.2.len()).sum::<usize>();
                let walk = Arc::new(ClosureWalk { events, tokens });
                let mut cache = self.index.closures.lock().unwrap_or_else(|p| p.into_inner());
                if cache.events + size <= CLOSURE_EVENTS {
                    cache.events += size;
                    cache.walks.insert((cl.id, child), Arc::clone(&walk));
                }
                walk
            }
        };
        let mut sig = vec![u32::MAX; cl.states.len()];
        for &event in &walk.events {
            match event {
                Event::First { cs } => {
                    let q = cl.states[cs as usize];
                    let class = self.class(q, terms);
                    sig[cs as usize] = self.single_sig_id((0, class));
                }
                Event::Leave { node, b, child, cs } => {
                    let br = Branch { q: cl.states[cs as usize], inh: 0, prefix: 0 };
                    self.leave(node, b, child, br, sc, terms);
                }
            }
        }
        for (cs, min, tokens) in &walk.tokens {
            sc.bulk.push((sig[*cs as usize], *min, Arc::clone(tokens)));
        }
        true
    }

    /// The events of a walk below `node` at closure state `cs`, and its tokens by the closure
    /// state they end in (see [`Self::closure_walk`]).
    fn record(&self, node: u32, cs: u32, table: &[u32], out: &mut Vec<Event>, by_cs: &mut [Vec<u32>]) {
        let at = self.trie.tokens_at(node);
        if !at.is_empty() {
            if by_cs[cs as usize].is_empty() {
                out.push(Event::First { cs });
            }
            by_cs[cs as usize].extend_from_slice(at);
        }
        for &(b, child) in self.trie.children(node) {
            match table[cs as usize * 256 + b as usize] {
                CL_DEAD => {}
                CL_LEAVE => out.push(Event::Leave { node, b, child, cs }),
                next => self.record(child, next, table, out, by_cs),
            }
        }
    }

    /// The id of the one-lexing signature set `{sig}`.
    fn single_sig_id(&mut self, sig: Sig) -> u32 {
        if let Some(&id) = self.single_sig.get(&sig) {
            return id;
        }
        let id = self.intern_sigs(vec![sig]);
        self.single_sig.insert(sig, id);
        id
    }

    /// [`Self::walk`] below `child`, the child of `node` by byte `b`.
    #[allow(clippy::too_many_arguments)]
    fn walk_child(
        &mut self,
        node: u32,
        b: u8,
        child: u32,
        off: usize,
        len: usize,
        sc: &mut Scratch,
        terms: &mut SetPool,
    ) {
        let (start, n) = self.step_branches(off, len, b, sc, terms);
        if n > 0 {
            self.walk_region(node, child, start, n, sc, terms);
        }
        sc.arena.truncate(start);
    }

    /// The branches after byte `b` from `arena[off..off + len]`, appended to the arena sorted and
    /// distinct: their (start, count).
    fn step_branches(
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
        }
        (start, n)
    }

    /// Too many lexings (same-length forks or every-segmentation grammars) or too long ones: the
    /// tokens below are decided at run time by committing them.
    fn over_limits(&self, sc: &Scratch, start: usize, n: usize) -> bool {
        n > MAX_LEXINGS || sc.arena[start..start + n].iter().any(|b| self.depth[b.prefix as usize] > MAX_STEPS)
    }

    /// Walk the trie below `child` (a child of `node`) with the (non-empty) branches
    /// `arena[start..start + n]`.
    fn walk_region(&mut self, node: u32, child: u32, start: usize, n: usize, sc: &mut Scratch, terms: &mut SetPool) {
        if self.over_limits(sc, start, n) {
            self.trie.subtree_tokens(child, &mut sc.undecided);
        } else if node == 0 && n == 1 && sc.arena[start].inh == 0 && sc.arena[start].prefix == 0 {
            let key = (child, self.entry_key(sc.arena[start].q, child));
            if let Some(&RootResult { pairs: (off, len), bulk: (boff, blen) }) = self.root_memo.get(&key) {
                sc.per_token.extend_from_slice(&self.root_results[off as usize..(off + len) as usize]);
                sc.bulk.extend_from_slice(&self.root_bulk[boff as usize..(boff + blen) as usize]);
            } else {
                let (before, undecided_before) = (sc.per_token.len(), sc.undecided.len());
                let bulk_before = sc.bulk.len();
                let e = sc.arena[start].q;
                // (Through a closure only below a large subtree: the closure's table costs more
                // than a small walk, and what pays is reusing the walks of large subtrees.)
                let large = self.index.subtree_len[child as usize] >= CLOSURE_WALK_FROM;
                if e == self.lex.start || !large || !self.closure_walks || !self.closure_walk(child, e, sc, terms) {
                    self.walk(child, start, n, sc, terms);
                }
                let found = &sc.per_token[before..];
                let found_bulk = &sc.bulk[bulk_before..];
                // Subtrees with UNDECIDED tokens are not memoized (rare; walked again).
                if sc.undecided.len() == undecided_before && self.root_results.len() + found.len() <= ROOT_MEMO_PAIRS {
                    let pairs = (self.root_results.len() as u32, found.len() as u32);
                    let bulk = (self.root_bulk.len() as u32, found_bulk.len() as u32);
                    self.root_results.extend_from_slice(found);
                    self.root_bulk.extend_from_slice(found_bulk);
                    self.root_memo.insert(key, RootResult { pairs, bulk });
                }
            }
        } else {
            self.walk(child, start, n, sc, terms);
        }
    }

    /// Below `node`, where `q`'s branches are `arena[qo..qo + ql]` and the base's `arena[po..po +
    /// pl]`: every token whose lexings from `q` may differ from the base's is pushed to `removed`
    /// and, when it has lexings, walked from `q` into `sc.per_token` (or `sc.undecided`). Where a
    /// byte leads both to the same branches, everything below agrees and is skipped; where the
    /// subtree is large, the two are compared again one level down.
    #[allow(clippy::too_many_arguments)]
    fn diff(
        &mut self,
        node: u32,
        q: (usize, usize),
        p: (usize, usize),
        sc: &mut Scratch,
        removed: &mut Vec<u32>,
        terms: &mut SetPool,
    ) {
        for &(b, child) in self.trie.children(node) {
            self.diff_child(node, b, child, q, p, sc, removed, terms);
        }
    }

    /// [`Self::diff`] below `child`, the child of `node` by byte `b`.
    #[allow(clippy::too_many_arguments)]
    fn diff_child(
        &mut self,
        node: u32,
        b: u8,
        child: u32,
        (qo, ql): (usize, usize),
        (po, pl): (usize, usize),
        sc: &mut Scratch,
        removed: &mut Vec<u32>,
        terms: &mut SetPool,
    ) {
        let vi = Arc::clone(&self.index);
        let (qs, qn) = self.step_branches(qo, ql, b, sc, terms);
        let (ps, pn) = self.step_branches(po, pl, b, sc, terms);
        if sc.arena[qs..qs + qn] == sc.arena[ps..ps + pn]
            || self.equivalent_branches(sc, (qs, qn), (ps, pn), vi.height[child as usize])
        {
            sc.arena.truncate(qs);
            return;
        }
        if qn == 0 {
            self.trie.subtree_tokens(child, removed);
        } else if pn == 0 || vi.subtree_len[child as usize] <= DIFF_WALK_UPTO || self.over_limits(sc, qs, qn) {
            // (Without branches, the base has no tokens below to remove.)
            if pn > 0 {
                self.trie.subtree_tokens(child, removed);
            }
            // The walk reads branches at the arena's end: move q's there.
            let (ws, _) = (sc.arena.len(), ());
            for i in qs..qs + qn {
                let br = sc.arena[i];
                sc.arena.push(br);
            }
            self.walk_region(node, child, ws, qn, sc, terms);
        } else {
            let at = self.trie.tokens_at(child);
            if !at.is_empty() {
                removed.extend_from_slice(at);
                let id = self.sig_set(sc, qs, qn, terms);
                sc.per_token.extend(at.iter().map(|&t| (t, id)));
            }
            self.diff(child, (qs, qn), (ps, pn), sc, removed, terms);
        }
        sc.arena.truncate(qs);
    }

    /// The token classes at lexer state `q`: every token with at least one lexing, grouped by its
    /// set of signatures, deterministic order (by first token); and the tokens left undecided
    /// (more than [`MAX_LEXINGS`] lexings of a prefix, or one longer than [`MAX_STEPS`] steps),
    /// sorted.
    ///
    /// A token whose first byte takes `q` into one fresh branch (nothing emitted, no inhibitor)
    /// at lexer state `q'` has the lexings it has from any other state that does the same with
    /// that byte. So when an earlier state (a *base*, whose classes were found by a full walk)
    /// enters most first bytes as `q` does, `q`'s classes are the base's without the tokens of
    /// the other first bytes, plus those tokens walked from `q`. Every state inside a JSON key
    /// literal differs from the string-interior state in a byte or two: its classes cost a
    /// bitmap copy and a small walk instead of a walk of the whole vocabulary.
    pub fn classes(&mut self, q: u32, terms: &mut SetPool) -> (Vec<TokenClass>, Vec<u32>) {
        // A state equivalent to one walked in full or derived, for every token it can lex
        // (`Walker::block`): that state's classes, by the argument of `equivalent_branches` at
        // the root.
        let block = self.block(q);
        if let Some((classes, undecided)) = block.and_then(|b| self.state_memo.get(&b)) {
            self.equivalent += 1;
            return (self.token_classes(classes), undecided.clone());
        }
        let entry = self.entries(q, terms);
        let keys = self.entry_keys(&entry);
        let root_len = Arc::clone(&self.root_len);
        // The cheapest base: fewest tokens to walk (below children `q` enters differently) and
        // to remove (the base's tokens there); worth it when well below a walk of `q`'s tokens.
        let live: usize = (0..entry.len()).filter(|&i| entry[i] != ENTRY_DEAD).map(|i| root_len[i]).sum();
        // Cost per base: the children `q` enters differently, `q`'s tokens there plus a quarter
        // of the base's. Children dead from `q` cost the base's quarter unless dead from it too
        // (its `quarter` less what `q`'s live children account for): only `q`'s live children
        // are visited, and a base stops being counted once it costs more than the best.
        // Where both enter a child in one fresh branch, at states that agree for `a` bytes, only
        // the tokens reaching past `a` are counted ([`TrieIndex::reach`]): the states of a
        // counter (`maxLength`, `{m,n}`) near its bound differ only for the longer tokens.
        let q_live: Vec<usize> = (0..entry.len()).filter(|&i| entry[i] != ENTRY_DEAD).collect();
        let mut best: Option<(usize, usize)> = None;
        let mut last_pair = (u32::MAX, u32::MAX, None);
        for (bi, base) in self.bases.iter().enumerate() {
            let mut cost = base.quarter;
            for &i in &q_live {
                let n = root_len[i];
                let base_live = base.entry[i] != ENTRY_DEAD;
                cost -= base_live as usize * (n / 4);
                let (x, y) = (entry[i], base.entry[i]);
                if !base_live {
                    cost += n;
                } else if x == ENTRY_WALK || y == ENTRY_WALK {
                    cost += n + n / 4;
                } else if keys[i] != base.keys[i] {
                    if (x, y) != (last_pair.0, last_pair.1) {
                        last_pair = (x, y, self.horizon.agreement(x, y, self.index.height[0]));
                    }
                    let w = last_pair.2.map_or(n, |a| self.index.reaching(i, a) as usize);
                    cost += w + w / 4;
                }
                if best.is_some_and(|(_, c)| cost >= c + base.quarter) {
                    break;
                }
            }
            if best.is_none_or(|(_, c)| cost < c) {
                best = Some((bi, cost));
            }
        }
        if let Some((bi, _)) = best.filter(|&(_, cost)| self.always_derive || cost * 2 <= live) {
            self.derived += 1;
            self.clock += 1;
            self.bases[bi].used = self.clock;
            let (classes, undecided) = self.classes_from_base(q, bi, (&entry, &keys), terms);
            if let Some(b) = block {
                self.memoize(b, &classes, &undecided);
            }
            return (self.token_classes(&classes), undecided);
        }
        let mut sc = Scratch::default();
        sc.arena.push(Branch { q, inh: 0, prefix: 0 });
        // The root's children, less those `entries` found dead.
        let root = self.trie.children(0);
        for (i, &(b, child)) in root.iter().enumerate() {
            if entry[i] != ENTRY_DEAD {
                self.walk_child(0, b, child, 0, 1, &mut sc, terms);
            }
        }
        let classes = self.group(&sc.per_token, &sc.bulk);
        sc.undecided.sort_unstable();
        sc.undecided.dedup();
        if let Some(b) = block {
            self.memoize(b, &classes, &sc.undecided);
        }
        let out = self.token_classes(&classes);
        if sc.undecided.is_empty() && live >= self.base_from {
            let base_classes = classes;
            self.clock += 1;
            let quarter = (0..entry.len()).filter(|&i| entry[i] != ENTRY_DEAD).map(|i| root_len[i] / 4).sum();
            let base = Base { q, used: self.clock, entry, keys, quarter, classes: base_classes };
            if self.bases.len() < MAX_BASES {
                self.bases.push(base);
            } else if let Some(lru) = self.bases.iter_mut().min_by_key(|b| b.used) {
                // Lexer states come roughly in the order of the terminals they are inside: the
                // bases of earlier terminals give way to those of the current one.
                *lru = base;
            }
        }
        (out, sc.undecided)
    }

    /// `q`'s block of bounded-horizon equivalence at the height `h` of the tokens it can lex,
    /// with `h`, when no inhibitor is created within `h` bytes of `q`: states with the same
    /// key have the same classes and UNDECIDED tokens (by the argument of
    /// [`Self::equivalent_branches`] at the root). Outside `q0` a token has a lexing only if
    /// the DFA steps on its first byte (a lexeme is emitted on entering an accepting state, not
    /// on leaving it), so `h` is one more than the highest subtree below such a byte (a state
    /// inside a multi-byte UTF-8 character lexes only the short tokens that start with a
    /// continuation byte); at `q0`, the trie's height. Equivalent states compute the same `h`
    /// (`≡_1` tells which bytes are dead).
    pub fn block(&self, q: u32) -> Option<u64> {
        let lex = self.lex;
        let h = if q != lex.start {
            let children = self.trie.children(0);
            children
                .iter()
                .filter(|&&(b, _)| lex.step(q, b) != DEAD)
                .map(|&(_, c)| self.index.height[c as usize] + 1)
                .max()
                .unwrap_or(0)
        } else {
            self.index.height[0]
        };
        let block = self.horizon.block_at(q, h).filter(|_| self.horizon.inhibitor_free(q, h))?;
        Some((h as u64) << 32 | block as u64)
    }

    /// Classes as (signature set id, tokens) → [`TokenClass`]es.
    fn token_classes(&self, classes: &[(u32, Tokens)]) -> Vec<TokenClass> {
        classes
            .iter()
            .map(|(id, tokens)| TokenClass { sigs: self.sig_sets[*id as usize].clone(), tokens: tokens.clone() })
            .collect()
    }

    /// Keep a state's classes and UNDECIDED tokens for the states of its block (while
    /// [`STATE_MEMO_WORDS`] allows).
    fn memoize(&mut self, block: u64, classes: &[(u32, Tokens)], undecided: &[u32]) {
        let words: usize = classes
            .iter()
            .map(|(_, t)| match t {
                Tokens::List(l) => l.len(),
                Tokens::Bits { bits, .. } => 2 * bits.len(),
            })
            .sum::<usize>()
            + undecided.len();
        if self.state_memo_words + words <= STATE_MEMO_WORDS {
            self.state_memo_words += words;
            self.state_memo.insert(block, (classes.to_vec(), undecided.to_vec()));
        }
    }

    /// Per child of the trie's root, how `q` enters it: [`ENTRY_DEAD`] (no lexing), the lexer
    /// state of the one fresh branch, or [`ENTRY_WALK`] (anything else).
    fn entries(&mut self, q: u32, terms: &mut SetPool) -> Vec<u32> {
        let lex = self.lex;
        let mut out = Vec::new();
        let root = self.trie.children(0);
        let mut entry = Vec::with_capacity(root.len());
        for &(b, _) in root {
            // `advance`'s fast path, without the branch list.
            if q != lex.start {
                let q2 = lex.step(q, b);
                if q2 == DEAD {
                    entry.push(ENTRY_DEAD);
                    continue;
                }
                if lex.accepts(q2).is_empty() {
                    entry.push(if lex.can_continue(q2) { q2 } else { ENTRY_DEAD });
                    continue;
                }
            }
            out.clear();
            self.advance(Branch { q, inh: 0, prefix: 0 }, b, terms, &mut out);
            out.sort_unstable();
            out.dedup();
            entry.push(match out.as_slice() {
                [] => ENTRY_DEAD,
                [br] if br.inh == 0 && br.prefix == 0 => br.q,
                _ => ENTRY_WALK,
            });
        }
        entry
    }

    /// Per child of the trie's root, what decides the tokens below it given `entry`: equal keys,
    /// equal lexings. A fresh branch at a lexer state from which no inhibitor is created within
    /// the subtree's height is keyed by its block of bounded-horizon equivalence at that height
    /// (see [`Self::equivalent_branches`]); any other entry by itself.
    fn entry_keys(&self, entry: &[u32]) -> Vec<u64> {
        let root = self.trie.children(0);
        entry.iter().zip(root).map(|(&e, &(_, child))| self.entry_key(e, child)).collect()
    }

    /// The key of entering the trie's node `child` (of height `h`) with the one fresh branch
    /// `(e, ∅, ε)`: `e`'s block of `≡_h` when no inhibitor is created within `h` bytes of `e`
    /// (equal keys, equal lexings below, by the argument of [`Self::equivalent_branches`] with
    /// nothing else in the lists), else `e` itself. [`ENTRY_DEAD`] and [`ENTRY_WALK`] are
    /// keyed as themselves.
    fn entry_key(&self, e: u32, child: u32) -> u64 {
        let h = self.index.height[child as usize];
        match e {
            ENTRY_DEAD | ENTRY_WALK => e as u64,
            _ => match self.horizon.block_at(e, h).filter(|_| self.horizon.inhibitor_free(e, h)) {
                Some(block) => 1 << 32 | block as u64,
                None => 2 << 32 | e as u64,
            },
        }
    }

    /// Do the branches `arena[qs..qs + qn]` (of a state being derived) and `arena[ps..ps + pn]`
    /// (of its base, at the same trie node) give every token of a subtree of height `h` the
    /// same lexings? Besides when the lists are equal, when they differ in one branch each,
    /// `(x, ∅, p)` against `(y, ∅, p)`, with `x ≡_h y` ([`Horizon`]) and no inhibitor created
    /// within `h` bytes of `x`:
    /// - below, the walk reads at the states `x` and `y` lead to only what `≡_h` compares, so
    ///   the two take the same steps and end in states of the same lookahead class on every
    ///   token; what they emit restarts at `q0` with no inhibitor, identically on both sides;
    /// - so the branch lists below stay equal but for the one branch still in its first
    ///   lexeme. No other branch of the list has a step sequence that is `p` or leads to it
    ///   (checked), so none can ever meet that branch (same state, inhibitors and steps) on one
    ///   side and be merged with it, but not on the other: the lists below have the same
    ///   length on both sides, and neither reaches the limit of [`MAX_LEXINGS`] (and leaves
    ///   tokens UNDECIDED) where the other does not. At the root (one branch `(q, ∅, ε)`, as
    ///   [`Walker::state_memo`] and [`Walker::root_memo`] compare) there is no other branch.
    fn equivalent_branches(&self, sc: &Scratch, (qs, qn): (usize, usize), (ps, pn): (usize, usize), h: u32) -> bool {
        if qn != pn || qn == 0 {
            return false;
        }
        let (a, b) = (&sc.arena[qs..qs + qn], &sc.arena[ps..ps + pn]);
        let (mut i, mut j) = (0, 0);
        let (mut only_a, mut only_b) = (None, None);
        while i < a.len() || j < b.len() {
            if i < a.len() && j < b.len() && a[i] == b[j] {
                i += 1;
                j += 1;
            } else if j == b.len() || (i < a.len() && a[i] < b[j]) {
                if only_a.replace(a[i]).is_some() {
                    return false;
                }
                i += 1;
            } else {
                if only_b.replace(b[j]).is_some() {
                    return false;
                }
                j += 1;
            }
        }
        match (only_a, only_b) {
            (Some(x), Some(y)) => {
                x.inh == 0
                    && y.inh == 0
                    && x.prefix == y.prefix
                    && self.horizon.inhibitor_free(x.q, h)
                    && self.horizon.equivalent(x.q, y.q, h)
                    && !a.iter().any(|w| *w != x && self.is_prefix_of(w.prefix, x.prefix))
            }
            _ => false,
        }
    }

    /// Is step sequence `p` an ancestor of `n`, or `n` itself, in the trie of step sequences?
    fn is_prefix_of(&self, p: u32, mut n: u32) -> bool {
        let d = self.depth[p as usize];
        if d > self.depth[n as usize] {
            return false;
        }
        while self.depth[n as usize] > d {
            n = self.prefixes[n as usize].0;
        }
        n == p
    }

    /// [`Self::classes`] of `q` from base `bi`: the base's classes without the tokens whose
    /// lexings may differ ([`Self::diff`]), plus those tokens walked from `q`.
    fn classes_from_base(
        &mut self,
        q: u32,
        bi: usize,
        (entry, keys): (&[u32], &[u64]),
        terms: &mut SetPool,
    ) -> StateClasses {
        let mut sc = Scratch::default();
        sc.arena.push(Branch { q, inh: 0, prefix: 0 });
        sc.arena.push(Branch { q: self.bases[bi].q, inh: 0, prefix: 0 });
        let mut removed = Vec::new();
        // At the root, children entered alike (equal keys, [`Self::entry_keys`]) have the same
        // lexings below, as the diff would find: skipped without stepping.
        let root = self.trie.children(0);
        for (i, &(b, child)) in root.iter().enumerate() {
            let base = &self.bases[bi];
            if entry[i] != ENTRY_WALK && base.entry[i] != ENTRY_WALK && keys[i] == base.keys[i] {
                continue;
            }
            self.diff_child(0, b, child, (0, 1), (1, 1), &mut sc, &mut removed, terms);
        }
        let walked = self.group(&sc.per_token, &sc.bulk);
        if removed.is_empty() && walked.is_empty() && sc.undecided.is_empty() {
            // Every token as at the base (e.g. counter positions far from their bound): its
            // classes, bitmaps shared.
            return (self.bases[bi].classes.clone(), Vec::new());
        }
        // The base's classes, less the removed tokens; then the walked tokens merged into the
        // class of their signature set.
        let mut gone = std::mem::take(&mut self.gone);
        gone.resize(self.words, 0);
        for &t in &removed {
            gone[(t / 64) as usize] |= 1 << (t % 64);
        }
        let mut by_sig: FastMap<u32, Tokens> = FastMap::default();
        let mut order: Vec<u32> = Vec::new();
        for (id, toks) in &self.bases[bi].classes {
            let kept = match toks {
                Tokens::List(l) => {
                    let is_gone = |t: u32| gone[(t / 64) as usize] >> (t % 64) & 1 == 1;
                    if l.iter().any(|&t| is_gone(t)) {
                        Tokens::List(l.iter().copied().filter(|&t| !is_gone(t)).collect::<Vec<_>>().into())
                    } else {
                        // Untouched: the base's list, shared.
                        Tokens::List(Arc::clone(l))
                    }
                }
                Tokens::Bits { bits, len } => {
                    // (Past a bitmap's words, testing each removed token costs more than a copy.)
                    let touched = removed.len() > self.words
                        || removed.iter().any(|&t| bits[(t / 64) as usize] >> (t % 64) & 1 == 1);
                    if touched {
                        let bits: Vec<u64> = bits.iter().zip(&gone).map(|(b, g)| b & !g).collect();
                        let len = bits.iter().map(|w| w.count_ones() as usize).sum();
                        Tokens::Bits { bits: bits.into(), len }
                    } else {
                        // Untouched: the base's bitmap, shared.
                        Tokens::Bits { bits: Arc::clone(bits), len: *len }
                    }
                }
            };
            if !kept.is_empty() {
                by_sig.insert(*id, kept);
                order.push(*id);
            }
        }
        for (id, toks) in walked {
            match by_sig.get_mut(&id) {
                None => {
                    by_sig.insert(id, toks);
                    order.push(id);
                }
                Some(Tokens::Bits { bits, len }) => {
                    let bits = Arc::make_mut(bits);
                    match &toks {
                        Tokens::Bits { bits: more, len: more_len } => {
                            bits.iter_mut().zip(more.iter()).for_each(|(a, b)| *a |= b);
                            *len += more_len;
                        }
                        Tokens::List(l) => {
                            for &t in l.iter() {
                                bits[(t / 64) as usize] |= 1 << (t % 64);
                            }
                            *len += l.len();
                        }
                    }
                }
                Some(Tokens::List(l)) => {
                    let mut merged: Vec<u32> = l.iter().copied().chain(toks.iter()).collect();
                    merged.sort_unstable();
                    by_sig.insert(id, Tokens::from_sorted(merged, self.words));
                }
            }
        }
        for &t in &removed {
            gone[(t / 64) as usize] = 0;
        }
        self.gone = gone;
        let mut classes: Vec<(u32, (u32, Tokens))> = order
            .into_iter()
            .map(|id| {
                let tokens = by_sig.remove(&id).unwrap_or_else(|| Tokens::List(Vec::new().into()));
                (tokens.first().unwrap_or(u32::MAX), (id, tokens))
            })
            .collect();
        classes.sort_unstable_by_key(|c| c.0);
        sc.undecided.sort_unstable();
        sc.undecided.dedup();
        (classes.into_iter().map(|c| c.1).collect(), sc.undecided)
    }

    /// (token, signature set) pairs and bulk token lists grouped by signature set: (set,
    /// tokens), in order of their first token, each class a list or (past [`BITMAP_FROM`]
    /// tokens) a bitmap ([`Tokens::from_sorted`]'s choice). Every token is in one pair or list.
    /// Two passes: the size and first token of each class, then its tokens, set in a bitmap or
    /// pushed to a list that is sorted at the end.
    fn group(&mut self, per_token: &[(u32, u32)], bulk: &[Bulk]) -> Vec<(u32, Tokens)> {
        // Class of each signature set id (ids are dense): a table, not a hash per token; kept
        // between calls, the entries used reset at the end.
        let mut class_of = std::mem::take(&mut self.class_of);
        if class_of.len() < self.sig_sets.len() {
            class_of.resize(self.sig_sets.len(), u32::MAX);
        }
        // (signature set, tokens, first token) per class.
        let mut sizes: Vec<(u32, usize, u32)> = Vec::new();
        let mut count = |id: u32, n: usize, min: u32| {
            let slot = &mut class_of[id as usize];
            if *slot == u32::MAX {
                sizes.push((id, 0, u32::MAX));
                *slot = (sizes.len() - 1) as u32;
            }
            let c = &mut sizes[*slot as usize];
            c.1 += n;
            c.2 = c.2.min(min);
        };
        for &(tok, id) in per_token {
            count(id, 1, tok);
        }
        for (id, min, tokens) in bulk {
            count(*id, tokens.len(), *min);
        }
        enum Acc {
            Bits(Vec<u64>),
            List(Vec<u32>),
        }
        let words = self.words;
        let mut accs: Vec<Acc> = sizes
            .iter()
            .map(
                |&(_, n, _)| if n > BITMAP_FROM { Acc::Bits(vec![0; words]) } else { Acc::List(Vec::with_capacity(n)) },
            )
            .collect();
        let add = |acc: &mut Acc, tokens: &[u32]| match acc {
            Acc::Bits(bits) => {
                for &t in tokens {
                    bits[(t / 64) as usize] |= 1 << (t % 64);
                }
            }
            Acc::List(l) => l.extend_from_slice(tokens),
        };
        for &(tok, id) in per_token {
            add(&mut accs[class_of[id as usize] as usize], &[tok]);
        }
        for (id, _, tokens) in bulk {
            add(&mut accs[class_of[*id as usize] as usize], tokens);
        }
        for &(id, _, _) in &sizes {
            class_of[id as usize] = u32::MAX;
        }
        self.class_of = class_of;
        let mut classes: Vec<(u32, (u32, Tokens))> = sizes
            .iter()
            .zip(accs)
            .map(|(&(id, n, min), acc)| {
                let tokens = match acc {
                    Acc::Bits(bits) => Tokens::Bits { bits: bits.into(), len: n },
                    Acc::List(mut l) => {
                        l.sort_unstable();
                        Tokens::List(l.into())
                    }
                };
                (min, (id, tokens))
            })
            .collect();
        classes.sort_unstable_by_key(|c| c.0);
        classes.into_iter().map(|c| c.1).collect()
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

/// [`kill_set`], shared between grammars: the set depends only on how the inhibitor moves
/// over bytes, which its canonical table records (the states it can reach, numbered
/// breadth-first from `i.s` over bytes in order, and per state and byte: fires, dropped, or the
/// state it moves to). Grammars whose inhibitor has an equal table (in JSON-Schema grammars:
/// the number and whitespace terminals') have the same kill set, computed once per process.
pub fn kill_set_shared(lex: &LexerTables, trie: &Trie, index: &TrieIndex, i: Inhibitor) -> Vec<u32> {
    let mut states = vec![i.s];
    let mut number: FastMap<u32, u32> = FastMap::from_iter([(i.s, 0)]);
    let mut table = Vec::new();
    let mut out = Vec::new();
    let mut at = 0;
    while at < states.len() {
        let x = states[at];
        for b in 0..=255u8 {
            let code = match lex.step_inhibitors(&[Inhibitor { s: x, k: i.k }], b, &mut out) {
                None => KILL_FIRES,
                Some(()) => match out.first() {
                    None => KILL_DROPS,
                    Some(j) => {
                        let next = states.len() as u32;
                        *number.entry(j.s).or_insert_with(|| {
                            states.push(j.s);
                            next
                        })
                    }
                },
            };
            table.push(code);
        }
        if states.len() > MAX_KILL_TABLE {
            return kill_set(lex, trie, i);
        }
        at += 1;
    }
    let table: Arc<[u32]> = table.into();
    {
        let mut cache = index.kills.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(set) = cache.sets.get(&table).map(|s| s.to_vec()) {
            cache.hits += 1;
            return set;
        }
    }
    let set = kill_set(lex, trie, i);
    let mut cache = index.kills.lock().unwrap_or_else(|p| p.into_inner());
    if cache.words + table.len() + set.len() <= KILL_CACHE_WORDS {
        cache.words += table.len() + set.len();
        cache.sets.insert(table, set.as_slice().into());
    }
    set
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
