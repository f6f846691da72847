"""make_ort_bert_case.py — a tiny BERT (and GPT-2) as ONNX Runtime's
transformer optimizer leaves it (EmbedLayerNormalization,
SkipLayerNormalization, BiasGelu, FastGelu: compiler/frontend/onnx_contrib_norm.c),
in the backend-test layout with ONNX Runtime's outputs of the optimized
file (tests/ort_contrib/bert_optimized, gpt2_optimized).

Two steps, two Pythons (not run by CI):

    # 1. export: transformers 4.30 on Debian's torch 1.13
    HFENV/bin/python tools/make_ort_bert_case.py export OUT.onnx [--hidden 32 --layers 2]
    # 2. optimize with onnxruntime.transformers (model_type bert; attention
    #    left unfused, as kiln reads no com.microsoft Attention yet) and run
    /tmp/venv/bin/python tools/make_ort_bert_case.py optimize OUT.onnx DIR [--no-embed] [--seq 12]

    # or GPT-2 (tests/hf/gpt2, model_type gpt2; /tmp/venv only)
    /tmp/venv/bin/python tools/make_ort_bert_case.py gpt2 tests/hf/gpt2 DIR

`optimize` writes DIR/model.onnx (the optimized file) and
DIR/test_data_set_0 (input_ids, token_type_ids, attention_mask of --seq
tokens; ONNX Runtime's last_hidden_state of the optimized file), and
checks that it agrees with ONNX Runtime on the unoptimized export. The
export's batch and sequence dims are symbolic (the optimizer fuses the
embeddings only then); the optimized file's are set to [1, --seq]. Random weights (seeded), random ids, the last three
tokens padded. tests/ort_contrib/bert_optimized is the default size
(hidden 32, 2 layers, 12 tokens); the speed figures in DESIGN.md are of
--hidden 256 --layers 4 --seq 128.
"""
import argparse
import os
import sys

import numpy as np


def export(a):
    import torch
    import transformers as hf
    torch.manual_seed(0)
    cfg = hf.BertConfig(vocab_size=64, hidden_size=a.hidden, num_hidden_layers=a.layers,
                        num_attention_heads=max(2, a.hidden // 64), intermediate_size=4 * a.hidden,
                        max_position_embeddings=128, type_vocab_size=2)
    model = hf.BertModel(cfg, add_pooling_layer=False).eval()
    ids, types, mask = (torch.from_numpy(v) for v in inputs_for(12).values())

    class LastHidden(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, token_type_ids, attention_mask):
            return self.m(input_ids=input_ids, token_type_ids=token_type_ids,
                          attention_mask=attention_mask).last_hidden_state

    torch.onnx.export(LastHidden(model), (ids, types, mask), a.model,
                      input_names=["input_ids", "token_type_ids", "attention_mask"],
                      output_names=["last_hidden_state"], opset_version=14,
                      dynamic_axes={n: {0: "batch", 1: "seq"} for n in ("input_ids", "token_type_ids", "attention_mask")})
    print("exported", a.model, os.path.getsize(a.model), "bytes")


def inputs_for(seq):
    rng = np.random.default_rng(2)
    ids = rng.integers(1, 64, (1, seq)).astype(np.int64)
    types = np.zeros((1, seq), np.int64)
    types[0, seq // 2:] = 1
    mask = np.ones((1, seq), np.int64)
    mask[0, seq - 3:] = 0
    return {"input_ids": ids, "token_type_ids": types, "attention_mask": mask}


def optimize(a):
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model
    src = onnx.load(a.model)
    hidden = src.graph.initializer[0].dims[-1]
    opts = FusionOptions("bert")
    opts.enable_attention = False
    opts.enable_embed_layer_norm = not a.no_embed
    opt = optimize_model(a.model, model_type="bert", num_heads=0, hidden_size=0, optimization_options=opts,
                         opt_level=0)
    # the fixture's inputs fixed at [1, seq], so `kiln info` needs no --shape
    for v in list(opt.model.graph.input) + list(opt.model.graph.output):
        for d, n in zip(v.type.tensor_type.shape.dim, (1, a.seq)):
            d.dim_value = n
    os.makedirs(os.path.join(a.dir, "test_data_set_0"), exist_ok=True)
    path = os.path.join(a.dir, "model.onnx")
    opt.save_model_to_file(path)
    ops = {}
    for n in opt.model.graph.node:
        key = (n.domain or "") + ":" + n.op_type
        ops[key] = ops.get(key, 0) + 1
    print("optimized ops:", dict(sorted(ops.items())))
    feeds = inputs_for(a.seq)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ref = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    # the optimized file's own inputs (EmbedLayerNormalization wants int32)
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    feeds_opt = {}
    for i in sess.get_inputs():
        feeds_opt[i.name] = feeds[i.name].astype(np.int32 if i.type == "tensor(int32)" else np.int64)
    got = sess.run(None, feeds_opt)[0]
    print("optimized vs unoptimized (ORT): max abs err %.3g" % np.max(np.abs(got - ref)))
    for k, (name, value) in enumerate(feeds_opt.items()):
        with open(os.path.join(a.dir, "test_data_set_0", f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(value, name).SerializeToString())
    with open(os.path.join(a.dir, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(got, "last_hidden_state").SerializeToString())
    print("wrote", a.dir, os.path.getsize(path), "bytes")


def gpt2(a):
    """tests/hf/gpt2 through the optimizer as model_type gpt2: pre-norm
    SkipLayerNormalization with its input_skip_bias_sum output, FastGelu,
    and ONNX Runtime's default-domain LayerNormalization at opset 14."""
    import glob
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model
    opts = FusionOptions("gpt2")
    opts.enable_attention = False
    opt = optimize_model(os.path.join(a.src, "model.onnx"), model_type="gpt2", num_heads=0, hidden_size=0,
                         optimization_options=opts, opt_level=0)
    os.makedirs(os.path.join(a.dir, "test_data_set_0"), exist_ok=True)
    path = os.path.join(a.dir, "model.onnx")
    opt.save_model_to_file(path)
    ins = [numpy_helper.to_array(onnx.load_tensor(p))
           for p in sorted(glob.glob(os.path.join(a.src, "test_data_set_0", "input_*.pb")))]
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {i.name: v for i, v in zip(sess.get_inputs(), ins)}
    got = sess.run(None, feeds)[0]
    ref = numpy_helper.to_array(onnx.load_tensor(os.path.join(a.src, "test_data_set_0", "output_0.pb")))
    print("optimized (ORT) vs torch: max abs err %.3g" % np.max(np.abs(got - ref)))
    for k, (name, value) in enumerate(feeds.items()):
        with open(os.path.join(a.dir, "test_data_set_0", f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(value, name).SerializeToString())
    with open(os.path.join(a.dir, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(got, "last_hidden_state").SerializeToString())
    print("wrote", a.dir, os.path.getsize(path), "bytes")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="step", required=True)
    e = sub.add_parser("export")
    e.add_argument("model")
    e.add_argument("--hidden", type=int, default=32)
    e.add_argument("--layers", type=int, default=2)
    o = sub.add_parser("optimize")
    o.add_argument("model")
    o.add_argument("dir")
    o.add_argument("--no-embed", action="store_true", help="leave the embeddings unfused")
    o.add_argument("--seq", type=int, default=12, help="tokens of the test inputs")
    g = sub.add_parser("gpt2")
    g.add_argument("src", help="tests/hf/gpt2")
    g.add_argument("dir")
    a = ap.parse_args()
    {"export": export, "optimize": optimize, "gpt2": gpt2}[a.step](a)


if __name__ == "__main__":
    sys.exit(main())
