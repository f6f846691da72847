"""make_quant_cases.py — edge cases of kiln's linear-quantization ops with
ONNX Runtime's outputs as the reference (backend-test layout under
tests/generated/quant/). Run with the venv that has onnx and onnxruntime:

    build/venv/bin/python tools/make_quant_cases.py tests/generated/quant

- q_saturate_ties: QuantizeLinear to int8 and uint8 with values past both
  ends and exact halves (x / scale = k + 0.5: half to even), scalar params.
- q_axis_last / q_axis_first: per-axis QuantizeLinear -> DequantizeLinear
  on a rank-3 tensor, axis=-1 and axis=0, int8 zero points.
- mmi_zero_points: MatMulInteger, u8 x i8, batched (2x3x4 by 4x5) with a
  per-column b_zero_point and a scalar a_zero_point.
- qlmm_int8: QLinearMatMul, i8 in and out, per-column b_scale, batched.
- dq_matmul_int8: the weight form of quantized exports, DequantizeLinear of
  a constant int8 [K,N] (per-column and per-tensor scale) into MatMul (+ bias
  and Relu): kiln fuses it into its int8 Linear, which must compute the
  same as the f32 graph.

ONNX Runtime runs with its graph optimisations off: with them it rewrites
DequantizeLinear -> MatMul into MatMulIntegerToFloat, which quantizes the
activations too (1% off the model's own arithmetic here)."""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def save(folder, name, nodes, inputs, outputs, inits, feeds, opset=13):
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    d = os.path.join(folder, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    outs = sess.run(None, feeds)
    for k, (n, v) in enumerate(feeds.items()):
        with open(os.path.join(d, "test_data_set_0", f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, n).SerializeToString())
    for k, (info, v) in enumerate(zip(outputs, outs)):
        with open(os.path.join(d, "test_data_set_0", f"output_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, info.name).SerializeToString())


def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, dt, shape)


def main(folder):
    c = numpy_helper.from_array
    # saturation and ties
    x = np.array([-1000, -129.5, -128.5, -127.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 126.5, 127.5, 254.5,
                  255.5, 1000, 3.25], np.float32) * 0.5
    save(folder, "q_saturate_ties",
         [helper.make_node("QuantizeLinear", ["x", "s", "zi"], ["yi"]),
          helper.make_node("QuantizeLinear", ["x", "s", "zu"], ["yu"]),
          helper.make_node("QuantizeLinear", ["x", "s"], ["yd"])],
         [vi("x", TensorProto.FLOAT, [16])],
         [vi("yi", TensorProto.INT8, [16]), vi("yu", TensorProto.UINT8, [16]), vi("yd", TensorProto.UINT8, [16])],
         [c(np.array(0.5, np.float32), "s"), c(np.array(-3, np.int8), "zi"), c(np.array(7, np.uint8), "zu")],
         {"x": x})
    rng = np.random.default_rng(3)
    x3 = (rng.standard_normal((2, 3, 4)) * 40).astype(np.float32)
    for name, axis, n in [("q_axis_last", -1, 4), ("q_axis_first", 0, 2)]:
        save(folder, name,
             [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=axis),
              helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=axis)],
             [vi("x", TensorProto.FLOAT, [2, 3, 4])],
             [vi("q", TensorProto.INT8, [2, 3, 4]), vi("y", TensorProto.FLOAT, [2, 3, 4])],
             [c((np.arange(n) + 1).astype(np.float32) * 0.25, "s"), c((np.arange(n) * 5 - 4).astype(np.int8), "z")],
             {"x": x3})
    a = rng.integers(0, 256, (2, 3, 4)).astype(np.uint8)
    b = rng.integers(-128, 128, (4, 5)).astype(np.int8)
    save(folder, "mmi_zero_points",
         [helper.make_node("MatMulInteger", ["a", "b", "azp", "bzp"], ["y"])],
         [vi("a", TensorProto.UINT8, [2, 3, 4])], [vi("y", TensorProto.INT32, [2, 3, 5])],
         [c(b, "b"), c(np.array(131, np.uint8), "azp"), c(np.array([0, -3, 4, 127, -128], np.int8), "bzp")],
         {"a": a})
    qa = rng.integers(-128, 128, (2, 3, 6)).astype(np.int8)
    qb = rng.integers(-128, 128, (6, 4)).astype(np.int8)
    save(folder, "qlmm_int8",
         [helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])],
         [vi("a", TensorProto.INT8, [2, 3, 6])], [vi("y", TensorProto.INT8, [2, 3, 4])],
         [c(np.array(0.02, np.float32), "as"), c(np.array(3, np.int8), "az"), c(qb, "b"),
          c(np.array([0.01, 0.03, 0.002, 0.05], np.float32), "bs"), c(np.array([0, 0, 0, 0], np.int8), "bz"),
          c(np.array(0.05, np.float32), "ys"), c(np.array(-5, np.int8), "yz")],
         {"a": qa})

    k, n = 96, 80
    wq = rng.integers(-127, 128, (k, n)).astype(np.int8)
    wq2 = rng.integers(-127, 128, (n, 64)).astype(np.int8)
    save(folder, "dq_matmul_int8",
         [helper.make_node("DequantizeLinear", ["wq", "s", "zp"], ["w"], axis=1),
          helper.make_node("MatMul", ["x", "w"], ["mm"]), helper.make_node("Add", ["mm", "b"], ["a"]),
          helper.make_node("Relu", ["a"], ["y"]), helper.make_node("DequantizeLinear", ["wq2", "s2"], ["w2"]),
          helper.make_node("MatMul", ["y", "w2"], ["z"])],
         [vi("x", TensorProto.FLOAT, [2, 7, k])], [vi("z", TensorProto.FLOAT, [2, 7, 64])],
         [c(wq, "wq"), c((rng.random(n) * 0.02 + 0.001).astype(np.float32), "s"), c(np.zeros(n, np.int8), "zp"),
          c(rng.standard_normal(n).astype(np.float32), "b"), c(wq2, "wq2"), c(np.array(0.01, np.float32), "s2")],
         {"x": rng.standard_normal((2, 7, k)).astype(np.float32)})


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/generated/quant")
