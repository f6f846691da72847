#!/usr/bin/env python3
"""make_cases.py — write tests/entmax/cases/, the test folders of kiln's
Entmax op (compiler/ops/entmax.c) and of nn.entmax_attention's `alpha`
(compiler/lua/nn_variants.lua).

Each case is a folder in the ONNX backend-test layout: the model as text
IR (model.kir: Entmax is a kiln op, which an ONNX file cannot hold) or as
a Lua script (model.lua, with its weights in w.safetensors), and
test_data_set_0/{input_K,output_K}.pb. The references are
tests/entmax/reference.py's: bisection on the entmax package's scale,
independent of kiln's kernel, in float64, rounded to the case's dtype.

  alphas_f32, alphas_f64   α in {1, 1.0001, 1.1, 1.25, 1.5, 1.75, 2} as the attribute
  near_one                 α = 1 + 10^-k, k = 2 .. 6 (the reference's distance to softmax
                           shrinks tenfold per k: asserted when the cases are made)
  limits                   α = 2 and Sparsemax against sort-based sparsemax, α = 1.5 and
                           Entmax15 against the reference, α = 1 and Softmax against softmax
  per_head, per_head_const scores [2, 4, 8, 16], Alpha [1, 4, 1, 1] at run time / constant
  causal                   -inf above the diagonal, Alpha per head at run time
  clamped                  a run-time Alpha outside [1, 2] and NaN: clamped (NaN: 1)
  middle_axis              axis 1 of [3, 6, 4], Alpha [3, 1, 4]: one α per row
  near_uniform_512         long rows, every element in the support
  one_element              rows of one element
  lua_*                    nn.entmax_attention with alpha a number, "learned" (α = 1 +
                           sigmoid(name.alpha)), a param tensor, and a run-time input

The files are committed; regenerate with:

    /work/main/build/venv/bin/python tests/entmax/make_cases.py
"""
import json
import os
import shutil
import struct
import sys

import numpy as np
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "cases")
sys.path.insert(0, HERE)
from reference import entmax, softmax, sparsemax  # noqa: E402

rng = np.random.default_rng(20261126)
ALPHAS = [1.0, 1.0001, 1.1, 1.25, 1.5, 1.75, 2.0]
DT = {np.float32: "f32", np.float64: "f64"}


def tname(a):
    return "%s[%s]" % (DT[a.dtype.type], ",".join(str(d) for d in a.shape))


def write_data(d, inputs, outputs):
    data = os.path.join(d, "test_data_set_0")
    os.makedirs(data)
    for kind, items in (("input", inputs), ("output", outputs)):
        for k, (name, t) in enumerate(items):
            with open(os.path.join(data, "%s_%d.pb" % (kind, k)), "wb") as f:
                f.write(numpy_helper.from_array(t, name).SerializeToString())


def write_kir(name, comment, inputs, nodes, outputs, consts=()):
    """nodes: lines "%y = Op %a, %b {attrs}" without the type (that of
    the output's reference); outputs: (name, reference array)."""
    d = os.path.join(OUT, name)
    os.makedirs(d)
    types = dict((n, tname(a)) for n, a in outputs)
    lines = ["# %s (tests/entmax/make_cases.py)" % comment,
             "graph @entmax opset 17 (%s) -> (%s) {" % (
                 ", ".join("%%%s: %s" % (n, tname(a)) for n, a in inputs),
                 ", ".join("%" + n for n, _ in outputs))]
    for n, a in consts:
        lines.append("  const %%%s: %s = [%s]" % (n, tname(a), ", ".join(repr(float(v)) for v in a.ravel())))
    for line in nodes:
        out = line.split(" = ")[0].strip("%")
        lines.append("  %s : %s" % (line, types.get(out, types[outputs[0][0]])))
    lines.append("}")
    with open(os.path.join(d, "model.kir"), "w") as f:
        f.write("\n".join(lines) + "\n")
    write_data(d, inputs, outputs)


def normal(*shape, scale=1.0, dtype=np.float32):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def ref(x, alpha, axis=-1):
    """entmax of x along axis, alpha broadcasting to x with size 1 there."""
    xm = np.moveaxis(x.astype(np.float64), axis, -1)
    am = np.moveaxis(np.broadcast_to(np.asarray(alpha, np.float64),
                                     x.shape[:axis % x.ndim] + (1,) + x.shape[axis % x.ndim + 1:]), axis, -1)
    return np.moveaxis(entmax(xm, am), -1, axis).astype(x.dtype)


def alphas_case(name, x):
    outs = [("y%d" % i, ref(x, a)) for i, a in enumerate(ALPHAS)]
    nodes = ["%%y%d = Entmax %%x {alpha=%r}" % (i, a) for i, a in enumerate(ALPHAS)]
    write_kir(name, "Entmax with alpha %s" % ALPHAS, [("x", x)], nodes, outs)


def near_one_case():
    """α = 1 + 10^-k: the distance to softmax shrinks tenfold with each k
    (asserted here, on the reference), and kiln must follow."""
    x = normal(6, 20, scale=2.0)
    alphas = [1 + 10.0 ** -k for k in range(2, 7)]
    outs = [("y%d" % k, ref(x, a)) for k, a in zip(range(2, 7), alphas)]
    sm = softmax(x.astype(np.float64))
    gaps = [np.abs(entmax(x.astype(np.float64), a) - sm).max() for a in alphas]
    for g0, g1 in zip(gaps, gaps[1:]):
        assert 5 < g0 / g1 < 20, gaps
    print("near_one: max |entmax - softmax| for alpha = 1 + 1e-2 .. 1e-6: %s"
          % ", ".join("%.2g" % g for g in gaps))
    nodes = ["%%y%d = Entmax %%x {alpha=%r}" % (k, a) for k, a in zip(range(2, 7), alphas)]
    write_kir("near_one", "alpha = 1 + 1e-2 .. 1e-6, approaching softmax", [("x", x)], nodes, outs)


def limits_case():
    x = normal(16, 24, scale=2.0)
    x[0] = 1.0                          # constant row
    x[1, :] = 0.0
    x[1, 5] = 3.0                       # one-hot
    x64 = x.astype(np.float64)
    sp = sparsemax(x64).astype(np.float32)
    e15 = ref(x, 1.5)
    sm = softmax(x64).astype(np.float32)
    nodes = ["%e2 = Entmax %x {alpha=2.0}", "%sparsemax = Sparsemax %x {axis=-1}",
             "%e15 = Entmax %x {alpha=1.5}", "%entmax15 = Entmax15 %x {axis=-1}",
             "%e1 = Entmax %x {alpha=1.0}", "%softmax = Softmax %x {axis=-1}"]
    write_kir("limits", "alpha = 2 is Sparsemax, 1.5 Entmax15, 1 Softmax", [("x", x)], nodes,
              [("e2", sp), ("sparsemax", sp), ("e15", e15), ("entmax15", e15), ("e1", sm), ("softmax", sm)])


def per_head_cases():
    x = normal(2, 4, 8, 16, scale=2.0)
    a = np.array([1.0001, 1.25, 1.5, 2.0], np.float32).reshape(1, 4, 1, 1)
    write_kir("per_head", "Entmax with Alpha [1, 4, 1, 1] at run time", [("x", x), ("alpha", a)],
              ["%y = Entmax %x, %alpha"], [("y", ref(x, a))])
    c = np.array([1.1, 1.3, 1.75, 1.0], np.float32).reshape(1, 4, 1, 1)
    write_kir("per_head_const", "Entmax with a constant Alpha [1, 4, 1, 1]", [("x", x)],
              ["%y = Entmax %x, %alpha"], [("y", ref(x, c))], consts=[("alpha", c)])


def causal_case():
    x = normal(1, 2, 64, 64, scale=3.0)
    iu = np.triu_indices(64, 1)
    x[..., iu[0], iu[1]] = -np.inf
    a = np.array([1.3, 1.8], np.float32).reshape(1, 2, 1, 1)
    write_kir("causal", "Entmax of causal scores (-inf above the diagonal), Alpha per head",
              [("x", x), ("alpha", a)], ["%y = Entmax %x, %alpha"], [("y", ref(x, a))])


def clamped_case():
    x = normal(2, 5, 9, scale=2.0)
    a = np.array([0.5, np.nan, 3.0, 1.0, 1.6], np.float32).reshape(1, 5, 1)
    used = np.array([1.0, 1.0, 2.0, 1.0, 1.6], np.float32).reshape(1, 5, 1)
    write_kir("clamped", "a run-time Alpha outside [1, 2] is clamped (NaN: 1)", [("x", x), ("alpha", a)],
              ["%y = Entmax %x, %alpha"], [("y", ref(x, used))])


def middle_axis_case():
    x = normal(3, 6, 4, scale=2.0)
    a = rng.uniform(1.0, 2.0, (3, 1, 4)).astype(np.float32)
    write_kir("middle_axis", "Entmax along axis 1, one alpha per row", [("x", x), ("alpha", a)],
              ["%y = Entmax %x, %alpha {axis=1}"], [("y", ref(x, a, axis=1))])


def small_cases():
    x = (rng.random((3, 512)) * 0.01).astype(np.float32)
    write_kir("near_uniform_512", "long near-uniform rows, alpha 1.1", [("x", x)],
              ["%y = Entmax %x {alpha=1.1}"], [("y", ref(x, 1.1))])
    x = normal(3, 1)
    write_kir("one_element", "rows of one element, alpha 1.5", [("x", x)],
              ["%y = Entmax %x {alpha=1.5}"], [("y", ref(x, 1.5))])


# ---- nn.entmax_attention ------------------------------------------------------

B, T, D, H = 2, 6, 16, 4


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        raw = np.ascontiguousarray(a, np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, sort_keys=True).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def attention(w, x, alpha):
    """torch.nn.MultiheadAttention's computation (packed in_proj), with
    α-entmax of each head's scores in place of softmax; alpha per head."""
    x = x.astype(np.float64)
    qkv = x @ w["attn.in_proj_weight"].T.astype(np.float64) + w["attn.in_proj_bias"]
    q, k, v = np.split(qkv, 3, axis=-1)
    heads = lambda t: t.reshape(B, T, H, D // H).transpose(0, 2, 1, 3)  # noqa: E731
    q, k, v = heads(q), heads(k), heads(v)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H)
    probs = entmax(scores, np.asarray(alpha, np.float64).reshape(1, H, 1, 1))
    ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return (ctx @ w["attn.out_proj.weight"].T + w["attn.out_proj.bias"]).astype(np.float32)


def lua_case(name, alpha_lua, alpha, extra=None, alpha_input=None):
    d = os.path.join(OUT, name)
    os.makedirs(d)
    w = {"attn.in_proj_weight": normal(3 * D, D, scale=0.5), "attn.in_proj_bias": normal(3 * D, scale=0.1),
         "attn.out_proj.weight": normal(D, D, scale=0.3), "attn.out_proj.bias": normal(D, scale=0.1)}
    w.update(extra or {})
    write_safetensors(os.path.join(d, "w.safetensors"), w)
    x = normal(B, T, D)
    lines = ["-- nn.entmax_attention with alpha = %s (tests/entmax/make_cases.py)" % alpha_lua,
             'local nn = require "nn"',
             'weights("w.safetensors")',
             "local x = input{\"x\", {%d, %d, %d}}" % (B, T, D)]
    inputs = [("x", x)]
    if alpha_input is not None:
        lines.append("local alpha = input{\"alpha\", {%d}}" % H)
        inputs.append(("alpha", alpha_input))
    lines.append("output(nn.entmax_attention(\"attn\", x, {heads = %d, alpha = %s}), \"y\")" % (H, alpha_lua))
    with open(os.path.join(d, "model.lua"), "w") as f:
        f.write("\n".join(lines) + "\n")
    write_data(d, inputs, [("y", attention(w, x, alpha))])


def lua_cases():
    lua_case("lua_number", "1.3", [1.3] * H)
    a = np.array([-3.0, -0.5, 0.7, 4.0], np.float32)
    learned = 1 + 1 / (1 + np.exp(-a.astype(np.float64)))
    lua_case("lua_learned", '"learned"', learned.astype(np.float32), extra={"attn.alpha": a})
    values = np.array([1.0001, 1.2, 1.6, 2.0], np.float32)
    lua_case("lua_param", 'param{"attn.alpha_values", {%d}}' % H, values, extra={"attn.alpha_values": values})
    at_run = np.array([1.0, 1.45, 1.9, 1.05], np.float32)
    lua_case("lua_input", "alpha", at_run, alpha_input=at_run)


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    alphas_case("alphas_f32", normal(8, 33, scale=2.0))
    alphas_case("alphas_f64", normal(5, 40, scale=2.0, dtype=np.float64))
    limits_case()
    near_one_case()
    per_head_cases()
    causal_case()
    clamped_case()
    middle_axis_case()
    small_cases()
    lua_cases()


if __name__ == "__main__":
    main()
