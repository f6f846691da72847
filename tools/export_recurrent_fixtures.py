#!/usr/bin/python3
"""export_recurrent_fixtures.py — PyTorch recurrent models as ONNX fixtures
for kiln (RNN/GRU/LSTM, compiler/ops/recurrent.c), the shapes that shipped
.onnx files use:

- lstm_bi2_seqlens: a bidirectional 2-layer nn.LSTM, batch_first, run on a
  padded batch through pack_padded_sequence / pad_packed_sequence (torch
  exports the lengths as the LSTMs' sequence_lens): a diacritiser's tagger.
- gru_encoder: nn.Embedding + a 1-layer nn.GRU, batch_first, returning its
  outputs and its last hidden state: a seq2seq encoder (a name
  romaniser's).

Run with Debian's python (torch 1.13), then let ONNX Runtime write the
reference outputs (tools/make_recurrent_cases.py --ort compares them with
PyTorch's and replaces them):

    /usr/bin/python3 tools/export_recurrent_fixtures.py --out tests/models
    /tmp/venv/bin/python tools/make_recurrent_cases.py --ort tests/models/lstm_bi2_seqlens tests/models/gru_encoder

--bench writes the same models at bench/'s sizes (bench/export_models.py
calls build_lstm and build_gru). Fixed seeds: reruns write the same bytes."""
import argparse
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_fixtures as fx  # noqa: E402  (export_one, reused)

OPSET = 14


class Tagger(nn.Module):
    """Bidirectional 2-layer LSTM over padded rows of given lengths, and a
    per-step projection (a diacritic per character)."""

    def __init__(self, feat, hidden, classes):
        super().__init__()
        self.lstm = nn.LSTM(feat, hidden, num_layers=2, bidirectional=True, batch_first=True)
        self.proj = nn.Linear(2 * hidden, classes)

    def forward(self, x, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        y, _ = self.lstm(packed)
        y, _ = nn.utils.rnn.pad_packed_sequence(y, batch_first=True, total_length=x.shape[1])
        return self.proj(y)


class Encoder(nn.Module):
    """Embedding + GRU: the encoder half of a character seq2seq model."""

    def __init__(self, vocab, emb, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb)
        self.gru = nn.GRU(emb, hidden, batch_first=True)

    def forward(self, ids):
        y, h = self.gru(self.embed(ids))
        return y, h


def uniform_(m, gen, scale):
    with torch.no_grad():
        for p in m.parameters():
            p.copy_((torch.rand(p.shape, generator=gen) * 2 - 1) * scale)


def build_lstm(gen, feat=16, hidden=24, classes=8, batch=3, seq=12, lengths=(12, 7, 9)):
    m = Tagger(feat, hidden, classes)
    uniform_(m, gen, 0.3)
    x = torch.randn(batch, seq, feat, generator=gen)
    return m, {"x": x, "lengths": torch.tensor(lengths, dtype=torch.int64)}


def build_gru(gen, vocab=40, emb=16, hidden=32, seq=10):
    m = Encoder(vocab, emb, hidden)
    uniform_(m, gen, 0.3)
    return m, {"ids": torch.randint(0, vocab, (1, seq), generator=gen)}


FIXTURES = {
    "lstm_bi2_seqlens": (build_lstm, ["logits"]),
    "gru_encoder": (build_gru, ["outputs", "hidden"]),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(1)
    for k, (name, (build, outs)) in enumerate(FIXTURES.items()):
        gen = torch.Generator().manual_seed(7100 + k)
        torch.manual_seed(7100 + k)
        model, inputs = build(gen)
        model.eval()
        fx.export_one(a.out, name, model, inputs, outs, OPSET)


if __name__ == "__main__":
    main()
