//! dwac-grammar: the grammar IR with spans, the Lark and GBNF front-ends, and the
//! normalization passes (useless symbols, ε-rules, unit cycles, right recursion).
//! It knows nothing about tokens or artifacts.

pub mod diag;
pub mod gbnf;
pub mod ir;
pub mod lark;
pub mod normalize;
pub mod schema;

pub use diag::{GrammarError, Warning};
pub use ir::{Grammar, Munch, Nonterminal, Rule, Span, Symbol, Terminal};
pub use lark::LarkOptions;
