"""make_norm_act_cases.py — LpNormalization, GroupNormalization,
MeanVarianceNormalization, Mish and Swish for kiln check, with a numpy
reference in double (backend-test layout under tests/generated/norm_act/).
Run with the venv that has onnx:

    /tmp/venv/bin/python tools/make_norm_act_cases.py tests/generated/norm_act

Each model is a .kir at opset 17 (kiln reads ONNX files up to opset 17,
and GroupNormalization, Mish and Swish are newer; the ONNX 1.20 node tests
cover their ONNX spellings). GroupNormalization below opset 21 scales per
group, so the .kir cases are the opset-18 form.

- lpnorm: p=1 along axis 1 and p=2 along the last axis of f32[2,5,3].
- groupnorm: 2 groups of f32[2,6,3,2], epsilon 1e-3, scale and bias [2];
  and an f64 one of 3 groups of f64[1,3,4] (one channel per group).
- mvn: the default axes [0,2,3] of f32[2,3,2,2] and axes [1] of the same.
- mish_swish: Mish and Swish (alpha 0.75) of f32[3,8] with values out to
  ±100, where exp overflows.
"""
import os
import sys

import numpy as np
from onnx import numpy_helper


def floats(a):
    return "[" + ", ".join(repr(float(v)) for v in a.ravel()) + "]"


def write(folder, kir, inputs, outputs):
    os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
    with open(os.path.join(folder, "model.kir"), "w") as f:
        f.write(kir)
    for kind, items in (("input", inputs), ("output", outputs)):
        for k, (name, value) in enumerate(items):
            with open(os.path.join(folder, "test_data_set_0", f"{kind}_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(value, name).SerializeToString())


def lpnorm(root, rng):
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)
    x64 = x.astype(np.float64)
    y1 = x64 / np.abs(x64).sum(1, keepdims=True)
    y2 = x64 / np.sqrt((x64 * x64).sum(-1, keepdims=True))
    kir = """# LpNormalization: p=1 along axis 1, p=2 along the last (tools/make_norm_act_cases.py)
graph @g opset 17 (%x: f32[2,5,3]) -> (%y1, %y2) {
  %y1 = LpNormalization %x {axis=1, p=1} : ?  # from: l1
  %y2 = LpNormalization %x : ?  # from: l2
}
"""
    write(os.path.join(root, "lpnorm"), kir, [("x", x)], [("y1", y1.astype(np.float32)), ("y2", y2.astype(np.float32))])


def group_norm(x, groups, scale, bias, eps):
    n, c = x.shape[:2]
    xr = x.astype(np.float64).reshape(n, groups, -1)
    m = xr.mean(-1, keepdims=True)
    v = ((xr - m) ** 2).mean(-1, keepdims=True)
    y = ((xr - m) / np.sqrt(v + eps)).reshape(n, groups, -1)
    return (y * scale[None, :, None] + bias[None, :, None]).reshape(x.shape)


def groupnorm(root, rng):
    x = (rng.standard_normal((2, 6, 3, 2)) * 2 + 1).astype(np.float32)
    s, b = rng.standard_normal(2).astype(np.float32), rng.standard_normal(2).astype(np.float32)
    x2 = rng.standard_normal((1, 3, 4))
    s2, b2 = rng.standard_normal(3), rng.standard_normal(3)
    kir = f"""# GroupNormalization, the opset-18 form (scale and bias per group), f32
# and f64 (tools/make_norm_act_cases.py)
graph @g opset 17 (%x: f32[2,6,3,2], %x2: f64[1,3,4]) -> (%y, %y2) {{
  const %s: f32[2] = {floats(s)}
  const %b: f32[2] = {floats(b)}
  const %s2: f64[3] = {floats(s2)}
  const %b2: f64[3] = {floats(b2)}
  %y = GroupNormalization %x, %s, %b {{num_groups=2, epsilon=0.001}} : ?  # from: gn
  %y2 = GroupNormalization %x2, %s2, %b2 {{num_groups=3}} : ?  # from: gn64
}}
"""
    write(os.path.join(root, "groupnorm"), kir, [("x", x), ("x2", x2)],
          [("y", group_norm(x, 2, s, b, 1e-3).astype(np.float32)), ("y2", group_norm(x2, 3, s2, b2, 1e-5))])


def mvn(x, axes):
    x64 = x.astype(np.float64)
    m = x64.mean(axes, keepdims=True)
    return ((x64 - m) / (np.sqrt(((x64 - m) ** 2).mean(axes, keepdims=True)) + 1e-9)).astype(np.float32)


def mvn_case(root, rng):
    x = (rng.standard_normal((2, 3, 2, 2)) * 3 - 1).astype(np.float32)
    kir = """# MeanVarianceNormalization over the default axes [0,2,3] and over [1]
# (tools/make_norm_act_cases.py)
graph @g opset 17 (%x: f32[2,3,2,2]) -> (%y, %y1) {
  %y = MeanVarianceNormalization %x : ?  # from: mvn
  %y1 = MeanVarianceNormalization %x {axes=[1]} : ?  # from: mvn1
}
"""
    write(os.path.join(root, "mvn"), kir, [("x", x)], [("y", mvn(x, (0, 2, 3))), ("y1", mvn(x, (1,)))])


def mish_swish(root, rng):
    x = (rng.standard_normal((3, 8)) * 4).astype(np.float32)
    x[0, :4] = [100, -100, 90, -90]
    x64 = x.astype(np.float64)
    with np.errstate(over="ignore"):
        mish = x64 * np.tanh(np.log1p(np.exp(x64)))
        swish = x64 / (1 + np.exp(-0.75 * x64))
    kir = """# Mish and Swish {alpha=0.75}, out to where exp overflows
# (tools/make_norm_act_cases.py)
graph @g opset 17 (%x: f32[3,8]) -> (%mish, %swish) {
  %mish = Mish %x : ?  # from: mish
  %swish = Swish %x {alpha=0.75} : ?  # from: swish
}
"""
    write(os.path.join(root, "mish_swish"), kir, [("x", x)],
          [("mish", mish.astype(np.float32)), ("swish", swish.astype(np.float32))])


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "tests/generated/norm_act"
    rng = np.random.default_rng(18)
    for make in (lpnorm, groupnorm, mvn_case, mish_swish):
        make(root, rng)
    print("wrote", root)


if __name__ == "__main__":
    main()
