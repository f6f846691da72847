"""kiln vs ONNX Runtime on the exported benchmark models: latency, GFLOP/s, RSS, size, agreement.

Run by bench/run.sh with the venv's python (onnxruntime, numpy, onnx from PyPI):
    python bench/compare.py --kiln build/kiln --models build/bench/models --out results.md
        [--runs 200] [--rounds 4] [--only NAME ...] [--peak GFLOPS] [--peak2 GFLOPS]
        [--peers openvino,iree,emx,onnx2c,kiln-bf16] [--contended]

Per model (a folder with model.onnx and test_data_set_0/input_K.pb):
1. GFLOP from `kiln info --json` on the unfused graph (--passes without fuse),
   so the figure is the model's arithmetic, whatever kiln fuses.
2. `kiln bench --keep` with the model's input files builds the timing
   program (-O2 -march=native), once with --threads 1 and once with
   --threads 2 (-pthread: kiln's pool); each is then rerun directly.
3. Agreement: each program writes its outputs; they must match ONNX Runtime's
   on the same input within rtol 1e-4 (atol 1e-5, numpy's allclose).
4. Latency, interleaved: --rounds rounds, each runs kiln 1 thread, ORT 1
   thread, kiln 2 threads and ORT 2 threads for runs/rounds inferences (after
   warm-up), alternating who goes first; the median is over all --runs
   inferences of each engine.
5. Peak RSS: /usr/bin/time -v of the kiln program, and of a python process
   that loads ORT, makes a session and runs it; the session's increment is
   VmHWM after minus VmRSS before creating the session.

6. --peers LIST (bench/peers.py: openvino, iree, emx, onnx2c): each peer
   runs at its thread counts in the same interleaved rounds, checked against
   ORT's outputs; a second table gives every engine's median, a skipped
   peer's cell its reason. --contended: each round times everything again
   beside a busy loop pinned to the last core (taskset), and a third table
   gives those medians.

A model folder may hold bench.json, which changes how it is run (the real
MiniLM's int8 row, bench/run.sh):
  {"kiln_args": ["--quantize=int8"],      extra kiln bench arguments
   "ort_model": "model.int8.onnx",        the file ORT runs (default model.onnx)
   "cosine_output": 1, "min_cosine": 0.999}
     agreement, instead of allclose: the cosine of each row (last axis) of
     kiln's output 1 with the stored f32 reference output_1.pb must be at
     least min_cosine; ORT's figure is reported beside it, not required
  {"min_cosine_ort": 0.9999}
     agreement, instead of allclose: the cosine of each whole output of
     kiln with ORT's must be at least min_cosine_ort (a quantize_dynamic
     model.onnx both run, whose u8 roundings differ between engines by a
     step here and there)
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper
import onnxruntime as ort

import peers

RTOL, ATOL = 1e-4, 1e-5
CHUNK_S = 10  # s: a peer slower than this per round runs fewer inferences (at least 3)
SETTLE_S = 0.2  # s of pause before each timed batch: the engine before it (ORT's and OpenVINO's
#              thread pools spin a while after a call, in this process) lets go of the cores
UNFUSED = "bind,infer,fold,simplify,dce,plan"


def run(cmd, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"compare: {' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    return p.stdout


def gflop(kiln, model, args=()):
    """args: the model's --shape bindings (bench.json's kiln_args), when it has symbolic dims."""
    for extra in (["--passes=" + UNFUSED], []):
        p = subprocess.run([kiln, "info", model, "--json"] + list(args) + extra, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
        if p.returncode == 0:
            return json.loads(p.stdout)["flops"]["total"] * 1e-9
    sys.exit(f"compare: kiln info {model} failed")


def load_inputs(d):
    names, files, arrays = [], [], []
    k = 0
    while os.path.exists(f"{d}/test_data_set_0/input_{k}.pb"):
        path = f"{d}/test_data_set_0/input_{k}.pb"
        t = onnx.TensorProto()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        names.append(t.name)
        files.append(path)
        arrays.append(numpy_helper.to_array(t))
        k += 1
    return names, files, arrays


def load_outputs(d):
    out, k = [], 0
    while os.path.exists(f"{d}/test_data_set_0/output_{k}.pb"):
        t = onnx.TensorProto()
        with open(f"{d}/test_data_set_0/output_{k}.pb", "rb") as f:
            t.ParseFromString(f.read())
        out.append(numpy_helper.to_array(t))
        k += 1
    return out


def min_row_cosine(got, want):
    """The smallest cosine between matching rows (last axis) of got and want."""
    g = got.reshape(-1, got.shape[-1]).astype(np.float64)
    w = want.reshape(-1, want.shape[-1]).astype(np.float64)
    cos = (g * w).sum(1) / np.maximum(np.linalg.norm(g, axis=1) * np.linalg.norm(w, axis=1), 1e-30)
    return float(cos.min())


def bench_spec(d):
    path = os.path.join(d, "bench.json")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def session(model, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


class OrtRunner:
    """One session, its inputs and preallocated outputs bound once (IOBinding),
    so a timed call is run_with_iobinding alone: ~15 us less Python overhead
    per call than InferenceSession.run, which matters on the tiny model."""

    def __init__(self, model, threads, feed):
        self.sess = session(model, threads)
        self.want = self.sess.run(None, feed)
        self.bind = self.sess.io_binding()
        for n, x in feed.items():
            self.bind.bind_cpu_input(n, x)
        self.outs = [np.empty_like(w) for w in self.want]
        for o, buf in zip(self.sess.get_outputs(), self.outs):
            self.bind.bind_output(o.name, "cpu", 0, buf.dtype, buf.shape, buf.ctypes.data)

    def times(self, n):
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            self.sess.run_with_iobinding(self.bind)
            out.append((time.perf_counter() - t0) * 1e3)
        return out


class KilnProgram:
    """The timing program kiln bench built and kept: prog RUNS WARMUP in... [out...]."""

    def __init__(self, kiln, model, input_args, threads=1):
        text = run([kiln, "bench", model, "--keep", "--runs", "5", "--threads", str(threads)] + input_args)
        self.summary = text
        m = re.search(r"build folder kept: (\S+) \(rerun: (.*)\)$", text, re.M)
        self.dir = m.group(1)
        argv = shlex.split(m.group(2))
        self.prog, self.inputs = argv[0], argv[3:]
        self.binary_bytes = os.path.getsize(self.prog)
        self.weights = int(re.search(r"weights (\d+) bytes", text).group(1))
        self.workspace = int(re.search(r"workspace (\d+) bytes", text).group(1))

    def times(self, n):
        warm = max(5, n // 10)
        tf = os.path.join(self.dir, "times.txt")
        env = dict(os.environ, KILN_BENCH_TIMES=tf)
        run([self.prog, str(n), str(warm)] + self.inputs, env=env)
        with open(tf) as f:
            return [float(x) for x in f.read().split()]

    def outputs(self, like):
        paths = [os.path.join(self.dir, f"out{i}.raw") for i in range(len(like))]
        run([self.prog, "1", "0"] + self.inputs + paths)
        return [np.fromfile(p, dtype=r.dtype).reshape(r.shape) for p, r in zip(paths, like)]

    def peak_rss_kb(self):
        p = subprocess.run(["/usr/bin/time", "-v", self.prog, "3", "1"] + self.inputs,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        return int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1))

    def remove(self):
        subprocess.run(["rm", "-rf", self.dir])


def ort_rss_child(model, names, files):
    """In a fresh process: RSS before/after making an ORT session (kB)."""
    def status(key):
        with open("/proc/self/status") as f:
            return int(re.search(rf"^{key}:\s+(\d+) kB", f.read(), re.M).group(1))
    feed = {}
    for n, p in zip(names, files):
        t = onnx.TensorProto()
        with open(p, "rb") as f:
            t.ParseFromString(f.read())
        feed[n] = numpy_helper.to_array(t)
    before = status("VmRSS")
    s = session(model, 1)
    for _ in range(10):
        s.run(None, feed)
    print(json.dumps({"before_kb": before, "hwm_kb": status("VmHWM")}))


def ort_rss(model, names, files):
    cmd = ["/usr/bin/time", "-v", sys.executable, os.path.abspath(__file__), "--ort-rss", model,
           "--names", *names, "--files", *files]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1))
    j = json.loads(p.stdout.strip().splitlines()[-1])
    return peak, j["hwm_kb"] - j["before_kb"]


def ort_lib_bytes():
    capi = os.path.join(os.path.dirname(ort.__file__), "capi")
    return sum(os.path.getsize(os.path.join(capi, f)) for f in os.listdir(capi)
               if ".so" in f)


def peer_runners(a, d, spec, names, arrays, s1, want, r, opened):
    """The peers' (label, threads, runner) for this model, each checked
    against ORT's outputs (r["peer_err"]: max abs error, allclose, note); a
    lower default precision (OpenVINO's bf16) is measured against the
    reference outputs instead, when the folder has them. A peer that is
    skipped leaves its one-line reason in r["skip"]."""
    r["skip"], r["peer_err"] = {}, {}
    cols = [(label, prepare, t) for label, prepare, ts in a.peer_columns for t in ts]
    if spec.get("kiln_args") or "ort_model" in spec:
        for label, _, t in cols:
            r["skip"][label, t] = "this row compares kiln's and ORT's quantizations only"
        return []
    work = os.path.join(os.path.dirname(os.path.abspath(a.models)), "peers", os.path.basename(d))
    os.makedirs(work, exist_ok=True)
    m = peers.Model(d, names, arrays, [o.name for o in s1.sess.get_outputs()], want, work)
    ref = load_outputs(d)
    out = []
    for label, prepare, t in cols:
        runner = prepare(m, t)
        if isinstance(runner, str):
            r["skip"][label, t] = runner
            print(f"   {label} {t}T: skipped: {runner}", flush=True)
            continue
        opened.append(runner)
        against = ref if runner.note and len(ref) == len(want) else want
        got = runner.outputs()
        err = max(float(np.max(np.abs(g.astype(np.float64) - w))) for g, w in zip(got, against))
        ok = all(np.allclose(g, w, rtol=RTOL, atol=ATOL) for g, w in zip(got, against))
        r["peer_err"][label, t] = (err, ok, runner.note)
        out.append((label, t, runner))
    return out


class Hog:
    """--contended's neighbour: a shell busy loop pinned (taskset) to the
    last core while the contended timings run, as another process holding
    one core would be."""

    def __enter__(self):
        cpu = str((os.cpu_count() or 1) - 1)
        self.p = subprocess.Popen(["taskset", "-c", cpu, "sh", "-c", "while :; do :; done"])
        return self

    def __exit__(self, *exc):
        self.p.kill()
        self.p.wait()


def compare(a, name):
    d = os.path.join(a.models, name)
    model = os.path.join(d, "model.onnx")
    names, files, arrays = load_inputs(d)
    feed = dict(zip(names, arrays))
    spec = bench_spec(d)
    ort_model = os.path.join(d, spec.get("ort_model", "model.onnx"))
    print(f"== {name}", flush=True)
    shape_args = [x for i, x in enumerate(spec.get("kiln_args", []))
                  if x.startswith("--shape") or (i and spec["kiln_args"][i - 1] == "--shape")]
    r = {"model": name, "gflop": gflop(a.kiln, model, shape_args)}

    inputs = [f"--input={n}={f}" for n, f in zip(names, files)] + spec.get("kiln_args", [])
    prog = KilnProgram(a.kiln, model, inputs)
    prog2 = None
    opened = []  # the peers' runners, closed at the end
    try:
        prog2 = KilnProgram(a.kiln, model, inputs, threads=2)
        s1, s2 = OrtRunner(ort_model, 1, feed), OrtRunner(ort_model, 2, feed)
        want = s1.want
        got = prog.outputs(want) + prog2.outputs(want)  # 1 thread, then 2
        pairs = list(zip(got, want + want))
        r["max_abs"] = max(float(np.max(np.abs(g.astype(np.float64) - w))) for g, w in pairs)
        r["max_rel"] = max(float(np.max(np.abs(g.astype(np.float64) - w) / np.maximum(np.abs(w), 1e-30)))
                           for g, w in pairs)
        r["quantized"] = "min_cosine" in spec or "min_cosine_ort" in spec
        if "min_cosine_ort" in spec:  # the same quantized file: kiln against ORT, by cosine
            r["cos_kiln"] = min(min_row_cosine(g.reshape(1, -1), w.reshape(1, -1)) for g, w in pairs)
            r["agree"] = r["cos_kiln"] >= spec["min_cosine_ort"]
            r["agree_note"] = f"cos vs ORT {r['cos_kiln']:.6f}, max abs {r['max_abs']:.2g}"
        elif "min_cosine" in spec:  # quantized: kiln (and ORT) against the f32 reference
            k, ref = spec["cosine_output"], load_outputs(d)[spec["cosine_output"]]
            r["cos_kiln"] = min(min_row_cosine(g[k], ref) for g in (got[:len(want)], got[len(want):]))
            r["cos_ort"] = min_row_cosine(want[k], ref)
            r["agree"] = r["cos_kiln"] >= spec["min_cosine"]
            r["agree_note"] = (f"{s1.sess.get_outputs()[k].name} cos vs f32: kiln {r['cos_kiln']:.5f}, "
                               f"ORT {r['cos_ort']:.5f}")
        else:
            r["agree"] = all(np.allclose(g, w, rtol=RTOL, atol=ATOL) for g, w in pairs)
            r["agree_note"] = f"{r['max_abs']:.1g}"

        engines = [("kiln", 1, prog), ("ORT", 1, s1), ("kiln", 2, prog2), ("ORT", 2, s2)]
        engines += peer_runners(a, d, spec, names, arrays, s1, want, r, opened)
        engines.sort(key=lambda e: e[1])  # the 1-thread runs, then the 2-thread ones
        per = max(1, a.runs // a.rounds)
        count = {}  # inferences per round: fewer for a slow peer (CHUNK_S)
        for label, t, runner in engines:
            warm = float(np.median(runner.times(max(5, per // 10))))  # warm-up
            slow = label not in ("kiln", "ORT") and warm * per > CHUNK_S * 1e3
            count[label, t] = max(3, int(CHUNK_S * 1e3 / warm)) if slow else per
        if not all(np.array_equal(o, w) for o, w in zip(s1.outs, want)):
            sys.exit(f"compare: {name}: ORT's IOBinding outputs differ from run()'s")
        quiet = {e[:2]: [] for e in engines}
        busy = {e[:2]: [] for e in engines}
        for k in range(a.rounds):
            order = engines if k % 2 == 0 else engines[::-1]
            for label, t, runner in order:
                time.sleep(SETTLE_S)
                quiet[label, t] += runner.times(count[label, t])
            if a.contended:
                with Hog():
                    for label, t, runner in order:
                        time.sleep(SETTLE_S)
                        busy[label, t] += runner.times(count[label, t])
        r["runs"] = len(quiet["kiln", 1])
        r["ms"] = {e: float(np.median(t)) for e, t in quiet.items()}
        r["busy_ms"] = {e: float(np.median(t)) for e, t in busy.items() if t}
        r["fewer"] = {e: len(t) for e, t in quiet.items() if len(t) < r["runs"]}
        r["kiln_ms"], r["kiln2_ms"], r["ort1_ms"], r["ort2_ms"] = (
            r["ms"][e] for e in (("kiln", 1), ("kiln", 2), ("ORT", 1), ("ORT", 2)))
        r["kiln_rss_kb"] = prog.peak_rss_kb()
        r["kiln_bound_kb"] = (prog.weights + prog.workspace) // 1024 + 2048
        r["kiln_binary"] = prog.binary_bytes
        r["ort_rss_kb"], r["ort_session_kb"] = ort_rss(model, names, files)
        r["ort_size"] = ort_lib_bytes() + os.path.getsize(ort_model)
    finally:
        prog.remove()
        if prog2:
            prog2.remove()
        for p in opened:
            p.close()
    print(f"   kiln 1T {r['kiln_ms']:.4f} ms   ORT 1T {r['ort1_ms']:.4f} ms   "
          f"kiln 2T {r['kiln2_ms']:.4f} ms   ORT 2T {r['ort2_ms']:.4f} ms"
          f"   agree: {r['agree']} ({r['agree_note']})", flush=True)
    for (label, t), ms in r["ms"].items():
        if label not in ("kiln", "ORT"):
            print(f"   {label} {t}T {ms:.4f} ms", flush=True)
    if r["busy_ms"]:
        print("   contended: " + "   ".join(f"{label} {t}T {ms:.4f} ms"
                                           for (label, t), ms in r["busy_ms"].items()), flush=True)
    return r


def table(rows, a):
    def pct(gfs, peak, quant=False):
        # an int8 product is not bound by the f32 FMA peak: no percentage;
        # above the measured peak, the peak was measured under load: no
        # percentage over 100 (notes() says so)
        if quant:
            return f"{gfs:.1f} (int8)"
        if gfs > peak:
            a.peak_low = True
            return f"{gfs:.1f} (> peak*)"
        return f"{gfs:.1f} ({100 * gfs / peak:.0f}%)"
    mb = lambda kb: f"{kb / 1024:.1f}"
    head = ("| model | GFLOP | kiln 1T ms | ORT 1T ms | ORT/kiln 1T | kiln 2T ms | ORT 2T ms | ORT/kiln 2T "
            "| kiln GFLOP/s (% peak) | ORT 1T GFLOP/s (% peak) | ORT 2T GFLOP/s (% 2-core peak) "
            "| kiln RSS MB (bound) | ORT RSS MB (session +) | kiln binary MB | ORT lib+model MB "
            "| agrees (max abs err; quantized: cosine) |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in rows:
        g = r["gflop"]
        q = r.get("quantized", False)
        lines.append(
            f"| {r['model']} | {g:.4f} | {r['kiln_ms']:.3f} | {r['ort1_ms']:.3f} "
            f"| {r['ort1_ms'] / r['kiln_ms']:.2f} | {r['kiln2_ms']:.3f} | {r['ort2_ms']:.3f} "
            f"| {r['ort2_ms'] / r['kiln2_ms']:.2f} "
            f"| {pct(g / r['kiln_ms'] * 1e3, a.peak, q)} | {pct(g / r['ort1_ms'] * 1e3, a.peak, q)} "
            f"| {pct(g / r['ort2_ms'] * 1e3, a.peak2, q)} "
            f"| {mb(r['kiln_rss_kb'])} ({mb(r['kiln_bound_kb'])}) "
            f"| {mb(r['ort_rss_kb'])} (+{mb(r['ort_session_kb'])}) "
            f"| {r['kiln_binary'] / 2**20:.1f} | {r['ort_size'] / 2**20:.1f} "
            f"| {'yes' if r['agree'] else 'NO'} ({r['agree_note']}) |")
    return "\n".join(lines)


def latency_table(rows, a, key):
    """Every engine's median ms from the same interleaved run: r[key] is
    r["ms"] (quiet) or r["busy_ms"] (--contended); a skipped peer's cell
    gives its reason."""
    cols = [(label, t) for label, _, ts in a.peer_columns for t in ts]
    head = (["model", "kiln 1T ms", "kiln 2T ms", "kiln 2T/1T", "ORT 1T ms", "ORT 2T ms"]
            + [f"{label} {t}T ms" for label, t in cols]
            + (["peers' max abs err (vs ORT; default precision vs the reference)"] if cols else []))
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        ms = r[key]
        cells = [r["model"], f"{ms['kiln', 1]:.3f}", f"{ms['kiln', 2]:.3f}",
                 f"{ms['kiln', 2] / ms['kiln', 1]:.2f}", f"{ms['ORT', 1]:.3f}", f"{ms['ORT', 2]:.3f}"]
        said = set()  # a reason already given in this row: "see left" after it
        for c in cols:
            why = r["skip"].get(c, "not run")
            if c not in ms and why in said:
                cells.append("skip (see left)")
            elif c in ms:
                note = r["peer_err"][c][2]
                extra = [note] if note else []
                extra += [f"{r['fewer'][c]} runs"] if c in r["fewer"] else []
                cells.append(f"{ms[c]:.3f}" + (f" ({', '.join(extra)})" if extra else ""))
            else:
                cells.append("skip: " + why)
                said.add(why)
        if cols:
            errs = {}
            for (label, _), (err, ok, note) in r["peer_err"].items():
                e = errs.setdefault(label, [0.0, True, note])
                e[0], e[1] = max(e[0], err), e[1] and ok
            cells.append(", ".join(f"{label}{f' ({n})' if n else ''} {err:.1g}"
                                   f"{'' if ok or n else ' (NOT within rtol 1e-4)'}"
                                   for label, (err, ok, n) in errs.items()) or "—")
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def peer_notes(a):
    """How each peer that ran was configured, with its version."""
    from importlib import metadata

    def version(pkg):
        try:
            return metadata.version(pkg)
        except metadata.PackageNotFoundError:
            return "not installed"
    labels = {label for label, _, _ in a.peer_columns}
    out = []
    if "OpenVINO" in labels:
        out.append(f"OpenVINO {version('openvino')}: CPU plugin, PERFORMANCE_HINT LATENCY, "
                   "INFERENCE_NUM_THREADS 1 / 2, INFERENCE_PRECISION_HINT f32; \"default precision\" "
                   "is the same without the precision hint (the plugin's choice, shown in the cell), "
                   "its error against the folder's reference outputs (PyTorch's)")
    if "IREE" in labels:
        out.append(f"IREE {version('iree-base-compiler')} (runtime {version('iree-base-runtime')}): "
                   "iree-import-onnx, iree-compile --iree-hal-target-device=local "
                   "--iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=host; "
                   "local-task device, --task_topology_max_group_count=1 / 2, one child process per "
                   "thread count, inputs uploaded once, each synchronous call timed")
    if "emx-onnx-cgen" in labels:
        out.append(f"emx-onnx-cgen {version('emx-onnx-cgen')}: `compile` with its defaults "
                   "(weights over 100 KiB in a file loaded once), built with "
                   f"`cc {' '.join(peers.CFLAGS)}` like kiln's C and bench/peer_harness.c; "
                   "single-threaded code")
    if "onnx2c" in labels:
        out.append("onnx2c: $ONNX2C (a binary built from its source; no PyPI or Debian package), "
                   f"its C built like emx-onnx-cgen's; single-threaded code")
    return out


def notes(rows, a):
    return "\n".join([
        "",
        f"- {rows[0]['runs'] if rows else 0} timed inferences per engine and model (median), "
        f"in {a.rounds} interleaved rounds after warm-up, each batch after a {SETTLE_S:g} s pause "
        f"(the engine before lets its spinning threads go idle); ORT {ort.__version__} "
        f"(CPUExecutionProvider, all graph optimisations, timed around Python "
        f"`run_with_iobinding` with inputs and outputs bound once).",
        "- ratio = ORT ms / kiln ms: above 1 means kiln is faster.",
        "- kiln 2T: the model compiled with --threads 2 (kiln's thread pool, built with -pthread); "
        "agrees covers both kiln builds.",
        f"- peak: measured fp32 FMA throughput {a.peak:.1f} GFLOP/s on one core, {a.peak2:.1f} on "
        f"two (bench/peak_fma.c, -O2 -march=native); issue 5's reference machine: ~117 / ~233.",
    ] + ([
        "- WARNING: a model ran faster than the measured peak (* > peak): the machine was loaded "
        "while the peak was measured, so the peak and every timing here are depressed; rerun on a "
        "quiet machine before quoting percentages."
    ] if getattr(a, "peak_low", False) else []) + [
        "- kiln RSS: /usr/bin/time -v of the kiln-built timing program; bound = weights + "
        "workspace + 2 MiB. ORT RSS: /usr/bin/time -v of a python process that imports "
        "onnxruntime, makes one 1-thread session and runs it; session + = VmHWM after minus "
        "VmRSS before making the session.",
        "- kiln binary: the timing program (generated model + driver); ORT lib+model: "
        "onnxruntime's shared libraries + model.onnx.",
        f"- agrees: kiln's outputs vs ORT's on the same input, numpy allclose rtol {RTOL:g} "
        f"atol {ATOL:g}; for quantized rows (bench.json's min_cosine) the cosine of kiln's "
        f"output (each row) with the f32 reference instead, ORT's beside it; for quantize_dynamic rows "
        f"(min_cosine_ort) the cosine of kiln's whole output with ORT's on the same int8 file.",
    ] + [f"- {n}" for n in peer_notes(a)] + ([
        f"- a peer whose {a.runs // a.rounds} inferences of a round would take over {CHUNK_S} s runs "
        f"fewer (at least 3 a round): its cell gives the count."
    ] if a.peer_columns else []) + ([
        "- contended: every timed run had a shell busy loop pinned to the last core beside it "
        "(taskset), as another process holding one core; quiet and contended runs alternate "
        "within each round. kiln 2T/1T is the figure issue 13 watches: target <= 1.10."
    ] if a.contended else []) + [f"- {n}" for n in a.note])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kiln")
    ap.add_argument("--models")
    ap.add_argument("--out")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--peak", type=float, default=117.0)
    ap.add_argument("--peak2", type=float, default=233.0)
    ap.add_argument("--header", default="")
    ap.add_argument("--peers", default="", help="comma-separated: " + ",".join(peers.PEERS))
    ap.add_argument("--contended", action="store_true",
                    help="time everything again beside a busy loop pinned to one core")
    ap.add_argument("--note", action="append", default=[], help="a line for the notes (a skipped row)")
    ap.add_argument("--ort-rss")
    ap.add_argument("--names", nargs="*")
    ap.add_argument("--files", nargs="*")
    a = ap.parse_args()
    if a.ort_rss:
        return ort_rss_child(a.ort_rss, a.names or [], a.files or [])
    a.peer_columns = peers.columns([p for p in a.peers.split(",") if p])
    os.environ["KILN_BENCH_KILN"] = a.kiln  # the kiln-bf16 column builds with it
    names = a.only or sorted(os.listdir(a.models))
    rows = [compare(a, n) for n in names]
    text = table(rows, a) + "\n"
    if a.peer_columns or a.contended:
        text += "\nAll engines, quiet:\n\n" + latency_table(rows, a, "ms") + "\n"
    if a.contended:
        text += ("\nAll engines, contended (a busy loop pinned to one core beside every timed run):\n\n"
                 + latency_table(rows, a, "busy_ms") + "\n")
    text += notes(rows, a) + "\n"
    print("\n" + text)
    if a.out:
        with open(a.out, "w") as f:
            with open("/proc/loadavg") as la:
                end = " ".join(la.read().split()[:3])
            f.write(f"# kiln vs ONNX Runtime\n\n{a.header}\nLoad average at the end {end}.\n\n{text}")
    return 0 if all(r["agree"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
