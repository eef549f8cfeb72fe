//! dwac-vocab's tests, one binary: added tokens, GGUF vocabularies, llama.cpp's own
//! tokenizer test vectors, round trips over real text, and each tokenizer's tables.

mod added_tokens;
mod common;
mod gguf;
mod llama_cpp;
mod roundtrip;
mod tables;
