"""make_rows_bound_cases.py — Linear with a `rows` input (a decoder's
prefill bound, compiler/passes/bound_rows.c) for kiln check, with a numpy
reference written here, independently of kiln's _eval (backend-test
layout under tests/generated/rows_bound/). Run with the venv that has onnx
(for the .pb files):

    build/venv/bin/python tools/make_rows_bound_cases.py tests/generated/rows_bound

    Y[i] = act(X[i] · W + bias) + R[i] for i < clip(rows, 0, M); Y[i] = 0 past it

X is [1, M, K] (a prefill chunk of M tokens), rows a graph input i64[1]
(the entry's count), W a constant [K, N] unless said otherwise:

- relu_k_split: M 13, K 1100 (split in two blocks with --isa=avx512), N 40
  (an edge panel under every --isa), bias and relu, 5 rows.
- residual_gelu_tanh_n1: M 13, K 64, N 40, bias, gelu_tanh (applied to the
  stored tile) and a residual, 1 row.
- gelu_all_rows: M 13, K 64, N 24, gelu in registers, all 13 rows.
- rows_past_m: M 7, K 48, N 16, no bias, rows 100 (clipped to 7).
- rows_negative: the same with rows -2 (clipped to 0: Y all zeros).
- one_panel_m24: M 24, K 700, N 32: one panel under --isa=avx512, so
  --threads 2 splits its row tiles; 9 rows.
- int8: M 13, K 96, N 40, W int8 with a scale per column, bias, 6 rows.
- w_runtime: M 13, K 32, N 24, W a graph input (not the packed GEMM:
  kiln's plain loops, then the rows past the count zeroed), bias, 4 rows."""
import os
import sys

import numpy as np
from onnx import numpy_helper

SQRT_HALF = 0.70710678118654752440
SQRT_2_OVER_PI = 0.79788456080286535588


def erf(x):
    """erf in float64 (math.erf per element: numpy has none)."""
    import math
    return np.vectorize(math.erf)(x)


def act_of(name, v):
    if name == "relu":
        return np.maximum(v, 0)
    if name == "gelu":
        return 0.5 * v * (1 + erf(v * SQRT_HALF))
    if name == "gelu_tanh":
        return 0.5 * v * (1 + np.tanh(SQRT_2_OVER_PI * (v + 0.044715 * v ** 3)))
    return v


def kir_type(a):
    dt = {np.dtype(np.float32): "f32", np.dtype(np.int8): "i8", np.dtype(np.int64): "i64"}[a.dtype]
    return "%s[%s]" % (dt, ",".join(str(d) for d in a.shape))


def write_case(folder, name, m, k, n, rows, note, seed, bias=True, act="none", residual=False, q8=False,
               w_const=True):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, m, k)).astype(np.float32)
    if q8:
        wq = rng.integers(-127, 128, (k, n)).astype(np.int8)
        scale = (rng.random(n) * 0.02 + 0.005).astype(np.float32)
        w = wq.astype(np.float64) * scale.astype(np.float64)
    else:
        wq = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
        scale = None
        w = wq.astype(np.float64)
    b = rng.standard_normal(n).astype(np.float32) if bias else None
    r = rng.standard_normal((1, m, n)).astype(np.float32) if residual else None
    cnt = np.array([rows], np.int64)
    # the reference in float64, rounded once
    y = x.astype(np.float64) @ w
    if b is not None:
        y = y + b
    y = act_of(act, y)
    if r is not None:
        y = y + r
    y[:, max(0, min(rows, m)):, :] = 0
    y = y.astype(np.float32)

    out = os.path.join(folder, name)
    os.makedirs(os.path.join(out, "test_data_set_0"), exist_ok=True)
    inputs = [("x", x)]
    consts, blob = [], bytearray()

    def weight(nm, a):  # a constant in model.bin (64-byte aligned), or a graph input
        nonlocal blob
        if not w_const and nm == "w":
            inputs.append((nm, a))
            return
        while len(blob) % 64:
            blob.append(0)
        consts.append("  const %%%s: %s = bin(%d)\n" % (nm, kir_type(a), len(blob)))
        blob += a.tobytes()

    weight("w", wq)
    if b is not None:
        weight("b", b)
    if scale is not None:
        weight("scale", scale)
    if r is not None:
        inputs.append(("r", r))
    inputs.append(("rows", cnt))
    ops = ["%x", "%w", "%b" if b is not None else "_", "%r" if r is not None else "_",
           "%scale" if scale is not None else "_", "_", "%rows"]
    attr = ' {act="%s"}' % act if act != "none" else ""
    with open(os.path.join(out, "model.kir"), "w") as f:
        f.write(f"# {note} (tools/make_rows_bound_cases.py)\n")
        params = ", ".join("%%%s: %s" % (nm, kir_type(a)) for nm, a in inputs)
        f.write(f"graph @{name} opset 17 ({params}) -> (%y) {{\n")
        f.writelines(consts)
        f.write(f"  %y = Linear {', '.join(ops)}{attr} : ?  # from: linear\n}}\n")
    with open(os.path.join(out, "model.bin"), "wb") as f:
        f.write(bytes(blob))
    for kind, items in (("input", inputs), ("output", [("y", y)])):
        for i, (nm, val) in enumerate(items):
            with open(os.path.join(out, "test_data_set_0", f"{kind}_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(val, nm).SerializeToString())


def main():
    folder = sys.argv[1]
    write_case(folder, "relu_k_split", 13, 1100, 40, 5, "K in two blocks (avx512), relu, 5 of 13 rows", 1,
               act="relu")
    write_case(folder, "residual_gelu_tanh_n1", 13, 64, 40, 1, "gelu_tanh and a residual, 1 of 13 rows", 2,
               act="gelu_tanh", residual=True)
    write_case(folder, "gelu_all_rows", 13, 64, 24, 13, "gelu, all 13 rows", 3, act="gelu")
    write_case(folder, "rows_past_m", 7, 48, 16, 100, "rows 100 of 7: all", 4, bias=False)
    write_case(folder, "rows_negative", 7, 48, 16, -2, "rows -2: none, Y all zeros", 5, bias=False)
    write_case(folder, "one_panel_m24", 24, 700, 32, 9, "one panel (avx512): threads split its row tiles; 9 of "
               "24 rows", 6)
    write_case(folder, "int8", 13, 96, 40, 6, "int8 W with a scale per column, 6 of 13 rows", 7, q8=True)
    write_case(folder, "w_runtime", 13, 32, 24, 4, "W a graph input (plain loops), 4 of 13 rows", 8,
               w_const=False)


if __name__ == "__main__":
    main()
