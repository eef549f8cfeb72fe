//! The EBNF tree both grammar front-ends (Lark, GBNF) parse into, and its lowering helpers:
//! repetitions and options to helper nonterminals, literals and regex characters escaped.

use crate::{Grammar, Span, Symbol};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

/// Largest count accepted in `~ n..m` / `{m,n}` repetitions of rule items.
pub(crate) const MAX_REPEAT: u32 = 4096;

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
    pub(crate) used: HashSet<String>,
    pub(crate) counters: HashMap<String, u32>,
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
pub(crate) fn hir_has_lazy(h: &regex_syntax::hir::Hir) -> bool {
    use regex_syntax::hir::HirKind;
    match h.kind() {
        HirKind::Repetition(r) => !r.greedy || hir_has_lazy(&r.sub),
        HirKind::Capture(c) => hir_has_lazy(&c.sub),
        HirKind::Concat(v) | HirKind::Alternation(v) => v.iter().any(hir_has_lazy),
        _ => false,
    }
}

pub(crate) fn regex_error_kind(e: &regex_syntax::Error) -> String {
    match e {
        regex_syntax::Error::Parse(a) => a.kind().to_string(),
        regex_syntax::Error::Translate(t) => t.kind().to_string(),
        other => other.to_string(),
    }
}

pub(crate) fn regex_error_span(e: &regex_syntax::Error) -> Option<(usize, usize)> {
    match e {
        regex_syntax::Error::Parse(a) => Some((a.span().start.offset, a.span().end.offset)),
        regex_syntax::Error::Translate(t) => Some((t.span().start.offset, t.span().end.offset)),
        _ => None,
    }
}

/// Parse a token reference `<...>` starting at `start` (which holds `<`): `<[5]>`,
/// `<[1,3-9]>`, `<[^1,3-9]>` (negated by `^`, when `caret` is allowed) or `<text>` (the token
/// spelled `<text>`). Returns the set (not negated by a `!` prefix, not repeated) and the end
/// of the reference. Errors carry the byte range they are about.
pub(crate) fn parse_token_ref(
    src: &str,
    start: usize,
    caret: bool,
) -> Result<(crate::TokenSet, usize), (usize, usize, String)> {
    use crate::{TokenItem, TokenSet};
    let b = src.as_bytes();
    let Some(close) = b[start..].iter().position(|&c| c == b'>' || c == b'\n').map(|k| start + k) else {
        return Err((start, start + 1, "unclosed token reference: expected `>`".into()));
    };
    if b[close] != b'>' {
        return Err((start, close, "unclosed token reference: expected `>` before the end of the line".into()));
    }
    let body = &src[start + 1..close];
    let end = close + 1;
    let Some(ids) = body.strip_prefix('[').and_then(|x| x.strip_suffix(']')) else {
        if body.is_empty() {
            return Err((start, end, "empty token reference `<>`".into()));
        }
        if body.starts_with('[') {
            return Err((
                start,
                end,
                "token ids must be written `<[id]>`, `<[lo-hi]>` or a comma-separated list".into(),
            ));
        }
        let set = TokenSet {
            items: vec![TokenItem::Text(src[start..end].to_string())],
            negated: false,
            text: false,
            repeat: false,
        };
        return Ok((set, end));
    };
    let (negated, list) = match ids.strip_prefix('^') {
        Some(rest) if caret => (true, rest),
        Some(_) => return Err((start, end, "`^` is not allowed in a token reference here (negate with `!`)".into())),
        None => (false, ids),
    };
    let num = |s: &str| -> Result<u32, (usize, usize, String)> {
        let s = s.trim();
        s.parse::<u32>().map_err(|_| (start, end, format!("`{s}` is not a token id")))
    };
    let mut items = Vec::new();
    for part in list.split(',') {
        let (lo, hi) = match part.split_once('-') {
            Some((a, z)) => (num(a)?, num(z)?),
            None => {
                let v = num(part)?;
                (v, v)
            }
        };
        if lo > hi {
            return Err((start, end, format!("empty token id range {lo}-{hi}")));
        }
        items.push(TokenItem::Ids(lo, hi));
    }
    Ok((TokenSet { items, negated, text: false, repeat: false }, end))
}
