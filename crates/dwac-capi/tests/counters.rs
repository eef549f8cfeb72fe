//! `dwac_matcher_last_mask_counters` through the C ABI (called from Rust): the counters a fill
//! stores in the matcher are the runtime's `MaskCounters` of that fill, the totals add up over
//! the matcher's life, a failed fill counts nothing, and null arguments are refused. Over an
//! artifact with a Parser DWA (the fast path: reads, no fallback) and over the same grammar
//! without one (every mask by the reference path: one fallback per fill).

use std::ptr;
use std::sync::Arc;

use dwac::*;
use dwac_runtime::unstable::artifact::{columns, header_for, layout};
use dwac_runtime::{Artifact, Engine, Matcher};

/// A C handle for an artifact held in memory.
fn open(bytes: &[u8]) -> *mut DwacArtifact {
    let mut a = ptr::null_mut();
    let st = unsafe { dwac_artifact_from_bytes(bytes.as_ptr(), bytes.len(), &mut a, ptr::null_mut()) };
    assert_eq!(st, DwacStatus::Ok);
    a
}

fn counters(m: *const DwacMatcher) -> DwacMaskCounters {
    let mut c = DwacMaskCounters::default();
    assert_eq!(unsafe { dwac_matcher_last_mask_counters(m, &mut c) }, DwacStatus::Ok);
    c
}

/// Fill masks along `run` with the C ABI and with a Rust matcher of `engine`; compare masks and
/// counters at every step. Returns the C matcher's final counters.
fn walk(a: *const DwacArtifact, engine: &Arc<Engine>, run: &[u32]) -> DwacMaskCounters {
    let mut m = ptr::null_mut();
    assert_eq!(unsafe { dwac_matcher_new(a, &mut m, ptr::null_mut()) }, DwacStatus::Ok);
    assert_eq!(counters(m), DwacMaskCounters::default());
    let mut rust = Matcher::new(Arc::clone(engine));
    let words = rust.mask_words();
    let (mut c_mask, mut r_mask) = (vec![0u32; words], vec![0u32; words]);
    // A failed fill counts nothing.
    let st = unsafe { dwac_matcher_fill_mask(m, c_mask.as_mut_ptr(), words - 1, ptr::null_mut()) };
    assert_eq!(st, DwacStatus::BufferTooSmall);
    assert_eq!(counters(m).masks, 0);
    let mut total = DwacMaskCounters::default();
    for (i, &t) in run.iter().enumerate() {
        assert_eq!(unsafe { dwac_matcher_fill_mask(m, c_mask.as_mut_ptr(), words, ptr::null_mut()) }, DwacStatus::Ok);
        let want = rust.fill_mask(&mut r_mask).unwrap();
        assert_eq!(c_mask, r_mask, "step {i}");
        total.masks += 1;
        total.undecided_total += u64::from(want.undecided);
        total.fallbacks_total += u64::from(want.fallbacks);
        let want = DwacMaskCounters {
            undecided: want.undecided,
            fallbacks: want.fallbacks,
            reads: want.reads,
            masks: total.masks,
            undecided_total: total.undecided_total,
            fallbacks_total: total.fallbacks_total,
        };
        assert_eq!(counters(m), want, "step {i}");
        assert_eq!(unsafe { dwac_matcher_commit(m, t, ptr::null_mut()) }, DwacStatus::Ok);
        rust.commit(t).unwrap();
    }
    let last = counters(m);
    unsafe { dwac_matcher_free(m) };
    last
}

#[test]
fn fills_record_their_counters_in_the_matcher() {
    let path = dwac_testdata::repo_root().join("artifacts/json.dwa.zst");
    let artifact = Artifact::open(&path).unwrap();
    let engine = Arc::clone(artifact.engine());
    let tok = dwac_vocab::Tokenizer::default_embedded().unwrap();
    let run = tok.encode("{\"a\": [1, true, \"x\"], \"b\": null}").unwrap();

    // With the Parser DWA: the fast path.
    let bytes = std::fs::read(&path).unwrap();
    let a = open(&bytes);
    let c = walk(a, &engine, &run);
    assert_eq!((c.masks, c.fallbacks_total), (run.len() as u64, 0), "{c:?}");
    assert!(c.reads > 0, "{c:?}");

    // The same grammar without a Parser DWA: every mask by the reference path, counted.
    let bare = Arc::new(Engine::new(engine.tables().clone(), engine.vocab().clone()).unwrap());
    let bytes = layout(header_for(&bare), "{}", &columns(&bare));
    let b = open(&bytes);
    let c = walk(b, &bare, &run);
    assert_eq!((c.masks, c.fallbacks, c.fallbacks_total, c.reads), (run.len() as u64, 1, run.len() as u64, 0));

    // Null arguments.
    let mut out = DwacMaskCounters::default();
    assert_eq!(unsafe { dwac_matcher_last_mask_counters(ptr::null(), &mut out) }, DwacStatus::InvalidArgument);
    let mut m = ptr::null_mut();
    assert_eq!(unsafe { dwac_matcher_new(a, &mut m, ptr::null_mut()) }, DwacStatus::Ok);
    assert_eq!(unsafe { dwac_matcher_last_mask_counters(m, ptr::null_mut()) }, DwacStatus::InvalidArgument);
    unsafe {
        dwac_matcher_free(m);
        dwac_artifact_free(a);
        dwac_artifact_free(b);
    }
}
