#!/usr/bin/env python3
"""make_narrow_ref.py — reference codes for the narrow float conversions
(tests/unit/narrow_convert_ref.txt), from ONNX's reference: ml_dtypes'
astype (Cast without saturate, float4) and onnx.numpy_helper.saturate_cast
(Cast with saturate) for the float8 kinds and float4, and
onnx.numpy_helper.to_float8e8m0 for e8m0.

Inputs: for each code of each kind, its value and the f32 values one ulp
either side of the midpoints to its neighbours (the ties, and just past
them), the largest values and past them, the subnormals, +-0, +-inf, NaN,
and a spread of random f32 values. One line per input:
  F32BITS  e4m3fn s/n  e4m3fnuz s/n  e5m2 s/n  e5m2fnuz s/n  f4e2m1  e8m0 up/down/nearest
(hex codes; "s" saturating, "n" not; e8m0 saturating). e8m0 columns are
"--" where the reference departs from the Cast spec text kiln follows:
zero, infinities and values below 2^-126 (the reference reads the f32
exponent field: 0 for all of them), and "up" for a mantissa whose only set
bits are in 0x300000 (the reference's mask is 0x4FFFFF, not 0x7FFFFF).
Run with /tmp/venv/bin/python (onnx 1.20, ml_dtypes)."""
import sys
import warnings

import ml_dtypes
import numpy as np
from onnx import numpy_helper as nh

KINDS = [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2, ml_dtypes.float8_e5m2fnuz]


def inputs():
    vals = set()
    for t in KINDS + [ml_dtypes.float4_e2m1fn]:
        nbits = 4 if t is ml_dtypes.float4_e2m1fn else 8
        codes = np.arange(1 << nbits, dtype=np.uint8)
        if nbits == 4:  # ml_dtypes' float4 takes a byte a code
            v = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6], np.float32)
        else:
            v = codes.view(t).astype(np.float32)
        v = np.sort(v[np.isfinite(v)])
        mids = ((v[1:].astype(np.float64) + v[:-1]) / 2).astype(np.float32)
        ext = np.concatenate([v, mids, v * 1.5, v * 2, v[-1:] * 1.0625, v[-1:] * 1.125])
        b = ext.astype(np.float32).view(np.uint32)
        for d in (-1, 0, 1):
            vals.update((b.astype(np.int64) + d).astype(np.uint32).tolist())
    rng = np.random.default_rng(20)
    vals.update(rng.integers(0, 1 << 32, 1000, dtype=np.uint64).astype(np.uint32).tolist())
    vals.update([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 1, 0x80000001, 0x00400000,
                 0x3F900000, 0x3FA00000, 0x3FB00000, 0x3FC00000])
    return sorted(vals)


def main(out):
    warnings.simplefilter("ignore")  # NaN -> int casts inside the reference
    bits = np.array(inputs(), np.uint32)
    x = bits.view(np.float32)
    cols = []
    for t in KINDS:
        cols.append(nh.saturate_cast(x, t).view(np.uint8))
        cols.append(x.astype(t).view(np.uint8))
    cols.append(x.astype(ml_dtypes.float4_e2m1fn).view(np.uint8))
    e8 = [nh.to_float8e8m0(x, True, m).view(np.uint8) for m in ("up", "down", "nearest")]
    a = np.abs(x)
    bad = ~np.isfinite(a) | (a < 2.0 ** -126)
    mant = bits & 0x7FFFFF
    up_bad = bad | ((mant != 0) & ((mant & 0x4FFFFF) == 0))
    with open(out, "w") as f:
        f.write("# tools/make_narrow_ref.py: f32 bits, then codes (see the script)\n")
        for i, b in enumerate(bits):
            row = ["%08x" % b] + ["%02x" % c[i] for c in cols]
            row += ["--" if (up_bad if k == 0 else bad)[i] else "%02x" % e8[k][i] for k in range(3)]
            f.write(" ".join(row) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/unit/narrow_convert_ref.txt")
