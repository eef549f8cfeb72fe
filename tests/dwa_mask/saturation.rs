//! Backward saturation (`dwac-compile/src/dwa/saturate/`) against the reference mask: the
//! tokens of an over-budget lexer state, beside a forward build or as the whole state.

use super::*;

/// The tokens of an over-budget lexer state are decided by an automaton saturated backwards
/// (`dwa/saturate/`), not left UNDECIDED: an ambiguous expression grammar whose operand may be
/// empty (Lua's shape: every `-` an operator or a prefix, ~2ⁿ stacks for a run of n), long runs
/// in the vocabulary, a tight work budget. Lexings with a priority guard (`K` over `X` on `xx`)
/// are built forward, and the saturated automaton is the state's second start. Masks equal the
/// reference; with saturation off the same build leaves tokens UNDECIDED.
#[test]
fn left_out_lexings_are_decided_by_a_saturated_second_automaton() {
    const BUDGET: u64 = 1_500;
    use dwac_compile::dwa::{build_mask_tables, MaskOptions};
    let src = "start: e\ne: e \"-\" e | \"-\" e | X | \"#\" K | t\nt: (\"[\" e \"]\")*\nX: /x+/\nK.2: \"xx\"\n";
    // (Runs up to 20, walks of 6 tokens: the reference commits every token, a GLR parse cubic
    // in the text's dashes under this grammar.)
    let runs: Vec<String> = (2..=20)
        .map(|n| "-".repeat(n))
        .chain([
            "x-x".into(),
            "-x".into(),
            "]--".into(),
            "[-".into(),
            "xx".into(),
            "---x".into(),
            "-----------xx".into(),
            "#xx".into(),
        ])
        .collect();
    let vocab = vocab_over(b"x-[]#", 1, &runs.iter().map(String::as_str).collect::<Vec<_>>());
    let g = dwac_compile::parse_source(dwac_compile::SourceKind::Lark, src).unwrap();
    let c = dwac_compile::compile_grammar(&g).unwrap();
    let off = MaskOptions { work_per_lexer_state: BUDGET, saturate: false, ..MaskOptions::default() };
    let (_, without) = build_mask_tables(&c.tables, &vocab, &off).unwrap();
    assert!(without.undecided_tokens > 0, "{without:?}");
    let tight = MaskOptions { work_per_lexer_state: BUDGET, ..MaskOptions::default() };
    let (mask, stats) = build_mask_tables(&c.tables, &vocab, &tight).unwrap();
    eprintln!("{stats:?}");
    assert!(stats.second_starts > 0, "{stats:?}");
    assert!(stats.undecided_tokens == 0 && stats.tokens_saturated > 0, "{stats:?}");
    assert!(mask.aux_start.iter().any(|&d| d != dwac_runtime::unstable::NONE));
    // By default this build's attempts are too short for a race. With a race beside every first
    // attempt (restarted after no work at all, so capped at about none), the saturation wins;
    // restarted after a little work, the race is run in earnest. The cheaper automaton is
    // kept, counted in steps, not time: the tables are the same on every run, however the
    // threads are scheduled, and exact. (Forward builds winning races: the next test.)
    assert_eq!(stats.saturations_beside, 0, "{stats:?}");
    let at_once = MaskOptions { saturate_beside: (0, 0), ..tight.clone() };
    let (at_once_mask, at_once_stats) = build_mask_tables(&c.tables, &vocab, &at_once).unwrap();
    eprintln!("{at_once_stats:?}");
    assert!(at_once_stats.saturations_beside > 0, "{at_once_stats:?}");
    // (Only states with a lexing of more than 8 lexemes are raced: the others, whose lexings
    // are all short, are built forward whatever their work, `later::has_long_lexings`; a later
    // state taking an earlier one's saturation is `long_lexings_are_saturated_apart_…`'s.)
    assert!(at_once_stats.saturations_won > 0, "{at_once_stats:?}");
    let engine = Arc::new(Engine::with_mask(c.tables.clone(), vocab.clone(), Some(at_once_mask)).unwrap());
    let n = differential(&engine, 24, 6, 41);
    assert!(n > 100, "{n} masks compared");
    let raced_at = [20, 50, 100, 200, 400].into_iter().find_map(|base| {
        let beside = MaskOptions { saturate_beside: (base, 0), ..tight.clone() };
        let (raced, s) = build_mask_tables(&c.tables, &vocab, &beside).unwrap();
        (s.saturations_beside > 0).then_some((beside, raced, s))
    });
    let (beside, raced, beside_stats) = raced_at.expect("no share at which a race is run after some work");
    eprintln!("{beside_stats:?}");
    for _ in 0..3 {
        let (again, _) = build_mask_tables(&c.tables, &vocab, &beside).unwrap();
        assert!(again == raced, "the raced tables differ between runs");
    }
    let engine = Arc::new(Engine::with_mask(c.tables.clone(), vocab.clone(), Some(raced)).unwrap());
    let n = differential(&engine, 24, 6, 42);
    assert!(n > 100, "{n} masks compared");
    let engine = Arc::new(Engine::with_mask(c.tables.clone(), vocab.clone(), Some(mask)).unwrap());
    let n = differential(&engine, 24, 6, 43);
    assert!(n > 100, "{n} masks compared");
    // Every lexer state saturated (a work budget of 0: no forward build at all).
    let none = MaskOptions { work_per_lexer_state: 0, ..MaskOptions::default() };
    let (mask, stats) = build_mask_tables(&c.tables, &vocab, &none).unwrap();
    // (Only tokens whose lexings may carry the guard, those with an `x`, stay UNDECIDED, in
    // some of the lexer states, decided by commit.)
    let guarded = (0..vocab.len() as u32).filter(|&v| vocab.token_bytes(v).is_some_and(|b| b.contains(&b'x'))).count();
    assert!(stats.second_starts == 0 && stats.undecided_tokens > 0, "{stats:?}");
    assert!(stats.undecided_tokens <= guarded * stats.lexer_states_over_budget, "{guarded} with `x`: {stats:?}");
    assert!(stats.lexer_states_over_budget > 0 && stats.tokens_saturated > 0, "{stats:?}");
    let engine = Arc::new(Engine::with_mask(c.tables, vocab, Some(mask)).unwrap());
    let n = differential(&engine, 24, 6, 44);
    assert!(n > 100, "{n} masks compared");
}

/// A state whose every class saturation expresses, with lexings both short and long (runs of
/// up to 30 operators), is saturated in two automata, the long lexings apart
/// (`saturate::saturate_split`), the second at the state's second start; a later state whose
/// lexings are all among its classes' takes both, restricted to its own classes
/// (`Saturated::restricted`). Masks equal the reference, and the tables are the same on every
/// run (the halves run on two threads).
#[test]
fn long_lexings_are_saturated_apart_at_a_second_start() {
    use dwac_compile::dwa::{build_mask_tables, MaskOptions};
    let src = "start: e\ne: e \"-\" e | \"-\" e | X | t\nt: (\"[\" e \"]\")*\nX: /x+/\n";
    let runs: Vec<String> = (2..=30)
        .map(|n| "-".repeat(n))
        .chain(["x-x".into(), "-x".into(), "]--".into(), "[-".into(), "---x".into(), "-".repeat(20) + "x"])
        .collect();
    // (Every string of up to 4 of these characters: over `saturate::SPLIT_MIN_CLASSES` classes.)
    let vocab = vocab_over(b"x-[]", 4, &runs.iter().map(String::as_str).collect::<Vec<_>>());
    let g = dwac_compile::parse_source(dwac_compile::SourceKind::Lark, src).unwrap();
    let c = dwac_compile::compile_grammar(&g).unwrap();
    let opts = MaskOptions { work_per_lexer_state: 1_500, saturate_beside: (0, 0), ..MaskOptions::default() };
    let (mask, stats) = build_mask_tables(&c.tables, &vocab, &opts).unwrap();
    eprintln!("{stats:?}");
    assert!(stats.saturations_split > 0 && stats.second_starts > 0, "{stats:?}");
    // (Another lexer state's lexings are all among the first's: it takes the first's two
    // automata, restricted to its classes.)
    assert!(stats.saturations_shared > 0, "{stats:?}");
    assert_eq!(stats.undecided_tokens, 0, "{stats:?}");
    assert!(mask.aux_start.iter().any(|&d| d != dwac_runtime::unstable::NONE));
    for _ in 0..3 {
        let (again, _) = build_mask_tables(&c.tables, &vocab, &opts).unwrap();
        assert!(again == mask, "the split saturation's tables differ between runs");
    }
    let engine = Arc::new(Engine::with_mask(c.tables.clone(), vocab.clone(), Some(mask)).unwrap());
    let n = differential(&engine, 24, 8, 45);
    assert!(n > 100, "{n} masks compared");
    // Restarted after a little work, some forward builds succeed: a split saturation then
    // gives up (it decides only where the forward build fails), the same on every run.
    // (Below a share of about 21,000 work here, every restart is capped or loses.)
    let raced_at = (20..60).map(|i| i * i * 25).find_map(|base| {
        let beside = MaskOptions { work_per_lexer_state: 200_000, saturate_beside: (base, 0), ..opts.clone() };
        let (raced, s) = build_mask_tables(&c.tables, &vocab, &beside).unwrap();
        (s.saturations_won < s.saturations_beside).then_some((beside, raced, s))
    });
    let (beside, raced, beside_stats) = raced_at.expect("no share at which a forward build wins a race");
    eprintln!("{beside_stats:?}");
    for _ in 0..3 {
        let (again, _) = build_mask_tables(&c.tables, &vocab, &beside).unwrap();
        assert!(again == raced, "the raced tables differ between runs");
    }
    let engine = Arc::new(Engine::with_mask(c.tables, vocab, Some(raced)).unwrap());
    let n = differential(&engine, 24, 8, 46);
    assert!(n > 100, "{n} masks compared");
}

/// A state whose lexings are all short (at most 8 lexemes: JSON's tokens) is never raced, however
/// long its first attempt (`later::has_long_lexings`): its forward build is polynomial, and
/// racing it only cost (JsonSchemaStore's schemas, 100 open tools: twice the time, four times
/// the memory). With a race beside every first attempt asked for, the build is the default one.
#[test]
fn states_with_short_lexings_are_not_raced() {
    use dwac_compile::dwa::{build_mask_tables, MaskOptions};
    let vocab = vocab_over(b"{}[]:,\"a1 ", 2, &["{\"", "\":", "\": ", "\",", "true", "null", "}}]", "]]", "\"a\""]);
    let src = std::fs::read_to_string(repo_root().join("grammars/json.lark")).unwrap();
    let g = dwac_compile::parse_source(dwac_compile::SourceKind::Lark, &src).unwrap();
    let c = dwac_compile::compile_grammar(&g).unwrap();
    let (expected, _) = build_mask_tables(&c.tables, &vocab, &MaskOptions::default()).unwrap();
    let at_once = MaskOptions { saturate_beside: (0, 0), ..MaskOptions::default() };
    let (mask, stats) = build_mask_tables(&c.tables, &vocab, &at_once).unwrap();
    assert_eq!(stats.saturations_beside, 0, "{stats:?}");
    assert!(mask == expected, "a race asked for changed the tables");
    // (The same options do race a state with long lexings: the test above.)
}
