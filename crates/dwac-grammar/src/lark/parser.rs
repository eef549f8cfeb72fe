//! The parser of `.lark` files: tokens to the syntax tree, with line:column errors.

use super::{
    err, is_rule_name, is_term_name, lex, parse_token_ref, push_regex_char, Atom, DefKind, Ebnf, Ex, GrammarError,
    ImportName, Item, Munch, RuleDef, Span, TermDef, Tk, Tok, MAX_NESTING,
};

pub(super) struct Parser<'s> {
    pub(super) src: &'s str,
    pub(super) toks: Vec<Tok>,
    pub(super) pos: usize,
    pub(super) depth: usize,
}

impl<'s> Parser<'s> {
    pub(super) fn new(src: &'s str) -> Result<Parser<'s>, GrammarError> {
        Ok(Parser { src, toks: lex(src)?, pos: 0, depth: 0 })
    }

    pub(super) fn peek(&self) -> Tok {
        self.toks[self.pos.min(self.toks.len() - 1)]
    }

    pub(super) fn peek2(&self) -> Tok {
        self.toks[(self.pos + 1).min(self.toks.len() - 1)]
    }

    pub(super) fn bump(&mut self) -> Tok {
        let t = self.peek();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }

    pub(super) fn text(&self, t: Tok) -> &'s str {
        &self.src[t.start..t.end]
    }

    pub(super) fn describe(&self, t: Tok) -> String {
        match t.kind {
            Tk::Newline => "end of line".to_string(),
            Tk::Eof => "end of input".to_string(),
            _ => format!("`{}`", self.text(t)),
        }
    }

    pub(super) fn error(&self, t: Tok, msg: impl Into<String>) -> GrammarError {
        err(self.src, t.start, t.end, msg)
    }

    pub(super) fn expect(&mut self, kind: Tk, what: &str) -> Result<Tok, GrammarError> {
        let t = self.peek();
        if t.kind == kind {
            Ok(self.bump())
        } else {
            Err(self.error(t, format!("expected {what}, found {}", self.describe(t))))
        }
    }

    /// In a comma-separated list: consume `,` (more items follow: `false`) or the closing
    /// token (`true`); anything else is an error naming both.
    pub(super) fn comma_or_close(&mut self, close: Tk, close_str: &str) -> Result<bool, GrammarError> {
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

    pub(super) fn parse_file(&mut self) -> Result<Vec<Item>, GrammarError> {
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

    pub(super) fn parse_statement(&mut self) -> Result<Item, GrammarError> {
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

    pub(super) fn parse_definition(&mut self, kind: DefKind) -> Result<Item, GrammarError> {
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

    pub(super) fn parse_number(&mut self, what: &str) -> Result<i32, GrammarError> {
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

    pub(super) fn parse_count(&mut self) -> Result<u32, GrammarError> {
        let t = self.peek();
        let v = self.parse_number("a repetition count")?;
        u32::try_from(v).map_err(|_| self.error(t, "a repetition count cannot be negative"))
    }

    pub(super) fn parse_import(&mut self) -> Result<Item, GrammarError> {
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

    pub(super) fn parse_munch(&mut self) -> Result<Item, GrammarError> {
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

    pub(super) fn enter(&mut self) -> Result<(), GrammarError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(self.error(self.peek(), "expression nested too deeply"));
        }
        Ok(())
    }

    pub(super) fn parse_expansions(&mut self) -> Result<Ex, GrammarError> {
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

    pub(super) fn parse_alias(&mut self) -> Result<Ex, GrammarError> {
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

    pub(super) fn parse_expansion(&mut self) -> Result<Ex, GrammarError> {
        let start = self.peek().start;
        let mut items = Vec::new();
        while matches!(
            self.peek().kind,
            Tk::Name | Tk::Str | Tk::Regex | Tk::TokenRef | Tk::Json | Tk::LParen | Tk::LBracket
        ) {
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

    pub(super) fn parse_expr(&mut self) -> Result<Ex, GrammarError> {
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

    pub(super) fn parse_atom(&mut self) -> Result<Ex, GrammarError> {
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
            Tk::Json => {
                self.bump();
                let raw = self.text(t);
                let start = t.start + raw.find('{').unwrap_or(0);
                Ok(Ebnf::Atom(Atom::Json { text: self.src[start..t.end].to_string(), start }, t.span()))
            }
            Tk::TokenRef => {
                self.bump();
                let (set, _) = parse_token_ref(self.src, t.start, true).map_err(|(s, e, m)| err(self.src, s, e, m))?;
                Ok(Ebnf::Atom(Atom::Tokens(set), t.span()))
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
                        if !matches!(a.kind, Tk::Name | Tk::Str | Tk::Regex | Tk::TokenRef) {
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
pub(super) fn decode_string(src: &str, t: Tok) -> Result<(String, bool), GrammarError> {
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
pub(super) fn translate_regex(body: &str) -> Result<(String, Vec<usize>), (usize, usize, String)> {
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
