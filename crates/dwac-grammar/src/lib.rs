//! dwac-grammar: the grammar IR with spans, the Lark, GBNF and JSON Schema front-ends, and
//! the normalization passes (useless symbols, ε-rules, unit cycles, right recursion).
//! It knows no vocabulary and no artifacts (token terminals name tokens; the compiler finds them).

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod diag;
mod ebnf;
pub mod gbnf;
pub mod ir;
pub mod lark;
pub mod lift;
pub mod normalize;
pub mod open_keys;
pub mod schema;
pub mod structural;
pub mod tools;

pub use diag::{GrammarError, Warning};
pub use ir::{Grammar, Munch, Nonterminal, Rule, Span, Symbol, Terminal, TokenItem, TokenSet};
pub use lark::LarkOptions;
