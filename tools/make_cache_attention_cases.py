"""make_cache_attention_cases.py — CachedAttention cases for kiln check,
with a numpy reference written here, independently of kiln's _eval
(backend-test layout under tests/generated/cache_attention/). Run with the
venv that has onnx (for the .pb files):

    build/venv/bin/python tools/make_cache_attention_cases.py tests/generated/cache_attention

    Y[t, h] = softmax_j(scale · Q[t, h] · K[j, h / (H/Hkv)]) · V[j, h / (H/Hkv)],
    j = 0 .. start + t (within the cache; from start + t - window + 1 with
    a window), zeros for t >= count

The cases are .kir graphs whose inputs are the query, the two caches and
the position (no state: CachedAttention reads any tensors); the generated C
is checked against numpy (kiln check) and so is the interpreter:

- step_long: one query at position 299 of a 300-position cache, 6 query
  heads on 2 kv heads, D 16: more keys than the kernel's chunk of 256, so
  the online softmax rescales once.
- prefill_padded: 5 queries from position 250 (crossing 256), count 3:
  the last two are padding and give zeros; D 24 (8 lanes), Dv 8, MQA.
- first: 4 queries from position 0 of an 8-position cache, H = Hkv = 2,
  scale 0.5.
- step_f16, step_bf16: one query at position 40 over f16 (bf16) keys and
  values: the reference widens the same 16-bit values.
- window_step, window_prefill: {window=W}, a sliding window (Gemma 3's
  local layers): query t sees keys start + t - W + 1 .. start + t."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def reference(q, k, v, start, count, scale, window=0):
    t_n, h_n, d = q.shape
    c, hkv, dv = v.shape
    y = np.zeros((t_n, h_n, dv), np.float64)
    for t in range(t_n):
        if t >= count:
            continue
        nk = min(max(start + t + 1, 0), c)
        lo = max(start + t + 1 - window, 0) if window else 0
        for h in range(h_n):
            kv = h // (h_n // hkv)
            s = scale * (k[lo:nk, kv, :].astype(np.float64) @ q[t, h].astype(np.float64))
            p = np.exp(s - s.max())
            y[t, h] = (p / p.sum()) @ v[lo:nk, kv, :].astype(np.float64)
    return y.astype(np.float32)


def bf16(a):
    """a rounded to bf16 (nearest, ties to even): the bits, as uint16."""
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def write_case(folder, name, t, h, d, c, hkv, dv, start, count, scale, seed, note, kv="f32", window=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((t, h, d)).astype(np.float32)
    k = rng.standard_normal((c, hkv, d)).astype(np.float32)
    v = rng.standard_normal((c, hkv, dv)).astype(np.float32)
    kin, vin = k, v  # what the .pb files hold: f32, f16 or bf16 (bits)
    if kv == "f16":
        kin, vin = k.astype(np.float16), v.astype(np.float16)
        k, v = kin.astype(np.float32), vin.astype(np.float32)
    elif kv == "bf16":
        kin, vin = bf16(k), bf16(v)
        k = (kin.astype(np.uint32) << 16).view(np.float32)
        v = (vin.astype(np.uint32) << 16).view(np.float32)
    st = np.array([start], np.int64)
    cn = np.array([count], np.int64)
    out = os.path.join(folder, name)
    os.makedirs(os.path.join(out, "test_data_set_0"), exist_ok=True)
    attrs = (["scale=%r" % scale] if scale is not None else []) + (["window=%d" % window] if window else [])
    attr = " {%s}" % ", ".join(attrs) if attrs else ""
    with open(os.path.join(out, "model.kir"), "w") as f:
        f.write(f"# {note} (tools/make_cache_attention_cases.py)\n")
        f.write(f"graph @{name} opset 17 (%q: f32[{t},{h},{d}], %k: {kv}[{c},{hkv},{d}], "
                f"%v: {kv}[{c},{hkv},{dv}], %start: i64[1], %count: i64[1]) -> (%y) {{\n")
        f.write(f"  %y = CachedAttention %q, %k, %v, %start, %count{attr} : ?  # from: attn\n}}\n")
    y = reference(q, k, v, start, count, scale if scale is not None else 1 / np.sqrt(d), window)
    for kind, items in (("input", [("q", q), ("k", kin), ("v", vin), ("start", st), ("count", cn)]),
                        ("output", [("y", y)])):
        for i, (nm, val) in enumerate(items):
            if val.dtype == np.uint16:  # bf16 bits: a BFLOAT16 TensorProto of their (exact) values
                exact = (val.astype(np.uint32) << 16).view(np.float32)
                tp = helper.make_tensor(nm, TensorProto.BFLOAT16, val.shape, exact.flatten().tolist())
            else:
                tp = numpy_helper.from_array(val, nm)
            with open(os.path.join(out, "test_data_set_0", f"{kind}_{i}.pb"), "wb") as f:
                f.write(tp.SerializeToString())


def main():
    folder = sys.argv[1]
    write_case(folder, "step_long", 1, 6, 16, 300, 2, 16, 299, 1, None, 1,
               "one query over 300 cached positions, 6 heads on 2 kv heads")
    write_case(folder, "prefill_padded", 5, 4, 24, 300, 1, 8, 250, 3, None, 2,
               "5 queries from position 250, 3 real; multi-query (1 kv head)")
    write_case(folder, "first", 4, 2, 8, 8, 2, 8, 0, 4, 0.5, 3, "4 queries from position 0, scale 0.5")
    write_case(folder, "step_f16", 1, 4, 16, 48, 2, 16, 40, 1, None, 4, "one query over f16 keys and values", "f16")
    write_case(folder, "step_bf16", 1, 4, 16, 48, 2, 16, 40, 1, None, 5, "one query over bf16 keys and values",
               "bf16")
    write_case(folder, "window_step", 1, 4, 16, 300, 1, 16, 299, 1, None, 6,
               "one query at position 299 with a sliding window of 40 (keys 260 .. 299), MQA", window=40)
    write_case(folder, "window_prefill", 6, 2, 8, 16, 2, 8, 2, 5, None, 7,
               "6 queries from position 2, 5 real, window 4: the first see every key, the later ones 4",
               window=4)


if __name__ == "__main__":
    main()
