//! The runtime never panics: random bytes and tokens against real grammars leave a
//! rejected matcher unchanged, and corrupted tables are refused by `Engine::new` or run safely.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use dwac_compile::{compile_grammar, parse_source, SourceKind};
use dwac_runtime::{unstable::GrammarTables, Engine, Matcher};
use dwac_tests::*;

fn json_tables() -> GrammarTables {
    let src = std::fs::read_to_string(repo_root().join("grammars/json.lark")).unwrap();
    compile_grammar(&parse_source(SourceKind::Lark, &src).unwrap()).unwrap().tables
}

#[test]
fn random_commits_never_panic_and_rejections_change_nothing() {
    let vocab = synthetic_vocab(&[
        b"{", b"}", b"\"a\"", b":", b" ", b"1", b"[", b"]", b",", b"\"", b"\\", b"\xff", b"tr", b"ue",
    ]);
    let n = vocab.len() as u32;
    let engine = Arc::new(Engine::new(json_tables(), vocab).unwrap());
    let mut rng = Rng(42);
    let mut accepted_steps = 0;
    for _ in 0..300 {
        let mut m = Matcher::new(engine.clone());
        for _ in 0..40 {
            let before = m.reference_allowed();
            let (pos, hist) = (m.position(), m.history_len());
            let tok = rng.below(n as usize + 3) as u32; // includes out-of-range ids
            match m.commit(tok) {
                Ok(()) => {
                    assert!(before.contains(&tok), "committed {tok} outside the reference mask");
                    accepted_steps += 1;
                }
                Err(_) => {
                    assert!(!before.contains(&tok), "rejected {tok} inside the reference mask");
                    assert_eq!((m.position(), m.history_len()), (pos, hist));
                    assert_eq!(m.reference_allowed(), before);
                }
            }
            if m.is_terminated() {
                break;
            }
        }
        // Random raw bytes, including invalid UTF-8.
        let bytes: Vec<u8> = (0..rng.below(12)).map(|_| rng.next_u64() as u8).collect();
        let pos = m.position();
        if m.commit_bytes(&bytes).is_err() {
            assert_eq!(m.position(), pos);
        }
    }
    assert!(accepted_steps > 500, "{accepted_steps}");
}

#[test]
fn corrupted_tables_are_refused_or_run_safely() {
    let good = json_tables();
    let vocab = synthetic_vocab(&[b"{", b"}", b"\"a\"", b":", b" ", b"1", b"[", b"]"]);
    let mut rng = Rng(7);
    let (mut refused, mut ran) = (0, 0);
    for _ in 0..400 {
        let mut t = good.clone();
        let r = rng.next_u64() as u32;
        let v = match rng.below(4) {
            0 => r,
            1 => r % 64,
            2 => u32::MAX,
            _ => r % 4096,
        };
        macro_rules! poke {
            ($vec:expr) => {{
                let len = $vec.len();
                if len > 0 {
                    let i = rng.below(len);
                    $vec.to_mut()[i] = v as _;
                }
            }};
        }
        match rng.below(13) {
            0 => poke!(t.lexer.trans),
            1 => poke!(t.lexer.accept),
            2 => poke!(t.lexer.accept_off),
            3 => poke!(t.lexer.next_plus),
            4 => poke!(t.lr.action_term),
            5 => poke!(t.lr.actions),
            6 => poke!(t.lr.action_off),
            7 => poke!(t.lr.goto_target),
            8 => poke!(t.lr.goto_nt),
            9 => poke!(t.lr.rule_len),
            10 => poke!(t.lr.rule_lhs),
            11 => t.lexer.start = v,
            _ => t.lr.num_states = v,
        }
        let res = catch_unwind(AssertUnwindSafe(|| match Engine::new(t, vocab.clone()) {
            Err(_) => false,
            Ok(e) => {
                let mut m = Matcher::new(Arc::new(e));
                let _ = m.commit_bytes(b"{\"a\": [1, ");
                let _ = m.reference_allowed();
                let _ = m.commit_bytes(b"2]}");
                let _ = m.is_accepting();
                true
            }
        }));
        match res {
            Ok(true) => ran += 1,
            Ok(false) => refused += 1,
            Err(_) => panic!("panicked on corrupted tables"),
        }
    }
    println!("{refused} refused, {ran} ran safely");
    assert!(refused > 100);
}
