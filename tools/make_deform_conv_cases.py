#!/usr/bin/env python3
"""make_deform_conv_cases.py — DeformConv fixtures.

  /tmp/venv/bin/python tools/make_deform_conv_cases.py

writes tests/generated/deform_conv/NAME/ (model.onnx + test_data_set_0):
groups, offset groups, a mask, a bias, strides, dilations and pads, with
offsets large enough to carry taps out of the image. The references are
ONNX Runtime's where it runs the case, else the ONNX reference
implementation's (the file says which, in the model's doc_string). Also
tests/bad/deform_conv_*. The outputs are committed: the tests need no Python.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "generated", "deform_conv")
BAD = os.path.join(HERE, "..", "tests", "bad")
F32 = TensorProto.FLOAT


def vi(name, shape):
    return helper.make_tensor_value_info(name, F32, list(shape))


def model(ins, out_shape, inits=(), **attrs):
    names = [n for n, _ in ins] + [t.name for t in inits]
    node = helper.make_node("DeformConv", names, ["Y"], name="dcn", **attrs)
    g = helper.make_graph([node], "dcn", [vi(n, s) for n, s in ins], [vi("Y", out_shape)], list(inits))
    m = helper.make_model(g, producer_name="kiln-dcn", opset_imports=[helper.make_opsetid("", 19)])
    m.ir_version = 9
    return m


def write_case(name, m, inputs):
    d = os.path.join(OUT, name)
    ds = os.path.join(d, "test_data_set_0")
    os.makedirs(ds, exist_ok=True)
    onnx.checker.check_model(m)
    try:
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
        outs, oracle = s.run(None, inputs), "onnxruntime " + ort.__version__
    except Exception:  # ORT without DeformConv
        from onnx.reference import ReferenceEvaluator
        outs, oracle = ReferenceEvaluator(m).run(None, inputs), "onnx.reference " + onnx.__version__
    m.doc_string = "reference outputs from " + oracle
    onnx.save(m, os.path.join(d, "model.onnx"))
    for i, (k, v) in enumerate(inputs.items()):
        onnx.save_tensor(numpy_helper.from_array(v, k), os.path.join(ds, f"input_{i}.pb"))
    for i, (o, v) in enumerate(zip(m.graph.output, outs)):
        onnx.save_tensor(numpy_helper.from_array(v, o.name), os.path.join(ds, f"output_{i}.pb"))
    print(name, oracle)


def main():
    rng = np.random.default_rng(9)
    # DCNv2: groups 2, offset groups 2, mask, bias, stride 2, dilation 2, pads
    x = rng.standard_normal((2, 4, 9, 10)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 3)).astype(np.float32)
    oh, ow = (9 + 2 - 4 - 1) // 2 + 1, (10 + 2 - 4 - 1) // 2 + 1
    off = (2.0 * rng.standard_normal((2, 2 * 2 * 9, oh, ow))).astype(np.float32)
    mask = rng.uniform(0, 1, (2, 2 * 9, oh, ow)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    m = model([("X", x.shape), ("W", w.shape), ("offset", off.shape), ("B", b.shape), ("mask", mask.shape)],
              (2, 6, oh, ow), group=2, offset_group=2, strides=[2, 2], dilations=[2, 2], pads=[1, 1, 1, 1],
              kernel_shape=[3, 3])
    write_case("dcnv2_groups_mask_strided", m, {"X": x, "W": w, "offset": off, "B": b, "mask": mask})
    # DCNv1: no mask, no bias, a 2x3 kernel, asymmetric pads
    x = rng.standard_normal((1, 3, 6, 7)).astype(np.float32)
    w = rng.standard_normal((4, 3, 2, 3)).astype(np.float32)
    oh, ow = 6 + 1 - 2 + 1, 7 + 2 - 3 + 1
    off = (1.5 * rng.standard_normal((1, 2 * 6, oh, ow))).astype(np.float32)
    m = model([("X", x.shape), ("W", w.shape), ("offset", off.shape)], (1, 4, oh, ow), pads=[1, 0, 0, 2])
    write_case("dcnv1_plain", m, {"X": x, "W": w, "offset": off})
    # bad input: offset channels
    m = model([("X", (1, 2, 4, 4)), ("W", (2, 2, 3, 3)), ("offset", (1, 9, 2, 2))], (1, 2, 2, 2))
    onnx.save(m, os.path.join(BAD, "deform_conv_offset_shape.onnx"))
    with open(os.path.join(BAD, "deform_conv_offset_shape.expect"), "w") as fh:
        fh.write("compile @ -o @OUT\nnode 'dcn' (DeformConv): offset is f32[1,9,2,2]; expected f32 [1, 18, 2, 2]\n")


if __name__ == "__main__":
    main()
