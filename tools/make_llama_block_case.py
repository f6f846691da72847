"""make_llama_block_case.py — one Llama decoder block in Lua (kiln's nn
library: nn.rms_norm, nn.multi_head_attention with kv_heads and rope,
nn.swiglu) against a numpy reference of Hugging Face's LlamaDecoderLayer,
for kiln check (tests/generated/llama_block/). Run with the venv's python:

    build/venv/bin/python tools/make_llama_block_case.py tests/generated/llama_block

The block has SmolLM2's head grouping (3 query heads per kv head) at a
small width: d 96, 6 heads of 16, 2 kv heads, d_ff 128, 7 tokens at runtime
positions 5 .. 11 (a prefill after 5 cached tokens), theta 1e5, eps 1e-5,
causal. The script names its params as a GGUF file does (blk.0.attn_q,
ffn_gate, ...) and rotates adjacent pairs (interleaved = true), as llama.cpp
does; its Q and K weights are Hugging Face's permuted the way
convert_hf_to_gguf.py permutes them, while the reference rotates halves
(rotate_half) with the unpermuted weights — so the case also checks that
the permutation and the interleaved pairs are the same rotation. The
weights are written as a .safetensors file by hand (8-byte header length,
JSON header, raw little-endian data)."""
import json
import math
import os
import struct
import sys

import numpy as np
from onnx import numpy_helper

D, H, HKV, DH, DFF, S, THETA, EPS, MAX_POS = 96, 6, 2, 16, 128, 7, 1e5, 1e-5, 32
START = 5


def rms_norm(x, w):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * w


def rope_tables():
    """cos, sin [MAX_POS, DH/2] as x:rope builds them: in double, rounded to f32."""
    i = np.arange(DH // 2, dtype=np.float64)
    ang = np.arange(MAX_POS, dtype=np.float64)[:, None] * (THETA ** (-2.0 * i / DH))[None, :]
    return np.cos(ang).astype(np.float32).astype(np.float64), np.sin(ang).astype(np.float32).astype(np.float64)


def rotate_half_rope(x, pos, cos, sin):
    """HF's apply_rotary_pos_emb on [B, heads, S, DH]."""
    c = np.concatenate([cos[pos], cos[pos]], -1)[:, None]
    s = np.concatenate([sin[pos], sin[pos]], -1)[:, None]
    half = DH // 2
    rh = np.concatenate([-x[..., half:], x[..., :half]], -1)
    return x * c + rh * s


def reference(x, pos, w):
    x = x.astype(np.float64)
    w = {k: v.astype(np.float64) for k, v in w.items()}
    cos, sin = rope_tables()
    hn = rms_norm(x, w["attn_norm"])
    q = (hn @ w["q"].T).reshape(1, S, H, DH).transpose(0, 2, 1, 3)
    k = (hn @ w["k"].T).reshape(1, S, HKV, DH).transpose(0, 2, 1, 3)
    v = (hn @ w["v"].T).reshape(1, S, HKV, DH).transpose(0, 2, 1, 3)
    q, k = rotate_half_rope(q, pos, cos, sin), rotate_half_rope(k, pos, cos, sin)
    k, v = np.repeat(k, H // HKV, axis=1), np.repeat(v, H // HKV, axis=1)  # repeat_kv
    sc = q @ k.transpose(0, 1, 3, 2) / math.sqrt(DH)
    sc = np.where(np.triu(np.ones((S, S), bool), 1), -np.inf, sc)
    p = np.exp(sc - sc.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    ctx = (p @ v).transpose(0, 2, 1, 3).reshape(1, S, D)
    h = x + ctx @ w["o"].T
    hn = rms_norm(h, w["ffn_norm"])
    g, u = hn @ w["gate"].T, hn @ w["up"].T
    return (h + (g / (1 + np.exp(-g)) * u) @ w["down"].T).astype(np.float32)


def gguf_permute(wt, heads):
    """convert_hf_to_gguf.py's permute of Q and K rows: within each head, the
    halves' rows interleaved, so adjacent-pair rotation equals rotate_half."""
    return wt.reshape(heads, 2, wt.shape[0] // heads // 2, *wt.shape[1:]).swapaxes(1, 2).reshape(wt.shape)


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, a in tensors.items():
        b = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, sort_keys=True).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


SCRIPT = """-- One Llama decoder block (tools/make_llama_block_case.py): RMSNorm,
-- grouped-query attention (6 heads, 2 kv heads) with rotary embedding on
-- runtime positions, SwiGLU; GGUF names and GGUF's adjacent-pair rotation
local nn = require "nn"
weights("model.safetensors")
local x = input{"x", {1, %(s)d, %(d)d}}
local pos = input{"pos", {1, %(s)d}, "i64"}
local attn = {query = "attn_q", key = "attn_k", value = "attn_v", out = "attn_output"}
local h = x + nn.multi_head_attention("blk.0", nn.rms_norm("blk.0.attn_norm", x, {eps = 1e-5}),
  {heads = %(h)d, kv_heads = %(hkv)d, names = attn, bias = false, mask = "causal",
   rope = {positions = pos, theta = 1e5, max_pos = %(max_pos)d, interleaved = true}})
local ffn = {gate = "ffn_gate", up = "ffn_up", down = "ffn_down"}
output(h + nn.swiglu("blk.0", nn.rms_norm("blk.0.ffn_norm", h, {eps = 1e-5}), {d_ff = %(dff)d, names = ffn}), "y")
"""


def main():
    out = sys.argv[1]
    rng = np.random.default_rng(11)
    lin = lambda o, i: (rng.uniform(-1, 1, (o, i)) / math.sqrt(i)).astype(np.float32)
    w = {"q": lin(H * DH, D), "k": lin(HKV * DH, D), "v": lin(HKV * DH, D), "o": lin(D, H * DH),
         "gate": lin(DFF, D), "up": lin(DFF, D), "down": lin(D, DFF),
         "attn_norm": (1 + 0.2 * rng.standard_normal(D)).astype(np.float32),
         "ffn_norm": (1 + 0.2 * rng.standard_normal(D)).astype(np.float32)}
    x = rng.standard_normal((1, S, D)).astype(np.float32)
    pos = np.arange(START, START + S, dtype=np.int64)[None, :]
    y = reference(x, pos, w)
    os.makedirs(os.path.join(out, "test_data_set_0"), exist_ok=True)
    write_safetensors(os.path.join(out, "model.safetensors"), {
        "blk.0.attn_norm.weight": w["attn_norm"], "blk.0.ffn_norm.weight": w["ffn_norm"],
        "blk.0.attn_q.weight": gguf_permute(w["q"], H), "blk.0.attn_k.weight": gguf_permute(w["k"], HKV),
        "blk.0.attn_v.weight": w["v"], "blk.0.attn_output.weight": w["o"],
        "blk.0.ffn_gate.weight": w["gate"], "blk.0.ffn_up.weight": w["up"], "blk.0.ffn_down.weight": w["down"]})
    with open(os.path.join(out, "model.lua"), "w") as f:
        f.write(SCRIPT % {"s": S, "d": D, "h": H, "hkv": HKV, "max_pos": MAX_POS, "dff": DFF})
    for k, (name, a) in enumerate([("x", x), ("pos", pos)]):
        with open(os.path.join(out, "test_data_set_0", f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, name).SerializeToString())
    with open(os.path.join(out, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(y, "y").SerializeToString())


if __name__ == "__main__":
    main()
