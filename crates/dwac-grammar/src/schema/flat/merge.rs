//! Merging the keywords of every flat schema into one [`Shape`] (an intersection), one function
//! per kind of keyword, applied to each flat schema in definition order.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::super::numbers::Decimal;
use super::super::{Draft, SchemaError};
use super::{
    as_decimal, as_u64, dependent_presence, in_place, json_eq, negation, types_of, ArrSpec, Flat, Negation, ObjSpec,
    Part, Presence, Rest, Shape, SomeMember, Unevaluated, T_ALL, T_BOOL, T_NULL, T_OBJ, T_STR,
};
use crate::schema::doc::{ptr_token, Doc, CONTAINS_NOT};

/// Merge the keywords of every flat schema (an intersection); refusals are checked by the
/// caller.
pub(crate) fn merge(doc: &Doc, flat: &Flat) -> Result<Shape, SchemaError> {
    let draft = doc.draft;
    let mut s = Shape {
        ptr: flat.schemas.first().map(|x| x.0.clone()).unwrap_or_default(),
        types: T_ALL,
        enums: None,
        str_min: 0,
        str_max: None,
        patterns: Vec::new(),
        formats: Vec::new(),
        num_min: None,
        num_max: None,
        multiples: Vec::new(),
        objs: Vec::new(),
        required: Vec::new(),
        min_props: 0,
        max_props: None,
        prop_names: Vec::new(),
        arrs: Vec::new(),
        min_items: 0,
        max_items: None,
        uneval_props: Vec::new(),
        uneval_items: Vec::new(),
        contains: Vec::new(),
        contains_max: None,
        presence: Vec::new(),
        str_not: Vec::new(),
        bool_not: 0,
        num_not: Vec::new(),
        unique: None,
        some_members: Vec::new(),
    };
    let present: HashSet<String> = flat.schemas.iter().map(|x| x.0.clone()).collect();
    for (ptr, o) in &flat.schemas {
        let ptr = ptr.as_str();
        merge_types_and_not(&mut s, ptr, o)?;
        merge_values(&mut s, ptr, o)?;
        merge_strings(&mut s, ptr, o)?;
        merge_numbers(&mut s, ptr, o, draft)?;
        merge_objects(&mut s, ptr, o)?;
        merge_arrays(&mut s, ptr, o, draft)?;
        merge_dependencies(&mut s, ptr, o)?;
        merge_contains(&mut s, ptr, o)?;
        merge_unevaluated(&mut s, ptr, o, doc, &present)?;
        // (`maxItems` last, as it always was: the first error found is the one reported.)
        if let Some(v) = o.get("maxItems") {
            let m = as_u64(v, "maxItems", ptr)?;
            s.max_items = Some(s.max_items.map_or(m, |x| x.min(m)));
        }
    }
    Ok(s)
}

/// The lower bound `new` where it is tighter than `cur`.
fn tighten_min(cur: &mut Option<(Decimal, bool)>, new: (Decimal, bool)) {
    match cur {
        Some(c) if c.0 > new.0 || (c.0 == new.0 && c.1) => {}
        _ => *cur = Some(new),
    }
}

/// The upper bound `new` where it is tighter than `cur`.
fn tighten_max(cur: &mut Option<(Decimal, bool)>, new: (Decimal, bool)) {
    match cur {
        Some(c) if c.0 < new.0 || (c.0 == new.0 && c.1) => {}
        _ => *cur = Some(new),
    }
}

/// `type`, and `not` of the forms the refusal check lets through.
fn merge_types_and_not(s: &mut Shape, ptr: &str, o: &Map<String, Value>) -> Result<(), SchemaError> {
    if let Some(t) = types_of(o) {
        s.types &= t;
    }
    match o.get("not") {
        Some(Value::Bool(true)) => s.types = 0,
        // (Other forms do not pass the refusal check.)
        Some(Value::Object(n)) => match negation(n) {
            Some(Negation::Everything) => s.types = 0,
            Some(Negation::Types(t)) => s.types &= !t,
            Some(Negation::KeySets(sets)) => {
                s.types &= T_OBJ;
                s.presence.push(Presence::NoneOf(sets));
            }
            Some(Negation::KeysOutside(keys)) => {
                s.types &= T_OBJ;
                s.presence.push(Presence::SomeOutside(keys));
            }
            Some(Negation::Pattern(p)) => {
                s.types &= T_STR;
                let not_ptr = format!("{ptr}/not");
                let r = crate::schema::strings::pattern_regex(&p)
                    .map_err(|e| SchemaError::new("pattern", &not_ptr, e.to_string()))?;
                s.str_not.push(r);
            }
            Some(Negation::Values(values)) => {
                for v in values {
                    match v {
                        Value::Null => s.types &= !T_NULL,
                        Value::Bool(b) => s.bool_not |= 1 << u8::from(b),
                        Value::String(x) => s.str_not.push(crate::schema::strings::json_string_literal(&x)),
                        Value::Number(x) => s.num_not.push(Decimal::from_json(&x)),
                        _ => {}
                    }
                }
                if s.bool_not == 3 {
                    s.types &= !T_BOOL;
                }
            }
            None => {}
        },
        _ => {}
    }
    Ok(())
}

/// `enum` and `const`: the values every list allows.
fn merge_values(s: &mut Shape, ptr: &str, o: &Map<String, Value>) -> Result<(), SchemaError> {
    let mut lists: Vec<Vec<Value>> = Vec::new();
    if let Some(e) = o.get("enum") {
        match e {
            Value::Array(a) => lists.push(a.clone()),
            _ => return Err(SchemaError::new("enum", ptr, "must be an array")),
        }
    }
    if let Some(c) = o.get("const") {
        lists.push(vec![c.clone()]);
    }
    for l in lists {
        s.enums = Some(match s.enums.take() {
            None => l,
            Some(cur) => cur.into_iter().filter(|v| l.iter().any(|w| json_eq(v, w))).collect(),
        });
    }
    Ok(())
}

/// String keywords: lengths, patterns (leading lookaheads split), formats.
fn merge_strings(s: &mut Shape, ptr: &str, o: &Map<String, Value>) -> Result<(), SchemaError> {
    if let Some(v) = o.get("minLength") {
        s.str_min = s.str_min.max(as_u64(v, "minLength", ptr)?);
    }
    if let Some(v) = o.get("maxLength") {
        let m = as_u64(v, "maxLength", ptr)?;
        s.str_max = Some(s.str_max.map_or(m, |x| x.min(m)));
    }
    if let Some(v) = o.get("pattern") {
        let Some(p) = v.as_str() else { return Err(SchemaError::new("pattern", ptr, "must be a string")) };
        // `^(?=A)(?!B)C`: every `^A` and `^C`, no `^B` (`strings::split_leading_lookaheads`).
        match crate::schema::strings::split_leading_lookaheads(p) {
            Some((pos, neg, rest)) => {
                for q in pos.into_iter().chain([rest]) {
                    s.patterns.push((q, ptr.to_string()));
                }
                for q in neg {
                    let r = crate::schema::strings::pattern_regex(&q)
                        .map_err(|e| SchemaError::new("pattern", ptr, format!("{e} (in {p:?})")))?;
                    s.str_not.push(r);
                }
            }
            None => s.patterns.push((p.to_string(), ptr.to_string())),
        }
    }
    if let Some(v) = o.get("format") {
        if let Some(f) = v.as_str() {
            s.formats.push((f.to_string(), ptr.to_string()));
        }
    }
    Ok(())
}

/// Number keywords: bounds (draft 4's boolean exclusive bounds too), `multipleOf`.
fn merge_numbers(s: &mut Shape, ptr: &str, o: &Map<String, Value>, draft: Draft) -> Result<(), SchemaError> {
    let excl_bool = draft == Draft::Draft4;
    if let Some(v) = o.get("minimum") {
        let ex = excl_bool && o.get("exclusiveMinimum") == Some(&Value::Bool(true));
        tighten_min(&mut s.num_min, (as_decimal(v, "minimum", ptr)?, ex));
    }
    if let Some(v) = o.get("maximum") {
        let ex = excl_bool && o.get("exclusiveMaximum") == Some(&Value::Bool(true));
        tighten_max(&mut s.num_max, (as_decimal(v, "maximum", ptr)?, ex));
    }
    if let Some(v @ Value::Number(_)) = o.get("exclusiveMinimum") {
        tighten_min(&mut s.num_min, (as_decimal(v, "exclusiveMinimum", ptr)?, true));
    }
    if let Some(v @ Value::Number(_)) = o.get("exclusiveMaximum") {
        tighten_max(&mut s.num_max, (as_decimal(v, "exclusiveMaximum", ptr)?, true));
    }
    if let Some(v) = o.get("multipleOf") {
        s.multiples.push((as_decimal(v, "multipleOf", ptr)?, ptr.to_string()));
    }
    Ok(())
}

/// Object keywords: properties, patterns, additional properties, `required`, counts, `propertyNames`, "some member" constraints.
fn merge_objects(s: &mut Shape, ptr: &str, o: &Map<String, Value>) -> Result<(), SchemaError> {
    let props: Vec<String> = match o.get("properties") {
        Some(Value::Object(m)) => m.keys().cloned().collect(),
        Some(_) => return Err(SchemaError::new("properties", ptr, "must be an object")),
        None => Vec::new(),
    };
    let patterns: Vec<(String, Part)> = match o.get("patternProperties") {
        Some(Value::Object(m)) => {
            m.keys().map(|k| (k.clone(), Part::full(format!("{ptr}/patternProperties/{}", ptr_token(k))))).collect()
        }
        Some(_) => return Err(SchemaError::new("patternProperties", ptr, "must be an object")),
        None => Vec::new(),
    };
    let additional = o.get("additionalProperties").map(|_| Part::full(format!("{ptr}/additionalProperties")));
    if !props.is_empty() || !patterns.is_empty() || additional.is_some() {
        s.objs.push(ObjSpec { ptr: ptr.to_string(), props, patterns, additional });
    }
    if let Some(r) = o.get("required") {
        let Value::Array(r) = r else { return Err(SchemaError::new("required", ptr, "must be an array")) };
        for k in r {
            let Some(k) = k.as_str() else { return Err(SchemaError::new("required", ptr, "must list strings")) };
            if !s.required.iter().any(|x| x == k) {
                s.required.push(k.to_string());
            }
        }
    }
    if let Some(v) = o.get("minProperties") {
        s.min_props = s.min_props.max(as_u64(v, "minProperties", ptr)?);
    }
    if let Some(v) = o.get("maxProperties") {
        let m = as_u64(v, "maxProperties", ptr)?;
        s.max_props = Some(s.max_props.map_or(m, |x| x.min(m)));
    }
    if o.contains_key("propertyNames") {
        s.prop_names.push(Part::full(format!("{ptr}/propertyNames")));
    }
    s.some_members.extend(SomeMember::of(ptr, o)?);
    Ok(())
}

/// Array keywords: positions (`prefixItems`, or draft 4–7's tuple `items`), the rest, `minItems`, `uniqueItems`.
fn merge_arrays(s: &mut Shape, ptr: &str, o: &Map<String, Value>, draft: Draft) -> Result<(), SchemaError> {
    let (prefix_kw, prefix_len) = if draft.items_array_is_tuple() {
        ("items", o.get("items").and_then(Value::as_array).map(Vec::len))
    } else {
        ("prefixItems", o.get("prefixItems").and_then(Value::as_array).map(Vec::len))
    };
    let prefix: Vec<Part> =
        (0..prefix_len.unwrap_or(0)).map(|i| Part::full(format!("{ptr}/{prefix_kw}/{i}"))).collect();
    let rest_kw = if draft.items_array_is_tuple() && prefix_len.is_some() { "additionalItems" } else { "items" };
    let rest = match o.get(rest_kw) {
        None => Rest::Any,
        Some(Value::Bool(false)) => Rest::Nothing,
        Some(Value::Bool(true)) => Rest::Any,
        Some(Value::Object(_)) => Rest::Schema(Part::full(format!("{ptr}/{rest_kw}"))),
        Some(_) => return Err(SchemaError::new(rest_kw, ptr, "must be a schema")),
    };
    if !prefix.is_empty() || !matches!(rest, Rest::Any) {
        s.arrs.push(ArrSpec { prefix, rest });
    }
    if let Some(v) = o.get("minItems") {
        s.min_items = s.min_items.max(as_u64(v, "minItems", ptr)?);
    }
    if o.get("uniqueItems") == Some(&Value::Bool(true)) && s.unique.is_none() {
        s.unique = Some(ptr.to_string());
    }
    Ok(())
}

/// `dependentRequired`, `dependencies` and `dependentSchemas` as presence constraints.
fn merge_dependencies(s: &mut Shape, ptr: &str, o: &Map<String, Value>) -> Result<(), SchemaError> {
    for kw in ["dependentRequired", "dependencies", "dependentSchemas"] {
        if let Some(Value::Object(m)) = o.get(kw) {
            for (k, v) in m {
                if kw != "dependentRequired" && !v.is_array() {
                    // (A schema form: one the refusal check let through.)
                    s.presence.extend(dependent_presence(k, v).flatten());
                    continue;
                }
                if let Some(a) = v.as_array() {
                    let deps: Option<Vec<String>> = a.iter().map(|x| x.as_str().map(str::to_string)).collect();
                    match deps {
                        Some(d) => s.presence.push(Presence::Implies(k.clone(), d)),
                        None => return Err(SchemaError::new(kw, ptr, "must list property names")),
                    }
                }
            }
        }
    }
    Ok(())
}

/// `contains` with `minContains` and `maxContains`.
fn merge_contains(s: &mut Shape, ptr: &str, o: &Map<String, Value>) -> Result<(), SchemaError> {
    if o.contains_key("contains") {
        let m = match o.get("minContains") {
            Some(v) => as_u64(v, "minContains", ptr)?,
            None => 1,
        };
        s.contains.push((Part::full(format!("{ptr}/contains")), m));
        if let (Some(v), true) = (o.get("maxContains"), o.contains_key(CONTAINS_NOT)) {
            let max = as_u64(v, "maxContains", ptr)?;
            s.contains_max = Some((max, Part::full(format!("{ptr}/{}", CONTAINS_NOT))));
        }
    }
    Ok(())
}

/// `unevaluatedProperties` and `unevaluatedItems`: what the schemas applied in place leave unevaluated.
fn merge_unevaluated(
    s: &mut Shape,
    ptr: &str,
    o: &Map<String, Value>,
    doc: &Doc,
    present: &HashSet<String>,
) -> Result<(), SchemaError> {
    let draft = doc.draft;
    for kw in ["unevaluatedProperties", "unevaluatedItems"] {
        if !o.contains_key(kw) || o.get(kw) == Some(&Value::Bool(true)) {
            continue;
        }
        let mut u = Unevaluated {
            part: Part::full(format!("{ptr}/{kw}")),
            names: Vec::new(),
            patterns: Vec::new(),
            all: false,
            prefix: 0,
            by_contains: false,
        };
        for (dp, d) in in_place(doc, ptr, present)? {
            if kw == "unevaluatedProperties" {
                if let Some(Value::Object(m)) = d.get("properties") {
                    u.names.extend(m.keys().cloned());
                }
                if let Some(Value::Object(m)) = d.get("patternProperties") {
                    u.patterns.extend(m.keys().cloned());
                }
                u.all |= d.contains_key("additionalProperties") || (dp != ptr && d.contains_key(kw));
            } else {
                let tuple_kw = if draft.items_array_is_tuple() { "items" } else { "prefixItems" };
                if let Some(Value::Array(a)) = d.get(tuple_kw) {
                    u.prefix = u.prefix.max(a.len());
                }
                let rest_kw = if draft.items_array_is_tuple() { "additionalItems" } else { "items" };
                let rest_all = match d.get(rest_kw) {
                    Some(_) if draft.items_array_is_tuple() => d.get("items").is_some_and(Value::is_array),
                    Some(_) => true,
                    None => false,
                };
                let items_schema = draft.items_array_is_tuple() && d.get("items").is_some_and(|i| !i.is_array());
                u.all |= rest_all || items_schema || (dp != ptr && d.contains_key(kw));
                u.by_contains |= d.contains_key("contains");
            }
        }
        if !u.all {
            if kw == "unevaluatedProperties" {
                s.uneval_props.push(u);
            } else {
                s.uneval_items.push(u);
            }
        }
    }
    Ok(())
}
