//! Terminals: each compiled into one Rust regex (literals, ranges, terminal expressions, the
//! `common` imports), with errors inside `common` reported where they were imported.

use super::{
    escape_literal, group, hir_has_lazy, is_rule_name, push_regex_char, regex_error_kind, regex_error_span,
    translate_regex, Atom, Compiled, Ctx, Ebnf, Ex, GrammarError, Origin, Prec, Span, TKey, TermSrc, MAX_NESTING,
};

impl Ctx<'_> {
    /// Compile terminal `key` into one regex. `blame` is where errors inside `common` are reported.
    pub(super) fn compile_term(&mut self, key: &TKey, blame: Span) -> Result<Compiled, GrammarError> {
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

    pub(super) fn compile_expr(&mut self, e: &Ex, origin: Origin, blame: Span) -> Result<Compiled, GrammarError> {
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
                Atom::Json { .. } => {
                    return Err(self.err(at(*span), "terminals cannot embed a JSON Schema (`%json`): use it in rules"));
                }
                Atom::Tokens(set) => {
                    return Err(self.err(
                        at(*span),
                        format!("terminals cannot use token references (`{}`): use them in rules", set.display()),
                    ));
                }
                lit => self.compile_literal(lit, at(*span), origin == Origin::Local)?,
            },
        })
    }

    /// Compile a string, regex or range literal. `exact_span`: `span` is the literal itself
    /// (so regex errors can point inside it).
    pub(super) fn compile_literal(&self, a: &Atom, span: Span, exact_span: bool) -> Result<Compiled, GrammarError> {
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
}
