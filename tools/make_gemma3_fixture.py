#!/usr/bin/env python3
"""make_gemma3_fixture.py OUT.gguf — a tiny Gemma 3 GGUF with random
weights, for compiler/arch/gemma3.lua's tests (tests/gguf/tiny_gemma3.gguf),
written deterministically with the PyPI `gguf` package and numpy (run with
a venv that has them, e.g. build/venv/bin/python):

- gemma3.* metadata as llama.cpp's converter writes it: 3 blocks, d 64,
  4 query heads on 2 kv heads, key_length 16 (head_dim), ffn 128, rms eps
  1e-6, rope.freq_base 1e6 (global layers), sliding_window 4, and
  attention.sliding_window_pattern 3 (layers 0 and 1 local, 2 global; the
  real file leaves it at llama.cpp's default, 6), so a prompt of a few
  tokens already reaches past the window;
- the tensors llama.cpp names for gemma3 (token_embd, blk.N.attn_norm,
  attn_q/k/v/output, attn_q_norm, attn_k_norm, post_attention_norm,
  ffn_norm, ffn_gate/up/down, post_ffw_norm, output_norm; tied output):
  matrices and the embedding Q8_0 (attn_v and attn_output F32), norms F32
  around 1 (the file stores Gemma's 1 + w);
- a SentencePiece-style vocabulary (tokenizer.ggml.model "llama") laid out
  as Gemma's: <pad> <eos> <bos> <unk> <mask> (control), <start_of_turn>
  <end_of_turn> (control), user-defined "\\n", "\\n\\n" and "  ", the 256
  byte tokens <0x00>..<0xFF> (type 6), then ▁-prefixed pieces: every ASCII
  letter, digit and punctuation mark alone and 160 merges learnt from a
  fixed text, each with its score (higher merges first, as SentencePiece's
  BPE scores them); add_bos_token true, add_space_prefix false, and a
  chat template naming Gemma's turn markers.
The file is byte-identical on every run."""
import sys
from collections import Counter

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q
from gguf.quants import quantize

D, HEADS, KV_HEADS, HEAD_DIM, FFN, BLOCKS, WINDOW, PATTERN = 64, 4, 2, 16, 128, 3, 4, 3
SPACE = "\u2581"
TEXT = ("the quick brown fox jumps over the lazy dog. a kiln is an oven that turns clay into stone; "
        "the compiler turns a model into plain c that runs anywhere. the capital of france is paris, "
        "the capital of italy is rome. hello world, hello kiln! numbers: 12 345 6789.")
TEMPLATE = ("{{ bos_token }}{% for message in messages %}<start_of_turn>{{ message['role'] }}\n"
            "{{ message['content'] | trim }}<end_of_turn>\n{% endfor %}"
            "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")


def vocabulary():
    """tokens, scores, types in Gemma's layout (see above)"""
    tokens = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>",
              "\n", "\n\n", "  "]
    types = [3] * 7 + [4] * 3
    scores = [-1000.0] * 10
    for b in range(256):
        tokens.append("<0x%02X>" % b)
        types.append(6)
        scores.append(0.0)
    singles = [SPACE] + [chr(c) for c in range(33, 127)]
    # merges learnt on the text, words ▁-prefixed as SentencePiece sees them
    words = Counter((SPACE + w) if i else w for i, w in enumerate(TEXT.split(" ")))
    seqs = {w: list(w) for w in words}
    merges = []
    while len(merges) < 160:
        pairs = Counter()
        for w, n in words.items():
            s = seqs[w]
            for a, b in zip(s, s[1:]):
                pairs[a, b] += n
        if not pairs:
            break
        (a, b), _ = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        merges.append(a + b)
        for w in seqs:
            s, out, i = seqs[w], [], 0
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            seqs[w] = out
    for r, m in enumerate(merges):
        if m not in tokens:
            tokens.append(m)
            types.append(1)
            scores.append(-float(r))
    for i, s in enumerate(singles):
        tokens.append(s)
        types.append(1)
        scores.append(-1000.0 - i)
    return tokens, scores, types


def main():
    out = sys.argv[1]
    rng = np.random.default_rng(31)
    tokens, scores, types = vocabulary()
    vocab = len(tokens)
    w = gguf.GGUFWriter(out, "gemma3")
    w.add_name("tiny gemma3 (kiln test fixture, random weights)")
    w.add_context_length(128)
    w.add_embedding_length(D)
    w.add_block_count(BLOCKS)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_key_length(HEAD_DIM)
    w.add_value_length(HEAD_DIM)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(1e6)
    w.add_sliding_window(WINDOW)
    w.add_uint32("gemma3.attention.sliding_window_pattern", PATTERN)
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(2)
    w.add_eos_token_id(1)
    w.add_unk_token_id(3)
    w.add_pad_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_add_space_prefix(False)
    w.add_chat_template(TEMPLATE)

    def tensor(name, shape, kind=Q.F32, std=0.1, mean=0.0):
        x = (mean + std * rng.standard_normal(shape)).astype(np.float32)
        if kind == Q.F32:
            w.add_tensor(name, x)
        else:
            w.add_tensor(name, quantize(x, kind), raw_dtype=kind)

    tensor("token_embd.weight", (vocab, D), Q.Q8_0, std=0.05)
    tensor("output_norm.weight", (D,), mean=1.0)
    for i in range(BLOCKS):
        b = f"blk.{i}."
        tensor(b + "attn_norm.weight", (D,), mean=1.0)
        tensor(b + "attn_q.weight", (HEADS * HEAD_DIM, D), Q.Q8_0, std=0.2)
        tensor(b + "attn_k.weight", (KV_HEADS * HEAD_DIM, D), Q.Q8_0, std=0.2)
        tensor(b + "attn_v.weight", (KV_HEADS * HEAD_DIM, D), std=0.2)
        tensor(b + "attn_q_norm.weight", (HEAD_DIM,), mean=1.0)
        tensor(b + "attn_k_norm.weight", (HEAD_DIM,), mean=1.0)
        tensor(b + "attn_output.weight", (D, HEADS * HEAD_DIM), std=0.1)
        tensor(b + "post_attention_norm.weight", (D,), mean=1.0)
        tensor(b + "ffn_norm.weight", (D,), mean=1.0)
        tensor(b + "ffn_gate.weight", (FFN, D), Q.Q8_0, std=0.2)
        tensor(b + "ffn_up.weight", (FFN, D), Q.Q8_0, std=0.2)
        tensor(b + "ffn_down.weight", (D, FFN), Q.Q8_0, std=0.1)
        tensor(b + "post_ffw_norm.weight", (D,), mean=1.0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
