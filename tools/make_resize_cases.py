#!/usr/bin/env python3
"""make_resize_cases.py — Resize/Upsample fixtures, references from ONNX Runtime.

Three steps, two Pythons (PyTorch is never a CI dependency; the outputs are
committed):

  /usr/bin/python3 tools/make_resize_cases.py export
      a small conv net with an FPN-style neck (F.interpolate nearest, and
      bilinear with align_corners False and True, one by scale_factor, one
      by size) exported by torch at opset 17 -> tests/generated/resize/fpn_neck/model.onnx
  /tmp/venv/bin/python tools/make_resize_cases.py data
      its input and ONNX Runtime's outputs (test_data_set_0), and single-node
      cases the ONNX node tests leave out (axes with NHWC data, a row longer
      than the stack buffer, trilinear,
      antialias, tf_crop_and_resize with nearest, uint8 nearest, Upsample 7,
      cubic along the last axis only, exclude_outside), each with ORT's output
  /tmp/venv/bin/python tools/make_resize_cases.py bad
      tests/bad/resize_*.onnx + .expect: one model per refusal

Each case is an ONNX backend-test folder: model.onnx + test_data_set_0/.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "generated", "resize")
BAD = os.path.join(HERE, "..", "tests", "bad")


def export():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class FpnNeck(nn.Module):
        """Two strided stages, then top-down: upsample the coarse map, add
        the lateral, smooth; a bilinear head back to the input size."""

        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
            self.c2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
            self.lat1 = nn.Conv2d(8, 16, 1)
            self.smooth = nn.Conv2d(16, 16, 3, padding=1)
            self.head = nn.Conv2d(16, 4, 1)

        def forward(self, x):
            f1 = torch.relu(self.c1(x))            # [1, 8, 20, 24]
            f2 = torch.relu(self.c2(f1))           # [1, 16, 10, 12]
            up = F.interpolate(f2, scale_factor=2, mode="nearest")
            p1 = self.smooth(up + self.lat1(f1))   # [1, 16, 20, 24]
            a = F.interpolate(p1, scale_factor=2, mode="bilinear", align_corners=False)
            b = F.interpolate(p1, size=(40, 48), mode="bilinear", align_corners=True)
            c = F.interpolate(f2, size=(40, 48), mode="bicubic", align_corners=False)
            return self.head(a + b + c)            # [1, 4, 40, 48]

    torch.manual_seed(0)
    m = FpnNeck().eval()
    d = os.path.join(OUT, "fpn_neck")
    os.makedirs(d, exist_ok=True)
    torch.onnx.export(m, torch.randn(1, 3, 40, 48), os.path.join(d, "model.onnx"), opset_version=17,
                      input_names=["image"], output_names=["features"], do_constant_folding=True)


def write_case(name, model, inputs):
    """model + test_data_set_0 with ORT's outputs for inputs (a dict)."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    d = os.path.join(OUT, name)
    ds = os.path.join(d, "test_data_set_0")
    os.makedirs(ds, exist_ok=True)
    if model is not None:
        onnx.save(model, os.path.join(d, "model.onnx"))
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(os.path.join(d, "model.onnx"), so, providers=["CPUExecutionProvider"])
    outs = s.run(None, inputs)
    for i, (k, v) in enumerate(inputs.items()):
        onnx.save_tensor(numpy_helper.from_array(np.asarray(v), k), os.path.join(ds, f"input_{i}.pb"))
    for i, (o, v) in enumerate(zip(s.get_outputs(), outs)):
        onnx.save_tensor(numpy_helper.from_array(v, o.name), os.path.join(ds, f"output_{i}.pb"))


def resize_model(shape, out_shape, dt, opset, inits, node_inputs, **attrs):
    import onnx
    from onnx import helper

    node = helper.make_node("Resize" if "op" not in attrs else attrs.pop("op"), ["X"] + node_inputs, ["Y"],
                            name="resize", **attrs)
    g = helper.make_graph([node], "resize", [helper.make_tensor_value_info("X", dt, shape)],
                          [helper.make_tensor_value_info("Y", dt, out_shape)], inits)
    m = helper.make_model(g, producer_name="kiln-resize", opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8 if opset < 19 else 9
    onnx.checker.check_model(m)
    return m


def data():
    import numpy as np
    from onnx import TensorProto, numpy_helper

    rng = np.random.default_rng(7)
    F32, U8 = TensorProto.FLOAT, TensorProto.UINT8

    def f(name, a, dt=np.float32):
        return numpy_helper.from_array(np.asarray(a, dt), name)

    x = rng.standard_normal((1, 3, 40, 48)).astype(np.float32)
    write_case("fpn_neck", None, {"image": x})

    # NHWC: axes [1, 2], the inner block is C (the row buffer holds W x C)
    x = rng.standard_normal((2, 5, 7, 3)).astype(np.float32)
    write_case("nhwc_axes_linear", resize_model([2, 5, 7, 3], [2, 9, 13, 3], F32, 19,
                                                 [f("sizes", [9, 13], np.int64)], ["", "", "sizes"],
                                                 mode="linear", axes=[1, 2]), {"X": x})
    # NHWC whose row (W x C) outgrows the stack buffer: blended a chunk of C at a time
    x = rng.standard_normal((1, 3, 40, 210)).astype(np.float32)
    write_case("nhwc_axes_linear_chunked", resize_model([1, 3, 40, 210], [1, 2, 15, 210], F32, 19,
                                                        [f("sizes", [2, 15], np.int64)], ["", "", "sizes"],
                                                        mode="linear", axes=[1, 2]), {"X": x})
    # trilinear over D, H, W with align_corners (two outer resized axes)
    x = rng.standard_normal((1, 2, 3, 4, 5)).astype(np.float32)
    write_case("trilinear_align_corners", resize_model([1, 2, 3, 4, 5], [1, 2, 6, 7, 9], F32, 13,
                                                        [f("sizes", [1, 2, 6, 7, 9], np.int64)], ["", "", "sizes"],
                                                        mode="linear", coordinate_transformation_mode="align_corners"),
               {"X": x})
    # antialiased downscale, bilinear and bicubic, by scales
    # (ORT takes cubic on 2-D data only)
    x = rng.standard_normal((1, 2, 16, 20)).astype(np.float32)
    write_case("antialias_linear", resize_model([1, 2, 16, 20], [1, 2, 6, 6], F32, 18,
                                                 [f("scales", [1, 1, 0.4, 0.3])], ["", "scales"],
                                                 mode="linear", antialias=1), {"X": x})
    write_case("antialias_cubic", resize_model([16, 20], [6, 6], F32, 18, [f("scales", [0.4, 0.3])],
                                                ["", "scales"], mode="cubic", antialias=1), {"X": x[0, 0]})
    # tf_crop_and_resize, nearest, roi reaching outside: extrapolation_value
    x = rng.standard_normal((1, 1, 6, 6)).astype(np.float32)
    write_case("crop_nearest_extrapolate", resize_model([1, 1, 6, 6], [1, 1, 5, 4], F32, 13,
                                                         [f("roi", [0, 0, -0.2, 0.3, 1, 1, 0.7, 1.4]),
                                                          f("sizes", [1, 1, 5, 4], np.int64)],
                                                         ["roi", "", "sizes"], mode="nearest",
                                                         coordinate_transformation_mode="tf_crop_and_resize",
                                                         extrapolation_value=-7.5), {"X": x})
    # ... and linear, so the outer axis's rows are filled with the value too
    write_case("crop_linear_extrapolate", resize_model([1, 1, 6, 6], [1, 1, 5, 4], F32, 13,
                                                        [f("roi", [0, 0, -0.2, 0.3, 1, 1, 0.7, 1.4]),
                                                         f("sizes", [1, 1, 5, 4], np.int64)],
                                                        ["roi", "", "sizes"], mode="linear",
                                                        coordinate_transformation_mode="tf_crop_and_resize",
                                                        extrapolation_value=2.25), {"X": x})
    # uint8 nearest (a copy), round_prefer_ceil, half_pixel, downscale and upscale
    x = rng.integers(0, 255, (1, 3, 5, 9), dtype=np.uint8)
    write_case("uint8_nearest", resize_model([1, 3, 5, 9], [1, 3, 8, 4], U8, 13,
                                              [f("sizes", [1, 3, 8, 4], np.int64)], ["", "", "sizes"],
                                              mode="nearest", nearest_mode="round_prefer_ceil"), {"X": x})
    # Upsample 7: scales as an attribute, linear (asymmetric)
    x = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
    write_case("upsample7_linear", resize_model([1, 2, 3, 4], [1, 2, 6, 12], F32, 7, [], [], op="Upsample",
                                                 mode="linear", scales=[1.0, 1.0, 2.0, 3.0]), {"X": x})
    # Resize 10: nearest downscale (ceil of x / scale)
    write_case("resize10_nearest_down", resize_model([1, 2, 3, 4], [1, 2, 1, 2], F32, 10,
                                                      [f("scales", [1, 1, 0.6, 0.6])], ["scales"], mode="nearest"),
               {"X": x})
    # cubic, exclude_outside, along the last axis only (no row buffer)
    x = rng.standard_normal((3, 11)).astype(np.float32)
    write_case("cubic_exclude_outside", resize_model([3, 11], [3, 17], F32, 19, [f("sizes", [3, 17], np.int64)],
                                                         ["", "", "sizes"], mode="cubic", exclude_outside=1,
                                                         cubic_coeff_a=-0.5), {"X": x})


def bad():
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    F32 = TensorProto.FLOAT

    def save(name, nodes, inputs, inits, expect, opset=13, out_shape=(1, 1, 4, 4)):
        g = helper.make_graph(nodes, "bad", inputs, [helper.make_tensor_value_info("Y", F32, list(out_shape))],
                              inits)
        m = helper.make_model(g, producer_name="kiln-bad", opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        onnx.save(m, os.path.join(BAD, name + ".onnx"))
        with open(os.path.join(BAD, name + ".expect"), "w") as fh:
            fh.write("compile @ -o @OUT\n" + expect + "\n")

    X = helper.make_tensor_value_info("X", F32, [1, 1, 2, 2])
    sc = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    sz = numpy_helper.from_array(np.array([1, 1, 4, 4], np.int64), "sizes")

    def rs(inputs, **kw):
        return helper.make_node("Resize", ["X"] + inputs, ["Y"], name="resize", **kw)

    # sizes computed at run time: from a second model input
    save("resize_sizes_not_constant", [rs(["", "", "S"])],
         [X, helper.make_tensor_value_info("S", TensorProto.INT64, [4])], [],
         "node 'resize' (Resize): input 'S' (sizes) is computed at run time; expected a compile-time constant")
    save("resize_scales_and_sizes", [rs(["", "scales", "sizes"])], [X], [sc, sz],
         "node 'resize' (Resize): both scales and sizes are given; expected one of them")
    save("resize_no_scales_no_sizes", [rs([""])], [X], [],
         "node 'resize' (Resize): neither scales nor sizes is given; expected one of them")
    save("resize_unknown_mode", [rs(["", "scales"], mode="bilinear")], [X], [sc],
         "node 'resize' (Resize): mode is 'bilinear'; expected nearest, linear or cubic")
    save("resize_unknown_coordinate_mode", [rs(["", "scales"], coordinate_transformation_mode="centre")], [X],
         [sc], "coordinate_transformation_mode is 'centre'; expected half_pixel")
    save("resize_unknown_nearest_mode", [rs(["", "scales"], nearest_mode="nearest")], [X], [sc],
         "nearest_mode is 'nearest'; expected round_prefer_floor")
    save("resize_scales_length", [rs(["", "scales"])], [X],
         [numpy_helper.from_array(np.array([2, 2], np.float32), "scales")],
         "scales has 2 values; expected 4 floats, one per axis of X")
    save("resize_scale_negative", [rs(["", "scales"])], [X],
         [numpy_helper.from_array(np.array([1, 1, -2, 2], np.float32), "scales")],
         "scales[2] is -2; expected a positive number")
    save("resize_crop_without_roi", [rs(["", "scales"], coordinate_transformation_mode="tf_crop_and_resize")],
         [X], [sc], "tf_crop_and_resize needs roi of 8 floats")
    save("resize_linear_int", [rs(["", "scales"], mode="linear")],
         [helper.make_tensor_value_info("X", TensorProto.INT32, [1, 1, 2, 2])], [sc],
         "mode linear on i32 data; expected f32 or f64")
    save("resize_axes_repeated", [rs(["", "scales"], axes=[2, -2])], [X],
         [numpy_helper.from_array(np.array([2, 2], np.float32), "scales")],
         "axes[1] is -2; expected distinct axes in [-4, 4)", opset=19)
    save("resize_keep_aspect_unknown", [rs(["", "", "sizes"], keep_aspect_ratio_policy="fit")], [X], [sz],
         "keep_aspect_ratio_policy is 'fit'; expected stretch, not_larger or not_smaller", opset=19)
    save("resize_half_pixel_symmetric_opset13",
         [rs(["", "scales"], coordinate_transformation_mode="half_pixel_symmetric")], [X], [sc],
         "coordinate_transformation_mode is 'half_pixel_symmetric'")
    save("resize_scale_huge", [rs(["", "scales"])], [X],
         [numpy_helper.from_array(np.array([1, 1, 1e30, 2], np.float32), "scales")],
         "node 'resize' (Resize): scales[2] is 1e+30: an output dim of 2e+30; expected at most")
    save("resize_antialias_tiny_scale", [rs(["", "scales"], mode="linear", antialias=1)],
         [helper.make_tensor_value_info("X", F32, [1, 1, 1, 6000])],
         [numpy_helper.from_array(np.array([1, 1, 1, 0.0002], np.float32), "scales")],
         "antialias at scale 0.0002", opset=18)
    save("upsample_cubic", [helper.make_node("Upsample", ["X", "scales"], ["Y"], name="up", mode="cubic")], [X],
         [sc], "node 'up' (Upsample): mode is 'cubic'; expected nearest or linear", opset=9)


if __name__ == "__main__":
    step = sys.argv[1] if len(sys.argv) > 1 else ""
    if step not in ("export", "data", "bad"):
        sys.exit("usage: make_resize_cases.py export|data|bad")
    {"export": export, "data": data, "bad": bad}[step]()
