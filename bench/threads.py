#!/usr/bin/env python3
"""threads.py — kiln's thread sweep (issue 25): how the generated C scales
with --threads, and how it degrades beside other work.

  python3 bench/threads.py [--kiln PATH] [--baseline PATH] [--threads 1,2,4,8,16]
                           [--oversubscribe 8] [--runs 200] [--rounds 4] [--cflags FLAGS]
                           [--adapt] MODEL...

Each MODEL (an .onnx file, or a folder holding model.onnx) is built once per
thread count with `kiln bench --keep` (by default with -DKILN_ADAPT_PROBE=0:
always N threads, the loops never fall back to one), then the programs are
timed interleaved: each round runs every build for runs/rounds inferences,
and a row's figure is the median of its rounds' medians. Rows:

  quiet NT         --threads N for each N of --threads up to nproc (counts
                   above nproc are skipped, saying so);
  oversub NT       --threads N (--oversubscribe, default 8) when N > nproc:
                   more threads than cores, the case a container's CPU quota
                   or a busy host gives; compared with quiet min(2, nproc)T;
  contended 1T/NT  1 thread and N = min(2, nproc) beside a busy loop pinned to
                   the last core (taskset -c LAST), started before the round
                   and stopped after it.

The table (markdown) goes to stdout with the ratios the issue's targets
read: contended NT / contended 1T (<= 1.1) and oversub / quiet (<= 1.15).
--baseline PATH builds every model with a second kiln too (an older build,
to see what a runtime change did): its programs are timed in the same
rounds, alternating with --kiln's, and its rows follow, marked *baseline*;
the busy loop's load and the machine's others are then the same for both.
Needs taskset (util-linux) for the contended rows; without it they are
skipped with a note."""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys


def build(kiln, model, threads, cflags):
    """kiln bench --keep: returns the rerun argv (program, runs, warm-up, inputs...)."""
    r = subprocess.run([kiln, "bench", model, "--runs", "5", "--threads", str(threads), "--keep",
                        "--cflags=" + cflags], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"threads.py: {model}: kiln bench --threads {threads} failed:\n{r.stderr}{r.stdout}")
    m = re.search(r"build folder kept: (\S+) \(rerun: (.*)\)", r.stdout)
    if not m:
        sys.exit(f"threads.py: {model}: kiln bench printed no 'build folder kept' line:\n{r.stdout}")
    return m.group(1), [a.strip("'") for a in m.group(2).split()]


def time_once(argv, runs):
    """One round of one build: its median_ms over `runs` inferences."""
    cmd = [argv[0], str(runs), str(max(5, runs // 10))] + argv[3:]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"median_ms=([0-9.]+)", out).group(1))


def busy_loop():
    """A busy loop pinned to the last core of this process's set."""
    last = max(os.sched_getaffinity(0))
    return subprocess.Popen(["taskset", "-c", str(last), "sh", "-c", "while :; do :; done"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--kiln", default=os.environ.get("KILN", "build/kiln"))
    ap.add_argument("--baseline", help="a second kiln, timed in the same rounds (rows marked *baseline*)")
    ap.add_argument("--threads", default="1,2,4,8,16")
    ap.add_argument("--oversubscribe", type=int, default=8)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--cflags", default="-O2 -march=native -ffp-contract=fast")
    ap.add_argument("--adapt", action="store_true", help="keep kiln_adapt on (default: -DKILN_ADAPT_PROBE=0)")
    a = ap.parse_args()
    ncpu = len(os.sched_getaffinity(0))
    cflags = a.cflags + ("" if a.adapt else " -DKILN_ADAPT_PROBE=0")
    counts = [int(t) for t in a.threads.split(",")]
    above = [str(t) for t in counts if t > ncpu]
    notes = [f"thread counts above nproc ({ncpu}) skipped: {', '.join(above)}"] if above else []
    counts = [t for t in counts if t <= ncpu]
    pair = min(2, ncpu)
    over = a.oversubscribe if a.oversubscribe > ncpu else None
    contended = shutil.which("taskset") is not None and ncpu >= 2
    if not contended:
        notes.append("contended rows skipped: " + ("no taskset" if ncpu >= 2 else "one core"))
    per = max(5, a.runs // a.rounds)
    print(f"# kiln thread sweep: nproc {ncpu}, {a.rounds} rounds x {per} inferences, cflags {cflags}")
    print(f"# load before: {open('/proc/loadavg').read().split()[0:3]}")
    print("\n| model | " + " | ".join(f"{t}T" for t in counts)
          + (f" | oversub {over}T | {over}T / {pair}T" if over else "")
          + (f" | contended 1T | contended {pair}T | {pair}T / 1T" if contended else "") + " |")
    print("|---" * (1 + len(counts) + (2 if over else 0) + (3 if contended else 0)) + "|")
    kept = []
    try:
        for model in a.models:
            if os.path.isdir(model):
                model = os.path.join(model, "model.onnx")
            kilns = [("", a.kiln)] + ([("*baseline:* ", a.baseline)] if a.baseline else [])
            builds = {}  # (kiln index, threads) -> argv
            for k, (_, path) in enumerate(kilns):
                for t in sorted(set(counts + [1, pair] + ([over] if over else []))):
                    folder, argv = build(path, model, t, cflags)
                    kept.append(folder)
                    builds[k, t] = argv
            quiet = {b: [] for b in builds}
            busy = {(k, t): [] for k in range(len(kilns)) for t in (1, pair)}
            for r in range(a.rounds):
                order = list(range(len(kilns)))
                if r % 2:
                    order.reverse()  # neither kiln always first
                for t in sorted({t for _, t in builds}):
                    for k in order:
                        quiet[k, t].append(time_once(builds[k, t], per))
                if contended:
                    p = busy_loop()
                    try:
                        for t in (1, pair):
                            for k in order:
                                busy[k, t].append(time_once(builds[k, t], per))
                    finally:
                        p.kill()
                        p.wait()
            name = os.path.basename(os.path.dirname(model)) or model
            for k, (label, _) in enumerate(kilns):
                med = {t: statistics.median(quiet[k, t]) for (kk, t) in quiet if kk == k}
                row = [label + name] + [f"{med[t]:.3f}" for t in counts]
                if over:
                    row += [f"{med[over]:.3f}", f"{med[over] / med[pair]:.2f}"]
                if contended:
                    c1, c2 = statistics.median(busy[k, 1]), statistics.median(busy[k, pair])
                    row += [f"{c1:.3f}", f"{c2:.3f}", f"{c2 / c1:.2f}"]
                print("| " + " | ".join(row) + " |", flush=True)
    finally:
        for f in kept:
            shutil.rmtree(f, ignore_errors=True)
    print(f"\nmedian ms of the rounds' medians; load after: {open('/proc/loadavg').read().split()[0:3]}")
    for n in notes:
        print(f"- {n}")


if __name__ == "__main__":
    main()
