//! The runtime surface a server uses beyond commit/mask: O(1) forks that stay independent,
//! bounded rollback history, and fast-forward (`forced_tokens`, `forced_bytes`).

use std::sync::Arc;

use dwac_runtime::{CommitError, Engine, Matcher};
use dwac_tests::*;

fn json_engine() -> (Arc<Engine>, dwac_vocab::Tokenizer) {
    let tok = dwac_vocab::Tokenizer::default_embedded().unwrap();
    (engine_from_file("grammars/json.lark", tok.vocab().clone()), tok)
}

fn mask(m: &mut Matcher) -> Vec<u32> {
    let mut out = vec![0u32; m.mask_words()];
    m.fill_mask(&mut out).unwrap();
    out
}

#[test]
fn clones_are_independent_forks_sharing_history() {
    let (e, tok) = json_engine();
    let text = "[".to_string() + &(0..2000).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
    let toks = tok.encode(&text).unwrap();
    let mut a = Matcher::new(e.clone());
    for &t in &toks {
        a.commit(t).unwrap();
    }
    assert_eq!(a.history_len(), toks.len());
    let before = mask(&mut a);
    let mut b = a.clone();
    // Diverge: the fork ends the array, the original goes on.
    for &t in &tok.encode("]").unwrap() {
        b.commit(t).unwrap();
    }
    for &t in &tok.encode(", 7").unwrap() {
        a.commit(t).unwrap();
    }
    assert!(b.is_accepting() && !a.is_accepting());
    // Each rolls back along its own history to the fork point, then further on the shared one.
    b.rollback(1).unwrap();
    a.rollback(tok.encode(", 7").unwrap().len()).unwrap();
    assert_eq!(mask(&mut a), before);
    assert_eq!(mask(&mut b), before);
    a.rollback(100).unwrap();
    b.rollback(100).unwrap();
    assert_eq!(mask(&mut a), mask(&mut b));
    assert_eq!(a.position(), b.position());
}

#[test]
fn bounded_history_keeps_only_max_rollback_states() {
    let (e, tok) = json_engine();
    let toks = tok.encode("{\"a\": [1, 2, 3, {\"b\": null}], \"c\": \"xyz\"}").unwrap();
    let mut m = Matcher::with_max_rollback(e.clone(), 4);
    for &t in &toks {
        m.commit(t).unwrap();
        assert!(m.history_len() <= 4);
    }
    assert_eq!(m.history_len(), 4);
    assert_eq!(m.rollback(5), Err(CommitError::RollbackTooFar { requested: 5, available: 4 }));
    m.rollback(4).unwrap();
    let mut fresh = Matcher::new(e.clone());
    for &t in &toks[..toks.len() - 4] {
        fresh.commit(t).unwrap();
    }
    assert_eq!(mask(&mut m), mask(&mut fresh));
    // What is still kept (at most the bound) rolls back exactly too.
    let more = m.history_len();
    assert!(more <= 4);
    m.rollback(more).unwrap();
    let mut fresh2 = Matcher::new(e.clone());
    for &t in &toks[..toks.len() - 4 - more] {
        fresh2.commit(t).unwrap();
    }
    assert_eq!(mask(&mut m), mask(&mut fresh2));
    // Shrinking the bound releases states now; zero keeps none.
    fresh.set_max_rollback(2);
    assert_eq!(fresh.history_len(), 2);
    fresh.set_max_rollback(0);
    assert!(fresh.rollback(1).is_err());
}

#[test]
fn forced_tokens_and_bytes_fast_forward_exactly_what_the_grammar_forces() {
    let src = "start: \"hello\" \" world\" /[0-9]/\n";
    // Single bytes only: every forced byte is a forced token.
    let singles: Vec<Vec<u8>> = (b' '..=b'z').map(|b| vec![b]).collect();
    let refs: Vec<&[u8]> = singles.iter().map(|v| &v[..]).collect();
    let e = engine_from_lark(src, synthetic_vocab(&refs));
    let m = Matcher::new(e.clone());
    let forced = m.forced_tokens(100).unwrap();
    let text: Vec<u8> = forced.iter().flat_map(|&t| e.vocab().token_bytes(t).unwrap().to_vec()).collect();
    assert_eq!(text, b"hello world");
    assert_eq!(m.position(), 0, "forced_tokens leaves the matcher unchanged");
    assert_eq!(m.forced_tokens(3).unwrap().len(), 3);
    let mut done = Matcher::new(e.clone());
    done.commit_bytes(b"hello world5").unwrap();
    let eos = e.vocab().eos[0];
    assert_eq!(done.forced_tokens(10).unwrap(), vec![eos], "only the end token is left");
    // With multi-byte tokens there is a choice ("h" or "he"), so no token is forced, but the
    // bytes still are.
    let mut toks = refs.clone();
    toks.extend([&b"he"[..], b"llo", b" wor", b"ld"]);
    let e = engine_from_lark(src, synthetic_vocab(&toks));
    let m = Matcher::new(e);
    assert!(m.forced_tokens(10).unwrap().is_empty());
    assert_eq!(m.forced_bytes(100).unwrap(), b"hello world");
}
