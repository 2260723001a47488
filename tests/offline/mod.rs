//! The offline rewriter: golden files, properties, hand-written inputs,
//! bad input and the command line.

mod bad_input;
mod check;
mod cli;
mod golden;
mod properties;
