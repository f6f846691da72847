"""The optional peers of bench/compare.py: OpenVINO, IREE, emx-onnx-cgen, onnx2c,
and kiln itself with --precision=bf16 (beside OpenVINO's default precision).

compare.py times kiln and ONNX Runtime always, and these only when asked
(bench/run.sh --peers, or KILN_BENCH_PEERS=openvino,iree,emx,onnx2c,kiln-bf16). Each
peer is one function prepare_NAME(model, threads) that returns a runner, or
a string: the one-line reason it is skipped (not installed, the model did not
compile), which the table shows in its cell. A runner has
    label        its column in the table
    times(n)     n inferences, each one's time in ms (the caller warms up first)
    outputs()    its outputs for the model's input, in the model's output order
    note         what the table adds to its figure ("" or, say, "bf16")
    close()
How each peer is configured (bench/README.md, "Peers", has the same list):
- OpenVINO: the CPU plugin, PERFORMANCE_HINT LATENCY, INFERENCE_NUM_THREADS
  1 or 2, INFERENCE_PRECISION_HINT f32 for the f32 columns; and once more
  with the plugin's default precision (bf16 where the CPU has AVX512-BF16 or
  AMX), reported beside its max abs error against the reference outputs.
- IREE: iree-import-onnx, then iree-compile for llvm-cpu with
  --iree-llvmcpu-target-cpu=host; run on the local-task device in a child
  process (the runtime's task topology is read from its flags once per
  process) with --task_topology_max_group_count=1 or 2.
- emx-onnx-cgen and onnx2c: their C, built with kiln bench's flags and
  bench/peer_harness.c (kiln's timing program's interface); single-threaded
  code, so 1 thread only. onnx2c is no PyPI package: set ONNX2C to a binary
  built from its source, else it is skipped with that reason.
- kiln-bf16: `kiln bench --precision=bf16` (weights in bf16, vdpbf16ps
  where the CPU has AVX512-BF16), 1 and 2 threads, reported like OpenVINO's
  default precision: beside its max abs error against the reference.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

import numpy as np

# kiln bench's default flags (compiler/cmd/main.c), for the peers' C as for kiln's
CFLAGS = ["-O2", "-march=native", "-ffp-contract=fast"]
HERE = os.path.dirname(os.path.abspath(__file__))
VENV_BIN = os.path.dirname(sys.executable)
BUILD_TIMEOUT = 1800  # s: an emitter or gcc that takes longer is a skip


class Model:
    """What a peer needs of one benchmark model: its folder and ONNX file,
    its inputs (names, arrays), ORT's outputs (names, arrays: the shapes and
    dtypes every peer's must have) and a folder for the peer's builds."""

    def __init__(self, d, names, arrays, out_names, want, work):
        self.dir, self.onnx = d, os.path.join(d, "model.onnx")
        self.names, self.arrays = names, arrays
        self.out_names, self.want = out_names, want
        self.work = work


def first_line(text, limit=110):
    """The last non-empty line of an error text, shortened for a table cell
    (tools print their summary last)."""
    lines = [s.strip() for s in str(text).splitlines() if s.strip()]
    s = lines[-1] if lines else "no message"
    return s if len(s) <= limit else s[:limit - 3] + "..."


def tool(cmd, cwd=None, stdout=None):
    """Run a peer's build step: None on success, else a one-line reason."""
    try:
        p = subprocess.run(cmd, cwd=cwd, stdout=stdout or subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=BUILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        return f"{os.path.basename(cmd[0])} took over {BUILD_TIMEOUT} s"
    except OSError as e:
        return f"{os.path.basename(cmd[0])}: {e.strerror}"
    if p.returncode != 0:
        out = (p.stdout or "") if stdout is None else ""
        return f"{os.path.basename(cmd[0])} failed: {first_line(p.stderr + out)}"
    return None


# ---- OpenVINO ---------------------------------------------------------------

class OvRunner:
    """One compiled model and one infer request, its inputs set once."""

    def __init__(self, cm, m, label):
        import openvino as ov
        self.label, self.cm = label, cm
        self.req = cm.create_infer_request()
        for n, x in zip(m.names, m.arrays):
            self.req.set_tensor(cm.input(n), ov.Tensor(np.ascontiguousarray(x)))
        self.outs = [cm.output(n) for n in m.out_names]
        prec = cm.get_property("INFERENCE_PRECISION_HINT")
        self.precision = prec.get_type_name() if hasattr(prec, "get_type_name") else str(prec)
        self.note = ""

    def times(self, n):
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            self.req.infer()
            out.append((time.perf_counter() - t0) * 1e3)
        return out

    def outputs(self):
        self.req.infer()
        return [np.array(self.req.get_tensor(o).data) for o in self.outs]

    def close(self):
        self.req = self.cm = None


def openvino(m, threads, precision):
    try:
        import openvino as ov
    except ImportError:
        return "not installed (pip install openvino)"
    cfg = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": threads}
    if precision:
        cfg["INFERENCE_PRECISION_HINT"] = precision
    try:
        cm = ov.Core().compile_model(m.onnx, "CPU", cfg)
    except Exception as e:  # OpenVINO raises RuntimeError and its own types
        return "could not compile the model: " + first_line(e)
    return OvRunner(cm, m, "OpenVINO" if precision else "OpenVINO default precision")


def prepare_openvino(m, threads):
    return openvino(m, threads, "f32")


def prepare_openvino_default(m, threads):
    r = openvino(m, threads, None)
    if not isinstance(r, str):
        r.note = r.precision
    return r


# ---- IREE -------------------------------------------------------------------

_iree_built = {}  # model folder -> the .vmfb, or why there is none


def iree_build(m):
    if m.dir in _iree_built:
        return _iree_built[m.dir]
    imp, comp = os.path.join(VENV_BIN, "iree-import-onnx"), os.path.join(VENV_BIN, "iree-compile")
    if not (os.path.exists(imp) and os.path.exists(comp)):
        r = "not installed (pip install iree-base-compiler iree-base-runtime)"
    else:
        d = os.path.join(m.work, "iree")
        os.makedirs(d, exist_ok=True)
        mlir, vmfb = os.path.join(d, "model.mlir"), os.path.join(d, "model.vmfb")
        r = (tool([imp, m.onnx, "-o", mlir]) or
             tool([comp, "--iree-hal-target-device=local",
                   "--iree-hal-local-target-device-backends=llvm-cpu",
                   "--iree-llvmcpu-target-cpu=host", mlir, "-o", vmfb]))
        r = r and ("could not compile the model: " + r)
        r = r or vmfb
    _iree_built[m.dir] = r
    return r


class ServerRunner:
    """A peer that runs in a child process (peers.py SERVE ...), asked over a
    pipe: "times N" answers with a JSON list of ms, "outputs DIR" writes
    out_K.npy into DIR; its first line is "ready" or why it is not."""

    def __init__(self, label, argv, work):
        self.label, self.note, self.work = label, "", work
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.ready = self.p.stdout.readline().strip()

    def ask(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline()

    def times(self, n):
        return json.loads(self.ask(f"times {n}"))

    def outputs(self):
        k = int(self.ask(f"outputs {self.work}"))
        return [np.load(os.path.join(self.work, f"out_{i}.npy")) for i in range(k)]

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def prepare_iree(m, threads):
    try:
        import iree.runtime  # noqa: F401
    except ImportError:
        return "not installed (pip install iree-base-compiler iree-base-runtime)"
    vmfb = iree_build(m)
    if not vmfb.endswith(".vmfb"):
        return vmfb
    d = os.path.join(m.work, "iree")
    ins = []
    for k, x in enumerate(m.arrays):
        ins.append(os.path.join(d, f"in_{k}.npy"))
        np.save(ins[-1], x)
    argv = [sys.executable, os.path.abspath(__file__), "iree-serve", vmfb, str(threads)] + ins
    r = ServerRunner("IREE", argv, d)
    if r.ready != "ready":
        r.close()
        return "could not run the model: " + first_line(r.ready)
    return r


def iree_serve(vmfb, threads, inputs):
    """The child process of prepare_iree: one local-task device whose task
    executor has `threads` workers, the module's entry point, its inputs
    uploaded once."""
    import iree.runtime as rt
    try:
        rt.flags.parse_flags(f"--task_topology_max_group_count={threads}")
        cfg = rt.Config("local-task")
        with open(vmfb, "rb") as f:
            vm = rt.VmModule.copy_buffer(cfg.vm_instance, f.read())
        ctx = rt.SystemContext(config=cfg)
        ctx.add_vm_module(vm)
        entry = [n for n in vm.function_names if not n.startswith("__") and not n.endswith("$async")]
        fn = ctx.modules[vm.name][entry[0]]
        xs = [rt.asdevicearray(cfg.device, np.load(p)) for p in inputs]
        fn(*xs)
    except Exception as e:
        print(first_line(e).replace("\n", " "), flush=True)
        return 1
    print("ready", flush=True)
    for line in sys.stdin:
        cmd, arg = line.split()
        if cmd == "times":
            out = []
            for _ in range(int(arg)):
                t0 = time.perf_counter()
                fn(*xs)
                out.append((time.perf_counter() - t0) * 1e3)
            print(json.dumps(out), flush=True)
        else:
            r = fn(*xs)
            r = list(r) if isinstance(r, (tuple, list)) else [r]
            for k, y in enumerate(r):
                np.save(os.path.join(arg, f"out_{k}.npy"), y.to_host())
            print(len(r), flush=True)
    return 0


# ---- C emitters: emx-onnx-cgen, onnx2c --------------------------------------

class CProgram:
    """A peer's C built with bench/peer_harness.c: prog RUNS WARMUP in... [out...]."""

    def __init__(self, label, prog, inputs, m):
        self.label, self.note, self.prog, self.inputs, self.m = label, "", prog, inputs, m
        self.dir = os.path.dirname(prog)

    def run(self, args, env=None):
        p = subprocess.run([self.prog] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True, env=env)
        if p.returncode != 0:
            raise RuntimeError(f"{self.label}: {self.prog} failed ({p.returncode}): {p.stderr}")

    def times(self, n):
        tf = os.path.join(self.dir, "times.txt")
        self.run([str(n), str(max(5, n // 10))] + self.inputs, env=dict(os.environ, KILN_BENCH_TIMES=tf))
        with open(tf) as f:
            return [float(x) for x in f.read().split()]

    def outputs(self):
        paths = [os.path.join(self.dir, f"out{i}.raw") for i in range(len(self.m.want))]
        self.run(["1", "0"] + self.inputs + paths)
        return [np.fromfile(p, dtype=w.dtype).reshape(w.shape) for p, w in zip(paths, self.m.want)]

    def close(self):
        pass


def build_c(label, m, d, entry, init):
    """Build the model's C in d (model.c, written by the emitter) with the
    harness: peer_model.h declares `entry` with one pointer per input and
    output, PEER_INIT() is `init` (a C expression). A CProgram, or why not."""
    nin, nout = len(m.arrays), len(m.want)
    params = ", ".join(["const void *"] * nin + ["void *"] * nout)
    args = ", ".join([f"in[{i}]" for i in range(nin)] + [f"out[{i}]" for i in range(nout)])
    with open(os.path.join(d, "peer_model.h"), "w") as f:
        f.write("/* written by bench/peers.py for bench/peer_harness.c */\n#include <stddef.h>\n"
                f"#define PEER_NIN {nin}\n#define PEER_NOUT {nout}\n"
                f"static const size_t peer_in_bytes[PEER_NIN] = {{{', '.join(str(x.nbytes) for x in m.arrays)}}};\n"
                f"static const size_t peer_out_bytes[PEER_NOUT] = {{{', '.join(str(w.nbytes) for w in m.want)}}};\n"
                f"void {entry}({params});\n{init[0]}\n#define PEER_INIT() ({init[1]})\n"
                f"#define PEER_CALL(in, out) {entry}({args})\n")
    cc = os.environ.get("CC", "cc")
    obj, prog = os.path.join(d, "model.o"), os.path.join(d, "bench")
    why = tool([cc] + CFLAGS + ["-c", "-o", obj, os.path.join(d, "model.c")])
    if why:
        return "its C did not build: " + why
    link = [cc] + CFLAGS + ["-I", d, "-o", prog, os.path.join(HERE, "peer_harness.c"), obj, "-lm"]
    why = tool(link + ["-static"]) and tool(link)
    if why:
        return "its C did not link: " + why
    inputs = []
    for k, x in enumerate(m.arrays):
        inputs.append(os.path.join(d, f"in{k}.bin"))
        np.ascontiguousarray(x).tofile(inputs[-1])
    return CProgram(label, prog, inputs, m)


def fresh(d):
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def prepare_emx(m, threads):
    if threads != 1:
        return "single-threaded C"
    exe = os.path.join(VENV_BIN, "emx-onnx-cgen")
    if not os.path.exists(exe):
        return "not installed (pip install emx-onnx-cgen)"
    d = fresh(os.path.join(m.work, "emx"))
    why = tool([exe, "compile", "--color", "never", "--model-name", "emx_model", m.onnx,
                os.path.join(d, "model.c")])
    if why:
        return "could not compile the model: " + why
    # emx keeps weights over 100 KiB in a file its _load function reads
    blob = os.path.join(d, "emx_model.bin")
    init = (("_Bool emx_model_load(const char *path);", f"emx_model_load({json.dumps(blob)})")
            if os.path.exists(blob) else ("", "1"))
    return build_c("emx-onnx-cgen", m, d, "emx_model", init)


def prepare_onnx2c(m, threads):
    if threads != 1:
        return "single-threaded C"
    exe = os.environ.get("ONNX2C") or shutil.which("onnx2c")
    if not exe:
        return "not installed (no PyPI or Debian package: set ONNX2C to a build of its source)"
    d = fresh(os.path.join(m.work, "onnx2c"))
    with open(os.path.join(d, "model.c"), "w") as f:
        why = tool([exe, m.onnx], stdout=f)
    if why:  # its log lines start with a date and time
        return "could not compile the model: " + re.sub(r"\d{4}-\d\d-\d\d [\d.-]+ ", "", why)
    return build_c("onnx2c", m, d, "entry", ("", "1"))


# ---- kiln with --precision=bf16 --------------------------------------------

class KilnBf16(CProgram):
    """The timing program `kiln bench --precision=bf16 --keep` built (the
    harness interface CProgram drives), removed when done."""

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def prepare_kiln_bf16(m, threads):
    kiln = os.environ.get("KILN_BENCH_KILN")
    if not kiln:
        return "no kiln binary (compare.py passes it in KILN_BENCH_KILN)"
    d = fresh(os.path.join(m.work, f"kiln_bf16_t{threads}"))
    args = []
    for k, (n, x) in enumerate(zip(m.names, m.arrays)):
        path = os.path.join(d, f"in{k}.npy")
        np.save(path, x)
        args += ["--input", f"{n}={path}"]
    p = subprocess.run([kiln, "bench", m.onnx, "--keep", "--runs", "5", "--threads", str(threads),
                        "--precision=bf16"] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=BUILD_TIMEOUT)
    if p.returncode != 0:
        return "kiln bench --precision=bf16 failed: " + first_line(p.stdout)
    kept = re.search(r"build folder kept: (\S+) \(rerun: (.*)\)$", p.stdout, re.M)
    argv = shlex.split(kept.group(2))
    r = KilnBf16("kiln bf16", argv[0], argv[3:], m)
    r.note = "bf16"
    return r


# The peers compare.py knows, in table order: the name --peers takes, and
# its columns (a prepare function and the thread counts it runs at).
PEERS = {
    "openvino": [(prepare_openvino, (1, 2)), (prepare_openvino_default, (1, 2))],
    "iree": [(prepare_iree, (1, 2))],
    "emx": [(prepare_emx, (1,))],
    "onnx2c": [(prepare_onnx2c, (1,))],
    "kiln-bf16": [(prepare_kiln_bf16, (1, 2))],
}
LABELS = {prepare_openvino: "OpenVINO", prepare_openvino_default: "OpenVINO default precision",
          prepare_iree: "IREE", prepare_emx: "emx-onnx-cgen", prepare_onnx2c: "onnx2c",
          prepare_kiln_bf16: "kiln --precision=bf16"}


def columns(names):
    """The (label, prepare, threads) of the peers named, or exit 1 naming an unknown one."""
    out = []
    for n in names:
        if n not in PEERS:
            sys.exit(f"compare: unknown peer '{n}'; expected some of {', '.join(PEERS)}")
        out += [(LABELS[p], p, t) for p, t in PEERS[n]]
    return out


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "iree-serve":
        sys.exit(iree_serve(sys.argv[2], int(sys.argv[3]), sys.argv[4:]))
    sys.exit("usage: peers.py iree-serve VMFB THREADS in_0.npy ... (compare.py's child process)")
