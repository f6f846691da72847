"""make_case.py — reference data for a Lua model, in the ONNX backend-test
layout: seeded random inputs for MODEL.onnx (what `kiln export` wrote) and
ONNX Runtime's outputs, into DIR/test_data_set_0/{input,output}_K.pb.

    python make_case.py MODEL.onnx DIR [--int-high N]

Floats are uniform in [-1, 1); integers in [0, N) (default 4), so they can
index embeddings; bools random."""
import argparse
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("dir")
ap.add_argument("--int-high", type=int, default=4)
ap.add_argument("--seed", type=int, default=0)
args = ap.parse_args()

rng = np.random.default_rng(args.seed)
sess = ort.InferenceSession(args.model, providers=["CPUExecutionProvider"])
model = onnx.load(args.model)
out = os.path.join(args.dir, "test_data_set_0")
os.makedirs(out, exist_ok=True)
feeds = {}
for k, vi in enumerate(model.graph.input):
    t = vi.type.tensor_type
    shape = [d.dim_value for d in t.shape.dim]
    dt = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
    if np.issubdtype(dt, np.floating):
        a = rng.uniform(-1, 1, shape).astype(dt)
    elif dt == np.bool_:
        a = rng.integers(0, 2, shape).astype(np.bool_)
    else:
        a = rng.integers(0, args.int_high, shape).astype(dt)
    feeds[vi.name] = a
    onnx.save_tensor(numpy_helper.from_array(a, vi.name), os.path.join(out, f"input_{k}.pb"))
for k, (o, a) in enumerate(zip(model.graph.output, sess.run(None, feeds))):
    onnx.save_tensor(numpy_helper.from_array(np.asarray(a), o.name), os.path.join(out, f"output_{k}.pb"))
