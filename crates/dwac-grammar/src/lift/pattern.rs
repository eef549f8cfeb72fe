//! The patterns lexer inference builds ([`Re`]): regular expressions with shared subtrees,
//! simplified as they are made (counted repetitions recovered from their lowered chains), and
//! printed in Rust `regex` syntax.

use std::cell::OnceCell;
use std::rc::Rc;

/// A regular expression under construction: shared subtrees (`Rc`), its printed length and
/// whether it matches the empty string known at each node, and its printed form made once.
#[derive(Clone)]
pub(super) struct Re(Rc<Node>);

struct Node {
    kind: Kind,
    len: usize,
    nullable: bool,
    /// A rough count of automaton states (an atom 1, a counted repetition its unit times its
    /// largest count): what makes counting in the lexer cheap or not.
    weight: u64,
    /// Somewhere inside: a counted repetition of a large unit ([`BIG_UNIT`]), better counted by
    /// the parser than by lexer states (see [`LiftOptions`]).
    big: bool,
    printed: OnceCell<Rc<str>>,
}

/// A unit of at least this [`Node::weight`] repeated a bounded number of times (twice or more)
/// stays a repetition of the grammar: the lexer would hold a copy of the unit's states per
/// count (a CSV row of some 700 lexer states, `row{1,50}`: 37,000 states, seconds of compile),
/// where the parser counts with a chain of rules. Small units (a string's character, a digit,
/// a domain label) are counted by the lexer, as any regex counter is.
const BIG_UNIT: u64 = 64;

/// A pattern of more [`Node::weight`] than this is not lifted whole (its parts are): the lexer
/// states it would take cost more compile time than the parser steps they save.
pub(super) const MAX_WEIGHT: u64 = 50_000;

enum Kind {
    /// Matches nothing.
    Never,
    /// Matches only the empty string.
    Eps,
    /// A terminal's pattern.
    Atom(String),
    Cat(Vec<Re>),
    Alt(Vec<Re>),
    Star(Re),
    /// `min..=max` copies (`max` `None`: unbounded).
    Rep(Re, u32, Option<u32>),
}

impl Re {
    /// See [`Node::weight`].
    pub(super) fn weight(&self) -> u64 {
        self.0.weight
    }

    /// See [`Node::big`].
    pub(super) fn big(&self) -> bool {
        self.0.big
    }

    fn make(kind: Kind) -> Re {
        let (len, nullable) = match &kind {
            Kind::Never => (0, false),
            Kind::Eps => (0, true),
            Kind::Atom(s) => (s.len() + 4, false),
            Kind::Cat(v) => (v.iter().map(Re::len).sum(), v.iter().all(Re::nullable)),
            Kind::Alt(v) => (v.iter().map(|r| r.len() + 1).sum::<usize>() + 5, v.iter().any(Re::nullable)),
            Kind::Star(r) => (r.len() + 5, true),
            Kind::Rep(r, lo, _) => (r.len() + 16, *lo == 0 || r.nullable()),
        };
        let (weight, big) = match &kind {
            Kind::Never | Kind::Eps => (0, false),
            Kind::Atom(_) => (1, false),
            Kind::Cat(v) | Kind::Alt(v) => {
                (v.iter().map(|r| r.0.weight).fold(0u64, u64::saturating_add), v.iter().any(|r| r.0.big))
            }
            Kind::Star(r) => (r.0.weight, r.0.big),
            Kind::Rep(r, lo, hi) => {
                let count = u64::from(hi.unwrap_or(*lo).max(*lo));
                (r.0.weight.saturating_mul(count.max(1)), r.0.big || (r.0.weight >= BIG_UNIT && count >= 2))
            }
        };
        Re(Rc::new(Node { kind, len, nullable, weight, big, printed: OnceCell::new() }))
    }

    pub(super) fn never() -> Re {
        Re::make(Kind::Never)
    }

    pub(super) fn eps() -> Re {
        Re::make(Kind::Eps)
    }

    pub(super) fn atom(regex: &str) -> Re {
        Re::make(Kind::Atom(regex.to_string()))
    }

    pub(super) fn len(&self) -> usize {
        self.0.len
    }

    pub(super) fn nullable(&self) -> bool {
        self.0.nullable
    }

    pub(super) fn is_never(&self) -> bool {
        matches!(self.0.kind, Kind::Never)
    }

    pub(super) fn is_eps(&self) -> bool {
        matches!(self.0.kind, Kind::Eps)
    }

    /// The same regex as `other`, by printed form (cheap for small ones; only adjacent
    /// concatenated parts are compared).
    pub(super) fn same(&self, other: &Re) -> bool {
        Rc::ptr_eq(&self.0, &other.0) || (self.len() == other.len() && self.print() == other.print())
    }

    /// `x` repeated: the unit and counts of a `Rep`, or of anything as one copy.
    pub(super) fn as_rep(&self) -> (Re, u32, Option<u32>) {
        match &self.0.kind {
            Kind::Rep(r, lo, hi) => (r.clone(), *lo, *hi),
            Kind::Star(r) => (r.clone(), 0, None),
            _ => (self.clone(), 1, Some(1)),
        }
    }

    /// Concatenation; neighbours that repeat one unit merge into one counted repetition
    /// (`u u u (u{0,12})` → `u{3,15}`), which is how bounded repetitions come back from their
    /// lowered chains.
    pub(super) fn cat(parts: Vec<Re>) -> Re {
        let mut out: Vec<Re> = Vec::with_capacity(parts.len());
        for p in parts {
            if p.is_never() {
                return Re::never();
            }
            if p.is_eps() {
                continue;
            }
            // The part as a whole first (`row` after `row{0,1}`), then, a concatenation, item by
            // item.
            if Re::merge_last(&mut out, &p) {
                continue;
            }
            match &p.0.kind {
                Kind::Cat(v) => {
                    for it in v {
                        if !Re::merge_last(&mut out, it) {
                            out.push(it.clone());
                        }
                    }
                }
                _ => out.push(p.clone()),
            }
        }
        match out.len() {
            0 => Re::eps(),
            1 => out.pop().unwrap_or_else(Re::eps),
            _ => Re::make(Kind::Cat(out)),
        }
    }

    /// Merge `it` into the last item of `out` when both repeat one unit:
    /// `u{a1,b1} u{a2,b2} = u{a1+a2, b1+b2}` (unbounded if either is).
    fn merge_last(out: &mut Vec<Re>, it: &Re) -> bool {
        let Some(last) = out.last() else { return false };
        let ((u1, a1, b1), (u2, a2, b2)) = (last.as_rep(), it.as_rep());
        if !u1.same(&u2) {
            return false;
        }
        let merged = Re::rep(u1, a1 + a2, b1.zip(b2).map(|(x, y)| x + y));
        out.pop();
        out.push(merged);
        true
    }

    /// Alternation; duplicates dropped, nested alternations flattened, `Never` dropped.
    pub(super) fn alt(parts: Vec<Re>) -> Re {
        // `ε | u{1,n}` = `u{0,n}` (and `ε | u` = `u{0,1}`): how the chains that `x{0,n}` and
        // nested `(x (x …)?)?` are lowered to come back as counters. (Decided before any
        // flattening: `u` may itself be an alternation.)
        let eps = parts.iter().any(Re::is_eps);
        let rest: Vec<&Re> = parts.iter().filter(|p| !p.is_eps() && !p.is_never()).collect();
        if let (true, [only]) = (eps, rest.as_slice()) {
            if let (u, 1, hi) = only.as_rep() {
                return Re::rep(u, 0, hi);
            }
        }
        let mut out: Vec<Re> = Vec::with_capacity(parts.len());
        let mut eps = false;
        for p in parts {
            let items: Vec<Re> = match &p.0.kind {
                Kind::Never => continue,
                Kind::Alt(v) => v.clone(),
                _ => vec![p.clone()],
            };
            for it in items {
                if it.is_eps() {
                    eps = true;
                } else if !out.iter().any(|o| o.same(&it)) {
                    out.push(it);
                }
            }
        }
        if eps {
            out.push(Re::eps());
        }
        match out.len() {
            0 => Re::never(),
            1 => out.pop().unwrap_or_else(Re::never),
            _ => Re::make(Kind::Alt(out)),
        }
    }

    pub(super) fn star(r: Re) -> Re {
        match &r.0.kind {
            Kind::Never | Kind::Eps => Re::eps(),
            Kind::Star(_) => r,
            _ => Re::make(Kind::Star(r)),
        }
    }

    pub(super) fn rep(r: Re, lo: u32, hi: Option<u32>) -> Re {
        match (lo, hi) {
            (_, Some(0)) => Re::eps(),
            (1, Some(1)) => r,
            (0, None) => Re::star(r),
            _ => Re::make(Kind::Rep(r, lo, hi)),
        }
    }

    /// The same language without the empty string (`None` if that leaves nothing).
    pub(super) fn nonempty(&self) -> Option<Re> {
        let r = match &self.0.kind {
            Kind::Never | Kind::Eps => return None,
            _ if !self.nullable() => return Some(self.clone()),
            Kind::Atom(_) => return Some(self.clone()),
            Kind::Alt(v) => Re::alt(v.iter().filter_map(Re::nonempty).collect()),
            // x* without ε: x⁺ (x itself not empty).
            Kind::Star(x) => {
                let x = x.nonempty()?;
                Re::rep(x, 1, None)
            }
            Kind::Rep(x, _, hi) => {
                let x = x.nonempty()?;
                Re::rep(x, 1, *hi)
            }
            // (ab)⁺ = a⁺b | (ε∈a) b⁺, a and b both nullable here.
            Kind::Cat(v) => {
                let (a, b) = (v[0].clone(), Re::cat(v[1..].to_vec()));
                let first = a.nonempty().map(|a1| Re::cat(vec![a1, b.clone()]));
                Re::alt(first.into_iter().chain(b.nonempty()).collect())
            }
        };
        (!r.is_never()).then_some(r)
    }

    /// The regex in Rust `regex` syntax.
    pub(super) fn print(&self) -> Rc<str> {
        self.0
            .printed
            .get_or_init(|| {
                let mut s = String::with_capacity(self.len());
                self.write(&mut s);
                s.into()
            })
            .clone()
    }

    fn write(&self, s: &mut String) {
        match &self.0.kind {
            // (Only inside patterns that are `Never` as a whole, which are never printed.)
            Kind::Never => s.push_str("[^\\x00-\\x{10FFFF}]"),
            Kind::Eps => s.push_str("(?:)"),
            Kind::Atom(a) => {
                s.push_str("(?:");
                s.push_str(a);
                s.push(')');
            }
            Kind::Cat(v) => v.iter().for_each(|r| r.write(s)),
            Kind::Alt(v) => {
                let eps = v.iter().any(Re::is_eps);
                s.push_str("(?:");
                for (i, r) in v.iter().filter(|r| !r.is_eps()).enumerate() {
                    if i > 0 {
                        s.push('|');
                    }
                    r.write(s);
                }
                s.push(')');
                if eps {
                    s.push('?');
                }
            }
            Kind::Star(r) => {
                s.push_str("(?:");
                r.write(s);
                s.push_str(")*");
            }
            Kind::Rep(r, lo, hi) => {
                s.push_str("(?:");
                r.write(s);
                match hi {
                    Some(h) => s.push_str(&format!("){{{lo},{h}}}")),
                    None => s.push_str(&format!("){{{lo},}}")),
                }
            }
        }
    }
}
