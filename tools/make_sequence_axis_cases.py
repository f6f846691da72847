"""make_sequence_axis_cases.py — TensorScatter and ReverseSequence cases for
kiln check whose run-time lengths and indices leave the ranges ONNX
allows (ONNX leaves those undefined; kiln clamps a sequence length to
[0, steps] and skips a linear write outside the cache, never touching
memory out of bounds). The references are numpy loops of those rules.
Writes model.kir + test_data_set_0 under tests/generated/sequence_axis/:

    build/venv/bin/python tools/make_sequence_axis_cases.py tests/generated/sequence_axis

- scatter_linear_inplace: the cache is computed (c + c) and the result
  read once more (Neg), so the plan writes TensorScatter's output over
  the cache; write_indices [4, -1] into 5
  slots: batch 0 writes slot 4 and skips 5, batch 1 skips -1, writes 0.
- scatter_circular: write_indices [3, -7] with 2 steps into 4 slots:
  slots 3, 0 and 1, 2.
- reverse_clamped: ReverseSequence of i32[4,3,2] (time first) with
  lengths [2, 9, -1]: 9 reverses all 4 steps, -1 none."""
import os
import sys

import numpy as np
from onnx import numpy_helper


def write(folder, kir, inputs, outputs):
    os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
    with open(os.path.join(folder, "model.kir"), "w") as f:
        f.write(kir)
    for kind, items in (("input", inputs), ("output", outputs)):
        for k, (name, value) in enumerate(items):
            with open(os.path.join(folder, "test_data_set_0", f"{kind}_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(value, name).SerializeToString())


def scatter(cache, upd, wi, circular):
    out = cache.copy()
    slots, steps = cache.shape[1], upd.shape[1]
    for b in range(cache.shape[0]):
        for s in range(steps):
            pos = wi[b] + s
            if circular:
                pos %= slots
            elif not 0 <= pos < slots:
                continue
            out[b, pos] = upd[b, s]
    return out


def main(out):
    rng = np.random.default_rng(24)
    c = rng.standard_normal((2, 5, 3)).astype(np.float32)
    u = rng.standard_normal((2, 2, 3)).astype(np.float32)
    w = np.array([4, -1], dtype=np.int64)
    write(os.path.join(out, "scatter_linear_inplace"),
          "# tools/make_sequence_axis_cases.py: a linear TensorScatter over a computed cache,\n"
          "# with write indices past both ends\n"
          "graph @g opset 24 (%c: f32[2,5,3], %u: f32[2,2,3], %w: i64[2]) -> (%y) {\n"
          "  %c2 = Add %c, %c : ?  # from: double\n"
          "  %t = TensorScatter %c2, %u, %w {axis=-2} : ?  # from: scatter\n"
          "  %y = Neg %t : ?  # from: neg\n"
          "}\n", [("c", c), ("u", u), ("w", w)], [("y", -scatter(c + c, u, w, False))])
    c = rng.standard_normal((2, 4, 3)).astype(np.float32)
    w = np.array([3, -7], dtype=np.int64)
    write(os.path.join(out, "scatter_circular"),
          "# tools/make_sequence_axis_cases.py: a circular TensorScatter, a negative start\n"
          "graph @g opset 24 (%c: f32[2,4,3], %u: f32[2,2,3], %w: i64[2]) -> (%y) {\n"
          "  %y = TensorScatter %c, %u, %w {axis=1, mode=\"circular\"} : ?  # from: scatter\n"
          "}\n", [("c", c), ("u", u), ("w", w)], [("y", scatter(c, u, w, True))])
    x = np.arange(24, dtype=np.int32).reshape(4, 3, 2)
    lens = np.array([2, 9, -1], dtype=np.int64)
    y = x.copy()
    for b, n in enumerate(lens):
        n = min(max(n, 0), 4)
        y[:n, b] = x[:n, b][::-1]
    write(os.path.join(out, "reverse_clamped"),
          "# tools/make_sequence_axis_cases.py: ReverseSequence with lengths past both ends\n"
          "graph @g opset 10 (%x: i32[4,3,2], %lens: i64[3]) -> (%y) {\n"
          "  %y = ReverseSequence %x, %lens {batch_axis=1, time_axis=0} : ?  # from: rev\n"
          "}\n", [("x", x), ("lens", lens)], [("y", y)])


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/generated/sequence_axis")
