#!/usr/bin/env python3
"""kfsched rewrite next to what users do today, on the same inputs, in one run.

For each input it runs every tool RUNS times (after one warm-up) and prints the median
wall time, peak RSS, the ratio to kfsched, and the diff noise: lines in which the tool's
output differs from the SDK's own scheduled output (testdata/golden/.../expected.yaml),
i.e. changes beyond the intended edit (kfsched must be 0). Then throughput on a ~10 MB
file and a 1,000-file tree (CPU use, to show both cores at work).

Run it through bench/rewrite.sh, which builds and provides the tools.
"""
import difflib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = int(os.environ.get("RUNS", "10"))
KFSCHED = os.environ.get("KFSCHED_BIN", str(ROOT / "target/release/kubectl-kfsched"))
PY2 = os.environ["KFSCHED_PY_V2"]  # python of the kfp 2.17.3 venv
# Not needed by BENCH=formats:
PY1 = os.environ.get("KFSCHED_PY_V1", "")  # python of the kfp 1.8.22 venv
PYB = os.environ.get("KFSCHED_PY_BENCH", "")  # python with PyYAML 6.0.4 + ruamel.yaml
YQ = os.environ.get("KFSCHED_YQ", "")
KUBECTL = os.environ.get("KUBECTL", "kubectl")
FLOOR = os.environ["KFSCHED_PARSE_FLOOR"]
# The same rewrite as a library call in a program that links nothing else (BENCH=formats).
ALONE = os.environ.get("KFSCHED_REWRITE_ONLY", "")
ALT = ROOT / "bench" / "alt"


def run_once(cmd, cwd=None, stdout=None):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, stdout=stdout or subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ALT)})
    dt = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({r.returncode}): {r.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return dt, cpu, after.ru_maxrss


def measure(cmd, cwd=None, runs=RUNS):
    run_once(cmd, cwd)
    times, cpus = [], []
    rss = 0
    for _ in range(runs):
        dt, cpu, maxrss = run_once(cmd, cwd)
        times.append(dt)
        cpus.append(cpu)
        rss = max(rss, maxrss)
    return statistics.median(times), statistics.median(cpus), rss


def peak_rss(cmd, cwd=None, stdin=None):
    """Peak RSS of one run, measured on its own with /usr/bin/time (KB); `stdin`: a file to read."""
    with open(stdin or os.devnull, "rb") as src:
        r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, cwd=cwd, stdin=src, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ALT)})
    return int(r.stderr.decode().strip().splitlines()[-1])


def noise(out_text, expected_text):
    d = difflib.unified_diff(expected_text.splitlines(), out_text.splitlines(), lineterm="", n=0)
    return sum(1 for l in d if (l.startswith("+") or l.startswith("-")) and not l.startswith(("+++", "---")))


def row(name, t, cpu, rss, base, noise_lines, note=""):
    ratio = f"{t / base:8.1f}x" if base else "       -"
    nl = "-" if noise_lines is None else str(noise_lines)
    print(f"  {name:<44} {t * 1000:9.1f} ms {cpu * 1000:9.1f} ms {rss / 1024:8.1f} MB {ratio} {nl:>7}  {note}")


def header(title, path):
    size = path.stat().st_size
    print(f"\n{title}: {path.relative_to(ROOT)} ({size / 1024:.0f} KB)")
    print(f"  {'tool':<44} {'wall':>12} {'cpu':>12} {'peak RSS':>11} {'vs kfsched':>9} {'noise':>7}")


def case(title, group, sdk_py, sdk, alts):
    d = ROOT / "testdata/golden" / group / "large_300"
    plain, expected, policy = d / "plain.yaml", d / "expected.yaml", d / "policy.yaml"
    exp_text = expected.read_text()
    header(title, plain)
    tmp = Path(tempfile.mkdtemp())
    out = tmp / "out.yaml"
    # kfsched
    cmd = [KFSCHED, "rewrite", "-p", str(policy), str(plain)]
    with open(out, "w") as f:
        subprocess.run(cmd, stdout=f, check=True)
    t, cpu, _ = measure(cmd)
    base = t
    row("kubectl-kfsched rewrite", t, cpu, peak_rss(cmd), None, noise(out.read_text(), exp_text))
    # parse floor
    t, cpu, _ = measure([FLOOR, str(plain)])
    row("floor: parse the file (saphyr events)", t, cpu, peak_rss([FLOOR, str(plain)]), base, None, "no output")
    for name, build in alts:
        cmd, produced = build(plain, tmp)
        if cmd is None:
            row(name, 0, 0, 0, None, None, produced)
            continue
        t, cpu, _ = measure(cmd, runs=max(3, RUNS // 3) if "SDK" in name or "kustomize" in name else RUNS)
        rss = peak_rss(cmd)
        n = None
        if produced is not None:
            text = produced() if callable(produced) else produced.read_text()
            n = noise(text, exp_text)
        row(name, t, cpu, rss, base, n)
    shutil.rmtree(tmp)


def v2_alts():
    src = ROOT / "testdata/pipelines/v2/large_300.py"
    return [
        ("recompile with the SDK (kfp 2.17.3)", lambda p, tmp: ([PY2, str(ALT / "sdk_compile.py"), "v2", str(src), str(tmp / "sdk.yaml")], tmp / "sdk.yaml")),
        ("PyYAML CLoader + SDK dumper script", lambda p, tmp: ([PYB, str(ALT / "pyyaml_v2.py"), str(p), str(tmp / "pyyaml.yaml")], tmp / "pyyaml.yaml")),
        ("ruamel.yaml round-trip script", lambda p, tmp: ([PYB, str(ALT / "ruamel_v2.py"), str(p), str(tmp / "ruamel.yaml")], tmp / "ruamel.yaml")),
        ("floor: PyYAML CSafeLoader load only", lambda p, tmp: ([PYB, "-c", "import yaml,sys; list(yaml.load_all(open(sys.argv[1]), Loader=yaml.CSafeLoader))", str(p)], None)),
        ("yq / kustomize", lambda p, tmp: (None, "not practical: KFP v2 IR is not a Kubernetes resource, and the task->executor join is beyond a yq expression")),
    ]


def v1_alts():
    src = ROOT / "testdata/pipelines/v1/large_300.py"

    def kustomize(p, tmp):
        kdir = tmp / "kust"
        subprocess.run([PYB, str(ALT / "kustomize_v1.py"), str(p), str(kdir)], check=True, env={**os.environ, "PYTHONPATH": str(ALT)})
        outk = tmp / "kustomized.yaml"
        with open(outk, "w") as f:
            subprocess.run([KUBECTL, "kustomize", str(kdir)], stdout=f, check=True)
        return [KUBECTL, "kustomize", str(kdir)], outk

    return [
        ("recompile with the SDK (kfp 1.8.22)", lambda p, tmp: ([PY1, str(ALT / "sdk_compile.py"), "v1", str(src), str(tmp / "sdk.yaml")], tmp / "sdk.yaml")),
        ("PyYAML CLoader + kfp dump_yaml script", lambda p, tmp: ([PY1, str(ALT / "pyyaml_v1.py"), str(p), str(tmp / "pyyaml.yaml")], tmp / "pyyaml.yaml")),
        ("yq v4 expression", lambda p, tmp: (["bash", str(ALT / "yq_v1.sh"), YQ, str(p), str(tmp / "yq.yaml")], tmp / "yq.yaml")),
        ("kubectl kustomize + JSON 6902 patch", kustomize),
        ("floor: PyYAML CSafeLoader load only", lambda p, tmp: ([PYB, "-c", "import yaml,sys; yaml.load(open(sys.argv[1]), Loader=yaml.CSafeLoader)", str(p)], None)),
    ]


def throughput(big, policy):
    size = big.stat().st_size
    header("throughput", big)
    out = Path(tempfile.mkdtemp()) / "out.yaml"
    for label, cmd in [
        ("rewrite to a file", [KFSCHED, "rewrite", "-p", str(policy), str(big)]),
        ("rewrite --check", [KFSCHED, "rewrite", "--check", "-p", str(policy), str(big)]),
    ]:
        def once():
            with open(out, "w") as f:
                t0 = time.perf_counter()
                subprocess.run(cmd, stdout=f, stderr=subprocess.DEVNULL)
                return time.perf_counter() - t0
        once()
        t = statistics.median([once() for _ in range(max(3, RUNS // 2))])
        rss = peak_rss(cmd)
        print(f"  kubectl-kfsched {label:<18} {t * 1000:5.0f} ms = {size / t / 1e6:3.0f} MB/s, peak RSS {rss / 1024:.0f} MB = {rss * 1024 / size:.1f}x the input")
    shutil.rmtree(out.parent)
    t, cpu, _ = measure([FLOOR, str(big)], runs=3)
    print(f"  floor (parse events only): {t * 1000:.0f} ms = {size / t / 1e6:.0f} MB/s")


def big_argo(path, min_bytes=10_000_000):
    """A multi-document stream of KFP v1 Argo workflows (the 300-template SDK file, repeated)."""
    if not path.exists():
        doc = (ROOT / "testdata/golden/v1/large_300/plain.yaml").read_text()
        parts, size, i = [], 0, 0
        while size < min_bytes:
            d = doc.replace("generateName: large-300-", f"generateName: large-300-{i}-", 1)
            parts.append(d)
            size += len(d.encode()) + 4
            i += 1
        path.write_text("---\n".join(parts))
    return path


def workload_stream(path, min_bytes=1_000_000):
    """A multi-document stream of `kubectl get -o yaml` Lists (pods, deployments, jobs...)."""
    if not path.exists():
        doc = (ROOT / "testdata/cases/kubectl-get-all/input.yaml").read_text()
        path.write_text("---\n".join([doc] * (min_bytes // len(doc.encode()) + 1)))
    return path


def resource_list(path, min_bytes=1_000_000):
    """The items of testdata/cases/kubectl-get-all (pods, deployments, jobs...) repeated in
    one ResourceList, as kustomize and kpt send them to a KRM function."""
    if not path.exists():
        doc = (ROOT / "testdata/cases/kubectl-get-all/input.yaml").read_text()
        items = doc[doc.index("\nitems:\n") + len("\nitems:\n"):doc.index("\nkind: List\n") + 1]
        head = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
        path.write_text(head + items * (min_bytes // len(items.encode()) + 1))
    return path


def side_by_side(cmd, floor, runs, stdin=None):
    """Median wall time, CPU time and peak RSS of `cmd` and of `floor`, run alternately
    (both writing stdout to a file), so that both see the same machine state. `stdin`: a
    file `cmd` reads."""
    out = Path(tempfile.mkdtemp()) / "out.yaml"
    def once(c):
        with open(out, "w") as f, open(stdin if c is cmd and stdin else os.devnull, "rb") as src:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            r = subprocess.run(c, stdin=src, stdout=f, stderr=subprocess.PIPE)
            dt = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if r.returncode not in (0, 1):
            raise SystemExit(f"{c} failed: {r.stderr.decode()[-2000:]}")
        return dt, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    once(cmd), once(floor)
    k, f = [], []
    for _ in range(runs):
        k.append(once(cmd))
        f.append(once(floor))
    shutil.rmtree(out.parent)
    med = lambda xs, i: statistics.median(x[i] for x in xs)
    # Peak RSS: the largest of three runs each, measured alone (/usr/bin/time).
    rss = lambda c: max(peak_rss(c, stdin=stdin if c is cmd else None) for _ in range(3))
    return (med(k, 0), med(k, 1), rss(cmd)), (med(f, 0), med(f, 1), rss(floor))


def formats(big_v2):
    """Every input format against the parser's floor (parse-floor: read the file, pull every
    saphyr-parser event), side by side: the time ratio, and the peak RSS against the limit
    of the floor's peak RSS plus twice the input (the input and the output, each held once).
    `rewrite-only` is the peak RSS of the same rewrite in a program with nothing else linked in
    (bench/rewrite_only.rs: no command line parser, no cluster client), same output bytes."""
    print("\nformats: kfsched rewrite against the parser's own event pass (parse-floor), same file,"
          " alternating; wall and CPU medians, peak RSS of 3 runs alone")
    print(f"  {'input':<44} {'size':>8} {'kfsched':>9} {'floor':>9} {'time':>6} {'cpu':>6}"
          f" {'peak RSS':>9} {'limit':>9} {'floor RSS':>9} {'rewrite-only':>12}")
    v1 = ROOT / "testdata/golden/v1/large_300"
    v2 = ROOT / "testdata/golden/v2/large_300"
    pv = ROOT / "testdata/golden/pv/large_300"
    work = ROOT / "testdata/cases/kubectl-get-all"
    big = big_argo(ROOT / ".cache/bench/big-argo.yaml")
    stream = workload_stream(ROOT / ".cache/bench/workloads.yaml")
    slow = max(3, RUNS // 2)
    failed = []
    for label, path, policy, runs in [
        ("KFP v1, 300 templates", v1 / "plain.yaml", v1 / "policy.yaml", RUNS),
        ("Argo stream (8+ KFP v1 workflows)", big, v1 / "policy.yaml", slow),
        ("KFP v2 IR, ~10 MB", big_v2, v2 / "policy.yaml", slow),
        ("KFP v2 IR, 300 tasks", v2 / "plain.yaml", v2 / "policy.yaml", RUNS),
        ("PipelineVersion, 300 tasks", pv / "plain.yaml", pv / "policy.yaml", RUNS),
        ("workloads (kubectl get -o yaml Lists)", stream, work / "policy.yaml", RUNS),
    ]:
        size = path.stat().st_size
        (t, cpu, rss), (ft, fcpu, frss) = side_by_side(
            [KFSCHED, "rewrite", "-p", str(policy), str(path)], [FLOOR, str(path)], runs)
        limit = frss + 2 * size / 1024
        ok = rss <= limit
        alone_cmd = [ALONE, str(policy), str(path)]
        if subprocess.run([KFSCHED, "rewrite", "-p", str(policy), str(path)], capture_output=True).stdout != \
                subprocess.run(alone_cmd, capture_output=True).stdout:
            raise SystemExit(f"rewrite-only wrote other bytes than kubectl-kfsched rewrite on {path}")
        alone = max(peak_rss(alone_cmd) for _ in range(3))
        if not ok:
            failed.append(label)
        print(f"  {label:<44} {size / 1e6:6.2f}MB {t * 1000:7.1f}ms {ft * 1000:7.1f}ms {t / ft:5.2f}x"
              f" {cpu / fcpu:5.2f}x {rss / 1024:7.1f}MB {limit / 1024:7.1f}MB {frss / 1024:7.1f}MB"
              f" {alone / 1024:10.1f}MB  {'within' if ok else 'over'}")
    print("  (time, cpu: kfsched / floor; limit: the floor's peak RSS + 2x the input;"
          " rewrite-only: the same rewrite in a program that links nothing else)")
    if failed:
        print(f"  over the memory limit: {', '.join(failed)}")
    print("\nPipelineVersion manifest against the IR file of the same 300-task pipeline (alternating)")
    (t_pv, _, _), (t_ir, _, _) = side_by_side(
        [KFSCHED, "rewrite", "-p", str(pv / "policy.yaml"), str(pv / "plain.yaml")],
        [KFSCHED, "rewrite", "-p", str(v2 / "policy.yaml"), str(v2 / "plain.yaml")], 3 * RUNS)
    print(f"  KFP v2 IR file         {(v2 / 'plain.yaml').stat().st_size / 1e6:5.2f} MB  {t_ir * 1000:6.1f} ms")
    print(f"  PipelineVersion        {(pv / 'plain.yaml').stat().st_size / 1e6:5.2f} MB  {t_pv * 1000:6.1f} ms  = {t_pv / t_ir:.2f}x the IR file")
    print("\nKRM function on the workloads as one ResourceList against rewrite of them as a file (alternating)")
    rl = resource_list(ROOT / ".cache/bench/resource-list.yaml")
    (t_fn, _, _), (t_rw, _, _) = side_by_side(
        [KFSCHED, "fn", "-p", str(work / "policy.yaml")],
        [KFSCHED, "rewrite", "-p", str(work / "policy.yaml"), str(stream)], RUNS, stdin=rl)
    print(f"  rewrite, a stream of Lists  {stream.stat().st_size / 1e6:5.2f} MB  {t_rw * 1000:6.1f} ms")
    print(f"  fn, one ResourceList        {rl.stat().st_size / 1e6:5.2f} MB  {t_fn * 1000:6.1f} ms  = {t_fn / t_rw:.2f}x rewrite")


def tree(n=1000):
    tmp = Path(tempfile.mkdtemp())
    srcs = sorted((ROOT / "testdata/golden").glob("*/*/plain.yaml"))
    policy = ROOT / "testdata/golden/v2/large_300/policy.yaml"
    total = 0
    for i in range(n):
        s = srcs[i % len(srcs)]
        dst = tmp / f"d{i % 20}" / f"{i}-{s.parent.name}.yaml"
        dst.parent.mkdir(exist_ok=True)
        shutil.copyfile(s, dst)
        total += dst.stat().st_size
    print(f"\n1,000-file tree: {n} SDK-compiled files ({total / 1e6:.0f} MB), one policy")
    for jobs in ("1", ""):
        env = {**os.environ}
        if jobs:
            env["RAYON_NUM_THREADS"] = jobs
        cmd = [KFSCHED, "rewrite", "--check", "-p", str(policy), str(tmp)]
        times, cpus = [], []
        for _ in range(3):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times.append(time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
        t, cpu = statistics.median(times), statistics.median(cpus)
        label = "1 thread (RAYON_NUM_THREADS=1)" if jobs else f"default ({os.cpu_count()} cores)"
        print(f"  {label:<32} {t * 1000:7.0f} ms wall, {cpu * 1000:7.0f} ms CPU, {cpu / t:.2f} cores busy")
    shutil.rmtree(tmp)


def main():
    print(f"kfsched rewrite benchmark, {RUNS} runs per tool (median), {os.cpu_count()} cores")
    if os.environ.get("BENCH") == "formats":
        formats(Path(os.environ["KFSCHED_BIG_V2"]))
        return
    case("KFP v2, 300 tasks", "v2", PY2, "v2", v2_alts())
    case("KFP v1, 300 templates", "v1", PY1, "v1", v1_alts())
    big = Path(os.environ["KFSCHED_BIG_V2"])
    throughput(big, ROOT / "testdata/golden/v2/large_300/policy.yaml")
    formats(big)
    tree()


if __name__ == "__main__":
    sys.exit(main())
