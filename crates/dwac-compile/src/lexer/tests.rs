//! Tests of the lexer construction that need its private parts.

use super::*;

/// A component past the DFA budget is refused with an error naming its terminal and pattern
/// (`[ab]*a[ab]{18}`: the subset construction needs 2^19 states).
#[test]
fn budget_error_names_the_component() {
    let ts = [Terminal::new("X", "x"), Terminal { component: 1, ..Terminal::new("BIG", "[ab]*a[ab]{18}") }];
    let e = build_lexer(&ts, &[true, true]).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains(&format!("exceeds {MAX_DFA_STATES} states")), "{e}");
    assert!(e.contains("terminal BIG /[ab]*a[ab]{18}/"), "{e}");
}

/// A component taken from the process's cache is the one the build gives, with this
/// grammar's terminal ids in its accept sets.
#[test]
fn a_cached_component_is_the_built_one_with_this_grammars_ids() {
    // (A pattern no other test uses, so the first build below is a miss.)
    let date = Terminal { component: 1, ..Terminal::new("DATE", "[0-9]{4}-(?:0[1-9]|1[0-2])-cache-test") };
    let word = Terminal::new("WORD", "[a-z]+");
    let first = build_lexer(&[word.clone(), date.clone()], &[true, true]).unwrap();
    let again = build_lexer(&[word.clone(), date.clone()], &[true, true]).unwrap();
    assert_eq!(first, again, "a hit must give the tables a build gives");
    // The same terminals at other ids: an inactive terminal in front shifts them by one.
    let shifted = build_lexer(&[Terminal::new("X", "x"), word, date], &[false, true, true]).unwrap();
    assert_eq!(shifted.num_states, first.num_states);
    let accepted = |l: &LexerTables| -> Vec<Vec<u32>> { (0..l.num_states).map(|q| l.accepts(q).to_vec()).collect() };
    let want: Vec<Vec<u32>> = accepted(&first).into_iter().map(|a| a.into_iter().map(|t| t + 1).collect()).collect();
    assert_eq!(accepted(&shifted), want);
    assert!(want.iter().any(|a| a == &[2]), "DATE (id 2) is accepted somewhere");
}

/// A component of one length-bounded terminal built as the product of its patterns' minimal DFA
/// with the character counter (`counted.rs`) is, state for state, the one the subset
/// construction with counters gives: bounds with and without a minimum, exact lengths, formats
/// whose lexemes reach the bound or not (email, uri, date-time, uuid), patterns, escapes.
#[test]
fn counted_components_equal_the_subset_construction() {
    let schema = serde_json::json!({"type": "object", "properties": {
        "a": {"type": "string", "maxLength": 7},
        "b": {"type": "string", "minLength": 3},
        "c": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+(-[a-z]+)*$"},
        "d": {"type": "string", "maxLength": 24, "format": "email"},
        "e": {"type": "string", "maxLength": 12, "format": "uri"},
        "f": {"type": "string", "minLength": 21, "maxLength": 30, "format": "date-time"},
        "g": {"type": "string", "minLength": 4, "maxLength": 4},
        "h": {"type": "string", "maxLength": 40, "format": "uuid"},
        "i": {"type": "string", "minLength": 1, "maxLength": 3, "pattern": "^\\\\u[0-9]"}
    }});
    let g = dwac_grammar::schema::compile_schema(&schema, &Default::default()).unwrap().grammar;
    let mut counted = 0;
    for (i, t) in g.terminals.iter().enumerate() {
        let active: Vec<bool> = (0..g.terminals.len()).map(|j| j == i).collect();
        let Some(product) = counted::counted_component(&g.terminals, i, &active).unwrap() else { continue };
        let subsets = subset::subset_component(&g.terminals, &active).unwrap();
        counted += 1;
        assert_eq!((product.n, product.k, &product.class), (subsets.n, subsets.k, &subsets.class), "{}", t.name);
        assert_eq!(product.trans, subsets.trans, "{}", t.name);
        assert_eq!(product.accs, subsets.accs, "{}", t.name);
    }
    assert!(counted >= 9, "{counted} bounded terminals");
}

/// Components within the budget each but over it together: the error names the largest one.
#[test]
fn total_budget_error_names_the_largest_component() {
    let ts = [
        Terminal::new("X", "x"),
        Terminal { component: 1, ..Terminal::new("SMALL", "[cd]*c[cd]{15}") },
        Terminal { component: 2, ..Terminal::new("LARGE", "[ab]*a[ab]{16}") },
        Terminal { component: 3, ..Terminal::new("OTHER", "[ef]*e[ef]{15}") },
    ];
    let e = build_lexer(&ts, &[true; 4]).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains(&format!("exceeds {MAX_DFA_STATES} states (")), "{e}");
    assert!(e.contains("is the one of terminal LARGE"), "{e}");
}
