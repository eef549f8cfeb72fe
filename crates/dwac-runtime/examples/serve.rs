//! How a server uses dwac: open an artifact once, share its engine, one matcher per sequence.
//!
//! `cargo run --release -p dwac-runtime --example serve -- artifacts/json.dwa.zst`
//!
//! The "model" here picks the lowest allowed token id that is not the end token (until 30
//! tokens), so the output is some text the grammar allows.

use std::sync::Arc;

use dwac_runtime::{Artifact, Matcher};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: serve ARTIFACT")?;
    // At server start: map and validate the artifact (typed error if corrupt), once.
    let artifact = Artifact::open(&path)?;
    let engine = Arc::clone(artifact.engine());
    // Per request: a matcher (cheap to clone for beam search or speculation).
    let mut matcher = Matcher::with_max_rollback(engine.clone(), 16);
    let mut mask = vec![0u32; matcher.mask_words()];
    let mut out = Vec::new();
    for step in 0.. {
        // Before each decoding step: the mask of allowed tokens (bit v%32 of word v/32).
        matcher.fill_mask(&mut mask)?;
        let allowed = |v: u32| mask[(v / 32) as usize] >> (v % 32) & 1 == 1;
        let n = engine.vocab().len() as u32;
        let eos = engine.vocab().eos().first().copied();
        let pick = (0..n).find(|&v| allowed(v) && Some(v) != eos && step < 30).or(eos.filter(|&e| allowed(e)));
        let Some(token) = pick else { break };
        if Some(token) == eos {
            break;
        }
        // After sampling: commit the token (a rejected commit leaves the matcher unchanged).
        matcher.commit(token)?;
        out.extend_from_slice(engine.vocab().token_bytes(token).unwrap_or_default());
    }
    println!("{}", String::from_utf8_lossy(&out));
    println!("accepting: {}", matcher.is_accepting());
    Ok(())
}
