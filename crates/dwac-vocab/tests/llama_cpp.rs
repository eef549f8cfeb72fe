//! llama.cpp's tokenizer test vectors (`ggml-vocab-*.gguf.inp` / `.out`): our byte tables must
//! spell llama.cpp's expected ids back into the input text.
//!
//! * gpt-2 and qwen2: exactly the input.
//! * phi-3: llama.cpp's SentencePiece tokenizer prepends a space to every non-empty input
//!   (`add_space_prefix`), so the ids spell `" " + input` (and the empty input spells nothing).
//!   Our `encode` never prepends anything, so it reproduces llama.cpp's ids when given that
//!   space explicitly.

use crate::common;

use common::{data_dir, load, spell};

/// (input, expected ids) pairs.
fn vectors(name: &str) -> Vec<(String, Vec<u32>)> {
    let dir = data_dir().join("tokenizers/llama.cpp-vocab");
    let inp = std::fs::read_to_string(dir.join(format!("ggml-vocab-{name}.gguf.inp"))).expect("read .inp");
    let out = std::fs::read_to_string(dir.join(format!("ggml-vocab-{name}.gguf.out"))).expect("read .out");
    let mut inputs: Vec<&str> = inp.split("\n__ggml_vocab_test__\n").collect();
    let mut outputs: Vec<&str> = out.split('\n').collect();
    // Both files end with a separator / newline.
    assert_eq!(inputs.pop(), Some(""));
    assert_eq!(outputs.pop(), Some(""));
    assert_eq!(inputs.len(), outputs.len());
    assert!(inputs.len() >= 40, "{name}: only {} vectors", inputs.len());
    inputs
        .into_iter()
        .zip(outputs)
        .map(|(i, o)| {
            let ids = o.split_whitespace().map(|x| x.parse().expect("id")).collect();
            (i.to_string(), ids)
        })
        .collect()
}

fn check(tokenizer: &str, vocab: &str, space_prefix: bool) {
    let data = data_dir();
    let vecs = vectors(vocab);
    let tok = load(&data, tokenizer);
    let mut same_ids = 0;
    for (i, (text, ids)) in vecs.iter().enumerate() {
        let want = if space_prefix && !text.is_empty() { format!(" {text}") } else { text.clone() };
        let got = spell(&tok, ids);
        assert_eq!(
            String::from_utf8_lossy(&got),
            want,
            "{vocab} vector {i}: llama.cpp ids {ids:?} spell something else"
        );
        assert_eq!(got, want.as_bytes(), "{vocab} vector {i}");
        let ours = tok.encode(&want).expect("encode");
        if ours == *ids {
            same_ids += 1;
        } else {
            eprintln!("{vocab} vector {i} {want:?}: ours {ours:?} vs llama.cpp {ids:?}");
        }
    }
    eprintln!("{vocab}: {} vectors spelled exactly; encode gave llama.cpp's ids for {same_ids}", vecs.len());
    assert_eq!(same_ids, vecs.len(), "{vocab}: our encoding differs from llama.cpp's");
}

#[test]
fn gpt2_vectors() {
    check("gpt2", "gpt-2", false);
}

#[test]
fn qwen2_vectors() {
    check("qwen2", "qwen2", false);
}

#[test]
fn phi3_vectors() {
    check("phi-3.5-mini", "phi-3", true);
}
