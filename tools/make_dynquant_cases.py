"""Cases for fuse_dynquant (compiler/passes/fuse_dynquant.c): ONNX Runtime's
dynamic int8 products onto kiln's w8a8 Linear, against ONNX Runtime.

Run with a python that has onnx and onnxruntime (the venv); the encoder is
exported with Debian's torch 1.13 by /usr/bin/python3 (a subprocess):
    python tools/make_dynquant_cases.py [tests/generated/dynquant]

- chains: the chain's variants, built with onnx.helper, reference ONNX
  Runtime with its graph optimisations off (the graph's own arithmetic):
  y1: an i8 weight, no zero point input, a per-tensor scale, Mul(xs, bs),
      bias Add, Relu;
  y2: the same DynamicQuantizeLinear read by a second product, a u8 weight
      with per-column zero points near 128 (B - zp fits int8), per-column
      scales, Mul(bs, xs) and Mul(product, cast) the other way round;
  y3: a DynamicQuantizeLinear of y1 (rank 3), an i8 weight with a scalar
      zero point 0, per-column scales, Add(bias, y) with the bias first;
  y4: a u8 weight with zero point 0 and values to 255 (B - zp leaves
      int8): not fused, the generic MatMulInteger runs.
  kiln fuses three (tests.cmake checks `kiln compile -v`), and must agree
  to the default 1e-4: each fused product computes the chain's numbers.
- t5enc_qdyn: quantize_dynamic(per_channel=True) of tests/hf/t5enc (a
  2-layer T5 encoder, d 32), reference ONNX Runtime with all its graph
  optimisations (what a user runs), on the fixture's input.
- enc_qdq: quantize_static (QDQ format, MatMuls only, int8 activations
  and weights, 4 random calibration inputs) of tests/models/encoder_2l_op14:
  kiln's fuse_qdq makes the 6 products by weights w8a8 Linears with the
  activations' static scale and zero point. Reference: ONNX Runtime with
  its graph optimisations off (on, it rewrites QDQ into QLinear ops that
  requantize each product's output: 0.068 away, cosine 0.99983).
- enc2_d128_qdyn: quantize_dynamic (per tensor, the default) of a 2-layer
  post-LN nn.TransformerEncoder, d 128, 4 heads, ff 512, GELU, seq 64,
  ONNX Runtime with all optimisations. kiln's default build agrees to
  1.2e-06; built otherwise (plain C) a one-ulp difference in the f32
  kernels around the products moves some u8 roundings of the second
  layer's DynamicQuantizeLinear by a step, so those builds are checked by
  cosine and max abs error (tests.cmake states the figures).
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def write_set(d, sess, feeds, outs):
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    for k, i in enumerate(sess.get_inputs()):
        with open(os.path.join(d, "test_data_set_0", f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(feeds[i.name], i.name).SerializeToString())
    for k, (o, y) in enumerate(zip(sess.get_outputs(), outs)):
        with open(os.path.join(d, "test_data_set_0", f"output_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(y, o.name).SerializeToString())


def run_ort(path, feeds, optimise):
    so = ort.SessionOptions()
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimise
                                   else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return sess, sess.run(None, feeds)


def chains_case(folder):
    rng = np.random.default_rng(20)
    c = lambda name, a: numpy_helper.from_array(a, name)  # noqa: E731
    inits = [
        c("B1", rng.integers(-127, 128, (32, 48)).astype(np.int8)),
        c("bs1", np.array(0.013, np.float32)),
        c("bias1", rng.standard_normal(48).astype(np.float32)),
        c("B2", rng.integers(0, 256, (32, 40)).astype(np.uint8)),
        c("bz2", np.full(40, 128, np.uint8)),
        c("bs2", (rng.random(40) * 0.02 + 0.001).astype(np.float32)),
        c("B3", rng.integers(-100, 101, (48, 16)).astype(np.int8)),
        c("bz3", np.array(0, np.int8)),
        c("bs3", (rng.random(16) * 0.01 + 0.001).astype(np.float32)),
        c("bias3", rng.standard_normal(16).astype(np.float32)),
        c("B4", rng.integers(0, 256, (32, 24)).astype(np.uint8)),
        c("bz4", np.array(0, np.uint8)),
        c("bs4", np.array(0.004, np.float32)),
    ]
    n = helper.make_node
    nodes = [
        n("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="dql_x"),
        n("MatMulInteger", ["xq", "B1", "xz"], ["acc1"], name="mmi1"),
        n("Cast", ["acc1"], ["f1"], to=TensorProto.FLOAT, name="cast1"),
        n("Mul", ["xs", "bs1"], ["s1"], name="scale1"),
        n("Mul", ["f1", "s1"], ["m1"], name="mul1"),
        n("Add", ["m1", "bias1"], ["a1"], name="add1"),
        n("Relu", ["a1"], ["y1"], name="relu1"),
        n("MatMulInteger", ["xq", "B2", "xz", "bz2"], ["acc2"], name="mmi2"),
        n("Cast", ["acc2"], ["f2"], to=TensorProto.FLOAT, name="cast2"),
        n("Mul", ["bs2", "xs"], ["s2"], name="scale2"),
        n("Mul", ["s2", "f2"], ["y2"], name="mul2"),
        n("DynamicQuantizeLinear", ["y1"], ["hq", "hs", "hz"], name="dql_h"),
        n("MatMulInteger", ["hq", "B3", "hz", "bz3"], ["acc3"], name="mmi3"),
        n("Cast", ["acc3"], ["f3"], to=TensorProto.FLOAT, name="cast3"),
        n("Mul", ["hs", "bs3"], ["s3"], name="scale3"),
        n("Mul", ["f3", "s3"], ["m3"], name="mul3"),
        n("Add", ["bias3", "m3"], ["y3"], name="add3"),
        n("MatMulInteger", ["xq", "B4", "xz", "bz4"], ["acc4"], name="mmi4"),
        n("Cast", ["acc4"], ["f4"], to=TensorProto.FLOAT, name="cast4"),
        n("Mul", ["xs", "bs4"], ["s4"], name="scale4"),
        n("Mul", ["f4", "s4"], ["y4"], name="mul4"),
    ]
    vi = lambda name, shape: helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)  # noqa: E731
    graph = helper.make_graph(nodes, "dynquant_chains", [vi("x", [1, 8, 32])],
                              [vi("y1", [1, 8, 48]), vi("y2", [1, 8, 40]), vi("y3", [1, 8, 16]),
                               vi("y4", [1, 8, 24])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    d = os.path.join(folder, "chains")
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    feeds = {"x": (rng.standard_normal((1, 8, 32)) * 2 + 0.3).astype(np.float32)}
    sess, outs = run_ort(os.path.join(d, "model.onnx"), feeds, optimise=False)
    write_set(d, sess, feeds, outs)


def quantized_case(folder, name, src, feeds, per_channel):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    d = os.path.join(folder, name)
    os.makedirs(d, exist_ok=True)
    quantize_dynamic(src, os.path.join(d, "model.onnx"), weight_type=QuantType.QInt8, per_channel=per_channel)
    sess, outs = run_ort(os.path.join(d, "model.onnx"), feeds, optimise=True)
    write_set(d, sess, feeds, outs)


EXPORT = r"""
import sys, torch, torch.nn as nn
sys.path.insert(0, sys.argv[2])
import export_fixtures as fx
torch.manual_seed(0)
gen = torch.Generator().manual_seed(7100)
layer = nn.TransformerEncoderLayer(128, 4, 512, dropout=0.1, batch_first=True, activation="gelu")
m = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
fx.reinit_(m, gen)
x = torch.randn(1, 64, 128, generator=gen)
torch.onnx.export(m, (x,), sys.argv[1], input_names=["src"], output_names=["out"], opset_version=14)
torch.save(x, sys.argv[1] + ".input")
"""


def encoder_case(folder, tmp):
    f32 = os.path.join(tmp, "enc2_d128.onnx")
    subprocess.run(["/usr/bin/python3", "-c", EXPORT, f32, os.path.join(ROOT, "tools")], check=True)
    x = subprocess.run(["/usr/bin/python3", "-c", "import sys, torch; sys.stdout.buffer.write("
                        "torch.load(sys.argv[1]).numpy().tobytes())", f32 + ".input"],
                       check=True, capture_output=True).stdout
    src = np.frombuffer(x, np.float32).reshape(1, 64, 128).copy()
    quantized_case(folder, "enc2_d128_qdyn", f32, {"src": src}, per_channel=False)


def qdq_case(folder):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static
    src = os.path.join(ROOT, "tests", "models", "encoder_2l_op14")
    x = numpy_helper.to_array(onnx.load_tensor(os.path.join(src, "test_data_set_0", "input_0.pb")))
    name = onnx.load(os.path.join(src, "model.onnx")).graph.input[0].name

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.sets = iter([{name: np.random.default_rng(i).standard_normal(x.shape).astype(np.float32)}
                              for i in range(4)])

        def get_next(self):
            return next(self.sets, None)

    d = os.path.join(folder, "enc_qdq")
    os.makedirs(d, exist_ok=True)
    quantize_static(os.path.join(src, "model.onnx"), os.path.join(d, "model.onnx"), Reader(),
                    quant_format=QuantFormat.QDQ, op_types_to_quantize=["MatMul"])
    sess, outs = run_ort(os.path.join(d, "model.onnx"), {name: x}, optimise=False)
    write_set(d, sess, {name: x}, outs)


def main(folder):
    import tempfile
    chains_case(folder)
    qdq_case(folder)
    t5 = os.path.join(ROOT, "tests", "hf", "t5enc")
    feeds = {}
    for k, name in enumerate(("input_ids", "attention_mask")):
        feeds[name] = numpy_helper.to_array(onnx.load_tensor(os.path.join(t5, "test_data_set_0", f"input_{k}.pb")))
    quantized_case(folder, "t5enc_qdyn", os.path.join(t5, "model.onnx"), feeds, per_channel=True)
    with tempfile.TemporaryDirectory() as tmp:
        encoder_case(folder, tmp)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/generated/dynquant")
