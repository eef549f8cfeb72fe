//! Numeric constraints (bounds, multipleOf) compiled to regexes over JSON number lexemes.
