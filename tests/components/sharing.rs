//! What builds share (the walking thread, closure walks between grammars, prewalks, `KILL` sets)
//! gives the tables an unshared build gives.

use super::*;

/// The walker on its own thread (the default) and on the calling thread build equal tables: the
/// composer's mirror of the walker's terminal sets and step sequences keeps their ids, and the
/// states are assembled in the same order either way.
#[test]
fn walk_thread_builds_the_same_tables() {
    let vocab = dwac_vocab::Tokenizer::default_embedded().unwrap().vocab().clone();
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{3}$"},
            "name": {"type": "string", "maxLength": 12},
            "n": {"type": "integer"},
            "kind": {"enum": ["alpha", "beta", 3]},
            "tags": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["code", "n"]
    });
    let sg = dwac_grammar::schema::compile_schema(&schema, &Default::default()).unwrap();
    let schema_tables = compile_grammar(&sg.grammar).unwrap().tables;
    for (name, tables) in [("json.lark", file_tables("grammars/json.lark")), ("schema", schema_tables)] {
        let (threaded, stats) = build_mask_tables(&tables, &vocab, &MaskOptions::default()).unwrap();
        let one_thread = MaskOptions { walk_thread: false, ..MaskOptions::default() };
        let (inline, _) = build_mask_tables(&tables, &vocab, &one_thread).unwrap();
        assert!(stats.dwa_states > 10 && stats.token_classes > 10, "{name}: {stats:?}");
        assert!(threaded == inline, "{name}: the tables differ with and without the walking thread");
    }
}

/// Lexer states given the classes of a state alike up to their lexeme's terminal, renamed
/// (`terminal_dwa/rename.rs`), make the tables that walking every one of them makes: the
/// strings under different bounds (each a terminal and a component of its own) and with a
/// format share their positions near the bounds, and a grammar of one component renames nothing.
#[test]
fn renamed_states_build_the_same_tables() {
    let vocab = dwac_vocab::Tokenizer::default_embedded().unwrap().vocab().clone();
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "a": {"type": "string", "maxLength": 9},
            "b": {"type": "string", "maxLength": 14, "minLength": 2},
            "c": {"type": "string", "maxLength": 23},
            "d": {"type": "string", "maxLength": 30, "format": "email"},
            "e": {"type": "string", "maxLength": 40, "format": "email"},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}}
        },
        "required": ["a", "d"]
    });
    let sg = dwac_grammar::schema::compile_schema(&schema, &Default::default()).unwrap();
    let schema_tables = compile_grammar(&sg.grammar).unwrap().tables;
    for (name, tables, renames) in
        [("schema", schema_tables, true), ("json.lark", file_tables("grammars/json.lark"), false)]
    {
        let (renamed, stats) = build_mask_tables(&tables, &vocab, &MaskOptions::default()).unwrap();
        let walked_opts = MaskOptions { rename_states: false, ..MaskOptions::default() };
        let (walked, walked_stats) = build_mask_tables(&tables, &vocab, &walked_opts).unwrap();
        assert_eq!(stats.lexer_states_renamed > 0, renames, "{name}: {stats:?}");
        assert_eq!(walked_stats.lexer_states_renamed, 0, "{name}");
        assert!(stats.dwa_states > 10 && stats.token_classes > 10, "{name}: {stats:?}");
        assert!(renamed == walked, "{name}: the tables differ with and without renamed states");
    }
}

/// Two walkers' classes and UNDECIDED tokens of one state are the same, ids included.
fn assert_same_classes(at: &str, (ca, ua): (Vec<TokenClass>, Vec<u32>), (cb, ub): (Vec<TokenClass>, Vec<u32>)) {
    assert_eq!(ua, ub, "{at}: UNDECIDED tokens differ");
    assert_eq!(ca.len(), cb.len(), "{at}: class counts differ");
    for (a, b) in ca.iter().zip(&cb) {
        assert_eq!(a.sigs, b.sigs, "{at}: lexings differ");
        assert_eq!(a.tokens.to_vec(), b.tokens.to_vec(), "{at}: tokens differ");
    }
}

/// Subtree walks recorded by one grammar's walker and replayed by another's
/// (`Walker::closure_walk`, shared through the vocabulary's `TrieIndex`) give the classes, with
/// the same ids, that a walker that walks every subtree in full finds.
#[test]
fn closure_walks_shared_between_grammars() {
    let vocab = dwac_vocab::Tokenizer::default_embedded().unwrap().vocab().clone();
    let trie = trie_of(&vocab);
    let index = std::sync::Arc::new(TrieIndex::new(&trie));
    let schemas = [
        serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}, "n": {"type": "integer"}}}),
        serde_json::json!({"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}}}, "required": ["name"]}}),
    ];
    let mut hits = 0;
    for (i, schema) in schemas.iter().enumerate() {
        let sg = dwac_grammar::schema::compile_schema(schema, &Default::default()).unwrap();
        let tables = compile_grammar(&sg.grammar).unwrap().tables;
        let lex = &tables.lexer;
        let mut shared = Walker::with_index(lex, &trie, std::sync::Arc::clone(&index));
        let mut fresh = Walker::new(lex, &trie).without_closure_walks();
        let (mut terms_s, mut terms_f) = (SetPool::new(), SetPool::new());
        for q in boundary_states(lex) {
            let at = format!("schema {i}, state {q}");
            assert_same_classes(&at, shared.classes(q, &mut terms_s), fresh.classes(q, &mut terms_f));
        }
        assert_eq!(fresh.closure_hits, 0);
        if i > 0 {
            hits += shared.closure_hits;
        }
    }
    assert!(hits > 0, "the second grammar replayed no walk of the first");
}

/// Subtrees walked ahead by the assembling thread (`Prewalker`) and replayed by the walker give
/// the classes, with the same ids, that a walker that walks them itself finds. Driven by hand,
/// so that every state's subtrees are prewalked before the walker gets there: strings with
/// `minLength` and `maxLength` counters (the case prewalks are for, a lexer state per counter
/// position, each walked in full) and a plain string.
#[test]
fn prewalked_subtrees_replay_as_walked() {
    let vocab = dwac_vocab::Tokenizer::default_embedded().unwrap().vocab().clone();
    let trie = trie_of(&vocab);
    let index = std::sync::Arc::new(TrieIndex::new(&trie));
    let schema = serde_json::json!({"type": "object", "properties": {
        "id": {"type": "string", "minLength": 6, "maxLength": 16},
        "secret": {"type": "string", "minLength": 9},
        "note": {"type": "string"}
    }, "required": ["id", "secret"]});
    let sg = dwac_grammar::schema::compile_schema(&schema, &Default::default()).unwrap();
    let tables = compile_grammar(&sg.grammar).unwrap().tables;
    let lex = &tables.lexer;
    let horizon = Walker::horizon_for(lex, &index);
    let prewalks = Prewalks::default();
    let mut prewalker = Prewalker::new(lex, &trie, std::sync::Arc::clone(&index), std::sync::Arc::clone(&horizon));
    let mut replaying =
        Walker::with_horizon(lex, &trie, std::sync::Arc::clone(&index), horizon).with_prewalks(&prewalks);
    let mut walking = Walker::new(lex, &trie);
    let (mut terms_r, mut terms_w) = (SetPool::new(), SetPool::new());
    let mut recorded = 0;
    for q in boundary_states(lex) {
        // Everything within the prewalks' window past the state before this one.
        prewalks.at(q.saturating_sub(1));
        while prewalker.one(&prewalks) {
            recorded += 1;
        }
        prewalks.at(q);
        let at = format!("state {q}");
        assert_same_classes(&at, replaying.classes(q, &mut terms_r), walking.classes(q, &mut terms_w));
    }
    assert_eq!(replaying.nodes(), walking.nodes(), "the step-sequence tries differ");
    assert!(prewalks.replayed() > 10, "{} of {recorded} prewalks replayed", prewalks.replayed());
}

/// Does a token of `bytes` fire inhibitor `i` (a longer match appears before the inhibitor is
/// dropped)? Stepped byte by byte.
fn fires(lex: &LexerTables, i: Inhibitor, bytes: &[u8]) -> bool {
    let mut h = vec![i];
    let mut out = Vec::new();
    for &b in bytes {
        match lex.step_inhibitors(&h, b, &mut out) {
            None => return true,
            Some(()) if out.is_empty() => return false,
            Some(()) => h.clone_from(&out),
        }
    }
    false
}

/// `KILL` sets shared between grammars through the vocabulary's cache: for every carried
/// inhibitor of several grammars, compiled one after the other against one trie index, the set
/// is exactly the tokens whose bytes fire it, and the later grammars take sets from the cache.
#[test]
fn kill_sets_shared_between_grammars() {
    let vocab = gpt2();
    let trie = trie_of(&vocab);
    let index = TrieIndex::new(&trie);
    let schemas = [
        serde_json::json!({"type": "object", "properties": {"n": {"type": "integer"}, "x": {"type": "number"}}}),
        serde_json::json!({"type": "array", "items": {"type": "number"}}),
        serde_json::json!({"type": "object", "properties": {"m": {"type": "number"}, "s": {"type": "string"}}}),
    ];
    let mut checked = 0;
    for (gi, schema) in schemas.iter().enumerate() {
        let sg = dwac_grammar::schema::compile_schema(schema, &Default::default()).unwrap();
        let tables = compile_grammar(&sg.grammar).unwrap().tables;
        let lex = &tables.lexer;
        let hits_before = index.kill_cache_hits();
        for inh in carried_inhibitors(lex) {
            let set = kill_set_shared(lex, &trie, &index, inh);
            let want: Vec<u32> = (0..vocab.len() as u32)
                .filter(|&v| !vocab.is_special(v) && fires(lex, inh, vocab.token_bytes(v).unwrap_or_default()))
                .collect();
            assert_eq!(set.to_vec(), want, "schema {gi}: kill set of {inh:?}");
            checked += 1;
        }
        if gi > 0 {
            assert!(index.kill_cache_hits() > hits_before, "schema {gi} took no kill set from the cache");
        }
    }
    assert!(checked >= 6, "{checked}");
}

/// The positions of a bounded whitespace run (`Whitespace::Around`, vLLM's default bound of 16)
/// lex alike but hold other tokens (Qwen3 has whitespace tokens up to 128 bytes long, so each
/// position keeps fewer of them): they take one automaton per set of lexings instead of one
/// each (`assemble/reuse.rs`), and the masks stay the reference's along pretty-printed
/// documents, and along one with a run past the bound, which the mask refuses.
#[test]
fn whitespace_counter_positions_share_automata_and_keep_exact_masks() {
    use dwac_grammar::schema::{compile_schema, SchemaOptions, Whitespace};
    use dwac_tests::differential::differential;
    let tok = dwac_vocab::Tokenizer::from_file(&tokenizer_json("qwen3")).unwrap();
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "n": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "pos": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}
        },
        "required": ["name", "tags"]
    });
    let opts = SchemaOptions { whitespace: Whitespace::Around { max: Some(16) }, ..Default::default() };
    let sg = compile_schema(&schema, &opts).unwrap();
    let (engine, stats) = dwac_compile::compile_engine(&sg.grammar, tok.vocab().clone()).unwrap();
    let m = stats.mask.expect("a Parser DWA");
    // The positions of the four punctuation families (`,` `:` `[` `{`) and of the whitespace
    // before a closing mark take an earlier position's automaton: 379 of 468 builds are
    // reused, 264 when classes are not put in the first state's order and automata with links
    // serve only their own tokens.
    assert!(m.automata_reused >= 340, "{m:?}");
    assert_eq!(m.undecided_tokens, 0, "{m:?}");
    let doc = serde_json::json!({"name": "a b", "n": 3, "tags": ["x", "yz"], "pos": {"x": -1.5}});
    let mut texts: Vec<String> = [2usize, 4, 8]
        .iter()
        .map(|&indent| {
            let pretty = serde_json::to_string_pretty(&doc).unwrap();
            pretty.lines().map(|l| l.replacen("  ", &" ".repeat(indent / 2), 1)).collect::<Vec<_>>().join("\n")
        })
        .collect();
    texts.push("{\"name\":\t\t \"a\" ,\n\n\n\n   \"tags\" : [ ] }".into());
    let over = format!("{{\"name\":{}\"a\",\"tags\":[]}}", " ".repeat(17));
    let mut traces: Vec<Vec<u32>> = texts.iter().map(|t| tok.encode(t).expect("encodes")).collect();
    traces.push(tok.encode(&over).expect("encodes"));
    let r = differential(&std::sync::Arc::new(engine), &traces, 2, &mut |_| {});
    assert_eq!((r.mismatches, r.fallbacks), (0, 0), "{r:?}");
    assert_eq!(r.rejected_traces, 1, "only the run of 17 spaces is refused: {r:?}");
    assert!(r.steps_compared > 100, "{r:?}");
}
