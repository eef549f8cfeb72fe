//! The syntax tree of a `.lark` file: items, rule and terminal expressions.

use super::{Ebnf, Munch, Span};

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Atom {
    /// A rule, terminal or template parameter name.
    Name(String),
    /// A terminal of the embedded `common` module (used by `%extend` of an imported terminal).
    Common(String),
    Str {
        value: String,
        ci: bool,
    },
    Regex {
        /// The body between the slashes, as written.
        body: String,
        flags: String,
        /// Byte offset of the body in the source (for error locations).
        body_start: usize,
    },
    Range(char, char),
    /// A token reference (`<|tool_call|>`, `<[128010]>`, `<[^128000-128255]>`).
    Tokens(crate::TokenSet),
    /// `%json { ... }`: the schema's text and where it starts in the source.
    Json {
        text: String,
        start: usize,
    },
    Template(String, Vec<(Atom, Span)>),
}

pub(super) type Ex = Ebnf<Atom>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum DefKind {
    Define,
    Override,
    Extend,
}

#[derive(Clone, Debug)]
pub(super) struct RuleDef {
    pub(super) name: String,
    pub(super) name_span: Span,
    pub(super) params: Vec<(String, Span)>,
    pub(super) body: Ex,
}

#[derive(Clone, Debug)]
pub(super) struct TermDef {
    pub(super) name: String,
    pub(super) name_span: Span,
    pub(super) priority: i32,
    pub(super) body: Ex,
}

#[derive(Clone, Debug)]
pub(super) struct ImportName {
    pub(super) name: String,
    pub(super) name_span: Span,
    pub(super) alias: String,
}

#[derive(Clone, Debug)]
pub(super) enum Item {
    Rule(RuleDef, DefKind),
    Term(TermDef, DefKind),
    Ignore(Ex),
    Import { module: String, module_span: Span, relative: bool, names: Vec<ImportName> },
    Munch { mode: Munch, targets: Vec<(Atom, Span)> },
}

pub(super) fn is_rule_name(s: &str) -> bool {
    let t = s.strip_prefix('_').unwrap_or(s);
    t.starts_with(|c: char| c.is_ascii_lowercase())
        && t.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

pub(super) fn is_term_name(s: &str) -> bool {
    let t = s.strip_prefix('_').unwrap_or(s);
    t.starts_with(|c: char| c.is_ascii_uppercase())
        && t.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}
