//! The quick syntax check accepts only valid YAML (see `checks::quick`).
#![no_main]

mod checks;
mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::quick(data));
