"""bert_ref.py — a BERT forward pass in numpy, written from the Hugging Face
BertModel definition and independent of kiln and of examples/bert.lua, to
prove that bert.lua computes BERT from a real checkpoint's tensors.

    python bert_ref.py OUT_DIR --layers 2 --d 64 --heads 4 --d-ff 256
                       --vocab 1000 --max-pos 64 --batch 2 --seq 16 [--prefix bert.]
                       [--position-ids]

Writes OUT_DIR/weights.safetensors (random weights under Hugging Face's
names, with PREFIX in front of each; --position-ids adds the int64
embeddings.position_ids buffer some checkpoints hold) and OUT_DIR/test_data_set_0: inputs
(input_ids, attention_mask with padded tails, token_type_ids) and this
script's outputs (last_hidden_state, pooler_output), for `kiln check`.
The forward pass runs in float64; the reference is rounded to float32.
"""
import argparse
import math
import os

import numpy as np

from testdata import write_data_set, write_safetensors

EPS = 1e-12  # BERT's layer_norm_eps


def random_weights(rng, a):
    """Every tensor of a BertModel with a pooler, by its state_dict name."""
    w = {}

    def linear(name, n_out, n_in):
        w[name + ".weight"] = rng.normal(0, 0.08, (n_out, n_in))
        w[name + ".bias"] = rng.normal(0, 0.1, (n_out,))

    def layer_norm(name, d):
        w[name + ".weight"] = 1 + rng.normal(0, 0.1, (d,))
        w[name + ".bias"] = rng.normal(0, 0.1, (d,))

    w["embeddings.word_embeddings.weight"] = rng.normal(0, 0.5, (a.vocab, a.d))
    w["embeddings.position_embeddings.weight"] = rng.normal(0, 0.5, (a.max_pos, a.d))
    w["embeddings.token_type_embeddings.weight"] = rng.normal(0, 0.5, (2, a.d))
    layer_norm("embeddings.LayerNorm", a.d)
    for i in range(a.layers):
        p = f"encoder.layer.{i}."
        for part in ("query", "key", "value"):
            linear(p + "attention.self." + part, a.d, a.d)
        linear(p + "attention.output.dense", a.d, a.d)
        layer_norm(p + "attention.output.LayerNorm", a.d)
        linear(p + "intermediate.dense", a.d_ff, a.d)
        linear(p + "output.dense", a.d, a.d_ff)
        layer_norm(p + "output.LayerNorm", a.d)
    linear("pooler.dense", a.d, a.d)
    return w


def layer_norm(x, w, name):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + EPS) * w[name + ".weight"] + w[name + ".bias"]


def linear(x, w, name):
    return x @ w[name + ".weight"].T + w[name + ".bias"]


def gelu(x):
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def self_attention(x, w, p, heads, extended_mask):
    b, t, d = x.shape
    dh = d // heads

    def heads_of(name):  # [b, t, d] -> [b, heads, t, dh]
        return linear(x, w, p + "attention.self." + name).reshape(b, t, heads, dh).transpose(0, 2, 1, 3)

    q, k, v = heads_of("query"), heads_of("key"), heads_of("value")
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(dh) + extended_mask
    context = (softmax(scores) @ v).transpose(0, 2, 1, 3).reshape(b, t, d)
    return linear(context, w, p + "attention.output.dense")


def bert_forward(w, a, ids, token_types, mask):
    t = ids.shape[1]
    x = (w["embeddings.word_embeddings.weight"][ids]
         + w["embeddings.position_embeddings.weight"][np.arange(t)]
         + w["embeddings.token_type_embeddings.weight"][token_types])
    x = layer_norm(x, w, "embeddings.LayerNorm")
    # Hugging Face's extended attention mask: 0 to attend, the dtype's min to block
    extended = (1.0 - mask[:, None, None, :]) * np.finfo(np.float32).min
    for i in range(a.layers):
        p = f"encoder.layer.{i}."
        x = layer_norm(x + self_attention(x, w, p, a.heads, extended), w,
                       p + "attention.output.LayerNorm")
        h = gelu(linear(x, w, p + "intermediate.dense"))
        x = layer_norm(x + linear(h, w, p + "output.dense"), w, p + "output.LayerNorm")
    pooled = np.tanh(linear(x[:, 0], w, "pooler.dense"))
    return x, pooled


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    for key in ("layers", "d", "heads", "d-ff", "vocab", "max-pos", "batch", "seq"):
        ap.add_argument("--" + key, type=int, required=True)
    ap.add_argument("--prefix", default="")
    ap.add_argument("--position-ids", action="store_true")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    # float32 values, as the file holds them, computed on in float64
    w = {k: v.astype(np.float32).astype(np.float64) for k, v in random_weights(rng, a).items()}
    ids = rng.integers(0, a.vocab, (a.batch, a.seq)).astype(np.int64)
    token_types = rng.integers(0, 2, (a.batch, a.seq)).astype(np.int64)
    mask = np.ones((a.batch, a.seq), np.int64)
    for row in range(a.batch):  # padded tails of different lengths, row 0 unpadded
        mask[row, a.seq - row * a.seq // (2 * a.batch):] = 0
    hidden, pooled = bert_forward(w, a, ids, token_types, mask)
    os.makedirs(a.out_dir, exist_ok=True)
    tensors = {a.prefix + k: v.astype(np.float32) for k, v in w.items()}
    if a.position_ids:
        tensors[a.prefix + "embeddings.position_ids"] = np.arange(a.max_pos, dtype=np.int64)[None]
    write_safetensors(os.path.join(a.out_dir, "weights.safetensors"), tensors)
    write_data_set(os.path.join(a.out_dir, "test_data_set_0"),
                   [("input_ids", ids), ("attention_mask", mask), ("token_type_ids", token_types)],
                   [("last_hidden_state", hidden.astype(np.float32)),
                    ("pooler_output", pooled.astype(np.float32))])


if __name__ == "__main__":
    main()
