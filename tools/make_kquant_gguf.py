#!/usr/bin/env python3
"""make_kquant_gguf.py [OUT_DIR] — write kiln's K-quant GGUF fixture
(tests/gguf/kquant.gguf) and the reference outputs of
tests/gguf/kquant/model.lua, deterministically, with the PyPI `gguf`
package's GGUFWriter and numpy (run it with build/venv/bin/python):

  kquant.gguf  random f32 matrices (seed 28) quantized here, in numpy, to
               ggml's K-quant layouts (compiler/ir/blockquant.h):
                 blk.0.ffn_up.weight    Q4_K [64, 512]
                 blk.0.ffn_gate.weight  Q5_K [48, 256]
                 blk.0.ffn_down.weight  Q6_K [32, 768]
                 token_embd.weight      Q6_K [40, 256]  (gathered and tied)
                 blk.0.attn_k.weight    Q5_0 [32, 640]  (the gguf package's
                 blk.0.attn_v.weight    Q5_1 [16, 640]   quantizer; 640 is not
                                        a multiple of 256, so llama.cpp writes
                                        Q5_0 where a K-quant does not fit)
                 blk.0.attn_q.weight    Q2_K [16, 256]  raw random blocks: a
                                        type kiln refuses, by name
               general.alignment 32.
  kquant/test_data_set_0  inputs x [3,512], xg [3,256], xd [2,768], ids [4], xa [2,640]
               and the outputs model.lua makes, from the blocks dequantized
               by the gguf package's own numpy code (not kiln's), products
               in float64 rounded to f32.

The quantizer is a plain one (per sub-block min/max, then the sub-block
scales quantized against the super-block's d and dmin), not ggml's
iterative search: what matters is that the blocks are valid, cover the
layouts' bits, and that the gguf package reads back values close to the
originals, which this script asserts (every value within its sub-block's
quantization step)."""
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q
from gguf.quants import dequantize, quantize
from onnx import numpy_helper


def f16(a):
    return np.asarray(a, np.float16).reshape(-1).view(np.uint8).reshape(*np.shape(a), 2)


def pack_scales(sc, mn):
    """Q4_K/Q5_K's 12 bytes from 8 6-bit scales and mins a super-block
    ([nb, 8] each)."""
    k = np.zeros((sc.shape[0], 12), np.uint8)
    k[:, 0:4] = sc[:, 0:4] | (sc[:, 4:8] >> 4) << 6
    k[:, 4:8] = mn[:, 0:4] | (mn[:, 4:8] >> 4) << 6
    k[:, 8:12] = (sc[:, 4:8] & 15) | (mn[:, 4:8] & 15) << 4
    return k


def quantize_q45k(x, bits):
    """x [rows, cols] -> Q4_K (bits 4) or Q5_K (bits 5) blocks [rows, nb*bb]."""
    rows, cols = x.shape
    top = (1 << bits) - 1
    sub = x.reshape(-1, 8, 32).astype(np.float64)  # [nb, 8, 32]
    lo = np.minimum(sub.min(axis=2), 0)  # a sub-block's min, <= 0: x = d1*q - m1 with m1 = -lo
    step = (sub.max(axis=2) - lo) / top
    d = np.maximum(step.max(axis=1), 1e-12) / 63
    dmin = np.maximum((-lo).max(axis=1), 1e-12) / 63
    d, dmin = d.astype(np.float16), dmin.astype(np.float16)
    sc = np.clip(np.ceil(step / d.astype(np.float64)[:, None]), 0, 63).astype(np.uint8)
    mn = np.clip(np.round(-lo / dmin.astype(np.float64)[:, None]), 0, 63).astype(np.uint8)
    d1 = (d.astype(np.float32)[:, None] * sc).astype(np.float64)
    m1 = (dmin.astype(np.float32)[:, None] * mn).astype(np.float64)
    q = np.where(d1[:, :, None] > 0, np.round((sub + m1[:, :, None]) / np.where(d1 > 0, d1, 1)[:, :, None]), 0)
    q = np.clip(q, 0, top).astype(np.uint8)  # [nb, 8, 32]
    nb = q.shape[0]
    low = q & 15
    qs = (low[:, 0::2, :] | low[:, 1::2, :] << 4).reshape(nb, 128)  # sub-blocks 2j, 2j+1 share bytes
    parts = [f16(d), f16(dmin), pack_scales(sc, mn)]
    if bits == 5:
        qh = np.zeros((nb, 32), np.uint8)
        for s in range(8):
            qh |= ((q[:, s, :] >> 4) & 1) << s
        parts.append(qh)
    parts.append(qs)
    return np.concatenate(parts, axis=1).reshape(rows, -1)


def quantize_q6k(x):
    rows, cols = x.shape
    sub = x.reshape(-1, 16, 16).astype(np.float64)  # [nb, 16 sub-blocks, 16]
    step = np.abs(sub).max(axis=2) / 31
    d = (np.maximum(step.max(axis=1), 1e-12) / 127).astype(np.float16)
    sc = np.clip(np.ceil(step / d.astype(np.float64)[:, None]), -128, 127).astype(np.int8)
    sc[:, 1::5] = -sc[:, 1::5]  # negative scales too (the value's sign flips with q's)
    d1 = (d.astype(np.float32)[:, None] * sc.astype(np.float32)).astype(np.float64)
    q = np.where(d1[:, :, None] != 0, np.round(sub / np.where(d1 != 0, d1, 1)[:, :, None]), 0)
    q = (np.clip(q, -32, 31) + 32).astype(np.uint8).reshape(-1, 256)  # value v at q[:, v]
    nb = q.shape[0]
    ql = np.zeros((nb, 128), np.uint8)
    qh = np.zeros((nb, 64), np.uint8)
    for v in range(256):
        h, k, l = v // 128, v % 128 // 32, v % 32
        lo = q[:, v] & 15
        ql[:, 64 * h + 32 * (k & 1) + l] |= lo if k < 2 else lo << 4
        qh[:, 32 * h + l] |= (q[:, v] >> 4) << (2 * k)
    return np.concatenate([ql, qh, sc.view(np.uint8), f16(d)], axis=1).reshape(rows, -1)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                                              "tests", "gguf")
    rng = np.random.default_rng(28)
    spec = [("blk.0.ffn_up.weight", (64, 512), Q.Q4_K), ("blk.0.ffn_gate.weight", (48, 256), Q.Q5_K),
            ("blk.0.ffn_down.weight", (32, 768), Q.Q6_K), ("token_embd.weight", (40, 256), Q.Q6_K),
            ("blk.0.attn_k.weight", (32, 640), Q.Q5_0), ("blk.0.attn_v.weight", (16, 640), Q.Q5_1),
            ("blk.0.attn_q.weight", (16, 256), Q.Q2_K)]
    w = gguf.GGUFWriter(os.path.join(out, "kquant.gguf"), "llama")
    w.add_custom_alignment(32)
    vals = {}
    for name, shape, qt in spec:
        x = (rng.standard_normal(shape) * 0.05 + rng.uniform(-0.02, 0.03, (shape[0], 1))).astype(np.float32)
        if qt == Q.Q2_K:
            raw = rng.integers(0, 256, (shape[0], shape[1] // 256 * 84), dtype=np.uint8)
        elif qt in (Q.Q5_0, Q.Q5_1):
            raw = quantize(x, qt)
            vals[name] = dequantize(raw, qt).astype(np.float32).reshape(shape)
        else:
            raw = quantize_q45k(x, 4 if qt == Q.Q4_K else 5) if qt != Q.Q6_K else quantize_q6k(x)
            v = dequantize(raw, qt).astype(np.float32).reshape(shape)
            # each value within its sub-block's step (a quarter of the
            # range for Q4_K at worst; the scales' rounding up keeps q in range)
            assert np.abs(v - x).max() < (0.06 if qt == Q.Q4_K else 0.03), (name, np.abs(v - x).max())
            vals[name] = v
        w.add_tensor(name, raw, raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    x = rng.uniform(-1, 1, (3, 512)).astype(np.float32)
    xg = rng.uniform(-1, 1, (3, 256)).astype(np.float32)
    xd = rng.uniform(-1, 1, (2, 768)).astype(np.float32)
    ids = np.array([0, 39, 7, 7], np.int64)
    xa = rng.uniform(-1, 1, (2, 640)).astype(np.float32)
    mm = lambda a, b: (a.astype(np.float64) @ b.astype(np.float64).T).astype(np.float32)
    outs = [("y.up", mm(x, vals["blk.0.ffn_up.weight"])), ("y.gate", mm(xg, vals["blk.0.ffn_gate.weight"])),
            ("y.down", mm(xd, vals["blk.0.ffn_down.weight"])), ("y.embd", vals["token_embd.weight"][ids]),
            ("y.logits", mm(xg, vals["token_embd.weight"])), ("y.k", mm(xa, vals["blk.0.attn_k.weight"])),
            ("y.v", mm(xa, vals["blk.0.attn_v.weight"]))]
    ds = os.path.join(out, "kquant", "test_data_set_0")
    os.makedirs(ds, exist_ok=True)
    for i, (name, a) in enumerate([("x", x), ("xg", xg), ("xd", xd), ("ids", ids), ("xa", xa)]):
        with open(os.path.join(ds, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, name).SerializeToString())
    for i, (name, a) in enumerate(outs):
        with open(os.path.join(ds, f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, name).SerializeToString())


if __name__ == "__main__":
    main()
