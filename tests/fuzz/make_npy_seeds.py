#!/usr/bin/env python3
"""make_npy_seeds.py DIR — seed files for tests/fuzz/fuzz_npy.c: numpy.save's
output for every element type kiln reads and a few shapes (0-d, empty,
rank 3), the same in .npy versions 2.0 and 3.0, and damaged copies (cut,
a lying shape, big-endian, Fortran order, an unknown type), so the fuzzer
starts from both sides of every check in compiler/frontend/npy.c."""
import io
import os
import sys

import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(1)
n = 0


def put(data):
    global n
    n += 1
    with open(os.path.join(out, "seed_%03d.npy" % n), "wb") as f:
        f.write(data)


def saved(a, version=None):
    f = io.BytesIO()
    if version:
        np.lib.format.write_array(f, a, version=version)
    else:
        np.save(f, a)
    return f.getvalue()


for dt in ["<f4", "<f8", "<f2", "<i8", "<i4", "<i2", "|i1", "|u1", "<u2", "<u4", "<u8", "|b1"]:
    for shape in [(), (0,), (3,), (2, 1, 2)]:
        put(saved((rng.standard_normal(shape) * 10).astype(dt)))
a = np.arange(6, dtype=np.float32).reshape(2, 3)
good = saved(a)
for v in [(2, 0), (3, 0)]:
    put(saved(a, v))
put(good[:-3])
put(good.replace(b"(2, 3)", b"(3, 3)"))
put(good.replace(b"'<f4'", b"'>f4'"))
put(good.replace(b"False", b"True "))
put(good.replace(b"'<f4'", b"'<c8'"))
put(saved(np.asfortranarray(np.ones((2, 3), np.float64))))
print("make_npy_seeds.py: %d seeds in %s" % (n, out))
