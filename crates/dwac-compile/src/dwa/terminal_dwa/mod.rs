//! The Terminal DWA (docs/CONSTRUCTION.md "The Parser DWA", step 1): from a lexer state a thread can be in, every token's
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

use std::sync::Arc;

use dwac_runtime::unstable::Inhibitor;
use dwac_runtime::unstable::LexerTables;
use dwac_runtime::unstable::DEAD;

use super::compose::{Step, ANY};
use super::horizon::Horizon;
use super::set_pool::SetPool;
use super::FastMap;
use dwac_runtime::unstable::Trie;

mod base;
mod closure;
mod follow;
mod index;
mod kill;
mod live;
mod prewalk;
mod rename;
mod step;
mod tokens;
mod walk;

// The mechanisms' own items, for this module and each other.
use base::{Base, ENTRY_DEAD, ENTRY_WALK, MAX_BASES};
use closure::{Closure, ClosureCache, ClosureWalk, Event, CLOSURE_WALK_FROM};
use live::LiveHeights;
use prewalk::{live_entry_key, PREWALK_FROM};
use step::{step_action, Branch, Bulk, Outcome, Scratch, StepRows, ACT_LEAVE, ACT_SKIP};
use walk::RootResult;

pub use follow::FollowBytes;
pub use index::TrieIndex;
pub use kill::{carried_inhibitors, kill_set, kill_set_shared};
pub use prewalk::{Prewalker, Prewalks};
pub use tokens::{Sig, TokenClass, Tokens, BITMAP_FROM};

/// Lexings a token prefix may have before its tokens are left to run time (UNDECIDED).
pub const MAX_LEXINGS: usize = 64;

/// Steps (lexemes) a lexing may have before its token is left to run time (UNDECIDED): more
/// than any token has bytes in the vocabularies we know (a character-level grammar may take a
/// step per byte: 64 dashes of a GPT-2 token are 64 unary minuses in C).
pub const MAX_STEPS: u32 = 256;

/// Tokens the walk left UNDECIDED, by the limit that made it so.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LimitHits {
    /// A token prefix with more than [`MAX_LEXINGS`] lexings.
    pub lexings: u64,
    /// A lexing of more than [`MAX_STEPS`] steps.
    pub steps: u64,
}

/// States with fewer tokens with a lexing than this are not kept as bases (a walk of theirs costs little).
pub const BASE_FROM: usize = 4096;

/// Walks the trie from lexer states; owns the prefix trie of step sequences built on the way.
/// Everything it memoizes (byte outcomes, lookahead classes, signature sets) depends on the lexer
/// alone, so one walker serves every lexer state of a grammar.
pub struct Walker<'a> {
    /// The lexer the walk steps tokens through.
    pub lex: &'a LexerTables,
    /// The vocabulary trie walked.
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
    /// Tokens left UNDECIDED by the walk's limits, by cause (summed over the subtrees walked;
    /// a memoized walk replayed is not counted again).
    pub limit_hits: LimitHits,
    /// The follow-byte filter of character-level terminals, and its bytes per shifted set.
    follow: Option<Arc<FollowBytes>>,
    after_shift: FastMap<u32, [u64; 4]>,
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
    /// Results of the subtrees below the root's children entered any other way (a lexeme
    /// emitted on the first byte, forks, inhibitors, more than one branch): by (child, the
    /// branch list after the first byte), which is all the walk below reads.
    branch_memo: FastMap<(u32, Box<[Branch]>), RootResult>,
    /// Classes and UNDECIDED tokens of lexer states walked in full or derived, by their key of
    /// bounded-horizon equivalence ([`Walker::block`]): an equivalent state has the same.
    state_memo: FastMap<u64, StateClasses>,
    /// Token ids and bitmap words [`Walker::state_memo`] holds (bounded by [`STATE_MEMO_WORDS`]).
    state_memo_words: usize,
    /// (token, signature set) pairs of the memoized subtrees, in chunks, and their number; bulk
    /// token lists.
    root_results: Vec<Vec<(u32, u32)>>,
    root_pairs: usize,
    root_bulk: Vec<Bulk>,
    /// Lexer states whose classes other states derive theirs from.
    bases: Vec<Base>,
    /// Token counts below the trie's nodes.
    index: Arc<TrieIndex>,
    /// Bounded-horizon equivalence of lexer states, up to the trie's height.
    horizon: Arc<Horizon>,
    /// Subtrees walked ahead by the assembling thread ([`Prewalks`]).
    prewalks: Option<&'a Prewalks>,
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
    /// States whose classes are those of an equivalent state (`Walker::state_memo`).
    pub equivalent: usize,
    /// Words of a token bitmap.
    words: usize,
    /// Per child of the trie's root: the tokens below it.
    root_len: Arc<[usize]>,
    /// Per lexer state `q`: `(prefix, id)`, the id of the signature set `{(prefix, class(q))}`
    /// last asked for ([`Walker::walk_single`] asks for one per trie node with tokens, mostly
    /// with one prefix).
    sig_cache: Vec<(u32, u32)>,
    /// What [`Walker::walk_single`] does with each byte from each lexer state.
    step_rows: StepRows,
    /// Per entry lexer state: its closure, or `None` if it has none worth sharing.
    closure_memo: FastMap<u32, Option<Arc<Closure>>>,
    /// Subtree walks replayed from the closure cache rather than recorded.
    pub closure_hits: usize,
    /// Walk subtrees through closures ([`Walker::closure_walk`]); off: always walk them.
    closure_walks: bool,
    /// How far below a root child each walk entered at a lexer state reads ([`LiveHeights`]).
    live: std::cell::RefCell<LiveHeights>,
    /// The root's children by the lexer's byte class of their byte, the tallest class first.
    root_by_class: Arc<[RootClass]>,
    /// Per lexer state: [`Walker::block`], [`BLOCK_NONE`] or [`BLOCK_UNKNOWN`].
    block_memo: std::cell::RefCell<Vec<u64>>,
    /// Bounded-horizon equivalence up to the pending lexeme's terminal
    /// ([`Horizon::renaming`]), for [`Walker::renaming_key`].
    renaming: Option<Arc<Horizon>>,
}

/// The root's children whose bytes are in one byte class of the lexer (every state steps them
/// alike): their indices, tallest first, and the tallest one's height.
struct RootClass {
    class: u8,
    height: u32,
    children: Vec<u32>,
}

/// [`Walker::block_memo`]: not computed yet.
const BLOCK_UNKNOWN: u64 = u64::MAX;

/// [`Walker::block_memo`]: the state has no block (an inhibitor within its height).
const BLOCK_NONE: u64 = u64::MAX - 1;

/// A lexer state's classes (signature set id, tokens) and UNDECIDED tokens.
type StateClasses = (Vec<(u32, Tokens)>, Vec<u32>);

/// Token ids and bitmap words [`Walker::state_memo`] may hold (a memory bound).
const STATE_MEMO_WORDS: usize = 16 << 20;

impl<'a> Walker<'a> {
    /// A walker of `trie` through `lex`, with the trie's index and the lexer's bounded-horizon
    /// equivalence built here.
    pub fn new(lex: &'a LexerTables, trie: &'a Trie) -> Walker<'a> {
        Walker::with_index(lex, trie, Arc::new(TrieIndex::new(trie)))
    }

    /// [`Walker::new`] with `trie`'s index already built (shared by the grammars compiled
    /// against one vocabulary).
    pub fn with_index(lex: &'a LexerTables, trie: &'a Trie, index: Arc<TrieIndex>) -> Walker<'a> {
        let horizon = Arc::new(Horizon::new(lex, index.height[0]));
        Walker::with_horizon(lex, trie, index, horizon)
    }

    /// [`Walker::with_index`] with the lexer's bounded-horizon equivalence already computed
    /// ([`Walker::horizon_for`]).
    pub fn with_horizon(
        lex: &'a LexerTables,
        trie: &'a Trie,
        index: Arc<TrieIndex>,
        horizon: Arc<Horizon>,
    ) -> Walker<'a> {
        let root_len = trie.children(0).iter().map(|&(_, c)| index.subtree_len[c as usize] as usize).collect();
        let root = trie.children(0);
        let height_of = |i: u32| index.height[root[i as usize].1 as usize];
        let mut root_by_class: Vec<RootClass> = Vec::new();
        for (i, &(b, _)) in root.iter().enumerate() {
            let class = lex.byte_class[b as usize];
            match root_by_class.iter_mut().find(|g| g.class == class) {
                Some(g) => g.children.push(i as u32),
                None => root_by_class.push(RootClass { class, height: 0, children: vec![i as u32] }),
            }
        }
        for g in &mut root_by_class {
            g.children.sort_by_key(|&i| std::cmp::Reverse(height_of(i)));
            g.height = height_of(g.children[0]);
        }
        root_by_class.sort_by_key(|g| std::cmp::Reverse(g.height));
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
            branch_memo: FastMap::default(),
            state_memo: FastMap::default(),
            state_memo_words: 0,
            root_results: Vec::new(),
            root_pairs: 0,
            root_bulk: Vec::new(),
            bases: Vec::new(),
            horizon,
            renaming: None,
            prewalks: None,
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
            step_rows: StepRows::new(lex),
            closure_memo: FastMap::default(),
            closure_hits: 0,
            closure_walks: true,
            live: Default::default(),
            root_by_class: root_by_class.into(),
            block_memo: std::cell::RefCell::new(vec![BLOCK_UNKNOWN; lex.num_states as usize]),
            limit_hits: LimitHits::default(),
            follow: None,
            after_shift: FastMap::default(),
        }
    }

    /// Drop, as the walk goes, the splits after a character-level terminal whose next lexeme
    /// no parser can take ([`FollowBytes`]; the masks do not change).
    pub fn with_follow_bytes(mut self, follow: Option<Arc<FollowBytes>>) -> Self {
        self.follow = follow;
        self
    }

    /// Keep states with at least `from` tokens with a lexing as bases (default [`BASE_FROM`];
    /// `usize::MAX`: every state walked in full), and with `always`, derive every state from
    /// its cheapest base whatever it costs. For tests of the derivation from bases.
    pub fn with_bases(mut self, from: usize, always: bool) -> Self {
        self.base_from = from;
        self.always_derive = always;
        self
    }

    /// The bounded-horizon equivalence a walker of `lex` over `index`'s trie uses.
    pub fn horizon_for(lex: &LexerTables, index: &TrieIndex) -> Arc<Horizon> {
        Arc::new(Horizon::new(lex, index.height[0]))
    }

    /// Replay the subtrees `prewalks` holds rather than walking them.
    pub fn with_prewalks(mut self, prewalks: &'a Prewalks) -> Self {
        self.prewalks = Some(prewalks);
        self
    }

    /// Walk every subtree in full rather than through the closure cache (tests).
    pub fn without_closure_walks(mut self) -> Self {
        self.closure_walks = false;
        self
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
    /// `Walker::equivalent_branches` at the root). Outside `q0` a token has a lexing only if
    /// the DFA steps on its first byte (a lexeme is emitted on entering an accepting state, not
    /// on leaving it), so `h` is one more than the most bytes the walk reads below such a byte
    /// (a state inside a multi-byte UTF-8 character lexes only the short tokens that start with
    /// a continuation byte): the subtree's height, or less when the first byte only moves the
    /// lexer on (then one more than the deepest node the walk reaches still moving the lexer
    /// on: the live height); at `q0`, the trie's height. Equivalent states compute the same `h`
    /// (`≡_1` tells which bytes are dead, and `≡_h` what the walks below read).
    pub fn block(&self, q: u32) -> Option<u64> {
        let memo = self.block_memo.borrow().get(q as usize).copied();
        if let Some(k) = memo.filter(|&k| k != BLOCK_UNKNOWN) {
            return (k != BLOCK_NONE).then_some(k);
        }
        let lex = self.lex;
        let h = if q != lex.start {
            // Per live first byte: one more than what the walk below reads ([`LiveHeights`]
            // for a byte that only moves the lexer on; the subtree's height otherwise). The
            // children by height, tallest first: none past one no taller than the maximum so
            // far can raise it.
            let mut live = self.live.borrow_mut();
            let children = self.trie.children(0);
            let mut h = 0;
            for group in self.root_by_class.iter() {
                if group.height < h {
                    break;
                }
                let q2 = lex.trans.get(q as usize * lex.num_classes as usize + group.class as usize);
                if q2 == DEAD {
                    continue;
                }
                match step_action(lex, q2) {
                    ACT_SKIP => h = h.max(1),
                    ACT_LEAVE => h = h.max(group.height + 1),
                    q2 => {
                        for &i in group.children.iter() {
                            let c = children[i as usize].1;
                            if self.index.height[c as usize] < h {
                                break;
                            }
                            h = h.max(live.get((lex, self.trie, &self.index, &self.horizon), q2, c) + 1);
                        }
                    }
                }
            }
            h
        } else {
            self.index.height[0]
        };
        let key = self
            .horizon
            .block_at(q, h)
            .filter(|_| self.horizon.inhibitor_free(q, h))
            .map(|block| (h as u64) << 32 | block as u64);
        if let Some(m) = self.block_memo.borrow_mut().get_mut(q as usize) {
            *m = key.unwrap_or(BLOCK_NONE);
        }
        key
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
