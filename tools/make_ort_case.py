#!/usr/bin/env python3
"""make_ort_case.py MODEL.onnx OUTDIR NAME=DIMS... [--seed S] [--sets N]

Write OUTDIR in the ONNX backend-test layout (model.onnx, test_data_set_K/
input_0.pb, output_0.pb, ...) for `kiln check`: each input filled with
uniform [-1, 1) values (seed S, default 0) at the shape given, each output
as ONNX Runtime computes it (one thread, all graph optimisations). Used by
tests/conv/check_real.sh on real convolutional models (PP-OCR, the
ResNet-18-sized CNN); needs onnx, onnxruntime and numpy (the venv)."""
import argparse
import os
import shutil

import numpy as np
import onnx
from onnx import numpy_helper
import onnxruntime as ort


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("shapes", nargs="+", help="NAME=1x3x48x320")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sets", type=int, default=1)
    a = ap.parse_args()
    shapes = {}
    for s in a.shapes:
        name, dims = s.split("=")
        shapes[name] = [int(d) for d in dims.split("x")]
    os.makedirs(a.out, exist_ok=True)
    shutil.copyfile(a.model, os.path.join(a.out, "model.onnx"))
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(a.seed)
    for k in range(a.sets):
        d = os.path.join(a.out, "test_data_set_%d" % k)
        os.makedirs(d, exist_ok=True)
        feeds = {}
        for i, inp in enumerate(sess.get_inputs()):
            if inp.name not in shapes:
                raise SystemExit("make_ort_case: no shape for input '%s'; expected %s=DIMS" % (inp.name, inp.name))
            x = rng.uniform(-1, 1, shapes[inp.name]).astype(np.float32)
            feeds[inp.name] = x
            with open(os.path.join(d, "input_%d.pb" % i), "wb") as f:
                f.write(numpy_helper.from_array(x, inp.name).SerializeToString())
        outs = sess.run(None, feeds)
        for i, (o, y) in enumerate(zip(sess.get_outputs(), outs)):
            with open(os.path.join(d, "output_%d.pb" % i), "wb") as f:
                f.write(numpy_helper.from_array(np.asarray(y), o.name).SerializeToString())


if __name__ == "__main__":
    main()
