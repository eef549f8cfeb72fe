//! A grammar's first large lexer state, built forward on a thread of its own with a
//! determinizer of its own (`dwac-compile/src/dwa/assemble/apart.rs`).

use super::*;

/// Built apart (here the first state with a class at all, `apart_classes: 1`), without links
/// and without the memos of the states before it, the first state's automaton gives the same
/// tables as built in place, once minimized; and masks equal the reference.
#[test]
fn the_first_large_state_built_apart_gives_the_same_tables() {
    use dwac_compile::dwa::{build_mask_tables, MaskOptions};
    let vocab = vocab_over(
        b"{}[]:,\"a1 -.e",
        2,
        &["{\"", "\":", "\": ", "\",", "true", "false", "null", "tr", "ue", "1.5e-3", "}}]", "]]", "\"a\"", "\\u00"],
    );
    let src = std::fs::read_to_string(repo_root().join("grammars/json.lark")).unwrap();
    let g = dwac_compile::parse_source(dwac_compile::SourceKind::Lark, &src).unwrap();
    let c = dwac_compile::compile_grammar(&g).unwrap();
    // (No race: a state whose first attempt would be raced is not built apart.)
    let in_place = MaskOptions { apart_classes: usize::MAX, saturate_beside: (u64::MAX, 0), ..MaskOptions::default() };
    let (expected, stats) = build_mask_tables(&c.tables, &vocab, &in_place).unwrap();
    assert_eq!(stats.lexer_states_apart, 0, "{stats:?}");
    let apart = MaskOptions { apart_classes: 1, ..in_place.clone() };
    let (mask, stats) = build_mask_tables(&c.tables, &vocab, &apart).unwrap();
    assert_eq!(stats.lexer_states_apart, 1, "{stats:?}");
    assert!(mask == expected, "built apart, the tables differ");
    let engine = Arc::new(Engine::with_mask(c.tables, vocab, Some(mask)).unwrap());
    let n = differential(&engine, 30, 30, 13);
    assert!(n > 500, "{n} masks compared");
}
