#!/usr/bin/env python3
"""make_cases.py — write tests/sparse/cases/, the test folders of kiln's
Sparsemax and Entmax15 ops (compiler/ops/sparsemax.c).

Each case is a folder in the ONNX backend-test layout, with the model as
text IR (model.kir: these are kiln ops, which an ONNX file cannot hold):
one input x and two outputs, Sparsemax(x) and Entmax15(x) along the same
axis, and test_data_set_0/{input_0,output_0,output_1}.pb.

The reference is independent of kiln's sort-based algorithm: the threshold
tau is found by bisection on the mass sum([z - tau]_+ ** p) = 1 (p = 1 for
sparsemax with z = x - max; p = 2 for 1.5-entmax with z = (x - max) / 2,
the entmax package's convention), 200 halvings from [-1, 0], then taken in
closed form on the support the bisection found. Computed in float64 from the
inputs, rounded to the case's dtype. The cases cover the last axis and
strided axes (first, middle), attention-like rows of 128 with a causal -inf
mask, ties, constant rows, one-hot inputs, rows where all but one entry is
zero, long near-uniform rows (every entry in the support), rows of one and
of two elements (one row: the C compiler sees the whole array), and f64.

The files are committed; regenerate with:

    /work/venv/bin/python tests/sparse/make_cases.py
"""
import os
import shutil

import numpy as np
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "cases")
rng = np.random.default_rng(20240611)


# ---- the reference ----------------------------------------------------------

def threshold(z, power):
    """tau per row of z (rows x len, float64, row max 0) by bisection, then
    exactly from the support: sum of (z - tau) = 1 or of (z - tau)^2 = 1."""
    lo = np.full((z.shape[0], 1), -1.0)  # the max alone has mass >= 1 here
    hi = np.zeros((z.shape[0], 1))       # and none here
    with np.errstate(invalid="ignore"):
        for _ in range(200):
            mid = (lo + hi) / 2
            heavy = (np.maximum(z - mid, 0) ** power).sum(axis=1, keepdims=True) > 1
            lo = np.where(heavy, mid, lo)
            hi = np.where(heavy, hi, mid)
    tau = np.empty_like(lo)
    for r in range(z.shape[0]):
        s = z[r][z[r] > lo[r, 0]]
        if power == 1:
            tau[r] = (s.sum() - 1) / s.size
        else:
            mean = s.mean()
            ss = ((s - mean) ** 2).sum()
            tau[r] = mean - np.sqrt(max(0.0, (1 - ss) / s.size))
    return tau


def alpha_entmax(x, axis, op):
    """Sparsemax (op 'sparsemax') or 1.5-entmax ('entmax15') of x along axis."""
    xr = np.moveaxis(x.astype(np.float64), axis, -1)
    shape = xr.shape
    rows = xr.reshape(-1, shape[-1])
    z = rows - rows.max(axis=1, keepdims=True)
    if op == "entmax15":
        z = z / 2
    power = 1 if op == "sparsemax" else 2
    with np.errstate(invalid="ignore"):
        y = np.maximum(z - threshold(z, power), 0) ** power
    assert np.allclose(y.sum(axis=1), 1, rtol=0, atol=1e-12), (op, y.sum(axis=1))
    return np.moveaxis(y.reshape(shape), -1, axis).astype(x.dtype)


# ---- the folders ------------------------------------------------------------

def kir(x, axis):
    dt = {np.float32: "f32", np.float64: "f64"}[x.dtype.type]
    t = "%s[%s]" % (dt, ",".join(str(d) for d in x.shape))
    return ("# kiln's Sparsemax and Entmax15 along axis %d (tests/sparse/make_cases.py)\n"
            "graph @sparse opset 17 (%%x: %s) -> (%%sparsemax, %%entmax15) {\n"
            "  %%sparsemax = Sparsemax %%x {axis=%d} : %s  # kir: sparsemax\n"
            "  %%entmax15 = Entmax15 %%x {axis=%d} : %s  # kir: entmax15\n"
            "}\n" % (axis, t, axis, t, axis, t))


def write_case(name, x, axis):
    d = os.path.join(OUT, name)
    data = os.path.join(d, "test_data_set_0")
    os.makedirs(data)
    with open(os.path.join(d, "model.kir"), "w") as f:
        f.write(kir(x, axis))
    tensors = [("input_0", "x", x), ("output_0", "sparsemax", alpha_entmax(x, axis, "sparsemax")),
               ("output_1", "entmax15", alpha_entmax(x, axis, "entmax15"))]
    for file, tname, t in tensors:
        with open(os.path.join(data, file + ".pb"), "wb") as f:
            f.write(numpy_helper.from_array(t, tname).SerializeToString())


def normal(*shape, scale=1.0, dtype=np.float32):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def special_rows():
    """Ties, constant rows, one-hot inputs, all zero but one entry."""
    rows = [
        [1, 1, 1, 1, 1, 1, 1, 1],              # constant: uniform output
        [0, 0, 0, 3, 0, 0, 0, 0],              # all but one zero: one-hot output
        [0, 0, 0.5, 0, 0, 0, 0, 0],            # all but one zero, a dense output
        [0, 0, 0, 0, 0, 0, 0, 1e4],            # one huge entry
        [2, 2, 1, 1, 0, 0, -1, -1],            # ties in pairs
        [3, 3, 3, 0, 0, 0, 0, 0],              # ties at the top
        [1, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0],  # ties near the threshold
        [-5, -5, -5, -5, -4, -5, -5, -5],      # negative, offset
    ]
    ties = rng.integers(-2, 3, size=(8, 8)) * 0.5  # small integer grid: many ties
    return np.concatenate([np.array(rows), ties]).astype(np.float32)


def attention_logits():
    """Scores of 2 heads x 128 queries x 128 keys, causal: -inf above the diagonal."""
    x = normal(1, 2, 128, 128, scale=3.0)
    x[..., np.triu_indices(128, 1)[0], np.triu_indices(128, 1)[1]] = -np.inf
    return x


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    write_case("last_axis", normal(4, 7, scale=2.0), -1)
    write_case("first_axis", normal(5, 3, 4, scale=2.0), 0)
    write_case("middle_axis", normal(2, 6, 3, 2, scale=2.0), 1)
    write_case("attention_causal", attention_logits(), 3)
    write_case("special_rows", special_rows(), -1)
    write_case("special_columns", special_rows().T.copy(), 0)
    write_case("near_uniform_512", (rng.random((3, 512)) * 0.01).astype(np.float32), 1)
    write_case("one_element", normal(3, 1), -1)
    write_case("two_elements", normal(2, scale=2.0), 0)
    write_case("two_elements_strided", normal(2, 3, scale=0.5), 0)
    write_case("f64", normal(3, 33, scale=2.0, dtype=np.float64), -1)
    write_case("f64_middle_axis", normal(2, 40, 3, scale=1.5, dtype=np.float64), -2)


if __name__ == "__main__":
    main()
