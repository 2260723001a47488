#!/usr/bin/env bash
# The first `pre-commit run` in a fresh clone of a pipeline repository, hook installation
# included, both ways: the language: python hooks of pre-commit-hooks/ (pip installs the
# wheel) and the language: rust hooks of .pre-commit-hooks.yaml (pre-commit runs
# `cargo install` of kfsched, release profile, in a target directory of its own). Each
# way starts from an empty PRE_COMMIT_HOME; then a second run (environment ready) is timed.
#
#   bench/precommit.sh WHEEL_DIR           # both ways
#   WAYS=wheel bench/precommit.sh WHEEL_DIR   # only the wheel (WAYS=rust: only the source build)
#
# WHEEL_DIR holds the x86_64 wheel (scripts/release.sh --wheel --out WHEEL_DIR). The wheel
# way has no Rust toolchain on PATH and pip reads only a local index (PIP_NO_INDEX,
# PIP_FIND_LINKS: the wheel and $KFSCHED_PRECOMMIT_WHEELHOUSE's setuptools). The rust way
# uses this machine's cargo with its registry cache (CARGO_HOME), so it downloads no crate:
# a clone on a machine without that cache also spends the download. Needs
# scripts/setup-integrations.sh (pre-commit, the setuptools wheel).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# = 1 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
wheels=$(cd "$1" && pwd)
precommit=${KFSCHED_PRECOMMIT:-$root/.cache/precommit-venv/bin/pre-commit}
backend=${KFSCHED_PRECOMMIT_WHEELHOUSE:-$root/.cache/precommit-wheelhouse}
ways=${WAYS:-wheel rust}
scratch=$(mktemp -d)
trap 'chmod -R u+w "$scratch" 2>/dev/null; rm -rf "$scratch"' EXIT
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=$scratch/gitconfig
printf '[user]\n\tname = bench\n\temail = bench@kfsched.invalid\n[init]\n\tdefaultBranch = main\n' > "$GIT_CONFIG_GLOBAL"

# snapshot DIR TO: the working tree's files under DIR, committed into a new repository TO.
snapshot() {
  mkdir -p "$2"
  (cd "$root/$1" && git ls-files -z --cached --others --exclude-standard) |
    while IFS= read -r -d '' f; do
      [ -f "$root/$1/$f" ] || continue
      mkdir -p "$2/$(dirname "$f")" && cp "$root/$1/$f" "$2/$f"
    done
  git -C "$2" init -q && git -C "$2" add -A && git -C "$2" commit -q -m snapshot
  git -C "$2" rev-parse HEAD
}

now() { python3 -c 'import time; print(time.monotonic())'; }
secs() { python3 -c "print(f'{$2 - $1:.1f}')"; }

echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(python3 --version), pre-commit $("$precommit" --version | cut -d' ' -f2)"
for way in $ways; do
  case $way in
    wheel) hooks=$(snapshot pre-commit-hooks "$scratch/hooks-wheel") ;;
    rust) hooks=$(snapshot . "$scratch/hooks-rust") ;;
    *) echo "unknown way $way" >&2; exit 2 ;;
  esac
  work=$scratch/work-$way
  mkdir -p "$work/pipelines"
  cp "$root/examples/.kfsched.yaml" "$work/"
  cp "$root"/examples/pipelines/*.yaml "$work/pipelines/"
  printf 'repos:\n- repo: %s\n  rev: %s\n  hooks:\n  - id: kfsched-check\n' "$scratch/hooks-$way" "$hooks" \
    > "$work/.pre-commit-config.yaml"
  git -C "$work" init -q && git -C "$work" add -A && git -C "$work" commit -q -m pipelines
  env=(PRE_COMMIT_HOME="$scratch/home-$way" HOME="$scratch" PATH=/usr/local/bin:/usr/bin:/bin)
  if [ "$way" = wheel ]; then
    index=$scratch/index && mkdir -p "$index"
    cp "$wheels"/kfsched-*x86_64*.whl "$backend"/*.whl "$index/"
    env+=(PIP_NO_INDEX=1 PIP_FIND_LINKS="$index" PIP_DISABLE_PIP_VERSION_CHECK=1)
    ! env "${env[@]}" sh -c 'command -v cargo' >/dev/null || { echo "cargo on PATH" >&2; exit 1; }
  else
    cargo_bin=$(dirname "$(command -v cargo)")
    env+=(PATH="$cargo_bin:/usr/local/bin:/usr/bin:/bin" CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
          RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}" CARGO_NET_OFFLINE=true)
  fi
  for run in first second; do
    t0=$(now)
    code=0
    (cd "$work" && env -u CARGO_TARGET_DIR "${env[@]}" "$precommit" run kfsched-check --all-files) \
      > "$scratch/$way-$run.log" 2>&1 || code=$?
    t1=$(now)
    [ "$code" = 1 ] || { echo "$way $run run: exit $code (want 1: the diff)" >&2; cat "$scratch/$way-$run.log" >&2; exit 1; }
    echo "$way: $run run $(secs "$t0" "$t1") s"
  done
done
