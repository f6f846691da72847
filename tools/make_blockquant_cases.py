#!/usr/bin/env python3
"""make_blockquant_cases.py — write tests/generated/blockquant/, the cases
that check kiln's products and gathers by ggml block-quantized weights
(DequantizeBlocks, fuse_blocks, BlockLinear / BlockGather and the
kernels of compiler/kernels/qgemm_kernel.c) against a numpy reference.

One case per format (q8_0, q4_0, q4_1, q5_0, q5_1) and rows of X, M in {1, 3, 64}:
decode's in-register path (M 1, 3) and prefill's dequantize-once path
(M 64). Each is CASE/model.kir (the blocks in the sidecar model.bin) and
CASE/test_data_set_0/{input_K,output_K}.pb with

  y1 = x1[M,32]   · W1ᵀ + b1    W1 [37,32]    MatMul(Transpose) + Add
  y2 = x2[1,M,576]· W2ᵀ         W2 [6,576]    MatMul(Transpose), batch dim
  y3 = x3[M,1536] · W3ᵀ + c3    W3 [13,1536]  Gemm transB=1 with C
  y4 = x4[M,2080] · W4ᵀ         W4 [9,2080]   K in 5 chunks of 416 (prefill)
  y5 = rows ids of T            T  [22,576]   Gather: an embedding table
  y6 = x2         · Tᵀ                         the same table, tied: one blob copy

Q5_0 and Q5_1 have the same cases as Q4's, their reference the gguf
package's dequantization. The K-quants (q4_k, q5_k, q6_k, q8_k: 256-value super-blocks) have the same
six with K 256, 512, 1536, 2304 (W1 [37,256], W2/T [*,512], W4 [9,2304]),
and y7 = |W1|, a DequantizeBlocks that another op reads (it runs as
itself). Their blocks are random bytes (every quant, scale and min bit
pattern) with super-block scales of a trained model's size of both signs
and some extremes (rand_k_blocks); their reference is the gguf package's
numpy dequantization (gguf.quants), not this file's.

N off the 4-row tile everywhere (37, 6, 13, 9, 22). q4_1_m1_wide is one
GEMV of 170 x 1024 (109 KB of blocks), large enough to be threaded. With M = 64 the x's
are made in the graph, x_K = Sin(s[M,1]·f[K] + p[K]) from one input s,
so that the committed files stay small (the reference rounds sin in
float64; libm's sinf may differ by an ulp, far inside the tolerance). The reference
dequantizes as blockquant.h says — f16 scales exactly to f32, d*q (+ m)
in f32, no fma — then multiplies in float64 and rounds to f32, adding the
bias in f32: what the _eval computes. Regenerate with:

    build/venv/bin/python tools/make_blockquant_cases.py
"""
import os
import shutil

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf.quants import dequantize as gguf_dequantize
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "generated", "blockquant")
rng = np.random.default_rng(20261125)
BLOCK_BYTES = {"q8_0": 34, "q4_0": 18, "q4_1": 20}
# the K-quants: 256-value super-blocks (compiler/ir/blockquant.h)
K_BYTES = {"q4_k": 144, "q5_k": 176, "q6_k": 210, "q8_k": 292}
K_TYPES = {"q4_k": Q.Q4_K, "q5_k": Q.Q5_K, "q6_k": Q.Q6_K}
# Q5_0 and Q5_1: Q4's 32-value blocks with a fifth bit a value
Q5_BYTES = {"q5_0": 22, "q5_1": 24}
Q5_TYPES = {"q5_0": Q.Q5_0, "q5_1": Q.Q5_1}


def rand_q5_blocks(fmt, rows, cols):
    """Random Q5 blocks: every quant and fifth bit, scales of both signs, a
    zero d, and (Q5_1) minima of both signs."""
    nb = cols // 32
    raw = rng.integers(0, 256, (rows, nb, Q5_BYTES[fmt])).astype(np.uint8)
    d = (rng.uniform(0.001, 0.01, (rows, nb)) * rng.choice([-1, 1], (rows, nb))).astype(np.float16)
    raw[:, :, 0:2] = d.view(np.uint8).reshape(rows, nb, 2)
    raw[0, 0, 0:2] = 0
    if fmt == "q5_1":
        m = rng.uniform(-0.15, 0.05, (rows, nb)).astype(np.float16)
        raw[:, :, 2:4] = m.view(np.uint8).reshape(rows, nb, 2)
    return raw.reshape(rows, nb * Q5_BYTES[fmt])


def rand_k_blocks(fmt, rows, cols):
    """Random K-quant super-blocks: every quant, sub-block scale and min
    bit pattern (the 12 packed bytes of Q4_K/Q5_K, Q6_K's int8 scales
    including -128 and 0), super-block scales of a trained model's size
    with both signs, dmin of both signs (negative mins), and some extremes:
    a zero d, a zero dmin, a super-block of all-zero scales, and one of
    the largest scales (63, 127, -128)."""
    nb = cols // 256
    bb = K_BYTES[fmt]
    raw = rng.integers(0, 256, (rows, nb, bb)).astype(np.uint8)
    half = lambda lo, hi: (rng.uniform(lo, hi, (rows, nb)) * rng.choice([-1, 1], (rows, nb))).astype(np.float16)
    if fmt == "q8_k":
        raw[:, :, 0:4] = half(1e-4, 1e-3).astype(np.float32).view(np.uint8).reshape(rows, nb, 4)
        raw[0, 0, 0:4] = 0  # d = 0
        return raw.reshape(rows, nb * bb)
    if fmt == "q6_k":
        raw[:, :, 208:210] = half(2e-6, 2e-5).view(np.uint8).reshape(rows, nb, 2)
        raw[0, 0, 208:210] = 0  # d = 0
        raw[-1, -1, 192:208] = 0  # all scales 0
        raw[-1, 0, 192:200] = 0x80  # scale -128
        raw[-1, 0, 200:208] = 127
        return raw.reshape(rows, nb * bb)
    raw[:, :, 0:2] = half(1e-5, 1e-4).view(np.uint8).reshape(rows, nb, 2)
    raw[:, :, 2:4] = half(1e-5, 1e-4).view(np.uint8).reshape(rows, nb, 2)
    raw[0, 0, 0:2] = 0  # d = 0: every value is -dmin·mn
    raw[0, -1, 2:4] = 0  # dmin = 0
    raw[-1, -1, 4:16] = 0  # all scales and mins 0
    raw[-1, 0, 4:16] = 0xff  # all scales and mins 63
    return raw.reshape(rows, nb * bb)


def dequantize_k(fmt, raw, cols):
    """The gguf package's own numpy dequantization (the same f32
    arithmetic as blockquant.h: (d·sc)·q − dmin·mn, no fma); Q8_K, which
    it lacks, here: d·q."""
    rows = raw.shape[0]
    if fmt == "q8_k":
        b = raw.reshape(rows, cols // 256, 292)
        d = b[:, :, 0:4].copy().view(np.float32)
        return (d * b[:, :, 4:260].view(np.int8).astype(np.float32)).reshape(rows, cols)
    return gguf_dequantize(raw, K_TYPES[fmt]).astype(np.float32).reshape(rows, cols)


def rand_blocks(fmt, rows, cols):
    """Random blocks: scales of a trained model's size, every quant value."""
    nb = cols // 32
    raw = np.zeros((rows, nb, BLOCK_BYTES[fmt]), np.uint8)
    d = (rng.uniform(0.002, 0.02, (rows, nb)) * rng.choice([-1, 1], (rows, nb))).astype(np.float16)
    raw[:, :, 0:2] = d.view(np.uint8).reshape(rows, nb, 2)
    if fmt == "q8_0":
        raw[:, :, 2:] = rng.integers(-128, 128, (rows, nb, 32)).astype(np.int8).view(np.uint8)
    elif fmt == "q4_0":
        raw[:, :, 2:] = rng.integers(0, 256, (rows, nb, 16))
    else:
        m = rng.uniform(-0.15, 0.0, (rows, nb)).astype(np.float16)
        raw[:, :, 2:4] = m.view(np.uint8).reshape(rows, nb, 2)
        raw[:, :, 4:] = rng.integers(0, 256, (rows, nb, 16))
    return raw.reshape(rows, nb * BLOCK_BYTES[fmt])


def dequantize(fmt, raw, cols):
    """The reference: blockquant.h's arithmetic, in f32 without fma."""
    rows, nb = raw.shape[0], cols // 32
    b = raw.reshape(rows, nb, BLOCK_BYTES[fmt])
    d = b[:, :, 0:2].copy().view(np.float16).astype(np.float32)  # [rows, nb, 1]
    if fmt == "q8_0":
        q = b[:, :, 2:].view(np.int8).astype(np.float32)
        w = d * q
    else:
        qs = b[:, :, 4:] if fmt == "q4_1" else b[:, :, 2:]
        q = np.concatenate([qs & 15, qs >> 4], axis=2).astype(np.int32)
        if fmt == "q4_0":
            w = d * (q - 8).astype(np.float32)
        else:
            m = b[:, :, 2:4].copy().view(np.float16).astype(np.float32)
            w = (d * q.astype(np.float32)) + m
    return w.astype(np.float32).reshape(rows, cols)


def product(x, w, bias=None):
    y = (x.astype(np.float64) @ w.astype(np.float64).T).astype(np.float32)
    return y if bias is None else (y + bias).astype(np.float32)


def write_case(name, fmt, m):
    path = os.path.join(OUT, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(os.path.join(path, "test_data_set_0"))
    kq = fmt in K_BYTES
    bb, bv = (K_BYTES[fmt], 256) if kq else ({**BLOCK_BYTES, **Q5_BYTES}[fmt], 32)
    k1, k2, k4 = (256, 512, 2304) if kq else (32, 576, 2080)
    weights = {"w1": (37, k1), "w2": (6, k2), "w3": (13, 1536), "w4": (9, k4), "t": (22, k2)}
    if kq:
        raw = {k: rand_k_blocks(fmt, r, c) for k, (r, c) in weights.items()}
        w = {k: dequantize_k(fmt, raw[k], weights[k][1]) for k in weights}
    elif fmt in Q5_BYTES:
        raw = {k: rand_q5_blocks(fmt, r, c) for k, (r, c) in weights.items()}
        w = {k: gguf_dequantize(raw[k], Q5_TYPES[fmt]).astype(np.float32).reshape(r, c)
             for k, (r, c) in weights.items()}
    else:
        raw = {k: rand_blocks(fmt, r, c) for k, (r, c) in weights.items()}
        w = {k: dequantize(fmt, raw[k], weights[k][1]) for k in weights}
    b1 = rng.standard_normal(37).astype(np.float32)
    c3 = rng.standard_normal(13).astype(np.float32)
    ks = {"x1": (m, k1), "x2": (1, m, k2), "x3": (m, 1536), "x4": (m, k4)}
    made = m >= 64
    seed = rng.standard_normal((m, 1)).astype(np.float32)
    freq = {k: rng.uniform(0.5, 3, v[-1]).astype(np.float32) for k, v in ks.items()}
    phase = {k: rng.uniform(-3, 3, v[-1]).astype(np.float32) for k, v in ks.items()}
    if made:
        xs = {k: np.sin((seed * freq[k] + phase[k]).astype(np.float64)).astype(np.float32).reshape(v)
              for k, v in ks.items()}
    else:
        xs = {k: rng.standard_normal(v).astype(np.float32) for k, v in ks.items()}
    x1, x2, x3, x4 = xs["x1"], xs["x2"], xs["x3"], xs["x4"]
    ids = np.array([0, 21, 7, -1, 7], np.int64)
    outs = [product(x1, w["w1"], b1), product(x2, w["w2"]), product(x3, w["w3"], c3), product(x4, w["w4"]),
            w["t"][ids], product(x2, w["t"])]
    if kq:  # DequantizeBlocks read by another op: it runs as itself (dequantize_blocks.c)
        outs.append(np.abs(w["w1"]))
    blob, consts = bytearray(), []
    for k, (r, c) in weights.items():
        consts.append(f"  const %{k}_blocks: u8[{r},{c // bv * bb}] = bin({len(blob)})")
        blob += raw[k].tobytes()
    extra = [(f"{k}_f", freq[k]) for k in ks] + [(f"{k}_p", phase[k]) for k in ks] if made else []
    for k, v in [("b1", b1), ("c3", c3)] + extra:
        consts.append(f"  const %{k}: f32[{v.shape[0]}] = bin({len(blob)})")
        blob += v.tobytes()
    perm = "{perm=[1,0]}"
    if made:
        ins = f"%s: f32[{m},1], %ids: i64[5]"
        consts += [f"  const %x2_shape: i64[3] = [1, {m}, {k2}]"]
        for k, v in ks.items():
            sin = f"%{k}_2d" if k == "x2" else f"%{k}"
            consts += [f"  %{k}_sf = Mul %s, %{k}_f : ?", f"  %{k}_arg = Add %{k}_sf, %{k}_p : ?",
                       f"  {sin} = Sin %{k}_arg : ?"]
        consts += ["  %x2 = Reshape %x2_2d, %x2_shape : ?"]
        inputs = (("s", seed), ("ids", ids))
    else:
        ins = f"%x1: f32[{m},{k1}], %x2: f32[1,{m},{k2}], %x3: f32[{m},1536], %x4: f32[{m},{k4}], %ids: i64[5]"
        inputs = (("x1", x1), ("x2", x2), ("x3", x3), ("x4", x4), ("ids", ids))
    lines = [f"# {name}: {fmt} weights, M = {m} (tools/make_blockquant_cases.py)",
             f"graph @g opset 14 ({ins}) -> (%y1, %y2, %y3, %y4, %y5, %y6{', %y7' if kq else ''}) {{", *consts]
    for k, (r, c) in weights.items():
        lines.append(f'  %{k} = DequantizeBlocks %{k}_blocks {{format="{fmt}", shape=[{r},{c}]}} : ?')
    lines += [f"  %w1t = Transpose %w1 {perm} : ?", "  %mm1 = MatMul %x1, %w1t : ?", "  %y1 = Add %mm1, %b1 : ?",
              f"  %w2t = Transpose %w2 {perm} : ?", "  %y2 = MatMul %x2, %w2t : ?",
              "  %y3 = Gemm %x3, %w3, %c3 {transB=1} : ?",
              f"  %w4t = Transpose %w4 {perm} : ?", "  %y4 = MatMul %x4, %w4t : ?",
              "  %y5 = Gather %t, %ids {axis=0} : ?",
              f"  %tt = Transpose %t {perm} : ?", "  %y6 = MatMul %x2, %tt : ?"]
    lines += ["  %y7 = Abs %w1 : ?"] if kq else []
    lines += ["}"]
    with open(os.path.join(path, "model.kir"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(path, "model.bin"), "wb") as f:
        f.write(bytes(blob))
    for i, (nm, v) in enumerate(inputs):
        with open(os.path.join(path, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, nm).SerializeToString())
    for i, v in enumerate(outs):
        with open(os.path.join(path, "test_data_set_0", f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, f"y{i + 1}").SerializeToString())


def write_wide_case(name, fmt, n, k):
    """One decode product whose weight is large enough (about 100 KB) for
    --threads 2 to split its tiles among the threads."""
    path = os.path.join(OUT, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(os.path.join(path, "test_data_set_0"))
    kq = fmt in K_BYTES
    raw = rand_k_blocks(fmt, n, k) if kq else rand_blocks(fmt, n, k)
    x = rng.standard_normal((1, k)).astype(np.float32)
    y = product(x, dequantize_k(fmt, raw, k) if kq else dequantize(fmt, raw, k))  # (not for q5)
    with open(os.path.join(path, "model.kir"), "w") as f:
        f.write(f"# {name}: a {fmt} GEMV that --threads 2 splits (tools/make_blockquant_cases.py)\n"
                f"graph @g opset 14 (%x: f32[1,{k}]) -> (%y) {{\n"
                f"  const %w_blocks: u8[{n},{raw.shape[1]}] = bin(0)\n"
                f'  %w = DequantizeBlocks %w_blocks {{format="{fmt}", shape=[{n},{k}]}} : ?\n'
                f"  %wt = Transpose %w {{perm=[1,0]}} : ?\n  %y = MatMul %x, %wt : ?\n}}\n")
    raw.tofile(os.path.join(path, "model.bin"))
    for nm, v in (("input_0", x), ("output_0", y)):
        with open(os.path.join(path, "test_data_set_0", nm + ".pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, nm).SerializeToString())


def main():
    for fmt in BLOCK_BYTES:
        for m in (1, 3, 64):
            write_case(f"{fmt}_m{m}", fmt, m)
    write_wide_case("q4_1_m1_wide", "q4_1", 170, 1024)
    # the K-quants from their own generator, so that the cases above stay
    # byte-identical
    global rng
    rng = np.random.default_rng(20261128)
    for fmt in K_BYTES:
        for m in (1, 3, 64):
            write_case(f"{fmt}_m{m}", fmt, m)
        write_wide_case(f"{fmt}_m1_wide", fmt, 171, 1024)
    rng = np.random.default_rng(20261129)
    for fmt in Q5_BYTES:
        for m in (1, 3, 64):
            write_case(f"{fmt}_m{m}", fmt, m)


if __name__ == "__main__":
    main()
