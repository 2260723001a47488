#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ for a bounded time on the seed corpus (fuzz/seed.sh)
# and the committed regressions. A crash fails the run: the failing input is copied into
# fuzz/regressions/<target>/ (which `cargo test --test fuzz_regressions` replays) and the
# script says how to reproduce it.
#
#   scripts/fuzz.sh                              # every target, KFSCHED_FUZZ_SECONDS (60) each
#   KFSCHED_FUZZ_SECONDS=1800 scripts/fuzz.sh    # longer (the scheduled workflow)
#   scripts/fuzz.sh rewrite quick                # some targets
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
rss=${KFSCHED_FUZZ_RSS_MB:-4096}
sanitizer=${KFSCHED_FUZZ_SANITIZER:-address}
toolchain=${KFSCHED_FUZZ_TOOLCHAIN:-$FUZZ_TOOLCHAIN}
tools=${KFSCHED_FUZZ_TOOLS:-$root/.cache/fuzz-tools}
# libFuzzer reads -max_total_time=0 as "no limit".
case $seconds in
  '' | *[!0-9]* | 0) echo "error: KFSCHED_FUZZ_SECONDS must be a whole number of seconds above 0, got '$seconds'" >&2; exit 2 ;;
esac
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

fuzz/seed.sh >/dev/null
failed=()
for t in "${targets[@]}"; do
  printf '== fuzz %s for %ss (%s)\n' "$t" "$seconds" "$(date +%T)"
  artifacts=fuzz/artifacts/$t
  rm -rf "$artifacts"
  mkdir -p "$artifacts" "fuzz/regressions/$t"
  # The seed corpus is written to; the regressions are only read (run first).
  if cargo +"$toolchain" fuzz run --fuzz-dir fuzz --sanitizer "$sanitizer" "$t" \
    "fuzz/corpus/$t" "fuzz/regressions/$t" -- \
    -max_total_time="$seconds" -rss_limit_mb="$rss" ${max_len[@]+"${max_len[@]}"} -print_final_stats=1 \
    >"fuzz/artifacts/$t.log" 2>&1; then
    grep -E '^stat::number_of_executed_units' "fuzz/artifacts/$t.log" | sed "s/^/  /" || true
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
