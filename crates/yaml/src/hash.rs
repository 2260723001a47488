//! The hash maps of the YAML engine and the library above it.
//!
//! They are std's, keyed by std's random state, except in fuzzing builds
//! (`--cfg fuzzing`, which cargo-fuzz sets): there a random key would make
//! each process probe its tables differently, so two runs of a fuzz target
//! with the same seed would cover different code. Fuzzing builds use fixed
//! keys instead, so that a seed reproduces a run.

#[cfg(not(fuzzing))]
pub type State = std::collections::hash_map::RandomState;
#[cfg(fuzzing)]
pub type State = std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>;

/// A `HashMap` with [`State`]; make one with `HashMap::default()`.
pub type HashMap<K, V> = std::collections::HashMap<K, V, State>;
/// A `HashSet` with [`State`]; make one with `HashSet::default()`.
pub type HashSet<T> = std::collections::HashSet<T, State>;
