"""Rigorous rounding bounds for the numpy re-checks (certificates, residuals).

The same rules as the Rust core's ``rounding`` stage, in numpy: a sum of
``n`` terms or a dot product of length ``n``, evaluated in any order (so
whatever BLAS does), is off by at most ``gamma(n) * sum |terms|`` with
``gamma(n) = n u / (1 - n u)`` and ``u = 2**-53`` (Higham, *Accuracy and
Stability of Numerical Algorithms*, 2nd ed., 2002, ch. 3). Where that
bound is too coarse to settle a question, small problems are evaluated
exactly with :class:`fractions.Fraction` (every float64 is a dyadic
rational, so the inputs are exact).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, Union

import numpy as np
import numpy.typing as npt

from skipsearch._types import FloatArray

#: A flip constant: a float, or ``(hi, lo)`` with the exact constant ``hi + lo``.
FlipConstant = Union[float, tuple[float, float]]

UNIT = 2.0**-53
#: Absolute allowance per operation for underflow (far above 2**-1075).
TINY = 2.0**-1022
#: Largest number of exact products the Fraction fallbacks attempt.
EXACT_TERMS = 200_000


def _split(c: FlipConstant) -> tuple[float, float]:
    """The flip constant as ``(hi, lo)``: a float, or a float and its
    rounding error (the exact constant is ``hi + lo``)."""
    if isinstance(c, tuple):
        return float(c[0]), float(c[1])
    return float(c), 0.0


def gamma(n: int) -> float:
    """``n u / (1 - n u)`` with a 1% margin (covers rounding of the bound)."""
    nu = n * UNIT
    return math.inf if nu >= 0.5 else 1.01 * nu / (1.0 - nu)


def up(x: float, n: int = 2) -> float:
    return x * (1.0 + gamma(n))


def down(x: float, n: int = 2) -> float:
    return max(0.0, x * (1.0 - gamma(n)))


def _pow2_exponent(x: npt.NDArray[np.floating[Any]]) -> int:
    """``k`` such that ``ldexp(x, k)`` has its largest entry in ``[1/2, 1)``
    (0 for a zero or non-finite array). Scaling by ``np.ldexp`` is exact."""
    big = float(np.max(np.abs(x), initial=0.0))
    if big == 0.0 or not math.isfinite(big):
        return 0
    return -math.frexp(big)[1]


def norm_upper(x: npt.ArrayLike) -> float:
    """An upper bound on the Euclidean (Frobenius) norm of ``x``."""
    x = np.asarray(x, dtype=np.float64).ravel()
    k = _pow2_exponent(x)
    y = np.ldexp(x, k)
    total = float(np.dot(y, y))
    return math.ldexp(up(math.sqrt(total * (1.0 + gamma(x.size + 2)) + x.size * TINY), 2), -k)


def norm_lower(x: npt.ArrayLike) -> float:
    """A lower bound on the Euclidean (Frobenius) norm of ``x``."""
    x = np.asarray(x, dtype=np.float64).ravel()
    k = _pow2_exponent(x)
    y = np.ldexp(x, k)
    total = float(np.dot(y, y))
    root = down(math.sqrt(max(0.0, down(total, x.size + 2) - x.size * TINY)), 2)
    return math.ldexp(root, -k)


def interval_bound(
    Y: FloatArray, W_up: FloatArray, W_down: FloatArray, A: FloatArray, c: FlipConstant
) -> tuple[float, float]:
    """The rigorous interval bound proved by the certificate ``Y``.

    For ``s`` in ``{0, 1}^m`` (or the box ``[0, 1]^m``),
    ``<Y, A + sum_i s_i R_i>`` with ``R_i = c W_down[:, i] W_up[i, :]`` lies in
    ``[<Y,A> + sum of the negative <Y,R_i>, <Y,A> + sum of the positive]``;
    if 0 is outside, its distance to 0 over ``||Y||_F`` bounds
    ``||A + sum_{i in S} R_i||_F`` from below for every flip set ``S``.
    ``c`` is a float or ``(hi, lo)`` with the exact constant ``hi + lo``;
    using ``hi`` alone costs one more rounding, which the bound covers.

    Returns ``(bound, rounding)``, both relative to ``||A||_F``: the proven
    bound (0.0 when nothing is proved) and the rounding allowance that was
    subtracted from the margin.
    """
    c, c_lo = _split(c)
    Y = np.ldexp(Y, _pow2_exponent(Y))
    y_up, a_up = norm_upper(Y), norm_upper(A)
    scale = up(y_up * a_up, 1)
    if not (scale > 0.0 and math.isfinite(scale)):
        return 0.0, 0.0
    d_out, d_in = A.shape
    n = A.size
    m = W_up.shape[0]
    with np.errstate(over="ignore", invalid="ignore"):
        prod = Y * A
        a_dot = float(prod.sum())
        err_a = up(gamma(n + 1) * float(np.abs(prod).sum()), 2) + n * TINY
        g = c * np.einsum("pi,pi->i", W_down, Y @ W_up.T)
        mag = abs(c) * np.einsum("pi,pi->i", np.abs(W_down), np.abs(Y) @ np.abs(W_up).T)
    if not (np.all(np.isfinite(g)) and np.all(np.isfinite(mag)) and math.isfinite(a_dot)):
        return 0.0, 0.0
    err_g = up(gamma(d_in + d_out + 6) * float(mag.sum()), m + 2) + m * (d_in + d_out + 6) * TINY
    neg = float(g[g < 0].sum())
    pos = float(g[g > 0].sum())
    lo, hi = a_dot + neg, a_dot + pos
    err_sum = gamma(m + 2) * (abs(a_dot) + pos - neg)
    total = up(err_a + err_g + err_sum, 4)
    gap = max(lo - total, -(hi + total))
    if gap > 0.0:
        return down(gap / scale, 2), total / scale
    margin = max(lo, -hi)
    if margin > 0.0 and m * n <= EXACT_TERMS:
        return _exact_interval_bound(Y, W_up, W_down, A, (c, c_lo), scale), total / scale
    return 0.0, total / scale


def _exact_interval_bound(
    Y: FloatArray,
    W_up: FloatArray,
    W_down: FloatArray,
    A: FloatArray,
    c: FlipConstant,
    scale: float,
) -> float:
    """:func:`interval_bound` with every inner product in exact rationals."""
    F = Fraction
    Yf = [[F(x) for x in row] for row in Y.tolist()]
    a = sum(F(y) * F(x) for y, x in zip(Y.ravel().tolist(), A.ravel().tolist()))
    c, c_lo = _split(c)
    cf = F(c) + F(c_lo)
    Uf = [[F(x) for x in row] for row in W_up.tolist()]
    Df = [[F(x) for x in row] for row in W_down.tolist()]
    lo = hi = a
    for i in range(W_up.shape[0]):
        ui = Uf[i]
        g = F(0)
        for p, yrow in enumerate(Yf):
            v = Df[p][i]
            if v:
                g += v * sum(yq * uq for yq, uq in zip(yrow, ui))
        g *= cf
        if g < 0:
            lo += g
        else:
            hi += g
    gap = lo if lo > 0 else (-hi if hi < 0 else F(0))
    return down(float(gap) / scale, 3) if gap > 0 else 0.0


def residual_bounds(
    W_up: FloatArray, W_down: FloatArray, A: FloatArray, c: FlipConstant, subsets: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Rigorous brackets on ``||A + c W_down[:, S] W_up[S, :]||_F / ||A||_F``.

    ``subsets`` is a ``(k, m)`` 0/1 array, one flip set a row. Returns
    ``(lower, upper)`` arrays of length ``k``: the float64 value widened by
    the a-priori bound on its rounding.
    """
    c, _ = _split(c)
    m = W_up.shape[0]
    R = (c * np.einsum("pi,iq->ipq", W_down, W_up)).reshape(m, -1)
    absR = np.abs(R)
    target = A.reshape(-1)
    E = subsets @ R + target
    mag = subsets @ absR + np.abs(target)
    err = gamma(m + 6) * mag + (m + 6) * TINY
    a_low = norm_lower(A)
    a_up = norm_upper(A)
    n = target.size
    e_sq = np.einsum("kj,kj->k", E, E)
    err_norm = np.sqrt(np.einsum("kj,kj->k", err, err) * (1 + gamma(n + 2))) * (1 + gamma(2))
    e_up = np.sqrt(e_sq * (1 + gamma(n + 2))) * (1 + gamma(2))
    e_low = np.sqrt(np.maximum(e_sq * (1 - gamma(n + 2)), 0.0)) * (1 - gamma(2))
    upper = (e_up + err_norm) / a_low * (1 + gamma(2))
    lower = np.maximum(e_low - err_norm, 0.0) / a_up * (1 - gamma(2))
    return lower, upper


def exact_within(
    W_up: FloatArray,
    W_down: FloatArray,
    A: FloatArray,
    c: FlipConstant,
    subset: Sequence[int],
    tol: float,
) -> tuple[bool, float]:
    """Whether ``||A + c W_down[:, S] W_up[S, :]||_F <= tol ||A||_F`` exactly,
    and an upper bound on the relative residual."""
    F = Fraction
    c, c_lo = _split(c)
    cf = F(c) + F(c_lo)
    e_sq = F(0)
    for p in range(A.shape[0]):
        for q in range(A.shape[1]):
            e = F(A[p, q]) + cf * sum(F(W_down[p, i]) * F(W_up[i, q]) for i in subset)
            e_sq += e * e
    a_sq = sum(F(x) * F(x) for x in A.ravel().tolist())
    ratio = e_sq / a_sq
    if ratio == 0:
        return True, 0.0
    # sqrt of a rational of any size, through logarithms of its integers
    # (float(ratio) could underflow), rounded up generously.
    root = math.exp(0.5 * (math.log(ratio.numerator) - math.log(ratio.denominator)))
    return ratio <= F(tol) ** 2, up(root, 1 << 12)
