//! A measurement for `bench/rewrite.py` (BENCH=formats): kfsched's rewrite
//! as a library call in a program that does nothing else (no command line
//! parser, no cluster client linked in). It writes what `kubectl-kfsched
//! rewrite -p POLICY FILE` writes to standard output, so the peak RSS of the
//! rewrite itself can be told apart from the plugin binary's.
use std::io::Write;

/// The plugin binary's allocator, so that the two differ only in the code
/// linked in. `bench/code-layout.sh` builds it with
/// `--cfg kfsched_system_allocator` as well, to measure the leanest program
/// this rewrite makes.
#[cfg(not(kfsched_system_allocator))]
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [policy, file] = args.as_slice() else {
        eprintln!("usage: rewrite-only POLICY FILE");
        std::process::exit(2);
    };
    let Ok(policy) = kfsched::policy::Policy::load(std::path::Path::new(policy)) else {
        eprintln!("{policy}: invalid policy");
        std::process::exit(2);
    };
    let bytes = match std::fs::read(file) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{file}: {e}");
            std::process::exit(2);
        }
    };
    let input = kfsched::outcome::Input {
        file: file.clone(),
        bytes,
    };
    let opts = kfsched::outcome::Options::default();
    let mut results = kfsched::rewrite::process_all(std::slice::from_ref(&input), &policy, &opts);
    let Some(Ok(outcome)) = results.pop() else {
        eprintln!("{file}: not rewritten");
        std::process::exit(1);
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let written = match &outcome.output {
        Some(patch) => patch.write(&input.bytes, &mut out),
        None => out.write_all(&input.bytes),
    };
    if written.and_then(|()| out.flush()).is_err() {
        std::process::exit(2);
    }
}
