"""run_injection.py KILN WORK — nothing a user names can become code
(issue 21). Each hostile string goes through each route by which user text
reaches the generated files:

  onnx_node    ONNX node names (the run function's origin comments)
  onnx_tensor  ONNX tensor names: input, initializer, intermediate, output
               (identifiers, the header's documentation, comments)
  onnx_graph   the ONNX graph's name
  onnx_doc     the model's, graph's and nodes' doc strings
  onnx_path    the folder of the .onnx file (the banners)
  lua_path     the folder of the .lua script
  lua_names    a Lua script's input, param and output names
  gguf_path    the folder of a --weights GGUF whose tokenizer goes into the C
  o_dir        the folder of -o (with --weights-mode=blob: the .S too)
  o_name       the -o file name itself (the #include and .incbin names)

For each, kiln compiles the hostile variant and a clean one (the same
bytes with every byte outside [A-Za-z0-9_] as '_', so identifiers made
from names are the same; paths: "clean"), the hostile .c (and .S) is built
with gcc and clang -std=c99 -Wall -Wextra -Werror (c99: trigraphs on), and
the .c, .h and .S of both, read as a C compiler reads them (trigraphs,
line splices) with each comment dropped and each string literal made one
token, must be the same tokens. An -o name that a #include cannot spell
(a '"', a line break, a trigraph) must instead be refused: exit 1, one
line, no file written. Prints the route x string matrix; exits 1 if any
cell failed. Needs only Python's standard library."""
import os
import re
import shutil
import subprocess
import sys

KILN = os.path.abspath(sys.argv[1])
WORK = os.path.abspath(sys.argv[2])
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# 12 bytes each (padded with 'x'): what would end or open a comment, end
# a literal, escape, break a line, form a trigraph, or not be UTF-8
STRINGS = [
    ("close_cmt", b"*/int pwn;/*"),
    ("open_cmt", b"a/*b/*c"),
    ("quote", b'"); pwn("'),
    ("backslash", b"a\\b\\"),
    ("newline", b"\n#error x\n"),
    ("trigraph", b"??/\nx??/"),
    ("non_utf8", b"\xff\xfe\xc3(\x80"),
]
STRINGS = [(n, s.ljust(12, b"x")) for n, s in STRINGS]
CCS = [cc for cc in ("gcc", "clang") if shutil.which(cc)]


def clean(s):
    return bytes(c if chr(c).isascii() and (chr(c).isalnum() or c == 0x5F) else 0x5F for c in s)


def run(args, cwd=None):
    p = subprocess.run(args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout + p.stderr


def tokens(text):
    """C source as the compiler's phases 1-3 see it: trigraphs (-std=c99),
    line splices, then tokens with comments dropped and each string or
    character literal one token "LIT"."""
    for t, r in ((b"??=", b"#"), (b"??(", b"["), (b"??/", b"\\"), (b"??)", b"]"), (b"??'", b"^"),
                 (b"??<", b"{"), (b"??!", b"|"), (b"??>", b"}"), (b"??-", b"~")):
        text = text.replace(t, r)
    text = text.replace(b"\\\n", b"")
    out, i, n = [], 0, len(text)
    word = re.compile(rb"[A-Za-z0-9_.]+|\S")
    while i < n:
        c = text[i:i + 1]
        if text.startswith(b"/*", i):
            j = text.find(b"*/", i + 2)
            if j < 0:
                return out + [b"UNTERMINATED_COMMENT"]
            i = j + 2
        elif text.startswith(b"//", i):
            j = text.find(b"\n", i)
            i = n if j < 0 else j
        elif c in (b'"', b"'"):
            j = i + 1
            while j < n and text[j:j + 1] != c:
                if text[j:j + 1] == b"\n":
                    return out + [b"UNTERMINATED_LITERAL"]
                j += 2 if text[j:j + 1] == b"\\" else 1
            out.append(b"LIT")
            i = j + 1
        elif c == b"\n":
            out.append(b"NL")  # preprocessor lines end at line ends
            i += 1
        elif c.isspace():
            i += 1
        else:
            m = word.match(text, i)
            out.append(m.group(0))
            i = m.end()
    return out


def files(stem):
    return [f for f in (stem + ".c", stem + ".h", stem + "_weights.S") if os.path.exists(f)]


def compare(hostile_stem, clean_stem):
    """'' when the hostile files are the clean ones but for comments and literals"""
    a, b = files(hostile_stem), files(clean_stem)
    if len(a) != len(b):
        return "other files written: %s vs %s" % (a, b)
    for fa, fb in zip(a, b):
        ta, tb = tokens(open(fa, "rb").read()), tokens(open(fb, "rb").read())
        if ta != tb:
            k = next((i for i in range(min(len(ta), len(tb))) if ta[i] != tb[i]), min(len(ta), len(tb)))
            return "%s differs beyond comments and literals at token %d: %r vs %r" % (
                os.path.basename(fb), k, b" ".join(ta[k:k + 6]), b" ".join(tb[k:k + 6]))
    return ""


def build(stem, cc):
    """'' when stem.c (and stem_weights.S) compile under cc -Werror"""
    d = os.path.dirname(stem)
    for src in files(stem):
        if src.endswith(".h"):
            continue
        rc, msg = run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-I" + d, "-c", src, "-o", stem + ".o"])
        if rc:
            return "%s: %s" % (os.path.basename(src), msg.decode("utf-8", "replace").strip().splitlines()[0])
    return ""


def lua_quote(s):
    return '"' + "".join("\\%d" % c for c in s) + '"'


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


ONNX = open(os.path.join(HERE, "names.onnx"), "rb").read()
ONNX_TAGS = {"onnx_node": [b"@n0_", b"@n1_"], "onnx_tensor": [b"@in_", b"@w0_", b"@t0_", b"@out"],
             "onnx_graph": [b"@gr_"], "onnx_doc": [b"@doc"]}
LUA = b"""local x = input{%s, {1, 4}}
local w = param{%s, {4, 4}, init = "ones"}
output(x:matmul(w):relu(), %s)
"""


def lua_model(name):
    q = [lua_quote(name + t).encode() for t in (b"in", b"w", b"out")]
    return LUA % tuple(q)


def path_of(d, s):
    """a path under d made of s ('/' in s makes folders)"""
    return os.path.join(d.encode(), s)


def variant(route, s, d):
    """Compile route's variant with s into folder d; returns (rc, message, output stem)."""
    os.makedirs(d, exist_ok=True)
    out = os.path.join(d, "m")
    if route in ONNX_TAGS:
        data = ONNX
        for t in ONNX_TAGS[route]:
            data = data.replace(b"Z" * 12 + t, s + t)
        write(os.path.join(d, "model.onnx"), data)
        args = [KILN, "compile", os.path.join(d, "model.onnx"), "-o", out + ".c"]
    elif route == "onnx_path":
        model = os.path.join(path_of(d, s), b"model.onnx")
        write(model, ONNX)
        args = [KILN, "compile", model, "-o", out + ".c"]
    elif route == "lua_path":
        model = os.path.join(path_of(d, s), b"model.lua")
        write(model, lua_model(b"x"))
        args = [KILN, "compile", model, "-o", out + ".c"]
    elif route == "lua_names":
        write(os.path.join(d, "model.lua"), lua_model(s))
        args = [KILN, "compile", os.path.join(d, "model.lua"), "-o", out + ".c"]
    elif route == "gguf_path":
        g = os.path.join(path_of(d, s), b"w.gguf")
        os.makedirs(os.path.dirname(g), exist_ok=True)
        shutil.copy(os.path.join(ROOT, "tests/gguf/tiny_llama.gguf"), g)
        args = [KILN, "compile", os.path.join(ROOT, "examples/llama.lua"), "--weights", g, "--set", "ctx=16",
                "--set", "prefill=4", "-o", out + ".c"]
    elif route == "o_dir":
        od = path_of(d, s)
        os.makedirs(od, exist_ok=True)
        out = os.path.join(od, b"m").decode("utf-8", "surrogateescape")
        args = [KILN, "compile", os.path.join(HERE, "names.onnx"), "--weights-mode=blob", "-o", out + ".c"]
    elif route == "o_name":
        o = path_of(d, s.replace(b"/", b"_")) + b".c"
        out = o[:-2].decode("utf-8", "surrogateescape")
        args = [KILN, "compile", os.path.join(HERE, "names.onnx"), "--weights-mode=blob", "--name", "m", "-o", o]
    rc, msg = run(args, cwd=d)
    return rc, msg, out


ROUTES = ["onnx_node", "onnx_tensor", "onnx_graph", "onnx_doc", "onnx_path", "lua_path", "lua_names",
          "gguf_path", "o_dir", "o_name"]


def cell(route, name, s):
    d = os.path.join(WORK, route, name)
    rc, msg, stem = variant(route, s, os.path.join(d, "hostile"))
    if route == "o_name" and rc == 1 and b"#include line cannot spell" in msg:
        written = [f for f in os.listdir(os.path.join(d, "hostile")) if f.startswith("m")]
        lines = msg.strip().count(b"\n") + 1
        ok = not written and lines == 1
        return ["refused" if ok else "FAIL refused but wrote %s / %d lines" % (written, lines)] * len(CCS)
    if rc:
        return ["FAIL kiln: " + msg.decode("utf-8", "replace").strip()] * len(CCS)
    crc, cmsg, cstem = variant(route, b"clean" if route.endswith(("path", "dir", "name")) else clean(s),
                               os.path.join(d, "clean"))
    if crc:
        return ["FAIL clean kiln: " + cmsg.decode("utf-8", "replace").strip()] * len(CCS)
    why = compare(stem, cstem)
    if why:
        return ["FAIL " + why] * len(CCS)
    return ["FAIL " + w if w else "ok" for w in (build(stem, cc) for cc in CCS)]


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    failed = 0
    print("%-12s %-10s %s" % ("route", "string", "  ".join("%-8s" % cc for cc in CCS)))
    for route in ROUTES:
        for name, s in STRINGS:
            res = cell(route, name, s)
            failed += sum(r.startswith("FAIL") for r in res)
            print("%-12s %-10s %s" % (route, name, "  ".join("%-8s" % r.split(" ")[0] for r in res)))
            for r in res:
                if r.startswith("FAIL"):
                    print("    " + r)
                    break
    print("%d cells failed" % failed)
    return 1 if failed else 0


sys.exit(main())
