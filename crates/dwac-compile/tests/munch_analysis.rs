//! The longest-match analysis (`munch.rs`): dead ends are warned about with the terminal and the
//! rule's line:column, an empty language is an error, and grammars without either stay quiet.

use dwac_compile::{compile_grammar, parse_source, CompileError, SourceKind};

fn compile(src: &str) -> Result<dwac_compile::Compiled, CompileError> {
    compile_grammar(&parse_source(SourceKind::Lark, src).unwrap_or_else(|e| panic!("{e}")))
}

fn warnings(src: &str) -> Vec<String> {
    let c = compile(src).unwrap_or_else(|e| panic!("{e}"));
    assert!(!c.stats.munch_analysis_skipped);
    c.stats.warnings.iter().map(|w| format!("{}:{} {}", w.0.line, w.0.column, w.0.message)).collect()
}

#[test]
fn adjacent_identifiers_without_separator_are_a_dead_end() {
    // `ID ID`: the first ID's longest match always swallows the second. The other alternative
    // keeps the language non-empty, so this is a warning, not an error.
    let src = "start: pair | \"x\"\npair: \"(\" ID ID \")\"\nID: /[a-z]+/\n";
    let w = warnings(src);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].starts_with("2:7 dead end after `ID`: the grammar needs `ID` next"), "{w:?}");
}

#[test]
fn an_ignored_separator_or_an_alternative_continuation_removes_the_dead_end() {
    assert_eq!(warnings("start: \"(\" ID ID \")\"\nID: /[a-z]+/\n%ignore \" \"\n"), Vec::<String>::new());
    // After the first ID the parser also accepts `,`, which can follow it: no dead end.
    assert_eq!(warnings("start: \"(\" ID (ID | \",\") \")\"\nID: /[a-z]+/\n"), Vec::<String>::new());
    // A keyword then an identifier, no whitespace: `letx` is one ID.
    let w = warnings("start: \"let\" ID | \"x\"\nID: /[a-z]+/\n");
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("dead end after `\"let\"`"), "{w:?}");
}

#[test]
fn an_empty_language_is_an_error_at_the_dead_end() {
    let err = match compile("start: \".Dt\" NAME SECTION \"\\n\"\nNAME: /[a-z]+/\nSECTION: /[a-z0-9]+/\n") {
        Err(CompileError::EmptyLanguage(e)) => e,
        Err(other) => panic!("expected an empty-language error, got {other}"),
        Ok(_) => panic!("expected an empty-language error, the grammar compiled"),
    };
    assert_eq!((err.line, err.column), (1, 8));
    assert!(err.message.contains("no text is in this grammar's language"), "{}", err.message);
    assert!(err.message.contains("dead end after `NAME`"), "{}", err.message);
}

/// `a b c` where `abc` is an ignored terminal: `abc` itself never lexes as `a b c`, but the
/// language is not empty, because an ignored `abc` can be inserted: `aabcbc` is `a ABC b c`.
/// The analysis must find that (no error, no warning), and the engine agrees.
#[test]
fn emptiness_is_decided_over_whole_lexings_not_pairs() {
    let src = "start: \"a\" \"b\" \"c\"\nABC: \"abc\"\n%ignore ABC\n";
    assert_eq!(warnings(src), Vec::<String>::new());
    let g = parse_source(SourceKind::Lark, src).unwrap();
    let vocab = dwac_runtime::Vocabulary::from_tokens(&[b"x".to_vec(), Vec::new()], vec![false, true], vec![1]);
    let engine = std::sync::Arc::new(dwac_compile::compile_engine(&g, vocab).unwrap().0);
    let accepts = |text: &str| {
        let mut m = dwac_runtime::Matcher::new(engine.clone());
        m.commit_bytes(text.as_bytes()).is_ok() && m.is_accepting()
    };
    assert!(!accepts("abc"));
    assert!(accepts("aabcbc"));
}

#[test]
fn lazy_terminals_are_read_leftmost_first() {
    // Read greedily, a STRING would run to the last quote and `STRING ":" STRING` would be empty.
    assert_eq!(warnings("start: STRING \":\" STRING\nSTRING: /\".*?\"/\n"), Vec::<String>::new());
    let g = parse_source(SourceKind::Lark, "start: STRING\nSTRING: /\".*?\"/\n").unwrap();
    assert!(g.terminals.iter().any(|t| t.lazy));
    let g = parse_source(SourceKind::Lark, "start: STRING\nSTRING: /\"[^\"]*\"/\n").unwrap();
    assert!(!g.terminals.iter().any(|t| t.lazy));
}

/// A terminal that matches no text makes every sentence that needs it impossible. A JSON Schema
/// compiles an unsatisfiable branch to such a terminal: here every object that has all of `a`,
/// `b` and `c` satisfies all three `oneOf` branches, so no instance is valid.
#[test]
fn a_language_that_needs_a_terminal_matching_no_text_is_an_error() {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}, "c": {"type": "number"}},
        "required": ["a", "b", "c"],
        "oneOf": [{"required": ["a"]}, {"required": ["b"]}, {"required": ["c"]}]
    });
    let sg = dwac_grammar::schema::compile_schema(&schema, &Default::default()).unwrap();
    match compile_grammar(&sg.grammar) {
        Err(CompileError::EmptyLanguage(e)) => {
            assert!(e.message.contains("a terminal that matches no text at all"), "{}", e.message)
        }
        Err(other) => panic!("expected an empty-language error, got {other}"),
        Ok(_) => panic!("expected an empty-language error, the schema compiled"),
    }
    // The same schema without the contradiction compiles, with nothing to report.
    let ok = serde_json::json!({"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]});
    let sg = dwac_grammar::schema::compile_schema(&ok, &Default::default()).unwrap();
    let c = compile_grammar(&sg.grammar).unwrap();
    assert!(c.stats.warnings.is_empty() && !c.stats.munch_analysis_skipped);
}
