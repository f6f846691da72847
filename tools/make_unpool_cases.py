#!/usr/bin/env python3
"""make_unpool_cases.py — LpPool, CenterCropPad, MaxUnpool and Col2Im fixtures.

  /tmp/venv/bin/python tools/make_unpool_cases.py

writes tests/generated/unpool/NAME/ (model.onnx + test_data_set_0 with ONNX
Runtime's outputs, or the ONNX reference's for the one case where ORT departs
from the node tests) for what the node tests leave out: LpPool with p = 3,
ceil_mode and dilations; MaxPool's indices fed to MaxUnpool (a SegNet-style
decoder step) with a larger output_shape; CenterCropPad cropping one axis
and padding another of an f16 tensor; Col2Im with strides, dilations and
pads (the Fold of a 3x3 unfold) — and tests/bad/unpool_*.onnx + .expect.
The outputs are committed: the tests need no Python.
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "generated", "unpool")
BAD = os.path.join(HERE, "..", "tests", "bad")
F32, F16, I64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64


def vi(name, shape, dt=F32):
    return helper.make_tensor_value_info(name, dt, list(shape))


def model(nodes, inputs, outputs, inits=(), opset=18):
    g = helper.make_graph(nodes, "img", inputs, outputs, list(inits))
    m = helper.make_model(g, producer_name="kiln-unpool", opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def write_case(name, m, inputs, oracle="ort"):
    """oracle: "ort", or "reference" (onnx.reference) where ORT departs from the node tests."""
    d = os.path.join(OUT, name)
    ds = os.path.join(d, "test_data_set_0")
    os.makedirs(ds, exist_ok=True)
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(d, "model.onnx"))
    if oracle == "ort":
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        s = ort.InferenceSession(os.path.join(d, "model.onnx"), so, providers=["CPUExecutionProvider"])
        names, outs = [o.name for o in s.get_outputs()], s.run(None, inputs)
    else:
        from onnx.reference import ReferenceEvaluator
        names, outs = [o.name for o in m.graph.output], ReferenceEvaluator(m).run(None, inputs)
    for i, (k, v) in enumerate(inputs.items()):
        onnx.save_tensor(numpy_helper.from_array(v, k), os.path.join(ds, f"input_{i}.pb"))
    for i, (o, v) in enumerate(zip(names, outs)):
        onnx.save_tensor(numpy_helper.from_array(v, o), os.path.join(ds, f"output_{i}.pb"))


def c64(name, v):
    return numpy_helper.from_array(np.array(v, np.int64), name)


def cases():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 2, 9, 10)).astype(np.float32)
    write_case("lppool_p3_ceil_dilations", model(
        [helper.make_node("LpPool", ["X"], ["Y"], name="lp", p=3, kernel_shape=[3, 2], strides=[2, 3],
                          dilations=[2, 1], pads=[1, 0, 1, 1], ceil_mode=1)],
        [vi("X", x.shape)], [vi("Y", (1, 2, 5, 4))]), {"X": x})
    write_case("lppool_p1_same_upper", model(
        [helper.make_node("LpPool", ["X"], ["Y"], name="lp", p=1, kernel_shape=[2, 3], strides=[2, 2],
                          auto_pad="SAME_UPPER")],
        [vi("X", x.shape)], [vi("Y", (1, 2, 5, 5))], opset=11), {"X": x})
    # pool, then unpool (a SegNet decoder step)
    x = rng.standard_normal((2, 3, 6, 8)).astype(np.float32)
    write_case("maxpool_maxunpool", model(
        [helper.make_node("MaxPool", ["X"], ["P", "I"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Relu", ["P"], ["R"], name="relu"),
         helper.make_node("MaxUnpool", ["R", "I"], ["Y"], name="unpool", kernel_shape=[2, 2], strides=[2, 2])],
        [vi("X", x.shape)], [vi("Y", (2, 3, 6, 8))], opset=11), {"X": x})
    # ... into a larger canvas (output_shape): the indices address the
    # unpooled [2, 3, 6, 8] block at the start of Y, as the ONNX reference
    # and node test test_maxunpool_export_with_output_shape have it; ORT 1.32
    # reads them as indices into Y itself, so this case's oracle is the reference
    write_case("maxpool_maxunpool_output_shape", model(
        [helper.make_node("MaxPool", ["X"], ["P", "I"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Relu", ["P"], ["R"], name="relu"),
         helper.make_node("MaxUnpool", ["R", "I", "shape"], ["Y"], name="unpool", kernel_shape=[2, 2],
                          strides=[2, 2])],
        [vi("X", x.shape)], [vi("Y", (2, 3, 7, 9))], [c64("shape", [2, 3, 7, 9])], opset=11), {"X": x},
        oracle="reference")
    # CenterCropPad on f16 HWC data: crop H, pad W (odd differences)
    x = rng.standard_normal((7, 4, 3)).astype(np.float16)
    write_case("center_crop_pad_f16", model(
        [helper.make_node("CenterCropPad", ["X", "shape"], ["Y"], name="ccp", axes=[0, 1])],
        [vi("X", x.shape, F16)], [vi("Y", (4, 7, 3), F16)], [c64("shape", [4, 7])]), {"X": x})
    # Col2Im: fold 3x3 patches, stride 2, dilation (1, 2), pads
    img, blk, st, dil, pads = [7, 9], [3, 3], [2, 1], [1, 2], [1, 0, 1, 2]
    nb = [(img[j] + pads[j] + pads[2 + j] - dil[j] * (blk[j] - 1) - 1) // st[j] + 1 for j in range(2)]
    x = rng.standard_normal((2, 2 * 9, nb[0] * nb[1])).astype(np.float32)
    write_case("col2im_strided_dilated_padded", model(
        [helper.make_node("Col2Im", ["X", "image_shape", "block_shape"], ["Y"], name="fold", strides=st,
                          dilations=dil, pads=pads)],
        [vi("X", x.shape)], [vi("Y", (2, 2, 7, 9))], [c64("image_shape", img), c64("block_shape", blk)]),
        {"X": x})


def bad():
    def save(name, m, expect):
        onnx.save(m, os.path.join(BAD, name + ".onnx"))
        with open(os.path.join(BAD, name + ".expect"), "w") as fh:
            fh.write("compile @ -o @OUT\n" + expect + "\n")

    save("unpool_lppool_p0", model([helper.make_node("LpPool", ["X"], ["Y"], name="lp", p=0, kernel_shape=[2, 2])],
                                   [vi("X", (1, 1, 4, 4))], [vi("Y", (1, 1, 3, 3))], opset=11),
         "node 'lp' (LpPool): p is 0; expected a norm order of 1 to 64")
    save("unpool_maxunpool_indices_type",
         model([helper.make_node("MaxUnpool", ["X", "I"], ["Y"], name="unpool", kernel_shape=[2, 2], strides=[2, 2])],
               [vi("X", (1, 1, 2, 2)), vi("I", (1, 1, 2, 2), TensorProto.INT32)], [vi("Y", (1, 1, 4, 4))], opset=11),
         "node 'unpool' (MaxUnpool): I is i32[1,1,2,2]; expected i64 of X's shape")
    save("unpool_maxunpool_shape_small",
         model([helper.make_node("MaxUnpool", ["X", "I", "shape"], ["Y"], name="unpool", kernel_shape=[2, 2],
                                 strides=[2, 2])],
               [vi("X", (1, 1, 2, 2)), vi("I", (1, 1, 2, 2), I64)], [vi("Y", (1, 1, 3, 3))],
               [c64("shape", [1, 1, 3, 3])], opset=11),
         "node 'unpool' (MaxUnpool): output_shape[2] is 3; expected at least the unpooled 4")
    save("unpool_col2im_blocks",
         model([helper.make_node("Col2Im", ["X", "image_shape", "block_shape"], ["Y"], name="fold")],
               [vi("X", (1, 9, 10))], [vi("Y", (1, 1, 5, 5))], [c64("image_shape", [5, 5]), c64("block_shape", [3, 3])]),
         "node 'fold' (Col2Im): input is [1, 9, 10]; expected [N, C * 9, 9]")
    save("unpool_center_crop_pad_shape",
         model([helper.make_node("CenterCropPad", ["X", "shape"], ["Y"], name="ccp")],
               [vi("X", (4, 4))], [vi("Y", (2, 2))], [c64("shape", [2, 2, 2])]),
         "node 'ccp' (CenterCropPad): shape has 3 values; expected 2, one per axis of the input")


if __name__ == "__main__":
    cases()
    bad()
