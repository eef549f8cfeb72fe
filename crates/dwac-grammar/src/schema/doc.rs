//! The schema document: every subschema's JSON pointer and base URI, `$id`s and anchors,
//! and `$ref` resolution within the document (remote references are refused).

use std::collections::HashMap;

use serde_json::Value;

use super::{Draft, SchemaError};

/// A minimal RFC 3986 reference resolver, enough for `$id`/`$ref` inside one document.
pub(crate) fn resolve_uri(base: &str, reference: &str) -> String {
    if reference.is_empty() {
        return base.to_string();
    }
    if let Some(frag) = reference.strip_prefix('#') {
        let b = base.split('#').next().unwrap_or("");
        return format!("{b}#{frag}");
    }
    if has_scheme(reference) {
        return reference.to_string();
    }
    let base_nofrag = base.split('#').next().unwrap_or("");
    let (scheme, rest) = match base_nofrag.find(':') {
        Some(i) if has_scheme(base_nofrag) => (&base_nofrag[..=i], &base_nofrag[i + 1..]),
        _ => ("", base_nofrag),
    };
    if let Some(r) = reference.strip_prefix("//") {
        return format!("{scheme}//{r}");
    }
    let (authority, path) = if let Some(r) = rest.strip_prefix("//") {
        match r.find('/') {
            Some(i) => (format!("//{}", &r[..i]), &r[i..]),
            None => (format!("//{r}"), ""),
        }
    } else {
        (String::new(), rest)
    };
    let (ref_path, ref_tail) = match reference.find(['?', '#']) {
        Some(i) => (&reference[..i], &reference[i..]),
        None => (reference, ""),
    };
    let merged = if ref_path.starts_with('/') {
        ref_path.to_string()
    } else if ref_path.is_empty() {
        path.to_string()
    } else {
        let dir = match path.rfind('/') {
            Some(i) => &path[..=i],
            None if !authority.is_empty() => "/",
            None => "",
        };
        format!("{dir}{ref_path}")
    };
    format!("{scheme}{authority}{}{ref_tail}", remove_dot_segments(&merged))
}

fn has_scheme(s: &str) -> bool {
    match s.find(':') {
        Some(i) if i > 0 => {
            s[..i].chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        }
        _ => false,
    }
}

fn remove_dot_segments(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let absolute = path.starts_with('/');
    for seg in path.split('/') {
        match seg {
            "." => {}
            ".." => {
                out.pop();
            }
            s => out.push(s),
        }
    }
    let mut s = out.join("/");
    if absolute && !s.starts_with('/') {
        s.insert(0, '/');
    }
    s
}

/// Escape one JSON-pointer token.
pub(crate) fn ptr_token(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let hex = |c: u8| (c as char).to_digit(16);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// An index over one schema document.
pub(crate) struct Doc<'a> {
    pub root: &'a Value,
    pub draft: Draft,
    /// Base URI of each subschema (by JSON pointer).
    base: HashMap<String, String>,
    /// Absolute URI (without fragment) of each resource → its pointer.
    ids: HashMap<String, String>,
    /// `uri#anchor` → pointer.
    anchors: HashMap<String, String>,
}

const DEFAULT_BASE: &str = "dwac:/root.json";

/// Keywords whose values are subschemas (single), maps of subschemas, or arrays of subschemas.
pub(crate) const SUB_ONE: &[&str] = &[
    "additionalProperties",
    "additionalItems",
    "items",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];
pub(crate) const SUB_MAP: &[&str] =
    &["properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"];
pub(crate) const SUB_ARR: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];

/// The keys where the rewrites before building (`complement.rs`, `conditional.rs`) keep the
/// subschemas they replace: each is still reached by `$ref` from the rewritten schema, so it is
/// walked as a subschema (and rewritten in turn). The branches of a rewritten `oneOf`:
pub(crate) const MOVED_ONE_OF: &str = "x-dwac-oneOf";
/// The subschema of a rewritten `not`, and the condition of a rewritten `if`:
pub(crate) const MOVED_NOT: &str = "x-dwac-not";
pub(crate) const MOVED_IF: &str = "x-dwac-if";
/// The complements of recursive subschemas that rewritten `oneOf`s and `not`s need, at the root
/// (keyed by the subschema's pointer):
pub(crate) const COMPLEMENTS: &str = "x-dwac-complements";
/// The schemas of rewritten `dependentSchemas` / draft-07 `dependencies` (keyword, moved key):
pub(crate) const MOVED_DEPENDENCIES: [(&str, &str); 2] =
    [("dependentSchemas", "x-dwac-dependentSchemas"), ("dependencies", "x-dwac-dependencies")];

/// The one keyword the rewrites add that constrains a value: "some member of the object has a
/// key matching every `match` pattern, none of the `except` patterns and none of the
/// `exceptNames`, and a value satisfying the schema `value`" (the violations of
/// `patternProperties` and of `additionalProperties` beside patterns, `complement.rs`). It holds
/// for non-objects, as every object keyword does; `merge` and `validate` evaluate it.
pub(crate) const SOME_MEMBER: &str = "x-dwac-someMember";

/// The complement of an array schema's `contains` (an item that does not match it), written where
/// `maxContains` needs it (`complement::rewrite_max_contains`): the items not counted.
pub(crate) const CONTAINS_NOT: &str = "x-dwac-containsNot";

impl<'a> Doc<'a> {
    pub fn new(root: &'a Value, draft: Draft) -> Doc<'a> {
        let mut d = Doc { root, draft, base: HashMap::new(), ids: HashMap::new(), anchors: HashMap::new() };
        d.ids.insert(DEFAULT_BASE.to_string(), String::new());
        d.walk(root, String::new(), DEFAULT_BASE.to_string());
        d
    }

    fn id_keyword(&self) -> &'static str {
        if self.draft == Draft::Draft4 {
            "id"
        } else {
            "$id"
        }
    }

    fn walk(&mut self, v: &Value, ptr: String, mut base: String) {
        let Value::Object(o) = v else {
            self.base.insert(ptr, base);
            return;
        };
        if let Some(Value::String(id)) = o.get(self.id_keyword()) {
            // Draft ≤ 7: `$id` with `$ref` siblings is ignored; fragments-only ids are anchors.
            if !(self.draft != Draft::Draft2020 && o.contains_key("$ref")) {
                if let Some(anchor) = id.strip_prefix('#') {
                    let b = base.split('#').next().unwrap_or("").to_string();
                    self.anchors.insert(format!("{b}#{anchor}"), ptr.clone());
                } else {
                    base = resolve_uri(&base, id);
                    let nofrag = base.split('#').next().unwrap_or("").to_string();
                    self.ids.insert(nofrag.clone(), ptr.clone());
                    base = nofrag;
                }
            }
        }
        for key in ["$anchor", "$dynamicAnchor"] {
            if let Some(Value::String(a)) = o.get(key) {
                let b = base.split('#').next().unwrap_or("").to_string();
                self.anchors.entry(format!("{b}#{a}")).or_insert_with(|| ptr.clone());
            }
        }
        self.base.insert(ptr.clone(), base.clone());
        for (k, sub) in o {
            let kp = format!("{ptr}/{}", ptr_token(k));
            let (one, map, arr) = (
                k == MOVED_NOT || k == MOVED_IF || k == CONTAINS_NOT,
                MOVED_DEPENDENCIES.iter().any(|(_, m)| m == k) || k == COMPLEMENTS,
                k == MOVED_ONE_OF,
            );
            if one || SUB_ONE.contains(&k.as_str()) && !(k == "items" && sub.is_array()) {
                self.walk(sub, kp.clone(), base.clone());
            }
            if map || SUB_MAP.contains(&k.as_str()) {
                if let Value::Object(m) = sub {
                    for (name, s) in m {
                        self.walk(s, format!("{kp}/{}", ptr_token(name)), base.clone());
                    }
                }
            }
            if k == SOME_MEMBER {
                if let Some(value) = sub.get("value") {
                    self.walk(value, format!("{kp}/value"), base.clone());
                }
            }
            if arr || SUB_ARR.contains(&k.as_str()) {
                if let Value::Array(a) = sub {
                    for (i, s) in a.iter().enumerate() {
                        self.walk(s, format!("{kp}/{i}"), base.clone());
                    }
                }
            }
        }
    }

    /// The pointers of every subschema whose base URI is the root's (the root's own `$id`, if it
    /// has one: no `$id` below it changes where a `#/...` reference from it leads), in no
    /// particular order.
    pub fn subschemas_at_root_base(&self) -> impl Iterator<Item = &str> {
        let root = self.base.get("").cloned().unwrap_or_else(|| DEFAULT_BASE.to_string());
        self.base.iter().filter(move |(_, b)| **b == root).map(|(p, _)| p.as_str())
    }

    /// The subschema at `ptr`.
    pub fn get(&self, ptr: &str) -> Option<&'a Value> {
        self.root.pointer(ptr)
    }

    /// Resolve `$ref` found in the subschema at `from` to a pointer in this document.
    pub fn resolve_ref(&self, from: &str, reference: &str) -> Result<String, SchemaError> {
        let base = self.base.get(from).map(String::as_str).unwrap_or(DEFAULT_BASE);
        let abs = resolve_uri(base, reference);
        let (doc, frag) = match abs.split_once('#') {
            Some((d, f)) => (d.to_string(), f.to_string()),
            None => (abs.clone(), String::new()),
        };
        let Some(doc_ptr) = self.ids.get(&doc) else {
            return Err(SchemaError::new(
                "$ref",
                from,
                format!("remote reference `{reference}` (resolved to `{abs}`) is not supported: only references within the schema document"),
            ));
        };
        if frag.is_empty() {
            return Ok(doc_ptr.clone());
        }
        if frag.starts_with('/') {
            let p = format!("{doc_ptr}{}", percent_decode(&frag));
            if self.root.pointer(&p).is_some() {
                return Ok(p);
            }
            return Err(SchemaError::new("$ref", from, format!("reference `{reference}` points to nothing")));
        }
        match self.anchors.get(&format!("{doc}#{}", percent_decode(&frag))) {
            Some(p) => Ok(p.clone()),
            None => Err(SchemaError::new("$ref", from, format!("anchor in reference `{reference}` not found"))),
        }
    }
}
