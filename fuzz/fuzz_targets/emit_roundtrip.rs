//! Every renderer's text parses back to its value (see `checks::emit_roundtrip`).
#![no_main]

mod checks;
mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::emit_roundtrip(data));
