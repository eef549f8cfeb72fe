//! Grammar construction: one nonterminal per conjunction of subschemas.

use std::collections::HashMap;

use serde_json::Value;

use super::doc::{ptr_token, Doc};
use super::flat::*;
use super::numbers::{self, Decimal, NumberConstraints, NumberError};
use super::strings::{self, StringConstraints, StringError};
use super::validate::{key_parts, validate};
use super::{Draft, SchemaError, SchemaGrammar, SchemaOptions, Whitespace};
use crate::ir::{Grammar, Munch, Symbol, Terminal};

/// Budgets that keep a pathological schema from exhausting memory.
const MAX_NONTERMINALS: usize = 200_000;
const MAX_COMBINATIONS: usize = 256;
const MAX_UNROLL: u64 = 4096;

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
    terms: HashMap<(String, Vec<String>, Vec<String>), u32>,
    warnings: Vec<String>,
    components: u32,
}

/// Compile a JSON Schema into the grammar IR.
pub fn compile_schema(schema: &Value, opts: &SchemaOptions) -> Result<SchemaGrammar, SchemaError> {
    let draft = Draft::detect_or(schema, opts.default_draft.unwrap_or(Draft::Draft2020));
    let mut b = Builder {
        doc: Doc::new(schema, draft),
        opts: opts.clone(),
        g: Grammar::default(),
        memo: HashMap::new(),
        terms: HashMap::new(),
        warnings: Vec::new(),
        components: 0,
    };
    if opts.whitespace == Whitespace::Flexible {
        let mut ws = Terminal::new("WS", r"[ \t\n\r]+");
        ws.ignored = true;
        b.g.add_terminal(ws);
    }
    let start = b.g.add_nonterminal("start", None);
    b.g.start = start;
    let root = b.conj(vec![Part::full("")])?;
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

    fn punct(&mut self, lit: &str) -> Symbol {
        let re = regex_syntax::escape(lit);
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
            let mut combos: Vec<Vec<Part>> = vec![doc_flat.own.clone()];
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
                let mut next = Vec::new();
                for c in &combos {
                    for b in &choices {
                        let mut c2 = c.clone();
                        c2.extend(b.iter().cloned());
                        next.push(c2);
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
            for c in combos {
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
            let (t, f) = (self.punct("true"), self.punct("false"));
            self.rule(n, vec![t]);
            self.rule(n, vec![f]);
        }
        if s.types & T_STR != 0 {
            if let Some(t) = self.string_terminal(s)? {
                self.rule(n, vec![Symbol::T(t)]);
            }
        }
        if s.types & T_INT != 0 {
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
        let main = if regexes.is_empty() { strings::json_string_any() } else { regexes.remove(0) };
        Ok(Some(self.term("STRING", main, regexes, vec![])))
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
        let mut multiple: Option<Decimal> = None;
        if let Some((m, _)) = s.multiples.first() {
            multiple = Some(m.clone());
        }
        if s.multiples.len() > 1 {
            let all_same = s.multiples.iter().all(|(m, _)| Some(m) == multiple.as_ref());
            if !all_same {
                return Err(SchemaError::new(
                    "multipleOf",
                    &s.multiples[1].1,
                    "several different multipleOf values in one conjunction are not supported",
                ));
            }
        }
        let c = NumberConstraints {
            integer: s.types & 64 == 0,
            min: s.num_min.clone(),
            max: s.num_max.clone(),
            multiple_of: multiple,
            integer_allows_fraction_zero: self.doc.draft != Draft::Draft4,
        };
        match numbers::number_regex(&c) {
            Ok(re) => Ok(Some(self.term(if c.integer { "INTEGER" } else { "NUMBER" }, re, vec![], vec![]))),
            Err(NumberError::Unsatisfiable) => Ok(None),
            Err(e) => {
                let kw = if s.multiples.is_empty() { "minimum" } else { "multipleOf" };
                let ptr = s.multiples.first().map(|m| m.1.clone()).unwrap_or_else(|| s.ptr.clone());
                Err(SchemaError::new(kw, &ptr, e.to_string()))
            }
        }
    }

    /// String constraints from `propertyNames`, as regexes every key must also match.
    fn property_name_regexes(&mut self, s: &Shape) -> Result<Option<Vec<String>>, SchemaError> {
        if s.prop_names.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let flat = flatten(&self.doc, &s.prop_names)?;
        if flat.is_false {
            return Ok(None);
        }
        self.check_refusals(&flat)?;
        let shape = merge(&self.doc, &flat)?;
        let ptr = s.prop_names[0].ptr.clone();
        if !flat.disjunctions.is_empty() || shape.enums.is_some() {
            return Err(SchemaError::new(
                "propertyNames",
                &ptr,
                "only string constraints (pattern, length, format) are supported",
            ));
        }
        if shape.types & T_STR == 0 {
            return Ok(None);
        }
        let mut out = Vec::new();
        let max = self.capped_max_length(shape.str_min, shape.str_max, &ptr)?;
        let len = StringConstraints {
            min_length: (shape.str_min > 0).then_some(shape.str_min),
            max_length: max,
            ..Default::default()
        };
        if shape.str_max.is_some_and(|m| m < shape.str_min) {
            return Ok(None);
        }
        out.extend(strings::string_regexes(&len).map_err(|e| self.string_error("propertyNames", &ptr, e))?);
        for (p, pp) in &shape.patterns {
            out.push(strings::pattern_regex(p).map_err(|e| self.string_error("pattern", pp, e))?);
        }
        for (f, fp) in &shape.formats {
            if strings::is_supported_format(f) {
                let c = StringConstraints { format: Some(f.clone()), ..Default::default() };
                out.extend(strings::string_regexes(&c).map_err(|e| self.string_error("format", fp, e))?);
            }
        }
        Ok(Some(out))
    }

    fn build_object(&mut self, n: u32, s: &Shape) -> Result<(), SchemaError> {
        let Some(name_regexes) = self.property_name_regexes(s)? else {
            // No key can satisfy propertyNames: only the empty object.
            if s.min_props == 0 && s.required.is_empty() {
                let (l, r) = (self.punct("{"), self.punct("}"));
                self.rule(n, vec![l, r]);
            }
            return Ok(());
        };
        // Named keys in definition order, then required keys not listed.
        let mut names: Vec<String> = Vec::new();
        for spec in &s.objs {
            for p in &spec.props {
                if !names.contains(p) {
                    names.push(p.clone());
                }
            }
        }
        for r in &s.required {
            if !names.contains(r) {
                names.push(r.clone());
            }
        }
        for p in &s.presence {
            for k in p.keys() {
                if !names.contains(k) {
                    names.push(k.clone());
                }
            }
        }
        let colon = self.punct(":");
        // Members for named keys.
        let mut members: Vec<(Option<Symbol>, bool)> = Vec::new();
        for name in &names {
            let required = s.required.contains(name);
            let mut ok = true;
            if !s.prop_names.is_empty() {
                ok = validate(&self.doc, &Value::String(name.clone()), &s.prop_names)?;
            }
            let mut parts = key_parts(&self.doc, &s.objs, name)?;
            for u in &s.uneval_props {
                let mut evaluated = u.names.contains(name);
                for p in &u.patterns {
                    evaluated = evaluated || super::validate::matches_pattern(p, name)?;
                }
                if !evaluated {
                    parts.push(u.part.clone());
                }
            }
            if parts.iter().any(|p| self.doc.get(&p.ptr) == Some(&Value::Bool(false))) {
                ok = false;
            }
            let sym = if ok {
                let v = self.conj(parts)?;
                let key = self.term("KEY", strings::json_string_literal(name), vec![], vec![]);
                let m = self.nt(format!("member {name}"))?;
                self.rule(m, vec![Symbol::T(key), colon, Symbol::N(v)]);
                Some(Symbol::N(m))
            } else {
                None
            };
            if sym.is_none() && required {
                return Ok(()); // a required key can never appear: no object
            }
            members.push((sym, required));
        }
        // Extra members: keys the schema does not name.
        let named_literals: Vec<String> = names.iter().map(|k| strings::json_string_literal(k)).collect();
        let mut all_patterns: Vec<(String, Part, usize)> = Vec::new();
        for (si, spec) in s.objs.iter().enumerate() {
            for (p, part) in &spec.patterns {
                all_patterns.push((p.clone(), part.clone(), si));
            }
        }
        let mut pattern_res: Vec<String> = Vec::new();
        for (p, _, si) in &all_patterns {
            let ptr = format!("{}/patternProperties/{}", s.objs[*si].ptr, ptr_token(p));
            pattern_res.push(strings::pattern_regex(p).map_err(|e| self.string_error("patternProperties", &ptr, e))?);
        }
        let mut extra_alts: Vec<Symbol> = Vec::new();
        // Keys matching no pattern.
        {
            let mut parts = Vec::new();
            let mut allowed = true;
            for spec in &s.objs {
                if let Some(a) = &spec.additional {
                    if self.doc.get(&a.ptr) == Some(&Value::Bool(false)) {
                        allowed = false;
                    }
                    parts.push(a.clone());
                }
            }
            for u in &s.uneval_props {
                if self.doc.get(&u.part.ptr) == Some(&Value::Bool(false)) {
                    allowed = false;
                }
                parts.push(u.part.clone());
            }
            if allowed {
                let mut except = named_literals.clone();
                except.extend(pattern_res.iter().cloned());
                let mut also = name_regexes.clone();
                let main = if also.is_empty() { strings::json_string_any() } else { also.remove(0) };
                let key = self.term("KEY_ADDITIONAL", main, also, except);
                let v = self.conj(parts)?;
                let m = self.nt("member additional".into())?;
                self.rule(m, vec![Symbol::T(key), colon, Symbol::N(v)]);
                extra_alts.push(Symbol::N(m));
            }
        }
        // Keys matching a set of patterns (all subsets for up to 4 patterns, else single patterns;
        // keys matching several patterns beyond that are rejected: stricter, never looser).
        let k = all_patterns.len();
        let subsets: Vec<Vec<usize>> = if k == 0 {
            Vec::new()
        } else if k <= 4 {
            (1..(1usize << k)).map(|m| (0..k).filter(|i| m >> i & 1 == 1).collect()).collect()
        } else {
            (0..k).map(|i| vec![i]).collect()
        };
        for subset in subsets {
            let mut parts: Vec<Part> = subset.iter().map(|&i| all_patterns[i].1.clone()).collect();
            let mut allowed = true;
            for (si, spec) in s.objs.iter().enumerate() {
                if spec.patterns.is_empty() || !subset.iter().any(|&i| all_patterns[i].2 == si) {
                    if let Some(a) = &spec.additional {
                        if self.doc.get(&a.ptr) == Some(&Value::Bool(false)) {
                            allowed = false;
                        }
                        parts.push(a.clone());
                    }
                }
            }
            for u in &s.uneval_props {
                if !subset.iter().any(|&i| u.patterns.contains(&all_patterns[i].0)) {
                    if self.doc.get(&u.part.ptr) == Some(&Value::Bool(false)) {
                        allowed = false;
                    }
                    parts.push(u.part.clone());
                }
            }
            if !allowed {
                continue;
            }
            let main = pattern_res[subset[0]].clone();
            let mut also: Vec<String> = subset[1..].iter().map(|&i| pattern_res[i].clone()).collect();
            also.extend(name_regexes.iter().cloned());
            let mut except = named_literals.clone();
            except.extend((0..k).filter(|i| !subset.contains(i)).map(|i| pattern_res[i].clone()));
            let key = self.term("KEY_PATTERN", main, also, except);
            let v = self.conj(parts)?;
            let m = self.nt("member pattern".into())?;
            self.rule(m, vec![Symbol::T(key), colon, Symbol::N(v)]);
            extra_alts.push(Symbol::N(m));
        }
        let extra = if extra_alts.is_empty() {
            None
        } else {
            let x = self.nt("member extra".into())?;
            for a in extra_alts {
                self.rule(x, vec![a]);
            }
            Some(Symbol::N(x))
        };
        // The member sequence with counts (min/maxProperties).
        let (min, max) = (s.min_props, s.max_props);
        if max.is_some_and(|m| m < min) {
            return Ok(());
        }
        if max.is_some_and(|m| m > names.len() as u64 + MAX_UNROLL) && extra.is_some() {
            return Err(SchemaError::new("maxProperties", &s.ptr, "too large to unroll"));
        }
        // Presence constraints (dependentRequired, oneOf of `required` sets) track which
        // involved keys are present.
        let involved: Vec<usize> = {
            let mut keys: Vec<&String> = Vec::new();
            for p in &s.presence {
                keys.extend(p.keys());
            }
            let mut idx: Vec<usize> = keys.iter().filter_map(|k| names.iter().position(|n| n == *k)).collect();
            idx.sort_unstable();
            idx.dedup();
            idx
        };
        if involved.len() > 16 {
            return Err(SchemaError::new("dependentRequired", &s.ptr, "more than 16 keys in presence constraints"));
        }
        let bit_of = |i: usize| involved.iter().position(|&x| x == i).map(|b| 1u32 << b);
        let present = |bits: u32, k: &str| -> bool {
            names.iter().position(|n| n == k).and_then(bit_of).is_some_and(|b| bits & b != 0)
        };
        let satisfied = |bits: u32| s.presence.iter().all(|p| p.holds(&|k: &str| present(bits, k)));
        let sat = |c: u64| if max.is_none() { c.min(min) } else { c };
        let fits = |c: u64| max.is_none_or(|m| c <= m);
        let comma = self.punct(",");
        let nm = members.len();
        // State (i, c, bits, first): next candidate named member i (extras at i == nm), c members
        // emitted (saturating), presence bits, and whether nothing was emitted yet.
        type St = (usize, u64, u32, bool);
        let mut memo: HashMap<St, u32> = HashMap::new();
        let mut work: Vec<St> = Vec::new();
        let mut state = |b: &mut Builder, st: St, work: &mut Vec<St>| -> Result<u32, SchemaError> {
            if let Some(&x) = memo.get(&st) {
                return Ok(x);
            }
            let x = b.nt(format!("members {}/{}/{}", st.0, st.1, st.2))?;
            memo.insert(st, x);
            work.push(st);
            Ok(x)
        };
        let start = state(self, (0, 0, 0, true), &mut work)?;
        while let Some((i, c, bits, first)) = work.pop() {
            let a = state(self, (i, c, bits, first), &mut work)?;
            let lead = |rhs: Vec<Symbol>| if first { rhs } else { [vec![comma], rhs].concat() };
            if i < nm {
                if let (Some(sym), true) = (members[i].0, fits(c + 1)) {
                    let nbits = bits | bit_of(i).unwrap_or(0);
                    let next = state(self, (i + 1, sat(c + 1), nbits, false), &mut work)?;
                    self.rule(a, lead(vec![sym, Symbol::N(next)]));
                }
                if !members[i].1 {
                    let next = state(self, (i + 1, c, bits, first), &mut work)?;
                    self.rule(a, vec![Symbol::N(next)]);
                }
            } else {
                if c >= min && satisfied(bits) {
                    self.rule(a, vec![]);
                }
                if let (Some(x), true) = (extra, fits(c + 1)) {
                    let next = state(self, (nm, sat(c + 1), bits, false), &mut work)?;
                    self.rule(a, lead(vec![x, Symbol::N(next)]));
                }
            }
        }
        let (l, r) = (self.punct("{"), self.punct("}"));
        self.rule(n, vec![l, Symbol::N(start), r]);
        Ok(())
    }

    fn build_array(&mut self, n: u32, s: &Shape) -> Result<(), SchemaError> {
        let p = s.arrs.iter().map(|a| a.prefix.len()).chain(s.uneval_items.iter().map(|u| u.prefix)).max().unwrap_or(0);
        let mut max = s.max_items;
        // Parts constraining position i; None: the position cannot exist.
        let uneval: Vec<(usize, Part, bool, bool)> = s
            .uneval_items
            .iter()
            .map(|u| (u.prefix, u.part.clone(), self.doc.get(&u.part.ptr) == Some(&Value::Bool(false)), u.by_contains))
            .collect();
        // Parts of position i (None: the position cannot exist). A `marked` element satisfies
        // `contains`, which evaluates it for an in-place `unevaluatedItems`.
        let position_m = |i: usize, marked: bool| -> Option<Vec<Part>> {
            let mut parts = Vec::new();
            for (prefix, part, is_false, by_contains) in &uneval {
                if i >= *prefix && !(marked && *by_contains) {
                    if *is_false {
                        return None;
                    }
                    parts.push(part.clone());
                }
            }
            for a in &s.arrs {
                if let Some(x) = a.prefix.get(i) {
                    parts.push(x.clone());
                } else {
                    match &a.rest {
                        Rest::Any => {}
                        Rest::Nothing => return None,
                        Rest::Schema(x) => parts.push(x.clone()),
                    }
                }
            }
            Some(parts)
        };
        let position = |i: usize| position_m(i, false);
        for i in 0..=p {
            if position(i).is_none() && (s.contains.is_empty() || position_m(i, true).is_none()) {
                max = Some(max.map_or(i as u64, |m| m.min(i as u64)));
                break;
            }
        }
        let min = s.min_items;
        if max.is_some_and(|m| m < min) {
            return Ok(());
        }
        let u = (p as u64).max(min);
        if u > MAX_UNROLL || max.is_some_and(|m| m > u + MAX_UNROLL) {
            return Err(SchemaError::new(
                if u > MAX_UNROLL { "minItems" } else { "maxItems" },
                &s.ptr,
                format!("array bounds beyond {MAX_UNROLL} explicit positions are not supported"),
            ));
        }
        // `contains` (with `minContains`): each element is either plain or "marked" (also
        // satisfies `contains`); states count marked elements up to `mc`.
        let (contains, mc) = match s.contains.as_slice() {
            [] => (None, 0u64),
            [(part, m)] => (Some(part.clone()), *m),
            [_, (part, _), ..] => {
                return Err(SchemaError::new(
                    "contains",
                    &part.ptr,
                    "several `contains` in one conjunction are not supported",
                ))
            }
        };
        if contains.is_none() || mc == 0 {
            // `minContains: 0` is always satisfied.
        }
        let mc = if contains.is_some() { mc } else { 0 };
        if max.is_some_and(|m| m < mc) {
            return Ok(());
        }
        let (l, r, comma) = (self.punct("["), self.punct("]"), self.punct(","));
        if min == 0 && mc == 0 {
            self.rule(n, vec![l, r]);
        }
        if max == Some(0) {
            return Ok(());
        }
        let elem = |b: &mut Builder, k: u64, marked: bool| -> Result<Symbol, SchemaError> {
            let Some(mut parts) = position_m((k as usize).min(p), marked) else {
                return Ok(Symbol::N(b.nt("nothing".into())?));
            };
            if marked {
                parts.extend(contains.iter().cloned());
            }
            Ok(Symbol::N(b.conj(parts)?))
        };
        // T(k, c): k elements emitted, c of them marked (saturating at mc).
        let last = max.unwrap_or(u.max(mc)).max(1);
        let mut states: HashMap<(u64, u64), u32> = HashMap::new();
        let mut work: Vec<(u64, u64)> = Vec::new();
        let mut state = |b: &mut Builder, k: u64, c: u64, work: &mut Vec<(u64, u64)>| -> Result<u32, SchemaError> {
            if let Some(&t) = states.get(&(k, c)) {
                return Ok(t);
            }
            let t = b.nt(format!("items {k}/{c}"))?;
            states.insert((k, c), t);
            work.push((k, c));
            Ok(t)
        };
        let marks: &[bool] = if contains.is_some() { &[false, true] } else { &[false] };
        for &m in marks {
            let c = (m as u64).min(mc);
            let t = state(self, 1, c, &mut work)?;
            let e0 = elem(self, 0, m)?;
            self.rule(n, vec![l, e0, Symbol::N(t), r]);
        }
        while let Some((k, c)) = work.pop() {
            let t = state(self, k, c, &mut work)?;
            if k >= min && c >= mc {
                self.rule(t, vec![]);
            }
            if max.is_none() || k < last {
                for &m in marks {
                    let c2 = (c + m as u64).min(mc);
                    let k2 = if max.is_none() { (k + 1).min(last) } else { k + 1 };
                    let next = state(self, k2, c2, &mut work)?;
                    let e = elem(self, k, m)?;
                    self.rule(t, vec![comma, e, Symbol::N(next)]);
                }
            }
        }
        Ok(())
    }
}
