"""How far from absorbable: a proven bracket on the best flip set's residual.

For a flip-linear activation with constant ``c``, the skip-free block built
from any flip set ``S`` misses ``A x + f(x)`` by exactly the linear map
``E_S = A + c W_down[:, S] W_up[S, :]``. The bracket ``(lower, upper)``
holds the least relative residual ``||E_S||_F / ||A||_F`` over all flip
sets:

- ``upper`` is the residual of ``best_subset``, the best flip set a local
  search finds, bounded from above rigorously (float64 value plus an
  a-priori bound on its rounding); the empty set gives exactly 1.
- ``lower`` is a proven lower bound over all flip sets: the decision's own
  certificate bound or certified relaxation distance (0 when the block is
  absorbable).

The local search works on ``||E(s)||^2 = ||A||^2 + 2 h.s + s.G s`` with
``G = c^2 (W_down^T W_down) * (W_up W_up^T)`` and ``h_i = c v_i^T A u_i``:
with the gradient ``g = h + G s`` kept, flipping neuron ``i`` changes the
value by ``2 d g_i + d^2 G_ii`` (``d = 1 - 2 s_i``) and costs ``O(m)``;
pairs of flips are tried when no single one helps. It starts from the
empty set, the decision's flip set if any, and the least-squares
relaxation rounded at three thresholds. Blocks small enough
(``2^m d_out d_in`` up to ``ENUMERATION_WORK``) have every flip set
bracketed instead, so their bracket is the proven optimum.
The bracket and the search are this project's
additions, not Mijoski & Karbevski's (2026, arXiv:2604.23705), whose
results are exact yes/no answers.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from skipsearch import rounding
from skipsearch._types import FloatArray, IntArray

__all__ = ["BRACKET_MAX_NEURONS", "flip_set_bracket"]

#: Largest width bracketed: the m x m Gram matrix takes 8 m^2 bytes (32 MiB).
BRACKET_MAX_NEURONS = 2048
#: Every flip set is enumerated, each with its rigorous residual bracket,
#: when 2^m d_out d_in stays below this (a fraction of a second): the
#: bracket is then the proven optimum.
ENUMERATION_WORK = 2**27
#: Flip sets bracketed at once in the enumeration.
_CHUNK = 4096


def _local_search(G: FloatArray, h: FloatArray, s: FloatArray) -> FloatArray:
    """Best-improvement moves from ``s`` until none lowers the value: single
    flips, then, when none helps, the best pair of flips (``O(m^2)`` each)."""
    s = s.copy()
    g = h + G @ s
    diag = np.diag(G).copy()
    m = len(s)

    def flip(i: int, d: float) -> None:
        s[i] += d
        g[:] += d * G[:, i]

    for _ in range(20 * m + 20):
        d = 1.0 - 2.0 * s
        change = 2.0 * d * g + diag
        i = int(np.argmin(change))
        noise = 1e-12 * (np.abs(g) + diag + 1e-300)
        if change[i] < -noise[i]:
            flip(i, d[i])
            continue
        # No single flip helps: the best pair, whose change is the two
        # single changes plus their interaction 2 d_i d_j G_ij.
        pair = change[:, None] + change[None, :] + 2.0 * np.outer(d, d) * G
        np.fill_diagonal(pair, np.inf)
        i, j = divmod(int(np.argmin(pair)), m)
        if not pair[i, j] < -(noise[i] + noise[j]):
            break
        flip(i, d[i])
        flip(j, d[j])
    return s


def _value(G: FloatArray, h: FloatArray, s: FloatArray) -> float:
    return float(2.0 * h @ s + s @ G @ s)


def residual_upper(
    W_up: FloatArray, W_down: FloatArray, A: FloatArray, c: float, subset: IntArray
) -> float:
    """A rigorous upper bound on ``||A + c W_down[:, S] W_up[S, :]||_F / ||A||_F``.

    The product's rounding is bounded entrywise by ``gamma(|S| + 6)`` times
    the same expression in absolute values (Higham, ch. 3), which also
    covers ``c``'s own rounding to float64.
    """
    k = len(subset)
    E = A + c * (W_down[:, subset] @ W_up[subset])
    mag = np.abs(A) + abs(c) * (np.abs(W_down[:, subset]) @ np.abs(W_up[subset]))
    err = rounding.gamma(k + 6) * mag + (k + 6) * rounding.TINY
    n = E.size
    e_up = math.sqrt(float(np.sum(E * E)) * (1 + rounding.gamma(n + 2))) * (1 + rounding.gamma(2))
    err_up = math.sqrt(float(np.sum(err * err)) * (1 + rounding.gamma(n + 2))) * (
        1 + rounding.gamma(2)
    )
    return (e_up + err_up) / rounding.norm_lower(A) * (1 + rounding.gamma(2))


def _enumerate(
    W_up: FloatArray, W_down: FloatArray, A: FloatArray, c: float
) -> tuple[IntArray, float, float]:
    """Every flip set's rigorous residual bracket: the best one, the least
    lower bound over all sets, and the best set's upper bound."""
    m = W_up.shape[0]
    bits = (np.arange(m, dtype=np.int64)[None, :]).astype(np.int64)
    best_upper, best_lower, best_set = math.inf, math.inf, 0
    for first in range(0, 1 << m, _CHUNK):
        codes = np.arange(first, min(first + _CHUNK, 1 << m), dtype=np.int64)
        subsets = ((codes[:, None] >> bits) & 1).astype(np.float64)
        low, up = rounding.residual_bounds(W_up, W_down, A, c, subsets)
        best_lower = min(best_lower, float(np.min(low)))
        i = int(np.argmin(up))
        if up[i] < best_upper:
            best_upper, best_set = float(up[i]), int(codes[i])
    subset = np.flatnonzero((best_set >> np.arange(m)) & 1).astype(np.int64)
    return subset, best_lower, best_upper


def flip_set_bracket(
    W_up: FloatArray,
    W_down: FloatArray,
    A: FloatArray,
    c: float,
    *,
    lower: float,
    start: Optional[IntArray] = None,
) -> tuple[IntArray, float, float]:
    """The best flip set found and the bracket ``(lower, upper)``.

    Parameters
    ----------
    W_up : ndarray, shape (m, d_in)
    W_down : ndarray, shape (d_out, m)
    A : ndarray, shape (d_out, d_in)
        The skip, nonzero.
    c : float
        The flip constant (``act(z) - act(-z) = c z``).
    lower : float
        A proven lower bound on every flip set's relative residual (the
        decision's certificate bound, relaxation distance, or 0).
    start : ndarray of int, optional
        A flip set to start the local search from as well.

    Returns
    -------
    best_subset : ndarray of int
    lower, upper : float
        ``lower <= min_S ||E_S||_F / ||A||_F <= upper``; ``upper`` is the
        rigorous bound for ``best_subset`` (1.0 exactly for the empty set).
    """
    m = W_up.shape[0]
    if (1 << m) * A.size <= ENUMERATION_WORK:
        subset, least, upper = _enumerate(W_up, W_down, A, c)
        if len(subset) == 0:
            upper = 1.0  # exactly: E = A
        return subset, max(lower, least), upper
    G = (c * c) * ((W_down.T @ W_down) * (W_up @ W_up.T))
    h = c * np.sum((W_down.T @ A) * W_up, axis=1)
    starts = [np.zeros(m)]
    if start is not None and len(start):
        s0 = np.zeros(m)
        s0[start] = 1.0
        starts.append(s0)
    # The least-squares relaxation, rounded: ridge-regularized so that a
    # singular Gram matrix still gives a point.
    ridge = 1e-12 * (float(np.max(np.diag(G), initial=0.0)) + 1e-300)
    try:
        relaxed = np.linalg.solve(G + ridge * np.eye(m), -h)
        starts.extend((relaxed > t).astype(np.float64) for t in (0.3, 0.5, 0.7))
    except np.linalg.LinAlgError:
        pass
    best = min(
        (_local_search(G, h, s) for s in starts),
        key=lambda s: _value(G, h, s),
    )
    subset = np.flatnonzero(best > 0.5).astype(np.int64)
    upper = 1.0 if len(subset) == 0 else residual_upper(W_up, W_down, A, c, subset)
    if upper >= 1.0:
        subset, upper = np.zeros(0, dtype=np.int64), 1.0
    return subset, lower, upper
