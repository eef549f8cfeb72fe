//! JSON Schema → grammar IR.
//!
//! A schema compiles to the same IR as a Lark grammar: JSON punctuation, string and number
//! terminals (regexes over the lexemes, built by [`strings`] and [`numbers`]), and one
//! nonterminal per *conjunction* of subschemas (so `allOf`, `$ref` with siblings and
//! `anyOf` distributed over sibling keywords are intersections, and recursive `$ref`s are
//! recursive nonterminals). Everything downstream (lexer, LR tables, GLR commit, the
//! reference mask) applies unchanged.
//!
//! Policies (part of the compiled grammar's identity):
//! - Whitespace: flexible (RFC 8259: any `[ \t\n\r]*` between tokens, default) or compact.
//! - Property order: fixed to definition order: a schema's `properties` in order, then
//!   `required` names it does not list; keys the schema does not name (additional and
//!   pattern properties) come after them. [`order_instance`] serializes instances the same way.
//! - No nesting limit is needed: recursion is grammar recursion.
//!
//! `not` compiles where its complement is regular at that place (`flat::Negation`): types, key
//! sets (presence states of the object), `pattern` and string `const`/`enum` (the string
//! terminal's `except` list, every spelling of each string), booleans and `null`, and closed key
//! sets (`not: {additionalProperties: false, properties}`: some key outside them, presence states).
//!
//! `if`/`then`/`else` on a discriminator, and every other schema dependency than the
//! key-presence ones, are rewritten as unions before anything else (`conditional.rs`).
//!
//! `uniqueItems: true` compiles over finite item domains (a state per set of values used);
//! `dependentSchemas` that only require keys are key-presence constraints; a `oneOf` of strings
//! whose branches overlap is exactly one branch by differences of their languages; another
//! overlapping `oneOf` is rewritten as the union of its cells `Bᵢ ∧ ⋀ ¬Bⱼ` where every branch's
//! complement has an exact form (`complement.rs`), and the build starts again on that; so is a
//! `not` none of whose forms above fits, as the union of its subschema's violations.
//!
//! Refusals are loud: a keyword we cannot honour exactly (other `not`s, other `if`/`then`/`else`s,
//! other `uniqueItems`, `maxContains`, remote `$ref`, other `oneOf`s
//! whose branches may overlap, …) is a [`SchemaError`] naming the keyword and its JSON pointer.
//! With `lenient`, such keywords are dropped and each drop is listed in the warnings.
//! Unknown formats are annotations (as the specification says) and produce a warning.

mod build;
mod complement;
mod conditional;
mod doc;
mod flat;
mod lint;
pub mod numbers;
mod order;
mod patterns;
mod strict;
pub mod strings;
mod validate;

use std::fmt;

use serde_json::Value;

use crate::ir::Grammar;

pub use build::{compile_schema, LITERAL_COMPONENTS};
pub use order::{order_instance, order_instance_with};
pub use strict::strict_schema;

/// The JSON Schema dialect, from `$schema` (2020-12 when absent or unknown).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Draft {
    /// Draft 4 (`draft-04`).
    Draft4,
    /// Draft 6 (`draft-06`).
    Draft6,
    /// Draft 7 (`draft-07`).
    Draft7,
    /// Draft 2019-09.
    Draft2019,
    /// Draft 2020-12.
    Draft2020,
}

impl Draft {
    /// The names the CLI and the Python package take for a dialect.
    pub const NAMES: [&'static str; 5] = ["draft4", "draft6", "draft7", "2019-09", "2020-12"];

    /// The dialect of one of [`Draft::NAMES`].
    pub fn from_name(name: &str) -> Option<Draft> {
        match name {
            "draft4" => Some(Draft::Draft4),
            "draft6" => Some(Draft::Draft6),
            "draft7" => Some(Draft::Draft7),
            "2019-09" => Some(Draft::Draft2019),
            "2020-12" => Some(Draft::Draft2020),
            _ => None,
        }
    }

    /// The dialect named by `$schema`, or `default` when it names none we know.
    pub fn detect_or(schema: &Value, default: Draft) -> Draft {
        let s = schema.get("$schema").and_then(Value::as_str).unwrap_or("");
        if s.contains("draft-04")
            || s.contains("draft-06")
            || s.contains("draft-07")
            || s.contains("2019-09")
            || s.contains("2020-12")
        {
            Draft::detect(schema)
        } else {
            default
        }
    }

    /// The dialect named by `$schema`, or 2020-12 when it names none we know.
    pub fn detect(schema: &Value) -> Draft {
        let s = schema.get("$schema").and_then(Value::as_str).unwrap_or("");
        if s.contains("draft-04") {
            Draft::Draft4
        } else if s.contains("draft-06") {
            Draft::Draft6
        } else if s.contains("draft-07") {
            Draft::Draft7
        } else if s.contains("2019-09") {
            Draft::Draft2019
        } else {
            Draft::Draft2020
        }
    }

    /// `$ref` replaces its sibling keywords (draft-07 and earlier).
    pub fn ref_overrides_siblings(self) -> bool {
        self <= Draft::Draft7
    }

    /// `items` as an array is a tuple (draft 2019-09 and earlier); 2020-12 has `prefixItems`.
    pub fn items_array_is_tuple(self) -> bool {
        self <= Draft::Draft2019
    }
}

/// The largest [`Whitespace::Around`] bound (each allowed character is a lexer state around
/// every punctuation mark).
pub const MAX_WHITESPACE_RUN: u32 = 256;

/// JSON whitespace between tokens.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Whitespace {
    /// RFC 8259: `[ \t\n\r]*` between any two tokens.
    #[default]
    Flexible,
    /// No whitespace at all.
    Compact,
    /// Exactly these separators between items (`item`, e.g. `", "`) and between a key and its
    /// value (`key`, e.g. `": "`), and no other whitespace: Python's `json.dumps` layout with
    /// `(", ", ": ")`, XGrammar's `separators` without `any_whitespace`, and glrmask's fixed
    /// lowering. Each is its punctuation character with JSON whitespace (`[ \t\n\r]`) around
    /// it ([`Whitespace::check`]).
    Separators {
        /// Between array items and between object members; contains `,`.
        item: String,
        /// Between an object key and its value; contains `:`.
        key: String,
    },
    /// JSON whitespace only between tokens, as part of the punctuation's lexemes (after `{` and
    /// `[`, before `}` and `]`, around `,` and `:`), at most `max` characters on each side of a
    /// mark (`None`: any number; so at most `max` in a row, `2·max` inside an empty `[ ]` or
    /// `{ }`), and none before or after the whole value. No ignored terminal: a schema embedded in a grammar (`%json`, a structural tag's
    /// `json_schema`) keeps its whitespace to itself, and whitespace cannot run away (XGrammar's
    /// `max_whitespace_cnt`, `dwac compile --max-whitespace`).
    Around {
        /// The most whitespace characters on each side of a punctuation mark (`None`: any
        /// number); [`Whitespace::check`] refuses more than [`MAX_WHITESPACE_RUN`].
        max: Option<u32>,
    },
}

impl Whitespace {
    /// Python `json.dumps`'s default layout (`", "`, `": "`), which glrmask's schema lowering
    /// also uses.
    pub fn python_separators() -> Whitespace {
        Whitespace::Separators { item: ", ".into(), key: ": ".into() }
    }

    /// A separator is its punctuation character (`,` for `item`, `:` for `key`) exactly once,
    /// with only JSON whitespace around it; anything else would change what JSON is.
    pub fn check(&self) -> Result<(), SchemaError> {
        if let Whitespace::Around { max: Some(n) } = self {
            if *n > MAX_WHITESPACE_RUN {
                return Err(SchemaError::new(
                    "max_whitespace",
                    "",
                    format!(
                        "a whitespace bound of {n} is over {MAX_WHITESPACE_RUN}: each allowed character is a lexer \
                         state; leave the bound out for unbounded whitespace"
                    ),
                ));
            }
        }
        if let Whitespace::Separators { item, key } = self {
            for (sep, punct, what) in [(item, ',', "item"), (key, ':', "key")] {
                let ok = sep.chars().filter(|&c| c == punct).count() == 1
                    && sep.chars().all(|c| c == punct || matches!(c, ' ' | '\t' | '\n' | '\r'));
                if !ok {
                    return Err(SchemaError::new(
                        "separators",
                        "",
                        format!(
                            "the {what} separator {sep:?} must be `{punct}` once with only JSON whitespace \
                             (space, tab, newline, carriage return) around it"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Compilation policies; part of the compiled grammar's identity.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SchemaOptions {
    /// Where JSON whitespace may go in an instance.
    pub whitespace: Whitespace,
    /// Drop keywords we cannot honour (with a warning each) instead of refusing the schema.
    pub lenient: bool,
    /// The dialect when `$schema` names none (2020-12 if `None`).
    pub default_draft: Option<Draft>,
    /// Keys and items the schema does not name are not allowed (an object with `properties` or
    /// `patternProperties` and no `additionalProperties` takes `additionalProperties: false`;
    /// `prefixItems` without `items`, `items: false`), as XGrammar's `strict_mode` and OpenAI's
    /// strict function calling: `strict.rs` says where exactly.
    pub strict: bool,
}

/// A schema we refuse, naming the keyword and where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaError {
    /// The keyword at fault (`not`, `enum`, ...), or the option (`separators`, `max_whitespace`).
    pub keyword: String,
    /// JSON pointer of the subschema holding the keyword (`""` is the root).
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

impl SchemaError {
    /// An error about `keyword` in the subschema at the JSON pointer `pointer`.
    pub fn new(keyword: impl Into<String>, pointer: &str, message: impl Into<String>) -> SchemaError {
        SchemaError { keyword: keyword.into(), pointer: pointer.to_string(), message: message.into() }
    }
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() { "#" } else { &self.pointer };
        write!(f, "schema keyword `{}` at {}: {}", self.keyword, at, self.message)
    }
}

impl std::error::Error for SchemaError {}

/// A compiled schema.
#[derive(Clone, Debug)]
pub struct SchemaGrammar {
    /// The grammar of the schema's instances.
    pub grammar: Grammar,
    /// Dropped keywords (lenient mode) and ignored annotations worth knowing about.
    pub warnings: Vec<String>,
    /// The dialect the schema is read in.
    pub draft: Draft,
}
