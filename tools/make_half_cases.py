"""make_half_cases.py — f16/bf16 model cases for kiln check, with ONNX
Runtime's outputs as the reference (backend-test layout under
tests/generated/half/). Run with the venv that has onnx and onnxruntime:

    build/venv/bin/python tools/make_half_cases.py tests/generated/half

- f16_mixed: an f16 input through elementwise ops (Add, Mul, Relu, Max,
  Div, Sqrt, Where), data movement (Transpose, Reshape, Concat, Slice,
  Gather) and f16 constants, then Cast to f32 for a MatMul (kiln computes
  MatMul in f32 only) and back to f16: what a half-precision export does.
- bf16_cast: bf16 in, Cast to f32, Mul, Cast back to bf16 (ONNX Runtime
  computes few ops in bf16; Cast is one)."""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def save(folder, model, feeds):
    os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    outs = sess.run(None, feeds)
    for k, (name, value) in enumerate(feeds.items()):
        t = numpy_helper.from_array(value, name)
        with open(os.path.join(folder, "test_data_set_0", f"input_{k}.pb"), "wb") as f:
            f.write(t.SerializeToString())
    for k, (info, value) in enumerate(zip(model.graph.output, outs)):
        t = numpy_helper.from_array(value, info.name)
        with open(os.path.join(folder, "test_data_set_0", f"output_{k}.pb"), "wb") as f:
            f.write(t.SerializeToString())


def f16_mixed(folder):
    rng = np.random.default_rng(7)
    H = TensorProto.FLOAT16
    w = numpy_helper.from_array(rng.standard_normal((8, 6)).astype(np.float32), "w")
    c = numpy_helper.from_array(rng.standard_normal((4, 8)).astype(np.float16), "c")
    half = numpy_helper.from_array(np.array(0.5, dtype=np.float16), "half")
    idx = numpy_helper.from_array(np.array([3, 0, 2], dtype=np.int64), "idx")
    shape = numpy_helper.from_array(np.array([8, 4], dtype=np.int64), "shape")
    starts = numpy_helper.from_array(np.array([1], dtype=np.int64), "starts")
    ends = numpy_helper.from_array(np.array([7], dtype=np.int64), "ends")
    axes = numpy_helper.from_array(np.array([0], dtype=np.int64), "axes")
    nodes = [
        helper.make_node("Add", ["x", "c"], ["a"]),
        helper.make_node("Mul", ["a", "half"], ["m"]),
        helper.make_node("Relu", ["m"], ["r"]),
        helper.make_node("Max", ["r", "x"], ["mx"]),
        helper.make_node("Abs", ["x"], ["ax"]),
        helper.make_node("Sqrt", ["ax"], ["sq"]),
        helper.make_node("Div", ["mx", "c"], ["dv"]),
        helper.make_node("Greater", ["x", "half"], ["gt"]),
        helper.make_node("Where", ["gt", "sq", "dv"], ["wh"]),
        helper.make_node("Transpose", ["wh"], ["tr"], perm=[1, 0]),
        helper.make_node("Reshape", ["tr", "shape"], ["rs"]),
        helper.make_node("Concat", ["rs", "rs"], ["cc"], axis=1),
        helper.make_node("Slice", ["cc", "starts", "ends", "axes"], ["sl"]),
        helper.make_node("Gather", ["sl", "idx"], ["ga"], axis=0),
        helper.make_node("Cast", ["ga"], ["g32"], to=TensorProto.FLOAT),
        helper.make_node("MatMul", ["g32", "w"], ["mm"]),
        helper.make_node("Cast", ["mm"], ["y"], to=H),
    ]
    graph = helper.make_graph(nodes, "f16_mixed", [helper.make_tensor_value_info("x", H, [4, 8])],
                              [helper.make_tensor_value_info("y", H, [3, 6]),
                               helper.make_tensor_value_info("wh", H, [4, 8])],
                              [w, c, half, idx, shape, starts, ends, axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    x = (rng.standard_normal((4, 8)) * 2).astype(np.float16)
    save(os.path.join(folder, "f16_mixed"), model, {"x": x})


def bf16_cast(folder):
    B = TensorProto.BFLOAT16
    nodes = [
        helper.make_node("Cast", ["x"], ["x32"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["x32", "x32"], ["sq"]),
        helper.make_node("Cast", ["sq"], ["y"], to=B),
    ]
    graph = helper.make_graph(nodes, "bf16_cast", [helper.make_tensor_value_info("x", B, [2, 5])],
                              [helper.make_tensor_value_info("y", B, [2, 5])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    bits = np.array([0x3f80, 0x3fc1, 0xc0a3, 0x4b12, 0x0001, 0x7f7f, 0x3c01, 0xbf81, 0x4000, 0x0000],
                    dtype=np.uint16).reshape(2, 5)
    t = helper.make_tensor("x", B, [2, 5], bits.tobytes(), raw=True)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    # ORT takes and returns bf16 as a numpy array of the onnx bf16 type; go through TensorProtos
    folder = os.path.join(folder, "bf16_cast")
    os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    x32 = (bits.astype(np.uint32) << 16).view(np.float32)
    sq = (x32 * x32).astype(np.float32)
    u = sq.view(np.uint32)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)  # round to nearest even
    rounded[np.isnan(sq)] = 0x7FC0
    y = helper.make_tensor("y", B, [2, 5], rounded.tobytes(), raw=True)
    del sess, t
    with open(os.path.join(folder, "test_data_set_0", "input_0.pb"), "wb") as f:
        f.write(helper.make_tensor("x", B, [2, 5], bits.tobytes(), raw=True).SerializeToString())
    with open(os.path.join(folder, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(y.SerializeToString())


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/generated/half"
    f16_mixed(out)
    bf16_cast(out)
