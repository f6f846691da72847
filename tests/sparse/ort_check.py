#!/usr/bin/env python3
"""ort_check.py MODEL.onnx DATA_DIR [RTOL ATOL] — run an ONNX model that
`kiln export` wrote under ONNX Runtime on DATA_DIR/input_K.pb and compare
with DATA_DIR/output_K.pb (numpy's allclose rule), one line per output.
Exits 0 when every output agrees, 1 otherwise. tests/sparse/run_sparse_tests.sh
uses it to check that the standard-op decompositions of Sparsemax and
Entmax15 compute what kiln's ops compute."""
import glob
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper


def load(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def main():
    model, data = sys.argv[1], sys.argv[2]
    rtol = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-5
    atol = float(sys.argv[4]) if len(sys.argv) > 4 else 1e-6
    onnx.checker.check_model(onnx.load(model), full_check=True)
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    count = len(glob.glob(os.path.join(data, "input_*.pb")))
    feeds = {i.name: load(os.path.join(data, "input_%d.pb" % k)) for k, i in enumerate(sess.get_inputs())}
    assert len(feeds) == count, "the model has %d inputs; the data %d" % (len(feeds), count)
    ok = True
    for k, (o, got) in enumerate(zip(sess.get_outputs(), sess.run(None, feeds))):
        want = load(os.path.join(data, "output_%d.pb" % k))
        err = np.abs(got.astype(np.float64) - want)
        rel = np.max(err / np.maximum(np.abs(want), np.finfo(np.float64).tiny), initial=0)
        good = got.shape == want.shape and got.dtype == want.dtype and np.allclose(got, want, rtol, atol)
        ok = ok and good
        print("  ORT %-12s %s%s max_abs_err %.3g  max_rel_err %.3g  %s"
              % (o.name, got.dtype, list(got.shape), err.max(initial=0), rel, "ok" if good else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
