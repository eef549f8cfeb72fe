//! Open objects (no `additionalProperties`): their extra keys shared by every object
//! (`dwac_grammar::open_keys`) give the language and the masks of a key terminal per object.

use super::*;
use dwac_grammar::open_keys::share_open_keys;

/// The same grammar with its key terminals unmarked: one key terminal per object, as the schema
/// front end writes them.
fn per_object(g: &dwac_grammar::Grammar) -> dwac_grammar::Grammar {
    let mut g = g.clone();
    for t in &mut g.terminals {
        t.key_complement = None;
    }
    g
}

/// Two objects in an `anyOf` that each take the other's names as extra keys, one nested open
/// object; verdicts by hand, and masks equal to the per-object construction at every byte.
#[test]
fn open_objects_share_their_extra_keys_exactly() {
    let schema = json!({"anyOf": [
        {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a"]},
        {"type": "object", "properties": {
            "b": {"type": "boolean"},
            "c": {"type": "object", "properties": {"a": {"type": "null"}}}
        }}
    ]});
    let sg = compile_schema(&schema, &SchemaOptions::default()).unwrap();
    assert!(share_open_keys(&sg.grammar).is_some(), "the pass applies");
    let per_object = per_object(&sg.grammar);
    assert!(share_open_keys(&per_object).is_none());

    let extra = [r#""a""#, r#""b":"#, r#""c":{""#, r#"":"#, r#"":""#, r#""},""#, r#""a":1"#, "true", "null}", r#"e""#];
    let (shared, plain, tokens) =
        twin_engines(&sg.grammar, &per_object, br#"{}[]":,abcdex0123456789 -.tnrufls\"#, &extra);

    let cases: [(&str, Option<bool>); 19] = [
        (r#"{"a":1}"#, Some(true)),
        (r#"{"a":1,"b":"x"}"#, Some(true)),
        (r#"{"a":1,"c":5}"#, Some(true)),
        (r#"{"a":1,"d":[1,{"e":2}]}"#, Some(true)),
        (r#"{"b":true}"#, Some(true)),
        (r#"{"b":true,"a":"x"}"#, Some(true)),
        (r#"{"a":"x"}"#, Some(true)),
        (r#"{"b":1}"#, Some(false)),
        (r#"{"b":"s","a":1}"#, Some(false)),
        (r#"{"c":{"a":1}}"#, Some(false)),
        (r#"{"c":{"a":null,"b":1}}"#, Some(true)),
        (r#"{"c":{"a":null,"a":1}}"#, Some(false)),
        (r#"{"c":{"b":null,"a":1}}"#, Some(false)),
        (r#"{"\u0061":1}"#, Some(true)),
        (r#"{"\u0061":"x","\u0062":1}"#, Some(false)),
        (r#"{"":1,"ab":{}}"#, Some(true)),
        (r#"{"a":1,"a":2}"#, None),
        (r#"{"c":{},"b":false}"#, Some(false)),
        (r#"{"e":1,"b":true}"#, Some(false)),
    ];
    for (text, verdict) in cases {
        let accepted = same_masks_bytewise(&shared, &plain, &tokens, text);
        assert_eq!(accepted, accepts(&shared, text), "{text}");
        if let Some(v) = verdict {
            assert_eq!(accepted, v, "{text}");
        }
    }
}

/// Objects with more names than one group holds: two groups of two objects, each group with a
/// `KEY_OTHER` of its own (so a key lexes as both), and a key one group names taken as an extra
/// key by the other; masks equal to the per-object construction at every byte.
#[test]
fn open_objects_in_several_groups_share_exactly() {
    let object = |names: &[&str]| {
        let props: serde_json::Map<String, Value> =
            names.iter().map(|n| (n.to_string(), json!({"type": "integer"}))).collect();
        json!({"type": "object", "properties": props, "required": [names[0]]})
    };
    let a: Vec<String> = (0..10).map(|i| format!("a{i}")).collect();
    let b: Vec<String> = (0..10).map(|i| format!("b{i}")).collect();
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let b: Vec<&str> = b.iter().map(String::as_str).collect();
    let schema = json!({"anyOf": [
        object(&a), object(&b), object(&["c", "a0", "b0"]), object(&["d", "b1", "b2", "b3", "b4", "b5", "b6"])
    ]});
    let sg = compile_schema(&schema, &SchemaOptions::default()).unwrap();
    let shared_grammar = share_open_keys(&sg.grammar).expect("the pass applies");
    let others = shared_grammar.terminals.iter().filter(|t| t.key_complement.is_some()).count();
    assert_eq!(others - 4, 2, "four objects' terminals and two groups' KEY_OTHER");
    let per_object = per_object(&sg.grammar);

    let extra = [r#""a0":"#, r#""b0""#, r#"":1,""#, r#""d":1,"b"#];
    let (shared, plain, tokens) = twin_engines(&sg.grammar, &per_object, br#"{}":,abcd0123456789x"#, &extra);
    let cases: [(&str, Option<bool>); 8] = [
        (r#"{"a0":1,"b0":2}"#, Some(true)),
        (r#"{"b0":1,"a0":"x"}"#, Some(true)),
        (r#"{"c":1,"a0":2}"#, Some(true)),
        (r#"{"c":1,"d":"x","a1":"x"}"#, Some(true)),
        (r#"{"d":1,"a0":"x"}"#, Some(true)),
        (r#"{"d":1,"b1":"x"}"#, Some(false)),
        (r#"{"d":1,"b7":"x","c":{}}"#, Some(true)),
        (r#"{"a0":1,"a9":2,"b9":"x","a1":3}"#, None),
    ];
    for (text, verdict) in cases {
        let accepted = same_masks_bytewise(&shared, &plain, &tokens, text);
        if let Some(v) = verdict {
            assert_eq!(accepted, v, "{text}");
        }
    }
}
