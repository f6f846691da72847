#!/usr/bin/env python3
"""make_cases.py — write tests/attention/cases/, the models that exercise kiln's
fused Attention kernel (compiler/ops/attention_kernel.c) for every mask kind.

Each case is a small ONNX model of attention as PyTorch 1.13 exports it
(MatMul(Q, Kᵀ) -> scale -> mask -> [top-k] -> Softmax -> MatMul(·, V), the
head split and merge transposes in the seq-first cases), which kiln's fuse
pass turns into one Attention node of the kind named in CASE/kind, with
random inputs in CASE/test_data_set_0/input_K.pb and their names in
CASE/inputs. There are no reference outputs: run_case.sh makes them with
`kiln run` (Attention's _eval), checks them against the unfused graph's
interpreter, then checks the generated C against them. Sizes are off every
tile (S, T not multiples of the 4/6/12-row query tiles or the 16..128-key
tiles, T > 128 for several key tiles, Dh and Dv from 1 to 128, Dv not a
multiple of the vector width), and the masks include rows masked entirely
(-inf: NaN, as softmax gives; a finite fill: uniform weights). The files are
committed; regenerate with:

    /work/venv/bin/python tests/attention/make_cases.py
"""
import math
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "cases")
F32, BOOL = TensorProto.FLOAT, TensorProto.BOOL
rng = np.random.default_rng(20240611)
NEG_INF = np.float32(-np.inf)
F32_MIN = np.float32(np.finfo(np.float32).min)


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


class Case:
    """One model: graph inputs with their data, nodes, constants."""

    def __init__(self, name, kind):
        self.name, self.kind = name, kind
        self.inputs, self.nodes, self.inits = [], [], []

    def input(self, name, arr):
        self.inputs.append((name, arr))
        return name

    def node(self, op, ins, out, **attrs):
        self.nodes.append(helper.make_node(op, ins, [out] if isinstance(out, str) else out, **attrs))
        return out

    def const(self, name, arr):
        self.inits.append(const(name, arr))
        return name

    def write(self, out, out_shape):
        d = os.path.join(OUT, self.name)
        os.makedirs(os.path.join(d, "test_data_set_0"))
        vi = [helper.make_tensor_value_info(n, F32 if a.dtype == np.float32 else BOOL, list(a.shape))
              for n, a in self.inputs]
        g = helper.make_graph(self.nodes, self.name, vi, [helper.make_tensor_value_info(out, F32, out_shape)],
                              self.inits)
        # I/O names no kernel local shadows (clang -Weverything's -Wshadow)
        onnx.compose.add_prefix_graph(g, "att_", inplace=True)
        m = helper.make_model(g, producer_name="kiln-attention-cases", opset_imports=[helper.make_opsetid("", 14)])
        m.ir_version = 8
        onnx.checker.check_model(m)
        onnx.save(m, os.path.join(d, "model.onnx"))
        for k, (n, a) in enumerate(self.inputs):
            with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % k), "wb") as f:
                f.write(numpy_helper.from_array(a, "att_" + n).SerializeToString())
        with open(os.path.join(d, "inputs"), "w") as f:
            f.write("".join("att_%s\n" % n for n, _ in self.inputs))
        with open(os.path.join(d, "kind"), "w") as f:
            f.write(self.kind + "\n")
        if getattr(self, "no_repeat", False):
            with open(os.path.join(d, "no_repeat"), "w") as f:
                f.write("K V\n")
        if getattr(self, "in_place", False):
            with open(os.path.join(d, "in_place"), "w") as f:
                f.write("Q K V\n")


def rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def qkv(c, lead, s, t, dh, dv, seq_first):
    """Q, K, V inputs and the logical Q, Kᵀ, V they give: [lead, S, Dh] etc.
    seq_first: [S, BH, Dh] inputs with MultiheadAttention's transposes;
    "kt": Kᵀ [lead, Dh, T] itself an input (keys contiguous, read in place)."""
    if seq_first == "kt":
        return (c.input("q", rand(*lead, s, dh)), c.input("kt", rand(*lead, dh, t)),
                c.input("v", rand(*lead, t, dv)))
    if seq_first:
        bh = int(np.prod(lead))
        q = c.input("q", rand(s, bh, dh))
        k = c.input("k", rand(t, bh, dh))
        v = c.input("v", rand(t, bh, dv))
        return (c.node("Transpose", [q], "qt", perm=[1, 0, 2]), c.node("Transpose", [k], "kt", perm=[1, 2, 0]),
                c.node("Transpose", [v], "vt", perm=[1, 0, 2]))
    q = c.input("q", rand(*lead, s, dh))
    k = c.input("k", rand(*lead, t, dh))
    v = c.input("v", rand(*lead, t, dv))
    r = len(lead) + 2
    perm = list(range(r - 2)) + [r - 1, r - 2]
    return q, c.node("Transpose", [k], "kt", perm=perm), v


def finish(c, scores, v, lead, s, dv, seq_first):
    p = c.node("Softmax", [scores], "p", axis=-1)
    seq_first = seq_first is True
    y = c.node("MatMul", [p, v], "pv" if seq_first else "y")
    if seq_first:
        c.node("Transpose", [y], "y", perm=[1, 0, 2])
        c.write("y", [s, int(np.prod(lead)), dv])
    else:
        c.write("y", list(lead) + [s, dv])


def attention(name, kind, lead, s, t, dh, dv, seq_first=False, mask=None, topk=0, scale_on="q", softcap=0,
              softcap_first=False):
    """mask(c, scores, lead, s, t) -> masked scores; scale on "q" (Div(q, √Dh)
    before the MatMul, MultiheadAttention) or "scores" (after, HF); softcap
    > 0: softcap · tanh(scores / softcap) after the mask (Gemma 2, ONNX's
    Attention), masked scores included; softcap_first: before the mask
    (Gemma 2, ONNX Runtime's GroupQueryAttention)."""
    c = Case(name, kind)
    q, kt, v = qkv(c, lead, s, t, dh, dv, seq_first)
    sq = c.const("sqrt_dh", np.array(math.sqrt(dh), np.float32))
    if scale_on == "q":
        q = c.node("Div", [q, sq], "qs")
    sc = c.node("MatMul", [q, kt], "scores")
    if scale_on == "scores":
        sc = c.node("Div", [sc, sq], "scaled")
    if softcap and softcap_first:
        cap = c.const("softcap", np.array(softcap, np.float32))
        sc = c.node("Mul", [c.node("Tanh", [c.node("Div", [sc, cap], "capped_div")], "capped_tanh"), cap], "capped")
    if mask:
        sc = mask(c, sc, lead, s, t)
    if topk:
        sc = topk_nodes(c, sc, lead, s, t, topk)
    if softcap and not softcap_first:
        cap = c.const("softcap", np.array(softcap, np.float32))
        sc = c.node("Mul", [c.node("Tanh", [c.node("Div", [sc, cap], "capped_div")], "capped_tanh"), cap], "capped")
    finish(c, sc, v, lead, s, dv, seq_first)


def packed_qkv(name, kind, b, s, h, dh, seq_first, mask=None, in_place=True):
    """Self-attention on one packed projection x (MultiheadAttention's fused
    in_proj): Slice x's last axis into Q, K, V (V by a negative start), split
    the heads by Reshape and Transpose; the fuse_attention pass reads all three in place
    (CASE/in_place). seq_first: x [S, B, 3E] as MultiheadAttention exports it;
    else x [B, S, 3E] with 4-D heads [B, H, S, Dh]."""
    c = Case(name, kind)
    e = h * dh
    x = c.input("x", rand(*((s, b) if seq_first else (b, s)), 3 * e))
    axis, big = c.const("axis", np.array([-1], np.int64)), c.const("end", np.array([1 << 40], np.int64))
    bounds = [(0, e), (e, 2 * e), (-e, None)]
    parts = []
    for nm, (lo, hi) in zip("qkv", bounds):
        start = c.const(nm + "_start", np.array([lo], np.int64))
        end = big if hi is None else c.const(nm + "_end", np.array([hi], np.int64))
        sl = c.node("Slice", [x, start, end, axis], nm + "_sl")
        dims = [s, b * h, dh] if seq_first else [b, s, h, dh]
        parts.append(c.node("Reshape", [sl, c.const(nm + "_heads", np.array(dims, np.int64))], nm + "_h"))
    qp, kp = ([1, 0, 2], [1, 2, 0]) if seq_first else ([0, 2, 1, 3], [0, 2, 3, 1])
    q = c.node("Transpose", [parts[0]], "qt", perm=qp)
    kt = c.node("Transpose", [parts[1]], "kt", perm=kp)
    v = c.node("Transpose", [parts[2]], "vt", perm=qp)
    q = c.node("Div", [q, c.const("sqrt_dh", np.array(math.sqrt(dh), np.float32))], "qs")
    sc = c.node("MatMul", [q, kt], "scores")
    lead = [b * h] if seq_first else [b, h]
    if mask:
        sc = mask(c, sc, lead, s, s)
    pv = c.node("MatMul", [c.node("Softmax", [sc], "p", axis=-1), v], "pv")
    c.node("Transpose", [pv], "y", perm=qp)
    c.in_place = in_place
    c.write("y", [s, b * h, dh] if seq_first else [b, s, h, dh])


# ---- masks, as the exports write them ------------------------------------------------

def add_const(values):
    """Add(Mul(scores, 1.0), constant mask): MultiheadAttention's attn_mask."""
    def m(c, sc, lead, s, t):
        one = c.const("one", np.array(1.0, np.float32))
        sc = c.node("Mul", [sc, one], "scores_1")
        return c.node("Add", [sc, c.const("mask", values(s, t))], "masked")
    return m


def causal_values(s, t):
    """-inf above the diagonal that ends at the last key (offset T - S)."""
    i, j = np.arange(s)[:, None], np.arange(t)[None, :]
    return np.where(j > i + (t - s), NEG_INF, np.float32(0)).astype(np.float32)


def causal_where(c, sc, lead, s, t):
    """masked_fill(triu(ones, 1 + T - S).bool(), -inf): a bool causal mask."""
    i, j = np.arange(s)[:, None], np.arange(t)[None, :]
    cm = c.const("causal", j > i + (t - s))
    return c.node("Where", [cm, c.const("fill", np.array(-np.inf, np.float32)), sc], "masked")


def strided_values(stride):
    """The Sparse Transformer's strided pattern (Child et al. 2019), causal:
    query i sees key j <= i when i - j < stride or (i - j) % stride == 0."""
    def v(s, t):
        i, j = np.arange(s)[:, None], np.arange(t)[None, :]
        ok = (j <= i) & (((i - j) < stride) | ((i - j) % stride == 0))
        return np.where(ok, np.float32(0), NEG_INF).astype(np.float32)
    return v


def finite_values(s, t):
    """HF-style finfo.min, a local band, and rows 2 and 5 masked entirely
    (finite: their softmax is uniform, so nothing may be skipped there)."""
    i, j = np.arange(s)[:, None], np.arange(t)[None, :]
    m = np.where(np.abs(i * 4 - j) < 6, np.float32(0), F32_MIN).astype(np.float32)
    m[2, :] = F32_MIN
    m[5, :] = F32_MIN
    return m


def bool_keep_const(c, sc, lead, s, t):
    """torch.where(keep, scores, -1e9) with a constant keep: row 3 keeps nothing."""
    i, j = np.arange(s)[:, None], np.arange(t)[None, :]
    keep = (j % 3 != 1) & (j <= 2 * i + 4)
    keep[3, :] = False
    return c.node("Where", [c.const("keep", keep), sc, c.const("fill", np.array(-1e9, np.float32))], "masked")


def padding_additive(c, sc, lead, s, t):
    """key_padding_mask as MultiheadAttention exports it: Where(pad, -inf, 0),
    Mul 1.0, Add. Batch 0 pads keys >= 80 (whole key tiles are skipped at run
    time), batch 1 pads every key (NaN rows), the rest pad a few."""
    pad = np.zeros((lead[0], 1, 1, t), bool)
    pad[0, ..., 80:] = True
    if lead[0] > 1:
        pad[1] = True
    for b in range(2, lead[0]):
        pad[b, ..., t - 3:] = True
    m = c.input("pad", pad)
    add = c.node("Where", [m, c.const("ninf", np.array(-np.inf, np.float32)),
                            c.const("zero", np.array(0.0, np.float32))], "pad_add")
    add = c.node("Mul", [add, c.const("one_m", np.array(1.0, np.float32))], "pad_add_1")
    sc = c.node("Mul", [sc, c.const("one", np.array(1.0, np.float32))], "scores_1")
    return c.node("Add", [sc, add], "masked")


def padding_bool(c, sc, lead, s, t):
    """masked_fill(pad[:, None, None, :], -inf) on a runtime bool [B,1,1,T]."""
    pad = np.zeros((lead[0], 1, 1, t), bool)
    pad[0, ..., 20:] = True
    m = c.input("pad", pad)
    return c.node("Where", [m, c.const("ninf", np.array(-np.inf, np.float32)), sc], "masked")


def additive_runtime(c, sc, lead, s, t):
    """A runtime float mask [lead, S, T]: random biases, -inf entries, and
    row 4 of head 0 all -inf (NaN)."""
    m = rng.standard_normal((*lead, s, t)).astype(np.float32)
    m[rng.random(m.shape) < 0.3] = NEG_INF
    m[(0,) * len(lead) + (4,)] = NEG_INF
    return c.node("Add", [c.input("mask", m), sc], "masked")


def bool_runtime(c, sc, lead, s, t):
    """masked_fill(mask, -1e4) on a runtime bool [lead[0], 1, S, T], applied
    after Not (Where(Not(m), scores, fill): keep where m)."""
    keep = rng.random((lead[0], 1, s, t)) < 0.6
    m = c.input("keep", keep)
    nt = c.node("Not", [m], "masked_where")
    return c.node("Where", [nt, c.const("fill", np.array(-1e4, np.float32)), sc], "masked")


def fill_runtime(c, sc, lead, s, t):
    """attn.masked_fill(mask == 0, -1e9) on a runtime bool [lead[0], 1, S, T]
    (the Explicit Sparse Transformer's mask before its top-k)."""
    m = c.input("drop", rng.random((lead[0], 1, s, t)) < 0.25)
    return c.node("Where", [m, c.const("fill", np.array(-1e9, np.float32)), sc], "masked")


# ---- top-k --------------------------------------------------------------------------

def topk_nodes(c, sc, lead, s, t, k):
    """The Explicit Sparse Transformer's code as exported: v, _ = topk(x, k);
    vk = v[..., -1].unsqueeze(-1).expand_as(x); x.masked_fill(x < vk, -1e18)."""
    r = len(lead) + 2
    vals = c.node("TopK", [sc, c.const("topk_k", np.array([k], np.int64))], ["tk_vals", "tk_idx"], axis=-1)[0]
    last = c.node("Gather", [vals, c.const("minus1", np.array(-1, np.int64))], "tk_last", axis=r - 1)
    kth = c.node("Unsqueeze", [last, c.const("axes", np.array([-1], np.int64))], "tk_kth")
    kth = c.node("Expand", [kth, c.const("shape", np.array(list(lead) + [s, t], np.int64))], "tk_kth_x")
    lt = c.node("Less", [sc, kth], "tk_lt")
    lt = c.node("Cast", [lt], "tk_lt_b", to=BOOL)
    return c.node("Where", [lt, c.const("tk_fill", np.array(-1e18, np.float32)), sc], "tk_masked")


def topk_slice(c, sc, lead, s, t, k):
    """The k-th value by Slice and Greater(kth, x), fill -inf."""
    vals = c.node("TopK", [sc, c.const("topk_k", np.array([k], np.int64))], ["tk_vals", "tk_idx"], axis=-1)[0]
    kth = c.node("Slice", [vals, c.const("st", np.array([k - 1], np.int64)), c.const("en", np.array([k], np.int64)),
                           c.const("ax", np.array([-1], np.int64))], "tk_kth")
    gt = c.node("Greater", [kth, sc], "tk_gt")
    return c.node("Where", [gt, c.const("tk_fill", np.array(-np.inf, np.float32)), sc], "tk_masked")


def repeat_kv(c, x, name, b, hkv, g, t, d):
    """Hugging Face's repeat_kv as PyTorch 1.13 exports it: x [B, Hkv, T, D]
    -> Unsqueeze(2) -> Expand [B, Hkv, g, T, D] -> Reshape [B, Hkv·g, T, D]."""
    u = c.node("Unsqueeze", [x, c.const(name + "_axis", np.array([2], np.int64))], name + "_u")
    e = c.node("Expand", [u, c.const(name + "_rep", np.array([b, hkv, g, t, d], np.int64))], name + "_e")
    return c.node("Reshape", [e, c.const(name + "_heads", np.array([b, hkv * g, t, d], np.int64))], name + "_r")


def gqa(name, kind, b, h, hkv, s, t, d, mask=None):
    """Grouped-query attention as HF's Llama writes it: Q [B, H, S, D], K and
    V [B, Hkv, T, D] repeated to H heads (repeat_kv), then K transposed; the
    fused Attention reads each kv head in place for its H/Hkv query heads
    (CASE/no_repeat: no Expand in the C)."""
    c = Case(name, kind)
    g = h // hkv
    q = c.input("q", rand(b, h, s, d))
    k = repeat_kv(c, c.input("k", rand(b, hkv, t, d)), "k", b, hkv, g, t, d)
    v = repeat_kv(c, c.input("v", rand(b, hkv, t, d)), "v", b, hkv, g, t, d)
    kt = c.node("Transpose", [k], "kt", perm=[0, 1, 3, 2])
    sc = c.node("MatMul", [q, kt], "scores")
    sc = c.node("Div", [sc, c.const("sqrt_dh", np.array(math.sqrt(d), np.float32))], "scaled")
    if mask:
        sc = mask(c, sc, [b, h], s, t)
    c.no_repeat = True
    finish(c, sc, v, [b, h], s, d, False)


def gqa_broadcast(name, kind, b, h, hkv, s, t, d):
    """The MatMul-broadcast form of grouped heads: Q [B, H, S, D] reshaped to
    [B, Hkv, H/Hkv, S, D], K and V [B, Hkv, 1, T, D] (a dim of 1 that MatMul
    broadcasts), the output reshaped back."""
    c = Case(name, kind)
    g = h // hkv
    q = c.input("q", rand(b, h, s, d))
    q5 = c.node("Reshape", [q, c.const("q5", np.array([b, hkv, g, s, d], np.int64))], "q_groups")
    k = c.input("k", rand(b, hkv, 1, t, d))
    v = c.input("v", rand(b, hkv, 1, t, d))
    kt = c.node("Transpose", [k], "kt", perm=[0, 1, 2, 4, 3])
    sc = c.node("MatMul", [q5, kt], "scores")
    sc = c.node("Mul", [sc, c.const("scale", np.array(1 / math.sqrt(d), np.float32))], "scaled")
    p = c.node("Softmax", [sc], "p", axis=-1)
    y5 = c.node("MatMul", [p, v], "y5")
    c.node("Reshape", [y5, c.const("y4", np.array([b, h, s, d], np.int64))], "y")
    c.no_repeat = True
    c.write("y", [b, h, s, d])


def main():
    if os.path.exists(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    attention("none_odd", "none", [1, 3], 13, 37, 5, 7)
    attention("none_seqfirst_tiles", "none", [2, 2], 20, 200, 64, 40, seq_first=True)
    attention("none_dh128", "none", [2], 9, 130, 128, 128, scale_on="scores")
    attention("none_dh1_t1", "none", [3], 3, 1, 1, 1)
    attention("none_rank2", "none", [], 5, 9, 3, 2)
    attention("none_s1", "none", [1, 2], 1, 33, 24, 24, scale_on="scores")
    attention("kt_input", "none", [2, 2], 11, 41, 9, 13, seq_first="kt")
    attention("kt_input_causal", "causal", [1, 3], 19, 19, 16, 16, seq_first="kt", mask=add_const(causal_values))
    attention("k_large_tiles", "none", [1, 1], 3, 520, 128, 5)
    attention("causal_seqfirst", "causal", [2, 2], 37, 37, 16, 16, seq_first=True,
              mask=add_const(causal_values))
    attention("causal_offset_where", "causal", [1, 2], 5, 21, 8, 9, mask=causal_where)
    attention("causal_long", "causal", [1], 150, 150, 32, 32, mask=add_const(causal_values), scale_on="scores")
    attention("static_strided", "static", [1, 2], 70, 70, 8, 8, mask=add_const(strided_values(8)))
    attention("static_finite_rows", "static", [2], 12, 50, 16, 20, mask=add_const(finite_values),
              scale_on="scores")
    attention("static_bool_keep", "static", [1, 1], 9, 40, 6, 11, mask=bool_keep_const)
    attention("padding_additive", "padding", [3, 2], 6, 200, 32, 16, mask=padding_additive)
    attention("padding_bool", "padding", [2, 1], 17, 33, 16, 3, mask=padding_bool, scale_on="scores")
    attention("additive_runtime", "additive", [1, 2], 11, 45, 12, 12, mask=additive_runtime)
    attention("bool_runtime", "bool", [2, 1], 7, 19, 4, 17, mask=bool_runtime, scale_on="scores")
    attention("topk_masked", "bool", [1, 2], 10, 23, 8, 8, mask=fill_runtime, topk=5, scale_on="scores")
    attention("topk_causal", "causal", [2], 14, 14, 4, 4, mask=add_const(causal_values), topk=3)
    c = Case("topk_slice", "none")
    q, kt, v = qkv(c, [2], 4, 40, 6, 6, False)
    sc = c.node("MatMul", [q, kt], "scores")
    finish(c, topk_slice(c, sc, [2], 4, 40, 1), v, [2], 4, 6, False)
    packed_qkv("qkv_packed_seqfirst", "none", 1, 16, 4, 16, True)
    # batch 2, seq-first: the heads of both batches share one axis whose
    # stride is not uniform in x; no one-axis range of a Reshape gives it
    packed_qkv("qkv_packed_batch2", "none", 2, 16, 4, 16, True, in_place=False)
    packed_qkv("qkv_packed_causal", "causal", 1, 21, 3, 8, False, mask=add_const(causal_values))
    # grouped-query attention (SmolLM2: 9 query heads, 3 kv heads, Dh 64)
    gqa("gqa_h9_kv3_causal", "causal", 1, 9, 3, 20, 20, 64, mask=add_const(causal_values))
    gqa("gqa_h4_kv2", "none", 2, 4, 2, 13, 29, 16)
    gqa("gqa_h4_kv2_padding", "padding", 2, 4, 2, 6, 33, 8, mask=padding_bool)
    gqa("gqa_mqa_h4_kv1", "causal", 1, 4, 1, 9, 9, 32, mask=add_const(causal_values))
    gqa_broadcast("gqa_broadcast_h6_kv2", "none", 1, 6, 2, 7, 18, 16)
    # softcap: masked keys weigh exp(-softcap - max), so no block is skipped
    # (a padding row masked entirely is uniform, not NaN)
    attention("softcap_none", "none", [2, 3], 13, 37, 8, 7, scale_on="scores", softcap=30.0)
    attention("softcap_causal", "causal", [1, 2], 21, 70, 16, 16, mask=add_const(causal_values), softcap=2.0)
    attention("softcap_padding", "padding", [3, 2], 6, 200, 32, 16, mask=padding_additive, softcap=5.0)
    # before the mask: masked keys stay masked, every skip kept
    attention("softcap_first_causal", "causal", [1, 2], 21, 70, 16, 16, mask=add_const(causal_values), softcap=2.0,
              scale_on="scores", softcap_first=True)
    attention("softcap_first_padding", "padding", [3, 2], 6, 200, 32, 16, mask=padding_additive, softcap=5.0,
              softcap_first=True)


if __name__ == "__main__":
    main()
