#!/usr/bin/env python3
"""make_grid_sample_cases.py — GridSample/AffineGrid fixtures against ONNX Runtime.

  /tmp/venv/bin/python tools/make_grid_sample_cases.py

writes tests/generated/grid_sample/NAME/ (model.onnx + test_data_set_0 with
ORT's outputs (one case the ONNX reference's, where ORT departs from it): a spatial transformer, AffineGrid then GridSample, and
single GridSample nodes over the modes, padding modes and align_corners the
node tests leave out, with sample points well outside the image) and
tests/bad/grid_sample_*.onnx + .expect (one per refusal). The outputs are
committed: the tests need no Python.
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "generated", "grid_sample")
BAD = os.path.join(HERE, "..", "tests", "bad")
F32 = TensorProto.FLOAT


def vi(name, shape, dt=F32):
    return helper.make_tensor_value_info(name, dt, list(shape))


def model(nodes, inputs, outputs, inits=(), opset=20):
    g = helper.make_graph(nodes, "grid", inputs, outputs, list(inits))
    m = helper.make_model(g, producer_name="kiln-grid", opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    return m


def write_case(name, m, inputs, oracle="ort"):
    """oracle: "ort", or "reference" (onnx.reference) where ORT departs from the reference."""
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


def cases():
    rng = np.random.default_rng(11)
    # a spatial transformer: theta (rotation, scale, shift) -> AffineGrid -> GridSample
    x = rng.standard_normal((2, 3, 12, 16)).astype(np.float32)
    c, s_ = np.cos(0.3), np.sin(0.3)
    theta = np.array([[[0.9 * c, -0.9 * s_, 0.1], [0.9 * s_, 0.9 * c, -0.05]],
                      [[1.2, 0.1, -0.2], [0.0, 0.8, 0.3]]], np.float32)
    size = numpy_helper.from_array(np.array([2, 3, 10, 14], np.int64), "size")
    m = model([helper.make_node("AffineGrid", ["theta", "size"], ["grid"], name="affine", align_corners=0),
               helper.make_node("GridSample", ["X", "grid"], ["Y"], name="sample", mode="linear",
                                padding_mode="zeros", align_corners=0)],
              [vi("X", x.shape), vi("theta", theta.shape)], [vi("Y", (2, 3, 10, 14))], [size])
    write_case("spatial_transformer", m, {"X": x, "theta": theta})
    # 3-D AffineGrid with align_corners, alone
    th3 = (np.eye(3, 4) + 0.1 * rng.standard_normal((1, 3, 4))).astype(np.float32)
    m = model([helper.make_node("AffineGrid", ["theta", "size"], ["grid"], name="affine", align_corners=1)],
              [vi("theta", th3.shape)], [vi("grid", (1, 3, 4, 5, 3))],
              [numpy_helper.from_array(np.array([1, 2, 3, 4, 5], np.int64), "size")])
    write_case("affine_grid_3d_align", m, {"theta": th3})
    # single GridSample nodes: points up to 2.5x outside the image
    x = rng.standard_normal((1, 2, 5, 7)).astype(np.float32)
    grid = rng.uniform(-2.5, 2.5, (1, 6, 9, 2)).astype(np.float32)
    # ORT 1.32's cubic with border padding and align_corners=0 departs from
    # the ONNX reference for points beyond the half-pixel edge (9 of these
    # 108 values); kiln follows the reference, so that case's oracle is it
    m = model([helper.make_node("GridSample", ["X", "grid"], ["Y"], name="sample", mode="cubic",
                                padding_mode="border", align_corners=0)],
              [vi("X", x.shape), vi("grid", grid.shape)], [vi("Y", (1, 2, 6, 9))])
    write_case("cubic_border_align0_reference", m, {"X": x, "grid": grid}, oracle="reference")
    for mode, pad, ac, opset in [("bicubic", "reflection", 1, 16),
                                 ("cubic", "zeros", 1, 20), ("nearest", "reflection", 0, 20),
                                 ("nearest", "border", 1, 20), ("linear", "reflection", 0, 20),
                                 ("linear", "border", 0, 20)]:
        m = model([helper.make_node("GridSample", ["X", "grid"], ["Y"], name="sample", mode=mode,
                                    padding_mode=pad, align_corners=ac)],
                  [vi("X", x.shape), vi("grid", grid.shape)], [vi("Y", (1, 2, 6, 9))], opset=opset)
        write_case(f"{mode}_{pad}_align{ac}", m, {"X": x, "grid": grid})
    # 3-D: linear, reflection, align_corners
    x3 = rng.standard_normal((1, 2, 3, 4, 5)).astype(np.float32)
    g3 = rng.uniform(-1.8, 1.8, (1, 2, 3, 4, 3)).astype(np.float32)
    m = model([helper.make_node("GridSample", ["X", "grid"], ["Y"], name="sample", mode="linear",
                                padding_mode="reflection", align_corners=1)],
              [vi("X", x3.shape), vi("grid", g3.shape)], [vi("Y", (1, 2, 2, 3, 4))])
    write_case("volumetric_linear_reflection_align1", m, {"X": x3, "grid": g3})


def bad():
    def save(name, m, expect):
        onnx.save(m, os.path.join(BAD, name + ".onnx"))
        with open(os.path.join(BAD, name + ".expect"), "w") as fh:
            fh.write("compile @ -o @OUT\n" + expect + "\n")

    def gs(xs, gsh, opset=20, **kw):
        return model([helper.make_node("GridSample", ["X", "grid"], ["Y"], name="sample", **kw)],
                     [vi("X", xs), vi("grid", gsh)], [vi("Y", (1, 1, 2, 2))], opset=opset)

    save("grid_sample_cubic_3d", gs((1, 1, 2, 2, 2), (1, 2, 2, 2, 3), mode="cubic"),
         "node 'sample' (GridSample): cubic mode on 3 spatial dims; expected 2")
    save("grid_sample_padding_unknown", gs((1, 1, 2, 2), (1, 2, 2, 2), opset=16, padding_mode="wrap"),
         "node 'sample' (GridSample): padding_mode is 'wrap'; expected zeros, border or reflection")
    save("grid_sample_mode_opset16", gs((1, 1, 2, 2), (1, 2, 2, 2), opset=16, mode="linear"),
         "node 'sample' (GridSample): mode is 'linear'; expected bilinear, nearest or bicubic")
    save("grid_sample_grid_shape", gs((1, 1, 2, 2), (1, 2, 2, 3), opset=16),
         "node 'sample' (GridSample): grid is f32[1,2,2,3]; expected [1, out dims..., 2]")
    save("affine_grid_size_not_constant",
         model([helper.make_node("AffineGrid", ["theta", "size"], ["grid"], name="affine")],
               [vi("theta", (1, 2, 3)), vi("size", (4,), TensorProto.INT64)], [vi("grid", (1, 2, 2, 2))]),
         "node 'affine' (AffineGrid): input 'size' (size) is computed at run time; expected a compile-time constant")
    save("affine_grid_size_huge",
         model([helper.make_node("AffineGrid", ["theta", "size"], ["grid"], name="affine")],
               [vi("theta", (1, 2, 3))], [vi("grid", (1, 2, 2, 2))],
               [numpy_helper.from_array(np.array([1, 1, 1 << 30, 1 << 30], np.int64), "size")]),
         "node 'affine' (AffineGrid): the output would have too many elements")
    save("affine_grid_theta_shape",
         model([helper.make_node("AffineGrid", ["theta", "size"], ["grid"], name="affine")],
               [vi("theta", (1, 3, 4))], [vi("grid", (1, 2, 2, 2))],
               [numpy_helper.from_array(np.array([1, 1, 2, 2], np.int64), "size")]),
         "node 'affine' (AffineGrid): theta is f32[1,3,4]; expected f32 or f64 [1, 2, 3]")


if __name__ == "__main__":
    cases()
    bad()
