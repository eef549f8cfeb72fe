//! Lexer inference (`dwac_grammar::lift`): which rules are found regular, what they become,
//! and what must stay a rule. The languages are compared in `tests/lexer_inference.rs` (the
//! workspace's test crate), which runs both grammars.

use dwac_grammar::lift::{lift, LiftOptions};
use dwac_grammar::{gbnf, Grammar, Munch, Symbol};

fn lifted(src: &str) -> (Grammar, dwac_grammar::lift::LiftReport) {
    lift(&gbnf::parse(src).expect("grammar"), &LiftOptions::default())
}

/// The terminals the rewritten start rules (and what they reach) use.
fn reachable_terminals(g: &Grammar) -> Vec<String> {
    let by_lhs = g.rules_by_lhs();
    let mut seen = vec![false; g.nonterminals.len()];
    let (mut stack, mut out) = (vec![g.start], Vec::new());
    while let Some(n) = stack.pop() {
        if std::mem::replace(&mut seen[n as usize], true) {
            continue;
        }
        for &r in &by_lhs[n as usize] {
            for s in &g.rules[r].rhs {
                match *s {
                    Symbol::N(m) => stack.push(m),
                    Symbol::T(t) => {
                        let name = g.terminals[t as usize].name.clone();
                        if !out.contains(&name) {
                            out.push(name);
                        }
                    }
                }
            }
        }
    }
    out.sort();
    out
}

#[test]
fn json_rules_become_terminals_and_structure_stays() {
    let src = r#"
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9]+)? ws
ws ::= | " " | "\n" [ \t]{0,20}
"#;
    let (g, report) = lifted(src);
    assert!(!report.whole);
    let mut regular = report.regular.clone();
    regular.sort();
    assert_eq!(regular, ["number", "string", "ws"]);
    // Runs of regular symbols between the recursive ones are single terminals.
    let used = reachable_terminals(&g);
    assert!(used.contains(&"\"{\" ws".to_string()), "{used:?}");
    assert!(used.contains(&"string \":\" ws".to_string()), "{used:?}");
    assert!(used.contains(&"\",\" ws string \":\" ws".to_string()), "{used:?}");
    assert!(used.contains(&"string".to_string()), "{used:?}");
    assert!(!used.iter().any(|t| t.starts_with('[')), "no character class is left as a terminal: {used:?}");
    // The counters come back as counted repetitions, lexed in states.
    let number = g.terminals.iter().find(|t| t.name == "number").expect("number terminal");
    assert!(number.regex.contains("{0,15}"), "{}", number.regex);
    assert!(number.regex.contains("{0,20}"), "ws inside number: {}", number.regex);
    assert_eq!(number.munch, Munch::None, "every segmentation stays allowed");
    // The regular rules' own terminals record what they came from.
    let t = report.terminals.iter().find(|t| t.name == "string \":\" ws").expect("lifted");
    assert_eq!(t.rules, ["string", "ws"]);
}

#[test]
fn a_wholly_regular_grammar_is_one_terminal() {
    let (g, report) = lifted("root ::= item+\nitem ::= \"- \" [^\\r\\n]+ \"\\n\"\n");
    assert!(report.whole);
    let used = reachable_terminals(&g);
    assert_eq!(used, ["root"]);
    let (g, report) = lifted("root ::= [a-z]*\n");
    assert!(report.whole);
    // Derives ε too: the start symbol has an empty alternative besides the terminal.
    let start = g.start;
    let alts: Vec<&Vec<Symbol>> = g.rules.iter().filter(|r| r.lhs == start).map(|r| &r.rhs).collect();
    assert_eq!(alts.len(), 2);
    assert!(alts.iter().any(|a| a.is_empty()));
}

#[test]
fn recursion_decides_regularity() {
    // Right-linear and left-linear recursion are regular.
    let (_, r) = lifted("root ::= \"(\" e \")\"\ne ::= w | e \"(\" e \")\"\nw ::= [a-z] w | [a-z]\n");
    assert_eq!(r.regular, ["w"]);
    let (_, r) = lifted("root ::= x\nx ::= x \"a\" | \"b\"\n");
    assert!(r.whole);
    // Self-embedding is not: balanced parentheses stay rules, their parts are lifted.
    let (g, r) = lifted("root ::= p\np ::= \"(\" ws p \")\" ws | \"x\"\nws ::= [ ]*\n");
    assert!(!r.whole);
    assert_eq!(r.regular, ["ws"]);
    let used = reachable_terminals(&g);
    assert_eq!(used, ["\"(\" ws", "\")\" ws", "\"x\""]);
    // Mixed left and right recursion in one component is refused (it may self-embed).
    let (_, r) = lifted("root ::= s\ns ::= \"a\" t | \"c\"\nt ::= s \"b\"\n");
    assert!(r.regular.is_empty(), "{:?}", r.regular);
}

#[test]
fn excluded_rules_are_lifted_in_parts() {
    let src = "root ::= row{1,50}\nrow ::= [a-z]{1,8} (\",\" [a-z]{1,8})* \"\\n\"\n";
    let g = gbnf::parse(src).expect("grammar");
    let (_, whole) = lift(&g, &LiftOptions::default());
    assert!(whole.whole);
    let (g2, parts) = lift(&g, &LiftOptions { keep: vec!["root".into()], ..LiftOptions::default() });
    assert!(!parts.whole);
    // (`row{1,50}` is `row` then a helper chain of up to 49 more: one run.)
    assert_eq!(reachable_terminals(&g2), ["row (row){0,49}"]);
    // A pattern over the length limit is not lifted either.
    let (_, small) = lift(&g, &LiftOptions { max_pattern_len: 10, ..LiftOptions::default() });
    assert!(small.regular.is_empty(), "{:?}", small.regular);
}
