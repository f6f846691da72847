#!/usr/bin/python3
"""Export the benchmark models (issue 5's four, issue 20's two recurrent ones) to ONNX, with one random input set.

Run with Debian's python (python3-torch 1.13, python3-onnx), never a pip torch:
    /usr/bin/python3 bench/export_models.py --out build/bench/models [--only NAME ...]

Each model lands in OUT/<name>/model.onnx with OUT/<name>/test_data_set_0/
input_K.pb (the input every engine is timed and compared on) and output_K.pb
(PyTorch's output), the ONNX backend-test layout `kiln check` reads. The
export itself is tools/export_fixtures.py's: torch.onnx.export, opset 14,
fixed shapes (batch 1), grad enabled (no fused fast path), a fixed seed per
model, every layer re-drawn so each has its own weights (reinit_).
"""

import argparse
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import export_fixtures as fx  # noqa: E402  (reused, not modified)
import export_recurrent_fixtures as rx  # noqa: E402  (the recurrent models, at bench sizes)

SEED = 5000
OPSET = 14


class Encoder(nn.Module):
    """nn.TransformerEncoder of post-LN layers on a float input [1, seq, d]."""

    def __init__(self, d, heads, ff, layers, activation="relu"):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.1, batch_first=True,
                                           activation=activation)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, src):
        return self.enc(src)


class EncoderDecoder(fx.TransformerED):
    """tools/export_fixtures.py's encoder-decoder (shared embedding x sqrt(d),
    sinusoidal positions, tied output projection) with only the causal
    target mask: every token is real, so no padding masks."""

    def forward(self, src_ids, tgt_ids):
        n = tgt_ids.size(1)
        causal = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
        h = self.transformer(self.embed_ids(src_ids), self.embed_ids(tgt_ids), tgt_mask=causal)
        return F.linear(h, self.embed.weight)


def encoder_model(gen, d, heads, ff, layers, seq, activation="relu"):
    m = Encoder(d, heads, ff, layers, activation)
    fx.reinit_(m, gen)
    return m, {"src": torch.randn(1, seq, d, generator=gen)}


def encdec_model(gen, vocab=1000, d=128, heads=4, ff=512, layers=2, seq=32):
    m = EncoderDecoder(vocab, d, heads, ff, layers)
    fx.reinit_(m, gen)
    with torch.no_grad():  # N(0, d^-1/2) so embed * sqrt(d) is unit scale
        m.embed.weight.copy_(torch.randn(m.embed.weight.shape, generator=gen) / math.sqrt(d))
    src = torch.randint(1, vocab, (1, seq), generator=gen)
    tgt = torch.randint(1, vocab, (1, seq), generator=gen)
    return m, {"src_ids": src, "tgt_ids": tgt}


# name -> (builder, output name); the order is the table's
MODELS = {
    "enc2_d64_s16": (lambda g: encoder_model(g, 64, 4, 256, 2, 16), "out"),
    "enc4_d256_s64": (lambda g: encoder_model(g, 256, 8, 1024, 4, 64), "out"),
    "encdec2_d128_s32": (lambda g: encdec_model(g), "logits"),
    "minilm6_d384_s128": (lambda g: encoder_model(g, 384, 12, 1536, 6, 128, "gelu"), "out"),
    # recurrent (issue 20): a diacritiser's bidirectional 2-layer LSTM over 100 characters, and
    # a name romaniser's Embedding + GRU encoder over 32
    "lstm_bi2_h256_s100": (lambda g: rx.build_lstm(g, feat=64, hidden=256, classes=16, batch=1, seq=100,
                                                   lengths=(100,)), "logits"),
    "gru_enc_h256_s32": (lambda g: rx.build_gru(g, vocab=100, emb=64, hidden=256, seq=32), ["outputs", "hidden"]),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", nargs="*", help="model names (default: all)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    for k, (name, (build, out_name)) in enumerate(MODELS.items()):
        if a.only and name not in a.only:
            continue
        gen = torch.Generator().manual_seed(SEED + k)
        torch.manual_seed(SEED + k)
        model, inputs = build(gen)
        fx.export_one(a.out, name, model, inputs, out_name if isinstance(out_name, list) else [out_name], OPSET)


if __name__ == "__main__":
    main()
