#!/usr/bin/python3
"""Write tests/hf/clamp_masked_rows/: Llama's attention tail with rows
masked entirely, against a numpy reference.

Why: transformers' Llama clamps the masked scores, torch.max(scores,
finfo.min), so a query whose every key is masked (left padding) gets a
uniform softmax instead of NaN. kiln fuses the clamp into Attention's
score_min; the tiny export in tests/hf/llama has no such row, so this case
has them: a runtime additive mask with a row all -inf, a row mixing -inf
and finfo.min, and rows that keep keys, over 2 heads and 20 keys (more than
one 16-key tile, and a padded one). The model is .kir text (the unfused
ops, as the export writes them); the reference is numpy's, in float32 where
the graph rounds.
    /usr/bin/python3 tools/make_hf_clamp_case.py [OUT_DIR]
"""
import os
import sys

import numpy as np
from onnx import numpy_helper

S, T, D, H = 4, 20, 8, 2
MIN = np.float32(np.finfo(np.float32).min)

KIR = """graph @clamp opset 14 (%q: f32[1,{H},{S},{D}], %k: f32[1,{H},{T},{D}], %v: f32[1,{H},{T},{D}], %mask: f32[1,1,{S},{T}]) -> (%y) {{
  const %sqrt_d: f32[] = [{sqrt_d!r}]
  const %min: f32[] = [-3.4028235e+38]
  %kt = Transpose %k {{perm=[0,1,3,2]}} : ?  # from: Transpose
  %s = MatMul %q, %kt : ?  # from: MatMul
  %d = Div %s, %sqrt_d : ?  # from: Div
  %a = Add %d, %mask : ?  # from: Add
  %c = Max %a, %min : ?  # from: Max
  %p = Softmax %c {{axis=-1}} : ?  # from: Softmax
  %y = MatMul %p, %v : ?  # from: MatMul_1
}}
"""


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "hf",
                                                              "clamp_masked_rows")
    rng = np.random.default_rng(7)
    q = rng.standard_normal((1, H, S, D)).astype(np.float32)
    k = rng.standard_normal((1, H, T, D)).astype(np.float32)
    v = rng.standard_normal((1, H, T, D)).astype(np.float32)
    mask = np.zeros((1, 1, S, T), np.float32)
    mask[0, 0, 0, :] = -np.inf                      # every key masked by -inf
    mask[0, 0, 1, ::2], mask[0, 0, 1, 1::2] = -np.inf, MIN  # -inf and finfo.min
    mask[0, 0, 2, 5:] = -np.inf                     # keeps keys 0..4
    mask[0, 0, 3, 17] = MIN                         # keeps all but one
    sqrt_d = np.float32(np.sqrt(D))
    s = np.matmul(q, k.transpose(0, 1, 3, 2)) / sqrt_d
    a = (s + mask).astype(np.float32)
    c = np.maximum(a, MIN).astype(np.float64)
    e = np.exp(c - c.max(axis=-1, keepdims=True))
    p = (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)
    y = np.matmul(p.astype(np.float64), v.astype(np.float64)).astype(np.float32)
    assert np.isfinite(y).all()
    os.makedirs(os.path.join(out, "test_data_set_0"), exist_ok=True)
    with open(os.path.join(out, "model.kir"), "w") as f:
        f.write(KIR.format(H=H, S=S, T=T, D=D, sqrt_d=float(sqrt_d)))
    for i, (name, x) in enumerate([("q", q), ("k", k), ("v", v), ("mask", mask)]):
        with open(os.path.join(out, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(x, name).SerializeToString())
    with open(os.path.join(out, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(y, "y").SerializeToString())


if __name__ == "__main__":
    main()
