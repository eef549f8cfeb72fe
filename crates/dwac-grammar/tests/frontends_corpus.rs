//! Load every `.lark` and `.gbnf` file of the shared grammar corpus and record which load.

use dwac_grammar::{gbnf, lark, GrammarError, LarkOptions};
use std::path::{Path, PathBuf};

fn corpus_dir() -> PathBuf {
    dwac_testdata::grammars_dir()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let rd = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out);
        } else if matches!(p.extension().and_then(|e| e.to_str()), Some("lark" | "gbnf")) {
            out.push(p);
        }
    }
}

/// The first rule defined in a Lark file (Lark's fallback start when there is no `start`).
fn first_rule(src: &str) -> Option<String> {
    src.lines().find_map(|l| {
        let l = l.trim_start_matches(['?', '!']);
        let name: String =
            l.chars().take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_').collect();
        let rest = l[name.len()..].trim_start();
        let is_rule = name.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
            && (rest.starts_with(':') || rest.starts_with('.') || rest.starts_with('{'));
        is_rule.then_some(name)
    })
}

enum Outcome {
    Loaded { note: String },
    Failed(GrammarError),
}

fn load(path: &Path, src: &str) -> Outcome {
    let is_gbnf = path.extension().and_then(|e| e.to_str()) == Some("gbnf");
    let r = if is_gbnf { gbnf::parse(src) } else { lark::parse(src) };
    let summary = |g: &dwac_grammar::Grammar| {
        format!("{} terminals, {} nonterminals, {} rules", g.terminals.len(), g.nonterminals.len(), g.rules.len())
    };
    match r {
        Ok(g) => Outcome::Loaded { note: summary(&g) },
        Err(e) if !is_gbnf && e.message.contains("no `start` rule") => {
            // Like Lark, fall back to the first rule when asked for it explicitly.
            match first_rule(src) {
                Some(start) => match lark::parse_with_options(
                    src,
                    &LarkOptions { start: Some(start.clone()), ..Default::default() },
                ) {
                    Ok(g) => Outcome::Loaded { note: format!("start = `{start}`; {}", summary(&g)) },
                    Err(e) => Outcome::Failed(e),
                },
                None => Outcome::Failed(e),
            }
        }
        Err(e) => Outcome::Failed(e),
    }
}

#[test]
fn corpus_load_table() {
    let dir = corpus_dir();
    let mut files = Vec::new();
    walk(&dir, &mut files);
    assert!(!files.is_empty(), "no grammar files under {}", dir.display());
    let mut loaded = Vec::new();
    let mut table = String::new();
    for path in &files {
        let rel = path.strip_prefix(&dir).unwrap_or(path).display().to_string();
        let src = std::fs::read_to_string(path).expect("grammar files are UTF-8");
        match load(path, &src) {
            Outcome::Loaded { note } => {
                table.push_str(&format!("LOADS  {rel:<80} {note}\n"));
                loaded.push(rel);
            }
            Outcome::Failed(e) => {
                let first = e.message.lines().next().unwrap_or("");
                table.push_str(&format!("FAILS  {rel:<80} {}:{} {first}\n", e.line, e.column));
                // A failure must say where or name the feature.
                let names_feature = ["not supported", "unsupported", "no `start` rule", "cannot import"]
                    .iter()
                    .any(|k| e.message.contains(k));
                assert!(e.line > 0 || names_feature, "{rel}: unhelpful error: {e}");
            }
        }
    }
    println!("{table}");
    let must_load = [
        "llama.cpp/json.gbnf",
        "llama.cpp/arithmetic.gbnf",
        "llama.cpp/list.gbnf",
        "llama.cpp/json_arr.gbnf",
        "llama.cpp/chess.gbnf",
        "llama.cpp/c.gbnf",
        "llama.cpp/english.gbnf",
        "llama.cpp/japanese.gbnf",
        "llguidance/sample_parser/data/from-llama.cpp/vllm-sql.gbnf",
        "lark/examples/standalone/json.lark",
        "lark/examples/composition/json.lark",
        "lark/examples/composition/csv.lark",
        "outlines/src/outlines/grammars/arithmetic.lark",
        "outlines/src/outlines/grammars/json.lark",
        "llguidance/sample_parser/data/lark.lark",
        "ligurio-lark-grammars/lark_grammars/grammars/lua.lark",
    ];
    for m in must_load {
        assert!(loaded.iter().any(|l| l == m), "{m} should load; table:\n{table}");
    }
}

#[test]
fn repo_json_lark_loads() {
    let path = dwac_testdata::repo_root().join("grammars/json.lark");
    let src = std::fs::read_to_string(&path).expect("grammars/json.lark exists");
    let g = lark::parse(&src).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(g.nonterminals[g.start as usize].name, "start");
    let string = g.terminals.iter().find(|t| t.name == "STRING").expect("STRING terminal");
    let number = g.terminals.iter().find(|t| t.name == "NUMBER").expect("NUMBER terminal");
    let ws = g.terminals.iter().find(|t| t.name == "WS").expect("WS terminal");
    assert!(ws.ignored);
    let whole = |re: &str| regex::Regex::new(&format!("^(?:{re})$")).expect("valid regex");
    let (string, number) = (whole(&string.regex), whole(&number.regex));
    for ok in [r#""""#, r#""abc""#, r#""\"\\\/\b\f\n\r\t""#, r#""\u00e9\uD834""#, "\"é€😀\x7f\"", r#""a'b""#] {
        assert!(string.is_match(ok), "STRING should match {ok:?}");
    }
    for bad in ["\"\n\"", "\"\t\"", "\"\x1f\"", r#""\x""#, r#""\u12""#, r#""abc"#, r#""a"b""#, r#""\""#] {
        assert!(!string.is_match(bad), "STRING should reject {bad:?}");
    }
    for ok in ["0", "-0", "12", "-1.5", "0.25e10", "1E+2", "3e-07", "10.0"] {
        assert!(number.is_match(ok), "NUMBER should match {ok:?}");
    }
    for bad in ["01", "+1", "1.", ".5", "1e", "-", "0x1", "1.e3", "--1"] {
        assert!(!number.is_match(bad), "NUMBER should reject {bad:?}");
    }
}
