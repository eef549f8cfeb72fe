//! Strict mode ([`SchemaOptions::strict`](super::SchemaOptions)): keys and items a schema does
//! not name are not allowed, as XGrammar's `strict_mode` (its default, and what its structural
//! tags compile every `json_schema` with) and OpenAI's strict function calling mean it.
//!
//! Written as a rewrite of the schema, before it is built, so the language is exactly that of
//! the rewritten schema under the JSON Schema semantics the builder already holds:
//!
//! * an object schema that names keys (`properties` or `patternProperties`) and says nothing of
//!   the others (no `additionalProperties`, no `unevaluatedProperties`) takes
//!   `additionalProperties: false`;
//! * an array schema with `prefixItems` and no `items` (2020-12) takes `items: false`, one whose
//!   `items` is a list (2019-09 and before) and has no `additionalItems` takes
//!   `additionalItems: false`.
//!
//! Only where the subschema describes a whole value: the root, `properties`,
//! `patternProperties`, `additionalProperties`, `items`, `prefixItems`, `contains`, `anyOf` and
//! `oneOf` branches, `$defs`/`definitions`. Not where a subschema is one constraint among
//! others on the same value (`allOf` branches, `then`/`else`, `dependentSchemas`, or a schema
//! that also has `allOf`, `$ref`, `if` or `dependentSchemas` beside its keys: another part may
//! name keys this one does not), and never under `not` or `if` (closing them would loosen the
//! schema around them). A free object (`{"type": "object"}`) or array stays free, as in XGrammar.
//! A `$defs` entry that an `allOf` branch refers to (`allOf: [{"$ref": …}]`) is left as written.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::Draft;

/// `schema` as strict mode compiles it: the schema with `additionalProperties: false` (and
/// `items: false` / `additionalItems: false`) written where strict mode closes it, under the
/// dialect its `$schema` names (else `default_draft`). For handing the same language to another
/// engine that has no strict mode of its own.
pub fn strict_schema(schema: &Value, default_draft: Draft) -> Value {
    rewrite(schema, Draft::detect_or(schema, default_draft)).unwrap_or_else(|| schema.clone())
}

/// The schema with strict mode written into it (`None`: nothing to change).
pub(crate) fn rewrite(schema: &Value, draft: Draft) -> Option<Value> {
    let mut partial_refs = HashSet::new();
    collect_partial_refs(schema, &mut partial_refs);
    let mut out = schema.clone();
    let mut changed = false;
    close(&mut out, "", draft, &partial_refs, &mut changed);
    changed.then_some(out)
}

/// The `$ref`s named directly by `allOf` branches (pointers within the document, `#/...`).
fn collect_partial_refs(v: &Value, out: &mut HashSet<String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::Array(branches)) = m.get("allOf") {
                for b in branches {
                    if let Some(r) = b.get("$ref").and_then(Value::as_str) {
                        out.insert(r.trim_start_matches('#').to_string());
                    }
                }
            }
            m.values().for_each(|x| collect_partial_refs(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| collect_partial_refs(x, out)),
        _ => {}
    }
}

/// Keywords beside which a schema is only part of its value's constraints.
const PARTIAL_SIBLINGS: &[&str] = &["allOf", "$ref", "if", "dependentSchemas", "dependencies"];

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Close `v` (a whole value's schema at `pointer`) and everything below it that is one too.
fn close(v: &mut Value, pointer: &str, draft: Draft, partial: &HashSet<String>, changed: &mut bool) {
    let Value::Object(m) = v else { return };
    let whole = !partial.contains(pointer) && !PARTIAL_SIBLINGS.iter().any(|k| m.contains_key(*k));
    if whole {
        close_here(m, draft, changed);
    }
    // Subschemas that are whole values.
    for key in ["properties", "patternProperties", "$defs", "definitions"] {
        if let Some(Value::Object(children)) = m.get_mut(key) {
            for (name, child) in children.iter_mut() {
                close(child, &format!("{pointer}/{key}/{}", escape(name)), draft, partial, changed);
            }
        }
    }
    for key in ["additionalProperties", "items", "additionalItems", "contains", "unevaluatedItems"] {
        match m.get_mut(key) {
            Some(Value::Array(list)) => {
                for (i, child) in list.iter_mut().enumerate() {
                    close(child, &format!("{pointer}/{key}/{i}"), draft, partial, changed);
                }
            }
            Some(child) => close(child, &format!("{pointer}/{key}"), draft, partial, changed),
            None => {}
        }
    }
    for key in ["prefixItems", "anyOf", "oneOf"] {
        if let Some(Value::Array(list)) = m.get_mut(key) {
            for (i, child) in list.iter_mut().enumerate() {
                close(child, &format!("{pointer}/{key}/{i}"), draft, partial, changed);
            }
        }
    }
}

/// The keys and items `m` does not name, closed.
fn close_here(m: &mut Map<String, Value>, draft: Draft, changed: &mut bool) {
    let names_keys = m.contains_key("properties") || m.contains_key("patternProperties");
    if names_keys && !m.contains_key("additionalProperties") && !m.contains_key("unevaluatedProperties") {
        m.insert("additionalProperties".into(), Value::Bool(false));
        *changed = true;
    }
    if m.contains_key("unevaluatedItems") {
        return;
    }
    let list_items = matches!(m.get("items"), Some(Value::Array(_)));
    if draft >= Draft::Draft2020 {
        if m.contains_key("prefixItems") && !m.contains_key("items") {
            m.insert("items".into(), Value::Bool(false));
            *changed = true;
        }
    } else if list_items && !m.contains_key("additionalItems") {
        m.insert("additionalItems".into(), Value::Bool(false));
        *changed = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn closes_whole_values_only() {
        let s = json!({
            "type": "object",
            "properties": {"a": {"properties": {"x": {}}}, "t": {"prefixItems": [{}]}},
            "allOf": [{"properties": {"b": {}}}],
            "$defs": {"base": {"properties": {"c": {}}}, "free": {"properties": {"d": {}}}},
            "anyOf": [{"$ref": "#/$defs/free"}, {"allOf": [{"$ref": "#/$defs/base"}]}],
            "not": {"properties": {"e": {}}},
        });
        let out = rewrite(&s, Draft::Draft2020).unwrap();
        // The root has `allOf` beside its keys: left open.
        assert!(out.get("additionalProperties").is_none());
        assert_eq!(out["properties"]["a"]["additionalProperties"], json!(false));
        assert_eq!(out["properties"]["t"]["items"], json!(false));
        assert!(out["allOf"][0].get("additionalProperties").is_none());
        assert!(out["$defs"]["base"].get("additionalProperties").is_none(), "named by an allOf branch");
        assert_eq!(out["$defs"]["free"]["additionalProperties"], json!(false));
        assert!(out["not"].get("additionalProperties").is_none());
        let draft7 =
            rewrite(&json!({"items": [{}], "properties": {"k": {}}, "additionalProperties": {}}), Draft::Draft7);
        assert_eq!(
            draft7.unwrap(),
            json!({"items": [{}], "additionalItems": false, "properties": {"k": {}}, "additionalProperties": {}})
        );
        assert!(rewrite(&json!({"type": "object"}), Draft::Draft2020).is_none(), "a free object stays free");
    }
}
