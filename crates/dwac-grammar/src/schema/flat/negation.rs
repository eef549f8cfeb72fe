//! The `not` forms whose complement already has a place in the grammar (`Negation`).

use serde_json::{Map, Value};

use super::{is_annotation, types_of, value_type};

/// A `not` that compiles exactly: each form's complement has a place in the grammar already
/// (the type set, the object's key-presence states, the string terminal's `except` list).
pub(crate) enum Negation {
    /// Only annotations: `not: {}` excludes everything.
    Everything,
    /// `not: {type}`: these types are excluded.
    Types(u8),
    /// `not: {required}`, `not: {anyOf: [{required}, …]}`: an object where no listed key set is
    /// wholly present (a non-object satisfies `required`, so the negation excludes it).
    KeySets(Vec<Vec<String>>),
    /// `not: {pattern}`: a string that does not match (non-strings satisfy `pattern`: excluded).
    Pattern(String),
    /// `not: {const}` / `not: {enum}` of strings, booleans, `null` and numbers: any value but
    /// these (numbers: `numbers::not_equal`).
    Values(Vec<Value>),
    /// `not: {additionalProperties: false, properties?: {…}}` (the properties' schemas only
    /// annotations or `true`): an object with some key not among these.
    KeysOutside(Vec<String>),
}

/// The [`Negation`] a `not` subschema is, if it is one of those forms.
pub(crate) fn negation(n: &Map<String, Value>) -> Option<Negation> {
    let strings =
        |v: &Value| -> Option<Vec<String>> { v.as_array()?.iter().map(|x| x.as_str().map(str::to_string)).collect() };
    if n.get("additionalProperties") == Some(&Value::Bool(false)) {
        let mut names = Vec::new();
        for (k, v) in n {
            match k.as_str() {
                "additionalProperties" => {}
                "properties" => {
                    for (p, ps) in v.as_object()? {
                        let free = match ps {
                            Value::Bool(b) => *b,
                            Value::Object(o) => o.keys().all(|k| is_annotation(k)),
                            _ => false,
                        };
                        if !free {
                            return None;
                        }
                        names.push(p.clone());
                    }
                }
                k if is_annotation(k) => {}
                _ => return None,
            }
        }
        return Some(Negation::KeysOutside(names));
    }
    // `not: {type, enum}` (or `const`): the listed values of those types are the schema's values.
    if n.contains_key("type") && (n.contains_key("enum") ^ n.contains_key("const")) {
        let types = types_of(n)?;
        if n.keys().all(|k| matches!(k.as_str(), "type" | "enum" | "const") || is_annotation(k)) {
            let values = match (n.get("enum"), n.get("const")) {
                (Some(e), _) => e.as_array()?.clone(),
                (_, Some(c)) => vec![c.clone()],
                _ => return None,
            };
            let kept: Vec<Value> = values.into_iter().filter(|v| value_type(v) & types != 0).collect();
            return kept
                .iter()
                .all(|x| matches!(x, Value::String(_) | Value::Bool(_) | Value::Null | Value::Number(_)))
                .then_some(Negation::Values(kept));
        }
    }
    let mut keys = n.keys().filter(|k| !is_annotation(k));
    let (Some(k), None) = (keys.next(), keys.next()) else {
        return n.keys().all(|k| is_annotation(k)).then_some(Negation::Everything);
    };
    let v = &n[k.as_str()];
    match k.as_str() {
        "type" => types_of(n).map(Negation::Types),
        "required" => Some(Negation::KeySets(vec![strings(v)?])),
        "anyOf" => {
            let mut sets = Vec::new();
            for b in v.as_array()? {
                let b = b.as_object()?;
                if b.keys().any(|k| k != "required" && !is_annotation(k)) {
                    return None;
                }
                sets.push(strings(b.get("required")?)?);
            }
            (!sets.is_empty()).then_some(Negation::KeySets(sets))
        }
        "pattern" => v.as_str().map(|p| Negation::Pattern(p.to_string())),
        "const" | "enum" => {
            let values = if k == "const" { vec![v.clone()] } else { v.as_array()?.clone() };
            values
                .iter()
                .all(|x| matches!(x, Value::String(_) | Value::Bool(_) | Value::Null | Value::Number(_)))
                .then_some(Negation::Values(values))
        }
        _ => None,
    }
}
