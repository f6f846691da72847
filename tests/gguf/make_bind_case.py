#!/usr/bin/env python3
"""make_bind_case.py GGUF DIR — reference data for tests/gguf/bind/model.lua:
DIR/test_data_set_0/{input,output}_N.pb from the GGUF file read by the
PyPI gguf package (GGUFReader, its own dequantize for the block types) and
numpy, in float64: x @ W^T for each matrix, x * w for each norm, in the
model's output order. Run with build/venv/bin/python (numpy, onnx, gguf)."""
import os
import sys

import numpy as np
import gguf
from gguf.quants import dequantize
from onnx import numpy_helper


def main():
    path, out = sys.argv[1], sys.argv[2]
    r = gguf.GGUFReader(path)
    w = {}
    for t in r.tensors:
        # the reader gives the row-major shape (ne reversed) for plain types
        # and [rows, row_bytes] for blocks, which dequantize turns to values
        w[t.name] = dequantize(np.asarray(t.data), t.tensor_type).astype(np.float64).reshape(
            [int(n) for n in reversed(t.shape)])
    d, ffn = w["blk.0.attn_q.weight"].shape[1], w["blk.0.ffn_down.weight"].shape[1]
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (2, d)).astype(np.float32)
    xf = rng.uniform(-1, 1, (2, ffn)).astype(np.float32)
    outs = [("token_embd.weight", x @ w["token_embd.weight"].T)]
    blocks = 1 + max(int(n.split(".")[1]) for n in w if n.startswith("blk."))
    for n in range(blocks):
        b = f"blk.{n}."
        for name in ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm",
                     "ffn_gate", "ffn_up", "ffn_down"):
            wt = w[b + name + ".weight"]
            src = xf if name == "ffn_down" else x
            outs.append((b + name + ".weight", src * wt if wt.ndim == 1 else src @ wt.T))
    outs.append(("output_norm.weight", x * w["output_norm.weight"]))
    outs.append(("output.weight", x @ w["output.weight"].T))
    ds = os.path.join(out, "test_data_set_0")
    os.makedirs(ds, exist_ok=True)
    for i, (name, a) in enumerate([("x", x), ("xf", xf)]):
        with open(os.path.join(ds, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, name).SerializeToString())
    for i, (name, a) in enumerate(outs):
        with open(os.path.join(ds, f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a.astype(np.float32), "y." + name).SerializeToString())


if __name__ == "__main__":
    main()
