//! A small JSON Schema validator over the same document index and flattening as the
//! compiler. Used to filter `enum`/`const` values by their sibling keywords, to prove `oneOf`
//! branches disjoint, and to serialize instances in the grammar's key order.

use serde_json::{Map, Value};

use super::doc::{ptr_token, Doc};
use super::flat::{
    flatten, json_eq, merge, value_type, Flat, ObjSpec, Part, Presence, Shape, SomeMember, T_ARR, T_NUM, T_OBJ, T_STR,
};
use super::numbers::Decimal;
use super::patterns::{compiled, literal_of, matches_pattern};
use super::strings;
use super::{Draft, SchemaError};

fn matches_format(format: &str, s: &str) -> Result<bool, SchemaError> {
    if !strings::is_supported_format(format) {
        return Ok(true);
    }
    let c = strings::StringConstraints { format: Some(format.to_string()), ..Default::default() };
    let res = strings::string_regexes(&c).map_err(|e| SchemaError::new("format", "", e.to_string()))?;
    let lit = literal_of(s);
    for re in res {
        match compiled(&re) {
            Some(r) if r.is_match(&lit) => {}
            Some(_) => return Ok(false),
            None => return Err(SchemaError::new("format", "", "format regex too large")),
        }
    }
    Ok(true)
}

/// The parts constraining the value of key `name` under the object specs `objs`.
pub(crate) fn key_parts(_doc: &Doc, objs: &[ObjSpec], name: &str) -> Result<Vec<Part>, SchemaError> {
    let mut parts = Vec::new();
    for spec in objs {
        let mut matched = false;
        if spec.props.iter().any(|p| p == name) {
            parts.push(Part::full(format!("{}/properties/{}", spec.ptr, ptr_token(name))));
            matched = true;
        }
        for (p, part) in &spec.patterns {
            if matches_pattern(p, name)? {
                parts.push(part.clone());
                matched = true;
            }
        }
        if !matched {
            if let Some(a) = &spec.additional {
                parts.push(a.clone());
            }
        }
    }
    Ok(parts)
}

/// Split a JSON number's text into (negative, digits without leading zeros, exponent of ten).
fn split_number(s: &str) -> Option<(bool, Vec<u8>, i64)> {
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (mant, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i64>().ok()?),
        None => (s, 0),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    let mut digits: Vec<u8> = int.bytes().chain(frac.bytes()).map(|b| b.wrapping_sub(b'0')).collect();
    if digits.iter().any(|&d| d > 9) {
        return None;
    }
    let first = digits.iter().position(|&d| d != 0).unwrap_or(digits.len());
    digits.drain(..first);
    Some((neg, digits, exp - frac.len() as i64))
}

/// Is the number `v` an exact multiple of `m`? `None` if too large to decide here.
fn is_multiple(v: &serde_json::Number, m: &serde_json::Number) -> Option<bool> {
    let (_, a, ea) = split_number(&v.to_string())?;
    let (_, b, eb) = split_number(&m.to_string())?;
    if b.is_empty() {
        return None;
    }
    if a.is_empty() {
        return Some(true);
    }
    let e = ea.min(eb);
    let b_scaled: Vec<u8> = b.iter().copied().chain(std::iter::repeat_n(0, (eb - e) as usize)).collect();
    if b_scaled.len() > 36 {
        return None;
    }
    let bm: u128 = b_scaled.iter().fold(0u128, |x, &d| x * 10 + d as u128);
    let zeros = (ea - e) as usize;
    if zeros > 100_000 {
        return None;
    }
    let mut r: u128 = 0;
    for d in a.iter().copied().chain(std::iter::repeat_n(0, zeros)) {
        r = (r * 10 + d as u128) % bm;
    }
    Some(r == 0)
}

fn is_integer_value(n: &serde_json::Number, draft: Draft) -> bool {
    if draft == Draft::Draft4 {
        n.is_i64() || n.is_u64()
    } else {
        Decimal::from_json(n).is_integer()
    }
}

fn type_matches(v: &Value, t: &str, draft: Draft) -> bool {
    match (t, v) {
        ("null", Value::Null) | ("boolean", Value::Bool(_)) | ("object", Value::Object(_)) => true,
        ("array", Value::Array(_)) | ("string", Value::String(_)) | ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => is_integer_value(n, draft),
        _ => false,
    }
}

fn undecidable(kw: &str, ptr: &str) -> SchemaError {
    SchemaError::new(kw, ptr, "cannot be evaluated exactly on a constant value")
}

/// Does `v` satisfy the conjunction `parts`?
pub(crate) fn validate(doc: &Doc, v: &Value, parts: &[Part]) -> Result<bool, SchemaError> {
    let flat = flatten(doc, parts)?;
    if flat.is_false {
        return Ok(false);
    }
    for d in &flat.disjunctions {
        let mut n = 0;
        for b in &d.branches {
            if validate(doc, v, std::slice::from_ref(b))? {
                n += 1;
                if d.kind == "anyOf" {
                    break;
                }
            }
        }
        if n == 0 || (d.kind == "oneOf" && n != 1) {
            return Ok(false);
        }
    }
    for (ptr, o) in &flat.schemas {
        if !validate_keywords(doc, v, ptr, o)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A count keyword's value (`maxLength`, `minItems`, `maxContains`, …): a non-negative integer,
/// also when written with a zero fraction (`2.0`, as draft 6 on allows).
fn count(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| v.as_f64().filter(|f| f.fract() == 0.0 && (0.0..1.8e19).contains(f)).map(|f| f as u64))
}

fn sub(ptr: &str, kw: &str) -> Vec<Part> {
    vec![Part::full(format!("{ptr}/{kw}"))]
}

fn validate_keywords(doc: &Doc, v: &Value, ptr: &str, o: &Map<String, Value>) -> Result<bool, SchemaError> {
    let draft = doc.draft;
    if let Some(t) = o.get("type") {
        let ok = match t {
            Value::String(t) => type_matches(v, t, draft),
            Value::Array(a) => a.iter().any(|t| t.as_str().is_some_and(|t| type_matches(v, t, draft))),
            _ => true,
        };
        if !ok {
            return Ok(false);
        }
    }
    if let Some(Value::Array(e)) = o.get("enum") {
        if !e.iter().any(|x| json_eq(x, v)) {
            return Ok(false);
        }
    }
    if let Some(c) = o.get("const") {
        if !json_eq(c, v) {
            return Ok(false);
        }
    }
    if let Some(n) = o.get("not") {
        let _ = n;
        if validate(doc, v, &sub(ptr, "not"))? {
            return Ok(false);
        }
    }
    for kw in ["unevaluatedProperties", "unevaluatedItems"] {
        if o.contains_key(kw) && o.get(kw) != Some(&Value::Bool(true)) {
            return Err(undecidable(kw, ptr));
        }
    }
    if o.contains_key("if") {
        let branch = if validate(doc, v, &sub(ptr, "if"))? { "then" } else { "else" };
        if o.contains_key(branch) && !validate(doc, v, &sub(ptr, branch))? {
            return Ok(false);
        }
    }
    match v {
        Value::String(s) => validate_string(s, o),
        Value::Number(n) => validate_number(n, ptr, o, draft),
        Value::Object(m) => validate_object(doc, v, m, ptr, o),
        Value::Array(a) => validate_array(doc, a, ptr, o, draft),
        _ => Ok(true),
    }
}

/// The string keywords: lengths, `pattern`, `format`.
fn validate_string(s: &str, o: &Map<String, Value>) -> Result<bool, SchemaError> {
    let len = s.chars().count() as u64;
    if o.get("minLength").and_then(count).is_some_and(|m| len < m)
        || o.get("maxLength").and_then(count).is_some_and(|m| len > m)
    {
        return Ok(false);
    }
    if let Some(Value::String(p)) = o.get("pattern") {
        if !matches_pattern(p, s)? {
            return Ok(false);
        }
    }
    if let Some(Value::String(f)) = o.get("format") {
        if !matches_format(f, s)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The number keywords: bounds (draft 4's boolean exclusive bounds too), `multipleOf`.
fn validate_number(
    n: &serde_json::Number,
    ptr: &str,
    o: &Map<String, Value>,
    draft: Draft,
) -> Result<bool, SchemaError> {
    let x = Decimal::from_json(n);
    let num = |k: &str| match o.get(k) {
        Some(Value::Number(b)) => Some(Decimal::from_json(b)),
        _ => None,
    };
    let excl = |k: &str| o.get(k) == Some(&Value::Bool(true));
    if let Some(m) = num("minimum") {
        if x < m || (draft == Draft::Draft4 && excl("exclusiveMinimum") && x == m) {
            return Ok(false);
        }
    }
    if let Some(m) = num("maximum") {
        if x > m || (draft == Draft::Draft4 && excl("exclusiveMaximum") && x == m) {
            return Ok(false);
        }
    }
    if num("exclusiveMinimum").is_some_and(|m| x <= m) || num("exclusiveMaximum").is_some_and(|m| x >= m) {
        return Ok(false);
    }
    if let Some(Value::Number(m)) = o.get("multipleOf") {
        match is_multiple(n, m) {
            Some(true) => {}
            Some(false) => return Ok(false),
            None => return Err(undecidable("multipleOf", ptr)),
        }
    }
    Ok(true)
}

/// The object keywords: each member's schema, `propertyNames`, "some member" constraints, `required`, counts, dependencies.
fn validate_object(
    doc: &Doc,
    v: &Value,
    m: &Map<String, Value>,
    ptr: &str,
    o: &Map<String, Value>,
) -> Result<bool, SchemaError> {
    let objs: Vec<ObjSpec> = obj_specs(ptr, o);
    for (k, x) in m {
        let parts = key_parts(doc, &objs, k)?;
        if !parts.is_empty() && !validate(doc, x, &parts)? {
            return Ok(false);
        }
        if o.contains_key("propertyNames") && !validate(doc, &Value::String(k.clone()), &sub(ptr, "propertyNames"))? {
            return Ok(false);
        }
    }
    if let Some(w) = SomeMember::of(ptr, o)? {
        let mut found = false;
        for (k, x) in m {
            if w.key_fits(k)? && validate(doc, x, std::slice::from_ref(&w.value))? {
                found = true;
                break;
            }
        }
        if !found {
            return Ok(false);
        }
    }
    if let Some(Value::Array(r)) = o.get("required") {
        if r.iter().any(|k| k.as_str().is_some_and(|k| !m.contains_key(k))) {
            return Ok(false);
        }
    }
    let len = m.len() as u64;
    if o.get("minProperties").and_then(count).is_some_and(|x| len < x)
        || o.get("maxProperties").and_then(count).is_some_and(|x| len > x)
    {
        return Ok(false);
    }
    for kw in ["dependentRequired", "dependentSchemas", "dependencies"] {
        if let Some(Value::Object(deps)) = o.get(kw) {
            for (k, d) in deps {
                if !m.contains_key(k) {
                    continue;
                }
                let ok = match d {
                    Value::Array(req) => req.iter().all(|r| r.as_str().is_some_and(|r| m.contains_key(r))),
                    _ => validate(doc, v, &[Part::full(format!("{ptr}/{kw}/{}", ptr_token(k)))])?,
                };
                if !ok {
                    return Ok(false);
                }
            }
        }
    }
    Ok(true)
}

/// The array keywords: counts, positions, `uniqueItems`, `contains`.
fn validate_array(
    doc: &Doc,
    a: &[Value],
    ptr: &str,
    o: &Map<String, Value>,
    draft: Draft,
) -> Result<bool, SchemaError> {
    let len = a.len() as u64;
    if o.get("minItems").and_then(count).is_some_and(|x| len < x)
        || o.get("maxItems").and_then(count).is_some_and(|x| len > x)
    {
        return Ok(false);
    }
    let (prefix_kw, rest_kw) = if draft.items_array_is_tuple() {
        if o.get("items").is_some_and(Value::is_array) {
            ("items", "additionalItems")
        } else {
            ("prefixItems-none", "items")
        }
    } else {
        ("prefixItems", "items")
    };
    let plen = o.get(prefix_kw).and_then(Value::as_array).map_or(0, Vec::len);
    for (i, x) in a.iter().enumerate() {
        let parts = if i < plen {
            vec![Part::full(format!("{ptr}/{prefix_kw}/{i}"))]
        } else if o.contains_key(rest_kw) {
            sub(ptr, rest_kw)
        } else {
            continue;
        };
        if !validate(doc, x, &parts)? {
            return Ok(false);
        }
    }
    if o.get("uniqueItems") == Some(&Value::Bool(true)) {
        for i in 0..a.len() {
            for j in i + 1..a.len() {
                if json_eq(&a[i], &a[j]) {
                    return Ok(false);
                }
            }
        }
    }
    if o.contains_key("contains") {
        let mut n = 0u64;
        for x in a {
            if validate(doc, x, &sub(ptr, "contains"))? {
                n += 1;
            }
        }
        let min = o.get("minContains").and_then(count).unwrap_or(1);
        if n < min || o.get("maxContains").and_then(count).is_some_and(|m| n > m) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The object spec of one schema (for validating one value against it).
fn obj_specs(ptr: &str, o: &Map<String, Value>) -> Vec<ObjSpec> {
    let props = o.get("properties").and_then(Value::as_object).map(|m| m.keys().cloned().collect()).unwrap_or_default();
    let patterns = o
        .get("patternProperties")
        .and_then(Value::as_object)
        .map(|m| {
            m.keys().map(|k| (k.clone(), Part::full(format!("{ptr}/patternProperties/{}", ptr_token(k))))).collect()
        })
        .unwrap_or_default();
    let additional = o.get("additionalProperties").map(|_| Part::full(format!("{ptr}/additionalProperties")));
    vec![ObjSpec { ptr: ptr.to_string(), props, patterns, additional }]
}

/// Do the numeric ranges of `a` and `b` not meet (one's maximum below the other's minimum, or
/// equal with either bound exclusive)?
fn numbers_apart(a: &Shape, b: &Shape) -> bool {
    let below = |max: &Option<(Decimal, bool)>, min: &Option<(Decimal, bool)>| match (max, min) {
        (Some((hi, ex_hi)), Some((lo, ex_lo))) => hi < lo || (hi == lo && (*ex_hi || *ex_lo)),
        _ => false,
    };
    below(&a.num_max, &b.num_min) || below(&b.num_max, &a.num_min)
}

/// Lexeme regexes whose intersection holds every string `s` allows (`None` when unsure): its
/// patterns, the shape of each format ([`strings::format_superset`]; a format's own regex may be
/// stricter than the format), and short length bounds (longer ones are left out: a larger
/// language is still a superset).
fn string_superset(s: &Shape) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for (p, _) in &s.patterns {
        out.push(strings::pattern_regex(p).ok()?);
    }
    out.extend(s.formats.iter().filter_map(|(f, _)| strings::format_superset(f)));
    if s.str_max.is_some_and(|m| m <= 64) || (s.str_max.is_none() && s.str_min > 0 && s.str_min <= 64) {
        let c = strings::StringConstraints { min_length: Some(s.str_min), max_length: s.str_max, ..Default::default() };
        out.extend(strings::string_regexes(&c).ok()?);
    }
    Some(out)
}

/// Can no value satisfy both `a` and `b`? (`false` when unsure.)
pub(crate) fn provably_disjoint(doc: &Doc, a: &[Part], b: &[Part]) -> bool {
    let mut budget = DISJOINTNESS_BUDGET;
    provably_disjoint_depth(doc, a, b, 0, &mut budget)
}

/// The most comparisons one [`provably_disjoint`] question may take (each side's `anyOf`/`oneOf`
/// branches are compared one by one: a product over nested disjunctions).
const DISJOINTNESS_BUDGET: usize = 4096;

/// Can no value satisfy both conjunctions `a` and `b`? (`false` when unsure, or past `budget`.)
///
/// A side with a disjunction (`anyOf` or `oneOf`: either way every value of the side satisfies
/// some branch) is disjoint from the other when each branch, with the side's own keywords, is.
fn provably_disjoint_depth(doc: &Doc, a: &[Part], b: &[Part], depth: usize, budget: &mut usize) -> bool {
    if depth > 8 || *budget == 0 {
        return false;
    }
    *budget -= 1;
    for (x, y) in [(a, b), (b, a)] {
        let Ok(f) = flatten(doc, x) else { return false };
        if f.is_false {
            return true;
        }
        if let Some(d) = f.disjunctions.first() {
            return d.branches.iter().all(|branch| {
                let parts: Vec<Part> = f.own.iter().cloned().chain(std::iter::once(branch.clone())).collect();
                provably_disjoint_depth(doc, &parts, y, depth + 1, budget)
            });
        }
    }
    let shape = |p: &[Part]| -> Option<(Flat, Shape)> {
        let f = flatten(doc, p).ok()?;
        if !f.disjunctions.is_empty() {
            return None;
        }
        let s = merge(doc, &f).ok()?;
        Some((f, s))
    };
    let (Some((fa, sa)), Some((fb, sb))) = (shape(a), shape(b)) else { return false };
    if fa.is_false || fb.is_false {
        return true;
    }
    let types = |s: &Shape| match &s.enums {
        Some(e) => e.iter().map(value_type).fold(0, |x, y| x | y) & s.types,
        None => s.types,
    };
    if types(&sa) & types(&sb) == 0 {
        return true;
    }
    // Constants on one side that the other side rejects.
    for (e, other) in [(&sa.enums, &fb), (&sb.enums, &fa)] {
        if let Some(values) = e {
            if values.iter().all(|v| validate(doc, v, &other.own).ok() == Some(false)) {
                return true;
            }
        }
    }
    // Strings, arrays or numbers only: length, size or value ranges that do not meet.
    let common = types(&sa) & types(&sb);
    let counts_apart = |(lo_a, hi_a): (u64, Option<u64>), (lo_b, hi_b): (u64, Option<u64>)| {
        hi_a.is_some_and(|h| h < lo_b) || hi_b.is_some_and(|h| h < lo_a)
    };
    if (common == T_STR && counts_apart((sa.str_min, sa.str_max), (sb.str_min, sb.str_max)))
        || (common == T_ARR && counts_apart((sa.min_items, sa.max_items), (sb.min_items, sb.max_items)))
        || (common & !T_NUM == 0 && numbers_apart(&sa, &sb))
    {
        return true;
    }
    // Strings only: languages that share no string (patterns, and the shapes formats have).
    if common == T_STR && sa.enums.is_none() && sb.enums.is_none() {
        if let (Some(mut ra), Some(rb)) = (string_superset(&sa), string_superset(&sb)) {
            ra.extend(rb);
            if strings::regexes_disjoint(&ra) {
                return true;
            }
        }
    }
    // Objects only: a key required on one side that the other side forbids, or whose values
    // the two sides constrain to disjoint languages.
    if common == T_OBJ {
        // Keys the two sides require together that one of them forbids having all at once
        // (`not: {required: [...]}`: a JSON-RPC response's `result` and `error`).
        let required: Vec<&String> = sa.required.iter().chain(&sb.required).collect();
        let forbidden_together = sa.presence.iter().chain(&sb.presence).any(|p| match p {
            Presence::NoneOf(sets) => sets.iter().any(|set| set.iter().all(|k| required.contains(&k))),
            _ => false,
        });
        if forbidden_together {
            return true;
        }
        for (x, y) in [(&sa, &sb), (&sb, &sa)] {
            for k in &x.required {
                let forbidden = key_parts(doc, &y.objs, k)
                    .ok()
                    .is_some_and(|parts| parts.iter().any(|p| doc.get(&p.ptr) == Some(&Value::Bool(false))));
                if forbidden {
                    return true;
                }
                // (Whether or not `y` requires the key: where it is present, `y` constrains it.)
                if let (Ok(pa), Ok(pb)) = (key_parts(doc, &x.objs, k), key_parts(doc, &y.objs, k)) {
                    if !pa.is_empty() && !pb.is_empty() && provably_disjoint_depth(doc, &pa, &pb, depth + 1, budget) {
                        return true;
                    }
                }
            }
        }
    }
    false
}
