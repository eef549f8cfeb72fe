//! `%json { ... }` in a rule: a JSON Schema embedded as a nonterminal (llguidance's syntax),
//! compiled by the schema front-end exactly as `dwac compile schema.json` compiles it, its
//! grammar spliced into the Lark grammar's.
//!
//! The schema's terminals go into lexer components of their own (ARCHITECTURE.md, "Lexer
//! components"): the embedded JSON is lexed as on its own, and no inhibition crosses between it
//! and the terminals of the grammar around it (a Lark `TEXT: /[^<]+/` does not swallow a JSON
//! string). `%ignore`d terminals of the Lark grammar are ignored inside it too.

use super::*;
use crate::schema::{compile_schema, SchemaOptions};

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
        let sg =
            compile_schema(&value, &SchemaOptions::default()).map_err(|e| self.err(span, format!("`%json`: {e}")))?;
        let sub = sg.grammar;
        let k = lw.json_starts.len() + 1;
        let comp_base = lw.g.terminals.iter().map(|t| t.component + 1).max().unwrap_or(1).max(1);
        let t_off = lw.g.terminals.len() as u32;
        for t in sub.terminals {
            lw.g.add_terminal(Terminal { component: comp_base + t.component, span: Some(span), ..t });
        }
        let n_off = lw.g.nonterminals.len() as u32;
        for nt in sub.nonterminals {
            let name = format!("json{k}:{}", nt.name);
            lw.helpers.reserve(&name);
            lw.g.add_nonterminal(name, Some(span));
        }
        for r in sub.rules {
            let rhs = r
                .rhs
                .iter()
                .map(|s| match *s {
                    Symbol::T(t) => Symbol::T(t + t_off),
                    Symbol::N(n) => Symbol::N(n + n_off),
                })
                .collect();
            lw.g.add_rule(r.lhs + n_off, rhs, Some(span));
        }
        let nt = sub.start + n_off;
        lw.json_starts.insert(text.to_string(), nt);
        Ok(Symbol::N(nt))
    }
}
