//! Grammar construction: one nonterminal per conjunction of subschemas.

use std::collections::HashMap;

use serde_json::Value;

use super::doc::{ptr_token, Doc};
use super::flat::{
    flatten, json_eq, merge, presence_branches, refusal, Disj, Flat, Part, Presence, Rest, Shape, OTHER_KEY, T_ALL,
    T_ARR, T_BOOL, T_INT, T_NULL, T_NUM, T_OBJ, T_STR,
};
use super::numbers::{self, Decimal, NumberConstraints, NumberError};
use super::strings::{self, StringConstraints, StringError};
use super::validate::{key_parts, validate};
use super::{Draft, SchemaError, SchemaGrammar, SchemaOptions, Whitespace};
use crate::ir::{Grammar, Munch, Symbol, Terminal};

mod containers;
mod one_of;

/// Budgets that keep a pathological schema from exhausting memory.
const MAX_NONTERMINALS: usize = 200_000;
const MAX_COMBINATIONS: usize = 256;
const MAX_UNROLL: u64 = 4096;
/// The largest item domain `uniqueItems: true` is compiled over (its arrays have a state per set
/// of values used: 2^10 at most).
const MAX_UNIQUE_DOMAIN: usize = 10;

/// String length bounds are counted by the lexer automaton, whose size grows with the bound.
/// A `maxLength` above this is enforced as this (stricter, with a warning); a `minLength` above
/// it is refused.
pub const MAX_STRING_LENGTH_BOUND: u64 = 2048;

/// Formats the specification defines: one we cannot enforce is refused (ignoring it would make
/// the mask looser than a format-asserting validator); unknown custom formats are annotations.
const SPEC_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

struct Builder<'a> {
    doc: Doc<'a>,
    opts: SchemaOptions,
    g: Grammar,
    memo: HashMap<Vec<Part>, u32>,
    /// [`Builder::type_bound`]'s answers.
    type_bounds: HashMap<Vec<Part>, u8>,
    terms: HashMap<(String, Vec<String>, Vec<String>), u32>,
    warnings: Vec<String>,
    components: u32,
    /// The schema rewritten where a `oneOf` was found overlapping or a `not` refused
    /// (`complement.rs`): the build stops with the refusal and starts again on this.
    retry: Option<Value>,
    /// Whether an overlapping `oneOf` or a refused `not` may be rewritten at all.
    rewrite_complements: bool,
}

/// The most `oneOf`s and `not`s rewritten with complements in one schema (each rewrite starts the build again).
const MAX_REWRITES: usize = 16;

/// Compile a JSON Schema into the grammar IR.
pub fn compile_schema(schema: &Value, opts: &SchemaOptions) -> Result<SchemaGrammar, SchemaError> {
    opts.whitespace.check()?;
    let draft = Draft::detect_or(schema, opts.default_draft.unwrap_or(Draft::Draft2020));
    // Invalid type names refused, unknown keywords listed, on the schema as written (`lint.rs`).
    let lint = super::lint::lint(schema)?;
    // Strict mode written into the schema (`strict.rs`).
    let closed = if opts.strict { super::strict::rewrite(schema, draft) } else { None };
    let schema = closed.as_ref().unwrap_or(schema);
    // `if`/`then`/`else` on a discriminator, rewritten as a union first (`conditional.rs`).
    let schema = match super::conditional::rewrite(schema, draft) {
        Some(v) => std::borrow::Cow::Owned(v),
        None => std::borrow::Cow::Borrowed(schema),
    };
    // Schema dependencies, rewritten as a union of the cases they allow (`conditional.rs`).
    let schema = match super::conditional::rewrite_dependencies(&schema, draft) {
        Some(v) => std::borrow::Cow::Owned(v),
        None => schema,
    };
    let mut rewrites = 0;
    let mut first: Option<SchemaError> = None;
    let mut current = std::borrow::Cow::Borrowed(&*schema);
    loop {
        match build(&current, draft, opts, true) {
            Ok(mut g) => {
                g.warnings.splice(0..0, lint);
                return Ok(g);
            }
            // A `oneOf` whose branches overlap, or a `not`, rewritten with complements: again.
            Err((e, Some(next))) if rewrites < MAX_REWRITES => {
                rewrites += 1;
                first.get_or_insert(e);
                current = std::borrow::Cow::Owned(*next);
            }
            Err((e, _)) => {
                let Some(mut first) = first else { return Err(e) };
                // A rewrite can meet a refusal of its own (a complement the merge cannot hold:
                // `not: {type: integer}` where non-integer numbers remain): lenient, the schema is
                // built as before (such a `oneOf` taken as `anyOf`, with its warning); strict, the
                // first refusal is reported, with what its rewrite still needed.
                if opts.lenient {
                    let mut g = build(&schema, draft, opts, false).map_err(|(e, _)| e)?;
                    g.warnings.splice(0..0, lint);
                    return Ok(g);
                }
                first.message.push_str(&format!(" (written with complements, it needs what is refused here: {e})"));
                return Err(first);
            }
        }
    }
}

/// One build of `schema`; on failure, the error and, where an overlapping `oneOf` or a refused
/// `not` was rewritten, the schema to build instead.
///
/// `rewrite`: whether an overlapping `oneOf` or a refused `not` may be rewritten (`complement.rs`).
fn build(
    schema: &Value,
    draft: Draft,
    opts: &SchemaOptions,
    rewrite: bool,
) -> Result<SchemaGrammar, (SchemaError, Option<Box<Value>>)> {
    let mut b = Builder {
        doc: Doc::new(schema, draft),
        opts: opts.clone(),
        g: Grammar::default(),
        memo: HashMap::new(),
        type_bounds: HashMap::new(),
        terms: HashMap::new(),
        warnings: Vec::new(),
        components: 0,
        rewrite_complements: rewrite,
        retry: None,
    };
    if opts.whitespace == Whitespace::Flexible {
        let mut ws = Terminal::new("WS", r"[ \t\n\r]+");
        ws.ignored = true;
        b.g.add_terminal(ws);
    }
    let start = b.g.add_nonterminal("start", None);
    b.g.start = start;
    let root = match b.conj(vec![Part::full("")]) {
        Ok(r) => r,
        Err(e) => return Err((e, b.retry.take().map(Box::new))),
    };
    b.g.add_rule(start, vec![Symbol::N(root)], None);
    if !b.generates(start) {
        // The schema accepts nothing: a terminal that can never match.
        let mut never = Terminal::new("NOTHING", r"\x00");
        never.except = vec![r"\x00".into()];
        let t = b.g.add_terminal(never);
        b.g.add_rule(start, vec![Symbol::T(t)], None);
        b.warnings.push("the schema accepts no value".into());
    }
    b.separate_literals();
    Ok(SchemaGrammar { grammar: b.g, warnings: b.warnings, draft })
}

/// The terminals of literal strings, each kind in a lexer component of its own: named object
/// keys, string constants (`enum`, `const`). Apart from the free strings, a literal trie's lexer
/// states tell apart only the LR states where their own literals may come (ARCHITECTURE.md,
/// "Where the large schemas' time went").
pub const LITERAL_COMPONENTS: [&str; 2] = ["KEY", "STRING_CONST"];

impl<'a> Builder<'a> {
    /// The literal strings leave the main lexer component: the object keys a schema names (`KEY`)
    /// form one component, the string constants (`const`, `enum`: `STRING_CONST`) another.
    ///
    /// In the main component, every node of the trie of these literals is a lexer state of its
    /// own that also carries the value strings' terminals (`STRING`, and each object's
    /// `KEY_ADDITIONAL`), and each one's automaton tells apart every LR state where any of them
    /// has an action: with hundreds of objects or enum values, that product dominates the build
    /// (a 500-tool schema: 30 s of determinization with keys and constants in the main
    /// component, 4-5 s apart). A literal component holds only the tries, whose nodes tell apart
    /// just the states where their own literals may come, and adds few lexer states: trie nodes,
    /// not string interiors (`tools-500`: 15,856 → 18,278). (The extra keys stay in the main
    /// component: apart, their string interiors would be walked a second time, which costs more
    /// than it saves.)
    ///
    /// Sound as for constrained strings ([`Builder::term`]): all these terminals are JSON
    /// strings, whose lexemes end at their first unescaped quote, so none matches a strict
    /// extension of another's lexeme and no inhibition crosses the components. The grammar's
    /// language is unchanged; only the lexer's automata are split.
    fn separate_literals(&mut self) {
        for name in LITERAL_COMPONENTS {
            let is = |t: &Terminal| t.component == 0 && t.name == name;
            if !self.g.terminals.iter().any(is) {
                continue;
            }
            self.components += 1;
            for t in self.g.terminals.iter_mut().filter(|t| is(t)) {
                t.component = self.components;
            }
        }
    }

    /// Does the subschema at `ptr` allow every value by itself: `true`, or an object with
    /// annotation keywords only (`title`, `description`, `default`, `examples`, `$comment`,
    /// `deprecated`, `readOnly`, `writeOnly`)?
    fn allows_everything(&self, ptr: &str) -> bool {
        match self.doc.get(ptr) {
            Some(Value::Bool(true)) => true,
            Some(Value::Object(o)) => o.keys().all(|k| {
                matches!(
                    k.as_str(),
                    "title"
                        | "description"
                        | "default"
                        | "examples"
                        | "$comment"
                        | "deprecated"
                        | "readOnly"
                        | "writeOnly"
                )
            }),
            _ => false,
        }
    }

    fn generates(&self, nt: u32) -> bool {
        crate::normalize::generating(&self.g)[nt as usize]
    }

    fn term(&mut self, name: &str, regex: String, also: Vec<String>, except: Vec<String>) -> u32 {
        let key = (regex, also, except);
        if let Some(&t) = self.terms.get(&key) {
            return t;
        }
        let mut t = Terminal::new(name, key.0.clone());
        t.munch = Munch::Global;
        t.also = key.1.clone();
        t.except = key.2.clone();
        // Constrained JSON strings (lengths, patterns, formats) get a lexer component of their
        // own, so their automata are not multiplied together. Sound: string lexemes end at their
        // first unescaped quote, so no string terminal matches a strict extension of another's.
        if (name == "STRING" && key.0 != strings::json_string_any()) || name == "KEY_PATTERN" {
            self.components += 1;
            t.component = self.components;
        }
        let id = self.g.add_terminal(t);
        self.terms.insert(key, id);
        id
    }

    /// A punctuation terminal (or `null`, `true`, `false`): `lit`, or with fixed separators
    /// ([`Whitespace::Separators`]) a `,` or `:` spelled as its separator (the whitespace around
    /// it is part of the lexeme), or with [`Whitespace::Around`] a mark with the whitespace
    /// allowed on its sides.
    fn punct(&mut self, lit: &str) -> Symbol {
        let spelled = match (&self.opts.whitespace, lit) {
            (Whitespace::Separators { item, .. }, ",") => item.clone(),
            (Whitespace::Separators { key, .. }, ":") => key.clone(),
            _ => lit.to_string(),
        };
        let re = match &self.opts.whitespace {
            Whitespace::Around { max } => {
                let ws = match max {
                    Some(n) => format!(r"[ \t\n\r]{{0,{n}}}"),
                    None => r"[ \t\n\r]*".to_string(),
                };
                // Opening marks take the whitespace after them, closing marks the whitespace
                // before them, `,` and `:` both: every place between two tokens, none before
                // or after the whole value.
                let p = regex_syntax::escape(&spelled);
                match lit {
                    "{" | "[" => format!("{p}{ws}"),
                    "}" | "]" => format!("{ws}{p}"),
                    "," | ":" => format!("{ws}{p}{ws}"),
                    // `null`, `true`, `false`: values, not marks (whitespace around them
                    // belongs to the marks beside them, and none comes before or after a
                    // whole value that is one of them).
                    _ => p,
                }
            }
            _ => regex_syntax::escape(&spelled),
        };
        Symbol::T(self.term(&format!("\"{lit}\""), re, vec![], vec![]))
    }

    fn nt(&mut self, name: String) -> Result<u32, SchemaError> {
        if self.g.nonterminals.len() >= MAX_NONTERMINALS {
            return Err(SchemaError::new("schema", "", format!("the grammar exceeds {MAX_NONTERMINALS} nonterminals")));
        }
        Ok(self.g.add_nonterminal(name, None))
    }

    fn rule(&mut self, lhs: u32, rhs: Vec<Symbol>) {
        self.g.add_rule(lhs, rhs, None);
    }

    /// Check refused keywords of every flat schema; drop them (with a warning) if lenient.
    fn check_refusals(&mut self, flat: &Flat) -> Result<(), SchemaError> {
        for (ptr, o) in &flat.schemas {
            for (k, v) in o.iter() {
                if let Some(why) = refusal(k, v, o, self.doc.draft) {
                    let e = SchemaError::new(k.clone(), ptr, why);
                    // A `not` whose complement can be written exactly (`complement.rs`): the
                    // build starts again on that.
                    // (An `if` too: `anyOf: [if ∧ then, ¬if ∧ else]`.)
                    // (And `maxContains`: the items not counted satisfy the complement of `contains`.)
                    if matches!(k.as_str(), "not" | "if" | "maxContains") && self.rewrite_complements {
                        let next = match k.as_str() {
                            "not" => super::complement::rewrite_not(&self.doc, ptr),
                            "if" => super::complement::rewrite_if(&self.doc, ptr),
                            _ => super::complement::rewrite_max_contains(&self.doc, ptr),
                        };
                        if let Some(next) = next {
                            self.retry = Some(next);
                            return Err(e);
                        }
                    }
                    if !self.opts.lenient {
                        return Err(e);
                    }
                    let w = format!("dropped: {e}");
                    if !self.warnings.contains(&w) {
                        self.warnings.push(w);
                    }
                }
            }
        }
        Ok(())
    }

    /// The nonterminal for the conjunction of `parts` (memoized, so recursion terminates).
    fn conj(&mut self, parts: Vec<Part>) -> Result<u32, SchemaError> {
        // A part that allows every value (`true`, `{}`, or annotations only) adds nothing: left
        // out, so that every such subschema (an object's `additionalProperties: {}`, a
        // property described but not constrained) is the one shared "any value" nonterminal,
        // not a copy of the JSON grammar per pointer (100 tools whose objects say
        // `additionalProperties: {}`: 16,335 LR states and 85k DWA states with a copy each,
        // 10,662 and 56k shared).
        let parts: Vec<Part> = parts.into_iter().filter(|p| !self.allows_everything(&p.ptr)).collect();
        // Memoized on the set of parts; flattened in the given order (definition order).
        let mut key = parts.clone();
        key.sort();
        key.dedup();
        if let Some(&n) = self.memo.get(&key) {
            return Ok(n);
        }
        let mut seen = std::collections::HashSet::new();
        let parts: Vec<Part> = parts.into_iter().filter(|p| seen.insert(p.clone())).collect();
        let name = match parts.first() {
            Some(p) if parts.len() == 1 => format!("s{}", if p.ptr.is_empty() { "#" } else { &p.ptr }),
            Some(p) => format!("s{}+{}", p.ptr, parts.len() - 1),
            None => "any".to_string(),
        };
        let n = self.nt(name)?;
        self.memo.insert(key, n);
        let doc_flat = flatten(&self.doc, &parts)?;
        if doc_flat.is_false {
            return Ok(n);
        }
        self.check_refusals(&doc_flat)?;
        // `oneOf` whose branches only require (or forbid) keys: a presence constraint on the
        // object, exact, instead of a disjunction.
        let mut presence: Vec<Presence> = Vec::new();
        let mut doc_flat = doc_flat;
        doc_flat.disjunctions.retain(|d| match (d.kind, presence_branches(&self.doc, d)) {
            ("oneOf", Some(branches)) => {
                presence.push(Presence::ExactlyOne(branches));
                false
            }
            _ => true,
        });
        if !doc_flat.disjunctions.is_empty() {
            let has_uneval = doc_flat
                .schemas
                .iter()
                .any(|(_, o)| o.contains_key("unevaluatedProperties") || o.contains_key("unevaluatedItems"));
            // (Each combination with the types its parts allow at most: one that allows none is
            // empty and is left out, so only combinations that may hold count against the bound.)
            let mut combos: Vec<(Vec<Part>, u8)> = vec![(doc_flat.own.clone(), self.type_bound(&doc_flat.own))];
            // A `oneOf` of strings whose branches overlap: exactly one, by differences of the
            // branches' string languages (`one_of.rs`).
            if let [d] = &doc_flat.disjunctions[..] {
                if d.kind == "oneOf" && self.string_one_of(n, d, &doc_flat.own)? {
                    return Ok(n);
                }
                // A `oneOf` of finitely many values (enums, nested `oneOf`s of enums): those
                // that satisfy exactly one branch (`one_of.rs`).
                if d.kind == "oneOf" && self.finite_one_of(n, d, &doc_flat.own)? {
                    return Ok(n);
                }
            }
            for d in &doc_flat.disjunctions {
                if d.kind == "oneOf" {
                    self.check_one_of(d, &doc_flat.own)?;
                }
                // With `unevaluated*` in the conjunction, an `anyOf` value evaluates the keys of
                // every branch it matches: choose non-empty sets of branches (conjunctions), not
                // single branches (same language, exact annotations).
                let k = d.branches.len();
                let choices: Vec<Vec<Part>> = if d.kind == "anyOf" && has_uneval && (2..=6).contains(&k) {
                    (1..(1usize << k))
                        .map(|m| (0..k).filter(|i| m >> i & 1 == 1).map(|i| d.branches[i].clone()).collect())
                        .collect()
                } else {
                    d.branches.iter().map(|b| vec![b.clone()]).collect()
                };
                let bounds: Vec<u8> = choices.iter().map(|b| self.type_bound(b)).collect();
                let mut next = Vec::new();
                for (c, t) in &combos {
                    for (b, u) in choices.iter().zip(&bounds) {
                        if t & u == 0 {
                            continue;
                        }
                        let mut c2 = c.clone();
                        c2.extend(b.iter().cloned());
                        next.push((c2, t & u));
                    }
                }
                // (Only a product of disjunctions is bounded: one disjunction's branches are as
                // many as the schema spells out, e.g. a request's hundreds of tools.)
                if combos.len() > 1 && next.len() > MAX_COMBINATIONS {
                    return Err(SchemaError::new(
                        d.kind,
                        &d.ptr,
                        format!("more than {MAX_COMBINATIONS} combinations of anyOf/oneOf branches"),
                    ));
                }
                combos = next;
            }
            for (c, _) in combos {
                let sub = self.conj(c)?;
                self.rule(n, vec![Symbol::N(sub)]);
            }
            return Ok(n);
        }
        let mut shape = merge(&self.doc, &doc_flat)?;
        for p in presence {
            // Every branch holds for a non-object, so with several branches only objects remain.
            if matches!(&p, Presence::ExactlyOne(b) if b.len() > 1) {
                shape.types &= T_OBJ;
            }
            shape.presence.push(p);
        }
        if let Some(values) = &shape.enums {
            for v in values.clone() {
                if validate(&self.doc, &v, &doc_flat.own)? {
                    let sym = self.literal(&v)?;
                    self.rule(n, vec![sym]);
                }
            }
            return Ok(n);
        }
        self.build_shape(n, &shape)?;
        Ok(n)
    }

    /// The JSON types (`flat::T_*` bits) the conjunction of `parts` may have at most: those its
    /// own keywords allow (its disjunctions only narrow them further).
    fn type_bound(&mut self, parts: &[Part]) -> u8 {
        if let Some(&t) = self.type_bounds.get(parts) {
            return t;
        }
        let t = match flatten(&self.doc, parts) {
            Ok(f) if f.is_false => 0,
            Ok(f) => merge(&self.doc, &f).map_or(T_ALL, |s| s.types),
            Err(_) => T_ALL,
        };
        self.type_bounds.insert(parts.to_vec(), t);
        t
    }

    /// `oneOf` is compiled as `anyOf` only when its branches are provably disjoint.
    /// (Disjointness is judged together with the sibling keywords `context`: branches that
    /// overlap only on values the siblings exclude are disjoint here.)
    fn check_one_of(&mut self, d: &Disj, context: &[Part]) -> Result<(), SchemaError> {
        let with = |b: &Part| -> Vec<Part> { context.iter().cloned().chain(std::iter::once(b.clone())).collect() };
        for i in 0..d.branches.len() {
            for j in i + 1..d.branches.len() {
                let (a, b) = (with(&d.branches[i]), with(&d.branches[j]));
                if !super::validate::provably_disjoint(&self.doc, &a, &b) {
                    let e = SchemaError::new(
                        "oneOf",
                        &d.ptr,
                        format!("branches {i} and {j} may both match a value, so `oneOf` cannot be compiled exactly"),
                    );
                    // Exactly one, as a union of cells, where every branch's complement can be
                    // written exactly (`complement.rs`): the build starts again on that.
                    if let Some(next) =
                        self.rewrite_complements.then(|| super::complement::rewrite_one_of(&self.doc, &d.ptr)).flatten()
                    {
                        self.retry = Some(next);
                        return Err(e);
                    }
                    if !self.opts.lenient {
                        return Err(e);
                    }
                    self.warnings.push(format!("treated as anyOf: {e}"));
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// A grammar symbol for exactly the JSON value `v` (keys in `v`'s order).
    fn literal(&mut self, v: &Value) -> Result<Symbol, SchemaError> {
        Ok(match v {
            Value::Null => self.punct("null"),
            Value::Bool(true) => self.punct("true"),
            Value::Bool(false) => self.punct("false"),
            Value::String(s) => {
                let re = strings::json_string_literal(s);
                Symbol::T(self.term("STRING_CONST", re, vec![], vec![]))
            }
            Value::Number(x) => {
                let d = Decimal::from_json(x);
                let c = NumberConstraints {
                    min: Some((d.clone(), false)),
                    max: Some((d, false)),
                    integer_allows_fraction_zero: true,
                    ..Default::default()
                };
                let re = numbers::number_regex(&c).map_err(|e| SchemaError::new("const", "", e.to_string()))?;
                Symbol::T(self.term("NUMBER_CONST", re, vec![], vec![]))
            }
            Value::Array(a) => {
                let n = self.nt("const_array".into())?;
                let mut rhs = vec![self.punct("[")];
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        rhs.push(self.punct(","));
                    }
                    rhs.push(self.literal(x)?);
                }
                rhs.push(self.punct("]"));
                self.rule(n, rhs);
                Symbol::N(n)
            }
            Value::Object(o) => {
                let n = self.nt("const_object".into())?;
                let mut rhs = vec![self.punct("{")];
                for (i, (k, x)) in o.iter().enumerate() {
                    if i > 0 {
                        rhs.push(self.punct(","));
                    }
                    rhs.push(self.literal(&Value::String(k.clone()))?);
                    rhs.push(self.punct(":"));
                    rhs.push(self.literal(x)?);
                }
                rhs.push(self.punct("}"));
                self.rule(n, rhs);
                Symbol::N(n)
            }
        })
    }

    fn build_shape(&mut self, n: u32, s: &Shape) -> Result<(), SchemaError> {
        if s.types & T_NULL != 0 {
            let t = self.punct("null");
            self.rule(n, vec![t]);
        }
        if s.types & T_BOOL != 0 {
            if s.bool_not & 2 == 0 {
                let t = self.punct("true");
                self.rule(n, vec![t]);
            }
            if s.bool_not & 1 == 0 {
                let f = self.punct("false");
                self.rule(n, vec![f]);
            }
        }
        if s.types & T_STR != 0 {
            if let Some(t) = self.string_terminal(s)? {
                self.rule(n, vec![Symbol::T(t)]);
            }
        }
        if s.types & T_NUM != 0 {
            if let Some(t) = self.number_terminal(s)? {
                self.rule(n, vec![Symbol::T(t)]);
            }
        }
        if s.types & T_OBJ != 0 {
            self.build_object(n, s)?;
        }
        if s.types & T_ARR != 0 {
            self.build_array(n, s)?;
        }
        Ok(())
    }

    fn string_error(&self, kw: &str, ptr: &str, e: StringError) -> SchemaError {
        SchemaError::new(kw, ptr, e.to_string())
    }

    fn string_terminal(&mut self, s: &Shape) -> Result<Option<u32>, SchemaError> {
        let Some(mut regexes) = self.string_regexes_of(s)? else { return Ok(None) };
        let main = if regexes.is_empty() { strings::json_string_any() } else { regexes.remove(0) };
        let mut except = s.str_not.clone();
        except.sort();
        except.dedup();
        let t = self.term("STRING", main, regexes, except);
        // (For messages about the terminal, e.g. a lexer over its state budget.)
        let terminal = &mut self.g.terminals[t as usize];
        if terminal.origin.is_none() && terminal.regex != strings::json_string_any() {
            let mut what: Vec<String> = Vec::new();
            if s.str_min > 0 {
                what.push(format!("minLength {}", s.str_min));
            }
            if let Some(m) = s.str_max {
                what.push(format!("maxLength {m}"));
            }
            what.extend(s.formats.iter().map(|(f, _)| format!("format {f}")));
            what.extend(s.patterns.iter().map(|(p, _)| format!("pattern {p:?}")));
            let at = if s.ptr.is_empty() { "#" } else { s.ptr.as_str() };
            terminal.origin = Some(format!("{at}: {}", what.join(", ")));
        }
        Ok(Some(t))
    }

    /// The regexes over string lexemes a string of shape `s` must all match (lengths,
    /// patterns, formats; its `except` list aside), sorted; `None` if no string fits.
    fn string_regexes_of(&mut self, s: &Shape) -> Result<Option<Vec<String>>, SchemaError> {
        if s.str_max.is_some_and(|m| m < s.str_min) {
            return Ok(None);
        }
        let mut regexes: Vec<String> = Vec::new();
        let max = self.capped_max_length(s.str_min, s.str_max, &s.ptr)?;
        let len = StringConstraints {
            min_length: (s.str_min > 0).then_some(s.str_min),
            max_length: max,
            ..Default::default()
        };
        regexes.extend(strings::string_regexes(&len).map_err(|e| self.string_error("maxLength", &s.ptr, e))?);
        for (p, ptr) in &s.patterns {
            let c = StringConstraints { pattern: Some(p.clone()), ..Default::default() };
            regexes.extend(strings::string_regexes(&c).map_err(|e| self.string_error("pattern", ptr, e))?);
        }
        for (f, ptr) in &s.formats {
            if !strings::is_supported_format(f) {
                if SPEC_FORMATS.contains(&f.as_str()) {
                    let e = SchemaError::new("format", ptr, format!("format `{f}` cannot be enforced exactly"));
                    if !self.opts.lenient {
                        return Err(e);
                    }
                    self.warnings.push(format!("dropped: {e}"));
                    continue;
                }
                let w =
                    format!("unknown format `{f}` at {ptr} is not enforced (an annotation, as the specification says)");
                if !self.warnings.contains(&w) {
                    self.warnings.push(w);
                }
                continue;
            }
            let c = StringConstraints { format: Some(f.clone()), ..Default::default() };
            regexes.extend(strings::string_regexes(&c).map_err(|e| self.string_error("format", ptr, e))?);
        }
        regexes.sort();
        regexes.dedup();
        Ok(Some(regexes))
    }

    /// Apply [`MAX_STRING_LENGTH_BOUND`]: a larger `maxLength` is lowered (stricter, warned),
    /// a larger `minLength` refused.
    fn capped_max_length(&mut self, min: u64, max: Option<u64>, ptr: &str) -> Result<Option<u64>, SchemaError> {
        if min > MAX_STRING_LENGTH_BOUND {
            return Err(SchemaError::new(
                "minLength",
                ptr,
                format!("minLength {min} is above the supported bound {MAX_STRING_LENGTH_BOUND}"),
            ));
        }
        Ok(match max {
            Some(m) if m > MAX_STRING_LENGTH_BOUND => {
                let w = format!(
                    "maxLength {m} at {} is enforced as {MAX_STRING_LENGTH_BOUND} (stricter: the lexer counts string lengths)",
                    if ptr.is_empty() { "#" } else { ptr }
                );
                if !self.warnings.contains(&w) {
                    self.warnings.push(w);
                }
                Some(MAX_STRING_LENGTH_BOUND)
            }
            m => m,
        })
    }

    fn number_terminal(&mut self, s: &Shape) -> Result<Option<u32>, SchemaError> {
        // Several `multipleOf`s: the multiples of their least common multiple (exact).
        let mut multiple: Option<Decimal> = None;
        for (m, ptr) in &s.multiples {
            multiple = Some(match multiple {
                None => m.clone(),
                Some(cur) => {
                    cur.lcm(m).ok_or_else(|| SchemaError::new("multipleOf", ptr, "must be a number greater than 0"))?
                }
            });
        }
        let c = NumberConstraints {
            integer: s.types & 64 == 0,
            min: s.num_min.clone(),
            max: s.num_max.clone(),
            multiple_of: multiple,
            integer_allows_fraction_zero: self.doc.draft != Draft::Draft4,
        };
        // Numbers that are not integers (bit 64 without `integer`, as `not: {type: integer}`
        // leaves them): lexemes of the constraints that are also of a non-integral value.
        let mut also = if s.types & T_INT == 0 {
            vec![numbers::non_integer_regex(c.integer_allows_fraction_zero)]
        } else {
            vec![]
        };
        // Numbers other than the constants of a `not` (`numbers::not_equal`).
        let mut except = Vec::new();
        for d in &s.num_not {
            let (equal, exponent_free) = numbers::not_equal(d, c.integer_allows_fraction_zero)
                .map_err(|e| SchemaError::new("not", &s.ptr, e.to_string()))?;
            except.push(equal);
            also.extend(exponent_free);
        }
        except.sort();
        except.dedup();
        also.sort();
        also.dedup();
        match numbers::number_regex(&c) {
            Ok(re) => Ok(Some(self.term(if c.integer { "INTEGER" } else { "NUMBER" }, re, also, except))),
            Err(NumberError::Unsatisfiable) => Ok(None),
            Err(e) => {
                let kw = if s.multiples.is_empty() { "minimum" } else { "multipleOf" };
                let ptr = s.multiples.first().map(|m| m.1.clone()).unwrap_or_else(|| s.ptr.clone());
                Err(SchemaError::new(kw, &ptr, e.to_string()))
            }
        }
    }
}
