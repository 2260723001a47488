//! Links the Linux (glibc) binaries as position-dependent executables.
//!
//! A position-independent executable makes the dynamic loader apply one
//! relocation per pointer in the binary's data (tens of thousands here)
//! before `main`, on every run; a rewrite of a small file is short enough
//! for that to be a visible share of it. Linked with `-no-pie`, the linker
//! resolves them once, and the loader maps the file as it is. The musl
//! release builds are static and other targets keep their defaults. See the
//! decisions page: "Why is the Linux binary not position-independent?"
//!
//! `KFSCHED_LINK_ORDER`, set to a linker script, is passed to the link of
//! `kubectl-kfsched` on Linux (`-T`): `bench/code-layout.sh` writes one that
//! places the functions a profile saw run side by side. Build-script output
//! is not part of the crates' symbol names, so a build with the script has
//! the very names of the build that was profiled.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=KFSCHED_LINK_ORDER");
    // `bench/code-layout.sh` builds `bench/rewrite_only.rs` with the system
    // allocator under this cfg.
    println!("cargo:rustc-check-cfg=cfg(kfsched_system_allocator)");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    let order = std::env::var_os("KFSCHED_LINK_ORDER").filter(|v| !v.is_empty());
    if let (Some(order), "linux") = (order, os.as_str()) {
        let path = std::path::Path::new(&order);
        let Ok(path) = path.canonicalize() else {
            panic!(
                "KFSCHED_LINK_ORDER: {} is not a readable file",
                path.display()
            );
        };
        println!("cargo:rerun-if-changed={}", path.display());
        println!(
            "cargo:rustc-link-arg-bin=kubectl-kfsched=-Wl,-T,{}",
            path.display()
        );
    }
}
