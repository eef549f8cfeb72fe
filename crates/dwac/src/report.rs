//! Output helpers shared by the subcommands: the progress bar, statistics as JSON, percentiles,
//! byte escaping, mask bits.

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use dwac_compile::CompileStats;
use serde_json::json;

/// A progress bar over the Parser DWA's lexer states, shown once the build has run a second.
pub(crate) fn lexer_state_bar(quiet: bool) -> (indicatif::ProgressBar, impl FnMut(u64, u64) -> ControlFlow<String>) {
    let bar = indicatif::ProgressBar::hidden();
    bar.set_style(
        indicatif::ProgressStyle::with_template("compiling {bar:40} {pos}/{len} lexer states {elapsed}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let t0 = Instant::now();
    let mut shown = false;
    let b = bar.clone();
    let progress = move |done: u64, total: u64| {
        if !quiet && !shown && t0.elapsed() > Duration::from_secs(1) {
            b.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            shown = true;
        }
        b.set_length(total);
        b.set_position(done);
        ControlFlow::Continue(())
    };
    (bar, progress)
}

pub(crate) fn bit(mask: &[u32], v: u32) -> bool {
    mask[(v / 32) as usize] >> (v % 32) & 1 == 1
}

pub(crate) fn mask_stats_json(stats: &CompileStats) -> serde_json::Value {
    match &stats.mask {
        Some(m) => json!({
            "dwa_states": m.dwa_states,
            "dwa_states_assembled": m.dwa_states_assembled,
            "dwa_states_linked": m.dwa_states_linked,
            "max_lookback": if m.max_lookback == u32::MAX { json!("unbounded") } else { json!(m.max_lookback) },
            "undecided_tokens": m.undecided_tokens,
            "token_classes": m.token_classes,
            "token_sets": m.token_sets,
            "lexer_states_with_dwa": m.lexer_states_with_dwa,
            "lexer_states_over_budget": m.lexer_states_over_budget,
            "lexer_states_cut": m.lexer_states_cut,
            "tokens_saturated": m.tokens_saturated,
            "saturations_beside": m.saturations_beside,
            "saturations_won": m.saturations_won,
            "saturations_split": m.saturations_split,
            "saturations_shared": m.saturations_shared,
            "lexer_states_apart": m.lexer_states_apart,
            "second_starts": m.second_starts,
            "lexer_states_shared": m.lexer_states_shared,
            "lexer_states_renamed": m.lexer_states_renamed,
            "automata_reused": m.automata_reused,
            "slowest_lexer_state_ms": (m.slowest_lexer_state_ms * 10.0).round() / 10.0,
            "carried_inhibitors": m.carried_inhibitors,
            "dwa_build_ms": (m.build_ms * 10.0).round() / 10.0,
            "stages_ms": stats.stages_ms.iter().map(|(n, t)| (n.to_string(), json!((t * 10.0).round() / 10.0))).collect::<serde_json::Map<_, _>>(),
        }),
        None => json!(null),
    }
}

pub(crate) fn print_compiled(rec: &serde_json::Value, json_out: bool) {
    if json_out {
        println!("{rec}");
        return;
    }
    let zstd = if rec["zstd"] == true { format!(", zstd of {} raw", rec["raw_bytes"]) } else { String::new() };
    println!(
        "{} -> {} ({} bytes{zstd}): {} tokens ({}), {} lexer states, {} LR states; Parser DWA {} states, max lookback {}; {} ms",
        rec["input"].as_str().unwrap_or(""),
        rec["artifact"].as_str().unwrap_or(""),
        rec["bytes"],
        rec["vocab_size"],
        rec["tokenizer"].as_str().unwrap_or(""),
        rec["lexer_states"],
        rec["lr_states"],
        rec["dwa_states"],
        rec["max_lookback"],
        rec["compile_ms"],
    );
    if rec["undecided_tokens"].as_u64().is_some_and(|u| u > 0) {
        println!(
            "note: {} (lexer state, token) pairs are decided at run time by committing the token (exact, slower); {} lexer states ran over the automaton budget",
            rec["undecided_tokens"], rec["lexer_states_over_budget"]
        );
    }
}

pub(crate) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// p50/p90/p99/p99.9/max/mean of microsecond timings ([`dwac_measure::Summary`]), rounded to
/// hundredths; `null` for none.
pub(crate) fn percentiles(v: Vec<f64>) -> serde_json::Value {
    let Some(s) = dwac_measure::Summary::of(v) else { return json!(null) };
    let r = |x: f64| (x * 100.0).round() / 100.0;
    json!({"p50": r(s.p50), "p90": r(s.p90), "p99": r(s.p99), "p999": r(s.p999), "max": r(s.max), "mean": r(s.mean)})
}

pub(crate) fn escape(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}
