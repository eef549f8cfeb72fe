//! A small regex AST whose printed length and nesting depth are known exactly, so the generator
//! can keep its output within [`MAX_REGEX_LEN`] and the `regex` crate's nesting limit.

use super::{MAX_DEPTH, MAX_REGEX_LEN, MAX_WEIGHT};
use std::rc::Rc;

#[derive(Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Empty,
    Eps,
    /// Digits, bit `d` for digit `d`.
    Class(u16),
    /// One regex atom (`\.`, `-`, `[eE]`, `\+`, `[+-]`).
    Text(&'static str),
    Cat(Vec<Re>),
    Alt(Vec<Re>),
    Rep(Re, u32, Option<u32>),
}

#[derive(Debug)]
pub(super) struct Node {
    pub(super) kind: Kind,
    /// Printed length.
    pub(super) len: usize,
    /// Nesting depth as the `regex` parser counts it (at most).
    pub(super) depth: usize,
    /// Roughly the number of compiled NFA states (counted repetitions expanded).
    pub(super) weight: usize,
    pub(super) nullable: bool,
}

impl PartialEq for Node {
    fn eq(&self, o: &Node) -> bool {
        self.len == o.len && self.nullable == o.nullable && self.kind == o.kind
    }
}

impl Eq for Node {}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Re(Rc<Node>);

pub(super) fn class_str(mask: u16) -> String {
    let digits: Vec<u8> = (0..10).filter(|d| mask >> d & 1 == 1).collect();
    if digits.len() == 1 {
        return ((b'0' + digits[0]) as char).to_string();
    }
    let mut s = String::from("[");
    let mut i = 0;
    while i < digits.len() {
        let mut j = i;
        while j + 1 < digits.len() && digits[j + 1] == digits[j] + 1 {
            j += 1;
        }
        s.push((b'0' + digits[i]) as char);
        if j == i + 1 {
            s.push((b'0' + digits[j]) as char);
        } else if j > i + 1 {
            s.push('-');
            s.push((b'0' + digits[j]) as char);
        }
        i = j + 1;
    }
    s.push(']');
    s
}

pub(super) fn quant(min: u32, max: Option<u32>) -> String {
    match (min, max) {
        (0, None) => "*".into(),
        (1, None) => "+".into(),
        (0, Some(1)) => "?".into(),
        (n, None) => format!("{{{n},}}"),
        (n, Some(m)) if n == m => format!("{{{n}}}"),
        (n, Some(m)) => format!("{{{n},{m}}}"),
    }
}

impl Re {
    pub(super) fn len(&self) -> usize {
        self.0.len
    }

    pub(super) fn depth(&self) -> usize {
        self.0.depth
    }

    pub(super) fn weight(&self) -> usize {
        self.0.weight
    }

    /// Within the size budgets.
    pub(super) fn fits(&self) -> bool {
        self.len() <= MAX_REGEX_LEN && self.weight() <= MAX_WEIGHT
    }

    pub(super) fn is_empty(&self) -> bool {
        matches!(self.0.kind, Kind::Empty)
    }

    pub(super) fn is_atom(&self) -> bool {
        matches!(self.0.kind, Kind::Class(_) | Kind::Text(_))
    }

    pub(super) fn is_alt(&self) -> bool {
        matches!(self.0.kind, Kind::Alt(_))
    }

    pub(super) fn print(&self, out: &mut String) {
        match &self.0.kind {
            Kind::Empty | Kind::Eps => {}
            Kind::Class(m) => out.push_str(&class_str(*m)),
            Kind::Text(s) => out.push_str(s),
            Kind::Cat(xs) => {
                for x in xs {
                    if x.is_alt() {
                        out.push_str("(?:");
                        x.print(out);
                        out.push(')');
                    } else {
                        x.print(out);
                    }
                }
            }
            Kind::Alt(xs) => {
                for (i, x) in xs.iter().enumerate() {
                    if i > 0 {
                        out.push('|');
                    }
                    x.print(out);
                }
            }
            Kind::Rep(x, a, b) => {
                if rep_expanded(x, *a, *b) {
                    for _ in 0..*a {
                        x.print(out);
                    }
                } else {
                    if x.is_atom() {
                        x.print(out);
                    } else {
                        out.push_str("(?:");
                        x.print(out);
                        out.push(')');
                    }
                    out.push_str(&quant(*a, *b));
                }
            }
        }
    }
}

pub(super) fn rep_expanded(x: &Re, a: u32, b: Option<u32>) -> bool {
    b == Some(a) && x.is_atom() && a as usize * x.len() <= x.len() + quant(a, b).len()
}

pub(super) fn mk(kind: Kind) -> Re {
    let (len, depth, weight, nullable) = match &kind {
        Kind::Empty => (0, 0, 0, false),
        Kind::Eps => (0, 0, 0, true),
        Kind::Class(m) => {
            let s = class_str(*m);
            (s.len(), usize::from(s.len() > 1), 1, false)
        }
        Kind::Text(s) => (s.len(), usize::from(s.starts_with('[')), 1, false),
        Kind::Cat(xs) => (
            xs.iter().map(|x| x.len() + if x.is_alt() { 4 } else { 0 }).sum(),
            1 + xs.iter().map(|x| x.depth() + usize::from(x.is_alt())).max().unwrap_or(0),
            xs.iter().fold(0usize, |w, x| w.saturating_add(x.weight())),
            xs.iter().all(|x| x.0.nullable),
        ),
        Kind::Alt(xs) => (
            xs.iter().map(|x| x.len()).sum::<usize>() + xs.len() - 1,
            1 + xs.iter().map(|x| x.depth()).max().unwrap_or(0),
            xs.iter().fold(1usize, |w, x| w.saturating_add(x.weight())),
            xs.iter().any(|x| x.0.nullable),
        ),
        Kind::Rep(x, a, b) => {
            let nullable = *a == 0 || x.0.nullable;
            let copies = b.unwrap_or(*a + 1).max(1) as usize;
            let weight = x.weight().saturating_mul(copies).saturating_add(1);
            if rep_expanded(x, *a, *b) {
                (*a as usize * x.len(), 1 + x.depth(), weight, nullable)
            } else {
                let group = !x.is_atom();
                (
                    x.len() + if group { 4 } else { 0 } + quant(*a, *b).len(),
                    1 + x.depth() + usize::from(group),
                    weight,
                    nullable,
                )
            }
        }
    };
    Re(Rc::new(Node { kind, len, depth, weight, nullable }))
}

pub(super) fn empty() -> Re {
    mk(Kind::Empty)
}

pub(super) fn eps() -> Re {
    mk(Kind::Eps)
}

pub(super) fn class(mask: u16) -> Re {
    if mask == 0 {
        empty()
    } else {
        mk(Kind::Class(mask))
    }
}

pub(super) fn text(s: &'static str) -> Re {
    mk(Kind::Text(s))
}

pub(super) fn opt(x: Re) -> Re {
    rep(x, 0, Some(1))
}

pub(super) fn rep(x: Re, min: u32, max: Option<u32>) -> Re {
    match &x.0.kind {
        Kind::Empty => return if min == 0 { eps() } else { empty() },
        Kind::Eps => return eps(),
        _ => {}
    }
    if max == Some(0) {
        return eps();
    }
    if min == 1 && max == Some(1) {
        return x;
    }
    if min == 0 && max == Some(1) {
        if x.0.nullable {
            return x;
        }
        if let Kind::Rep(y, 1, b) = &x.0.kind {
            return rep(y.clone(), 0, *b);
        }
    }
    mk(Kind::Rep(x, min, max))
}

/// `(atom, min, max)` if `r` is a repetition of one atom (an atom is `{1,1}`).
pub(super) fn rep_parts(r: &Re) -> Option<(Re, u32, Option<u32>)> {
    match &r.0.kind {
        Kind::Class(_) | Kind::Text(_) => Some((r.clone(), 1, Some(1))),
        Kind::Rep(x, a, b) if x.is_atom() => Some((x.clone(), *a, *b)),
        _ => None,
    }
}

pub(super) fn cat<I: IntoIterator<Item = Re>>(items: I) -> Re {
    let mut out: Vec<Re> = Vec::new();
    let push = |out: &mut Vec<Re>, it: Re| {
        if let (Some(last), Some((x2, a2, b2))) = (out.last(), rep_parts(&it)) {
            if let Some((x1, a1, b1)) = rep_parts(last) {
                if x1 == x2 {
                    let max = match (b1, b2) {
                        (Some(p), Some(q)) => Some(p + q),
                        _ => None,
                    };
                    *out.last_mut().unwrap() = rep(x1, a1 + a2, max);
                    return;
                }
            }
        }
        out.push(it);
    };
    for it in items {
        match &it.0.kind {
            Kind::Empty => return empty(),
            Kind::Eps => {}
            Kind::Cat(xs) => {
                for x in xs {
                    push(&mut out, x.clone());
                }
            }
            _ => push(&mut out, it.clone()),
        }
    }
    match out.len() {
        0 => eps(),
        1 => out.pop().unwrap(),
        _ => mk(Kind::Cat(out)),
    }
}

/// `(leading class, rest)` of a concatenation.
pub(super) fn split_head(r: &Re) -> Option<(u16, Re)> {
    match &r.0.kind {
        Kind::Class(m) => Some((*m, eps())),
        Kind::Cat(xs) => match &xs[0].0.kind {
            Kind::Class(m) => Some((*m, cat(xs[1..].iter().cloned()))),
            _ => None,
        },
        _ => None,
    }
}

pub(super) fn alt<I: IntoIterator<Item = Re>>(items: I) -> Re {
    let mut flat: Vec<Re> = Vec::new();
    let mut has_eps = false;
    for it in items {
        match &it.0.kind {
            Kind::Empty => {}
            Kind::Eps => has_eps = true,
            Kind::Alt(xs) => flat.extend(xs.iter().cloned()),
            _ => flat.push(it),
        }
    }
    // Merge `c1 X | c2 X` into `[c1c2] X`.
    let mut merged: Vec<(Option<u16>, Re)> = Vec::new();
    for it in flat {
        match split_head(&it) {
            Some((m, tail)) => {
                if let Some(g) = merged.iter_mut().find(|g| g.0.is_some() && g.1 == tail) {
                    g.0 = Some(g.0.unwrap() | m);
                } else {
                    merged.push((Some(m), tail));
                }
            }
            None => {
                if !merged.iter().any(|g| g.0.is_none() && g.1 == it) {
                    merged.push((None, it));
                }
            }
        }
    }
    let mut out: Vec<Re> = merged
        .into_iter()
        .map(|(h, t)| match h {
            Some(m) if matches!(t.0.kind, Kind::Eps) => class(m),
            Some(m) => cat([class(m), t]),
            None => t,
        })
        .collect();
    // Merge `X S | Y S` into `(X|Y) S`.
    let mut i = 0;
    while i < out.len() {
        let last_of = |r: &Re| match &r.0.kind {
            Kind::Cat(xs) if xs.len() >= 2 && !xs.last().unwrap().is_atom() => Some(xs.last().unwrap().clone()),
            _ => None,
        };
        if let Some(s) = last_of(&out[i]) {
            let same: Vec<usize> = (i + 1..out.len()).filter(|&j| last_of(&out[j]).as_ref() == Some(&s)).collect();
            if !same.is_empty() {
                let mut prefixes = vec![init_of(&out[i])];
                for &j in same.iter().rev() {
                    prefixes.insert(1, init_of(&out.remove(j)));
                }
                out[i] = cat([alt(prefixes), s]);
            }
        }
        i += 1;
    }
    let has_nullable = out.iter().any(|x| x.0.nullable);
    let body = match out.len() {
        0 => return if has_eps { eps() } else { empty() },
        1 => out.pop().unwrap(),
        _ => mk(Kind::Alt(out)),
    };
    if has_eps && !has_nullable {
        opt(body)
    } else {
        body
    }
}

/// A concatenation without its last item.
pub(super) fn init_of(r: &Re) -> Re {
    match &r.0.kind {
        Kind::Cat(xs) => cat(xs[..xs.len() - 1].iter().cloned()),
        _ => eps(),
    }
}

/// The regex with its nesting depth brought under [`MAX_DEPTH`] if possible.
pub(super) fn shallow(re: Re) -> Re {
    if re.depth() <= MAX_DEPTH {
        return re;
    }
    let re = compress(&re);
    if re.depth() <= MAX_DEPTH {
        re
    } else {
        flatten(&re)
    }
}

/// `O | a(O | a(O | … a(O | R)))` (the same atom `a` and alternatives `O` on `m ≥ 3` levels, as a
/// bound's run of `0`s or `9`s produces) → `a{0,m-1}(O) | a{m}R`.
pub(super) fn compress(re: &Re) -> Re {
    if re.depth() <= 24 {
        return re.clone();
    }
    if let Some((o, a, next)) = chain_level(re) {
        let mut m = 1u32;
        let mut cur = next;
        while let Some((o2, a2, n2)) = chain_level(&cur) {
            if a2 != a || o2 != o {
                break;
            }
            m += 1;
            cur = n2;
        }
        if m >= 3 {
            return alt([cat([rep(a.clone(), 0, Some(m - 1)), alt(o)]), cat([rep(a, m, Some(m)), compress(&cur)])]);
        }
    }
    match &re.0.kind {
        Kind::Alt(xs) => alt(xs.iter().map(compress)),
        Kind::Cat(xs) => cat(xs.iter().map(compress)),
        Kind::Rep(x, a, b) => rep(compress(x), *a, *b),
        _ => re.clone(),
    }
}

/// `(O, a, N)` if `re` is `O | aN` with `N` an alternation (possibly optional).
pub(super) fn chain_level(re: &Re) -> Option<(Vec<Re>, Re, Re)> {
    let is_altish = |r: &Re| matches!(&r.0.kind, Kind::Alt(_) | Kind::Rep(_, 0, Some(1)));
    let mut items = match &re.0.kind {
        Kind::Alt(xs) => xs.clone(),
        Kind::Rep(x, 0, Some(1)) => match &x.0.kind {
            Kind::Alt(xs) => xs.iter().cloned().chain([eps()]).collect(),
            _ => vec![x.clone(), eps()],
        },
        _ => return None,
    };
    let mut found = None;
    for (i, it) in items.iter().enumerate() {
        if let Kind::Cat(ys) = &it.0.kind {
            if ys.len() == 2 && ys[0].is_atom() && is_altish(&ys[1]) {
                if found.is_some() {
                    return None;
                }
                found = Some((i, ys[0].clone(), ys[1].clone()));
            }
        }
    }
    let (i, a, next) = found?;
    items.remove(i);
    Some((items, a, next))
}

/// Distributes concatenation over deeply nested alternations so that the nesting depth stays
/// small (`a(b|c(d|e))` → `ab|acd|ace`), for bounds with long digit strings.
pub(super) fn flatten(re: &Re) -> Re {
    if re.depth() <= MAX_DEPTH / 4 {
        return re.clone();
    }
    match &re.0.kind {
        Kind::Alt(xs) => alt(xs.iter().map(flatten)),
        Kind::Cat(xs) => {
            let (k, deepest) = xs.iter().enumerate().max_by_key(|(_, x)| x.depth()).unwrap();
            let around = |mid: Re| cat(xs[..k].iter().cloned().chain([mid]).chain(xs[k + 1..].iter().cloned()));
            match &deepest.0.kind {
                Kind::Alt(ys) => alt(ys.iter().map(|y| flatten(&around(y.clone())))),
                Kind::Rep(y, 0, Some(1)) => alt([flatten(&around(eps())), flatten(&around(y.clone()))]),
                _ => cat(xs.iter().map(flatten)),
            }
        }
        _ => re.clone(),
    }
}
