#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ on the seed corpus (fuzz/seed.sh) and the committed
# regressions. A crash fails the run: the failing input is copied into
# fuzz/regressions/<target>/ (which `cargo test --test fuzz_regressions` replays) and the
# script says how to reproduce it.
#
#   scripts/fuzz.sh                              # every target, fixed seed and run count (CI)
#   KFSCHED_FUZZ_SEED=random KFSCHED_FUZZ_SECONDS=1800 scripts/fuzz.sh
#                                                # fresh seeds, longer (the scheduled workflow)
#   scripts/fuzz.sh rewrite quick                # some targets
#
# With a numeric KFSCHED_FUZZ_SEED (default 1) each target runs a fixed number of inputs
# (the runs table below, about a minute each here) from a fresh copy of the seed corpus, so
# the same code gives the same result on every run and a failure points at the change under
# test (libFuzzer's corpus reload is off, address randomization too, and the library's hash
# maps have fixed keys in fuzzing builds: kfsched_yaml::hash); KFSCHED_FUZZ_SECONDS
# (default 60) then only caps a target at ten times that, and the script says so if the cap
# cut a run short. With KFSCHED_FUZZ_SEED=random libFuzzer picks a
# seed per target (its log names it) and each target runs for KFSCHED_FUZZ_SECONDS on
# fuzz/corpus/, which grows from run to run.
#
# cargo-fuzz (CARGO_FUZZ_VERSION of versions.env) is installed with `cargo install --locked`
# into $KFSCHED_FUZZ_TOOLS (default .cache/fuzz-tools) when missing; the targets build with
# the toolchain $KFSCHED_FUZZ_TOOLCHAIN (default versions.env's FUZZ_TOOLCHAIN; rustup
# installs it when missing), into fuzz/target. Also KFSCHED_FUZZ_RSS_MB (default 4096,
# libFuzzer's -rss_limit_mb), KFSCHED_FUZZ_MAX_LEN (libFuzzer's -max_len: the largest input
# it makes; default libFuzzer's own, from the corpus) and KFSCHED_FUZZ_SANITIZER (default
# address; or none).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# shellcheck source=SCRIPTDIR/../versions.env
. "$root/versions.env"
seconds=${KFSCHED_FUZZ_SECONDS:-60}
seed=${KFSCHED_FUZZ_SEED:-1}
rss=${KFSCHED_FUZZ_RSS_MB:-4096}
sanitizer=${KFSCHED_FUZZ_SANITIZER:-address}
toolchain=${KFSCHED_FUZZ_TOOLCHAIN:-$FUZZ_TOOLCHAIN}
tools=${KFSCHED_FUZZ_TOOLS:-$root/.cache/fuzz-tools}
# libFuzzer reads -max_total_time=0 as "no limit".
case $seconds in
  '' | *[!0-9]* | 0) echo "error: KFSCHED_FUZZ_SECONDS must be a whole number of seconds above 0, got '$seconds'" >&2; exit 2 ;;
esac
case $seed in
  random) ;;
  '' | *[!0-9]*) echo "error: KFSCHED_FUZZ_SEED must be a whole number or 'random', got '$seed'" >&2; exit 2 ;;
esac
# Inputs each target runs with a fixed seed: about a minute each on the 2-core test machine.
declare -A runs=([editor]=80000 [emit_roundtrip]=25000 [krm]=12000 [quick]=120000 [rewrite]=7000)
max_len=()
if [ -n "${KFSCHED_FUZZ_MAX_LEN:-}" ]; then
  case $KFSCHED_FUZZ_MAX_LEN in
    *[!0-9]* | 0) echo "error: KFSCHED_FUZZ_MAX_LEN must be a whole number of bytes above 0, got '$KFSCHED_FUZZ_MAX_LEN'" >&2; exit 2 ;;
  esac
  max_len=(-max_len="$KFSCHED_FUZZ_MAX_LEN")
fi

if ! rustup run "$toolchain" rustc --version >/dev/null 2>&1; then
  rustup toolchain install "$toolchain" --profile minimal
fi
fuzz_bin=$tools/bin/cargo-fuzz
if [ ! -x "$fuzz_bin" ] || ! "$fuzz_bin" --version 2>/dev/null | grep -qx "cargo-fuzz $CARGO_FUZZ_VERSION"; then
  cargo install --locked --quiet --root "$tools" cargo-fuzz --version "$CARGO_FUZZ_VERSION"
fi
export PATH="$tools/bin:$PATH"

all=$(cargo +"$toolchain" fuzz list --fuzz-dir fuzz)
if [ $# -gt 0 ]; then
  targets=("$@")
  for t in "${targets[@]}"; do
    grep -qx "$t" <<<"$all" || { echo "error: no fuzz target '$t' (targets: ${all//$'\n'/ })" >&2; exit 2; }
  done
else
  mapfile -t targets <<<"$all"
fi

# With a fixed seed the target runs without address randomization: coverage is
# keyed by code addresses, and the same addresses make a seed repeat a run.
norandom=(env)
if [ "$seed" != random ]; then
  if setarch -R true 2>/dev/null; then
    norandom=(setarch -R)
  else
    echo "warning: setarch -R is not available here: runs with the same seed may differ" >&2
  fi
fi
failed=()
for t in "${targets[@]}"; do
  artifacts=fuzz/artifacts/$t
  rm -rf "$artifacts"
  mkdir -p "$artifacts" "fuzz/regressions/$t"
  if [ "$seed" = random ]; then
    printf '== fuzz %s for %ss, fresh seed (%s)\n' "$t" "$seconds" "$(date +%T)"
    corpus=fuzz/corpus/$t
    fuzz/seed.sh >/dev/null
    bound=(-max_total_time="$seconds")
  else
    n=${runs[$t]:?"no run count for fuzz target $t in scripts/fuzz.sh"}
    printf '== fuzz %s for %s runs, seed %s (%s)\n' "$t" "$n" "$seed" "$(date +%T)"
    # A fresh corpus: what earlier runs added must not change this one.
    corpus=$artifacts/corpus
    fuzz/seed.sh "$artifacts/seeds" >/dev/null
    mv "$artifacts/seeds/$t" "$corpus"
    rm -rf "$artifacts/seeds"
    # -reload=0: the corpus is not re-read on a timer.
    bound=(-seed="$seed" -runs="$n" -reload=0 -max_total_time="$((seconds * 10))")
  fi
  # The corpus is written to; the regressions are only read (run first).
  if "${norandom[@]}" cargo +"$toolchain" fuzz run --fuzz-dir fuzz --sanitizer "$sanitizer" "$t" \
    "$corpus" "fuzz/regressions/$t" -- \
    "${bound[@]}" -rss_limit_mb="$rss" ${max_len[@]+"${max_len[@]}"} -print_final_stats=1 \
    >"fuzz/artifacts/$t.log" 2>&1; then
    done_runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "fuzz/artifacts/$t.log")
    echo "  stat::number_of_executed_units: ${done_runs:-?}"
    if [ "$seed" != random ] && [ "${done_runs:-0}" -lt "$n" ]; then
      echo "  warning: the time cap stopped $t after ${done_runs:-0} of $n runs: this result may not repeat" >&2
    fi
    continue
  fi
  tail -n 40 "fuzz/artifacts/$t.log" >&2
  kept=()
  for input in "$artifacts"/crash-* "$artifacts"/timeout-* "$artifacts"/oom-* "$artifacts"/leak-*; do
    [ -f "$input" ] || continue
    dest=fuzz/regressions/$t/$(basename "$input")
    # An input already kept under another name is not copied twice.
    if ! cmp -s "$input" "$dest" && ! find "fuzz/regressions/$t" -type f -exec cmp -s "$input" {} \; -print | grep -q .; then
      cp "$input" "$dest"
    fi
    kept+=("$dest")
  done
  if [ ${#kept[@]} -eq 0 ]; then
    echo "error: fuzz target $t failed without a crashing input (see fuzz/artifacts/$t.log)" >&2
  else
    for k in "${kept[@]}"; do
      echo "error: fuzz target $t crashed; the input is kept as $k" >&2
      echo "  reproduce: cargo +$toolchain fuzz run --fuzz-dir fuzz $t $k" >&2
    done
    echo "  then fix it and commit the input: cargo test --test fuzz_regressions replays it" >&2
  fi
  failed+=("$t")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "error: fuzzing failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzzing passed: ${targets[*]}"
