//! OpenAI-style tool calling → a structural tag ([`crate::structural`]) in a model family's own
//! wire format.
//!
//! Input: a `tools` list (`[{"type": "function", "function": {"name", "parameters", …}}]`) or a
//! chat-completion request holding one (`tools`, and optionally `tool_choice` and
//! `parallel_tool_calls`). Each call's arguments are compiled from the tool's `parameters` as
//! `dwac compile schema.json` would (a tool without `parameters` takes `{}` only).
//!
//! | format | an assistant turn | from |
//! |---|---|---|
//! | [`ToolFormat::Hermes`] | text, then calls `<tool_call>\n{"name": "N", "arguments": A}\n</tool_call>` separated by `\n` | qwen3's (and Qwen2.5's) chat template |
//! | [`ToolFormat::DeepSeek`] | text, then `<｜tool▁calls▁begin｜>` calls separated by `\n` `<｜tool▁calls▁end｜>`, a call `<｜tool▁call▁begin｜>function<｜tool▁sep｜>N\n```json\nA\n```<｜tool▁call▁end｜>` | DeepSeek-R1's (V3's) chat template |
//! | [`ToolFormat::Llama3`] | text, or calls `{"name": "N", "parameters": A}` separated by `; `, after the special token `<|python_tag|>` or not | Llama 3.1–3.3 JSON tool calling: the Hugging Face chat template writes a call as that object alone, Meta's reference code and vLLM's `llama3_json` parser also take it after `<|python_tag|>` |
//! | [`ToolFormat::SmolLM2`] | text, or `<tool_call>[` calls `{"name": "N", "arguments": A}` separated by `, ` `]</tool_call>` | SmolLM2-Instruct's tool-calling prompt |
//!
//! `tool_choice`: `auto` (text and calls as the format allows them), `none` (text only, which
//! never holds the format's call marker, so a server's parser finds no call), `required` (one
//! call or more, no text), or a function (as `required`, only that function).
//! `parallel_tool_calls: false` allows at most one call. `reasoning`: the turn begins with a
//! reasoning block `<think>…</think>\n\n` (any text; qwen3's and DeepSeek-R1's tokens, plain text
//! for the others).
//!
//! The markers are text, so each matches both the model's single added token (qwen3's
//! `<tool_call>`, DeepSeek's `<｜tool▁call▁begin｜>`, …) and its spelling in ordinary tokens, as a
//! server's tool parser (which reads text) does; Llama 3's `<|python_tag|>` is a special token
//! with no text, so it is a token reference (the compile fails, naming it, for a tokenizer
//! without it), and Llama 3's text never holds `{"name": ` (the start of a call: a call the
//! grammar did not check would otherwise pass as text).

use serde_json::{json, Value};

use crate::GrammarError;

/// A model family's tool-call wire format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolFormat {
    /// Hermes / Qwen: `<tool_call>` JSON `</tool_call>`.
    Hermes,
    /// DeepSeek-V3/R1: its `<｜tool▁…｜>` markers, arguments in a json code fence.
    DeepSeek,
    /// Llama 3.x: `{"name", "parameters"}` objects, after `<|python_tag|>` or not.
    Llama3,
    /// SmolLM2: `<tool_call>[…]</tool_call>`, a JSON list of calls.
    SmolLM2,
}

impl ToolFormat {
    /// The names [`ToolFormat::from_name`] takes.
    pub const NAMES: &'static [&'static str] =
        &["hermes", "qwen", "qwen2.5", "qwen3", "deepseek", "deepseek-v3", "deepseek-r1", "llama3", "smollm2"];

    /// The format by a family's name (see [`ToolFormat::NAMES`]).
    pub fn from_name(name: &str) -> Option<ToolFormat> {
        Some(match name.to_ascii_lowercase().as_str() {
            "hermes" | "qwen" | "qwen2.5" | "qwen3" => ToolFormat::Hermes,
            "deepseek" | "deepseek-v3" | "deepseek-r1" => ToolFormat::DeepSeek,
            "llama3" | "llama3.1" | "llama3.2" | "llama3.3" => ToolFormat::Llama3,
            "smollm2" => ToolFormat::SmolLM2,
            _ => return None,
        })
    }

    /// The text that starts the calls (which the turn's text never holds).
    pub fn call_marker(self) -> &'static str {
        match self {
            ToolFormat::Hermes | ToolFormat::SmolLM2 => "<tool_call>",
            ToolFormat::DeepSeek => "<｜tool▁calls▁begin｜>",
            ToolFormat::Llama3 => "{\"name\": ",
        }
    }
}

/// OpenAI's `tool_choice`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolChoice {
    /// Text, calls, or both, as the format allows.
    Auto,
    /// Text only.
    None,
    /// One call or more, no text.
    Required,
    /// One call or more of this function only, no text.
    Function(String),
}

impl ToolChoice {
    /// `"auto"`, `"none"`, `"required"`, `{"type": "function", "function": {"name": N}}`, or (a
    /// shorthand) any other string: that function's name.
    pub fn from_json(v: &Value) -> Result<ToolChoice, GrammarError> {
        match v {
            Value::String(s) => Ok(match s.as_str() {
                "auto" => ToolChoice::Auto,
                "none" => ToolChoice::None,
                "required" => ToolChoice::Required,
                name => ToolChoice::Function(name.to_string()),
            }),
            Value::Object(_) => v
                .pointer("/function/name")
                .and_then(Value::as_str)
                .map(|n| ToolChoice::Function(n.to_string()))
                .ok_or_else(|| {
                    err(
                        "/tool_choice",
                        "expected `auto`, `none`, `required` or {\"type\": \"function\", \"function\": {\"name\": …}}",
                    )
                }),
            _ => Err(err("/tool_choice", "expected a string or an object")),
        }
    }
}

/// How the turn is built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCalling {
    /// The model family's wire format.
    pub format: ToolFormat,
    /// Whether the turn may, must or must not hold calls (and to which function).
    pub tool_choice: ToolChoice,
    /// More than one call in a turn.
    pub parallel_tool_calls: bool,
    /// The turn begins with a `<think>…</think>` block.
    pub reasoning: bool,
    /// Whitespace in the arguments: only around punctuation, at most this many characters on
    /// each side (`None`: any JSON whitespace between tokens).
    pub max_whitespace: Option<u32>,
}

impl ToolCalling {
    /// `auto`, parallel calls, no reasoning block, JSON whitespace.
    pub fn new(format: ToolFormat) -> ToolCalling {
        ToolCalling {
            format,
            tool_choice: ToolChoice::Auto,
            parallel_tool_calls: true,
            reasoning: false,
            max_whitespace: None,
        }
    }
}

/// A request's tool-calling fields.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// The `tools` list (`{"type": "function", "function": {…}}` objects), as given.
    pub tools: Vec<Value>,
    /// `None` when the request does not say.
    pub tool_choice: Option<ToolChoice>,
    /// `None` when the request does not say.
    pub parallel_tool_calls: Option<bool>,
}

/// The tool-calling fields of a bare tools list or of a request object.
pub fn request(v: &Value) -> Result<Request, GrammarError> {
    match v {
        Value::Array(tools) => Ok(Request { tools: tools.clone(), tool_choice: None, parallel_tool_calls: None }),
        Value::Object(o) => {
            let tools = o
                .get("tools")
                .and_then(Value::as_array)
                .ok_or_else(|| err("/tools", "a request needs a `tools` list"))?
                .clone();
            let tool_choice = o.get("tool_choice").filter(|c| !c.is_null()).map(ToolChoice::from_json).transpose()?;
            let parallel_tool_calls = match o.get("parallel_tool_calls") {
                None | Some(Value::Null) => None,
                Some(Value::Bool(b)) => Some(*b),
                Some(_) => return Err(err("/parallel_tool_calls", "expected true or false")),
            };
            Ok(Request { tools, tool_choice, parallel_tool_calls })
        }
        _ => Err(err("", "expected a `tools` list or a request object with `tools`")),
    }
}

/// A format's calls: each `begin(name) arguments end`, separated by `sep`, the list between
/// `open` and `close`.
struct Wire {
    begin: fn(&str) -> String,
    end: &'static str,
    sep: &'static str,
    open: Option<Value>,
    close: Option<Value>,
}

impl ToolFormat {
    fn wire(self) -> Wire {
        match self {
            ToolFormat::Hermes => Wire {
                begin: |n| format!("<tool_call>\n{{\"name\": {}, \"arguments\": ", Value::from(n)),
                end: "}\n</tool_call>",
                sep: "\n",
                open: None,
                close: None,
            },
            ToolFormat::DeepSeek => Wire {
                begin: |n| format!("<｜tool▁call▁begin｜>function<｜tool▁sep｜>{n}\n```json\n"),
                end: "\n```<｜tool▁call▁end｜>",
                sep: "\n",
                open: Some(lit("<｜tool▁calls▁begin｜>")),
                close: Some(lit("<｜tool▁calls▁end｜>")),
            },
            ToolFormat::Llama3 => Wire {
                begin: |n| format!("{{\"name\": {}, \"parameters\": ", Value::from(n)),
                end: "}",
                sep: "; ",
                open: Some(json!({"type": "optional", "content": {"type": "token", "token": "<|python_tag|>"}})),
                close: None,
            },
            ToolFormat::SmolLM2 => Wire {
                begin: |n| format!("{{\"name\": {}, \"arguments\": ", Value::from(n)),
                end: "}",
                sep: ", ",
                open: Some(lit("<tool_call>[")),
                close: Some(lit("]</tool_call>")),
            },
        }
    }
}

fn err(pointer: &str, msg: impl std::fmt::Display) -> GrammarError {
    let at = if pointer.is_empty() { "#" } else { pointer };
    GrammarError::global(format!("tools at {at}: {msg}"))
}

/// One tool: its name and its arguments' schema.
fn tool(v: &Value, p: &str) -> Result<(String, Value), GrammarError> {
    if v.get("type").is_some_and(|t| t != "function") {
        return Err(err(&format!("{p}/type"), format!("tool type {} is not supported (only `function`)", v["type"])));
    }
    // `{"type": "function", "function": {...}}`, or the flat form some servers accept.
    let (f, fp) = match v.get("function") {
        Some(f) => (f, format!("{p}/function")),
        None => (v, p.to_string()),
    };
    let name = f.get("name").and_then(Value::as_str).ok_or_else(|| err(&fp, "a function needs a string `name`"))?;
    // OpenAI's rule, plus `.`: the name is written into the output as is (DeepSeek's format
    // does not quote it).
    if name.is_empty() || name.len() > 64 || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b)) {
        return Err(err(
            &format!("{fp}/name"),
            format!("{name:?} is not a function name (1 to 64 of a-z A-Z 0-9 _ - .)"),
        ));
    }
    let params = match f.get("parameters") {
        None | Some(Value::Null) => json!({"type": "object", "properties": {}, "additionalProperties": false}),
        Some(s @ (Value::Object(_) | Value::Bool(_))) => s.clone(),
        Some(_) => return Err(err(&format!("{fp}/parameters"), "expected a JSON Schema")),
    };
    Ok((name.to_string(), params))
}

fn lit(s: &str) -> Value {
    json!({"type": "const_string", "value": s})
}

/// The structural tag of a turn with `tools` (an OpenAI `tools` list) as `c` says.
pub fn structural_tag(tools: &[Value], c: &ToolCalling) -> Result<Value, GrammarError> {
    let mut all = Vec::new();
    for (i, t) in tools.iter().enumerate() {
        let (name, params) = tool(t, &format!("/tools/{i}"))?;
        if all.iter().any(|(n, _): &(String, Value)| *n == name) {
            return Err(err(&format!("/tools/{i}"), format!("two tools are named {name:?}")));
        }
        all.push((name, params));
    }
    let chosen: Vec<&(String, Value)> = match &c.tool_choice {
        ToolChoice::Function(f) => {
            let t = all
                .iter()
                .find(|(n, _)| n == f)
                .ok_or_else(|| err("/tool_choice", format!("names function {f:?}, which is not among the tools")))?;
            vec![t]
        }
        ToolChoice::None => Vec::new(),
        ToolChoice::Auto | ToolChoice::Required => all.iter().collect(),
    };
    let calls_needed = matches!(c.tool_choice, ToolChoice::Required | ToolChoice::Function(_));
    if calls_needed && chosen.is_empty() {
        return Err(err("/tools", "`tool_choice` requires a call, but there are no tools"));
    }
    let schema = |s: &Value| {
        let mut f = json!({"type": "json_schema", "json_schema": s});
        if let Some(n) = c.max_whitespace {
            f["max_whitespace_cnt"] = json!(n);
        }
        f
    };
    let marker = c.format.call_marker();
    let text = json!({"type": "any_text", "excludes": [marker]});
    // The calls (one or more), or None when no call may be made.
    let calls = if chosen.is_empty() {
        None
    } else {
        let w = c.format.wire();
        let tags: Vec<Value> = chosen
            .iter()
            .map(|(n, s)| json!({"type": "tag", "begin": (w.begin)(n), "content": schema(s), "end": w.end}))
            .collect();
        let list = json!({"type": "tags_with_separator", "tags": tags, "separator": w.sep,
                          "at_least_one": true, "stop_after_first": !c.parallel_tool_calls});
        Some(match (w.open, w.close) {
            (None, None) => list,
            (open, close) => {
                json!({"type": "sequence", "elements": open.into_iter().chain([list]).chain(close).collect::<Vec<_>>()})
            }
        })
    };
    let body = match (&c.tool_choice, calls) {
        (ToolChoice::None, _) | (_, None) => text,
        (ToolChoice::Auto, Some(calls)) => match c.format {
            // The template writes the text, then the calls.
            ToolFormat::Hermes | ToolFormat::DeepSeek => {
                json!({"type": "sequence", "elements": [text, {"type": "optional", "content": calls}]})
            }
            // Text or calls.
            ToolFormat::Llama3 | ToolFormat::SmolLM2 => json!({"type": "or", "elements": [text, calls]}),
        },
        (_, Some(calls)) => calls,
    };
    let format = if c.reasoning {
        json!({"type": "sequence", "elements": [
            {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"},
            lit("\n\n"), body]})
    } else {
        body
    };
    Ok(json!({"type": "structural_tag", "format": format}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<Value> {
        vec![
            json!({"type": "function", "function": {"name": "get_weather", "parameters":
                {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}),
            json!({"type": "function", "function": {"name": "get_time"}}),
        ]
    }

    #[test]
    fn every_format_and_choice_compiles_to_a_grammar() {
        for f in ToolFormat::NAMES {
            let format = ToolFormat::from_name(f).expect("a name");
            for choice in
                [ToolChoice::Auto, ToolChoice::None, ToolChoice::Required, ToolChoice::Function("get_time".into())]
            {
                for (parallel, reasoning) in [(true, false), (false, true)] {
                    let c = ToolCalling {
                        format,
                        tool_choice: choice.clone(),
                        parallel_tool_calls: parallel,
                        reasoning,
                        max_whitespace: Some(1),
                    };
                    let tag = structural_tag(&tools(), &c).expect("a tag");
                    crate::structural::compile(&tag).unwrap_or_else(|e| panic!("{f} {choice:?}: {e}"));
                    let s = tag.to_string();
                    assert_eq!(
                        s.contains("get_weather"),
                        matches!(choice, ToolChoice::Auto | ToolChoice::Required),
                        "{s}"
                    );
                    assert_eq!(s.contains("<think>"), reasoning);
                }
            }
        }
    }

    #[test]
    fn bad_requests_are_refused_by_pointer() {
        let c = ToolCalling::new(ToolFormat::Hermes);
        let e = structural_tag(&[json!({"type": "function", "function": {"name": "a b"}})], &c).unwrap_err();
        assert!(e.to_string().contains("/tools/0/function/name"), "{e}");
        let e = structural_tag(&[json!({"type": "retrieval"})], &c).unwrap_err();
        assert!(e.to_string().contains("/tools/0/type"), "{e}");
        let two = [tools()[1].clone(), tools()[1].clone()];
        assert!(structural_tag(&two, &c).unwrap_err().to_string().contains("two tools"));
        let named = ToolCalling { tool_choice: ToolChoice::Function("nope".into()), ..c.clone() };
        assert!(structural_tag(&tools(), &named).unwrap_err().to_string().contains("\"nope\""));
        let required = ToolCalling { tool_choice: ToolChoice::Required, ..c };
        assert!(structural_tag(&[], &required).is_err());
        let r =
            request(&json!({"tools": tools(), "tool_choice": {"type": "function", "function": {"name": "get_time"}}, "parallel_tool_calls": false}))
                .expect("a request");
        assert_eq!(
            (r.tools.len(), r.tool_choice, r.parallel_tool_calls),
            (2, Some(ToolChoice::Function("get_time".into())), Some(false))
        );
        assert!(request(&json!({"tool_choice": "auto"})).is_err());
    }
}
