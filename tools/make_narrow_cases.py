#!/usr/bin/env python3
"""make_narrow_cases.py — test cases of the narrow element types (float8,
float4, e8m0, 4- and 2-bit integers; DESIGN.md, "Narrow element types").

Writes, with references from ONNX's own (onnx.reference, ml_dtypes):
  tests/generated/narrow/NAME/   backend-test folders (model.onnx +
                                 test_data_set_0/), run by kiln check in C
                                 and --interp (tests/tests.cmake)
  tests/bad/narrow_*.onnx/.expect  bad input (tests/bad/run_bad.sh)

Run with /tmp/venv/bin/python (onnx 1.20, ml_dtypes): the narrow types
need onnx >= 1.18 to be written at all.
"""
import os
import shutil

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "..", "tests", "generated", "narrow")
BAD = os.path.join(HERE, "..", "tests", "bad")


def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, dt, list(shape))


def model(nodes, inputs, outputs, inits=(), opset=25, name="narrow"):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, producer_name="kiln-narrow", opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 11
    return m


def tensor(name, arr, dt=None):
    """A TensorProto of arr (ml_dtypes arrays become their ONNX type, packed)."""
    t = numpy_helper.from_array(arr, name)
    if dt is not None:
        t.data_type = dt
    return t


def write_case(name, m, feeds, outs=None):
    d = os.path.join(GEN, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(d, "model.onnx"))
    if outs is None:
        outs = ReferenceEvaluator(m).run(None, feeds)
    for i, inp in enumerate(m.graph.input):
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % i), "wb") as f:
            f.write(tensor(inp.name, feeds[inp.name]).SerializeToString())
    for i, (o, v) in enumerate(zip(m.graph.output, outs)):
        with open(os.path.join(d, "test_data_set_0", "output_%d.pb" % i), "wb") as f:
            f.write(tensor(o.name, np.asarray(v)).SerializeToString())


NARROW = [(TP.FLOAT8E4M3FN, "e4m3fn"), (TP.FLOAT8E4M3FNUZ, "e4m3fnuz"), (TP.FLOAT8E5M2, "e5m2"),
          (TP.FLOAT8E5M2FNUZ, "e5m2fnuz"), (TP.UINT4, "u4"), (TP.INT4, "i4"), (TP.FLOAT4E2M1, "f4e2m1"),
          (TP.FLOAT8E8M0, "e8m0"), (TP.UINT2, "u2"), (TP.INT2, "i2")]


def cast_roundtrip():
    """x f32[67] -> Cast to each narrow float type -> Cast back to f32, plus
    two narrow graph outputs (e5m2 not saturating, and packed u4, whose odd
    count leaves a half byte): ties, overflow, NaN, inf, subnormals. The
    integer casts read xi (finite, in range of int64: out of range, a
    float's conversion is undefined), e8m0 reads xe (positive: a negative
    value's e8m0 is unspecified; finite: for inf the Cast spec's table says
    E8M0_MAX, the reference gives NaN)."""
    rng = np.random.default_rng(20)
    x = np.concatenate([
        np.array([0, -0.0, 0.25, 0.75, 464, 465, 57344, 61440, 61441, -1e6, 1e-7, 2.0 ** -9, 3 * 2.0 ** -10,
                  np.inf, -np.inf, np.nan, 5.5, -2.5, 7, -9, 17, 0.124, 1.1], np.float32),
        (rng.standard_normal(44) * 4).astype(np.float32)])
    xi = np.where(np.isfinite(x), np.clip(x, -1e6, 1e6), 3).astype(np.float32)
    xe = np.where(np.isfinite(x) & (x != 0), np.abs(x), 1.5).astype(np.float32)
    nodes, outs = [], []
    for dt, nm in NARROW:
        src = "xe" if dt == TP.FLOAT8E8M0 else "xi" if nm[0] in "ui" else "x"
        attrs = {"round_mode": "nearest"} if dt == TP.FLOAT8E8M0 else {}
        nodes.append(helper.make_node("Cast", [src], ["q_" + nm], to=dt, **attrs))
        nodes.append(helper.make_node("Cast", ["q_" + nm], ["y_" + nm], to=TP.FLOAT))
        outs.append(vi("y_" + nm, TP.FLOAT, [67]))
    nodes.append(helper.make_node("Cast", ["x"], ["e5m2_nosat"], to=TP.FLOAT8E5M2, saturate=0))
    nodes.append(helper.make_node("Cast", ["xi"], ["u4"], to=TP.UINT4))
    outs += [vi("e5m2_nosat", TP.FLOAT8E5M2, [67]), vi("u4", TP.UINT4, [67])]
    ins = [vi(n, TP.FLOAT, [67]) for n in ("x", "xi", "xe")]
    write_case("cast_roundtrip", model(nodes, ins, outs), {"x": x, "xi": xi, "xe": xe})


def int4_blocked_weight():
    """The weight-only int4 pattern of LLM exports: W = DequantizeLinear(Wq
    i4 [K,N] constant, scale f32 [K/32, N], zero point i4 [K/32, N],
    axis 0, block_size 32) -> MatMul; K = 96 (three blocks), N = 5 (an odd
    row of nibbles)."""
    rng = np.random.default_rng(4)
    K, N, B = 96, 5, 32
    wq = rng.integers(-8, 8, (K, N)).astype(ml_dtypes.int4)
    s = (rng.random((K // B, N)) * 0.1 + 0.01).astype(np.float32)
    zp = rng.integers(-2, 3, (K // B, N)).astype(ml_dtypes.int4)
    nodes = [helper.make_node("DequantizeLinear", ["wq", "s", "zp"], ["w"], axis=0, block_size=B),
             helper.make_node("MatMul", ["x", "w"], ["y"])]
    m = model(nodes, [vi("x", TP.FLOAT, [3, K])], [vi("y", TP.FLOAT, [3, N])],
              [tensor("wq", wq), tensor("s", s), tensor("zp", zp)])
    write_case("int4_blocked_weight", m, {"x": rng.standard_normal((3, K)).astype(np.float32)})


def quantize_blocked():
    """QuantizeLinear of a graph input to u4, blocked along axis 1 (block 3
    of 8: a short last block), then DequantizeLinear back, both in the
    generated code; and to f8e4m3fn per axis with f16 scales."""
    rng = np.random.default_rng(5)
    s = (rng.random((4, 3)) * 0.5 + 0.1).astype(np.float32)
    zp = rng.integers(0, 16, (4, 3)).astype(ml_dtypes.uint4)
    s8 = np.array([0.5, 2, 0.25, 4], np.float16)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"], axis=1, block_size=3),
             helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"], axis=1, block_size=3),
             helper.make_node("QuantizeLinear", ["x", "s8"], ["q8"], axis=0, output_dtype=TP.FLOAT8E4M3FN),
             helper.make_node("DequantizeLinear", ["q8", "s8"], ["y8"], axis=0)]
    m = model(nodes, [vi("x", TP.FLOAT, [4, 8])],
              [vi("q", TP.UINT4, [4, 8]), vi("y", TP.FLOAT, [4, 8]), vi("y8", TP.FLOAT16, [4, 8])],
              [tensor("s", s), tensor("zp", zp), tensor("s8", s8)])
    write_case("quantize_blocked", m, {"x": (rng.standard_normal((4, 8)) * 3).astype(np.float32)})


def packed_moves():
    """Packed values moved whole: a graph input i4[3,5] through Reshape,
    Flatten, Unsqueeze and Identity to graph outputs (copies, not aliases),
    a Constant u2 and the Shape of a packed value."""
    rng = np.random.default_rng(6)
    c = helper.make_tensor("c", TP.UINT2, [7], [1, 2, 3, 0, 1, 2, 3])
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["r"]),
             helper.make_node("Flatten", ["x"], ["f"], axis=0),
             helper.make_node("Unsqueeze", ["x", "axes"], ["u"]),
             helper.make_node("Identity", ["x"], ["i"]),
             helper.make_node("Constant", [], ["k"], value=c),
             helper.make_node("Cast", ["k"], ["kf"], to=TP.FLOAT),
             helper.make_node("Shape", ["x"], ["s"])]
    m = model(nodes, [vi("x", TP.INT4, [3, 5])],
              [vi("r", TP.INT4, [5, 3]), vi("f", TP.INT4, [1, 15]), vi("u", TP.INT4, [3, 1, 5]),
               vi("i", TP.INT4, [3, 5]), vi("kf", TP.FLOAT, [7]), vi("s", TP.INT64, [2])],
              [tensor("shape", np.array([5, 3], np.int64)), tensor("axes", np.array([1], np.int64))])
    write_case("packed_moves", m, {"x": rng.integers(-8, 8, (3, 5)).astype(ml_dtypes.int4)})


def e8m0_scale():
    """QuantizeLinear-24 to f8e4m3fn and back with e8m0 scales (the MX
    formats' powers of two), per axis. onnx 1.20's ReferenceEvaluator runs
    DequantizeLinear-21 here and refuses output_dtype, so the reference is
    its arithmetic in numpy: saturate_cast(x / s), then q * s in f32."""
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((3, 4)) * 5).astype(np.float32)
    s = np.array([2.0 ** -3, 2.0 ** 2, 1.0], np.float32)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s"], ["q"], axis=0, output_dtype=TP.FLOAT8E4M3FN),
             helper.make_node("DequantizeLinear", ["q", "s"], ["y"], axis=0, output_dtype=TP.FLOAT)]
    m = model(nodes, [vi("x", TP.FLOAT, [3, 4])], [vi("q", TP.FLOAT8E4M3FN, [3, 4]), vi("y", TP.FLOAT, [3, 4])],
              [tensor("s", s.astype(ml_dtypes.float8_e8m0fnu))])
    q = numpy_helper.saturate_cast(x / s[:, None], ml_dtypes.float8_e4m3fn)
    write_case("e8m0_scale", m, {"x": x}, [q, q.astype(np.float32) * s[:, None]])


def bad(name, m, args, want):
    onnx.save(m, os.path.join(BAD, name + ".onnx"))
    with open(os.path.join(BAD, name + ".expect"), "w") as f:
        f.write(args + "\n" + want + "\n")


def bad_cases():
    ident = lambda t, x=("w",): model([helper.make_node("Identity", list(x), ["y"])], [],  # noqa: E731
                                      [vi("y", t.data_type, t.dims)], [t], opset=17)
    # a packed int4 [5] takes 3 bytes
    t = onnx.TensorProto(name="w", data_type=TP.INT4, dims=[5], raw_data=b"\x12\x34")
    bad("narrow_int4_raw_short", ident(t), "compile @ -o @OUT", "raw_data has 2 bytes; expected 3")
    # int32_data of a packed type holds its bytes, not its elements
    t = onnx.TensorProto(name="w", data_type=TP.INT4, dims=[5], int32_data=[1, 2, 3, 4, 5])
    bad("narrow_int4_int32_data", ident(t), "compile @ -o @OUT", "int32_data has 5 values; expected 3")
    # an op that does not compute float8
    m = model([helper.make_node("Add", ["a", "b"], ["y"])],
              [vi("a", TP.FLOAT8E4M3FN, [4]), vi("b", TP.FLOAT8E4M3FN, [4])], [vi("y", TP.FLOAT8E4M3FN, [4])],
              opset=17)
    bad("narrow_add_f8", m, "compile @ -o @OUT", "which Add does not compute")
    m = model([helper.make_node("Cast", ["x"], ["y"], to=TP.FLOAT8E8M0, round_mode="sideways")],
              [vi("x", TP.FLOAT, [4])], [vi("y", TP.FLOAT8E8M0, [4])], opset=17)
    bad("narrow_cast_round_mode", m, "compile @ -o @OUT", "round_mode 'sideways'")
    m = model([helper.make_node("DequantizeLinear", ["x", "s"], ["y"], axis=1, block_size=4)],
              [vi("x", TP.INT4, [2, 8]), vi("s", TP.FLOAT, [2, 3])], [vi("y", TP.FLOAT, [2, 8])], opset=17)
    bad("narrow_dq_block_shape", m, "compile @ -o @OUT", "ceil(8 / 4) = 2 along axis 1")
    m = model([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], output_dtype=TP.INT4)],
              [vi("x", TP.FLOAT, [4]), vi("s", TP.FLOAT, []), vi("z", TP.UINT4, [])], [vi("y", TP.UINT4, [4])],
              opset=17)
    bad("narrow_q_output_dtype", m, "compile @ -o @OUT", "is not y_zero_point's type")


if __name__ == "__main__":
    cast_roundtrip()
    int4_blocked_weight()
    quantize_blocked()
    packed_moves()
    e8m0_scale()
    bad_cases()
