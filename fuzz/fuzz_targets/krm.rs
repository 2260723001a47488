//! The KRM function on arbitrary ResourceLists and policies (see `checks::krm`).
#![no_main]

mod checks;
mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::krm(data));
