#!/usr/bin/env python3
"""Export three tiny models with current PyTorch's default ONNX exporter (tests/opset20/<name>/).

Why: since torch 2.9, `torch.onnx.export(model, args, "m.onnx")` goes through
torch.export (the "dynamo" exporter) and writes opset 20 graphs in forms the
TorchScript exporter never wrote; these hold Gelu (opset 20),
LayerNormalization, IsNaN/Where after the softmax, a GatherND'd bool mask,
ReduceMean with axes as an input and, with symbolic dims, Shape-fed
Range/Expand/Reshape. They are what a user of current PyTorch hands kiln
(issue 20):
    encoder  torch.nn.TransformerEncoder (d_model 32, 2 heads, 2 layers, batch_first)
    bert     transformers.BertModel (hidden 32, 2 layers, padding mask)
    llama    transformers.LlamaForCausalLM (hidden 32, 2 layers, GQA 2:1, causal + padding mask)
and each again as <name>_dyn with batch and sequence symbolic (dynamic_shapes).
Each is randomly initialised from a fixed seed, exported with the exporter's
defaults (dynamo=True, the opset it picks; static input shapes but for
_dyn), and written
in the ONNX backend-test layout:
    tests/opset20/<name>/model.onnx
    tests/opset20/<name>/test_data_set_0/input_K.pb, output_K.pb
    tests/opset20/<name>/test_data_set_1/...  (bert, llama: attention_mask all 0)
the outputs being ONNX Runtime's on the exported file, checked against
PyTorch's own outputs here (1e-4) for test_data_set_0. With every key masked
eager PyTorch and its own export disagree (the export's sdpa turns the NaN
rows to 0; the eager model does not), so set 1 is the exported graph's
meaning, ONNX Runtime's, only.

Route: real PyTorch export, not hand-written graphs. Produced with torch
2.15.0 (PyPI's linux wheel, run on CPU), transformers 5.24.0, onnxscript
0.7.2, onnx 1.23.2 and onnxruntime 1.32.0 from PyPI in a throw-away venv;
reruns with those versions write the same bytes (fixed seeds). PyPI's torch
wheel needs its CUDA libraries installed even on CPU (without them `import
torch` fails on libcufile.so.0), some 3 GB. Not run by CI (CI has no torch):
    python3 -m venv /tmp/torchvenv
    /tmp/torchvenv/bin/pip install torch transformers onnxscript onnx onnxruntime
    /tmp/torchvenv/bin/python tools/export_opset20_fixtures.py [--out tests/opset20] [NAME ...]
"""
import argparse
import os

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import numpy_helper

S = 12      # tokens
VOCAB = 100


def ids(gen):
    return torch.randint(1, VOCAB, (1, S), generator=gen)


def padding_mask(pad):
    m = torch.ones(1, S, dtype=torch.long)
    m[0, S - pad:] = 0
    return m


class Encoder(torch.nn.Module):
    """A plain nn.TransformerEncoder as a user writes it (defaults: ReLU, post-norm)."""

    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=2, dim_feedforward=64, batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)

    def forward(self, x):
        return self.enc(x)


def encoder(gen):
    return Encoder(), dict(x=torch.randn(1, S, 32, generator=gen))


def bert(gen):
    import transformers as hf
    m = hf.BertModel(hf.BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                   intermediate_size=64, vocab_size=VOCAB, max_position_embeddings=16,
                                   type_vocab_size=2))
    tt = torch.zeros(1, S, dtype=torch.long)
    tt[0, S // 2:] = 1
    return m, dict(input_ids=ids(gen), attention_mask=padding_mask(3), token_type_ids=tt)


def llama(gen):
    import transformers as hf
    m = hf.LlamaForCausalLM(hf.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                           num_attention_heads=2, num_key_value_heads=1,
                                           max_position_embeddings=16, vocab_size=VOCAB, use_cache=False))
    return m, dict(input_ids=ids(gen), attention_mask=padding_mask(2))


MODELS = dict(encoder=encoder, bert=bert, llama=llama)
# the same models exported with batch and sequence symbolic (torch.export
# Dims, as a user asks for a reusable file): the graphs then compute their
# shapes with Shape/Gather/Concat/Range/Expand, which kiln binds and folds
NAMES = list(MODELS) + [n + "_dyn" for n in MODELS]


class Outputs(torch.nn.Module):
    """The model called with named inputs, returning its tensor outputs as a tuple."""

    def __init__(self, model, names):
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *args):
        out = self.model(**dict(zip(self.names, args)))
        if isinstance(out, torch.Tensor):
            return (out,)
        return tuple(v for v in out.values() if isinstance(v, torch.Tensor)) if hasattr(out, "values") \
            else tuple(out)


def save(path, arr, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(arr, name).SerializeToString())


def export(name, out):
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    dynamic = name.endswith("_dyn")
    model, inputs = MODELS[name[:-4] if dynamic else name](gen)
    model.eval()
    with torch.no_grad():   # off the init's zero biases and unit norm weights, which the exporter dedups
        for p in model.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=gen))
    names = list(inputs)
    wrapped = Outputs(model, names).eval()
    args = tuple(inputs[n] for n in names)
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    dims = None
    if dynamic:
        batch, seq = torch.export.Dim("batch", min=1, max=8), torch.export.Dim("seq", min=2, max=16)
        dims = (tuple({0: batch, 1: seq} for _ in args),)   # Outputs.forward(*args)
    # the defaults otherwise: dynamo, the opset it picks, weights in model.onnx.data
    torch.onnx.export(wrapped, args, path, input_names=names, dynamic_shapes=dims)
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    opset = [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")]
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    sets = [inputs]
    if "attention_mask" in inputs:
        # every key masked: the rows sdpa's decomposition turns from NaN to 0
        # (IsNaN/Where after the Softmax)
        sets.append(dict(inputs, attention_mask=torch.zeros_like(inputs["attention_mask"])))
    for t, feed in enumerate(sets):
        sd = os.path.join(d, f"test_data_set_{t}")
        os.makedirs(sd, exist_ok=True)
        with torch.no_grad():
            ref = wrapped(*(feed[n] for n in names))
        res = sess.run(None, {i.name: feed[n].numpy() for i, n in zip(sess.get_inputs(), names)})
        for k, (i, n) in enumerate(zip(sess.get_inputs(), names)):
            save(os.path.join(sd, f"input_{k}.pb"), feed[n].numpy(), i.name)
        for k, (o, r) in enumerate(zip(sess.get_outputs(), res)):
            want = ref[k].numpy()
            err = float(np.max(np.abs(r - want)))
            if t == 0:
                assert err <= 1e-4 * max(1.0, float(np.max(np.abs(want)))), (name, t, o.name, err)
            else:   # eager and export part here (torch 2.15, transformers 5.24); the file is the reference
                print(f"  {name} test_data_set_{t} {o.name}: PyTorch eager differs from the ONNX graph by {err:.3g}")
            save(os.path.join(sd, f"output_{k}.pb"), r, o.name)
    ops = sorted({n.op_type for n in m.graph.node})
    print(name, f"opset {opset}", os.path.getsize(path), "bytes,", len(m.graph.node), "nodes:", " ".join(ops))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "opset20"))
    ap.add_argument("names", nargs="*", default=NAMES)
    a = ap.parse_args()
    print("torch", torch.__version__, "onnxruntime", ort.__version__, "onnx", onnx.__version__)
    for name in a.names:
        export(name, a.out)


if __name__ == "__main__":
    main()
