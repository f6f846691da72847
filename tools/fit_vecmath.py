#!/usr/bin/env python3
"""fit_vecmath.py — derives the polynomial coefficients of kiln's vector
math (the kiln_expf / kiln_erff / kiln_tanhf helpers of runtime/kiln_rt.h).

Each approximation is a near-minimax fit: Lawson's algorithm (iteratively
reweighted least squares) on 6000 Chebyshev points of its interval, in
double, minimising the error that matters for the float result (relative
for exp, the small-|x| erf and tanh; absolute in erf for erfc's
exponent), with coefficients that are floats (lawson_in_floats); the
error printed is that of the float coefficients. Deterministic:
running it twice prints the same lines.

  /work/venv/bin/python tools/fit_vecmath.py           # the #define block
  /work/venv/bin/python tools/fit_vecmath.py --check runtime/kiln_rt.h
      # exit 1 unless every KILN_*_C* line of the header matches the fit

The whole-function errors (range reduction, float evaluation, the
selects) are measured over every float by tests/vecmath/vecmath_exhaustive.c.
"""
import math
import re
import sys

import numpy as np

LN2 = math.log(2.0)
NPOINTS = 6000
ITERATIONS = 300

# The intervals, shared with the C code (runtime/kiln_rt.h):
EXP_R = 0.3467          # |r| after r = x - n·ln2: ln2/2 plus the slack of a float n
ERF_SMALL = 0.875       # |x| below: erf(x) = x·P(x²); above: 1 - exp(Q(|x|))
ERF_BIG = 4.0           # |x| at and above: erf = ±1 in float (erfc(4) < 2^-25)
ERFC_MID = ERF_SMALL       # Q is a polynomial in |x| - ERFC_MID: small terms where erfc is large
TANH_SMALL = 0.625      # |x| below: tanh(x) = x + x³·P(x²); above: 1 - 2/(e^2|x| + 1)
ERF_PIECES = 8          # KILN_ERFF_VEC's table: [0, 4) in pieces of ERF_BIG / ERF_PIECES
ERF_PIECE_DEG = 7       # a polynomial of this degree in t = |x| - the piece's start


def chebyshev_points(a, b, n=NPOINTS):
    k = np.arange(n)
    return (a + b) / 2 + (b - a) / 2 * np.cos(np.pi * (k + 0.5) / n)


def lawson(columns, target):
    """Coefficients c minimising max |columns·c - target| (near minimax)."""
    w = np.full(len(target), 1.0 / len(target))
    best_err, best = math.inf, None
    for _ in range(ITERATIONS):
        sw = np.sqrt(w)
        c = np.linalg.lstsq(columns * sw[:, None], target * sw, rcond=None)[0]
        err = np.abs(columns @ c - target)
        if err.max() < best_err:
            best_err, best = err.max(), c
        w = w * err
        w /= w.sum()
    return best


def lawson_in_floats(columns, target):
    """lawson, with coefficients that are floats: each in turn, lowest
    order first, is rounded to float and the ones after it refitted
    (rounding all at once would lose up to 10x the accuracy)."""
    fixed = []
    for k in range(columns.shape[1]):
        rest = target - columns[:, :k] @ np.array(fixed) if k else target
        c = lawson(columns[:, k:], rest)
        fixed.append(float(np.float32(c[0])))
    return np.array(fixed)


def fit_exp():
    """e^r = 1 + r + r²·(c2 + c3·r + ... + c6·r⁴), relative error."""
    r = chebyshev_points(-EXP_R, EXP_R)
    powers = range(2, 7)
    cols = np.stack([r**k / np.exp(r) for k in powers], 1)
    c = lawson_in_floats(cols, (np.exp(r) - 1 - r) / np.exp(r))
    err = np.abs(1 + r + sum(ck * r**k for ck, k in zip(c, powers)) - np.exp(r)) / np.exp(r)
    return "EXPF", c, err.max(), "relative, |r| <= %g" % EXP_R


def fit_erf_small():
    """erf(x) = x + x·(c0 + c1·x² + ... + c5·x¹⁰), relative error: c0 is
    2/√π - 1, which a float holds 8x closer than 2/√π."""
    erf = np.vectorize(math.erf)
    x = chebyshev_points(1e-6, ERF_SMALL)
    cols = np.stack([x ** (2 * k + 1) / erf(x) for k in range(6)], 1)
    c = lawson_in_floats(cols, (erf(x) - x) / erf(x))
    err = np.abs(x + sum(ck * x ** (2 * k + 1) for k, ck in enumerate(c)) - erf(x)) / erf(x)
    return "ERFF_P", c, err.max(), "relative, |x| < %g" % ERF_SMALL


def fit_erfc():
    """erfc(a) = exp(c0 + c1·t + ... + c6·t⁶), t = a - ERFC_MID; the error
    weighted by erfc(a): the absolute error it gives erf(a) = 1 - erfc(a)."""
    erfc = np.vectorize(math.erfc)
    a = chebyshev_points(ERF_SMALL, ERF_BIG)
    t = a - ERFC_MID
    cols = np.stack([t**k * erfc(a) for k in range(7)], 1)
    c = lawson_in_floats(cols, np.log(erfc(a)) * erfc(a))
    err = np.abs(np.exp(sum(ck * t**k for k, ck in enumerate(c))) - erfc(a))
    return "ERFF_Q", c, err.max(), "absolute in erf, %g <= |x| <= %g" % (ERF_SMALL, ERF_BIG)


def fit_tanh_small():
    """tanh(x) = x + x³·(c0 + c1·x² + ... + c4·x⁸), relative error."""
    x = chebyshev_points(1e-6, TANH_SMALL)
    cols = np.stack([x ** (2 * k + 3) / np.tanh(x) for k in range(5)], 1)
    c = lawson_in_floats(cols, (np.tanh(x) - x) / np.tanh(x))
    err = np.abs(x + sum(ck * x ** (2 * k + 3) for k, ck in enumerate(c)) - np.tanh(x)) / np.tanh(x)
    return "TANHF_P", c, err.max(), "relative, |x| < %g" % TANH_SMALL


def fit_erf_pieces():
    """KILN_ERFF_VEC's piecewise erf: on piece i of [0, 4), a = i·w + t,
    erf(a) = (C0 + t·U) + (C0LO + t·(C1 + t·(C2 + ... + t·C7))), w = 0.5.
    C0 is erf(i·w) rounded to float and C0LO what that rounding lost
    (refitted with the rest), so the constant term is good to far below an
    ulp; on piece 0, C0 = C0LO = 0 and U = 1, so erf(a) = a + a·(C1 + ...)
    with C1 = 2/√π - 1, relative error (as ERFF_P); elsewhere U = 0 and the
    error is absolute. Returns the rows C0, C0LO, C1..C7, U (each a value
    per piece) and the largest fit error."""
    erf = np.vectorize(math.erf)
    w = ERF_BIG / ERF_PIECES
    rows = np.zeros((ERF_PIECE_DEG + 3, ERF_PIECES))
    worst = 0.0
    for i in range(ERF_PIECES):
        a = chebyshev_points(max(i * w, 1e-6), (i + 1) * w)
        t, y = a - i * w, erf(a)
        if i == 0:
            cols = np.stack([t**k / y for k in range(1, ERF_PIECE_DEG + 1)], 1)
            c = np.concatenate([[0.0, 0.0], lawson_in_floats(cols, (y - t) / y), [1.0]])
            err = np.abs(t + sum(c[k + 1] * t**k for k in range(1, ERF_PIECE_DEG + 1)) - y) / y
        else:
            hi = float(np.float32(math.erf(i * w)))
            cols = np.stack([t**k for k in range(ERF_PIECE_DEG + 1)], 1)
            c = np.concatenate([[hi], lawson_in_floats(cols, y - hi), [0.0]])
            err = np.abs(hi + sum(c[k + 1] * t**k for k in range(ERF_PIECE_DEG + 1)) - y)
        rows[:, i] = c
        worst = max(worst, err.max())
    return rows, worst


def c_float(v):
    s = "%.9g" % np.float32(v)
    return s + ("" if re.search(r"[.e]", s) else ".0") + "f"


def exp_reduction_lines():
    """x = n·ln2 + r: ln2 in two floats, the first with 16 significant bits
    so that n·LN2_HI is exact for |n| <= 255 (and x - n·LN2_HI too)."""
    hi = round(LN2 * 2**16) / 2**16
    return ["/* EXPF: n = round(x·LOG2E), r = x - n·LN2_HI - n·LN2_LO */",
            "#define KILN_EXPF_LOG2E %s" % c_float(1 / LN2),
            "#define KILN_EXPF_LN2_HI %s" % c_float(hi),
            "#define KILN_EXPF_LN2_LO %s" % c_float(LN2 - hi)]


def define_lines():
    lines = exp_reduction_lines()
    for name, coefs, err, what in (fit_exp(), fit_erf_small(), fit_erfc(), fit_tanh_small()):
        lines.append("/* %s: fit error %.2g (%s) */" % (name, err, what))
        first = 2 if name == "EXPF" else 0
        for k, c in enumerate(coefs):
            lines.append("#define KILN_%s_C%d %s" % (name, k + first, c_float(c)))
    return lines


def table_lines():
    """kiln_erff_tab: a row per coefficient (C0, C0LO, C1..C7, U), each the
    pieces' values twice, so that a 16-lane vector loads a whole row."""
    rows, err = fit_erf_pieces()
    names = ["C0", "C0LO"] + ["C%d" % k for k in range(1, ERF_PIECE_DEG + 1)] + ["U"]
    lines = ["/* ERFF_TAB: fit error %.2g (relative on [0, %g), absolute above; %d pieces, degree %d) */"
             % (err, ERF_BIG / ERF_PIECES, ERF_PIECES, ERF_PIECE_DEG)]
    for name, r in zip(names, rows):
        vals = ", ".join(c_float(v) for v in r)
        lines.append("    {%s, /* %s */" % (vals, name))
        lines.append("     %s}," % vals)
    return lines


def check(header):
    text = open(header).read()
    missing = [l for l in define_lines() if l.startswith("#define") and l not in text]
    missing += [l for l in table_lines() if l not in text]
    for l in missing:
        print("fit_vecmath: %s lacks the line: %s" % (header, l), file=sys.stderr)
    return 1 if missing else 0


def main(argv):
    if len(argv) == 3 and argv[1] == "--check":
        return check(argv[2])
    if len(argv) != 1:
        print("usage: fit_vecmath.py [--check HEADER]", file=sys.stderr)
        return 2
    print("\n".join(define_lines()))
    print("\n".join(table_lines()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
