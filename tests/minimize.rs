//! The Parser DWA is minimal, and sharing states between lexer states changes nothing
//! (docs/CONSTRUCTION.md, "Sharing between lexer states" and "Minimization").
//!
//! * **Minimal**: an independent partition refinement over the tables as the runtime reads them
//!   (`MaskTables::step` on every LR state, and on a label no edge names) finds no two
//!   equivalent states, and every state is reachable from a start state.
//! * **Links are exact**: the tables built with links to states of earlier lexer states equal,
//!   table for table, those built with every lexer state's automaton built in full (both are
//!   minimized, and the minimal automaton with its breadth-first numbering is unique).
//!
//! The masks themselves are compared with the reference mask by `dwa_mask/`,
//! `grammar_collection/` and `cargo dwac-bench differential`.

use std::collections::VecDeque;

use dwac_compile::dwa::{build_mask_tables, MaskOptions, MaskStats};
use dwac_compile::{compile_grammar, parse_source, SourceKind};
use dwac_runtime::unstable::{MaskTables, NONE};
use dwac_runtime::{
    unstable::{GrammarTables, DEAD},
    Vocabulary,
};
use dwac_tests::*;

/// The number of behaviour classes of the automaton's states (Moore refinement from one
/// class: each round splits states by their class and, for every LR state and for an unnamed
/// label, the class of the state reached and the set output).
fn behaviour_classes(t: &MaskTables, lr_states: u32) -> usize {
    let n = t.num_states();
    let mut class = vec![0u32; n];
    let mut count = 1;
    loop {
        let mut index = std::collections::HashMap::new();
        let mut next = vec![0u32; n];
        for d in 0..n as u32 {
            let cls = |x: u32| if x == DEAD { u32::MAX } else { class[x as usize] };
            let mut sig = vec![class[d as usize]];
            // (A label past every LR state is one no edge names: the DEFAULT edge.)
            for label in 0..=lr_states {
                let (x, rho) = t.step(d, label);
                sig.push(cls(x));
                sig.push(rho);
            }
            let id = index.len() as u32;
            next[d as usize] = *index.entry(sig).or_insert(id);
        }
        class = next;
        if index.len() == count {
            return count;
        }
        count = index.len();
    }
}

/// States reachable from the start states.
fn reachable(t: &MaskTables) -> usize {
    let mut seen = vec![false; t.num_states()];
    let mut queue: VecDeque<u32> = t.start.iter().copied().filter(|&s| s != NONE).collect();
    for &s in &queue {
        seen[s as usize] = true;
    }
    while let Some(d) = queue.pop_front() {
        for x in t.edges(d).map(|e| e.1).chain(std::iter::once(t.default_edge(d).0)) {
            if x != DEAD && !seen[x as usize] {
                seen[x as usize] = true;
                queue.push_back(x);
            }
        }
    }
    seen.iter().filter(|&&s| s).count()
}

/// Build with and without links; check minimality and equality. Returns the stats with links.
fn check(name: &str, tables: &GrammarTables, vocab: &Vocabulary) -> MaskStats {
    let (linked, stats) = build_mask_tables(tables, vocab, &MaskOptions::default()).unwrap();
    let full_opts = MaskOptions { link_states: false, ..MaskOptions::default() };
    let (full, full_stats) = build_mask_tables(tables, vocab, &full_opts).unwrap();
    assert_eq!(full_stats.dwa_states_linked, 0, "{name}");
    assert!(linked == full, "{name}: the tables differ with and without links");
    let n = linked.num_states();
    assert_eq!(reachable(&linked), n, "{name}: unreachable states");
    let classes = behaviour_classes(&linked, tables.lr.num_states);
    assert_eq!(classes, n, "{name}: {n} states but {classes} behaviour classes");
    stats
}

fn schema_tables(schema: serde_json::Value) -> GrammarTables {
    let sg = dwac_grammar::schema::compile_schema(&schema, &Default::default()).unwrap();
    compile_grammar(&sg.grammar).unwrap().tables
}

#[test]
fn random_small_grammars_are_minimal() {
    let vocab = vocab_over(b"abc (),", 2, &["abc", "a b", "(ab", "),", "c c", "abab", " (", "ca,"]);
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let (mut grammars, mut merged) = (0, 0);
    for _ in 0..60 {
        let src = random_grammar(&mut rng);
        let Ok(grammar) = parse_source(SourceKind::Lark, &src) else { continue };
        let Ok(c) = compile_grammar(&grammar) else { continue };
        let stats = check(&src, &c.tables, &vocab);
        merged += stats.dwa_states_assembled - stats.dwa_states;
        grammars += 1;
    }
    println!("{grammars} grammars, {merged} states merged by minimization");
    assert!(grammars >= 30 && merged > 0, "{grammars} grammars, {merged} merged");
}

#[test]
fn json_and_schemas_are_minimal_and_links_exact() {
    let json_vocab = vocab_over(b"{}[],:\" a1-.e", 2, &["{\"", "\": ", "\", \"", "\"}", "true", "null", "}]", "\"a\""]);
    let json = compile_grammar(
        &parse_source(SourceKind::Lark, &std::fs::read_to_string(repo_root().join("grammars/json.lark")).unwrap())
            .unwrap(),
    )
    .unwrap()
    .tables;
    check("json.lark", &json, &json_vocab);
    // Several string properties, keys sharing prefixes, enums and nested objects: lexer states
    // inside keys and strings whose automata share states (links), with the real GPT-2
    // vocabulary.
    let gpt2 = dwac_vocab::Tokenizer::default_embedded().unwrap().vocab().clone();
    let schema = schema_tables(serde_json::json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "nickname": {"type": "string", "maxLength": 8},
            "notes": {"type": "array", "items": {"type": "string"}},
            "kind": {"enum": ["alpha", "beta", "alphabet"]},
            "owner": {"type": "object", "properties": {"name": {"type": "string"}, "id": {"type": "integer"}},
                      "required": ["id"]},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}}
        },
        "required": ["name"]
    }));
    let stats = check("schema", &schema, &gpt2);
    println!("{stats:?}");
    assert!(stats.dwa_states_linked > 0, "no state was linked: {stats:?}");
    let tools = schema_tables(serde_json::json!({"anyOf": [
        {"type": "object", "properties": {"name": {"const": "get_weather"},
            "arguments": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["C", "F"]}},
                          "required": ["city"]}}, "required": ["name", "arguments"]},
        {"type": "object", "properties": {"name": {"const": "get_time"},
            "arguments": {"type": "object", "properties": {"city": {"type": "string"}, "zone": {"type": "string"}}}},
         "required": ["name", "arguments"]}
    ]}));
    let stats = check("tools", &tools, &gpt2);
    assert!(stats.dwa_states_linked > 0, "no state was linked: {stats:?}");
}

/// A Parser DWA that outgrows its budget stops the build with an error naming what grew,
/// instead of growing until memory runs out.
#[test]
fn a_dwa_over_its_budget_is_a_clear_error() {
    let gpt2 = dwac_vocab::Tokenizer::default_embedded().unwrap().vocab().clone();
    let tables = schema_tables(serde_json::json!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}
    }));
    let (_, stats) = build_mask_tables(&tables, &gpt2, &MaskOptions::default()).unwrap();
    let tight = MaskOptions { max_dwa_states: stats.dwa_states_assembled / 2, ..MaskOptions::default() };
    let err = build_mask_tables(&tables, &gpt2, &tight).expect_err("the build must stop past its budget");
    let msg = err.to_string();
    assert!(matches!(err, dwac_compile::CompileError::Budget(_)), "{msg}");
    for needle in ["Parser DWA grew past", "lexer state", "LR states"] {
        assert!(msg.contains(needle), "{needle:?} not in {msg:?}");
    }
}
