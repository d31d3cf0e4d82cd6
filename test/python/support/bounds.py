"""Error bounds for results summed in float32, so that a test's tolerance is
what the arithmetic allows rather than a guess (issue 45: CPU tolerances of
1e-2 where the real error was 1e-7).

A sum of N terms in float32, in any order, is within gamma_N sum|terms| of
the exact sum (Higham, Accuracy and Stability of Numerical Algorithms,
3.1), gamma_N = N u / (1 - N u) with u = eps / 2, which is below
N eps sum|terms| for every N eps < 1. That covers terms rounded to float32
first (float32 products) as well as exact ones (products of float16,
bfloat16 or float8 values, which float32 holds exactly)."""

import numpy as np

from .devices import get

EPS32 = float(np.finfo(np.float32).eps)


def _f64(x):
    return np.asarray(get(x), dtype=np.float64)


def _check(got, want, bound, what):
    got = _f64(got)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    err = np.abs(got - want)
    if not np.all(err <= bound):  # (NaN fails too)
        excess = np.where(err <= bound, 0.0, np.nan_to_num(err - bound, nan=np.inf))
        i = tuple(int(j) for j in np.unravel_index(int(np.argmax(excess)), err.shape))
        raise AssertionError(f"{what} at {i}: {got[i]:.9g}, exact {want[i]:.9g}, error "
                             f"{err[i]:.3g} over the float32 summation bound {bound[i]:.3g} "
                             f"({int((~(err <= bound)).sum())} of {err.size} elements)")


def assert_float32_sum(got, terms, axis=-1, what="result"):
    """`got` is `terms` summed along `axis` in float32 (any order): within
    N eps sum|terms| of the exact (float64) sum."""
    terms = _f64(terms)
    n = terms.shape[axis]
    _check(got, terms.sum(axis), n * EPS32 * np.abs(terms).sum(axis), what)


def assert_float32_matmul(got, a, b, scale=1.0, want=None, what="result"):
    """`got` is scale * (a @ b) accumulated in float32 over K (float32
    operands, or narrower ones whose products are exact in float32), scaled
    after the sum: within K eps |scale| (|a| @ |b|) of the exact product
    (`want`, by default a @ b in float64; a scale of float32 roundings adds
    one u each, covered while K > 2)."""
    a, b = _f64(a), _f64(b)
    k = a.shape[-1]
    assert b.shape[0] == k, f"{what}: a is {a.shape}, b {b.shape}"
    want = scale * (a @ b) if want is None else _f64(want)
    _check(got, want, k * EPS32 * abs(scale) * (np.abs(a) @ np.abs(b)), what)
