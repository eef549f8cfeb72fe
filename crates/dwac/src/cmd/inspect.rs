//! `dwac inspect`: an artifact's header, fingerprints, sections and grammar summary (verified).

use std::time::Instant;

use anyhow::Result;
use dwac_runtime::unstable::artifact::{hex, kind_info};
use serde_json::json;

use crate::args::InspectArgs;
use crate::load::open_artifact;

/// `dwac inspect`: header, fingerprints, sections and the metadata's summary.
pub(crate) fn inspect(args: InspectArgs) -> Result<u8> {
    let path = &args.artifact;
    let t0 = Instant::now();
    let art = open_artifact(path, args.tokenizer.as_deref())?;
    let open_us = t0.elapsed().as_secs_f64() * 1e6;
    let h = art.header();
    let meta: serde_json::Value = serde_json::from_str(art.metadata()).unwrap_or(serde_json::Value::Null);
    let file_bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let sections: Vec<serde_json::Value> = art
        .sections()
        .iter()
        .map(|e| {
            json!({
                "kind": format!("{:#06x}", e.kind),
                "name": kind_info(e.kind).map_or("unknown (optional)", |i| i.0),
                "offset": e.offset,
                "bytes": e.len,
                "narrow": e.flags & dwac_runtime::unstable::artifact::SECTION_NARROW != 0,
            })
        })
        .collect();
    let v = art.engine().vocab();
    let out = json!({
        "artifact": path.display().to_string(),
        "format": format!("{}.{}", h.major, h.minor),
        "file_bytes": file_bytes,
        "bytes": art.len(),
        "compressed": file_bytes as usize != art.len(),
        "verified": true,
        "compiler": meta["compiler"],
        "source": meta["source"],
        "options": meta["options"],
        "tokenizer": meta["tokenizer"]["name"],
        "tokenizer_fingerprint": hex(&h.tokenizer_fingerprint),
        "grammar_fingerprint": hex(&h.grammar_fingerprint),
        "vocab_size": h.vocab_size,
        "eos": v.eos(),
        "mask_words": h.mask_words,
        "terminals": h.num_terminals,
        "lexer_states": h.lexer_states,
        "lr_states": h.lr_states,
        "nonterminals": h.num_nonterminals,
        "dwa_states": h.dwa_states,
        "token_sets": h.token_sets,
        "max_lookback": meta["mask"]["max_lookback"],
        "undecided_tokens": meta["mask"]["undecided_tokens"],
        "grammar": meta["grammar"],
        "sections": sections,
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        eprintln!("opened and verified in {open_us:.0} µs");
        return Ok(0);
    }
    let src = &meta["source"];
    let g = &meta["grammar"];
    let s = |x: &serde_json::Value| x.as_str().map_or_else(|| x.to_string(), str::to_string);
    println!(
        "artifact     {} ({} bytes{})",
        out["artifact"].as_str().unwrap_or(""),
        art.len(),
        if out["compressed"] == true { format!(", {file_bytes} as zstd") } else { String::new() }
    );
    println!("format       {} (verified: checksums and every table index)", s(&out["format"]));
    println!("compiler     {}", s(&meta["compiler"]));
    println!("source       {} ({}, sha256 {})", s(&src["name"]), s(&src["kind"]), s(&src["sha256"]));
    println!("tokenizer    {} ({} tokens, EOS {:?})", s(&out["tokenizer"]), h.vocab_size, v.eos());
    println!("  fingerprint {}", hex(&h.tokenizer_fingerprint));
    println!("grammar fp   {}", hex(&h.grammar_fingerprint));
    println!(
        "grammar      {} terminals, {} rules ({} normalized), {} lexer states, {} LR states, {} LR conflicts",
        h.num_terminals,
        s(&g["rules"]),
        s(&g["rules_normalized"]),
        h.lexer_states,
        h.lr_states,
        s(&g["lr_conflicts"])
    );
    if let Some(li) = g["lexer_inference"].as_object() {
        let names = |v: &serde_json::Value| {
            v.as_array().map(|a| a.iter().map(s).collect::<Vec<_>>().join(", ")).unwrap_or_default()
        };
        let terminals = li.get("terminals").and_then(|t| t.as_array()).cloned().unwrap_or_default();
        println!(
            "lexer inference  {} regular rules lifted into {} terminals{}: {}",
            li.get("regular_rules").and_then(|r| r.as_array()).map_or(0, Vec::len),
            terminals.len(),
            if li.get("whole_grammar") == Some(&serde_json::Value::Bool(true)) { " (the whole grammar)" } else { "" },
            names(&li["regular_rules"])
        );
        for t in &terminals {
            println!("  terminal {:<40} from {}", s(&t["name"]), names(&t["rules"]));
        }
    }
    if let Some(tt) = g["token_terminals"].as_object() {
        let escaped = tt.get("escaped_tokens").and_then(|e| e.as_array()).map_or(0, Vec::len);
        let terminals = tt.get("terminals").and_then(|t| t.as_array()).cloned().unwrap_or_default();
        println!("token terminals  {} terminals naming {escaped} tokens (spelled by their escapes)", terminals.len());
        for t in &terminals {
            println!("  terminal {:<40} {} tokens", s(&t["name"]), s(&t["tokens"]));
        }
    }
    if h.flags & dwac_runtime::unstable::artifact::FLAG_MASK != 0 {
        println!(
            "parser DWA   {} states, {} token sets, max lookback {}, {} undecided (lexer state, token) pairs",
            h.dwa_states,
            h.token_sets,
            s(&out["max_lookback"]),
            s(&out["undecided_tokens"])
        );
    } else {
        println!("parser DWA   none (masks are computed by the reference oracle)");
    }
    println!("options      {}", meta["options"]);
    println!("sections     {}", art.sections().len());
    for e in art.sections() {
        println!(
            "  {:#06x} {:<20} offset {:>10} {:>10} bytes{}",
            e.kind,
            kind_info(e.kind).map_or("unknown (optional)", |i| i.0),
            e.offset,
            e.len,
            if e.flags & dwac_runtime::unstable::artifact::SECTION_NARROW != 0 { " (u16)" } else { "" }
        );
    }
    Ok(0)
}
