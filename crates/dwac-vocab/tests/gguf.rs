//! GGUF vocabularies (`../shared/data/tokenizers/llama.cpp-vocab/*.gguf`), proved exact two ways:
//! (a) llama.cpp's own tokenization vectors spell their inputs with the bytes we read from the
//! GGUF; (b) the GGUF and the `tokenizer.json` of the same model give the same bytes, special
//! flags and end tokens for every id, and the same fingerprint where they describe the same
//! vocabulary. Plus: the header-only read of a huge file, and clear errors on bad files.

use crate::common;

use std::path::PathBuf;

use common::{data_dir, load, spell};
use dwac_vocab::{Family, GgufError, Tokenizer, VocabError};

fn gguf_path(vocab: &str) -> PathBuf {
    dwac_testdata::gguf_vocab(vocab)
}

fn gguf(vocab: &str) -> Tokenizer {
    let p = gguf_path(vocab);
    Tokenizer::from_gguf(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// (input, expected ids) of llama.cpp's vectors for `vocab`.
fn vectors(vocab: &str) -> Vec<(String, Vec<u32>)> {
    let p = gguf_path(vocab);
    let inp = std::fs::read_to_string(p.with_extension("gguf.inp")).expect(".inp");
    let out = std::fs::read_to_string(p.with_extension("gguf.out")).expect(".out");
    let mut inputs: Vec<&str> = inp.split("\n__ggml_vocab_test__\n").collect();
    let mut outputs: Vec<&str> = out.split('\n').collect();
    assert_eq!((inputs.pop(), outputs.pop()), (Some(""), Some("")));
    assert_eq!(inputs.len(), outputs.len());
    inputs
        .into_iter()
        .zip(outputs)
        .map(|(i, o)| (i.to_string(), o.split_whitespace().map(|x| x.parse().expect("id")).collect()))
        .collect()
}

/// (a): every vector's ids, spelled with the GGUF's bytes, are the input (after the space
/// llama.cpp's SentencePiece tokenizer prepends to a non-empty input); our own encoder, which
/// is exact by construction (checked), spells the same text.
fn vectors_spell_their_inputs(vocab: &str, space_prefix: bool) {
    let tok = gguf(vocab);
    let vecs = vectors(vocab);
    assert!(vecs.len() >= 40, "{vocab}: {} vectors", vecs.len());
    let mut tokens = 0;
    for (i, (text, ids)) in vecs.iter().enumerate() {
        let want = if space_prefix && !text.is_empty() { format!(" {text}") } else { text.clone() };
        assert_eq!(spell(&tok, ids), want.as_bytes(), "{vocab} vector {i} ({want:?}): ids {ids:?}");
        assert_eq!(spell(&tok, &tok.encode(&want).expect("encode")), want.as_bytes());
        tokens += ids.len();
    }
    eprintln!("{vocab}: {} vectors, {tokens} tokens spelled exactly", vecs.len());
}

#[test]
fn gpt2_gguf_spells_llama_cpp_vectors() {
    vectors_spell_their_inputs("gpt-2", false);
}

#[test]
fn qwen2_gguf_spells_llama_cpp_vectors() {
    vectors_spell_their_inputs("qwen2", false);
}

#[test]
fn phi3_gguf_spells_llama_cpp_vectors() {
    vectors_spell_their_inputs("phi-3", true);
}

/// (b): the GGUF against the `tokenizer.json` of the same model: every id both have gets the
/// same bytes and special flag; returns both.
fn compare(vocab: &str, hf: &str) -> (Tokenizer, Tokenizer) {
    let g = gguf(vocab);
    let h = load(&data_dir(), hf);
    let (gv, hv) = (g.vocab(), h.vocab());
    let shared = gv.len().min(hv.len()) as u32;
    let mut differ = Vec::new();
    for id in 0..shared {
        if gv.token_bytes(id) != hv.token_bytes(id) || gv.is_special(id) != hv.is_special(id) {
            differ.push(id);
        }
    }
    assert!(
        differ.is_empty(),
        "{vocab} vs {hf}: {} ids differ, first {:?}",
        differ.len(),
        &differ[..differ.len().min(10)]
    );
    assert_eq!(g.family(), h.family());
    eprintln!(
        "{vocab}: {} ids (tokenizer.json {}), {shared} compared, fingerprints {} / {}",
        gv.len(),
        hv.len(),
        g.fingerprint_hex(),
        h.fingerprint_hex()
    );
    (g, h)
}

#[test]
fn gpt2_gguf_and_tokenizer_json_are_one_vocabulary() {
    let (g, h) = compare("gpt-2", "gpt2");
    assert_eq!(g.vocab().len(), 50257);
    assert_eq!(g.vocab().eos(), h.vocab().eos());
    assert_eq!(g.fingerprint(), h.fingerprint());
    // The embedded default is the same vocabulary too.
    assert_eq!(g.fingerprint(), Tokenizer::default_embedded().unwrap().fingerprint());
    assert_eq!(g.name(), "ggml-vocab-gpt-2");
}

#[test]
fn phi3_gguf_and_tokenizer_json_are_one_vocabulary() {
    // The GGUF has 32,064 ids: the 53 past 32,010 are unknown-type padding `[PAD…]`, left out as
    // the tokenizer.json leaves them out. `</s>` (user-defined in the GGUF) is special in both.
    let (g, h) = compare("phi-3", "phi-3.5-mini");
    assert_eq!(g.family(), Family::SentencePiece);
    assert_eq!(g.vocab().len(), 32011);
    assert!(g.vocab().is_special(2));
    assert_eq!(g.vocab().eos(), h.vocab().eos());
    assert_eq!(g.fingerprint(), h.fingerprint());
}

#[test]
fn qwen2_gguf_is_the_tokenizer_json_plus_its_padding_tokens() {
    // Qwen2's GGUF has 151,936 ids; the 290 past the tokenizer.json's 151,646 are user-defined
    // tokens `[PAD151646]`… that llama.cpp renders as text, so they are text here too and the
    // vocabularies (and fingerprints) differ, as the masks over them would.
    let (g, h) = compare("qwen2", "qwen2");
    assert_eq!((g.vocab().len(), h.vocab().len()), (151936, 151646));
    for id in 151646..151936u32 {
        assert_eq!(g.vocab().token_bytes(id), Some(format!("[PAD{id}]").as_bytes()));
        assert!(!g.vocab().is_special(id));
    }
    assert_eq!(g.vocab().eos(), vec![151643]);
    assert_eq!(g.vocab().eos(), h.vocab().eos());
    assert_ne!(g.fingerprint(), h.fingerprint());
}

/// `Tokenizer::from_file` recognises a GGUF by its magic, whatever the file is called.
#[test]
fn from_file_reads_a_gguf_by_its_magic() {
    let p = gguf_path("gpt-2");
    let dir = tempdir("magic");
    let renamed = dir.join("model.bin");
    std::fs::copy(&p, &renamed).unwrap();
    let t = Tokenizer::from_file(&renamed).unwrap();
    assert_eq!(t.fingerprint(), gguf("gpt-2").fingerprint());
}

fn tempdir(tag: &str) -> PathBuf {
    // (Under the target directory cargo gives integration tests: nothing is left in /tmp.)
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("dwac-gguf-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn rss_kb() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines().find(|l| l.starts_with("VmRSS:"))?.split_whitespace().nth(1)?.parse().ok()
}

/// A 5 GiB model file costs only its header: the vocabulary is read from the map, the tensor
/// data (here a sparse hole) is never touched. Resident memory grows by far less than the file.
#[test]
fn a_5_gib_model_file_costs_only_its_header() {
    let p = gguf_path("qwen2");
    let dir = tempdir("big");
    let big = dir.join("big.gguf");
    std::fs::copy(&p, &big).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&big).unwrap();
    f.set_len(5 << 30).unwrap();
    drop(f);
    let before = rss_kb();
    let t = Tokenizer::from_file(&big).unwrap();
    let after = rss_kb();
    assert_eq!(t.vocab().len(), 151936);
    if let (Some(a), Some(b)) = (before, after) {
        // The header is 5.9 MB; the tables built from it (bytes, encoder) a few tens of MB.
        assert!(b.saturating_sub(a) < 512 * 1024, "RSS grew by {} MB", (b - a) / 1024);
        eprintln!("5 GiB GGUF: RSS grew by {} MB", b.saturating_sub(a) / 1024);
    }
    std::fs::remove_file(&big).unwrap();
}

/// Bad files: one clear error each, naming the file.
#[test]
fn bad_gguf_files_are_clear_errors() {
    let p = gguf_path("phi-3");
    let good = std::fs::read(&p).unwrap();
    let err = |bytes: &[u8]| match Tokenizer::from_gguf_bytes(bytes, "x") {
        Err(VocabError::Gguf { file, source }) => {
            assert_eq!(file, "x");
            source
        }
        Err(e) => panic!("not a GGUF error: {e}"),
        Ok(_) => panic!("accepted"),
    };
    assert!(matches!(err(&good[..good.len() / 2]), GgufError::Truncated { .. }));
    assert!(matches!(err(b"GGUF"), GgufError::Truncated { .. }));
    let mut v = good.clone();
    v[4..8].copy_from_slice(&4u32.to_le_bytes());
    assert_eq!(err(&v), GgufError::Version(4));
    let mut m = good.clone();
    m[..4].copy_from_slice(b"GGML");
    assert!(matches!(err(&m), GgufError::BadMagic(_)));
    let e = VocabError::Gguf { file: "model.gguf".into(), source: GgufError::Version(4) };
    assert_eq!(e.to_string(), "model.gguf: GGUF version 4 is not supported (supported: 2, 3)");
    // Fuzz smoke test: random byte flips anywhere in a real GGUF's header and key/value list
    // (lengths, type tags, counts, token text) give a vocabulary or an error, never a panic.
    let gpt2 = std::fs::read(gguf_path("gpt-2")).unwrap();
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut errors = 0;
    for i in 0..300 {
        let mut f = gpt2.clone();
        for _ in 0..1 + i % 3 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            // Half the flips land in the first 1 KiB (header, scalar keys, array headers).
            let at = if rng & 1 == 0 { (rng >> 8) as usize % 1024 } else { (rng >> 8) as usize % f.len() };
            f[at] ^= 1 << ((rng >> 40) % 8);
        }
        errors += usize::from(Tokenizer::from_gguf_bytes(&f, "fuzz").is_err());
    }
    assert!(errors > 0, "no flip was detected at all");
    // Every truncation of the header and key/value list is an error, never a panic.
    for n in (0..good.len()).step_by(997) {
        assert!(Tokenizer::from_gguf_bytes(&good[..n], "x").is_err(), "prefix {n}");
    }
}
