//! Plain table types the runtime executes. The compiler fills them; the artifact
//! (`artifact/`) stores them verbatim. Nothing here depends on the compiler.

use crate::array::{Array, Col};

/// "No transition" in [`LexerTables::trans`] and [`LrTables`] lookups.
pub const DEAD: u32 = u32::MAX;

/// Longest right-hand side a rule may have (the grammar is ε-free, so every rule has ≥ 1).
pub const MAX_RULE_LEN: u32 = 1 << 16;

/// Per-terminal inhibition set `K_t` (ARCHITECTURE.md, "The contract"), as stored in [`LexerTables::munch`].
pub const MUNCH_GLOBAL: u8 = 0;
/// `K_t = {t}`.
pub const MUNCH_OWN: u8 = 1;
/// `K_t = ∅`.
pub const MUNCH_NONE: u8 = 2;

/// The exact bytes of every token of a vocabulary, plus special flags and end tokens.
///
/// Equality compares the token bytes, special flags and end tokens, not [`Vocabulary::special_names`].
#[derive(Clone, Debug, Default)]
pub struct Vocabulary {
    /// `offsets[i]..offsets[i+1]` are token `i`'s bytes in `bytes`; `len = n_tokens + 1`.
    pub(crate) offsets: Array<u32>,
    /// Every token's bytes, one after the other.
    pub(crate) bytes: Array<u8>,
    /// Per token: 1 for a special (control) token, never allowed by a mask unless it is an
    /// end token; else 0.
    pub(crate) special: Array<u8>,
    /// End-of-sequence token ids, sorted.
    pub(crate) eos: Array<u32>,
    /// The tokenizer's text of its special tokens (which have no bytes), sorted: how a grammar
    /// names them (`<|python_tag|>`) at compile time. Not stored in artifacts (a compiled
    /// grammar holds token ids).
    pub(crate) special_names: std::sync::Arc<[(Box<str>, u32)]>,
    /// The length and CRC-32C of each column as an artifact's `vocab.*` section would hold it,
    /// computed on first use and shared by clones (a vocabulary never changes once built).
    pub(crate) section_sums: std::sync::Arc<std::sync::OnceLock<[(u64, u64); 4]>>,
}

impl PartialEq for Vocabulary {
    fn eq(&self, o: &Vocabulary) -> bool {
        (&self.offsets, &self.bytes, &self.special, &self.eos) == (&o.offsets, &o.bytes, &o.special, &o.eos)
    }
}

impl Eq for Vocabulary {}

impl Vocabulary {
    /// Build from per-token byte strings.
    pub fn from_tokens(tokens: &[Vec<u8>], special: Vec<bool>, mut eos: Vec<u32>) -> Vocabulary {
        let mut offsets = Vec::with_capacity(tokens.len() + 1);
        let mut bytes = Vec::new();
        offsets.push(0);
        for t in tokens {
            bytes.extend_from_slice(t);
            offsets.push(bytes.len() as u32);
        }
        eos.sort_unstable();
        eos.dedup();
        let special: Vec<u8> = special.into_iter().map(u8::from).collect();
        // (Shared columns: a vocabulary is cloned into every compile and every artifact opened
        // with its tokenizer, and a 150k-token one is 1.7 MB.)
        Vocabulary {
            offsets: Array::shared(&offsets),
            bytes: Array::shared(&bytes),
            special: Array::shared(&special),
            eos: Array::shared(&eos),
            special_names: Default::default(),
            section_sums: Default::default(),
        }
    }

    /// With these names of special tokens (see [`Vocabulary::special_names`]); names of ids
    /// that are not special tokens are dropped.
    pub fn with_special_names(mut self, names: impl IntoIterator<Item = (String, u32)>) -> Vocabulary {
        let mut v: Vec<(Box<str>, u32)> =
            names.into_iter().filter(|&(_, id)| self.is_special(id)).map(|(n, id)| (n.into_boxed_str(), id)).collect();
        v.sort();
        v.dedup();
        self.special_names = v.into();
        self
    }

    /// The special tokens named `name`.
    pub fn special_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = u32> + 'a {
        let from = self.special_names.partition_point(|(n, _)| &**n < name);
        self.special_names[from..].iter().take_while(move |(n, _)| &**n == name).map(|&(_, id)| id)
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Has the vocabulary no tokens?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Token `id`'s bytes, or `None` if out of range.
    pub fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        let i = id as usize;
        let (a, b) = (*self.offsets.get(i)?, *self.offsets.get(i + 1)?);
        self.bytes.get(a as usize..b as usize)
    }

    /// Is token `id` a special (control) token?
    pub fn is_special(&self, id: u32) -> bool {
        self.special.get(id as usize).is_some_and(|&s| s != 0)
    }

    /// The end-of-sequence token ids, sorted.
    pub fn eos(&self) -> &[u32] {
        &self.eos
    }

    /// The tokenizer's text of its special tokens, with their ids, sorted by text (see
    /// [`Vocabulary::with_special_names`]).
    pub fn special_names(&self) -> &[(Box<str>, u32)] {
        &self.special_names
    }

    /// Are the token bytes and offsets views of an artifact's bytes (not copies)? Unstable
    /// (feature `unstable`).
    #[cfg(feature = "unstable")]
    pub fn is_view(&self) -> bool {
        self.bytes.is_view() && self.offsets.is_view()
    }

    /// Is token `id` an end-of-sequence token?
    pub fn is_eos(&self, id: u32) -> bool {
        self.eos.binary_search(&id).is_ok()
    }
}

/// One byte DFA for all terminals (`L = (Q, q0, δ, acc)`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LexerTables {
    /// Number of states.
    pub num_states: u32,
    /// Number of terminals.
    pub num_terminals: u32,
    /// `u64` words per terminal bitset: `ceil(num_terminals / 64)`.
    pub words: u32,
    /// `q0`, the empty-lexeme state; it has no incoming edges.
    pub start: u32,
    /// `trans[q * num_classes + byte_class[b]]`: next state or [`DEAD`]. Bytes that every
    /// state treats alike share a class (a JSON-Schema lexer distinguishes some 30–100 kinds of
    /// byte), so a row holds one entry per class, not per byte. Narrowed to 16 bits in an
    /// artifact when the states fit.
    pub trans: Col,
    /// The class of each byte (256 entries, each below `num_classes`).
    pub byte_class: Array<u8>,
    /// Number of byte classes.
    pub num_classes: u32,
    /// `accept[accept_off[q]..accept_off[q+1]]`: terminals matching the lexeme that led to `q`,
    /// sorted. Not filtered by priority: priorities are contextual (see [`LexerTables::priority`]).
    pub accept_off: Array<u32>,
    /// Accepted terminals (see `accept_off`).
    pub accept: Array<u32>,
    /// Bitsets `Next⁺` of terminals still reachable by ≥ 1 more byte, interned: row `r` is
    /// `next_plus[r * words ..][..words]`, and state `q` has row `next_plus_row[q]` (format 3.1;
    /// a 3.0 file has one row per state, read as `next_plus_row[q] = q`). Many lexer states
    /// share a row: a Kubernetes-shaped schema's 32,934 states have a few hundred.
    pub next_plus: Array<u64>,
    /// Per state: its row in `next_plus`.
    pub next_plus_row: Col,
    /// Bitset of ignored terminals.
    pub ignored: Array<u64>,
    /// Per-terminal inhibition mode: [`MUNCH_GLOBAL`], [`MUNCH_OWN`] or [`MUNCH_NONE`].
    pub munch: Array<u8>,
    /// Per-terminal priority (Lark `NAME.n`; 0 by default). Contextual (ARCHITECTURE.md, "The contract"): where
    /// several terminals match the same lexeme, a lower-priority one is used only on stacks
    /// where none of the higher-priority ones can be shifted; equal priorities fork.
    pub priority: Array<i32>,
    /// Further successors of `q0` (other lexer components): on byte `b`,
    /// `fork[fork_off[b]..fork_off[b+1]]`, besides `step(q0, b)`. `fork_off` has 257 entries.
    pub fork_off: Array<u32>,
    /// Further successors of `q0` (see `fork_off`).
    pub fork: Array<u32>,
}

impl LexerTables {
    #[inline]
    /// The state after byte `b` from state `q` ([`DEAD`] if none).
    pub fn step(&self, q: u32, b: u8) -> u32 {
        self.trans.get(q as usize * self.num_classes as usize + self.byte_class[b as usize] as usize)
    }

    /// Every successor of `q` on byte `b`: `δ(q,b)` and, from `q0`, the forks into the other
    /// lexer components.
    #[inline]
    pub fn successors(&self, q: u32, b: u8) -> impl Iterator<Item = u32> + '_ {
        let main = self.step(q, b);
        let forks: &[u32] = if q == self.start {
            &self.fork[self.fork_off[b as usize] as usize..self.fork_off[b as usize + 1] as usize]
        } else {
            &[]
        };
        std::iter::once(main).filter(|&t| t != DEAD).chain(forks.iter().copied())
    }

    #[inline]
    /// The terminals state `q` accepts, sorted.
    pub fn accepts(&self, q: u32) -> &[u32] {
        &self.accept[self.accept_off[q as usize] as usize..self.accept_off[q as usize + 1] as usize]
    }

    #[inline]
    /// State `q`'s `Next⁺` bitset.
    pub fn next_plus(&self, q: u32) -> &[u64] {
        let (w, r) = (self.words as usize, self.next_plus_row.get(q as usize) as usize);
        &self.next_plus[r * w..(r + 1) * w]
    }

    /// Terminal `t`'s priority (0 if out of range).
    #[inline]
    pub fn priority_of(&self, t: u32) -> i32 {
        self.priority.get(t as usize).copied().unwrap_or(0)
    }

    /// Do all terminals of an accept set share one priority (the common case: no contextual
    /// priority resolution needed)?
    #[inline]
    pub fn uniform_priority(&self, acc: &[u32]) -> bool {
        match acc.split_first() {
            Some((&first, rest)) => {
                let p = self.priority_of(first);
                rest.iter().all(|&t| self.priority_of(t) == p)
            }
            None => true,
        }
    }

    #[inline]
    /// Is terminal `t` ignored?
    pub fn is_ignored(&self, t: u32) -> bool {
        self.ignored[(t / 64) as usize] >> (t % 64) & 1 == 1
    }
}

/// One LR action, packed: tag in the top two bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    /// Shift, going to the state.
    Shift(u32),
    /// Reduce by the rule.
    Reduce(u32),
    /// Accept (on `$`).
    Accept,
}

impl Action {
    const SHIFT: u32 = 0;
    const REDUCE: u32 = 1 << 30;
    #[cfg(feature = "unstable")]
    const ACCEPT: u32 = 2 << 30;
    const MASK: u32 = (1 << 30) - 1;

    /// The action as one word.
    #[cfg(feature = "unstable")]
    pub fn pack(self) -> u32 {
        match self {
            Action::Shift(s) => Self::SHIFT | s,
            Action::Reduce(r) => Self::REDUCE | r,
            Action::Accept => Self::ACCEPT,
        }
    }

    /// The action of a word made by [`Action::pack`].
    pub fn unpack(x: u32) -> Action {
        match x & !Self::MASK {
            Self::SHIFT => Action::Shift(x & Self::MASK),
            Self::REDUCE => Action::Reduce(x & Self::MASK),
            _ => Action::Accept,
        }
    }
}

/// LR tables over terminals `0..num_terminals` plus `$ = num_terminals`, with multi-valued
/// ACTION kept for GLR. Rows are sparse and sorted so lookups are binary searches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LrTables {
    /// Number of states.
    pub num_states: u32,
    /// Number of terminals (without `$`).
    pub num_terminals: u32,
    /// Number of nonterminals.
    pub num_nonterminals: u32,
    /// State `p`'s ACTION row: entries `action_row[p]..action_row[p+1]`.
    pub action_row: Array<u32>,
    /// Per entry: the terminal (sorted within a row) ...
    pub action_term: Array<u32>,
    /// ... and its actions `actions[action_off[e]..action_off[e+1]]` (packed [`Action`]s).
    pub action_off: Array<u32>,
    /// Packed [`Action`]s (see `action_off`).
    pub actions: Array<u32>,
    /// State `p`'s GOTO row: entries `goto_row[p]..goto_row[p+1]` of (`goto_nt`, `goto_target`), sorted by nt.
    pub goto_row: Array<u32>,
    /// Per GOTO entry: the nonterminal.
    pub goto_nt: Array<u32>,
    /// Per GOTO entry: the target state.
    pub goto_target: Array<u32>,
    /// Per rule: left-hand nonterminal and right-hand length (≥ 1: the grammar is ε-free).
    pub rule_lhs: Array<u32>,
    /// Per rule: its right-hand length.
    pub rule_len: Array<u32>,
}

impl LrTables {
    /// `$`, the end-of-input terminal.
    pub fn eof(&self) -> u32 {
        self.num_terminals
    }

    /// The terminals with an action in state `p`, ascending.
    #[cfg(feature = "unstable")]
    pub fn action_terminals(&self, p: u32) -> &[u32] {
        let (a, b) = (self.action_row[p as usize] as usize, self.action_row[p as usize + 1] as usize);
        &self.action_term[a..b]
    }

    /// ACTION(p, t) as packed actions (empty if none).
    pub fn actions(&self, p: u32, t: u32) -> &[u32] {
        let (a, b) = (self.action_row[p as usize] as usize, self.action_row[p as usize + 1] as usize);
        match self.action_term[a..b].binary_search(&t) {
            Ok(i) => {
                let e = a + i;
                &self.actions[self.action_off[e] as usize..self.action_off[e + 1] as usize]
            }
            Err(_) => &[],
        }
    }

    /// GOTO(p, A) or [`DEAD`].
    pub fn goto(&self, p: u32, nt: u32) -> u32 {
        let (a, b) = (self.goto_row[p as usize] as usize, self.goto_row[p as usize + 1] as usize);
        match self.goto_nt[a..b].binary_search(&nt) {
            Ok(i) => self.goto_target[a + i],
            Err(_) => DEAD,
        }
    }

    /// Build from dense per-state maps (used by the table builder).
    /// `rows[p]` = sorted (terminal, sorted actions); `gotos[p]` = sorted (nt, target).
    #[cfg(feature = "unstable")]
    pub fn from_rows(
        num_terminals: u32,
        num_nonterminals: u32,
        rows: &[Vec<(u32, Vec<Action>)>],
        gotos: &[Vec<(u32, u32)>],
        rule_lhs: Vec<u32>,
        rule_len: Vec<u32>,
    ) -> LrTables {
        let mut t = LrTables {
            num_states: rows.len() as u32,
            num_terminals,
            num_nonterminals,
            rule_lhs: rule_lhs.into(),
            rule_len: rule_len.into(),
            ..Default::default()
        };
        t.action_row.push(0);
        t.action_off.push(0);
        for row in rows {
            for (term, acts) in row {
                t.action_term.push(*term);
                t.actions.extend(acts.iter().map(|a| a.pack()));
                t.action_off.push(t.actions.len() as u32);
            }
            t.action_row.push(t.action_term.len() as u32);
        }
        t.goto_row.push(0);
        for row in gotos {
            for (nt, target) in row {
                t.goto_nt.push(*nt);
                t.goto_target.push(*target);
            }
            t.goto_row.push(t.goto_nt.len() as u32);
        }
        t
    }
}

/// Everything `commit` and the reference mask need: the lexer and the parser tables.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GrammarTables {
    /// The lexer.
    pub lexer: LexerTables,
    /// The LR tables.
    pub lr: LrTables,
    /// Terminal names, for diagnostics.
    pub terminal_names: Vec<String>,
}

/// Tables whose indices do not line up. Checked once, so the runtime can index freely.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableError(pub(crate) String);

impl std::fmt::Display for TableError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid tables: {}", self.0)
    }
}

impl std::error::Error for TableError {}

fn check(cond: bool, what: &str) -> Result<(), TableError> {
    if cond {
        Ok(())
    } else {
        Err(TableError(what.to_string()))
    }
}

fn check_offsets(off: &[u32], n: usize, len: usize, what: &str) -> Result<(), TableError> {
    check(off.len() == n + 1, what)?;
    check(off.first() == Some(&0) && off.last().map(|&x| x as usize) == Some(len), what)?;
    // (Branch-free, so that it vectorizes: a vocabulary's 150k offsets are checked at every open.)
    check(!off.iter().zip(&off[1..]).fold(false, |bad, (a, b)| bad | (b < a)), what)
}

impl Vocabulary {
    /// Check every index the tables hold is in range.
    pub fn validate(&self) -> Result<(), TableError> {
        let n = self.len();
        check(n < u32::MAX as usize, "vocabulary too large")?;
        check_offsets(&self.offsets, n, self.bytes.len(), "vocabulary offsets")?;
        check(self.special.len() == n, "vocabulary special flags length")?;
        // (Every flag is 0 or 1 exactly when their OR is: branch-free, as above.)
        check(self.special.iter().fold(0u8, |or, &s| or | s) <= 1, "vocabulary special flag is not 0 or 1")?;
        check(self.eos.windows(2).all(|w| w[0] < w[1]), "end token ids must be sorted")?;
        check(self.eos.iter().all(|&e| (e as usize) < n), "end token id out of range")
    }
}

impl LexerTables {
    /// Check every index the tables hold is in range.
    pub fn validate(&self) -> Result<(), TableError> {
        let (n, nt) = (self.num_states as usize, self.num_terminals);
        let w = self.words as usize;
        check(n > 0 && (self.start as usize) < n, "lexer start state")?;
        check(w == (nt as usize).div_ceil(64), "lexer bitset width")?;
        let k = self.num_classes as usize;
        check((1..=256).contains(&k), "lexer byte class count")?;
        check(self.byte_class.len() == 256, "lexer byte class table size")?;
        check(self.byte_class.iter().all(|&c| (c as usize) < k), "lexer byte class out of range")?;
        check(self.trans.len() == n * k, "lexer transition table size")?;
        // (One branch-free pass for both checks; the slow one only tells which failed.)
        let targets_ok = self.trans.all_below_or_max_except(n as u32, self.start);
        check(targets_ok || self.trans.iter().all(|s| s == DEAD || (s as usize) < n), "lexer transition target")?;
        check(targets_ok, "lexer start state has an incoming edge")?;
        check_offsets(&self.accept_off, n, self.accept.len(), "lexer accept offsets")?;
        check(self.accept.iter().all(|&t| t < nt), "lexer accepted terminal out of range")?;
        check(self.next_plus_row.len() == n, "lexer Next+ row table size")?;
        // (With no terminals, rows are empty and any row number reads nothing.)
        if let Some(rows) = self.next_plus.len().checked_div(w) {
            check(self.next_plus.len() == rows * w, "lexer Next+ size")?;
            check(self.next_plus_row.iter().all(|r| (r as usize) < rows), "lexer Next+ row out of range")?;
        }
        check(self.ignored.len() == w, "lexer ignored set size")?;
        check(self.munch.len() == nt as usize, "lexer munch modes length")?;
        check(self.munch.iter().all(|&m| m <= MUNCH_NONE), "lexer munch mode")?;
        check(self.priority.len() == nt as usize, "lexer priorities length")?;
        check_offsets(&self.fork_off, 256, self.fork.len(), "lexer fork offsets")?;
        check(self.fork.iter().all(|&s| (s as usize) < n && s != self.start), "lexer fork target")?;
        for q in 0..n {
            let a = &self.accept[self.accept_off[q] as usize..self.accept_off[q + 1] as usize];
            check(a.windows(2).all(|x| x[0] < x[1]), "lexer accept sets must be sorted")?;
        }
        Ok(())
    }
}

impl LrTables {
    /// Check every index the tables hold is in range.
    pub fn validate(&self) -> Result<(), TableError> {
        let n = self.num_states as usize;
        check(n > 0, "LR table has no states")?;
        check_offsets(&self.action_row, n, self.action_term.len(), "ACTION rows")?;
        check_offsets(&self.action_off, self.action_term.len(), self.actions.len(), "ACTION entries")?;
        check(self.action_term.iter().all(|&t| t <= self.num_terminals), "ACTION terminal out of range")?;
        check_offsets(&self.goto_row, n, self.goto_nt.len(), "GOTO rows")?;
        for p in 0..n {
            let row = &self.action_term[self.action_row[p] as usize..self.action_row[p + 1] as usize];
            check(row.windows(2).all(|x| x[0] < x[1]), "ACTION rows must be sorted")?;
            let row = &self.goto_nt[self.goto_row[p] as usize..self.goto_row[p + 1] as usize];
            check(row.windows(2).all(|x| x[0] < x[1]), "GOTO rows must be sorted")?;
        }
        check(self.rule_lhs.len() == self.rule_len.len(), "rule table lengths")?;
        check(self.rule_lhs.iter().all(|&a| a < self.num_nonterminals), "rule lhs out of range")?;
        check(self.rule_len.iter().all(|&n| (1..=MAX_RULE_LEN).contains(&n)), "rule length out of range")?;
        for &a in &self.actions {
            match Action::unpack(a) {
                Action::Shift(s) => check((s as usize) < n, "shift target out of range")?,
                Action::Reduce(r) => check((r as usize) < self.rule_lhs.len(), "reduce rule out of range")?,
                Action::Accept => {}
            }
        }
        check(self.goto_target.len() == self.goto_nt.len(), "GOTO targets length")?;
        check(self.goto_nt.iter().all(|&a| a < self.num_nonterminals), "GOTO nonterminal out of range")?;
        check(self.goto_target.iter().all(|&s| (s as usize) < n), "GOTO target out of range")
    }
}

impl GrammarTables {
    /// Check every index the tables hold is in range.
    pub fn validate(&self) -> Result<(), TableError> {
        self.lexer.validate()?;
        self.lr.validate()?;
        check(self.lexer.num_terminals == self.lr.num_terminals, "lexer and LR terminal counts differ")?;
        check(self.terminal_names.len() == self.lexer.num_terminals as usize, "terminal names length")
    }
}
