//! `cargo dwac-bench fuzz-artifact`: a libFuzzer-style loop on stable Rust over
//! `Artifact::from_bytes` followed by random commits, rollbacks, clones and masks.
//!
//! Seeds: the golden artifact(s) under `tests/data/golden` and the JSON grammar compiled for a
//! small synthetic vocabulary. Each execution mutates one seed (bit flips, boundary values in
//! aligned `u32` words — the counts, offsets and indices the reader must check —, zeroed or
//! duplicated ranges, truncation), recomputes the checksums most of the time (so the mutation
//! reaches the structural and index validation instead of stopping at a checksum), opens it and
//! drives a matcher. A panic is a crash: its input is written to `tests/data/fuzz-crashes/`,
//! where `tests/artifact.rs` replays every file as a regression test.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use dwac_runtime::unstable::artifact::reseal_all;
use dwac_runtime::{Artifact, Engine, Matcher, Vocabulary};
use dwac_testdata::Rng;

fn seeds() -> Result<Vec<Vec<u8>>> {
    let root = dwac_testdata::repo_root();
    let mut out = Vec::new();
    for e in std::fs::read_dir(root.join("tests/data/golden"))? {
        let p = e?.path();
        if p.extension().is_some_and(|x| x == "dwa") {
            out.push(std::fs::read(&p)?);
        }
    }
    // The JSON grammar over a small byte-level vocabulary.
    let mut toks: Vec<Vec<u8>> = (0x20u8..0x7f).map(|b| vec![b]).collect();
    for t in ["{\"", "\":", "\": ", ", \"", "true", "false", "null", "[]", "{}", "\\u", "e-", "0.", "\"}", "],"] {
        toks.push(t.as_bytes().to_vec());
    }
    toks.push(Vec::new());
    let mut special = vec![false; toks.len()];
    special[toks.len() - 1] = true;
    let vocab = Vocabulary::from_tokens(&toks, special, vec![toks.len() as u32 - 1]);
    let text = std::fs::read_to_string(root.join("grammars/json.lark"))?;
    let g = dwac_compile::parse_source(dwac_compile::SourceKind::Lark, &text)?;
    let (engine, stats) = dwac_compile::compile_engine(&g, vocab)?;
    let src = dwac_compile::artifact::SourceInfo { name: "json.lark".into(), kind: "lark", text };
    let tok = dwac_compile::artifact::TokenizerInfo { name: "fuzz".into(), fingerprint: [1; 32] };
    out.push(dwac_compile::artifact::artifact_bytes(
        &engine,
        &src,
        &tok,
        &stats,
        &Default::default(),
        &Default::default(),
    ));
    Ok(out)
}

fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        if b.is_empty() {
            break;
        }
        match rng.below(6) {
            0 => {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
            1 | 2 => {
                // A boundary value in an aligned word: counts, offsets, indices, DEAD/NONE.
                let i = rng.below(b.len() / 4) * 4;
                if i + 4 <= b.len() {
                    let old = u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
                    let v = match rng.below(8) {
                        0 => 0,
                        1 => 1,
                        2 => u32::MAX,
                        3 => u32::MAX - 1,
                        4 => old.wrapping_add(1),
                        5 => old.wrapping_sub(1),
                        6 => 1 << rng.below(32),
                        _ => rng.next_u64() as u32,
                    };
                    b[i..i + 4].copy_from_slice(&v.to_le_bytes());
                }
            }
            3 => {
                let i = rng.below(b.len());
                let n = rng.below(64).min(b.len() - i);
                b[i..i + n].fill(0);
            }
            4 => {
                let i = rng.below(b.len());
                let j = rng.below(b.len());
                let n = rng.below(32).min(b.len() - i).min(b.len() - j);
                let chunk = b[i..i + n].to_vec();
                b[j..j + n].copy_from_slice(&chunk);
            }
            _ => {
                let n = rng.below(b.len());
                b.truncate(n);
            }
        }
    }
    if rng.below(10) != 0 {
        reseal_all(&mut b);
    }
    b
}

/// Open and drive: the property is "no panic" (errors are fine).
fn execute(bytes: &[u8], seed: u64) -> bool {
    let Ok(a) = Artifact::from_bytes(bytes) else { return false };
    drive(a.engine(), seed);
    true
}

fn drive(engine: &Arc<Engine>, seed: u64) {
    let mut rng = Rng(seed | 1);
    let n = engine.vocab().len() as u32;
    let mut buf = vec![0u32; (n as usize).div_ceil(32)];
    let mut m = Matcher::new(engine.clone());
    for _ in 0..16 {
        let _ = m.fill_mask(&mut buf);
        let allowed: Vec<u32> = (0..n).filter(|&v| buf[(v / 32) as usize] >> (v % 32) & 1 == 1).collect();
        let t = if allowed.is_empty() || rng.below(4) == 0 {
            rng.below(n as usize + 2) as u32
        } else {
            allowed[rng.below(allowed.len())]
        };
        let _ = m.commit(t);
        match rng.below(8) {
            0 => {
                let _ = m.rollback(1 + rng.below(3));
            }
            1 => {
                let mut c = m.clone();
                let _ = c.commit_bytes(b"{\"a\": [1, (b)]}");
                let _ = c.fill_mask(&mut buf);
            }
            _ => {}
        }
        let _ = (m.is_accepting(), m.is_terminated());
    }
    let _ = m.fill_reference_mask(&mut buf);
}

pub fn run(seconds: u64, seed: u64) -> Result<()> {
    let seeds = seeds()?;
    let crash_dir = dwac_testdata::repo_root().join("tests/data/fuzz-crashes");
    let mut rng = Rng(seed.max(1));
    // Silence the default panic message per crash; we report them ourselves.
    std::panic::set_hook(Box::new(|_| {}));
    let t0 = Instant::now();
    let (mut execs, mut opened, mut crashes) = (0u64, 0u64, Vec::<PathBuf>::new());
    let bar = crate::util::bar(seconds, false);
    while t0.elapsed() < Duration::from_secs(seconds) {
        let s = &seeds[rng.below(seeds.len())];
        let input = mutate(&mut rng, s);
        let run_seed = rng.next_u64();
        match catch_unwind(AssertUnwindSafe(|| execute(&input, run_seed))) {
            Ok(ok) => opened += u64::from(ok),
            Err(_) => {
                std::fs::create_dir_all(&crash_dir)?;
                let p = crash_dir.join(format!("crash-{:016x}.dwa", run_seed));
                std::fs::write(&p, &input)?;
                eprintln!("crash: {}", p.display());
                crashes.push(p);
            }
        }
        execs += 1;
        if execs % 256 == 0 {
            bar.set_position(t0.elapsed().as_secs());
            bar.set_message(format!("{execs} execs, {opened} opened, {} crashes", crashes.len()));
        }
    }
    bar.finish_and_clear();
    let _ = std::panic::take_hook();
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "{}",
        serde_json::json!({
            "seconds": (secs * 10.0).round() / 10.0,
            "seeds": seeds.len(),
            "executions": execs,
            "execs_per_second": (execs as f64 / secs).round(),
            "opened_and_driven": opened,
            "refused": execs - opened - crashes.len() as u64,
            "crashes": crashes.len(),
            "crash_files": crashes.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        })
    );
    if !crashes.is_empty() {
        anyhow::bail!("{} crashes", crashes.len());
    }
    Ok(())
}
