//! `if`/`then`/`else` whose condition is a discriminator, compiled exactly by rewriting it before
//! the grammar is built: `{if: I, then: T, else: E}` is `anyOf: [I ∧ T, ¬I ∧ E]`, and `¬I` is
//! written in forms the compiler holds exactly when `I` is one of
//! - `{properties: {k: {const: x} | {enum: [x…]}}, required?: [k]}` with strings, booleans or
//!   `null` as the values (the discriminator: `¬I` is "k present with another value", or also
//!   "k absent" when `I` requires it);
//! - `{required: [k…]}` (`¬I` is `not: {required: [k…]}`).
//!
//! (A non-object satisfies both forms of `I`, so `¬I` holds only for objects: both rewrites say
//! so.) `I` and `T`/`E` stay where they are, referred to by `$ref`, so errors inside them keep
//! their pointers; `if` is renamed `x-dwac-if` (an annotation: `then`/`else` without `if` are
//! ignored, as the specification says). Other conditions are left alone here: the builder rewrites
//! them with complements (`complement::rewrite_if`) where the condition's can be written, and
//! refuses them by name where not.

use serde_json::{json, Map, Value};

use super::doc::{Doc, MOVED_DEPENDENCIES, MOVED_IF};
use super::flat::{dependent_presence, is_annotation};
use super::Draft;

/// The schema with every supported `if`/`then`/`else` rewritten, or `None` if it has none.
pub(crate) fn rewrite(schema: &Value, draft: Draft) -> Option<Value> {
    if draft < Draft::Draft7 {
        return None; // (`if` is an unknown keyword before draft-07: an annotation)
    }
    let doc = Doc::new(schema, draft);
    let mut found: Vec<(String, Value)> = Vec::new();
    for ptr in doc.subschemas_at_root_base() {
        let Some(Value::Object(o)) = doc.get(ptr) else { continue };
        let Some(Value::Object(cond)) = o.get("if") else { continue };
        if o.contains_key(MOVED_IF) {
            continue;
        }
        if let Some(neg) = negate(cond) {
            found.push((ptr.to_string(), neg));
        }
    }
    if found.is_empty() {
        return None;
    }
    // (Deepest first: a rewrite adds keys to its own object only, so no other pointer moves.)
    found.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
    let mut out = schema.clone();
    for (ptr, neg) in found {
        let Some(Value::Object(o)) = out.pointer_mut(&ptr) else { continue };
        let reference = |key: &str| json!({"$ref": format!("#{}/{key}", fragment(&ptr))});
        let then = if o.contains_key("then") { reference("then") } else { Value::Bool(true) };
        let els = if o.contains_key("else") { reference("else") } else { Value::Bool(true) };
        let cond = o.remove("if").unwrap_or(Value::Bool(true));
        o.insert(MOVED_IF.into(), cond);
        let choice = json!({"anyOf": [{"allOf": [reference(MOVED_IF), then]}, {"allOf": [neg, els]}]});
        match o.get_mut("allOf") {
            Some(Value::Array(a)) => a.push(choice),
            _ => {
                o.insert("allOf".into(), Value::Array(vec![choice]));
            }
        }
    }
    Some(out)
}

/// The schema with every schema dependency that is not a presence constraint rewritten, or
/// `None` if it has none. `dependentSchemas: {k: S}` holds for a non-object, for an object
/// without `k`, and for an object with `k` that satisfies `S`: the same three cases written as
/// `anyOf: [{type: object, required: [k], allOf: [S]}, {not: {required: [k]}}, {type: <the other
/// five>}]` (`not: {required}` holds only for objects), added to the schema's `allOf`. Where the
/// schema itself says `type: object` and requires `k`, only the first case remains: `allOf: [S]`.
/// `S` stays where it was, under an annotation key, referred to by `$ref` (its errors keep
/// their pointers). Array forms and presence-only schemas stay (the builder holds them as
/// key-presence constraints).
pub(crate) fn rewrite_dependencies(schema: &Value, draft: Draft) -> Option<Value> {
    let doc = Doc::new(schema, draft);
    let mut found: Vec<(String, &str, String)> = Vec::new();
    for ptr in doc.subschemas_at_root_base() {
        let Some(Value::Object(o)) = doc.get(ptr) else { continue };
        for (kw, _) in MOVED_DEPENDENCIES {
            let Some(Value::Object(m)) = o.get(kw) else { continue };
            for (k, v) in m {
                if !v.is_array() && dependent_presence(k, v).is_none() {
                    found.push((ptr.to_string(), kw, k.clone()));
                }
            }
        }
    }
    if found.is_empty() {
        return None;
    }
    // (Deepest first: a rewrite changes keys of its own object only, so no other pointer moves.)
    found.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.cmp(b)));
    let mut out = schema.clone();
    for (ptr, kw, k) in found {
        let Some(Value::Object(o)) = out.pointer_mut(&ptr) else { continue };
        let moved = MOVED_DEPENDENCIES.iter().find(|(w, _)| *w == kw).map(|(_, m)| *m).unwrap_or(kw);
        let Some(sub) = o.get_mut(kw).and_then(Value::as_object_mut).and_then(|m| m.remove(&k)) else { continue };
        if o.get(kw).and_then(Value::as_object).is_some_and(Map::is_empty) {
            o.remove(kw);
        }
        match o.entry(moved).or_insert_with(|| Value::Object(Map::new())) {
            Value::Object(m) => {
                m.insert(k.clone(), sub);
            }
            _ => continue,
        }
        let escaped = k.replace('~', "~0").replace('/', "~1");
        let reference = json!({"$ref": format!("#{}", fragment(&format!("{ptr}/{moved}/{escaped}")))});
        let required = o.get("required").and_then(Value::as_array).is_some_and(|r| r.iter().any(|x| x == k.as_str()));
        let object = o.get("type").is_some_and(|t| t == "object");
        let choice = if required && object {
            reference
        } else {
            json!({"anyOf": [
                {"type": "object", "required": [k], "allOf": [reference]},
                {"not": {"required": [k]}},
                {"type": ["null", "boolean", "number", "string", "array"]}
            ]})
        };
        match o.get_mut("allOf") {
            Some(Value::Array(a)) => a.push(choice),
            _ => {
                o.insert("allOf".into(), Value::Array(vec![choice]));
            }
        }
    }
    Some(out)
}

/// `¬cond` in forms the compiler holds exactly, if `cond` is a supported condition.
fn negate(cond: &Map<String, Value>) -> Option<Value> {
    let keys: Vec<&str> = cond.keys().map(String::as_str).filter(|k| !is_annotation(k)).collect();
    let names =
        |v: &Value| -> Option<Vec<String>> { v.as_array()?.iter().map(|x| x.as_str().map(str::to_string)).collect() };
    match keys[..] {
        ["required"] => Some(json!({"not": {"required": names(&cond["required"])?}})),
        ["properties"] | ["properties", "required"] | ["required", "properties"] => {
            let props = cond["properties"].as_object()?;
            let (k, v) = props.iter().next().filter(|_| props.len() == 1)?;
            let v = v.as_object()?;
            let vkeys: Vec<&str> = v.keys().map(String::as_str).filter(|x| !is_annotation(x)).collect();
            let values: Vec<Value> = match vkeys[..] {
                ["const"] => vec![v["const"].clone()],
                ["enum"] => v["enum"].as_array()?.clone(),
                _ => return None,
            };
            if !values.iter().all(|x| matches!(x, Value::String(_) | Value::Bool(_) | Value::Null)) {
                return None;
            }
            // (`type: object`: `required` and `properties` hold for every non-object, and `¬I` for none.)
            let other = json!({"type": "object", "required": [k], "properties": {k: {"not": {"enum": values}}}});
            match cond.get("required") {
                None => Some(other),
                Some(r) if names(r)? == [k.clone()] => Some(json!({"anyOf": [{"not": {"required": [k]}}, other]})),
                Some(_) => None,
            }
        }
        _ => None,
    }
}

/// A JSON pointer written as a URI fragment (percent-encoding what a fragment may not hold).
pub(crate) fn fragment(ptr: &str) -> String {
    let mut out = String::new();
    for b in ptr.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=:@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
