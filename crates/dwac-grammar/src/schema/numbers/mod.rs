//! Numeric constraints (bounds, multipleOf) compiled to regexes over JSON number lexemes.
//!
//! [`number_regex`] turns a [`NumberConstraints`] (`type: integer|number`, `minimum`, `maximum`,
//! `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`) into ONE regex in Rust `regex` syntax
//! (no anchors, no look-around, never matching the empty string, nesting depth ≤ 200) over
//! RFC 8259 number lexemes `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`. Every comparison is
//! made on the exact decimal VALUE of the lexeme ([`Decimal`], arbitrary size): `-0` is `0`,
//! `1.500` is `1.5`, `1e2` is `100`.
//!
//! # What is exact and what is stricter
//!
//! The hard rule holds everywhere: the regex never matches a lexeme whose value violates a
//! constraint. Every place where it matches FEWER lexemes than are valid is listed here.
//!
//! * **Lexemes without an exponent** (`-12`, `0.50`, `-0`, `1.0`): always exact. Bounds of any
//!   size and precision (inclusive or exclusive, decimal, negative, `1e308`, `18446744073709551616`,
//!   `5e-324`) become digit-range regexes on fixed-point decimals with any number of fraction
//!   digits; `integer` with decimal bounds rounds (`minimum: 0.5` → `≥ 1`); `-0` satisfies exactly
//!   what `0` satisfies.
//! * **`type: integer`**: with `integer_allows_fraction_zero` (draft 6+) a lexeme is an integer
//!   when its value is (`1.0`, `1.50e1`, `100e-2`); without it (draft 4) only `-?(0|[1-9][0-9]*)`
//!   lexemes are integers and no fraction or exponent form is ever matched (exact for draft-4
//!   semantics). `integer` + `multipleOf: m` is the single step `lcm(1, m)` (`0.5` → `1`, `1.5` →
//!   `3`, `1e-8` → `1`).
//! * **`multipleOf: m`**, value-based (`1.500` is a multiple of `0.01`). Write `m = A·10^E` with
//!   `A` an integer not divisible by 10 and `A = 2^p·5^q·b`, `gcd(b, 10) = 1`. `x` is a multiple
//!   iff its digits below position `E` are zero, its digits at positions `E .. E+max(p,q)-1` (a
//!   window) make `x·10^-E` divisible by `2^p·5^q`, and its digit string is `≡ 0 (mod b)` (the
//!   decimal point does not matter modulo `b`). The zero and window rules are positional and
//!   cheap: `0.01`, `0.25`, `0.5`, `2`, `4`, `20`, `25`, `64`, `100`, `1e-8`, `1e300` are exact
//!   with any bounds. The `mod b` rule is a digit automaton (digit classes, divide-and-conquer
//!   for runs of free digits, state elimination for unbounded lengths) and is exact while the
//!   regex fits the budget: unbounded or one-sided with short bounds for `b = 3` and `b = 7`
//!   (`3`, `6`, `7`, `12`, `14`, `15`, `1.5`, `0.3`, `0.7`), bounded ranges of a few digits for
//!   larger `b`. Otherwise a bounded range with at most [`ENUMERATION_LIMIT`] multiples is
//!   enumerated (any `m`, e.g. `type: integer, multipleOf: 0.123456789` in `[0, 1e9]`). Anything
//!   else (`9`, `11`, `13`, `2.25` unbounded, `3` in `[-1e20, 1e20]`) is
//!   [`NumberError::Unsupported`], never approximated.
//! * **Numbers that are not integers** ([`non_integer_regex`], draft 6+): exact on exponent-free
//!   lexemes (`1.5`, `-0.25`; `1.0` is an integer), no exponent lexeme matched (`15e-1` is not).
//! * **Numbers other than a constant** ([`not_equal`], `not: {const: 1}`): exact on exponent-free
//!   lexemes (`1.0` is `1`), no exponent lexeme matched (`2e3` is not) unless the constant is `0`.
//! * **Lexemes with an exponent**: the mantissas allowed with exponent value `e` are the
//!   exponent-free lexemes of the constraints scaled by `10^-e`. How far this is used is reported
//!   by [`number_regex_detailed`] as an [`ExponentExactness`]:
//!   - [`ExponentExactness::All`]: every exponent lexeme is exact. This is the case when the
//!     constraints are scale invariant (no `multipleOf`, not `integer`, every bound `0` or
//!     absent), and for draft-4 integers (no exponent lexeme is valid there).
//!   - [`ExponentExactness::Windows`]: exponent values inside the listed windows are exact. The
//!     windows are `[p - 3, p + 3]` ([`EXPONENT_PAD`]) around each position `p` that sets the
//!     constraints' scale (the leading digit of each nonzero bound and of the step, the last digit
//!     of the step; `0` for `integer`), merged when they touch; if the regex would grow by more
//!     than [`EXPONENT_BUDGET`] bytes (or twice the exponent-free regex) or exceed the size limits,
//!     the pad shrinks to 1 and then 0. Every other exponent value is grouped with its
//!     neighbours (each gap between windows, everything below, everything above) and matched only
//!     with a mantissa that is valid for EVERY exponent of its group: sound, and stricter. In
//!     practice: below the lowest window, with a step only mantissa `0` remains (`integer`:
//!     `100e-2` is exact, `1000000e-6` is rejected); without a step the bounds stay, scaled to
//!     the window edge (so `1e-30` still satisfies `[0, 1]`). Above the highest window, bounded
//!     ranges keep only mantissa `0` (`0.0001e8` = 10000 is rejected for `[0, 100000]`), and with
//!     a step the mantissa must be a multiple of the step scaled to the group's first exponent;
//!     from 16 positions past the step's last digit on, a separate group allows 16 more fraction
//!     digits, so every shortest-round-trip `f64` form is kept (`integer`: `1.5e10` and
//!     `1.2345678910111214e+52` are matched, `1.23456e5` is not).
//!   - [`ExponentExactness::None`]: exponent lexemes are never matched (when even pad 0 does not
//!     fit, e.g. for `mod 7` steps).
//!
//! Errors: [`NumberError::Unsatisfiable`] when no value satisfies the constraints (decided by exact
//! arithmetic before any regex is built), [`NumberError::Invalid`] for `multipleOf ≤ 0`,
//! [`NumberError::Unsupported`] when a bound or `multipleOf` has a digit beyond `10^±1100`
//! (e.g. `maximum: 1e2000`) or when the exponent-free regex would exceed [`MAX_REGEX_LEN`] bytes,
//! [`MAX_WEIGHT`] compiled states or the nesting limit (see above; also, for instance, bounds of
//! hundreds of digits that do not fold into runs). [`Decimal::parse`] refuses exponents beyond
//! `±10^15`.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

mod decimal;
mod generator;
mod regex_ast;

pub use decimal::Decimal;
use decimal::Nat;
use generator::{structural, Aut, Gen, TooBig, ALL, ZERO};
use regex_ast::{alt, cat, class, empty, eps, opt, rep, shallow, text, Re};

/// Largest regex (in bytes) this module returns.
pub const MAX_REGEX_LEN: usize = 100_000;
/// Bounded ranges with at most this many valid values may be enumerated.
pub const ENUMERATION_LIMIT: u64 = 2000;
/// Exponent values this far from the constraints' magnitudes are still exact.
pub const EXPONENT_PAD: i64 = 3;
/// Fraction digits of the mantissa of a shortest-round-trip `f64` in scientific notation.
const F64_DIGITS: i64 = 16;
/// Bytes the exponent forms may add to the exponent-free regex (or twice its size, if more).
pub const EXPONENT_BUDGET: usize = 8_000;
/// Digit positions (powers of ten) a bound or `multipleOf` may use.
const MAX_POSITION: i64 = 1100;
/// Largest odd part `b` of a step that gets a `mod b` automaton.
const MAX_MODULUS: u64 = 1_000_000;
/// Work units (generator states) one exponent-free regex may take.
const WORK_LIMIT: usize = 100_000;
/// Exponents `|e|` accepted by [`Decimal::parse`].
const MAX_EXPONENT: i64 = 1_000_000_000_000_000;
/// Compiled size (roughly NFA states, counted repetitions expanded) of the returned regex.
pub const MAX_WEIGHT: usize = 50_000;
/// Nesting depth of the printed regex (the `regex` crate refuses more than 250).
const MAX_DEPTH: usize = 200;

// ---------------------------------------------------------------------------------------------
// Public API

/// The numeric keywords of one schema, already combined.
#[derive(Clone, Debug, Default)]
pub struct NumberConstraints {
    /// `type: integer`.
    pub integer: bool,
    /// `(bound, exclusive)`.
    pub min: Option<(Decimal, bool)>,
    /// `(bound, exclusive)`.
    pub max: Option<(Decimal, bool)>,
    /// `multipleOf`, must be `> 0`.
    pub multiple_of: Option<Decimal>,
    /// Draft 6+: `1.0` is an integer; draft 4: it is not.
    pub integer_allows_fraction_zero: bool,
}

/// Why no regex was produced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NumberError {
    /// No number satisfies the constraints.
    #[error("no number satisfies the numeric constraints")]
    Unsatisfiable,
    /// The constraints cannot be expressed exactly within the size budget.
    #[error("unsupported numeric constraint: {0}")]
    Unsupported(String),
    /// The constraints are malformed.
    #[error("invalid numeric constraint: {0}")]
    Invalid(String),
}

/// How exactly lexemes WITH an exponent are classified (exponent-free lexemes always are).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExponentExactness {
    /// Every exponent lexeme: matched iff valid.
    All,
    /// Exponent values in these disjoint ranges `(lo, hi)`: matched iff valid; other exponent
    /// values: only a sound subset is matched.
    Windows(Vec<(i64, i64)>),
    /// Exponent lexemes are never matched.
    None,
}

/// A regex with its exactness report.
#[derive(Clone, Debug)]
pub struct NumberRegex {
    /// The regex (Rust syntax, unanchored, matched against the whole lexeme).
    pub regex: String,
    /// Which exponent lexemes are classified exactly.
    pub exponents: ExponentExactness,
}

/// The number lexemes of a value that is not an integer (`not: {type: integer}`), to intersect
/// with [`number_regex`]'s. With `integer_allows_fraction_zero` (draft 6+: `1.0` and `1.5e1` are
/// integers) the exponent-free lexemes with a nonzero fraction digit: exact on exponent-free
/// lexemes, and no lexeme with an exponent is matched (stricter, as listed in the module docs:
/// whether `d.ddde±n` is integral compares a digit count with the exponent's value). Draft 4
/// (only `-?(0|[1-9][0-9]*)` lexemes are integers): every other lexeme, exactly.
pub fn non_integer_regex(integer_allows_fraction_zero: bool) -> String {
    if integer_allows_fraction_zero {
        r"-?(?:0|[1-9][0-9]*)\.[0-9]*[1-9][0-9]*".to_string()
    } else {
        r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+(?:[eE][+-]?[0-9]+)?|[eE][+-]?[0-9]+)".to_string()
    }
}

/// The number lexemes of values other than `d` (`not: {const: d}`), as (a regex of lexemes to
/// except, a regex every lexeme must also match, if any): exact on exponent-free lexemes; with an
/// exponent, only where every exponent lexeme of `d` is known (`d = 0`); otherwise no exponent
/// lexeme is matched (stricter, as listed in the module docs: whether `d.ddde±n` equals a value
/// compares a digit count with the exponent's value, as for integers).
pub fn not_equal(d: &Decimal, integer_allows_fraction_zero: bool) -> Result<(String, Option<String>), NumberError> {
    let c = NumberConstraints {
        integer: false,
        min: Some((d.clone(), false)),
        max: Some((d.clone(), false)),
        multiple_of: None,
        integer_allows_fraction_zero,
    };
    let r = number_regex_detailed(&c)?;
    let exponent_free =
        (r.exponents != ExponentExactness::All).then(|| r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?".to_string());
    Ok((r.regex, exponent_free))
}

/// The regex (Rust syntax) for JSON number lexemes satisfying `c`. Err(Unsatisfiable) if no number
/// satisfies it (the caller turns that into an empty alternative, not an error), Err(Unsupported)
/// if we can't be exact.
pub fn number_regex(c: &NumberConstraints) -> Result<String, NumberError> {
    number_regex_detailed(c).map(|r| r.regex)
}

/// [`number_regex`] with the report of which exponent lexemes are exact.
pub fn number_regex_detailed(c: &NumberConstraints) -> Result<NumberRegex, NumberError> {
    if let Some(m) = &c.multiple_of {
        if !m.is_positive() {
            return Err(NumberError::Invalid(format!("multipleOf must be greater than 0, got {m}")));
        }
    }
    let named = [("minimum", c.min.as_ref().map(|x| &x.0)), ("maximum", c.max.as_ref().map(|x| &x.0))];
    for (name, v) in named.into_iter().chain([("multipleOf", c.multiple_of.as_ref())]) {
        if let Some(v) = v {
            if !v.is_zero() && (v.leading_position().unwrap().abs() > MAX_POSITION || v.exp.abs() > MAX_POSITION) {
                return Err(NumberError::Unsupported(format!(
                    "{name} {v} has digits beyond 10^±{MAX_POSITION}; a digit-range regex would be too large"
                )));
            }
        }
    }
    let frac = !c.integer || c.integer_allows_fraction_zero;
    let step = match (&c.multiple_of, c.integer) {
        (Some(m), i) => Some(Step::new(m, i)),
        (None, true) => Some(Step::new(&Decimal::from_i64(1), true)),
        (None, false) => None,
    };
    let flip = |b: &Option<(Decimal, bool)>| b.as_ref().map(|(v, excl)| (v.clone(), !excl));
    let problem = Problem { lo: flip(&c.min), hi: flip(&c.max), step, frac, force_enum: false };
    let mut prep = prepare(&problem)?.ok_or(NumberError::Unsatisfiable)?;
    let plain = match structural(&prep) {
        Ok(re) => re,
        Err(TooBig) => {
            prep.force_enum = true;
            enumerated(&prep)?
        }
    };
    if plain.is_empty() {
        return Err(NumberError::Unsatisfiable);
    }
    let (re, exponents) = if frac { exponent_forms(&prep, plain) } else { (plain, ExponentExactness::All) };
    Ok(NumberRegex { regex: finish(re)?, exponents })
}

// ---------------------------------------------------------------------------------------------
// Problems: an interval (inclusive flags), an optional step, whether fractions are allowed.

#[derive(Clone, Debug)]
struct Step {
    /// The step value `a·10^e`.
    m: Decimal,
    /// Exponent `e` (digits below position `e` must be zero).
    e: i64,
    /// Odd part modulus (coprime to 10), if small enough.
    b: Option<u64>,
    /// `2^p` or `5^q`, if small enough.
    c: Option<u64>,
    /// Window width `max(p, q)`.
    t: i64,
}

impl Step {
    /// The step for `multipleOf: m`; for integers the step `lcm(1, m)`.
    fn new(m: &Decimal, integer: bool) -> Step {
        let mut a = m.nat();
        let (mut p, mut q) = (0u64, 0u64);
        loop {
            let (d, r) = a.divmod_small(2);
            if r != 0 {
                break;
            }
            a = d;
            p += 1;
        }
        loop {
            let (d, r) = a.divmod_small(5);
            if r != 0 {
                break;
            }
            a = d;
            q += 1;
        }
        let mut e = m.exp;
        if integer && e < 0 {
            let k = (-e) as u64;
            p = p.saturating_sub(k);
            q = q.saturating_sub(k);
            e = 0;
        }
        let mut full = a.clone();
        for _ in 0..p {
            full = full.times(&Nat::from_u64(2));
        }
        for _ in 0..q {
            full = full.times(&Nat::from_u64(5));
        }
        let b = a.to_u64().filter(|&b| b <= MAX_MODULUS);
        let c = if p > 0 {
            (p <= 62).then(|| 1u64 << p)
        } else if q > 0 {
            (q <= 26).then(|| 5u64.pow(q as u32))
        } else {
            Some(1)
        };
        Step { m: Decimal::from_nat(false, full, e), e, b, c, t: p.max(q) as i64 }
    }

    fn scaled(&self, k: i64) -> Step {
        Step { m: self.m.scale10(k), e: self.e + k, ..self.clone() }
    }
}

/// Bounds are `(value, inclusive)`.
#[derive(Clone, Debug)]
struct Problem {
    lo: Option<(Decimal, bool)>,
    hi: Option<(Decimal, bool)>,
    step: Option<Step>,
    frac: bool,
    /// Skip the structural generator (it already failed at another scale).
    force_enum: bool,
}

/// A problem whose bounds were tightened to multiples of the step, with the range of multiples.
#[derive(Clone, Debug)]
struct Prepared {
    p: Problem,
    /// `j_lo ..= j_hi` (values `j·m`) when there is a step and both bounds.
    jr: Option<(Decimal, Decimal)>,
}

impl std::ops::Deref for Prepared {
    type Target = Problem;
    fn deref(&self) -> &Problem {
        &self.p
    }
}

impl std::ops::DerefMut for Prepared {
    fn deref_mut(&mut self) -> &mut Problem {
        &mut self.p
    }
}

fn positions_ok(v: &Decimal) -> bool {
    v.is_zero() || (v.exp.abs() <= 3 * MAX_POSITION && v.leading_position().unwrap().abs() <= 3 * MAX_POSITION)
}

/// Tightens the bounds to multiples of the step; `None` if nothing satisfies the problem.
fn prepare(pr: &Problem) -> Result<Option<Prepared>, NumberError> {
    for v in pr.lo.iter().chain(pr.hi.iter()).map(|x| &x.0).chain(pr.step.as_ref().map(|s| &s.m)) {
        if !positions_ok(v) {
            return Err(NumberError::Unsupported(format!("{v} is too large or too small")));
        }
    }
    let mut p = pr.clone();
    let mut jr = None;
    if let Some(st) = &pr.step {
        let one = Decimal::from_i64(1);
        let jlo = pr.lo.as_ref().map(|(v, incl)| {
            let (f, exact) = v.div_floor(&st.m);
            if exact && *incl {
                f
            } else {
                f.plus(&one)
            }
        });
        let jhi = pr.hi.as_ref().map(|(v, incl)| {
            let (f, exact) = v.div_floor(&st.m);
            if exact && !*incl {
                f.plus(&one.negated())
            } else {
                f
            }
        });
        if let (Some(a), Some(b)) = (&jlo, &jhi) {
            if a > b {
                return Ok(None);
            }
            jr = Some((a.clone(), b.clone()));
        }
        // The tightened bound (a multiple of the step) or the original one, whichever has fewer
        // digits (exclusive `-1e308` with step 20 would become `-999…980`).
        let pick = |j: Decimal, orig: &(Decimal, bool), edge: Decimal| {
            if j == edge {
                return (Decimal::zero(), false);
            }
            let t = j.times(&st.m);
            if t.is_zero() || t.digits.len() <= orig.0.digits.len() {
                (t, true)
            } else {
                orig.clone()
            }
        };
        p.lo = jlo.map(|j| pick(j, pr.lo.as_ref().unwrap(), one.clone()));
        p.hi = jhi.map(|j| pick(j, pr.hi.as_ref().unwrap(), one.negated()));
    } else if let (Some((a, ai)), Some((b, bi))) = (&pr.lo, &pr.hi) {
        if a > b || (a == b && !(*ai && *bi)) {
            return Ok(None);
        }
    }
    Ok(Some(Prepared { p, jr }))
}

impl Prepared {
    /// The problem for mantissas of exponent `e` (values scaled by `10^-e`).
    fn scaled(&self, e: i64) -> Prepared {
        let sc = |b: &Option<(Decimal, bool)>| b.as_ref().map(|(v, i)| (v.scale10(-e), *i));
        let p = Problem {
            lo: sc(&self.lo),
            hi: sc(&self.hi),
            step: self.step.as_ref().map(|s| s.scaled(-e)),
            frac: self.frac,
            force_enum: self.force_enum,
        };
        Prepared { p, jr: self.jr.clone() }
    }

    fn contains_zero(&self) -> bool {
        let lo_ok = self.lo.as_ref().is_none_or(|(v, i)| v.is_negative() || (v.is_zero() && *i));
        let hi_ok = self.hi.as_ref().is_none_or(|(v, i)| v.is_positive() || (v.is_zero() && *i));
        lo_ok && hi_ok
    }

    /// Mantissas valid for EVERY exponent in `a..=b` (`None`: unbounded on that side).
    fn lump(&self, a: Option<i64>, b: Option<i64>) -> Result<Option<Prepared>, NumberError> {
        let zero = Decimal::zero();
        // m·10^e ≥ lo for all e in a..=b.
        let lo = match &self.lo {
            None => None,
            Some((v, i)) if v.is_zero() => Some((zero.clone(), *i)),
            Some((v, i)) if v.is_positive() => match a {
                Some(a) => Some((v.scale10(-a), *i)),
                None => return Ok(None),
            },
            Some((v, i)) => match b {
                Some(b) => Some((v.scale10(-b), *i)),
                None => Some((zero.clone(), true)),
            },
        };
        // m·10^e ≤ hi for all e in a..=b.
        let hi = match &self.hi {
            None => None,
            Some((v, i)) if v.is_zero() => Some((zero.clone(), *i)),
            Some((v, i)) if v.is_negative() => match a {
                Some(a) => Some((v.scale10(-a), *i)),
                None => return Ok(None),
            },
            Some((v, i)) => match b {
                Some(b) => Some((v.scale10(-b), *i)),
                None => Some((zero.clone(), true)),
            },
        };
        let (lo, hi, step) = match (&self.step, a) {
            (None, _) => (lo, hi, None),
            // Multiples of m·10^-e for every e ≤ b: only 0.
            (Some(_), None) => {
                if !self.contains_zero() {
                    return Ok(None);
                }
                (Some((zero.clone(), true)), Some((zero, true)), None)
            }
            (Some(st), Some(a)) => (lo, hi, Some(st.scaled(-a))),
        };
        prepare(&Problem { lo, hi, step, frac: self.frac, force_enum: self.force_enum && a.is_some() })
    }

    /// Positions that set the scale of the constraints (empty: scale invariant).
    fn scale_points(&self) -> Vec<i64> {
        let mut pts: Vec<i64> =
            self.lo.iter().chain(self.hi.iter()).filter_map(|(v, _)| v.leading_position()).collect();
        if let Some(st) = &self.step {
            pts.extend(st.m.leading_position());
            pts.push(st.e);
        }
        pts
    }
}

/// The exponent-free regex of a prepared problem (`Empty` if nothing).
fn plain_regex(pr: &Prepared) -> Result<Re, NumberError> {
    if !pr.force_enum {
        if let Ok(re) = structural(pr) {
            return Ok(re);
        }
    }
    enumerated(pr)
}

fn enumerated(pr: &Prepared) -> Result<Re, NumberError> {
    let refuse = || {
        let what = match &pr.step {
            Some(st) => {
                format!("the step {} (multipleOf, with type integer: lcm(1, multipleOf)) with these bounds", st.m)
            }
            None => "these bounds".into(),
        };
        NumberError::Unsupported(format!("{what}: the exact regex would exceed {MAX_REGEX_LEN} bytes"))
    };
    let (Some((jlo, jhi)), Some(st)) = (&pr.jr, &pr.step) else { return Err(refuse()) };
    let count = jhi.plus(&jlo.negated());
    if count >= Decimal::from_i64(ENUMERATION_LIMIT as i64) {
        return Err(refuse());
    }
    let mut pos = Trie::default();
    let mut neg = Trie::default();
    let one = Decimal::from_i64(1);
    let mut j = jlo.clone();
    while j <= *jhi {
        let v = j.times(&st.m);
        if !v.is_negative() {
            pos.insert(&v);
        }
        if !v.is_positive() {
            neg.insert(&v);
        }
        j = j.plus(&one);
    }
    let re = signed(pos.to_re(pr.frac), neg.to_re(pr.frac));
    if !re.fits() {
        return Err(refuse());
    }
    Ok(re)
}

fn signed(pos: Re, neg: Re) -> Re {
    if pos == neg {
        cat([opt(text("-")), pos])
    } else {
        alt([pos, cat([text("-"), neg])])
    }
}

#[derive(Default)]
struct Trie {
    kids: BTreeMap<u8, Trie>,
    /// `Some(true)`: an integer value ends here; `Some(false)`: a fractional one.
    term: Option<bool>,
}

impl Trie {
    fn insert(&mut self, v: &Decimal) {
        let mut node = self;
        for ch in v.plain_magnitude().bytes() {
            node = node.kids.entry(ch).or_default();
        }
        node.term = Some(v.is_integer());
    }

    fn to_re(&self, frac: bool) -> Re {
        let mut alts = Vec::new();
        match self.term {
            Some(true) if frac => alts.push(opt(cat([text("\\."), rep(class(ZERO), 1, None)]))),
            Some(true) => alts.push(eps()),
            Some(false) => alts.push(rep(class(ZERO), 0, None)),
            None => {}
        }
        for (&ch, kid) in &self.kids {
            let atom = if ch == b'.' { text("\\.") } else { class(1 << (ch - b'0')) };
            alts.push(cat([atom, kid.to_re(frac)]));
        }
        alt(alts)
    }
}

// ---------------------------------------------------------------------------------------------
// Exponent forms

fn exponent_forms(prep: &Prepared, plain: Re) -> (Re, ExponentExactness) {
    let pts = prep.scale_points();
    if pts.is_empty() {
        let exps = cat([text("[eE]"), exp_range(None, None)]);
        return (cat([plain.clone(), opt(exps)]), ExponentExactness::All);
    }
    let budget = EXPONENT_BUDGET.max(2 * plain.len());
    for (pad, f64_lump) in [(EXPONENT_PAD, true), (EXPONENT_PAD, false), (1, false), (0, false)] {
        let windows = windows_around(&pts, pad);
        if let Ok(re) = with_windows(prep, &plain, &windows, f64_lump, plain.len() + budget) {
            return (re, ExponentExactness::Windows(windows));
        }
    }
    (plain, ExponentExactness::None)
}

/// `[p - pad, p + pad]` for every point, merged when they overlap or touch.
fn windows_around(pts: &[i64], pad: i64) -> Vec<(i64, i64)> {
    let mut w: Vec<(i64, i64)> = pts.iter().map(|&p| (p - pad, p + pad)).collect();
    w.sort();
    let mut out: Vec<(i64, i64)> = Vec::new();
    for (a, b) in w {
        match out.last_mut() {
            Some(last) if a <= last.1 + 1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

type Ranges = Vec<(Option<i64>, Option<i64>)>;

/// Exponent values in `windows` get their exact mantissa language; every gap between, below and
/// above the windows gets the mantissas valid for all of its exponents.
fn with_windows(
    prep: &Prepared,
    plain: &Re,
    windows: &[(i64, i64)],
    f64_lump: bool,
    limit: usize,
) -> Result<Re, NumberError> {
    let too_big = || NumberError::Unsupported("exponent forms too large".into());
    if windows.iter().map(|w| w.1 - w.0 + 1).sum::<i64>() > 64 {
        return Err(too_big());
    }
    let mut groups: Vec<(Re, Ranges)> = Vec::new();
    let mut total = plain.len();
    let mut weight = plain.weight();
    let mut add = |m: Re, r: (Option<i64>, Option<i64>)| -> Result<(), NumberError> {
        if m.is_empty() {
            return Ok(());
        }
        total += m.len() + 30;
        weight += m.weight();
        if total > limit || weight > MAX_WEIGHT {
            return Err(too_big());
        }
        if let Some(g) = groups.iter_mut().find(|g| g.0 == m) {
            let last = g.1.last_mut().unwrap();
            if last.1.is_some() && r.0.is_some() && last.1.unwrap() + 1 == r.0.unwrap() {
                last.1 = r.1;
            } else {
                g.1.push(r);
            }
        } else {
            groups.push((m, vec![r]));
        }
        Ok(())
    };
    let mut next: Option<i64> = None;
    for &(lo, hi) in windows {
        if next != Some(lo) {
            if let Some(gap) = prep.lump(next, Some(lo - 1))? {
                add(plain_regex(&gap)?, (next, Some(lo - 1)))?;
            }
        }
        for e in lo..=hi {
            add(plain_regex(&prep.scaled(e))?, (Some(e), Some(e)))?;
        }
        next = Some(hi + 1);
    }
    // Above the windows, with a step: exponents from `F64_DIGITS` past the step's last digit on
    // get their own lump, which allows that many more fraction digits (`1.2345678910111214e52`).
    let mut a = next.unwrap();
    if let Some(st) = prep.step.as_ref().filter(|_| f64_lump) {
        let b = st.e + F64_DIGITS - 1;
        if a <= b {
            if let Some(l) = prep.lump(Some(a), Some(b))? {
                add(plain_regex(&l)?, (Some(a), Some(b)))?;
            }
            a = b + 1;
        }
    }
    if let Some(above) = prep.lump(Some(a), None)? {
        add(plain_regex(&above)?, (Some(a), None))?;
    }
    let mut plain_exps = Vec::new();
    let mut others = Vec::new();
    for (m, ranges) in groups {
        let ex = alt(ranges.iter().map(|&(a, b)| exp_range(a, b)));
        if m == *plain {
            plain_exps.push(ex);
        } else {
            others.push(cat([m, text("[eE]"), ex]));
        }
    }
    let head = if plain_exps.is_empty() {
        plain.clone()
    } else {
        cat([plain.clone(), opt(cat([text("[eE]"), alt(plain_exps)]))])
    };
    let re = shallow(alt(std::iter::once(head).chain(others)));
    if !re.fits() || re.len() > limit || re.depth() > MAX_DEPTH {
        return Err(too_big());
    }
    Ok(re)
}

/// The text after `[eE]` for exponent values in `lo..=hi` (`None`: unbounded).
fn exp_range(lo: Option<i64>, hi: Option<i64>) -> Re {
    if lo.is_none() && hi.is_none() {
        return cat([opt(text("[+-]")), rep(class(ALL), 1, None)]);
    }
    let mut alts = Vec::new();
    if lo.is_none_or(|l| l <= -1) {
        let mag_lo = hi.map_or(1, |h| if h >= -1 { 1 } else { -h });
        let mag_hi = lo.map(|l| -l);
        alts.push(cat([text("-"), rep(class(ZERO), 0, None), int_range(mag_lo, mag_hi)]));
    }
    if lo.is_none_or(|l| l <= 0) && hi.is_none_or(|h| h >= 0) {
        alts.push(cat([opt(text("[+-]")), rep(class(ZERO), 1, None)]));
    }
    if hi.is_none_or(|h| h >= 1) {
        let a = lo.map_or(1, |l| l.max(1));
        alts.push(cat([opt(text("\\+")), rep(class(ZERO), 0, None), int_range(a, hi)]));
    }
    alt(alts)
}

/// Canonical decimal integers in `a..=b` (`a ≥ 1`).
fn int_range(a: i64, b: Option<i64>) -> Re {
    let lo = Decimal::from_i64(a);
    let hi = b.map(Decimal::from_i64);
    let aut = Aut::none();
    let mut g = Gen::new(&lo, true, hi.as_ref().map(|h| (h, true)), &aut, false);
    g.side().unwrap_or_else(|_| empty())
}

fn finish(re: Re) -> Result<String, NumberError> {
    let re = shallow(re);
    if re.depth() > MAX_DEPTH {
        return Err(NumberError::Unsupported("the regex would nest too deeply".into()));
    }
    if !re.fits() {
        return Err(NumberError::Unsupported(format!(
            "the regex would exceed {MAX_REGEX_LEN} bytes or {MAX_WEIGHT} compiled states"
        )));
    }
    let mut s = String::with_capacity(re.len());
    re.print(&mut s);
    debug_assert_eq!(s.len(), re.len());
    Ok(s)
}
