//! XGrammar's structural-tag format (`dwac_grammar::structural`): the language each format
//! means, tool calls between free text with qwen3's tokenizer, special tokens as tag bounds,
//! the masks equal to the reference mask, embedded schemas keeping their whitespace to
//! themselves, and every unsupported part refused by name.

use std::sync::Arc;

use dwac_compile::{compile_engine, parse_source, SourceKind};
use dwac_grammar::schema::SchemaOptions;
use dwac_runtime::{Engine, Matcher};
use dwac_tests::differential::differential;
use dwac_tests::tokenizer_json;
use dwac_vocab::Tokenizer;
use serde_json::{json, Value};

mod tool_calling;

fn engine(tag: &Value, tok: &Tokenizer) -> Arc<Engine> {
    let g = parse_source(SourceKind::StructuralTag, &tag.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let (e, stats) = compile_engine(&g, tok.vocab().clone()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stats.mask.map(|m| m.undecided_tokens), Some(0), "no UNDECIDED pair: {tag}");
    Arc::new(e)
}

/// Does the engine accept `text` (the tokenizer's own encoding, then the end token)?
fn accepts(e: &Arc<Engine>, tok: &Tokenizer, text: &str) -> bool {
    let mut m = Matcher::new(Arc::clone(e));
    let ids = tok.encode(text).expect("encode");
    let eos = e.vocab().eos()[0];
    ids.iter().all(|&t| m.commit(t).is_ok()) && m.commit(eos).is_ok()
}

fn weather() -> Value {
    json!({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["C", "F"]}},
           "required": ["city"], "additionalProperties": false})
}

fn hermes(at_least_one: bool, stop_after_first: bool) -> Value {
    json!({"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<tool_call>"],
        "tags": [
            {"type": "tag", "begin": "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ",
             "content": {"type": "json_schema", "json_schema": weather()}, "end": "}\n</tool_call>"},
            {"type": "tag", "begin": "<tool_call>\n{\"name\": \"get_time\", \"arguments\": ",
             "content": {"type": "json_schema", "json_schema": {"type": "object", "properties": {}, "additionalProperties": false}},
             "end": "}\n</tool_call>"}],
        "at_least_one": at_least_one, "stop_after_first": stop_after_first}})
}

const CALL: &str = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
const CALL2: &str = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";

#[test]
fn triggered_tags_are_text_and_tool_calls() {
    let tok = Tokenizer::from_file(&tokenizer_json("qwen3")).expect("qwen3");
    let e = engine(&hermes(false, false), &tok);
    let good = [
        "".to_string(),
        "Just text, no call.".to_string(),
        CALL.to_string(),
        format!("Let me check.\n{CALL}\nAnd the time:\n{CALL2}Done."),
        format!("{CALL}{CALL2}"),
        "<tool_cal is not a trigger".to_string(),
    ];
    let bad = [
        "<tool_call>\n{\"name\": \"get_wether\", \"arguments\": {}}\n</tool_call>".to_string(),
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"town\": \"Paris\"}}\n</tool_call>".to_string(),
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"K\"}}\n</tool_call>"
            .to_string(),
        "text <tool_call> in the middle of text".to_string(),
        CALL.replace("</tool_call>", ""),
    ];
    for t in &good {
        assert!(accepts(&e, &tok, t), "accepted: {t:?}");
    }
    for t in &bad {
        assert!(!accepts(&e, &tok, t), "refused: {t:?}");
    }
    let traces: Vec<Vec<u32>> = good.iter().map(|t| tok.encode(t).expect("encode")).collect();
    let r = differential(&e, &traces, 2, &mut |_| {});
    assert_eq!(r.mismatches, 0, "{:?}", r.examples);
    assert_eq!((r.rejected_traces, r.errors.len(), r.undecided + r.fallbacks), (0, 0, 0));

    // at_least_one: a call must come; stop_after_first: nothing after the first call.
    let e = engine(&hermes(true, false), &tok);
    assert!(!accepts(&e, &tok, "Just text."));
    assert!(accepts(&e, &tok, &format!("Text first. {CALL} text after")));
    let e = engine(&hermes(false, true), &tok);
    assert!(accepts(&e, &tok, "Just text.") && accepts(&e, &tok, &format!("Text. {CALL}")));
    assert!(!accepts(&e, &tok, &format!("{CALL} more")) && !accepts(&e, &tok, &format!("{CALL}{CALL2}")));
    let e = engine(&hermes(true, true), &tok);
    assert!(
        !accepts(&e, &tok, "Just text.") && accepts(&e, &tok, CALL) && !accepts(&e, &tok, &format!("{CALL}{CALL}"))
    );
}

#[test]
fn tags_bounded_by_special_tokens_and_a_reasoning_block() {
    // deepseek-r1: `<think>` is text, the tool-call bounds are its own special tokens.
    let tok = Tokenizer::from_file(&tokenizer_json("deepseek-r1")).expect("deepseek-r1");
    let calls_begin = "<｜tool▁calls▁begin｜>";
    let calls_end = "<｜tool▁calls▁end｜>";
    let tag = json!({"type": "structural_tag", "format": {"type": "sequence", "elements": [
        {"type": "tag", "begin": "<think>\n", "content": {"type": "any_text"}, "end": "\n</think>\n\n"},
        {"type": "tag", "begin": {"type": "token", "token": calls_begin},
         "content": {"type": "json_schema", "json_schema": weather()},
         "end": {"type": "token", "token": calls_end}}]}});
    let e = engine(&tag, &tok);
    let ids = |s: &str| tok.encode(s).expect("encode");
    let id_of =
        |s: &str| (0..tok.vocab().len() as u32).find(|&v| tok.vocab().token_bytes(v) == Some(s.as_bytes())).expect(s);
    let (b, z) = (id_of(calls_begin), id_of(calls_end));
    let mut trace = ids("<think>\nIt is about Paris; </think is not the end.\n</think>\n\n");
    trace.push(b);
    trace.extend(ids("{\"city\": \"Paris\"}"));
    trace.push(z);
    let r = differential(&e, &[trace.clone()], 2, &mut |_| {});
    assert_eq!((r.mismatches, r.rejected_traces), (0, 0), "{:?} {:?}", r.examples, r.rejected);

    // The reasoning ends at its first end string; the special token is no text, and no text
    // spells it.
    let mut m = Matcher::new(Arc::clone(&e));
    for &t in &ids("<think>\nhmm\n</think>\n\n") {
        m.commit(t).expect("commit");
    }
    let mut mask = vec![0u32; tok.vocab().len().div_ceil(32)];
    m.fill_mask(&mut mask).expect("mask");
    let allowed: Vec<u32> =
        (0..tok.vocab().len() as u32).filter(|&v| mask[(v / 32) as usize] >> (v % 32) & 1 == 1).collect();
    assert_eq!(allowed, vec![b], "only the special token opens the call");
    assert!(m.commit(ids("<")[0]).is_err());
}

#[test]
fn tags_with_separator_and_embedded_whitespace() {
    let tok = Tokenizer::default_embedded().expect("gpt2");
    let tag = |sep: &str, at_least_one: bool, stop: bool| {
        json!({"type": "tags_with_separator", "separator": sep, "at_least_one": at_least_one, "stop_after_first": stop,
            "tags": [{"type": "tag", "begin": "<a>", "content": {"type": "json_schema", "json_schema": {"type": "integer"}}, "end": "</a>"}]})
    };
    let e = engine(&tag(",", false, false), &tok);
    for (t, ok) in [
        ("", true),
        ("<a>1</a>", true),
        ("<a>1</a>,<a>22</a>", true),
        ("<a>1</a>, <a>2</a>", false),
        (" <a>1</a>", false),
        ("<a>1</a>,", false),
        ("<a>x</a>", false),
        ("<a>1</a><a>2</a>", false),
    ] {
        assert_eq!(accepts(&e, &tok, t), ok, "{t:?}");
    }
    assert!(!accepts(&engine(&tag(",", true, false), &tok), &tok, ""));
    assert!(!accepts(&engine(&tag(",", false, true), &tok), &tok, "<a>1</a>,<a>2</a>"));

    // Whitespace inside an embedded schema, bounded by `max_whitespace_cnt` on each side of a
    // punctuation mark; none leaks out of it.
    let obj = |max: Value| {
        json!({"type": "sequence", "elements": [{"type": "const_string", "value": "x="},
            {"type": "json_schema", "json_schema": {"type": "array", "items": {"type": "integer"}}, "max_whitespace_cnt": max},
            {"type": "const_string", "value": ";"}]})
    };
    let e = engine(&obj(json!(2)), &tok);
    for (t, ok) in
        [("x=[1,2];", true), ("x=[ 1 ,  2 ];", true), ("x=[1,   2];", false), ("x= [1];", false), ("x=[1] ;", false)]
    {
        assert_eq!(accepts(&e, &tok, t), ok, "{t:?}");
    }
    let e = engine(&obj(Value::Null), &tok);
    assert!(accepts(&e, &tok, "x=[1,      2\n];") && !accepts(&e, &tok, "x=[1]\n;"));
}

#[test]
fn the_older_structures_form_and_every_format_type() {
    let tok = Tokenizer::default_embedded().expect("gpt2");
    let old = json!({"type": "structural_tag", "triggers": ["<fn="],
        "structures": [{"begin": "<fn=w>", "schema": {"type": "boolean"}, "end": "</fn>"}]});
    let e = engine(&old, &tok);
    assert!(accepts(&e, &tok, "hi <fn=w>true</fn> bye") && !accepts(&e, &tok, "<fn=w>1</fn>"));
    let all = json!({"type": "sequence", "elements": [
        {"type": "or", "elements": [{"type": "const_string", "value": "A"}, {"type": "regex", "pattern": "[0-9]{2}"}]},
        {"type": "optional", "content": {"type": "const_string", "value": "?"}},
        {"type": "star", "content": {"type": "const_string", "value": "s"}},
        {"type": "plus", "content": {"type": "const_string", "value": "p"}},
        {"type": "repeat", "min": 1, "max": 2, "content": {"type": "const_string", "value": "r"}},
        {"type": "grammar", "grammar": "root ::= \"g\" [0-9]"},
        {"type": "tag", "begin": "(", "content": {"type": "any_text", "excludes": ["!"]}, "end": [")", "]"]},
        {"type": "any_tokens", "exclude_tokens": [0]}]});
    let e = engine(&all, &tok);
    for (t, ok) in [
        ("Apprg1()", true),
        ("42?ssppprrg7(x)]", true),
        ("42?ssppprrg7(x]", true),
        ("Arrr g1()", false),
        ("App rg1()", false),
        ("Aprg1(a!)", false),
        ("Aprg1(a) then anything at all", true),
        ("Aprg1(a!", false),
    ] {
        assert_eq!(accepts(&e, &tok, t), ok, "{t:?}");
    }
}

/// `strict` (XGrammar's language for a structural tag): the tags' schemas refuse keys they do not
/// name; the default (JSON Schema's meaning) allows them. Masks equal the reference on a trace.
#[test]
fn strict_tags_refuse_keys_their_schemas_do_not_name() {
    let tok = Tokenizer::default_embedded().expect("gpt2");
    let tag = json!({"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<tool_call>"],
        "tags": [{"type": "tag", "begin": "<tool_call>\n{\"name\": \"f\", \"arguments\": ",
                  "content": {"type": "json_schema", "json_schema": {"type": "object", "properties": {"q": {"type": "string"}}}},
                  "end": "}\n</tool_call>"}]}});
    let compile = |strict: bool| {
        let compiler =
            dwac_compile::Compiler { schema: SchemaOptions { strict, ..Default::default() }, ..Default::default() };
        let (g, _) = compiler.parse(SourceKind::StructuralTag, &tag.to_string()).unwrap_or_else(|e| panic!("{e}"));
        Arc::new(compile_engine(&g, tok.vocab().clone()).unwrap_or_else(|e| panic!("{e}")).0)
    };
    let (strict, open) = (compile(true), compile(false));
    let named = "Hi <tool_call>\n{\"name\": \"f\", \"arguments\": {\"q\": \"x\"}}\n</tool_call>";
    let unnamed = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"q\": \"x\", \"r\": 1}}\n</tool_call>";
    assert!(accepts(&strict, &tok, named) && accepts(&open, &tok, named));
    assert!(!accepts(&strict, &tok, unnamed) && accepts(&open, &tok, unnamed));
    let traces = vec![tok.encode(named).expect("encodes")];
    let r = differential(&strict, &traces, 2, &mut |_| {});
    assert_eq!((r.mismatches, r.rejected_traces), (0, 0), "{r:?}");
    assert!(r.steps_compared > 10);

    // The same schema as Lark's `%json` takes the option too.
    let lark = "start: \"<tool_call>\\n{\\\"name\\\": \\\"f\\\", \\\"arguments\\\": \"                 args \"}\\n</tool_call>\"\nargs: %json {\"type\": \"object\", \"properties\": {\"q\": {\"type\": \"string\"}}}\n";
    let compile = |strict: bool| {
        let compiler =
            dwac_compile::Compiler { schema: SchemaOptions { strict, ..Default::default() }, ..Default::default() };
        let (g, _) = compiler.parse(SourceKind::Lark, lark).unwrap_or_else(|e| panic!("{e}"));
        Arc::new(compile_engine(&g, tok.vocab().clone()).unwrap_or_else(|e| panic!("{e}")).0)
    };
    let (strict, open) = (compile(true), compile(false));
    let named = &named["Hi ".len()..];
    assert!(accepts(&strict, &tok, named) && accepts(&open, &tok, named), "{lark}");
    assert!(!accepts(&strict, &tok, unnamed) && accepts(&open, &tok, unnamed));
}

#[test]
fn what_is_not_supported_is_refused_by_name() {
    let cases = [
        (json!({"type": "exclude_token", "exclude_tokens": [1]}), "exactly one token"),
        (json!({"type": "dispatch", "rules": []}), "format type `dispatch` is not supported"),
        (json!({"type": "const_string", "value": "a", "extra": 1}), "unknown or unsupported key `extra`"),
        (
            json!({"type": "json_schema", "json_schema": {}, "style": "qwen_xml"}),
            "`style: \"qwen_xml\"` is not supported",
        ),
        (json!({"type": "any_text", "max_tokens": 5}), "`max_tokens: 5` is not supported"),
        (
            json!({"type": "triggered_tags", "triggers": ["<a"], "tags": [{"type": "tag", "begin": "<b>", "content": {"type": "any_text"}, "end": "</b>"}]}),
            "must start with exactly one trigger",
        ),
        (json!({"type": "json_schema", "json_schema": {"type": "string", "pattern": "(?<=a)b"}}), "/json_schema"),
        (
            json!({"type": "structural_tag", "format": {"type": "sequence", "elements": []}}),
            "at /format: `elements` must not be empty",
        ),
        (
            json!({"type": "json_schema", "json_schema": {}, "max_whitespace_cnt": 1000}),
            "a whitespace bound of 1000 is over 256",
        ),
    ];
    for (tag, want) in cases {
        let e =
            parse_source(SourceKind::StructuralTag, &tag.to_string()).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains(want), "{tag}: {e:?} does not say {want:?}");
    }
    let e = parse_source(SourceKind::StructuralTag, "{\"type\": \n ]").err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("--> 2:"), "{e}");
}

/// A tool whose schema accepts no value (a Glaive tool's: `oneOf` over `required` lists, all
/// of them required at once) is named by its JSON pointer in the tag, as the schema compiler
/// says it, and the longest-match analysis does not also report its branch as dead ends behind
/// the terminal that matches no text. The other tool is called as before.
#[test]
fn a_tool_that_accepts_no_value_is_named_by_its_pointer() {
    let tok = Tokenizer::from_file(&tokenizer_json("qwen3")).expect("qwen3");
    let number = json!({"type": "number"});
    let tool = |name: &str, schema: Value| {
        json!({"type": "tag", "begin": format!("<tool_call>\n{{\"name\": \"{name}\", \"arguments\": "),
               "content": {"type": "json_schema", "json_schema": schema}, "end": "}\n</tool_call>"})
    };
    let health = json!({"type": "object", "required": ["data"], "properties": {"data": {"type": "array",
        "items": {"type": "object", "required": ["measurement", "value", "timestamp"], "properties": {
            "measurement": {"type": "string"}, "timestamp": {"type": "string", "format": "date-time"},
            "value": number}}}}});
    let area = json!({"type": "object", "required": ["shape", "dimensions"], "properties": {
        "shape": {"type": "string", "enum": ["circle", "rectangle"]},
        "dimensions": {"type": "object", "required": ["radius", "length", "width"],
            "properties": {"radius": number, "length": number, "width": number},
            "oneOf": [{"required": ["radius"]}, {"required": ["length", "width"]}]}}});
    let tag = json!({"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<tool_call>"],
        "tags": [tool("analyze_health_data", health), tool("calculate_area", area)]}});
    let c = dwac_compile::Compiler::default();
    let (g, warnings) = c.parse(SourceKind::StructuralTag, &tag.to_string()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        warnings,
        ["structural tag at /format/tags/1/content/json_schema: the schema accepts no value"],
        "the front end's warnings"
    );
    let (e, stats) = c.compile_engine(&g, tok.vocab().clone()).unwrap_or_else(|e| panic!("{e}"));
    let analysis: Vec<&str> = stats.warnings.iter().map(|w| w.0.message.as_str()).collect();
    assert!(analysis.is_empty(), "no dead ends reported: {analysis:?}");
    assert!(!stats.munch_analysis_skipped);
    let e = Arc::new(e);
    let call = "<tool_call>\n{\"name\": \"analyze_health_data\", \"arguments\": {\"data\": []}}\n</tool_call>";
    assert!(accepts(&e, &tok, call) && accepts(&e, &tok, "Just text."));
    let never = "<tool_call>\n{\"name\": \"calculate_area\", \"arguments\": {}}\n</tool_call>";
    assert!(!accepts(&e, &tok, never));
}
