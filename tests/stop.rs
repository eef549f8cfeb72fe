//! A compile asked to stop from outside (`dwac_compile::threads::Stop`: a server's or a batch's
//! time or memory budget) ends within milliseconds, wherever it is, with the reason it was
//! given, and a compile not asked to stop is not disturbed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use dwac_compile::threads::{with_stop, Stop};
use dwac_compile::{CompileError, Compiler, SourceKind};
use dwac_tests::*;

fn tools_500() -> dwac_grammar::Grammar {
    let src = std::fs::read_to_string(repo_root().join("schemas/large/tools-500.json")).unwrap();
    Compiler::default().parse(SourceKind::JsonSchema, &src).unwrap().0
}

/// Stopped a little way into a compile of 500 tools (seconds of work), the compile ends soon
/// after with `Stopped` and the reason given; its helper threads (the walk, the analysis) stop
/// with it.
#[test]
fn a_stopped_compile_ends_at_once_with_the_reason() {
    let g = tools_500();
    let vocab = dwac_vocab::Tokenizer::default_embedded().unwrap().into_vocab();
    let stop = Stop::new();
    let setter = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            stop.stop("schema: compilation exceeded its time budget of 0.1 s (max_seconds)");
            Instant::now()
        })
    };
    let r = with_stop(&stop, || Compiler::default().compile_engine(&g, vocab.clone()));
    let ended = Instant::now();
    let stopped_at = setter.join().unwrap();
    match r {
        Err(CompileError::Stopped(why)) => assert!(why.contains("time budget of 0.1 s"), "{why}"),
        Err(e) => panic!("another error: {e}"),
        Ok(_) => panic!("the compile was not stopped"),
    }
    let lag = ended.saturating_duration_since(stopped_at);
    assert!(lag < Duration::from_secs(2), "stopped {lag:?} after the request");
    // The stop request was this compile's only: the next one on the thread runs to its end.
    let small = dwac_compile::parse_source(SourceKind::Lark, "start: \"a\"+\n").unwrap();
    assert!(Compiler::default().compile_engine(&small, vocab).is_ok());
}

/// A request made before the compile starts stops it at its first check, even a small one.
#[test]
fn a_request_made_before_the_compile_stops_it() {
    let stop = Stop::new();
    stop.stop("first");
    stop.stop("second");
    assert_eq!(stop.reason().as_deref(), Some("first"), "the first reason is kept");
    let src = std::fs::read_to_string(repo_root().join("schemas/large/tools-10.json")).unwrap();
    let g = Compiler::default().parse(SourceKind::JsonSchema, &src).unwrap().0;
    let vocab = dwac_vocab::Tokenizer::default_embedded().unwrap().into_vocab();
    let r = with_stop(&stop, || Compiler::default().compile_engine(&g, vocab));
    assert!(matches!(r, Err(CompileError::Stopped(ref w)) if w == "first"), "{:?}", r.err());
}
