//! `oneOf` compiled exactly: branches proven disjoint (by strings' languages, sizes, ranges,
//! keys, through nested `anyOf`/`oneOf`) are a union; overlapping ones, exactly one branch.
//! Verdicts by hand.

use dwac_grammar::schema::{compile_schema, order_instance, SchemaOptions};
use dwac_tests::json_dumps;
use serde_json::{json, Value};

use super::{accepts, engine};

/// `oneOf` of strings whose branches overlap compiles as exactly one branch (each branch minus
/// the others' languages); verdicts by hand, escaped spellings included.
#[test]
fn overlapping_string_one_of_is_exactly_one() {
    let cases: Vec<(Value, Vec<(&str, bool)>)> = vec![
        (
            json!({"type": "string", "oneOf": [{"pattern": "customer"}, {"pattern": "maker"}]}),
            vec![(r#""customer""#, true), (r#""a maker""#, true), (r#""customermaker""#, false), (r#""x""#, false)],
        ),
        (
            json!({"oneOf": [{"type": "string", "pattern": "^[a-f0-9]{4}$"}, {"type": "string"}]}),
            vec![
                (r#""abcd""#, false),
                (r#""\u0061bcd""#, false),
                (r#""xyz""#, true),
                (r#""abcde""#, true),
                ("1", false),
            ],
        ),
        (
            json!({"oneOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "string", "maxLength": 1}]}),
            vec![(r#""a""#, false), (r#""c""#, true), (r#""""#, true), (r#""ab""#, false)],
        ),
        (
            json!({"oneOf": [{"type": "string", "pattern": "^https?://.+$"}, {"type": "string", "pattern": "^\\./.+$"}]}),
            vec![(r#""http://x""#, true), (r#""./a""#, true), (r#""ftp://x""#, false)],
        ),
    ];
    for (schema, texts) in &cases {
        let e = engine(schema, &SchemaOptions::default()).unwrap_or_else(|err| panic!("{schema}: {err}"));
        for (text, valid) in texts {
            assert_eq!(accepts(&e, text), *valid, "{schema}: {text}");
        }
    }
    // Branches with formats are never subtracted (a format's regex may be stricter than the
    // format), but told apart by the shape every string of the format has: an absolute URI
    // starts with a scheme and a colon, a date is not a date-time (MaskBench's o90313 first).
    let disjoint: Vec<(Value, Vec<(&str, bool)>)> = vec![
        (
            json!({"oneOf": [{"type": "string", "format": "uri"}, {"type": "string", "pattern": "^\\./.+$"}]}),
            vec![(r#""https://x.org/a""#, true), (r#""./a/b""#, true), (r#""\u002e/a""#, true), (r#""a/b""#, false)],
        ),
        (
            json!({"oneOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"}]}),
            vec![(r#""2024-02-29""#, true), (r#""2024-02-29T10:00:00Z""#, true), (r#""2024-02-29T""#, false)],
        ),
    ];
    for (schema, texts) in &disjoint {
        let e = engine(schema, &SchemaOptions::default()).unwrap_or_else(|err| panic!("{schema}: {err}"));
        for (text, valid) in texts {
            assert_eq!(accepts(&e, text), *valid, "{schema}: {text}");
        }
    }
    // Disjoint by sizes and ranges, and by a key one branch requires that the other constrains
    // to another type where present (MaskBench's o89710: `rawContent` or `bodyParts`).
    let apart: Vec<(Value, Vec<(&str, bool)>)> = vec![
        (
            json!({"oneOf": [{"type": "array", "maxItems": 1}, {"type": "array", "minItems": 2}]}),
            vec![("[]", true), ("[1, 2]", true), ("\"x\"", false)],
        ),
        (
            json!({"oneOf": [{"type": "integer", "maximum": 5}, {"type": "integer", "exclusiveMinimum": 5}]}),
            vec![("5", true), ("6", true), ("5.5", false)],
        ),
        (
            json!({"type": "object", "oneOf": [
                {"required": ["raw"], "properties": {"raw": {"type": "string"}, "parts": {"type": "null"}}},
                {"required": ["parts"], "properties": {"raw": {"type": "null"}, "parts": {"type": "array", "minItems": 1}}}
            ]}),
            vec![
                (r#"{"raw": "a"}"#, true),
                (r#"{"raw": "a", "parts": null}"#, true),
                (r#"{"parts": [1]}"#, true),
                (r#"{"raw": null, "parts": [1]}"#, true),
                (r#"{"raw": "a", "parts": [1]}"#, false),
                (r#"{"raw": null}"#, false),
                ("{}", false),
            ],
        ),
    ];
    for (schema, texts) in &apart {
        let e = engine(schema, &SchemaOptions::default()).unwrap_or_else(|err| panic!("{schema}: {err}"));
        for (text, valid) in texts {
            assert_eq!(accepts(&e, text), *valid, "{schema}: {text}");
        }
    }
    // Disjoint by keys each branch requires that a shared `not: {required}` forbids together
    // (MaskBench's o90953, a JSON-RPC response: `result` or `error`, never both).
    let schema = json!({
        "oneOf": [{"$ref": "#/$defs/success"}, {"$ref": "#/$defs/error"}],
        "$defs": {
            "common": {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"}},
                       "not": {"required": ["result", "error"]}},
            "success": {"allOf": [{"$ref": "#/$defs/common"}, {"required": ["result"]}]},
            "error": {"allOf": [{"$ref": "#/$defs/common"}, {"required": ["error"],
                      "properties": {"error": {"type": "object", "required": ["code"]}}}]}
        }
    });
    let e = engine(&schema, &SchemaOptions::default()).unwrap_or_else(|err| panic!("{err}"));
    for (value, valid) in [
        (json!({"id": 1, "result": [1]}), true),
        (json!({"id": 1, "error": {"code": 2}}), true),
        (json!({"id": 1, "result": 1, "error": {"code": 2}}), false),
        (json!({"id": 1, "error": 2}), false),
        (json!({"id": 1}), false),
    ] {
        let text = json_dumps(&order_instance(&schema, &value));
        assert_eq!(accepts(&e, &text), valid, "{text}");
    }
    // Refused: a URI may start with `a` (`a:b`), so these may overlap.
    let e = compile_schema(
        &json!({"oneOf": [{"type": "string", "format": "uri"}, {"type": "string", "pattern": "^a"}]}),
        &SchemaOptions::default(),
    );
    assert_eq!(e.unwrap_err().keyword, "oneOf");
    // Still refused: a branch that allows non-strings overlaps another, and its complement has
    // no exact grammar (numbers that are not multiples of 7).
    let e = compile_schema(
        &json!({"oneOf": [{"type": "integer", "multipleOf": 7}, {"minimum": 2}]}),
        &SchemaOptions::default(),
    );
    assert_eq!(e.unwrap_err().keyword, "oneOf");
}

/// Branches that are `anyOf`/`oneOf`s themselves (through `$ref`) are disjoint when every
/// pair of their branches is (MaskBench's o37786 shape: a color is an array, a hex string or a
/// name, or a selector object); a nested disjunction that overlaps the other side still makes
/// the `oneOf` exactly one branch or a refusal, never a union.
#[test]
fn one_of_through_nested_disjunctions() {
    let schema = json!({
        "$defs": {
            "def": {"oneOf": [
                {"type": "array", "items": {"type": "number"}},
                {"type": "string", "pattern": "^#[0-9a-f]{6}$"},
                {"enum": ["red", "blue"]}
            ]},
            "sel": {"oneOf": [
                {"type": "object", "required": ["ref"], "properties": {"ref": {"type": "string"}},
                 "additionalProperties": false},
                {"type": "object", "required": ["ios"], "properties": {"ios": {"$ref": "#"}},
                 "additionalProperties": false}
            ]}
        },
        "oneOf": [{"$ref": "#/$defs/def"}, {"$ref": "#/$defs/sel"}]
    });
    let e = engine(&schema, &SchemaOptions::default()).unwrap_or_else(|err| panic!("{err}"));
    for (text, valid) in [
        ("[1, 2.5]", true),
        (r##""#00ff00""##, true),
        (r#""red""#, true),
        (r#"{"ref": "x"}"#, true),
        (r#"{"ios": "blue"}"#, true),
        (r#"{"ios": {"ios": {"ref": "a"}}}"#, true),
        (r#""green""#, false),
        (r#"{"ref": 1}"#, false),
        (r#"{"ref": "x", "ios": "red"}"#, false),
        ("true", false),
    ] {
        assert_eq!(accepts(&e, text), valid, "{text}");
    }
    // `1` is a number of the first branch's `anyOf` and an integer: both branches match.
    let overlapping = json!({"oneOf": [{"anyOf": [{"type": "string"}, {"type": "number"}]}, {"type": "integer"}]});
    match engine(&overlapping, &SchemaOptions::default()) {
        Ok(e) => {
            for (text, valid) in [("1", false), ("1.5", true), (r#""a""#, true), ("null", false)] {
                assert_eq!(accepts(&e, text), valid, "{text}");
            }
        }
        Err(err) => assert!(err.contains("oneOf"), "{err}"),
    }
}

/// A `oneOf` whose cells expand to 108 alternatives (four address formats, each violated by
/// any of three properties: MaskBench's o35866) compiles as exactly one branch.
#[test]
fn one_of_of_four_address_formats() {
    let branch = |country: Value, states: Value| json!({"properties": {"country": country, "state": states, "postalCode": {"type": "string", "maxLength": 10}}});
    let schema = json!({
        "type": "object",
        "oneOf": [
            branch(json!({"type": "string", "enum": ["CAN"]}), json!({"type": "string", "enum": ["ON", "QC"]})),
            branch(json!({"type": "string", "enum": ["MEX"]}), json!({"type": "string", "enum": ["colima"]})),
            branch(json!({"type": "string", "enum": ["USA"]}), json!({"type": "string", "enum": ["NY", "ON"]})),
            {"properties": {
                "country": {"not": {"type": "string", "enum": ["CAN", "MEX", "USA"]}},
                "state": {"type": "string", "maxLength": 51},
                "postalCode": {"type": "string", "maxLength": 51}
            }}
        ],
        "properties": {"city": {"type": "string", "minLength": 1}}
    });
    let e = engine(&schema, &SchemaOptions::default()).unwrap_or_else(|err| panic!("{err}"));
    // (Keys laid out in the order the grammar fixes.)
    for (text, valid) in [
        (r#"{"country": "CAN", "state": "QC"}"#, true),
        (r#"{"country": "USA", "state": "NY", "postalCode": "10001"}"#, true),
        (r#"{"country": "FRA", "state": "Paris"}"#, true),
        (r#"{"country": "CAN", "state": "ON", "postalCode": "K1A 0B1", "city": "Ottawa"}"#, true),
        // Several branches at once: no country (all four), `ON` without a country (CAN, USA
        // and the open branch), a postal code too long for the first three but not the fourth.
        ("{}", false),
        (r#"{"state": "ON"}"#, false),
        (r#"{"country": "MEX", "state": "NY"}"#, false),
        (r#"{"country": "CAN", "state": "QC", "postalCode": "12345678901"}"#, false),
    ] {
        let value: Value = serde_json::from_str(text).unwrap();
        let text = json_dumps(&order_instance(&schema, &value));
        assert_eq!(accepts(&e, &text), valid, "{text}");
    }
}

/// Several `multipleOf`s in one conjunction (by `allOf`, `anyOf`, `oneOf`, `$ref`) are the
/// multiples of their least common multiple, decimals included. Verdicts by hand.
#[test]
fn several_multiples_are_their_least_common_multiple() {
    let cases: Vec<(Value, Vec<(&str, bool)>)> = vec![
        (
            json!({"allOf": [{"multipleOf": 2}], "anyOf": [{"multipleOf": 3}], "oneOf": [{"multipleOf": 5}]}),
            vec![
                ("30", true),
                ("0", true),
                ("-60", true),
                ("90.0", true),
                ("2", false),
                ("6", false),
                ("10", false),
                ("15", false),
                ("45", false),
            ],
        ),
        (
            json!({"type": "number", "allOf": [{"multipleOf": 0.5}, {"multipleOf": 0.3}]}),
            vec![
                ("1.5", true),
                ("3", true),
                ("4.5", true),
                ("0", true),
                ("0.5", false),
                ("0.3", false),
                ("0.9", false),
                ("1", false),
                ("2", false),
            ],
        ),
    ];
    for (schema, verdicts) in cases {
        let e = engine(&schema, &SchemaOptions::default()).unwrap_or_else(|err| panic!("{schema}: {err}"));
        for (text, valid) in verdicts {
            assert_eq!(accepts(&e, text), valid, "{schema}: {text}");
        }
    }
}
