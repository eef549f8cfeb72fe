//! The runtime surface a server uses beyond commit/mask: O(1) forks that stay independent,
//! bounded rollback history, fast-forward (`forced_tokens`, `forced_bytes`), draft validation,
//! runs of commits, reset, masks wider than the vocabulary, and batch / multi-threaded fills.

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
    let eos = e.vocab().eos()[0];
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

/// A few JSON documents as token ids (GPT-2), each a complete value.
fn documents(tok: &dwac_vocab::Tokenizer) -> Vec<Vec<u32>> {
    [
        "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}",
        "[1, 2.5e3, -7, true, false, null, \"x\\u00e9y\"]",
        "{\"a\": {\"b\": {\"c\": [[], {}, [\"deep\"]]}}}",
        "\"just a string with spaces\"",
    ]
    .iter()
    .map(|d| tok.encode(d).unwrap())
    .collect()
}

#[test]
fn wide_masks_clear_every_bit_past_the_vocabulary() {
    let (e, tok) = json_engine();
    let mut m = Matcher::new(e.clone());
    let words = m.mask_words();
    let n = e.vocab().len() as u32;
    assert!(!n.is_multiple_of(32), "the test needs a vocabulary that does not fill its last word");
    for &t in &documents(&tok)[0][..5] {
        let exact = mask(&mut m);
        // Padded logits: three more words than the vocabulary needs, filled with garbage.
        let mut wide = vec![u32::MAX; words + 3];
        m.fill_mask(&mut wide).unwrap();
        assert_eq!(&wide[..words], &exact[..], "the vocabulary's words differ from a plain fill");
        assert!(wide[words..].iter().all(|&w| w == 0), "words past the vocabulary are not cleared");
        assert_eq!(wide[words - 1] >> (n % 32), 0, "bits past the last token are set");
        m.commit(t).unwrap();
    }
    let mut short = vec![0u32; words - 1];
    assert!(m.fill_mask(&mut short).is_err(), "a buffer narrower than the vocabulary is refused");
}

#[test]
fn validate_tokens_measures_the_accepted_prefix_without_changing_the_matcher() {
    let (e, tok) = json_engine();
    let comma = tok.encode(",").unwrap()[0];
    for doc in documents(&tok) {
        let mut m = Matcher::new(e.clone());
        assert_eq!(m.validate_tokens(&doc), doc.len());
        // A draft that goes wrong at token i (a comma where the grammar cannot take one).
        for i in [0, doc.len() / 2] {
            for &t in &doc[..i] {
                m.commit(t).unwrap();
            }
            let before = (mask(&mut m), m.position(), m.history_len());
            let mut draft = doc[i..].to_vec();
            draft.insert(0, comma);
            if m.is_allowed(comma) {
                continue;
            }
            assert_eq!(m.validate_tokens(&draft), 0);
            let rest: Vec<u32> = doc[i..].iter().copied().chain([comma, comma]).collect();
            let ok = doc.len() - i;
            // `,` after a complete top-level value is refused too: the prefix stops there.
            assert_eq!(m.validate_tokens(&rest), ok);
            assert_eq!((mask(&mut m), m.position(), m.history_len()), before, "validate_tokens changed the matcher");
            m.reset();
        }
    }
}

#[test]
fn commit_tokens_stops_at_the_first_refused_token_and_leaves_it_uncommitted() {
    let (e, tok) = json_engine();
    let doc = &documents(&tok)[0];
    let bad = tok.encode("]").unwrap()[0];
    // The first place past the middle where `]` is refused (inside a string it is not).
    let mut probe = Matcher::new(e.clone());
    let mut cut = 0;
    for (i, &t) in doc.iter().enumerate() {
        if i >= doc.len() / 2 && !probe.is_allowed(bad) {
            cut = i;
            break;
        }
        probe.commit(t).unwrap();
    }
    assert!(cut > 0, "no place refuses `]`");
    let mut run = doc[..cut].to_vec();
    run.push(bad);
    run.extend_from_slice(&doc[cut..]);
    let mut m = Matcher::new(e.clone());
    let err = m.commit_tokens(&run).unwrap_err();
    assert_eq!(err.accepted, cut);
    assert!(matches!(err.error, CommitError::Rejected { token: Some(t), .. } if t == bad), "{err}");
    let mut by_one = Matcher::new(e.clone());
    for &t in &doc[..cut] {
        by_one.commit(t).unwrap();
    }
    assert_eq!((mask(&mut m), m.position(), m.history_len()), (mask(&mut by_one), by_one.position(), cut));
    // The rest of the document is still accepted, and each commit undoes on its own.
    m.commit_tokens(&doc[cut..]).unwrap();
    assert!(m.is_accepting());
    m.rollback(doc.len() - cut).unwrap();
    assert_eq!(mask(&mut m), mask(&mut by_one));
}

#[test]
fn reset_returns_to_the_start_and_keeps_the_rollback_bound() {
    let (e, tok) = json_engine();
    let fresh = mask(&mut Matcher::new(e.clone()));
    let mut m = Matcher::with_max_rollback(e.clone(), 3);
    m.commit_tokens(&documents(&tok)[1]).unwrap();
    assert_ne!(mask(&mut m), fresh);
    m.reset();
    assert_eq!((mask(&mut m), m.position(), m.history_len(), m.max_rollback()), (fresh, 0, 0, 3));
    assert!(!m.is_terminated() && !m.is_accepting());
}

#[test]
fn terminated_and_accepting_follow_their_contract() {
    let (e, tok) = json_engine();
    let eos = e.vocab().eos()[0];
    let mut m = Matcher::new(e.clone());
    let doc = tok.encode("{\"a\": 1}").unwrap();
    for (i, &t) in doc.iter().enumerate() {
        assert!(!m.is_accepting(), "accepting before the value is complete (token {i})");
        assert!(!m.is_allowed(eos));
        m.commit(t).unwrap();
    }
    // Complete: accepting, the end token allowed, and more (whitespace) still allowed too.
    assert!(m.is_accepting() && !m.is_terminated());
    let allowed = m.allowed();
    assert!(allowed.contains(&eos) && allowed.len() > 1);
    m.commit(eos).unwrap();
    assert!(m.is_terminated() && !m.is_accepting());
    assert!(m.allowed().is_empty());
    assert_eq!(m.commit(tok.encode(" ").unwrap()[0]), Err(CommitError::Terminated));
    m.rollback(1).unwrap();
    assert!(m.is_accepting() && !m.is_terminated());
}

#[test]
fn batch_fill_equals_one_by_one_and_threads_fill_concurrently() {
    let (e, tok) = json_engine();
    // Matchers at every position of every document.
    let mut matchers = Vec::new();
    for doc in documents(&tok) {
        let mut m = Matcher::new(e.clone());
        matchers.push(m.clone());
        for &t in &doc {
            m.commit(t).unwrap();
            matchers.push(m.clone());
        }
    }
    let words = matchers[0].mask_words();
    let one_by_one: Vec<Vec<u32>> = matchers.iter().map(|m| mask(&mut m.clone())).collect();
    for row_words in [words, words + 2] {
        let refs: Vec<&Matcher> = matchers.iter().collect();
        let mut batch = vec![u32::MAX; refs.len() * row_words];
        dwac_runtime::fill_masks(&refs, &mut batch, row_words).unwrap();
        for (i, row) in batch.chunks(row_words).enumerate() {
            assert_eq!(&row[..words], &one_by_one[i][..], "row {i}");
            assert!(row[words..].iter().all(|&w| w == 0));
        }
        let mut short = vec![0u32; refs.len() * row_words - 1];
        assert!(dwac_runtime::fill_masks(&refs, &mut short, row_words).is_err());
    }
    // Different matchers on different threads at once, each thread with the runtime's scratch.
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|k| {
                let (ms, want) = (&matchers, &one_by_one);
                s.spawn(move || {
                    for (i, m) in ms.iter().enumerate().filter(|(i, _)| i % 4 == k) {
                        let mut out = vec![0u32; m.mask_words()];
                        m.fill_mask(&mut out).unwrap();
                        assert_eq!(out, want[i], "matcher {i} on thread {k}");
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    });
}
