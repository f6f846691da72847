#!/usr/bin/env python3
"""make_ort_attention_cases.py — write tests/ort_attention/: small models of
ONNX Runtime's com.microsoft attention ops (Attention with packed QKV
weights, MultiHeadAttention, GroupQueryAttention) as its transformer
optimizer and onnxruntime-genai write them, each in the ONNX backend-test
layout with ONNX Runtime's outputs (CPU, one thread) for random inputs, and
the bad-input cases of compiler/frontend/onnx_attention.c's refusals in tests/bad/.
kiln imports each op as the chain of standard ops that defines it and fuses
the chain into its Attention op (compiler/frontend/onnx_attention.c); `kiln check`
compares the generated C and the interpreter with ONNX Runtime. The files
are committed; regenerate with:

    /tmp/venv/bin/python tools/make_ort_attention_cases.py
"""
import os
import shutil

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests")
OUT = os.path.join(ROOT, "ort_attention")
BAD = os.path.join(ROOT, "bad")
rng = np.random.default_rng(20261128)
MS = "com.microsoft"
TYPES = {np.float32: TensorProto.FLOAT, np.int32: TensorProto.INT32, np.int64: TensorProto.INT64}


def rand(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def model(name, node, inputs, outputs, inits=(), opset=17):
    """inputs: (name, array) fed at run time; outputs: (name, rank) names."""
    vi = [helper.make_tensor_value_info(n, TYPES[a.dtype.type], list(a.shape)) for n, a in inputs]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs]
    g = helper.make_graph([node], name, vi, outs, [numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, producer_name="kiln-ort-attention-cases",
                          opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])
    m.ir_version = 8
    return m


def ort_run(m, inputs):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(None, dict(inputs))


def write(name, m, inputs):
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    outs = ort_run(m, inputs)
    for o, val in zip(m.graph.output, outs):  # the shapes ORT gives, declared
        o.type.tensor_type.shape.Clear()
        for dim in val.shape:
            o.type.tensor_type.shape.dim.add().dim_value = dim
    onnx.save(m, os.path.join(d, "model.onnx"))
    for k, (n, a) in enumerate(inputs):
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % k), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    for k, (o, a) in enumerate(zip(m.graph.output, outs)):
        with open(os.path.join(d, "test_data_set_0", "output_%d.pb" % k), "wb") as f:
            f.write(numpy_helper.from_array(a, o.name).SerializeToString())


def mha(name, b, s, t, n, h, bias=False, mask=None, attn_bias=False, past=0, uni=0, bnsh=False):
    """MultiHeadAttention on separate Q [B,S,N·H], K, V [B,T,N·H] (bnsh: K,
    V already [B,N,T,H], cross-attention's projected memory); mask: "raw"
    (B, T) 0/1 int32, "lengths" (B) int32."""
    d = n * h
    kv = (b, n, t, h) if bnsh else (b, t, d)
    ins = [("query", rand(b, s, d)), ("key", rand(*kv)), ("value", rand(*kv))]
    names = ["query", "key", "value", "", "", "", "", ""]
    if bias:
        ins.append(("bias", rand(3 * d, scale=0.5)))
        names[3] = "bias"
    total = past + t
    if mask == "raw":
        m = (rng.random((b, total)) < 0.8).astype(np.int32)
        m[:, 0] = 1
        ins.append(("key_padding_mask", m))
        names[4] = "key_padding_mask"
    elif mask == "lengths":
        ins.append(("key_padding_mask", rng.integers(1, total + 1, b).astype(np.int32)))
        names[4] = "key_padding_mask"
    if attn_bias:
        ins.append(("attention_bias", rand(1, n, s, total)))
        names[5] = "attention_bias"
    outs = ["output"]
    if past:
        ins += [("past_key", rand(b, n, past, h)), ("past_value", rand(b, n, past, h))]
        names[6:8] = ["past_key", "past_value"]
        outs += ["present_key", "present_value"]
    while names and not names[-1]:
        names.pop()
    node = helper.make_node("MultiHeadAttention", names, outs, domain=MS, num_heads=n, unidirectional=uni)
    write(name, model(name, node, ins, outs), ins)


def attention(name, b, s, n, h, mask=None, past=0, uni=0, sizes=None):
    """com.microsoft Attention: input [B,S,Din] · weights [Din, 3D] + bias;
    mask: "raw" (B, T) int32, "lengths" (B), "left" (2B) ends then starts."""
    din, d = 2 * n * h, n * h
    ins = [("input", rand(b, s, din))]
    inits = [("weights", rand(din, 3 * d, scale=0.3)), ("bias", rand(3 * d, scale=0.3))]
    names = ["input", "weights", "bias"]
    total = past + s
    if mask:
        if mask == "raw":
            m = (rng.random((b, total)) < 0.75).astype(np.int32)
            m[:, 0] = 1
        elif mask == "lengths":
            m = rng.integers(1, total + 1, b).astype(np.int32)
        else:
            starts = rng.integers(0, total // 2, b)
            m = np.concatenate([np.full(b, total), starts]).astype(np.int32)
        ins.append(("mask_index", m))
        names.append("mask_index")
    outs = ["output"]
    if past:
        if not mask:
            names.append("")
        ins.append(("past", rand(2, b, n, past, h)))
        names.append("past")
        outs.append("present")
    attrs = dict(num_heads=n, unidirectional=uni)
    if sizes:
        attrs["qkv_hidden_sizes"] = sizes
    node = helper.make_node("Attention", names, outs, domain=MS, **attrs)
    write(name, model(name, node, ins, outs, inits), ins)


def rotary_caches(max_pos, h):
    inv = 1.0 / (10000 ** (np.arange(0, h, 2) / h))
    ang = np.arange(max_pos)[:, None] * inv[None, :]
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def gqa(name, b, s, n, nkv, h, past=0, rotary=False, packed=False, softcap=0.0, interleaved=0):
    """GroupQueryAttention as onnxruntime-genai writes it: Q, K, V (or one
    packed QKV), past and present in separate buffers, seqlens_k = total - 1
    for every batch, total_sequence_length a constant."""
    total = past + s
    if packed:
        ins = [("query", rand(b, s, (n + 2 * nkv) * h))]
        names = ["query", "", ""]
    else:
        ins = [("query", rand(b, s, n * h)), ("key", rand(b, s, nkv * h)), ("value", rand(b, s, nkv * h))]
        names = ["query", "key", "value"]
    outs = ["output"]
    if past:
        ins += [("past_key", rand(b, nkv, past, h)), ("past_value", rand(b, nkv, past, h))]
        names += ["past_key", "past_value"]
        outs += ["present_key", "present_value"]
    else:
        names += ["", ""]
    ins.append(("seqlens_k", np.full(b, total - 1, np.int32)))
    names += ["seqlens_k", "total_sequence_length"]
    inits = [("total_sequence_length", np.array(total, np.int32))]
    if rotary:
        cos, sin = rotary_caches(64, h)
        inits += [("cos_cache", cos), ("sin_cache", sin)]
        names += ["cos_cache", "sin_cache"]
    attrs = dict(num_heads=n, kv_num_heads=nkv, do_rotary=int(rotary), rotary_interleaved=interleaved)
    if softcap:
        attrs["softcap"] = softcap
    node = helper.make_node("GroupQueryAttention", names, outs, domain=MS, **attrs)
    write(name, model(name, node, ins, outs, inits), ins)


def bad(name, node, inputs, expect, opset=17):
    """tests/bad/NAME.onnx + .expect: kiln must refuse with `expect`. ONNX's
    Attention needs opset 23, which kiln refuses as a whole until its opset
    cap is per op: that refusal is the accepted alternative meanwhile."""
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(shape)) for n, shape in inputs]
    g = helper.make_graph([node], name, vi, [helper.make_tensor_value_info(node.output[0], TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])
    m.ir_version = 10 if opset > 17 else 8
    onnx.save(m, os.path.join(BAD, name + ".onnx"))
    also = "also: the model uses ONNX opset %d; expected an opset from 1 to 17\n" % opset if opset > 17 else ""
    with open(os.path.join(BAD, name + ".expect"), "w") as f:
        f.write("compile @ -o @OUT\n%s\n%s" % (expect, also))


def bad_cases():
    qkv4 = [("q", [1, 2, 3, 4]), ("k", [1, 2, 3, 4]), ("v", [1, 2, 3, 4])]
    bad("attention_onnx_past_alone", helper.make_node("Attention", ["q", "k", "v", "", "pk"], ["y"]),
        qkv4 + [("pk", [1, 2, 3, 4])], "node 'Attention_0' (Attention): past_key, past_value, present_key", 23)
    bad("attention_onnx_heads_3d", helper.make_node("Attention", ["q", "k", "v"], ["y"], q_num_heads=4),
        qkv4, "q_num_heads 4 and kv_num_heads 0; expected both", 23)
    bad("attention_onnx_mode", helper.make_node("Attention", ["q", "k", "v"], ["y", "", "", "qk"],
                                                qk_matmul_output_mode=4),
        qkv4, "qk_matmul_output_mode 4, softcap 0; expected a mode from 0 to 3", 24)
    x3 = [("x", [1, 3, 8])]
    bad("attention_ort_rotary", helper.make_node("Attention", ["x", "x"], ["y"], domain=MS, num_heads=2,
                                                 do_rotary=1),
        x3, "(com.microsoft Attention): attribute do_rotary is 1; kiln reads this op only with its default 0")
    bad("attention_ort_gqa_window", helper.make_node("GroupQueryAttention", ["x", "x", "x", "", "", "x", "x"], ["y"],
                                                     domain=MS, num_heads=2, kv_num_heads=1, local_window_size=4),
        x3, "attribute local_window_size is 4; kiln reads this op only with its default -1")
    bad("attention_ort_mha_unknown_attr", helper.make_node("MultiHeadAttention", ["x", "x", "x"], ["y"], domain=MS,
                                                           num_heads=2, is_packed=1),
        x3, "attribute 'is_packed' is not one kiln reads")
    bad("attention_ort_other_op", helper.make_node("DecoderMaskedMultiHeadAttention", ["x", "x", "x"], ["y"],
                                                   domain=MS, num_heads=2),
        x3, "node 'DecoderMaskedMultiHeadAttention_0' (DecoderMaskedMultiHeadAttention): domain 'com.microsoft' is "
            "not supported")


def main():
    if os.path.exists(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    mha("mha_bias_padding", 2, 5, 7, 4, 8, bias=True, mask="raw")
    mha("mha_lengths_attn_bias", 2, 6, 6, 2, 16, mask="lengths", attn_bias=True)
    mha("mha_causal_past", 1, 3, 3, 4, 8, bias=True, past=5, uni=1)
    mha("mha_causal_prompt", 1, 24, 24, 4, 16, uni=1)
    attention("attention_raw_mask", 2, 6, 3, 8, mask="raw")
    attention("attention_lengths", 2, 5, 2, 8, mask="lengths", sizes=[16, 16, 16])
    attention("attention_left_padding", 2, 5, 2, 8, mask="left")
    attention("attention_gpt2_past", 1, 2, 2, 8, past=4, uni=1)
    attention("attention_gpt2_prompt", 1, 20, 4, 16, uni=1)
    gqa("gqa_prompt_rotary", 1, 7, 4, 2, 16, rotary=True)
    gqa("gqa_decode_rotary", 2, 1, 6, 2, 16, past=5, rotary=True, interleaved=1)
    gqa("gqa_packed_softcap", 1, 5, 4, 1, 16, past=3, packed=True, softcap=2.5)
    gqa("gqa_prompt_plain", 1, 24, 8, 2, 16)
    mha("mha_cross_bnsh", 2, 5, 9, 2, 16, bias=True, mask="raw", bnsh=True)
    bad_cases()


if __name__ == "__main__":
    main()
