//! `export admission` on the real API server: the exported policies are
//! applied with kubectl as users apply them, and pods built as Argo, KFP v2
//! and kfp 1.8 build them are admitted through them (`dryRun=All`).
//!
//! Every test here is `#[ignore]`d and needs the control plane that
//! `scripts/cluster.sh start` runs; each binds its policies to a namespace
//! of its own, so they run side by side.

mod agreement;
mod apply;
mod audit;
mod cost;
mod drivers;
mod harness;
mod kfp;
mod listing;
mod nodes;
mod pod_spec_fields;
mod reading;
mod robustness;
mod shape;
mod workflows;
