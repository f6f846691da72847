#!/usr/bin/env python3
"""make_cases.py — write tests/threads/cases/, models big enough that
`kiln compile --threads 2` marks their loops for threads
(emit_parallel_for, compiler/emit/emit.h: a loop is split only when its
estimated serial time passes EMIT_PARALLEL_MIN_NS), so that every
threaded path is run against a reference:

- the packed GEMM split by panels, with an edge panel (the if/else loop)
  and without one, with bias + relu and gelu epilogues, transB;
- the packed GEMM split by row tiles (N narrower than one panel), and with
  K split into blocks (the split inside each block);
- batched MatMul of two inputs, one batch loop and two (flattened into
  one loop over every matrix);
- Softmax over the last axis and over a middle one, LayerNormalization,
  and elementwise loops (arithmetic with broadcasting, a libm call);
- Gemm of two inputs with alpha and beta: its template product runs on
  the lead alone before the split elementwise pass.

Shapes are off every tile and panel width of every --isa. Each case is a
folder in the ONNX backend-test layout (model.onnx, test_data_set_0/), the
reference computed by numpy in float64 and rounded to float32.
tests/threads/check_threaded.sh runs one; tests/tests.cmake lists them.
The files are committed; regenerate with:

    /work/venv/bin/python tests/threads/make_cases.py
"""
import math
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases")
F32 = TensorProto.FLOAT
rng = np.random.default_rng(20240612)


def rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def weight(k, *shape):
    """Scaled by 1/sqrt(K) so sums stay O(1), far inside rtol 1e-4."""
    return (rand(*shape) / np.float32(math.sqrt(max(k, 1)))).astype(np.float32)


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def write(name, nodes, inputs, y, inits=(), opset=14):
    """inputs: (name, array) pairs; y: the float64 reference of output y."""
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    y = np.asarray(y, dtype=np.float64).astype(np.float32)
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info(n, F32, list(a.shape)) for n, a in inputs],
                          [helper.make_tensor_value_info("y", F32, list(y.shape))], list(inits))
    m = helper.make_model(g, producer_name="kiln-thread-cases",
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(d, "model.onnx"))
    ds = os.path.join(d, "test_data_set_0")
    for k, (n, a) in enumerate(inputs):
        with open(os.path.join(ds, f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    with open(os.path.join(ds, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(y, "y").SerializeToString())


def f64(a):
    return a.astype(np.float64)


def linear(name, x_shape, n, act):
    """MatMul + Add (+ Relu or the erf GELU): one Linear after fuse."""
    k = x_shape[-1]
    x, w, b = rand(*x_shape), weight(k, k, n), rand(n)
    y = f64((f64(x) @ f64(w)).astype(np.float32) + b)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"]),
             helper.make_node("Add", ["mm", "b"], ["y" if act == "none" else "lin"])]
    inits = [const("w", w), const("b", b)]
    if act == "relu":
        nodes.append(helper.make_node("Relu", ["lin"], ["y"]))
        y = np.maximum(y, 0)
    elif act == "gelu":
        nodes += [helper.make_node("Div", ["lin", "sqrt2"], ["g_div"]),
                  helper.make_node("Erf", ["g_div"], ["g_erf"]),
                  helper.make_node("Add", ["g_erf", "one"], ["g_add"]),
                  helper.make_node("Mul", ["lin", "g_add"], ["g_mul"]),
                  helper.make_node("Mul", ["g_mul", "half"], ["y"])]
        inits += [const("sqrt2", np.float32(1.4142135381698608)), const("one", np.float32(1)),
                  const("half", np.float32(0.5))]
        y = 0.5 * y * (1 + np.vectorize(math.erf)(y / math.sqrt(2)))
    write(name, nodes, [("x", x)], y, inits)


def matmul_const(name, x_shape, n):
    k = x_shape[-1]
    x, w = rand(*x_shape), weight(k, k, n)
    write(name, [helper.make_node("MatMul", ["x", "w"], ["y"])], [("x", x)], f64(x) @ f64(w),
          [const("w", w)])


def gemm_transb(name, m, k, n):
    x, w, c = rand(m, k), weight(k, n, k), rand(n)
    y = f64(x) @ f64(w).T + f64(c)
    write(name, [helper.make_node("Gemm", ["x", "w", "c"], ["y"], transB=1)], [("x", x)], y,
          [const("w", w), const("c", c)])


def matmul_inputs(name, a_shape, b_shape):
    """Both operands inputs: the template kernel under batch loops."""
    a, b = rand(*a_shape), weight(a_shape[-1], *b_shape)
    write(name, [helper.make_node("MatMul", ["a", "b"], ["y"])], [("a", a), ("b", b)],
          np.matmul(f64(a), f64(b)))


def gemm_inputs_alpha_beta(name, m, k, n):
    """Gemm of two inputs with alpha, beta and C: the template product, then
    a split elementwise pass; the product outside it is the lead's alone."""
    a, b, c = rand(m, k), weight(k, k, n), rand(n)
    y = 0.5 * (f64(a) @ f64(b)) + 2.0 * f64(c)
    write(name, [helper.make_node("Gemm", ["a", "b", "c"], ["y"], alpha=0.5, beta=2.0)], [("a", a), ("b", b)], y,
          [const("c", c)])


def softmax(name, shape, axis):
    x = rand(*shape)
    e = np.exp(f64(x) - f64(x).max(axis=axis, keepdims=True))
    write(name, [helper.make_node("Softmax", ["x"], ["y"], axis=axis)], [("x", x)],
          e / e.sum(axis=axis, keepdims=True))


def layernorm(name, shape):
    x, s, b = rand(*shape) + 3, rand(shape[-1]), rand(shape[-1])
    mu = f64(x).mean(axis=-1, keepdims=True)
    var = ((f64(x) - mu) ** 2).mean(axis=-1, keepdims=True)
    y = (f64(x) - mu) / np.sqrt(var + 1e-5) * f64(s) + f64(b)
    write(name, [helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1, epsilon=1e-5)],
          [("x", x)], y, [const("s", s), const("b", b)], opset=17)


def add_broadcast(name, shape):
    x, b = rand(*shape), rand(shape[-1])
    write(name, [helper.make_node("Add", ["x", "b"], ["y"])], [("x", x)], f64(x) + f64(b),
          [const("b", b)])


def erf(name, shape):
    x = rand(*shape)
    write(name, [helper.make_node("Erf", ["x"], ["y"])], [("x", x)], np.vectorize(math.erf)(f64(x)))


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    linear("linear_relu_edge", (2, 45, 91), 77, "relu")   # panels + an edge panel, every ISA
    linear("linear_gelu_full", (64, 96), 96, "gelu")      # panels, no edge panel
    gemm_transb("gemm_transb_bias", 60, 90, 100)
    matmul_const("matmul_rows", (336, 200), 8)            # one (edge) panel: row tiles split
    matmul_const("matmul_kblock", (16, 4100), 12)         # K in blocks for every ISA
    matmul_inputs("matmul_batch1", (6, 40, 30), (6, 30, 24))
    matmul_inputs("matmul_batch2", (3, 5, 20, 30), (3, 1, 30, 24))  # two batch loops, flattened
    softmax("softmax_last", (2, 48, 40), -1)
    softmax("softmax_mid", (2, 48, 40), 1)
    layernorm("layernorm_rows", (64, 128))
    add_broadcast("add_broadcast", (192, 256))
    erf("erf_call", (64, 64))
    gemm_inputs_alpha_beta("gemm_inputs_alpha_beta", 200, 8, 400)  # its product outside the split pass
    print("wrote", len(os.listdir(OUT)), "cases under", os.path.relpath(OUT))


if __name__ == "__main__":
    main()
