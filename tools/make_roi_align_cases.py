#!/usr/bin/env python3
"""make_roi_align_cases.py — RoiAlign fixtures against ONNX Runtime.

  /tmp/venv/bin/python tools/make_roi_align_cases.py

writes tests/generated/roi_align/NAME/ (model.onnx + test_data_set_0 with
ORT's outputs): regions inside, across and beyond the image edges, tiny
and large ones (adaptive sample counts), two batch images; avg and max,
half_pixel and output_half_pixel, opsets 10 and 16; and tests/bad/roi_align_*.
The outputs are committed: the tests need no Python.
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "generated", "roi_align")
BAD = os.path.join(HERE, "..", "tests", "bad")
F32, I64 = TensorProto.FLOAT, TensorProto.INT64


def vi(name, shape, dt=F32):
    return helper.make_tensor_value_info(name, dt, list(shape))


def model(inputs_shapes, out_shape, opset, **attrs):
    node = helper.make_node("RoiAlign", ["X", "rois", "batch_indices"], ["Y"], name="roi", **attrs)
    (xs, rs) = inputs_shapes
    g = helper.make_graph([node], "roi", [vi("X", xs), vi("rois", rs), vi("batch_indices", rs[:1], I64)],
                          [vi("Y", out_shape)])
    m = helper.make_model(g, producer_name="kiln-roi", opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def write_case(name, m, inputs):
    d = os.path.join(OUT, name)
    ds = os.path.join(d, "test_data_set_0")
    os.makedirs(ds, exist_ok=True)
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(d, "model.onnx"))
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(os.path.join(d, "model.onnx"), so, providers=["CPUExecutionProvider"])
    outs = s.run(None, inputs)
    for i, (k, v) in enumerate(inputs.items()):
        onnx.save_tensor(numpy_helper.from_array(v, k), os.path.join(ds, f"input_{i}.pb"))
    for i, (o, v) in enumerate(zip(s.get_outputs(), outs)):
        onnx.save_tensor(numpy_helper.from_array(v, o.name), os.path.join(ds, f"output_{i}.pb"))


def main():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 12, 14)).astype(np.float32)
    rois = np.array([[1.0, 2.0, 9.5, 8.0],      # inside
                     [-3.0, -2.0, 4.0, 5.0],    # across the top-left edge
                     [10.0, 9.0, 17.0, 15.0],   # beyond the bottom-right edge
                     [5.2, 5.1, 5.6, 5.3],      # tiny
                     [0.0, 0.0, 28.0, 24.0]],   # the whole image at spatial_scale 0.5
                    np.float32)
    bi = np.array([0, 1, 0, 1, 1], np.int64)
    inputs = {"X": x, "rois": rois, "batch_indices": bi}
    for name, opset, attrs in [
            ("avg_half_pixel_adaptive", 16, dict(mode="avg", output_height=3, output_width=4)),
            ("max_output_half_pixel_sr2", 16, dict(mode="max", output_height=2, output_width=3, sampling_ratio=2,
                                                   coordinate_transformation_mode="output_half_pixel")),
            ("avg_scaled_opset10", 10, dict(mode="avg", output_height=4, output_width=4, spatial_scale=0.5)),
            ("max_half_pixel_adaptive_scaled", 16, dict(mode="max", output_height=3, output_width=3,
                                                        spatial_scale=0.5))]:
        m = model((x.shape, rois.shape), (5, 4, attrs["output_height"], attrs["output_width"]), opset, **attrs)
        write_case(name, m, inputs)
    # bad input
    m = model(((1, 1, 4, 4), (2, 4)), (2, 1, 1, 1), 16, mode="mean")
    onnx.save(m, os.path.join(BAD, "roi_align_mode.onnx"))
    with open(os.path.join(BAD, "roi_align_mode.expect"), "w") as fh:
        fh.write("compile @ -o @OUT\nnode 'roi' (RoiAlign): mode is 'mean'; expected avg or max\n")
    m = model(((1, 1, 4, 4), (2, 5)), (2, 1, 1, 1), 16)
    onnx.save(m, os.path.join(BAD, "roi_align_rois_shape.onnx"))
    with open(os.path.join(BAD, "roi_align_rois_shape.expect"), "w") as fh:
        fh.write("compile @ -o @OUT\nnode 'roi' (RoiAlign): rois is f32[2,5]; expected f32 [num_rois, 4]\n")


if __name__ == "__main__":
    main()
