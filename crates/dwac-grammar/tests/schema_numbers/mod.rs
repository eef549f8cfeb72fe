//! Tests for `schema::numbers`: the regex for numeric constraints is compiled with the `regex`
//! crate and checked against an independent checker (syntax by hand, bounds by `Decimal`'s order,
//! integer-ness and `multipleOf` by digit arithmetic written here) on seeded random constraint
//! sets and lexemes (here), on hand-written edge cases (`cases.rs`), and on the
//! JSON-Schema-Test-Suite (`suite.rs`).

use std::cmp::Ordering;

use dwac_grammar::schema::numbers::{
    number_regex, number_regex_detailed, Decimal, ExponentExactness, NumberConstraints, NumberError,
};
use regex::Regex;

mod cases;
mod suite;

// ---------------------------------------------------------------------------------------------
// Independent checker

/// RFC 8259 number syntax, by hand.
fn json_number_syntax(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if b.first() == Some(&b'-') {
        i += 1;
    }
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            while b.get(i).is_some_and(|c| c.is_ascii_digit()) {
                i += 1;
            }
        }
        _ => return false,
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        let s0 = i;
        while b.get(i).is_some_and(|c| c.is_ascii_digit()) {
            i += 1;
        }
        if i == s0 {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let s0 = i;
        while b.get(i).is_some_and(|c| c.is_ascii_digit()) {
            i += 1;
        }
        if i == s0 {
            return false;
        }
    }
    i == b.len()
}

/// `(digits without leading zeros, exponent)` with value `digits · 10^exp`, sign dropped.
fn split_lexeme(s: &str) -> (Vec<u8>, i64) {
    let s = s.trim_start_matches('-');
    let (mant, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i64>().unwrap()),
        None => (s, 0),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    let digits: Vec<u8> = int.bytes().chain(frac.bytes()).map(|c| c - b'0').skip_while(|&d| d == 0).collect();
    (digits, exp - frac.len() as i64)
}

/// A step `a · 10^e` as text.
#[derive(Clone, Copy, Debug)]
struct StepT {
    a: u128,
    e: i64,
}

fn step_of(text: &str) -> StepT {
    let (mut digits, mut e) = split_lexeme(text);
    while digits.last() == Some(&0) {
        digits.pop();
        e += 1;
    }
    let a = digits.iter().fold(0u128, |v, &d| v * 10 + d as u128);
    StepT { a, e }
}

/// Whether the value of lexeme `s` is a multiple of `st` (exact, by digits).
fn is_multiple(s: &str, st: StepT) -> bool {
    let (mut digits, ex) = split_lexeme(s);
    if digits.is_empty() {
        return true;
    }
    let shift = ex - st.e;
    if shift < 0 {
        for _ in 0..-shift {
            match digits.pop() {
                Some(0) => {}
                _ => return false,
            }
        }
    }
    let mut r: u128 = 0;
    for &d in &digits {
        r = (r * 10 + d as u128) % st.a;
    }
    // r · 10^shift mod a, by square and multiply (a < 2^64 here, so no overflow).
    let (mut base, mut k) = (10 % st.a, shift.max(0) as u64);
    while k > 0 {
        if k & 1 == 1 {
            r = r * base % st.a;
        }
        base = base * base % st.a;
        k >>= 1;
    }
    r == 0
}

#[derive(Clone, Debug)]
struct Spec {
    integer: bool,
    draft4: bool,
    min: Option<(String, bool)>,
    max: Option<(String, bool)>,
    multiple_of: Option<String>,
}

impl Spec {
    fn constraints(&self) -> NumberConstraints {
        let d = |s: &String| Decimal::parse(s).unwrap();
        NumberConstraints {
            integer: self.integer,
            min: self.min.as_ref().map(|(s, e)| (d(s), *e)),
            max: self.max.as_ref().map(|(s, e)| (d(s), *e)),
            multiple_of: self.multiple_of.as_ref().map(d),
            integer_allows_fraction_zero: !self.draft4,
        }
    }

    /// Whether lexeme `s` is a JSON number satisfying the spec (independent of the generator).
    fn valid(&self, s: &str) -> bool {
        if !json_number_syntax(s) {
            return false;
        }
        let Some(x) = Decimal::parse(s) else { return false };
        if self.integer {
            let ok = if self.draft4 { !s.contains(['.', 'e', 'E']) } else { is_multiple(s, StepT { a: 1, e: 0 }) };
            if !ok {
                return false;
            }
        }
        if let Some((b, excl)) = &self.min {
            let b = Decimal::parse(b).unwrap();
            if x < b || (*excl && x == b) {
                return false;
            }
        }
        if let Some((b, excl)) = &self.max {
            let b = Decimal::parse(b).unwrap();
            if x > b || (*excl && x == b) {
                return false;
            }
        }
        if let Some(m) = &self.multiple_of {
            if !is_multiple(s, step_of(m)) {
                return false;
            }
        }
        true
    }
}

/// Exponent value of a lexeme, if it has one (saturating).
fn exponent_of(s: &str) -> Option<i64> {
    let i = s.find(['e', 'E'])?;
    let t = &s[i + 1..];
    Some(t.parse::<i64>().unwrap_or(if t.starts_with('-') { i64::MIN } else { i64::MAX }))
}

fn exact_for(ex: &ExponentExactness, s: &str) -> bool {
    match (exponent_of(s), ex) {
        (None, _) | (Some(_), ExponentExactness::All) => true,
        (Some(e), ExponentExactness::Windows(ws)) => ws.iter().any(|&(lo, hi)| lo <= e && e <= hi),
        (Some(_), ExponentExactness::None) => false,
    }
}

fn compile(re: &str) -> Regex {
    Regex::new(&format!("^(?:{re})$"))
        .unwrap_or_else(|e| panic!("regex does not compile: {e}\n{}", &re[..re.len().min(300)]))
}

// ---------------------------------------------------------------------------------------------
// Seeded PRNG and generators

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

/// A number as `(negative, digits, scale)`: value `±digits · 10^-scale` (digits canonical).
#[derive(Clone, Debug)]
struct Num {
    neg: bool,
    digits: String,
    scale: i64,
}

impl Num {
    fn parse(s: &str) -> Num {
        let (d, e) = split_lexeme(s);
        let digits: String = if d.is_empty() { "0".into() } else { d.iter().map(|&x| (b'0' + x) as char).collect() };
        Num { neg: s.starts_with('-') && digits != "0", digits, scale: -e }
    }

    /// Exponent-free text of `|self| · 10^-k`, with `extra` trailing fraction zeros.
    fn plain(&self, k: i64, extra: usize) -> String {
        let scale = self.scale + k;
        let mut s = if scale <= 0 {
            if self.digits == "0" {
                "0".to_string()
            } else {
                format!("{}{}", self.digits, "0".repeat((-scale) as usize))
            }
        } else {
            let sc = scale as usize;
            let padded = format!("{}{}", "0".repeat((sc + 1).saturating_sub(self.digits.len())), self.digits);
            let (int, frac) = padded.split_at(padded.len() - sc);
            let int = int.trim_start_matches('0');
            format!("{}.{}", if int.is_empty() { "0" } else { int }, frac)
        };
        if extra > 0 {
            if !s.contains('.') {
                s.push('.');
            }
            s.push_str(&"0".repeat(extra));
        }
        s
    }

    /// `self + k · 10^-scale` for a small integer `k` (string arithmetic via i128 when it fits).
    fn add_units(&self, k: i64, scale: i64) -> Option<Num> {
        let sc = self.scale.max(scale).max(0);
        if sc > 30 || self.digits.len() as i64 + sc - self.scale > 36 {
            return None;
        }
        let base: i128 = self.digits.parse::<i128>().ok()? * 10i128.pow((sc - self.scale) as u32);
        let v = if self.neg { -base } else { base } + k as i128 * 10i128.pow((sc - scale) as u32);
        Some(Num::parse(&format!("{}e-{}", v, sc)))
    }
}

fn render(rng: &mut Rng, x: &Num, exps: &[i64]) -> Vec<String> {
    let sign = if x.neg { "-" } else { "" };
    let mut out = vec![format!("{sign}{}", x.plain(0, 0))];
    out.push(format!("{sign}{}", x.plain(0, 1 + rng.below(3) as usize)));
    if x.digits == "0" {
        out.push("-0".into());
        out.push("-0.00".into());
    }
    for &e in exps {
        if (x.scale + e).abs() > 400 {
            continue;
        }
        let mant = x.plain(e, if rng.chance(20) { 1 } else { 0 });
        let etxt = match rng.below(6) {
            0 => format!("e{e}"),
            1 => format!("E{e}"),
            2 if e >= 0 => format!("e+{e}"),
            3 => format!("e{}0{}", if e < 0 { "-" } else { "" }, e.abs()),
            4 if e >= 0 => format!("E+00{e}"),
            _ => format!("e{e}"),
        };
        out.push(format!("{sign}{mant}{etxt}"));
    }
    out
}

const STEPS: &[&str] = &[
    "1",
    "2",
    "3",
    "4",
    "5",
    "7",
    "10",
    "12",
    "25",
    "100",
    "0.5",
    "0.25",
    "0.1",
    "0.01",
    "1.5",
    "0.3",
    "2.5",
    "0.001",
    "1e2",
    "0.123456789",
    "6",
    "9",
    "11",
    "20",
    "0.2",
    "0.05",
    "0.75",
    "8",
    "16",
    "50",
    "1e-8",
    "0.0001",
    "13",
    "1e3",
    "2.25",
    "0.02",
    "0.06",
    "40",
    "64",
];

fn random_bound(rng: &mut Rng) -> String {
    match rng.below(10) {
        0..=3 => rng.range(-1000, 1000).to_string(),
        4 => rng.range(-20, 20).to_string(),
        5 => format!("{}.{}", rng.range(-200, 200), rng.range(0, 999)),
        6 => format!("{}.{:02}", rng.range(-3, 3), rng.range(0, 99)),
        7 => rng
            .pick(&["0", "-0", "0.5", "-0.5", "1e-5", "-1e-5", "0.001", "1e20", "-1e20", "18446744073709551616"])
            .to_string(),
        8 => {
            rng.pick(&["-9007199254740993", "12345678901234567890.5", "1e-12", "999999", "1.0e3", "100000"]).to_string()
        }
        _ => format!("{}e{}", rng.range(1, 99), rng.range(-6, 6)),
    }
}

fn random_spec(rng: &mut Rng) -> Spec {
    let integer = rng.chance(40);
    let mut spec = Spec {
        integer,
        draft4: integer && rng.chance(25),
        min: rng.chance(60).then(|| (random_bound(rng), rng.chance(40))),
        max: rng.chance(60).then(|| (random_bound(rng), rng.chance(40))),
        multiple_of: rng.chance(45).then(|| rng.pick(STEPS).to_string()),
    };
    // Mostly keep min ≤ max so that most sets are satisfiable.
    if let (Some(a), Some(b)) = (&spec.min, &spec.max) {
        let (x, y) = (Decimal::parse(&a.0).unwrap(), Decimal::parse(&b.0).unwrap());
        if x > y && rng.chance(85) {
            let (a, b) = (spec.min.take().unwrap(), spec.max.take().unwrap());
            spec.min = Some((b.0, a.1));
            spec.max = Some((a.0, b.1));
        }
    }
    spec
}

/// Values near the interesting points of `spec` and random ones.
fn candidate_values(rng: &mut Rng, spec: &Spec) -> Vec<Num> {
    let mut pts: Vec<Num> = vec![Num::parse("0")];
    for (b, _) in spec.min.iter().chain(spec.max.iter()) {
        pts.push(Num::parse(b));
    }
    let mut vals = Vec::new();
    for p in &pts {
        vals.push(p.clone());
        for scale in 0..5 {
            for k in [-2, -1, 1, 2] {
                vals.extend(p.add_units(k, scale));
            }
        }
    }
    if let Some(m) = &spec.multiple_of {
        let m = Num::parse(m);
        // Multiples j·m near the points.
        for p in &pts {
            if let (Ok(pv), Ok(mv)) = (p.plain(0, 0).parse::<f64>(), m.plain(0, 0).parse::<f64>()) {
                let j0 = (pv / mv).round();
                if j0.abs() < 1e15 {
                    for dj in -3..=3 {
                        let j = j0 as i64 + dj;
                        let digits = (m.digits.parse::<u128>().unwrap() * j.unsigned_abs() as u128).to_string();
                        vals.push(Num::parse(&format!("{}{}e{}", if j < 0 { "-" } else { "" }, digits, -m.scale)));
                    }
                }
            }
        }
        for _ in 0..10 {
            let j = rng.range(-300, 300);
            let digits = (m.digits.parse::<u128>().unwrap() * j.unsigned_abs() as u128).to_string();
            vals.push(Num::parse(&format!("{}{}e{}", if j < 0 { "-" } else { "" }, digits, -m.scale)));
        }
    }
    for _ in 0..25 {
        let v = match rng.below(4) {
            0 => rng.range(-3000, 3000).to_string(),
            1 => format!("{}.{}", rng.range(-300, 300), rng.range(0, 9999)),
            2 => format!("{}e{}", rng.range(-999, 999), rng.range(-8, 8)),
            _ => rng.range(-30, 30).to_string(),
        };
        vals.push(Num::parse(&v));
    }
    vals
}

const INVALID: &[&str] = &[
    "", "-", "01", "-01", "00", "1.", ".5", "-.5", "1e", "1e+", "1E-", "+1", "--1", "1.5.5", "1ee5", "0x10", " 1",
    "1 ", "1e5.5", "Infinity", "NaN", "-0.", "0.e1", "1_000", "١", "1,5", "e5", "-e5", "0-1", "1e--5", "1.0e+-1",
];

fn check_lexeme(spec: &Spec, re: &Regex, ex: &ExponentExactness, s: &str, stats: &mut Stats) {
    let matched = re.is_match(s);
    let valid = spec.valid(s);
    assert!(!matched || valid, "FALSE POSITIVE: {s:?} matched but is not valid for {spec:?}");
    if exact_for(ex, s) {
        assert!(!valid || matched, "FALSE NEGATIVE (documented exact): {s:?} is valid for {spec:?} (exponents {ex:?})");
        stats.exact_checks += 1;
    } else if valid && !matched {
        stats.inexact_rejections += 1;
    }
    stats.lexemes += 1;
    stats.valid += usize::from(valid);
}

#[derive(Default, Debug)]
struct Stats {
    sets: usize,
    ok: usize,
    unsat: usize,
    unsupported: usize,
    lexemes: usize,
    valid: usize,
    exact_checks: usize,
    inexact_rejections: usize,
    max_len: usize,
    exp_all: usize,
    exp_window: usize,
    exp_none: usize,
    unsupported_steps: std::collections::BTreeMap<String, usize>,
}

fn run_spec(rng: &mut Rng, spec: &Spec, stats: &mut Stats) {
    stats.sets += 1;
    let vals = candidate_values(rng, spec);
    match number_regex_detailed(&spec.constraints()) {
        Ok(r) => {
            stats.ok += 1;
            stats.max_len = stats.max_len.max(r.regex.len());
            assert!(r.regex.len() <= 100_000);
            match r.exponents {
                ExponentExactness::All => stats.exp_all += 1,
                ExponentExactness::Windows(..) => stats.exp_window += 1,
                ExponentExactness::None => stats.exp_none += 1,
            }
            let re = compile(&r.regex);
            assert!(!re.is_match(""), "matches the empty string: {spec:?}");
            let mut exps: Vec<i64> = vec![-3, -1, 1, 2, 3];
            if let ExponentExactness::Windows(ws) = &r.exponents {
                for &(lo, hi) in ws {
                    exps.extend([lo - 1, lo, hi, hi + 1, (lo + hi) / 2]);
                }
            }
            for _ in 0..3 {
                exps.push(rng.range(-25, 25));
            }
            exps.push(*rng.pick(&[-400, -60, 60, 400]));
            for v in &vals {
                let few: Vec<i64> = (0..4).map(|_| *rng.pick(&exps)).collect();
                for s in render(rng, v, &few) {
                    check_lexeme(spec, &re, &r.exponents, &s, stats);
                }
            }
            for s in INVALID {
                assert!(!re.is_match(s), "invalid lexeme {s:?} matched for {spec:?}");
            }
        }
        Err(NumberError::Unsatisfiable) => {
            stats.unsat += 1;
            for v in &vals {
                for s in render(rng, v, &[-2, 0, 3]) {
                    assert!(!spec.valid(&s), "Unsatisfiable, but {s:?} satisfies {spec:?}");
                }
            }
        }
        Err(NumberError::Unsupported(why)) => {
            stats.unsupported += 1;
            // Only a `multipleOf` with a factor coprime to 10 (needing a `mod b` automaton) may be refused.
            let m = spec
                .multiple_of
                .as_deref()
                .unwrap_or_else(|| panic!("unsupported without multipleOf: {spec:?}: {why}"));
            let mut a = step_of(m).a;
            for p in [2, 5] {
                while a.is_multiple_of(p) {
                    a /= p;
                }
            }
            assert!(a > 1, "{spec:?}: {why}");
            *stats.unsupported_steps.entry(m.to_string()).or_default() += 1;
        }
        Err(e) => panic!("{spec:?}: {e}"),
    }
}

#[test]
fn property_random_constraint_sets() {
    let mut rng = Rng(0x5EED_0001);
    let mut stats = Stats::default();
    for _ in 0..2500 {
        let spec = random_spec(&mut rng);
        run_spec(&mut rng, &spec, &mut stats);
    }
    eprintln!("{stats:#?}");
    assert!(stats.ok > 1500 && stats.unsat > 20 && stats.exact_checks > 500_000, "{stats:?}");
}

#[test]
fn property_wide_and_tiny_bounds() {
    let mut rng = Rng(0x5EED_0002);
    let mut stats = Stats::default();
    let bounds = [
        "1e308",
        "-1e308",
        "1.7976931348623157e308",
        "5e-324",
        "-5e-324",
        "2.2250738585072014e-308",
        "18446744073709551615",
        "18446744073709551616",
        "-18446744073709551616",
        "9007199254740993",
        "1e-300",
        "0.000000000000000000000001",
        "123456789012345678901234567890.123456789",
        "1e21",
        "1e-21",
    ];
    for _ in 0..300 {
        let mut spec = random_spec(&mut rng);
        if rng.chance(70) {
            spec.min = Some((rng.pick(&bounds).to_string(), rng.chance(50)));
        }
        if rng.chance(70) {
            spec.max = Some((rng.pick(&bounds).to_string(), rng.chance(50)));
        }
        run_spec(&mut rng, &spec, &mut stats);
    }
    eprintln!("{stats:#?}");
    assert!(stats.ok > 100, "{stats:?}");
}
