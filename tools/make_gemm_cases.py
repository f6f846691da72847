#!/usr/bin/env python3
"""make_gemm_cases.py — write tests/generated/gemm_shapes/, the odd shapes
that exercise kiln's packed f32 GEMM (compiler/kernels/gemm_kernel.c).

Each case is a small ONNX model whose weight is an initializer (so B is a
compile-time constant and gets packed), in the ONNX backend-test layout:
CASE/model.onnx and CASE/test_data_set_0/{input_0,output_0}.pb, the
reference computed by numpy in float64 and rounded to float32. The shapes
put M, N and K off every register tile and panel of every --isa (generic
8-column panels and 6-row tiles, avx2 16 and 6, avx512 32 and 12), make K
split into blocks (K = 4100 for every ISA, 2100 for avx2 and avx512), and take the corners: K = 1, N = 1, M = 1, a
1-D operand, batch dims (and a weight per batch index), K = 0. MatMul + Add + Relu/GELU fuse into Linear,
whose epilogue the kernel applies; Gemm covers transB, C as a bias, and
alpha/beta. tests/tests.cmake runs every case under `kiln check` for each
--isa. The files are committed; regenerate with:

    /work/venv/bin/python tools/make_gemm_cases.py
    /work/venv/bin/python tools/make_gemm_cases.py --int8   # gemm_shapes_int8/
    /work/venv/bin/python tools/make_gemm_cases.py --bf16   # gemm_shapes_bf16/

--int8 writes tests/generated/gemm_shapes_int8/ instead: the same kind of
cases for --quantize=int8, with weights whose int8 form is exact (see
q8_weight), so the reference stays exact and the int8 kernel and Linear's
_eval are checked at the f32 tolerance.

--bf16 writes tests/generated/gemm_shapes_bf16/: cases for --precision=bf16
whose weights and inputs are bf16 values already (8 significant bits), so
rounding them changes nothing, every product is exact in f32, and the bf16
kernels (vdpbf16ps and the f32 fallback) are checked at the f32 tolerance.
"""
import math
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "generated", "gemm_shapes")
F32 = TensorProto.FLOAT
rng = np.random.default_rng(20240505)


BF16 = False  # --bf16: every random input and weight a bf16 value


def bf16(a):
    """a rounded to the nearest bf16 (ties to even), as float32."""
    u = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def rand(*shape):
    r = rng.standard_normal(shape).astype(np.float32)
    return bf16(r) if BF16 else r


def weight(k, *shape):
    """Weights scaled by 1/sqrt(K) so sums stay O(1) (errors far below rtol)."""
    w = (rand(*shape) / np.float32(math.sqrt(max(k, 1)))).astype(np.float32)
    return bf16(w) if BF16 else w


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def f32c(name, v):
    return const(name, np.array(v, dtype=np.float32))


def write(name, nodes, x, y_shape, inits, y_ref):
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", F32, list(x.shape))],
                          [helper.make_tensor_value_info("y", F32, list(y_shape))], inits)
    # I/O names that no kernel local shadows, for clang -Weverything (-Wshadow)
    onnx.compose.add_prefix_graph(g, "gemm_", inplace=True)
    m = helper.make_model(g, producer_name="kiln-gemm-cases",
                          opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(d, "model.onnx"))
    ds = os.path.join(d, "test_data_set_0")
    with open(os.path.join(ds, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, "gemm_x").SerializeToString())
    y = np.asarray(y_ref, dtype=np.float64).astype(np.float32).reshape(y_shape)
    with open(os.path.join(ds, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(y, "gemm_y").SerializeToString())


def matmul(name, a_shape, w_shape):
    x, w = rand(*a_shape), weight(w_shape[0], *w_shape)
    y = np.matmul(x.astype(np.float64), w.astype(np.float64))
    write(name, [helper.make_node("MatMul", ["x", "w"], ["y"])], x, y.shape, [const("w", w)], y)


def gelu_erf_nodes(v, out):
    """x·0.5·(1 + erf(x/√2)) as PyTorch 1.13 exports nn.GELU()."""
    return [helper.make_node("Div", [v, "sqrt2"], ["g_div"]),
            helper.make_node("Erf", ["g_div"], ["g_erf"]),
            helper.make_node("Add", ["g_erf", "one"], ["g_add"]),
            helper.make_node("Mul", [v, "g_add"], ["g_mul"]),
            helper.make_node("Mul", ["g_mul", "half"], [out])], \
        [f32c("sqrt2", 1.4142135381698608), f32c("one", 1.0), f32c("half", 0.5)]


def gelu_tanh_nodes(v, out):
    """0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) as nn.GELU('tanh') exports."""
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


def linear(name, a_shape, k, n, act):
    """MatMul + Add bias + act, which the fuse_linear pass makes one Linear."""
    x, w, b = rand(*a_shape), weight(k, k, n), rand(n)
    y = np.matmul(x.astype(np.float64), w.astype(np.float64)).astype(np.float32) + b
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"]),
             helper.make_node("Add", ["mm", "b"], ["lin" if act != "none" else "y"])]
    inits = [const("w", w), const("b", b)]
    y = y.astype(np.float64)
    if act == "relu":
        nodes.append(helper.make_node("Relu", ["lin"], ["y"]))
        y = np.maximum(y, 0)
    elif act == "gelu":
        more, c = gelu_erf_nodes("lin", "y")
        nodes += more
        inits += c
        y = 0.5 * y * (1 + np.vectorize(math.erf)(y / math.sqrt(2)))
    elif act == "gelu_tanh":
        more, c = gelu_tanh_nodes("lin", "y")
        nodes += more
        inits += c
        y = 0.5 * y * (1 + np.tanh(math.sqrt(2 / math.pi) * (y + 0.044715 * y ** 3)))
    write(name, nodes, x, y.shape, inits, y)


def gemm(name, m, k, n, trans_a=0, trans_b=0, c_shape=None, alpha=1.0, beta=1.0):
    x = rand(*((k, m) if trans_a else (m, k)))
    w = weight(k, *((n, k) if trans_b else (k, n)))
    a64 = x.astype(np.float64).T if trans_a else x.astype(np.float64)
    b64 = w.astype(np.float64).T if trans_b else w.astype(np.float64)
    y = alpha * (a64 @ b64)
    inputs, inits = ["x", "w"], [const("w", w)]
    if c_shape is not None:
        c = rand(*c_shape)
        y = y + beta * c.astype(np.float64)
        inputs.append("c")
        inits.append(const("c", c))
    node = helper.make_node("Gemm", inputs, ["y"], alpha=alpha, beta=beta, transA=trans_a,
                            transB=trans_b)
    write(name, [node], x, y.shape, inits, y)


# ---- int8 (--quantize=int8): weights the quantize pass maps exactly -----------

OUT_INT8 = os.path.join(HERE, "..", "tests", "generated", "gemm_shapes_int8")


def q8_weight(k, n, axis=0, zero=()):
    """W = q·2^-e, q in [-127, 127] with |q| = 127 in every column (axis 0:
    the scale per column) or row (axis 1), e in 6..8 (plus log2 sqrt(K)
    for columns): the quantize pass finds scale 2^-e and q back exactly, so
    the f32 reference below is the int8 kernel's exact answer. Columns
    (rows) in `zero` are all zero."""
    q = rng.integers(-127, 128, size=(k, n)).astype(np.float64)
    lines = n if axis == 0 else k
    for i in range(lines):
        idx = (int(rng.integers(0, k)), i) if axis == 0 else (i, int(rng.integers(0, n)))
        q[idx] = 127.0 if rng.integers(0, 2) else -127.0
    e = rng.integers(6, 9, size=lines).astype(np.float64)
    if axis == 0:  # about 1/sqrt(K), as weight() above: sums stay O(1)
        e += math.ceil(math.log2(math.sqrt(max(k, 1))))
    s = np.exp2(-e)
    w = q * (s[None, :] if axis == 0 else s[:, None])
    for i in zero:
        if axis == 0:
            w[:, i] = 0
        else:
            w[i, :] = 0
    return w.astype(np.float32)


def q8_linear(name, a_shape, k, n, act, residual=False, zero=()):
    """MatMul [+ Add bias] [+ act] [+ Add residual] with an int8-exact weight."""
    global OUT
    x, w, b = rand(*a_shape), q8_weight(k, n, zero=zero), rand(n)
    y = np.matmul(x.astype(np.float64), w.astype(np.float64))
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm" if act != "bare" else "y"])]
    inits = [const("w", w)]
    if act != "bare":
        y = (y.astype(np.float32) + b).astype(np.float64)
        last = "lin" if act != "none" or residual else "y"
        nodes.append(helper.make_node("Add", ["mm", "b"], [last]))
        inits.append(const("b", b))
        if act == "relu":
            nodes.append(helper.make_node("Relu", [last], ["act" if residual else "y"]))
            y = np.maximum(y, 0)
        elif act == "gelu":
            more, c = gelu_erf_nodes(last, "act" if residual else "y")
            nodes += more
            inits += c
            y = 0.5 * y * (1 + np.vectorize(math.erf)(y / math.sqrt(2)))
        if residual:
            src = "act" if act in ("relu", "gelu") else last
            r = rand(*y.shape)
            nodes.append(helper.make_node("Add", [src, "r"], ["y"]))
            inits.append(const("r", r))
            y = y.astype(np.float32).astype(np.float64) + r
    saved, OUT = OUT, OUT_INT8
    write(name, nodes, x, y.shape, inits, y)
    OUT = saved


def q8_embedding(name, vocab, d, ids):
    """Gather rows of an int8-exact table (a scale per row), then MatMul by
    an int8-exact weight: x is the row index (a float input, cast to i64)."""
    global OUT
    t, w = q8_weight(vocab, d, axis=1, zero=(1,)), q8_weight(d, 5)
    x = np.array(ids, dtype=np.float32)
    y = np.matmul(t[np.array(ids, dtype=np.int64)].astype(np.float64), w.astype(np.float64))
    nodes = [helper.make_node("Cast", ["x"], ["ids"], to=TensorProto.INT64),
             helper.make_node("Gather", ["t", "ids"], ["rows"], axis=0),
             helper.make_node("MatMul", ["rows", "w"], ["y"])]
    saved, OUT = OUT, OUT_INT8
    write(name, nodes, x, y.shape, [const("t", t), const("w", w)], y)
    OUT = saved


def main_int8():
    shutil.rmtree(OUT_INT8, ignore_errors=True)
    q8_linear("q8_bare_odd", (37, 61), 61, 77, "bare")                 # MatMul alone -> Linear
    q8_linear("q8_k1", (7, 1), 1, 45, "none")
    q8_linear("q8_n1", (13, 29), 29, 1, "relu")
    q8_linear("q8_m1_gelu", (1, 40), 40, 70, "gelu")                  # widened in registers
    q8_linear("q8_tiles_gelu", (61, 33), 33, 50, "gelu", zero=(3,))   # widened once per panel
    q8_linear("q8_tiles_residual", (2, 40, 24), 24, 40, "relu", residual=True)
    q8_linear("q8_kblock", (50, 2100), 2100, 9, "none")               # K split in blocks
    q8_linear("q8_kblock_m3", (3, 4100), 4100, 3, "none")
    q8_embedding("q8_embedding", 50, 16, [[0, 7, 49, 1, 3, 3]])
    print("wrote", len(os.listdir(OUT_INT8)), "cases under", os.path.relpath(OUT_INT8))


OUT_BF16 = os.path.join(HERE, "..", "tests", "generated", "gemm_shapes_bf16")


def main_bf16():
    global OUT, BF16
    OUT, BF16 = OUT_BF16, True
    shutil.rmtree(OUT, ignore_errors=True)
    matmul("bf16_odd", (37, 61), (61, 77))             # K odd: the last pair's high half is 0
    matmul("bf16_k1", (7, 1), (1, 45))
    matmul("bf16_n1", (13, 29), (29, 1))
    matmul("bf16_batch", (2, 3, 38), (38, 50))
    matmul("bf16_kblock", (2, 4100), (4100, 3))        # K split into blocks of pairs
    linear("bf16_relu", (2, 17, 40), 40, 70, "relu")
    linear("bf16_gelu_tiles", (61, 33), 33, 50, "gelu")
    linear("bf16_gelu_kblock", (3, 2100), 2100, 9, "gelu")
    linear("bf16_bias_m1", (1, 24), 24, 40, "none")
    gemm("bf16_gemm_transb_bias", 10, 23, 31, trans_b=1, c_shape=(31,))
    gemm("bf16_gemm_alpha_beta", 10, 23, 31, c_shape=(10, 31), alpha=0.5, beta=2.0)
    print("wrote", len(os.listdir(OUT)), "cases under", os.path.relpath(OUT))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--int8":
        return main_int8()
    if len(sys.argv) > 1 and sys.argv[1] == "--bf16":
        return main_bf16()
    shutil.rmtree(OUT, ignore_errors=True)
    matmul("matmul_1x1x1", (1, 1), (1, 1))
    matmul("matmul_k1", (7, 1), (1, 45))
    matmul("matmul_n1", (13, 29), (29, 1))
    matmul("matmul_odd", (37, 61), (61, 77))
    matmul("matmul_batch", (2, 3, 37), (37, 50))
    matmul("matmul_vec_a", (11,), (11, 19))
    matmul("matmul_vec_b", (5, 11), (11,))
    matmul("matmul_kblock", (2, 4100), (4100, 3))
    matmul("matmul_k0", (3, 0), (0, 5))
    linear("linear_relu", (2, 17, 40), 40, 70, "relu")
    linear("linear_gelu_kblock", (3, 2100), 2100, 9, "gelu")
    linear("linear_gelu_tanh", (6, 33), 33, 21, "gelu_tanh")
    linear("linear_bias_m1", (1, 24), 24, 40, "none")
    gemm("gemm_transb_bias", 10, 23, 31, trans_b=1, c_shape=(31,))
    gemm("gemm_alpha_beta", 10, 23, 31, c_shape=(10, 31), alpha=0.5, beta=2.0)
    gemm("gemm_transa", 10, 23, 31, trans_a=1, c_shape=(1, 31))
    # a weight per batch index (GemmSpec.batch: one packed product each, as
    # Winograd's per-position products)
    x, w = rand(5, 23, 37), weight(37, 5, 37, 29)
    write("matmul_batch_weights", [helper.make_node("MatMul", ["x", "w"], ["y"])], x, (5, 23, 29), [const("w", w)],
          np.matmul(x.astype(np.float64), w.astype(np.float64)))
    # products of 2+ full panels and 2+ row tiles a weight: the last panel
    # of each prefetches the next product's first (GEMM_PREFETCH_SPREAD)
    x, w = rand(3, 20, 40), weight(40, 3, 40, 70)
    write("matmul_batch_panels", [helper.make_node("MatMul", ["x", "w"], ["y"])], x, (3, 20, 70), [const("w", w)],
          np.matmul(x.astype(np.float64), w.astype(np.float64)))
    print("wrote", len(os.listdir(OUT)), "cases under", os.path.relpath(OUT))


if __name__ == "__main__":
    main()
