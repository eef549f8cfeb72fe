//! 2. Property tests: random values and encodings against independent translations.

use super::*;

#[test]
fn any_string_matches_exactly_what_serde_json_decodes() {
    let any = build(&json_string_any());
    let tokens: &[&str] = &[
        "a", "Z", "0", " ", "é", "😀", "\u{2028}", "\u{7f}", "\"", "\\", "/", "u", "D", "d", "8", "C", "c", "F", "e",
        "\\u", "\\uD83D", "\\ude00", "\\uDC00", "\\u00e9", "\\u00E9", "\\u0000", "\\uFFFF", "\\n", "\\x", "\\/", "\\b",
        "\\'", "\u{1}", "\t", "\n", "\u{1f}", "b", "\\\\", "\\\"",
    ];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut ok, mut bad) = (0, 0);
    for _ in 0..40_000 {
        let n = rng.below(7);
        let body: String = (0..n).map(|_| *rng.pick(tokens)).collect();
        let lit = format!("\"{body}\"");
        let want = serde_json::from_str::<String>(&lit).is_ok();
        assert_eq!(any.is_match(&lit), want, "json_string_any on {lit:?}");
        if want {
            ok += 1;
        } else {
            bad += 1;
        }
    }
    // Quotes are required.
    for lit in ["", "abc", "\"abc", "abc\"", "\"a\"b\""] {
        assert!(!any.is_match(lit), "{lit:?}");
    }
    println!("json_string_any: {ok} valid, {bad} invalid literals agreed with serde_json");
    assert!(ok > 1000 && bad > 1000);
}

#[test]
fn lengths_count_decoded_code_points() {
    let mut rng = Rng(0x1234_5678_9ABC_DEF1);
    let mut checked = 0;
    for _ in 0..400 {
        let min = rng.below(5) as u64;
        let max = if rng.percent(25) { None } else { Some((min as i64 - 1 + rng.below(6) as i64).max(0) as u64) };
        let c = StringConstraints { min_length: Some(min), max_length: max, ..Default::default() };
        let res = build_all(&string_regexes(&c).unwrap());
        for _ in 0..20 {
            let s = random_string(&mut rng, POOL, 8);
            let n = s.chars().count() as u64;
            let want = n >= min && max.is_none_or(|m| n <= m);
            for lit in [canonical(&s), random_encoding(&mut rng, &s), all_escaped(&s, true)] {
                assert_eq!(serde_json::from_str::<String>(&lit).unwrap(), s);
                assert_eq!(all_match(&res, &lit), want, "len {n} min {min} max {max:?}: {lit}");
                checked += 1;
            }
        }
    }
    assert!(string_regexes(&StringConstraints::default()).unwrap().is_empty());
    println!("lengths: {checked} literals checked");
}

#[test]
fn literals_match_exactly_their_value() {
    let mut rng = Rng(0xDEAD_BEEF_CAFE_F00D);
    let mut checked = 0;
    for _ in 0..500 {
        let s = random_string(&mut rng, POOL, 6);
        let re = build(&json_string_literal(&s));
        for lit in [canonical(&s), random_encoding(&mut rng, &s), all_escaped(&s, false)] {
            assert!(re.is_match(&lit), "{s:?} as {lit}");
        }
        for _ in 0..10 {
            let mut t: Vec<char> = s.chars().collect();
            match rng.below(3) {
                0 if !t.is_empty() => {
                    let i = rng.below(t.len());
                    t[i] = *rng.pick(POOL);
                }
                1 if !t.is_empty() => {
                    t.remove(rng.below(t.len()));
                }
                _ => t.insert(rng.below(t.len() + 1), *rng.pick(POOL)),
            }
            let t: String = t.into_iter().collect();
            let lit = random_encoding(&mut rng, &t);
            assert_eq!(re.is_match(&lit), t == s, "{s:?} vs {t:?} as {lit}");
            checked += 1;
        }
    }
    println!("literals: {checked} mutated literals checked");
}

/// ECMA pattern, an independently written Rust regex with the same semantics on the decoded value,
/// and extra characters to draw random strings from.
const PATTERNS: &[(&str, &str, &str)] = &[
    ("abc", "abc", "abc"),
    ("^a*$", "^a*$", "ab"),
    ("a+", "a+", "ab"),
    ("^\\d{2,3}$", "^[0-9]{2,3}$", "012٣a"),
    ("\\w+@\\w+", "[A-Za-z0-9_]+@[A-Za-z0-9_]+", "a_1@é"),
    ("^\\W$", "^[^A-Za-z0-9_]$", "a_é@"),
    ("^[^\"\\\\]*$", "^[^\"\\\\]*$", "a\"\\"),
    ("a.c", "a[^\n\r\u{2028}\u{2029}]c", "ac\n\r\u{2028}"),
    ("^(foo|bar)+$", "^(foo|bar)+$", "fobar"),
    (
        "^\\s*$",
        "^[\t\n\u{b}\u{c}\r \u{a0}\u{1680}\u{2000}-\u{200a}\u{2028}\u{2029}\u{202f}\u{205f}\u{3000}\u{feff}]*$",
        " \t\u{a0}\u{feff}\u{2003}a",
    ),
    (
        "\\S",
        "[^\t\n\u{b}\u{c}\r \u{a0}\u{1680}\u{2000}-\u{200a}\u{2028}\u{2029}\u{202f}\u{205f}\u{3000}\u{feff}]",
        " \t\u{feff}\u{2003}",
    ),
    ("(^a|b$)", "(^a|b$)", "ab"),
    ("^$", "^$", "a"),
    ("\\/x", "/x", "/x"),
    ("^\\cJ\\x41\\u0042\\u{43}$", "^\nABC$", "\nABC"),
    ("[\\u00e9-\\u00ff]", "[é-ÿ]", "éÿe"),
    ("^\\p{L}+$", "^\\p{L}+$", "aπ1"),
    ("^\\P{Lu}", "^\\P{Lu}", "aA"),
    ("[^a-z]", "[^a-z]", "az"),
    ("^.{2}$", "^[^\n\r\u{2028}\u{2029}]{2}$", "a\n😀"),
    ("😀+", "😀+", "😀"),
    ("^[\\uD83D\\uDE00-\\uD83D\\uDE4F]$", "^[\u{1F600}-\u{1F64F}]$", "😀🐲"),
    ("^\\\\\"$", "^\\\\\"$", "\\\""),
    ("x{2,}|^y$", "x{2,}|^y$", "xy"),
    ("a|^$", "a|^$", "ab"),
    ("^a$|^b", "^a$|^b", "ab"),
    ("(?:^|,)a(?:,|$)", "(?:^|,)a(?:,|$)", "a,"),
    ("^(a$|b)c", "^(?:a$|b)c", "abc"),
    ("[\\d-]+x", "[0-9-]+x", "1-x"),
    ("[]", "[^\\s\\S]", "a"),
    ("^[^]$", "^(?s:.)$", "a\n"),
    ("^[\\b]$", "^\u{8}$", "\u{8}b"),
    ("a{2}b{1,2}", "a{2}b{1,2}", "ab"),
    ("^(?<year>\\d{4})-\\d\\d$", "^[0-9]{4}-[0-9][0-9]$", "2024-01x"),
    ("^[a-c\\-]+?$", "^[a-c-]+?$", "ad-"),
    ("\\{\\}|{x", "\\{\\}|\\{x", "{}x"),
    ("^\\0$", "^\u{0}$", "\u{0}0"),
    ("x*^y", "x*^y", "xy"),
    ("a$b?", "a$b?", "ab"),
    ("(x?)^y|z$(w*)", "(x?)^y|z$(w*)", "xyzw"),
];

#[test]
fn patterns_agree_with_an_independent_translation() {
    let mut rng = Rng(0x0BAD_C0DE_1234_5678);
    let mut checked = 0;
    for &(ecma, oracle, extra) in PATTERNS {
        let oracle = Regex::new(oracle).unwrap();
        let re = build(&pattern_regex(ecma).unwrap_or_else(|e| panic!("{ecma}: {e}")));
        let mut pool: Vec<char> = extra.chars().collect();
        pool.extend_from_slice(&POOL[..12]);
        pool.extend(['😀', '\n', '"', '\\', '\u{2028}', '\u{feff}']);
        let (mut yes, mut no) = (0, 0);
        for i in 0..600 {
            let ex: Vec<char> = extra.chars().collect();
            let s = if i <= ex.len() {
                ex[..i].iter().collect() // every prefix of `extra`
            } else if i < 100 {
                // Concatenated slices of `extra` (hits multi-character literals).
                let mut s = String::new();
                for _ in 0..rng.below(4) {
                    let a = rng.below(ex.len() + 1);
                    let b = a + rng.below(ex.len() + 1 - a);
                    s.extend(&ex[a..b]);
                }
                s
            } else if i < 300 {
                random_string(&mut rng, &ex, 5)
            } else {
                random_string(&mut rng, &pool, 7)
            };
            let want = oracle.is_match(&s);
            for lit in [canonical(&s), random_encoding(&mut rng, &s)] {
                assert_eq!(re.is_match(&lit), want, "pattern {ecma:?} on {s:?} as {lit}");
                checked += 1;
            }
            if want {
                yes += 1;
            } else {
                no += 1;
            }
        }
        // Both verdicts must occur (except for patterns that match nothing / everything).
        assert!(yes > 0 || ecma == "[]", "{ecma}: never matched");
        assert!(no > 0, "{ecma}: never rejected");
    }
    println!("patterns: {checked} literals checked over {} patterns", PATTERNS.len());
}

#[test]
fn pattern_errors_name_the_construct() {
    let unsupported = [
        ("a(?=b)", "lookahead"),
        ("a(?!b)", "lookahead"),
        ("(?<=a)b", "lookbehind"),
        ("(?<!a)b", "lookbehind"),
        ("(a)\\1", "backreference"),
        ("(?<n>a)\\k<n>", "backreference"),
        ("\\bword", "word boundary"),
        ("\\Bx", "boundary"),
        ("\\uD800", "surrogate"),
        ("(^a)*", "anchor"),
        ("\\p{RGI_Emoji}", "RGI_Emoji"),
    ];
    for (p, what) in unsupported {
        match pattern_regex(p) {
            Err(StringError::Unsupported { what: w }) => assert!(w.contains(what), "{p}: {w}"),
            other => panic!("{p}: expected Unsupported, got {other:?}"),
        }
    }
    let invalid = [
        "(?i)abc", "(?P<n>a)", "(?#c)a", "\\a", "a**", "(abc", "abc)", "[abc", "*a", "a{3,2}", "[z-a]", "\\", "\\c1",
        "\\x4", "\\u12", "[\\d-z]", "\\01",
    ];
    for p in invalid {
        assert!(matches!(pattern_regex(p), Err(StringError::Invalid { .. })), "{p}: {:?}", pattern_regex(p));
    }
    let c = StringConstraints { format: Some("regex".into()), ..Default::default() };
    assert!(matches!(string_regexes(&c), Err(StringError::Unsupported { .. })));
    assert!(!is_supported_format("regex") && !is_supported_format("idn-hostname") && !is_supported_format("x"));
    assert!(is_supported_format("date-time") && is_supported_format("ipv6"));
}

#[test]
fn outputs_have_no_anchors_lookaround_or_captures() {
    let mut outs = vec![json_string_any(), json_string_literal("a\"\\\u{1}é😀")];
    for (p, _, _) in PATTERNS {
        outs.push(pattern_regex(p).unwrap());
    }
    for f in [
        "date-time",
        "date",
        "time",
        "duration",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "uuid",
        "uri",
        "uri-reference",
        "iri",
        "iri-reference",
        "uri-template",
        "json-pointer",
        "relative-json-pointer",
    ] {
        assert!(is_supported_format(f));
        let c = StringConstraints { format: Some(f.into()), max_length: Some(300), ..Default::default() };
        let rs = string_regexes(&c).unwrap();
        println!("format {f}: {} regexes, {} bytes", rs.len(), rs.iter().map(String::len).sum::<usize>());
        outs.extend(rs);
    }
    for p in ["^\\p{L}+$", "\\s", "."] {
        println!("pattern {p:?}: {} bytes", pattern_regex(p).unwrap().len());
    }
    println!("json_string_any: {} bytes", json_string_any().len());
    let mut total = 0;
    for r in &outs {
        total += r.len();
        let hir = regex_syntax::Parser::new().parse(r).unwrap();
        assert!(hir.properties().look_set().is_empty(), "look in {r:.200}");
        assert_eq!(hir.properties().explicit_captures_len(), 0, "capture in {r:.200}");
    }
    println!("{} regexes, {} bytes in total", outs.len(), total);
}

#[test]
fn min_greater_than_max_matches_nothing() {
    let c = StringConstraints { min_length: Some(3), max_length: Some(2), ..Default::default() };
    let res = build_all(&string_regexes(&c).unwrap());
    for s in ["", "ab", "abc", "abcd"] {
        assert!(!all_match(&res, &canonical(s)));
    }
    let c = StringConstraints { pattern: Some("[]".into()), ..Default::default() };
    let res = build_all(&string_regexes(&c).unwrap());
    assert!(!all_match(&res, "\"\"") && !all_match(&res, "\"a\""));
    // A pattern matching everything adds no regex.
    for p in ["", "a*", "^", "$", "x|"] {
        let c = StringConstraints { pattern: Some(p.into()), ..Default::default() };
        assert!(string_regexes(&c).unwrap().is_empty(), "{p}");
    }
}
