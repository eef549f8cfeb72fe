//! String constraints (pattern, format, length, literals) compiled to regexes over JSON string lexemes.
