//! Sentences of our own Lark grammars (`tests/data/lark_verdicts`, recorded from Python Lark 1.3.1
//! by its `record.py`): contextual terminal priorities and lazy quantifiers.
//!
//! Where Lark's LALR (contextual lexer) and Earley (dynamic lexer) parsers agree and the reading
//! does not rest on a lexing choice dwac deliberately does not make (`longer_match`: a higher
//! priority beating a longer match, ARCHITECTURE.md "The contract"), dwac must agree with them. Every sentence,
//! flagged or not, must also match the verdict derived by hand from the contract (`dwac`), whose
//! `note` says why. Sentences marked `readings_differ` are ones where reading the lazy
//! quantifiers greedily would give the other verdict: the test checks that too, so it can tell
//! the two readings apart.

use std::collections::HashMap;
use std::sync::Arc;

use dwac_compile::{compile_engine, parse_source, CompileError, SourceKind};
use dwac_runtime::{Engine, Matcher};
use dwac_tests::*;

fn accepts(engine: &Arc<Engine>, text: &str) -> bool {
    let mut m = Matcher::new(engine.clone());
    m.commit_bytes(text.as_bytes()).is_ok() && m.is_accepting()
}

/// The greedy reading of a grammar with lazy terminals: an engine, or `None` where that reading
/// leaves no text in the language (the compiler refuses it as empty).
type Greedy = Option<Option<Arc<Engine>>>;

/// The grammar as written, and (for grammars with lazy terminals) the same grammar with every
/// terminal read greedily.
fn engines(src: &str) -> (Arc<Engine>, Greedy) {
    let g = parse_source(SourceKind::Lark, src).unwrap_or_else(|e| panic!("{e}"));
    let compile = |g: &dwac_grammar::Grammar| compile_engine(g, synthetic_vocab(&[b"x"])).map(|c| Arc::new(c.0));
    let greedy = g.terminals.iter().any(|t| t.lazy).then(|| {
        let mut g2 = g.clone();
        g2.terminals.iter_mut().for_each(|t| t.lazy = false);
        match compile(&g2) {
            Ok(e) => Some(e),
            Err(CompileError::EmptyLanguage(_)) => None,
            Err(e) => panic!("{e}"),
        }
    });
    (compile(&g).unwrap_or_else(|e| panic!("{e}")), greedy)
}

#[test]
fn agrees_with_python_lark_where_lark_agrees_with_itself() {
    let dir = repo_root().join("tests/data/lark_verdicts");
    let text = std::fs::read_to_string(dir.join("verdicts.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["lark_version"], "1.3.1");
    let mut cache: HashMap<String, (Arc<Engine>, Greedy)> = HashMap::new();
    let (mut agreed, mut deliberate, mut lark_split, mut differ) = (0, 0, 0, 0);
    let mut problems = Vec::new();
    for v in doc["verdicts"].as_array().unwrap() {
        let grammar = v["grammar"].as_str().unwrap();
        let sentence = v["sentence"].as_str().unwrap();
        let (e, greedy) = cache.entry(grammar.to_string()).or_insert_with(|| {
            engines(&std::fs::read_to_string(dir.join(grammar)).unwrap_or_else(|e| panic!("{grammar}: {e}")))
        });
        let got = accepts(e, sentence);
        if v["dwac"].as_bool() != Some(got) {
            problems.push(format!("{grammar} {sentence:?}: dwac {got}, hand-derived {} ({})", v["dwac"], v["note"]));
        }
        let (lalr, earley) = (&v["lalr"], &v["earley"]);
        if v["longer_match"].as_bool() == Some(true) {
            deliberate += 1;
        } else if lalr == earley {
            agreed += 1;
            if lalr.as_bool() != Some(got) {
                problems.push(format!("{grammar} {sentence:?}: dwac {got}, Lark LALR and Earley {lalr}"));
            }
        } else {
            lark_split += 1;
        }
        if let Some(greedy) = greedy {
            let want_differ = v["readings_differ"].as_bool() == Some(true);
            differ += want_differ as usize;
            let greedy_accepts = greedy.as_ref().is_some_and(|e| accepts(e, sentence));
            if (greedy_accepts != got) != want_differ {
                problems.push(format!("{grammar} {sentence:?}: readings_differ is {want_differ}, but is not so"));
            }
        }
    }
    println!(
        "{agreed} sentences where Lark LALR = Earley (dwac agrees on all), {lark_split} where they differ, \
         {deliberate} deliberate longest-match differences; {differ} where the greedy reading differs"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(agreed >= 80, "only {agreed} Lark-agreed sentences");
    assert!(differ >= 7, "only {differ} sentences tell lazy and greedy readings apart");
}
