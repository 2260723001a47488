//! The whole rewrite on arbitrary YAML and policies (see `checks::rewrite`).
#![no_main]

mod checks;
mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::rewrite(data));
