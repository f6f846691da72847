"""Cases for ONNX Runtime's com.microsoft quantized products
(compiler/frontend/onnx_contrib_quant.c), built with onnx.helper, ONNX Runtime's
outputs (graph optimisations off: the ops as written), ONNX backend-test
layout; and their bad-input cases in tests/bad.

Run with a python that has onnx and onnxruntime (the venv):
    python tools/make_contrib_quant_cases.py [tests/generated/contrib_quant] [tests/bad]

- mmitf_dql: DynamicQuantizeLinear -> MatMulIntegerToFloat (i8 weight,
  per-column scales, bias): kiln's fuse_dynquant makes it a w8a8 Linear.
- mmitf_static: MatMulIntegerToFloat of a u8 graph input with constant
  scale and zero point, a u8 weight with per-column zero points: the
  generic integer product.
- dqmm: DynamicQuantizeMatMul, i8 weight, per-tensor scale, bias (fused).
- dqmm_u8zp: DynamicQuantizeMatMul, u8 weight, per-column zero points
  around 128 and scales, no bias (fused: B - zp fits int8).
- nbits4_zp: MatMulNBits, 4 bits, block 32, packed u8 zero points, K 64.
- nbits4_bias_tail: 4 bits, block 16, no zero points (8), K 40 (the last
  block padded), bias, A of rank 3.
- nbits8: 8 bits, block 32, packed u8 zero points.
- nbits4_f32zp: 4 bits, block 32, zero points as floats (one a block).
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

MS = helper.make_opsetid("com.microsoft", 1)


def save(folder, name, nodes, inputs, outputs, inits, feeds):
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), MS])
    model.ir_version = 8
    d = os.path.join(folder, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(os.path.join(d, "model.onnx"), so, providers=["CPUExecutionProvider"])
    outs = sess.run(None, feeds)
    for k, i in enumerate(sess.get_inputs()):
        with open(os.path.join(d, "test_data_set_0", f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(feeds[i.name], i.name).SerializeToString())
    for k, (o, y) in enumerate(zip(sess.get_outputs(), outs)):
        with open(os.path.join(d, "test_data_set_0", f"output_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(y, o.name).SerializeToString())


def vi(name, shape, dt=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dt, shape)


def c(name, a):
    return numpy_helper.from_array(a, name)


def ms(op, ins, outs, name, **attrs):
    return helper.make_node(op, ins, outs, name=name, domain="com.microsoft", **attrs)


def integer_cases(folder, rng):
    x = (rng.standard_normal((1, 8, 32)) * 1.5 + 0.2).astype(np.float32)
    inits = [c("B", rng.integers(-127, 128, (32, 48)).astype(np.int8)),
             c("bs", (rng.random(48) * 0.02 + 0.001).astype(np.float32)),
             c("bias", rng.standard_normal(48).astype(np.float32))]
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="dql"),
             ms("MatMulIntegerToFloat", ["xq", "B", "xs", "bs", "xz", "", "bias"], ["y"], "mmitf")]
    save(folder, "mmitf_dql", nodes, [vi("x", [1, 8, 32])], [vi("y", [1, 8, 48])], inits, {"x": x})

    a = rng.integers(0, 256, (6, 32)).astype(np.uint8)
    inits = [c("B", rng.integers(0, 256, (32, 20)).astype(np.uint8)),
             c("as", np.array(0.05, np.float32)), c("az", np.array(131, np.uint8)),
             c("bs", (rng.random(20) * 0.02 + 0.001).astype(np.float32)),
             c("bz", rng.integers(100, 156, 20).astype(np.uint8))]
    nodes = [ms("MatMulIntegerToFloat", ["a", "B", "as", "bs", "az", "bz"], ["y"], "mmitf")]
    save(folder, "mmitf_static", nodes, [vi("a", [6, 32], TensorProto.UINT8)], [vi("y", [6, 20])], inits,
         {"a": a})

    x = (rng.standard_normal((2, 6, 32)) * 0.7 - 0.1).astype(np.float32)
    inits = [c("B", rng.integers(-127, 128, (32, 24)).astype(np.int8)), c("bs", np.array(0.011, np.float32)),
             c("bias", rng.standard_normal(24).astype(np.float32))]
    nodes = [ms("DynamicQuantizeMatMul", ["x", "B", "bs", "", "bias"], ["y"], "dqmm")]
    save(folder, "dqmm", nodes, [vi("x", [2, 6, 32])], [vi("y", [2, 6, 24])], inits, {"x": x})

    x = (rng.standard_normal((5, 32)) * 3).astype(np.float32)
    inits = [c("B", rng.integers(0, 256, (32, 16)).astype(np.uint8)), c("bz", np.full(16, 128, np.uint8)),
             c("bs", (rng.random(16) * 0.02 + 0.001).astype(np.float32))]
    nodes = [ms("DynamicQuantizeMatMul", ["x", "B", "bs", "bz"], ["y"], "dqmm")]
    save(folder, "dqmm_u8zp", nodes, [vi("x", [5, 32])], [vi("y", [5, 16])], inits, {"x": x})


def pack(vals, bits):
    """Values (last axis) packed from the low bits of each byte up."""
    per = 8 // bits
    v = vals.reshape(*vals.shape[:-1], -1, per).astype(np.uint8)
    out = np.zeros(v.shape[:-1], np.uint8)
    for i in range(per):
        out |= v[..., i] << (i * bits)
    return out


def nbits_case(folder, rng, name, k, n, bits, block, zp, bias, xshape):
    blocks = (k + block - 1) // block
    q = rng.integers(0, 1 << bits, (n, blocks, block))
    b = pack(q, bits)  # [n, blocks, block*bits/8]
    scales = (rng.random(n * blocks) * 0.05 + 0.005).astype(np.float32)
    inits = [c("B", b), c("scales", scales)]
    ins = ["x", "B", "scales"]
    if zp == "u8":
        z = rng.integers(0, 1 << bits, (n, blocks))
        zrow = (blocks * bits + 7) // 8
        zz = np.zeros((n, zrow * 8 // bits), np.int64)
        zz[:, :blocks] = z
        inits.append(c("zp", pack(zz, bits).reshape(-1)))
        ins.append("zp")
    elif zp == "f32":
        inits.append(c("zp", (rng.random(n * blocks) * (1 << bits)).astype(np.float32)))
        ins.append("zp")
    if bias:
        inits.append(c("bias", rng.standard_normal(n).astype(np.float32)))
        ins += [""] * (5 - len(ins)) + ["bias"]
    nodes = [ms("MatMulNBits", ins, ["y"], "nbits", K=k, N=n, bits=bits, block_size=block)]
    x = rng.standard_normal(xshape + [k]).astype(np.float32)
    save(folder, name, nodes, [vi("x", xshape + [k])], [vi("y", xshape + [n])], inits, {"x": x})


def bad_cases(bad, rng):
    def model(name, node, inits, expect, k=64, n=8):
        graph = helper.make_graph([node], name, [vi("x", [1, k])], [vi("y", [1, n])], inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), MS])
        m.ir_version = 8
        onnx.save(m, os.path.join(bad, name + ".onnx"))
        with open(os.path.join(bad, name + ".expect"), "w") as f:
            f.write("compile @ -o @OUT\n" + expect + "\n")

    b = c("B", np.zeros((8, 2, 16), np.uint8))
    s = c("scales", np.ones(16, np.float32))
    g = c("g_idx", np.zeros(64, np.int32))
    model("contrib_nbits_g_idx", ms("MatMulNBits", ["x", "B", "scales", "", "g_idx"], ["y"], "nb", K=64, N=8,
                                    bits=4, block_size=32), [b, s, g], "input g_idx is given")
    model("contrib_nbits_bits3", ms("MatMulNBits", ["x", "B", "scales"], ["y"], "nb", K=64, N=8, bits=3,
                                    block_size=32), [b, s], "bits is 3; expected 2, 4 or 8")
    model("contrib_nbits_b_shape", ms("MatMulNBits", ["x", "B", "scales"], ["y"], "nb", K=64, N=8, bits=4,
                                      block_size=16), [b, s], "B is u8[8,2,16]; expected u8 [8, 4, 8]")
    model("contrib_nbits_runtime_b", ms("MatMulNBits", ["x", "x", "scales"], ["y"], "nb", K=64, N=8, bits=4,
                                        block_size=32), [s], "B is not a constant initializer")
    model("contrib_other_op", ms("QOrderedMatMul", ["x", "x"], ["y"], "qo"), [],
          "(QOrderedMatMul): domain 'com.microsoft' is not supported")


def main(folder, bad):
    rng = np.random.default_rng(2020)
    integer_cases(folder, rng)
    nbits_case(folder, rng, "nbits4_zp", 64, 48, 4, 32, "u8", False, [3])
    nbits_case(folder, rng, "nbits4_bias_tail", 40, 24, 4, 16, None, True, [2, 5])
    nbits_case(folder, rng, "nbits8", 64, 16, 8, 32, "u8", False, [4])
    nbits_case(folder, rng, "nbits4_f32zp", 64, 16, 4, 32, "f32", False, [4])
    bad_cases(bad, rng)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/generated/contrib_quant",
         sys.argv[2] if len(sys.argv) > 2 else "tests/bad")
