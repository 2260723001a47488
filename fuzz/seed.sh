#!/usr/bin/env bash
# Seeds the fuzz corpora from the test fixtures, into fuzz/corpus (not committed) or the
# directory given. Each seed is a few bytes of choices (policy, value, node) followed by a
# real file. The same fixtures give the same seeds.
#
#   fuzz/seed.sh [DIR]
set -euo pipefail
out=$(realpath -m "${1:-$(dirname "$0")/corpus}")
cd "$(dirname "$0")"
for t in rewrite editor krm; do mkdir -p "$out/$t"; done
mkdir -p "$out"/emit_roundtrip
i=0
for f in ../testdata/cases/*/input.yaml ../testdata/bad/*/input.yaml ../testdata/golden/corpus-v*/*/plain.yaml ../testdata/golden/v1/{resource_ops,exit_handler}/plain.yaml ../examples/.kfsched.yaml; do
  i=$((i + 1))
  { printf '%08x%08x' "$i" "$((i * 7919))"; cat "$f"; } > "$out/rewrite/seed-$i"
  { printf '%016x' "$((i * 104729))"; cat "$f"; } > "$out/editor/seed-$i"
  # The same documents as the items of a ResourceList, as kustomize and kpt send them.
  {
    printf '%08x%08x' "$i" "$((i * 7919))"
    printf 'apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n'
    awk 'BEGIN { first = 1 } /^---/ { first = 1; next } /^\.\.\./ { next }
      { if (first) { print "- " $0; first = 0 } else { print "  " $0 } }' "$f"
  } > "$out/krm/seed-$i"
done
mkdir -p "$out"/quick
for f in ../testdata/golden/v2/*/plain.yaml ../testdata/golden/corpus-v2/*/plain.yaml ../testdata/golden/v1/*/plain.yaml ../testdata/golden/corpus-v1/*/plain.yaml ../fuzz/regressions/quick/*; do
  if [ "$(wc -c < "$f")" -lt 40000 ]; then
    cp "$f" "$out/quick/$(basename "$(dirname "$(dirname "$f")")")-$(basename "$(dirname "$f")")-$(basename "$f")"
  fi
done
# Arbitrary bytes that are the same on every run: the hex of a hash.
for j in $(seq 1 40); do printf 'seed-%d' "$j" | sha512sum | head -c 64 > "$out/emit_roundtrip/seed-$j"; done
echo "seeded $i files"
