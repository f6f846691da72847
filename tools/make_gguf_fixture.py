#!/usr/bin/env python3
"""make_gguf_fixture.py OUT_DIR — write kiln's GGUF test fixtures
(tests/gguf/), deterministically, with the PyPI `gguf` package's GGUFWriter
and numpy (run it with build/venv/bin/python; no torch):

  tiny_llama.gguf  a llama-architecture model with random weights (seed 10):
                   2 blocks, d=64, 4 heads, 2 kv heads, ffn 128, context 64,
                   vocab 256, the tensor names llama.cpp uses, every type kiln
                   reads (F32 norms, F16, Q8_0, Q4_0, Q4_1 matrices), llama.*
                   metadata and a gpt2-style byte-level BPE tokenizer
                   (tokenizer.ggml.*): 3 special tokens, the 97 bytes of ASCII
                   text (tab, newline, space to '~', in GPT-2's byte-to-unicode
                   spelling) and 156 merges learnt from a fixed text, so ids
                   0..255 cover any ASCII text.
  q6k.gguf         one Q6_K tensor ("blk.0.ffn_down.weight", [64,256]), for the
                   "kiln does not read Q6_K" error, and the other types kiln
                   reads: BF16 (to f32), I32 and F64 (q6k.json: their values);
                   general.alignment 64.
  tiny_llama.json  what the C test checks against: every tensor's name, ggml
                   type, ne, its first and last 8 values and their sum as f32
                   (dequantized by the gguf package for the block types), and
                   the metadata.

The files are byte-identical on every run (the writer is deterministic and
the random generator seeded)."""
import json
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q
from gguf.quants import quantize, dequantize

D, HEADS, KV_HEADS, FFN, BLOCKS, CTX, VOCAB = 64, 4, 2, 128, 2, 64, 256
HEAD_DIM = D // HEADS

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
TEXT = ("the quick brown fox jumps over the lazy dog. a kiln is an oven that turns clay into "
        "stone; the compiler turns a model into plain c that runs anywhere. hello world, hello "
        "kiln! there are three things in the room: a table, a chair and a lamp. the weights are "
        "stored in blocks of thirty two numbers with one scale each, and the tokens are merged "
        "pair by pair until the vocabulary is full.\n")


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable character map."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def tokenizer():
    """tokens, token types and merges: specials, ASCII bytes, then merges
    learnt greedily (most frequent pair, ties by the pair's text) on TEXT."""
    b2u = bytes_to_unicode()
    ascii_bytes = [9, 10] + list(range(32, 127))
    tokens = SPECIALS + [b2u[b] for b in ascii_bytes]
    types = [3] * len(SPECIALS) + [1] * len(ascii_bytes)
    # words as GPT-2's pre-tokenizer roughly splits them: a leading space kept
    words = []
    for i, w in enumerate(TEXT.split(" ")):
        words.append([b2u[b] for b in ((" " if i else "") + w).encode()])
    merges = []
    while len(tokens) < VOCAB:
        counts = {}
        for w in words:
            for a, b in zip(w, w[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + 1
        (a, b), _ = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        merges.append(f"{a} {b}")
        tokens.append(a + b)
        types.append(1)
        for w in words:
            i = 0
            while i < len(w) - 1:
                if w[i] == a and w[i + 1] == b:
                    w[i:i + 2] = [a + b]
                i += 1
    return tokens, types, merges


def tensors(rng):
    """(name, row-major shape, ggml type) in llama.cpp's names, all types mixed."""
    out = [("token_embd.weight", (VOCAB, D), Q.Q8_0)]
    kinds = [  # per block: (q, k, v, o, gate, up, down)
        (Q.Q4_1, Q.Q4_0, Q.Q8_0, Q.F16, Q.Q4_1, Q.Q4_0, Q.F16),
        (Q.Q4_0, Q.Q8_0, Q.Q4_1, Q.Q8_0, Q.F16, Q.Q4_1, Q.Q4_0),
    ]
    for n in range(BLOCKS):
        q, k, v, o, gate, up, down = kinds[n]
        out += [
            (f"blk.{n}.attn_norm.weight", (D,), Q.F32),
            (f"blk.{n}.attn_q.weight", (D, D), q),
            (f"blk.{n}.attn_k.weight", (KV_HEADS * HEAD_DIM, D), k),
            (f"blk.{n}.attn_v.weight", (KV_HEADS * HEAD_DIM, D), v),
            (f"blk.{n}.attn_output.weight", (D, D), o),
            (f"blk.{n}.ffn_norm.weight", (D,), Q.F32),
            (f"blk.{n}.ffn_gate.weight", (FFN, D), gate),
            (f"blk.{n}.ffn_up.weight", (FFN, D), up),
            (f"blk.{n}.ffn_down.weight", (D, FFN), down),
        ]
    out += [("output_norm.weight", (D,), Q.F32), ("output.weight", (VOCAB, D), Q.F16)]
    return out


def metadata(w, tokens, types, merges):
    w.add_name("kiln tiny llama")
    w.add_block_count(BLOCKS)
    w.add_context_length(CTX)
    w.add_embedding_length(D)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(VOCAB)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_file_type(7)  # "mostly Q8_0": a mix, as llama.cpp's quantizer leaves
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_pad_token_id(2)
    w.add_add_bos_token(False)
    w.add_add_space_prefix(False)
    # one of each remaining value type, and a nested array, for the reader's tests
    w.add_int8("kiln.test.i8", -7)
    w.add_uint16("kiln.test.u16", 65535)
    w.add_int16("kiln.test.i16", -300)
    w.add_int64("kiln.test.i64", -(1 << 40))
    w.add_uint64("kiln.test.u64", 1 << 63)
    w.add_float64("kiln.test.f64", 0.1)
    w.add_array("kiln.test.floats", [0.5, -1.25, 3.0])
    w.add_array("kiln.test.nested", [[1, 2], [3]])
    w.add_array("kiln.test.big", [7] * 5000)  # past gguf_meta's 4096 items
    w.add_key_value("kiln.test.empty", "", gguf.GGUFValueType.STRING)


def write(path, arch, tensor_list, rng, add_meta):
    w = gguf.GGUFWriter(path, arch)
    add_meta(w)
    ref = []
    for name, shape, qt in tensor_list:
        x = rng.standard_normal(shape).astype(np.float32) * (0.02 if len(shape) > 1 else 1)
        if len(shape) == 1:
            x = 1 + 0.1 * x
        if qt == Q.F32:
            w.add_tensor(name, x)
            vals = x
        elif qt == Q.F16:
            h = x.astype(np.float16)
            w.add_tensor(name, h)
            vals = h.astype(np.float32)
        elif qt == Q.BF16:  # the top half of each f32 (bf16 is f32 with 16 bits dropped)
            hi = (x.view(np.uint32) >> 16).astype(np.uint16)
            w.add_tensor(name, hi.view(np.uint8).reshape(shape[0], -1), raw_dtype=qt)
            vals = (hi.astype(np.uint32) << 16).view(np.float32)
        elif qt in (Q.I32, Q.F64):
            x = (x * 1000).astype(np.int32) if qt == Q.I32 else x.astype(np.float64)
            w.add_tensor(name, x)
            vals = x
        elif qt == Q.Q6_K:  # raw random blocks with small scales: only the type matters
            nb = int(np.prod(shape)) // 256
            raw = rng.integers(0, 256, size=(nb, 210), dtype=np.uint8)
            raw[:, 208:210] = np.frombuffer(np.float16(0.001).tobytes(), np.uint8)
            w.add_tensor(name, raw.reshape(shape[0], -1), raw_dtype=qt)
            vals = None
        else:
            raw = quantize(x, qt)
            w.add_tensor(name, raw, raw_dtype=qt)
            vals = dequantize(raw, qt).astype(np.float32)
        flat = None if vals is None else vals.reshape(-1)
        ref.append({"name": name, "type": qt.name, "ne": list(reversed(shape)),
                    "head": None if flat is None else [float(v) for v in flat[:8]],
                    "tail": None if flat is None else [float(v) for v in flat[-8:]],
                    "values": None if flat is None or flat.size > 64 else [float(v) for v in flat],
                    "sum": None if flat is None else float(flat.astype(np.float64).sum())})
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return ref


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/gguf"
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(10)
    tokens, types, merges = tokenizer()
    assert len(tokens) == VOCAB and len(set(tokens)) == VOCAB
    ref = write(os.path.join(out, "tiny_llama.gguf"), "llama", tensors(rng), rng,
                lambda w: metadata(w, tokens, types, merges))
    meta = {"llama.block_count": BLOCKS, "llama.embedding_length": D,
            "llama.attention.head_count": HEADS, "llama.attention.head_count_kv": KV_HEADS,
            "llama.feed_forward_length": FFN, "llama.context_length": CTX,
            "llama.vocab_size": VOCAB, "tokenizer.ggml.tokens": tokens,
            "tokenizer.ggml.merges": merges}
    with open(os.path.join(out, "tiny_llama.json"), "w") as f:
        json.dump({"tensors": ref, "meta": meta}, f, separators=(",", ":"))
    other = write(os.path.join(out, "q6k.gguf"), "llama",
                  [("blk.0.ffn_down.weight", (64, 256), Q.Q6_K), ("extra.bf16", (2, 32), Q.BF16),
                   ("extra.i32", (2, 4), Q.I32), ("extra.f64", (3,), Q.F64)],
                  rng, lambda w: w.add_custom_alignment(64))
    with open(os.path.join(out, "q6k.json"), "w") as f:
        json.dump({"tensors": other[1:]}, f, separators=(",", ":"))


if __name__ == "__main__":
    main()
