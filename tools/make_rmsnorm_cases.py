"""make_rmsnorm_cases.py — RMSNormalization cases for kiln check, with a
numpy reference (backend-test layout under tests/generated/rmsnorm/). Run
with the venv that has onnx and onnxruntime:

    build/venv/bin/python tools/make_rmsnorm_cases.py tests/generated/rmsnorm

    Y = X / sqrt(mean(X² over the dims from axis) + epsilon) · Scale

kiln reads ONNX opsets up to 17, and RMSNormalization is an opset-23 op, so
the ONNX cases spell it as ONNX Runtime's SimplifiedLayerNormalization (the
same op in ORT's default-domain contrib set, which the importer maps onto
RMSNormalization); ONNX Runtime's
outputs must match numpy's before a case is written. The native spelling
is checked through .kir and Lua:

- ort_last: SimplifiedLayerNormalization over the last axis of f32[2,5,16],
  default epsilon.
- ort_axis1: the same over axes 1.. of f32[3,4,6], epsilon 1e-3, scale
  f32[4,6].
- native_f64: model.kir, RMSNormalization on f64[2,3,10] from axis -2,
  stash_type 11, a scale f64[1,10] that broadcasts over the normalised
  dims [3,10].
- lua_method: model.lua, x:rms_norm(scale, 1e-4) on f32[4,12]."""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def rms_norm(x, scale, axis=-1, eps=1e-5):
    axis = axis % x.ndim
    axes = tuple(range(axis, x.ndim))
    x64 = x.astype(np.float64)
    inv = 1 / np.sqrt(np.mean(x64 * x64, axis=axes, keepdims=True) + eps)
    return (x64 * inv * scale.astype(np.float64)).astype(x.dtype)


def write_data(folder, inputs, outputs):
    os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
    for kind, items in (("input", inputs), ("output", outputs)):
        for k, (name, value) in enumerate(items.items()):
            t = numpy_helper.from_array(value, name)
            with open(os.path.join(folder, "test_data_set_0", f"{kind}_{k}.pb"), "wb") as f:
                f.write(t.SerializeToString())


def ort_case(folder, shape, axis, eps, sshape, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3 + 0.5).astype(np.float32)
    scale = rng.standard_normal(sshape).astype(np.float32)
    attrs = {"axis": axis} if axis != -1 else {}
    if eps is not None:
        attrs["epsilon"] = eps
    node = helper.make_node("SimplifiedLayerNormalization", ["x", "scale"], ["y"], **attrs)
    graph = helper.make_graph([node], os.path.basename(folder),
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))],
                              [numpy_helper.from_array(scale, "scale")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    want = rms_norm(x, scale, axis, 1e-5 if eps is None else eps)
    got = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    os.makedirs(folder, exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    write_data(folder, {"x": x}, {"y": want})


def native_f64(folder):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 10)) * 2
    scale = rng.standard_normal((1, 10))
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "model.kir"), "w") as f:
        f.write("# RMSNormalization from axis -2, statistic in f64, a scale that\n"
                "# broadcasts over the normalised dims [3,10] (tools/make_rmsnorm_cases.py)\n"
                "graph @g opset 17 (%x: f64[2,3,10]) -> (%y) {\n"
                "  const %scale: f64[1,10] = [" + ", ".join(repr(float(v)) for v in scale.ravel()) + "]\n"
                "  %y = RMSNormalization %x, %scale {axis=-2, epsilon=0.01, stash_type=11} : ?  # from: RMS_0\n"
                "}\n")
    write_data(folder, {"x": x}, {"y": rms_norm(x, scale, -2, 0.01)})


def lua_method(folder):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 12)).astype(np.float32)
    scale = np.linspace(-1.5, 2.0, 12).astype(np.float32)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "model.lua"), "w") as f:
        f.write("-- x:rms_norm(scale, eps) (tools/make_rmsnorm_cases.py)\n"
                "local x = input{\"x\", {4, 12}}\n"
                "local scale = const({" + ", ".join(repr(float(v)) for v in scale) + "})\n"
                "output(x:rms_norm(scale, 1e-4), \"y\")\n")
    write_data(folder, {"x": x}, {"y": rms_norm(x, scale, -1, 1e-4)})


def main():
    out = sys.argv[1]
    ort_case(os.path.join(out, "ort_last"), (2, 5, 16), -1, None, (16,), 1)
    ort_case(os.path.join(out, "ort_axis1"), (3, 4, 6), 1, 1e-3, (4, 6), 2)
    native_f64(os.path.join(out, "native_f64"))
    lua_method(os.path.join(out, "lua_method"))


if __name__ == "__main__":
    main()
