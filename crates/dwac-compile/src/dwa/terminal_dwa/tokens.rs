//! Token classes: the tokens of one class at one lexer state (a sorted list, or a bitmap for
//! large classes), shared between states derived from one another.

use std::sync::Arc;

/// One lexing of a token: (node of the step-sequence trie, lookahead class).
pub type Sig = (u32, u32);

/// The tokens of one class at one lexer state, and their lexings.
#[derive(Clone)]
pub struct TokenClass {
    /// The lexings every token of the class has from the lexer state (sorted, distinct).
    pub sigs: Vec<Sig>,
    /// The tokens of the class.
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
    /// The token ids, sorted.
    List(Arc<[u32]>),
    /// A bitmap over token ids.
    Bits {
        /// The bitmap's words: bit `t % 64` of word `t / 64` is set for token `t`.
        bits: Arc<[u64]>,
        /// The number of tokens (bits set).
        len: usize,
    },
}

impl Tokens {
    /// A list, or a bitmap of `words` words when longer than [`BITMAP_FROM`].
    pub(super) fn from_sorted(list: Vec<u32>, words: usize) -> Tokens {
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

    /// The number of tokens.
    pub fn len(&self) -> usize {
        match self {
            Tokens::List(l) => l.len(),
            Tokens::Bits { len, .. } => *len,
        }
    }

    /// Whether there are no tokens.
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
    pub(super) fn first(&self) -> Option<u32> {
        self.iter().next()
    }

    /// The tokens as a sorted vector.
    pub fn to_vec(&self) -> Vec<u32> {
        self.iter().collect()
    }
}
