//! dwac-capi's tests, one binary: a C program against the Rust runtime, the mask counters
//! through the C ABI, and the generated header's freshness.

mod c_program;
mod counters;
mod header;
