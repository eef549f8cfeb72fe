//! Hand-written cases: bounds, integers, `multipleOf`, errors, decimals.

use super::*;

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
