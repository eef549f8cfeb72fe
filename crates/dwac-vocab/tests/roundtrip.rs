//! encode → concatenate token bytes → must equal the input, over a real corpus, for every
//! tokenizer in `shared/data/tokenizers` and for the embedded default.

use crate::common;

use std::time::Instant;

use common::{corpus, data_dir, load, round_trip, Stats};
use dwac_vocab::Tokenizer;

/// Every `step`-th MaskBench file (1 = all of them).
fn run(tok: &Tokenizer, step: usize) {
    let data = data_dir();
    let c = corpus(&data);
    let t0 = Instant::now();
    let mut st = Stats::default();
    let mut files = 0;
    for (name, texts) in c.maskbench.iter().step_by(step) {
        files += 1;
        for (i, t) in texts.iter().enumerate() {
            round_trip(tok, &format!("{name} text {i}"), t, &mut st);
        }
    }
    for (name, t) in &c.grammars {
        round_trip(tok, name, t, &mut st);
    }
    for (i, t) in c.tricky.iter().enumerate() {
        round_trip(tok, &format!("tricky text {i}"), t, &mut st);
    }
    eprintln!(
        "{}: {} texts ({} of {} MaskBench files, {} grammar files, {} tricky), {} bytes, {} tokens, 0 differences, {:.1?}",
        tok.name(),
        st.texts,
        files,
        c.maskbench.len(),
        c.grammars.len(),
        c.tricky.len(),
        st.bytes,
        st.tokens,
        t0.elapsed()
    );
    assert!(files > 0 && st.texts > 0);
}

#[test]
fn gpt2_round_trips() {
    let data = data_dir();
    run(&load(&data, "gpt2"), 1);
}

#[test]
fn qwen3_round_trips() {
    let data = data_dir();
    run(&load(&data, "qwen3"), 1);
}

#[test]
fn qwen2_round_trips() {
    let data = data_dir();
    run(&load(&data, "qwen2"), 1);
}

#[test]
fn deepseek_r1_round_trips() {
    let data = data_dir();
    run(&load(&data, "deepseek-r1"), 1);
}

#[test]
fn phi_3_5_mini_round_trips() {
    let data = data_dir();
    run(&load(&data, "phi-3.5-mini"), 1);
}

#[test]
fn embedded_default_round_trips() {
    let tok = Tokenizer::default_embedded().expect("embedded tokenizer");
    assert_eq!(tok.name(), "gpt2");
    let mut st = Stats::default();
    for (i, t) in common::tricky_texts().iter().enumerate() {
        round_trip(&tok, &format!("tricky text {i}"), t, &mut st);
    }
    run(&tok, 7);
}
