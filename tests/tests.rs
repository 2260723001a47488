//! All integration tests, compiled into one binary (ripgrep's layout).
//! Tests that need the live control plane are `#[ignore]`d and run by
//! `scripts/test.sh` (which starts it) with `--include-ignored`.

mod support;

mod admission;
mod check;
mod integrations;
mod node;
mod offline;
