"""tokenizer_check.py GGUF GENERATE CASES — examples/generate.c's tokenizer
(GENERATE: built against the model's tables) against Hugging Face
`tokenizers` built from the GGUF's own vocabulary and merges with SmolLM2's
pre-tokenizer (Digits(individual_digits) then ByteLevel without a prefix
space; the control tokens as special tokens): the same ids for every case
of CASES (one a line; \\n and \\t stand for newline and tab), and both
decode the ids back to the case's text. Needs a Python with `gguf` and
`tokenizers`. Prints one line per mismatch; exit 0 when all agree."""
import subprocess
import sys

import gguf
from tokenizers import Tokenizer, decoders, models, pre_tokenizers


def field_strings(r, key):
    f = r.fields[key]
    return [bytes(f.parts[i]).decode("utf-8") for i in f.data]


def hf_tokenizer(path):
    r = gguf.GGUFReader(path)
    tokens = field_strings(r, "tokenizer.ggml.tokens")
    f = r.fields["tokenizer.ggml.token_type"]
    types = [int(f.parts[i][0]) for i in f.data]
    merges = []
    for m in field_strings(r, "tokenizer.ggml.merges"):
        k = m.index(" ", 1)  # llama.cpp's split: the first space after the first byte
        merges.append((m[:k], m[k + 1:]))
    vocab = {}
    for i, t in enumerate(tokens):
        vocab.setdefault(t, i)
    tk = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tk.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True),
         pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tk.decoder = decoders.ByteLevel()
    tk.add_special_tokens([t for t, ty in zip(tokens, types) if ty in (3, 4)])
    return tk


def main():
    path, gen, cases = sys.argv[1:4]
    tk = hf_tokenizer(path)
    bad = 0
    lines = open(cases, encoding="utf-8").read().split("\n")
    cases = [l.replace("\\n", "\n").replace("\\t", "\t") for l in lines if l]
    for text in cases:
        want = tk.encode(text).ids
        got = subprocess.run([gen, "--tokenize", text], capture_output=True, check=True).stdout
        got = [int(x) for x in got.decode().strip().split(",") if x]
        if got != want:
            bad += 1
            print(f"tokenizer: FAIL ids differ for {text!r}:\n  hf {want}\n  c  {got}")
            print(f"  hf {[tk.id_to_token(i) for i in want]}\n  c  {[tk.id_to_token(i) for i in got]}")
        ids = ",".join(map(str, want))
        back = subprocess.run([gen, "--detokenize", "--prompt-ids", ids], capture_output=True, check=True).stdout
        if back != text.encode("utf-8"):
            bad += 1
            print(f"tokenizer: FAIL C decodes {text!r} as {back!r}")
        if tk.decode(want, skip_special_tokens=False) != text:
            bad += 1
            print(f"tokenizer: FAIL HF decodes {text!r} as {tk.decode(want, skip_special_tokens=False)!r}")
    if bad:
        print(f"tokenizer: {bad} mismatches in {len(cases)} cases")
    else:
        print(f"tokenizer: all {len(cases)} cases agree with Hugging Face tokenizers (ids and both round trips)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
