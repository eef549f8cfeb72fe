//! Exact decimals: natural numbers as decimal digit strings, and [`Decimal`] (sign, digits,
//! exponent) parsed from JSON number text with no rounding.

use super::MAX_EXPONENT;
use std::cmp::Ordering;
use std::fmt;

// ---------------------------------------------------------------------------------------------
// Natural numbers as decimal digit strings.

/// A natural number: decimal digits, most significant first, no leading zeros (empty = 0).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub(super) struct Nat(Vec<u8>);

impl Nat {
    pub(super) fn from_digits(d: &[u8]) -> Nat {
        let i = d.iter().position(|&x| x != 0).unwrap_or(d.len());
        Nat(d[i..].to_vec())
    }

    pub(super) fn from_u64(v: u64) -> Nat {
        Nat::from_digits(&v.to_string().bytes().map(|b| b - b'0').collect::<Vec<_>>())
    }

    pub(super) fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    pub(super) fn to_u64(&self) -> Option<u64> {
        let mut v: u64 = 0;
        for &d in &self.0 {
            v = v.checked_mul(10)?.checked_add(d as u64)?;
        }
        Some(v)
    }

    pub(super) fn cmp_nat(&self, o: &Nat) -> Ordering {
        self.0.len().cmp(&o.0.len()).then_with(|| self.0.cmp(&o.0))
    }

    pub(super) fn plus(&self, o: &Nat) -> Nat {
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
    pub(super) fn minus(&self, o: &Nat) -> Nat {
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

    pub(super) fn times(&self, o: &Nat) -> Nat {
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
    pub(super) fn shl10(&self, k: usize) -> Nat {
        if self.is_zero() {
            return Nat::default();
        }
        let mut d = self.0.clone();
        d.resize(d.len() + k, 0);
        Nat(d)
    }

    pub(super) fn divmod_small(&self, d: u32) -> (Nat, u32) {
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
    pub(super) fn divmod(&self, d: &Nat) -> (Nat, Nat) {
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
    pub(super) neg: bool,
    pub(super) digits: Vec<u8>,
    pub(super) exp: i64,
}

impl Decimal {
    pub(super) fn from_nat(neg: bool, n: Nat, exp: i64) -> Decimal {
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
    pub(super) fn digit(&self, pos: i64) -> u8 {
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

    pub(super) fn nat(&self) -> Nat {
        Nat(self.digits.clone())
    }

    /// The least common multiple of two positive decimals (`None` if either is not positive):
    /// over the finer of their scales `10^e` they are integers `A`, `B`, and a number is a
    /// multiple of both exactly when it is a multiple of `lcm(A, B) · 10^e`.
    pub fn lcm(&self, o: &Decimal) -> Option<Decimal> {
        if !self.is_positive() || !o.is_positive() {
            return None;
        }
        let e = self.exp.min(o.exp);
        let a = self.nat().shl10((self.exp - e) as usize);
        let b = o.nat().shl10((o.exp - e) as usize);
        let (mut x, mut y) = (a.clone(), b.clone());
        while !y.is_zero() {
            let r = x.divmod(&y).1;
            x = y;
            y = r;
        }
        let product = a.times(&b);
        Some(Decimal::from_nat(false, product.divmod(&x).0, e))
    }

    pub(super) fn plus(&self, o: &Decimal) -> Decimal {
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

    pub(super) fn times(&self, o: &Decimal) -> Decimal {
        Decimal::from_nat(self.neg != o.neg, self.nat().times(&o.nat()), self.exp + o.exp)
    }

    /// `(floor(self / m), self / m is an integer)` for `m > 0`.
    pub(super) fn div_floor(&self, m: &Decimal) -> (Decimal, bool) {
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
    pub(super) fn plain_magnitude(&self) -> String {
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

#[cfg(test)]
mod tests {
    use super::Decimal;

    fn d(s: &str) -> Decimal {
        Decimal::parse(s).unwrap()
    }

    #[test]
    fn least_common_multiples() {
        for (a, b, want) in [
            ("2", "3", "6"),
            ("4", "6", "12"),
            ("5", "5", "5"),
            ("0.5", "0.3", "1.5"),
            ("0.25", "0.1", "0.5"),
            ("1e-3", "2", "2"),
            ("1.5", "2.5", "7.5"),
            ("12345678901234567890", "10", "12345678901234567890"),
            ("12345678901234567891", "10", "123456789012345678910"),
        ] {
            assert_eq!(d(a).lcm(&d(b)), Some(d(want)), "lcm({a}, {b})");
            assert_eq!(d(b).lcm(&d(a)), Some(d(want)), "lcm({b}, {a})");
        }
        assert_eq!(d("0").lcm(&d("2")), None);
        assert_eq!(d("-2").lcm(&d("3")), None);
    }
}
