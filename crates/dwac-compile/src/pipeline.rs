//! Source → IR → normalized grammar → LR tables + lexer DFA → [`GrammarTables`].

use std::ops::ControlFlow;
use std::path::Path;
use std::time::Instant;

use dwac_grammar::lift::{self, LiftOptions, LiftReport};
use dwac_grammar::normalize::{normalize_with, NormalizeOptions, Normalized};
use dwac_grammar::schema::{compile_schema, SchemaOptions};
use dwac_grammar::{Grammar, Munch, Symbol, Terminal, Warning};
use dwac_runtime::{unstable::GrammarTables, Engine, Vocabulary};

use crate::dwa::{build_mask_tables_prepared, prepare_vocabulary, MaskOptions, MaskStats};
use crate::stages::Stages;
use crate::threads::carry;
use crate::{build_lexer, CompileError};

/// The kind of a grammar source, chosen by file extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// A Lark grammar (`.lark`).
    Lark,
    /// A GBNF grammar (`.gbnf`).
    Gbnf,
    /// A JSON Schema (`.json`).
    JsonSchema,
    /// An XGrammar structural tag (`.json` read with `--structural-tag`;
    /// `dwac_grammar::structural`).
    StructuralTag,
}

impl SourceKind {
    /// `.lark`, `.gbnf` or `.json`; anything else is `None`.
    pub fn from_path(path: &Path) -> Option<SourceKind> {
        match path.extension()?.to_str()? {
            "lark" => Some(SourceKind::Lark),
            "gbnf" => Some(SourceKind::Gbnf),
            "json" => Some(SourceKind::JsonSchema),
            _ => None,
        }
    }
}

/// Parse a grammar source of the given kind into the IR, with the default options
/// ([`Compiler::parse`] takes options and returns the front-end's warnings too).
pub fn parse_source(kind: SourceKind, text: &str) -> Result<Grammar, CompileError> {
    Ok(Compiler::default().parse(kind, text)?.0)
}

/// The name of [`regex_grammar`]'s one terminal (errors about the pattern name it).
pub const REGEX_TERMINAL: &str = "REGEX";

/// A grammar accepting exactly the strings matching `pattern` (one terminal).
pub fn regex_grammar(pattern: &str) -> Grammar {
    let mut g = Grammar::default();
    let t = g.add_terminal(Terminal {
        name: REGEX_TERMINAL.into(),
        regex: pattern.to_string(),
        priority: 0,
        ignored: false,
        munch: Munch::Own,
        span: None,
        also: Vec::new(),
        except: Vec::new(),
        component: 0,
        lazy: false,
        tokens: None,
        origin: None,
        key_complement: None,
    });
    let s = g.add_nonterminal("start", None);
    g.add_rule(s, vec![Symbol::T(t)], None);
    g.start = s;
    g
}

/// Sizes and timings of one compilation.
#[derive(Clone, Debug, Default)]
pub struct CompileStats {
    /// Terminals in the grammar (after lexer inference, when it ran).
    pub terminals: usize,
    /// Rules in the grammar before normalization (after lexer inference, when it ran).
    pub rules_in: usize,
    /// Rules in the normalized grammar.
    pub rules_normalized: usize,
    /// States of the lexer DFA.
    pub lexer_states: u32,
    /// States of the LR automaton.
    pub lr_states: u32,
    /// ACTION cells (state, terminal) holding more than one action (GLR explores them all).
    pub lr_conflicts: usize,
    /// Nonterminals whose right recursion was left in place (normalization budget).
    pub right_recursive_left: usize,
    /// Wall time of the whole compilation (grammar, lexer, LR tables and, when built, the Parser DWA).
    pub compile_ms: f64,
    /// The longest-match analysis's warnings (terminal adjacencies it makes impossible), located
    /// at line:column.
    pub warnings: Vec<Warning>,
    /// The longest-match analysis ran out of its work budget and checked nothing.
    pub munch_analysis_skipped: bool,
    /// What lexer inference did, for a character-level grammar (GBNF): the terminals it made.
    pub lexer_inference: Option<LexerInference>,
    /// The Parser DWA's sizes and build time, when one was built.
    pub mask: Option<MaskStats>,
    /// The grammar's token terminals and the tokens given escapes ([`crate::token_terminals`]), when it
    /// names tokens.
    pub token_terminals: Option<crate::token_terminals::TokenTerminals>,
    /// Wall time per stage, in pipeline order (`normalize`, `lr`, `lexer`, `munch`, then the
    /// Parser DWA's stages ([`MaskStats::stages_ms`]) and `validate` when one is built; the CLI
    /// puts its `front_end` first): where a compile's time goes.
    pub stages_ms: Vec<(&'static str, f64)>,
}

/// What lexer inference did ([`dwac_grammar::lift`]).
#[derive(Clone, Debug, Default)]
pub struct LexerInference {
    /// The regular rules found and the terminals made of them.
    pub lifted: LiftReport,
}

/// A compiled grammar: the runtime tables plus what the compiler learned on the way.
#[derive(Debug)]
pub struct Compiled {
    /// The runtime's tables: the lexer DFA, the LR tables and the terminal names.
    pub tables: GrammarTables,
    /// The normalized grammar the LR tables were built from.
    pub normalized: Normalized,
    /// Sizes and timings of the compilation.
    pub stats: CompileStats,
}

/// Compile the IR into runtime tables, with the default options ([`Compiler::compile_grammar`]
/// takes options).
pub fn compile_grammar(g: &Grammar) -> Result<Compiled, CompileError> {
    Compiler::default().compile_grammar(g)
}

impl Compiler {
    /// Compile the IR into runtime tables.
    pub fn compile_grammar(&self, g: &Grammar) -> Result<Compiled, CompileError> {
        let t0 = Instant::now();
        let (mut c, pending) = compile_tables(g, &self.normalize)?;
        let tm = Instant::now();
        let report = pending.analyse(&c, g);
        pending.finish(&mut c, report, tm.elapsed())?;
        c.stats.compile_ms = t0.elapsed().as_secs_f64() * 1e3;
        Ok(c)
    }
}

/// What the longest-match analysis ([`crate::lexer::munch::analyse`]) reads that [`Compiled`] does not
/// keep: the LR states' kernels and, after lexer inference or shared key terminals, the rewritten
/// grammar (its warnings are located in it). The analysis only reports (dead ends, or a language
/// left empty), so it may run beside the Parser DWA's build; an empty language still refuses the
/// grammar.
struct PendingAnalysis {
    kernels: Vec<Vec<dwac_lr::Item>>,
    lifted: Option<Grammar>,
}

impl PendingAnalysis {
    /// The analysis of `c`, compiled from `g`.
    fn analyse(&self, c: &Compiled, g: &Grammar) -> crate::lexer::munch::MunchReport {
        let source = self.lifted.as_ref().unwrap_or(g);
        let (lex, lr, ng) = (&c.tables.lexer, &c.tables.lr, &c.normalized.grammar);
        crate::lexer::munch::analyse(lex, lr, &self.kernels, ng, c.normalized.accepts_empty, source)
    }

    /// Its report into `c`'s statistics (the stage `munch`, after `lexer`, took `took` on its
    /// own thread); an empty language is the compile's error.
    fn finish(
        self,
        c: &mut Compiled,
        munch: crate::lexer::munch::MunchReport,
        took: std::time::Duration,
    ) -> Result<(), CompileError> {
        if let Some(empty) = munch.empty {
            return Err(CompileError::EmptyLanguage(empty.0));
        }
        c.stats.warnings = munch.warnings;
        c.stats.munch_analysis_skipped = munch.skipped;
        let at = c.stats.stages_ms.iter().position(|&(s, _)| s == "lexer").map_or(c.stats.stages_ms.len(), |i| i + 1);
        c.stats.stages_ms.insert(at, ("munch", took.as_secs_f64() * 1e3));
        Ok(())
    }
}

/// [`Compiler::compile_grammar`] but for the longest-match analysis, left to the caller.
fn compile_tables(g: &Grammar, opts: &NormalizeOptions) -> Result<(Compiled, PendingAnalysis), CompileError> {
    let t0 = Instant::now();
    let mut stages = Stages::new();
    // Lexer inference (`dwac_grammar::lift`): a character-level grammar's regular parts become
    // lexer terminals first.
    let (lifted, lexer_inference) = if !opts.skip_lexer_inference && lift::has_liftable(g) {
        let (lg, report) = lift::lift(g, &LiftOptions::default());
        stages.lap("lift");
        (Some(lg), Some(report))
    } else {
        (None, None)
    };
    // Open objects' extra keys shared (`dwac_grammar::open_keys`): after a key, one parser state
    // whichever object of its group it is in.
    let shared = dwac_grammar::open_keys::share_open_keys(lifted.as_ref().unwrap_or(g));
    if shared.is_some() {
        stages.lap("open keys");
    }
    let lifted = shared.or(lifted);
    let g = lifted.as_ref().unwrap_or(g);
    let normalized = normalize_with(g, opts)?;
    stages.lap("normalize");
    if normalized.grammar.terminals != g.terminals {
        return Err(CompileError::Lr("normalization changed the terminal table".into()));
    }
    let lr = dwac_lr::build(&normalized).map_err(|e| CompileError::Lr(e.to_string()))?;
    stages.lap("lr");
    // Only terminals the parser can use, and ignored ones, take part in lexing: an unused
    // terminal must not inhibit anything.
    let mut active: Vec<bool> = g.terminals.iter().map(|t| t.ignored).collect();
    for r in &normalized.grammar.rules {
        for s in &r.rhs {
            if let Symbol::T(t) = s {
                active[*t as usize] = true;
            }
        }
    }
    let lexer = build_lexer(&g.terminals, &active)?;
    stages.lap("lexer");
    let lexer_inference = lexer_inference.map(|lifted| LexerInference { lifted });
    let ng = &normalized.grammar;
    let tables =
        GrammarTables { lexer, lr: lr.tables, terminal_names: g.terminals.iter().map(|t| t.name.clone()).collect() };
    tables.validate()?;
    let stats = CompileStats {
        terminals: g.terminals.len(),
        rules_in: g.rules.len(),
        rules_normalized: ng.rules.len(),
        lexer_states: tables.lexer.num_states,
        lr_states: tables.lr.num_states,
        lr_conflicts: lr.conflicts,
        right_recursive_left: normalized.right_recursive_left.len(),
        compile_ms: t0.elapsed().as_secs_f64() * 1e3,
        warnings: Vec::new(),
        munch_analysis_skipped: false,
        lexer_inference,
        mask: None,
        token_terminals: None,
        stages_ms: stages.done,
    };
    Ok((Compiled { tables, normalized, stats }, PendingAnalysis { kernels: lr.kernels, lifted }))
}

/// Compile and bundle with a vocabulary into a ready [`Engine`], with the Parser DWA that makes
/// `fill_mask` fast, with the default options ([`Compiler::compile_engine`] takes options).
pub fn compile_engine(g: &Grammar, vocab: Vocabulary) -> Result<(Engine, CompileStats), CompileError> {
    Compiler::default().compile_engine(g, vocab)
}

/// What [`Compiler::compile_engine`] builds.
#[derive(Clone, Debug)]
pub struct EngineOptions {
    /// Build the Parser DWA (`false`: `fill_mask` is the reference mask; for commit-only uses).
    pub mask: bool,
    /// How the Parser DWA is built.
    pub mask_options: MaskOptions,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions { mask: true, mask_options: MaskOptions::default() }
    }
}

/// The compiler with its options, one set per stage: the front ends' ([`SchemaOptions`], which
/// also holds Lark's and structural tags' strictness), normalization's ([`NormalizeOptions`]) and
/// the engine's ([`EngineOptions`]). `Compiler::default()` is what [`parse_source`],
/// [`compile_grammar`] and [`compile_engine`] use.
#[derive(Clone, Debug, Default)]
pub struct Compiler {
    /// The front ends' options.
    pub schema: SchemaOptions,
    /// Normalization's options (lexer inference, the right-recursion budget).
    pub normalize: NormalizeOptions,
    /// What the engine is built with.
    pub engine: EngineOptions,
}

impl Compiler {
    /// Parse a grammar source into the IR, with the front-end's warnings: for JSON Schemas the
    /// schema compiler's (dropped keywords in lenient mode, unenforced formats, unknown keywords;
    /// for Lark, those of its `%json` schemas), for GBNF the front-end's (`line:column: message`:
    /// what llama.cpp makes of a construct that may not mean what it says), for a structural tag
    /// those of its schemas and grammars, each at its JSON pointer in the tag.
    pub fn parse(&self, kind: SourceKind, text: &str) -> Result<(Grammar, Vec<String>), CompileError> {
        Ok(match kind {
            SourceKind::Lark => {
                let lark = dwac_grammar::LarkOptions { strict: self.schema.strict, ..Default::default() };
                let (g, w) = dwac_grammar::lark::parse_with_warnings(text, &lark)?;
                (g, w.into_iter().map(|w| format!("{}:{}: {}", w.0.line, w.0.column, w.0.message)).collect())
            }
            SourceKind::Gbnf => {
                let (g, w) = dwac_grammar::gbnf::parse_with_warnings(text)?;
                (g, w.into_iter().map(|w| format!("{}:{}: {}", w.0.line, w.0.column, w.0.message)).collect())
            }
            SourceKind::StructuralTag => dwac_grammar::structural::parse_with_warnings(text, self.schema.strict)?,
            SourceKind::JsonSchema => {
                let value: serde_json::Value =
                    serde_json::from_str(text).map_err(|e| CompileError::Json(e.to_string()))?;
                let sg = compile_schema(&value, &self.schema)?;
                (sg.grammar, sg.warnings)
            }
        })
    }

    /// Compile and bundle with a vocabulary into a ready [`Engine`].
    pub fn compile_engine(&self, g: &Grammar, vocab: Vocabulary) -> Result<(Engine, CompileStats), CompileError> {
        self.compile_engine_with_progress(g, vocab, &mut |_, _| ControlFlow::Continue(()))
    }

    /// [`Compiler::compile_engine`], reporting the Parser DWA build's progress (lexer states
    /// done, total) before each lexer state. A `Break(why)` from `progress` stops the build
    /// there: [`CompileError::Stopped`] with `why` (the CLI stops an input past its memory budget
    /// so).
    pub fn compile_engine_with_progress(
        &self,
        g: &Grammar,
        vocab: Vocabulary,
        progress: &mut dyn FnMut(u64, u64) -> ControlFlow<String>,
    ) -> Result<(Engine, CompileStats), CompileError> {
        let t0 = Instant::now();
        // Token terminals (`<|tool_call|>`, `<[128010]>`): their regexes are the named tokens'
        // escapes, and the grammar is compiled over the grammar's vocabulary (`crate::token_terminals`).
        let resolved = crate::token_terminals::resolve(g, &vocab)?;
        let (g, vocab, token_terminals) = match resolved {
            Some((rg, rv, report)) => (std::borrow::Cow::Owned(rg), rv, Some(report)),
            None => (std::borrow::Cow::Borrowed(g), vocab, None),
        };
        let g: &Grammar = &g;
        // The vocabulary's trie on a second thread while the grammar's tables are built (a cold
        // process: 50-60 ms for a 150k vocabulary, beside a schema's front end and lexer).
        let (c, prepared) = std::thread::scope(|scope| {
            let trie = self
                .engine
                .mask
                .then(|| {
                    std::thread::Builder::new()
                        .name("dwac-trie".into())
                        .spawn_scoped(scope, || prepare_vocabulary(&vocab))
                })
                .and_then(Result::ok);
            let c = compile_tables(g, &self.normalize);
            let prepared = trie.map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
            (c, prepared)
        });
        let (mut c, pending) = c?;
        c.stats.token_terminals = token_terminals;
        let mask = if self.engine.mask {
            let tm = Instant::now();
            // (If no thread could be started, the trie is made here.)
            let prepared = prepared.unwrap_or_else(|| prepare_vocabulary(&vocab));
            // (Lexer inference ran, or some terminal lets the parser decide where it ends, as a
            // structural tag's text does: drop the dead splits as the walk goes. The masks are the
            // same either way; other grammars' tables are built exactly as before.)
            let follow_bytes = c.stats.lexer_inference.is_some() || g.terminals.iter().any(|t| t.munch == Munch::None);
            let mask_options = MaskOptions { follow_bytes, ..self.engine.mask_options.clone() };
            // The longest-match analysis beside the Parser DWA's build, on a thread of its own: it
            // reads the tables and only reports (the DWA's determinization keeps one core busy
            // while the vocabulary walk is soon done; 500 tools' analysis takes 0.2 s).
            let (built, (report, took)) = std::thread::scope(|scope| {
                let analysis = || {
                    let ta = Instant::now();
                    (pending.analyse(&c, g), ta.elapsed())
                };
                let helper = std::thread::Builder::new().name("dwac-munch".into()).spawn_scoped(scope, carry(analysis));
                let built = build_mask_tables_prepared(&c.tables, &vocab, prepared, &mask_options, progress, tm);
                let analysed = match helper {
                    Ok(h) => h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                    Err(_) => analysis(),
                };
                (built, analysed)
            });
            pending.finish(&mut c, report, took)?;
            let (m, ms) = built?;
            c.stats.stages_ms.extend(ms.stages_ms.iter().copied());
            c.stats.mask = Some(ms);
            Some(m)
        } else {
            let ta = Instant::now();
            let report = pending.analyse(&c, g);
            pending.finish(&mut c, report, ta.elapsed())?;
            None
        };
        let tv = Instant::now();
        // The grammar tables were validated by `compile_grammar`; the vocabulary is checked here (a
        // caller may have built it by hand). The Parser DWA is this compiler's own output: checked in
        // debug builds (and by `Artifact::open` wherever an artifact of it is loaded), not on every
        // compile, where it would cost more than a small schema's whole automaton.
        vocab.validate()?;
        #[cfg(debug_assertions)]
        if let Some(m) = &mask {
            m.validate(c.tables.lexer.num_states, vocab.len() as u32)?;
        }
        let engine = Engine::with_mask_unchecked(c.tables, vocab, mask);
        c.stats.stages_ms.push(("validate", tv.elapsed().as_secs_f64() * 1e3));
        c.stats.compile_ms = t0.elapsed().as_secs_f64() * 1e3;
        Ok((engine, c.stats))
    }
}
