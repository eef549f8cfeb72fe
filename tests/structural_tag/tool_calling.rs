//! Tools → structural tag (`dwac_grammar::tools`) per model family, with the tokenizer each
//! format is for: what an assistant turn may be under each `tool_choice`, parallel calls or
//! one, a reasoning block, and the masks equal to the reference mask on the accepted turns.
//! (The Python tests render the real chat templates and check that the grammar accepts them.)

use std::sync::Arc;

use dwac_compile::{compile_engine, parse_source, SourceKind};
use dwac_grammar::tools::{structural_tag, ToolCalling, ToolChoice, ToolFormat};
use dwac_runtime::{Engine, Matcher, Vocabulary};
use dwac_tests::differential::differential;
use dwac_tests::tokenizer_json;
use dwac_vocab::Tokenizer;
use serde_json::{json, Value};

fn tools() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["C", "F"]}},
                           "required": ["city"], "additionalProperties": false}}}),
        json!({"type": "function", "function": {"name": "get_time"}}),
    ]
}

fn engine(c: &ToolCalling, vocab: &Vocabulary) -> Result<Arc<Engine>, String> {
    let tag = structural_tag(&tools(), c).map_err(|e| e.to_string())?;
    let g = parse_source(SourceKind::StructuralTag, &tag.to_string()).map_err(|e| e.to_string())?;
    let (e, stats) = compile_engine(&g, vocab.clone()).map_err(|e| e.to_string())?;
    assert_eq!(stats.mask.map(|m| m.undecided_tokens), Some(0), "no UNDECIDED pair: {c:?}");
    Ok(Arc::new(e))
}

/// Does the engine take `ids` and then the end token?
fn accepts(e: &Arc<Engine>, ids: &[u32]) -> bool {
    let mut m = Matcher::new(Arc::clone(e));
    ids.iter().all(|&t| m.commit(t).is_ok()) && m.commit(e.vocab().eos()[0]).is_ok()
}

/// Every choice of one format: `turns[i]` is accepted exactly under the choices `ok[i]` lists
/// (a = auto, n = none, r = required, t = the function get_time); the accepted turns are
/// checked against the reference mask too.
fn check(format: ToolFormat, vocab: &Vocabulary, encode: &dyn Fn(&str) -> Vec<u32>, turns: &[(&str, &str)]) {
    let choices = [
        ('a', ToolChoice::Auto),
        ('n', ToolChoice::None),
        ('r', ToolChoice::Required),
        ('t', ToolChoice::Function("get_time".into())),
    ];
    for (key, choice) in choices {
        let c = ToolCalling { tool_choice: choice, ..ToolCalling::new(format) };
        let e = engine(&c, vocab).unwrap_or_else(|m| panic!("{m}"));
        let mut traces = Vec::new();
        for (text, ok) in turns {
            let ids = encode(text);
            assert_eq!(accepts(&e, &ids), ok.contains(key), "{format:?} tool_choice {key}: {text:?}");
            if ok.contains(key) {
                traces.push(ids);
            }
        }
        let r = differential(&e, &traces, 2, &mut |_| {});
        assert_eq!(r.mismatches, 0, "{format:?} {key}: {:?}", r.examples);
        assert_eq!((r.rejected_traces, r.errors.len(), r.undecided + r.fallbacks), (0, 0, 0));
    }
}

#[test]
fn hermes_turns_as_qwen3_writes_them() {
    let tok = Tokenizer::from_file(&tokenizer_json("qwen3")).expect("qwen3");
    let w = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    let t = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
    let two = format!("{w}\n{t}");
    let text_then_call = format!("Let me look.\n{t}");
    let turns: &[(&str, &str)] = &[
        ("The weather is fine.", "an"),
        (w, "ar"),
        (t, "art"),
        (&two, "ar"),
        (&text_then_call, "a"),
        ("Text <tool_call> inside", ""),
        ("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"town\": \"Paris\"}}\n</tool_call>", ""),
        ("<tool_call>\n{\"name\": \"get_date\", \"arguments\": {}}\n</tool_call>", ""),
        (&format!("{t}\nand text after"), ""),
    ];
    check(ToolFormat::Hermes, tok.vocab(), &|s| tok.encode(s).expect("encode"), turns);

    // One call only without parallel calls; a reasoning block first when asked for.
    let one = ToolCalling { parallel_tool_calls: false, ..ToolCalling::new(ToolFormat::Hermes) };
    let e = engine(&one, tok.vocab()).expect("compiles");
    assert!(accepts(&e, &tok.encode(w).expect("encode")));
    assert!(!accepts(&e, &tok.encode(&two).expect("encode")));
    let think =
        ToolCalling { reasoning: true, tool_choice: ToolChoice::Required, ..ToolCalling::new(ToolFormat::Hermes) };
    let e = engine(&think, tok.vocab()).expect("compiles");
    assert!(accepts(&e, &tok.encode(&format!("<think>\nThe user wants the time.\n</think>\n\n{t}")).expect("encode")));
    assert!(!accepts(&e, &tok.encode(t).expect("encode")), "the reasoning block is required");
    // The markers are qwen3's own single tokens (the model writes them as one token each).
    for m in ["<tool_call>", "</tool_call>", "<think>", "</think>"] {
        assert_eq!(tok.encode(m).expect("encode").len(), 1, "{m} is one qwen3 token");
    }
}

#[test]
fn deepseek_turns_as_its_template_writes_them() {
    let tok = Tokenizer::from_file(&tokenizer_json("deepseek-r1")).expect("deepseek-r1");
    let call = |name: &str, args: &str| {
        format!("<｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n{args}\n```<｜tool▁call▁end｜>")
    };
    let (w, t) = (call("get_weather", "{\"city\": \"Oslo\", \"unit\": \"C\"}"), call("get_time", "{}"));
    let one = format!("<｜tool▁calls▁begin｜>{w}<｜tool▁calls▁end｜>");
    let time = format!("<｜tool▁calls▁begin｜>{t}<｜tool▁calls▁end｜>");
    let two = format!("<｜tool▁calls▁begin｜>{w}\n{t}<｜tool▁calls▁end｜>");
    let with_text = format!("Checking.{time}");
    let bad_args = format!("<｜tool▁calls▁begin｜>{}<｜tool▁calls▁end｜>", call("get_weather", "{}"));
    let turns: &[(&str, &str)] = &[
        ("Sunny.", "an"),
        (&one, "ar"),
        (&time, "art"),
        (&two, "ar"),
        (&with_text, "a"),
        (&bad_args, ""),
        (&format!("<｜tool▁calls▁begin｜>{w}"), ""),
    ];
    check(ToolFormat::DeepSeek, tok.vocab(), &|s| tok.encode(s).expect("encode"), turns);
    for m in [
        "<｜tool▁calls▁begin｜>",
        "<｜tool▁call▁begin｜>",
        "<｜tool▁sep｜>",
        "<｜tool▁call▁end｜>",
        "<｜tool▁calls▁end｜>",
    ] {
        assert_eq!(tok.encode(m).expect("encode").len(), 1, "{m} is one deepseek-r1 token");
    }
}

#[test]
fn smollm2_and_llama3_turns() {
    let tok = Tokenizer::from_file(&tokenizer_json("gpt2")).expect("gpt2");
    let w = "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}";
    let t = "{\"name\": \"get_time\", \"arguments\": {}}";
    let (one, time, two) = (
        format!("<tool_call>[{w}]</tool_call>"),
        format!("<tool_call>[{t}]</tool_call>"),
        format!("<tool_call>[{w}, {t}]</tool_call>"),
    );
    let turns: &[(&str, &str)] = &[
        ("Rome is warm.", "an"),
        (&one, "ar"),
        (&time, "art"),
        (&two, "ar"),
        (&format!("Sure. {time}"), ""),
        ("<tool_call>[]</tool_call>", ""),
    ];
    check(ToolFormat::SmolLM2, tok.vocab(), &|s| tok.encode(s).expect("encode"), turns);

    // Llama 3: `<|python_tag|>` is a special token (no text); gpt2's vocabulary plus that token.
    let v = tok.vocab();
    let mut toks: Vec<Vec<u8>> = (0..v.len() as u32).map(|i| v.token_bytes(i).unwrap_or_default().to_vec()).collect();
    let mut special: Vec<bool> = (0..v.len() as u32).map(|i| v.is_special(i)).collect();
    let tag = toks.len() as u32;
    toks.push(b"<|python_tag|>".to_vec());
    special.push(true);
    let llama = Vocabulary::from_tokens(&toks, special, v.eos().to_vec());
    let w = w.replace("arguments", "parameters");
    let t = t.replace("arguments", "parameters");
    let enc = |s: &str| -> Vec<u32> {
        match s.strip_prefix("<|python_tag|>") {
            Some(rest) => [vec![tag], tok.encode(rest).expect("encode")].concat(),
            None => tok.encode(s).expect("encode"),
        }
    };
    let (one, time, two) =
        (format!("<|python_tag|>{w}"), format!("<|python_tag|>{t}"), format!("<|python_tag|>{w}; {t}"));
    let bad = "{\"name\": \"get_weather\", \"parameters\": {\"town\": \"Rome\"}}";
    let two_plain = format!("{w}; {t}");
    let turns: &[(&str, &str)] = &[
        ("Rome is warm.", "an"),
        (&one, "ar"),
        (&time, "art"),
        (&two, "ar"),
        // The Hugging Face template's form: the call alone, no special token.
        (&w, "ar"),
        (&t, "art"),
        (&two_plain, "ar"),
        // A call with arguments its schema refuses is neither a call nor text.
        (bad, ""),
        ("Calling {\"name\": \"get_weather\"} now", ""),
        ("<|python_tag|>", ""),
    ];
    check(ToolFormat::Llama3, &llama, &enc, turns);
    // A tokenizer without the special token: a compile error naming it.
    let Err(e) = engine(&ToolCalling::new(ToolFormat::Llama3), v) else { panic!("compiled without <|python_tag|>") };
    assert!(e.contains("<|python_tag|>"), "{e}");
}

/// A tokenizer's special tokens have no bytes; grammars name them by the tokenizer's text
/// (`tokenizer.json`'s added tokens, a GGUF's control tokens).
#[test]
fn special_tokens_are_found_by_their_names() {
    let ggml = dwac_tests::gguf_vocab("qwen2");
    for (tok, name) in [
        (Tokenizer::from_file(&tokenizer_json("qwen3")).expect("qwen3"), "<|im_start|>"),
        (Tokenizer::from_file(&tokenizer_json("deepseek-r1")).expect("deepseek-r1"), "<｜begin▁of▁sentence｜>"),
        (Tokenizer::from_file(&ggml).expect("gguf"), "<|im_start|>"),
    ] {
        let v = tok.vocab();
        let id = v.special_named(name).next().unwrap_or_else(|| panic!("{}: {name} is named", tok.name()));
        assert!(
            v.is_special(id) && v.token_bytes(id) == Some(&b""[..]),
            "{}: {name} is special, without bytes",
            tok.name()
        );
        let src = format!("start: \"a\" {name} \"b\"\n");
        let g = parse_source(SourceKind::Lark, &src).expect("parses");
        let e = Arc::new(compile_engine(&g, v.clone()).unwrap_or_else(|e| panic!("{}: {e}", tok.name())).0);
        let mut m = Matcher::new(Arc::clone(&e));
        m.commit(tok.encode("a").expect("encode")[0]).expect("a");
        let mut mask = vec![0u32; v.len().div_ceil(32)];
        m.fill_mask(&mut mask).expect("mask");
        let allowed: Vec<u32> = (0..v.len() as u32).filter(|&i| mask[i as usize / 32] >> (i % 32) & 1 == 1).collect();
        assert_eq!(allowed, vec![id], "{}: only {name} after `a`", tok.name());
    }
}

/// The free text of a tool-calling turn is lexed in a component of its own
/// (`structural::Builder::separate_texts`): the same masks as with the text among the tags'
/// literals, byte by byte along DeepSeek and Hermes turns (calls, text, a reasoning block, and
/// prefixes that go wrong).
#[test]
fn free_text_in_a_component_of_its_own_keeps_the_masks() {
    let ds = |name: &str, args: &str| {
        format!("<｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n{args}\n```<｜tool▁call▁end｜>")
    };
    let deepseek = [
        format!("Checking.<｜tool▁calls▁begin｜>{}<｜tool▁calls▁end｜>", ds("get_weather", "{\"city\": \"Oslo\"}")),
        format!(
            "<think>\nhm</think>\n\nok<｜tool▁calls▁begin｜>{}\n{}<｜tool▁calls▁end｜>",
            ds("get_time", "{}"),
            ds("get_time", "{}")
        ),
        "Text <｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time".to_string(),
        format!("<think>x</think>\n\n<｜tool▁calls▁begin｜>{}", ds("get_date", "{}")),
    ];
    let hermes = [
        "Let me look.\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>".to_string(),
        "<think>\nno</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>"
            .to_string(),
        "Text <tool_call> inside".to_string(),
    ];
    for (format, turns) in [(ToolFormat::DeepSeek, &deepseek[..]), (ToolFormat::Hermes, &hermes[..])] {
        let c = ToolCalling { reasoning: true, ..ToolCalling::new(format) };
        let tag = structural_tag(&tools(), &c).expect("tag");
        let g = parse_source(SourceKind::StructuralTag, &tag.to_string()).expect("parses");
        let text = |t: &dwac_grammar::Terminal| t.name.starts_with("any_text");
        assert!(g.terminals.iter().any(|t| text(t) && t.component != 0), "{format:?}: the text is apart");
        let mut together = g.clone();
        for t in together.terminals.iter_mut().filter(|t| text(t)) {
            t.component = 0;
        }
        // Every byte of the turns a token, and some longer pieces.
        let bytes: Vec<u8> = turns.iter().flat_map(|s| s.bytes()).collect();
        let extra = ["<tool_call>", "<｜tool▁sep｜>", "function", "get_", "\n```", "</think>"];
        let (apart, one, tokens) = dwac_tests::twin_engines(&g, &together, &bytes, &extra);
        for turn in turns {
            dwac_tests::same_masks_bytewise(&apart, &one, &tokens, turn);
        }
    }
}

/// The ten Glaive tools of `schemas/large/tools-10.json`, their argument objects open (no
/// `additionalProperties`: their extra keys shared, `dwac_grammar::open_keys`), as DeepSeek-R1
/// tool calls with its tokenizer: valid calls with extra keys, among them other tools' names, are
/// accepted, and the masks equal the reference mask at every step.
#[test]
fn open_tool_arguments_with_deepseek_tokens() {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(dwac_testdata::repo_root().join("schemas/large/tools-10.json")).unwrap(),
    )
    .unwrap();
    let tools: Vec<Value> = schema["anyOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            json!({"type": "function", "function": {"name": b["properties"]["name"]["const"],
                   "parameters": b["properties"]["arguments"]}})
        })
        .collect();
    let c = ToolCalling { tool_choice: ToolChoice::Required, ..ToolCalling::new(ToolFormat::DeepSeek) };
    let tag = structural_tag(&tools, &c).expect("tag");
    let g = parse_source(SourceKind::StructuralTag, &tag.to_string()).expect("parses");
    assert!(dwac_grammar::open_keys::share_open_keys(&g).is_some(), "open objects to share");
    let tok = Tokenizer::from_file(&tokenizer_json("deepseek-r1")).expect("deepseek-r1");
    let (e, stats) = compile_engine(&g, tok.vocab().clone()).expect("compiles");
    assert_eq!(stats.mask.map(|m| m.undecided_tokens), Some(0));
    let e = Arc::new(e);
    let call = |name: &Value, args: &str| {
        format!(
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>{}\n```json\n{args}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            name.as_str().unwrap()
        )
    };
    let mut names: Vec<&str> = Vec::new();
    for t in &tools {
        let props = t["function"]["parameters"]["properties"].as_object();
        names.extend(props.into_iter().flatten().map(|(k, _)| k.as_str()));
    }
    // The instances of the first tools (in the schema's key order), each with two extra keys
    // after its own: a name another tool has, and a new one.
    let instances =
        std::fs::read_to_string(dwac_testdata::repo_root().join("schemas/large/tools-10.instances.jsonl")).unwrap();
    let mut traces = Vec::new();
    for (i, line) in instances.lines().take(4).enumerate() {
        let d: Value = serde_json::from_str(line).unwrap();
        let t = tools.iter().find(|t| t["function"]["name"] == d["name"]).expect("its tool");
        let p = &t["function"]["parameters"];
        let args = dwac_testdata::json_dumps(&dwac_grammar::schema::order_instance(p, &d["arguments"]));
        let other = names.iter().find(|n| p["properties"].get(**n).is_none()).expect("a name of another tool");
        let args = format!("{}, \"{other}\": [1, {{\"a\": null}}], \"extra_{i}\": \"y\"}}", &args[..args.len() - 1]);
        let text = call(&d["name"], &args);
        let ids = tok.encode(&text).expect("encode");
        assert!(accepts(&e, &ids), "{text}");
        traces.push(ids);
        // A key of its own tool is never an extra key.
        let own = p["properties"].as_object().unwrap().keys().next().unwrap();
        let again = call(&d["name"], &format!("{}, \"{own}\": 1}}", &args[..args.len() - 1]));
        assert!(!accepts(&e, &tok.encode(&again).expect("encode")), "{again}");
    }
    let r = differential(&e, &traces, 2, &mut |_| {});
    assert!(r.steps_compared > 100, "{} steps", r.steps_compared);
    assert_eq!(r.mismatches, 0, "{:?}", r.examples);
    assert_eq!((r.rejected_traces, r.errors.len(), r.undecided + r.fallbacks), (0, 0, 0));
}
