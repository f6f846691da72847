"""make_ort_contrib_cases.py — ONNX Runtime's com.microsoft normalisation
and activation ops (compiler/frontend/onnx_contrib_norm.c) for kiln check, with
ONNX Runtime's outputs as the reference (backend-test layout under
tests/ort_contrib/). Run with the venv that has onnx and onnxruntime:

    /tmp/venv/bin/python tools/make_ort_contrib_cases.py tests/ort_contrib

Each case is a small model at opset 17 + com.microsoft 1, made with
onnx.helper; ONNX Runtime must agree with numpy before a case is written.

- skip_ln: SkipLayerNormalization with beta and bias on f32[2,3,16] and all
  four outputs (mean, inv_std_var, input_skip_bias_sum), epsilon 1e-5.
- skip_ln_ffn: MatMul -> SkipLayerNormalization (gamma only, bias, skip
  [1,S,H] broadcast over the batch), the pattern after a BERT output dense.
- skip_simplified: SkipSimplifiedLayerNormalization with bias, outputs y,
  inv_std_var and the sum; default epsilon (1e-12).
- embed_ln: EmbedLayerNormalization with segments and a mask (one entry
  2, which does not count), all three outputs.
- embed_ln_positions: no segments, position_ids [1,S], no mask: mask_index
  is zeros.
- activations: Gelu, BiasGelu, FastGelu (with and without bias),
  QuickGelu (alpha 1.5 and the default), each an output of one model.
- skip_simplified_op12, embed_ln_op12: the same at opset 12, where the
  ReduceMean and ReduceSum the importer writes take their axes as an
  attribute.
- layernorm_opset14: LayerNormalization of the default domain at opset 14,
  ONNX Runtime's own (its optimizer writes it below opset 17), from axis 1
  with Mean and InvStdDev.
- cuda_only: BiasAdd and BiasSplitGelu, which ONNX Runtime implements for
  CUDA only: numpy's outputs (double, rounded to f32) are the reference.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

F32, I32 = TensorProto.FLOAT, TensorProto.INT32
MS = "com.microsoft"


def write_case(folder, nodes, inputs, outputs, inits, feeds, check, ort_cpu=True, opset=17):
    graph = helper.make_graph(nodes, os.path.basename(folder),
                              [helper.make_tensor_value_info(n, dt, s) for n, dt, s in inputs],
                              [helper.make_tensor_value_info(n, dt, s) for n, dt, s in outputs],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, producer_name="kiln-ort-contrib",
                              opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])
    model.ir_version = 8
    if ort_cpu:
        got = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    else:  # ops ONNX Runtime has for CUDA only: numpy's outputs, rounded to f32
        got = [want.astype(np.float32) for want in check(**feeds)]
    for (name, _, _), value, want in zip(outputs, got, check(**feeds)):
        if want is not None:
            err = np.max(np.abs(value.astype(np.float64) - want)) if value.size else 0
            assert err <= 1e-4 * max(1, np.max(np.abs(want))), (folder, name, err)
    os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    for kind, items in (("input", list(feeds.items())), ("output", [(o[0], v) for o, v in zip(outputs, got)])):
        for k, (name, value) in enumerate(items):
            with open(os.path.join(folder, "test_data_set_0", f"{kind}_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(value, name).SerializeToString())


def layer_norm(s, gamma, beta, eps):
    m = s.mean(-1, keepdims=True)
    v = ((s - m) ** 2).mean(-1, keepdims=True)
    y = (s - m) / np.sqrt(v + eps) * gamma
    return (y + beta if beta is not None else y), m, 1 / np.sqrt(v + eps)


def gelu(x):
    from math import erf
    return 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def skip_ln(root, rng):
    B, S, H = 2, 3, 16
    w = {"gamma": rng.standard_normal(H), "beta": rng.standard_normal(H), "bias": rng.standard_normal(H)}
    w = {k: v.astype(np.float32) for k, v in w.items()}
    node = helper.make_node("SkipLayerNormalization", ["x", "skip", "gamma", "beta", "bias"],
                            ["y", "mean", "inv_std_var", "sum"], domain=MS, epsilon=1e-5, name="sln")

    def check(x, skip):
        s = x.astype(np.float64) + skip + w["bias"]
        y, m, inv = layer_norm(s, w["gamma"], w["beta"], 1e-5)
        return [y, m, inv, s]
    feeds = {"x": (rng.standard_normal((B, S, H)) * 2 + 1).astype(np.float32),
             "skip": rng.standard_normal((B, S, H)).astype(np.float32)}
    write_case(os.path.join(root, "skip_ln"), [node], [("x", F32, [B, S, H]), ("skip", F32, [B, S, H])],
               [("y", F32, [B, S, H]), ("mean", F32, [B, S, 1]), ("inv_std_var", F32, [B, S, 1]),
                ("sum", F32, [B, S, H])], w, feeds, check)


def skip_ln_ffn(root, rng):
    B, S, K, H = 2, 4, 24, 16
    w = {"W": rng.standard_normal((K, H)) / np.sqrt(K), "gamma": rng.standard_normal(H),
         "bias": rng.standard_normal(H)}
    w = {k: v.astype(np.float32) for k, v in w.items()}
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="dense"),
             helper.make_node("SkipLayerNormalization", ["h", "skip", "gamma", "", "bias"], ["y"], domain=MS,
                              name="sln")]

    def check(x, skip):
        s = x.astype(np.float64) @ w["W"] + w["bias"] + skip
        return [layer_norm(s, w["gamma"], None, 1e-12)[0]]
    feeds = {"x": rng.standard_normal((B, S, K)).astype(np.float32),
             "skip": rng.standard_normal((1, S, H)).astype(np.float32)}
    write_case(os.path.join(root, "skip_ln_ffn"), nodes, [("x", F32, [B, S, K]), ("skip", F32, [1, S, H])],
               [("y", F32, [B, S, H])], w, feeds, check)


def skip_simplified(root, rng, opset=17):
    B, S, H = 2, 3, 16
    w = {"gamma": rng.standard_normal(H).astype(np.float32), "bias": rng.standard_normal(H).astype(np.float32)}
    node = helper.make_node("SkipSimplifiedLayerNormalization", ["x", "skip", "gamma", "bias"],
                            ["y", "", "inv_std_var", "sum"], domain=MS, name="ssln")

    def check(x, skip):
        s = x.astype(np.float64) + skip + w["bias"]
        inv = 1 / np.sqrt((s * s).mean(-1, keepdims=True) + 1e-12)
        return [s * inv * w["gamma"], inv, s]
    feeds = {"x": rng.standard_normal((B, S, H)).astype(np.float32),
             "skip": rng.standard_normal((B, S, H)).astype(np.float32)}
    write_case(os.path.join(root, "skip_simplified" + ("" if opset == 17 else f"_op{opset}")), [node],
               [("x", F32, [B, S, H]), ("skip", F32, [B, S, H])],
               [("y", F32, [B, S, H]), ("inv_std_var", F32, [B, S, 1]), ("sum", F32, [B, S, H])], w, feeds, check,
               opset=opset)


def embed_tables(rng, V, P, H):
    w = {"word": rng.standard_normal((V, H)), "pos": rng.standard_normal((P, H)),
         "seg": rng.standard_normal((2, H)), "gamma": rng.standard_normal(H), "beta": rng.standard_normal(H)}
    return {k: v.astype(np.float32) for k, v in w.items()}


def embed_ln(root, rng, opset=17):
    B, S, H, V, P = 2, 5, 16, 30, 8
    w = embed_tables(rng, V, P, H)
    node = helper.make_node("EmbedLayerNormalization", ["ids", "segs", "word", "pos", "seg", "gamma", "beta", "mask"],
                            ["y", "mask_index", "sum"], domain=MS, epsilon=1e-5, name="eln")

    def check(ids, segs, mask):
        s = w["word"][ids].astype(np.float64) + w["pos"][:S] + w["seg"][segs]
        return [layer_norm(s, w["gamma"], w["beta"], 1e-5)[0], (mask == 1).sum(1), s]
    feeds = {"ids": rng.integers(0, V, (B, S)).astype(np.int32), "segs": rng.integers(0, 2, (B, S)).astype(np.int32),
             "mask": np.array([[1, 1, 1, 0, 0], [1, 2, 1, 1, 0]], np.int32)}
    write_case(os.path.join(root, "embed_ln" + ("" if opset == 17 else f"_op{opset}")), [node],
               [("ids", I32, [B, S]), ("segs", I32, [B, S]), ("mask", I32, [B, S])],
               [("y", F32, [B, S, H]), ("mask_index", I32, [B]), ("sum", F32, [B, S, H])], w, feeds, check,
               opset=opset)


def embed_ln_positions(root, rng):
    B, S, H, V, P = 2, 4, 16, 30, 8
    w = embed_tables(rng, V, P, H)
    del w["seg"]
    node = helper.make_node("EmbedLayerNormalization", ["ids", "", "word", "pos", "", "gamma", "beta", "", "pids"],
                            ["y", "mask_index"], domain=MS, name="eln")

    def check(ids, pids):
        s = w["word"][ids].astype(np.float64) + w["pos"][pids]
        return [layer_norm(s, w["gamma"], w["beta"], 1e-12)[0], np.zeros(B)]
    feeds = {"ids": rng.integers(0, V, (B, S)).astype(np.int32), "pids": np.array([[7, 0, 3, 3]], np.int32)}
    write_case(os.path.join(root, "embed_ln_positions"), [node], [("ids", I32, [B, S]), ("pids", I32, [1, S])],
               [("y", F32, [B, S, H]), ("mask_index", I32, [B])], w, feeds, check)


def activations(root, rng):
    B, S, H = 2, 3, 8
    w = {"b": rng.standard_normal(H).astype(np.float32), "b2": rng.standard_normal(2 * H).astype(np.float32)}
    nodes = [helper.make_node("Gelu", ["x"], ["gelu"], domain=MS, name="gelu"),
             helper.make_node("BiasGelu", ["x", "b"], ["bias_gelu"], domain=MS, name="bias_gelu"),
             helper.make_node("FastGelu", ["x"], ["fast_gelu"], domain=MS, name="fast_gelu"),
             helper.make_node("FastGelu", ["x", "b"], ["fast_gelu_bias"], domain=MS, name="fast_gelu_bias"),
             helper.make_node("QuickGelu", ["x"], ["quick_gelu"], domain=MS, name="quick_gelu"),
             helper.make_node("QuickGelu", ["x"], ["quick_gelu_15"], domain=MS, alpha=1.5, name="quick_gelu_15")]

    def check(x):
        x = x.astype(np.float64)
        return [gelu(x), gelu(x + w["b"]), gelu_tanh(x), gelu_tanh(x + w["b"]), x / (1 + np.exp(-1.702 * x)),
                x / (1 + np.exp(-1.5 * x))]
    feeds = {"x": (rng.standard_normal((B, S, H)) * 2).astype(np.float32)}
    outs = [(n.output[0], F32, [B, S, H]) for n in nodes]
    write_case(os.path.join(root, "activations"), nodes, [("x", F32, [B, S, H])], outs, w, feeds, check)


def cuda_only(root, rng):
    B, S, H = 2, 3, 8
    w = {"b": rng.standard_normal(H).astype(np.float32), "b2": rng.standard_normal(2 * H).astype(np.float32)}
    nodes = [helper.make_node("BiasAdd", ["x", "b", "skip"], ["bias_add"], domain=MS, name="bias_add"),
             helper.make_node("BiasSplitGelu", ["x2", "b2"], ["bias_split_gelu"], domain=MS, name="bias_split_gelu")]

    def check(x, skip, x2):
        h2 = x2.astype(np.float64) + w["b2"]
        return [x.astype(np.float64) + w["b"] + skip, h2[..., :H] * gelu(h2[..., H:])]
    feeds = {"x": rng.standard_normal((B, S, H)).astype(np.float32),
             "skip": rng.standard_normal((B, S, H)).astype(np.float32),
             "x2": (rng.standard_normal((B, S, 2 * H)) * 2).astype(np.float32)}
    write_case(os.path.join(root, "cuda_only"), nodes,
               [("x", F32, [B, S, H]), ("skip", F32, [B, S, H]), ("x2", F32, [B, S, 2 * H])],
               [("bias_add", F32, [B, S, H]), ("bias_split_gelu", F32, [B, S, H])], w, feeds, check, ort_cpu=False)


def layernorm_opset14(root, rng):
    B, S, H = 2, 3, 8
    w = {"scale": rng.standard_normal((S, H)).astype(np.float32), "b": rng.standard_normal((S, H)).astype(np.float32)}
    node = helper.make_node("LayerNormalization", ["x", "scale", "b"], ["y", "mean", "inv_std"], axis=1,
                            epsilon=1e-3, name="ln")

    def check(x):
        xr = x.astype(np.float64).reshape(B, -1)
        y, m, inv = layer_norm(xr, w["scale"].ravel(), w["b"].ravel(), 1e-3)
        return [y.reshape(B, S, H), m.reshape(B, 1, 1), inv.reshape(B, 1, 1)]
    feeds = {"x": (rng.standard_normal((B, S, H)) * 3 + 2).astype(np.float32)}
    write_case(os.path.join(root, "layernorm_opset14"), [node], [("x", F32, [B, S, H])],
               [("y", F32, [B, S, H]), ("mean", F32, [B, 1, 1]), ("inv_std", F32, [B, 1, 1])], w, feeds, check,
               opset=14)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "tests/ort_contrib"
    rng = np.random.default_rng(20)
    for make in (skip_ln, skip_ln_ffn, skip_simplified, embed_ln, embed_ln_positions, activations, cuda_only):
        make(root, rng)
    for make in (skip_simplified, embed_ln):  # the reductions' axes as attributes (opset < 13)
        make(root, rng, opset=12)
    layernorm_opset14(root, rng)
    print("wrote", root)


if __name__ == "__main__":
    main()
