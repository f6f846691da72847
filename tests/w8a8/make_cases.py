#!/usr/bin/env python3
"""make_cases.py OUT — write OUT/CASE/: the shapes that exercise the
w8a8 GEMM (compiler/kernels/igemm_kernel.c) for --quantize=w8a8.

Each case is an ONNX model Y = act(X·W + b) (+ R) with W and b
initializers (so the quantize pass makes W int8 and the Linear quantizes
X per row), and CASE/inputs/x.pb (and r.pb for a residual). No reference
output is stored: tests/w8a8/kernel_case.sh takes `kiln run`'s (Linear's
_eval, which quantizes X's rows by the same rule and sums exactly) and
checks the generated C against it on each ISA path. The shapes: M in
{1, 3, 12, 37, 128, 300}, K in {4, 12, 64, 384, 1536, 1003 (not a multiple
of 4)}, N off the 32-column panels and 16-column vectors, every epilogue
(bias or none, relu, gelu, gelu_tanh, residual), and rows that are all
zero, all positive, all negative or of very different sizes. 300 x 1003
takes two blocks of quantized rows (IG_BLOCK_BYTES). The cases (3 MB,
seeded, the same each time) are written by the test suite into the build
folder (the w8a8_cases fixture in tests/w8a8/tests.cmake), not committed:

    /usr/bin/python3 tests/w8a8/make_cases.py build/w8a8-cases
"""
import os
import shutil
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

OUT = sys.argv[1] if len(sys.argv) > 1 else "w8a8-cases"
F32 = TensorProto.FLOAT
rng = np.random.default_rng(20261126)


def rows(m, k):
    """X[m,k]: rows of mixed sizes, and the corner rows."""
    x = rng.standard_normal((m, k)).astype(np.float32) * np.exp(rng.uniform(-3, 3, (m, 1))).astype(np.float32)
    if m >= 4:
        x[1] = 0                        # all zero: scale 1, zero point 0
        x[2] = np.abs(x[2])             # min 0: zero point 0
        x[3] = -np.abs(x[3])            # max 0: zero point 255
    return x


def f32c(name, v):
    return numpy_helper.from_array(np.array(v, dtype=np.float32), name)


def gelu_nodes(v, out, tanh):
    if not tanh:
        return [helper.make_node("Div", [v, "sqrt2"], ["g_div"]),
                helper.make_node("Erf", ["g_div"], ["g_erf"]),
                helper.make_node("Add", ["g_erf", "one"], ["g_add"]),
                helper.make_node("Mul", [v, "g_add"], ["g_mul"]),
                helper.make_node("Mul", ["g_mul", "half"], [out])], \
            [f32c("sqrt2", 1.4142135381698608), f32c("one", 1.0), f32c("half", 0.5)]
    return [helper.make_node("Pow", [v, "three"], ["t_pow"]),
            helper.make_node("Mul", ["kappa", "t_pow"], ["t_k"]),
            helper.make_node("Add", [v, "t_k"], ["t_in"]),
            helper.make_node("Mul", ["s2pi", "t_in"], ["t_s"]),
            helper.make_node("Tanh", ["t_s"], ["t_tanh"]),
            helper.make_node("Add", ["one", "t_tanh"], ["t_add"]),
            helper.make_node("Mul", [v, "t_add"], ["t_mul"]),
            helper.make_node("Mul", ["half", "t_mul"], [out])], \
        [f32c("three", 3.0), f32c("kappa", 0.044715), f32c("s2pi", 0.7978845608028654),
         f32c("one", 1.0), f32c("half", 0.5)]


def case(name, x_shape, k, n, act="none", bias=True, residual=False):
    m = int(np.prod(x_shape[:-1]))
    x = rows(m, k).reshape(x_shape)
    w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    w[:, 0] = 0                         # a zero column: scale 1, colsum 0
    y_shape = list(x_shape[:-1]) + [n]
    nodes, inits = [helper.make_node("MatMul", ["x", "w"], ["mm"])], [numpy_helper.from_array(w, "w")]
    cur = "mm"
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "b"))
        nodes.append(helper.make_node("Add", [cur, "b"], ["lin"]))
        cur = "lin"
    if act == "relu":
        nodes.append(helper.make_node("Relu", [cur], ["act"]))
        cur = "act"
    elif act in ("gelu", "gelu_tanh"):
        more, c = gelu_nodes(cur, "act", act == "gelu_tanh")
        nodes += more
        inits += c
        cur = "act"
    inputs = [helper.make_tensor_value_info("x", F32, list(x_shape))]
    feeds = {"x": x}
    if residual:
        inputs.append(helper.make_tensor_value_info("r", F32, y_shape))
        feeds["r"] = rng.standard_normal(y_shape).astype(np.float32)
        nodes.append(helper.make_node("Add", [cur, "r"], ["y"]))
    else:
        nodes.append(helper.make_node("Identity", [cur], ["y"]))
    g = helper.make_graph(nodes, name, inputs, [helper.make_tensor_value_info("y", F32, y_shape)], inits)
    model = helper.make_model(g, producer_name="kiln-w8a8-cases", opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 7
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "inputs"))
    save(model, os.path.join(d, "model.onnx"))
    for key, a in feeds.items():
        with open(os.path.join(d, "inputs", key + ".pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, key).SerializeToString())


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    case("m1_k4_n5_relu", (1, 4), 4, 5, "relu")
    case("m3_k12_n19_bare", (3, 12), 12, 19, bias=False)
    case("m12_k64_n33_gelu", (12, 64), 64, 33, "gelu")
    case("m37_k384_n50_res", (37, 384), 384, 50, residual=True)
    case("m128_k1536_n40_gelu", (2, 64, 1536), 1536, 40, "gelu")
    case("m37_k1003_n70_relu_res", (37, 1003), 1003, 70, "relu", residual=True)
    case("m128_k384_n97_gelu_tanh", (128, 384), 384, 97, "gelu_tanh")
    case("m5_k64_n64_gelu_res", (5, 64), 64, 64, "gelu", residual=True)
    case("m300_k1003_n17", (300, 1003), 1003, 17)


if __name__ == "__main__":
    main()
