//! Links the Linux (glibc) binaries as position-dependent executables.
//!
//! A position-independent executable makes the dynamic loader apply one
//! relocation per pointer in the binary's data (tens of thousands here)
//! before `main`, on every run; a rewrite of a small file is short enough
//! for that to be a visible share of it. Linked with `-no-pie`, the linker
//! resolves them once, and the loader maps the file as it is. The musl
//! release builds are static and other targets keep their defaults. See the
//! decisions page: "Why is the Linux binary not position-independent?"
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
