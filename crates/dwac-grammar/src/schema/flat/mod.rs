//! Conjunctions of subschemas: flattening (`$ref`, `allOf`), refusal checks, and merging
//! the keywords of every flat schema into one [`Shape`] (an intersection).

use std::collections::{HashSet, VecDeque};

use serde_json::{Map, Value};

use super::doc::Doc;
use super::numbers::Decimal;
use super::{Draft, SchemaError};

mod members;
mod merge;
mod negation;
pub(crate) use members::SomeMember;
pub(crate) use merge::merge;
pub(crate) use negation::{negation, Negation};

/// A subschema in a conjunction: its JSON pointer, and whether only its own keywords count
/// (its `$ref`, `allOf`, `anyOf` and `oneOf` are then ignored: they were expanded elsewhere).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Part {
    pub ptr: String,
    pub own_only: bool,
}

impl Part {
    pub fn full(ptr: impl Into<String>) -> Part {
        Part { ptr: ptr.into(), own_only: false }
    }
}

pub(crate) const T_NULL: u8 = 1;
pub(crate) const T_BOOL: u8 = 2;
pub(crate) const T_OBJ: u8 = 4;
pub(crate) const T_ARR: u8 = 8;
pub(crate) const T_STR: u8 = 16;
pub(crate) const T_INT: u8 = 32;
/// `number` includes `integer`.
pub(crate) const T_NUM: u8 = 64 | T_INT;
pub(crate) const T_ALL: u8 = 127;

pub(crate) fn type_bits(name: &str) -> Option<u8> {
    Some(match name {
        "null" => T_NULL,
        "boolean" => T_BOOL,
        "object" => T_OBJ,
        "array" => T_ARR,
        "string" => T_STR,
        "integer" => T_INT,
        "number" => T_NUM,
        _ => return None,
    })
}

/// `type` as a bit set (`None` if absent or malformed).
pub(crate) fn types_of(o: &Map<String, Value>) -> Option<u8> {
    match o.get("type")? {
        Value::String(s) => type_bits(s),
        Value::Array(a) => Some(a.iter().filter_map(|t| t.as_str().and_then(type_bits)).fold(0, |x, y| x | y)),
        _ => None,
    }
}

/// `anyOf` / `oneOf` of one flat schema.
#[derive(Clone, Debug)]
pub(crate) struct Disj {
    pub kind: &'static str,
    pub ptr: String,
    pub branches: Vec<Part>,
}

/// The flat schemas evaluated in place by the schema at `root` (itself, its `$ref` and `allOf`
/// closure, and of each `anyOf`/`oneOf` the branch present in the conjunction): the schemas whose
/// `properties`/`items` count as "evaluated" for `root`'s `unevaluated*` keywords.
pub(crate) fn in_place<'a>(
    doc: &Doc<'a>,
    root: &str,
    present: &HashSet<String>,
) -> Result<Vec<FlatSchema<'a>>, SchemaError> {
    let mut out = Vec::new();
    let mut queue: VecDeque<String> = VecDeque::from([root.to_string()]);
    let mut seen: HashSet<String> = HashSet::new();
    while let Some(p) = queue.pop_front() {
        if !seen.insert(p.clone()) {
            continue;
        }
        let Some(Value::Object(o)) = doc.get(&p) else { continue };
        if let Some(Value::String(r)) = o.get("$ref") {
            queue.push_back(doc.resolve_ref(&p, r)?);
        }
        if let Some(Value::Array(a)) = o.get("allOf") {
            queue.extend((0..a.len()).map(|i| format!("{p}/allOf/{i}")));
        }
        for kind in ["anyOf", "oneOf"] {
            if let Some(Value::Array(a)) = o.get(kind) {
                queue.extend((0..a.len()).map(|i| format!("{p}/{kind}/{i}")).filter(|b| present.contains(b)));
            }
        }
        out.push((p, o));
    }
    Ok(out)
}

/// `unevaluatedProperties` of one flat schema, with what its in-place subschemas evaluate.
#[derive(Clone, Debug)]
pub(crate) struct Unevaluated {
    pub part: Part,
    pub names: Vec<String>,
    pub patterns: Vec<String>,
    /// Every key (or position) is evaluated (an `additionalProperties`/`items` in place).
    pub all: bool,
    /// `unevaluatedItems`: positions below this are evaluated.
    pub prefix: usize,
    /// `unevaluatedItems`: an in-place `contains` evaluates the items it matches.
    pub by_contains: bool,
}

/// A flat schema: its JSON pointer and keywords.
pub(crate) type FlatSchema<'a> = (String, &'a Map<String, Value>);

/// A conjunction with `$ref` and `allOf` expanded.
#[derive(Debug)]
pub(crate) struct Flat<'a> {
    /// Every flat schema (pointer, keywords), in definition order.
    pub schemas: Vec<FlatSchema<'a>>,
    /// The same schemas as own-only parts: the conjunction minus its disjunctions.
    pub own: Vec<Part>,
    pub is_false: bool,
    pub disjunctions: Vec<Disj>,
}

/// Expand `$ref` and `allOf`.
pub(crate) fn flatten<'a>(doc: &Doc<'a>, parts: &[Part]) -> Result<Flat<'a>, SchemaError> {
    let mut flat = Flat { schemas: Vec::new(), own: Vec::new(), is_false: false, disjunctions: Vec::new() };
    // Depth-first in definition order: a schema, then its `$ref` target, then its `allOf`
    // branches in order (each expanded before the next), so merged properties keep the order
    // in which the schema text lists them.
    let mut queue: Vec<Part> = parts.iter().rev().cloned().collect();
    let mut seen: HashSet<Part> = HashSet::new();
    while let Some(p) = queue.pop() {
        if !seen.insert(p.clone()) {
            continue;
        }
        match doc.get(&p.ptr) {
            None => return Err(SchemaError::new("$ref", &p.ptr, "points to nothing")),
            Some(Value::Bool(true)) => {}
            Some(Value::Bool(false)) => flat.is_false = true,
            Some(Value::Object(o)) => {
                if !p.own_only {
                    if let Some(a) = o.get("allOf") {
                        let Value::Array(a) = a else {
                            return Err(SchemaError::new("allOf", &p.ptr, "must be an array"));
                        };
                        if !(o.contains_key("$ref") && doc.draft.ref_overrides_siblings()) {
                            for i in (0..a.len()).rev() {
                                queue.push(Part::full(format!("{}/allOf/{i}", p.ptr)));
                            }
                        }
                    }
                    if let Some(r) = o.get("$ref") {
                        let Some(r) = r.as_str() else {
                            return Err(SchemaError::new("$ref", &p.ptr, "must be a string"));
                        };
                        queue.push(Part::full(doc.resolve_ref(&p.ptr, r)?));
                        if doc.draft.ref_overrides_siblings() {
                            continue;
                        }
                    }
                    for kind in ["anyOf", "oneOf"] {
                        if let Some(a) = o.get(kind) {
                            let Value::Array(a) = a else {
                                return Err(SchemaError::new(kind, &p.ptr, "must be an array"));
                            };
                            let branches = (0..a.len()).map(|i| Part::full(format!("{}/{kind}/{i}", p.ptr))).collect();
                            flat.disjunctions.push(Disj { kind, ptr: p.ptr.clone(), branches });
                        }
                    }
                } else if doc.draft.ref_overrides_siblings() && o.contains_key("$ref") {
                    continue;
                }
                flat.schemas.push((p.ptr.clone(), o));
                flat.own.push(Part { ptr: p.ptr.clone(), own_only: true });
            }
            Some(_) => return Err(SchemaError::new("schema", &p.ptr, "a schema must be an object or a boolean")),
        }
    }
    // `own` stays in definition order (it is re-flattened by callers; a sort would reorder
    // merged properties).
    Ok(flat)
}

/// How the positions after the tuple part of an array are constrained.
#[derive(Clone, Debug)]
pub(crate) enum Rest {
    Any,
    Nothing,
    Schema(Part),
}

#[derive(Clone, Debug)]
pub(crate) struct ArrSpec {
    pub prefix: Vec<Part>,
    pub rest: Rest,
}

#[derive(Clone, Debug)]
pub(crate) struct ObjSpec {
    pub ptr: String,
    pub props: Vec<String>,
    /// (ECMA pattern, value schema).
    pub patterns: Vec<(String, Part)>,
    /// `None`: additional properties are unconstrained.
    pub additional: Option<Part>,
}

/// The intersection of the keywords of a flat conjunction.
#[derive(Clone, Debug)]
pub(crate) struct Shape {
    pub ptr: String,
    pub types: u8,
    pub enums: Option<Vec<Value>>,
    pub str_min: u64,
    pub str_max: Option<u64>,
    pub patterns: Vec<(String, String)>,
    pub formats: Vec<(String, String)>,
    pub num_min: Option<(Decimal, bool)>,
    pub num_max: Option<(Decimal, bool)>,
    pub multiples: Vec<(Decimal, String)>,
    pub objs: Vec<ObjSpec>,
    pub required: Vec<String>,
    pub min_props: u64,
    pub max_props: Option<u64>,
    pub prop_names: Vec<Part>,
    pub arrs: Vec<ArrSpec>,
    pub min_items: u64,
    pub max_items: Option<u64>,
    pub uneval_props: Vec<Unevaluated>,
    pub uneval_items: Vec<Unevaluated>,
    /// `contains` subschemas with their `minContains` (default 1).
    pub contains: Vec<(Part, u64)>,
    /// `maxContains` of the (one) `contains`, with the complement of `contains` that the items
    /// not counted satisfy (`complement::rewrite_max_contains`).
    pub contains_max: Option<(u64, Part)>,
    /// Constraints on which keys are present together.
    pub presence: Vec<Presence>,
    /// Regexes over string lexemes that a string must not match (`not: {pattern}`,
    /// `not: {const/enum}` of strings): the string terminal's `except` list.
    pub str_not: Vec<String>,
    /// Booleans excluded by `not: {const/enum}`: bit 0 `false`, bit 1 `true`.
    pub bool_not: u8,
    /// Numbers excluded by `not: {const/enum}` (by value).
    pub num_not: Vec<Decimal>,
    /// `uniqueItems: true`: the pointer of the (first) schema that says so.
    pub unique: Option<String>,
    /// Members some member must be (the internal keyword of `complement.rs`).
    pub some_members: Vec<SomeMember>,
}

/// A constraint on which object keys are present.
#[derive(Clone, Debug)]
pub(crate) enum Presence {
    /// `dependentRequired`: if the key is present, so are these.
    Implies(String, Vec<String>),
    /// `oneOf` of branches that require keys (first list) and forbid keys (second list):
    /// exactly one branch holds.
    ExactlyOne(Vec<(Vec<String>, Vec<String>)>),
    /// `not: {required}` and `not: {anyOf: [{required}, …]}`: no listed key set is wholly present.
    NoneOf(Vec<Vec<String>>),
    /// `not: {properties: {…}, additionalProperties: false}`: some key present is not one of
    /// these (a named key of the object outside the list, or a key the object does not name).
    SomeOutside(Vec<String>),
}

/// The name [`Presence::holds`] asks about for "a key the object does not name is there"
/// (not a JSON string's content: it is no valid UTF-8 text).
pub(crate) const OTHER_KEY: &str = "\u{0}other";

impl Presence {
    pub fn keys(&self) -> Vec<&String> {
        match self {
            Presence::Implies(k, ds) => std::iter::once(k).chain(ds).collect(),
            Presence::ExactlyOne(bs) => bs.iter().flat_map(|(r, a)| r.iter().chain(a)).collect(),
            Presence::NoneOf(sets) => sets.iter().flatten().collect(),
            Presence::SomeOutside(keys) => keys.iter().collect(),
        }
    }

    /// Whether the constraint holds when `present` says which keys are: `named` are the object's
    /// named keys, and `present(OTHER_KEY)` says whether a key it does not name is there.
    pub fn holds(&self, named: &[String], present: &dyn Fn(&str) -> bool) -> bool {
        match self {
            Presence::Implies(k, ds) => !present(k) || ds.iter().all(|d| present(d)),
            Presence::ExactlyOne(bs) => {
                bs.iter()
                    .filter(|(r, a)| r.iter().all(|k| present(k)) && (a.is_empty() || !a.iter().all(|k| present(k))))
                    .count()
                    == 1
            }
            Presence::NoneOf(sets) => !sets.iter().any(|set| set.iter().all(|k| present(k))),
            Presence::SomeOutside(keys) => {
                named.iter().map(String::as_str).chain([OTHER_KEY]).any(|k| present(k) && !keys.iter().any(|x| x == k))
            }
        }
    }
}

/// The branches of a `oneOf` as presence constraints, if every branch consists only of
/// `required` and `not: {required: …}` (and annotations).
pub(crate) fn presence_branches(doc: &Doc, d: &Disj) -> Option<Vec<(Vec<String>, Vec<String>)>> {
    let strings =
        |v: &Value| -> Option<Vec<String>> { v.as_array()?.iter().map(|x| x.as_str().map(str::to_string)).collect() };
    let mut out = Vec::new();
    for b in &d.branches {
        let Some(Value::Object(o)) = doc.get(&b.ptr) else { return None };
        let mut req = Vec::new();
        let mut absent = Vec::new();
        for (k, v) in o {
            match k.as_str() {
                "required" => req = strings(v)?,
                "not" => {
                    let n = v.as_object()?;
                    if n.keys().any(|k| k != "required" && !is_annotation(k)) {
                        return None;
                    }
                    absent = strings(n.get("required")?)?;
                }
                k if is_annotation(k) => {}
                _ => return None,
            }
        }
        out.push((req, absent));
    }
    (out.len() >= 2).then_some(out)
}

/// A schema dependency (`dependentSchemas`, draft-07 `dependencies`) of key `k` that is a presence
/// constraint: `Some(None)` if it constrains nothing (`true`, annotations only), `Some(Some(c))`
/// for `{required: [...]}` (`k` implies those keys) or `false` (`k` never present), `None` for
/// any other schema.
pub(crate) fn dependent_presence(k: &str, v: &Value) -> Option<Option<Presence>> {
    match v {
        Value::Bool(true) => Some(None),
        Value::Bool(false) => Some(Some(Presence::NoneOf(vec![vec![k.to_string()]]))),
        Value::Object(o) => {
            if o.keys().any(|x| x != "required" && !is_annotation(x)) {
                return None;
            }
            match o.get("required") {
                None => Some(None),
                Some(r) => {
                    let r: Option<Vec<String>> = r.as_array()?.iter().map(|x| x.as_str().map(str::to_string)).collect();
                    Some(Some(Presence::Implies(k.to_string(), r?)))
                }
            }
        }
        _ => None,
    }
}

/// Bits of the JSON type of a value.
pub(crate) fn value_type(v: &Value) -> u8 {
    match v {
        Value::Null => T_NULL,
        Value::Bool(_) => T_BOOL,
        Value::Object(_) => T_OBJ,
        Value::Array(_) => T_ARR,
        Value::String(_) => T_STR,
        Value::Number(n) => {
            if Decimal::from_json(n).is_integer() {
                T_NUM
            } else {
                64
            }
        }
    }
}

/// JSON equality as JSON Schema defines it (numbers by value).
pub(crate) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => Decimal::from_json(x) == Decimal::from_json(y),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

fn as_u64(v: &Value, kw: &str, ptr: &str) -> Result<u64, SchemaError> {
    match v {
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                return Ok(u);
            }
            let d = Decimal::from_json(n);
            if d.is_integer() && n.as_f64().is_some_and(|f| (0.0..1.8e19).contains(&f)) {
                return Ok(n.as_f64().unwrap_or(0.0) as u64);
            }
            Err(SchemaError::new(kw, ptr, "must be a non-negative integer"))
        }
        _ => Err(SchemaError::new(kw, ptr, "must be a non-negative integer")),
    }
}

fn as_decimal(v: &Value, kw: &str, ptr: &str) -> Result<Decimal, SchemaError> {
    match v {
        Value::Number(n) => Ok(Decimal::from_json(n)),
        _ => Err(SchemaError::new(kw, ptr, "must be a number")),
    }
}

/// Keywords we cannot honour exactly. `Some(reason)` if `o[kw]` must be refused.
pub(crate) fn refusal(kw: &str, v: &Value, o: &Map<String, Value>, draft: Draft) -> Option<&'static str> {
    match kw {
        "not" => match v {
            Value::Bool(_) => None,
            Value::Object(n) if negation(n).is_some() => None,
            _ => Some("`not` (negation) cannot be compiled to a grammar exactly"),
        },
        "if" => Some("`if`/`then`/`else` cannot be compiled to a grammar exactly"),
        "maxContains" if o.contains_key("contains") && !o.contains_key(super::doc::CONTAINS_NOT) => {
            Some("`maxContains` (an upper bound on matching items) cannot be compiled to a grammar exactly")
        }
        // (`uniqueItems: true` is decided where the array is built, which knows the item domain:
        // `Builder::build_unique_array`.)
        "dependentSchemas" | "dependencies" => {
            // Array forms (required keys) and schemas that only require keys or forbid the key
            // itself are presence constraints (`dependent_presence`); other schemas are refused.
            let schemas = v
                .as_object()
                .is_some_and(|m| m.iter().any(|(k, x)| !x.is_array() && dependent_presence(k, x).is_none()));
            schemas.then_some("schema dependencies (`dependentSchemas`) cannot be compiled to a grammar exactly")
        }
        "$dynamicRef" | "$recursiveRef" => Some("dynamic references are not supported"),
        // Validation keywords up to draft-07 (annotations from 2019-09 on).
        "contentMediaType" | "contentEncoding" if draft <= Draft::Draft7 => {
            Some("content assertions (`contentMediaType`, `contentEncoding`) cannot be compiled to a grammar exactly")
        }
        _ => None,
    }
}

/// Keywords that only annotate the value beside them: a subschema of these alone allows every
/// value.
pub(crate) const PURE_ANNOTATIONS: [&str; 8] =
    ["title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly"];

/// Annotation and structural keywords that never constrain a value by themselves.
pub(crate) fn is_annotation(k: &str) -> bool {
    PURE_ANNOTATIONS.contains(&k)
        || matches!(
            k,
            "$schema"
                | "$id"
                | "id"
                | "$anchor"
                | "$dynamicAnchor"
                | "$recursiveAnchor"
                | "$defs"
                | "definitions"
                | "$vocabulary"
                | "contentEncoding"
                | "contentMediaType"
                | "contentSchema"
                | "then"
                | "else"
        )
}
