//! XGrammar's structural-tag format (what vLLM sends as `response_format: {"type":
//! "structural_tag", ...}`) → [`Grammar`].
//!
//! Accepted: `{"type": "structural_tag", "format": F}`, a bare format `F`, and the older
//! `{"type": "structural_tag", "structures": [{"begin", "schema", "end"}], "triggers": [...]}`
//! (a `triggered_tags` of JSON Schema tags). Formats:
//!
//! | format | language |
//! |---|---|
//! | `const_string` `value` | that text |
//! | `json_schema` `json_schema` `max_whitespace_cnt` | the schema, compiled as `dwac compile schema.json` (in the embedded schemas' lexer components, as `%json`), whitespace only between its tokens (at most `max_whitespace_cnt` on each side of a punctuation mark) |
//! | `grammar` `grammar` | a GBNF grammar (start rule `root`) |
//! | `regex` `pattern` | the pattern's strings |
//! | `any_text` `excludes` | any UTF-8 text containing none of `excludes` |
//! | `sequence`, `or` `elements` | concatenation, alternatives |
//! | `optional`, `star`, `plus` `content`; `repeat` `min` `max` `content` | repetitions |
//! | `tag` `begin` `content` `end` | `begin content end`; `begin`/`end` a string or a `token`, `end` also a list of strings (any of them); an `any_text` content ends at the first end string (its `excludes` apply to the text and its end) |
//! | `triggered_tags` `triggers` `tags` `at_least_one` `stop_after_first` `excludes` | text containing no trigger (nor `excludes`), tags in between: `T? (tag T?)*`; each tag's `begin` starts with exactly one trigger; `at_least_one`: one tag or more; `stop_after_first`: the output ends after the first tag. (A tag begins where a trigger first occurs unless a trigger overlaps itself, e.g. `aa`: then text may end in a prefix of it.) |
//! | `tags_with_separator` `tags` `separator` `at_least_one` `stop_after_first` | tags separated by `separator` and nothing else (empty unless `at_least_one`) |
//! | `token` `token` | that token (an id, or the token's text), [`TokenSet`] |
//! | `any_tokens` `exclude_tokens` | zero or more tokens but those, text included |
//!
//! Refused by name, never dropped: any other format type (`exclude_token`, exactly one token of
//! any kind, is not a language of text), an unknown key, and options dwac does not enforce yet
//! (`json_schema`'s `style` other than `json`, `any_order`, `excludes`;
//! `any_text`'s and `any_tokens`' `max_tokens`, `max_chars`).
//!
//! Every terminal but an embedded schema's lets the parser decide where it ends
//! ([`Munch::None`]), as in GBNF: text ends where the next tag can begin. Free text is lexed in
//! a lexer component of its own, apart from the tags' literals (`Builder::separate_texts`).

use std::collections::HashMap;

use serde_json::Value;

use crate::ebnf::{check_terminal_regex, escape_literal, lower_repeat, Helpers};
use crate::schema::{compile_schema, SchemaOptions, Whitespace};
use crate::{Grammar, GrammarError, Munch, Symbol, Terminal, TokenItem, TokenSet};

/// Compile a structural tag (its JSON text).
pub fn parse(text: &str) -> Result<Grammar, GrammarError> {
    parse_with(text, false)
}

/// [`parse`], its `json_schema` contents compiled in strict mode if `strict`
/// ([`SchemaOptions::strict`]: keys and items a schema does not name are not allowed, the
/// language XGrammar gives the same structural tag).
pub fn parse_with(text: &str, strict: bool) -> Result<Grammar, GrammarError> {
    Ok(parse_with_warnings(text, strict)?.0)
}

/// [`parse_with`], with the warnings of the schemas and grammars it holds, each located by its
/// JSON pointer in the tag (`structural tag at /format/tags/3/content/json_schema: the schema
/// accepts no value`).
pub fn parse_with_warnings(text: &str, strict: bool) -> Result<(Grammar, Vec<String>), GrammarError> {
    let v: Value = serde_json::from_str(text).map_err(|e| GrammarError::at(text, span_at(text, &e), e.to_string()))?;
    compile_with_warnings(&v, strict)
}

fn span_at(text: &str, e: &serde_json::Error) -> crate::Span {
    let line_start: usize = text.split_inclusive('\n').take(e.line().saturating_sub(1)).map(str::len).sum();
    let at = (line_start + e.column().saturating_sub(1)).min(text.len());
    crate::Span::new(at, (at + 1).min(text.len()))
}

/// Compile a structural tag.
pub fn compile(v: &Value) -> Result<Grammar, GrammarError> {
    compile_with(v, false)
}

/// [`compile`], strict as in [`parse_with`].
pub fn compile_with(v: &Value, strict: bool) -> Result<Grammar, GrammarError> {
    Ok(compile_with_warnings(v, strict)?.0)
}

/// [`compile_with`], with the warnings as [`parse_with_warnings`] gives them.
pub fn compile_with_warnings(v: &Value, strict: bool) -> Result<(Grammar, Vec<String>), GrammarError> {
    let mut b = Builder {
        strict,
        g: Grammar::default(),
        helpers: Helpers::default(),
        literals: HashMap::new(),
        texts: HashMap::new(),
        text_terms: Vec::new(),
        tokens: HashMap::new(),
        schemas: 0,
        warnings: Vec::new(),
    };
    let start = b.g.add_nonterminal("structural_tag", None);
    b.helpers.reserve("structural_tag");
    b.g.start = start;
    let seq = match v.get("type").and_then(Value::as_str) {
        Some("structural_tag") if v.get("structures").is_some() => {
            keys(v, "", &["type", "structures", "triggers"])?;
            let structures = array(v, "", "structures")?;
            let mut tags = Vec::new();
            for (i, s) in structures.iter().enumerate() {
                let p = format!("/structures/{i}");
                keys(s, &p, &["begin", "schema", "end"])?;
                let schema = s.get("schema").ok_or_else(|| err(&p, "a structure needs `schema`"))?;
                tags.push(serde_json::json!({"type": "tag", "begin": s.get("begin").cloned().unwrap_or(Value::Null),
                    "content": {"type": "json_schema", "json_schema": schema}, "end": s.get("end").cloned().unwrap_or(Value::Null)}));
            }
            let f = serde_json::json!({"type": "triggered_tags", "triggers": v.get("triggers").cloned().unwrap_or(Value::Null), "tags": tags});
            b.format(&f, "")?
        }
        Some("structural_tag") => {
            keys(v, "", &["type", "format"])?;
            let f = v.get("format").ok_or_else(|| err("", "a structural tag needs `format`"))?;
            b.format(f, "/format")?
        }
        _ => b.format(v, "")?,
    };
    b.g.add_rule(start, seq, None);
    b.separate_texts();
    Ok((b.g, b.warnings))
}

fn err(pointer: &str, msg: impl std::fmt::Display) -> GrammarError {
    let at = if pointer.is_empty() { "#" } else { pointer };
    GrammarError::global(format!("structural tag at {at}: {msg}"))
}

/// Refuse keys other than `allowed` (never drop what we do not enforce).
fn keys(v: &Value, p: &str, allowed: &[&str]) -> Result<(), GrammarError> {
    let o = v.as_object().ok_or_else(|| err(p, "expected an object"))?;
    match o.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(err(p, format!("unknown or unsupported key `{k}` (supported here: {})", allowed.join(", ")))),
        None => Ok(()),
    }
}

fn array<'v>(v: &'v Value, p: &str, key: &str) -> Result<&'v Vec<Value>, GrammarError> {
    v.get(key).and_then(Value::as_array).ok_or_else(|| err(p, format!("`{key}` must be a list")))
}

fn string<'v>(v: &'v Value, p: &str, key: &str) -> Result<&'v str, GrammarError> {
    v.get(key).and_then(Value::as_str).ok_or_else(|| err(p, format!("`{key}` must be a string")))
}

fn strings(v: &Value, p: &str, key: &str) -> Result<Vec<String>, GrammarError> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| x.as_str().map(str::to_string).ok_or_else(|| err(p, format!("`{key}` must be a list of strings"))))
            .collect(),
        Some(_) => Err(err(p, format!("`{key}` must be a list of strings"))),
    }
}

fn flag(v: &Value, p: &str, key: &str) -> Result<bool, GrammarError> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(err(p, format!("`{key}` must be true or false"))),
    }
}

/// An option dwac does not enforce must be absent (or its neutral value).
fn unsupported_unless(v: &Value, p: &str, key: &str, neutral: &[Value]) -> Result<(), GrammarError> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(()),
        Some(x) if neutral.contains(x) => Ok(()),
        Some(x) => Err(err(p, format!("`{key}: {x}` is not supported"))),
    }
}

/// An `any_text` format's excluded strings (its token and character budgets are not supported).
fn any_text_excludes(v: &Value, p: &str) -> Result<Vec<String>, GrammarError> {
    keys(v, p, &["type", "excludes", "max_tokens", "max_chars"])?;
    unsupported_unless(v, p, "max_tokens", &[])?;
    unsupported_unless(v, p, "max_chars", &[])?;
    strings(v, p, "excludes")
}

struct Builder {
    g: Grammar,
    helpers: Helpers,
    literals: HashMap<String, u32>,
    /// Text terminals by their sorted excluded strings.
    texts: HashMap<Vec<String>, u32>,
    /// The free-text terminals ([`Builder::separate_texts`]).
    text_terms: Vec<u32>,
    tokens: HashMap<TokenSet, u32>,
    schemas: usize,
    /// `json_schema` contents in strict mode.
    strict: bool,
    /// The embedded schemas' and grammars' warnings, located.
    warnings: Vec<String>,
}

impl Builder {
    fn literal(&mut self, s: &str) -> Vec<Symbol> {
        if s.is_empty() {
            return Vec::new();
        }
        let id = match self.literals.get(s) {
            Some(&id) => id,
            None => {
                let name = format!("{s:?}");
                let id = self.g.add_terminal(Terminal { munch: Munch::None, ..Terminal::new(name, escape_literal(s)) });
                self.literals.insert(s.to_string(), id);
                id
            }
        };
        vec![Symbol::T(id)]
    }

    /// Any text (possibly empty) containing none of `excludes`.
    fn text(&mut self, mut excludes: Vec<String>, p: &str) -> Result<Vec<Symbol>, GrammarError> {
        if excludes.iter().any(String::is_empty) {
            return Err(err(p, "an excluded string must not be empty"));
        }
        excludes.sort();
        excludes.dedup();
        let id = match self.texts.get(&excludes) {
            Some(&id) => id,
            None => {
                let name = if excludes.is_empty() {
                    "any_text".to_string()
                } else {
                    format!("any_text excluding {excludes:?}")
                };
                let except = excludes.iter().map(|x| format!("(?s:.)*{}(?s:.)*", escape_literal(x))).collect();
                let t = Terminal { munch: Munch::None, except, ..Terminal::new(name, "(?s:.)+") };
                let id = self.g.add_terminal(t);
                self.text_terms.push(id);
                self.texts.insert(excludes, id);
                id
            }
        };
        self.optional(vec![Symbol::T(id)], p)
    }

    /// The free-text terminals (`any_text`, text up to an end string) leave the main lexer
    /// component for one of their own. In the main component, every state of a tag's `begin`
    /// (or any literal) that the text does not exclude also carries the text, and every
    /// token is live there: with DeepSeek's tool calls (text excluding
    /// `<｜tool▁calls▁begin｜>`, calls beginning `<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME`),
    /// each node of the trie of tool names was a lexer state whose whole vocabulary was walked
    /// (1,200 states for 100 tools). Apart, the text's states follow only its excluded strings.
    ///
    /// Sound: no inhibition crosses components, and none is lost: every terminal of the main
    /// component here lets the parser decide where it ends ([`Munch::None`]: it inhibits
    /// nothing), as the text terminals do. (Embedded schemas are in components of their own
    /// already.) Where some main-component terminal does inhibit, nothing moves.
    fn separate_texts(&mut self) {
        if self.text_terms.is_empty() || self.g.terminals.iter().any(|t| t.component == 0 && t.munch != Munch::None) {
            return;
        }
        let own = self.g.terminals.iter().map(|t| t.component).max().unwrap_or(0) + 1;
        for &t in &self.text_terms {
            self.g.terminals[t as usize].component = own;
        }
    }

    fn token_set(&mut self, set: TokenSet) -> Vec<Symbol> {
        let id = match self.tokens.get(&set) {
            Some(&id) => id,
            None => {
                let id = self.g.add_terminal(Terminal::tokens(set.clone(), Munch::None, None));
                self.tokens.insert(set, id);
                id
            }
        };
        vec![Symbol::T(id)]
    }

    fn token_item(v: &Value, p: &str) -> Result<TokenItem, GrammarError> {
        match v {
            Value::Number(n) => n
                .as_u64()
                .and_then(|x| u32::try_from(x).ok())
                .map(|x| TokenItem::Ids(x, x))
                .ok_or_else(|| err(p, format!("`{n}` is not a token id"))),
            Value::String(s) if !s.is_empty() => Ok(TokenItem::Text(s.clone())),
            other => Err(err(p, format!("a token is an id or the token's text, not {other}"))),
        }
    }

    fn helper(&mut self, alts: Vec<Vec<Symbol>>, kind: &str) -> Vec<Symbol> {
        let h = self.helpers.fresh(&mut self.g, "structural_tag", kind, crate::Span::new(0, 0));
        self.g.nonterminals[h as usize].span = None;
        for rhs in alts {
            self.g.add_rule(h, rhs, None);
        }
        vec![Symbol::N(h)]
    }

    fn repeat(&mut self, seq: Vec<Symbol>, min: u32, max: Option<u32>, p: &str) -> Result<Vec<Symbol>, GrammarError> {
        lower_repeat(&mut self.g, &mut self.helpers, "structural_tag", vec![seq], min, max, crate::Span::new(0, 0))
            .map_err(|m| err(p, m))
    }

    fn optional(&mut self, seq: Vec<Symbol>, p: &str) -> Result<Vec<Symbol>, GrammarError> {
        self.repeat(seq, 0, Some(1), p)
    }

    /// A `json_schema` format: the schema compiled and spliced in, whitespace bounded as given.
    fn json_schema(&mut self, v: &Value, p: &str) -> Result<Vec<Symbol>, GrammarError> {
        keys(v, p, &["type", "json_schema", "style", "any_order", "max_whitespace_cnt", "excludes"])?;
        unsupported_unless(v, p, "style", &[Value::from("json")])?;
        unsupported_unless(v, p, "any_order", &[Value::Bool(false)])?;
        unsupported_unless(v, p, "excludes", &[Value::Array(Vec::new())])?;
        let max = match v.get("max_whitespace_cnt") {
            None | Some(Value::Null) => None,
            Some(x) => Some(
                x.as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| err(p, "`max_whitespace_cnt` must be a count"))?,
            ),
        };
        let schema = v.get("json_schema").ok_or_else(|| err(p, "`json_schema` is missing"))?;
        let opts =
            SchemaOptions { whitespace: Whitespace::Around { max }, strict: self.strict, ..SchemaOptions::default() };
        let sg = compile_schema(schema, &opts).map_err(|e| err(&format!("{p}/json_schema"), e))?;
        self.warnings.extend(sg.warnings.iter().map(|w| format!("structural tag at {p}/json_schema: {w}")));
        self.schemas += 1;
        let nt = self.g.splice(sg.grammar, &format!("schema{}:", self.schemas), None, true);
        Ok(vec![Symbol::N(nt)])
    }

    /// A `triggered_tags` format: text up to a trigger, each trigger the start of one of the
    /// tags, as often as `at_least_one` and `stop_after_first` say.
    fn triggered_tags(&mut self, v: &Value, p: &str) -> Result<Vec<Symbol>, GrammarError> {
        keys(v, p, &["type", "triggers", "tags", "at_least_one", "stop_after_first", "excludes"])?;
        let triggers = strings(v, p, "triggers")?;
        if triggers.is_empty() || triggers.iter().any(String::is_empty) {
            return Err(err(p, "`triggers` must be a nonempty list of nonempty strings"));
        }
        let tags = array(v, p, "tags")?;
        if tags.is_empty() {
            return Err(err(p, "`tags` must not be empty"));
        }
        let mut alts = Vec::new();
        for (i, t) in tags.iter().enumerate() {
            let tp = format!("{p}/tags/{i}");
            let begin = t.get("begin").and_then(Value::as_str).ok_or_else(|| {
                err(&tp, "a triggered tag's `begin` must be a string (token triggers: `token_triggered_tags`, not supported)")
            })?;
            let n = triggers.iter().filter(|tr| begin.starts_with(tr.as_str())).count();
            if n != 1 {
                return Err(err(&tp, format!("`begin` {begin:?} must start with exactly one trigger ({n} do)")));
            }
            alts.push(self.tag(t, &tp)?);
        }
        let tag = self.helper(alts, "tag");
        let mut excludes = strings(v, p, "excludes")?;
        excludes.extend(triggers);
        let text = self.text(excludes, p)?;
        let (at_least_one, stop) = (flag(v, p, "at_least_one")?, flag(v, p, "stop_after_first")?);
        let one = [tag.clone(), text.clone()].concat();
        Ok(match (at_least_one, stop) {
            // T? (tag T?)*, T? (tag T?)+
            (false, false) => [text, self.repeat(one, 0, None, p)?].concat(),
            (true, false) => [text, self.repeat(one, 1, None, p)?].concat(),
            // T? tag?, T? tag: the output ends after the first tag.
            (false, true) => [text.clone(), self.optional(tag, p)?].concat(),
            (true, true) => [text, tag].concat(),
        })
    }

    /// A format's symbols (an empty sequence is the empty string).
    fn format(&mut self, v: &Value, p: &str) -> Result<Vec<Symbol>, GrammarError> {
        let ty = v.get("type").and_then(Value::as_str).ok_or_else(|| err(p, "a format needs a string `type`"))?;
        match ty {
            "const_string" => {
                keys(v, p, &["type", "value"])?;
                Ok(self.literal(string(v, p, "value")?))
            }
            "json_schema" => self.json_schema(v, p),
            "grammar" => {
                keys(v, p, &["type", "grammar"])?;
                let src = string(v, p, "grammar")?;
                let (sub, warnings) = crate::gbnf::parse_with_warnings(src)
                    .map_err(|e| err(&format!("{p}/grammar"), e.located(&"grammar")))?;
                self.warnings.extend(
                    warnings.iter().map(|w| {
                        format!("structural tag at {p}/grammar: {}:{}: {}", w.0.line, w.0.column, w.0.message)
                    }),
                );
                self.schemas += 1;
                let nt = self.g.splice(sub, &format!("grammar{}:", self.schemas), None, false);
                Ok(vec![Symbol::N(nt)])
            }
            "regex" => {
                keys(v, p, &["type", "pattern"])?;
                let pattern = string(v, p, "pattern")?;
                check_terminal_regex(pattern, &format!("/{pattern}/")).map_err(|m| err(p, m))?;
                let id = self
                    .g
                    .add_terminal(Terminal { munch: Munch::None, ..Terminal::new(format!("/{pattern}/"), pattern) });
                Ok(vec![Symbol::T(id)])
            }
            "any_text" => {
                let excludes = any_text_excludes(v, p)?;
                self.text(excludes, p)
            }
            "sequence" | "or" => {
                keys(v, p, &["type", "elements"])?;
                let elements = array(v, p, "elements")?;
                if elements.is_empty() {
                    return Err(err(p, "`elements` must not be empty"));
                }
                let mut parts = Vec::new();
                for (i, e) in elements.iter().enumerate() {
                    parts.push(self.format(e, &format!("{p}/elements/{i}"))?);
                }
                Ok(if ty == "sequence" { parts.concat() } else { self.helper(parts, "or") })
            }
            "optional" | "star" | "plus" => {
                keys(v, p, &["type", "content"])?;
                let c = v.get("content").ok_or_else(|| err(p, "`content` is missing"))?;
                let seq = self.format(c, &format!("{p}/content"))?;
                let (min, max) = match ty {
                    "optional" => (0, Some(1)),
                    "star" => (0, None),
                    _ => (1, None),
                };
                self.repeat(seq, min, max, p)
            }
            "repeat" => {
                keys(v, p, &["type", "min", "max", "content"])?;
                let num = |k: &str| v.get(k).and_then(Value::as_u64).and_then(|x| u32::try_from(x).ok());
                let min = num("min").ok_or_else(|| err(p, "`min` must be a count"))?;
                let max = match v.get("max") {
                    Some(Value::Number(n)) if n.as_i64() == Some(-1) => None,
                    _ => Some(num("max").ok_or_else(|| err(p, "`max` must be a count (or -1: unbounded)"))?),
                };
                if max.is_some_and(|m| m < min) {
                    return Err(err(p, "`max` is below `min`"));
                }
                let c = v.get("content").ok_or_else(|| err(p, "`content` is missing"))?;
                let seq = self.format(c, &format!("{p}/content"))?;
                self.repeat(seq, min, max, p)
            }
            "tag" => self.tag(v, p),
            "triggered_tags" => self.triggered_tags(v, p),
            "tags_with_separator" => {
                keys(v, p, &["type", "tags", "separator", "at_least_one", "stop_after_first"])?;
                let tags = array(v, p, "tags")?;
                if tags.is_empty() {
                    return Err(err(p, "`tags` must not be empty"));
                }
                let mut alts = Vec::new();
                for (i, t) in tags.iter().enumerate() {
                    alts.push(self.tag(t, &format!("{p}/tags/{i}"))?);
                }
                let tag = self.helper(alts, "tag");
                let sep = self.literal(string(v, p, "separator")?);
                let (at_least_one, stop) = (flag(v, p, "at_least_one")?, flag(v, p, "stop_after_first")?);
                let more = if stop { Vec::new() } else { self.repeat([sep, tag.clone()].concat(), 0, None, p)? };
                let some = [tag, more].concat();
                Ok(if at_least_one { some } else { self.optional(some, p)? })
            }
            "token" => {
                keys(v, p, &["type", "token"])?;
                let item = Self::token_item(v.get("token").unwrap_or(&Value::Null), p)?;
                Ok(self.token_set(TokenSet { items: vec![item], negated: false, text: false, repeat: false }))
            }
            "any_tokens" => {
                keys(v, p, &["type", "exclude_tokens", "max_tokens"])?;
                unsupported_unless(v, p, "max_tokens", &[])?;
                let items = match v.get("exclude_tokens") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(a)) => a.iter().map(|x| Self::token_item(x, p)).collect::<Result<_, _>>()?,
                    Some(_) => return Err(err(p, "`exclude_tokens` must be a list")),
                };
                let t = self.token_set(TokenSet { items, negated: true, text: true, repeat: true });
                self.optional(t, p)
            }
            "exclude_token" => Err(err(
                p,
                "`exclude_token` matches exactly one token of any kind, text tokens included, which is not a \
                 language of text; `any_tokens` (zero or more) is supported",
            )),
            other => Err(err(p, format!("format type `{other}` is not supported"))),
        }
    }

    /// `begin content end`; an `any_text` content also excludes the end strings.
    fn tag(&mut self, v: &Value, p: &str) -> Result<Vec<Symbol>, GrammarError> {
        keys(v, p, &["type", "begin", "content", "end"])?;
        if v.get("type").and_then(Value::as_str).is_some_and(|t| t != "tag") {
            return Err(err(p, "expected a `tag`"));
        }
        let bound = |b: &mut Builder, x: &Value, q: &str| -> Result<Vec<Symbol>, GrammarError> {
            match x {
                Value::String(s) => Ok(b.literal(s)),
                Value::Object(_) if x.get("type").and_then(Value::as_str) == Some("token") => b.format(x, q),
                _ => Err(err(q, "expected a string or a `token` format")),
            }
        };
        let begin = bound(self, v.get("begin").unwrap_or(&Value::Null), &format!("{p}/begin"))?;
        let end_v = v.get("end").unwrap_or(&Value::Null);
        let (end, end_strings) = match end_v {
            Value::Array(a) => {
                let mut alts = Vec::new();
                let mut ss = Vec::new();
                for (i, x) in a.iter().enumerate() {
                    let s = x.as_str().ok_or_else(|| err(&format!("{p}/end/{i}"), "expected a string"))?;
                    alts.push(self.literal(s));
                    ss.push(s.to_string());
                }
                if alts.is_empty() {
                    return Err(err(p, "`end` must not be an empty list"));
                }
                (self.helper(alts, "end"), ss)
            }
            Value::String(s) => (self.literal(s), vec![s.clone()]),
            other => (bound(self, other, &format!("{p}/end"))?, Vec::new()),
        };
        let c = v.get("content").ok_or_else(|| err(p, "`content` is missing"))?;
        let cp = format!("{p}/content");
        if c.get("type").and_then(Value::as_str) == Some("any_text") {
            let ex = any_text_excludes(c, &cp)?;
            if !end_strings.is_empty() && end_strings.iter().all(|e| !e.is_empty()) {
                // The text and its end as one terminal that ends at the first end string.
                let t = self.text_until(end_strings, ex, &cp)?;
                return Ok([begin, t].concat());
            }
            let content = self.text(ex, &cp)?;
            return Ok([begin, content, end].concat());
        }
        let content = self.format(c, &cp)?;
        Ok([begin, content, end].concat())
    }

    /// Any text (possibly empty) containing none of `excludes`, then the first occurrence of
    /// one of `ends` (the lexeme holds an end string only as its suffix), as one terminal.
    fn text_until(
        &mut self,
        mut ends: Vec<String>,
        excludes: Vec<String>,
        p: &str,
    ) -> Result<Vec<Symbol>, GrammarError> {
        if excludes.iter().any(String::is_empty) {
            return Err(err(p, "an excluded string must not be empty"));
        }
        ends.sort();
        ends.dedup();
        let alt = ends.iter().map(|e| escape_literal(e)).collect::<Vec<_>>().join("|");
        let mut except = vec![format!("(?s:.)*(?:{alt})(?s:.)+")];
        except.extend(excludes.iter().map(|x| format!("(?s:.)*{}(?s:.)*", escape_literal(x))));
        let name = format!("any_text until {ends:?}");
        let t = Terminal { munch: Munch::None, except, ..Terminal::new(name, format!("(?s:.)*(?:{alt})")) };
        let id = self.g.add_terminal(t);
        self.text_terms.push(id);
        Ok(vec![Symbol::T(id)])
    }
}
