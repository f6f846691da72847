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
- mmi_wrap: MatMulInteger with K = 33100 > 2^31 / 255²: the int32 sum
  wraps (ONNX Runtime's result), which kiln's C reaches through int64_t,
  without a signed overflow.
- mmi_wide: MatMulInteger with N = 4100, too wide for a row of Y on the
  stack: the C computes one dot product per element instead.
- qlconv_int8_group: QLinearConv, i8, 2 groups, strides, dilations,
  asymmetric pads, per-channel w_scale, a runtime bias (so the C
  accumulates in int64_t), saturating at both ends.
- qlconv_u8_channel_zp: QLinearConv, u8, per-channel w_zero_point, padded
  (a padded tap reads x's zero point), a constant bias.
- convint_same_upper: ConvInteger on a rank-3 x (1-D convolution), batch 2,
  SAME_UPPER padding, stride 2, a large x zero point.
- encoder_dynamic_int8: a whole dynamically quantized export, ONNX
  Runtime's quantize_dynamic of the encoder_2l_op14 fixture (its 8 MatMuls
  become DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul), on the
  fixture's input.
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

    integer_conv_cases(folder)
    dynamic_export_case(folder)


def integer_conv_cases(folder):
    """MatMulInteger past int32_t's reach and the integer convolutions."""
    c = numpy_helper.from_array
    rng = np.random.default_rng(5)
    k = 33100
    save(folder, "mmi_wrap", [helper.make_node("MatMulInteger", ["a", "b"], ["y"])],
         [vi("a", TensorProto.UINT8, [1, k]), vi("b", TensorProto.UINT8, [k, 1])], [vi("y", TensorProto.INT32, [1, 1])],
         [], {"a": np.full((1, k), 255, np.uint8), "b": np.full((k, 1), 255, np.uint8)})
    wide = np.random.default_rng(6)
    save(folder, "mmi_wide", [helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])],
         [vi("a", TensorProto.UINT8, [2, 3])], [vi("y", TensorProto.INT32, [2, 4100])],
         [c(wide.integers(-128, 128, (3, 4100)).astype(np.int8), "b"), c(np.array(100, np.uint8), "az"),
          c(wide.integers(-128, 128, 4100).astype(np.int8), "bz")],
         {"a": wide.integers(0, 256, (2, 3)).astype(np.uint8)})
    x = rng.integers(-128, 128, (1, 4, 7, 6)).astype(np.int8)
    w = rng.integers(-128, 128, (6, 2, 3, 2)).astype(np.int8)
    save(folder, "qlconv_int8_group",
         [helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"], group=2,
                           strides=[2, 1], dilations=[1, 2], pads=[1, 0, 2, 1])],
         [vi("x", TensorProto.INT8, [1, 4, 7, 6]), vi("b", TensorProto.INT32, [6])],
         [vi("y", TensorProto.INT8, [1, 6, 4, 5])],
         [c(np.array(0.05, np.float32), "xs"), c(np.array(3, np.int8), "xz"), c(w, "w"),
          c((rng.random(6) * 0.02).astype(np.float32), "ws"), c(np.zeros(6, np.int8), "wz"),
          c(np.array(0.2, np.float32), "ys"), c(np.array(-7, np.int8), "yz")],
         {"x": x, "b": rng.integers(-3000, 3000, 6).astype(np.int32)})
    save(folder, "qlconv_u8_channel_zp",
         [helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"], group=2,
                           pads=[1, 1, 1, 1])],
         [vi("x", TensorProto.UINT8, [1, 4, 7, 6])], [vi("y", TensorProto.UINT8, [1, 6, 7, 7])],
         [c(np.array(0.05, np.float32), "xs"), c(np.array(130, np.uint8), "xz"),
          c(rng.integers(0, 256, (6, 2, 3, 2)).astype(np.uint8), "w"),
          c((rng.random(6) * 0.02).astype(np.float32), "ws"), c(np.array([120, 128, 0, 255, 3, 128], np.uint8), "wz"),
          c(np.array(0.2, np.float32), "ys"), c(np.array(100, np.uint8), "yz"),
          c(rng.integers(-5000, 5000, 6).astype(np.int32), "b")],
         {"x": rng.integers(0, 256, (1, 4, 7, 6)).astype(np.uint8)})
    save(folder, "convint_same_upper",
         [helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], auto_pad="SAME_UPPER", strides=[2])],
         [vi("x", TensorProto.UINT8, [2, 3, 9])], [vi("y", TensorProto.INT32, [2, 4, 5])],
         [c(rng.integers(0, 256, (4, 3, 4)).astype(np.uint8), "w"), c(np.array(200, np.uint8), "xz"),
          c(np.array(7, np.uint8), "wz")],
         {"x": rng.integers(0, 256, (2, 3, 9)).astype(np.uint8)})


def dynamic_export_case(folder):
    """quantize_dynamic's rewrite of a transformer fixture, run by ONNX Runtime."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "models", "encoder_2l_op14")
    d = os.path.join(folder, "encoder_dynamic_int8")
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    quantize_dynamic(os.path.join(src, "model.onnx"), os.path.join(d, "model.onnx"), weight_type=QuantType.QInt8)
    x = numpy_helper.to_array(onnx.load_tensor(os.path.join(src, "test_data_set_0", "input_0.pb")))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(os.path.join(d, "model.onnx"), so, providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {sess.get_inputs()[0].name: x})
    for name, v in (("input_0", numpy_helper.from_array(x, sess.get_inputs()[0].name)),
                    ("output_0", numpy_helper.from_array(y, sess.get_outputs()[0].name))):
        with open(os.path.join(d, "test_data_set_0", name + ".pb"), "wb") as f:
            f.write(v.SerializeToString())


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/generated/quant")
