//! The floor for `bench/rewrite.py`: parse a file's YAML events with
//! saphyr-parser and do nothing else (no tree, no output).
fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: parse-floor FILE");
        std::process::exit(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(2);
        }
    };
    if !kfsched_yaml::tree::check_syntax(&text) {
        eprintln!("{path}: invalid YAML");
        std::process::exit(1);
    }
}
