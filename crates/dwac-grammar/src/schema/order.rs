//! Instances laid out the way a compiled grammar expects them: object keys in the schema's
//! order (what tests and benchmarks serialize valid instances with).

use serde_json::{Map, Value};

use super::doc::Doc;
use super::flat::{flatten, json_eq, merge, presence_branches, refusal, Flat, Part, Rest};
use super::validate::{key_parts, provably_disjoint, validate};
use super::Draft;

/// What a value is laid out by: the own parts of the first combination of `anyOf`/`oneOf`
/// branches it satisfies, or, where the way there meets a `oneOf` or `not` the compiler rewrites
/// with complements (`complement.rs`), the rewritten schema (its keys are laid out as that says).
enum Chosen {
    Own(Vec<Part>),
    Rewritten(Value),
}

/// The schema rewritten for a `not` or an overlapping `oneOf` of the conjunction `flat`, if it
/// has one the compiler rewrites.
fn rewritten(doc: &Doc, flat: &Flat) -> Option<Value> {
    for (ptr, o) in &flat.schemas {
        if let Some(n) = o.get("not") {
            if refusal("not", n, o, doc.draft).is_some() {
                if let Some(r) = super::complement::rewrite_not(doc, ptr) {
                    return Some(r);
                }
            }
        }
        if let Some(c) = o.get("if") {
            if refusal("if", c, o, doc.draft).is_some() {
                if let Some(r) = super::complement::rewrite_if(doc, ptr) {
                    return Some(r);
                }
            }
        }
    }
    for d in &flat.disjunctions {
        if d.kind != "oneOf" || presence_branches(doc, d).is_some() {
            continue;
        }
        let with = |b: &Part| -> Vec<Part> { flat.own.iter().cloned().chain(std::iter::once(b.clone())).collect() };
        let n = d.branches.len();
        let overlapping =
            (0..n).any(|i| (i + 1..n).any(|j| !provably_disjoint(doc, &with(&d.branches[i]), &with(&d.branches[j]))));
        if overlapping {
            if let Some(r) = super::complement::rewrite_one_of(doc, &d.ptr) {
                return Some(r);
            }
        }
    }
    None
}

/// [`Chosen`] for `v` under the conjunction of `parts`.
fn chosen_conj(doc: &Doc, v: &Value, parts: &[Part], depth: usize) -> Option<Chosen> {
    let mut flat = flatten(doc, parts).ok()?;
    if let Some(r) = rewritten(doc, &flat) {
        return Some(Chosen::Rewritten(r));
    }
    // `oneOf`s of `required` sets are compiled as presence constraints, not branches.
    flat.disjunctions.retain(|d| !(d.kind == "oneOf" && presence_branches(doc, d).is_some()));
    if flat.disjunctions.is_empty() || depth > 8 {
        return Some(Chosen::Own(flat.own));
    }
    let mut combos: Vec<Vec<Part>> = vec![flat.own.clone()];
    for d in &flat.disjunctions {
        let mut next = Vec::new();
        for c in &combos {
            for br in &d.branches {
                let mut c2 = c.clone();
                c2.push(br.clone());
                next.push(c2);
            }
        }
        if next.len() > 256 {
            return Some(Chosen::Own(flat.own));
        }
        combos = next;
    }
    for c in combos {
        if validate(doc, v, &c).ok() == Some(true) {
            return chosen_conj(doc, v, &c, depth + 1);
        }
    }
    Some(Chosen::Own(flat.own))
}

fn reorder(doc: &Doc, v: &Value, parts: &[Part], depth: usize) -> Value {
    if depth > 256 {
        return v.clone();
    }
    let own = match chosen_conj(doc, v, parts, 0) {
        None => return v.clone(),
        Some(Chosen::Rewritten(r)) => return reorder(&Doc::new(&r, doc.draft), v, parts, depth + 1),
        Some(Chosen::Own(own)) => own,
    };
    let Ok(flat) = flatten(doc, &own) else { return v.clone() };
    let Ok(shape) = merge(doc, &flat) else { return v.clone() };
    // A constant: serialize it in the key order of the listed value it equals.
    if let Some(values) = &shape.enums {
        if let Some(c) = values.iter().find(|c| json_eq(c, v)) {
            return reorder_like(v, c);
        }
    }
    match v {
        Value::Object(m) => {
            let mut names: Vec<&str> = Vec::new();
            for spec in &shape.objs {
                for p in &spec.props {
                    if !names.contains(&p.as_str()) {
                        names.push(p);
                    }
                }
            }
            for r in &shape.required {
                if !names.contains(&r.as_str()) {
                    names.push(r);
                }
            }
            // Keys of presence constraints, as the compiler orders them.
            let mut presence_keys: Vec<String> = Vec::new();
            for p in &shape.presence {
                presence_keys.extend(p.keys().into_iter().cloned());
            }
            if let Ok(orig) = flatten(doc, parts) {
                for d in &orig.disjunctions {
                    if let ("oneOf", Some(bs)) = (d.kind, presence_branches(doc, d)) {
                        presence_keys.extend(bs.into_iter().flat_map(|(r, a)| r.into_iter().chain(a)));
                    }
                }
            }
            for k in &presence_keys {
                if !names.contains(&k.as_str()) {
                    names.push(k);
                }
            }
            let mut out = Map::new();
            let sub = |k: &str, x: &Value| {
                let parts = key_parts(doc, &shape.objs, k).unwrap_or_default();
                reorder(doc, x, &parts, depth + 1)
            };
            for k in &names {
                if let Some(x) = m.get(*k) {
                    out.insert(k.to_string(), sub(k, x));
                }
            }
            for (k, x) in m {
                if !names.contains(&k.as_str()) {
                    out.insert(k.clone(), sub(k, x));
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => {
            let p = shape.arrs.iter().map(|s| s.prefix.len()).max().unwrap_or(0);
            let out = a
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    let mut parts = Vec::new();
                    for s in &shape.arrs {
                        if let Some(pp) = s.prefix.get(i) {
                            parts.push(pp.clone());
                        } else if let Rest::Schema(r) = &s.rest {
                            parts.push(r.clone());
                        }
                    }
                    let _ = p;
                    reorder(doc, x, &parts, depth + 1)
                })
                .collect();
            Value::Array(out)
        }
        _ => v.clone(),
    }
}

/// `v` (equal to `like` as JSON) with the object key order of `like`.
fn reorder_like(v: &Value, like: &Value) -> Value {
    match (v, like) {
        (Value::Object(m), Value::Object(l)) => {
            let mut out = Map::new();
            for (k, lv) in l {
                if let Some(x) = m.get(k) {
                    out.insert(k.clone(), reorder_like(x, lv));
                }
            }
            Value::Object(out)
        }
        (Value::Array(a), Value::Array(l)) => Value::Array(a.iter().zip(l).map(|(x, y)| reorder_like(x, y)).collect()),
        _ => v.clone(),
    }
}

/// Reorder an instance's object keys for serialization the way the compiled grammar expects
/// them: keys in schema definition order (`properties`, then unlisted `required` names), keys
/// the schema does not name last, in their original order.
pub fn order_instance(schema: &Value, instance: &Value) -> Value {
    order_instance_with(schema, instance, Draft::Draft2020)
}

/// [`order_instance`] for a schema whose dialect, when `$schema` names none, is `default_draft`.
pub fn order_instance_with(schema: &Value, instance: &Value, default_draft: Draft) -> Value {
    let draft = Draft::detect_or(schema, default_draft);
    // (Schema dependencies are compiled as a rewrite that merges the dependent schemas' keys into
    // their object's order: lay out by it too.)
    let rewritten = super::conditional::rewrite_dependencies(schema, draft);
    let doc = Doc::new(rewritten.as_ref().unwrap_or(schema), draft);
    reorder(&doc, instance, &[Part::full("")], 0)
}
