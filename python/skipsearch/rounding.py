"""Rigorous rounding bounds for the numpy re-checks (certificates, residuals).

The same rules as the Rust core's ``rounding`` stage, in numpy: a sum of
``n`` terms or a dot product of length ``n``, evaluated in any order (so
whatever BLAS does), is off by at most ``gamma(n) * sum |terms|`` with
``gamma(n) = n u / (1 - n u)`` and ``u = 2**-53`` (Higham, *Accuracy and
Stability of Numerical Algorithms*, 2nd ed., 2002, ch. 3). Where that
bound is too coarse to settle a question, small problems are evaluated
exactly with :class:`fractions.Fraction` (every float64 is a dyadic
rational, so the inputs are exact).

Relative bounds do not cover subnormal results, which err absolutely (by
up to ``2**-1075`` each): every product or sum that can underflow gets an
absolute allowance (``TINY`` per operation, scaled by whatever multiplies
it afterwards), norms are squared after scaling by a power of two, ratios
are formed from the scaled values, and results scaled back into the
subnormal range are stepped one ulp the safe way (:func:`ldexp_up`,
:func:`ldexp_down`). Exact paths end in an exactly rounded square root
(:func:`sqrt_down`, :func:`sqrt_up`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, Optional, Union

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


#: The smallest positive float64, 2^-1074: the absolute rounding error of
#: a product or quotient whose result is subnormal is below it, which the
#: relative factor ``1 +- gamma(n)`` does not cover.
_TINY = 5e-324


def up(x: float, n: int = 2) -> float:
    """An upper bound on a non-negative value computed as ``x`` with ``n``
    relative roundings, subnormal results included (adding 2^-1074 leaves
    a normal value unchanged under round-to-nearest)."""
    return x * (1.0 + gamma(n)) + _TINY


def down(x: float, n: int = 2) -> float:
    """The lower bound matching :func:`up`, never below 0."""
    return max(0.0, x * (1.0 - gamma(n)) - _TINY)


def _pow2_exponent(x: npt.NDArray[np.floating[Any]]) -> int:
    """``k`` such that ``ldexp(x, k)`` has its largest entry in ``[1/2, 1)``
    (0 for a zero or non-finite array). Scaling up by ``np.ldexp`` is
    exact; scaling down may round entries that become subnormal."""
    big = float(np.max(np.abs(x), initial=0.0))
    if big == 0.0 or not math.isfinite(big):
        return 0
    return -math.frexp(big)[1]


#: Smallest positive normal float64; below it results are rounded absolutely.
NORMAL = 2.0**-1022


def ldexp_up(x: float, k: int) -> float:
    """An upper bound on ``x * 2**k`` for ``x >= 0``: ``math.ldexp`` rounds a
    subnormal result to nearest (possibly down), and raises on overflow."""
    try:
        r = math.ldexp(x, k)
    except OverflowError:
        return math.inf
    return math.nextafter(r, math.inf) if r < NORMAL and x > 0.0 else r


def ldexp_down(x: float, k: int) -> float:
    """A lower bound on ``x * 2**k`` for ``x >= 0`` (see :func:`ldexp_up`)."""
    try:
        r = math.ldexp(x, k)
    except OverflowError:
        return _MAX
    return math.nextafter(r, 0.0) if r < NORMAL else r


_MAX = 1.7976931348623157e308


def _norm_upper_scaled(x: npt.NDArray[np.floating[Any]]) -> tuple[float, int]:
    """``(v, k)`` with ``||x|| <= v * 2**-k`` and ``v`` in ``[1/2, 2 sqrt(n)]``
    (or 0): the bound before it is scaled back, clear of underflow."""
    k = _pow2_exponent(x)
    y = np.ldexp(x, k)
    total = float(np.dot(y, y))
    # Entries or squares rounded in the subnormal range err by at most
    # 2**-1075 each, absolutely: covered by x.size * TINY.
    return up(math.sqrt(total * (1.0 + gamma(x.size + 2)) + x.size * TINY), 2), k


def norm_upper(x: npt.ArrayLike) -> float:
    """An upper bound on the Euclidean (Frobenius) norm of ``x``."""
    x = np.asarray(x, dtype=np.float64).ravel()
    v, k = _norm_upper_scaled(x)
    return ldexp_up(v, -k)


def _norm_lower_scaled(x: npt.NDArray[np.floating[Any]]) -> tuple[float, int]:
    """``(v, k)`` with ``||x|| >= v * 2**-k`` (see :func:`_norm_upper_scaled`)."""
    k = _pow2_exponent(x)
    y = np.ldexp(x, k)
    total = float(np.dot(y, y))
    return down(math.sqrt(max(0.0, down(total, x.size + 2) - x.size * TINY)), 2), k


def norm_lower(x: npt.ArrayLike) -> float:
    """A lower bound on the Euclidean (Frobenius) norm of ``x``."""
    x = np.asarray(x, dtype=np.float64).ravel()
    v, k = _norm_lower_scaled(x)
    return ldexp_down(v, -k)


def sqrt_down(q: Fraction) -> float:
    """The largest float64 ``b`` found with ``b * b <= q`` exactly (0.0 for
    ``q <= 0``; the largest finite float64 when ``sqrt(q)`` is beyond it)."""
    return _sqrt_rounded(q, up=False)


def sqrt_up(q: Fraction) -> float:
    """A float64 ``b`` with ``b * b >= q`` exactly, within an ulp or two of
    ``sqrt(q)`` (inf when ``sqrt(q)`` is beyond float64's range)."""
    return _sqrt_rounded(q, up=True)


def _sqrt_rounded(q: Fraction, up: bool) -> float:
    if q <= 0:
        return 0.0
    n, d = q.numerator, q.denominator
    # r = floor(sqrt(q) * 2**e) with about 64 bits, in integers.
    e = 64 - (n.bit_length() - d.bit_length()) // 2
    r = math.isqrt((n << (2 * e)) // d) if e >= 0 else math.isqrt(n // (d << (-2 * e)))
    try:
        b = float(Fraction(r, 1 << e) if e >= 0 else Fraction(r << -e))
    except OverflowError:
        b = math.inf
    if math.isinf(b):
        if up:
            return math.inf
        b = _MAX
    # Correct the float rounding (and the floor) by whole ulps, exactly.
    if up:
        while Fraction(b) ** 2 < q:
            b = math.nextafter(b, math.inf)
            if math.isinf(b):
                return b
    else:
        while b > 0.0 and Fraction(b) ** 2 > q:
            b = math.nextafter(b, 0.0)
    return b


#: Exponents up to this size are left unbalanced (the core's ``MODERATE``).
_MODERATE = 64


def _exact_range(x: FloatArray) -> tuple[int, int]:
    """The exponents ``k`` for which ``x 2^k`` is exact for every entry of
    ``x`` (no lowest set bit below ``2^-1074``, no entry reaching
    ``2^1024``); always contains 0 (the core's ``exact_range``)."""
    nz = np.abs(x[(x != 0) & np.isfinite(x)]).astype(np.float64)
    if nz.size == 0:
        return (-4096, 4096)
    mant, lead = np.frexp(nz)  # nz = mant 2^lead, mant in [1/2, 1)
    # The lowest set bit of each entry: mant 2^53 is an integer.
    ints = np.ldexp(mant, 53).astype(np.int64)
    trailing = np.log2(ints & -ints).astype(np.int64)
    low = int(np.min(lead - 53 + trailing))
    high = int(np.max(lead)) - 1
    return (-1074 - low, 1023 - high)


def _intersect(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return (max(a[0], b[0]), min(a[1], b[1]))


def balanced(
    W_up: FloatArray,
    W_down: FloatArray,
    A: FloatArray,
    b_up: Optional[FloatArray],
    flip: tuple[float, float],
) -> tuple[FloatArray, FloatArray, FloatArray, int, bool, int, tuple[float, float]]:
    """The block rescaled by powers of two (the core's ``Block::balanced``; the baseline and
    :func:`skipsearch.check_certificate` use it):
    the flip constant near 1 with ``W_down`` scaled inversely, ``W_up`` (and
    ``b_up``) near 1, the skip near 1, each exponent kept within the range
    where its matrix stays exact. Returns the scaled ``W_up``, ``W_down``,
    ``A``, the skip's exponent ``k`` (``A_balanced = 2^k A``), whether it was
    exact, the exponent applied to ``W_up`` (and ``b_up``), and the scaled
    flip constant. ``c W_down[:, S] W_up[S, :] + A`` is multiplied by
    ``2^k`` exactly, so every relative quantity is unchanged."""

    def exponent(x: FloatArray) -> int:
        big = float(np.max(np.abs(x), initial=0.0))
        return round(math.log2(big)) if big > 0 and math.isfinite(big) else 0

    c, c_lo = flip
    flips = np.array([c, c_lo])
    k_c = -exponent(flips[:1])
    k_up = -max(exponent(W_up), exponent(b_up) if b_up is not None else -(10**6))
    k_skip = -exponent(A)
    k_cdown = -exponent(W_down) + k_c
    if all(
        abs(k) <= _MODERATE
        for k in (k_c, k_up, k_skip, k_cdown, k_skip - k_up, k_skip - k_up - k_cdown)
    ):
        k_c = k_up = k_skip = 0
    if k_up or k_skip or k_c:
        # c and W_down meet the rest only as their product: t = k_c + k_down
        # ranges over R_c + R_down; t = k_skip - k_up is chosen first, then
        # split to bring c nearest 1 (the core's rule).
        r_up = _exact_range(W_up)
        if b_up is not None:
            r_up = _intersect(r_up, _exact_range(b_up))
        r_down = _exact_range(W_down)
        r_c = _exact_range(flips)
        r_cd = (r_c[0] + r_down[0], r_c[1] + r_down[1])
        r_skip = _exact_range(A)
        r_up = _intersect(r_up, (r_skip[0] - r_cd[1], r_skip[1] - r_cd[0]))
        k_up = min(max(k_up, r_up[0]), r_up[1])
        r_skip = _intersect(r_skip, (k_up + r_cd[0], k_up + r_cd[1]))
        k_skip = min(max(k_skip, r_skip[0]), r_skip[1])
        t = k_skip - k_up
        k_c = min(max(k_c, max(r_c[0], t - r_down[1])), min(r_c[1], t - r_down[0]))
    k_down = k_skip - k_up - k_c
    out: list[FloatArray] = []
    exact = True
    for x, k in ((W_up, k_up), (W_down, k_down), (A, k_skip), (flips, k_c)):
        y = np.ldexp(x, k)
        exact &= bool(np.array_equal(np.ldexp(y, -k), x))
        out.append(y)
    scaled_flip = (float(out[3][0]), float(out[3][1]))
    return out[0], out[1], out[2], k_skip, exact, k_up, scaled_flip


def interval_bound(
    Y: FloatArray,
    W_up: FloatArray,
    W_down: FloatArray,
    A: FloatArray,
    c: FlipConstant,
    settle: Optional[float] = None,
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
    subtracted from the margin. With ``settle``, a bound the allowance
    leaves at or below ``settle`` while float64 saw a margin is computed
    again in exact rationals (when ``m * d_out * d_in <= EXACT_TERMS``), so
    that which side of ``settle`` it lies on is the exact answer.
    """
    c, c_lo = _split(c)
    # Any Y is a certificate, so the scaled (possibly rounded) Y is one too;
    # with its largest entry in [1/2, 1), ||Y|| lies in [1/2, sqrt(n)].
    Y = np.ldexp(Y, _pow2_exponent(Y))
    y_up, _ = _norm_upper_scaled(Y.ravel())
    # ||A|| <= a_up * 2**-k_a with a_up clear of underflow: the bound is
    # ldexp(gap / (y_up * a_up), k_a), and nothing relative is subnormal.
    a_up, k_a = _norm_upper_scaled(A.ravel())
    scale = up(y_up * a_up, 1)
    if not (scale > 0.0 and math.isfinite(scale)):
        return 0.0, 0.0
    d_out, d_in = A.shape
    n = A.size
    m = W_up.shape[0]
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        prod = Y * A
        a_dot = float(prod.sum())
        # |Y| <= 1: each product errs by at most 2**-1075 when it underflows.
        err_a = up(gamma(n + 1) * float(np.abs(prod).sum()), 2) + n * TINY
        g = c * np.einsum("pi,pi->i", W_down, Y @ W_up.T)
        mag = abs(c) * np.einsum("pi,pi->i", np.abs(W_down), np.abs(Y) @ np.abs(W_up).T)
        # Underflow is absolute: d_in products of (Y @ W_up.T)[p, i], each off
        # by 2**-1075, are then multiplied by c W_down[p, i] (which may be
        # large), and the outer products and sums underflow again.
        # The products W_down[p, i] (Y @ W_up.T)[p, i] and their sums
        # underflow too, and are then multiplied by c.
        w_abs = float(np.abs(W_down).sum())
        err_under = up(
            (abs(c) * (d_in + 2) * w_abs + (m + 2) * (d_out + 6) * (1.0 + abs(c))) * TINY, 4
        )
    if not (
        np.all(np.isfinite(g))
        and np.all(np.isfinite(mag))
        and math.isfinite(a_dot)
        and math.isfinite(err_under)
    ):
        return 0.0, 0.0
    err_g = up(gamma(d_in + d_out + 6) * float(mag.sum()), m + 2) + err_under
    neg = float(g[g < 0].sum())
    pos = float(g[g > 0].sum())
    lo, hi = a_dot + neg, a_dot + pos
    err_sum = gamma(m + 2) * (abs(a_dot) + pos - neg) + (m + 2) * TINY
    total = up(err_a + err_g + err_sum, 4)
    allowance = ldexp_up(up(total / scale, 1), k_a) if math.isfinite(total) else math.inf
    gap = max(lo - total, -(hi + total))
    ratio = gap / scale if gap > 0.0 else 0.0
    margin = max(lo, -hi)
    if ratio >= 2.0**-1000:
        # Both normal: the division and the scaling back are relative (the
        # latter exact unless the result is subnormal, which ldexp_down covers).
        bound = ldexp_down(down(ratio, 2), k_a)
        if settle is None or bound > settle or m * n > EXACT_TERMS:
            return bound, allowance
        return max(bound, _exact_interval_bound(Y, W_up, W_down, A, (c, c_lo))), allowance
    if margin > 0.0 and m * n <= EXACT_TERMS:
        return _exact_interval_bound(Y, W_up, W_down, A, (c, c_lo)), allowance
    return 0.0, allowance


def exclusion_bound(
    W_up: FloatArray,
    W_down: FloatArray,
    A: FloatArray,
    c: FlipConstant,
    excluded: Sequence[int],
) -> float:
    """A proven lower bound on ``||A + c W_down[:, S] W_up[S, :]||_F /
    ||A||_F`` over every flip set ``S`` that contains a neuron of
    ``excluded`` (0.0 when nothing is proved; inf when ``excluded`` is empty).

    With the neurons of ``excluded`` ordered by their terms' norms, largest
    first, a flip set whose first excluded neuron is the ``k``-th holds none
    of the ``k - 1`` before it, so by the triangle inequality its residual is
    at least ``||R_k|| - ||A|| - sum of ||R_j||`` over every neuron ``j``
    but those ``k``. Norms are bounded rigorously in float64 and combined in
    exact rationals (``||R_i||_F = |c| ||W_down[:, i]|| ||W_up[i]||``)."""
    if len(excluded) == 0:
        return math.inf
    c_hi, c_lo = _split(c)
    c_abs = abs(Fraction(c_hi) + Fraction(c_lo))

    def bounds(x: FloatArray) -> tuple[Fraction, Fraction]:
        x = np.ascontiguousarray(x, dtype=np.float64).ravel()
        if not np.any(x):
            return Fraction(0), Fraction(0)
        lo, k_lo = _norm_lower_scaled(x)
        hi, k_hi = _norm_upper_scaled(x)
        return Fraction(lo) / Fraction(2) ** k_lo, Fraction(hi) / Fraction(2) ** k_hi

    m = W_up.shape[0]
    terms = []
    for i in range(m):
        (u_lo, u_hi), (v_lo, v_hi) = bounds(W_up[i]), bounds(W_down[:, i])
        terms.append((c_abs * u_lo * v_lo, c_abs * u_hi * v_hi))
    _, a_hi = bounds(A)
    if a_hi == 0:
        return 0.0
    order = sorted(set(int(i) for i in excluded), key=lambda i: (-terms[i][0], i))
    rest = a_hi + sum(hi for _, hi in terms)
    least: Optional[Fraction] = None
    for i in order:
        rest -= terms[i][1]  # no longer among the others
        gap = (terms[i][0] - rest) / a_hi
        least = gap if least is None else min(least, gap)
    assert least is not None
    if least <= 0:
        return 0.0
    # The largest float64 at or below the exact rational.
    b = float(least)
    return b if Fraction(b) <= least else math.nextafter(b, 0.0)


def _exact_interval_bound(
    Y: FloatArray,
    W_up: FloatArray,
    W_down: FloatArray,
    A: FloatArray,
    c: FlipConstant,
) -> float:
    """:func:`interval_bound` in exact rationals: the largest float64 ``b``
    with ``b**2 <= gap**2 / (||Y||_F**2 ||A||_F**2)``, all of it exact."""
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
    if gap <= 0:
        return 0.0
    y_sq = sum(y * y for row in Yf for y in row)
    a_sq = sum(F(x) ** 2 for x in A.ravel().tolist())
    return sqrt_down(F(gap * gap) / F(y_sq * a_sq))


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
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        R = (c * np.einsum("pi,iq->ipq", W_down, W_up)).reshape(m, -1)
        absR = np.abs(R)
        target = A.reshape(-1)
        E = subsets @ R + target
        mag = subsets @ absR + np.abs(target)
        # Each R entry underflows by at most (|c| + 1) 2**-1075, absolutely.
        err = gamma(m + 6) * mag + (m + 6) * max(1.0, abs(c)) * TINY
        # Each row scaled by a power of two so that its largest entry (of E
        # or of err, which is positive) lies in [1/2, 1): its squares can
        # neither overflow nor all underflow. Scaling up is exact; entries
        # rounded when scaling down err by 2**-1075 each, as do subnormal
        # squares: covered by the n * TINY terms below.
        big = np.maximum(np.max(np.abs(E), axis=1, initial=0.0), np.max(err, axis=1))
        k_row = -np.frexp(big)[1]
        Es = np.ldexp(E, k_row[:, None])
        errs = np.ldexp(err, k_row[:, None])
        a_low, k_a = _norm_lower_scaled(A.ravel())
        a_up, _ = _norm_upper_scaled(A.ravel())
        n = target.size
        e_sq = np.einsum("kj,kj->k", Es, Es)
        err_sq = np.einsum("kj,kj->k", errs, errs)
        err_norm = (np.sqrt(err_sq * (1 + gamma(n + 2)) + n * TINY) + n * TINY) * (1 + gamma(2))
        e_up = np.sqrt(e_sq * (1 + gamma(n + 2)) + n * TINY) * (1 + gamma(2))
        e_low = np.sqrt(np.maximum(e_sq * (1 - gamma(n + 2)) - n * TINY, 0.0)) * (1 - gamma(2))
        upper_s = (e_up + err_norm) / a_low * (1 + gamma(2))
        lower_s = np.maximum(e_low - err_norm, 0.0) / a_up * (1 - gamma(2))
        # Back to the true scale: ratio = ratio_s * 2**(k_a - k_row).
        shift = k_a - k_row
        upper = np.ldexp(upper_s, shift)
        lower = np.ldexp(lower_s, shift)
    finite = np.isfinite(big)
    upper = np.where(finite, upper, np.inf)
    upper = np.where((upper < NORMAL) & (upper_s > 0), np.nextafter(upper, np.inf), upper)
    lower = np.where(lower < NORMAL, np.nextafter(lower, 0.0), lower)
    lower = np.where(finite & ~np.isnan(lower), np.minimum(lower, _MAX), 0.0)
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
    # An exact square root rounded up, whatever the size of the rational.
    return ratio <= F(tol) ** 2, sqrt_up(ratio)
