"""spm_tokenize.py GGUF CASES — a SentencePiece-style (tokenizer.ggml.model
"llama") encoder written here from the GGUF's own vocabulary, as the
reference for examples/generate.c's (tests/gguf/run_gemma3.sh). Prints,
for each line of CASES (a prompt; the two characters \\n and \\t stand for
a newline and a tab), its token ids comma-separated, BOS first when the
file's add_bos_token says so.

The rules, as llama.cpp's SPM tokenizer applies them:
- control, user-defined and unknown tokens (types 3, 4, 2) are found in
  the text first, the longest texts first, each splitting the fragments of
  plain text it occurs in (leftmost occurrence first);
- in each plain fragment every ' ' becomes U+2581 (and a U+2581 goes in
  front when add_space_prefix is set and the fragment starts the text or
  follows a special token), the text is cut into UTF-8 characters, and the
  adjacent pair whose concatenation is a token of the highest score is
  merged (ties: the leftmost), kept in a priority queue with stale entries
  skipped, until no pair's concatenation is a token;
- a symbol that is no token becomes the <0xNN> tokens of its bytes.
Run with a Python that has PyPI gguf (and numpy)."""
import heapq
import sys

from gguf import GGUFReader


def field(r, key, default=None):
    f = r.fields.get(key)
    return default if f is None else f.contents()


class Vocab:
    def __init__(self, path):
        r = GGUFReader(path)
        if field(r, "tokenizer.ggml.model") != "llama":
            sys.exit(f"{path}: tokenizer.ggml.model is not 'llama'")
        f = r.fields["tokenizer.ggml.tokens"]
        self.tokens = [bytes(f.parts[i]).decode("utf-8") for i in f.data]
        ft, fs = r.fields["tokenizer.ggml.token_type"], r.fields["tokenizer.ggml.scores"]
        self.types = [int(ft.parts[i][0]) for i in ft.data]
        self.scores = [float(fs.parts[i][0]) for i in fs.data]
        self.id = {t: i for i, t in enumerate(self.tokens)}  # the last id of a text stored twice
        self.bos = field(r, "tokenizer.ggml.bos_token_id", -1)
        self.add_bos = bool(field(r, "tokenizer.ggml.add_bos_token", False))
        self.add_space_prefix = bool(field(r, "tokenizer.ggml.add_space_prefix", True))
        self.special = sorted((i for i, t in enumerate(self.types) if t in (2, 3, 4) and self.tokens[i]),
                              key=lambda i: -len(self.tokens[i].encode()))
        self.byte = {}
        for i, t in enumerate(self.tokens):
            if self.types[i] == 6 and len(t) == 6 and t.startswith("<0x") and t.endswith(">"):
                self.byte[int(t[3:5], 16)] = i

    def partition(self, text):
        frags = [text]  # str: plain text, int: a special token
        for sid in self.special:
            s, out = self.tokens[sid], []
            for fr in frags:
                if isinstance(fr, int) or s not in fr:
                    out.append(fr)
                    continue
                parts = fr.split(s)
                for k, p in enumerate(parts):
                    if p:
                        out.append(p)
                    if k + 1 < len(parts):
                        out.append(sid)
            frags = out
        return frags

    def spm(self, text):
        syms = list(text)  # one symbol per character
        alive = [True] * len(syms)
        nxt = list(range(1, len(syms) + 1))
        prv = list(range(-1, len(syms) - 1))
        heap = []

        def push(i, j):
            if i < 0 or j >= len(syms):
                return
            t = self.id.get(syms[i] + syms[j])
            if t is not None:
                heapq.heappush(heap, (-self.scores[t], i, j, syms[i] + syms[j]))

        for i in range(1, len(syms)):
            push(i - 1, i)
        while heap:
            _, i, j, joined = heapq.heappop(heap)
            if not alive[i] or not alive[j] or nxt[i] != j or syms[i] + syms[j] != joined:
                continue  # stale
            syms[i] = joined
            alive[j] = False
            nxt[i] = nxt[j]
            if nxt[j] < len(syms):
                prv[nxt[j]] = i
            push(prv[i], i)
            push(i, nxt[i])
        out, i = [], 0 if syms else len(syms)
        while i < len(syms):
            t = self.id.get(syms[i])
            if t is not None:
                out.append(t)
            else:
                out.extend(self.byte[b] for b in syms[i].encode())
            i = nxt[i]
        return out

    def encode(self, text):
        ids = [self.bos] if self.add_bos and self.bos >= 0 else []
        prev_special = True
        for fr in self.partition(text):
            if isinstance(fr, int):
                ids.append(fr)
                prev_special = True
                continue
            t = (" " if self.add_space_prefix and prev_special else "") + fr
            ids.extend(self.spm(t.replace(" ", "\u2581")))
            prev_special = False
        return ids


def main():
    v = Vocab(sys.argv[1])
    for line in open(sys.argv[2], encoding="utf-8").read().split("\n"):
        if not line:
            continue
        print(",".join(map(str, v.encode(line.replace("\\n", "\n").replace("\\t", "\t")))))


if __name__ == "__main__":
    main()
