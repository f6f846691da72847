#!/usr/bin/env python3
"""make_past_decoder.py OUTDIR — a small GPT-2-like decoder exported from
torch the way `use_cache=True` models are (inputs input_ids [B, S],
attention_mask [B, past+S], position_ids [B, S], past_key_values.L.key /
.value [B, H, past, D]; outputs logits [B, S, V] and present.L.key /
.value [B, H, past+S, D], each a Concat(past, new) on the sequence axis),
plus torch's own logits for a token sequence run through the cache, for
`kiln compile --kv-cache` (tests/generate/past/run_past.sh).

Writes, into OUTDIR:
  decoder_with_past.onnx + reference.bin    GPT-2-like, opset 14 (masked_fill, a constant scale)
  decoder_hf_style.onnx + reference_hf_style.bin   as Hugging Face's GPT-2 writes attention
                                            (scale from value.size(-1), additive mask, no attention_mask)
  decoder_llama.onnx + reference_llama.bin  Llama-like, opset 17 (RMSNorm, rotary, SiLU gate, untied head,
                                            2 key/value heads for 4 query heads, repeated as Hugging Face does)
  bad_concat_axis.onnx, bad_positions_from_past.onnx, bad_alibi.onnx   for the refusals
A reference is int64 n, int64 vocab, int64 prefill (the first chunk's
length), int64 tokens[n], float32 logits[n][vocab] (logits[i]: after token
i). torch (Debian's 1.13 on /usr/bin/python3) and fixed seeds: the files
are committed, this script says how they were made."""
import math
import struct
import sys

import torch
import torch.nn as nn

LAYERS, D, HEADS, VOCAB, MAXPOS = 2, 32, 4, 64, 64
HD = D // HEADS
# "plain": the scores divided by a Python constant, masked_fill (a Where);
# "hf": as Hugging Face's GPT-2 writes it — concatenated on dim -2, the
# scale from value.size(-1) (a Shape of the present values), an additive
# mask, tanh GELU, and no attention_mask input (decoder_hf_style.onnx)
STYLE = "plain"
KV_HEADS = HEADS  # Llama: fewer key/value heads than query heads (grouped-query attention)


def configure(layers, d, heads, vocab, maxpos, kv_heads=None):
    global LAYERS, D, HEADS, VOCAB, MAXPOS, HD, KV_HEADS
    LAYERS, D, HEADS, VOCAB, MAXPOS, HD = layers, d, heads, vocab, maxpos, d // heads
    KV_HEADS = kv_heads or heads


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D)
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)
        self.ln2 = nn.LayerNorm(D)
        self.fc = nn.Linear(D, 4 * D)
        self.out = nn.Linear(4 * D, D)

    def forward(self, x, mask, past_k, past_v):
        b, s, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=2)
        q = q.view(b, s, HEADS, HD).transpose(1, 2)          # [B, H, S, D]
        k = k.view(b, s, HEADS, HD).transpose(1, 2)
        v = v.view(b, s, HEADS, HD).transpose(1, 2)
        if STYLE == "hf":
            k = torch.cat((past_k, k), dim=-2)
            v = torch.cat((past_v, v), dim=-2)
            att = torch.matmul(q, k.transpose(-1, -2))
            att = att / torch.full([], v.size(-1) ** 0.5, dtype=att.dtype)
            att = att + (1.0 - mask.to(att.dtype)) * torch.finfo(att.dtype).min
        else:
            k = torch.cat([past_k, k], dim=2)                 # [B, H, past+S, D]
            v = torch.cat([past_v, v], dim=2)
            att = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(HD)
            if STYLE == "alibi":  # a bias on the scores kiln must not take for a mask
                keys = k.shape[2]
                dist = (torch.arange(keys)[None] - (torch.arange(s)[:, None] + keys - s)).float()
                att = att + torch.tensor([0.5 ** (i + 1) for i in range(HEADS)]).view(1, HEADS, 1, 1) * dist
            att = att.masked_fill(~mask, torch.finfo(att.dtype).min)
        att = torch.softmax(att, dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(b, s, D)
        x = x + self.proj(y)
        x = x + self.out(nn.functional.gelu(self.fc(self.ln2(x)), approximate="tanh" if STYLE == "hf" else "none"))
        return x, k, v


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, D)
        self.wpe = nn.Embedding(MAXPOS, D)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(D)

    def forward(self, input_ids, attention_mask, position_ids, *past):
        s = input_ids.shape[1]
        keys = past[0].shape[2] + s
        if position_ids is None:  # the positions after the past's length (bad_positions_from_past.onnx)
            position_ids = torch.arange(past[0].shape[2], keys).unsqueeze(0)
        # causal over the past: query i (position past + i) sees keys 0 .. past + i
        qi = torch.arange(s).unsqueeze(1) + (keys - s)
        kj = torch.arange(keys).unsqueeze(0)
        mask = (kj <= qi)[None, None]
        if attention_mask is not None:
            mask = mask & attention_mask[:, None, None, :].bool()
        x = self.wte(input_ids) + self.wpe(position_ids)
        present = []
        for i, blk in enumerate(self.blocks):
            x, k, v = blk(x, mask, past[2 * i], past[2 * i + 1])
            present += [k, v]
        logits = torch.matmul(self.ln_f(x), self.wte.weight.t())  # tied head
        return (logits, *present)


class RMSNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(D))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight


def rotate_half(x):
    return torch.cat((-x[..., HD // 2:], x[..., :HD // 2]), dim=-1)


def repeat_kv(x):
    """Hugging Face's: each key/value head once per query head of its group."""
    b, hkv, s, hd = x.shape
    if hkv == HEADS:
        return x
    x = x[:, :, None, :, :].expand(b, hkv, HEADS // hkv, s, hd)
    return x.reshape(b, HEADS, s, hd)


class LlamaBlock(nn.Module):
    """Llama as Hugging Face writes it: RMSNorm, rotary positions from
    position_ids, an additive mask, softmax in f32 cast back, SiLU gate."""
    def __init__(self):
        super().__init__()
        self.n1, self.n2 = RMSNorm(), RMSNorm()
        self.q, self.o = nn.Linear(D, D, bias=False), nn.Linear(D, D, bias=False)
        self.k, self.v = nn.Linear(D, KV_HEADS * HD, bias=False), nn.Linear(D, KV_HEADS * HD, bias=False)
        self.gate, self.up = nn.Linear(D, 3 * D // 2, bias=False), nn.Linear(D, 3 * D // 2, bias=False)
        self.down = nn.Linear(3 * D // 2, D, bias=False)

    def forward(self, x, cos, sin, mask, past_k, past_v):
        b, s, _ = x.shape
        h = self.n1(x)
        q = self.q(h).view(b, s, HEADS, HD).transpose(1, 2)
        k = self.k(h).view(b, s, KV_HEADS, HD).transpose(1, 2)
        v = self.v(h).view(b, s, KV_HEADS, HD).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k = torch.cat([past_k, k], dim=2)
        v = torch.cat([past_v, v], dim=2)
        present = k, v
        k, v = repeat_kv(k), repeat_kv(v)
        att = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(HD) + mask
        att = nn.functional.softmax(att, dim=-1, dtype=torch.float32).to(q.dtype)
        y = torch.matmul(att, v).transpose(1, 2).contiguous().reshape(b, s, D)
        x = x + self.o(y)
        h = self.n2(x)
        return (x + self.down(nn.functional.silu(self.gate(h)) * self.up(h)), *present)


class Llama(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.blocks = nn.ModuleList(LlamaBlock() for _ in range(LAYERS))
        self.norm = RMSNorm()
        self.head = nn.Linear(D, VOCAB, bias=False)  # untied
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, HD, 2).float() / HD)))

    def forward(self, input_ids, attention_mask, position_ids, *past):
        s = input_ids.shape[1]
        keys = past[0].shape[2] + s
        f = position_ids[..., None].float() * self.inv_freq
        emb = torch.cat((f, f), dim=-1)
        cos, sin = emb.cos()[:, None], emb.sin()[:, None]
        qi = torch.arange(s)[:, None] + (keys - s)
        kj = torch.arange(keys)[None]
        allowed = (kj <= qi)[None, None] & attention_mask[:, None, None, :].bool()
        mask = torch.where(allowed, 0.0, torch.finfo(torch.float32).min)
        x = self.embed(input_ids)
        present = []
        for i, blk in enumerate(self.blocks):
            x, k, v = blk(x, cos, sin, mask, past[2 * i], past[2 * i + 1])
            present += [k, v]
        return (self.head(self.norm(x)), *present)


def run(model, tokens, past):
    s = tokens.shape[1]
    plen = past[0].shape[2]
    mask = torch.ones(1, plen + s, dtype=torch.int64) if STYLE == "plain" else None
    pos = torch.arange(plen, plen + s).unsqueeze(0)
    out = model(tokens, mask, pos, *past)
    return out[0], list(out[1:])


def export(model, path, positions=True, opset=14):
    mask = STYLE == "plain"
    names_in = ["input_ids"] + (["attention_mask"] if mask else []) + (["position_ids"] if positions else [])
    names_out = ["logits"]
    dyn = {"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}}
    if mask:
        dyn["attention_mask"] = {0: "batch", 1: "total"}
    if positions:
        dyn["position_ids"] = {0: "batch", 1: "seq"}
    for i in range(LAYERS):
        for kv in ("key", "value"):
            names_in.append(f"past_key_values.{i}.{kv}")
            names_out.append(f"present.{i}.{kv}")
            dyn[names_in[-1]] = {0: "batch", 2: "past"}
            dyn[names_out[-1]] = {0: "batch", 2: "total"}
    past = [torch.randn(1, KV_HEADS, 3, HD) for _ in range(2 * LAYERS)]
    ids = torch.randint(0, VOCAB, (1, 2))
    args = (ids, torch.ones(1, 5, dtype=torch.int64) if mask else None,
            torch.arange(3, 5).unsqueeze(0) if positions else None, *past)
    torch.onnx.export(model, args, path, input_names=names_in,
                      output_names=names_out, dynamic_axes=dyn, opset_version=opset, do_constant_folding=True)


def make(outdir, onnx_name, ref_name, seed, cls=Decoder, opset=14):
    """A model with random weights, exported, and torch's logits through its
    own cache for 24 tokens (a prompt chunk of 5, then one at a time)."""
    torch.manual_seed(seed)
    model = cls().eval()
    with torch.no_grad():
        for p in model.parameters():  # larger than the default init: logits that differ
            p.mul_(2.0)
        for m in model.modules():  # norms that are not all ones and zeros
            if isinstance(m, nn.LayerNorm):
                m.weight.normal_(1.0, 0.2)
                m.bias.normal_(0.0, 0.1)
    export(model, f"{outdir}/{onnx_name}", opset=opset)
    n, prefill = 24, 5
    g = torch.Generator().manual_seed(99)
    tokens = torch.randint(0, VOCAB, (1, n), generator=g)
    rows = []
    with torch.no_grad():
        empty = [torch.zeros(1, KV_HEADS, 0, HD) for _ in range(2 * LAYERS)]
        logits, past = run(model, tokens[:, :prefill], empty)
        rows += [logits[0, i] for i in range(prefill)]
        for i in range(prefill, n):
            logits, past = run(model, tokens[:, i:i + 1], past)
            rows.append(logits[0, 0])
        full, _ = run(model, tokens, empty)  # the whole sequence at once agrees
        err = (torch.stack(rows) - full[0]).abs().max().item()
        assert err < 1e-4 * full.abs().max().item(), f"cache and full run differ by {err}"
    with open(f"{outdir}/{ref_name}", "wb") as f:
        f.write(struct.pack("<3q", n, VOCAB, prefill))
        f.write(struct.pack(f"<{n}q", *tokens[0].tolist()))
        f.write(torch.stack(rows).numpy().astype("<f4").tobytes())


def main():
    global STYLE
    outdir = sys.argv[1] if len(sys.argv) > 1 else "tests/generate/past"
    make(outdir, "decoder_with_past.onnx", "reference.bin", 1234)
    STYLE = "hf"
    configure(2, 16, 2, 32, 32)
    make(outdir, "decoder_hf_style.onnx", "reference_hf_style.bin", 4321)
    STYLE = "plain"
    configure(2, 32, 4, 64, 64, kv_heads=2)
    make(outdir, "decoder_llama.onnx", "reference_llama.bin", 777, cls=Llama, opset=17)

    # bad input for the refusals (tests/generate/past/run_bad.sh): a one-layer
    # miniature whose first past is concatenated on the heads axis
    import onnx
    configure(1, 8, 2, 8, 8, kv_heads=2)
    export(Decoder().eval(), f"{outdir}/bad_concat_axis.onnx")
    m = onnx.load(f"{outdir}/bad_concat_axis.onnx")
    cat = next(n for n in m.graph.node if n.op_type == "Concat" and n.input[0] == "past_key_values.0.key")
    next(a for a in cat.attribute if a.name == "axis").i = 1
    onnx.save(m, f"{outdir}/bad_concat_axis.onnx")
    # ... and one that computes its positions from the past's length
    export(Decoder().eval(), f"{outdir}/bad_positions_from_past.onnx", positions=False)
    # ... and one with ALiBi's bias added to the scores
    STYLE = "alibi"
    export(Decoder().eval(), f"{outdir}/bad_alibi.onnx")
    STYLE = "plain"


if __name__ == "__main__":
    main()
