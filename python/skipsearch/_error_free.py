"""Correctly rounded sums and products of float64 arrays, vectorized.

The skip-free block's ``b_down' = b_down + c W_down[:, S] b_up[S]`` and the
gap matrix ``E_S = A + c W_down[:, S] W_up[S, :]`` are sums of large terms
that can cancel to almost nothing, where plain float64 keeps no correct
digit. This module evaluates them as the float64 *nearest* the exact value:

- **Error-free transformations** (Knuth's TwoSum, Dekker's TwoProduct with
  Veltkamp splitting; Ogita, Rump & Oishi, "Accurate sum and dot product",
  SIAM J. Sci. Comput. 26, 2005) turn each sum into a float64 pair
  ``H + L`` with an a-priori bound ``err`` on ``|exact - (H + L)|`` (Higham,
  *Accuracy and Stability of Numerical Algorithms*, 2002, ch. 3:
  ``gamma(n) = n u / (1 - n u)``, ``u = 2^-53``).
- **Rounding decision.** ``H`` is the nearest float64 when
  ``[H + L - err, H + L + err]`` lies strictly between the halfway points
  to ``H``'s neighbours (with a factor 2 to spare, so the float evaluation
  of the test cannot flip it).
- **Exact fallback.** Every entry the test leaves open (a value next to a
  rounding boundary, a sum more ill-conditioned than twice float64's
  precision resolves, an exponent outside the range where the
  transformations are exact, a tiny result) is recomputed exactly: with
  ``math.fsum`` (correctly rounded, Shewchuk 1997) on the exact float64
  pieces of every term where TwoProduct splits them exactly, otherwise in
  Python integers, rounded by ``int / int`` division, which CPython rounds
  correctly.
- **Exact matrix products** (Ozaki, Ogita, Oishi & Rump, "Error-free
  transformations of matrix multiplication", Numer. Algorithms 59, 2012):
  rows of the left and columns of the right factor are cut into slices of
  ``beta`` bits, so that every slice product is computed by BLAS without
  rounding whatever its summation order; the slices must exhaust both
  factors, so the products' exact sum is the exact product.

All of this assumes IEEE 754 round-to-nearest-even, numpy's default.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Optional, cast

import numpy as np
import numpy.typing as npt

from skipsearch._types import FloatArray

__all__ = [
    "exact_dot",
    "exact_product_slices",
    "exact_sum",
    "nearest",
    "rounded_flip_sum",
    "rounded_sums",
    "two_product",
    "two_sum",
]

BoolArray = npt.NDArray[np.bool_]

_U = 2.0**-53
_SPLITTER = 134217729.0  # 2^27 + 1, Veltkamp's constant for float64
#: Nonzero magnitudes for which TwoProduct is exact with room to spare
#: (products between 2^-900 and 2^900, splitting far from overflow).
_SAFE_LO, _SAFE_HI = 2.0**-450, 2.0**450
#: Covers the relative error of evaluating a bound of up to 2^30 nonnegative
#: terms in float64 (at most gamma(2^30) < 2^-22).
_INFLATE = 1.0 + 2.0**-20
#: Absolute allowance for underflow (or flush-to-zero) in the few products of
#: the final combination; results below _TINY always take the exact route.
_SLACK = 2.0**-1000
_TINY = 2.0**-900
#: Elements per chunk of the vectorized sums (keeps the temporaries in cache).
_CHUNK = 1 << 17


def two_sum(a: FloatArray, b: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``s = fl(a + b)`` and ``e`` with ``s + e = a + b`` exactly (Knuth),
    barring overflow."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


def _split(a: FloatArray) -> tuple[FloatArray, FloatArray]:
    t = _SPLITTER * a
    hi = t - (t - a)
    return hi, a - hi


def two_product(a: FloatArray, b: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``p = fl(a b)`` and ``e`` with ``p + e = a b`` exactly (Dekker), when
    every nonzero ``|a|``, ``|b|`` lies in ``[2^-450, 2^450]``."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _safe(x: FloatArray) -> BoolArray:
    ax = np.abs(x)
    out: BoolArray = (ax == 0) | ((ax >= _SAFE_LO) & (ax <= _SAFE_HI))
    return out


def _gamma(n: int) -> float:
    """An upper bound on ``gamma(n) = n u / (1 - n u)``."""
    nu = n * _U
    if nu >= 0.5:
        return math.inf
    return nu / (1.0 - nu) * _INFLATE


def _tree(
    P: FloatArray, errors: Optional[list[FloatArray]] = None
) -> tuple[FloatArray, FloatArray, FloatArray, int]:
    """Pairwise TwoSum along the last axis of ``P`` (shape ``(R, N)``).

    Returns ``(h, low, low_abs, count)``: ``sum(P) = h + (the count error
    terms)`` exactly, ``low`` their float64 sum and ``low_abs`` the float64
    sum of their magnitudes. The error terms are appended to ``errors``
    when it is given."""
    R = P.shape[0]
    low = np.zeros(R)
    low_abs = np.zeros(R)
    count = 0
    cur = P
    while cur.shape[1] > 1:
        n = cur.shape[1]
        half = n // 2
        s, e = two_sum(cur[:, :half], cur[:, half : 2 * half])
        low += e.sum(axis=1)
        low_abs += np.abs(e).sum(axis=1)
        count += half
        if errors is not None:
            errors.append(e)
        cur = np.concatenate([s, cur[:, 2 * half :]], axis=1) if n % 2 else s
    h = cur[:, 0] if cur.shape[1] else np.zeros(R)
    return h, low, low_abs, count


def _combine(
    major: FloatArray,
    minor: Optional[FloatArray],
    c_hi: float,
    c_lo: float,
    extras: FloatArray,
) -> tuple[FloatArray, BoolArray]:
    """Nearest float64 to ``V = sum(extras) + (c_hi + c_lo) (sum(major) +
    sum(minor))`` row by row, where it can be decided.

    ``major``: shape ``(R, N)``, summed by TwoSum; ``minor``: ``(R, M)`` or
    None, small terms summed in float64 with a bound; ``extras``: ``(R, K)``,
    ``K >= 0``. Returns ``(value, decided)``; undecided rows hold garbage.
    """
    R = major.shape[0]
    h, low, low_abs, count = _tree(major)
    if minor is not None and minor.shape[1]:
        low = low + minor.sum(axis=1)
        low_abs = low_abs + np.abs(minor).sum(axis=1)
        count += minor.shape[1]
    # sum(major) + sum(minor) = T1 + T2 + dT with |dT| <= eT.
    t1, t2 = two_sum(h, low)
    e_t = _gamma(count + 1) * low_abs * _INFLATE
    ch = np.full(R, c_hi)
    q, qe = two_product(ch, t1)
    r1 = c_hi * t2
    r2 = c_lo * t1
    r3 = c_lo * t2
    xh, xlow, xabs, xcount = _tree(np.concatenate([extras, q[:, None]], axis=1))
    low2 = xlow + qe + r1 + r2 + r3
    H, L = two_sum(xh, low2)
    r_abs = np.abs(r1) + np.abs(r2) + np.abs(r3)
    err = (
        _gamma(xcount + 5) * (xabs + np.abs(qe) + r_abs)
        + _U * r_abs
        + (abs(c_hi) + abs(c_lo)) * e_t
    ) * _INFLATE + _SLACK
    exact = (
        (c_lo == 0.0) & (low_abs == 0.0) & (xabs == 0.0) & (qe == 0.0) & (L == 0.0) & np.isfinite(H)
    )
    # V lies in [H + L - err, H + L + err]; it rounds to H when that interval
    # is inside (H - down / 2, H + up / 2), the halfway points to H's
    # neighbours. The factor 2 absorbs the rounding of the two differences.
    half_up = 0.5 * (np.nextafter(H, np.inf) - H)
    half_down = 0.5 * (H - np.nextafter(H, -np.inf))
    # Past the largest finite float the rounding boundary is where 2^1024
    # would be: half a gap above (below) +-max, like the gap on the other side.
    half_up = np.where(np.isinf(half_up), half_down, half_up)
    half_down = np.where(np.isinf(half_down), half_up, half_down)
    close = (
        np.isfinite(H)
        & np.isfinite(err)
        & (np.abs(H) >= _TINY)
        & (2.0 * err < half_up - L)
        & (2.0 * err < half_down + L)
    )
    safe = _safe(t1) & _safe(np.asarray(c_hi))
    decided: BoolArray = safe & (exact | close)
    return H, decided


def _dyadic(x: FloatArray) -> tuple[list[int], list[int]]:
    """Integers ``M``, ``E`` with ``x = M 2^E`` exactly, entry by entry."""
    mant, expo = np.frexp(np.asarray(x, dtype=np.float64))
    M = np.ldexp(mant, 53).astype(np.int64)
    return M.tolist(), (expo.astype(np.int64) - 53).tolist()


def _from_dyadic(terms: list[tuple[int, int]]) -> Fraction:
    """The exact sum of ``M 2^E`` over ``terms``."""
    terms = [(m, e) for m, e in terms if m]
    if not terms:
        return Fraction(0)
    base = min(e for _, e in terms)
    total = sum(m << (e - base) for m, e in terms)
    return Fraction(total) * Fraction(2) ** base


def exact_sum(x: FloatArray) -> Fraction:
    """The exact sum of the float64 entries of ``x``."""
    M, E = _dyadic(np.ravel(x))
    return _from_dyadic(list(zip(M, E)))


def exact_dot(a: FloatArray, b: FloatArray) -> Fraction:
    """The exact ``sum_i a_i b_i`` of two float64 vectors."""
    Ma, Ea = _dyadic(a)
    Mb, Eb = _dyadic(b)
    return _from_dyadic([(x * y, p + q) for x, p, y, q in zip(Ma, Ea, Mb, Eb)])


def nearest(value: Fraction) -> float:
    """The float64 nearest ``value`` (ties to even).

    Raises
    ------
    OverflowError
        When ``value`` rounds beyond float64's largest finite number.
    """
    out = value.numerator / value.denominator  # CPython rounds int / int correctly
    return out + 0.0


def _fsum_route(terms: FloatArray, extras: FloatArray, c_hi: float, c_lo: float) -> Optional[float]:
    """The float64 nearest ``sum(extras) + (c_hi + c_lo) sum(terms)`` by
    ``math.fsum`` (correctly rounded), once ``c`` times each term is split
    into floats exactly by TwoProduct; None when an exponent is outside the
    range where that split is exact."""
    if c_hi == 1.0 and c_lo == 0.0:
        parts = [terms]
    else:
        if not (np.all(_safe(terms)) and _safe(np.asarray(c_hi)) and _safe(np.asarray(c_lo))):
            return None
        parts = []
        for c in (c_hi, c_lo) if c_lo else (c_hi,):
            p, e = two_product(np.full(terms.shape, c), terms)
            parts += [p, e]
    try:
        return math.fsum(np.concatenate([extras, *parts]).tolist()) + 0.0
    except OverflowError:  # a partial sum overflowed: the exact route decides
        return None


def exact_constant(c_hi: float, c_lo: float) -> Fraction:
    """The flip constant ``c = c_hi + c_lo`` as an exact rational."""
    return Fraction(c_hi) + Fraction(c_lo)


def rounded_flip_sum(
    W: FloatArray,
    cols: npt.NDArray[np.int64],
    v: FloatArray,
    c_hi: float,
    c_lo: float,
    extras: Sequence[FloatArray],
) -> FloatArray:
    """The float64 nearest ``sum(extras) + c W[:, cols] v[cols]`` in every entry.

    Parameters
    ----------
    W : ndarray, shape (R, m)
    cols : ndarray of int, shape (n,)
        The columns summed over (gathered chunk by chunk, so ``W[:, cols]``
        is never copied whole).
    v : ndarray, shape (m,)
    c_hi, c_lo : float
        The exact constant is ``c_hi + c_lo``.
    extras : sequence of ndarray, each shape (R,)
        Added exactly, not scaled by ``c``.

    Returns
    -------
    ndarray, shape (R,)
        Each entry the float64 nearest the exact value (ties to even).

    Raises
    ------
    OverflowError
        When an exact value rounds beyond float64's range; the message
        names the entry.
    """
    R = W.shape[0]
    n = len(cols)
    v = v[cols]
    ext = np.stack([np.asarray(e, dtype=np.float64) for e in extras], axis=1) if extras else None
    if ext is None:
        ext = np.zeros((R, 0))
    out = np.empty(R)
    todo = np.zeros(R, dtype=bool)
    v_safe = bool(np.all(_safe(v)))
    rows = max(1, _CHUNK // max(n, 1))
    with np.errstate(all="ignore"):
        for lo in range(0, R, rows):
            hi = min(R, lo + rows)
            Wc = W[lo:hi, cols]
            P, E = two_product(Wc, v[None, :])
            value, decided = _combine(P, E, c_hi, c_lo, ext[lo:hi])
            if not v_safe:
                decided = np.zeros(hi - lo, dtype=bool)
            else:
                decided &= np.all(_safe(Wc), axis=1)
            out[lo:hi] = value
            todo[lo:hi] = ~decided
        # Second pass on what is left (when v is safe): the sum is h plus the
        # first tree's error terms plus the products' errors, exactly, and
        # all of them go through a second tree (K = 3 in Ogita, Rump &
        # Oishi's SumK), which resolves the condition numbers far beyond
        # 1 / u that large cancelling pairs make.
        left = np.flatnonzero(todo) if v_safe else np.zeros(0, dtype=np.int64)
        step = max(1, rows // 3)
        for lo in range(0, len(left), step):
            part = left[lo : lo + step]
            Wc = W[part][:, cols]
            P, E = two_product(Wc, v[None, :])
            errors: list[FloatArray] = []
            h, _, _, _ = _tree(P, errors)
            major = np.concatenate([h[:, None], *errors, E], axis=1)
            value, decided = _combine(major, None, c_hi, c_lo, ext[part])
            decided &= np.all(_safe(Wc), axis=1)
            out[part[decided]] = value[decided]
            todo[part[decided]] = False
    if np.any(todo):
        c = exact_constant(c_hi, c_lo)
        nz = np.flatnonzero(v)
        for j in np.flatnonzero(todo).tolist():
            a, b = W[j, cols[nz]], v[nz]
            fsummed: Optional[float] = None
            if v_safe and np.all(_safe(a)):
                # Dekker is exact here: fsum the products' float pairs.
                with np.errstate(all="ignore"):
                    p, e = two_product(a, b)
                fsummed = _fsum_route(np.concatenate([p, e]), ext[j], c_hi, c_lo)
            try:
                exact = c * exact_dot(a, b) + exact_sum(ext[j]) if fsummed is None else None
                out[j] = fsummed if exact is None else nearest(exact)
            except OverflowError:
                raise OverflowError(f"entry {j}") from None
    return out


def rounded_sums(
    terms: Sequence[FloatArray],
    c_hi: float,
    c_lo: float,
    extra: FloatArray,
) -> FloatArray:
    """The float64 nearest ``extra + c sum(terms)``, entry by entry.

    Parameters
    ----------
    terms : sequence of ndarray, each shape (R,)
    c_hi, c_lo : float
        The exact constant is ``c_hi + c_lo``.
    extra : ndarray, shape (R,)

    Returns
    -------
    ndarray, shape (R,)

    Raises
    ------
    OverflowError
        When an exact value rounds beyond float64's range.
    """
    R = extra.shape[0]
    K = len(terms)
    out = np.empty(R)
    todo = np.zeros(R, dtype=bool)
    rows = max(1, _CHUNK // max(K, 1))
    with np.errstate(all="ignore"):
        for lo in range(0, R, rows):
            hi = min(R, lo + rows)
            major = np.stack([t[lo:hi] for t in terms], axis=1) if K else np.zeros((hi - lo, 1))
            value, decided = _combine(major, None, c_hi, c_lo, extra[lo:hi, None])
            out[lo:hi] = value
            todo[lo:hi] = ~decided
    if np.any(todo):
        c = exact_constant(c_hi, c_lo)
        for j in np.flatnonzero(todo).tolist():
            row = np.array([t[j] for t in terms])
            fsummed = _fsum_route(row, extra[j : j + 1], c_hi, c_lo)
            try:
                exact = c * exact_sum(row) + Fraction(float(extra[j])) if fsummed is None else None
                out[j] = fsummed if exact is None else nearest(exact)
            except OverflowError:
                raise OverflowError(f"entry {j}") from None
    return out


def _slices(
    M: FloatArray, axis: int, beta: int, limit: int
) -> tuple[list[FloatArray], FloatArray, Optional[tuple[int, int]]]:
    """Cut ``M`` into slices of ``beta`` bits per row (``axis=1``) or column
    (``axis=0``).

    Slice ``t`` of a line is a multiple of ``2^(e_t - beta)`` of magnitude
    at most ``2^e_t + 2^(e_t - beta)``, with ``2^e_t`` the power of two
    above the line's largest remaining entry. Returns the slices, what is
    left after ``limit`` of them (zero when they exhaust ``M``; ``M`` is
    their sum plus the rest, exactly), and the least and largest ``e_t``
    over the nonzero slices (None when ``M`` is zero)."""
    rest = M.copy()
    out: list[FloatArray] = []
    e_min, e_max = None, None
    while len(out) < limit and np.any(rest):
        big = np.max(np.abs(rest), axis=axis, keepdims=True)
        _, e = np.frexp(big)
        live = e[big > 0]
        lo, hi_e = int(live.min()), int(live.max())
        e_min = lo if e_min is None else min(e_min, lo)
        e_max = hi_e if e_max is None else max(e_max, hi_e)
        if hi_e + 53 - beta > 1020:
            break  # sigma would overflow; the caller sees the rest
        sigma = np.ldexp(1.0, e + 53 - beta)
        hi = (rest + sigma) - sigma
        rest = rest - hi
        out.append(hi)
    return out, rest, None if e_min is None else (e_min, cast(int, e_max))


def exact_product_slices(
    P: FloatArray, Q: FloatArray, bits: int = 160
) -> Optional[list[FloatArray]]:
    """``P @ Q`` as a list of float64 matrices, each computed without
    rounding, whose exact sum is ``P @ Q``.

    Parameters
    ----------
    P : ndarray, shape (r, n)
    Q : ndarray, shape (n, s)
    bits : int, default 160
        The span, from the largest entry's leading bit to the smallest
        entry's last bit, that the slices of one row of ``P`` (column of
        ``Q``) may cover; about ``bits / beta`` slices per factor, with
        ``beta = (52 - ceil(log2 n)) // 2``.

    Returns
    -------
    list of ndarray, shape (r, s), or None
        None when a row or column spans more than ``bits``, or when the
        exponents leave the range where the slice products are exact.
    """
    n = P.shape[1]
    if n == 0:
        return []
    beta = (52 - max(1, math.ceil(math.log2(n)))) // 2
    if beta < 4:
        return None
    limit = -(-bits // beta)
    ps, p_rest, p_e = _slices(P, 1, beta, limit)
    qs, q_rest, q_e = _slices(Q, 0, beta, limit)
    if p_e is None or q_e is None:
        return []  # a zero factor
    if np.any(p_rest) or np.any(q_rest):
        return None
    # Every slice product is an integer multiple of 2^(e_p + e_q - 2 beta)
    # below n (2^beta + 1)^2 <= 2^53 units: exact when the unit is at least
    # 2^-1074 and the largest value stays below 2^1023.
    if p_e[0] + q_e[0] - 2 * beta < -1074:
        return None
    if p_e[1] + q_e[1] + 2 + math.ceil(math.log2(n)) > 1020:
        return None
    return [a @ b for a in ps for b in qs]
