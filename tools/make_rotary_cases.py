"""make_rotary_cases.py — RotaryEmbedding cases for kiln check, with numpy
references (backend-test layout under tests/generated/rotary/). Run with the
venv that has onnx and onnxruntime:

    build/venv/bin/python tools/make_rotary_cases.py tests/generated/rotary

The reference is written from the two textbook forms, not from kiln's
_eval: the half split as Hugging Face's Llama writes it,
    y = x·cos_full + rotate_half(x)·sin_full,  rotate_half(x) = [-x2, x1],
    cos_full = [c, c] (the table row repeated), and the interleaved pairs as
llama.cpp's rope loop: (x[2i], x[2i+1]) rotated by the angle of row i. The
tables come from theta as the Lua x:rope builds them: inv_freq[i] =
theta^(-2i/R), angle = pos · inv_freq[i], in double, rounded to f32.

kiln reads ONNX opsets up to 17 and RotaryEmbedding is an opset-23 op, so the
ONNX cases spell it as ONNX Runtime's com.microsoft RotaryEmbedding (inputs
X, position_ids, cos_cache, sin_cache), which the importer maps onto it;
ONNX Runtime's outputs must match numpy's before a case is written. The
standard spelling and its input order are checked through .kir and Lua:

- ort_half_rank3: X [2, 5, 4*8] (num_heads 4), runtime position_ids [2, 5],
  half split.
- ort_interleaved_rank4: X [1, 3, 6, 16] ([B, H, S, D]), interleaved,
  position_ids [1] (ONNX Runtime's start offset: positions 7 .. 12).
- ort_partial_rank3: X [1, 4, 2*16], num_heads 2, rotary_embedding_dim 8
  (dims 8 .. 15 of each head pass through), half split.
- native_rank4_ids: model.kir, the standard op on X [2, 3, 5, 8] with
  runtime position_ids [2, 5] (batch 1 decodes further along), half split.
- native_partial_interleaved: model.kir, X [1, 6, 3*12] rank 3, interleaved,
  rotary_embedding_dim 8.
- native_no_ids_f64: model.kir, f64, X [2, 2, 4, 6], no position_ids:
  caches [2, 4, 3] give each token's row.
- lua_rope: model.lua, x:rope{...} on Q-like [1, 4, 5, 16] with runtime
  positions and theta 1e5 (both pairings, the second partial).
- onnx_node/test_rotary_embedding*: ONNX's own node tests for the op (its
  case definitions, run here; outputs from ONNX's reference), as .kir."""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def tables(theta, rot, max_pos):
    """cos and sin [max_pos, rot/2]: angle = pos * theta^(-2i/rot), in double."""
    i = np.arange(rot // 2, dtype=np.float64)
    inv = theta ** (-2.0 * i / rot)
    ang = np.arange(max_pos, dtype=np.float64)[:, None] * inv[None, :]
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def rotate_bshd(x, c, s, rot, interleaved):
    """x [B, S, H, D]; c, s [B, S, rot/2] per token. In double."""
    x = x.astype(np.float64)
    c = c.astype(np.float64)[:, :, None, :]
    s = s.astype(np.float64)[:, :, None, :]
    xr, xp = x[..., :rot], x[..., rot:]
    if interleaved:  # llama.cpp: pairs (2i, 2i+1)
        y = np.empty_like(xr)
        y[..., 0::2] = xr[..., 0::2] * c - xr[..., 1::2] * s
        y[..., 1::2] = xr[..., 0::2] * s + xr[..., 1::2] * c
    else:  # HF: x * cos + rotate_half(x) * sin
        half = rot // 2
        rh = np.concatenate([-xr[..., half:], xr[..., :half]], axis=-1)
        y = xr * np.concatenate([c, c], -1) + rh * np.concatenate([s, s], -1)
    return np.concatenate([y, xp], axis=-1)


def reference(x, cos, sin, pos, rot, interleaved, num_heads=0):
    """x rank 3 [B, S, H*D] or 4 [B, H, S, D]; pos [B|1, S] or [1] (start) or
    None (cos, sin [B|1, S, rot/2])."""
    if x.ndim == 3:
        b, sq, hid = x.shape
        xb = x.reshape(b, sq, num_heads, hid // num_heads)
    else:
        b, sq = x.shape[0], x.shape[2]
        xb = x.transpose(0, 2, 1, 3)
    if pos is None:
        c, s = cos, sin
    else:
        p = pos[0] + np.arange(sq)[None, :] if pos.ndim == 1 else pos
        c, s = cos[p], sin[p]
    c = np.broadcast_to(c, (b, sq, c.shape[-1]))
    s = np.broadcast_to(s, (b, sq, s.shape[-1]))
    y = rotate_bshd(xb, c, s, rot, interleaved).astype(x.dtype)
    return y.reshape(x.shape) if x.ndim == 3 else y.transpose(0, 2, 1, 3)


def write_data(folder, inputs, outputs):
    os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
    for kind, items in (("input", inputs), ("output", outputs)):
        for k, (name, value) in enumerate(items.items()):
            t = numpy_helper.from_array(value, name)
            with open(os.path.join(folder, "test_data_set_0", f"{kind}_{k}.pb"), "wb") as f:
                f.write(t.SerializeToString())


def ort_case(folder, xshape, pos, theta, max_pos, interleaved, num_heads, rot_attr, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xshape).astype(np.float32)
    d = xshape[-1] // num_heads if len(xshape) == 3 else xshape[-1]
    rot = rot_attr or d
    cos, sin = tables(theta, rot, max_pos)
    attrs = {"interleaved": interleaved}
    if num_heads and len(xshape) == 3:
        attrs["num_heads"] = num_heads
    if rot_attr:
        attrs["rotary_embedding_dim"] = rot_attr
    node = helper.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain="com.microsoft", **attrs)
    graph = helper.make_graph([node], os.path.basename(folder),
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(xshape)),
                               helper.make_tensor_value_info("pos", TensorProto.INT64, list(pos.shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(xshape))],
                              [numpy_helper.from_array(cos, "cos"), numpy_helper.from_array(sin, "sin")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    want = reference(x, cos, sin, pos, rot, interleaved, num_heads)
    got = ort.InferenceSession(model.SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(None, {"x": x, "pos": pos})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    os.makedirs(folder, exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    write_data(folder, {"x": x, "pos": pos}, {"y": want})


def lit(a):
    return "[" + ", ".join(repr(float(v)) for v in a.ravel()) + "]"


def kir_case(folder, comment, x, cos, sin, pos, rot_attr, interleaved, num_heads=0):
    """The standard op in .kir: inputs x (and pos), the caches constants."""
    ty = "f64" if x.dtype == np.float64 else "f32"
    dims = lambda a: ",".join(str(v) for v in a.shape)
    ins = f"%x: {ty}[{dims(x)}]" + (f", %pos: i64[{dims(pos)}]" if pos is not None else "")
    attrs = [f"interleaved={interleaved}"] + ([f"num_heads={num_heads}"] if num_heads else []) + \
            ([f"rotary_embedding_dim={rot_attr}"] if rot_attr else [])
    args = "%x, %cos, %sin" + (", %pos" if pos is not None else "")
    d = x.shape[-1] // num_heads if x.ndim == 3 else x.shape[-1]
    want = reference(x, cos, sin, pos, rot_attr or d, interleaved, num_heads)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "model.kir"), "w") as f:
        f.write(f"# {comment} (tools/make_rotary_cases.py)\n"
                f"graph @g opset 17 ({ins}) -> (%y) {{\n"
                f"  const %cos: {ty}[{dims(cos)}] = {lit(cos)}\n"
                f"  const %sin: {ty}[{dims(sin)}] = {lit(sin)}\n"
                f"  %y = RotaryEmbedding {args} {{{', '.join(attrs)}}} : ?  # from: rope_0\n"
                "}\n")
    inputs = {"x": x} if pos is None else {"x": x, "pos": pos}
    write_data(folder, inputs, {"y": want})


def lua_rope(folder):
    rng = np.random.default_rng(7)
    q = rng.standard_normal((1, 4, 5, 16)).astype(np.float32)
    pos = np.array([[3, 4, 5, 6, 7]], np.int64)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "model.lua"), "w") as f:
        f.write("-- x:rope{...}: both pairings, the second partial (tools/make_rotary_cases.py)\n"
                "local q = input{\"q\", {1, 4, 5, 16}}\n"
                "local pos = input{\"pos\", {1, 5}, \"i64\"}\n"
                "local a = q:rope{positions = pos, theta = 1e5, max_pos = 32}\n"
                "local b = q:rope{positions = pos, theta = 10000, max_pos = 16, interleaved = true, dim = 8}\n"
                "output(a, \"a\")\n"
                "output(b, \"b\")\n")
    ca, sa = tables(1e5, 16, 32)
    cb, sb = tables(10000.0, 8, 16)
    a = reference(q, ca, sa, pos, 16, 0)
    b = reference(q, cb, sb, pos, 8, 1)
    write_data(folder, {"q": q, "pos": pos}, {"a": a, "b": b})


def onnx_node_cases(out):
    """ONNX's own RotaryEmbedding node tests (onnx.backend.test.case.node.
    rotaryembedding, outputs from ONNX's reference), each written as a .kir
    of the standard op with every operand a graph input: onnx_node/NAME."""
    import onnx.backend.test.case.node.rotaryembedding as case
    got = []
    case.expect = lambda node, inputs, outputs, name: got.append((node, inputs, outputs, name))
    np.random.seed(0)
    for fn in sorted(k for k in dir(case.RotaryEmbedding) if k.startswith("export")):
        getattr(case.RotaryEmbedding, fn)()
    names = []
    for node, inputs, outputs, name in got:
        folder = os.path.join(out, "onnx_node", name)
        os.makedirs(folder, exist_ok=True)
        ty = lambda a: ("f32" if a.dtype == np.float32 else "i64") + "[" + ",".join(map(str, a.shape)) + "]"
        ins = ", ".join(f"%{n}: {ty(a)}" for n, a in zip(node.input, inputs))
        attrs = ", ".join(f"{a.name}={onnx.helper.get_attribute_value(a)}" for a in node.attribute)
        with open(os.path.join(folder, "model.kir"), "w") as f:
            f.write(f"# ONNX's node test {name} (onnx.backend.test.case.node.rotaryembedding;\n"
                    f"# tools/make_rotary_cases.py)\ngraph @g opset 17 ({ins}) -> (%y) {{\n"
                    f"  %y = RotaryEmbedding {', '.join('%' + n for n in node.input)}"
                    f"{' {' + attrs + '}' if attrs else ''} : ?  # from: {name}\n}}\n")
        write_data(folder, dict(zip(node.input, inputs)), {"y": outputs[0]})
        names.append(name)
    return names


def main():
    out = sys.argv[1]
    ort_case(os.path.join(out, "ort_half_rank3"), (2, 5, 32), np.array([[0, 1, 2, 3, 4], [9, 3, 0, 15, 2]], np.int64),
             10000.0, 16, 0, 4, 0, 1)
    ort_case(os.path.join(out, "ort_interleaved_rank4"), (1, 3, 6, 16), np.array([7], np.int64), 10000.0, 20, 1, 0,
             0, 2)
    ort_case(os.path.join(out, "ort_partial_rank3"), (1, 4, 32), np.array([[5, 6, 7, 8]], np.int64), 500.0, 12, 0, 2,
             8, 3)
    rng = np.random.default_rng(4)
    cos, sin = tables(10000.0, 8, 40)
    kir_case(os.path.join(out, "native_rank4_ids"), "RotaryEmbedding on [B, H, S, D] with runtime position_ids",
             rng.standard_normal((2, 3, 5, 8)).astype(np.float32), cos, sin,
             np.array([[0, 1, 2, 3, 4], [30, 31, 32, 33, 34]], np.int64), 0, 0)
    cos, sin = tables(10000.0, 8, 10)
    kir_case(os.path.join(out, "native_partial_interleaved"), "interleaved pairs over the first 8 of 12 dims",
             rng.standard_normal((1, 6, 36)).astype(np.float32), cos, sin,
             np.array([[0, 2, 4, 6, 8, 9]], np.int64), 8, 1, 3)
    c3, s3 = tables(100.0, 6, 8)
    c3 = np.stack([c3[0:4], c3[4:8]]).astype(np.float64)
    s3 = np.stack([s3[0:4], s3[4:8]]).astype(np.float64)
    kir_case(os.path.join(out, "native_no_ids_f64"), "f64, no position_ids: a cache row per token",
             rng.standard_normal((2, 2, 4, 6)), c3, s3, None, 0, 0)
    lua_rope(os.path.join(out, "lua_rope"))
    print("\n".join(onnx_node_cases(out)))


if __name__ == "__main__":
    main()
