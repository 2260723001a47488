//! The editor on arbitrary YAML (see `checks::editor`).
#![no_main]

mod checks;
mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::editor(data));
