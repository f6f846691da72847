"""make_tiny_gguf.py DIR — tiny GGUF files (PyPI gguf's GGUFWriter) for the
tokenizer tables: good.gguf, a byte-level BPE vocabulary of the 256 byte
tokens, two control tokens and a few merges; and one file per way a
vocabulary can be wrong, bad_*.gguf, each with the message kiln must give
in bad_*.expect. No tensors: tokenizer_emit reads metadata only."""
import os
import sys

import gguf


def byte_chars():
    """GPT-2's bytes_to_unicode: byte -> the character that writes it"""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


MERGES = ["Ġ t", "h e", "Ġt he", "i n", "Ġ a", "Ġ Ġ", "ĠĠ Ġ", "o n", "Ġt h", "e n", "Ġthe n"]


def vocab(merges):
    tokens = ["<|im_start|>", "<|im_end|>"] + [c for _, c in sorted(byte_chars().items())]
    for m in merges:
        l, r = m.split(" ", 1)
        if l + r not in tokens:
            tokens.append(l + r)
    return tokens


def write(path, tokens, merges, types=None, model="gpt2", bos=0, eos=1):
    w = gguf.GGUFWriter(path, "llama")
    w.add_tokenizer_model(model)
    w.add_tokenizer_pre("smollm")
    w.add_token_list(tokens)
    w.add_token_types(types or [3, 3] + [1] * (len(tokens) - 2))
    w.add_token_merges(merges)
    w.add_bos_token_id(bos)
    w.add_eos_token_id(eos)
    w.add_add_bos_token(False)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    tokens = vocab(MERGES)
    write(f"{out}/good.gguf", tokens, MERGES)
    bad = {
        "model": (dict(model="bert"), "key 'tokenizer.ggml.model' is 'bert'; expected 'gpt2' (byte-level BPE) or "
                  "'llama' (SentencePiece)"),
        "spm_scores": (dict(model="llama"), "key 'tokenizer.ggml.scores' is absent; expected a SentencePiece "
                       "vocabulary's score per token"),
        "merge_part": (dict(merges=MERGES + ["q zz"]),
                       "key 'tokenizer.ggml.merges': merge 11 'q zz': its right part 'zz' is not in the vocabulary"),
        "merge_result": (dict(merges=MERGES + ["q q"]),
                         "merge 11 'q q': its result 'qq' is not in the vocabulary"),
        "merge_space": (dict(merges=MERGES + ["qq"]), "merge 11 'qq' is not two tokens split by a space"),
        "not_byte_level": (dict(tokens=tokens + ["€uro"]),
                           "key 'tokenizer.ggml.tokens': token %d '€uro' is not byte-level BPE text" % len(tokens)),
        "bos": (dict(bos=len(tokens)), "key 'tokenizer.ggml.bos_token_id' is %d; expected a token id below %d"
                % (len(tokens), len(tokens))),
    }
    for name, (kw, msg) in bad.items():
        args = dict(tokens=tokens, merges=MERGES)
        args.update(kw)
        write(f"{out}/bad_{name}.gguf", args.pop("tokens"), args.pop("merges"), **args)
        with open(f"{out}/bad_{name}.expect", "w", encoding="utf-8") as f:
            f.write(msg + "\n")


if __name__ == "__main__":
    main()
