#!/usr/bin/env bash
# How much of a short command's peak RSS is the binary's code laid out as the linker
# leaves it: the release build against the same build with every function the benchmark's
# commands run placed side by side (lld's --symbol-ordering-file, the functions listed from
# callgrind runs of those commands). Prints each command's peak RSS (the largest of 3 runs
# alone), the binary's code and constants resident at exit, and the ratio; the parser's
# floor on the KFP v1 file for the memory limit of `BENCH=formats bench/rewrite.sh`.
#
#   bench/code-layout.sh
#
# The ordered binary is measured on the commands it was profiled on: this is the best case
# of such a layout, the bound on what it can save. Builds into .cache/bench/layout (its own
# target directory: a release build, then a second link). Needs valgrind and gdb; x86_64
# Linux with the default linker (lld).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
for tool in valgrind gdb; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed" >&2; exit 2; }
done
dir=$root/.cache/bench/layout
mkdir -p "$dir"
export CARGO_TARGET_DIR=$dir/target
bin=$CARGO_TARGET_DIR/release/kubectl-kfsched

# link FILE: the binary linked with FILE as its symbol order. Both links take the same
# arguments but the file's name, so the first link's symbol names are the second's.
link() {
  cargo rustc --release -q --bin kubectl-kfsched -- \
    -C "link-arg=-Wl,--symbol-ordering-file=$1" -C link-arg=-Wl,--no-warn-symbol-ordering
}
cargo build --release -q --example parse-floor
: >"$dir/none.txt"
link "$dir/none.txt"
cp "$bin" "$dir/default"

v1=testdata/golden/v1/large_300 v2=testdata/golden/v2/large_300 pv=testdata/golden/pv/large_300
work=testdata/cases/kubectl-get-all
commands=(
  "--version"
  "validate -p $v1/policy.yaml"
  "rewrite -p $v1/policy.yaml $v1/plain.yaml"
  "rewrite -p $v2/policy.yaml $v2/plain.yaml"
  "rewrite -p $pv/policy.yaml $pv/plain.yaml"
  "rewrite -p $work/policy.yaml $work/input.yaml"
)
rm -f "$dir"/callgrind.*
i=0
for c in "${commands[@]}"; do
  i=$((i + 1))
  # shellcheck disable=SC2086 # each command is its words
  valgrind --tool=callgrind --demangle=no --callgrind-out-file="$dir/callgrind.$i" "$dir/default" $c >/dev/null 2>&1
done
python3 - "$dir" <<'PY'
import glob, re, subprocess, sys
d = sys.argv[1]
ran = set()
for f in glob.glob(f"{d}/callgrind.*"):
    for line in open(f):
        m = re.match(r"^c?fn=\(\d+\) (.*)$", line.rstrip("\n"))
        if m:
            ran.add(m.group(1))
nm = subprocess.run(["nm", "-S", "--defined-only", f"{d}/default"], capture_output=True, text=True, check=True).stdout
size = {}
for line in nm.splitlines():
    p = line.split()
    if len(p) == 4 and p[2] in "tTwW":
        size[p[3]] = int(p[1], 16)
hit = sorted(n for n in ran if n in size)
open(f"{d}/order.txt", "w").write("\n".join(hit) + "\n")
text = sum(v for v in size.values())
print(f"functions the commands run: {len(hit)}, {sum(size[n] for n in hit) / 1e6:.2f} MB of the binary's {text / 1e6:.1f} MB of code")
PY
link "$dir/order.txt"
cp "$bin" "$dir/ordered"

python3 - "$dir" "$CARGO_TARGET_DIR/release/examples/parse-floor" "${commands[@]}" <<'PY'
import os, re, shlex, subprocess, sys
d, floor, commands = sys.argv[1], sys.argv[2], sys.argv[3:]

def peak(cmd):
    """The largest peak RSS of 3 runs alone (KB)."""
    out = []
    for _ in range(3):
        r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if r.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {r.stderr.decode()[-2000:]}")
        out.append(int(r.stderr.decode().strip().splitlines()[-1]))
    return max(out)

def resident(cmd):
    """The binary's own pages resident at exit_group (KB): code (r-xp), constants (r--p)."""
    script = (
        "import gdb\npid = gdb.selected_inferior().pid\nexe = os.readlink(f'/proc/{pid}/exe')\n"
        "cur = None\nrss = {}\nfor l in open(f'/proc/{pid}/smaps'):\n    p = l.split()\n"
        "    if '-' in p[0] and not p[0].endswith(':'):\n        cur = p[1] if len(p) > 5 and p[5] == exe else None\n"
        "    elif p[0] == 'Rss:' and cur:\n        rss[cur] = rss.get(cur, 0) + int(p[1])\n"
        "print('RESIDENT', rss.get('r-xp', 0), rss.get('r--p', 0))\n")
    args = " ".join(shlex.quote(a) for a in cmd[1:])
    r = subprocess.run(["gdb", "-q", "-batch", "-ex", "catch syscall exit_group",
                        "-ex", f"run {args} >/dev/null 2>&1", "-ex", "python import os",
                        "-ex", f"python\n{script}", cmd[0]], capture_output=True, text=True)
    m = re.search(r"RESIDENT (\d+) (\d+)", r.stdout)
    if not m:
        raise SystemExit(f"gdb could not read {cmd[0]}'s pages at exit: {r.stdout[-1000:]}{r.stderr[-1000:]}")
    return int(m.group(1)), int(m.group(2))

print(f"\n  {'command':<44} {'default':>9} {'ordered':>9} {'ratio':>6}   code+constants resident: default, ordered")
for c in commands:
    words = c.split()
    a, b = peak([f"{d}/default"] + words), peak([f"{d}/ordered"] + words)
    (ac, ar), (bc, br) = resident([f"{d}/default"] + words), resident([f"{d}/ordered"] + words)
    # `rewrite golden/v1/large_300/plain.yaml`: the command and its input, not the policy.
    label = " ".join([words[0]] + [w.split("testdata/")[-1] for w in words[3:]])
    print(f"  {label[:44]:<44} {a / 1024:7.1f}MB {b / 1024:7.1f}MB {b / a:5.2f}x   "
          f"{ac / 1024:.1f}+{ar / 1024:.1f} MB, {bc / 1024:.1f}+{br / 1024:.1f} MB")
v1 = "testdata/golden/v1/large_300/plain.yaml"
f = peak([floor, v1])
print(f"\n  parse-floor on the KFP v1 file: {f / 1024:.1f} MB; the limit (+ 2x the input): "
      f"{(f + 2 * os.path.getsize(v1) / 1024) / 1024:.1f} MB")
PY
