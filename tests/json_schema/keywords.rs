//! Keywords compiled exactly since the complements (`complement.rs`) could write what they
//! need, and the refusals that remain named: `not` of number constants, `propertyNames` from a
//! list, `maxContains`, a string over the lexer's budget. Verdicts by hand.

use dwac_grammar::schema::{compile_schema, SchemaOptions};
use serde_json::{json, Value};

use super::{accepts, engine};

/// Each schema compiles, and accepts exactly the texts marked valid.
fn check(cases: Vec<(Value, Vec<(&str, bool)>)>) {
    for (schema, verdicts) in cases {
        let e = engine(&schema, &SchemaOptions::default()).unwrap_or_else(|err| panic!("{schema}: {err}"));
        for (text, valid) in verdicts {
            assert_eq!(accepts(&e, text), valid, "{schema}: {text}");
        }
    }
}

/// A string whose length bound multiplies a large format's automaton past the lexer's budget is
/// refused naming the property and what bounds it (the lexer knows terminals; the schema tells it
/// where each string terminal came from).
#[test]
fn a_string_over_the_lexer_budget_is_refused_naming_its_property() {
    let schema =
        json!({"type": "object", "properties": {"site": {"type": "string", "format": "uri", "maxLength": 2000}}});
    let sg = compile_schema(&schema, &SchemaOptions::default()).unwrap();
    let Err(err) = dwac_compile::compile_grammar(&sg.grammar) else {
        panic!("compiled: over the lexer budget expected")
    };
    let msg = err.to_string();
    assert!(msg.contains("budget") && msg.contains("/properties/site: maxLength 2000, format uri"), "{msg}");
}

/// `not` of number constants: exact on exponent-free lexemes (by value: `1.0` is `1`, `-0` is `0`),
/// and no exponent lexeme unless the constant is `0` (stricter: `numbers::not_equal`); in an
/// `if` too. Verdicts by hand.
#[test]
fn not_of_number_constants() {
    let cases: Vec<(Value, Vec<(&str, bool)>)> = vec![
        (
            json!({"not": {"const": 1}}),
            vec![
                ("1", false),
                ("1.0", false),
                ("1.00", false),
                ("10e-1", false),
                ("2", true),
                ("0", true),
                ("-1", true),
                ("0.5", true),
                (r#""x""#, true),
                ("true", true),
                ("2e3", false),
            ],
        ),
        (
            json!({"type": "integer", "not": {"enum": [0, 2]}}),
            vec![("0", false), ("-0", false), ("2", false), ("2.0", false), ("1", true), ("3", true), ("-2", true)],
        ),
        (json!({"not": {"const": 0}}), vec![("0", false), ("0e5", false), ("-0.0", false), ("1", true), ("1e2", true)]),
        (
            json!({"if": {"const": 1}, "then": false}),
            vec![("1", false), ("1.0", false), ("2", true), (r#""a""#, true), ("null", true)],
        ),
    ];
    check(cases);
}

/// `propertyNames` with `const`/`enum`: the keys are the listed strings that satisfy all of it
/// (named keys and any other). Verdicts by hand.
#[test]
fn property_names_from_a_list() {
    let cases: Vec<(Value, Vec<(&str, bool)>)> = vec![
        (
            json!({"propertyNames": {"enum": ["foo", "bar"]}}),
            vec![
                ("{}", true),
                (r#"{"foo": 1}"#, true),
                (r#"{"foo": 1, "bar": 2}"#, true),
                (r#"{"baz": 1}"#, false),
                (r#"{"\u0066oo": 1}"#, true),
                (r#""x""#, true),
            ],
        ),
        (
            json!({"propertyNames": {"const": "foo"}, "properties": {"foo": {"type": "integer"}}}),
            vec![(r#"{"foo": 1}"#, true), (r#"{"foo": "x"}"#, false), (r#"{"other": 1}"#, false)],
        ),
        (
            json!({"type": "object", "propertyNames": {"enum": ["ab", "abc", 3], "maxLength": 2}}),
            vec![(r#"{"ab": 1}"#, true), (r#"{"abc": 1}"#, false), (r#"{"3": 1}"#, false)],
        ),
    ];
    check(cases);
}

/// `maxContains`: the items not counted satisfy the complement of `contains` (written as for
/// `not`), and the matching ones are counted exactly. Verdicts by hand.
#[test]
fn max_contains_counts_exactly() {
    let cases: Vec<(Value, Vec<(&str, bool)>)> = vec![
        (
            json!({"contains": {"const": 1}, "minContains": 1, "maxContains": 2}),
            vec![
                ("[]", false),
                ("[1]", true),
                ("[1, 1]", true),
                ("[1, 1, 1]", false),
                ("[2, 1, 3, 1]", true),
                ("[1.0, 1, 1]", false),
                ("[2, 3]", false),
                ("{}", true),
            ],
        ),
        (
            json!({"type": "array", "contains": {"type": "string"}, "minContains": 0, "maxContains": 0}),
            vec![("[]", true), ("[1, 2]", true), (r#"["a"]"#, false), (r#"[1, "a"]"#, false)],
        ),
        (
            json!({"type": "array", "items": {"type": "integer"}, "contains": {"minimum": 10}, "maxContains": 1}),
            vec![("[]", false), ("[10]", true), ("[1, 2, 30]", true), ("[10, 11]", false)],
        ),
    ];
    check(cases);
}

/// Count keywords written with a zero fraction (`maxLength: 2.0`, allowed from draft 6 on) count
/// in the compile-time validator too: here it decides which listed values a `not` excludes.
#[test]
fn count_keywords_written_with_a_fraction() {
    check(vec![(
        json!({"not": {"enum": ["ab", "abc"], "maxLength": 2.0}}),
        vec![(r#""ab""#, false), (r#""abc""#, true), (r#""x""#, true), ("1", true)],
    )]);
}

/// Subschemas that allow every value (`true`, `{}`, annotations only) are the one shared "any
/// value" nonterminal wherever they are, not a copy of the JSON grammar per pointer: one more
/// such property costs fewer nonterminals than one more integer property, and the verdicts are
/// those of `true`.
#[test]
fn subschemas_allowing_everything_share_one_grammar() {
    let with = |d: Value| {
        let s = json!({"type": "object", "properties": {"a": {}, "n": {"type": "integer"}, "d": d}});
        compile_schema(&s, &SchemaOptions::default()).unwrap().grammar.nonterminals.len()
    };
    let integer = with(json!({"type": "integer"}));
    for anything in [json!({}), json!(true), json!({"description": "anything", "title": "D", "examples": [1]})] {
        assert!(with(anything.clone()) < integer, "{anything}: a copy of the JSON grammar");
    }
    let schema = json!({"type": "object", "properties": {
        "a": {}, "b": {"description": "anything", "title": "B", "examples": [1]}, "c": true,
        "n": {"type": "integer"}},
        "additionalProperties": {"$comment": "any value"}});
    let verdicts = vec![
        (r#"{"a": [1, {"x": null}], "b": "s", "c": {}, "n": 1, "z": [true]}"#, true),
        (r#"{"b": {"b": {"b": []}}}"#, true),
        (r#"{"n": "1"}"#, false),
        (r#"{"c": [1,]}"#, false),
    ];
    check(vec![(schema, verdicts)]);
}
