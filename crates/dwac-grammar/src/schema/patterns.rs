//! Instance strings against ECMA patterns, as the compiled terminals match them: the
//! validator's and the flattening's one matcher (each pattern compiled once per thread).

use std::cell::RefCell;
use std::collections::HashMap;

use super::{strings, SchemaError};

thread_local! {
    /// Compiled patterns by their Rust regex (`None`: too large).
    static PATTERNS: RefCell<HashMap<String, Option<regex::Regex>>> = RefCell::new(HashMap::new());
}

/// The anchored regex of `re`, compiled once per thread (`None` if too large).
pub(super) fn compiled(re: &str) -> Option<regex::Regex> {
    PATTERNS.with(|m| {
        m.borrow_mut()
            .entry(re.to_string())
            .or_insert_with(|| regex::RegexBuilder::new(&format!("^(?:{re})$")).size_limit(1 << 26).build().ok())
            .clone()
    })
}

/// `s` as a JSON string literal (the text the terminals match).
pub(super) fn literal_of(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// Does the string `s` match the ECMA `pattern` (unanchored), as the compiled terminals do?
pub(crate) fn matches_pattern(pattern: &str, s: &str) -> Result<bool, SchemaError> {
    let re = strings::pattern_regex(pattern).map_err(|e| SchemaError::new("pattern", "", e.to_string()))?;
    match compiled(&re) {
        Some(r) => Ok(r.is_match(&literal_of(s))),
        None => Err(SchemaError::new("pattern", "", format!("pattern `{pattern}` is too large"))),
    }
}
