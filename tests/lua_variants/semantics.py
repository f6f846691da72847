"""semantics.py KILN — the attention variants of compiler/lua/nn_variants.lua
against the papers' definitions, recomputed here with numpy in the most
direct form (loops over branches, explicit distances, per-token lookups),
independently of how the Lua builds its graph:

  sem_masks.lua     Sparse Transformer masks = the sets A(1), A(2) of Child et al.
  sem_sparse_attention.lua  multi-head attention under them, head by head
  sem_topk.lua      top-k softmax keeps exactly k per row: the k largest scores
  sem_weighted.lua  branched attention = Σ_i α_i FFN_i(κ_i head_i W_O,i)
  sem_xl.lua        Transformer-XL's relative scores with explicit distances
                    (checks rel_shift), and the memory update
  sem_adaptive.lua  adaptive input embeddings, token by token

Weights are written here to a .safetensors file (struct + json) and bound
with --weights; `kiln run` (the interpreter) computes the outputs. Ends with
"N passed, N failed"; exit 1 on any failure."""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
from onnx import numpy_helper
import onnx

kiln = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
work = tempfile.mkdtemp(prefix="kiln-sem-")
rng = np.random.default_rng(0)
results = {"passed": 0, "failed": 0}


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        raw = np.ascontiguousarray(a, np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def run(script, inputs, weights=None):
    """Outputs of `kiln run` on script, by name."""
    case = os.path.join(work, os.path.basename(script)[:-4])
    os.makedirs(case, exist_ok=True)
    cmd = [kiln, "run", os.path.join(here, script), "--out", case]
    for name, a in inputs.items():
        p = os.path.join(case, name + ".pb")
        onnx.save_tensor(numpy_helper.from_array(a, name), p)
        cmd += ["--input", f"{name}={p}"]
    if weights:
        wpath = os.path.join(case, "weights.safetensors")
        write_safetensors(wpath, weights)
        cmd += ["--weights", wpath]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    outs, k = {}, 0
    while os.path.exists(os.path.join(case, f"output_{k}.pb")):
        t = onnx.load_tensor(os.path.join(case, f"output_{k}.pb"))
        outs[t.name] = numpy_helper.to_array(t)
        k += 1
    return outs


def check(what, got, want, rtol=1e-4, atol=1e-5):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        ok, detail = False, f"shape {got.shape}, expected {want.shape}"
    elif want.dtype == np.bool_:
        ok = bool((got == want).all())
        detail = f"{int((got != want).sum())} of {want.size} differ"
    else:
        err = np.abs(got.astype(np.float64) - want)
        ok = bool((err <= atol + rtol * np.abs(want)).all())
        detail = f"max_abs_err {err.max():.3g}"
    print(f"{'ok  ' if ok else 'FAIL'} {what}: {detail}")
    results["passed" if ok else "failed"] += 1


def softmax(z, axis=-1):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def uniform(*shape):
    return rng.uniform(-0.5, 0.5, shape).astype(np.float32)


# ---- Sparse Transformer masks (Child et al. 2019, section 4.2) ----------------------

def paper_sees(pattern, part, i, j, l, c, causal):
    """Whether query i attends to key j: the sets A(1) (local) and A(2)
    (summary) as the paper defines them; the non-causal ones symmetric."""
    if causal and j > i:
        return False
    if part == "both":
        return paper_sees(pattern, "local", i, j, l, c, causal) or paper_sees(pattern, "summary", i, j, l, c, causal)
    if pattern == "strided":
        if part == "local":   # A(1) = {t, ..., i}, t = max(0, i - l)
            return max(0, i - l) <= j <= i if causal else abs(i - j) <= l
        return (i - j) % l == 0   # A(2) = {j : (i - j) mod l = 0}
    if part == "local":       # A(1) = {j : floor(j/l) = floor(i/l)}
        return j // l == i // l
    # A(2) = {j : j mod l in {l-c, ..., l-1}}, and i itself (else a head
    # attending with A(2) alone has queries without keys)
    return j % l in range(l - c, l) or j == i


def blocked(pattern, part, t, l, c, causal=True):
    return np.array([[not paper_sees(pattern, part, i, j, l, c, causal) for j in range(t)]
                     for i in range(t)])


t, l, c = 12, 3, 2
outs = run("sem_masks.lua", {"x": np.zeros(1, np.float32)})
for pattern in ("strided", "fixed"):
    for part in ("both", "local", "summary"):
        check(f"masks {pattern} {part}", outs[f"{pattern}_{part}"], blocked(pattern, part, t, l, c))
    check(f"masks {pattern} non-causal", outs[f"{pattern}_both_noncausal"],
          blocked(pattern, "both", t, l, c, causal=False))
    heads = np.stack([blocked(pattern, "local" if h % 2 == 0 else "summary", t, l, c) for h in range(4)])
    check(f"masks {pattern} split across heads", outs[f"{pattern}_heads"], heads)
# every position still sees itself, and each strided row about l + i/l keys
assert not outs["strided_both"].diagonal().any() and not outs["fixed_both"].diagonal().any()

# multi-head attention under the fixed pattern, head 0 local (A1), head 1 summary (A2)
d, t = 8, 9
w = {"a.in_proj_weight": uniform(3 * d, d), "a.in_proj_bias": uniform(3 * d),
     "a.out_proj.weight": uniform(d, d), "a.out_proj.bias": uniform(d)}
x = rng.normal(size=(2, t, d)).astype(np.float32)
outs = run("sem_sparse_attention.lua", {"x": x}, w)
q, k, v = np.split(x @ w["a.in_proj_weight"].T + w["a.in_proj_bias"], 3, -1)
ctx = np.zeros((2, t, d))
for h, part in enumerate(("local", "summary")):
    hs = slice(h * 4, (h + 1) * 4)
    scores = np.where(blocked("fixed", part, t, 3, 1), -np.inf, q[..., hs] @ k[..., hs].swapaxes(-1, -2) / 2)
    ctx[..., hs] = softmax(scores) @ v[..., hs]
check("sparse attention, parts split across heads", outs["y"],
      ctx @ w["a.out_proj.weight"].T + w["a.out_proj.bias"])

# ---- top-k attention (Zhao et al. 2019) -----------------------------------------------

scores = rng.normal(size=(2, 3, 10)).astype(np.float32)
outs = run("sem_topk.lua", {"scores": scores})
want = np.zeros_like(scores, np.float64)
for idx in np.ndindex(scores.shape[:-1]):
    top = np.argsort(-scores[idx])[:4]
    want[idx + (top,)] = softmax(scores[idx][top].astype(np.float64))
check("top-k softmax values", outs["probs"], want)
kept = (outs["probs"] > 0).sum(-1)
check("top-k keeps exactly k = 4 per row", kept, np.full(kept.shape, 4))
check("top-k with k = all is softmax", outs["all"], softmax(scores.astype(np.float64)))

# ---- Weighted Transformer (Ahmed et al. 2017) -------------------------------------------

d, m, dff = 8, 2, 6
dk = d // m
w = {f"wa.{p}_proj.{s}": uniform(d, d) if s == "weight" else uniform(d) for p in "qkv" for s in ("weight", "bias")}
w.update({"wa.out_proj.weight": uniform(m, dk, d), "wa.kappa": np.array([0.3, 0.7], np.float32),
          "wa.alpha": np.array([0.6, 0.4], np.float32),
          "wa.ffn.linear1.weight": uniform(m, dff, d), "wa.ffn.linear1.bias": uniform(m, dff),
          "wa.ffn.linear2.weight": uniform(m, d, dff), "wa.ffn.linear2.bias": uniform(m, d)})
x = rng.normal(size=(2, 5, d)).astype(np.float32)
outs = run("sem_weighted.lua", {"x": x}, w)
proj = {p: x @ w[f"wa.{p}_proj.weight"].T + w[f"wa.{p}_proj.bias"] for p in "qkv"}
want = 0
for i in range(m):   # branch by branch, as the paper writes it
    part = slice(i * dk, (i + 1) * dk)
    head = softmax(proj["q"][..., part] @ proj["k"][..., part].swapaxes(-1, -2) / np.sqrt(dk)) @ proj["v"][..., part]
    bar = w["wa.kappa"][i] * head @ w["wa.out_proj.weight"][i]
    ffn = np.maximum(bar @ w["wa.ffn.linear1.weight"][i].T + w["wa.ffn.linear1.bias"][i], 0)
    want = want + w["wa.alpha"][i] * (ffn @ w["wa.ffn.linear2.weight"][i].T + w["wa.ffn.linear2.bias"][i])
check("weighted (branched) attention", outs["y"], want)

# ---- Transformer-XL (Dai et al. 2019, section 3.3) --------------------------------------

heads, dh, d, mlen, tlen = 2, 3, 8, 3, 4
w = {"att.qkv_net.weight": uniform(3 * heads * dh, d), "att.r_net.weight": uniform(heads * dh, d),
     "att.o_net.weight": uniform(d, heads * dh), "att.r_w_bias": uniform(heads, dh),
     "att.r_r_bias": uniform(heads, dh)}
x = rng.normal(size=(2, tlen, d)).astype(np.float32)
mem = rng.normal(size=(2, mlen, d)).astype(np.float32)
long_mem = rng.normal(size=(2, 6, d)).astype(np.float32)
outs = run("sem_xl.lua", {"x": x, "mem": mem, "long_mem": long_mem}, w)


def sinusoid(dist):   # the relative position embedding R of a distance
    angle = dist * 10000.0 ** (-2 * np.arange(d // 2) / d)
    return np.concatenate([np.sin(angle), np.cos(angle)])


whole = np.concatenate([mem, x], 1)
q, k, v = np.split(whole @ w["att.qkv_net.weight"].T, 3, -1)
q = q[:, mlen:]
ctx = np.zeros((2, tlen, heads * dh))
for b, h, i in np.ndindex(2, heads, tlen):
    hs = slice(h * dh, (h + 1) * dh)
    score = np.full(mlen + tlen, -np.inf)
    for j in range(mlen + i + 1):   # keys up to the query's own position
        r = sinusoid(i + mlen - j) @ w["att.r_net.weight"].T
        score[j] = ((q[b, i, hs] + w["att.r_w_bias"][h]) @ k[b, j, hs] +
                    (q[b, i, hs] + w["att.r_r_bias"][h]) @ r[hs]) / np.sqrt(dh)
    ctx[b, i, hs] = softmax(score) @ v[b, :, hs]
check("Transformer-XL relative attention", outs["y"], ctx @ w["att.o_net.weight"].T)
check("memory update (segment longer than memory)", outs["next_mem"], whole[:, -mlen:])
check("memory update (memory longer than segment)", outs["next_long_mem"],
      np.concatenate([long_mem, x], 1)[:, -6:])

# ---- adaptive input embeddings (Baevski & Auli 2019) --------------------------------------

ends, dims = [0, 3, 6, 10], [8, 4, 2]
w = {}
for cl in range(3):
    w[f"emb.emb_layers.{cl}.weight"] = uniform(ends[cl + 1] - ends[cl], dims[cl])
    w[f"emb.emb_projs.{cl}"] = uniform(6, dims[cl])
ids = np.array([[0, 2, 3, 5, 6], [9, 1, 4, 7, 8]], np.int64)
outs = run("sem_adaptive.lua", {"ids": ids}, w)
want = np.zeros((2, 5, 6))
for b, s in np.ndindex(ids.shape):
    tok = ids[b, s]
    cl = next(i for i in range(3) if ends[i] <= tok < ends[i + 1])
    want[b, s] = w[f"emb.emb_layers.{cl}.weight"][tok - ends[cl]] @ w[f"emb.emb_projs.{cl}"].T * np.sqrt(6)
check("adaptive input embedding", outs["y"], want)

print(f"{results['passed']} passed, {results['failed']} failed")
sys.exit(1 if results["failed"] else 0)
