"""reference.py — α-entmax in numpy, written from the definition and
independently of kiln's kernel (compiler/ops/entmax.c), for the tests in
tests/entmax/.

    entmax_α(x) = argmax_p  p·x + H_α(p)   over the simplex
                = [(α - 1)·x - τ]_+ ^ (1 / (α - 1)),   τ such that Σ = 1

Here τ is found on the entmax package's scale (Peters, Niculae & Martins
2019, entmax_bisect): X = (α - 1)·(x - max x), τ in [-1, -(1/n)^(α-1)]
(the max alone gets mass 1 at τ = -1; every element at most 1/n at the
other end), 200 halvings in float64 — kiln instead bisects on the x scale
with log1p/exp masses, so the two share no code and no formula. α = 1 is
softmax. Rows along the last axis of a float64 array; α broadcasts to the
rows (shape [..., 1])."""
import numpy as np


def entmax(x, alpha, iters=200):
    """α-entmax of x (float64) along the last axis; alpha a number or an
    array broadcasting to x[..., :1]."""
    x = np.ascontiguousarray(x, np.float64)
    alpha = np.broadcast_to(np.asarray(alpha, np.float64), x.shape[:-1] + (1,))
    out = np.empty_like(x)
    rows, alphas = x.reshape(-1, x.shape[-1]), alpha.reshape(-1)
    flat = out.reshape(-1, x.shape[-1])
    for r in range(rows.shape[0]):
        flat[r] = entmax_row(rows[r], float(alphas[r]), iters)
    return out


def entmax_row(row, alpha, iters=200):
    finite = row > -np.inf
    z = np.where(finite, row - row[finite].max(), -np.inf)
    if alpha == 1:
        e = np.exp(z)
        return e / e.sum()
    a1 = alpha - 1
    X = a1 * z
    n = row.size

    def p(tau):
        with np.errstate(invalid="ignore"):
            base = np.where(finite, np.maximum(X - tau, 0), 0.0)
        return base ** (1 / a1)

    lo, hi = -1.0, -(1.0 / n) ** a1     # mass(lo) >= 1 >= mass(hi)
    for _ in range(iters):
        mid = (lo + hi) / 2
        if p(mid).sum() >= 1:
            lo = mid
        else:
            hi = mid
    return p(lo)


def sparsemax(x):
    """Sparsemax by sorting (Martins & Astudillo 2016), last axis."""
    z = np.sort(x, axis=-1)[..., ::-1]
    k = np.arange(1, x.shape[-1] + 1)
    cum = np.cumsum(z, axis=-1)
    support = 1 + k * z > cum
    s = support.sum(axis=-1, keepdims=True)
    tau = (np.take_along_axis(cum, s - 1, axis=-1) - 1) / s
    return np.maximum(x - tau, 0)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
