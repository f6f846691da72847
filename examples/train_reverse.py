"""train_reverse.py — train the encoder–decoder of examples/transformer.lua
in PyTorch on a toy task (reverse a sequence of tokens) and save its
weights as .safetensors under the script's names, so the whole path can be
seen working: PyTorch training -> weights file -> Lua model -> C -> app.

    $ export PATH=$PWD/build:$PATH
    $ mkdir -p out
    $ /usr/bin/python3 examples/train_reverse.py out/reverse.safetensors   # 600 steps, a minute or two on a CPU
    $ kiln compile examples/transformer.lua --set vocab=16 --weights out/reverse.safetensors \
        -o out/transformer.c
    $ cc -O2 -Iout examples/translate_app.c out/transformer.c -lm -o out/translate
    $ out/translate 5 9 12 3 7 | grep "7 3 12 9 5 2"                # the source reversed

The model is torch.nn.Transformer (post-norm, final LayerNorms, ReLU) with
the script's wrapping: one embedding matrix shared by source, target and
output projection, scaled by sqrt(d), plus sinusoidal positions; padding
masks from the source ids, a causal mask on the target. Tokens: 0 PAD,
1 BOS, 2 EOS, 3..15 the symbols. Needs torch (Debian's python3-torch).
"""
import json
import math
import struct
import sys

import torch

PAD, BOS, EOS = 0, 1, 2
VOCAB, D, HEADS, D_FF, LAYERS, LEN = 16, 64, 4, 256, 2, 16   # transformer.lua's defaults, vocab 16
MAX_SYMBOLS = 10


def sinusoids(length, d):
    position = torch.arange(length, dtype=torch.float64)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * (-math.log(10000.0) / d))
    pe = torch.zeros(length, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(position * div)
    pe[:, 1::2] = torch.cos(position * div)
    return pe.float()


class Reverser(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = torch.nn.Parameter(torch.randn(VOCAB, D) / math.sqrt(D))
        self.transformer = torch.nn.Transformer(D, HEADS, LAYERS, LAYERS, D_FF, dropout=0.0,
                                                batch_first=True)
        self.register_buffer("positions", sinusoids(LEN, D))
        self.register_buffer("causal", self.transformer.generate_square_subsequent_mask(LEN))

    def forward(self, src, tgt):
        def embed(ids):
            return self.embedding[ids] * math.sqrt(D) + self.positions[:ids.shape[1]]
        padding = src == PAD
        out = self.transformer(embed(src), embed(tgt), tgt_mask=self.causal,
                               src_key_padding_mask=padding, memory_key_padding_mask=padding)
        return out @ self.embedding.T


def batch(n, generator):
    """src: symbols, EOS, padding; tgt_in: BOS + reversed symbols + EOS;
    tgt_out: the same shifted left (the next token at each position)."""
    src = torch.full((n, LEN), PAD)
    tgt = torch.full((n, LEN + 1), PAD)
    for row in range(n):
        k = int(torch.randint(1, MAX_SYMBOLS + 1, (1,), generator=generator))
        symbols = torch.randint(3, VOCAB, (k,), generator=generator)
        src[row, :k] = symbols
        src[row, k] = EOS
        tgt[row, 0] = BOS
        tgt[row, 1:k + 1] = symbols.flip(0)
        tgt[row, k + 1] = EOS
    return src, tgt[:, :LEN], tgt[:, 1:]


def save_safetensors(path, model):
    tensors = {"embedding.weight": model.embedding}
    tensors.update({k: v for k, v in model.transformer.state_dict().items()})
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        data = t.detach().contiguous().float().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: train_reverse.py OUT.safetensors")
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    model = Reverser()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=PAD)
    for step in range(1, 601):
        src, tgt_in, tgt_out = batch(64, generator)
        loss = loss_fn(model(src, tgt_in).reshape(-1, VOCAB), tgt_out.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            print(f"step {step}: loss {loss.item():.4f}", flush=True)
    save_safetensors(sys.argv[1], model)
    print(f"wrote {sys.argv[1]}")


if __name__ == "__main__":
    main()
