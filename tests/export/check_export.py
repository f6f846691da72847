"""check_export.py — `kiln export` against ONNX Runtime.

    python check_export.py KILN [--node-list FILE] [--node-dir DIR] [CASE...]

For each case: export the model with kiln, check the file with
onnx.checker (full_check=True), run it in ONNX Runtime and compare with
`kiln run ... --out DIR` on the same inputs (|got - want| <= atol + rtol·|want|,
rtol 1e-4, atol 1e-5; integers and bools exactly). The cases:

  model:NAME    each tests/models/NAME fixture, on its test_data_set_0 inputs,
                exported as it is (default passes) and after every pass but
                plan (so the kiln ops fusion makes and, below opset 17,
                LayerNormalization are lowered back to standard ops);
  kir:NAME      each tests/passes/NAME.kir that holds a kiln op (Linear,
                Gelu, ...) or LayerNormalization after fusion, exported after
                fusion, on seeded random inputs (a file with a line
                '# NO-EXPORT: why' is left out);
  export:NAME   each tests/export/NAME.kir (forms the other cases miss), with
                the export flags of its "# RUN:" line, on seeded random inputs;
  node:NAME     each ONNX backend node test named in --node-list, on its
                inputs, exported as it is and with --passes=bind,infer (no
                fold: values that infer folded stay their nodes' outputs).

CASE arguments restrict the run to those names (e.g. model:encoder_2l_op14).
Prints one line per case and ends with "N passed, N failed"; exit 1 if any
failed.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

RTOL, ATOL = 1e-4, 1e-5
KEPT = "--passes=bind,infer"
HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)


class Failure(Exception):
    pass


def kiln(binary, *args):
    r = subprocess.run([binary, *args], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise Failure(f"kiln {args[0]} exited {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def graph_inputs(model_path):
    """(name, elem_type, dims) of the real inputs: those without initializers."""
    m = onnx.load(model_path, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    out = []
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        dims = [d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim]
        out.append((vi.name, vi.type.tensor_type.elem_type, dims))
    return out


def read_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def data_set_inputs(test_dir, model_path):
    """name -> array from test_data_set_0/input_K.pb, in graph-input order."""
    names = [n for n, _, _ in graph_inputs(model_path)]
    pbs = sorted(glob.glob(os.path.join(test_dir, "test_data_set_0", "input_*.pb")),
                 key=lambda p: int(p.rsplit("_", 1)[1].split(".")[0]))
    if len(pbs) != len(names):
        raise Failure(f"{len(pbs)} input files for {len(names)} graph inputs")
    return {n: read_pb(p) for n, p in zip(names, pbs)}


def random_inputs(exported_path, seed):
    """Seeded data for each input of the exported model: floats in [-1, 1),
    integers in [0, 3), bools at random; symbolic dims get 3."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, et, dims in graph_inputs(exported_path):
        dims = [3 if d is None else d for d in dims]
        dt = onnx.helper.tensor_dtype_to_np_dtype(et)
        if dt == np.bool_:
            feeds[name] = rng.integers(0, 2, dims).astype(np.bool_)
        elif np.issubdtype(dt, np.floating):
            feeds[name] = rng.uniform(-1, 1, dims).astype(dt)
        else:
            feeds[name] = rng.integers(0, 3, dims).astype(dt)
    return feeds


def shape_flags(feeds):
    return [f"--shape={n}={'x'.join(str(d) for d in a.shape)}" for n, a in feeds.items()]


def kiln_outputs(binary, model, feeds, work):
    """kiln run on feeds; the outputs it writes with --out, in graph order."""
    args = ["run", model]
    for i, (name, arr) in enumerate(feeds.items()):
        path = os.path.join(work, f"in_{i}.pb")
        with open(path, "wb") as f:
            f.write(numpy_helper.from_array(arr, name).SerializeToString())
        args.append(f"--input={name}={path}")
    outdir = os.path.join(work, "kiln_out")
    os.makedirs(outdir, exist_ok=True)
    for old in glob.glob(os.path.join(outdir, "*.pb")):
        os.remove(old)
    kiln(binary, *args, "--out", outdir)
    n = len(glob.glob(os.path.join(outdir, "output_*.pb")))
    return [read_pb(os.path.join(outdir, f"output_{k}.pb")) for k in range(n)]


def ort_outputs(path, feeds):
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    missing = [n for n in names if n not in feeds]
    if missing:
        raise Failure(f"exported inputs {missing} have no data")
    return sess.run(None, {n: feeds[n] for n in names})


def compare(got, want):
    if len(got) != len(want):
        raise Failure(f"ONNX Runtime gave {len(got)} outputs, kiln {len(want)}")
    for k, (g, w) in enumerate(zip(got, want)):
        g = np.asarray(g)
        if g.shape != w.shape or g.dtype != w.dtype:
            raise Failure(f"output {k}: ONNX Runtime {g.dtype}{list(g.shape)}, kiln {w.dtype}{list(w.shape)}")
        if np.issubdtype(w.dtype, np.floating):
            ok = np.allclose(g, w, rtol=RTOL, atol=ATOL, equal_nan=True)
        else:
            ok = np.array_equal(g, w)
        if not ok:
            err = np.max(np.abs(g.astype(np.float64) - w.astype(np.float64))) if g.size else 0
            raise Failure(f"output {k}: max |ONNX Runtime - kiln| = {err:.3g}")


def check_case(binary, model, flags, feeds, work, seed=0):
    """Export model with flags, check it, run both ways; feeds None = random."""
    out = os.path.join(work, "exported.onnx")
    if os.path.exists(out):
        os.remove(out)
    kiln(binary, "export", model, "-o", out, *flags, *(shape_flags(feeds) if feeds else []))
    try:
        onnx.checker.check_model(onnx.load(out), full_check=True)
    except Exception as e:  # the checker raises several kinds
        raise Failure(f"onnx.checker: {str(e).splitlines()[0]}")
    if feeds is None:
        feeds = random_inputs(out, seed)
    compare(ort_outputs(out, feeds), kiln_outputs(binary, model, feeds, work))


def fused_flag(binary):
    """--passes= with every pass `kiln passes` lists but plan and conv_gemm
    (its Im2Row is a layout with no ONNX form: kiln export refuses it by
    name and exports the Conv as it is): all the fusions there are, so every
    kiln op they make gets lowered."""
    names = [l.split()[0] for l in kiln(binary, "passes").splitlines() if l.strip()]
    return "--passes=" + ",".join(n for n in names if n not in ("plan", "conv_gemm"))


def model_cases(fused):
    hostile = os.path.join(TESTS, "generated", "hostile_names", "model.onnx")
    for d in sorted(glob.glob(os.path.join(TESTS, "models", "*", "model.onnx"))) + [hostile]:
        test_dir = os.path.dirname(d)
        name = os.path.basename(test_dir)
        feeds = lambda d=d, t=test_dir: data_set_inputs(t, d)
        yield f"model:{name}", d, [], feeds
        yield f"model:{name}+fuse", d, [fused], feeds


def lowered_ops(binary):
    """" Op " for each op export lowers: the kiln ops `kiln ops` lists last,
    and LayerNormalization (fused below its opset, 17)."""
    listing = kiln(binary, "ops").split("kiln ops", 1)
    kiln_ops = listing[1].splitlines()[1:] if len(listing) > 1 else []
    return [f" {op.strip()} " for op in kiln_ops if op.strip()] + [" LayerNormalization "]


def kir_cases(binary, fused):
    ops = lowered_ops(binary)
    for path in sorted(glob.glob(os.path.join(TESTS, "passes", "*.kir"))):
        with open(path) as f:
            if any(l.startswith("# NO-EXPORT:") for l in f):
                continue  # the file says why kiln export refuses it
        r = subprocess.run([binary, "opt", path, fused], capture_output=True, text=True)
        if r.returncode == 0 and any(op in r.stdout for op in ops):
            yield f"kir:{os.path.basename(path)[:-4]}", path, [fused], lambda: None


def export_cases():
    for path in sorted(glob.glob(os.path.join(HERE, "*.kir"))):
        with open(path) as f:
            run = [l[len("# RUN:"):].split() for l in f if l.startswith("# RUN:")]
        yield f"export:{os.path.basename(path)[:-4]}", path, run[0] if run else [], lambda: None


def node_cases(node_list, node_dir):
    with open(node_list) as f:
        names = [l.split("#")[0].strip() for l in f]
    for name in filter(None, names):
        model = os.path.join(node_dir, name, "model.onnx")
        feeds = lambda m=model, t=os.path.join(node_dir, name): data_set_inputs(t, m)
        yield f"node:{name}", model, [], feeds
        yield f"node:{name}+kept", model, [KEPT], feeds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kiln")
    ap.add_argument("--node-list", default=os.path.join(HERE, "node_sample.txt"))
    ap.add_argument("--node-dir", default="/usr/include/onnx/backend/test/data/node")
    ap.add_argument("cases", nargs="*")
    a = ap.parse_args()
    binary = os.path.abspath(a.kiln)
    fused = fused_flag(binary)
    cases = [*model_cases(fused), *kir_cases(binary, fused), *export_cases(),
             *node_cases(a.node_list, a.node_dir)]
    if a.cases:
        cases = [c for c in cases if c[0] in a.cases or c[0].split("+")[0] in a.cases]
    passed = failed = 0
    with tempfile.TemporaryDirectory() as work:
        for name, model, flags, feeds in cases:
            try:
                check_case(binary, model, flags, feeds(), work, zlib.crc32(name.encode()))
                passed += 1
                print(f"ok   {name}")
            except (Failure, subprocess.TimeoutExpired, OSError, ValueError) as e:
                failed += 1
                print(f"FAIL {name}: {e}")
            except Exception as e:  # onnxruntime's own errors
                failed += 1
                print(f"FAIL {name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            sys.stdout.flush()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
