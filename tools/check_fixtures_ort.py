#!/usr/bin/env python3
"""Cross-check the fixtures under tests/models with onnxruntime.

Why: the reference outputs come from PyTorch; if onnxruntime, run on the
exported model.onnx, agrees with them, then the ONNX graph (not just the
PyTorch model) means what the outputs say, and a kiln mismatch is kiln's bug.

Run with the venv that has onnx, onnxruntime and numpy:
    /work/venv/bin/python tools/check_fixtures_ort.py [--tol 1e-4] [DIR ...]
DIR defaults to every fixture folder in tests/models. Prints, per fixture,
max abs and max rel error per output and the op types used; exits 1 if any
output differs by more than --tol (absolute).
"""

import argparse
import collections
import glob
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper
import onnxruntime as ort


def load_pbs(folder, prefix):
    """input_K.pb / output_K.pb in K order, as (name, array)."""
    out = []
    for k in range(len(glob.glob(os.path.join(folder, prefix + "_*.pb")))):
        t = onnx.TensorProto()
        with open(os.path.join(folder, f"{prefix}_{k}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        out.append((t.name, numpy_helper.to_array(t)))
    return out


def rel_err(got, want):
    """max |got - want| / max |want|: the error relative to the output's scale
    (elementwise relative error blows up on outputs that happen to be near 0)."""
    return float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))


def check(fixture, tol):
    model_path = os.path.join(fixture, "model.onnx")
    model = onnx.load(model_path)
    ops = collections.Counter(n.op_type for n in model.graph.node)
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    ok = True
    for ds in sorted(glob.glob(os.path.join(fixture, "test_data_set_*"))):
        inputs = dict(load_pbs(ds, "input"))
        wants = load_pbs(ds, "output")
        gots = sess.run([n for n, _ in wants], inputs)
        for (name, want), got in zip(wants, gots):
            abs_err = float(np.max(np.abs(got - want)))
            good = got.shape == want.shape and np.all(np.isfinite(got)) and abs_err <= tol
            ok &= bool(good)
            print(f"{'ok  ' if good else 'FAIL'} {os.path.basename(fixture)}/"
                  f"{os.path.basename(ds)} {name}{list(got.shape)}: "
                  f"max abs {abs_err:.2e}, max rel {rel_err(got, want):.2e}")
    print("     ops: " + ", ".join(f"{op} {n}" for op, n in sorted(ops.items())))
    return ok


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("dirs", nargs="*")
    a = ap.parse_args()
    dirs = a.dirs or sorted(os.path.dirname(p) for p in
                            glob.glob(os.path.join(here, "..", "tests", "models", "*", "model.onnx")))
    results = [check(d, a.tol) for d in dirs]
    sys.exit(0 if all(results) and results else 1)


if __name__ == "__main__":
    main()
