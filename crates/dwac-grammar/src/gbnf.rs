//! The GBNF front-end (llama.cpp grammars) → [`Grammar`] (ARCHITECTURE.md "Crates").
//!
//! Syntax: rules `name ::= expr` (names `[a-zA-Z0-9_-]+`; a rule may span lines, and a new rule
//! begins where `name ::=` appears), `root` is the start rule, comments `# ...`, string literals
//! `"..."`, character classes `[a-z]`, `[^"\\]`, `.` (any character), groups `( ... )`,
//! alternatives `|`, postfix `*`, `+`, `?`, `{m}`, `{m,}`, `{m,n}`, rule references. Escapes in
//! literals and classes: `\n`, `\r`, `\t`, `\\`, `\"`, `\[`, `\]`, `\xNN`, `\uNNNN`,
//! `\UNNNNNNNN`, and any other escaped ASCII punctuation character stands for itself.
//! Token references, as llama.cpp writes them: `<[id]>` (by id), `<think>` (the token spelled
//! so), and `!<...>` (any token but that one) directly under `*` or `+`; a lone `!<...>`, exactly
//! one token of any kind, is refused (docs/CONSTRUCTION.md, "Token terminals").
//!
//! Where llama.cpp's parser accepts a grammar and gives it a meaning of its own, so does this
//! one, with a warning: a rule defined twice keeps its last definition; `{m,n}` with `n` over
//! 2,000 is unbounded (`{m,}`); `[]` and `[^]` match the empty string. Raw newlines inside
//! literals and classes are characters, and a lone `\r` ends a comment, as there.
//!
//! Every string literal and every character class / `.` becomes a terminal with
//! [`Munch::None`] (GBNF's character-level semantics: the parser decides every segmentation),
//! deduplicated by pattern and named by its source text. An empty literal `""` means ε.
//! EBNF operators are lowered to left-recursive helper nonterminals like in the Lark front-end.

use crate::ebnf::{
    check_terminal_regex, escape_literal, lower_repeat, parse_token_ref, push_regex_char, Ebnf, Helpers,
};
use crate::{Grammar, GrammarError, Munch, Span, Symbol, Terminal, TokenSet, Warning};
use std::collections::HashMap;

/// Parentheses nested deeper than this are refused (the parser and the lowering recurse).
/// llama.cpp's JSON-Schema converter nests one group per character of a `maxLength` (1,024 in
/// a MaskBench schema), so the limit is well above that.
const MAX_NESTING: usize = 2048;

#[derive(Clone, Debug)]
enum GAtom {
    Ref(String),
    /// A terminal: its regex (`None` for the empty string literal).
    Term(Option<String>),
    /// A token reference (`<[id]>`, `<think>`, `!<[id]>`).
    Tokens(TokenSet),
}

type Gx = Ebnf<GAtom>;

/// llama.cpp reads `{m,n}` with `n` above this as `{m,}`.
const LLAMA_CPP_MAX_BOUND: u32 = 2000;

/// Parse a GBNF grammar whose start rule is `root`.
pub fn parse(source: &str) -> Result<Grammar, GrammarError> {
    Ok(parse_with_warnings(source)?.0)
}

/// [`parse`], with warnings where the grammar means what llama.cpp's parser makes of it rather
/// than what it may seem to say (see the module docs).
pub fn parse_with_warnings(source: &str) -> Result<(Grammar, Vec<Warning>), GrammarError> {
    // The parser and the lowering recurse once per nesting level (up to `MAX_NESTING`: the
    // JSON-Schema converter's groups nest a thousand deep), more than a thread's default stack
    // holds: they run on a thread with room for it (virtual memory, touched only as deep as used).
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("dwac-gbnf".into())
            .stack_size(PARSE_STACK)
            .spawn_scoped(scope, || parse_on_this_thread(source))
            .map_or_else(
                |_| parse_on_this_thread(source),
                |h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
            )
    })
}

/// Stack of the thread [`parse_with_warnings`] parses on.
const PARSE_STACK: usize = 256 << 20;

fn parse_on_this_thread(source: &str) -> Result<(Grammar, Vec<Warning>), GrammarError> {
    let mut p = P { src: source, b: source.as_bytes(), i: 0, depth: 0, warnings: Vec::new() };
    let mut rules = p.parse_file()?;
    let mut warnings = std::mem::take(&mut p.warnings);
    // A rule defined twice: the last definition wins (llama.cpp).
    let mut last: HashMap<&str, usize> = HashMap::new();
    for (i, (name, _, _)) in rules.iter().enumerate() {
        last.insert(name.as_str(), i);
    }
    let mut keep = vec![true; rules.len()];
    for (i, (name, span, _)) in rules.iter().enumerate() {
        let l = last[name.as_str()];
        if l != i {
            keep[i] = false;
            let line = GrammarError::at(source, rules[l].1, "").line;
            warnings.push(Warning(GrammarError::at(
                source,
                *span,
                format!(
                    "rule `{name}` is defined again at line {line}; the last definition is used (as llama.cpp does)"
                ),
            )));
        }
    }
    let mut k = keep.into_iter();
    rules.retain(|_| k.next().unwrap_or(true));
    let mut g = Grammar::default();
    let mut ids: HashMap<String, u32> = HashMap::new();
    let mut helpers = Helpers::default();
    for (name, span, _) in &rules {
        helpers.reserve(name);
        ids.insert(name.clone(), g.add_nonterminal(name.clone(), Some(*span)));
    }
    let Some(&root) = ids.get("root") else {
        return Err(GrammarError::global("GBNF grammar has no `root` rule"));
    };
    g.start = root;
    let mut lw = Lower { src: source, g, ids, helpers, terms: HashMap::new() };
    for (name, _, body) in &rules {
        let lhs = lw.ids[name];
        for (rhs, span) in lw.alts(body, name)? {
            lw.g.add_rule(lhs, rhs, Some(span));
        }
    }
    lw.g.source = Some(source.into());
    Ok((lw.g, warnings))
}

struct Lower<'s> {
    src: &'s str,
    g: Grammar,
    ids: HashMap<String, u32>,
    helpers: Helpers,
    terms: HashMap<String, u32>,
}

impl Lower<'_> {
    fn alts(&mut self, e: &Gx, base: &str) -> Result<Vec<(Vec<Symbol>, Span)>, GrammarError> {
        match e {
            Ebnf::Alt(alts, _) => {
                let mut out = Vec::new();
                for a in alts {
                    out.extend(self.alts(a, base)?);
                }
                Ok(out)
            }
            other => Ok(vec![(self.seq(other, base)?, other.span())]),
        }
    }

    fn seq(&mut self, e: &Gx, base: &str) -> Result<Vec<Symbol>, GrammarError> {
        match e {
            Ebnf::Seq(items, _) => {
                let mut out = Vec::new();
                for it in items {
                    out.extend(self.seq(it, base)?);
                }
                Ok(out)
            }
            Ebnf::Alt(_, span) => {
                let alts = self.alts(e, base)?;
                let h = self.helpers.fresh(&mut self.g, base, "group", *span);
                for (rhs, s) in alts {
                    self.g.add_rule(h, rhs, Some(s));
                }
                Ok(vec![Symbol::N(h)])
            }
            Ebnf::Rep { inner, min: min @ (0 | 1), max: None, span } if matches!(&**inner, Ebnf::Atom(GAtom::Tokens(t), _) if t.negated) =>
            {
                // `!<[id]>*`: any tokens but these, text included, as one repeated terminal.
                let Ebnf::Atom(GAtom::Tokens(set), _) = &**inner else { unreachable!() };
                let set = TokenSet { text: true, repeat: true, ..set.clone() };
                let t = self.token_terminal(set, *span);
                if *min == 0 {
                    lower_repeat(&mut self.g, &mut self.helpers, base, vec![vec![t]], 0, Some(1), *span)
                        .map_err(|m| GrammarError::at(self.src, *span, m))
                } else {
                    Ok(vec![t])
                }
            }
            Ebnf::Rep { inner, min, max, span } => {
                let alts = self.alts(inner, base)?.into_iter().map(|(r, _)| r).collect();
                lower_repeat(&mut self.g, &mut self.helpers, base, alts, *min, *max, *span)
                    .map_err(|m| GrammarError::at(self.src, *span, m))
            }
            Ebnf::Atom(GAtom::Ref(name), span) => match self.ids.get(name) {
                Some(&id) => Ok(vec![Symbol::N(id)]),
                None => Err(GrammarError::at(self.src, *span, format!("undefined rule `{name}`"))),
            },
            Ebnf::Atom(GAtom::Tokens(set), span) => {
                if set.negated {
                    return Err(GrammarError::at(
                        self.src,
                        *span,
                        "a negated token reference matches exactly one token of any kind, text tokens included, \
                         which is not a language of text: use it under `*` or `+` (any tokens but these)",
                    ));
                }
                Ok(vec![self.token_terminal(set.clone(), *span)])
            }
            Ebnf::Atom(GAtom::Term(None), _) => Ok(Vec::new()),
            Ebnf::Atom(GAtom::Term(Some(regex)), span) => {
                if let Some(&id) = self.terms.get(regex) {
                    return Ok(vec![Symbol::T(id)]);
                }
                let name = self.src[span.start as usize..span.end as usize].to_string();
                check_terminal_regex(regex, &format!("`{name}`")).map_err(|m| GrammarError::at(self.src, *span, m))?;
                let id = self.g.add_terminal(Terminal {
                    name,
                    regex: regex.clone(),
                    priority: 0,
                    ignored: false,
                    munch: Munch::None,
                    span: Some(*span),
                    also: Vec::new(),
                    except: Vec::new(),
                    component: 0,
                    lazy: false,
                    tokens: None,
                    origin: None,
                    key_complement: None,
                });
                self.terms.insert(regex.clone(), id);
                Ok(vec![Symbol::T(id)])
            }
        }
    }
}

impl Lower<'_> {
    /// The terminal of a token set (one per distinct set).
    fn token_terminal(&mut self, set: TokenSet, span: Span) -> Symbol {
        let key = format!("\u{0}tokens {set:?}");
        if let Some(&id) = self.terms.get(&key) {
            return Symbol::T(id);
        }
        let id = self.g.add_terminal(Terminal::tokens(set, Munch::None, Some(span)));
        self.terms.insert(key, id);
        Symbol::T(id)
    }
}

fn is_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-' || c == b'_'
}

struct P<'s> {
    src: &'s str,
    b: &'s [u8],
    i: usize,
    depth: usize,
    warnings: Vec<Warning>,
}

impl P<'_> {
    fn err(&self, start: usize, end: usize, msg: impl Into<String>) -> GrammarError {
        GrammarError::at(self.src, Span::new(start, end), msg)
    }

    fn ch(&self, i: usize) -> char {
        self.src.get(i..).and_then(|s| s.chars().next()).unwrap_or('\0')
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// Skip spaces, newlines and `#` comments.
    fn skip_ws(&mut self) {
        while let Some(c) = self.peek() {
            match c {
                b' ' | b'\t' | b'\r' | b'\n' => self.i += 1,
                b'#' => {
                    while self.peek().is_some_and(|c| c != b'\n' && c != b'\r') {
                        self.i += 1;
                    }
                }
                _ => break,
            }
        }
    }

    fn name_end(&self, at: usize) -> usize {
        let mut j = at;
        while j < self.b.len() && is_name_byte(self.b[j]) {
            j += 1;
        }
        j
    }

    /// Is the input at `name ::=` (the beginning of a new rule)?
    fn at_rule_start(&self) -> bool {
        let e = self.name_end(self.i);
        if e == self.i {
            return false;
        }
        let mut p = P { src: self.src, b: self.b, i: e, depth: 0, warnings: Vec::new() };
        p.skip_ws();
        self.b[p.i..].starts_with(b"::=")
    }

    fn parse_file(&mut self) -> Result<Vec<(String, Span, Gx)>, GrammarError> {
        let mut rules = Vec::new();
        loop {
            self.skip_ws();
            let Some(c) = self.peek() else {
                return Ok(rules);
            };
            let start = self.i;
            let end = self.name_end(start);
            if end == start {
                let ch = self.ch(start);
                return Err(self.err(
                    start,
                    start + ch.len_utf8(),
                    format!("expected a rule name, found `{}`", ch.escape_debug()),
                ));
            }
            let _ = c;
            let name = self.src[start..end].to_string();
            self.i = end;
            self.skip_ws();
            if !self.b[self.i..].starts_with(b"::=") {
                let here = self.i;
                let what = if here >= self.b.len() {
                    "end of input".to_string()
                } else {
                    format!("`{}`", self.ch(here).escape_debug())
                };
                return Err(self.err(
                    here,
                    here + self.ch(here).len_utf8().min(self.b.len() - here),
                    format!("expected `::=` after rule name `{name}`, found {what}"),
                ));
            }
            self.i += 3;
            let body = self.parse_alternates()?;
            self.skip_ws();
            if let Some(c) = self.peek() {
                if !self.at_rule_start() {
                    let msg = if c == b')' {
                        "unmatched `)`".to_string()
                    } else {
                        format!("unexpected `{}`", self.ch(self.i).escape_debug())
                    };
                    return Err(self.err(self.i, self.i + self.ch(self.i).len_utf8(), msg));
                }
            }
            rules.push((name, Span::new(start, end), body));
        }
    }

    fn parse_alternates(&mut self) -> Result<Gx, GrammarError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(self.err(self.i, self.i + 1, "expression nested too deeply"));
        }
        let start = self.i;
        let mut alts = vec![self.parse_sequence()?];
        while self.peek() == Some(b'|') {
            self.i += 1;
            alts.push(self.parse_sequence()?);
        }
        self.depth -= 1;
        if alts.len() == 1 {
            return Ok(alts.pop().unwrap_or(Ebnf::Seq(Vec::new(), Span::new(start, start))));
        }
        let end = alts.last().map_or(start, |a| a.span().end as usize);
        Ok(Ebnf::Alt(alts, Span::new(start, end)))
    }

    fn parse_sequence(&mut self) -> Result<Gx, GrammarError> {
        let mut items: Vec<Gx> = Vec::new();
        self.skip_ws();
        let start = self.i;
        loop {
            self.skip_ws();
            let Some(c) = self.peek() else { break };
            let at = self.i;
            match c {
                b'"' => items.push(self.parse_string()?),
                b'[' => items.push(self.parse_class()?),
                b'.' => {
                    self.i += 1;
                    items.push(Ebnf::Atom(GAtom::Term(Some("(?s:.)".to_string())), Span::new(at, at + 1)));
                }
                b'(' => {
                    self.i += 1;
                    let inner = self.parse_alternates()?;
                    self.skip_ws();
                    if self.peek() != Some(b')') {
                        let (s, e, what) = match self.peek() {
                            None => (at, at + 1, "unclosed `(`: expected `)` before the end of input".to_string()),
                            Some(_) => {
                                let ch = self.ch(self.i);
                                (self.i, self.i + ch.len_utf8(), format!("expected `)`, found `{}`", ch.escape_debug()))
                            }
                        };
                        return Err(self.err(s, e, what));
                    }
                    self.i += 1;
                    let span = Span::new(at, self.i);
                    items.push(match inner {
                        Ebnf::Alt(a, _) => Ebnf::Alt(a, span),
                        Ebnf::Seq(a, _) => Ebnf::Seq(a, span),
                        other => other,
                    });
                }
                b'*' | b'+' | b'?' | b'{' => {
                    let Some(last) = items.pop() else {
                        return Err(self.err(at, at + 1, format!("`{}` must follow an item", c as char)));
                    };
                    let (min, max) = match c {
                        b'*' => {
                            self.i += 1;
                            (0, None)
                        }
                        b'+' => {
                            self.i += 1;
                            (1, None)
                        }
                        b'?' => {
                            self.i += 1;
                            (0, Some(1))
                        }
                        _ => self.parse_braces()?,
                    };
                    let span = Span::new(last.span().start as usize, self.i);
                    items.push(Ebnf::Rep { inner: Box::new(last), min, max, span });
                }
                b'<' | b'!' => {
                    // llama.cpp's token references: `<[id]>`, `<text>`, negated by `!`.
                    let negated = c == b'!';
                    let lt = at + usize::from(negated);
                    if self.b.get(lt) != Some(&b'<') {
                        return Err(self.err(
                            at,
                            at + 1,
                            "`!` must be followed by a token reference (`!<[id]>`, `!<text>`)",
                        ));
                    }
                    let (mut set, end) = parse_token_ref(self.src, lt, false).map_err(|(s, e, m)| self.err(s, e, m))?;
                    set.negated = negated;
                    self.i = end;
                    items.push(Ebnf::Atom(GAtom::Tokens(set), Span::new(at, end)));
                }
                b'|' | b')' => break,
                c if is_name_byte(c) => {
                    if self.at_rule_start() {
                        break;
                    }
                    let end = self.name_end(at);
                    self.i = end;
                    items.push(Ebnf::Atom(GAtom::Ref(self.src[at..end].to_string()), Span::new(at, end)));
                }
                b':' if self.b[at..].starts_with(b"::=") => {
                    return Err(self.err(at, at + 3, "unexpected `::=` (a rule name must precede it)"));
                }
                _ => {
                    let ch = self.ch(at);
                    return Err(self.err(at, at + ch.len_utf8(), format!("unexpected `{}`", ch.escape_debug())));
                }
            }
        }
        if items.len() == 1 {
            return Ok(items.pop().unwrap_or(Ebnf::Seq(Vec::new(), Span::new(start, start))));
        }
        let end = items.last().map_or(start, |a| a.span().end as usize);
        Ok(Ebnf::Seq(items, Span::new(start, end)))
    }

    fn parse_int(&mut self) -> Result<u32, GrammarError> {
        self.skip_ws();
        let s = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        if s == self.i {
            let ch = self.ch(s);
            return Err(self.err(s, s + ch.len_utf8().max(1), "expected a number"));
        }
        self.src[s..self.i].parse().map_err(|_| self.err(s, self.i, "number too large"))
    }

    /// `{m}`, `{m,}`, `{m,n}`.
    fn parse_braces(&mut self) -> Result<(u32, Option<u32>), GrammarError> {
        let open = self.i;
        self.i += 1;
        let min = self.parse_int()?;
        self.skip_ws();
        let mut max = Some(min);
        let ranged = self.peek() == Some(b',');
        if ranged {
            self.i += 1;
            self.skip_ws();
            max = if self.peek().is_some_and(|c| c.is_ascii_digit()) { Some(self.parse_int()?) } else { None };
            self.skip_ws();
        }
        if self.peek() != Some(b'}') {
            return Err(self.err(open, open + 1, "unclosed `{`: expected `{m}`, `{m,}` or `{m,n}`"));
        }
        self.i += 1;
        if let Some(m) = max {
            if m < min {
                return Err(self.err(
                    open,
                    self.i,
                    format!("repetition minimum {min} is greater than its maximum {m}"),
                ));
            }
            if ranged && m > LLAMA_CPP_MAX_BOUND {
                self.warnings.push(Warning(self.err(
                    open,
                    self.i,
                    format!(
                        "`{{{min},{m}}}`: a maximum over {LLAMA_CPP_MAX_BOUND} is read as no maximum, `{{{min},}}` (as \
                         llama.cpp does)"
                    ),
                )));
                max = None;
            }
        }
        Ok((min, max))
    }

    /// One possibly escaped character inside a literal or class.
    fn parse_char(&mut self, open: usize, what: &str) -> Result<char, GrammarError> {
        let at = self.i;
        let c = match self.peek() {
            None => return Err(self.err(open, open + 1, format!("unterminated {what}"))),
            Some(_) => self.ch(at),
        };
        if c != '\\' {
            self.i += c.len_utf8();
            return Ok(c);
        }
        let e = self.ch(at + 1);
        let hex = match e {
            'x' => 2,
            'u' => 4,
            'U' => 8,
            'n' | 'r' | 't' => {
                self.i += 2;
                return Ok(match e {
                    'n' => '\n',
                    'r' => '\r',
                    _ => '\t',
                });
            }
            '\0' if at + 1 >= self.b.len() => return Err(self.err(open, open + 1, format!("unterminated {what}"))),
            e if e.is_ascii_punctuation() => {
                self.i += 2;
                return Ok(e);
            }
            e => {
                return Err(self.err(at, at + 1 + e.len_utf8(), format!("unknown escape `\\{}`", e.escape_debug())));
            }
        };
        let digits = self.src.get(at + 2..at + 2 + hex).filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()));
        let Some(digits) = digits else {
            return Err(self.err(at, at + 2, format!("invalid escape: `\\{e}` needs {hex} hex digits")));
        };
        let v = u32::from_str_radix(digits, 16).unwrap_or(u32::MAX);
        let Some(ch) = char::from_u32(v) else {
            return Err(self.err(at, at + 2 + hex, format!("invalid escape: U+{v:X} is not a Unicode scalar value")));
        };
        self.i = at + 2 + hex;
        Ok(ch)
    }

    fn parse_string(&mut self) -> Result<Gx, GrammarError> {
        let open = self.i;
        self.i += 1;
        let mut s = String::new();
        while self.peek() != Some(b'"') {
            s.push(self.parse_char(open, "string literal")?);
        }
        self.i += 1;
        let span = Span::new(open, self.i);
        Ok(Ebnf::Atom(GAtom::Term((!s.is_empty()).then(|| escape_literal(&s))), span))
    }

    fn parse_class(&mut self) -> Result<Gx, GrammarError> {
        let open = self.i;
        self.i += 1;
        let negated = self.peek() == Some(b'^');
        if negated {
            self.i += 1;
        }
        let mut ranges: Vec<(char, char)> = Vec::new();
        while self.peek() != Some(b']') {
            let item = self.i;
            let lo = self.parse_char(open, "character class")?;
            let mut hi = lo;
            if self.peek() == Some(b'-') && self.b.get(self.i + 1).is_some_and(|&c| c != b']') {
                self.i += 1;
                hi = self.parse_char(open, "character class")?;
                if hi < lo {
                    return Err(self.err(item, self.i, format!("invalid range: {lo:?} comes after {hi:?}")));
                }
            }
            ranges.push((lo, hi));
        }
        self.i += 1;
        let span = Span::new(open, self.i);
        let regex = match (negated, ranges.as_slice()) {
            (_, []) => {
                let class = &self.src[open..self.i];
                self.warnings.push(Warning(self.err(
                    open,
                    self.i,
                    format!("`{class}` matches the empty string (as in llama.cpp), not a character"),
                )));
                return Ok(Ebnf::Atom(GAtom::Term(None), span));
            }
            (false, [(a, b)]) if a == b => escape_literal(&a.to_string()),
            _ => {
                let mut r = String::from(if negated { "[^" } else { "[" });
                for &(a, b) in &ranges {
                    push_regex_char(&mut r, a);
                    if a != b {
                        r.push('-');
                        push_regex_char(&mut r, b);
                    }
                }
                r.push(']');
                r
            }
        };
        Ok(Ebnf::Atom(GAtom::Term(Some(regex)), span))
    }
}
