//! The Lark front-end: Lark grammar text → [`Grammar`] (ARCHITECTURE.md "Crates").
//!
//! # Supported dialect
//!
//! * Rules `name: alt | alt`, with the tree-shaping prefixes `?name`, `!name`, `_name` (accepted,
//!   no effect on the language) and rule priorities `name.2:` (accepted and ignored). Alternatives
//!   may continue on following lines that start with `|`. Aliases `-> name` are accepted and ignored.
//! * Comments `// ...` and `# ...`; a `\` at the end of a line continues it.
//! * Terminal definitions `NAME: expr` and `NAME.N: expr` (priority `N`, may be negative; priorities
//!   are contextual, ARCHITECTURE.md "The contract": they rank same-length matches against what the parser can shift).
//!   A terminal definition may use string literals, regex literals, ranges `"a".."z"`, other
//!   terminals, groups, `|`, `?`, `*`, `+`, `[...]`, `~ n` and `~ n..m`; it compiles into one Rust
//!   regex. Recursive terminal definitions are an error.
//! * String literals `"..."` with Lark's escapes (`\"`, `\\`, `\n`, `\t`, `\r`, `\f`, `\xNN`,
//!   `\uNNNN`, `\UNNNNNNNN`; any other `\c` is a literal backslash followed by `c`) and the `i`
//!   (case-insensitive) flag. An empty literal `""` inside a rule means ε.
//! * Regex literals `/.../flags` with flags `i`, `m`, `s`, `x`, `u` (turned into a scoped inline
//!   group such as `(?i:...)`). The body is Rust `regex` syntax; a few Python-isms are translated
//!   (`\/` → `/`, `\<`/`\>` → literal `<`/`>`, `[` inside a class → `\[`, a `{` that does not start a
//!   counted repetition → `\{`, `{,n}` → `{0,n}`). Look-around, `\Z`, back-references, anchors and
//!   word boundaries (`^`, `$`, `\b`, ...) are errors: a terminal is matched against a whole lexeme.
//!   A pattern with a lazy quantifier (`*?`, `+?`, `??`, `{m,n}?`) marks its terminal
//!   [`Terminal::lazy`]: it is read leftmost-first, as Python's `re` (and so Lark) reads it.
//! * In rules, an inline literal becomes an anonymous terminal named by its source text (`"{"`,
//!   `/[a-z]+/`, `"a".."z"`), deduplicated by pattern and flags; a literal equal to a named
//!   terminal's literal definition (e.g. `COMMA: ","` and `","`) reuses that terminal, as Lark does.
//! * EBNF in rules (`?`, `*`, `+`, `[...]`, `~ n`, `~ n..m`, groups, nested alternatives) is lowered
//!   to fresh helper nonterminals (`rule__opt1`, `rule__star2`, `rule__plus3`, `rule__group4`,
//!   `rule__rep5`), repetitions left-recursive.
//! * Templates: `name{a, b}: ...` defines a template, `name{X, "x"}` instantiates it (a fresh
//!   nonterminal `name{X,"x"}` per distinct argument list).
//! * `%ignore NAME`, `%ignore "lit"`, `%ignore /re/` (and any terminal expression, which becomes a
//!   terminal `__IGNORE_n` as in Lark).
//! * `%import common.X`, `%import common.X -> Y`, `%import common (X, Y)`, resolved against an
//!   embedded copy of Lark's `common.lark` (see `lark_common.lark`, adjusted where Python regex
//!   semantics differ). Other modules and relative imports are errors naming the module.
//! * `%override` and `%extend` of rules and terminals.
//! * `%declare` is an error: declared terminals come from a post-lexer, which dwac does not have.
//!
//! * Token references in rules (llguidance's extension; docs/CONSTRUCTION.md, "Token terminals"):
//!   `<|tool_call|>` (the token spelled so), `<[128010]>`, `<[128000-128255]>`, `<[1,5-9]>`, and
//!   `<[^...]>` (any token but these, text included) directly under `*` or `+`. Each distinct set
//!   is one terminal, resolved against the vocabulary by the compiler. Not inside terminals.
//! * `%json { ... }` in rules (llguidance's extension): a JSON Schema as a nonterminal,
//!   compiled as `dwac compile schema.json` compiles it, lexed apart from the grammar around it
//!   (`lower/json.rs`).
//!
//! Only terminals that rules (or `%ignore`) use end up in the grammar, as in Lark. The start rule
//! is `start` unless [`LarkOptions::start`] names another.
//!
//! # Munch extension
//!
//! Every terminal gets [`Munch::Global`] (the conventional longest-match lexer). The directive
//!
//! ```text
//! %munch own NAME "literal" ...
//! %munch none NAME ...
//! %munch global NAME ...
//! ```
//!
//! sets the munch mode of the named terminals (or of the anonymous terminals of the given literals):
//! `own` is per-terminal longest match (`K_t = {t}`), `none` lets the parser decide every
//! segmentation (`K_t = ∅`). Grammars without `%munch` mean exactly what they mean in Lark.

use crate::{Grammar, GrammarError, Munch, Span, Symbol, Terminal, Warning};
use std::collections::HashMap;

mod ast;
mod lexer;
mod lower;
mod parser;

use crate::ebnf::{
    check_terminal_regex, escape_literal, hir_has_lazy, lower_repeat, parse_token_ref, push_regex_char,
    regex_error_kind, regex_error_span, Ebnf, Helpers,
};
use ast::{is_rule_name, is_term_name, Atom, DefKind, Ex, ImportName, Item, RuleDef, TermDef};
use lexer::{err, lex, Tk, Tok};
use lower::{load_common, Ctx};
use parser::{translate_regex, Parser};

/// Lark's `common.lark` (MIT), adjusted for Rust regex semantics; see the file's header.
const COMMON_LARK: &str = include_str!("lark_common.lark");

/// Deepest nesting of groups / template instantiations / terminal references accepted.
const MAX_NESTING: usize = 200;

/// Options for [`parse_with_options`].
#[derive(Clone, Debug, Default)]
pub struct LarkOptions {
    /// The start rule; `start` if `None`.
    pub start: Option<String>,
    /// `%json` schemas in strict mode ([`crate::schema::SchemaOptions::strict`]: keys and items a
    /// schema does not name are not allowed).
    pub strict: bool,
}

/// Parse a Lark grammar whose start rule is `start`.
pub fn parse(source: &str) -> Result<Grammar, GrammarError> {
    parse_with_options(source, &LarkOptions::default())
}

/// Parse a Lark grammar.
pub fn parse_with_options(source: &str, options: &LarkOptions) -> Result<Grammar, GrammarError> {
    Ok(parse_with_warnings(source, options)?.0)
}

/// Parse a Lark grammar, also returning the warnings of the JSON Schemas it embeds (`%json`:
/// unknown keywords, unenforced formats), located at each `%json`.
pub fn parse_with_warnings(source: &str, options: &LarkOptions) -> Result<(Grammar, Vec<Warning>), GrammarError> {
    let items = Parser::new(source)?.parse_file()?;
    let common = load_common()?;
    let mut ctx = Ctx::new(source, common);
    ctx.strict = options.strict;
    ctx.collect(items)?;
    let start = options.start.clone().unwrap_or_else(|| "start".to_string());
    ctx.lower(&start)
}
