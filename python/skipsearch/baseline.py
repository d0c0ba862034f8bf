"""Pure-numpy baseline: the same API, with the flip-set search done by
enumerating all ``2^m`` subsets.

It shares the activation rules and result assembly with
:func:`skipsearch.find_absorbing_subset`, but computes everything the Rust
core computes independently: the relaxation by ``numpy.linalg.lstsq`` on the
full ``(d_out d_in) x m`` system, the genericity checks by dense numpy, and
the search by brute force. It is the oracle of the test suite and the
reference of the benchmarks; it is practical up to ``m`` of about 22.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any, Optional, Union, cast

import numpy as np
import numpy.typing as npt

from skipsearch import rounding
from skipsearch._float_env import in_standard_float_env
from skipsearch._types import FloatArray, IntArray
from skipsearch._validation import Weights
from skipsearch.absorption import MLPBlock, _decide
from skipsearch.activations import Activation
from skipsearch.options import SearchOptions, merged
from skipsearch.result import AbsorptionResult

if TYPE_CHECKING:
    from skipsearch._core import _FlipSetSearch

__all__ = ["MAX_WIDTH", "find_absorbing_subset"]

#: Largest hidden width the baseline accepts (2^26 subsets).
MAX_WIDTH = 26
_CHUNK = 1 << 14
#: Squared distances from Gram entries below this (relative) are rounding
#: noise; the same constant as the Rust core's genericity check.
_GRAM_RESOLUTION = 1024 * np.finfo(np.float64).eps


def _unscaled(y: FloatArray, wanted: int) -> FloatArray:
    """``y`` times ``2^wanted`` (back to the skip's units), or the nearest
    power of two that keeps every nonzero entry normal and finite: any
    positive multiple of a certificate proves the same bound, and one of
    subnormals would prove nothing."""
    nonzero = y[y != 0]
    if nonzero.size == 0:
        return np.ldexp(y, wanted)
    _, e = np.frexp(nonzero)
    most_down, most_up = -1021 - int(e.min()), 1024 - int(e.max())
    shift = 0 if most_down > most_up else min(max(wanted, most_down), most_up)
    return np.ldexp(y, shift)


def _genericity(
    W_up: FloatArray, W_down: FloatArray, b_up: Optional[FloatArray], check: str, tol: float
) -> dict[str, Any]:
    m = W_up.shape[0]
    aug = W_up if b_up is None else np.hstack([W_up, b_up[:, None]])
    aug_raw = aug
    # Rows whose largest entry lies outside [2^-480, 2^480] square to 0 or
    # inf (the core's rule): for proportionality, which does not see a
    # row's scale, each is brought to [1, 2); for distinct up to sign they
    # are compared with each other exactly, and never with other rows.
    big = np.max(np.abs(aug), axis=1, initial=0.0)
    extreme = (big > 0) & ((big < 2.0**-480) | (big > 2.0**480))
    if extreme.any():
        _, e = np.frexp(big[extreme])
        aug = aug.copy()
        aug[extreme] = np.ldexp(aug[extreme], (1 - e)[:, None])
    # Dead: a row of W_up or a column of W_down exactly zero (the core's
    # rule; a nonzero row is alive whatever its size).
    dead_mask = ~np.any(W_up != 0, axis=1) | ~np.any(W_down != 0, axis=0)
    gram = aug @ aug.T
    norms = np.diag(gram).copy()
    pairs: list[tuple[int, int]] = []
    # The Gram entries' a-priori rounding (the core's rule): an exactly
    # proportional or equal pair is flagged whatever tol.
    res = max(_GRAM_RESOLUTION, 8 * rounding.gamma(aug.shape[1] + 4))
    if check != "none":
        for i in range(m):
            for j in range(i + 1, m):
                if dead_mask[i] or dead_mask[j] or norms[i] <= 0 or norms[j] <= 0:
                    continue
                if check == "distinct_up_to_sign" and (extreme[i] or extreme[j]):
                    if extreme[i] and extreme[j]:
                        a_i, a_j = aug_raw[i], aug_raw[j]
                        if np.array_equal(a_i, a_j) or np.array_equal(a_i, -a_j):
                            pairs.append((i, j))
                    continue
                a = abs(gram[i, j])
                if check == "non_proportional":
                    bad = a >= (1 - max(tol, res)) * math.sqrt(norms[i] * norms[j])
                else:
                    bad = norms[i] + norms[j] - 2 * a <= max(tol**2, res) * max(norms[i], norms[j])
                if bad:
                    pairs.append((i, j))
    return {
        "check": check,
        "dead": np.flatnonzero(dead_mask),
        "pairs": np.asarray(pairs, dtype=np.int64).reshape(-1, 2),
        "pair_count": len(pairs),
    }


def _refined_residual(
    R: FloatArray, target: FloatArray, s: FloatArray, steps: int = 3
) -> FloatArray:
    """The least-squares residual ``target - R.T s``, refined with exact
    rational residuals: each step solves for the correction in float64 and
    adds it to rational weights. Returns ``Y`` rounded to float64."""
    from fractions import Fraction

    Rf = [[Fraction(x) for x in row] for row in R.tolist()]
    tf = [Fraction(x) for x in target.tolist()]
    w = [Fraction(x) for x in s.tolist()]
    for _ in range(steps + 1):
        res = [t - sum(wi * row[k] for wi, row in zip(w, Rf)) for k, t in enumerate(tf)]
        y = np.array([float(x) for x in res])
        step, *_ = np.linalg.lstsq(R.T, y, rcond=None)
        w = [wi + Fraction(float(d)) for wi, d in zip(w, step)]
    return y.reshape(-1)


def _enumerate(  # noqa: PLR0915 - one pass over 2^m subsets, kept in one piece
    w: Weights,
    flip: tuple[float, float],
    tol: float,
    check: str,
    options: SearchOptions,
) -> _FlipSetSearch:
    """The baseline's search, as a record of the same type as the core's:
    built as a plain dict while the enumeration fills it, and returned as
    the record once every path has set its finding."""
    W_up, W_down, A, b_up = w.W_up, w.W_down, w.A, w.b_up
    time_limit, node_limit = options.time_limit, options.node_limit
    c, c_lo = flip
    start = time.perf_counter()
    m = W_up.shape[0]
    if m > MAX_WIDTH:
        raise ValueError(
            f"the baseline enumerates 2^m subsets and accepts m <= {MAX_WIDTH}, got m = {m}"
        )
    # Powers of two keep every relative quantity exact while squares stay
    # clear of under- and overflow.
    W_up, W_down, A, k_skip, exact, k_up, (c, c_lo) = rounding.balanced(W_up, W_down, A, b_up, flip)
    genericity = _genericity(
        W_up, W_down, None if b_up is None else np.ldexp(b_up, k_up), check, tol
    )
    flip = (c, c_lo)
    a_norm = rounding.norm_upper(A)
    out: dict[str, Any] = {
        "subset": None,
        "certificate": None,
        "rank": None,
        "components": [],
        "nodes": 0,
        "method": [],
        "residual": None,
    }
    # R[i] = c v_i u_i^T, flattened; the target is -A.
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        R = (c * np.einsum("pi,iq->ipq", W_down, W_up)).reshape(m, A.size)
    target = -A.reshape(-1)
    out["method"].append("relaxation (lstsq)")
    out["genericity"] = genericity
    if not exact or not np.isfinite(R).all():
        # A rescaling that lost bits, or terms beyond float64's range even
        # balanced (the core's overflow): nothing float64 says is a proof.
        out.update(finding="inconclusive", numerics="overflow", relaxation_distance=None)
        out["seconds"] = time.perf_counter() - start
        return cast("_FlipSetSearch", out)
    s_star = np.zeros(m)
    out["rank"] = 0
    if m:
        try:
            s_star, _, rank, _ = np.linalg.lstsq(R.T, target, rcond=None)
            out["rank"] = int(rank)
        except np.linalg.LinAlgError:
            # LAPACK gave up (terms near the ends of the range): the
            # certificates below then start from s = 0 (Y = A) and the
            # enumeration decides.
            out["rank"] = None
    Y = (target - R.T @ s_star).reshape(A.shape)
    distance = rounding.norm_upper(Y) / a_norm
    out["method"].append("certificate")
    # lstsq's distance is float64's estimate, not a proof: a certificate
    # counts only through its rigorous interval bound. Y = A is tried too.
    best: tuple[float, float, Optional[FloatArray]] = (0.0, 0.0, None)
    own = own_rounding = 0.0
    for cand in (Y, A):
        bound, slack = rounding.interval_bound(cand, W_up, W_down, A, flip)
        if cand is Y:
            own, own_rounding = bound, slack
        if bound > best[0] or best[2] is None:
            best = (bound, slack, cand)

    # Reported only as far as Y proves it (the core's rule).
    def confirms(bound: float, allowance: float) -> bool:
        slack = max(2 * allowance, 1e-6 * distance)
        return math.isfinite(distance) and (bound >= distance - slack or distance <= tol)

    if m and not confirms(own, own_rounding) and A.size * m <= rounding.EXACT_TERMS:
        # A small distance between large terms: refine the weights in exact
        # rationals (the core does this in double-double with exact sums).
        try:
            Y_exact = _refined_residual(R, target, s_star).reshape(A.shape)
        except (ValueError, OverflowError, np.linalg.LinAlgError):
            Y_exact = Y  # a step left float64's range: no refinement
        bound, allowance = rounding.interval_bound(Y_exact, W_up, W_down, A, flip)
        if bound > own:
            own, own_rounding, Y = bound, allowance, Y_exact
            if bound > best[0]:
                best = (bound, allowance, Y_exact)
    confirmed = confirms(own, own_rounding)
    out["relaxation_distance"] = min(own, distance) if confirmed else None
    out["distance_bound"], out["rounding_bound"] = best[0], best[1]
    if best[0] > tol:
        out.update(
            # best[2] is set: the loop above ran for Y and A.
            finding="no_subset",
            evidence="certificate",
            certificate=_unscaled(cast(FloatArray, best[2]), -k_skip),
        )
        out["seconds"] = time.perf_counter() - start
        return cast("_FlipSetSearch", out)

    out["method"].append("enumeration")
    limit = node_limit if node_limit is not None else math.inf
    total = 1 << m
    unresolved = False
    for first in range(0, total, _CHUNK):
        if time_limit is not None and time.perf_counter() - start > time_limit:
            out.update(finding="stopped", stop="time_limit")
            break
        codes = np.arange(first, min(first + _CHUNK, total), dtype=np.int64)
        if out["nodes"] + len(codes) > limit:
            out["nodes"] = int(limit)
            out.update(finding="stopped", stop="node_limit")
            break
        out["nodes"] += len(codes)
        chunk = ((codes[:, None] >> np.arange(m)) & 1).astype(np.float64)
        lower, upper = rounding.residual_bounds(W_up, W_down, A, flip, chunk)
        hit: Optional[tuple[IntArray, float]] = None
        for k in np.flatnonzero(lower <= tol):
            subset = np.flatnonzero(chunk[k]).astype(np.int64)
            if upper[k] <= tol:
                hit = (subset, float(upper[k]))
                break
            # The bracket straddles tol: decide in exact rationals.
            if A.size * max(1, len(subset)) <= rounding.EXACT_TERMS:
                within, value = rounding.exact_within(W_up, W_down, A, flip, subset.tolist(), tol)
                if within:
                    hit = (subset, value)
                    break
            else:
                unresolved = True
        if hit is not None:
            out.update(finding="subset", subset=hit[0], residual=hit[1])
            break
    else:
        if unresolved:
            out.update(finding="inconclusive", numerics="unresolved")
        else:
            out.update(finding="no_subset", evidence="enumeration")
    out["seconds"] = time.perf_counter() - start
    return cast("_FlipSetSearch", out)


@in_standard_float_env
def find_absorbing_subset(  # noqa: PLR0913 - find_absorbing_subset's own keywords
    W_up: npt.ArrayLike,
    W_down: npt.ArrayLike,
    *,
    activation: Union[str, Activation] = "relu",
    b_up: Optional[npt.ArrayLike] = None,
    b_down: Optional[npt.ArrayLike] = None,
    W_gate: Optional[npt.ArrayLike] = None,
    skip: Optional[npt.ArrayLike] = None,
    tol: Optional[float] = None,
    time_limit: Optional[float] = None,
    node_limit: Optional[int] = None,
    threads: Optional[int] = None,
    options: Optional[SearchOptions] = None,
    b_gate: Optional[npt.ArrayLike] = None,
) -> AbsorptionResult:
    """Brute-force twin of :func:`skipsearch.find_absorbing_subset`.

    Same parameters, verdicts and result fields; ``stats.backend`` is
    ``"baseline"``, ``stats.nodes`` counts the subsets enumerated and
    ``threads`` is accepted but unused. Of ``options``
    (:class:`skipsearch.SearchOptions`) it reads ``tol``, ``time_limit`` and
    ``node_limit``. The first flip set in binary
    counting order is returned, which may differ from the Rust core's choice
    when several exist.

    Raises
    ------
    ValueError
        As :func:`skipsearch.find_absorbing_subset`, and when ``m > 26``.
    TypeError
        As :func:`skipsearch.find_absorbing_subset`.

    References
    ----------
    Mijoski & Karbevski 2026, arXiv:2604.23705 (see
    :func:`skipsearch.find_absorbing_subset`).

    Examples
    --------
    >>> import numpy as np
    >>> from skipsearch import baseline
    >>> baseline.find_absorbing_subset(np.eye(2), -np.eye(2)).subset.tolist()
    [0, 1]
    """
    return _decide(
        MLPBlock(W_up, W_down, activation, b_up, b_down, W_gate, skip, b_gate),
        options=merged(
            options, tol=tol, time_limit=time_limit, node_limit=node_limit, threads=threads
        ),
        search=_enumerate,
        backend="baseline",
    )
