#!/usr/bin/python3
"""Export kiln's transformer test fixtures: PyTorch models -> ONNX + reference outputs.

Why: kiln has to compile what PyTorch really exports (Shape/Gather/Concat shape
arithmetic, bool masks, Where, Trilu, ...), not hand-cleaned graphs, so these
fixtures come straight from torch.onnx.export with default settings and no
simplifier. Reference outputs come from the same PyTorch model in float32.

Layout (the ONNX backend-test layout), one folder per fixture:
    tests/models/<name>/model.onnx
    tests/models/<name>/test_data_set_0/input_K.pb, output_K.pb
each .pb a serialized onnx.TensorProto whose name is the graph input/output name.

Run with Debian's python, not the first python3 on PATH:
    /usr/bin/python3 tools/export_fixtures.py [--out tests/models] [--only NAME ...]
Needs Debian 12 packages: python3-torch (1.13, CPU), python3-onnx (1.12),
python3-numpy. Never pip-install torch for this.

Notes on how the models are exported:
- model.eval() (dropout off) but grad left ENABLED: PyTorch's fused fast path
  for TransformerEncoderLayer (aten::_transformer_encoder_layer_fwd, nested
  tensors) has no ONNX form and is only taken under no_grad/inference_mode.
  The reference outputs are computed on the same (slow, exportable) path.
- nn.TransformerEncoder/Decoder deep-copy one layer, so every parameter is
  re-drawn per layer; LayerNorm gamma/beta and all biases are non-trivial so a
  bug in any of them changes the output.
- Fixed input shapes (no dynamic_axes), a fixed seed per fixture, so reruns on
  the same machine write identical bytes.
"""

import argparse
import collections
import math
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F

SEED = 1234


# ---------------------------------------------------------------- weights

def reinit_(module, gen):
    """Give every parameter its own random draw (layers are deep copies)."""
    for mod in module.modules():
        if isinstance(mod, nn.LayerNorm):
            with torch.no_grad():
                mod.weight.copy_(1 + 0.1 * torch.randn(mod.weight.shape, generator=gen))
                mod.bias.copy_(0.1 * torch.randn(mod.bias.shape, generator=gen))
            continue
        for name, p in mod.named_parameters(recurse=False):
            with torch.no_grad():
                if p.dim() >= 2:
                    fan_out, fan_in = p.shape[0], p.shape[1]
                    bound = math.sqrt(6.0 / (fan_in + fan_out))   # xavier uniform
                    p.copy_((torch.rand(p.shape, generator=gen) * 2 - 1) * bound)
                else:
                    p.copy_(0.1 * torch.randn(p.shape, generator=gen))


def encoder(norm_first=False):
    layer = nn.TransformerEncoderLayer(64, 4, 256, dropout=0.1, batch_first=True,
                                       norm_first=norm_first)
    enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    return enc


# ---------------------------------------------------------------- models

class EncoderNoMask(nn.Module):
    def __init__(self, enc):
        super().__init__()
        self.enc = enc

    def forward(self, src):
        return self.enc(src)


class EncoderPadMask(nn.Module):
    def __init__(self, enc):
        super().__init__()
        self.enc = enc

    def forward(self, src, src_key_padding_mask):
        return self.enc(src, src_key_padding_mask=src_key_padding_mask)


class DecoderLayerCausal(nn.Module):
    """One decoder layer; the causal mask is built in forward, so it is in the graph."""

    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerDecoderLayer(64, 4, 256, dropout=0.1, batch_first=True)

    def forward(self, tgt, memory):
        n = tgt.size(1)
        causal = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
        return self.layer(tgt, memory, tgt_mask=causal)


def sinusoid_table(max_len, d_model):
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(same)."""
    pos = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32)
                    * (-math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe


class TransformerED(nn.Module):
    """"Attention Is All You Need"-style encoder-decoder on token ids.

    One embedding shared by source, target and the output projection (tied
    weights), scaled by sqrt(d_model), plus a sinusoidal position buffer.
    Padding masks come from the ids, the causal mask is built in forward.
    """

    def __init__(self, vocab=50, d_model=32, nhead=4, ff=64, layers=2, pad_id=0):
        super().__init__()
        self.d_model, self.pad_id = d_model, pad_id
        self.embed = nn.Embedding(vocab, d_model)
        self.register_buffer("pos", sinusoid_table(64, d_model))
        self.transformer = nn.Transformer(d_model, nhead, layers, layers, ff, dropout=0.1,
                                          batch_first=True, norm_first=False)

    def embed_ids(self, ids):
        x = self.embed(ids) * math.sqrt(self.d_model)
        return x + self.pos[: ids.size(1)]

    def forward(self, src_ids, tgt_ids):
        src_pad = src_ids == self.pad_id
        tgt_pad = tgt_ids == self.pad_id
        n = tgt_ids.size(1)
        causal = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
        h = self.transformer(self.embed_ids(src_ids), self.embed_ids(tgt_ids),
                             tgt_mask=causal,
                             src_key_padding_mask=src_pad,
                             tgt_key_padding_mask=tgt_pad,
                             memory_key_padding_mask=src_pad)
        return F.linear(h, self.embed.weight)


def token_ids(gen, lengths, seq_len, vocab):
    """Random ids in [1, vocab) with trailing pad (0) after each length."""
    ids = torch.randint(1, vocab, (len(lengths), seq_len), generator=gen)
    for b, n in enumerate(lengths):
        ids[b, n:] = 0
    return ids


# ---------------------------------------------------------------- fixtures

def fixtures():
    """Yield (name, model, inputs as OrderedDict, output names, opset)."""
    gen = torch.Generator().manual_seed(SEED)
    enc = encoder()
    reinit_(enc, gen)
    src = torch.randn(2, 16, 64, generator=gen)
    pad = torch.zeros(2, 16, dtype=torch.bool)
    pad[0, 13:] = True                 # row 0: 3 trailing pads; row 1: none
    yield "encoder_2l_op14", EncoderNoMask(enc), {"src": src}, ["out"], 14
    yield "encoder_2l_op17", EncoderNoMask(enc), {"src": src}, ["out"], 17
    yield ("encoder_2l_padmask", EncoderPadMask(enc),
           {"src": src, "src_key_padding_mask": pad}, ["out"], 14)

    gen = torch.Generator().manual_seed(SEED + 1)
    dec = DecoderLayerCausal()
    reinit_(dec, gen)
    tgt = torch.randn(2, 12, 64, generator=gen)
    mem = torch.randn(2, 16, 64, generator=gen)
    yield "decoder_layer_causal", dec, {"tgt": tgt, "memory": mem}, ["out"], 14

    gen = torch.Generator().manual_seed(SEED + 2)
    ed = TransformerED()
    reinit_(ed, gen)
    with torch.no_grad():              # N(0, d^-1/2) so embed * sqrt(d) is unit scale
        ed.embed.weight.copy_(torch.randn(ed.embed.weight.shape, generator=gen)
                              / math.sqrt(ed.d_model))
    src_ids = token_ids(gen, [10, 7], 10, 50)
    tgt_ids = token_ids(gen, [6, 9], 9, 50)
    yield "transformer_ed", ed, {"src_ids": src_ids, "tgt_ids": tgt_ids}, ["logits"], 14

    gen = torch.Generator().manual_seed(SEED + 3)
    pre = encoder(norm_first=True)
    reinit_(pre, gen)
    src = torch.randn(2, 16, 64, generator=gen)
    yield "encoder_2l_prenorm", EncoderNoMask(pre), {"src": src}, ["out"], 14


# ---------------------------------------------------------------- writing

def write_tensor(path, arr, name):
    t = numpy_helper.from_array(np.ascontiguousarray(arr), name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def op_counts(model):
    return collections.Counter(n.op_type for n in model.graph.node)


def export_one(outdir, name, model, inputs, output_names, opset):
    """Export one fixture; grad stays enabled (see the header)."""
    assert torch.is_grad_enabled()
    model.eval()
    d = os.path.join(outdir, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    args = tuple(inputs.values())
    outs = model(*args)
    outs = outs if isinstance(outs, tuple) else (outs,)
    path = os.path.join(d, "model.onnx")
    torch.onnx.export(model, args, path, opset_version=opset,
                      input_names=list(inputs), output_names=output_names)

    m = onnx.load(path)
    onnx.checker.check_model(m)
    graph_in = [i.name for i in m.graph.input]
    graph_out = [o.name for o in m.graph.output]
    if graph_in != list(inputs) or graph_out != output_names:
        sys.exit(f"{name}: graph inputs {graph_in} / outputs {graph_out} "
                 f"differ from {list(inputs)} / {output_names}")
    for k, (iname, x) in enumerate(inputs.items()):
        write_tensor(os.path.join(d, "test_data_set_0", f"input_{k}.pb"), x.numpy(), iname)
    for k, (oname, y) in enumerate(zip(output_names, outs)):
        write_tensor(os.path.join(d, "test_data_set_0", f"output_{k}.pb"),
                     y.detach().numpy().astype(np.float32), oname)

    shapes = ", ".join(f"{n}{list(x.shape)}" for n, x in inputs.items())
    oshapes = ", ".join(f"{n}{list(y.shape)}" for n, y in zip(output_names, outs))
    print(f"== {name}: opset {opset}, {os.path.getsize(path)} bytes, "
          f"{len(m.graph.node)} nodes, {len(m.graph.initializer)} initializers")
    print(f"   in: {shapes}  out: {oshapes}")
    for op, n in sorted(op_counts(m).items()):
        print(f"   {op:24s} {n}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "..", "tests", "models"))
    ap.add_argument("--only", nargs="*", help="fixture names to export (default: all)")
    a = ap.parse_args()
    torch.manual_seed(SEED)
    torch.set_num_threads(1)           # same summation order on every run
    for name, model, inputs, outs, opset in fixtures():
        if a.only and name not in a.only:
            continue
        export_one(a.out, name, model, inputs, outs, opset)


if __name__ == "__main__":
    main()
