//! Name resolution (imports, templates, `%override`/`%extend`), terminal compilation into one Rust
//! regex each (`lower/terminals.rs`), and lowering of rules to the IR.

use super::{
    check_terminal_regex, escape_literal, hir_has_lazy, is_rule_name, is_term_name, lower_repeat, push_regex_char,
    regex_error_kind, regex_error_span, translate_regex, Atom, DefKind, Ebnf, Ex, Grammar, GrammarError, HashMap,
    Helpers, Item, Munch, Parser, RuleDef, Span, Symbol, TermDef, Terminal, Warning, COMMON_LARK, MAX_NESTING,
};

mod json;
mod terminals;

/// The embedded `common` module: its terminal definitions.
pub(super) struct Common {
    pub(super) terms: HashMap<String, TermDef>,
}

pub(super) fn load_common() -> Result<Common, GrammarError> {
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
pub(super) enum TermSrc {
    Local(TermDef),
    /// Imported from `common`: the name there, and the span of the import.
    Common {
        name: String,
        span: Span,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum TKey {
    Local(String),
    Common(String),
}

/// Regex precedence, to know when a piece needs a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Prec {
    Alt,
    Concat,
    Atom,
}

#[derive(Clone, Debug)]
pub(super) struct Compiled {
    pub(super) regex: String,
    pub(super) prec: Prec,
    /// The pattern has a lazy quantifier (`*?`, `+?`, `??`, `{m,n}?`): Python reads it
    /// leftmost-first, and so does dwac ([`Terminal::lazy`]).
    pub(super) lazy: bool,
}

pub(super) fn group(c: &Compiled, need: Prec) -> String {
    if c.prec >= need {
        c.regex.clone()
    } else {
        format!("(?:{})", c.regex)
    }
}

/// The identity of an anonymous literal, for deduplication and reuse of named terminals.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum LitKey {
    Str(String, bool),
    Re(String, String),
    Range(char, char),
}

pub(super) fn lit_key(a: &Atom) -> Option<LitKey> {
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
pub(super) fn def_key(e: &Ex) -> Option<LitKey> {
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
pub(super) enum Origin {
    Local,
    Common,
}

pub(super) struct Ctx<'s> {
    pub(super) src: &'s str,
    pub(super) common: Common,
    pub(super) rules: Vec<RuleDef>,
    pub(super) rule_index: HashMap<String, usize>,
    pub(super) terms: HashMap<String, TermSrc>,
    pub(super) term_order: Vec<String>,
    pub(super) ignore: Vec<(String, Span)>,
    pub(super) munch: Vec<(Munch, Atom, Span)>,
    pub(super) compiled: HashMap<TKey, Compiled>,
    pub(super) stack: Vec<(TKey, String)>,
    /// `%json` schemas in strict mode ([`super::LarkOptions::strict`]).
    pub(super) strict: bool,
}

pub(super) struct Lowering {
    pub(super) g: Grammar,
    pub(super) helpers: Helpers,
    pub(super) rule_nt: HashMap<String, u32>,
    pub(super) named_terms: HashMap<String, u32>,
    pub(super) anon_terms: HashMap<LitKey, u32>,
    pub(super) anon_by_regex: HashMap<String, u32>,
    pub(super) by_key: HashMap<LitKey, String>,
    pub(super) instances: HashMap<(String, Vec<Symbol>), u32>,
    pub(super) token_terms: HashMap<crate::TokenSet, u32>,
    /// Embedded schemas by their text: the start nonterminal each became.
    pub(super) json_starts: HashMap<String, u32>,
    /// What the schema compiler said of embedded schemas (unknown keywords, formats), located.
    pub(super) warnings: Vec<Warning>,
    pub(super) depth: usize,
}

pub(super) type Env = HashMap<String, Symbol>;

impl<'s> Ctx<'s> {
    pub(super) fn new(src: &'s str, common: Common) -> Ctx<'s> {
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
            strict: false,
        }
    }

    pub(super) fn err(&self, span: Span, msg: impl Into<String>) -> GrammarError {
        GrammarError::at(self.src, span, msg)
    }

    pub(super) fn line_of(&self, span: Span) -> usize {
        GrammarError::at(self.src, span, "").line
    }

    pub(super) fn term_span(&self, name: &str) -> Option<Span> {
        match self.terms.get(name)? {
            TermSrc::Local(d) => Some(d.name_span),
            TermSrc::Common { span, .. } => Some(*span),
        }
    }

    pub(super) fn define_term(&mut self, name: String, src: TermSrc, span: Span) -> Result<(), GrammarError> {
        if self.rule_index.contains_key(&name) || self.terms.contains_key(&name) {
            let prev = self.term_span(&name).or_else(|| self.rule_index.get(&name).map(|&i| self.rules[i].name_span));
            let line = prev.map_or(0, |s| self.line_of(s));
            return Err(self.err(span, format!("`{name}` is already defined (line {line})")));
        }
        self.term_order.push(name.clone());
        self.terms.insert(name, src);
        Ok(())
    }

    pub(super) fn collect(&mut self, items: Vec<Item>) -> Result<(), GrammarError> {
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

    // --- rules -------------------------------------------------------------------------------

    pub(super) fn lower(mut self, start: &str) -> Result<(Grammar, Vec<Warning>), GrammarError> {
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
            token_terms: HashMap::new(),
            json_starts: HashMap::new(),
            warnings: Vec::new(),
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
        Ok((lw.g, lw.warnings))
    }

    pub(super) fn intern_named(&mut self, lw: &mut Lowering, name: &str, use_span: Span) -> Result<u32, GrammarError> {
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
            tokens: None,
            origin: None,
            key_complement: None,
        });
        lw.named_terms.insert(name.to_string(), id);
        Ok(id)
    }

    /// The symbol for an atom in a rule (`None` for the empty string literal).
    pub(super) fn lower_atom(
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
            Atom::Tokens(set) if set.negated => Err(self.err(
                span,
                "a negated token reference matches exactly one token of any kind, text tokens included, which is \
                 not a language of text: use it under `*` or `+` (any tokens but these)",
            )),
            Atom::Tokens(set) => Ok(Some(token_terminal(lw, set.clone(), span))),
            Atom::Json { text, start } => self.embed_json(lw, text, *start, span).map(Some),
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
                    tokens: None,
                    origin: None,
                    key_complement: None,
                });
                lw.anon_terms.insert(key, id);
                lw.anon_by_regex.insert(lw.g.terminals[id as usize].regex.clone(), id);
                Ok(Some(Symbol::T(id)))
            }
        }
    }

    pub(super) fn lower_alts(
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

    pub(super) fn lower_seq(
        &mut self,
        lw: &mut Lowering,
        e: &Ex,
        base: &str,
        env: &Env,
    ) -> Result<Vec<Symbol>, GrammarError> {
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
            Ebnf::Rep { inner, min: min @ (0 | 1), max: None, span } if matches!(&**inner, Ebnf::Atom(Atom::Tokens(t), _) if t.negated) =>
            {
                // `<[^id]>*`: any tokens but these, text included, as one repeated terminal.
                let Ebnf::Atom(Atom::Tokens(set), _) = &**inner else { unreachable!() };
                let set = crate::TokenSet { text: true, repeat: true, ..set.clone() };
                let t = token_terminal(lw, set, *span);
                if *min == 0 {
                    lower_repeat(&mut lw.g, &mut lw.helpers, base, vec![vec![t]], 0, Some(1), *span)
                        .map_err(|m| self.err(*span, m))
                } else {
                    Ok(vec![t])
                }
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

/// The terminal of a token set (one per distinct set; Lark's longest match, like any terminal).
fn token_terminal(lw: &mut Lowering, set: crate::TokenSet, span: Span) -> Symbol {
    if let Some(&id) = lw.token_terms.get(&set) {
        return Symbol::T(id);
    }
    let id = lw.g.add_terminal(Terminal::tokens(set.clone(), Munch::Global, Some(span)));
    lw.token_terms.insert(set, id);
    Symbol::T(id)
}

pub(super) fn kind_verb(k: DefKind) -> &'static str {
    match k {
        DefKind::Define => "define",
        DefKind::Override => "override",
        DefKind::Extend => "extend",
    }
}
