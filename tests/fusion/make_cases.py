#!/usr/bin/env python3
"""make_cases.py — write tests/fusion/cases/, small ONNX models that take
each fusion of compiler/passes/fuse_residual.c, fuse_transpose.c and
fuse_chain.c (and their kernels' edges), for run_fusion_tests.sh.

Each case is CASE/model.onnx, CASE/test_data_set_0/{input_K,output_K}.pb
(the ONNX backend-test layout `kiln check` reads) and CASE/fusions.txt,
the `kiln compile -v` lines the case must produce. Inputs and weights are
random (fixed seed); outputs come from ONNX Runtime with its graph
optimisations off (f32), or numpy in float64 rounded to the output type
where ORT lacks a kernel (f64). Shapes sit off the kernels' lanes and
tiles: rows of 12, 7 and 10 (AddLayerNorm's 4-, 1- and 2-lane sums), M, N
and K off every GEMM tile, K = 4100 and 2100 (the K-split epilogue with a
residual), batch 1 (a Transpose of a dim of 1); two cases are large enough
that --threads=2 splits their loops. The files are committed;
regenerate with

    /work/venv/bin/python tests/fusion/make_cases.py
"""
import math
import os
import shutil

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "cases")
F32, F64 = TensorProto.FLOAT, TensorProto.DOUBLE
rng = np.random.default_rng(5005)


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def weight(k, *shape):
    """Weights scaled by 1/sqrt(K) so sums stay O(1)."""
    return (rand(*shape) / np.float32(math.sqrt(max(k, 1)))).astype(np.float32)


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, **attrs)


class Case:
    """One model being built: nodes, initializers, inputs (with data)."""

    def __init__(self, name, opset=14):
        self.name, self.opset = name, opset
        self.nodes, self.inits, self.inputs, self.feeds = [], [], [], {}
        self.n = 0

    def tmp(self, stem):
        self.n += 1
        return "%s_%d" % (stem, self.n)

    def input(self, name, arr):
        et = F64 if arr.dtype == np.float64 else F32
        self.inputs.append(helper.make_tensor_value_info(name, et, list(arr.shape)))
        self.feeds[name] = arr
        return name

    def init(self, stem, arr):
        name = self.tmp(stem)
        self.inits.append(const(name, arr))
        return name

    def op(self, op, ins, **attrs):
        out = self.tmp(op.lower())
        self.nodes.append(node(op, ins, [out], **attrs))
        return out

    # ---- the patterns, as PyTorch 1.13 exports them -------------------------
    def linear(self, x, k, n, act="none"):
        y = self.op("Add", [self.op("MatMul", [x, self.init("w", weight(k, k, n))]),
                            self.init("b", rand(n))])
        if act == "relu":
            y = self.op("Relu", [y])
        elif act == "gelu":  # x·0.5·(1 + erf(x/√2))
            e = self.op("Erf", [self.op("Div", [y, self.init("sqrt2", np.float32(math.sqrt(2)))])])
            p = self.op("Add", [e, self.init("one", np.float32(1))])
            y = self.op("Mul", [self.op("Mul", [y, p]), self.init("half", np.float32(0.5))])
        elif act == "gelu_tanh":  # 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
            c = self.op("Mul", [self.init("kappa", np.float32(0.044715)),
                                self.op("Pow", [y, self.init("three", np.float32(3))])])
            t = self.op("Tanh", [self.op("Mul", [self.init("s2pi", np.float32(math.sqrt(2 / math.pi))),
                                                 self.op("Add", [y, c])])])
            p = self.op("Add", [self.init("one", np.float32(1)), t])
            y = self.op("Mul", [self.init("half", np.float32(0.5)), self.op("Mul", [y, p])])
        return y

    def layernorm(self, x, d):
        """opset 17: one node; below: ReduceMean, Sub, Pow, ReduceMean, Add,
        Sqrt, Div, Mul, Add."""
        g = self.init("gamma", (1 + 0.1 * rand(d)).astype(np.float32))
        b = self.init("beta", (0.1 * rand(d)).astype(np.float32))
        if self.opset >= 17:
            return self.op("LayerNormalization", [x, g, b], axis=-1, epsilon=1e-5)
        m = self.op("ReduceMean", [x], axes=[-1])
        dv = self.op("Sub", [x, m])
        v = self.op("ReduceMean", [self.op("Pow", [dv, self.init("two", np.float32(2))])], axes=[-1])
        sd = self.op("Sqrt", [self.op("Add", [v, self.init("eps", np.float32(1e-5))])])
        return self.op("Add", [self.op("Mul", [self.op("Div", [dv, sd]), g]), b])

    def write(self, outputs, fusions, reference=None):
        d = os.path.join(OUT, self.name)
        os.makedirs(os.path.join(d, "test_data_set_0"))
        vals = reference(self.feeds) if reference else None
        if vals is None:
            outs = [helper.make_tensor_value_info(o, F32, None) for o in outputs]
            m = self.model(outs)
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
            vals = sess.run(outputs, self.feeds)
        outs = [helper.make_tensor_value_info(o, F64 if v.dtype == np.float64 else F32, list(v.shape))
                for o, v in zip(outputs, vals)]
        m = self.model(outs)
        onnx.checker.check_model(m)
        onnx.save(m, os.path.join(d, "model.onnx"))
        ds = os.path.join(d, "test_data_set_0")
        for k, i in enumerate(self.inputs):
            with open(os.path.join(ds, "input_%d.pb" % k), "wb") as f:
                f.write(numpy_helper.from_array(self.feeds[i.name], i.name).SerializeToString())
        for k, (o, v) in enumerate(zip(outputs, vals)):
            with open(os.path.join(ds, "output_%d.pb" % k), "wb") as f:
                f.write(numpy_helper.from_array(v, o).SerializeToString())
        with open(os.path.join(d, "fusions.txt"), "w") as f:
            f.write("".join(line + "\n" for line in fusions))

    def model(self, outs):
        g = helper.make_graph(self.nodes, self.name, self.inputs, outs, self.inits)
        m = helper.make_model(g, producer_name="kiln-fusion-cases",
                              opset_imports=[helper.make_opsetid("", self.opset)])
        m.ir_version = 8
        return m


# ---- the cases -------------------------------------------------------------------

def postnorm_block(name, shape, ff, opset):
    """x + Linear(x) -> LN; h + Linear(relu Linear(h)) -> LN: both adds join
    their norms (post-norm), the Linears keep their bias/act epilogues."""
    c = Case(name, opset)
    d = shape[-1]
    x = c.input("x", rand(*shape))
    h = c.layernorm(c.op("Add", [x, c.linear(x, d, d)]), d)
    f = c.linear(c.linear(h, d, ff, "relu"), ff, d)
    y = c.layernorm(c.op("Add", [h, f]), d)
    c.write([y], ["fuse: add_layernorm <-", "fuse: add_layernorm <-", "fuse: linear+relu <-"])


def prenorm_block(name, shape, ff):
    """x1 = x + Linear(LN(x)); x2 = x1 + Linear(gelu Linear(LN(x1))): the
    first sum is also read by the second add (AddLayerNorm keeps it), the
    last add has no norm after it (the residual epilogue)."""
    c = Case(name, 17)
    d = shape[-1]
    x = c.input("x", rand(*shape))
    x1 = c.op("Add", [x, c.linear(c.layernorm(x, d), d, d)])
    f = c.linear(c.linear(c.layernorm(x1, d), d, ff, "gelu"), ff, d)
    x2 = c.op("Add", [x1, f])
    c.write([x2], ["fuse: add_layernorm (sum kept) <-", "fuse: linear+gelu <-", "fuse: linear+residual <-"])


def outproj_batch1(name, s, d):
    """The out-projection at batch 1: Gemm (transB) by a constant, Reshape,
    a Transpose of a dim of 1, the residual Add; then a second one feeding
    a LayerNorm (AddLayerNorm takes that add)."""
    c = Case(name, 17)
    src = c.input("src", rand(1, s, d))
    a = c.input("attn", rand(s, d))
    w, b = c.init("w", weight(d, d, d)), c.init("c", rand(d))
    g = c.op("Gemm", [a, w, b], alpha=1.0, beta=1.0, transB=1)
    r = c.op("Reshape", [g, c.init("shape", np.array([s, 1, d], dtype=np.int64))])
    y = c.op("Add", [src, c.op("Transpose", [r], perm=[1, 0, 2])])
    g2 = c.op("Gemm", [a, c.init("w", weight(d, d, d)), c.init("c", rand(d))], transB=1)
    z = c.layernorm(c.op("Add", [c.op("Reshape", [g2, c.init("shape", np.array([1, s, d], dtype=np.int64))]),
                                 y]), d)
    c.write([y, z], ["fuse: gemm -> linear <-", "fuse: transpose -> reshape (moves only dims of 1) <-",
                     "fuse: linear+residual <-", "fuse: add_layernorm <-"])


def linear_residual(name, a_shape, n, act):
    """Linear [+ act] + r over GEMM edges, the residual as either operand."""
    c = Case(name)
    k = a_shape[-1]
    x = c.input("x", rand(*a_shape))
    r = c.input("r", rand(*(a_shape[:-1] + (n,))))
    y = c.op("Add", [r, c.linear(x, k, n, act)])
    what = "linear+residual <-"
    c.write([y], ["fuse: " + what])


def chains(name, shape):
    """Elementwise chains: an embedding scale and positional add, a static
    Where mask, unary ops; intermediates of one reader, inputs broadcast."""
    c = Case(name)
    x = c.input("x", rand(*shape))
    pos = c.init("pos", rand(*shape[1:]))
    e = c.op("Relu", [c.op("Add", [c.op("Mul", [x, c.init("scale", np.float32(2.828427))]), pos])])
    mask = c.init("mask", rng.random(shape[1:]) < 0.3)
    w = c.op("Where", [mask, c.init("ninf", np.float32(-1e4)), c.op("Exp", [c.op("Neg", [x])])])
    s = c.op("Sigmoid", [c.op("Tanh", [c.op("Sub", [w, c.op("Div", [x, pos])])])])
    c.write([e, s], ["fuse: elementwise chain of 3 <-", "fuse: elementwise chain of 7 <-"])


def chains_f64(name):
    """The same in f64 (numpy reference: ORT lacks some f64 kernels)."""
    c = Case(name)
    x = c.input("x", rand(3, 5, dtype=np.float64))
    b = rand(5, dtype=np.float64)
    y = c.op("Sqrt", [c.op("Abs", [c.op("Mul", [c.op("Erf", [x]), c.init("b", b)])])])

    def ref(feeds):
        from math import erf
        v = np.vectorize(erf)(feeds["x"]) * b
        return [np.sqrt(np.abs(v))]
    c.write([y], ["fuse: elementwise chain of 4 <-"], ref)


def chains_clip(name, shape):
    """Clip, Max and Min in chains: PP-OCR's HardSwish with a learnt scale
    and shift, w0 * (x * Clip(x + 3, 0, 6) / 6) + w1 (x read by two steps,
    one chain input); a ReLU6 as Min(Max(x, 0), 6); a Clip whose bounds
    cross (lo > hi: every element is hi)."""
    c = Case(name)
    x = c.input("x", 4 * rand(*shape))
    zero, three, six = (c.init(n, np.float32(v)) for n, v in (("zero", 0), ("three", 3), ("six", 6)))
    hs = c.op("Div", [c.op("Mul", [x, c.op("Clip", [c.op("Add", [x, three]), zero, six])]), six])
    y = c.op("Add", [c.op("Mul", [c.init("w0", np.float32(1.25)), hs]), c.init("w1", rand(shape[-1]))])
    r6 = c.op("Min", [c.op("Max", [c.op("Mul", [x, c.init("k", np.float32(2))]), zero]), six])
    lohi = c.op("Clip", [c.op("Sub", [x, three]), c.init("lo", np.float32(0.5)), c.init("hi", np.float32(-0.5))])
    z = c.op("Abs", [lohi])
    c.write([y, r6, z], ["fuse: elementwise chain of 6 <-", "fuse: elementwise chain of 3 <-",
                         "fuse: elementwise chain of 3 <-"])


def matmul_transposes(name):
    """Kᵀ read in place; heads split before a batched MatMul and merged
    after it, as attention exports write them (no Softmax here, so no
    attention fusion takes them)."""
    c = Case(name)
    q, k = c.input("q", rand(2, 7, 12)), c.input("k", rand(2, 9, 12))
    s = c.op("MatMul", [q, c.op("Transpose", [k], perm=[0, 2, 1])])
    x, v = c.input("x", rand(9, 3, 5)), c.input("v", rand(3, 9, 5))
    p = c.op("MatMul", [c.op("Transpose", [x], perm=[1, 0, 2]), c.op("Transpose", [v], perm=[0, 2, 1])])
    o = c.op("Transpose", [p], perm=[1, 0, 2])
    c.write([s, o], ["fuse: matmul+transposes <- Transpose_", "fuse: matmul+transposes <- Transpose_"])


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    postnorm_block("postnorm_op14", (2, 5, 12), 40, 14)
    postnorm_block("postnorm_op17_len7", (3, 7), 9, 17)
    postnorm_block("postnorm_op17_len10", (1, 4, 10), 16, 17)
    prenorm_block("prenorm_op17", (1, 7, 32), 72)
    outproj_batch1("outproj_batch1", 7, 16)
    linear_residual("residual_edges", (7, 19), 37, "none")
    linear_residual("residual_relu_kblock", (3, 4100), 20, "relu")
    linear_residual("residual_gelu_kblock", (2, 2100), 9, "gelu")
    linear_residual("residual_gelu_tanh", (2, 5, 33), 21, "gelu_tanh")
    chains("chains", (2, 6, 8))
    chains("chains_threads", (8, 48, 40))  # large enough for --threads=2 to split the loops
    postnorm_block("postnorm_threads", (1, 40, 128), 64, 17)
    chains_f64("chains_f64")
    matmul_transposes("matmul_transposes")
    chains_clip("chains_clip", (8, 48, 40))  # large enough for --threads=2 to split the loops
    print("wrote", len(os.listdir(OUT)), "cases under", os.path.relpath(OUT))


if __name__ == "__main__":
    main()
