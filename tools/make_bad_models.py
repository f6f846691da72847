#!/usr/bin/env python3
"""make_bad_models.py — write kiln's bad-input corpus, tests/bad/.

Each case is a tiny model (or a file that is not one) that kiln must reject
with exactly one line "kiln: ..." on stderr and exit status 1, leaving no
output file behind (STYLE.md, "Errors, three kinds"). For case NAME this
writes tests/bad/NAME.onnx (unless the case needs no model file) and
tests/bad/NAME.expect:

    line 1: kiln's arguments; "@OUT" is an output .c path the runner picks
            in a fresh folder, any other "@" is the path of NAME.onnx
    line 2: a substring the error line must contain
    line 3+ (optional) "also: SUBSTRING" — an accepted alternative, used only
            while the op a case exercises is still a placeholder ("not
            implemented yet"); drop it once the op lands

The .onnx files are committed, so tests/bad/run_bad.sh needs no Python.
Regenerate with:  /work/venv/bin/python tools/make_bad_models.py
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "bad")
PLACEHOLDER = "not implemented yet"

F32, I64 = TensorProto.FLOAT, TensorProto.INT64


def vi(name, dt=F32, shape=(2, 3)):
    return helper.make_tensor_value_info(name, dt, list(shape))


def const(name, arr):
    """An initializer from a numpy array, stored as raw_data."""
    t = TensorProto(name=name, data_type=helper.np_dtype_to_tensor_dtype(arr.dtype),
                    dims=list(arr.shape))
    t.raw_data = arr.tobytes()
    return t


def model(nodes, inputs, outputs, inits=(), opset=17, **graph_kw):
    g = helper.make_graph(nodes, "bad", inputs, outputs, list(inits), **graph_kw)
    m = helper.make_model(g, producer_name="kiln-bad",
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def relu_model():
    """A valid model: Y = Relu(X), X f32[2,3]."""
    return model([helper.make_node("Relu", ["X"], ["Y"], name="relu")], [vi("X")], [vi("Y")])


CASES = {}


def case(name, args="compile @ -o @OUT", expect="", also=()):
    """Register a case: the decorated function returns the model (a
    ModelProto, raw bytes, or None for a case without a model file)."""
    def wrap(fn):
        CASES[name] = (fn, args, expect, also)
        return fn
    return wrap


# ---- files that are not models ------------------------------------------------

@case("empty_file", expect="the file is empty")
def _():
    return b""


@case("truncated", expect="not a valid ONNX protobuf")
def _():
    # a valid model cut in half: protobuf sees a length running off the end
    b = relu_model().SerializeToString()
    return b[: len(b) // 2]


@case("png_file", expect="not a valid ONNX protobuf")
def _():
    return bytes.fromhex("89504e470d0a1a0a0000000d49484452") + b"\x00" * 16


@case("text_file", expect="not a valid ONNX protobuf")
def _():
    return b"this is not an onnx model, just some text\n"


@case("missing_file", args="compile @.missing -o @OUT", expect="cannot open")
def _():
    return None


@case("no_graph", expect="the model has no graph")
def _():
    m = relu_model()
    m.ClearField("graph")
    return m


# ---- opsets and domains --------------------------------------------------------

@case("opset_99", expect="opset 99")
def _():
    m = relu_model()
    m.opset_import[0].version = 99
    return m


@case("opset_26", expect="node 'relu' (Relu): the model imports ONNX opset 26, newer than the newest kiln knows (25)")
def _():
    m = relu_model()
    m.opset_import[0].version = 26
    return m


@case("split_num_outputs_mismatch", expect="num_outputs is 3 with 2 outputs at opset 18")
def _():
    n = helper.make_node("Split", ["X"], ["A", "B"], name="split", axis=1, num_outputs=3)
    return model([n], [vi("X", shape=(2, 4))], [vi("A", shape=(2, 2)), vi("B", shape=(2, 2))], opset=18)


@case("split_num_outputs_before_18", expect="num_outputs is 2 with 2 outputs at opset 17")
def _():
    n = helper.make_node("Split", ["X"], ["A", "B"], name="split", axis=1, num_outputs=2)
    return model([n], [vi("X", shape=(2, 4))], [vi("A", shape=(2, 2)), vi("B", shape=(2, 2))], opset=17)


@case("no_default_opset", expect="imports no version of the default ONNX domain")
def _():
    m = relu_model()
    m.opset_import[0].domain = "com.example"
    return m


@case("custom_domain_node", expect="node 'ngram' (NGramRepeatBlock): domain 'com.microsoft' is not supported")
def _():
    # a com.microsoft op kiln does not read (its Gelu and norms it does)
    n = helper.make_node("NGramRepeatBlock", ["X"], ["Y"], name="ngram", domain="com.microsoft", ngram_size=2)
    return model([n], [vi("X")], [vi("Y")])


@case("ort_rotary_scale", expect="attribute 'scale' is not its default; expected scale 1")
def _():
    n = helper.make_node("RotaryEmbedding", ["X", "P", "C", "S"], ["Y"], name="rope", domain="com.microsoft",
                         num_heads=1, scale=0.5)
    return model([n], [vi("X", shape=(1, 2, 4)), vi("P", I64, (1, 2)), vi("C", shape=(4, 2)),
                       vi("S", shape=(4, 2))], [vi("Y", shape=(1, 2, 4))])


@case("ort_rotary_positions_i32", expect="position_ids is i32[1,2]; expected i64 [1, 2] (or [1]: a start offset)")
def _():
    n = helper.make_node("RotaryEmbedding", ["X", "P", "C", "S"], ["Y"], name="rope", domain="com.microsoft",
                         num_heads=1)
    return model([n], [vi("X", shape=(1, 2, 4)), vi("P", TensorProto.INT32, (1, 2)), vi("C", shape=(4, 2)),
                       vi("S", shape=(4, 2))], [vi("Y", shape=(1, 2, 4))])


@case("unknown_op", expect="unsupported op 'FooBar'")
def _():
    return model([helper.make_node("FooBar", ["X"], ["Y"], name="foo")], [vi("X")], [vi("Y")])


# ---- graph structure -----------------------------------------------------------

@case("missing_initializer", expect="input 'W' is not defined")
def _():
    n = helper.make_node("Add", ["X", "W"], ["Y"], name="add")
    return model([n], [vi("X")], [vi("Y")])


@case("output_not_produced", expect="graph output 'Z' is not produced")
def _():
    m = relu_model()
    m.graph.output.append(vi("Z"))
    return m


@case("cycle", expect="cycle")
def _():
    # A = Add(X, B); B = Relu(A)
    nodes = [helper.make_node("Add", ["X", "B"], ["A"], name="add"),
             helper.make_node("Relu", ["A"], ["B"], name="relu")]
    return model(nodes, [vi("X")], [vi("B")])


@case("duplicate_output", expect="output 'Y' is already defined")
def _():
    nodes = [helper.make_node("Relu", ["X"], ["Y"], name="relu1"),
             helper.make_node("Neg", ["X"], ["Y"], name="neg2")]
    return model(nodes, [vi("X")], [vi("Y")])


@case("node_overwrites_input", expect="output 'X' is already defined")
def _():
    n = helper.make_node("Relu", ["X"], ["X"], name="relu")
    return model([n], [vi("X")], [vi("X")])


@case("wrong_arity", expect="1 inputs; expected 2")
def _():
    return model([helper.make_node("Add", ["X"], ["Y"], name="add")], [vi("X")], [vi("Y")])


@case("duplicate_input", expect="graph input 'X' is listed twice")
def _():
    m = relu_model()
    m.graph.input.append(vi("X"))
    return m


@case("duplicate_graph_output", expect="graph output 'Y' is listed twice")
def _():
    m = relu_model()
    m.graph.output.append(vi("Y"))
    return m


# ---- graph inputs --------------------------------------------------------------

@case("float16_softmax", expect="'X' is f16, which Softmax does not compute; expected f32")
def _():
    n = helper.make_node("Softmax", ["X"], ["Y"], name="sm")
    return model([n], [vi("X", TensorProto.FLOAT16)], [vi("Y", TensorProto.FLOAT16)])


@case("string_input", expect="element type string")
def _():
    n = helper.make_node("Identity", ["X"], ["Y"], name="id")
    return model([n], [vi("X", TensorProto.STRING)], [vi("Y", TensorProto.STRING)])


@case("input_rank_9", expect="rank 9; expected at most 8")
def _():
    shape = [1] * 9
    n = helper.make_node("Relu", ["X"], ["Y"], name="relu")
    return model([n], [vi("X", F32, shape)], [vi("Y", F32, shape)])


@case("input_no_shape", expect="has no shape")
def _():
    x = helper.make_tensor_value_info("X", F32, None)
    n = helper.make_node("Relu", ["X"], ["Y"], name="relu")
    return model([n], [x], [vi("Y")])


@case("input_sequence", expect="is not a tensor")
def _():
    x = helper.make_tensor_sequence_value_info("X", F32, [2, 3])
    n = helper.make_node("Relu", ["X"], ["Y"], name="relu")
    return model([n], [x], [vi("Y")])


@case("unbound_dim", expect="symbolic dims need values: input 'X' f32[batch,3] (--shape batch=N, or --shape X=1x3)")
def _():
    n = helper.make_node("Relu", ["X"], ["Y"], name="relu")
    return model([n], [vi("X", F32, ["batch", 3])], [vi("Y", F32, ["batch", 3])])


@case("unbound_dims_all", expect="symbolic dims need values: input 'A' f32[batch,seq,4] (--shape batch=N, "
      "--shape seq=N, or --shape A=1x1x4); input 'B' f32[batch,seq] (--shape batch=N, --shape seq=N, or --shape B=1x1)")
def _():
    n = helper.make_node("Mul", ["A", "B3"], ["Y"], name="mul")
    u = helper.make_node("Unsqueeze", ["B", "ax"], ["B3"], name="unsq")
    return model([u, n], [vi("A", F32, ["batch", "seq", 4]), vi("B", F32, ["batch", "seq"])],
                 [vi("Y", F32, ["batch", "seq", 4])], inits=[const("ax", np.array([2], np.int64))])


@case("shape_symbol_conflict", args="compile @ -o @OUT --shape X=2x3 --shape batch=4",
      expect="--shape batch=4: input 'X' f32[2,3] has 2 for it (dim 0); expected one value per symbol")
def _():
    n = helper.make_node("Relu", ["X"], ["Y"], name="relu")
    return model([n], [vi("X", F32, ["batch", 3])], [vi("Y", F32, ["batch", 3])])


@case("shape_zero_dim", args="compile @ -o @OUT --shape X=0x3", expect="--shape X=0x3: expected dims like 1x16x64 (each at least 1)")
def _():
    return relu_model()


@case("shape_typo", args="compile @ -o @OUT --shape x=2x3",
      expect="--shape x: no graph input or symbolic dim has that name (did you mean 'X'?); expected one of 'X'")
def _():
    return relu_model()


@case("run_input_typo", args="run @ --input x=@", expect="no input of that name (did you mean 'X'?); expected one of 'X'")
def _():
    return relu_model()


@case("option_typo", args="compile @ -o @OUT --shap X=2x3",
      expect="unknown option '--shap' (did you mean '--shape'?); see kiln compile --help")
def _():
    return relu_model()


@case("command_typo", args="comple @", expect="unknown command 'comple' (did you mean 'compile'?)")
def _():
    return None


@case("shape_unknown_name", args="compile @ -o @OUT --shape nosuch=4",
      expect="--shape nosuch: no graph input or symbolic dim has that name")
def _():
    return relu_model()


@case("shape_wrong_rank", args="compile @ -o @OUT --shape X=2x3x4",
      expect="--shape X=2x3x4 has rank 3; the input 'X' has rank 2")
def _():
    return relu_model()


@case("shape_conflicts_model", args="compile @ -o @OUT --shape X=5x3",
      expect="dim 0 of input 'X' is fixed to 2 by the model")
def _():
    return relu_model()


@case("shape_bad_syntax", args="compile @ -o @OUT --shape X=2xfoo",
      expect="--shape X=2xfoo: expected dims like 1x16x64")
def _():
    return relu_model()


@case("shape_no_equals", args="compile @ -o @OUT --shape X",
      expect="--shape X: expected NAME=DIMS")
def _():
    return relu_model()


# ---- initializers and tensors ---------------------------------------------------

def add_w(w):
    """Y = Add(X, W) with X f32[2,3] and the given initializer W."""
    n = helper.make_node("Add", ["X", "W"], ["Y"], name="add")
    return model([n], [vi("X")], [vi("Y")], [w])


@case("raw_data_size", expect="raw_data has 20 bytes; expected 24")
def _():
    w = TensorProto(name="W", data_type=F32, dims=[2, 3])
    w.raw_data = b"\0" * 20
    return add_w(w)


@case("float_data_count", expect="float_data has 5 values; expected 6")
def _():
    w = TensorProto(name="W", data_type=F32, dims=[2, 3])
    w.float_data.extend([1.0] * 5)
    return add_w(w)


@case("negative_dim", expect="dim 0 is -2; expected a non-negative size")
def _():
    w = TensorProto(name="W", data_type=F32, dims=[-2, 3])
    return add_w(w)


@case("huge_dims", expect="too large")
def _():
    # 2^20 x 2^20 floats: must be rejected from the dims alone, before allocating
    w = TensorProto(name="W", data_type=F32, dims=[1 << 20, 1 << 20])
    w.raw_data = b"\0" * 8
    return add_w(w)


@case("float16_initializer", expect="inputs 'X' (f32) and 'W' (f16) differ in type")
def _():
    return add_w(const("W", np.zeros((2, 3), np.float16)))


@case("unnamed_initializer", expect="initializer 0 has no name")
def _():
    w = const("W", np.zeros((2, 3), np.float32))
    w.name = ""
    return add_w(w)


@case("duplicate_initializer", expect="initializer 'W' is defined twice")
def _():
    m = add_w(const("W", np.zeros((2, 3), np.float32)))
    m.graph.initializer.append(const("W", np.ones((2, 3), np.float32)))
    return m


@case("external_data_escape", expect="external data has no valid 'location'")
def _():
    w = TensorProto(name="W", data_type=F32, dims=[2, 3],
                    data_location=TensorProto.EXTERNAL)
    e = w.external_data.add()
    e.key, e.value = "location", "../../etc/passwd"
    return add_w(w)


@case("external_data_missing", expect="cannot open external data file")
def _():
    w = TensorProto(name="W", data_type=F32, dims=[2, 3],
                    data_location=TensorProto.EXTERNAL)
    e = w.external_data.add()
    e.key, e.value = "location", "no_such_weights.bin"
    return add_w(w)


@case("graph_attribute", expect="attribute 'body' has type")
def _():
    body = helper.make_graph([], "body", [], [])
    n = helper.make_node("Relu", ["X"], ["Y"], name="relu")
    n.attribute.append(helper.make_attribute("body", body))
    return model([n], [vi("X")], [vi("Y")])


@case("raw_data_huge_dims", expect="raw_data has 8 bytes")
def _():
    # 2^34 doubles (within kiln's element cap) but 8 bytes of data: the size
    # check must come before the 128 GiB allocation, not after it
    w = TensorProto(name="W", data_type=TensorProto.DOUBLE, dims=[1 << 16, 1 << 16, 4])
    w.raw_data = b"\0" * 8
    return add_w(w)


@case("initializer_numel_wrap", expect="too large")
def _():
    # each dim is under the cap, but 2^34 * 2^34 wraps int64 to 0, which
    # would match the empty raw_data: the product must be checked before
    # it is formed
    w = TensorProto(name="W", data_type=F32, dims=[1 << 34, 1 << 34])
    w.raw_data = b""
    return add_w(w)


@case("constant_no_data", expect="double_data has 0 values")
def _():
    # a Constant whose value claims 2^34 doubles and holds none: rejected
    # from the counts, before any allocation
    v = TensorProto(name="v", data_type=TensorProto.DOUBLE, dims=[1 << 16, 1 << 16, 4])
    n = helper.make_node("Constant", [], ["Y"], name="c", value=v)
    return model([n], [], [vi("Y", TensorProto.DOUBLE, (1 << 16, 1 << 16, 4))])


@case("input_numel_overflow", expect="too large")
def _():
    # each dim is fine, the product overflows int64
    shape = (1 << 33, 1 << 33)
    n = helper.make_node("Relu", ["X"], ["Y"], name="relu")
    return model([n], [vi("X", F32, shape)], [vi("Y", F32, shape)])


@case("shape_numel_too_large", args="compile @ -o @OUT --shape batch=9999999999999",
      expect="too large")
def _():
    n = helper.make_node("Relu", ["X"], ["Y"], name="relu")
    return model([n], [vi("X", F32, ["batch", 3])], [vi("Y", F32, ["batch", 3])])


@case("shape_dim_overflow", args="compile @ -o @OUT --shape batch=99999999999999999999999",
      expect="--shape batch=99999999999999999999999")
def _():
    n = helper.make_node("Relu", ["X"], ["Y"], name="relu")
    return model([n], [vi("X", F32, ["batch", 3])], [vi("Y", F32, ["batch", 3])])


@case("empty_required_input", expect="input 0")
def _():
    # "" marks an absent optional input; Add's first input is not optional
    n = helper.make_node("Add", ["", "X"], ["Y"], name="add")
    return model([n], [vi("X")], [vi("Y")])


@case("passes_without_plan", args="compile @ -o @OUT --passes=bind,infer", expect="--passes")
def _():
    # two nodes, so the intermediate needs a workspace slot from plan
    nodes = [helper.make_node("Relu", ["X"], ["T"], name="relu"),
             helper.make_node("Neg", ["T"], ["Y"], name="neg")]
    return model(nodes, [vi("X")], [vi("Y")])


@case("passes_empty", args="compile @ -o @OUT --passes=", expect="--passes")
def _():
    return relu_model()


# ---- shapes and types rejected by infer ----------------------------------------

@case("add_no_broadcast", expect="do not broadcast")
def _():
    return add_w(const("W", np.zeros((4,), np.float32)))


@case("add_type_mismatch", expect="differ in type")
def _():
    return add_w(const("W", np.zeros((2, 3), np.int64)))


@case("transpose_perm_rank", expect="perm is not a permutation")
def _():
    # X is rank 2, perm has 3 entries
    n = helper.make_node("Transpose", ["X"], ["Y"], name="tr", perm=[2, 0, 1])
    return model([n], [vi("X")], [vi("Y", F32, (3, 2))])


@case("matmul_scalar", expect="expected inputs of rank >= 1")
def _():
    # MatMul needs rank >= 1 operands; A is 0-D
    n = helper.make_node("MatMul", ["A", "B"], ["Y"], name="mm")
    return model([n], [vi("A", F32, ()), vi("B", F32, (2, 3))], [vi("Y", F32, (3,))])


@case("gather_index_oob", expect="index 5 out of range")
def _():
    # data [3] and indices [5] both constant: folding must reject index 5
    n = helper.make_node("Gather", ["D", "I"], ["Y"], name="gather", axis=0)
    return model([n], [], [vi("Y", F32, (1,))],
                 [const("D", np.arange(3, dtype=np.float32)), const("I", np.array([5], np.int64))])


@case("reshape_runtime_shape", expect="computed at run time")
def _():
    n = helper.make_node("Reshape", ["X", "S"], ["Y"], name="reshape")
    return model([n], [vi("X"), vi("S", I64, (2,))], [vi("Y", F32, (3, 2))])


def qlinearconv(w_scale, w_zp):
    """QLinearConv of a u8 x [1,2,3,3] by a u8 w [3,2,2,2], all parameters
    constants but the two given."""
    n = helper.make_node("QLinearConv", ["X", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["Y"], name="qconv")
    u8 = TensorProto.UINT8
    return model([n], [vi("X", u8, (1, 2, 3, 3))], [vi("Y", u8, (1, 3, 2, 2))],
                 [const("xs", np.array(0.5, np.float32)), const("xz", np.array(3, np.uint8)),
                  const("w", np.zeros((3, 2, 2, 2), np.uint8)), const("ws", w_scale), const("wz", w_zp),
                  const("ys", np.array(0.25, np.float32)), const("yz", np.array(9, np.uint8))])


@case("qlinearconv_w_scale_len", expect="expected a scalar or 1-D of the 3 output channels")
def _():
    return qlinearconv(np.ones(2, np.float32), np.array(0, np.uint8))


@case("qlinearconv_w_zero_point_type", expect="w_zero_point 'wz' is i8; expected u8")
def _():
    return qlinearconv(np.ones(3, np.float32), np.array(0, np.int8))


# ---- the command line around a good model --------------------------------------

@case("output_not_c", args="compile @ -o @OUT.txt", expect="expected a file name ending in .c")
def _():
    return relu_model()


@case("output_dir_blocked", args="compile @ -o @/sub/out.c", expect="cannot create the folder")
def _():
    return relu_model()


@case("run_missing_input", args="run @", expect="input 'X' has no value")
def _():
    return relu_model()


@case("run_unknown_input", args="run @ --input Q=@", expect="the model has no input of that name")
def _():
    return relu_model()


@case("run_input_not_tensor", args="run @ --input X=@.missing",
      expect="cannot open")
def _():
    return relu_model()


@case("unknown_option", args="compile @ -o @OUT --frobnicate", expect="unknown option '--frobnicate'")
def _():
    return relu_model()


# ---- ONNX Runtime's com.microsoft norms and activations (onnx_contrib_norm.c) --

def ms_model(node, inputs, outputs, inits=()):
    m = model([node], inputs, outputs, inits)
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return m


@case("ort_skip_ln_two_inputs",
      expect="node 'sln' (com.microsoft SkipLayerNormalization): 2 inputs; expected 3 to 5")
def _():
    n = helper.make_node("SkipLayerNormalization", ["X", "S"], ["Y"], name="sln", domain="com.microsoft")
    return ms_model(n, [vi("X"), vi("S")], [vi("Y")])


@case("ort_skip_simplified_mean",
      expect="node 'ssln' (com.microsoft SkipSimplifiedLayerNormalization): output 1 (mean) is requested")
def _():
    n = helper.make_node("SkipSimplifiedLayerNormalization", ["X", "S", "G"], ["Y", "M"], name="ssln",
                         domain="com.microsoft")
    return ms_model(n, [vi("X"), vi("S")], [vi("Y"), vi("M", shape=(2, 1))],
                    [const("G", np.ones(3, np.float32))])


@case("ort_skip_ln_epsilon_string",
      expect="node 'sln' (com.microsoft SkipLayerNormalization): attribute 'epsilon' is not a number")
def _():
    n = helper.make_node("SkipLayerNormalization", ["X", "S", "G"], ["Y"], name="sln", domain="com.microsoft",
                         epsilon="small")
    return ms_model(n, [vi("X"), vi("S")], [vi("Y")], [const("G", np.ones(3, np.float32))])


@case("ort_skip_ln_output_twice",
      expect="node 'sln' (com.microsoft SkipLayerNormalization): output 'Y' is already defined; expected SSA form")
def _():
    n = helper.make_node("SkipLayerNormalization", ["X", "S", "G"], ["Y", "", "", "Y"], name="sln",
                         domain="com.microsoft")
    return ms_model(n, [vi("X"), vi("S")], [vi("Y")], [const("G", np.ones(3, np.float32))])


@case("ort_embed_ln_segments_half",
      expect="node 'eln' (com.microsoft EmbedLayerNormalization): input segment_ids is given without "
             "segment_embedding")
def _():
    i32 = TensorProto.INT32
    n = helper.make_node("EmbedLayerNormalization", ["ids", "segs", "W", "P", "", "G", "B"], ["Y"], name="eln",
                         domain="com.microsoft")
    return ms_model(n, [vi("ids", i32), vi("segs", i32)], [vi("Y", shape=(2, 3, 4))],
                    [const("W", np.ones((8, 4), np.float32)), const("P", np.ones((3, 4), np.float32)),
                     const("G", np.ones(4, np.float32)), const("B", np.zeros(4, np.float32))])


@case("ort_skip_ln_gamma_size",
      expect="node 'sln/LayerNorm' (LayerNormalization): input 'G' has shape f32[5]; expected the normalised dims")
def _():
    n = helper.make_node("SkipLayerNormalization", ["X", "S", "G"], ["Y"], name="sln", domain="com.microsoft")
    return ms_model(n, [vi("X"), vi("S")], [vi("Y")], [const("G", np.ones(5, np.float32))])


# ---- normalisations and activations (GroupNormalization's: tests/passes) -------

@case("lp_norm_p3", expect="node 'lp' (LpNormalization): p is 3; expected 1 or 2")
def _():
    n = helper.make_node("LpNormalization", ["X"], ["Y"], name="lp", p=3)
    return model([n], [vi("X")], [vi("Y")])


@case("mvn_axis_twice", expect="node 'mvn' (MeanVarianceNormalization): axes entry -1 is out of range or repeated")
def _():
    n = helper.make_node("MeanVarianceNormalization", ["X"], ["Y"], name="mvn", axes=[1, -1])
    return model([n], [vi("X")], [vi("Y")])


@case("gelu_opset17", expect="node 'gelu' (Gelu): Gelu exists from opset 20; the model imports opset 17")
def _():
    n = helper.make_node("Gelu", ["X"], ["Y"], name="gelu")
    return model([n], [vi("X")], [vi("Y")])


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, (fn, args, expect, also) in CASES.items():
        m = fn()
        path = os.path.join(OUT, name + ".onnx")
        if m is not None:
            data = m if isinstance(m, bytes) else m.SerializeToString(deterministic=True)
            with open(path, "wb") as f:
                f.write(data)
        elif os.path.exists(path):
            os.remove(path)
        with open(os.path.join(OUT, name + ".expect"), "w") as f:
            f.write(args + "\n" + expect + "\n")
            for a in also:
                f.write("also: " + a + "\n")
    print(f"wrote {len(CASES)} cases to {os.path.normpath(OUT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
