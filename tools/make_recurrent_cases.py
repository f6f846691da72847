"""make_recurrent_cases.py — RNN, GRU and LSTM cases for kiln check, with
ONNX Runtime's outputs as the reference (backend-test layout under
tests/generated/recurrent/). Run with the venv that has onnx and
onnxruntime:

    /tmp/venv/bin/python tools/make_recurrent_cases.py tests/generated/recurrent tests/bad

(the second folder receives the bad-input cases, recurrent_*.onnx/.expect), and

    /tmp/venv/bin/python tools/make_recurrent_cases.py --dq tests/generated/recurrent_dq tests/bad

ONNX Runtime's quantize_dynamic of two LSTMs (com.microsoft
DynamicQuantizeLSTM, compiler/frontend/onnx_ort_lstm.c): see dq_case.

ONNX's node tests (test_lstm_*, test_gru_*, test_rnn_*, test_simple_rnn_*)
feed W, R and B as graph inputs and cover forward defaults only; here W, R,
B and P are initializers, so kiln takes its packed-GEMM path, and the cases
cover what those tests leave out: reverse and bidirectional, every
activation the spec lists with activation_alpha/beta, clip, GRU's
linear_before_reset, LSTM's input_forget and peepholes, sequence_lens
(rows shorter than X), initial states, every optional output, and layout 1.
ONNX Runtime runs layout 0 only, so a layout-1 case's reference is the same
model at layout 0 on transposed inputs, its outputs transposed back.

Shapes are small (S <= 5, B <= 3, H <= 6) and odd, so that no dim is a
multiple of a vector width by chance."""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def save(folder, model, feeds, outs):
    os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    for k, (name, arr) in enumerate(feeds):
        with open(os.path.join(folder, "test_data_set_0", f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(arr, name).SerializeToString())
    for k, (name, arr) in enumerate(outs):
        with open(os.path.join(folder, "test_data_set_0", f"output_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(arr, name).SerializeToString())


def build(op, s, b, i, h, direction="forward", layout=0, bias=True, seq=None, init_h=False, init_c=False,
          peep=False, outs=("Y", "Y_h", "Y_c"), seed=0, **attrs):
    """A one-node model (weights as initializers) and its feeds, at `layout`."""
    rng = np.random.default_rng(seed)
    attrs = {k: v for k, v in attrs.items() if v is not None}
    d = 2 if direction == "bidirectional" else 1
    g = GATES[op]
    f32 = lambda *shape: rng.uniform(-0.8, 0.8, shape).astype(np.float32)
    inits = [numpy_helper.from_array(f32(d, g * h, i), "W"), numpy_helper.from_array(f32(d, g * h, h), "R")]
    names = ["X", "W", "R"]
    feeds = [("X", (f32(b, s, i) if layout else f32(s, b, i)) * 2)]
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(feeds[0][1].shape))]
    names.append("B" if bias else "")
    if bias:
        inits.append(numpy_helper.from_array(f32(d, 2 * g * h), "B"))
    names.append("sequence_lens" if seq is not None else "")
    if seq is not None:
        feeds.append(("sequence_lens", np.array(seq, np.int32)))
        inputs.append(helper.make_tensor_value_info("sequence_lens", TensorProto.INT32, [b]))
    st = [b, d, h] if layout else [d, b, h]
    for flag, name in ((init_h, "initial_h"), (init_c, "initial_c")):
        if op == "LSTM" or name == "initial_h":
            names.append(name if flag else "")
            if flag:
                feeds.append((name, f32(*st)))
                inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, st))
    if op == "LSTM":
        names.append("P" if peep else "")
        if peep:
            inits.append(numpy_helper.from_array(f32(d, 3 * h), "P"))
    while names[-1] == "":
        names.pop()
    allouts = ["Y", "Y_h", "Y_c"][: 3 if op == "LSTM" else 2]
    onames = [o if o in outs else "" for o in allouts]
    while onames[-1] == "":
        onames.pop()
    yshape = [b, s, d, h] if layout else [s, d, b, h]
    oinfo = [helper.make_tensor_value_info(o, TensorProto.FLOAT, yshape if o == "Y" else st) for o in onames if o]
    node = helper.make_node(op, names, onames, name=f"{op}_0", direction=direction, hidden_size=h, **attrs)
    if layout:
        node.attribute.append(helper.make_attribute("layout", 1))
    graph = helper.make_graph([node], "recurrent", inputs, oinfo, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14 if layout else 7)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    return model, feeds


def run_ort(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return list(zip(names, sess.run(None, dict(feeds))))


def case(out, name, op, s, b, i, h, **kw):
    model, feeds = build(op, s, b, i, h, **kw)
    if kw.get("layout"):
        kw0 = dict(kw, layout=0)
        model0, _ = build(op, s, b, i, h, **kw0)
        tf = {"X": (1, 0, 2), "initial_h": (1, 0, 2), "initial_c": (1, 0, 2)}
        feeds0 = [(n, a.transpose(tf[n]) if n in tf else a) for n, a in feeds]
        outs = [(n, a.transpose((2, 0, 1, 3)) if n == "Y" else a.transpose(1, 0, 2)) for n, a in run_ort(model0, feeds0)]
    else:
        outs = run_ort(model, feeds)
    save(os.path.join(out, name), model, feeds, outs)
    print(name, [(n, a.shape) for n, a in outs])


# Bad input, one case per refusal: tests/bad/recurrent_NAME.onnx + .expect
# (tests/bad/run_bad.sh: one line "kiln: ...", exit 1, no file written).
BAD = [
    # (name, op, build() arguments, changes to the node, expected text)
    ("lstm_w_shape", "LSTM", {}, {"W": (1, 12, 3)}, "W is f32[1,12,3]; expected f32[1,16,3]"),
    ("rnn_unknown_activation", "RNN", {"activations": ["Swish"]}, {}, "activation 'Swish' is unknown"),
    ("gru_activation_count", "GRU", {"activations": ["Sigmoid", "Tanh", "Tanh"]}, {}, "3 activations; expected 2"),
    ("gru_hidden_size", "GRU", {}, {"hidden_size": 5}, "hidden_size is 5 but R has 12 rows of 4"),
    ("lstm_direction", "LSTM", {"direction": "sideways"}, {}, "direction is 'sideways'"),
    ("rnn_layout", "RNN", {"layout_attr": 2}, {}, "layout is 2"),
    ("lstm_clip", "LSTM", {"clip": -1.0}, {}, "clip is not a positive float"),
    ("gru_lbr", "GRU", {"linear_before_reset": 2}, {}, "linear_before_reset is 2"),
    ("lstm_input_forget", "LSTM", {"input_forget": 3}, {}, "input_forget is 3"),
    ("lstm_p_shape", "LSTM", {"peep": True}, {"P": (1, 8)}, "P is f32[1,8]; expected f32[1,12]"),
    ("rnn_b_shape", "RNN", {}, {"B": (1, 4)}, "B is f32[1,4]; expected f32[1,8]"),
    ("gru_initial_h_shape", "GRU", {"init_h": True}, {"initial_h": (2, 2, 4)}, "initial_h is f32[2,2,4]"),
    ("rnn_x_rank", "RNN", {}, {"X": (3, 3)}, "X has rank 2; expected 3"),
    ("rnn_x_int", "RNN", {}, {"Xdt": TensorProto.INT64}, "X is i64; expected f32 or f64"),
    ("lstm_seq_shape", "LSTM", {"seq": [3, 3]}, {"sequence_lens": (3,)}, "sequence_lens is i32[3]; expected i32[2]"),
    ("gru_seq_range", "GRU", {"seq": [3, 7]}, {"seq_const": True}, "sequence_lens[1] is 7; expected 0 to 3"),
]


def bad_model(op, kw, change):
    """A valid S 3, B 2, I 3, H 4 model, then the change that breaks it."""
    kw = dict(kw)
    layout = kw.pop("layout_attr", None)
    model, feeds = build(op, 3, 2, 3, 4, **kw)
    g = model.graph
    node = g.node[0]
    if layout is not None:
        node.attribute.append(helper.make_attribute("layout", layout))
    for name, shape in change.items():
        if name == "hidden_size":
            next(a for a in node.attribute if a.name == "hidden_size").i = shape
        elif name == "Xdt":
            g.input[0].type.tensor_type.elem_type = shape
        elif name == "seq_const":
            g.initializer.append(numpy_helper.from_array(dict(feeds)["sequence_lens"], "sequence_lens"))
            g.input.remove(next(i for i in g.input if i.name == "sequence_lens"))
        else:
            for t in g.initializer:
                if t.name == name:
                    t.CopyFrom(numpy_helper.from_array(np.zeros(shape, np.float32), name))
            for i in g.input:
                if i.name == name:
                    i.type.tensor_type.ClearField("shape")
                    for dim in shape:
                        i.type.tensor_type.shape.dim.add().dim_value = dim
    return model


def write_bad_dq(folder, dq_model):
    """DynamicQuantizeLSTM refusals, from a good quantize_dynamic output."""
    cases = []
    m = onnx.load(dq_model)  # a scale that is a graph input, not an initializer
    t = next(t for t in m.graph.initializer if t.name == "W_scale")
    m.graph.initializer.remove(t)
    m.graph.input.append(helper.make_tensor_value_info("W_scale", TensorProto.FLOAT, list(t.dims)))
    cases.append(("dqlstm_scale_input", m, "W_quantized, its scale or its zero point is computed"))
    m = onnx.load(dq_model)  # LSTM's eight inputs only
    del m.graph.node[0].input[8:]
    cases.append(("dqlstm_inputs", m, "8 inputs and 3 outputs; expected 12"))
    m = onnx.load(dq_model)  # a scale per direction and column that has the wrong width
    for name in ("R_scale", "R_zero_point"):
        t = next(t for t in m.graph.initializer if t.name == name)
        a = numpy_helper.to_array(t)
        t.CopyFrom(numpy_helper.from_array(np.repeat(a[:, None], 5, axis=1), name))
    cases.append(("dqlstm_scale_shape", m, "scale f32[2,5]"))
    for name, model, expect in cases:
        with open(os.path.join(folder, f"recurrent_{name}.onnx"), "wb") as f:
            f.write(model.SerializeToString(deterministic=True))
        with open(os.path.join(folder, f"recurrent_{name}.expect"), "w") as f:
            f.write("compile @ -o @OUT\n" + expect + "\n")


def write_bad(folder):
    for name, op, kw, change, expect in BAD:
        model = bad_model(op, kw, change)
        with open(os.path.join(folder, f"recurrent_{name}.onnx"), "wb") as f:
            f.write(model.SerializeToString(deterministic=True))
        with open(os.path.join(folder, f"recurrent_{name}.expect"), "w") as f:
            f.write("compile @ -o @OUT\n" + expect + "\n")
    print(f"wrote {len(BAD)} bad cases to {folder}")


def load_set(folder, prefix):
    """input_K.pb / output_K.pb of test_data_set_0, in K order, as (name, array)."""
    out, k = [], 0
    while os.path.exists(os.path.join(folder, "test_data_set_0", f"{prefix}_{k}.pb")):
        t = onnx.TensorProto()
        with open(os.path.join(folder, "test_data_set_0", f"{prefix}_{k}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        out.append((t.name, numpy_helper.to_array(t)))
        k += 1
    return out


def ort_outputs(folder):
    """Replace a fixture's (PyTorch) outputs by ONNX Runtime's, after checking
    that the two agree (1e-5)."""
    model = onnx.load(os.path.join(folder, "model.onnx"))
    outs = run_ort(model, load_set(folder, "input"))
    for (name, want), (oname, got) in zip(load_set(folder, "output"), outs):
        err = float(np.max(np.abs(got - want)))
        print(f"{folder}: {name}: ORT vs PyTorch max abs {err:.3g}")
        if name != oname or err > 1e-5:
            sys.exit(f"{folder}: ONNX Runtime's {oname} differs from PyTorch's {name}")
    save(folder, model, load_set(folder, "input"), outs)


def f64_case(out, name, op, s, b, i, h, **kw):
    """The model in f64, its reference from ONNX's own reference evaluator
    (ONNX Runtime computes these ops in f32 only; onnx.reference runs one
    direction in numpy's float64)."""
    from onnx.reference import ReferenceEvaluator
    model, feeds = build(op, s, b, i, h, **kw)
    for t in model.graph.initializer:
        t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float64), t.name))
    for v in list(model.graph.input) + list(model.graph.output):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = TensorProto.DOUBLE
    feeds = [(n, a.astype(np.float64) if a.dtype == np.float32 else a) for n, a in feeds]
    ref = ReferenceEvaluator(model).run(None, dict(feeds))
    save(os.path.join(out, name), model, feeds, list(zip([o.name for o in model.graph.output], ref)))
    print(name, [a.dtype for a in ref])


def dq_case(out, name, weight_type, per_channel, op_kw):
    """ONNX Runtime's quantize_dynamic of an LSTM case: a DynamicQuantizeLSTM
    node. Two folders with the same model: NAME (ORT's outputs, which also
    quantize X and h at every step: kiln within 1e-2) and NAME_exact (ORT's
    f32 LSTM on the weights dequantized in numpy, what kiln computes: 1e-5)."""
    import tempfile
    from onnxruntime.quantization import QuantType, quantize_dynamic
    model, feeds = build("LSTM", **op_kw)
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "f32.onnx"), os.path.join(tmp, "q.onnx")
        model.opset_import[0].version = 11
        onnx.save(model, src)
        wt = QuantType.QInt8 if weight_type == "s8" else QuantType.QUInt8
        quantize_dynamic(src, dst, weight_type=wt, per_channel=per_channel)
        qmodel = onnx.load(dst)
    node = qmodel.graph.node[0]
    assert node.op_type == "DynamicQuantizeLSTM", node.op_type
    save(os.path.join(out, name), qmodel, feeds, run_ort(qmodel, feeds))
    inits = {t.name: numpy_helper.to_array(t) for t in qmodel.graph.initializer}
    f32 = onnx.load_from_string(model.SerializeToString())
    for t in f32.graph.initializer:
        if t.name in ("W", "R"):
            q = inits[node.input[1 if t.name == "W" else 2]].astype(np.int64)
            sc = inits[node.input[8 if t.name == "W" else 10]]
            zp = inits[node.input[9 if t.name == "W" else 11]].astype(np.int64)
            if sc.ndim == 1:
                sc, zp = sc[:, None, None], zp[:, None, None]
            else:
                sc, zp = sc[:, None, :], zp[:, None, :]
            w = ((q - zp).astype(np.float32) * sc).transpose(0, 2, 1)
            t.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(w, np.float32), t.name))
    save(os.path.join(out, name + "_exact"), qmodel, feeds, run_ort(f32, feeds))
    print(name, node.input[8:], [(a.name) for a in node.attribute])


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--dq":
        out = sys.argv[2]
        dq_case(out, "dqlstm_bidir_s8", "s8", False,
                dict(s=5, b=3, i=4, h=6, direction="bidirectional", seq=[5, 2, 4], init_h=True, init_c=True,
                     peep=True, seed=30))
        dq_case(out, "dqlstm_reverse_u8_per_channel", "u8", True,
                dict(s=4, b=2, i=5, h=7, direction="reverse", init_c=True, seed=31))
        write_bad_dq(sys.argv[3] if len(sys.argv) > 3 else "tests/bad",
                     os.path.join(out, "dqlstm_bidir_s8", "model.onnx"))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--ort":
        for folder in sys.argv[2:]:
            ort_outputs(folder)
        return
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/generated/recurrent"
    write_bad(sys.argv[2] if len(sys.argv) > 2 else "tests/bad")
    # LSTM: both directions, peepholes, per-row lengths, initial states, all outputs
    case(out, "lstm_bidir_peep_seq", "LSTM", 5, 3, 4, 6, direction="bidirectional", seq=[5, 2, 4], init_h=True,
         init_c=True, peep=True, seed=1)
    # LSTM reverse: clip, input_forget, three other gate functions with alpha/beta
    case(out, "lstm_reverse_clip_forget", "LSTM", 4, 2, 3, 5, direction="reverse", clip=0.9, input_forget=1,
         activations=["HardSigmoid", "Elu", "Softsign"], activation_alpha=[0.3, 0.7], activation_beta=[0.4],
         init_c=True, seed=2)
    # LSTM forward without B, only Y_h and Y_c
    case(out, "lstm_nobias_states", "LSTM", 3, 2, 5, 4, bias=False, outs=("Y_h", "Y_c"), init_h=True, seed=3)
    # GRU as PyTorch exports it: linear_before_reset, both directions, lengths
    case(out, "gru_bidir_lbr_seq", "GRU", 5, 3, 4, 6, direction="bidirectional", linear_before_reset=1,
         seq=[3, 5, 1], init_h=True, seed=4)
    # GRU reverse without linear_before_reset: LeakyRelu and ScaledTanh, clip
    case(out, "gru_reverse_acts_clip", "GRU", 4, 2, 3, 5, direction="reverse", clip=1.5,
         activations=["LeakyRelu", "ScaledTanh"], activation_alpha=[0.2, 0.9], activation_beta=[1.3], seed=5)
    # GRU forward, linear_before_reset, lengths, no B, only Y
    case(out, "gru_lbr_nobias_y", "GRU", 4, 3, 2, 3, linear_before_reset=1, bias=False, seq=[4, 1, 3],
         outs=("Y",), seed=6)
    # RNN: a different function per direction
    case(out, "rnn_bidir_relu_affine", "RNN", 5, 2, 3, 4, direction="bidirectional",
         activations=["Relu", "Affine"], activation_alpha=[0.8], activation_beta=[0.1], init_h=True, seed=7)
    # RNN: the remaining functions, one per case
    for k, act in enumerate(["Sigmoid", "ThresholdedRelu", "Softplus", "Tanh"]):
        kw = {"activation_alpha": [0.1]} if act == "ThresholdedRelu" else {}
        case(out, f"rnn_{act.lower()}", "RNN", 3, 2, 3, 4, direction="reverse" if k % 2 else "forward",
             activations=[act], seq=[3, 2] if k == 3 else None, clip=2.0 if k == 2 else None, seed=8 + k, **kw)
    # layout 1 (batch first): bidirectional LSTM with lengths and states, GRU lbr
    case(out, "lstm_layout1_bidir_seq", "LSTM", 4, 3, 3, 5, direction="bidirectional", layout=1, seq=[2, 4, 3],
         init_h=True, init_c=True, peep=True, seed=20)
    case(out, "gru_layout1_reverse", "GRU", 4, 2, 3, 4, direction="reverse", layout=1, linear_before_reset=1,
         init_h=True, seed=21)
    # rows of length 0: zero final states (ONNX Runtime), whatever the initial ones
    case(out, "lstm_bidir_zero_length", "LSTM", 3, 3, 2, 3, direction="bidirectional", seq=[0, 3, 1], init_h=True,
         init_c=True, seed=27)
    case(out, "gru_zero_length", "GRU", 3, 2, 2, 3, seq=[2, 0], init_h=True, linear_before_reset=1, seed=28)
    # f64 (one direction: what onnx.reference runs), without the packed GEMMs; not RNN, whose
    # reference gives Y the wrong shape
    f64_case(out, "lstm_f64_peep", "LSTM", 4, 2, 3, 5, peep=True, init_h=True, init_c=True, outs=("Y", "Y_h"),
             seed=24)
    f64_case(out, "gru_f64_lbr", "GRU", 4, 2, 3, 5, linear_before_reset=1, init_h=True, seed=25)
    # long sequences: the input side in chunks of steps (RNN_GX_MAX_BYTES in compiler/ops/recurrent.c),
    # only the final states written (they depend on every step)
    case(out, "lstm_layout1_chunked", "LSTM", 1100, 2, 2, 32, direction="bidirectional", layout=1,
         seq=[1100, 800], peep=True, outs=("Y_h", "Y_c"), seed=22)
    case(out, "gru_reverse_chunked", "GRU", 1000, 1, 2, 48, direction="reverse", outs=("Y_h",), init_h=True,
         seed=23)
    # --threads: the directions split among the threads, each with an input-side product big enough to
    # split too (it was split inside the split, and a direction came out wrong); one direction on the
    # lead after a product split among the threads (its recurrence ran on every thread)
    case(out, "lstm_bidir_split_product", "LSTM", 32, 1, 64, 32, direction="bidirectional", seed=29)
    case(out, "gru_split_product", "GRU", 48, 1, 96, 40, linear_before_reset=1, seed=30)


if __name__ == "__main__":
    main()
