#!/usr/bin/env python3
"""gemma3_reference.py — a Gemma 3 GGUF model in float64 NumPy, written
from the architecture's definition (Gemma Team, "Gemma 3 Technical
Report", 2025; the block as llama.cpp's gemma3 graph and Hugging Face's
Gemma3ForCausalLM compute it), as the reference that kiln's generated C
(compiler/arch/gemma3.lua) is checked against (tests/gguf/run_gemma3.sh).
Run it with a Python that has numpy and PyPI's gguf (it dequantizes every
tensor with gguf.quants.dequantize, exactly as ggml defines each type):

  PY tools/gemma3_reference.py --gguf FILE [--prompt-ids 2,818,5279]
      [--tokens N] [--ignore-eos] [--out DIR]

greedy decoding of N tokens (default 32; stops at EOS unless
--ignore-eos), printing the ids; --out DIR writes ids.txt (the prompt's
ids on the first line, the generated ones on the second) and logits.npy
([generated, vocab] f32: row k is the logits that chose token k), the
layout tests/generate/compare_logits.py reads.

The forward pass (every sum and product in float64; the dequantized
weights are exact in f32, so they are kept so and widened per product):
  h = token_embd[ids] * sqrt(d)
  per block i (local when i % pattern < pattern - 1, else global):
    n = RMSNorm(h) * attn_norm
    q = RMSNorm_head(n Wq^T) * attn_q_norm, k = RMSNorm_head(n Wk^T) * attn_k_norm,
    v = n Wv^T                             (per head of key_length dims)
    RoPE on q and k, NeoX pairing (dim j with j + head_dim/2), base
      rope.freq_base_swa (10000) on local layers, rope.freq_base on global
    query head j reads kv head j // (heads / kv_heads); scores q k^T
      * query_pre_attn_scalar^-1/2 (head_dim unless given), causal, and on
      local layers only the sliding_window newest keys (the query's own
      included: key p is seen from query t when t - p < window)
    h += RMSNorm(attn Wo^T) * post_attention_norm
    f = RMSNorm(h) * ffn_norm
    h += RMSNorm(Wdown^T (gelu_tanh(f Wgate^T) * f Wup^T)) * post_ffw_norm
  logits = (RMSNorm(h) * output_norm) token_embd^T (or output.weight^T),
  then c * tanh(logits / c) when the file has final_logit_softcapping c.
RMSNorm(x) = x / sqrt(mean(x^2) + eps); the norm weights are used as the
file stores them (llama.cpp's converter writes Gemma's 1 + w).
The whole sequence is recomputed at every step (no KV cache), so the C's
caches are checked too."""
import argparse
import os
import sys

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize


def field(r, key, default=None):
    f = r.fields.get(key)
    if f is None:
        return default
    v = f.contents()
    return v


class Model:
    def __init__(self, path, scalar=None):
        r = GGUFReader(path)
        a = field(r, "general.architecture")
        if a != "gemma3":
            sys.exit(f"{path}: general.architecture is {a!r}; expected 'gemma3'")
        m = lambda k, d=None: field(r, "gemma3." + k, d)
        self.layers = m("block_count")
        self.d = m("embedding_length")
        self.heads = m("attention.head_count")
        self.kv_heads = m("attention.head_count_kv", self.heads)
        self.head_dim = m("attention.key_length", self.d // self.heads)
        self.eps = m("attention.layer_norm_rms_epsilon", 1e-6)
        self.theta = m("rope.freq_base", 1e6)
        self.theta_local = m("rope.freq_base_swa", 10000.0)
        self.window = m("attention.sliding_window", 0)
        self.pattern = m("attention.sliding_window_pattern", 6)
        self.softcap = m("final_logit_softcapping", 0.0)
        self.scalar = scalar or self.head_dim
        self.eos = field(r, "tokenizer.ggml.eos_token_id", -1)
        self.w, self.w64 = {}, {}
        for t in r.tensors:
            shape = tuple(int(x) for x in reversed(t.shape))  # row-major
            x = dequantize(t.data, t.tensor_type).astype(np.float32).reshape(shape)
            self.w[t.name] = x
        self.out = self.w.get("output.weight", self.w["token_embd.weight"])

    def is_local(self, i):
        p = self.pattern
        if isinstance(p, list):
            return bool(p[i])
        return self.window > 0 and p > 0 and i % p < p - 1

    def norm(self, x, name):
        x = x.astype(np.float64)
        y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps)
        return y * self.w[name].astype(np.float64)

    def lin(self, x, name):
        w = self.w64.get(name)
        if w is None:  # widened once: the whole sequence is recomputed at every step
            w = self.w64[name] = self.w[name].astype(np.float64).T
        return x @ w

    def rope(self, x, theta):  # x [T, n, hd], positions 0..T-1, NeoX pairing
        t, _, hd = x.shape
        half = hd // 2
        inv = theta ** (-np.arange(half, dtype=np.float64) * 2 / hd)
        ang = np.arange(t, dtype=np.float64)[:, None] * inv[None, :]
        c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        a, b = x[..., :half], x[..., half:]
        return np.concatenate([a * c - b * s, b * c + a * s], axis=-1)

    def forward(self, ids):
        T, hd, H, G = len(ids), self.head_dim, self.heads, self.heads // self.kv_heads
        h = self.w["token_embd.weight"][ids].astype(np.float64) * np.sqrt(self.d)
        pos = np.arange(T)
        for i in range(self.layers):
            b = f"blk.{i}."
            loc = self.is_local(i)
            n = self.norm(h, b + "attn_norm.weight")
            q = self.norm(self.lin(n, b + "attn_q.weight").reshape(T, H, hd), b + "attn_q_norm.weight")
            k = self.norm(self.lin(n, b + "attn_k.weight").reshape(T, self.kv_heads, hd), b + "attn_k_norm.weight")
            v = self.lin(n, b + "attn_v.weight").reshape(T, self.kv_heads, hd)
            theta = self.theta_local if loc else self.theta
            q, k = self.rope(q, theta), self.rope(k, theta)
            seen = pos[None, :] <= pos[:, None]
            if loc:
                seen &= pos[:, None] - pos[None, :] < self.window
            y = np.zeros((T, H, hd))
            for j in range(H):
                s = q[:, j, :] @ k[:, j // G, :].T / np.sqrt(self.scalar)
                s = np.where(seen, s, -np.inf)
                p = np.exp(s - s.max(axis=-1, keepdims=True))
                y[:, j, :] = (p / p.sum(axis=-1, keepdims=True)) @ v[:, j // G, :]
            a = self.lin(y.reshape(T, H * hd), b + "attn_output.weight")
            h = h + self.norm(a, b + "post_attention_norm.weight")
            f = self.norm(h, b + "ffn_norm.weight")
            g = self.lin(f, b + "ffn_gate.weight")
            g = 0.5 * g * (1 + np.tanh(np.sqrt(2 / np.pi) * (g + 0.044715 * g ** 3)))
            f = self.lin(g * self.lin(f, b + "ffn_up.weight"), b + "ffn_down.weight")
            h = h + self.norm(f, b + "post_ffw_norm.weight")
        last = self.norm(h[-1:], "output_norm.weight")[0]
        logits = np.empty(self.out.shape[0])
        for r0 in range(0, self.out.shape[0], 16384):  # the tied table in slices: f64 of 262k rows is 1.3 GB
            logits[r0:r0 + 16384] = self.out[r0:r0 + 16384].astype(np.float64) @ last
        if self.softcap:
            logits = self.softcap * np.tanh(logits / self.softcap)
        return logits


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--prompt-ids", required=True, help="comma-separated token ids (BOS included)")
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--ignore-eos", action="store_true", help="go on past EOS: exactly --tokens tokens")
    ap.add_argument("--query-pre-attn-scalar", type=float, default=0, help="default: key_length")
    ap.add_argument("--out", help="write ids.txt and logits.npy here")
    a = ap.parse_args()
    model = Model(a.gguf, a.query_pre_attn_scalar)
    prompt = [int(x) for x in a.prompt_ids.split(",") if x]
    ids, gen, rows = list(prompt), [], []
    for _ in range(a.tokens):
        logits = model.forward(np.array(ids))
        t = int(np.argmax(logits))
        rows.append(logits.astype(np.float32))
        gen.append(t)
        ids.append(t)
        if t == model.eos and not a.ignore_eos:
            break
    print(",".join(map(str, prompt)))
    print(",".join(map(str, gen)))
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "ids.txt"), "w") as f:
            f.write(",".join(map(str, prompt)) + "\n" + ",".join(map(str, gen)) + "\n")
        np.save(os.path.join(a.out, "logits.npy"), np.array(rows))


if __name__ == "__main__":
    main()
