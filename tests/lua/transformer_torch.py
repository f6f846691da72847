"""transformer_torch.py — PyTorch's own nn.Transformer as the reference for
examples/transformer.lua: proves that the script's params carry
torch.nn.Transformer's state_dict names and that its masks, norms and
embeddings compute what PyTorch computes.

    /usr/bin/python3 transformer_torch.py OUT_DIR --batch 2 --src-len 16 --tgt-len 16
        --vocab 1000 --d 64 --heads 4 --d-ff 256 --layers 2 [--pre-norm]

Writes OUT_DIR/weights.safetensors (an nn.Transformer's state_dict with
random weights, plus the tied embedding.weight) and OUT_DIR/test_data_set_0
(src with padded tails, tgt, and the logits PyTorch computes) for
`kiln check`. The embedding, positions and tied projection around the
nn.Transformer are written here from the paper, not from the script.
"""
import argparse
import math
import os

import numpy as np
import torch

from testdata import write_data_set, write_safetensors

PAD = 0


def sinusoids(length, d):
    position = torch.arange(length, dtype=torch.float64)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * (-math.log(10000.0) / d))
    pe = torch.zeros(length, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(position * div)
    pe[:, 1::2] = torch.cos(position * div)
    return pe.float()


def randomise(model, generator):
    """Every parameter random, LayerNorms and biases included, so a
    misplaced or transposed tensor shows."""
    for name, p in model.named_parameters():
        with torch.no_grad():
            if name.endswith("norm1.weight") or name.endswith("norm2.weight") or \
               name.endswith("norm3.weight") or name.endswith("norm.weight"):
                p.copy_(1 + 0.1 * torch.randn(p.shape, generator=generator))
            elif p.dim() == 1:
                p.copy_(0.1 * torch.randn(p.shape, generator=generator))
            else:
                p.copy_(torch.randn(p.shape, generator=generator) / math.sqrt(p.shape[-1]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    for key in ("batch", "src-len", "tgt-len", "vocab", "d", "heads", "d-ff", "layers"):
        ap.add_argument("--" + key, type=int, required=True)
    ap.add_argument("--pre-norm", action="store_true")
    a = ap.parse_args()
    torch.manual_seed(3)
    g = torch.Generator().manual_seed(3)
    model = torch.nn.Transformer(d_model=a.d, nhead=a.heads, num_encoder_layers=a.layers,
                                 num_decoder_layers=a.layers, dim_feedforward=a.d_ff,
                                 dropout=0.0, batch_first=True, norm_first=a.pre_norm)
    randomise(model, g)
    model.eval()
    embedding = torch.randn(a.vocab, a.d, generator=g) / math.sqrt(a.d)

    src = torch.randint(3, a.vocab, (a.batch, a.src_len), generator=g)
    tgt = torch.randint(3, a.vocab, (a.batch, a.tgt_len), generator=g)
    for row in range(1, a.batch):  # padded tails; row 0 unpadded
        src[row, a.src_len - row * a.src_len // (2 * a.batch):] = PAD

    def embed(ids):
        return embedding[ids] * math.sqrt(a.d) + sinusoids(ids.shape[1], a.d)

    causal = model.generate_square_subsequent_mask(a.tgt_len)
    padding = src == PAD
    out = model(embed(src), embed(tgt), tgt_mask=causal, src_key_padding_mask=padding,
                memory_key_padding_mask=padding)
    logits = (out @ embedding.T).detach().numpy()

    tensors = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    tensors["embedding.weight"] = embedding.numpy()
    os.makedirs(a.out_dir, exist_ok=True)
    write_safetensors(os.path.join(a.out_dir, "weights.safetensors"), tensors)
    write_data_set(os.path.join(a.out_dir, "test_data_set_0"),
                   [("src", src.numpy()), ("tgt", tgt.numpy())], [("logits", logits)])


if __name__ == "__main__":
    main()
