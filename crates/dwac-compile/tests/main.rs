//! dwac-compile's tests, one binary: JSON string length counters, the lexing contract's
//! vectors, and the longest-match analysis.

mod length_counters;
mod lexing_spec;
mod munch_analysis;
