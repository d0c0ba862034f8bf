"""Ground truth in exact rational arithmetic, for the tests.

Every float64 value is a dyadic rational ``n * 2^-k``; float16 and float32
values widen to float64 exactly. So the flip condition and the subset-sum
contract can be decided *exactly*: scale every matrix to integers by a
common power of two and enumerate all ``2^m`` subsets with Python ints.

The enumeration runs in Gray-code order on the quadratic form

    f(s) = ||t - sum_i s_i C_i||^2 = t.t - 2 sum_i s_i h_i + sum_ij s_i s_j G_ij,

with ``h_i = <t, C_i>`` and ``G_ij = <C_i, C_j>`` exact integers, so each step
costs ``O(m)`` integer additions whatever the size of the columns. Nothing
here uses floating point, numpy's linear algebra or skipsearch.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Optional

import numpy as np

__all__ = [
    "MAX_WIDTH",
    "FlipTruth",
    "SubsetSumTruth",
    "certificate_bound_sq",
    "dyadic",
    "exact_c",
    "flip_truth",
    "mask_of",
    "skip_matrix",
    "subset_of",
    "subset_sum_truth",
]

#: Widest block or subset-sum instance the oracle enumerates.
MAX_WIDTH = 16


# ---------------------------------------------------------------------------
# dyadic scaling


def _ratio(x) -> tuple[int, int]:
    """(numerator, exponent k) with x = numerator * 2^-k exactly."""
    if not np.isfinite(x):
        raise ValueError("non-finite value")
    num, den = float(x).as_integer_ratio()
    k = den.bit_length() - 1
    assert den == 1 << k, "float denominators are powers of two"
    return num, k


def dyadic(values) -> tuple[list, int]:
    """An array of finite floats as (nested lists of Python ints, k) with
    ``values == ints * 2^-k`` exactly, entry by entry."""
    arr = np.asarray(values)
    if arr.dtype.kind in "iub":
        return arr.astype(object).tolist(), 0
    if arr.dtype.kind == "O":  # Python ints stay exact, floats as below
        flat = [
            (int(v), 0) if isinstance(v, (int, np.integer)) else _ratio(v)
            for v in arr.reshape(-1).tolist()
        ]
        k = max((e for _, e in flat), default=0)
        ints = np.array([n << (k - e) for n, e in flat] or [], dtype=object).reshape(arr.shape)
        return ints.tolist(), k
    arr = arr.astype(np.float64)  # exact widening of float16 / float32
    if not np.all(np.isfinite(arr)):
        raise ValueError("non-finite value")
    flat = [_ratio(v) for v in arr.reshape(-1).tolist()]
    k = max((e for _, e in flat), default=0)
    ints = np.array([n << (k - e) for n, e in flat] or [], dtype=object).reshape(arr.shape)
    return ints.tolist(), k


def exact_c(activation: str) -> Fraction:
    """The exact flip constant of ``activation``: 1 for relu and the gelus,
    ``1 + a`` (a the float64 slope, as a rational) for ``leaky_relu(a)``."""
    name = activation.strip()
    if name in ("relu", "gelu", "gelu_tanh", "gelu_new", "gelu_pytorch_tanh", "gelu_fast"):
        return Fraction(1)
    if name == "leaky_relu":
        return 1 + Fraction(0.01)
    if name.startswith("leaky_relu(") and name.endswith(")"):
        return 1 + Fraction(float(name[len("leaky_relu(") : -1]))
    raise ValueError(f"no exact flip constant for {activation!r}")


def skip_matrix(skip, d_out: int, d_in: int) -> np.ndarray:
    """The skip ``A`` as skipsearch reads it: None is I, a float alpha is
    alpha I, an array is itself (widened exactly to float64)."""
    if skip is None:
        return np.eye(d_out, d_in)
    if np.isscalar(skip) or np.ndim(skip) == 0:
        return float(skip) * np.eye(d_out, d_in)
    return np.asarray(skip).astype(np.float64)


def mask_of(subset: Iterable[int]) -> int:
    mask = 0
    for i in subset:
        mask |= 1 << int(i)
    return mask


def subset_of(mask: int) -> tuple:
    out, i = [], 0
    while mask:
        if mask & 1:
            out.append(i)
        mask >>= 1
        i += 1
    return tuple(out)


# ---------------------------------------------------------------------------
# the enumeration


def _residual_table(columns: Sequence[Sequence[int]], target: Sequence[int]) -> list:
    """``f[mask] = ||target - sum_{i in mask} columns[i]||^2`` for every mask,
    exactly, in Gray-code order."""
    n = len(columns)
    if n > MAX_WIDTH:
        raise ValueError(f"the oracle enumerates at most 2^{MAX_WIDTH} subsets, got n = {n}")
    h = [sum(a * b for a, b in zip(target, col)) for col in columns]
    G = [[sum(a * b for a, b in zip(ci, cj)) for cj in columns] for ci in columns]
    value = sum(a * a for a in target)
    table = [0] * (1 << n)
    table[0] = value
    gs = [0] * n  # gs[j] = sum_{l in mask} G[j][l]
    mask = 0
    for step in range(1, 1 << n):
        i = (step & -step).bit_length() - 1
        col = G[i]
        if mask >> i & 1:
            gs = [g - c for g, c in zip(gs, col)]
            value += 2 * h[i] - 2 * gs[i] - col[i]
        else:
            value += -2 * h[i] + 2 * gs[i] + col[i]
            gs = [g + c for g, c in zip(gs, col)]
        mask ^= 1 << i
        table[mask] = value
    return table


def _tol_fraction(tol) -> Fraction:
    return Fraction(float(tol))


# ---------------------------------------------------------------------------
# the flip condition


@dataclass(frozen=True)
class FlipTruth:
    """Exact truth about ``E_S = A + c W_down[:, S] W_up[S, :]`` for every S.

    ``table[mask]`` is ``||E_S||_F^2`` scaled by ``scale`` (a Python int
    ``2^(2K)``); ``a_sq`` is ``||A||_F^2`` on the same scale. ``good`` holds
    the masks with ``||E_S||_F <= tol ||A||_F`` exactly.
    """

    m: int
    table: list
    a_sq: int
    tol: Fraction
    good: frozenset
    inputs: tuple = ()

    def certificate_bound_sq(self, Y, excluded=()) -> Fraction:
        """:func:`certificate_bound_sq` of ``Y`` on this block, over the flip
        sets that avoid ``excluded``."""
        return certificate_bound_sq(Y, *self.inputs, excluded=excluded)

    def least_meeting_sq(self, neurons) -> Fraction:
        """``min ||E_S||_F^2 / ||A||_F^2`` over the flip sets that contain
        one of ``neurons``, exactly (inf as None when there are none)."""
        mask = mask_of(neurons)
        values = [v for k, v in enumerate(self.table) if k & mask]
        return Fraction(min(values), self.a_sq) if values else None

    def ratio_sq(self, subset) -> Fraction:
        """``||E_S||_F^2 / ||A||_F^2`` exactly."""
        mask = subset if isinstance(subset, int) else mask_of(subset)
        return Fraction(self.table[mask], self.a_sq)

    def within(self, subset) -> bool:
        mask = subset if isinstance(subset, int) else mask_of(subset)
        return mask in self.good

    @property
    def exists(self) -> bool:
        return bool(self.good)

    @property
    def min_mask(self) -> int:
        return min(range(len(self.table)), key=self.table.__getitem__)

    @property
    def min_ratio_sq(self) -> Fraction:
        """``min_S ||E_S||_F^2 / ||A||_F^2`` exactly."""
        return Fraction(min(self.table), self.a_sq)

    @property
    def exact_sets(self) -> list:
        """Flip sets with ``E_S = 0`` exactly."""
        return [subset_of(k) for k, v in enumerate(self.table) if v == 0]

    def good_sets(self) -> list:
        return sorted(subset_of(k) for k in self.good)


def _flip_columns(W_up, W_down, A, c: Fraction):
    U, ku = dyadic(W_up)
    V, kv = dyadic(W_down)
    Ai, ka = dyadic(A)
    cn, cd = c.numerator, c.denominator
    kc = cd.bit_length() - 1
    if cd != 1 << kc:
        raise ValueError("the flip constant must be dyadic")
    K = max(ka, ku + kv + kc)
    s_r = cn << (K - ku - kv - kc)
    s_a = 1 << (K - ka)
    m = len(U)
    d_out = len(Ai)
    d_in = len(Ai[0]) if d_out else 0
    columns = [
        [s_r * V[p][i] * U[i][q] for p in range(d_out) for q in range(d_in)] for i in range(m)
    ]
    target = [-s_a * Ai[p][q] for p in range(d_out) for q in range(d_in)]
    return columns, target, K


def flip_truth(W_up, W_down, A, c, tol) -> FlipTruth:
    """Exact truth for the flip condition of the block (``W_up`` (m, d_in),
    ``W_down`` (d_out, m), skip matrix ``A`` (d_out, d_in), flip constant
    ``c`` as a dyadic Fraction, relative tolerance ``tol`` as its float)."""
    c = Fraction(c)
    columns, target, _ = _flip_columns(W_up, W_down, A, c)
    table = _residual_table(columns, target)
    a_sq = table[0]
    t = _tol_fraction(tol)
    bound_num, bound_den = t.numerator**2 * a_sq, t.denominator**2
    good = frozenset(k for k, v in enumerate(table) if v * bound_den <= bound_num)
    return FlipTruth(
        m=len(columns), table=table, a_sq=a_sq, tol=t, good=good, inputs=(W_up, W_down, A, c)
    )


def certificate_bound_sq(Y, W_up, W_down, A, c, excluded=()) -> Fraction:
    """The exact interval bound from ``Y``, squared and relative:

    for s in {0,1}^m, ``<Y, T - sum_i s_i R_i>`` (T = -A, R_i = c v_i u_i^T)
    lies in ``[lo, hi]`` with ``lo = <Y,T> - sum_{<Y,R_i> > 0} <Y,R_i>`` and
    ``hi = <Y,T> - sum_{<Y,R_i> < 0} <Y,R_i>``. If 0 is outside, every flip
    set has ``||E_S||_F >= gap / ||Y||_F`` (Cauchy-Schwarz), gap the
    distance of 0 to the interval. Returns ``(gap / (||Y||_F ||A||_F))^2``
    (0 when 0 is inside), a valid lower bound on ``min_S ||E_S||^2/||A||^2``
    over the flip sets ``S`` that avoid ``excluded`` (their terms left out).
    """
    c = Fraction(c)
    columns, target, K = _flip_columns(W_up, W_down, A, c)
    Yi, ky = dyadic(Y)
    y = [v for row in Yi for v in row]
    yy = sum(v * v for v in y)
    if yy == 0:
        return Fraction(0)
    t_y = sum(a * b for a, b in zip(y, target))
    skip = set(excluded)
    proj = [sum(a * b for a, b in zip(y, col)) for i, col in enumerate(columns) if i not in skip]
    lo = t_y - sum(p for p in proj if p > 0)
    hi = t_y - sum(p for p in proj if p < 0)
    gap = lo if lo > 0 else (-hi if hi < 0 else 0)
    a_sq = sum(v * v for v in target)
    # All on the common scale 2^K for T and R, 2^ky for Y: the scales cancel
    # in gap^2 / (||Y||^2 ||T||^2).
    return Fraction(gap * gap, yy * a_sq)


# ---------------------------------------------------------------------------
# 0/1 subset sum


@dataclass(frozen=True)
class SubsetSumTruth:
    """Exact truth for ``A s = b`` over ``s`` in {0,1}^n: ``good`` holds the
    masks with ``||A s - b||_2 <= tol ||b||_2`` (float contract) or
    ``A s == b`` (integer contract, ``tol`` None)."""

    n: int
    table: list
    b_sq: int
    tol: Optional[Fraction]
    good: frozenset

    @property
    def exists(self) -> bool:
        return bool(self.good)

    def satisfies(self, solution) -> bool:
        return mask_of(np.flatnonzero(np.asarray(solution)).tolist()) in self.good


def subset_sum_truth(A, b, tol=None) -> SubsetSumTruth:
    """Exact truth for ``skipsearch.subset_sum(A, b)``: with ``tol`` None,
    exact equality (integer data); otherwise the float contract
    ``||A s - b||_2 <= tol ||b||_2`` with ``tol`` read as its float."""
    A = np.asarray(A)
    b = np.asarray(b)
    Ai, ka = dyadic(A)
    bi, kb = dyadic(b)
    K = max(ka, kb)
    k, n = A.shape
    columns = [[Ai[r][j] << (K - ka) for r in range(k)] for j in range(n)]
    target = [v << (K - kb) for v in bi]
    table = _residual_table(columns, target)
    b_sq = sum(v * v for v in target)
    if tol is None:
        good = frozenset(i for i, v in enumerate(table) if v == 0)
        t = None
    else:
        t = _tol_fraction(tol)
        num, den = t.numerator**2 * b_sq, t.denominator**2
        good = frozenset(i for i, v in enumerate(table) if v * den <= num)
    return SubsetSumTruth(n=n, table=table, b_sq=b_sq, tol=t, good=good)
