"""llama_reference.py — a Llama-architecture GGUF model (SmolLM2-135M) in
PyTorch, written from the architecture's definition, as the reference that
kiln's generated C is checked against (tests/generate/run_reference.sh).

Two steps in two Pythons, since Debian's torch 1.13 (/usr/bin/python3) and
PyPI's gguf (a venv with a newer numpy) do not share one:

  VENV/bin/python tools/llama_reference.py dequant --gguf FILE --cache DIR
      reads the GGUF with PyPI gguf and writes every tensor, dequantized
      exactly as ggml defines it, as DIR/NAME.npy (f32, row-major: GGUF's
      ne reversed), plus DIR/config.json (hyperparameters, the vocabulary);
  /usr/bin/python3 tools/llama_reference.py --gguf FILE [--cache DIR]
      [--prompt-ids 1,2,3] [--tokens N] [--out DIR]
      runs the dequant step first when DIR has no config.json (with
      --gguf-python, default $KILN_GGUF_PYTHON or build/venv/bin/python),
      then greedy decoding: N tokens (default 32; stops at EOS unless
      --ignore-eos), printing
      the ids and the text; --out DIR writes ids.txt (the prompt's ids on
      the first line, the generated ones on the second, comma-separated)
      and logits.npy ([generated, vocab] f32: row k is the logits that
      chose token k).

Dequantization (ggml-quants.c, dequantize_row_*), blocks of 32 values:
  Q8_0: f16 d, 32 x i8 q               -> x = d * q
  Q4_0: f16 d, 16 bytes of 4-bit q     -> x = d * (q - 8)
  Q4_1: f16 d, f16 m, 16 bytes of q    -> x = d * q + m
with the low nibbles of the 16 bytes as values 0..15 and the high ones as
16..31; d and m widened to f32, the products and sums in f32.

The forward pass, in float64 (an independent answer, not a replay of
kiln's f32 arithmetic), over the whole sequence at every step (no KV cache,
so the C's cache is checked too):
  h = token_embd[ids]
  per block: a = RMSNorm(h) * attn_norm; q, k, v = a Wq^T, a Wk^T, a Wv^T
    (n_head query heads, n_head_kv key/value heads: query head i reads
    key/value head i // (n_head / n_head_kv)); RoPE on q and k in GGUF's
    layout — llama.cpp's "normal" rope rotates adjacent pairs (x[2i],
    x[2i+1]) by pos * freq_base^(-2i/head_dim), because convert_hf_to_gguf
    permutes Wq and Wk from Hugging Face's half-split layout; causal
    softmax(q k^T / sqrt(head_dim)) v; h += out Wo^T;
    f = RMSNorm(h) * ffn_norm; h += Wdown^T (silu(f Wgate^T) * f Wup^T)
  logits = RMSNorm(h) * output_norm, times output.weight^T, or
  token_embd^T when the model ties them (SmolLM2 does).
RMSNorm(x) = x / sqrt(mean(x^2) + eps), eps = llama.attention.layer_norm_rms_epsilon.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_PROMPT = [504, 3575, 282, 4649, 314]  # "The capital of France is" in SmolLM2's tokenizer


# ---------------------------------------------------------------- dequant (venv python)

def dequantize(kind, raw, shape):
    """raw: the tensor's bytes (uint8); shape: row-major; f32 result"""
    raw = np.ascontiguousarray(raw).reshape(-1)
    if kind == "F32":
        return raw.view(np.float32).reshape(shape).copy()
    if kind == "F16":
        return raw.view(np.float16).astype(np.float32).reshape(shape)
    size = {"Q8_0": 34, "Q4_0": 18, "Q4_1": 20}[kind]
    b = raw.reshape(-1, size)
    d = b[:, 0:2].copy().view(np.float16).astype(np.float32)
    if kind == "Q8_0":
        q = b[:, 2:].copy().view(np.int8).astype(np.float32)
        x = d * q
    else:
        qs = b[:, 2 if kind == "Q4_0" else 4:]
        q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32)
        if kind == "Q4_0":
            x = d * (q - np.float32(8))
        else:
            m = b[:, 2:4].copy().view(np.float16).astype(np.float32)
            x = d * q + m
    return x.astype(np.float32).reshape(shape)


def field(r, key, default=None):
    f = r.fields.get(key)
    if f is None:
        return default
    v = f.contents()
    return v


def dequant_main(path, cache):
    import gguf
    from gguf import quants

    r = gguf.GGUFReader(path)
    os.makedirs(cache, exist_ok=True)
    checked = set()
    for t in r.tensors:
        kind = t.tensor_type.name
        shape = tuple(int(n) for n in reversed(t.shape))
        x = dequantize(kind, np.asarray(t.data).view(np.uint8), shape)
        if kind not in checked:  # our reading against PyPI gguf's own, once per type
            ref = quants.dequantize(np.asarray(t.data), t.tensor_type).reshape(shape).astype(np.float32)
            assert np.array_equal(x, ref), f"{t.name}: dequantized {kind} differs from gguf.quants"
            checked.add(kind)
        np.save(os.path.join(cache, t.name + ".npy"), x)
    arch = field(r, "general.architecture")
    cfg = {
        "file": os.path.abspath(path),
        "arch": arch,
        "n_layer": int(field(r, f"{arch}.block_count")),
        "d_model": int(field(r, f"{arch}.embedding_length")),
        "n_ff": int(field(r, f"{arch}.feed_forward_length")),
        "n_head": int(field(r, f"{arch}.attention.head_count")),
        "n_head_kv": int(field(r, f"{arch}.attention.head_count_kv", field(r, f"{arch}.attention.head_count"))),
        "rope_base": float(field(r, f"{arch}.rope.freq_base", 10000.0)),
        "rms_eps": float(field(r, f"{arch}.attention.layer_norm_rms_epsilon")),
        "eos": int(field(r, "tokenizer.ggml.eos_token_id", -1)),
        "tensors": [t.name for t in r.tensors],
        "tokens": field(r, "tokenizer.ggml.tokens", []),
        "token_types": [int(x) for x in field(r, "tokenizer.ggml.token_type", [])],
    }
    tmp = os.path.join(cache, "config.json.part")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    os.replace(tmp, os.path.join(cache, "config.json"))  # last: marks the cache complete


# ---------------------------------------------------------------- the model (torch)

def byte_decoder():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def detokenize(cfg, ids):
    dec = byte_decoder()
    out = bytearray()
    for i in ids:
        t = cfg["tokens"][i]
        if cfg["token_types"] and cfg["token_types"][i] != 1:
            out += t.encode("utf-8")
        else:
            out += bytes(dec[c] for c in t)
    return out.decode("utf-8", errors="replace")


class Llama:
    def __init__(self, cache, torch):
        self.torch = torch
        with open(os.path.join(cache, "config.json"), encoding="utf-8") as f:
            self.cfg = cfg = json.load(f)
        self.w = {n: torch.from_numpy(np.load(os.path.join(cache, n + ".npy"))).double() for n in cfg["tensors"]}
        self.out_w = self.w.get("output.weight", self.w["token_embd.weight"])
        self.head_dim = cfg["d_model"] // cfg["n_head"]
        half = self.head_dim // 2
        self.inv_freq = cfg["rope_base"] ** (-torch.arange(0, half, dtype=torch.float64) * 2 / self.head_dim)

    def rms(self, x, w):
        return x / self.torch.sqrt((x * x).mean(-1, keepdim=True) + self.cfg["rms_eps"]) * w

    def rope(self, x):
        """x [T, heads, head_dim]: adjacent pairs rotated by pos * inv_freq"""
        T = x.shape[0]
        ang = self.torch.arange(T, dtype=self.torch.float64)[:, None] * self.inv_freq[None, :]  # [T, half]
        cos, sin = self.torch.cos(ang)[:, None, :], self.torch.sin(ang)[:, None, :]
        x0, x1 = x[..., 0::2], x[..., 1::2]
        out = self.torch.empty_like(x)
        out[..., 0::2] = x0 * cos - x1 * sin
        out[..., 1::2] = x0 * sin + x1 * cos
        return out

    def forward(self, ids):
        """ids: list of int; the last position's logits (float64 [vocab])"""
        torch, cfg, w = self.torch, self.cfg, self.w
        T, H, KV, hd = len(ids), cfg["n_head"], cfg["n_head_kv"], self.head_dim
        h = w["token_embd.weight"][torch.tensor(ids)]
        mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
        for l in range(cfg["n_layer"]):
            p = f"blk.{l}."
            a = self.rms(h, w[p + "attn_norm.weight"])
            q = self.rope((a @ w[p + "attn_q.weight"].T).view(T, H, hd))
            k = self.rope((a @ w[p + "attn_k.weight"].T).view(T, KV, hd))
            v = (a @ w[p + "attn_v.weight"].T).view(T, KV, hd)
            rep = H // KV
            k = k.repeat_interleave(rep, dim=1)  # query head i reads kv head i // rep
            v = v.repeat_interleave(rep, dim=1)
            s = torch.einsum("thd,shd->hts", q, k) / (hd ** 0.5) + mask
            o = torch.einsum("hts,shd->thd", torch.softmax(s, dim=-1), v).reshape(T, H * hd)
            h = h + o @ w[p + "attn_output.weight"].T
            f = self.rms(h, w[p + "ffn_norm.weight"])
            g = torch.nn.functional.silu(f @ w[p + "ffn_gate.weight"].T) * (f @ w[p + "ffn_up.weight"].T)
            h = h + g @ w[p + "ffn_down.weight"].T
        last = self.rms(h[-1], w["output_norm.weight"])
        return self.out_w @ last


def generate(model, prompt, n, ignore_eos=False):
    ids, logits = list(prompt), []
    for _ in range(n):
        x = model.forward(ids)
        logits.append(x.float().numpy())
        nxt = int(np.argmax(logits[-1]))  # the first of equal maxima, as generate.c
        if nxt == model.cfg["eos"] and not ignore_eos:
            break
        ids.append(nxt)
    return ids[len(prompt):], np.stack(logits)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "dequant":
        ap = argparse.ArgumentParser(prog="llama_reference.py dequant")
        ap.add_argument("--gguf", required=True)
        ap.add_argument("--cache", required=True)
        a = ap.parse_args(sys.argv[2:])
        dequant_main(a.gguf, a.cache)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--cache", help="dequantized tensors (default: build/llama_reference/NAME)")
    ap.add_argument("--gguf-python", default=os.environ.get("KILN_GGUF_PYTHON", os.path.join(ROOT, "build/venv/bin/python")))
    ap.add_argument("--prompt-ids", help="comma-separated token ids (default: 'The capital of France is')")
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--ignore-eos", action="store_true", help="go on past EOS: exactly --tokens tokens")
    ap.add_argument("--out", help="write ids.txt and logits.npy here")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's)")
    a = ap.parse_args()
    cache = a.cache or os.path.join(ROOT, "build/llama_reference", os.path.splitext(os.path.basename(a.gguf))[0])
    if not os.path.exists(os.path.join(cache, "config.json")):
        subprocess.run([a.gguf_python, os.path.abspath(__file__), "dequant", "--gguf", a.gguf, "--cache", cache],
                       check=True)
    import torch

    if a.threads:
        torch.set_num_threads(a.threads)
    prompt = [int(x) for x in a.prompt_ids.split(",")] if a.prompt_ids else DEFAULT_PROMPT
    model = Llama(cache, torch)
    with torch.no_grad():
        out, logits = generate(model, prompt, a.tokens, a.ignore_eos)
    print("prompt:", ",".join(map(str, prompt)))
    print("ids:", ",".join(map(str, out)))
    if model.cfg["tokens"]:
        print("text:", repr(detokenize(model.cfg, prompt)), "->", repr(detokenize(model.cfg, out)))
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "ids.txt"), "w") as f:
            f.write(",".join(map(str, prompt)) + "\n" + ",".join(map(str, out)) + "\n")
        np.save(os.path.join(a.out, "logits.npy"), logits.astype(np.float32))
    return 0


if __name__ == "__main__":
    sys.exit(main())
