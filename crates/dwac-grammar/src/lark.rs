//! The Lark front-end: Lark grammar text → [`Grammar`] (DESIGN.md §7).
//!
//! # Supported dialect
//!
//! * Rules `name: alt | alt`, with the tree-shaping prefixes `?name`, `!name`, `_name` (accepted,
//!   no effect on the language) and rule priorities `name.2:` (accepted and ignored). Alternatives
//!   may continue on following lines that start with `|`. Aliases `-> name` are accepted and ignored.
//! * Comments `// ...` and `# ...`; a `\` at the end of a line continues it.
//! * Terminal definitions `NAME: expr` and `NAME.N: expr` (priority `N`, may be negative; priorities
//!   are contextual, DESIGN.md §2: they rank same-length matches against what the parser can shift).
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

use crate::{Grammar, GrammarError, Munch, Span, Symbol, Terminal};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

/// Lark's `common.lark` (MIT), adjusted for Rust regex semantics; see the file's header.
const COMMON_LARK: &str = include_str!("lark_common.lark");

/// Deepest nesting of groups / template instantiations / terminal references accepted.
const MAX_NESTING: usize = 200;
/// Largest count accepted in `~ n..m` / `{m,n}` repetitions of rule items.
pub(crate) const MAX_REPEAT: u32 = 4096;

/// Options for [`parse_with_options`].
#[derive(Clone, Debug, Default)]
pub struct LarkOptions {
    /// The start rule; `start` if `None`.
    pub start: Option<String>,
}

/// Parse a Lark grammar whose start rule is `start`.
pub fn parse(source: &str) -> Result<Grammar, GrammarError> {
    parse_with_options(source, &LarkOptions::default())
}

/// Parse a Lark grammar.
pub fn parse_with_options(source: &str, options: &LarkOptions) -> Result<Grammar, GrammarError> {
    let items = Parser::new(source)?.parse_file()?;
    let common = load_common()?;
    let mut ctx = Ctx::new(source, common);
    ctx.collect(items)?;
    let start = options.start.clone().unwrap_or_else(|| "start".to_string());
    ctx.lower(&start)
}

// ---------------------------------------------------------------------------------------------
// Shared EBNF tree and lowering helpers (also used by the GBNF front-end).

/// An EBNF expression over atoms `A`.
#[derive(Clone, Debug)]
pub(crate) enum Ebnf<A> {
    Alt(Vec<Ebnf<A>>, Span),
    Seq(Vec<Ebnf<A>>, Span),
    Rep { inner: Box<Ebnf<A>>, min: u32, max: Option<u32>, span: Span },
    Atom(A, Span),
}

impl<A> Ebnf<A> {
    pub(crate) fn span(&self) -> Span {
        match self {
            Ebnf::Alt(_, s) | Ebnf::Seq(_, s) | Ebnf::Atom(_, s) => *s,
            Ebnf::Rep { span, .. } => *span,
        }
    }
}

/// Fresh helper nonterminal names (`rule__star1`) that never collide with user names.
#[derive(Default)]
pub(crate) struct Helpers {
    used: HashSet<String>,
    counters: HashMap<String, u32>,
}

impl Helpers {
    pub(crate) fn reserve(&mut self, name: &str) {
        self.used.insert(name.to_string());
    }

    pub(crate) fn fresh(&mut self, g: &mut Grammar, base: &str, kind: &str, span: Span) -> u32 {
        let counter = self.counters.entry(base.to_string()).or_insert(0);
        loop {
            *counter += 1;
            let name = format!("{base}__{kind}{counter}");
            if self.used.insert(name.clone()) {
                return g.add_nonterminal(name, Some(span));
            }
        }
    }
}

/// Lower a repetition of `alts` (alternatives of symbol sequences) `min..=max` times
/// (`max = None`: unbounded) into helper nonterminals; returns the symbols that replace it.
/// Repetitions are left-recursive: `R → ε | R x`, `R → x | R x`.
pub(crate) fn lower_repeat(
    g: &mut Grammar,
    h: &mut Helpers,
    base: &str,
    alts: Vec<Vec<Symbol>>,
    min: u32,
    max: Option<u32>,
    span: Span,
) -> Result<Vec<Symbol>, String> {
    if let Some(m) = max {
        if m < min {
            return Err(format!("repetition minimum {min} is greater than its maximum {m}"));
        }
    }
    let biggest = max.unwrap_or(min);
    if biggest > MAX_REPEAT {
        return Err(format!("repetition count {biggest} is too large (the limit is {MAX_REPEAT})"));
    }
    // (ε | x){n,m} = x{0,m}: drop empty alternatives so that no unit cycle `R → R` appears.
    let (alts, min) = if alts.iter().any(Vec::is_empty) {
        (alts.into_iter().filter(|a| !a.is_empty()).collect::<Vec<_>>(), 0)
    } else {
        (alts, min)
    };
    if max == Some(0) || alts.is_empty() {
        return Ok(Vec::new());
    }
    let add = |g: &mut Grammar, lhs: u32, rhs: Vec<Symbol>| g.add_rule(lhs, rhs, Some(span));
    // The repeated unit as a symbol sequence.
    let unit = |g: &mut Grammar, h: &mut Helpers| -> Vec<Symbol> {
        if alts.len() == 1 {
            return alts[0].clone();
        }
        let grp = h.fresh(g, base, "group", span);
        for a in &alts {
            add(g, grp, a.clone());
        }
        vec![Symbol::N(grp)]
    };
    Ok(match (min, max) {
        (0, Some(1)) => {
            let o = h.fresh(g, base, "opt", span);
            add(g, o, Vec::new());
            for a in &alts {
                add(g, o, a.clone());
            }
            vec![Symbol::N(o)]
        }
        (0, None) => {
            let s = h.fresh(g, base, "star", span);
            add(g, s, Vec::new());
            for a in &alts {
                let mut rhs = vec![Symbol::N(s)];
                rhs.extend_from_slice(a);
                add(g, s, rhs);
            }
            vec![Symbol::N(s)]
        }
        (_, None) => {
            let p = h.fresh(g, base, "plus", span);
            for a in &alts {
                add(g, p, a.clone());
                let mut rhs = vec![Symbol::N(p)];
                rhs.extend_from_slice(a);
                add(g, p, rhs);
            }
            let mut out = Vec::new();
            if min > 1 {
                let u = unit(g, h);
                for _ in 1..min {
                    out.extend_from_slice(&u);
                }
            }
            out.push(Symbol::N(p));
            out
        }
        (_, Some(m)) => {
            let u = unit(g, h);
            let mut out = Vec::new();
            for _ in 0..min {
                out.extend_from_slice(&u);
            }
            // O_k = zero to k copies: O_1 → ε | u, O_k → ε | O_(k-1) u.
            let mut prev: Option<u32> = None;
            for _ in min..m {
                let o = h.fresh(g, base, "rep", span);
                add(g, o, Vec::new());
                let mut rhs: Vec<Symbol> = prev.map(Symbol::N).into_iter().collect();
                rhs.extend_from_slice(&u);
                add(g, o, rhs);
                prev = Some(o);
            }
            out.extend(prev.map(Symbol::N));
            out
        }
    })
}

/// Append `c` to a regex, escaped so that it matches itself (inside a class if `in_class`).
pub(crate) fn push_regex_char(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        c if regex_syntax::is_meta_character(c) => {
            out.push('\\');
            out.push(c);
        }
        c if c.is_control() || (c.is_whitespace() && c != ' ') => {
            let _ = write!(out, "\\x{{{:X}}}", c as u32);
        }
        c => out.push(c),
    }
}

/// A regex matching exactly the string `s`.
pub(crate) fn escape_literal(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        push_regex_char(&mut out, c);
    }
    out
}

/// Validate a terminal's final regex: it must parse, match something non-empty and use no
/// look-around. `what` names the terminal in messages.
pub(crate) fn check_terminal_regex(regex: &str, what: &str) -> Result<(), String> {
    let hir = regex_syntax::Parser::new()
        .parse(regex)
        .map_err(|e| format!("terminal {what} has an invalid regex: {}", regex_error_kind(&e)))?;
    let props = hir.properties();
    if !props.look_set().is_empty() {
        return Err(format!(
            "terminal {what} uses anchors or word boundaries (`^`, `$`, `\\b`, ...), which are not supported"
        ));
    }
    match props.minimum_len() {
        Some(0) => Err(format!("terminal {what} matches the empty string")),
        None => Err(format!("terminal {what} can never match anything")),
        Some(_) => Ok(()),
    }
}

/// Does the pattern contain a non-greedy repetition?
fn hir_has_lazy(h: &regex_syntax::hir::Hir) -> bool {
    use regex_syntax::hir::HirKind;
    match h.kind() {
        HirKind::Repetition(r) => !r.greedy || hir_has_lazy(&r.sub),
        HirKind::Capture(c) => hir_has_lazy(&c.sub),
        HirKind::Concat(v) | HirKind::Alternation(v) => v.iter().any(hir_has_lazy),
        _ => false,
    }
}

fn regex_error_kind(e: &regex_syntax::Error) -> String {
    match e {
        regex_syntax::Error::Parse(a) => a.kind().to_string(),
        regex_syntax::Error::Translate(t) => t.kind().to_string(),
        other => other.to_string(),
    }
}

fn regex_error_span(e: &regex_syntax::Error) -> Option<(usize, usize)> {
    match e {
        regex_syntax::Error::Parse(a) => Some((a.span().start.offset, a.span().end.offset)),
        regex_syntax::Error::Translate(t) => Some((t.span().start.offset, t.span().end.offset)),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Lexer.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tk {
    Name,
    Str,
    Regex,
    Number,
    Directive,
    Colon,
    Pipe,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Dot,
    DotDot,
    Tilde,
    Arrow,
    Star,
    Plus,
    Question,
    Bang,
    Newline,
    Eof,
}

#[derive(Clone, Copy, Debug)]
struct Tok {
    kind: Tk,
    start: usize,
    end: usize,
}

impl Tok {
    fn span(&self) -> Span {
        Span::new(self.start, self.end)
    }
}

fn err(src: &str, start: usize, end: usize, msg: impl Into<String>) -> GrammarError {
    GrammarError::at(src, Span::new(start, end), msg)
}

fn char_at(src: &str, i: usize) -> char {
    src.get(i..).and_then(|s| s.chars().next()).unwrap_or('\0')
}

fn lex(src: &str) -> Result<Vec<Tok>, GrammarError> {
    let b = src.as_bytes();
    let n = b.len();
    let mut out: Vec<Tok> = Vec::new();
    let mut i = 0;
    let skip_to_eol = |mut j: usize| {
        while j < n && b[j] != b'\n' {
            j += 1;
        }
        j
    };
    while i < n {
        let c = b[i];
        let start = i;
        let single = |kind| Tok { kind, start, end: start + 1 };
        match c {
            b' ' | b'\t' | b'\r' | b'\x0c' => i += 1,
            b'\n' => {
                i += 1;
                if !out.is_empty() && out.last().map(|t| t.kind) != Some(Tk::Newline) {
                    out.push(Tok { kind: Tk::Newline, start, end: start + 1 });
                }
            }
            b'/' if b.get(i + 1) == Some(&b'/') => i = skip_to_eol(i),
            b'#' => i = skip_to_eol(i),
            b'\\' => {
                let mut j = i + 1;
                while j < n && (b[j] == b' ' || b[j] == b'\t' || b[j] == b'\r') {
                    j += 1;
                }
                if j < n && b[j] == b'\n' {
                    i = j + 1;
                } else {
                    return Err(err(src, i, i + 1, "unexpected `\\` (a line continuation must end its line)"));
                }
            }
            b'"' => {
                let mut j = i + 1;
                loop {
                    if j >= n || b[j] == b'\n' {
                        return Err(err(src, i, i + 1, "unterminated string literal"));
                    }
                    match b[j] {
                        b'\\' if matches!(b.get(j + 1), Some(b'"') | Some(b'\\')) => j += 2,
                        b'"' => break,
                        _ => j += 1,
                    }
                }
                j += 1;
                if b.get(j) == Some(&b'i') {
                    j += 1;
                }
                out.push(Tok { kind: Tk::Str, start, end: j });
                i = j;
            }
            b'/' => {
                let mut j = i + 1;
                let mut first_nl = None;
                loop {
                    if j >= n {
                        let end = first_nl.unwrap_or(n);
                        return Err(err(src, i, end.max(i + 1), "unterminated regex literal"));
                    }
                    match b[j] {
                        b'\\' if matches!(b.get(j + 1), Some(b'/') | Some(b'\\')) => j += 2,
                        b'/' => break,
                        b'\n' => {
                            first_nl.get_or_insert(j);
                            j += 1;
                        }
                        _ => j += 1,
                    }
                }
                j += 1;
                while j < n && b"imslux".contains(&b[j]) {
                    j += 1;
                }
                if let Some(nl) = first_nl {
                    if !src[i..j].rsplit('/').next().unwrap_or("").contains('x') {
                        return Err(err(
                            src,
                            i,
                            nl,
                            "unterminated regex literal (a regex may only span lines with the `x` flag)",
                        ));
                    }
                }
                out.push(Tok { kind: Tk::Regex, start, end: j });
                i = j;
            }
            b'%' => {
                let mut j = i + 1;
                while j < n && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                    j += 1;
                }
                if j == i + 1 {
                    return Err(err(src, i, i + 1, "expected a directive name after `%`"));
                }
                out.push(Tok { kind: Tk::Directive, start, end: j });
                i = j;
            }
            b'0'..=b'9' => {
                let mut j = i;
                while j < n && b[j].is_ascii_digit() {
                    j += 1;
                }
                out.push(Tok { kind: Tk::Number, start, end: j });
                i = j;
            }
            b'-' => {
                if b.get(i + 1) == Some(&b'>') {
                    out.push(Tok { kind: Tk::Arrow, start, end: i + 2 });
                    i += 2;
                } else if b.get(i + 1).is_some_and(u8::is_ascii_digit) {
                    let mut j = i + 1;
                    while j < n && b[j].is_ascii_digit() {
                        j += 1;
                    }
                    out.push(Tok { kind: Tk::Number, start, end: j });
                    i = j;
                } else {
                    return Err(err(src, i, i + 1, "unexpected `-` (did you mean `->`?)"));
                }
            }
            b'.' => {
                if b.get(i + 1) == Some(&b'.') {
                    out.push(Tok { kind: Tk::DotDot, start, end: i + 2 });
                    i += 2;
                } else {
                    out.push(single(Tk::Dot));
                    i += 1;
                }
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let mut j = i;
                while j < n && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                    j += 1;
                }
                out.push(Tok { kind: Tk::Name, start, end: j });
                i = j;
            }
            _ => {
                let kind = match c {
                    b':' => Tk::Colon,
                    b'|' => Tk::Pipe,
                    b'(' => Tk::LParen,
                    b')' => Tk::RParen,
                    b'[' => Tk::LBracket,
                    b']' => Tk::RBracket,
                    b'{' => Tk::LBrace,
                    b'}' => Tk::RBrace,
                    b',' => Tk::Comma,
                    b'~' => Tk::Tilde,
                    b'*' => Tk::Star,
                    b'+' => Tk::Plus,
                    b'?' => Tk::Question,
                    b'!' => Tk::Bang,
                    _ => {
                        let ch = char_at(src, i);
                        let msg = if ch == '\'' {
                            "unexpected `'`: Lark string literals use double quotes".to_string()
                        } else {
                            format!("unexpected character `{}`", ch.escape_debug())
                        };
                        return Err(err(src, i, i + ch.len_utf8(), msg));
                    }
                };
                out.push(single(kind));
                i += 1;
            }
        }
    }
    out.push(Tok { kind: Tk::Eof, start: n, end: n });
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Syntax tree.

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Atom {
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
    Template(String, Vec<(Atom, Span)>),
}

type Ex = Ebnf<Atom>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DefKind {
    Define,
    Override,
    Extend,
}

#[derive(Clone, Debug)]
struct RuleDef {
    name: String,
    name_span: Span,
    params: Vec<(String, Span)>,
    body: Ex,
}

#[derive(Clone, Debug)]
struct TermDef {
    name: String,
    name_span: Span,
    priority: i32,
    body: Ex,
}

#[derive(Clone, Debug)]
struct ImportName {
    name: String,
    name_span: Span,
    alias: String,
}

#[derive(Clone, Debug)]
enum Item {
    Rule(RuleDef, DefKind),
    Term(TermDef, DefKind),
    Ignore(Ex),
    Import { module: String, module_span: Span, relative: bool, names: Vec<ImportName> },
    Munch { mode: Munch, targets: Vec<(Atom, Span)> },
}

fn is_rule_name(s: &str) -> bool {
    let t = s.strip_prefix('_').unwrap_or(s);
    t.starts_with(|c: char| c.is_ascii_lowercase())
        && t.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn is_term_name(s: &str) -> bool {
    let t = s.strip_prefix('_').unwrap_or(s);
    t.starts_with(|c: char| c.is_ascii_uppercase())
        && t.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

// ---------------------------------------------------------------------------------------------
// Parser.

struct Parser<'s> {
    src: &'s str,
    toks: Vec<Tok>,
    pos: usize,
    depth: usize,
}

impl<'s> Parser<'s> {
    fn new(src: &'s str) -> Result<Parser<'s>, GrammarError> {
        Ok(Parser { src, toks: lex(src)?, pos: 0, depth: 0 })
    }

    fn peek(&self) -> Tok {
        self.toks[self.pos.min(self.toks.len() - 1)]
    }

    fn peek2(&self) -> Tok {
        self.toks[(self.pos + 1).min(self.toks.len() - 1)]
    }

    fn bump(&mut self) -> Tok {
        let t = self.peek();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn text(&self, t: Tok) -> &'s str {
        &self.src[t.start..t.end]
    }

    fn describe(&self, t: Tok) -> String {
        match t.kind {
            Tk::Newline => "end of line".to_string(),
            Tk::Eof => "end of input".to_string(),
            _ => format!("`{}`", self.text(t)),
        }
    }

    fn error(&self, t: Tok, msg: impl Into<String>) -> GrammarError {
        err(self.src, t.start, t.end, msg)
    }

    fn expect(&mut self, kind: Tk, what: &str) -> Result<Tok, GrammarError> {
        let t = self.peek();
        if t.kind == kind {
            Ok(self.bump())
        } else {
            Err(self.error(t, format!("expected {what}, found {}", self.describe(t))))
        }
    }

    /// In a comma-separated list: consume `,` (more items follow: `false`) or the closing
    /// token (`true`); anything else is an error naming both.
    fn comma_or_close(&mut self, close: Tk, close_str: &str) -> Result<bool, GrammarError> {
        let t = self.peek();
        if t.kind == Tk::Comma {
            self.bump();
            Ok(false)
        } else if t.kind == close {
            self.bump();
            Ok(true)
        } else {
            Err(self.error(t, format!("expected `,` or `{close_str}`, found {}", self.describe(t))))
        }
    }

    fn parse_file(&mut self) -> Result<Vec<Item>, GrammarError> {
        let mut items = Vec::new();
        loop {
            while self.peek().kind == Tk::Newline {
                self.bump();
            }
            if self.peek().kind == Tk::Eof {
                return Ok(items);
            }
            items.push(self.parse_statement()?);
            let t = self.peek();
            match t.kind {
                Tk::Newline | Tk::Eof => {}
                _ => return Err(self.error(t, format!("expected end of line, found {}", self.describe(t)))),
            }
        }
    }

    fn parse_statement(&mut self) -> Result<Item, GrammarError> {
        let t = self.peek();
        match t.kind {
            Tk::Directive => {
                let name = self.text(t);
                match name {
                    "%ignore" => {
                        self.bump();
                        if matches!(self.peek().kind, Tk::Newline | Tk::Eof) {
                            return Err(self.error(self.peek(), "expected a terminal after `%ignore`"));
                        }
                        Ok(Item::Ignore(self.parse_expansions()?))
                    }
                    "%import" => {
                        self.bump();
                        self.parse_import()
                    }
                    "%override" => {
                        self.bump();
                        self.parse_definition(DefKind::Override)
                    }
                    "%extend" => {
                        self.bump();
                        self.parse_definition(DefKind::Extend)
                    }
                    "%munch" => {
                        self.bump();
                        self.parse_munch()
                    }
                    "%declare" => Err(self.error(
                        t,
                        "unsupported directive `%declare`: declared terminals are produced by a post-lexer \
                         (such as an indenter), which dwac does not have",
                    )),
                    _ => Err(self.error(t, format!("unknown directive `{name}`"))),
                }
            }
            Tk::Name | Tk::Bang | Tk::Question => self.parse_definition(DefKind::Define),
            _ => Err(self.error(
                t,
                format!("expected a rule, a terminal definition or a directive, found {}", self.describe(t)),
            )),
        }
    }

    fn parse_definition(&mut self, kind: DefKind) -> Result<Item, GrammarError> {
        let mut modifiers = None;
        while matches!(self.peek().kind, Tk::Bang | Tk::Question) {
            let t = self.bump();
            modifiers.get_or_insert(t);
        }
        let name_tok = self.peek();
        if name_tok.kind != Tk::Name {
            return Err(
                self.error(name_tok, format!("expected a rule or terminal name, found {}", self.describe(name_tok)))
            );
        }
        self.bump();
        let name = self.text(name_tok).to_string();
        let is_rule = is_rule_name(&name);
        if !is_rule && !is_term_name(&name) {
            return Err(self.error(
                name_tok,
                format!(
                    "invalid name `{name}`: rule names are lowercase (`_?[a-z][_a-z0-9]*`), \
                     terminal names uppercase (`_?[A-Z][_A-Z0-9]*`)"
                ),
            ));
        }
        if let (Some(m), false) = (modifiers, is_rule) {
            return Err(self.error(m, format!("rule modifiers `?` and `!` cannot apply to terminal `{name}`")));
        }
        let mut params = Vec::new();
        if self.peek().kind == Tk::LBrace {
            let brace = self.bump();
            if !is_rule {
                return Err(self.error(brace, "terminals cannot have template parameters"));
            }
            loop {
                let p = self.expect(Tk::Name, "a template parameter name")?;
                let pname = self.text(p).to_string();
                if !is_rule_name(&pname) {
                    return Err(self.error(p, format!("template parameter `{pname}` must be a lowercase name")));
                }
                params.push((pname, p.span()));
                if self.comma_or_close(Tk::RBrace, "}")? {
                    break;
                }
            }
        }
        let mut priority = 0;
        if self.peek().kind == Tk::Dot {
            self.bump();
            priority = self.parse_number("a priority number after `.`")?;
        }
        let colon = self.peek();
        if colon.kind != Tk::Colon {
            let what = if is_rule { "rule" } else { "terminal" };
            return Err(
                self.error(colon, format!("expected `:` after {what} name `{name}`, found {}", self.describe(colon)))
            );
        }
        self.bump();
        let body = self.parse_expansions()?;
        let name_span = name_tok.span();
        Ok(if is_rule {
            Item::Rule(RuleDef { name, name_span, params, body }, kind)
        } else {
            Item::Term(TermDef { name, name_span, priority, body }, kind)
        })
    }

    fn parse_number(&mut self, what: &str) -> Result<i32, GrammarError> {
        let mut t = self.peek();
        let mut start = t.start;
        if t.kind == Tk::Plus {
            self.bump();
            t = self.peek();
            start = start.min(t.start);
        }
        if t.kind != Tk::Number {
            return Err(self.error(t, format!("expected {what}, found {}", self.describe(t))));
        }
        self.bump();
        self.text(t)
            .parse::<i32>()
            .map_err(|_| err(self.src, start, t.end, format!("number `{}` is out of range", self.text(t))))
    }

    fn parse_count(&mut self) -> Result<u32, GrammarError> {
        let t = self.peek();
        let v = self.parse_number("a repetition count")?;
        u32::try_from(v).map_err(|_| self.error(t, "a repetition count cannot be negative"))
    }

    fn parse_import(&mut self) -> Result<Item, GrammarError> {
        let mut relative = false;
        let first = self.peek();
        if first.kind == Tk::Dot {
            self.bump();
            relative = true;
        }
        let mut path = vec![self.expect(Tk::Name, "a module name after `%import`")?];
        while self.peek().kind == Tk::Dot {
            self.bump();
            path.push(self.expect(Tk::Name, "a name after `.`")?);
        }
        let mut names = Vec::new();
        let module_toks: &[Tok];
        if self.peek().kind == Tk::LParen {
            self.bump();
            module_toks = &path[..];
            loop {
                let t = self.expect(Tk::Name, "a name to import")?;
                let name = self.text(t).to_string();
                names.push(ImportName { alias: name.clone(), name, name_span: t.span() });
                if self.comma_or_close(Tk::RParen, ")")? {
                    break;
                }
            }
        } else {
            if path.len() < 2 {
                return Err(self.error(
                    path[0],
                    "expected `%import module.NAME`, `%import module.NAME -> ALIAS` or `%import module (NAME, ...)`",
                ));
            }
            let last = path[path.len() - 1];
            module_toks = &path[..path.len() - 1];
            let name = self.text(last).to_string();
            let mut alias = name.clone();
            if self.peek().kind == Tk::Arrow {
                self.bump();
                let a = self.expect(Tk::Name, "an alias name after `->`")?;
                alias = self.text(a).to_string();
                if is_rule_name(&name) != is_rule_name(&alias) {
                    return Err(self.error(a, format!("cannot import `{name}` as `{alias}`: the alias must be of the same kind (rule or terminal)")));
                }
            }
            names.push(ImportName { name, name_span: last.span(), alias });
        }
        let mstart = if relative { first.start } else { module_toks[0].start };
        let mend = module_toks[module_toks.len() - 1].end;
        let module = self.src[mstart..mend].to_string();
        Ok(Item::Import { module, module_span: Span::new(mstart, mend), relative, names })
    }

    fn parse_munch(&mut self) -> Result<Item, GrammarError> {
        let t = self.expect(Tk::Name, "a munch mode (`global`, `own` or `none`)")?;
        let mode = match self.text(t) {
            "global" => Munch::Global,
            "own" => Munch::Own,
            "none" => Munch::None,
            other => {
                return Err(self.error(t, format!("unknown munch mode `{other}` (expected `global`, `own` or `none`)")))
            }
        };
        let mut targets = Vec::new();
        while !matches!(self.peek().kind, Tk::Newline | Tk::Eof) {
            let t = self.peek();
            if !matches!(t.kind, Tk::Name | Tk::Str | Tk::Regex) {
                return Err(self.error(t, format!("expected a terminal name or literal, found {}", self.describe(t))));
            }
            match self.parse_atom()? {
                Ebnf::Atom(a, span) => targets.push((a, span)),
                other => {
                    return Err(err(
                        self.src,
                        other.span().start as usize,
                        other.span().end as usize,
                        "expected a terminal name or literal",
                    ))
                }
            }
        }
        if targets.is_empty() {
            return Err(self.error(self.peek(), "expected terminal names after `%munch` mode"));
        }
        Ok(Item::Munch { mode, targets })
    }

    fn enter(&mut self) -> Result<(), GrammarError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(self.error(self.peek(), "expression nested too deeply"));
        }
        Ok(())
    }

    fn parse_expansions(&mut self) -> Result<Ex, GrammarError> {
        self.enter()?;
        let start = self.peek().start;
        let mut alts = vec![self.parse_alias()?];
        loop {
            if self.peek().kind == Tk::Pipe {
                self.bump();
            } else if self.peek().kind == Tk::Newline && self.peek2().kind == Tk::Pipe {
                self.bump();
                self.bump();
            } else {
                break;
            }
            alts.push(self.parse_alias()?);
        }
        self.depth -= 1;
        Ok(collapse(alts, start, Ebnf::Alt))
    }

    fn parse_alias(&mut self) -> Result<Ex, GrammarError> {
        let e = self.parse_expansion()?;
        if self.peek().kind == Tk::Arrow {
            self.bump();
            let t = self.expect(Tk::Name, "an alias name after `->`")?;
            if !is_rule_name(self.text(t)) {
                return Err(self.error(t, "an alias must be a lowercase rule name"));
            }
        }
        Ok(e)
    }

    fn parse_expansion(&mut self) -> Result<Ex, GrammarError> {
        let start = self.peek().start;
        let mut items = Vec::new();
        while matches!(self.peek().kind, Tk::Name | Tk::Str | Tk::Regex | Tk::LParen | Tk::LBracket) {
            items.push(self.parse_expr()?);
        }
        if let Tk::Star | Tk::Plus | Tk::Question | Tk::Tilde = self.peek().kind {
            let t = self.peek();
            let stacked =
                items.last().is_some_and(|i| i.span().end as usize == t.start && matches!(i, Ebnf::Rep { .. }));
            let msg = if stacked {
                format!(
                    "unexpected `{}`: repetition operators cannot be stacked; use a group, e.g. `(a*)?`",
                    self.text(t)
                )
            } else {
                format!("`{}` must follow an item", self.text(t))
            };
            return Err(self.error(t, msg));
        }
        Ok(collapse(items, start, Ebnf::Seq))
    }

    fn parse_expr(&mut self) -> Result<Ex, GrammarError> {
        let atom = self.parse_atom()?;
        let s = atom.span().start as usize;
        let t = self.peek();
        let (min, max, end) = match t.kind {
            Tk::Star => (0, None, t.end),
            Tk::Plus => (1, None, t.end),
            Tk::Question => (0, Some(1), t.end),
            Tk::Tilde => {
                self.bump();
                let lo = self.parse_count()?;
                let mut hi = lo;
                if self.peek().kind == Tk::DotDot {
                    self.bump();
                    hi = self.parse_count()?;
                }
                let end = self.toks[self.pos - 1].end;
                if hi < lo {
                    return Err(err(
                        self.src,
                        t.start,
                        end,
                        format!("repetition range {lo}..{hi} is empty (minimum greater than maximum)"),
                    ));
                }
                return Ok(Ebnf::Rep { inner: Box::new(atom), min: lo, max: Some(hi), span: Span::new(s, end) });
            }
            _ => return Ok(atom),
        };
        self.bump();
        Ok(Ebnf::Rep { inner: Box::new(atom), min, max, span: Span::new(s, end) })
    }

    fn parse_atom(&mut self) -> Result<Ex, GrammarError> {
        let t = self.peek();
        match t.kind {
            Tk::LParen | Tk::LBracket => {
                self.bump();
                let inner = self.parse_expansions()?;
                let (close, what) = if t.kind == Tk::LParen { (Tk::RParen, "`)`") } else { (Tk::RBracket, "`]`") };
                let c = self.peek();
                if c.kind != close {
                    let open = GrammarError::at(self.src, t.span(), "");
                    let msg = format!(
                        "unclosed `{}` (opened at {}:{}): expected {what}, found {}",
                        self.text(t),
                        open.line,
                        open.column,
                        self.describe(c)
                    );
                    return Err(self.error(c, msg));
                }
                self.bump();
                let span = Span::new(t.start, c.end);
                Ok(if t.kind == Tk::LBracket {
                    Ebnf::Rep { inner: Box::new(inner), min: 0, max: Some(1), span }
                } else {
                    match inner {
                        Ebnf::Alt(a, _) => Ebnf::Alt(a, span),
                        Ebnf::Seq(a, _) => Ebnf::Seq(a, span),
                        other => other,
                    }
                })
            }
            Tk::Str => {
                self.bump();
                let (value, ci) = decode_string(self.src, t)?;
                if self.peek().kind == Tk::DotDot {
                    self.bump();
                    let t2 = self.expect(Tk::Str, "a string literal after `..`")?;
                    let (v2, _) = decode_string(self.src, t2)?;
                    let span = Span::new(t.start, t2.end);
                    let mut c1 = value.chars();
                    let mut c2 = v2.chars();
                    let (Some(lo), None, Some(hi), None) = (c1.next(), c1.next(), c2.next(), c2.next()) else {
                        return Err(err(self.src, t.start, t2.end, "range boundaries must be single characters"));
                    };
                    if lo > hi {
                        return Err(err(
                            self.src,
                            t.start,
                            t2.end,
                            format!("invalid range: {lo:?} comes after {hi:?}"),
                        ));
                    }
                    return Ok(Ebnf::Atom(Atom::Range(lo, hi), span));
                }
                Ok(Ebnf::Atom(Atom::Str { value, ci }, t.span()))
            }
            Tk::Regex => {
                self.bump();
                let raw = self.text(t);
                let close = raw.rfind('/').unwrap_or(0).max(1);
                let body = raw[1..close].to_string();
                let flags = raw[close + 1..].to_string();
                Ok(Ebnf::Atom(Atom::Regex { body, flags, body_start: t.start + 1 }, t.span()))
            }
            Tk::Name => {
                self.bump();
                let name = self.text(t).to_string();
                if !is_rule_name(&name) && !is_term_name(&name) {
                    return Err(self.error(
                        t,
                        format!("invalid name `{name}`: rule names are lowercase, terminal names uppercase"),
                    ));
                }
                if self.peek().kind == Tk::LBrace {
                    self.enter()?;
                    self.bump();
                    let mut args = Vec::new();
                    loop {
                        let a = self.peek();
                        if !matches!(a.kind, Tk::Name | Tk::Str | Tk::Regex) {
                            return Err(self.error(
                                a,
                                format!(
                                    "expected a template argument (a name or a literal), found {}",
                                    self.describe(a)
                                ),
                            ));
                        }
                        match self.parse_atom()? {
                            Ebnf::Atom(x, s) => args.push((x, s)),
                            other => {
                                let s = other.span();
                                return Err(err(
                                    self.src,
                                    s.start as usize,
                                    s.end as usize,
                                    "template arguments must be names or literals",
                                ));
                            }
                        }
                        if self.comma_or_close(Tk::RBrace, "}")? {
                            break;
                        }
                    }
                    self.depth -= 1;
                    let end = self.toks[self.pos - 1].end;
                    return Ok(Ebnf::Atom(Atom::Template(name, args), Span::new(t.start, end)));
                }
                Ok(Ebnf::Atom(Atom::Name(name), t.span()))
            }
            _ => Err(self.error(t, format!("expected a rule, terminal or literal, found {}", self.describe(t)))),
        }
    }
}

/// Decode a Lark string literal token (quotes and `i` flag included) the way Lark does.
fn decode_string(src: &str, t: Tok) -> Result<(String, bool), GrammarError> {
    let raw = &src[t.start..t.end];
    let ci = raw.ends_with('i');
    let inner = &raw[1..raw.len() - if ci { 2 } else { 1 }];
    let base = t.start + 1;
    let mut out = String::new();
    let mut it = inner.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some((_, e)) = it.next() else {
            out.push('\\');
            break;
        };
        match e {
            '\\' => out.push('\\'),
            '"' => out.push('"'),
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'f' => out.push('\x0c'),
            'x' | 'u' | 'U' => {
                let len = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut v = 0u32;
                for k in 0..len {
                    match it.peek().and_then(|&(_, d)| d.to_digit(16)) {
                        Some(d) => {
                            v = v * 16 + d;
                            it.next();
                        }
                        None => {
                            let end = base + i + 2 + k;
                            return Err(err(
                                src,
                                base + i,
                                end,
                                format!("invalid escape: `\\{e}` needs {len} hex digits"),
                            ));
                        }
                    }
                }
                match char::from_u32(v) {
                    Some(ch) => out.push(ch),
                    None => {
                        return Err(err(
                            src,
                            base + i,
                            base + i + 2 + len,
                            format!("invalid escape: U+{v:X} is not a Unicode scalar value"),
                        ))
                    }
                }
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    Ok((out, ci))
}

/// Translate a Lark (Python `re`) regex body into Rust `regex` syntax. Returns the translation and,
/// for every byte of it, the offset of the source byte it came from (plus one entry for the end).
fn translate_regex(body: &str) -> Result<(String, Vec<usize>), (usize, usize, String)> {
    let mut out = String::new();
    let mut map: Vec<usize> = Vec::new();
    let push = |out: &mut String, map: &mut Vec<usize>, s: &str, at: usize| {
        out.push_str(s);
        map.resize(out.len(), at);
    };
    let chars: Vec<(usize, char)> = body.char_indices().collect();
    let mut k = 0;
    let mut in_class = false;
    let mut class_start = 0; // index in `chars` of the first item of the current class
    while k < chars.len() {
        let (at, c) = chars[k];
        if c == '\\' {
            let Some(&(_, e)) = chars.get(k + 1) else {
                return Err((at, at + 1, "regex ends with a lone `\\`".to_string()));
            };
            match e {
                '/' | '"' | '<' | '>' => {
                    let mut buf = String::new();
                    push_regex_char(&mut buf, e);
                    push(&mut out, &mut map, &buf, at);
                }
                'Z' => {
                    return Err((at, at + 2, "`\\Z` (end-of-input anchor) is not supported in terminals".to_string()))
                }
                'b' if in_class => push(&mut out, &mut map, "\\x08", at),
                'p' | 'P' | 'x' | 'u' | 'U' | 'N' if chars.get(k + 2).map(|x| x.1) == Some('{') => {
                    let mut s = String::from('\\');
                    s.push(e);
                    k += 2;
                    while k < chars.len() {
                        s.push(chars[k].1);
                        if chars[k].1 == '}' {
                            break;
                        }
                        k += 1;
                    }
                    push(&mut out, &mut map, &s, at);
                    k += 1;
                    continue;
                }
                _ => {
                    let mut s = String::from('\\');
                    s.push(e);
                    push(&mut out, &mut map, &s, at);
                }
            }
            k += 2;
            continue;
        }
        if in_class {
            match c {
                ']' if k > class_start => in_class = false,
                '[' => {
                    push(&mut out, &mut map, "\\[", at);
                    k += 1;
                    continue;
                }
                '&' | '~' => {
                    let mut s = String::from('\\');
                    s.push(c);
                    push(&mut out, &mut map, &s, at);
                    k += 1;
                    continue;
                }
                _ => {}
            }
            let mut b = [0u8; 4];
            push(&mut out, &mut map, c.encode_utf8(&mut b), at);
            k += 1;
            continue;
        }
        match c {
            '[' => {
                in_class = true;
                push(&mut out, &mut map, "[", at);
                k += 1;
                if chars.get(k).map(|x| x.1) == Some('^') {
                    push(&mut out, &mut map, "^", chars[k].0);
                    k += 1;
                }
                class_start = k;
                continue;
            }
            '{' => {
                // A counted repetition `{n}`, `{n,}`, `{n,m}` or `{,m}`; otherwise a literal brace.
                let rest: String = chars[k..].iter().map(|x| x.1).take(24).collect();
                let close = rest.find('}');
                let quant = close.map(|e| &rest[1..e]).filter(|q| {
                    let (a, b) = q.split_once(',').unwrap_or((q, "0"));
                    !q.is_empty()
                        && a.chars().all(|c| c.is_ascii_digit())
                        && b.chars().all(|c| c.is_ascii_digit())
                        && !(a.is_empty() && b.is_empty())
                });
                match quant {
                    Some(q) => {
                        let q = q.to_string();
                        let fixed = if q.starts_with(',') { format!("{{0{q}}}") } else { format!("{{{q}}}") };
                        push(&mut out, &mut map, &fixed, at);
                        k += q.chars().count() + 2;
                    }
                    None => {
                        push(&mut out, &mut map, "\\{", at);
                        k += 1;
                    }
                }
                continue;
            }
            '}' => {
                push(&mut out, &mut map, "\\}", at);
                k += 1;
                continue;
            }
            _ => {}
        }
        let mut b = [0u8; 4];
        push(&mut out, &mut map, c.encode_utf8(&mut b), at);
        k += 1;
    }
    map.push(body.len());
    Ok((out, map))
}

// ---------------------------------------------------------------------------------------------
// Name resolution, terminal compilation and lowering.

/// The embedded `common` module: its terminal definitions.
struct Common {
    terms: HashMap<String, TermDef>,
}

fn load_common() -> Result<Common, GrammarError> {
    let items = Parser::new(COMMON_LARK)
        .and_then(|mut p| p.parse_file())
        .map_err(|e| GrammarError::global(format!("internal error: embedded common.lark: {e}")))?;
    let mut terms = HashMap::new();
    for it in items {
        if let Item::Term(t, _) = it {
            terms.insert(t.name.clone(), t);
        }
    }
    Ok(Common { terms })
}

#[derive(Clone, Debug)]
enum TermSrc {
    Local(TermDef),
    /// Imported from `common`: the name there, and the span of the import.
    Common {
        name: String,
        span: Span,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum TKey {
    Local(String),
    Common(String),
}

/// Regex precedence, to know when a piece needs a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Prec {
    Alt,
    Concat,
    Atom,
}

#[derive(Clone, Debug)]
struct Compiled {
    regex: String,
    prec: Prec,
    /// The pattern has a lazy quantifier (`*?`, `+?`, `??`, `{m,n}?`): Python reads it
    /// leftmost-first, and so does dwac ([`Terminal::lazy`]).
    lazy: bool,
}

fn group(c: &Compiled, need: Prec) -> String {
    if c.prec >= need {
        c.regex.clone()
    } else {
        format!("(?:{})", c.regex)
    }
}

/// The identity of an anonymous literal, for deduplication and reuse of named terminals.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum LitKey {
    Str(String, bool),
    Re(String, String),
    Range(char, char),
}

fn lit_key(a: &Atom) -> Option<LitKey> {
    match a {
        Atom::Str { value, ci } => {
            // `"*"i` is just `"*"`: the flag only matters for strings with cased characters.
            let cased = value.chars().any(|c| c.to_lowercase().ne(c.to_uppercase()));
            Some(LitKey::Str(value.clone(), *ci && cased))
        }
        Atom::Regex { body, flags, .. } => {
            let mut f: Vec<char> = flags.chars().collect();
            f.sort_unstable();
            f.dedup();
            Some(LitKey::Re(body.clone(), f.into_iter().collect()))
        }
        Atom::Range(a, b) => Some(LitKey::Range(*a, *b)),
        _ => None,
    }
}

/// The literal key of a terminal definition that is just a literal (or a sequence of strings).
fn def_key(e: &Ex) -> Option<LitKey> {
    match e {
        Ebnf::Atom(a, _) => lit_key(a),
        Ebnf::Seq(items, _) if !items.is_empty() => {
            let mut s = String::new();
            let mut flag = None;
            for it in items {
                let Ebnf::Atom(Atom::Str { value, ci }, _) = it else {
                    return None;
                };
                if *flag.get_or_insert(*ci) != *ci {
                    return None;
                }
                s.push_str(value);
            }
            Some(LitKey::Str(s, flag.unwrap_or(false)))
        }
        _ => None,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Origin {
    Local,
    Common,
}

struct Ctx<'s> {
    src: &'s str,
    common: Common,
    rules: Vec<RuleDef>,
    rule_index: HashMap<String, usize>,
    terms: HashMap<String, TermSrc>,
    term_order: Vec<String>,
    ignore: Vec<(String, Span)>,
    munch: Vec<(Munch, Atom, Span)>,
    compiled: HashMap<TKey, Compiled>,
    stack: Vec<(TKey, String)>,
}

struct Lowering {
    g: Grammar,
    helpers: Helpers,
    rule_nt: HashMap<String, u32>,
    named_terms: HashMap<String, u32>,
    anon_terms: HashMap<LitKey, u32>,
    anon_by_regex: HashMap<String, u32>,
    by_key: HashMap<LitKey, String>,
    instances: HashMap<(String, Vec<Symbol>), u32>,
    depth: usize,
}

type Env = HashMap<String, Symbol>;

impl<'s> Ctx<'s> {
    fn new(src: &'s str, common: Common) -> Ctx<'s> {
        Ctx {
            src,
            common,
            rules: Vec::new(),
            rule_index: HashMap::new(),
            terms: HashMap::new(),
            term_order: Vec::new(),
            ignore: Vec::new(),
            munch: Vec::new(),
            compiled: HashMap::new(),
            stack: Vec::new(),
        }
    }

    fn err(&self, span: Span, msg: impl Into<String>) -> GrammarError {
        GrammarError::at(self.src, span, msg)
    }

    fn line_of(&self, span: Span) -> usize {
        GrammarError::at(self.src, span, "").line
    }

    fn term_span(&self, name: &str) -> Option<Span> {
        match self.terms.get(name)? {
            TermSrc::Local(d) => Some(d.name_span),
            TermSrc::Common { span, .. } => Some(*span),
        }
    }

    fn define_term(&mut self, name: String, src: TermSrc, span: Span) -> Result<(), GrammarError> {
        if self.rule_index.contains_key(&name) || self.terms.contains_key(&name) {
            let prev = self.term_span(&name).or_else(|| self.rule_index.get(&name).map(|&i| self.rules[i].name_span));
            let line = prev.map_or(0, |s| self.line_of(s));
            return Err(self.err(span, format!("`{name}` is already defined (line {line})")));
        }
        self.term_order.push(name.clone());
        self.terms.insert(name, src);
        Ok(())
    }

    fn collect(&mut self, items: Vec<Item>) -> Result<(), GrammarError> {
        // Imports first, as Lark does.
        for it in &items {
            let Item::Import { module, module_span, relative, names } = it else {
                continue;
            };
            if *relative || module != "common" {
                let why = if *relative {
                    format!("cannot import from `{module}`: relative imports (other grammar files) are not supported")
                } else {
                    format!("cannot import from module `{module}`: only `common` (Lark's common.lark) is available")
                };
                return Err(self.err(*module_span, why));
            }
            for n in names {
                if !self.common.terms.contains_key(&n.name) {
                    return Err(self.err(n.name_span, format!("module `common` has no terminal `{}`", n.name)));
                }
                let src = TermSrc::Common { name: n.name.clone(), span: n.name_span };
                self.define_term(n.alias.clone(), src, n.name_span)?;
            }
        }
        let mut ignore_count = 0;
        for it in items {
            match it {
                Item::Import { .. } => {}
                Item::Rule(r, kind) => {
                    let existing = self.rule_index.get(&r.name).copied();
                    match (kind, existing) {
                        (DefKind::Define, None) => {
                            self.rule_index.insert(r.name.clone(), self.rules.len());
                            self.rules.push(r);
                        }
                        (DefKind::Define, Some(i)) => {
                            let line = self.line_of(self.rules[i].name_span);
                            return Err(self.err(
                                r.name_span,
                                format!(
                                    "rule `{}` is already defined (line {line}); use `%override` to replace it",
                                    r.name
                                ),
                            ));
                        }
                        (_, None) => {
                            return Err(self.err(
                                r.name_span,
                                format!("cannot {} rule `{}`: it is not defined", kind_verb(kind), r.name),
                            ));
                        }
                        (DefKind::Override, Some(i)) => {
                            let old = &mut self.rules[i];
                            old.params = r.params;
                            old.body = r.body;
                        }
                        (DefKind::Extend, Some(i)) => {
                            let old = &mut self.rules[i];
                            if old.params.len() != r.params.len() {
                                return Err(self.err(
                                    r.name_span,
                                    format!("`%extend {}` must have the same template parameters", r.name),
                                ));
                            }
                            let span = r.body.span();
                            let prev = std::mem::replace(&mut old.body, Ebnf::Seq(Vec::new(), span));
                            old.body = Ebnf::Alt(vec![prev, r.body], span);
                        }
                    }
                }
                Item::Term(t, kind) => {
                    let exists = self.terms.contains_key(&t.name);
                    match (kind, exists) {
                        (DefKind::Define, _) => {
                            let (name, span) = (t.name.clone(), t.name_span);
                            self.define_term(name, TermSrc::Local(t), span)?;
                        }
                        (_, false) => {
                            return Err(self.err(
                                t.name_span,
                                format!("cannot {} terminal `{}`: it is not defined", kind_verb(kind), t.name),
                            ));
                        }
                        (DefKind::Override, true) => {
                            self.terms.insert(t.name.clone(), TermSrc::Local(t));
                        }
                        (DefKind::Extend, true) => {
                            let old = self.terms.get(&t.name).cloned();
                            let span = t.body.span();
                            let (prev, priority) = match old {
                                Some(TermSrc::Local(d)) => (d.body, d.priority),
                                Some(TermSrc::Common { name, span }) => (Ebnf::Atom(Atom::Common(name), span), 0),
                                None => (Ebnf::Seq(Vec::new(), span), 0),
                            };
                            let body = Ebnf::Alt(vec![prev, t.body], span);
                            let def = TermDef { name: t.name.clone(), name_span: t.name_span, priority, body };
                            self.terms.insert(t.name, TermSrc::Local(def));
                        }
                    }
                }
                Item::Ignore(e) => {
                    let span = e.span();
                    if let Ebnf::Atom(Atom::Name(n), s) = &e {
                        if is_term_name(n) {
                            self.ignore.push((n.clone(), *s));
                            continue;
                        }
                        if is_rule_name(n) {
                            return Err(self.err(*s, format!("`%ignore` needs a terminal, but `{n}` is a rule")));
                        }
                    }
                    let name = loop {
                        let name = format!("__IGNORE_{ignore_count}");
                        ignore_count += 1;
                        if !self.terms.contains_key(&name) {
                            break name;
                        }
                    };
                    let def = TermDef { name: name.clone(), name_span: span, priority: 0, body: e };
                    self.define_term(name.clone(), TermSrc::Local(def), span)?;
                    self.ignore.push((name, span));
                }
                Item::Munch { mode, targets } => {
                    for (a, s) in targets {
                        self.munch.push((mode, a, s));
                    }
                }
            }
        }
        Ok(())
    }

    // --- terminals -------------------------------------------------------------------------

    /// Compile terminal `key` into one regex. `blame` is where errors inside `common` are reported.
    fn compile_term(&mut self, key: &TKey, blame: Span) -> Result<Compiled, GrammarError> {
        if let Some(c) = self.compiled.get(key) {
            return Ok(c.clone());
        }
        let name = match key {
            TKey::Local(n) | TKey::Common(n) => n.clone(),
        };
        if let Some(pos) = self.stack.iter().position(|(k, _)| k == key) {
            let mut cycle: Vec<String> = self.stack[pos..].iter().map(|(_, n)| n.clone()).collect();
            cycle.push(name.clone());
            let span = match key {
                TKey::Local(n) => self.term_span(n).unwrap_or(blame),
                TKey::Common(_) => blame,
            };
            return Err(self.err(span, format!("recursive terminal definition: {}", cycle.join(" -> "))));
        }
        if self.stack.len() > MAX_NESTING {
            return Err(self.err(blame, "terminal definitions nested too deeply"));
        }
        let (body, origin, blame) = match key {
            TKey::Local(n) => match self.terms.get(n).cloned() {
                Some(TermSrc::Local(d)) => (d.body, Origin::Local, d.name_span),
                Some(TermSrc::Common { name, span }) => {
                    let c = self.compile_term(&TKey::Common(name), span)?;
                    self.compiled.insert(key.clone(), c.clone());
                    return Ok(c);
                }
                None => return Err(self.err(blame, format!("undefined terminal `{n}`"))),
            },
            TKey::Common(n) => match self.common.terms.get(n) {
                Some(d) => (d.body.clone(), Origin::Common, blame),
                None => return Err(self.err(blame, format!("module `common` has no terminal `{n}`"))),
            },
        };
        self.stack.push((key.clone(), name));
        let r = self.compile_expr(&body, origin, blame);
        self.stack.pop();
        let c = r?;
        self.compiled.insert(key.clone(), c.clone());
        Ok(c)
    }

    fn compile_expr(&mut self, e: &Ex, origin: Origin, blame: Span) -> Result<Compiled, GrammarError> {
        let at = |s: Span| if origin == Origin::Local { s } else { blame };
        Ok(match e {
            Ebnf::Alt(alts, _) => {
                let mut parts = Vec::new();
                let mut lazy = false;
                for a in alts {
                    let c = self.compile_expr(a, origin, blame)?;
                    lazy |= c.lazy;
                    parts.push(c.regex);
                }
                Compiled { regex: parts.join("|"), prec: Prec::Alt, lazy }
            }
            Ebnf::Seq(items, _) => {
                if items.len() == 1 {
                    return self.compile_expr(&items[0], origin, blame);
                }
                let mut s = String::new();
                let mut lazy = false;
                for it in items {
                    let c = self.compile_expr(it, origin, blame)?;
                    lazy |= c.lazy;
                    s.push_str(&group(&c, Prec::Concat));
                }
                Compiled { regex: s, prec: Prec::Concat, lazy }
            }
            Ebnf::Rep { inner, min, max, .. } => {
                let c = self.compile_expr(inner, origin, blame)?;
                let base = group(&c, Prec::Atom);
                let op = match (min, max) {
                    (0, Some(1)) => "?".to_string(),
                    (0, None) => "*".to_string(),
                    (1, None) => "+".to_string(),
                    (n, None) => format!("{{{n},}}"),
                    (n, Some(m)) if n == m => format!("{{{n}}}"),
                    (n, Some(m)) => format!("{{{n},{m}}}"),
                };
                Compiled { regex: base + &op, prec: Prec::Concat, lazy: c.lazy }
            }
            Ebnf::Atom(a, span) => match a {
                Atom::Name(n) => {
                    if origin == Origin::Local && self.rule_index.contains_key(n) {
                        return Err(self.err(*span, format!("terminals cannot refer to rules, and `{n}` is a rule")));
                    }
                    if is_rule_name(n) {
                        return Err(
                            self.err(at(*span), format!("terminals cannot refer to rules: undefined terminal `{n}`"))
                        );
                    }
                    let key = match origin {
                        Origin::Local => TKey::Local(n.clone()),
                        Origin::Common => TKey::Common(n.clone()),
                    };
                    if origin == Origin::Local && !self.terms.contains_key(n) {
                        return Err(self.err(*span, format!("undefined terminal `{n}`")));
                    }
                    self.compile_term(&key, at(*span))?
                }
                Atom::Common(n) => self.compile_term(&TKey::Common(n.clone()), *span)?,
                Atom::Template(n, _) => {
                    return Err(self.err(at(*span), format!("terminals cannot use templates (`{n}{{...}}`)")));
                }
                lit => self.compile_literal(lit, at(*span), origin == Origin::Local)?,
            },
        })
    }

    /// Compile a string, regex or range literal. `exact_span`: `span` is the literal itself
    /// (so regex errors can point inside it).
    fn compile_literal(&self, a: &Atom, span: Span, exact_span: bool) -> Result<Compiled, GrammarError> {
        match a {
            Atom::Str { value, ci } => {
                let esc = escape_literal(value);
                Ok(if *ci && value.chars().any(|c| c.to_lowercase().ne(c.to_uppercase())) {
                    Compiled { regex: format!("(?i:{esc})"), prec: Prec::Atom, lazy: false }
                } else {
                    let prec = if value.chars().count() == 1 { Prec::Atom } else { Prec::Concat };
                    Compiled { regex: esc, prec, lazy: false }
                })
            }
            Atom::Range(lo, hi) => {
                let mut s = String::from("[");
                push_regex_char(&mut s, *lo);
                if lo != hi {
                    s.push('-');
                    push_regex_char(&mut s, *hi);
                }
                s.push(']');
                Ok(Compiled { regex: s, prec: Prec::Atom, lazy: false })
            }
            Atom::Regex { body, flags, body_start } => {
                let locate = |a: usize, b: usize, map: Option<&Vec<usize>>| -> Span {
                    if !exact_span {
                        return span;
                    }
                    let m = |x: usize| map.map_or(x, |m| m.get(x).copied().unwrap_or(body.len()));
                    let (s, e) = (body_start + m(a), body_start + m(b));
                    Span::new(s, e.max(s))
                };
                let (t, map) = translate_regex(body).map_err(|(a, b, msg)| self.err(locate(a, b, None), msg))?;
                let fl = |c| flags.contains(c);
                let parsed = regex_syntax::ParserBuilder::new()
                    .case_insensitive(fl('i'))
                    .multi_line(fl('m'))
                    .dot_matches_new_line(fl('s'))
                    .ignore_whitespace(fl('x'))
                    .build()
                    .parse(&t);
                let hir = match parsed {
                    Ok(h) => h,
                    Err(e) => {
                        let kind = regex_error_kind(&e);
                        let msg = if kind.contains("look-around") {
                            "look-around assertions (`(?=`, `(?!`, `(?<=`, `(?<!`) are not supported in terminals"
                                .to_string()
                        } else if kind.contains("backreference") {
                            "back-references are not supported in terminals".to_string()
                        } else {
                            format!("invalid regex: {kind}")
                        };
                        let sp = regex_error_span(&e).map_or(span, |(a, b)| locate(a, b, Some(&map)));
                        return Err(self.err(sp, msg));
                    }
                };
                if !hir.properties().look_set().is_empty() {
                    return Err(self.err(
                        span,
                        "anchors and word boundaries (`^`, `$`, `\\b`, `\\B`, `\\A`, `\\z`) are not supported in terminals",
                    ));
                }
                let lazy = hir_has_lazy(&hir);
                let flagset: String = flags.chars().filter(|c| "imsxu".contains(*c)).collect();
                if flagset.is_empty() {
                    let ast = regex_syntax::ast::parse::Parser::new().parse(&t);
                    let prec = match ast {
                        Ok(regex_syntax::ast::Ast::Alternation(_)) => Prec::Alt,
                        Ok(
                            regex_syntax::ast::Ast::Literal(_)
                            | regex_syntax::ast::Ast::Dot(_)
                            | regex_syntax::ast::Ast::ClassBracketed(_)
                            | regex_syntax::ast::Ast::ClassPerl(_)
                            | regex_syntax::ast::Ast::ClassUnicode(_)
                            | regex_syntax::ast::Ast::Group(_),
                        ) => Prec::Atom,
                        _ => Prec::Concat,
                    };
                    Ok(Compiled { regex: t, prec, lazy })
                } else {
                    let nl = if flagset.contains('x') { "\n" } else { "" };
                    Ok(Compiled { regex: format!("(?{flagset}:{t}{nl})"), prec: Prec::Atom, lazy })
                }
            }
            _ => Err(self.err(span, "internal error: not a literal")),
        }
    }

    // --- rules -------------------------------------------------------------------------------

    fn lower(mut self, start: &str) -> Result<Grammar, GrammarError> {
        // Validate every local terminal definition (also unused ones), in source order.
        for name in self.term_order.clone() {
            if let Some(TermSrc::Local(d)) = self.terms.get(&name) {
                let span = d.name_span;
                self.compile_term(&TKey::Local(name), span)?;
            }
        }
        let mut by_key = HashMap::new();
        for name in &self.term_order {
            let key = match self.terms.get(name) {
                Some(TermSrc::Local(d)) => def_key(&d.body),
                Some(TermSrc::Common { name: cn, .. }) => self.common.terms.get(cn).and_then(|d| def_key(&d.body)),
                None => None,
            };
            if let Some(k) = key {
                by_key.entry(k).or_insert_with(|| name.clone());
            }
        }
        let mut lw = Lowering {
            g: Grammar::default(),
            helpers: Helpers::default(),
            rule_nt: HashMap::new(),
            named_terms: HashMap::new(),
            anon_terms: HashMap::new(),
            anon_by_regex: HashMap::new(),
            by_key,
            instances: HashMap::new(),
            depth: 0,
        };
        for r in &self.rules {
            lw.helpers.reserve(&r.name);
        }
        for r in &self.rules {
            if r.params.is_empty() {
                let id = lw.g.add_nonterminal(r.name.clone(), Some(r.name_span));
                lw.rule_nt.insert(r.name.clone(), id);
            }
        }
        let Some(&start_id) = lw.rule_nt.get(start) else {
            let msg = if let Some(&i) = self.rule_index.get(start) {
                return Err(self.err(self.rules[i].name_span, format!("the start rule `{start}` cannot be a template")));
            } else if start == "start" {
                "grammar has no `start` rule (Lark grammars begin at the rule named `start`)".to_string()
            } else {
                format!("start rule `{start}` is not defined")
            };
            return Err(GrammarError::global(msg));
        };
        lw.g.start = start_id;
        let rules = self.rules.clone();
        for r in &rules {
            if !r.params.is_empty() {
                continue;
            }
            let lhs = lw.rule_nt[&r.name];
            let alts = self.lower_alts(&mut lw, &r.body, &r.name, &Env::new())?;
            for (rhs, span) in alts {
                lw.g.add_rule(lhs, rhs, Some(span));
            }
        }
        for (name, span) in self.ignore.clone() {
            if !self.terms.contains_key(&name) {
                return Err(self.err(span, format!("undefined terminal `{name}` in `%ignore`")));
            }
            let id = self.intern_named(&mut lw, &name, span)?;
            lw.g.terminals[id as usize].ignored = true;
        }
        for (mode, atom, span) in self.munch.clone() {
            let id = match &atom {
                Atom::Name(n) => {
                    if !self.terms.contains_key(n) {
                        return Err(self.err(span, format!("`%munch`: undefined terminal `{n}`")));
                    }
                    lw.named_terms.get(n).copied()
                }
                a => lit_key(a).and_then(|k| match lw.by_key.get(&k) {
                    Some(n) => lw.named_terms.get(n).copied(),
                    None => lw.anon_terms.get(&k).copied(),
                }),
            };
            if let Some(id) = id {
                lw.g.terminals[id as usize].munch = mode;
            }
        }
        lw.g.source = Some(self.src.into());
        Ok(lw.g)
    }

    fn intern_named(&mut self, lw: &mut Lowering, name: &str, use_span: Span) -> Result<u32, GrammarError> {
        if let Some(&id) = lw.named_terms.get(name) {
            return Ok(id);
        }
        let def_span = self.term_span(name).unwrap_or(use_span);
        let c = self.compile_term(&TKey::Local(name.to_string()), def_span)?;
        // Point at the definition's body (or the import) when the terminal itself is wrong.
        let body_span = match self.terms.get(name) {
            Some(TermSrc::Local(d)) => d.body.span(),
            _ => def_span,
        };
        check_terminal_regex(&c.regex, &format!("`{name}`")).map_err(|m| self.err(body_span, m))?;
        let priority = match self.terms.get(name) {
            Some(TermSrc::Local(d)) => d.priority,
            _ => 0,
        };
        let id = lw.g.add_terminal(Terminal {
            name: name.to_string(),
            regex: c.regex,
            priority,
            ignored: false,
            munch: Munch::Global,
            span: Some(def_span),
            also: Vec::new(),
            except: Vec::new(),
            component: 0,
            lazy: c.lazy,
        });
        lw.named_terms.insert(name.to_string(), id);
        Ok(id)
    }

    /// The symbol for an atom in a rule (`None` for the empty string literal).
    fn lower_atom(
        &mut self,
        lw: &mut Lowering,
        a: &Atom,
        span: Span,
        env: &Env,
    ) -> Result<Option<Symbol>, GrammarError> {
        match a {
            Atom::Name(n) => {
                if let Some(&s) = env.get(n) {
                    return Ok(Some(s));
                }
                if let Some(&id) = lw.rule_nt.get(n) {
                    return Ok(Some(Symbol::N(id)));
                }
                if self.rule_index.contains_key(n) {
                    return Err(self.err(span, format!("template `{n}` used without arguments")));
                }
                if self.terms.contains_key(n) {
                    return Ok(Some(Symbol::T(self.intern_named(lw, n, span)?)));
                }
                let what = if is_rule_name(n) { "rule" } else { "terminal" };
                Err(self.err(span, format!("undefined {what} `{n}`")))
            }
            Atom::Common(n) => Err(self.err(span, format!("internal error: unexpected reference to common.{n}"))),
            Atom::Str { value, .. } if value.is_empty() => Ok(None),
            Atom::Template(name, args) => {
                let Some(&ri) = self.rule_index.get(name) else {
                    return Err(self.err(span, format!("undefined template `{name}`")));
                };
                let params = self.rules[ri].params.clone();
                if params.is_empty() {
                    return Err(self.err(span, format!("`{name}` is not a template (it has no parameters)")));
                }
                if params.len() != args.len() {
                    return Err(self.err(
                        span,
                        format!("template `{name}` expects {} argument(s), got {}", params.len(), args.len()),
                    ));
                }
                let mut syms = Vec::new();
                for (a, s) in args {
                    match self.lower_atom(lw, a, *s, env)? {
                        Some(sym) => syms.push(sym),
                        None => return Err(self.err(*s, "an empty string cannot be a template argument")),
                    }
                }
                if let Some(&id) = lw.instances.get(&(name.clone(), syms.clone())) {
                    return Ok(Some(Symbol::N(id)));
                }
                if lw.instances.len() >= 10_000 || lw.depth > MAX_NESTING {
                    return Err(
                        self.err(span, "too many template instantiations (is a template expanding itself forever?)")
                    );
                }
                let arg_names: Vec<&str> = syms.iter().map(|s| lw.g.symbol_name(*s)).collect();
                let inst_name = format!("{name}{{{}}}", arg_names.join(","));
                lw.helpers.reserve(&inst_name);
                let id = lw.g.add_nonterminal(inst_name.clone(), Some(span));
                lw.instances.insert((name.clone(), syms.clone()), id);
                let mut inner_env = Env::new();
                for ((p, _), s) in params.iter().zip(syms) {
                    inner_env.insert(p.clone(), s);
                }
                let body = self.rules[ri].body.clone();
                lw.depth += 1;
                let alts = self.lower_alts(lw, &body, &inst_name, &inner_env);
                lw.depth -= 1;
                for (rhs, s) in alts? {
                    lw.g.add_rule(id, rhs, Some(s));
                }
                Ok(Some(Symbol::N(id)))
            }
            lit => {
                let Some(key) = lit_key(lit) else {
                    return Err(self.err(span, "internal error: not a literal"));
                };
                if let Some(name) = lw.by_key.get(&key).cloned() {
                    return Ok(Some(Symbol::T(self.intern_named(lw, &name, span)?)));
                }
                if let Some(&id) = lw.anon_terms.get(&key) {
                    return Ok(Some(Symbol::T(id)));
                }
                let c = self.compile_literal(lit, span, true)?;
                // Different spellings of the same pattern (`"a"`, `/a/`) share one terminal.
                if let Some(&id) = lw.anon_by_regex.get(&c.regex) {
                    lw.anon_terms.insert(key, id);
                    return Ok(Some(Symbol::T(id)));
                }
                let name = self.src[span.start as usize..span.end as usize].to_string();
                check_terminal_regex(&c.regex, &format!("`{name}`")).map_err(|m| self.err(span, m))?;
                let id = lw.g.add_terminal(Terminal {
                    name,
                    regex: c.regex,
                    priority: 0,
                    ignored: false,
                    munch: Munch::Global,
                    span: Some(span),
                    also: Vec::new(),
                    except: Vec::new(),
                    component: 0,
                    lazy: c.lazy,
                });
                lw.anon_terms.insert(key, id);
                lw.anon_by_regex.insert(lw.g.terminals[id as usize].regex.clone(), id);
                Ok(Some(Symbol::T(id)))
            }
        }
    }

    fn lower_alts(
        &mut self,
        lw: &mut Lowering,
        e: &Ex,
        base: &str,
        env: &Env,
    ) -> Result<Vec<(Vec<Symbol>, Span)>, GrammarError> {
        match e {
            Ebnf::Alt(alts, _) => {
                let mut out = Vec::new();
                for a in alts {
                    out.extend(self.lower_alts(lw, a, base, env)?);
                }
                Ok(out)
            }
            other => Ok(vec![(self.lower_seq(lw, other, base, env)?, other.span())]),
        }
    }

    fn lower_seq(&mut self, lw: &mut Lowering, e: &Ex, base: &str, env: &Env) -> Result<Vec<Symbol>, GrammarError> {
        match e {
            Ebnf::Seq(items, _) => {
                let mut out = Vec::new();
                for it in items {
                    out.extend(self.lower_seq(lw, it, base, env)?);
                }
                Ok(out)
            }
            Ebnf::Alt(_, span) => {
                let alts = self.lower_alts(lw, e, base, env)?;
                let h = lw.helpers.fresh(&mut lw.g, base, "group", *span);
                for (rhs, s) in alts {
                    lw.g.add_rule(h, rhs, Some(s));
                }
                Ok(vec![Symbol::N(h)])
            }
            Ebnf::Rep { inner, min, max, span } => {
                let alts: Vec<Vec<Symbol>> =
                    self.lower_alts(lw, inner, base, env)?.into_iter().map(|(r, _)| r).collect();
                lower_repeat(&mut lw.g, &mut lw.helpers, base, alts, *min, *max, *span).map_err(|m| self.err(*span, m))
            }
            Ebnf::Atom(a, span) => Ok(self.lower_atom(lw, a, *span, env)?.into_iter().collect()),
        }
    }
}

fn kind_verb(k: DefKind) -> &'static str {
    match k {
        DefKind::Define => "define",
        DefKind::Override => "override",
        DefKind::Extend => "extend",
    }
}

/// A single item stands for itself; several are wrapped (`Seq` or `Alt`) with the span
/// from `start` to the last item's end.
fn collapse(mut items: Vec<Ex>, start: usize, wrap: fn(Vec<Ex>, Span) -> Ex) -> Ex {
    if items.len() == 1 {
        if let Some(x) = items.pop() {
            return x;
        }
    }
    let end = items.last().map_or(start, |a| a.span().end as usize);
    wrap(items, Span::new(start, end))
}
