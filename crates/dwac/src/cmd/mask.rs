//! `dwac mask`: the allowed tokens after a prefix.

use anyhow::{bail, Result};
use dwac_runtime::{MaskScratch, Matcher};
use serde_json::json;

use crate::args::MaskArgs;
use crate::load::load;
use crate::report::escape;

pub(crate) fn mask(args: MaskArgs) -> Result<u8> {
    let l = load(&args.source, args.json)?;
    let mut m = Matcher::new(l.engine.clone());
    if let Err(e) = m.commit_bytes(args.prefix.as_bytes()) {
        bail!("the prefix is rejected by the grammar: {e}");
    }
    let mut sc = MaskScratch::default();
    let mut bits = vec![0u32; m.mask_words()];
    m.fill_mask_with(&mut sc, &mut bits)?;
    let allowed: Vec<u32> =
        (0..l.engine.vocab().len() as u32).filter(|&v| bits[(v / 32) as usize] >> (v % 32) & 1 == 1).collect();
    let source = if sc.fallbacks() > 0 { "reference" } else { "dwa" };
    let vocab = l.engine.vocab();
    let eos_allowed = vocab.eos().iter().any(|e| allowed.binary_search(e).is_ok());
    if args.json {
        let tokens: Vec<_> = allowed
            .iter()
            .map(|&v| json!({"id": v, "bytes": escape(vocab.token_bytes(v).unwrap_or_default())}))
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "prefix": args.prefix,
                "vocab_size": vocab.len(),
                "allowed": allowed.len(),
                "eos_allowed": eos_allowed,
                "tokens": tokens,
                "source": source,
            }))?
        );
    } else {
        println!(
            "after {:?}: {} of {} tokens allowed (end token {}), {} mask",
            args.prefix,
            allowed.len(),
            vocab.len(),
            if eos_allowed { "allowed" } else { "not allowed" },
            if source == "dwa" { "Parser DWA" } else { "reference" }
        );
        for &v in allowed.iter().take(args.limit) {
            println!("  {v:>7}  {}", escape(vocab.token_bytes(v).unwrap_or_default()));
        }
        if allowed.len() > args.limit {
            println!("  ... and {} more (--limit)", allowed.len() - args.limit);
        }
    }
    Ok(0)
}
