//! Complements written exactly, and the rewrites built on them: an overlapping `oneOf` as a
//! union of *cells*, a `not` whose subschema is none of `flat::Negation`'s forms, and an
//! `if`/`then`/`else` whose condition is not a discriminator.
//!
//! A schema is a conjunction of its keywords, so its complement is the union of each keyword's
//! violation ([`violations`]), where every violation can be written in forms the compiler holds
//! exactly:
//! - `type: T` → `not: {type: T}`;
//! - `required: [r…]` → per key, `not: {required: [r]}` (an object without it);
//! - `properties: {p: S}` → `{type: object, required: [p], properties: {p: ¬S}}` (an object whose
//!   `p` is there and breaks `S`; recursively, so nested objects work; `¬S` the union of `S`'s
//!   violations), and for `p: false` an object where `p` is there;
//! - `enum`/`const` (of strings, booleans, `null` and numbers) → `not: {enum: […]}` of the listed
//!   values that satisfy the whole schema (the validator decides), whatever its other keywords
//!   (numbers other than constants: `numbers::not_equal`, stricter on exponent lexemes);
//! - `pattern` → `not: {pattern}`; `not: S` → `S` (by reference);
//! - `additionalProperties: false` (no `patternProperties`) → an object with a key the schema does
//!   not name (`not: {additionalProperties: false, properties: {…: {}}}`, key-presence states);
//!   beside `patternProperties`, or a schema `S` → an object with a member whose key the schema
//!   neither names nor matches by a pattern and whose value breaks `S` (`false`: any value);
//! - `patternProperties: {P: S}` → an object with a member whose key matches `P` and whose value
//!   breaks `S`. Both are written with the one internal keyword that constrains a value,
//!   [`SOME_MEMBER`] ("some member is one of these"): the object builder gives it a bit of the
//!   key-presence states, set by a member laid out as such (its key terminal also in the key
//!   language, its value also in the value schema), and required at the object's end;
//! - numeric bounds → the other side (`maximum: x` → `exclusiveMinimum: x`; draft 4's boolean
//!   `exclusive*` modifiers too), through the number regexes every bound uses;
//! - `min/maxProperties`, `min/maxItems` → the other side of the bound; `items: S` (one schema)
//!   → an array that `contains` a violation of `S`;
//! - `minLength: n` → a string of at most `n − 1` characters; `maxLength: n` → at least `n + 1`;
//! - `allOf: [B…]` → the violations of every branch; `anyOf: [B…]` → one conjunction,
//!   `allOf` of each branch's violations (as an `anyOf`); `oneOf: [B…]` → that conjunction, and
//!   per pair of branches both of them (`allOf` of the two, by reference);
//! - annotations and words no draft defines violate nothing; a `$ref` is followed, and where it
//!   is met again while its own violations are written (a recursive schema), its complement is
//!   written once as a definition of the document and referred to ([`Recursion`]).
//!
//! Any other keyword leaves the schema's complement unwritten, and the keyword that needed it is
//! refused by name as before. Each written form is one the compiler already holds exactly
//! (`flat::Negation`, key presence, string lengths, number regexes), so a union of them is exact;
//! the violations of different keywords may overlap (an object can break several), which only
//! makes the grammar ambiguous, never looser.
//!
//! **`oneOf`** ([`rewrite_one_of`]): a value satisfies `oneOf: [B₀ … Bₖ₋₁]` when it satisfies
//! exactly one branch, so the `oneOf` is the disjoint union of the cells `Bᵢ ∧ ⋀_{j≠i} ¬Bⱼ` (at
//! most [`MAX_CELL_COMBINATIONS`] alternatives in all). Where `Bᵢ` and `Bⱼ` are provably disjoint
//! (beside the holder's own keywords), `Bᵢ` implies `¬Bⱼ` and cell `i` leaves `¬Bⱼ` out; a branch
//! disjoint from every other needs no complement at all. The branches stay where they were,
//! moved to `x-dwac-oneOf` (an unknown word: not evaluated), and each cell refers to its branch by
//! `$ref`, so errors inside a branch keep its pointer. A first part lists every key some branch
//! names, in the branches' order, so every cell lays out an object's keys in one order.
//!
//! **`not`** ([`rewrite_not`]): `not: S` is `anyOf` of `S`'s violations; `S` is moved to
//! `x-dwac-not`.
//!
//! **`if`/`then`/`else`** ([`rewrite_if`]): `anyOf: [if ∧ then, ¬if ∧ else]` with `¬if` the union
//! of the condition's violations; the condition is moved to `x-dwac-if`. (The discriminators of
//! `conditional.rs`, rewritten before building, are a special case written more compactly.)
//!
//! **`maxContains`** ([`rewrite_max_contains`]): the complement of `contains` is written beside it
//! (`x-dwac-containsNot`); the array builder lays out each item as matching `contains` (counted,
//! exactly, up to `maxContains`) or its complement.
//!
//! A rewrite that moves a subschema points every reference into it where it moved it: a
//! complement written by an earlier rewrite may refer into a `not` or a `oneOf` rewritten later.
//!
//! Only a subschema at the document's base is rewritten (its `#/…` pointers lead where they did),
//! and only in a document without `unevaluatedProperties`/`unevaluatedItems` (the rewritten forms
//! evaluate keys and items the original did not).

use serde_json::{json, Map, Value};

use super::conditional::fragment;
use super::doc::{Doc, COMPLEMENTS, CONTAINS_NOT, MOVED_IF, MOVED_NOT, MOVED_ONE_OF, SOME_MEMBER};
use super::flat::Part;
use super::flat::{is_annotation, negation};
use super::validate::{provably_disjoint, validate};
use super::Draft;

/// Whether a rewrite may change the schema's meaning beyond the value it accepts: the rewritten
/// forms evaluate properties and items (annotations) that the original did not (`not` evaluates
/// nothing), which `unevaluatedProperties`/`unevaluatedItems` anywhere could see.
fn reads_annotations(v: &Value) -> bool {
    match v {
        Value::Object(o) => {
            o.contains_key("unevaluatedProperties")
                || o.contains_key("unevaluatedItems")
                || o.values().any(reads_annotations)
        }
        Value::Array(a) => a.iter().any(reads_annotations),
        _ => false,
    }
}

/// The subschema at `ptr` and its keyword `kw`, where a rewrite of that keyword may apply: the
/// subschema is an object at the document's base, the document reads no annotations
/// ([`reads_annotations`]), and it was not rewritten already (it has no `done` key, the one the
/// rewrite leaves).
fn rewritable<'a>(doc: &Doc<'a>, ptr: &str, kw: &str, done: &str) -> Option<(&'a Map<String, Value>, &'a Value)> {
    if !doc.subschemas_at_root_base().any(|p| p == ptr) || reads_annotations(doc.root) {
        return None;
    }
    let Some(Value::Object(holder)) = doc.get(ptr) else { return None };
    if holder.contains_key(done) {
        return None;
    }
    Some((holder, holder.get(kw)?))
}

/// The schema with the `not` of the subschema at `ptr` rewritten as the union of its subschema's
/// violations, or `None` where some keyword's violation cannot be written exactly.
pub(crate) fn rewrite_not(doc: &Doc, ptr: &str) -> Option<Value> {
    let (_, inner) = rewritable(doc, ptr, "not", MOVED_NOT)?;
    let moved = format!("{ptr}/{MOVED_NOT}");
    let mut cx = Recursion::default();
    let w = violations(doc, (&format!("{ptr}/not"), &moved), &mut cx, &format!("{ptr}/not"), inner, 0)?;
    let union = union_of(w).unwrap_or(Value::Bool(false));
    let mut out = doc.root.clone();
    let Some(Value::Object(o)) = out.pointer_mut(ptr) else { return None };
    let inner = o.remove("not")?;
    o.insert(MOVED_NOT.into(), inner);
    push_all_of(o, union);
    cx.write_into(&mut out)?;
    retarget_refs(&mut out, &format!("{ptr}/not"), &format!("{ptr}/{MOVED_NOT}"));
    Some(out)
}

/// The schema with the `if`/`then`/`else` of the subschema at `ptr` rewritten as
/// `anyOf: [if ∧ then, ¬if ∧ else]`, `¬if` the union of the condition's violations (the
/// discriminators `conditional.rs` rewrites before building are one case of it), or `None`
/// where some keyword's violation cannot be written exactly. The condition is moved to
/// `x-dwac-if` (then `then`/`else` are annotations), all three referred to where they are.
pub(crate) fn rewrite_if(doc: &Doc, ptr: &str) -> Option<Value> {
    if doc.draft < Draft::Draft7 {
        return None;
    }
    let (holder, cond) = rewritable(doc, ptr, "if", MOVED_IF)?;
    let moved = format!("{ptr}/{MOVED_IF}");
    let mut cx = Recursion::default();
    // (Without `then` and `else`, the condition constrains nothing.)
    let choice = if holder.contains_key("then") || holder.contains_key("else") {
        let w = violations(doc, (&format!("{ptr}/if"), &moved), &mut cx, &format!("{ptr}/if"), cond, 0)?;
        let neg = union_of(w).unwrap_or(Value::Bool(false));
        let reference = |key: &str| json!({"$ref": format!("#{}", fragment(&format!("{ptr}/{key}")))});
        let branch = |key: &str| if holder.contains_key(key) { reference(key) } else { Value::Bool(true) };
        Some(json!({"anyOf": [{"allOf": [reference(MOVED_IF), branch("then")]}, {"allOf": [neg, branch("else")]}]}))
    } else {
        None
    };
    let mut out = doc.root.clone();
    let Some(Value::Object(o)) = out.pointer_mut(ptr) else { return None };
    let cond = o.remove("if")?;
    o.insert(MOVED_IF.into(), cond);
    if let Some(c) = choice {
        push_all_of(o, c);
    }
    cx.write_into(&mut out)?;
    retarget_refs(&mut out, &format!("{ptr}/if"), &moved);
    Some(out)
}

/// The schema with the complement of the `contains` of the subschema at `ptr` written beside it
/// (as `x-dwac-containsNot`), so that `maxContains` counts exactly: each item either matches
/// `contains` (counted) or its complement (not counted). `None` where the complement cannot be
/// written exactly.
pub(crate) fn rewrite_max_contains(doc: &Doc, ptr: &str) -> Option<Value> {
    let (holder, inner) = rewritable(doc, ptr, "contains", CONTAINS_NOT)?;
    if !holder.contains_key("maxContains") {
        return None;
    }
    let at = format!("{ptr}/contains");
    let mut cx = Recursion::default();
    let w = violations(doc, (&at, &at), &mut cx, &at, inner, 0)?;
    let mut out = doc.root.clone();
    let Some(Value::Object(o)) = out.pointer_mut(ptr) else { return None };
    o.insert(CONTAINS_NOT.into(), union_of(w).unwrap_or(Value::Bool(false)));
    cx.write_into(&mut out)?;
    Some(out)
}

/// The most alternatives the cells of one `oneOf` may expand to (per cell, the product over the
/// other branches of how many ways each can be violated): every alternative is an object grammar
/// of its own, parsed beside the others, and its string terminals fork the lexer, so compile time
/// grows with them (a `oneOf` of four address formats, each violated by any of three
/// properties, expands to 108 and compiles in a few seconds).
pub(crate) const MAX_CELL_COMBINATIONS: usize = 128;

/// The keywords of drafts 4 to 2020-12 that can make a value invalid (any other word in a schema
/// is an annotation or unknown, and constrains nothing).
pub(crate) const ASSERTIONS: &[&str] = &[
    "type",
    "enum",
    "const",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "format",
    "items",
    "additionalItems",
    "prefixItems",
    "maxItems",
    "minItems",
    "uniqueItems",
    "contains",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "properties",
    "patternProperties",
    "additionalProperties",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "propertyNames",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentEncoding",
    "contentMediaType",
];

/// How deep `$ref`s and nested `properties` are followed when writing violations (a `$ref` met
/// again on the way is not followed: [`Recursion`]).
const MAX_DEPTH: usize = 12;

/// The schema with the `oneOf` of the subschema at `ptr` rewritten as a union of cells, or `None`
/// where some branch's complement cannot be written exactly (or the rewrite does not apply).
pub(crate) fn rewrite_one_of(doc: &Doc, ptr: &str) -> Option<Value> {
    let (_, branches) = rewritable(doc, ptr, "oneOf", MOVED_ONE_OF)?;
    let Value::Array(branches) = branches else { return None };
    if branches.len() < 2 || branches.len() > 16 {
        return None;
    }
    let moved = format!("{ptr}/{MOVED_ONE_OF}");
    let n = branches.len();
    // Branches provably disjoint (beside the holder's own keywords) need no complement in each
    // other's cells: `Bᵢ` implies `¬Bⱼ` there.
    let context = Part { ptr: ptr.to_string(), own_only: true };
    let with = |i: usize| [context.clone(), Part::full(format!("{ptr}/oneOf/{i}"))];
    let mut overlap = vec![vec![false; n]; n];
    for (i, j) in (0..n).flat_map(|i| (i + 1..n).map(move |j| (i, j))) {
        let o = !provably_disjoint(doc, &with(i), &with(j));
        overlap[i][j] = o;
        overlap[j][i] = o;
    }
    let mut viols: Vec<Option<Vec<Value>>> = Vec::with_capacity(n);
    let mut names: Vec<String> = Vec::new();
    let mut cx = Recursion::default();
    for (i, b) in branches.iter().enumerate() {
        // (Violations are written from the branch where it is now, so its `$ref`s resolve as they did.)
        let at = format!("{ptr}/oneOf/{i}");
        viols.push(match overlap[i].contains(&true) {
            true => Some(violations(doc, (&format!("{ptr}/oneOf"), &moved), &mut cx, &at, b, 0)?),
            false => None,
        });
        collect_names(doc, &format!("{ptr}/oneOf/{i}"), b, &mut names, 0);
    }
    let mut cells = Vec::new();
    let mut total = 0usize;
    for (i, row) in overlap.iter().enumerate() {
        let others: Vec<&Vec<Value>> = (0..n).filter(|&j| row[j]).filter_map(|j| viols[j].as_ref()).collect();
        // A branch that nothing violates holds for every value: no value is in cell `i`.
        if others.iter().any(|v| v.is_empty()) {
            continue;
        }
        total = others.iter().try_fold(1usize, |acc, v| acc.checked_mul(v.len()))?.checked_add(total)?;
        if total > MAX_CELL_COMBINATIONS {
            return None;
        }
        let mut all = Vec::with_capacity(others.len() + 2);
        if !names.is_empty() {
            let order: Map<String, Value> = names.iter().map(|n| (n.clone(), json!({}))).collect();
            all.push(json!({ "properties": order }));
        }
        all.push(json!({"$ref": format!("#{}", fragment(&format!("{moved}/{i}")))}));
        for v in others {
            all.push(if v.len() == 1 { v[0].clone() } else { json!({ "anyOf": v }) });
        }
        cells.push(json!({ "allOf": all }));
    }
    let mut out = doc.root.clone();
    let Some(Value::Object(o)) = out.pointer_mut(ptr) else { return None };
    let branches = o.remove("oneOf")?;
    o.insert(MOVED_ONE_OF.into(), branches);
    let union = if cells.is_empty() { Value::Bool(false) } else { json!({ "anyOf": cells }) };
    push_all_of(o, union);
    cx.write_into(&mut out)?;
    retarget_refs(&mut out, &format!("{ptr}/oneOf"), &moved);
    Some(out)
}

/// The keys the object schema `v` (at `ptr`) names in `properties` or `required`, added to
/// `names` in order.
fn collect_names(doc: &Doc, ptr: &str, v: &Value, names: &mut Vec<String>, depth: usize) {
    let Value::Object(o) = v else { return };
    if let Some(r) = o.get("$ref").and_then(Value::as_str) {
        if depth < MAX_DEPTH {
            if let Ok(target) = doc.resolve_ref(ptr, r) {
                if let Some(t) = doc.get(&target) {
                    collect_names(doc, &target, t, names, depth + 1);
                }
            }
        }
        return;
    }
    let props = o.get("properties").and_then(Value::as_object).into_iter().flat_map(|p| p.keys());
    let req = o.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str);
    for k in props.map(String::as_str).chain(req) {
        if !names.iter().any(|n| n == k) {
            names.push(k.to_string());
        }
    }
}

/// The complements of `$ref` targets met again while their own violations are being written
/// (recursive schemas: a list of lists of itself). Each such complement is written once, as a
/// definition of the rewritten document under [`COMPLEMENTS`] (keyed by the target's pointer),
/// and referred to wherever it is needed, itself included: the grammar is then recursive where
/// the schema is.
#[derive(Default)]
struct Recursion {
    /// Targets whose violations are being written (the `$ref`s followed so far).
    open: Vec<String>,
    /// Targets met again while open: they get a definition.
    recursive: Vec<String>,
    /// (target, its complement) for every definition written.
    defined: Vec<(String, Value)>,
}

impl Recursion {
    /// Add the definitions to the rewritten document `out` (an object: a document with a
    /// `$ref` is one). A complement already there from an earlier rewrite is kept: it is the
    /// same language.
    fn write_into(self, out: &mut Value) -> Option<()> {
        if self.defined.is_empty() {
            return Some(());
        }
        let root = out.as_object_mut()?;
        let Value::Object(defs) = root.entry(COMPLEMENTS).or_insert_with(|| Value::Object(Map::new())) else {
            return None;
        };
        for (target, union) in self.defined {
            defs.entry(target).or_insert(union);
        }
        Some(())
    }
}

/// A reference to the complement of the subschema at `target` (see [`Recursion`]).
fn complement_ref(target: &str) -> Value {
    let at = format!("/{COMPLEMENTS}/{}", super::doc::ptr_token(target));
    json!({"$ref": format!("#{}", fragment(&at))})
}

/// Schemas whose union is exactly the values that do not satisfy `v` (at `ptr`), or `None` if
/// some keyword's violation cannot be written exactly. Empty: `v` holds for every value.
///
/// References written into them name the subschemas where a rewrite moves them: `moved` is
/// (`…/oneOf`, `…/x-dwac-oneOf`) or (`…/not`, `…/x-dwac-not`).
fn violations(
    doc: &Doc,
    moved: (&str, &str),
    cx: &mut Recursion,
    ptr: &str,
    v: &Value,
    depth: usize,
) -> Option<Vec<Value>> {
    if depth > MAX_DEPTH {
        return None;
    }
    let o = match v {
        Value::Bool(true) => return Some(Vec::new()),
        Value::Bool(false) => return Some(vec![json!({})]),
        Value::Object(o) => o,
        _ => return None,
    };
    if o.contains_key("$id") || o.contains_key("id") && doc.draft <= Draft::Draft4 {
        return None; // (a base of its own: its references would move)
    }
    let mut out = Vec::new();
    if let Some(r) = o.get("$ref") {
        ref_violations(doc, moved, cx, ptr, r, depth, &mut out)?;
        if doc.draft.ref_overrides_siblings() {
            return Some(out);
        }
    }
    if o.contains_key("enum") || o.contains_key("const") {
        out.push(listed_violation(doc, ptr, o)?);
        return Some(out);
    }
    for kx in o {
        keyword_violations(doc, moved, cx, ptr, o, kx, depth, &mut out)?;
    }
    Some(out)
}

/// The violations of a `$ref` (its target's; a recursive target's as a complement defined once).
fn ref_violations(
    doc: &Doc,
    moved: (&str, &str),
    cx: &mut Recursion,
    ptr: &str,
    r: &Value,
    depth: usize,
    out: &mut Vec<Value>,
) -> Option<()> {
    let target = doc.resolve_ref(ptr, r.as_str()?).ok()?;
    if cx.defined.iter().any(|(t, _)| *t == target) || cx.open.contains(&target) {
        // (Met again while its own violations are written: a recursive schema.)
        if !cx.recursive.contains(&target) {
            cx.recursive.push(target.clone());
        }
        out.push(complement_ref(&target));
    } else {
        cx.open.push(target.clone());
        let w = violations(doc, moved, cx, &target, doc.get(&target)?, depth + 1);
        cx.open.pop();
        let w = w?;
        if cx.recursive.contains(&target) {
            let union = if w.is_empty() { Value::Bool(false) } else { json!({ "anyOf": w }) };
            cx.defined.push((target.clone(), union));
            out.push(complement_ref(&target));
        } else {
            out.extend(w);
        }
    }
    Some(())
}

/// With `enum`/`const`, the schema's values are the listed ones that satisfy all of it: it is
/// violated exactly by every other value (one alternative, whatever the other keywords).
fn listed_violation(doc: &Doc, ptr: &str, o: &Map<String, Value>) -> Option<Value> {
    let mut listed: Option<Vec<Value>> = None;
    for k in ["enum", "const"] {
        let Some(x) = o.get(k) else { continue };
        let values = if k == "const" { vec![x.clone()] } else { x.as_array()?.clone() };
        listed = Some(match listed {
            None => values,
            Some(cur) => cur.into_iter().filter(|v| values.iter().any(|w| super::flat::json_eq(v, w))).collect(),
        });
    }
    let mut kept = Vec::new();
    for v in listed.unwrap_or_default() {
        if validate(doc, &v, &[Part::full(ptr)]).ok()? {
            kept.push(v);
        }
    }
    let n: Map<String, Value> = [("enum".to_string(), Value::Array(kept))].into_iter().collect();
    negation(&n)?;
    Some(json!({ "not": n }))
}

/// The violations of keyword `k` (value `x`) of schema `o` at `ptr`, into `out`; `None` where
/// they cannot be written.
#[allow(clippy::too_many_arguments, reason = "violations' recursion state, passed down")]
fn keyword_violations(
    doc: &Doc,
    moved: (&str, &str),
    cx: &mut Recursion,
    ptr: &str,
    o: &Map<String, Value>,
    (k, x): (&String, &Value),
    depth: usize,
    out: &mut Vec<Value>,
) -> Option<()> {
    let here = |suffix: &str| moved_ref(ptr, moved, suffix);
    match k.as_str() {
        "$ref" => {}
        // (Annotations, and words no draft defines: they constrain nothing.)
        k if is_annotation(k) || !ASSERTIONS.contains(&k) => {}
        "type" | "pattern" => out.push(json!({ "not": { k: x } })),
        // (`not: S` is violated by exactly the values of `S`, referred to where it is.)
        "not" => out.push(here("/not")),
        // Some branch violated.
        "allOf" => {
            for (i, b) in x.as_array()?.iter().enumerate() {
                out.extend(violations(doc, moved, cx, &format!("{ptr}/allOf/{i}"), b, depth + 1)?);
            }
        }
        // Every branch violated (one alternative: a conjunction of the branches' unions);
        // for `oneOf`, also any two branches that hold together, referred to where they are.
        "anyOf" | "oneOf" => {
            let branches = x.as_array()?;
            let mut every = Vec::with_capacity(branches.len());
            for (i, b) in branches.iter().enumerate() {
                let w = violations(doc, moved, cx, &format!("{ptr}/{k}/{i}"), b, depth + 1)?;
                if w.is_empty() {
                    every.clear();
                    break;
                }
                every.push(json!({ "anyOf": w }));
            }
            if !every.is_empty() {
                out.push(json!({ "allOf": every }));
            }
            if k == "oneOf" {
                for i in 0..branches.len() {
                    for j in i + 1..branches.len() {
                        out.push(json!({"allOf": [here(&format!("/oneOf/{i}")), here(&format!("/oneOf/{j}"))]}));
                    }
                }
            }
        }
        "required" => {
            for r in x.as_array()? {
                out.push(json!({"not": {"required": [r.as_str()?]}}));
            }
        }
        // An object with a key the schema does not name (`flat::Negation::KeysOutside`).
        "additionalProperties" => {
            match x {
                Value::Bool(true) => {}
                Value::Bool(false) if !o.contains_key("patternProperties") => {
                    let named: Map<String, Value> = match o.get("properties") {
                        Some(Value::Object(p)) => p.keys().map(|k| (k.clone(), json!({}))).collect(),
                        _ => Map::new(),
                    };
                    out.push(json!({"not": {"additionalProperties": false, "properties": named}}));
                }
                // A member the schema neither names nor matches by pattern whose value breaks it.
                _ => {
                    let w = violations(doc, moved, cx, &format!("{ptr}/additionalProperties"), x, depth + 1)?;
                    if let Some(value) = union_of(w) {
                        let names: Vec<&String> =
                            o.get("properties").and_then(Value::as_object).into_iter().flat_map(|m| m.keys()).collect();
                        let pats: Vec<&String> = o
                            .get("patternProperties")
                            .and_then(Value::as_object)
                            .into_iter()
                            .flat_map(|m| m.keys())
                            .collect();
                        out.push(json!({"type": "object", SOME_MEMBER: {"except": pats, "exceptNames": names, "value": value}}));
                    }
                }
            }
        }
        // A member whose key matches the pattern and whose value breaks its schema.
        "patternProperties" => {
            for (p, s) in x.as_object()? {
                let sub = format!("{ptr}/patternProperties/{}", super::doc::ptr_token(p));
                if let Some(value) = union_of(violations(doc, moved, cx, &sub, s, depth + 1)?) {
                    out.push(json!({"type": "object", SOME_MEMBER: {"match": [p], "value": value}}));
                }
            }
        }
        // The other side of a numeric bound (through the same number regexes as any bound:
        // exact without an exponent, sound with one; numbers/mod.rs).
        "maximum" | "minimum" | "exclusiveMaximum" | "exclusiveMinimum" => {
            if let Some(w) = bound_violation(doc.draft, o, k, x)? {
                out.push(w);
            }
        }
        "minProperties" | "minItems" => match x.as_u64()? {
            0 => {}
            n => {
                let (t, max) = if k == "minItems" { ("array", "maxItems") } else { ("object", "maxProperties") };
                out.push(json!({"type": t, max: n - 1}));
            }
        },
        "maxProperties" | "maxItems" => {
            let (t, min) = if k == "maxItems" { ("array", "minItems") } else { ("object", "minProperties") };
            out.push(json!({"type": t, min: x.as_u64()?.checked_add(1)?}));
        }
        // (One schema for every item: some item violates it. Tuples and `contains` refused.)
        "items" if x.is_object() || x.is_boolean() => {
            if o.contains_key("contains") || o.contains_key("prefixItems") {
                return None;
            }
            let w = violations(doc, moved, cx, &format!("{ptr}/items"), x, depth + 1)?;
            if !w.is_empty() {
                out.push(json!({"type": "array", "contains": { "anyOf": w }}));
            }
        }
        "minLength" => match x.as_u64()? {
            0 => {}
            n => out.push(json!({"type": "string", "maxLength": n - 1})),
        },
        "maxLength" => out.push(json!({"type": "string", "minLength": x.as_u64()?.checked_add(1)?})),
        // One alternative per property (its violations a union inside the value), so the
        // alternatives a cell multiplies are as few as the properties.
        "properties" => {
            for (p, s) in x.as_object()? {
                let sub = format!("{ptr}/properties/{}", super::doc::ptr_token(p));
                let w = violations(doc, moved, cx, &sub, s, depth + 1)?;
                let value = match w.len() {
                    0 => continue,
                    1 => w.into_iter().next()?,
                    _ => json!({ "anyOf": w }),
                };
                out.push(json!({"type": "object", "required": [p], "properties": { p.clone(): value }}));
            }
        }
        _ => return None,
    }
    Some(())
}

/// A reference to the subschema at `ptr` + `suffix`, where it is now (a branch of the `oneOf`
/// being rewritten has moved from `moved.0` to `moved.1`).
fn moved_ref(ptr: &str, moved: (&str, &str), suffix: &str) -> Value {
    let at = format!("{ptr}{suffix}");
    let at = match at.strip_prefix(moved.0) {
        Some(rest) if rest.starts_with('/') => format!("{}{rest}", moved.1),
        _ => at,
    };
    json!({"$ref": format!("#{}", fragment(&at))})
}

/// Point the document's references into the subschema moved from `from` to `to` where it is now
/// (a complement written by an earlier rewrite may refer into a `not` or `oneOf` this one moves,
/// and so may the schema's own `$ref`s).
fn retarget_refs(v: &mut Value, from: &str, to: &str) {
    let (old, new) = (format!("#{}", fragment(from)), format!("#{}", fragment(to)));
    match v {
        Value::Object(o) => {
            if let Some(Value::String(r)) = o.get_mut("$ref") {
                if let Some(rest) = r.strip_prefix(old.as_str()).filter(|rest| rest.is_empty() || rest.starts_with('/'))
                {
                    *r = format!("{new}{rest}");
                }
            }
            o.values_mut().for_each(|x| retarget_refs(x, from, to));
        }
        Value::Array(a) => a.iter_mut().for_each(|x| retarget_refs(x, from, to)),
        _ => {}
    }
}

/// Add `v` to the `allOf` of the schema object `o` (made if it has none).
fn push_all_of(o: &mut Map<String, Value>, v: Value) {
    match o.get_mut("allOf") {
        Some(Value::Array(a)) => a.push(v),
        _ => {
            o.insert("allOf".into(), Value::Array(vec![v]));
        }
    }
}

/// One schema for the union of `w` (`None` if empty: nothing violates).
fn union_of(w: Vec<Value>) -> Option<Value> {
    match w.len() {
        0 => None,
        1 => w.into_iter().next(),
        _ => Some(json!({ "anyOf": w })),
    }
}

/// The violation of numeric bound `k: x` of schema `o`: `Some(None)` where the keyword is a
/// draft-4 modifier (`exclusiveMaximum: true` counts with `maximum`).
fn bound_violation(draft: Draft, o: &Map<String, Value>, k: &str, x: &Value) -> Option<Option<Value>> {
    if draft <= Draft::Draft4 {
        let (other, modifier) = match k {
            "maximum" => ("minimum", "exclusiveMaximum"),
            "minimum" => ("maximum", "exclusiveMinimum"),
            _ => return x.is_boolean().then_some(None), // (a modifier, counted with its bound)
        };
        let exclusive = o.get(modifier) == Some(&Value::Bool(true));
        let opposite = if modifier == "exclusiveMaximum" { "exclusiveMinimum" } else { "exclusiveMaximum" };
        // v ≤ x is broken by v > x; v < x by v ≥ x.
        return Some(Some(if exclusive {
            json!({"type": "number", other: x.clone()})
        } else {
            json!({"type": "number", other: x.clone(), opposite: true})
        }));
    }
    if !x.is_number() {
        return None;
    }
    let opposite = match k {
        "maximum" => "exclusiveMinimum",
        "exclusiveMaximum" => "minimum",
        "minimum" => "exclusiveMaximum",
        _ => "maximum",
    };
    Some(Some(json!({"type": "number", opposite: x.clone()})))
}
