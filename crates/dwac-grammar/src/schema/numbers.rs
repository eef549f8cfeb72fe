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
use std::fmt;
use std::rc::Rc;

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
// Natural numbers as decimal digit strings.

/// A natural number: decimal digits, most significant first, no leading zeros (empty = 0).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
struct Nat(Vec<u8>);

impl Nat {
    fn from_digits(d: &[u8]) -> Nat {
        let i = d.iter().position(|&x| x != 0).unwrap_or(d.len());
        Nat(d[i..].to_vec())
    }

    fn from_u64(v: u64) -> Nat {
        Nat::from_digits(&v.to_string().bytes().map(|b| b - b'0').collect::<Vec<_>>())
    }

    fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    fn to_u64(&self) -> Option<u64> {
        let mut v: u64 = 0;
        for &d in &self.0 {
            v = v.checked_mul(10)?.checked_add(d as u64)?;
        }
        Some(v)
    }

    fn cmp_nat(&self, o: &Nat) -> Ordering {
        self.0.len().cmp(&o.0.len()).then_with(|| self.0.cmp(&o.0))
    }

    fn plus(&self, o: &Nat) -> Nat {
        let (a, b) = (&self.0, &o.0);
        let n = a.len().max(b.len());
        let mut out = vec![0u8; n + 1];
        let mut carry = 0u8;
        for i in 0..n {
            let x = if i < a.len() { a[a.len() - 1 - i] } else { 0 };
            let y = if i < b.len() { b[b.len() - 1 - i] } else { 0 };
            let s = x + y + carry;
            out[n - i] = s % 10;
            carry = s / 10;
        }
        out[0] = carry;
        Nat::from_digits(&out)
    }

    /// `self - o`, requires `self >= o`.
    fn minus(&self, o: &Nat) -> Nat {
        let (a, b) = (&self.0, &o.0);
        let mut out = a.clone();
        let mut borrow = 0i8;
        for i in 0..a.len() {
            let idx = a.len() - 1 - i;
            let y = if i < b.len() { b[b.len() - 1 - i] as i8 } else { 0 };
            let mut v = a[idx] as i8 - y - borrow;
            if v < 0 {
                v += 10;
                borrow = 1;
            } else {
                borrow = 0;
            }
            out[idx] = v as u8;
        }
        Nat::from_digits(&out)
    }

    fn times(&self, o: &Nat) -> Nat {
        if self.is_zero() || o.is_zero() {
            return Nat::default();
        }
        let mut acc = vec![0u64; self.0.len() + o.0.len()];
        for (i, &x) in self.0.iter().rev().enumerate() {
            for (j, &y) in o.0.iter().rev().enumerate() {
                acc[i + j] += x as u64 * y as u64;
            }
        }
        let mut carry = 0u64;
        for v in acc.iter_mut() {
            let s = *v + carry;
            *v = s % 10;
            carry = s / 10;
        }
        let mut digits: Vec<u8> = acc.iter().rev().map(|&v| v as u8).collect();
        let mut c = carry;
        while c > 0 {
            digits.insert(0, (c % 10) as u8);
            c /= 10;
        }
        Nat::from_digits(&digits)
    }

    /// `self · 10^k`.
    fn shl10(&self, k: usize) -> Nat {
        if self.is_zero() {
            return Nat::default();
        }
        let mut d = self.0.clone();
        d.resize(d.len() + k, 0);
        Nat(d)
    }

    fn divmod_small(&self, d: u32) -> (Nat, u32) {
        let mut q = Vec::with_capacity(self.0.len());
        let mut r: u64 = 0;
        for &x in &self.0 {
            r = r * 10 + x as u64;
            q.push((r / d as u64) as u8);
            r %= d as u64;
        }
        (Nat::from_digits(&q), r as u32)
    }

    /// `(self / d, self % d)`, `d > 0`.
    fn divmod(&self, d: &Nat) -> (Nat, Nat) {
        let mut q = Vec::with_capacity(self.0.len());
        let mut r = Nat::default();
        for &digit in &self.0 {
            if !(r.is_zero() && digit == 0) {
                r.0.push(digit);
            }
            let mut qd = 0u8;
            while r.cmp_nat(d) != Ordering::Less {
                r = r.minus(d);
                qd += 1;
            }
            q.push(qd);
        }
        (Nat::from_digits(&q), r)
    }
}

// ---------------------------------------------------------------------------------------------
// Decimal

/// An exact decimal parsed from JSON number text (e.g. serde_json::Number's to_string(), "1e-3",
/// "-0.50", "12345678901234567890"): `±digits · 10^exp`, normalized (no leading or trailing zero
/// digits; zero is unsigned), so `==` is value equality and `Ord` is numeric order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Decimal {
    neg: bool,
    digits: Vec<u8>,
    exp: i64,
}

impl Decimal {
    fn from_nat(neg: bool, n: Nat, exp: i64) -> Decimal {
        let mut digits = n.0;
        if digits.is_empty() {
            return Decimal::zero();
        }
        let tz = digits.iter().rev().take_while(|&&d| d == 0).count();
        digits.truncate(digits.len() - tz);
        Decimal { neg, digits, exp: exp + tz as i64 }
    }

    /// Zero.
    pub fn zero() -> Decimal {
        Decimal { neg: false, digits: Vec::new(), exp: 0 }
    }

    /// An integer.
    pub fn from_i64(v: i64) -> Decimal {
        Decimal::from_nat(v < 0, Nat::from_u64(v.unsigned_abs()), 0)
    }

    /// Parses RFC 8259 number text (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, nothing
    /// else, no surrounding space). `None` for anything else and for exponents beyond `±10^15`.
    pub fn parse(text: &str) -> Option<Decimal> {
        let b = text.as_bytes();
        let mut i = 0;
        let neg = b.first() == Some(&b'-');
        if neg {
            i = 1;
        }
        let int_start = i;
        match b.get(i) {
            Some(b'0') => i += 1,
            Some(c) if c.is_ascii_digit() => {
                while b.get(i).is_some_and(|c| c.is_ascii_digit()) {
                    i += 1;
                }
            }
            _ => return None,
        }
        let mut digits: Vec<u8> = b[int_start..i].iter().map(|c| c - b'0').collect();
        let mut frac_len = 0i64;
        if b.get(i) == Some(&b'.') {
            i += 1;
            let s = i;
            while b.get(i).is_some_and(|c| c.is_ascii_digit()) {
                i += 1;
            }
            if i == s {
                return None;
            }
            digits.extend(b[s..i].iter().map(|c| c - b'0'));
            frac_len = (i - s) as i64;
        }
        let mut exp = 0i64;
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            let eneg = match b.get(i) {
                Some(b'-') => {
                    i += 1;
                    true
                }
                Some(b'+') => {
                    i += 1;
                    false
                }
                _ => false,
            };
            let s = i;
            while let Some(c) = b.get(i).filter(|c| c.is_ascii_digit()) {
                exp = exp * 10 + (c - b'0') as i64;
                if exp > MAX_EXPONENT {
                    return None;
                }
                i += 1;
            }
            if i == s {
                return None;
            }
            if eneg {
                exp = -exp;
            }
        }
        if i != b.len() {
            return None;
        }
        Some(Decimal::from_nat(neg, Nat::from_digits(&digits), exp - frac_len))
    }

    /// The exact value of a serde_json number (its `to_string()`, which is JSON number text).
    pub fn from_json(n: &serde_json::Number) -> Decimal {
        Decimal::parse(&n.to_string())
            .or_else(|| n.as_f64().and_then(|f| Decimal::parse(&format!("{f:e}"))))
            .unwrap_or_else(Decimal::zero)
    }

    /// Whether the value is an integer (`1.0`, `1e2` and `-0` are).
    pub fn is_integer(&self) -> bool {
        self.digits.is_empty() || self.exp >= 0
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    /// Whether the value is `< 0`.
    pub fn is_negative(&self) -> bool {
        self.neg
    }

    /// Whether the value is `> 0`.
    pub fn is_positive(&self) -> bool {
        !self.neg && !self.digits.is_empty()
    }

    /// `-self`.
    pub fn negated(&self) -> Decimal {
        let mut d = self.clone();
        d.neg = !d.neg && !d.digits.is_empty();
        d
    }

    /// `|self|`.
    pub fn abs(&self) -> Decimal {
        let mut d = self.clone();
        d.neg = false;
        d
    }

    /// `self · 10^k`.
    pub fn scale10(&self, k: i64) -> Decimal {
        let mut d = self.clone();
        if !d.digits.is_empty() {
            d.exp += k;
        }
        d
    }

    /// Position (power of ten) of the leading digit; `None` for zero.
    pub fn leading_position(&self) -> Option<i64> {
        (!self.digits.is_empty()).then(|| self.exp + self.digits.len() as i64 - 1)
    }

    /// Position (power of ten) of the last nonzero digit; `None` for zero.
    pub fn last_position(&self) -> Option<i64> {
        (!self.digits.is_empty()).then_some(self.exp)
    }

    /// The digit of `|self|` at position `pos` (10^pos).
    fn digit(&self, pos: i64) -> u8 {
        if self.digits.is_empty() {
            return 0;
        }
        let lead = self.exp + self.digits.len() as i64 - 1;
        if pos > lead || pos < self.exp {
            0
        } else {
            self.digits[(lead - pos) as usize]
        }
    }

    fn nat(&self) -> Nat {
        Nat(self.digits.clone())
    }

    fn plus(&self, o: &Decimal) -> Decimal {
        if self.is_zero() {
            return o.clone();
        }
        if o.is_zero() {
            return self.clone();
        }
        let e = self.exp.min(o.exp);
        let a = self.nat().shl10((self.exp - e) as usize);
        let b = o.nat().shl10((o.exp - e) as usize);
        if self.neg == o.neg {
            return Decimal::from_nat(self.neg, a.plus(&b), e);
        }
        match a.cmp_nat(&b) {
            Ordering::Equal => Decimal::zero(),
            Ordering::Greater => Decimal::from_nat(self.neg, a.minus(&b), e),
            Ordering::Less => Decimal::from_nat(o.neg, b.minus(&a), e),
        }
    }

    fn times(&self, o: &Decimal) -> Decimal {
        Decimal::from_nat(self.neg != o.neg, self.nat().times(&o.nat()), self.exp + o.exp)
    }

    /// `(floor(self / m), self / m is an integer)` for `m > 0`.
    fn div_floor(&self, m: &Decimal) -> (Decimal, bool) {
        if self.is_zero() {
            return (Decimal::zero(), true);
        }
        let s = self.exp - m.exp;
        let (num, den) =
            if s >= 0 { (self.nat().shl10(s as usize), m.nat()) } else { (self.nat(), m.nat().shl10((-s) as usize)) };
        let (q, r) = num.divmod(&den);
        let exact = r.is_zero();
        let q = Decimal::from_nat(false, q, 0);
        if !self.neg {
            (q, exact)
        } else if exact {
            (q.negated(), true)
        } else {
            (q.plus(&Decimal::from_i64(1)).negated(), false)
        }
    }

    /// Canonical exponent-free text of `|self|` (`0`, `12`, `0.05`).
    fn plain_magnitude(&self) -> String {
        if self.digits.is_empty() {
            return "0".into();
        }
        let lead = self.exp + self.digits.len() as i64 - 1;
        let mut s = String::new();
        if lead < 0 {
            s.push('0');
        } else {
            for p in (0..=lead).rev() {
                s.push((b'0' + self.digit(p)) as char);
            }
        }
        if self.exp < 0 {
            s.push('.');
            for p in (self.exp..0).rev() {
                s.push((b'0' + self.digit(p)) as char);
            }
        }
        s
    }
}

impl fmt::Display for Decimal {
    /// JSON number text: exponent-free when short, else `<digits>e<exp>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.neg {
            f.write_str("-")?;
        }
        if (-40..=20).contains(&self.exp) {
            return f.write_str(&self.plain_magnitude());
        }
        for d in &self.digits {
            write!(f, "{d}")?;
        }
        write!(f, "e{}", self.exp)
    }
}

impl Ord for Decimal {
    fn cmp(&self, o: &Decimal) -> Ordering {
        let sign = |d: &Decimal| {
            if d.digits.is_empty() {
                0
            } else if d.neg {
                -1
            } else {
                1
            }
        };
        let (a, b) = (sign(self), sign(o));
        if a != b || a == 0 {
            return a.cmp(&b);
        }
        let lead = |d: &Decimal| d.exp + d.digits.len() as i64 - 1;
        let mag = lead(self).cmp(&lead(o)).then_with(|| self.digits.cmp(&o.digits));
        if a < 0 {
            mag.reverse()
        } else {
            mag
        }
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, o: &Decimal) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

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

// ---------------------------------------------------------------------------------------------
// The structural generator

struct TooBig;

fn structural(pr: &Prepared) -> Result<Re, TooBig> {
    let aut = match &pr.step {
        None => Aut::none(),
        Some(st) => Aut::new(st).ok_or(TooBig)?,
    };
    let zero = Decimal::zero();
    let pos = if pr.hi.as_ref().is_some_and(|(h, _)| h.is_negative()) {
        empty()
    } else {
        let (lo, li) = match &pr.lo {
            Some((l, i)) if !l.is_negative() => (l.clone(), *i),
            _ => (zero.clone(), true),
        };
        let hi = pr.hi.as_ref().map(|(h, i)| (h, *i));
        Gen::new(&lo, li, hi, &aut, pr.frac).side()?
    };
    let neg = if pr.lo.as_ref().is_some_and(|(l, _)| l.is_positive()) {
        empty()
    } else {
        let hi_m = pr.lo.as_ref().map(|(l, i)| (l.negated(), *i));
        let (lo_m, li) = match &pr.hi {
            Some((h, i)) if !h.is_positive() => (h.negated(), *i),
            _ => (zero.clone(), true),
        };
        Gen::new(&lo_m, li, hi_m.as_ref().map(|(h, i)| (h, *i)), &aut, pr.frac).side()?
    };
    let re = signed(pos, neg);
    if !re.fits() {
        return Err(TooBig);
    }
    Ok(re)
}

/// The step as a digit automaton over positions: state `(r, k)` = (digit string mod b,
/// window contribution mod c).
struct Aut {
    has: bool,
    b: u64,
    c: u64,
    e: i64,
    t: i64,
    pow: Vec<u64>,
}

type St = (u64, u64);

impl Aut {
    fn none() -> Aut {
        Aut { has: false, b: 1, c: 1, e: i64::MIN / 4, t: 0, pow: Vec::new() }
    }

    fn new(st: &Step) -> Option<Aut> {
        let (b, c) = (st.b?, st.c?);
        let mut pow = Vec::new();
        let mut x: u128 = 1 % c as u128;
        for _ in 0..st.t {
            pow.push(x as u64);
            x = x * 10 % c as u128;
        }
        Some(Aut { has: true, b, c, e: st.e, t: st.t, pow })
    }

    fn step(&self, p: i64, s: St, d: u8) -> Option<St> {
        if !self.has {
            return Some(s);
        }
        if p < self.e {
            return (d == 0).then_some(s);
        }
        let r = ((s.0 as u128 * 10 + d as u128) % self.b as u128) as u64;
        let k = if p < self.e + self.t {
            ((s.1 as u128 + d as u128 * self.pow[(p - self.e) as usize] as u128) % self.c as u128) as u64
        } else {
            s.1
        };
        Some((r, k))
    }

    fn accept(&self, s: St) -> bool {
        s == (0, 0)
    }

    /// Lowest integer position above which only `mod b` matters.
    fn top(&self) -> i64 {
        if self.has {
            (self.e + self.t).max(0)
        } else {
            0
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum T {
    Free,
    Tight,
}

const ALL: u16 = 0x3FF;
const LEAD: u16 = 0x3FE;
const ZERO: u16 = 1;

type Key = (i64, T, T, St, bool);
type Upper = Vec<((T, T, St), Re)>;

fn int_len(x: &Decimal) -> i64 {
    match x.leading_position() {
        Some(l) if l >= 0 => l + 1,
        _ => 1,
    }
}

/// Digits of `range` grouped by the state they lead to.
fn groups<K: PartialEq + Copy>(range: std::ops::RangeInclusive<u8>, f: impl Fn(u8) -> Option<K>) -> Vec<(u16, K)> {
    let mut g: Vec<(u16, K)> = Vec::new();
    for d in range {
        if let Some(k) = f(d) {
            if let Some(e) = g.iter_mut().find(|e| e.1 == k) {
                e.0 |= 1 << d;
            } else {
                g.push((1 << d, k));
            }
        }
    }
    g
}

/// Lexemes `(0|[1-9][0-9]*)(\.[0-9]+)?` whose value lies in `[lo, hi]` (inclusive flags) and is
/// accepted by the step automaton.
struct Gen<'a> {
    lo: &'a Decimal,
    lo_incl: bool,
    lo_free: bool,
    hi: Option<(&'a Decimal, bool)>,
    aut: &'a Aut,
    frac: bool,
    work: usize,
    m_int: HashMap<Key, Re>,
    m_free: HashMap<(i64, St), Re>,
    m_frac: HashMap<Key, Re>,
    m_ffrac: HashMap<(i64, St, bool), Re>,
    m_exact: HashMap<(i64, u64, u64), Re>,
    m_upto: HashMap<(i64, u64, u64), Re>,
    m_upper: HashMap<Key, Upper>,
}

impl<'a> Gen<'a> {
    fn new(lo: &'a Decimal, lo_incl: bool, hi: Option<(&'a Decimal, bool)>, aut: &'a Aut, frac: bool) -> Gen<'a> {
        Gen {
            lo,
            lo_incl,
            lo_free: lo.is_zero() && lo_incl,
            hi,
            aut,
            frac,
            work: 0,
            m_int: HashMap::new(),
            m_free: HashMap::new(),
            m_frac: HashMap::new(),
            m_ffrac: HashMap::new(),
            m_exact: HashMap::new(),
            m_upto: HashMap::new(),
            m_upper: HashMap::new(),
        }
    }

    fn tick(&mut self) -> Result<(), TooBig> {
        self.work += 1;
        if self.work > WORK_LIMIT {
            Err(TooBig)
        } else {
            Ok(())
        }
    }

    fn chk(&self, r: Re) -> Result<Re, TooBig> {
        if r.fits() {
            Ok(r)
        } else {
            Err(TooBig)
        }
    }

    fn trans(&self, p: i64, lo: T, hi: T, s: St, d: u8) -> Option<(T, T, St)> {
        let lo2 = match lo {
            T::Free => T::Free,
            T::Tight => match d.cmp(&self.lo.digit(p)) {
                Ordering::Less => return None,
                Ordering::Equal => T::Tight,
                Ordering::Greater => T::Free,
            },
        };
        let hi2 = match hi {
            T::Free => T::Free,
            T::Tight => match d.cmp(&self.hi.unwrap().0.digit(p)) {
                Ordering::Greater => return None,
                Ordering::Equal => T::Tight,
                Ordering::Less => T::Free,
            },
        };
        Some((lo2, hi2, self.aut.step(p, s, d)?))
    }

    /// Whether the lexeme may end when the next unread position is `next`.
    fn end_ok(&self, lo: T, hi: T, s: St, next: i64) -> bool {
        if !self.aut.accept(s) {
            return false;
        }
        if lo == T::Tight && ((!self.lo.is_zero() && self.lo.exp <= next) || !self.lo_incl) {
            return false;
        }
        if hi == T::Tight {
            let (h, incl) = self.hi.unwrap();
            let exhausted = h.is_zero() || h.exp > next;
            if exhausted && !incl {
                return false;
            }
        }
        true
    }

    fn side(&mut self) -> Result<Re, TooBig> {
        if let Some((h, hincl)) = self.hi {
            match self.lo.cmp(h) {
                Ordering::Greater => return Ok(empty()),
                Ordering::Equal if !(self.lo_incl && hincl) => return Ok(empty()),
                _ => {}
            }
        }
        let n_lo = int_len(self.lo);
        let n_hi = self.hi.map(|(h, _)| int_len(h));
        let mut alts = vec![self.gen_len(n_lo)?];
        if n_hi != Some(n_lo) {
            let n1 = n_lo + 1;
            let n2 = n_hi.map(|x| x - 1);
            if n2.is_none_or(|n2| n1 <= n2) {
                alts.push(self.middle(n1, n2)?);
            }
            if let Some(nh) = n_hi {
                alts.push(self.gen_len(nh)?);
            }
        }
        self.chk(alt(alts))
    }

    /// Lexemes with an integer part of exactly `n` digits.
    fn gen_len(&mut self, n: i64) -> Result<Re, TooBig> {
        let lo = if n == int_len(self.lo) && !self.lo_free { T::Tight } else { T::Free };
        let hi = if self.hi.map(|(h, _)| int_len(h)) == Some(n) { T::Tight } else { T::Free };
        let u = self.aut.top();
        if n - 1 < u {
            return self.gen_int(n - 1, lo, hi, (0, 0), n >= 2);
        }
        // Digits above the window first, grouped by the state they end in, so that the part
        // below (window, fraction) appears once per state rather than once per bound digit.
        let mut alts = Vec::new();
        for ((lo2, hi2, s2), up) in self.upper(n - 1, lo, hi, (0, 0), n >= 2)? {
            let low = if u == 0 { self.after_int(lo2, hi2, s2)? } else { self.gen_int(u - 1, lo2, hi2, s2, false)? };
            alts.push(cat([up, low]));
        }
        self.chk(alt(alts))
    }

    /// Integer digits at positions `p..=top`: the regex of the digits leading to each state.
    fn upper(&mut self, p: i64, lo: T, hi: T, s: St, leading: bool) -> Result<Upper, TooBig> {
        let u = self.aut.top();
        if lo == T::Free && hi == T::Free && !leading {
            let h = p - u + 1;
            if self.aut.b == 1 {
                return Ok(vec![((lo, hi, s), rep(class(ALL), h as u32, Some(h as u32)))]);
            }
            let mut out = Vec::new();
            for r2 in 0..self.aut.b {
                let ex = self.exact(h, s.0, r2)?;
                if !ex.is_empty() {
                    out.push(((lo, hi, (r2, s.1)), ex));
                }
            }
            return Ok(out);
        }
        let key = (p, lo, hi, s, leading);
        if let Some(r) = self.m_upper.get(&key) {
            return Ok(r.clone());
        }
        self.tick()?;
        if let Some(r) = self.upper_run(p, lo, hi, s, leading)? {
            self.m_upper.insert(key, r.clone());
            return Ok(r);
        }
        let first = if leading { 1 } else { 0 };
        let mut out: Upper = Vec::new();
        let mut add = |st: (T, T, St), r: Re| match out.iter_mut().find(|x| x.0 == st) {
            Some(x) => x.1 = alt([x.1.clone(), r]),
            None => out.push((st, r)),
        };
        for (m, st2) in groups(first..=9, |d| self.trans(p, lo, hi, s, d)) {
            if p == u {
                add(st2, class(m));
            } else {
                for (st3, r) in self.upper(p - 1, st2.0, st2.1, st2.2, false)? {
                    add(st3, cat([class(m), r]));
                }
            }
        }
        for x in &out {
            if !x.1.fits() {
                return Err(TooBig);
            }
        }
        self.m_upper.insert(key, out.clone());
        Ok(out)
    }

    /// Integer parts of `n1..=n2` digits, both bounds already decided.
    fn middle(&mut self, n1: i64, n2: Option<i64>) -> Result<Re, TooBig> {
        let u = self.aut.top();
        let mut alts = Vec::new();
        let small_end = n2.map_or(u, |n2| n2.min(u));
        for n in n1..=small_end {
            self.tick()?;
            alts.push(self.gen_len(n)?);
        }
        let m1 = n1.max(u + 1);
        if n2.is_none_or(|n2| m1 <= n2) {
            if self.aut.b == 1 {
                let low = self.free_int(u - 1, (0, 0))?;
                let reps = rep(class(ALL), (m1 - 1 - u) as u32, n2.map(|n2| (n2 - 1 - u) as u32));
                alts.push(cat([class(LEAD), reps, low]));
            } else if let Some(n2) = n2 {
                if n2 - m1 > 64 {
                    return Err(TooBig);
                }
                for n in m1..=n2 {
                    alts.push(self.gen_len(n)?);
                }
            } else {
                alts.push(self.tail_gnfa(m1)?);
            }
        }
        self.chk(alt(alts))
    }

    /// Integer parts of at least `n_min` digits (`n_min > top`), `mod b` tracked by an automaton.
    fn tail_gnfa(&mut self, n_min: i64) -> Result<Re, TooBig> {
        let b = self.aut.b as usize;
        let u = self.aut.top();
        let m0 = n_min - u;
        let fin = b + 1;
        let mut edges: HashMap<(usize, usize), Re> = HashMap::new();
        let lead = groups(1..=9, |d| Some(d as u64 % self.aut.b));
        for r in 0..b {
            let mut alts = Vec::new();
            for &(m, r1) in &lead {
                let ex = self.exact(m0 - 1, r1, r as u64)?;
                alts.push(cat([class(m), ex]));
            }
            let a = alt(alts);
            if !a.is_empty() {
                edges.insert((0, r + 1), a);
            }
            for (m, r2) in groups(0..=9, |d| Some(((r as u64) * 10 + d as u64) % self.aut.b)) {
                edges.insert((r + 1, r2 as usize + 1), class(m));
            }
            let low = self.free_int(u - 1, (r as u64, 0))?;
            if !low.is_empty() {
                edges.insert((r + 1, fin), low);
            }
        }
        eliminate(edges, 0, fin, b + 2)
    }

    /// `len` digits taking residue `from` to `to` (mod b).
    fn exact(&mut self, len: i64, from: u64, to: u64) -> Result<Re, TooBig> {
        if len == 0 {
            return Ok(if from == to { eps() } else { empty() });
        }
        if let Some(r) = self.m_exact.get(&(len, from, to)) {
            return Ok(r.clone());
        }
        self.tick()?;
        let b = self.aut.b;
        let r = if len == 1 {
            class((0..10u64).filter(|d| (from * 10 + d) % b == to).fold(0u16, |m, d| m | 1 << d))
        } else {
            let h1 = len / 2;
            let mut alts = Vec::new();
            for mid in 0..b {
                self.tick()?;
                let a = self.exact(h1, from, mid)?;
                if a.is_empty() {
                    continue;
                }
                let c = self.exact(len - h1, mid, to)?;
                alts.push(cat([a, c]));
            }
            alt(alts)
        };
        let r = self.chk(r)?;
        self.m_exact.insert((len, from, to), r.clone());
        Ok(r)
    }

    /// One bound tight on a run of `m ≥ 4` equal digits `d` (`> 10^308`, `< 0.999…`): the digits
    /// leaving the run above (below) `d` as one divide-and-conquer regex of size `O(m log m)`.
    fn upper_run(&mut self, p: i64, lo: T, hi: T, s: St, leading: bool) -> Result<Option<Upper>, TooBig> {
        let u = self.aut.top();
        let (greater, bound) = match (lo, hi) {
            (T::Tight, T::Free) => (true, self.lo),
            (T::Free, T::Tight) => (false, self.hi.unwrap().0),
            _ => return Ok(None),
        };
        if leading || self.aut.b != 1 {
            return Ok(None);
        }
        let d = bound.digit(p);
        let mut m = 0;
        while p - m >= u && bound.digit(p - m) == d {
            m += 1;
        }
        if m < 4 {
            return Ok(None);
        }
        let mut out: Upper = Vec::new();
        let leave = run_cmp(d, m, greater);
        if !leave.is_empty() {
            let rest = (p - m + 1 - u) as u32;
            out.push(((T::Free, T::Free, s), cat([leave, rep(class(ALL), rest, Some(rest))])));
        }
        let stay = rep(class(1 << d), m as u32, Some(m as u32));
        if p - m < u {
            out.push(((lo, hi, s), stay));
        } else {
            for (st, r) in self.upper(p - m, lo, hi, s, false)? {
                match out.iter_mut().find(|x| x.0 == st) {
                    Some(x) => x.1 = alt([x.1.clone(), cat([stay.clone(), r])]),
                    None => out.push((st, cat([stay.clone(), r]))),
                }
            }
        }
        Ok(Some(out))
    }

    /// At most `len` digits taking residue `from` to `to` (mod b).
    fn upto(&mut self, len: i64, from: u64, to: u64) -> Result<Re, TooBig> {
        if len <= 1 {
            let one = if len == 1 { self.exact(1, from, to)? } else { empty() };
            return Ok(alt([if from == to { eps() } else { empty() }, one]));
        }
        if let Some(r) = self.m_upto.get(&(len, from, to)) {
            return Ok(r.clone());
        }
        self.tick()?;
        let h1 = (len + 1) / 2;
        let mut alts = Vec::new();
        for mid in 0..self.aut.b {
            self.tick()?;
            let a = self.upto(h1, from, mid)?;
            if a.is_empty() {
                continue;
            }
            let c = self.upto(len - h1, mid, to)?;
            alts.push(cat([a, c]));
        }
        let r = self.chk(alt(alts))?;
        self.m_upto.insert((len, from, to), r.clone());
        Ok(r)
    }

    /// Positions `p..=0` (both bounds decided), then the fraction.
    fn free_int(&mut self, p: i64, s: St) -> Result<Re, TooBig> {
        if p < 0 {
            return self.after_int(T::Free, T::Free, s);
        }
        if let Some(r) = self.m_free.get(&(p, s)) {
            return Ok(r.clone());
        }
        self.tick()?;
        let u = self.aut.top();
        let r = if p >= u {
            let h = p - u + 1;
            if self.aut.b == 1 {
                let low = self.free_int(u - 1, s)?;
                cat([rep(class(ALL), h as u32, Some(h as u32)), low])
            } else {
                let mut alts = Vec::new();
                for r2 in 0..self.aut.b {
                    let ex = self.exact(h, s.0, r2)?;
                    if ex.is_empty() {
                        continue;
                    }
                    let low = self.free_int(u - 1, (r2, s.1))?;
                    alts.push(cat([ex, low]));
                }
                alt(alts)
            }
        } else if self.aut.has && p < self.aut.e {
            let low = self.after_int(T::Free, T::Free, s)?;
            cat([rep(class(ZERO), (p + 1) as u32, Some((p + 1) as u32)), low])
        } else {
            let mut alts = Vec::new();
            for (m, s2) in groups(0..=9, |d| self.aut.step(p, s, d)) {
                alts.push(cat([class(m), self.free_int(p - 1, s2)?]));
            }
            alt(alts)
        };
        let r = self.chk(r)?;
        self.m_free.insert((p, s), r.clone());
        Ok(r)
    }

    /// Integer positions `p..=0` with bound tracking.
    fn gen_int(&mut self, p: i64, lo: T, hi: T, s: St, leading: bool) -> Result<Re, TooBig> {
        if lo == T::Free && hi == T::Free && !leading {
            return self.free_int(p, s);
        }
        let key = (p, lo, hi, s, leading);
        if let Some(r) = self.m_int.get(&key) {
            return Ok(r.clone());
        }
        self.tick()?;
        let first = if leading { 1 } else { 0 };
        let mut alts = Vec::new();
        for (m, (lo2, hi2, s2)) in groups(first..=9, |d| self.trans(p, lo, hi, s, d)) {
            let next = if p == 0 { self.after_int(lo2, hi2, s2)? } else { self.gen_int(p - 1, lo2, hi2, s2, false)? };
            alts.push(cat([class(m), next]));
        }
        let r = self.chk(alt(alts))?;
        self.m_int.insert(key, r.clone());
        Ok(r)
    }

    /// After the integer part: the end, or a fraction.
    fn after_int(&mut self, lo: T, hi: T, s: St) -> Result<Re, TooBig> {
        let mut alts = Vec::new();
        if self.end_ok(lo, hi, s, -1) {
            alts.push(eps());
        }
        if self.frac {
            let f = self.gen_frac(-1, lo, hi, s, true)?;
            alts.push(cat([text("\\."), f]));
        }
        Ok(alt(alts))
    }

    /// Fraction digits from position `p` (`first`: at least one digit must follow).
    fn gen_frac(&mut self, p: i64, lo: T, hi: T, s: St, first: bool) -> Result<Re, TooBig> {
        if lo == T::Free && hi == T::Free {
            return self.free_frac(p, s, first);
        }
        let key = (p, lo, hi, s, first);
        if let Some(r) = self.m_frac.get(&key) {
            return Ok(r.clone());
        }
        self.tick()?;
        let mut rel = i64::MAX;
        if lo == T::Tight && !self.lo.is_zero() {
            rel = rel.min(self.lo.exp);
        }
        if hi == T::Tight {
            let h = self.hi.unwrap().0;
            if !h.is_zero() {
                rel = rel.min(h.exp);
            }
        }
        if self.aut.has {
            rel = rel.min(self.aut.e);
        }
        let r = if p < rel {
            self.tail(lo, hi, s, first)
        } else {
            let mut alts = Vec::new();
            for (m, (lo2, hi2, s2)) in groups(0..=9, |d| self.trans(p, lo, hi, s, d)) {
                let mut cont = Vec::new();
                if self.end_ok(lo2, hi2, s2, p - 1) {
                    cont.push(eps());
                }
                cont.push(self.gen_frac(p - 1, lo2, hi2, s2, false)?);
                alts.push(cat([class(m), alt(cont)]));
            }
            alt(alts)
        };
        let r = self.chk(r)?;
        self.m_frac.insert(key, r.clone());
        Ok(r)
    }

    /// Below every digit of the tight bounds and of the step: the state no longer changes.
    fn tail(&self, lo: T, hi: T, s: St, first: bool) -> Re {
        let min = if first { 1 } else { 0 };
        let zeros = |ok: bool| if ok { rep(class(ZERO), min, None) } else { empty() };
        if self.aut.has {
            return zeros(self.end_ok(lo, hi, s, i64::MIN));
        }
        match (lo, hi) {
            (T::Tight, T::Free) if self.lo_incl => rep(class(ALL), min, None),
            (T::Tight, T::Free) => cat([rep(class(ZERO), 0, None), class(LEAD), rep(class(ALL), 0, None)]),
            (T::Free, T::Free) => rep(class(ALL), min, None),
            _ => zeros(self.end_ok(lo, hi, s, i64::MIN)),
        }
    }

    /// Fraction digits from position `p`, both bounds decided.
    fn free_frac(&mut self, p: i64, s: St, first: bool) -> Result<Re, TooBig> {
        let min = if first { 1 } else { 0 };
        if !self.aut.has {
            return Ok(rep(class(ALL), min, None));
        }
        if p < self.aut.e {
            return Ok(if self.aut.accept(s) { rep(class(ZERO), min, None) } else { empty() });
        }
        if let Some(r) = self.m_ffrac.get(&(p, s, first)) {
            return Ok(r.clone());
        }
        self.tick()?;
        let u = self.aut.e + self.aut.t;
        let r = if self.aut.b > 1 && p >= u {
            // Digits down to the window (or to `e`) with the residue tracked by divide and
            // conquer; the lexeme may end wherever the residue is 0.
            let h = p - u + 1;
            let early = if first {
                let mut alts = Vec::new();
                for mid in 0..self.aut.b {
                    let a = self.exact(1, s.0, mid)?;
                    if !a.is_empty() {
                        alts.push(cat([a, self.upto(h - 1, mid, 0)?]));
                    }
                }
                alt(alts)
            } else {
                self.upto(h, s.0, 0)?
            };
            if self.aut.t == 0 {
                cat([early, rep(class(ZERO), 0, None)])
            } else {
                let mut alts = vec![early];
                for r2 in 0..self.aut.b {
                    let ex = self.exact(h, s.0, r2)?;
                    if !ex.is_empty() {
                        alts.push(cat([ex, self.free_frac(u - 1, (r2, s.1), false)?]));
                    }
                }
                alt(alts)
            }
        } else if self.aut.b == 1 && p >= u {
            let h = (p - u + 1) as u32;
            if self.aut.t == 0 {
                cat([rep(class(ALL), min, Some(h)), rep(class(ZERO), 0, None)])
            } else {
                let early = rep(class(ALL), min, Some(h));
                let full = cat([rep(class(ALL), h, Some(h)), self.free_frac(u - 1, s, false)?]);
                alt([early, full])
            }
        } else {
            let mut alts = Vec::new();
            for (m, s2) in groups(0..=9, |d| self.aut.step(p, s, d)) {
                let mut cont = Vec::new();
                if self.aut.accept(s2) {
                    cont.push(eps());
                }
                cont.push(self.free_frac(p - 1, s2, false)?);
                alts.push(cat([class(m), alt(cont)]));
            }
            alt(alts)
        };
        let r = self.chk(r)?;
        self.m_ffrac.insert((p, s, first), r.clone());
        Ok(r)
    }
}

/// Strings of `m` digits above (`greater`) or below `d^m`.
fn run_cmp(d: u8, m: i64, greater: bool) -> Re {
    if m == 1 {
        let mask = if greater { ALL & !((2u16 << d) - 1) } else { (1u16 << d) - 1 };
        return class(mask);
    }
    let m1 = m / 2;
    let m2 = (m - m1) as u32;
    alt([
        cat([run_cmp(d, m1, greater), rep(class(ALL), m2, Some(m2))]),
        cat([rep(class(1 << d), m1 as u32, Some(m1 as u32)), run_cmp(d, m - m1, greater)]),
    ])
}

/// State elimination on a generalized automaton: the regex of paths `start → fin`.
fn eliminate(mut edges: HashMap<(usize, usize), Re>, start: usize, fin: usize, n: usize) -> Result<Re, TooBig> {
    let mut alive: Vec<usize> = (0..n).filter(|&k| k != start && k != fin).collect();
    while !alive.is_empty() {
        // Cheapest node first: fewest new edges, then least text.
        let cost = |k: usize| {
            let ins = edges.iter().filter(|(&(i, j), _)| j == k && i != k).count();
            let outs = edges.iter().filter(|(&(i, j), _)| i == k && j != k).count();
            let size: usize = edges.iter().filter(|(&(i, j), _)| i == k || j == k).map(|(_, r)| r.len()).sum();
            (ins * outs, size)
        };
        let (idx, _) = alive.iter().enumerate().min_by_key(|(_, &k)| cost(k)).unwrap();
        let k = alive.remove(idx);
        let star = edges.remove(&(k, k)).map(|l| rep(l, 0, None)).unwrap_or_else(eps);
        let ins: Vec<(usize, Re)> =
            edges.iter().filter(|(&(_, j), _)| j == k).map(|(&(i, _), r)| (i, r.clone())).collect();
        let outs: Vec<(usize, Re)> =
            edges.iter().filter(|(&(i, _), _)| i == k).map(|(&(_, j), r)| (j, r.clone())).collect();
        edges.retain(|&(i, j), _| i != k && j != k);
        for (i, a) in &ins {
            for (j, b) in &outs {
                let path = cat([a.clone(), star.clone(), b.clone()]);
                let new = match edges.remove(&(*i, *j)) {
                    Some(old) => alt([old, path]),
                    None => path,
                };
                if !new.fits() {
                    return Err(TooBig);
                }
                edges.insert((*i, *j), new);
            }
        }
    }
    let through = edges.remove(&(start, fin)).unwrap_or_else(empty);
    Ok(match edges.remove(&(start, start)) {
        Some(l) => cat([rep(l, 0, None), through]),
        None => through,
    })
}

// ---------------------------------------------------------------------------------------------
// Regex AST with exact printed length and nesting depth.

#[derive(Debug, PartialEq, Eq)]
enum Kind {
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
struct Node {
    kind: Kind,
    /// Printed length.
    len: usize,
    /// Nesting depth as the `regex` parser counts it (at most).
    depth: usize,
    /// Roughly the number of compiled NFA states (counted repetitions expanded).
    weight: usize,
    nullable: bool,
}

impl PartialEq for Node {
    fn eq(&self, o: &Node) -> bool {
        self.len == o.len && self.nullable == o.nullable && self.kind == o.kind
    }
}

impl Eq for Node {}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Re(Rc<Node>);

fn class_str(mask: u16) -> String {
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

fn quant(min: u32, max: Option<u32>) -> String {
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
    fn len(&self) -> usize {
        self.0.len
    }

    fn depth(&self) -> usize {
        self.0.depth
    }

    fn weight(&self) -> usize {
        self.0.weight
    }

    /// Within the size budgets.
    fn fits(&self) -> bool {
        self.len() <= MAX_REGEX_LEN && self.weight() <= MAX_WEIGHT
    }

    fn is_empty(&self) -> bool {
        matches!(self.0.kind, Kind::Empty)
    }

    fn is_atom(&self) -> bool {
        matches!(self.0.kind, Kind::Class(_) | Kind::Text(_))
    }

    fn is_alt(&self) -> bool {
        matches!(self.0.kind, Kind::Alt(_))
    }

    fn print(&self, out: &mut String) {
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

fn rep_expanded(x: &Re, a: u32, b: Option<u32>) -> bool {
    b == Some(a) && x.is_atom() && a as usize * x.len() <= x.len() + quant(a, b).len()
}

fn mk(kind: Kind) -> Re {
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

fn empty() -> Re {
    mk(Kind::Empty)
}

fn eps() -> Re {
    mk(Kind::Eps)
}

fn class(mask: u16) -> Re {
    if mask == 0 {
        empty()
    } else {
        mk(Kind::Class(mask))
    }
}

fn text(s: &'static str) -> Re {
    mk(Kind::Text(s))
}

fn opt(x: Re) -> Re {
    rep(x, 0, Some(1))
}

fn rep(x: Re, min: u32, max: Option<u32>) -> Re {
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
fn rep_parts(r: &Re) -> Option<(Re, u32, Option<u32>)> {
    match &r.0.kind {
        Kind::Class(_) | Kind::Text(_) => Some((r.clone(), 1, Some(1))),
        Kind::Rep(x, a, b) if x.is_atom() => Some((x.clone(), *a, *b)),
        _ => None,
    }
}

fn cat<I: IntoIterator<Item = Re>>(items: I) -> Re {
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
fn split_head(r: &Re) -> Option<(u16, Re)> {
    match &r.0.kind {
        Kind::Class(m) => Some((*m, eps())),
        Kind::Cat(xs) => match &xs[0].0.kind {
            Kind::Class(m) => Some((*m, cat(xs[1..].iter().cloned()))),
            _ => None,
        },
        _ => None,
    }
}

fn alt<I: IntoIterator<Item = Re>>(items: I) -> Re {
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
fn init_of(r: &Re) -> Re {
    match &r.0.kind {
        Kind::Cat(xs) => cat(xs[..xs.len() - 1].iter().cloned()),
        _ => eps(),
    }
}

/// The regex with its nesting depth brought under [`MAX_DEPTH`] if possible.
fn shallow(re: Re) -> Re {
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
fn compress(re: &Re) -> Re {
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
fn chain_level(re: &Re) -> Option<(Vec<Re>, Re, Re)> {
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
fn flatten(re: &Re) -> Re {
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
