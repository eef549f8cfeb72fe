//! "Some member": the constraint the complements of `patternProperties` and of
//! `additionalProperties` beside patterns are written in ([`SOME_MEMBER`]).

use serde_json::Value;

use super::super::doc::SOME_MEMBER;
use super::super::patterns::matches_pattern;
use super::super::SchemaError;
use super::Part;

/// An object has a member whose key matches every pattern of `matches`, none of `excepts` and
/// is none of `names`, and whose value satisfies `value`.
#[derive(Clone, Debug)]
pub(crate) struct SomeMember {
    /// Where the keyword is.
    pub ptr: String,
    /// ECMA patterns the key matches (unanchored, as `patternProperties`).
    pub matches: Vec<String>,
    /// ECMA patterns the key does not match.
    pub excepts: Vec<String>,
    /// Keys it is not.
    pub names: Vec<String>,
    /// The value's schema.
    pub value: Part,
}

impl SomeMember {
    /// The keyword of the schema at `ptr`, if it has one.
    pub fn of(ptr: &str, o: &serde_json::Map<String, Value>) -> Result<Option<SomeMember>, SchemaError> {
        let Some(v) = o.get(SOME_MEMBER) else { return Ok(None) };
        let at = format!("{ptr}/{SOME_MEMBER}");
        let bad = || SchemaError::new(SOME_MEMBER, &at, "malformed internal keyword");
        let strings = |k: &str| -> Result<Vec<String>, SchemaError> {
            match v.get(k) {
                None => Ok(Vec::new()),
                Some(Value::Array(a)) => a.iter().map(|x| x.as_str().map(str::to_string).ok_or_else(bad)).collect(),
                Some(_) => Err(bad()),
            }
        };
        if v.get("value").is_none() {
            return Err(bad());
        }
        Ok(Some(SomeMember {
            matches: strings("match")?,
            excepts: strings("except")?,
            names: strings("exceptNames")?,
            value: Part::full(format!("{at}/value")),
            ptr: at,
        }))
    }

    /// Whether the key `k` is one the member may have.
    pub fn key_fits(&self, k: &str) -> Result<bool, SchemaError> {
        if self.names.iter().any(|n| n == k) {
            return Ok(false);
        }
        for p in &self.matches {
            if !matches_pattern(p, k)? {
                return Ok(false);
            }
        }
        for p in &self.excepts {
            if matches_pattern(p, k)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}
