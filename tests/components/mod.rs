//! Component oracles (ARCHITECTURE.md "Invariants"): each stage of the Parser DWA compiler against a direct,
//! unshared computation of what it stands for.
//!
//! * **Terminal DWA vs direct lexing**: from every lexer state, every token's set of lexings as
//!   the trie walk finds them (memoized, shared, grouped into token classes) equals stepping the
//!   token's bytes one by one through the lexer tables.
//! * **Templates vs LR simulation**: on random valid stacks (prefixes of random parses), split
//!   at every height into a known segment and a real stack below it, running a terminal's
//!   template and answering its waits from the real stack gives exactly the stacks (push words)
//!   and the success of shifting that terminal with the LR tables.
//! * **Determinized vs non-deterministic**: on the same stacks, reading the Parser DWA of a
//!   lexer state top-down gives exactly the tokens one of whose lexings survives a direct LR
//!   simulation of its steps (per-stack priority guards, then the lookahead check).
//!
//! Grammars: the JSON grammar and a JSON Schema with lexer components (embedded GPT-2), the
//! ambiguous expression grammar, and seeded random small grammars (overlapping terminals,
//! priorities, ignored spaces, GLR conflicts) over a synthetic vocabulary.
//!
//! `terminal.rs` holds the first oracle (and bounded-horizon equivalence against brute force),
//! `stack.rs` the other two, `sharing.rs` the checks that what one grammar's build shares with
//! another (walking thread, closure walks, prewalks, `KILL` sets) changes nothing.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use dwac_compile::dwa::compose::{Step, ANY};
use dwac_compile::dwa::set_pool::SetPool;
use dwac_compile::dwa::templates::{Lr, Outcome, Read, Wait};
use dwac_compile::dwa::terminal_dwa::{
    carried_inhibitors, kill_set_shared, Prewalker, Prewalks, TokenClass, TrieIndex, Walker, BASE_FROM, MAX_LEXINGS,
    MAX_STEPS,
};
use dwac_compile::dwa::{build_mask_tables, MaskOptions};
use dwac_compile::{compile_grammar, parse_source, SourceKind};
use dwac_runtime::unstable::Inhibitor;
use dwac_runtime::unstable::Trie;
use dwac_runtime::unstable::{MaskTables, NONE};
use dwac_runtime::{
    unstable::{GrammarTables, LexerTables, LrTables, DEAD},
    Vocabulary,
};
use dwac_tests::*;

mod sharing;
mod stack;
mod terminal;

/// One step of a lexing in plain terms: (an ignored terminal's pass?, terminals, guard).
type PlainStep = (bool, Vec<u32>, Vec<u32>);
/// A lexing: its steps and the lookahead class of the pending lexeme (`None`: any).
type Lexing = (Vec<PlainStep>, Option<Vec<u32>>);

fn tables_of(kind: SourceKind, src: &str) -> GrammarTables {
    let g = parse_source(kind, src).unwrap_or_else(|e| panic!("{e}"));
    compile_grammar(&g).unwrap_or_else(|e| panic!("{e}")).tables
}

fn file_tables(rel: &str) -> GrammarTables {
    let path = repo_root().join(rel);
    let kind = SourceKind::from_path(&path).unwrap();
    tables_of(kind, &std::fs::read_to_string(&path).unwrap())
}

fn trie_of(vocab: &Vocabulary) -> Trie {
    let toks: Vec<(u32, &[u8])> = (0..vocab.len() as u32)
        .filter(|&v| !vocab.is_special(v))
        .filter_map(|v| vocab.token_bytes(v).map(|b| (v, b)))
        .collect();
    Trie::build(&toks)
}

fn gpt2() -> Vocabulary {
    dwac_vocab::Tokenizer::default_embedded().unwrap().into_vocab()
}

const EXPR: &str = r#"
start: e
e: e "+" e | e "*" e | "(" e ")" | NUM | e "-" e | "-" e
NUM: /[0-9]+/
%ignore " "
"#;

/// The lexer states the compiler builds an automaton for.
fn boundary_states(lex: &LexerTables) -> impl Iterator<Item = u32> + '_ {
    (0..lex.num_states).filter(move |&q| q == lex.start || lex.can_continue(q))
}

/// The lookahead class of a pending lexeme at `q`, in plain terms.
fn plain_class(lex: &LexerTables, q: u32) -> Option<Vec<u32>> {
    if q == lex.start || lex.may_become_ignored(q) {
        None
    } else {
        Some(lex.pending_terminals(q).collect())
    }
}

/// A walker signature in plain terms.
fn plain_sig(walker: &Walker, terms: &SetPool, (node, class): (u32, u32)) -> Lexing {
    let mut steps = Vec::new();
    let mut n = node;
    while n != 0 {
        let (parent, step) = walker.node(n);
        steps.push(match step {
            Step::Shift { terms: t, guard } => (false, terms.get(t).to_vec(), terms.get(guard).to_vec()),
            Step::Pass { guard } => (true, Vec::new(), terms.get(guard).to_vec()),
        });
        n = parent;
    }
    steps.reverse();
    (steps, (class != ANY).then(|| terms.get(class).to_vec()))
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
