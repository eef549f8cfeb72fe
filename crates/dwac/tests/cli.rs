//! The CLI contract (ARCHITECTURE.md "Crates"): JSON output fields, exit codes 0/1/2, clear errors.

use std::path::PathBuf;
use std::process::{Command, Output};

fn dwac(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dwac")).args(args).current_dir(root()).output().expect("run dwac")
}

fn root() -> PathBuf {
    dwac_testdata::repo_root()
}

/// A file of the shared data (`dwac-testdata`: missing, it fails the test), as an argument.
fn shared(p: PathBuf) -> String {
    p.display().to_string()
}

fn tmp_dir() -> PathBuf {
    // (Under the target directory cargo gives integration tests, not the system's: nothing is
    // left in /tmp.)
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("dwac-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn tmp(name: &str, body: &str) -> String {
    let p = tmp_dir().join(name);
    std::fs::write(&p, body).unwrap();
    p.display().to_string()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)))
}

#[test]
fn check_jsonl_counts_and_exit_codes() {
    let lines = [
        r#"{"text": "{\"a\": [1, 2.5e3, true, null]}", "valid": true}"#,
        r#"{"text": "{\"a\": [1, 2,]}", "valid": false}"#,
        r#"{"text": "{\"a\": 1", "valid": false}"#,
        r#"{"text": "\"caf\u00e9\"", "valid": true}"#,
    ];
    let f = tmp("ok.jsonl", &lines.join("\n"));
    let o = dwac(&["check", "grammars/json.lark", "--jsonl", &f, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    assert_eq!(v["inputs"], 4);
    assert_eq!(v["accepted"], 2);
    assert_eq!(v["rejected"], 2);
    assert_eq!(v["wrong"], 0);
    assert!(v["steps"].as_u64().unwrap() > 10);

    // A wrong label: exit 1, and the failure names the byte.
    let f = tmp("wrong.jsonl", r#"{"text": "[1, 2,]", "valid": true}"#);
    let o = dwac(&["check", "grammars/json.lark", "--jsonl", &f, "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    assert_eq!(v["wrong"], 1);
    assert!(v["failures"][0]["error"].as_str().unwrap().contains("at byte 6"), "{v}");

    // --reference compares the reference mask with commit at every step.
    let f = tmp("ref.jsonl", r#"{"text": "{\"k\": [0, -1]}", "valid": true}"#);
    let o = dwac(&["check", "grammars/json.lark", "--jsonl", &f, "--reference", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(json(&o)["mask_mismatches"], 0);
}

#[test]
fn bad_inputs_exit_2_with_clear_errors() {
    let g = tmp("bad.lark", "start: a\na: \"x\" )\n");
    let o = dwac(&["mask", &g]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("2:"), "no line:column in {err}");
    assert!(err.contains('^'), "no caret in {err}");

    let o = dwac(&["mask", "grammars/json.lark", "--tokenizer", "/nonexistent/tokenizer.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("tokenizer"));

    let o = dwac(&["mask", "grammars/json.lark", "--prefix", "{]"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("at byte 1"));

    let o = dwac(&["check", "grammars/json.lark"]);
    assert_eq!(o.status.code(), Some(2));

    let o = dwac(&["frobnicate"]);
    assert_eq!(o.status.code(), Some(2));

    let f = tmp("notjson.jsonl", "{\"text\": 1}\n");
    let o = dwac(&["check", "grammars/json.lark", "--jsonl", &f]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains(":1:"));
}

#[test]
fn mask_json_output() {
    let o = dwac(&["mask", "grammars/json.lark", "--prefix", "[1", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    assert_eq!(v["vocab_size"], 50257);
    assert_eq!(v["eos_allowed"], false);
    let toks: Vec<&str> = v["tokens"].as_array().unwrap().iter().map(|t| t["bytes"].as_str().unwrap()).collect();
    assert_eq!(toks.len(), v["allowed"].as_u64().unwrap() as usize);
    for t in ["]", ",", "0", "."] {
        assert!(toks.contains(&t), "{t} missing");
    }
    assert!(!toks.contains(&"["));

    let o = dwac(&["mask", "--regex", "[0-9]{3}-[0-9]{4}", "--prefix", "555-12", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    for t in v["tokens"].as_array().unwrap() {
        let b = t["bytes"].as_str().unwrap();
        assert!(b.bytes().all(|c| c.is_ascii_digit()) && b.len() <= 2, "{b}");
    }
}

#[test]
fn check_on_a_json_schema_and_refusals_exit_2() {
    let lines = [
        r#"{"text": "{\"name\": \"Ada\", \"age\": 36, \"role\": \"admin\"}", "valid": true}"#,
        r#"{"text": "{\"name\": \"Ada\", \"age\": 151}", "valid": false}"#,
        r#"{"text": "{\"name\": \"\", \"age\": 3}", "valid": false}"#,
        r#"{"text": "{\"age\": 3, \"name\": \"Ada\"}", "valid": false}"#,
        r#"{"text": "{\"name\": \"Ada\", \"age\": 3, \"extra\": 1}", "valid": false}"#,
    ];
    let f = tmp("person.jsonl", &lines.join("\n"));
    let o = dwac(&["check", "schemas/person.json", "--jsonl", &f, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    assert_eq!(
        (v["accepted"].as_u64(), v["rejected"].as_u64(), v["wrong"].as_u64()),
        (Some(1), Some(4), Some(0)),
        "{v}"
    );

    let s = tmp(
        "refused.json",
        r#"{"type": "object", "properties": {"a": {"if": {"multipleOf": 3}, "then": {"minimum": 1}}}}"#,
    );
    let o = dwac(&["check", &s, "--jsonl", &f]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("`if`") && err.contains("/properties/a"), "{err}");
    // --lenient drops it with a warning.
    let o = dwac(&["mask", &s, "--lenient", "--limit", "1"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stderr).contains("dropped"));
}

#[test]
fn longest_match_dead_ends_warn_and_an_empty_language_is_refused() {
    let g = tmp("deadend.lark", "start: pair | \"x\"\npair: \"(\" ID ID \")\"\nID: /[a-z]+/\n");
    let o = dwac(&["mask", &g, "--prefix", "x"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("warning: ") && err.contains("deadend.lark:2:7: dead end after `ID`"), "{err}");

    let g = tmp("empty.lark", "start: \"let\" ID\nID: /[a-z]+/\n");
    let o = dwac(&["mask", &g]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("empty.lark:1:8: no text is in this grammar's language"), "{err}");
    assert!(!err.contains("error: error"), "one error prefix: {err}");
}

/// A misspelled type is an error naming it and its pointer; a misspelled keyword compiles (an
/// annotation) with a warning, in the text output and listed in `--json`.
#[test]
fn unknown_type_names_are_refused_and_unknown_keywords_listed() {
    let s = tmp("typo-type.json", r#"{"type": "object", "properties": {"a": {"type": ["string", "nul"]}}}"#);
    let o = dwac(&["compile", &s, "-o", &tmp("typo-type.dwa", "")]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("`type` at /properties/a: unknown type name \"nul\" (did you mean \"null\"?)"), "{err}");

    let s = tmp("typo-kw.json", r#"{"type": "object", "propertie": {"a": {"type": "string"}}}"#);
    let o = dwac(&["compile", &s, "-o", &tmp("typo-kw.dwa", ""), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("warning: ") && err.contains("unknown keyword `propertie` at #"), "{err}");
    let v = json(&o);
    let w = v["warnings"].as_array().expect("warnings listed");
    assert_eq!(w.len(), 1, "{v}");
    assert!(w[0].as_str().unwrap().contains("did you mean `properties`?"), "{v}");
    // The same in a Lark grammar's `%json`, located at it.
    let g = tmp("typo-kw.lark", "start: \"x\" %json {\"type\": \"object\", \"propertie\": {}}\n");
    let o = dwac(&["compile", &g, "-o", &tmp("typo-kw-lark.dwa", ""), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    assert_eq!(v["warnings"].as_array().map(Vec::len), Some(1), "{v}");
    assert!(v["warnings"][0].as_str().unwrap().contains("1:12: `%json`: unknown keyword `propertie`"), "{v}");
}

#[test]
fn an_unsatisfiable_schema_is_refused_in_schema_terms() {
    let s = tmp(
        "unsat.json",
        r#"{"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"], "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}"#,
    );
    let o = dwac(&["mask", &s]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("unsat.json: no JSON value satisfies this schema"), "{err}");
}

#[test]
fn compile_and_bench_report_the_contract_fields() {
    let out = tmp_dir().join("json.dwa");
    let o = dwac(&["compile", "grammars/json.lark", "--json", "-o", &out.display().to_string()]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    for key in ["artifact", "bytes", "compile_ms", "peak_rss_mb", "dwa_states", "max_lookback", "undecided_tokens"] {
        assert!(v.get(key).is_some(), "compile --json lacks {key}: {v}");
    }
    assert_eq!(v["artifact"], out.display().to_string());
    assert_eq!(v["bytes"].as_u64(), Some(std::fs::metadata(&out).unwrap().len()));
    assert!(v["dwa_states"].as_u64().unwrap() > 10);
    assert!(v["max_lookback"].as_u64().is_some_and(|d| d >= 1));

    let f = tmp("bench.jsonl", "{\"text\": \"{\\\"a\\\": [1, 2]}\"}\n{\"text\": \"[true, {}]\"}\n");
    let o = dwac(&["bench", "grammars/json.lark", "--jsonl", &f, "--replays", "2", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    assert!(v["masks"].as_u64().unwrap() >= 10, "{v}");
    for key in ["mask_us", "commit_us", "mask_us_min_of_replays", "commit_us_min_of_replays"] {
        for p in ["p50", "p90", "p99", "p999", "max", "mean"] {
            assert!(v[key][p].as_f64().is_some(), "bench --json lacks {key}.{p}: {v}");
        }
    }
    assert!(v.get("open_us").is_some());
    // The slow paths are counted, not written as constants: none on this grammar.
    for key in ["mask_fallbacks", "masks_with_undecided", "undecided_tokens_committed"] {
        assert_eq!(v[key].as_u64(), Some(0), "bench --json {key}: {v}");
    }

    let o = dwac(&["mask", "grammars/json.lark", "--prefix", "[1", "--json"]);
    assert_eq!(json(&o)["source"], "dwa");
}

/// Compile to an artifact, then inspect, mask, check and bench on the artifact itself.
#[test]
fn artifacts_compile_inspect_and_serve_check_bench_mask() {
    let dir = tmp_dir().join("serve");
    let art = dir.join("person.dwa").display().to_string();
    let o = dwac(&["compile", "schemas/person.json", "-o", &art]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let o = dwac(&["inspect", &art, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    assert_eq!(v["format"], "4.0");
    assert_eq!(v["vocab_size"], 50257);
    // The big index columns fit in 16 bits here: written narrow.
    let narrow: Vec<&str> = v["sections"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["narrow"] == true)
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        narrow,
        [
            "lexer.trans",
            "lexer.next_plus_row",
            "dwa.edge_label",
            "dwa.edge_outcome",
            "dwa.outcome_target",
            "dwa.outcome_rho"
        ],
        "{v}"
    );
    assert_eq!(v["tokenizer"], "gpt2");
    assert!(v["dwa_states"].as_u64().unwrap() > 10 && v["sections"].as_array().unwrap().len() > 30, "{v}");
    // The same masks from the artifact as from the source.
    let from_src = json(&dwac(&["mask", "schemas/person.json", "--prefix", "{\"name\": \"Al", "--json"]));
    let from_art = json(&dwac(&["mask", &art, "--prefix", "{\"name\": \"Al", "--json"]));
    assert_eq!(from_src["tokens"], from_art["tokens"]);
    assert!(from_art["allowed"].as_u64().unwrap() > 100);
    let f = tmp("person.jsonl", "{\"text\": \"{\\\"name\\\": \\\"Al\\\", \\\"age\\\": 30}\", \"valid\": true}\n{\"text\": \"{\\\"age\\\": 30}\", \"valid\": false}\n");
    let o = dwac(&["check", &art, "--jsonl", &f, "--reference", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    assert_eq!(
        (v["accepted"].as_u64(), v["rejected"].as_u64(), v["mask_mismatches"].as_u64()),
        (Some(1), Some(1), Some(0)),
        "{v}"
    );
    assert!(v["open_us"].as_f64().is_some(), "{v}");
    let o = dwac(&["bench", &art, "--jsonl", &f, "--replays", "1", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(json(&o)["open_us"].as_f64().is_some_and(|u| u > 0.0));
    // The zstd form serves the same masks.
    let z = dir.join("person.dwa.zst").display().to_string();
    let o = dwac(&["compile", "schemas/person.json", "--zstd", "-o", &z, "--json"]);
    let v = json(&o);
    assert!(v["bytes"].as_u64().unwrap() < v["raw_bytes"].as_u64().unwrap());
    let from_z = json(&dwac(&["mask", &z, "--prefix", "{\"name\": \"Al", "--json"]));
    assert_eq!(from_src["tokens"], from_z["tokens"]);
    // Without its vocabulary, the zstd form is a fraction of it, and serves the same masks
    // with its tokenizer (the embedded GPT-2 one here); without a tokenizer it is refused.
    let zv = dir.join("person-v.dwa.zst").display().to_string();
    let v = json(&dwac(&["compile", "schemas/person.json", "--zstd", "--without-vocabulary", "-o", &zv, "--json"]));
    let zbytes = std::fs::metadata(&z).unwrap().len();
    assert!(v["without_vocabulary"] == true && v["bytes"].as_u64().unwrap() * 2 < zbytes, "{v} vs {zbytes}");
    let gpt2 = shared(dwac_testdata::tokenizer_json("gpt2"));
    let from_zv = json(&dwac(&["mask", &zv, "--tokenizer", &gpt2, "--prefix", "{\"name\": \"Al", "--json"]));
    assert_eq!(from_src["tokens"], from_zv["tokens"]);
    let o = dwac(&["inspect", &zv]);
    assert_ne!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stderr).contains("leaves the vocabulary out"), "{o:?}");
    let o = dwac(&["inspect", &zv, "--tokenizer", &shared(dwac_testdata::tokenizer_json("phi-3.5-mini"))]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not the artifact's"), "{o:?}");
}

/// Several inputs compile in parallel into a directory; a failing input is named, the others
/// are still written, and the exit code is 1.
#[test]
fn batch_compile_names_each_failure_and_exits_1() {
    let dir = tmp_dir().join("batch");
    let d = dir.display().to_string();
    let o = dwac(&[
        "compile",
        "schemas/person.json",
        "grammars/json.lark",
        "crates/dwac/tests/fixtures/malformed.lark",
        "crates/dwac/tests/fixtures/unsupported.json",
        "-o",
        &d,
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<serde_json::Value> =
        String::from_utf8_lossy(&o.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines.iter().filter(|v| v["ok"] == true).count(), 2);
    assert_eq!(lines[2]["ok"], false);
    assert!(lines[2]["error"].as_str().unwrap().contains("malformed.lark:3:"), "{}", lines[2]);
    assert!(lines[3]["error"].as_str().unwrap().contains("`if`"), "{}", lines[3]);
    assert!(dir.join("person.dwa").exists() && dir.join("json.dwa").exists());
    assert!(!dir.join("malformed.dwa").exists());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("compiled 2 of 4 inputs") && err.contains("2 failed"), "{err}");
}

/// `--max-memory-mb` in a batch is each input's own: the one input whose compile allocates past
/// it is named and stopped, the others are written (the process's resident size, which holds
/// every input's memory and the tokenizer's, decides nothing).
#[test]
fn batch_memory_budget_stops_only_the_input_over_it() {
    let dir = tmp_dir().join("budget");
    let d = dir.display().to_string();
    // (regex.lark allocates some 45 MiB before its first lexer state; json.lark a few.)
    let heavy = shared(dwac_testdata::grammars_dir().join("ligurio-lark-grammars/lark_grammars/grammars/regex.lark"));
    let o =
        dwac(&["compile", &heavy, "grammars/json.lark", "--jobs", "1", "--max-memory-mb", "20", "-o", &d, "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<serde_json::Value> =
        String::from_utf8_lossy(&o.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    let err = lines[0]["error"].as_str().unwrap_or_default();
    assert!(err.contains("regex.lark") && err.contains("memory budget of 20 MiB"), "{}", lines[0]);
    assert_eq!(lines[1]["ok"], true, "{}", lines[1]);
    assert!(dir.join("json.dwa").exists() && !dir.join("regex.dwa").exists());
    // With room for it, the same input compiles.
    let o = dwac(&["compile", &heavy, "grammars/json.lark", "--jobs", "1", "--max-memory-mb", "400", "-o", &d]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(dir.join("regex.dwa").exists());
}

/// `--separators ITEM KEY`: exactly those between tokens, no other whitespace; a separator that
/// is not its punctuation with JSON whitespace around it is refused.
#[test]
fn separators_are_the_only_whitespace() {
    let schema =
        tmp("sep.json", r#"{"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}}"#);
    let lines = [
        r#"{"text": "{\"a\": [1, 2]}", "valid": true}"#,
        r#"{"text": "{\"a\":[1,2]}", "valid": false}"#,
        r#"{"text": "{ \"a\": [1, 2]}", "valid": false}"#,
        r#"{"text": "{\"a\" : [1, 2]}", "valid": false}"#,
    ];
    let f = tmp("sep.jsonl", &lines.join("\n"));
    let o = dwac(&["check", &schema, "--separators", ", ", ": ", "--jsonl", &f, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    assert_eq!((v["accepted"].as_u64(), v["wrong"].as_u64()), (Some(1), Some(0)), "{v}");
    // The compact layout through separators without spaces.
    let f = tmp("sep2.jsonl", r#"{"text": "{\"a\":[1,2]}", "valid": true}"#);
    let o = dwac(&["check", &schema, "--separators", ",", ":", "--jsonl", &f, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let o =
        dwac(&["compile", &schema, "--separators", ";", ": ", "-o", &tmp_dir().join("sep.dwa").display().to_string()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("separator \";\""), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The command and its outcome, with the shared data folder (wherever `DWAC_SHARED_DATA` puts
/// it) written `<shared data>`.
fn snapshot_error(args: &[&str]) -> String {
    let o = dwac(args);
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(!stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"), "{stderr}");
    let s = format!("$ dwac {}\nexit {}\n{}", args.join(" "), o.status.code().unwrap_or(-1), stderr);
    s.replace(&dwac_testdata::shared_data().display().to_string(), "<shared data>")
}

/// Every class of CLI error: one clear message, exit 2, never a panic.
#[test]
fn error_messages_of_every_class() {
    let fx = "crates/dwac/tests/fixtures";
    let cases: Vec<Vec<String>> = vec![
        vec!["mask".into(), "nonexistent.lark".into()],
        vec!["mask".into(), format!("{fx}/notes.txt")],
        vec!["mask".into(), format!("{fx}/malformed.lark")],
        vec!["mask".into(), format!("{fx}/unsupported.json")],
        vec!["mask".into(), format!("{fx}/unsatisfiable.json")],
        vec!["mask".into(), "grammars/json.lark".into(), "--tokenizer".into(), "/nonexistent/tokenizer.json".into()],
        vec!["mask".into(), "grammars/json.lark".into(), "--tokenizer".into(), format!("{fx}/truncated.gguf")],
        vec!["mask".into(), "grammars/json.lark".into(), "--prefix".into(), "{]".into()],
        vec!["inspect".into(), format!("{fx}/corrupt.dwa")],
        vec!["inspect".into(), format!("{fx}/truncated.dwa")],
        vec!["inspect".into(), "nonexistent.dwa".into()],
        vec![
            "mask".into(),
            "tests/data/golden/format-4.0.dwa".into(),
            "--tokenizer".into(),
            shared(dwac_testdata::tokenizer_json("qwen3")),
        ],
        vec!["check".into(), "tests/data/golden/format-4.0.dwa".into(), "--text".into(), format!("{fx}/notes.txt")],
        vec!["compile".into(), "tests/data/golden/format-4.0.dwa".into(), "-o".into(), "/tmp/x.dwa".into()],
        vec!["compile".into()],
        vec!["frobnicate".into()],
    ];
    let mut out = String::new();
    for c in &cases {
        let args: Vec<&str> = c.iter().map(String::as_str).collect();
        let s = snapshot_error(&args);
        assert!(s.contains("\nexit 2\n"), "{s}");
        out.push_str(&s);
        out.push('\n');
    }
    insta::assert_snapshot!(out);
}

/// `--tokenizer model.gguf`: the vocabulary inside a GGUF model file. GPT-2's GGUF and the
/// embedded GPT-2 tokenizer are one vocabulary, so the artifact serves either.
#[test]
fn a_gguf_vocabulary_compiles_and_its_artifact_serves_the_same_tokenizer_json() {
    let gguf = dwac_testdata::gguf_vocab("gpt-2");
    let out = tmp_dir().join("person-gguf.dwa").display().to_string();
    let o = dwac(&["compile", "schemas/person.json", "--tokenizer", &gguf.display().to_string(), "-o", &out, "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rec = json(&o);
    assert_eq!(rec["tokenizer"], "ggml-vocab-gpt-2", "{rec}");
    // Opened with the embedded GPT-2 tokenizer.json: same fingerprint, accepted.
    let o = dwac(&["mask", &out, "--prefix", "{\"name\": \"Ada\"", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(json(&o)["allowed"].as_u64().unwrap() > 0);
}

#[test]
fn inspect_output() {
    let o = dwac(&["inspect", "tests/data/golden/format-4.0.dwa"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    insta::assert_snapshot!("inspect_human", String::from_utf8_lossy(&o.stdout));
    let o = dwac(&["inspect", "tests/data/golden/format-4.0.dwa", "--json"]);
    insta::assert_snapshot!("inspect_json", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn tools_compile_check_and_print_the_structural_tag() {
    let tools = r#"[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
        "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}}},
        {"type": "function", "function": {"name": "get_time"}}]"#;
    let list = tmp("tools.json", tools);
    let request = tmp("request.json", &format!(r#"{{"tools": {tools}, "tool_choice": "none"}}"#));
    let call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
    let line = |text: &str, valid: bool| serde_json::json!({"text": text, "valid": valid}).to_string();

    // `dwac tools` prints the tag: a named choice keeps only that function.
    let o = dwac(&["tools", &list, "--format", "qwen3", "--tool-choice", "get_time"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let tag = json(&o);
    assert_eq!(tag["type"], "structural_tag");
    assert!(tag.to_string().contains("get_time") && !tag.to_string().contains("get_weather"), "{tag}");

    // Compiled in memory with --tools: `required` takes calls only.
    let texts =
        [line(call, true), line("It is sunny.", false), line(&call.replace("Oslo\"", "Oslo\", \"x\": 1"), false)];
    let f = tmp("turns.jsonl", &texts.join("\n"));
    let o = dwac(&["check", &list, "--tools", "hermes", "--tool-choice", "required", "--jsonl", &f, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!((json(&o)["accepted"].as_u64(), json(&o)["wrong"].as_u64()), (Some(1), Some(0)));

    // Without the flag, the request's own `tool_choice` (none): text only.
    let texts = [line(call, false), line("It is sunny.", true)];
    let f = tmp("none.jsonl", &texts.join("\n"));
    let o = dwac(&["check", &request, "--tools", "qwen3", "--jsonl", &f, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(json(&o)["wrong"], 0);

    // A bad tool is refused by its JSON pointer (exit 2); --tool-choice needs --tools.
    let bad = tmp("bad-tools.json", r#"[{"type": "function", "function": {"name": "two words"}}]"#);
    let o = dwac(&["compile", &bad, "--tools", "qwen3", "-o", &tmp_dir().join("bad.dwa").display().to_string()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("/tools/0/function/name"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = dwac(&["check", &list, "--tool-choice", "auto", "--jsonl", &f]);
    assert_eq!(o.status.code(), Some(2));
}

/// `--cache-dir` writes each artifact under its cache key: the same schema re-indented has the
/// same key (and file), other options another; the file opens as any artifact; `-o` with it is
/// a usage error.
#[test]
fn cache_dir_writes_artifacts_under_their_key() {
    let dir = tmp_dir().join("cache");
    let d = dir.display().to_string();
    let schema = r#"{"type": "object", "properties": {"a": {"type": "integer"}}}"#;
    let compact = tmp("keyed.json", schema);
    let spaced =
        tmp("keyed2.json", "{\n  \"type\" : \"object\",\n  \"properties\": {\"a\": {\"type\": \"integer\"}}\n}\n");
    let key = |args: &[&str]| {
        let o = dwac(args);
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        json(&o)["cache_key"].as_str().expect("a cache_key").to_string()
    };
    let k1 = key(&["compile", &compact, "--cache-dir", &d, "--json"]);
    let k2 = key(&["compile", &spaced, "--cache-dir", &d, "--json"]);
    assert_eq!(k1, k2, "spacing changed the key");
    assert_eq!(k1.len(), 64);
    let k3 = key(&["compile", &compact, "--cache-dir", &d, "--compact", "--json"]);
    assert_ne!(k1, k3, "options are part of the key");
    let file = dir.join(format!("{k1}.dwa"));
    let o = dwac(&["inspect", &file.display().to_string(), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let o = dwac(&["compile", &compact, "--cache-dir", &d, "-o", "x.dwa"]);
    assert_eq!(o.status.code(), Some(2));
}
