"""Reads `perf script` output (samples with call chains) on stdin and prints where a
kfsched process spent its CPU time, by stage of a rewrite.

Usage: perf script -F comm,ip,sym | python3 bench/profile_stages.py RUNS CPU_MS [COMM]
       python3 bench/profile_stages.py --cpu RUNS CMD_A... --vs CMD_B...

RUNS is how many runs perf recorded; CPU_MS the CPU time of one run measured without
the profiler (sampling with call stacks slows the process), which the shares divide.
With --cpu: the median CPU time (user + system, ms) of each of two commands, run
alternately RUNS times after one warm-up run each, so both see the same machine.

Each sample goes to the first stage, in the order of STAGES, that a frame of its call
chain belongs to: time in saphyr-parser under the re-check of inserted text is re-check,
not parse. What no stage claims is the process itself: exec, the dynamic loader,
relocation, policy-independent start-up and exit.
"""

import resource
import statistics
import subprocess
import sys
from collections import Counter

STAGES = [
    ("re-check of inserted text", ("kfsched_yaml::quick::accepts", "kfsched_yaml::tree::check_syntax",
                                   "kfsched_core::rewrite::verify")),
    ("output (patch written out)", ("kfsched_yaml::patch::", "kubectl_kfsched::offline::write_output")),
    ("edit (render, splice)", ("kfsched_yaml::edit::", "kfsched_yaml::block::", "kfsched_yaml::emit::")),
    ("parse (saphyr-parser events)", ("saphyr_parser::",)),
    ("tree (span tree: the quick one-pass build, or from the events)",
     ("kfsched_yaml::tree::", "kfsched_yaml::quick::")),
    ("policy (read, validate, compile)", ("kfsched_core::policy::",)),
    ("plan (detect, match, merge)", ("kfsched_core::",)),
    ("read the input", ("kubectl_kfsched::offline::read_inputs", "std::fs::read")),
]
REST = "process (exec, loader, start-up, exit)"


def cpu(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


def side_by_side(runs, a, b):
    cpu(a), cpu(b)
    ta, tb = [], []
    for _ in range(runs):
        ta.append(cpu(a))
        tb.append(cpu(b))
    print(f"{statistics.median(ta):.3f} {statistics.median(tb):.3f}")


def main():
    if sys.argv[1] == "--cpu":
        i = sys.argv.index("--vs")
        return side_by_side(int(sys.argv[2]), sys.argv[3:i], sys.argv[i + 1:])
    runs, cpu_ms = int(sys.argv[1]), float(sys.argv[2])
    comm = sys.argv[3] if len(sys.argv) > 3 else "kubectl-kfsche"
    counts = Counter()
    frames, current = [], None
    total = 0

    def flush():
        nonlocal total
        if current is None or not current.startswith(comm):
            return
        total += 1
        for name, marks in STAGES:
            if any(m in f for f in frames for m in marks):
                counts[name] += 1
                return
        counts[REST] += 1

    for line in sys.stdin:
        if not line.strip():
            continue
        if not line[0].isspace():
            flush()
            current, frames = line.split()[0], []
        else:
            parts = line.split(None, 1)
            if len(parts) == 2:
                frames.append(parts[1].strip())
    flush()
    if not total:
        raise SystemExit("no samples of the kfsched process; is perf allowed here?")
    for name, _ in STAGES + [(REST, ())]:
        n = counts[name]
        print(f"  {name:<40} {cpu_ms * n / total:6.2f} ms  {100 * n / total:5.1f} %")
    print(f"  {'total (CPU of one run, unprofiled)':<40} {cpu_ms:6.2f} ms  ({total} samples over {runs} runs)")


if __name__ == "__main__":
    main()
