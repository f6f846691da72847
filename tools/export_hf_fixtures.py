#!/usr/bin/env python3
"""Export tiny Hugging Face models as kiln test fixtures (tests/hf/<arch>/).

Why: Hugging Face's modeling code writes attention, RMSNorm and masks in
its own spellings (finfo.min fills, Where on a constant causal bias, f32
Casts of f32 values, rsqrt, rotary, a per-head position bias), and kiln's
fusion passes have to take those exports apart as they really come out of
torch.onnx.export. Each fixture is a randomly initialised model of a small
config (1-2 layers, hidden 32, 2 heads, sequence 12), exported at opset 14
with fixed input shapes, in the ONNX backend-test layout:
    tests/hf/<arch>/model.onnx
    tests/hf/<arch>/test_data_set_0/input_K.pb, output_0.pb
the output being the model's last_hidden_state from the same PyTorch model.

Not run by CI (CI has no transformers): run it by hand with the venv that
has transformers 4.30 on Debian's torch 1.13, e.g.
    /work/hfenv/bin/python tools/export_hf_fixtures.py [--out tests/hf] [ARCH ...]
Fixed seeds: reruns with the same versions write the same bytes.
"""
import argparse
import os

import torch
import transformers as hf
from onnx import numpy_helper

S = 12      # tokens
VOCAB = 64


def ids(gen):
    return torch.randint(1, VOCAB, (1, S), generator=gen)


def padding_mask(pad):
    m = torch.ones(1, S, dtype=torch.long)
    if pad:
        m[0, S - pad:] = 0
    return m


def gpt2(gen):
    m = hf.GPT2Model(hf.GPT2Config(n_embd=32, n_layer=2, n_head=2, n_positions=16, vocab_size=VOCAB,
                                   use_cache=False))
    return m, dict(input_ids=ids(gen))


def gptneo(gen):
    # layer 0 global (causal), layer 1 local (a banded constant: static)
    m = hf.GPTNeoModel(hf.GPTNeoConfig(hidden_size=32, num_layers=2, num_heads=2, max_position_embeddings=16,
                                       vocab_size=VOCAB, attention_types=[[["global", "local"], 1]],
                                       window_size=4, use_cache=False))
    return m, dict(input_ids=ids(gen))


def t5enc(gen):
    m = hf.T5EncoderModel(hf.T5Config(d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2,
                                      vocab_size=VOCAB, relative_attention_num_buckets=8))
    return m, dict(input_ids=ids(gen), attention_mask=padding_mask(3))


def llama(gen):
    m = hf.LlamaModel(hf.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                     num_attention_heads=2, max_position_embeddings=16, vocab_size=VOCAB,
                                     use_cache=False))
    return m, dict(input_ids=ids(gen), attention_mask=padding_mask(0))


def bart(gen):
    m = hf.BartModel(hf.BartConfig(d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                                   decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
                                   max_position_embeddings=16, vocab_size=VOCAB, use_cache=False))
    return m, dict(input_ids=ids(gen), attention_mask=padding_mask(3), decoder_input_ids=ids(gen))


ARCHS = dict(gpt2=gpt2, gptneo=gptneo, t5enc=t5enc, llama=llama, bart=bart)


class LastHidden(torch.nn.Module):
    """The model called with named inputs, returning last_hidden_state."""

    def __init__(self, model, names):
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *args):
        out = self.model(**dict(zip(self.names, args)))
        return out[0] if isinstance(out, tuple) else out.last_hidden_state


def export(arch, out):
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    model, inputs = ARCHS[arch](gen)
    model.eval()
    names = list(inputs)
    wrapped = LastHidden(model, names)
    args = tuple(inputs[n] for n in names)
    with torch.no_grad():
        ref = wrapped(*args)
    d = os.path.join(out, arch)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    torch.onnx.export(wrapped, args, os.path.join(d, "model.onnx"), input_names=names,
                      output_names=["last_hidden_state"], opset_version=14)
    for i, n in enumerate(names):
        with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(inputs[n].numpy(), n).SerializeToString())
    with open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(ref.numpy(), "last_hidden_state").SerializeToString())
    print(arch, os.path.getsize(os.path.join(d, "model.onnx")), "bytes")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "hf"))
    ap.add_argument("archs", nargs="*", default=list(ARCHS))
    a = ap.parse_args()
    for arch in a.archs:
        export(arch, a.out)


if __name__ == "__main__":
    main()
