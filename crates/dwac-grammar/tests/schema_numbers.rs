//! Tests for `schema::numbers`: the regex for numeric constraints is compiled with the `regex`
//! crate and checked against an independent checker (syntax by hand, bounds by `Decimal`'s order,
//! integer-ness and `multipleOf` by digit arithmetic written here) on seeded random constraint
//! sets and lexemes, on hand-written edge cases, and on the JSON-Schema-Test-Suite.

use std::cmp::Ordering;
use std::path::Path;

use dwac_grammar::schema::numbers::{
    number_regex, number_regex_detailed, Decimal, ExponentExactness, NumberConstraints, NumberError,
};
use regex::Regex;

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

// ---------------------------------------------------------------------------------------------
// Hand-written cases

fn spec(integer: bool, min: Option<(&str, bool)>, max: Option<(&str, bool)>, m: Option<&str>) -> Spec {
    Spec {
        integer,
        draft4: false,
        min: min.map(|(s, e)| (s.to_string(), e)),
        max: max.map(|(s, e)| (s.to_string(), e)),
        multiple_of: m.map(str::to_string),
    }
}

/// Asserts the regex of `sp` matches exactly the `yes` lexemes and none of the `no` ones, and
/// that the independent checker agrees.
fn expect(sp: &Spec, yes: &[&str], no: &[&str]) {
    let r = number_regex(&sp.constraints()).unwrap_or_else(|e| panic!("{sp:?}: {e}"));
    let re = compile(&r);
    for s in yes {
        assert!(sp.valid(s), "checker disagrees: {s:?} should be valid for {sp:?}");
        assert!(re.is_match(s), "{s:?} should match {sp:?}\n{}", &r[..r.len().min(300)]);
    }
    for s in no {
        assert!(!sp.valid(s), "checker disagrees: {s:?} should be invalid for {sp:?}");
        assert!(!re.is_match(s), "{s:?} should not match {sp:?}\n{}", &r[..r.len().min(300)]);
    }
}

#[test]
fn unconstrained() {
    let r = number_regex_detailed(&NumberConstraints::default()).unwrap();
    assert_eq!(r.exponents, ExponentExactness::All);
    let rfc = Regex::new(r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$").unwrap();
    let re = compile(&r.regex);
    let mut rng = Rng(7);
    let alphabet = b"0123456789.-+eE";
    for _ in 0..20_000 {
        let len = 1 + rng.below(8) as usize;
        let s: String = (0..len).map(|_| *rng.pick(alphabet) as char).collect();
        assert_eq!(re.is_match(&s), rfc.is_match(&s), "{s:?}");
        assert_eq!(json_number_syntax(&s), rfc.is_match(&s), "{s:?}");
    }
    expect(&spec(false, None, None, None), &["0", "-0", "1.5e-7", "1E+2", "123456789012345678901234567890"], INVALID);
}

#[test]
fn integers() {
    let int = spec(true, None, None, None);
    expect(
        &int,
        &["0", "-0", "7", "1.0", "-12.000", "1e2", "1.5e1", "1E+2", "100e-2", "0e-5", "0.0e9", "1.25e2"],
        &["1.5", "1e-1", "0.1", "1.25e1", "101e-2", "1."],
    );
    let d4 = Spec { draft4: true, ..int.clone() };
    expect(&d4, &["0", "-0", "7", "-123"], &["1.0", "1e2", "-0.0", "1.5"]);
    expect(
        &spec(true, Some(("0.5", false)), Some(("1.5", false)), None),
        &["1", "1.0", "1e0", "0.1e1"],
        &["0", "2", "0.5", "1.5"],
    );
    expect(
        &spec(true, Some(("-2.5", true)), Some(("2", true)), None),
        &["-2", "-1", "0", "-0", "1"],
        &["-3", "2", "-2.5"],
    );
}

#[test]
fn bounds() {
    expect(
        &spec(false, Some(("0.5", false)), Some(("1.5", false)), None),
        &["0.5", "0.50", "1", "1.5", "1.49999999999", "5e-1", "0.15e1", "15e-1"],
        &["0.4999", "1.5000001", "2", "-1", "16e-1"],
    );
    expect(&spec(false, Some(("0", true)), None, None), &["1e-300", "0.0001", "5"], &["0", "-0", "0.000", "-1e-300"]);
    expect(&spec(false, Some(("0", false)), None, None), &["0", "-0", "-0.0", "0e5", "-0e-5"], &["-1e-300", "-0.01"]);
    expect(&spec(false, None, Some(("-0", false)), None), &["0", "-0", "-5"], &["1e-9", "0.001"]);
    expect(
        &spec(false, None, Some(("1e308", false)), None),
        &["1e308", "1E+308", "10e307", "-1e308", "9.99e307"],
        &["1.0000000000000001e308", "2e308", "1e309"],
    );
    expect(
        &spec(false, Some(("5e-324", true)), Some(("1e-300", false)), None),
        &["1e-300", "1e-323", "6e-324"],
        &["5e-324", "0", "1e-299", "4e-324"],
    );
    let big = "18446744073709551616";
    expect(
        &spec(true, Some((&format!("-{big}"), false)), Some((big, true)), None),
        &["18446744073709551615", "-18446744073709551616", "0"],
        &["18446744073709551616", "-18446744073709551617", "18446744073709551615.5"],
    );
    expect(
        &spec(false, None, Some(("972783798187987123879878123.18878137", true)), None),
        &["972783798187987123879878123.18878136999"],
        &["972783798187987123879878123.188781371", "972783798187987123879878123.18878137"],
    );
}

#[test]
fn multiple_of() {
    expect(
        &spec(false, None, None, Some("0.01")),
        &["1.500", "0.01", "-3.25", "1e-2", "0.1e-1", "12345.670000"],
        &["1.505", "0.001", "1e-3"],
    );
    expect(
        &spec(true, None, None, Some("3")),
        &["0", "3", "-9", "12", "123456789", "1.2e1", "3.0"],
        &["1", "10", "3.3"],
    );
    expect(&spec(false, None, None, Some("1.5")), &["0", "4.5", "-4.5", "3", "1.50", "15e-1"], &["35", "1", "0.5"]);
    expect(&spec(false, None, None, Some("0.25")), &["0.25", "0.5", "1.75", "-2", "0.250"], &["0.2", "0.125"]);
    expect(&spec(true, None, None, Some("25")), &["0", "25", "50", "-75", "100", "1125"], &["5", "10", "130"]);
    expect(&spec(true, Some(("1", false)), Some(("100", false)), Some("7")), &["7", "98", "7.0"], &["0", "105", "8"]);
    expect(&spec(false, None, None, Some("1e-8")), &["0.00000001", "1"], &["0.000000001"]);
    expect(&spec(true, None, None, Some("1e-8")), &["12391239123"], &["0.5"]);
    expect(
        &spec(true, Some(("0", false)), Some(("1e9", false)), Some("0.123456789")),
        &["0", "123456789", "246913578", "1.23456789e8"],
        &["1", "123456788", "0.123456789"],
    );
}

#[test]
fn errors() {
    let c = |sp: Spec| number_regex(&sp.constraints());
    assert_eq!(c(spec(true, Some(("0.2", false)), Some(("0.8", false)), None)), Err(NumberError::Unsatisfiable));
    assert_eq!(c(spec(false, Some(("5", false)), Some(("3", false)), None)), Err(NumberError::Unsatisfiable));
    assert_eq!(c(spec(false, Some(("3", true)), Some(("3", false)), None)), Err(NumberError::Unsatisfiable));
    assert_eq!(c(spec(false, Some(("3", false)), Some(("3", false)), Some("2"))), Err(NumberError::Unsatisfiable));
    assert_eq!(c(spec(true, Some(("0", true)), Some(("1", true)), Some("0.5"))), Err(NumberError::Unsatisfiable));
    assert!(c(spec(false, Some(("3", false)), Some(("3", false)), None)).is_ok());
    assert!(matches!(c(spec(false, None, None, Some("0"))), Err(NumberError::Invalid(_))));
    assert!(matches!(c(spec(false, None, None, Some("-1"))), Err(NumberError::Invalid(_))));
    assert!(matches!(c(spec(false, None, Some(("1e2000", false)), None)), Err(NumberError::Unsupported(_))));
    assert!(matches!(c(spec(true, None, None, Some("0.123456789"))), Err(NumberError::Unsupported(_))));
}

#[test]
fn decimal() {
    let d = |s: &str| Decimal::parse(s).unwrap();
    assert_eq!(d("-0"), d("0"));
    assert_eq!(d("1.0"), d("1"));
    assert_eq!(d("1e2"), d("100"));
    assert_eq!(d("0.50"), d("5e-1"));
    assert!(d("-0.5") < d("-0.49"));
    assert!(d("1e-300") > d("0"));
    assert!(d("18446744073709551616") > d("18446744073709551615"));
    assert!(d("1E+2").is_integer() && d("1.5e1").is_integer() && !d("1e-1").is_integer() && d("-0.0").is_integer());
    for bad in INVALID {
        assert_eq!(Decimal::parse(bad), None, "{bad:?}");
    }
    let n: serde_json::Value = serde_json::from_str("[1e308, 0.1, -0.0, 18446744073709551615, 1.0]").unwrap();
    let v: Vec<Decimal> = n.as_array().unwrap().iter().map(|x| Decimal::from_json(x.as_number().unwrap())).collect();
    assert_eq!(v, vec![d("1e308"), d("0.1"), d("0"), d("18446744073709551615"), d("1")]);
    // Order agrees with i128/f64 on random small values.
    let mut rng = Rng(99);
    for _ in 0..20_000 {
        let (a, b) = (rng.range(-100_000, 100_000), rng.range(-100_000, 100_000));
        let (ea, eb) = (rng.range(0, 4), rng.range(0, 4));
        let sa = format!("{a}e-{ea}");
        let sb = format!("{b}e-{eb}");
        let (va, vb) = (a as i128 * 10i128.pow((8 - ea) as u32), b as i128 * 10i128.pow((8 - eb) as u32));
        assert_eq!(d(&sa).cmp(&d(&sb)), va.cmp(&vb), "{sa} vs {sb}");
        assert_eq!(d(&sa) == d(&sb), va == vb);
        assert_eq!(d(&d(&sa).to_string()), d(&sa));
    }
    assert_eq!(d("1").cmp(&d("1.000")), Ordering::Equal);
}

// ---------------------------------------------------------------------------------------------
// JSON-Schema-Test-Suite

const NUMERIC_KEYS: &[&str] =
    &["$schema", "type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"];

fn suite_constraints(schema: &serde_json::Value) -> Option<NumberConstraints> {
    let o = schema.as_object()?;
    if !o.keys().all(|k| NUMERIC_KEYS.contains(&k.as_str())) {
        return None;
    }
    let integer = match o.get("type") {
        None => false,
        Some(t) if t == "integer" => true,
        Some(t) if t == "number" => false,
        Some(_) => return None,
    };
    let num = |k: &str| o.get(k).and_then(|v| v.as_number()).map(Decimal::from_json);
    let mut c = NumberConstraints { integer, integer_allows_fraction_zero: true, ..Default::default() };
    let tighter_min = |a: Option<(Decimal, bool)>, b: (Decimal, bool)| match a {
        Some(a) if a.0 > b.0 || (a.0 == b.0 && a.1) => Some(a),
        _ => Some(b),
    };
    let tighter_max = |a: Option<(Decimal, bool)>, b: (Decimal, bool)| match a {
        Some(a) if a.0 < b.0 || (a.0 == b.0 && a.1) => Some(a),
        _ => Some(b),
    };
    if let Some(v) = num("minimum") {
        c.min = tighter_min(c.min, (v, false));
    }
    if let Some(v) = num("exclusiveMinimum") {
        c.min = tighter_min(c.min, (v, true));
    }
    if let Some(v) = num("maximum") {
        c.max = tighter_max(c.max, (v, false));
    }
    if let Some(v) = num("exclusiveMaximum") {
        c.max = tighter_max(c.max, (v, true));
    }
    c.multiple_of = num("multipleOf");
    Some(c)
}

#[test]
fn json_schema_test_suite() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/json-schema-test-suite/tests/draft2020-12");
    if !dir.exists() {
        eprintln!("test suite not found at {}", dir.display());
        return;
    }
    let files = [
        "minimum.json",
        "maximum.json",
        "exclusiveMinimum.json",
        "exclusiveMaximum.json",
        "multipleOf.json",
        "type.json",
        "optional/bignum.json",
        "optional/float-overflow.json",
    ];
    let (mut checked, mut groups, mut mismatches, mut unsupported) = (0, 0, Vec::new(), Vec::new());
    for f in files {
        let text = std::fs::read_to_string(dir.join(f)).unwrap();
        let suite: serde_json::Value = serde_json::from_str(&text).unwrap();
        for group in suite.as_array().unwrap() {
            let Some(c) = suite_constraints(&group["schema"]) else { continue };
            groups += 1;
            let desc = group["description"].as_str().unwrap();
            let result = number_regex_detailed(&c);
            for t in group["tests"].as_array().unwrap() {
                let data = &t["data"];
                if !data.is_number() {
                    continue;
                }
                let lexeme = serde_json::to_string(data).unwrap();
                let valid = t["valid"].as_bool().unwrap();
                let matched = match &result {
                    Ok(r) => compile(&r.regex).is_match(&lexeme),
                    Err(NumberError::Unsatisfiable) => false,
                    Err(e) => {
                        unsupported.push(format!("{f} / {desc} / {lexeme}: {e}"));
                        continue;
                    }
                };
                checked += 1;
                if matched != valid {
                    mismatches.push(format!("{f} / {desc}: {lexeme} matched={matched} valid={valid}"));
                }
            }
        }
    }
    eprintln!("test suite: {groups} groups, {checked} numeric tests checked");
    for u in &unsupported {
        eprintln!("  not checked (unsupported): {u}");
    }
    assert!(mismatches.is_empty(), "{mismatches:#?}");
    assert!(checked >= 40, "only {checked} checked");
    // The only refusal: `type: integer, multipleOf: 0.123456789` (steps of 123456789, unbounded).
    assert!(unsupported.len() <= 1, "{unsupported:#?}");
}
