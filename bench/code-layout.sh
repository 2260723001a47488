#!/usr/bin/env bash
# How much of a short command's peak RSS is the binary's code laid out as the linker
# leaves it, and where the rest of it is.
#
#   bench/code-layout.sh
#
# 1. Builds the release binary (`default`).
# 2. Runs a training set of commands on small files under callgrind and writes a linker
#    script that places every function they ran side by side, in one `.text.hot` output
#    section, each function's section named exactly.
# 3. Links the same build again with that script (`ordered`): build.rs passes
#    KFSCHED_LINK_ORDER to the link as `-T`, and build-script output is not part of any
#    symbol name, so the second link has the first one's names. The script stops if fewer
#    than 95 % of the listed functions land in `.text.hot`.
# 4. Measures the benchmark's commands on the large files, which are not in the training
#    set: each binary's peak RSS (the largest of 3 runs alone), then, for the KFP v1
#    rewrite, every resident page at exit_group (gdb, /proc/PID/pagemap) by what holds it:
#    the binary's sections, the heap, the C library and loader, the stack.
# 5. Does the same for the leanest program this library's rewrite makes: `rewrite-only`
#    (bench/rewrite_only.rs) built with the system allocator (`--cfg
#    kfsched_system_allocator`) and linked like the plugin (`-no-pie`), then linked again
#    for each measured rewrite with the functions that very run runs packed. Each one's
#    peak RSS is set against the floor's and the limit (the floor plus twice the input),
#    and for the 300-entry files what the packed program holds besides its heap against
#    what the floor holds. One more link is packed by a profile of other inputs (every
#    golden and case file but the measured ones): a layout a release build could ship.
# 6. Builds the plugin itself with the system allocator, then links it again with the layout
#    trained like the last one (its `rewrite` of the other files), and measures both against
#    the shipped build: the closest the plugin comes.
#
# Builds into .cache/bench/layout (its own target directories: a release build, then
# another link for each layout). Needs valgrind and gdb; x86_64 Linux.
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

env -u KFSCHED_LINK_ORDER cargo build --release -q --bin kubectl-kfsched
cargo build --release -q --example parse-floor
cp "$bin" "$dir/default"

# write_order DIR BINARY RUNS: from the callgrind files DIR/RUNS.*, the functions they
# ran in the order first run, as DIR/RUNS-order.txt and a linker script placing each
# one's section in `.text.hot`, DIR/RUNS-order.ld.
write_order() {
python3 - "$1" "$2" "$3" <<'PY'
import glob, re, subprocess, sys
d, exe, runs = sys.argv[1], sys.argv[2], sys.argv[3]
ran, seen = [], set()
for f in sorted(glob.glob(f"{d}/{runs}.*")):
    for line in open(f):
        m = re.match(r"^c?fn=\(\d+\) (.*)$", line.rstrip("\n"))
        if m and m.group(1) not in seen:
            seen.add(m.group(1))
            ran.append(m.group(1))
nm = subprocess.run(["nm", "-S", "--defined-only", exe], capture_output=True, text=True, check=True).stdout
size = {}
for line in nm.splitlines():
    p = line.split()
    if len(p) == 4 and p[2] in "tTwW":
        size[p[3]] = int(p[1], 16)
hit = [n for n in ran if n in size]
open(f"{d}/{runs}-order.txt", "w").write("\n".join(hit) + "\n")
with open(f"{d}/{runs}-order.ld", "w") as f:
    f.write("SECTIONS\n{\n  .text.hot : {\n")
    # Cold functions (`#[cold]`, the slow paths of growth and initialisation) are in
    # .text.unlikely.NAME, constructors in .text.startup.NAME.
    f.writelines(f"    *(.text.{n} .text.unlikely.{n} .text.startup.{n})\n" for n in hit)
    f.write("  }\n}\nINSERT BEFORE .text;\n")
print(f"{runs}: the functions run, {len(hit)}, {sum(size[n] for n in hit) / 1e6:.2f} MB "
      f"of the binary's {sum(size.values()) / 1e6:.1f} MB of code")
PY
}

# The training set: every offline command's path, on small files.
g=testdata/golden
training=(
  "--version"
  "validate -p $g/corpus-v1/p01_basic_train/policy.yaml"
  "rewrite -p $g/corpus-v1/p01_basic_train/policy.yaml $g/corpus-v1/p01_basic_train/plain.yaml"
  "rewrite -p $g/corpus-v2/p01_simple_python/policy.yaml $g/corpus-v2/p01_simple_python/plain.yaml"
  "rewrite -p $g/pv/basic/policy.yaml $g/pv/basic/plain.yaml"
  "rewrite -p $g/v1/reused_components_workflowtemplate/policy.yaml $g/v1/reused_components_workflowtemplate/plain.yaml"
  "rewrite -p testdata/cases/deployment-affinity-and-two-terms/policy.yaml testdata/cases/deployment-affinity-and-two-terms/input.yaml"
  "rewrite --diff -p $g/corpus-v2/p01_simple_python/policy.yaml $g/corpus-v2/p01_simple_python/plain.yaml"
)
rm -f "$dir"/callgrind.*
i=0
for c in "${training[@]}"; do
  i=$((i + 1))
  # shellcheck disable=SC2086 # each command is its words
  valgrind --tool=callgrind --demangle=no --callgrind-out-file="$dir/callgrind.$i" "$dir/default" $c >/dev/null 2>&1 \
    || { echo "callgrind: kubectl-kfsched $c failed" >&2; exit 1; }
done

write_order "$dir" "$dir/default" callgrind
KFSCHED_LINK_ORDER=$dir/callgrind-order.ld cargo build --release -q --bin kubectl-kfsched
cp "$bin" "$dir/ordered"

v1=$g/v1/large_300 v2=$g/v2/large_300 pv=$g/pv/large_300 work=testdata/cases/kubectl-get-all
commands=(
  "--version"
  "validate -p $v1/policy.yaml"
  "rewrite -p $v1/policy.yaml $v1/plain.yaml"
  "rewrite -p $v2/policy.yaml $v2/plain.yaml"
  "rewrite -p $pv/policy.yaml $pv/plain.yaml"
  "rewrite -p $work/policy.yaml $work/input.yaml"
)

# The rewrite alone (step 5). Each measured rewrite gets a link of its own, packed by a
# profile of that very run: the tightest layout of the code it runs.
lib=$dir/lib
mkdir -p "$lib"
rewrite_only() {
  RUSTFLAGS="--cfg kfsched_system_allocator" CARGO_TARGET_DIR=$lib/target \
    cargo rustc --release -q --example rewrite-only -- -C link-arg=-no-pie "$@"
}
rewrite_only
cp "$lib/target/release/examples/rewrite-only" "$lib/default"
i=0
for c in "${commands[@]}"; do
  [[ $c == "rewrite -p "* ]] || continue
  i=$((i + 1))
  rm -f "$lib/run$i".*
  # shellcheck disable=SC2086 # the policy and the file
  valgrind --tool=callgrind --demangle=no --callgrind-out-file="$lib/run$i.1" "$lib/default" ${c#rewrite -p } >/dev/null 2>&1 \
    || { echo "callgrind: rewrite-only ${c#rewrite -p } failed" >&2; exit 1; }
  write_order "$lib" "$lib/default" "run$i"
  rewrite_only -C "link-arg=-Wl,-T,$lib/run$i-order.ld"
  cp "$lib/target/release/examples/rewrite-only" "$lib/packed.$i"
done

# train_on_others DIR COMMAND...: callgrind files DIR/trained.* of COMMAND POLICY FILE for
# every golden and case file but the measured ones (a case that is refused still runs the
# reading and checking code).
train_on_others() {
  local out=$1 d f i=0
  shift
  rm -f "$out"/trained.*
  for d in $g/*/*/ testdata/cases/*/; do
    d=${d%/}
    case $d in */large_300 | "$work") continue ;; esac
    f=$d/plain.yaml
    [[ -f $f ]] || f=$d/input.yaml
    [[ -f $f && -f $d/policy.yaml ]] || continue
    i=$((i + 1))
    valgrind --tool=callgrind --demangle=no --callgrind-out-file="$out/trained.$i" "$@" "$d/policy.yaml" "$f" \
      >/dev/null 2>&1 || true
    [[ -s $out/trained.$i ]] || { echo "callgrind: $* on $f wrote no profile" >&2; exit 1; }
  done
}

# One layout for all of them, from a profile of the other files: what a release build could
# ship, a layout trained once on a fixed corpus.
train_on_others "$lib" "$lib/default"
write_order "$lib" "$lib/default" trained
rewrite_only -C "link-arg=-Wl,-T,$lib/trained-order.ld"
cp "$lib/target/release/examples/rewrite-only" "$lib/trained-on-others"

# The plugin itself with both (step 6): the system allocator, and the layout trained on the
# other files' rewrites.
plug=$dir/plugin-system
mkdir -p "$plug"
KFSCHED_LINK_ORDER='' cargo rustc --release -q --bin kubectl-kfsched -- --cfg kfsched_system_allocator
cp "$bin" "$plug/default"
train_on_others "$plug" "$plug/default" rewrite -p
write_order "$plug" "$plug/default" trained
KFSCHED_LINK_ORDER=$plug/trained-order.ld cargo rustc --release -q --bin kubectl-kfsched -- --cfg kfsched_system_allocator
cp "$bin" "$plug/trained"

python3 - "$dir" "$lib" "$CARGO_TARGET_DIR/release/examples/parse-floor" "${commands[@]}" <<'PY'
import bisect, collections, os, re, shlex, subprocess, sys
d, lib, floor, commands = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]

def sections(exe):
    """(start, end, name) of the allocated sections."""
    out = []
    for line in subprocess.run(["readelf", "-SW", exe], capture_output=True, text=True, check=True).stdout.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", line)
        if m and int(m.group(2), 16):
            out.append((int(m.group(2), 16), int(m.group(2), 16) + int(m.group(3), 16), m.group(1)))
    return sorted(out)

def check_packed(exe, order):
    """The second link must have the first one's names: the listed functions are in .text.hot."""
    hot = [s for s in sections(exe) if s[2] == ".text.hot"]
    if not hot:
        raise SystemExit(f"{exe} has no .text.hot section: the linker script was not used")
    listed = set(open(order).read().split())
    addr = {}
    for line in subprocess.run(["nm", "--defined-only", exe], capture_output=True, text=True, check=True).stdout.splitlines():
        p = line.split()
        if len(p) == 3 and p[2] in listed:
            addr[p[2]] = int(p[0], 16)
    inside = sum(1 for n in listed if n in addr and hot[0][0] <= addr[n] < hot[0][1])
    print(f"listed functions in .text.hot of {exe}: {inside} of {len(listed)}")
    if inside < 0.95 * len(listed):
        raise SystemExit("the second link's symbol names differ from the first's: the layout measures nothing")

check_packed(f"{d}/ordered", f"{d}/callgrind-order.txt")
rewrites = [c.split() for c in commands if c.startswith("rewrite -p ")]
for i in range(1, len(rewrites) + 1):
    check_packed(f"{lib}/packed.{i}", f"{lib}/run{i}-order.txt")
check_packed(f"{lib}/trained-on-others", f"{lib}/trained-order.txt")
check_packed(f"{d}/plugin-system/trained", f"{d}/plugin-system/trained-order.txt")

def peak(cmd):
    """The largest peak RSS of 3 runs alone (KB)."""
    out = []
    for _ in range(3):
        r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if r.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {r.stderr.decode()[-2000:]}")
        out.append(int(r.stderr.decode().strip().splitlines()[-1]))
    return max(out)

PAGES = r'''
import gdb, json, struct
pid = gdb.selected_inferior().pid
pm = open(f"/proc/{pid}/pagemap", "rb")
out = []
for line in open(f"/proc/{pid}/maps"):
    p = line.split()
    lo, hi = (int(x, 16) for x in p[0].split("-"))
    pm.seek((lo >> 12) * 8)
    data = pm.read(((hi - lo) >> 12) * 8)
    present = [lo + (i << 12) for i in range(len(data) // 8) if struct.unpack_from("<Q", data, i * 8)[0] >> 63]
    out.append([p[5] if len(p) > 5 else "", present])
print("PAGES " + json.dumps(out))
'''

def pages(cmd):
    """KB resident at exit_group, by what holds the pages."""
    args = " ".join(shlex.quote(a) for a in cmd[1:])
    r = subprocess.run(["gdb", "-q", "-batch", "-ex", "catch syscall exit_group",
                        "-ex", f"run {args} >/dev/null 2>&1", "-ex", f"python\n{PAGES}", cmd[0]],
                       capture_output=True, text=True)
    m = re.search(r"^PAGES (.*)$", r.stdout, re.M)
    if not m:
        raise SystemExit(f"gdb could not read {cmd[0]}'s pages at exit: {r.stdout[-1000:]}{r.stderr[-1000:]}")
    import json
    secs = sections(cmd[0])
    starts = [s[0] for s in secs]
    exe = os.path.realpath(cmd[0])
    kb = collections.Counter()
    for path, present in json.loads(m.group(1)):
        for a in present:
            if path == exe:
                i = bisect.bisect_right(starts, a + 4095) - 1
                name = secs[i][2] if i >= 0 and a < secs[i][1] else "other"
                kb["code, " + name if name.startswith(".text") else "constants and data"] += 4
            elif path == "" or path == "[heap]":
                kb["heap and other anonymous memory"] += 4
            elif path == "[stack]":
                kb["stack"] += 4
            else:
                kb["C library, loader, vdso"] += 4
    return kb

print(f"\n  {'command':<44} {'default':>9} {'ordered':>9} {'ratio':>6}")
for c in commands:
    words = c.split()
    a, b = peak([f"{d}/default"] + words), peak([f"{d}/ordered"] + words)
    # `rewrite golden/v1/large_300/plain.yaml`: the command and its input, not the policy.
    label = " ".join([words[0]] + [w.split("testdata/")[-1] for w in words[3:]])
    print(f"  {label[:44]:<44} {a / 1024:7.1f}MB {b / 1024:7.1f}MB {b / a:5.2f}x")

v1 = "testdata/golden/v1/large_300"
cmd = ["rewrite", "-p", f"{v1}/policy.yaml", f"{v1}/plain.yaml"]
da, oa = pages([f"{d}/default"] + cmd), pages([f"{d}/ordered"] + cmd)
print(f"\n  KFP v1 rewrite, resident at exit (MB)      {'default':>9} {'ordered':>9}")
for k in sorted(set(da) | set(oa)):
    print(f"  {k:<42} {da[k] / 1024:9.2f} {oa[k] / 1024:9.2f}")
print(f"  {'total':<42} {sum(da.values()) / 1024:9.2f} {sum(oa.values()) / 1024:9.2f}")

f = peak([floor, f"{v1}/plain.yaml"])
print(f"\n  parse-floor on the KFP v1 file: {f / 1024:.1f} MB; the limit (+ 2x the input): "
      f"{(f + 2 * os.path.getsize(f'{v1}/plain.yaml') / 1024) / 1024:.1f} MB")

# The rewrite alone: against the floor and the limit, and what it holds besides its heap.
print("\n  rewrite-only, system allocator: peak RSS (MB); packed: by a profile of that run;"
      " trained: by a profile of the other golden and case files")
print(f"  {'input':<36} {'floor':>7} {'limit':>7} {'default':>8} {'packed':>8} {'trained':>8}")
for i, (_, _, policy, path) in enumerate(rewrites, 1):
    fl = peak([floor, path])
    limit = fl + 2 * os.path.getsize(path) / 1024
    a, b = peak([f"{lib}/default", policy, path]), peak([f"{lib}/packed.{i}", policy, path])
    t = peak([f"{lib}/trained-on-others", policy, path])
    verdict = lambda kb: "within" if kb <= limit else "over"
    print(f"  {path.split('testdata/')[-1]:<36} {fl / 1024:7.2f} {limit / 1024:7.2f} {a / 1024:8.2f}"
          f" {b / 1024:8.2f} {t / 1024:8.2f}  packed {verdict(b)}, trained {verdict(t)}")

def besides_heap(cmd):
    """MB resident at exit that is not heap: code, constants, the C library, the stack."""
    kb = pages(cmd)
    return (sum(kb.values()) - kb["heap and other anonymous memory"]) / 1024

for i, (_, _, policy, path) in enumerate(rewrites, 1):
    if "large_300" not in path:
        continue
    fl, rw = besides_heap([floor, path]), besides_heap([f"{lib}/packed.{i}", policy, path])
    print(f"\n  {path.split('testdata/')[-1]}: resident besides the heap at exit: parse-floor {fl:.2f} MB, "
          f"rewrite-only packed {rw:.2f} MB; {rw - fl:.2f} MB more, the limit allows "
          f"{2 * os.path.getsize(path) / 2**20:.2f} MB more in all")

# The plugin with the system allocator and the trained layout: the closest it comes.
plug = f"{d}/plugin-system"
print("\n  kubectl-kfsched rewrite: peak RSS (MB); the shipped build, then the system allocator,"
      " then that with the layout trained on the other files")
print(f"  {'input':<36} {'limit':>7} {'shipped':>8} {'system':>8} {'trained':>8}")
for _, _, policy, path in rewrites:
    limit = peak([floor, path]) + 2 * os.path.getsize(path) / 1024
    a, b, t = (peak([exe, "rewrite", "-p", policy, path])
               for exe in (f"{d}/default", f"{plug}/default", f"{plug}/trained"))
    print(f"  {path.split('testdata/')[-1]:<36} {limit / 1024:7.2f} {a / 1024:8.2f} {b / 1024:8.2f} {t / 1024:8.2f}"
          f"  {'within' if t <= limit else 'over'}")
kb = pages([f"{plug}/trained"] + cmd)
print("\n  KFP v1 rewrite, system allocator and trained layout, resident at exit (MB)")
for k in sorted(kb):
    print(f"  {k:<42} {kb[k] / 1024:9.2f}")
print(f"  {'total':<42} {sum(kb.values()) / 1024:9.2f}")
PY
