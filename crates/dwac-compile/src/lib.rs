//! dwac-compile: grammar IR → normalized grammar → LR tables + lexer DFA → the runtime's
//! [`GrammarTables`](dwac_runtime::unstable::GrammarTables) → the Parser DWA (`dwa`) → the artifact (`artifact`: the writer; the
//! runtime reads the same tables back as zero-copy views).

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod artifact;
pub mod dwa;
pub mod lexer;
pub mod pipeline;
pub mod probe;
mod stages;
pub mod threads;
pub mod token_terminals;

pub use lexer::build_lexer;
pub use pipeline::{
    compile_engine, compile_grammar, parse_source, regex_grammar, CompileStats, Compiled, Compiler, EngineOptions,
    LexerInference, SourceKind, REGEX_TERMINAL,
};

/// Why a grammar could not be compiled.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// The grammar is invalid (a front end's parse error or a failed check on the grammar),
    /// located in its source where it can be.
    #[error(transparent)]
    Grammar(#[from] dwac_grammar::GrammarError),
    /// A terminal's pattern cannot be compiled: it does not parse, uses something the lexer does
    /// not support (look-around) or names tokens without a vocabulary.
    #[error("terminal {terminal}: invalid regex: {message}")]
    Regex {
        /// The terminal's name (`<all>` or `?` where no single terminal could be named).
        terminal: String,
        /// What is wrong with the pattern.
        message: String,
    },
    /// A terminal matches the empty string.
    #[error("terminal {terminal} matches the empty string (no terminal may)")]
    EmptyMatch {
        /// The name of the terminal that matches the empty string.
        terminal: String,
    },
    /// No text is in the language once lexing is longest match (ARCHITECTURE.md, "The contract").
    #[error("{0}")]
    EmptyLanguage(dwac_grammar::GrammarError),
    /// A build exceeded a size limit (the lexer DFA's states, or the Parser DWA's), saying which.
    #[error("budget exceeded: {0}")]
    Budget(String),
    /// The caller asked the build to stop, saying why: its progress callback (the CLI's memory
    /// budget for one input) or a [`threads::Stop`] (a time or memory budget).
    #[error("{0}")]
    Stopped(String),
    /// The LR tables could not be built from the normalized grammar, with the reason.
    #[error("LR table construction failed: {0}")]
    Lr(String),
    /// The built tables (or the vocabulary or mask tables checked against them) do not line up.
    #[error(transparent)]
    Tables(#[from] dwac_runtime::TableError),
    /// The JSON Schema uses something the schema compiler refuses.
    #[error("{0}")]
    Schema(#[from] dwac_grammar::schema::SchemaError),
    /// A JSON Schema source does not parse as JSON, with the parser's message.
    #[error("not valid JSON: {0}")]
    Json(String),
}

impl CompileError {
    /// The one-line message tools print for an error in `file` (located where it has a
    /// location). A schema whose language is empty says so in JSON Schema's terms.
    pub fn located(&self, file: &dyn std::fmt::Display, is_schema: bool) -> String {
        match self {
            CompileError::EmptyLanguage(g) if is_schema => {
                format!("{file}: no JSON value satisfies this schema ({})", g.message)
            }
            CompileError::Grammar(g) | CompileError::EmptyLanguage(g) => g.located(file),
            other => format!("{file}: {other}"),
        }
    }
}
