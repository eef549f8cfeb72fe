//! What a schema says that no dialect means: unknown type names (errors) and unknown keywords
//! (warnings), checked on the document as written, before any rewrite.
//!
//! - `type` must name JSON Schema's types (`null`, `boolean`, `object`, `array`, `string`,
//!   `number`, `integer`), as a string or a non-empty array of them. `{"type": "strin"}` would
//!   otherwise constrain nothing (the keyword's value is invalid, so no type is known), and
//!   `["string", "nul"]` would quietly mean strings alone: both are refused, naming the type and
//!   its pointer.
//! - A keyword none of the dialects defines (draft 4 to 2020-12) is an annotation by the
//!   specification, so it changes nothing; but a user almost always meant something by it
//!   (`propertie`, `minLenght`), so each one is listed as a warning with where it occurs and the
//!   known keyword it is closest to. Extension keywords (`x-…`) are not listed.
//!
//! Only subschemas are checked (the places [`super::doc::Doc`] walks): the keys of `properties`
//! or `$defs` are names, not keywords, and what sits under an unknown keyword is not a schema.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::complement::ASSERTIONS;
use super::doc::{ptr_token, SUB_ARR, SUB_MAP, SUB_ONE};
use super::flat::type_bits;
use super::SchemaError;

/// The keywords of drafts 4 to 2020-12 that are not assertions ([`ASSERTIONS`] are the others):
/// core keywords, the applicators' parts that assert nothing alone, content and meta-data. dwac
/// reads some keywords in dialects that do not define them (`const` in draft 4, say), so one list
/// serves all.
const NOT_ASSERTIONS: &[&str] = &[
    "$schema",
    "$id",
    "id",
    "$anchor",
    "$dynamicAnchor",
    "$recursiveAnchor",
    "$vocabulary",
    "$comment",
    "$defs",
    "definitions",
    "then",
    "else",
    "contentSchema",
    "title",
    "description",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "examples",
];

fn known(k: &str) -> bool {
    ASSERTIONS.contains(&k) || NOT_ASSERTIONS.contains(&k)
}

const TYPES: [&str; 7] = ["null", "boolean", "object", "array", "string", "number", "integer"];

/// Pointers listed per unknown keyword in its warning; the rest are counted.
const MAX_POINTERS: usize = 3;

/// Check `schema` (see the module docs): the first invalid `type` as an error, else the warnings
/// about unknown keywords, one per keyword, in the order of the keywords' names.
pub(crate) fn lint(schema: &Value) -> Result<Vec<String>, SchemaError> {
    let mut unknown: BTreeMap<String, Vec<String>> = BTreeMap::new();
    walk(schema, String::new(), &mut unknown)?;
    Ok(unknown.into_iter().map(|(k, ptrs)| warning(&k, &ptrs)).collect())
}

fn walk(v: &Value, ptr: String, unknown: &mut BTreeMap<String, Vec<String>>) -> Result<(), SchemaError> {
    let Value::Object(o) = v else { return Ok(()) };
    check_type(o, &ptr)?;
    for (k, sub) in o {
        if !known(k) && !k.starts_with("x-") {
            unknown.entry(k.clone()).or_default().push(ptr.clone());
            continue;
        }
        let kp = format!("{ptr}/{}", ptr_token(k));
        if SUB_ONE.contains(&k.as_str()) && !(k == "items" && sub.is_array()) {
            walk(sub, kp.clone(), unknown)?;
        }
        if SUB_MAP.contains(&k.as_str()) {
            if let Value::Object(m) = sub {
                for (name, s) in m {
                    walk(s, format!("{kp}/{}", ptr_token(name)), unknown)?;
                }
            }
        }
        if SUB_ARR.contains(&k.as_str()) {
            if let Value::Array(a) = sub {
                for (i, s) in a.iter().enumerate() {
                    walk(s, format!("{kp}/{i}"), unknown)?;
                }
            }
        }
    }
    Ok(())
}

fn check_type(o: &Map<String, Value>, ptr: &str) -> Result<(), SchemaError> {
    let Some(t) = o.get("type") else { return Ok(()) };
    let names: Vec<&Value> = match t {
        Value::String(_) => vec![t],
        Value::Array(a) if a.is_empty() => {
            return Err(SchemaError::new("type", ptr, "must name at least one type (an empty array)"));
        }
        Value::Array(a) => a.iter().collect(),
        _ => return Err(SchemaError::new("type", ptr, "must be a type name or an array of type names")),
    };
    for n in names {
        let Some(name) = n.as_str() else {
            return Err(SchemaError::new("type", ptr, format!("{n} is not a type name")));
        };
        if type_bits(name).is_none() {
            let hint = match closest(name, &TYPES) {
                Some(c) => format!(" (did you mean \"{c}\"?)"),
                None => String::new(),
            };
            return Err(SchemaError::new(
                "type",
                ptr,
                format!("unknown type name {name:?}{hint}; the types are {}", TYPES.join(", ")),
            ));
        }
    }
    Ok(())
}

fn warning(keyword: &str, ptrs: &[String]) -> String {
    let at: Vec<&str> = ptrs.iter().take(MAX_POINTERS).map(|p| if p.is_empty() { "#" } else { p.as_str() }).collect();
    let more = match ptrs.len().saturating_sub(MAX_POINTERS) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    let all: Vec<&str> = ASSERTIONS.iter().chain(NOT_ASSERTIONS).copied().collect();
    let hint = match closest(keyword, &all) {
        Some(c) => format!(" (did you mean `{c}`?)"),
        None => String::new(),
    };
    format!(
        "unknown keyword `{keyword}` at {}{more}: no JSON Schema dialect defines it, so it constrains nothing{hint}",
        at.join(", ")
    )
}

/// The known word closest to `word` by edit distance (case ignored), if it is close: at most a
/// third of the word's length, and at most 2.
fn closest<'k>(word: &str, known: &[&'k str]) -> Option<&'k str> {
    let lower = word.to_lowercase();
    let limit = (word.chars().count() / 3).min(2);
    known
        .iter()
        .map(|k| (strsim::levenshtein(&lower, &k.to_lowercase()), *k))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::lint;

    #[test]
    fn unknown_type_names_are_errors_at_their_pointer() {
        let e = lint(&json!({"properties": {"a": {"type": "strin"}}})).unwrap_err();
        assert_eq!((e.keyword.as_str(), e.pointer.as_str()), ("type", "/properties/a"));
        assert!(e.message.contains("\"strin\"") && e.message.contains("did you mean \"string\""), "{e}");
        let e = lint(&json!({"items": {"type": ["string", "nul"]}})).unwrap_err();
        assert_eq!(e.pointer, "/items");
        assert!(e.message.contains("\"nul\"") && e.message.contains("\"null\""), "{e}");
        assert!(lint(&json!({"type": []})).is_err());
        assert!(lint(&json!({"type": 3})).is_err());
        assert!(lint(&json!({"anyOf": [{"type": "integer"}, {"not": {"type": "any"}}]})).is_err());
        assert!(lint(&json!({"type": ["integer", "null"], "items": [{"type": "number"}]})).unwrap().is_empty());
    }

    #[test]
    fn unknown_keywords_are_warnings_with_a_hint() {
        let w = lint(&json!({
            "propertie": {"x": {"type": "strin"}},
            "properties": {"minLenght": {"minLenght": 3}, "b": {"x-kind": 1, "example": 2}},
        }))
        .unwrap();
        // (Not a schema below an unknown keyword, nor a keyword among `properties`' names.)
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w[0].starts_with("unknown keyword `example` at /properties/b:"), "{w:?}");
        assert!(w[1].contains("`minLenght` at /properties/minLenght") && w[1].contains("did you mean `minLength`"));
        assert!(w[2].contains("`propertie` at #") && w[2].contains("did you mean `properties`"));
    }

    #[test]
    fn a_keyword_found_in_many_places_is_one_warning() {
        let props: serde_json::Map<String, serde_json::Value> =
            (0..5).map(|i| (format!("p{i}"), json!({"nullable": true}))).collect();
        let w = lint(&json!({"properties": props})).unwrap();
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("/properties/p0, /properties/p1, /properties/p2 and 2 more"), "{w:?}");
    }
}
