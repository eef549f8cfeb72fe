//! `%json { ... }` in a rule: a JSON Schema embedded as a nonterminal (llguidance's syntax),
//! compiled by the schema front-end exactly as `dwac compile schema.json` compiles it, its
//! grammar spliced into the Lark grammar's.
//!
//! The schema's terminals go into the lexer components of embedded grammars (`Grammar::splice`;
//! ARCHITECTURE.md, "Lexer components"): the embedded JSON is lexed apart from the grammar
//! around it, and no inhibition crosses between it and the terminals of that grammar (a Lark `TEXT: /[^<]+/` does not swallow a JSON
//! string). Its whitespace is JSON's, between any two of its tokens, but not before or after
//! the value ([`Whitespace::Around`]: no ignored terminal, so it stays inside the schema);
//! `%ignore`d terminals of the Lark grammar are ignored inside it too.

use super::{Ctx, GrammarError, Lowering, Span, Symbol, Warning};
use crate::schema::{compile_schema, SchemaOptions, Whitespace};

impl Ctx<'_> {
    /// The start nonterminal of the embedded schema `text` (one per distinct text).
    pub(super) fn embed_json(
        &self,
        lw: &mut Lowering,
        text: &str,
        start: usize,
        span: Span,
    ) -> Result<Symbol, GrammarError> {
        if let Some(&nt) = lw.json_starts.get(text) {
            return Ok(Symbol::N(nt));
        }
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            // (serde_json counts lines and columns from 1 within the body.)
            let line_start: usize =
                text.split_inclusive('\n').take(e.line().saturating_sub(1)).map(str::len).sum::<usize>();
            let at = (start + line_start + e.column().saturating_sub(1)).min(self.src.len());
            let end = (at + 1).min(self.src.len()).max(at);
            GrammarError::at(self.src, Span::new(at, end), format!("`%json`: not valid JSON: {e}"))
        })?;
        let sg = compile_schema(
            &value,
            &SchemaOptions {
                whitespace: Whitespace::Around { max: None },
                strict: self.strict,
                ..SchemaOptions::default()
            },
        )
        .map_err(|e| self.err(span, format!("`%json`: {e}")))?;
        lw.warnings
            .extend(sg.warnings.iter().map(|w| Warning(GrammarError::at(self.src, span, format!("`%json`: {w}")))));
        let k = lw.json_starts.len() + 1;
        let first = lw.g.nonterminals.len();
        let nt = lw.g.splice(sg.grammar, &format!("json{k}:"), Some(span), true);
        for n in &lw.g.nonterminals[first..] {
            lw.helpers.reserve(&n.name);
        }
        lw.json_starts.insert(text.to_string(), nt);
        Ok(Symbol::N(nt))
    }
}
