//! The end-to-end tests over real corpora, one test binary: a module per subject. One binary
//! links once (each of the seventeen it replaces linked the compiler and the runtime again) and
//! runs every test on one thread pool, so a long test shares the machine with the short ones
//! instead of waiting for them, file after file. `cargo test -p dwac-tests --test all artifact::`
//! runs one subject.

/// The allocator of the `dwac` binary and the bench worker: which freed addresses come back, and
/// when, is what `artifact::bytes_do_not_depend_on_concurrent_compiles` must not depend on.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod artifact;
mod components;
mod dwa_mask;
mod glr;
mod grammar_collection;
mod json_corpus;
mod json_schema;
mod lark_verdicts;
mod layout;
mod lexer_inference;
mod minimize;
mod priorities;
mod reference_mask;
mod robustness;
mod runtime_api;
mod stop;
mod structural_tag;
mod token_terminals;
