//! The offline rewriter: golden files, properties, hand-written inputs,
//! bad input, the command line and the policy's warnings; what the first
//! hour of a new user meets (no silent no-ops, `init`, messages, help
//! texts that match the guide, errors under KRM functions in the user's
//! policy file).

mod bad_input;
mod check;
mod cli;
mod export;
mod golden;
mod help;
mod init;
mod krm_source;
mod machine;
mod messages;
mod no_ops;
mod pipeline_versions;
mod pod_spec_fields;
mod properties;
mod warnings;
