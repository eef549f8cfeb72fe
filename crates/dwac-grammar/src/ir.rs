//! The grammar IR shared by every front-end (Lark, GBNF, JSON Schema) and by
//! the normalization passes. It is plain BNF over terminals and nonterminals: the
//! front-ends lower EBNF (`?`, `*`, `+`, `{m,n}`, groups) into helper nonterminals.

use std::fmt;
use std::sync::Arc;

pub use crate::diag::Span;
use crate::diag::Warning;

/// Which longer matches inhibit an early split after a terminal (ARCHITECTURE.md, "The contract").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Munch {
    /// `K_t = T`: any terminal (ignored ones included) matching a longer prefix kills the split.
    /// The conventional longest-match lexer; the default for Lark.
    Global,
    /// `K_t = {t}`: a terminal may not stop short of its own longest match.
    Own,
    /// `K_t = ∅`: every segmentation is allowed and the parser decides (GBNF's character-level semantics).
    None,
}

/// A lexical terminal: a regular expression matched over the whole lexeme.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Terminal {
    /// Display name (`NUMBER`, `"{"`, `/[a-z]+/`).
    pub name: String,
    /// Pattern in Rust `regex` syntax, implicitly anchored at both ends of the lexeme.
    /// Must not match the empty string; must not use look-around assertions.
    pub regex: String,
    /// Among terminals matching the same lexeme, only those of the highest priority survive.
    pub priority: i32,
    /// Matched and dropped (`%ignore`).
    pub ignored: bool,
    /// Which longer matches inhibit an early split after this terminal.
    pub munch: Munch,
    /// The source text the terminal comes from (its definition or literal), if any.
    pub span: Option<Span>,
    /// The lexeme must also match each of these patterns (intersection), e.g. a JSON string
    /// that satisfies a `pattern` and a length bound at once.
    pub also: Vec<String>,
    /// The lexeme must match none of these patterns (difference), e.g. a property name that is
    /// not one of the named properties.
    pub except: Vec<String>,
    /// Lexer component. Terminals of different components are lexed by separate automata
    /// (the lexer forks at the empty-lexeme state), so they never form a product automaton.
    /// Only sound when no terminal of one component can match a strict extension of a lexeme
    /// of another (then no inhibition crosses components): e.g. JSON string terminals, which
    /// all end at their first unescaped quote. 0 is the default component.
    pub component: u32,
    /// The pattern has lazy quantifiers and is read the way Python's `re` reads it (Lark's
    /// semantics): leftmost-first, so `/".*?"/` ends at the first closing quote. Its lexemes are
    /// the places a backtracking match can end; longest match over them is the backtracking match.
    /// Without lazy quantifiers a terminal is the set of strings its pattern matches.
    pub lazy: bool,
    /// A terminal of vocabulary tokens rather than text (special tokens, `<|tool_call|>`,
    /// `<[128010]>`): its `regex` is left empty by the front-ends and written by the compiler
    /// once the vocabulary is known (docs/CONSTRUCTION.md, "Token terminals").
    pub tokens: Option<TokenSet>,
    /// What in the input asked for this terminal, for messages about it (a JSON Schema string's
    /// pointer and keywords: `/properties/url: maxLength 500, format uri`). Not part of its
    /// language.
    pub origin: Option<String>,
    /// A JSON object's key terminal for the keys it does not name: exactly the JSON strings whose
    /// decoded value is none of these (its `regex` and `except` say the same, so it is a terminal
    /// like any other as it stands). The compiler gives groups of such terminals one shared
    /// terminal and leaves the difference to the parser ([`crate::open_keys`]).
    pub key_complement: Option<Vec<String>>,
}

/// The first lexer component of grammars embedded in others ([`Grammar::splice`]); the
/// front-ends put their own terminals in component 0.
pub const EMBEDDED_COMPONENTS: u32 = 1;

/// The tokens a token terminal matches.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TokenSet {
    /// The tokens the set names (by spelling or by id range).
    pub items: Vec<TokenItem>,
    /// Any token but `items`: with `text`, any text too. (Only under a repetition: exactly one
    /// token of any kind is not a language of text.)
    pub negated: bool,
    /// Also matches any one character of text (a negated set under a repetition).
    pub text: bool,
    /// One or more (a negated set under `*` or `+`).
    pub repeat: bool,
}

/// One item of a [`TokenSet`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TokenItem {
    /// The token spelled exactly so, angle brackets included (`<|tool_call|>`, llama.cpp's
    /// `<think>`).
    Text(String),
    /// Token ids `lo..=hi` (`<[128010]>`, `<[128000-128255]>`).
    Ids(u32, u32),
}

impl TokenSet {
    /// The set as grammars write it: `<|a|>`, `<[5]>`, `<[^1,3-9]>`, with `*`-repetition shown as
    /// `(...)*`.
    pub fn display(&self) -> String {
        let one = |i: &TokenItem| match i {
            TokenItem::Text(t) => t.clone(),
            TokenItem::Ids(a, b) if a == b => format!("<[{a}]>"),
            TokenItem::Ids(a, b) => format!("<[{a}-{b}]>"),
        };
        let inner = if !self.negated && self.items.len() == 1 {
            one(&self.items[0])
        } else {
            let items: Vec<String> = self.items.iter().map(one).collect();
            format!("{}{}", if self.negated { "!" } else { "" }, items.join("|"))
        };
        if self.repeat {
            format!("({inner})+")
        } else {
            inner
        }
    }
}

impl Terminal {
    /// A plain terminal: priority 0, not ignored, global munch, no intersections.
    pub fn new(name: impl Into<String>, regex: impl Into<String>) -> Terminal {
        Terminal {
            name: name.into(),
            regex: regex.into(),
            priority: 0,
            ignored: false,
            munch: Munch::Global,
            span: None,
            also: Vec::new(),
            except: Vec::new(),
            component: 0,
            lazy: false,
            tokens: None,
            origin: None,
            key_complement: None,
        }
    }

    /// A terminal of vocabulary tokens ([`Terminal::tokens`]).
    pub fn tokens(set: TokenSet, munch: Munch, span: Option<Span>) -> Terminal {
        Terminal { name: set.display(), munch, span, tokens: Some(set), ..Terminal::new("", "") }
    }
}

/// A terminal or a nonterminal, by id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Symbol {
    /// A terminal: its index in [`Grammar::terminals`].
    T(u32),
    /// A nonterminal: its index in [`Grammar::nonterminals`].
    N(u32),
}

/// A nonterminal of a [`Grammar`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nonterminal {
    /// Display name (`expr`, or a helper's derived name such as `expr'rr`).
    pub name: String,
    /// The source text the nonterminal comes from, if any.
    pub span: Option<Span>,
}

/// `lhs → rhs`; an empty `rhs` is an ε-rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The left-hand side: an index in [`Grammar::nonterminals`].
    pub lhs: u32,
    /// The right-hand side, left to right (empty for an ε-rule).
    pub rhs: Vec<Symbol>,
    /// The source text the rule comes from, if any.
    pub span: Option<Span>,
}

/// A context-free grammar over regex terminals.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Grammar {
    /// The terminals; [`Symbol::T`] indexes this list.
    pub terminals: Vec<Terminal>,
    /// The nonterminals; [`Symbol::N`] and [`Rule::lhs`] index this list.
    pub nonterminals: Vec<Nonterminal>,
    /// The rules; a rule's index here is its id.
    pub rules: Vec<Rule>,
    /// The start symbol: an index in `nonterminals`.
    pub start: u32,
    /// The source text the spans point into (set by the Lark and GBNF front-ends), so later
    /// stages can report line:column. Not carried through normalization.
    pub source: Option<Arc<str>>,
}

impl Grammar {
    /// Append `t` and return its id.
    pub fn add_terminal(&mut self, t: Terminal) -> u32 {
        self.terminals.push(t);
        (self.terminals.len() - 1) as u32
    }

    /// Append a nonterminal named `name` (from the source text `span`) and return its id.
    pub fn add_nonterminal(&mut self, name: impl Into<String>, span: Option<Span>) -> u32 {
        self.nonterminals.push(Nonterminal { name: name.into(), span });
        (self.nonterminals.len() - 1) as u32
    }

    /// Append `sub` (terminals, nonterminals named `prefix` + their name, rules) and return its
    /// start nonterminal. With `embedded`, `sub`'s terminals go into the lexer components of
    /// embedded grammars (`sub`'s component `c` becomes `EMBEDDED_COMPONENTS + c`), which the
    /// front-ends leave to them: no inhibition crosses between an embedded JSON Schema and the
    /// grammar around it, and every embedded schema shares the same components, as the branches
    /// of one `anyOf` do. A terminal equal to one already there (pattern, options, component) is
    /// that terminal. Every new symbol's span is `span`.
    pub fn splice(&mut self, sub: Grammar, prefix: &str, span: Option<Span>, embedded: bool) -> u32 {
        let comp_base = if embedded { EMBEDDED_COMPONENTS } else { 0 };
        type Key = (String, i32, bool, Munch, Vec<String>, Vec<String>, u32, bool, Option<TokenSet>);
        let key = |t: &Terminal| -> Key {
            let t = t.clone();
            (t.regex, t.priority, t.ignored, t.munch, t.also, t.except, t.component, t.lazy, t.tokens)
        };
        let mut existing: std::collections::HashMap<Key, u32> =
            self.terminals.iter().enumerate().map(|(i, t)| (key(t), i as u32)).collect();
        let mut t_map = Vec::with_capacity(sub.terminals.len());
        for t in sub.terminals {
            let t = Terminal { component: comp_base + t.component, span, ..t };
            let k = key(&t);
            let id = match existing.get(&k) {
                Some(&id) => id,
                None => {
                    let id = self.add_terminal(t);
                    existing.insert(k, id);
                    id
                }
            };
            t_map.push(id);
        }
        let n_off = self.nonterminals.len() as u32;
        for nt in sub.nonterminals {
            self.add_nonterminal(format!("{prefix}{}", nt.name), span);
        }
        for r in sub.rules {
            let rhs = r
                .rhs
                .iter()
                .map(|s| match *s {
                    Symbol::T(t) => Symbol::T(t_map[t as usize]),
                    Symbol::N(n) => Symbol::N(n + n_off),
                })
                .collect();
            self.add_rule(r.lhs + n_off, rhs, span);
        }
        sub.start + n_off
    }

    /// Append the rule `lhs → rhs` (from the source text `span`).
    pub fn add_rule(&mut self, lhs: u32, rhs: Vec<Symbol>, span: Option<Span>) {
        self.rules.push(Rule { lhs, rhs, span });
    }

    /// A warning at `span`, located in [`Grammar::source`] (line 0 if there is none).
    pub fn warning_at(&self, span: Option<Span>, message: impl Into<String>) -> Warning {
        match (&self.source, span) {
            (Some(src), Some(span)) => Warning(crate::GrammarError::at(src, span, message)),
            _ => Warning(crate::GrammarError::global(message)),
        }
    }

    /// The display name of the terminal or nonterminal `s`.
    pub fn symbol_name(&self, s: Symbol) -> &str {
        match s {
            Symbol::T(t) => &self.terminals[t as usize].name,
            Symbol::N(n) => &self.nonterminals[n as usize].name,
        }
    }

    /// Rules grouped by left-hand side: `by_lhs()[n]` lists the indices of `n`'s rules.
    pub fn rules_by_lhs(&self) -> Vec<Vec<usize>> {
        let mut out = vec![Vec::new(); self.nonterminals.len()];
        for (i, r) in self.rules.iter().enumerate() {
            out[r.lhs as usize].push(i);
        }
        out
    }
}

impl fmt::Display for Grammar {
    /// A readable BNF dump (used by snapshot tests and `dwac inspect`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "start: {}", self.nonterminals[self.start as usize].name)?;
        for t in &self.terminals {
            write!(f, "%term {} = /{}/", t.name, t.regex)?;
            if t.priority != 0 {
                write!(f, " priority={}", t.priority)?;
            }
            if t.ignored {
                write!(f, " ignored")?;
            }
            for a in &t.also {
                write!(f, " &/{a}/")?;
            }
            for e in &t.except {
                write!(f, " -/{e}/")?;
            }
            match t.munch {
                Munch::Global => {}
                Munch::Own => write!(f, " munch=own")?,
                Munch::None => write!(f, " munch=none")?,
            }
            writeln!(f)?;
        }
        for r in &self.rules {
            write!(f, "{} ::=", self.nonterminals[r.lhs as usize].name)?;
            if r.rhs.is_empty() {
                write!(f, " ε")?;
            }
            for s in &r.rhs {
                write!(f, " {}", self.symbol_name(*s))?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}
