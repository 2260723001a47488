//! The offline rewriter: golden files, properties, hand-written inputs,
//! bad input, the command line and the policy's warnings.

mod bad_input;
mod check;
mod cli;
mod export;
mod golden;
mod machine;
mod pipeline_versions;
mod properties;
mod warnings;
