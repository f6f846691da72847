#!/usr/bin/env python3
"""make_shapes.py — the transformer GEMM shapes of issue 5 as one-Linear
ONNX models, for tests/gemm_perf/gemm_shapes.sh (the GEMM micro-benchmark).

Each shape is MatMul by a constant weight + bias, with the epilogue the
real layer has (GELU after FF1, the residual after the out-projection and
FF2), which the fuse_linear pass turns into one Linear, i.e. one call of the
packed kernel (compiler/ops/gemm_kernel.c). Each model comes with the
numpy reference (float64, rounded), so `kiln check` can verify it too.

    /work/venv/bin/python tests/gemm_perf/make_shapes.py OUTDIR

With --tests, it writes instead the test cases of TEST_SHAPES (committed in
tests/generated/gemm_shapes_tiles/, run by tests/tests.cmake):

    /work/venv/bin/python tests/gemm_perf/make_shapes.py --tests tests/generated/gemm_shapes_tiles
"""
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32 = TensorProto.FLOAT

# name, M, K, N, epilogue — MiniLM (d 384, ff 1536, 128 tokens) and enc4
# (d 256, ff 1024, 64 tokens)
SHAPES = [
    ("minilm_qkv", 128, 384, 1152, "bias"),
    ("minilm_proj", 128, 384, 384, "residual"),
    ("minilm_ff1", 128, 384, 1536, "gelu"),
    ("minilm_ff2", 128, 1536, 384, "residual"),
    ("enc4_qkv", 64, 256, 768, "bias"),
    ("enc4_proj", 64, 256, 256, "residual"),
    ("enc4_ff1", 64, 256, 1024, "gelu"),
    ("enc4_ff2", 64, 1024, 256, "residual"),
]

# Test cases: K split in blocks (K = 2100 for avx2 and avx512) with several
# row tiles and full panels, each tile summing its share of every block;
# then an edge panel, and a residual added after the last block. New cases
# go at the end: the generator draws them in order from one seed.
TEST_SHAPES = [
    ("linear_kblock_tiles", 13, 2100, 40, "residual"),
    ("linear_gelu_tiles", 20, 70, 36, "gelu"),
    # K in blocks with 2+ full panels and 2+ row tiles: every row tile
    # prefetches its share of the next block, the last panel's the first
    # panel's next K block (gemm_kernel.c, GEMM_PREFETCH_SPREAD)
    ("linear_kblock_panels", 20, 2100, 70, "residual"),
]


def model(name, m, k, n, epi, rng):
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = (rng.standard_normal((k, n)) / math.sqrt(k)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    y = x.astype(np.float64) @ w.astype(np.float64) + b
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"]),
             helper.make_node("Add", ["mm", "b"], ["lin" if epi != "bias" else "y"])]
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]
    if epi == "gelu":  # x·0.5·(1 + erf(x/√2)) as PyTorch exports nn.GELU()
        nodes += [helper.make_node("Div", ["lin", "sqrt2"], ["g_div"]),
                  helper.make_node("Erf", ["g_div"], ["g_erf"]),
                  helper.make_node("Add", ["g_erf", "one"], ["g_add"]),
                  helper.make_node("Mul", ["lin", "g_add"], ["g_mul"]),
                  helper.make_node("Mul", ["g_mul", "half"], ["y"])]
        inits += [numpy_helper.from_array(np.array(v, np.float32), nm)
                  for nm, v in (("sqrt2", 1.4142135381698608), ("one", 1.0), ("half", 0.5))]
        y = 0.5 * y * (1 + np.vectorize(math.erf)(y / math.sqrt(2)))
    elif epi == "residual":  # the residual: a second input [M, N]
        nodes.append(helper.make_node("Add", ["lin", "r"], ["y"]))
    inputs = [helper.make_tensor_value_info("x", F32, [m, k])]
    feeds = [x]
    if epi == "residual":
        r = rng.standard_normal((m, n)).astype(np.float32)
        inputs.append(helper.make_tensor_value_info("r", F32, [m, n]))
        feeds.append(r)
        y = y + r
    g = helper.make_graph(nodes, name, inputs, [helper.make_tensor_value_info("y", F32, [m, n])], inits)
    mp = helper.make_model(g, producer_name="kiln-gemm-perf", opset_imports=[helper.make_opsetid("", 14)])
    mp.ir_version = 8
    return mp, feeds, y.astype(np.float32)


def main():
    tests = len(sys.argv) > 2 and sys.argv[1] == "--tests"
    out = sys.argv[2] if tests else sys.argv[1] if len(sys.argv) > 1 else "gemm_perf_models"
    rng = np.random.default_rng(5)
    for name, m, k, n, epi in TEST_SHAPES if tests else SHAPES:
        d = os.path.join(out, name)
        os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
        mp, feeds, y = model(name, m, k, n, epi, rng)
        onnx.save(mp, os.path.join(d, "model.onnx"))
        for i, (v, nm) in enumerate(zip(feeds, ("x", "r"))):
            with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(v, nm).SerializeToString())
        with open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(y, "y").SerializeToString())
        print(f"{name} {m} {k} {n} {epi}")


if __name__ == "__main__":
    main()
