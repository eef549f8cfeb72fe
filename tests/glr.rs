//! GLR commit on ambiguous grammars, commit/rollback/clone semantics, typed errors that
//! leave the state unchanged.

use dwac_runtime::{CommitError, Matcher};
use dwac_tests::*;

const AMBIG: &str = r#"
start: e
e: e "+" e | e "*" e | NUM | "(" e ")"
NUM: /[0-9]+/
%ignore " "
"#;

fn accepts(src: &str, text: &str) -> bool {
    let engine = engine_from_lark(src, synthetic_vocab(&[b"x"]));
    let mut m = Matcher::new(engine);
    m.commit_bytes(text.as_bytes()).is_ok() && m.is_accepting()
}

#[test]
fn ambiguous_expression_grammar_through_glr() {
    for ok in ["1", "1+2", "1+2*3", "1*2+3*4+5", "(1+2)*3", "((1))", "1 + 2 * 3 + 4 * 5 * 6 + 7"] {
        assert!(accepts(AMBIG, ok), "{ok}");
    }
    for bad in ["", "+", "1+", "1++2", "(1", "1)", "()", "1 2", "*1"] {
        assert!(!accepts(AMBIG, bad), "{bad}");
    }
}

#[test]
fn exponentially_ambiguous_input_stays_polynomial() {
    // Catalan-many parses of a long sum; the GSS shares them.
    let text: String = (0..200).map(|i| i.to_string()).collect::<Vec<_>>().join("+");
    let engine = engine_from_lark(AMBIG, synthetic_vocab(&[b"x"]));
    let mut m = Matcher::new(engine);
    m.commit_bytes(text.as_bytes()).unwrap();
    assert!(m.is_accepting());
    let (threads, heads) = m.stats();
    assert!(threads <= 4 && heads <= 16, "{threads} threads, {heads} heads");
}

#[test]
fn keyword_versus_identifier_forks_and_parser_decides() {
    let src = r#"
start: "if" NAME "then" NAME | NAME "=" NAME
NAME: /[a-z]+/
%ignore " "
"#;
    assert!(accepts(src, "if x then y"));
    assert!(accepts(src, "if = then"));
    assert!(accepts(src, "iffy = x"));
    assert!(!accepts(src, "iffy x then y"));
    assert!(!accepts(src, "ifx then y"));
}

#[test]
fn rejected_commit_leaves_state_unchanged_and_rollback_restores() {
    let engine = engine_from_lark(AMBIG, synthetic_vocab(&[b"1", b"+", b"(", b")", b"*", b" ", b"))"]));
    let mut m = Matcher::new(engine);
    m.commit(2).unwrap(); // (
    m.commit(0).unwrap(); // 1
    let before = m.reference_allowed();
    let pos = m.position();
    let err = m.commit(6).unwrap_err(); // "))"
    assert!(matches!(err, CommitError::Rejected { token: Some(6), offset: 3, byte: Some(b')') }), "{err:?}");
    assert_eq!(m.reference_allowed(), before);
    assert_eq!(m.position(), pos);
    assert_eq!(m.commit(99), Err(CommitError::TokenOutOfRange { token: 99, vocab_size: 8 }));
    assert_eq!(m.reference_allowed(), before);
    // Clone is independent.
    let mut c = m.clone();
    c.commit(3).unwrap();
    assert!(c.is_accepting());
    assert!(!m.is_accepting());
    // Rollback.
    m.commit(1).unwrap();
    m.commit(0).unwrap();
    m.rollback(2).unwrap();
    assert_eq!(m.reference_allowed(), before);
    assert_eq!(m.rollback(3), Err(CommitError::RollbackTooFar { requested: 3, available: 2 }));
    // End token.
    let eos = 7;
    assert!(m.commit(eos).is_err());
    m.commit(3).unwrap();
    m.commit(eos).unwrap();
    assert!(m.is_terminated());
    assert_eq!(m.commit(0), Err(CommitError::Terminated));
    assert!(m.reference_allowed().is_empty());
    m.rollback(1).unwrap();
    assert!(!m.is_terminated());
}

#[test]
fn deep_nesting_does_not_overflow() {
    let engine = engine_from_lark(AMBIG, synthetic_vocab(&[b"x"]));
    let mut m = Matcher::new(engine);
    let depth = 100_000;
    m.commit_bytes("(".repeat(depth).as_bytes()).unwrap();
    m.commit_bytes(b"1").unwrap();
    m.commit_bytes(")".repeat(depth).as_bytes()).unwrap();
    assert!(m.is_accepting());
    drop(m); // iterative drop of a 100k-deep stack
}

#[test]
fn per_terminal_munch_and_character_level_gbnf() {
    // GBNF: character-level semantics, every segmentation allowed.
    let g = dwac_grammar::gbnf::parse("root ::= \"a\" \"ab\" | \"aa\" \"b\"\n").unwrap();
    let engine = std::sync::Arc::new(dwac_compile::compile_engine(&g, synthetic_vocab(&[b"a"])).unwrap().0);
    let mut m = Matcher::new(engine);
    m.commit_bytes(b"aab").unwrap();
    assert!(m.is_accepting());
}
