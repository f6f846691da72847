#!/usr/bin/env python3
"""qwen2_reference.py — a Qwen2-architecture GGUF model in float64 NumPy,
written from the architecture's definition (Hugging Face's Qwen2 block, as
llama.cpp's converter stores it), as the reference that kiln's generated C
for compiler/arch/qwen2.lua is checked against (tests/gguf/arch/run_qwen2.sh).

  PY tools/qwen2_reference.py --gguf FILE --prompt-ids 1,2,3 [--tokens N] --out DIR

PY is a Python with PyPI's gguf and numpy (build/venv/bin/python). The
tensors are read and dequantized by gguf.quants (exactly as ggml defines
each block type), then widened to float64. Greedy decoding: N tokens (default
16), EOS not special (so exactly N); writes DIR/ids.txt (the prompt's ids on
the first line, the generated ones on the second, comma-separated) and
DIR/logits.npy ([N, vocab] f32: row k is the logits that chose token k), the
layout of tools/llama_reference.py's --out, which compare_logits.py reads.

The forward pass over the whole sequence at every step (no KV cache, so the
C's cache is checked too):
  h = token_embd[ids]
  per block: a = RMSNorm(h) * attn_norm
    q = a Wq^T + bq, k = a Wk^T + bk, v = a Wv^T + bv     (the biases: Qwen2's)
    RoPE on q and k, NEOX style (llama.cpp's rope type for qwen2): in each
    head, dim i pairs with dim i + head_dim/2 (Hugging Face's rotate_half;
    the converter does not permute Qwen2's Q/K rows as it does Llama's),
    angle pos * freq_base^(-2i/head_dim), freq_base = qwen2.rope.freq_base
    grouped heads: query head i reads key/value head i // (n_head / n_head_kv)
    causal softmax(q k^T / sqrt(head_dim)) v;  h += o Wo^T   (no bias)
    f = RMSNorm(h) * ffn_norm;  h += Wdown^T (silu(f Wgate^T) * f Wup^T)
  logits = RMSNorm(h_last) * output_norm, times output.weight^T, or
  token_embd^T when the file has no output.weight (tied).
RMSNorm(x) = x / sqrt(mean(x^2) + eps), eps = qwen2.attention.layer_norm_rms_epsilon.
"""
import argparse
import os
import sys

import numpy as np


def load(path):
    import gguf
    from gguf import quants

    r = gguf.GGUFReader(path)
    field = lambda k, default=None: r.fields[k].contents() if k in r.fields else default
    arch = field("general.architecture")
    assert arch == "qwen2", f"{path}: general.architecture is {arch}, expected qwen2"
    w = {}
    for t in r.tensors:
        shape = tuple(int(n) for n in reversed(t.shape))
        w[t.name] = quants.dequantize(np.asarray(t.data), t.tensor_type).reshape(shape).astype(np.float64)
    cfg = {k: field(f"qwen2.{k}") for k in ("block_count", "attention.head_count", "attention.head_count_kv",
                                            "rope.freq_base", "attention.layer_norm_rms_epsilon")}
    return w, cfg


class Qwen2:
    def __init__(self, w, cfg):
        self.w, self.cfg = w, cfg
        self.heads, self.kv_heads = int(cfg["attention.head_count"]), int(cfg["attention.head_count_kv"])
        self.d = w["token_embd.weight"].shape[1]
        self.hd = self.d // self.heads
        self.eps = float(cfg["attention.layer_norm_rms_epsilon"])
        self.inv_freq = float(cfg["rope.freq_base"]) ** (-np.arange(0, self.hd // 2, dtype=np.float64) * 2 / self.hd)
        self.out_w = w.get("output.weight", w["token_embd.weight"])

    def rms(self, x, g):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + self.eps) * g

    def rope(self, x):
        """x [T, heads, hd]: dims i and i + hd/2 rotated by pos * inv_freq[i]"""
        ang = np.arange(x.shape[0], dtype=np.float64)[:, None] * self.inv_freq[None, :]
        cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        half = self.hd // 2
        x0, x1 = x[..., :half], x[..., half:]
        return np.concatenate([x0 * cos - x1 * sin, x0 * sin + x1 * cos], axis=-1)

    def forward(self, ids):
        w, T, H, KV, hd = self.w, len(ids), self.heads, self.kv_heads, self.hd
        h = w["token_embd.weight"][np.array(ids)]
        mask = np.triu(np.full((T, T), -np.inf), 1)
        for l in range(int(self.cfg["block_count"])):
            p = f"blk.{l}."
            a = self.rms(h, w[p + "attn_norm.weight"])
            q = self.rope((a @ w[p + "attn_q.weight"].T + w[p + "attn_q.bias"]).reshape(T, H, hd))
            k = self.rope((a @ w[p + "attn_k.weight"].T + w[p + "attn_k.bias"]).reshape(T, KV, hd))
            v = (a @ w[p + "attn_v.weight"].T + w[p + "attn_v.bias"]).reshape(T, KV, hd)
            k, v = np.repeat(k, H // KV, axis=1), np.repeat(v, H // KV, axis=1)
            s = np.einsum("thd,shd->hts", q, k) / np.sqrt(hd) + mask
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            h = h + np.einsum("hts,shd->thd", s, v).reshape(T, H * hd) @ w[p + "attn_output.weight"].T
            f = self.rms(h, w[p + "ffn_norm.weight"])
            g = f @ w[p + "ffn_gate.weight"].T
            h = h + (g / (1 + np.exp(-g)) * (f @ w[p + "ffn_up.weight"].T)) @ w[p + "ffn_down.weight"].T
        return self.out_w @ self.rms(h[-1], w["output_norm.weight"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--prompt-ids", required=True, help="comma-separated token ids")
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--out", required=True, help="write ids.txt and logits.npy here")
    a = ap.parse_args()
    model = Qwen2(*load(a.gguf))
    prompt = [int(x) for x in a.prompt_ids.split(",")]
    ids, logits = list(prompt), []
    for _ in range(a.tokens):
        x = model.forward(ids)
        logits.append(x)
        ids.append(int(np.argmax(x)))  # the first of equal maxima, as generate.c
    top2 = [np.sort(x)[-2:] for x in logits]
    gap = min((t[1] - t[0]) / np.abs(x).max() for t, x in zip(top2, logits))
    print("ids:", ",".join(map(str, ids[len(prompt):])), f"(smallest top-2 gap {gap:.3g} of the largest logit)")
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "ids.txt"), "w") as f:
        f.write(",".join(map(str, prompt)) + "\n" + ",".join(map(str, ids[len(prompt):])) + "\n")
    np.save(os.path.join(a.out, "logits.npy"), np.stack(logits).astype(np.float32))
    return 0


if __name__ == "__main__":
    sys.exit(main())
