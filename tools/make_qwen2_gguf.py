#!/usr/bin/env python3
"""make_qwen2_gguf.py [OUT_DIR] — small random GGUF files for kiln's tests of
GGUF files as models (tests/gguf/arch/), written with the PyPI `gguf`
package's GGUFWriter and numpy (run it with build/venv/bin/python or any
Python that has gguf), deterministically (seed 23):

  tiny_qwen2.gguf         a qwen2-architecture model as llama.cpp's
                          convert_hf_to_gguf.py lays one out: 2 blocks, d=64,
                          4 heads, 2 kv heads (head_dim 16), ffn 128, vocab
                          256; qwen2.* keys (rope.freq_base 1e6, rms eps 1e-6,
                          no qwen2.vocab_size: the vocabulary is token_embd's
                          rows), Q/K/V with F32 biases, Q and K in Hugging
                          Face's row order (NEOX rope: halves, not pairs), no
                          output.weight (tied embeddings, as Qwen2-0.5B), the
                          matrices in F16, Q8_0, Q4_0 and Q4_1, and the
                          byte-level BPE vocabulary of tiny_llama.gguf
                          (tools/make_gguf_fixture.py) with pre 'qwen2'.
  tiny_qwen2_untied.gguf  the same with its own output.weight (Q8_0).
  unknown_arch.gguf       metadata only: general.architecture
                          'kiln-test-unknown' (an architecture no one will
                          describe), a few of its keys and the tokenizer,
                          for the refusals and `kiln info`.

Weights are large enough (std 0.15 for matrices, 1 for the embeddings)
that the logits spread widely and greedy decoding has no near-ties:
tools/qwen2_reference.py's float64 answer and kiln's f32 C then pick the
same tokens."""
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q
from gguf.quants import quantize

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_gguf_fixture import tokenizer  # noqa: E402  the same vocabulary as tiny_llama.gguf

D, HEADS, KV_HEADS, FFN, BLOCKS, CTX, VOCAB = 64, 4, 2, 128, 2, 64, 256
HEAD_DIM = D // HEADS


def tensors(untied):
    """(name, row-major shape, ggml type, std) in llama.cpp's qwen2 names."""
    out = [("token_embd.weight", (VOCAB, D), Q.Q8_0, 1.0)]
    kinds = [  # per block: (q, k, v, o, gate, up, down)
        (Q.Q8_0, Q.F16, Q.Q4_1, Q.Q4_0, Q.F16, Q.Q8_0, Q.Q4_1),
        (Q.F16, Q.Q4_0, Q.Q8_0, Q.Q4_1, Q.Q4_0, Q.F16, Q.Q8_0),
    ]
    for n in range(BLOCKS):
        q, k, v, o, gate, up, down = kinds[n]
        b = f"blk.{n}."
        out += [
            (b + "attn_norm.weight", (D,), Q.F32, None),
            (b + "attn_q.weight", (D, D), q, 0.15),
            (b + "attn_q.bias", (D,), Q.F32, 0.3),
            (b + "attn_k.weight", (KV_HEADS * HEAD_DIM, D), k, 0.15),
            (b + "attn_k.bias", (KV_HEADS * HEAD_DIM,), Q.F32, 0.3),
            (b + "attn_v.weight", (KV_HEADS * HEAD_DIM, D), v, 0.15),
            (b + "attn_v.bias", (KV_HEADS * HEAD_DIM,), Q.F32, 0.3),
            (b + "attn_output.weight", (D, D), o, 0.15),
            (b + "ffn_norm.weight", (D,), Q.F32, None),
            (b + "ffn_gate.weight", (FFN, D), gate, 0.15),
            (b + "ffn_up.weight", (FFN, D), up, 0.15),
            (b + "ffn_down.weight", (D, FFN), down, 0.1),
        ]
    out.append(("output_norm.weight", (D,), Q.F32, None))
    if untied:
        out.append(("output.weight", (VOCAB, D), Q.Q8_0, 1.0))
    return out


def add_tokenizer(w, pre):
    tokens, types, merges = tokenizer()
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(0)  # "<|endoftext|>", as Qwen2's files say (and add_bos false)
    w.add_eos_token_id(2)
    w.add_pad_token_id(0)
    w.add_add_bos_token(False)
    w.add_chat_template("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
                        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def write_qwen2(path, untied, rng):
    w = gguf.GGUFWriter(path, "qwen2")
    w.add_name("kiln tiny qwen2" + (" untied" if untied else ""))
    w.add_block_count(BLOCKS)
    w.add_context_length(CTX)
    w.add_embedding_length(D)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_freq_base(1000000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_file_type(7)
    add_tokenizer(w, "qwen2")
    for name, shape, qt, std in tensors(untied):
        if std is None:  # a norm's scale
            x = (1 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        else:
            x = (std * rng.standard_normal(shape)).astype(np.float32)
        if qt == Q.F32:
            w.add_tensor(name, x)
        elif qt == Q.F16:
            w.add_tensor(name, x.astype(np.float16))
        else:
            w.add_tensor(name, quantize(x, qt), raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_unknown(path):
    arch = "kiln-test-unknown"
    w = gguf.GGUFWriter(path, arch)
    w.add_name("kiln test: an architecture kiln has no description for")
    w.add_uint32(arch + ".block_count", 3)
    w.add_uint32(arch + ".embedding_length", 32)
    w.add_float32(arch + ".rope.freq_base", 10000.0)
    add_tokenizer(w, "smollm")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/gguf/arch"
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(23)
    write_qwen2(os.path.join(out, "tiny_qwen2.gguf"), False, rng)
    write_qwen2(os.path.join(out, "tiny_qwen2_untied.gguf"), True, rng)
    write_unknown(os.path.join(out, "unknown_arch.gguf"))


if __name__ == "__main__":
    main()
