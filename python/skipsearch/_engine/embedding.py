"""The lattice embedding of ``A x = b`` over bounded variables (Aardal,
Hurkens & Lenstra 2000; Wassermann's solvediophant): its rows, weights and
predicted reduction time, the isolation of its kernel basis, the basis
vectors provably beyond the radius, and the decoding of a kernel vector
into a 0/1 solution."""

from __future__ import annotations

import math
from typing import Optional

import numpy as np
import numpy.typing as npt

from skipsearch import _core
from skipsearch._engine.integer_algebra import _leading_minors
from skipsearch._engine.reduction import (
    _CORE_DEEP,
    _failure,
    _fits_int64,
    _fpylll_in_time,
    _import_fpylll,
    _lll,
    _lll_seconds,
    _remaining,
    _stop_of,
)
from skipsearch._types import IntArray, UInt8Array

#: Least weight of the homogenising coordinate while a kernel basis is
#: reduced (solvediophant scales its last line by 1024 the same way).
_HOMOGENISING_WEIGHT = 1024


def _embedding_weights(radius_sq: float) -> tuple[int, int]:
    """The weight of the homogenising coordinate and the first scale of the
    equations in the embedding, for admissible vectors of squared norm at
    most ``radius_sq``: the reduced kernel basis comes out in closest-vector
    form (see ``_closest_vector_form``), and any vector with a nonzero
    equation part is longer than every admissible one (with the weighted
    coordinate, ``weight**2``)."""
    weight = max(_HOMOGENISING_WEIGHT, 1 << math.ceil(math.log2(4 * radius_sq)))
    return weight, _equation_scale(radius_sq + weight**2)


def _equation_scale(norm_sq: float) -> int:
    """The first weight of the equations in the embedding: a power of two
    above four times the largest squared norm of an admissible vector."""
    return 1 << math.ceil(math.log2(4 * norm_sq))


def _embedding(A: IntArray, b: IntArray, c: IntArray, weight: int, scale: int) -> list[list[int]]:
    """The rows ``(2 e_j, 0, scale A[:, j])`` and ``(c, weight, scale b)``
    whose lattice holds every solution as ``(2x - c, -1, 0)``, in Python
    integers (theory section 7.2)."""
    n = A.shape[1]
    rows = [
        [2 if i == j else 0 for i in range(n)] + [0] + [scale * int(v) for v in A[:, j]]
        for j in range(n)
    ]
    rows.append([int(v) for v in c] + [weight] + [scale * int(v) for v in b])
    return rows


def _lll_predicted_seconds(A: IntArray, b: IntArray) -> float:
    """fpylll's LLL time of the embedding of ``A s = b`` (0/1 variables), as
    ``_fpylll_in_time`` predicts it; infinite without fpylll, whose absence
    changes the lattice route (the core's LLL, no BKZ)."""
    if not _import_fpylll():
        return math.inf
    k, n = A.shape
    _, scale = _embedding_weights(n + 1)
    largest = max(int(np.max(np.abs(A), initial=0)), int(np.max(np.abs(b), initial=0)), 1)
    return _lll_seconds(n + 1, k, (scale * largest).bit_length())


def _kernel_rows(rows: list[list[int]], n: int, weight: int = 1) -> list[list[int]]:
    """The nonzero rows of a reduced embedding basis whose equation part is
    zero, cut to their first ``n + 1`` coordinates (Python integers), the
    last one (the homogenising coordinate) divided by its ``weight``."""
    return [
        [*row[:n], row[n] // weight] for row in rows if not any(row[n + 1 :]) and any(row[: n + 1])
    ]


#: Times the equation weight of the lattice embedding is raised (by 2^32)
#: when LLL leaves kernel vectors mixed with the others.
_LATTICE_RESCALES = 4


def _reduced_kernel(
    A: IntArray,
    b: IntArray,
    c: IntArray,
    weights: tuple[int, int],
    want: int,
    deadline: Optional[float],
    steps: list[str],
) -> tuple[Optional[list[list[int]]], Optional[str], int]:
    """The LLL-reduced basis of the kernel lattice of ``[A | -b]`` over the
    bounded variables (``c`` copies each), in closest-vector form: its rows
    with a zero equation part, ``want`` of them, the homogenising
    coordinate weighted by ``weights[0]`` and the equations scaled by
    ``weights[1]``; with the entries of the embedding (for the memory
    count). ``None`` and the status when the deadline passes or the basis
    cannot be isolated in int64; what was done goes into ``steps``."""
    n = A.shape[1]
    weight, scale = weights
    rows = _embedding(A, b, c, weight, scale)
    size = len(rows) * len(rows[0])
    # With a deadline, a reduction fpylll might not end in time goes to the
    # core's LLL, which watches the clock; the kernel is then certified below.
    by_core = not _fpylll_in_time(rows, deadline)
    reduced, failed = _lll(rows, deadline, by_core)
    if reduced is None:
        steps.append(f"lattice: LLL ({_failure(failed)})")
        return None, _stop_of(failed), 0
    steps.append("lattice: LLL (closest-vector form)")
    radius_sq = sum(int(v) ** 2 for v in c) + 1
    kernel_rows, failed, rescaled_by_core = _isolated_kernel(
        reduced, n, (weight, radius_sq), want, deadline, steps
    )
    if kernel_rows is None:
        return None, _stop_of(failed), 0
    if by_core or rescaled_by_core:
        # The core's LLL on the embedding is not certified (its equation
        # weights are beyond what f64 resolves against the kernel vectors):
        # the kernel basis is reduced again on its own, and certified, since
        # the enumeration's float Gram-Schmidt data need a reduced basis.
        certified, failed = _certified(kernel_rows, radius_sq, deadline, steps)
        if certified is None:
            return None, _stop_of(failed), 0
        kernel_rows = certified
    if not _fits_int64(kernel_rows):
        # A prefix of a reduced basis is reduced: no certificate is lost.
        kernel_rows = _within_radius(kernel_rows, radius_sq, steps)
    if not _fits_int64(kernel_rows):
        steps.append("lattice: kernel basis has entries of 2**62 or more")
        return None, "incomplete", 0
    return kernel_rows, None, size


def _isolated_kernel(
    reduced: list[list[int]],
    n: int,
    radius: tuple[int, int],
    want: int,
    deadline: Optional[float],
    steps: list[str],
) -> tuple[Optional[list[list[int]]], Optional[str], bool]:
    """The kernel rows of the reduced embedding ``reduced`` (``radius =
    (weight, radius_sq)``), ``want`` of them, cut to the kernel
    coordinates. The rows with a zero equation part are a basis of the
    kernel lattice only if there are ``n + 1 - rank`` of them; a weight too
    small for large entries leaves kernel vectors mixed with equation
    vectors, so the equation weight is raised (``_LATTICE_RESCALES`` times
    at most) until they separate, and failing that the rows within the
    radius are tried (``_near_kernel``). Returns the rows, or None and why
    (as ``_lll`` says it, None when nothing failed), and whether the core's
    LLL reduced a raised basis."""
    weight, radius_sq = radius
    kernel_rows = _kernel_rows(reduced, n, weight)
    failed = None
    by_core = False
    for _ in range(_LATTICE_RESCALES):
        if len(kernel_rows) >= want:
            break
        rows = [[*r[: n + 1], *(v << 32 for v in r[n + 1 :])] for r in reduced]
        core = not _fpylll_in_time(rows, deadline)
        by_core = by_core or core
        raised, failed = _lll(rows, deadline, core)
        if raised is None:
            steps.append(f"lattice: equation weight x 2^32, LLL ({_failure(failed)})")
            if failed in ("time_limit", "interrupted"):
                return None, failed, by_core
            break
        steps.append("lattice: equation weight x 2^32, LLL")
        reduced = raised
        kernel_rows = _kernel_rows(reduced, n, weight)
    if len(kernel_rows) < want:
        # The last reduced basis: its rows within the radius may still be
        # all kernel vectors.
        near = _near_kernel(reduced, n, (weight, radius_sq), steps)
        if near is None:
            if failed is None:
                steps.append(
                    f"lattice: kernel basis not isolated ({len(kernel_rows)} of {want} vectors)"
                )
            return None, failed, by_core
        kernel_rows = near
    return kernel_rows, None, by_core


def _certified(
    kernel_rows: list[list[int]], radius_sq: int, deadline: Optional[float], steps: list[str]
) -> tuple[Optional[list[list[int]]], Optional[str]]:
    """The kernel basis reduced by the core's LLL with deep insertions,
    certified; or None and why (a step says so)."""
    certified, failed = _core.lll_reduce(kernel_rows, 0.99, _remaining(deadline), deep=_CORE_DEEP)
    if certified is None and failed != "time_limit":
        # Rows far longer than the radius defeat the certificate; those
        # that no admissible vector uses are dropped (in the order of an
        # uncertified reduction: only the lattice matters there), and
        # the rest certified.
        reduced, _ = _core.lll_reduce(kernel_rows, 0.99, _remaining(deadline), certify=False)
        kernel_rows = _within_radius(reduced or kernel_rows, radius_sq, steps)
        certified, failed = _core.lll_reduce(
            kernel_rows, 0.99, _remaining(deadline), deep=_CORE_DEEP
        )
    if certified is None:
        steps.append(f"lattice: LLL of the kernel basis ({_failure(failed)})")
    return certified, failed


#: Largest basis whose Gram-Schmidt norms ``_within_radius`` computes exactly.
_EXACT_GSO_MAX = 64


def _within_radius(rows: list[list[int]], radius_sq: int, steps: list[str]) -> list[list[int]]:
    """The leading rows of a reduced basis that span every lattice vector of
    squared norm at most ``radius_sq`` (theory section 7.2).

    A vector ``sum_i a_i b_i`` has norm at least ``|a_last| |b*_last|``, so
    when the last Gram-Schmidt vector is longer than the radius, every
    vector within it has ``a_last = 0``; the argument repeats on the rows
    before. The Gram-Schmidt norms are exact here (``D_k / D_(k-1)`` of the
    Gram matrix's leading minors, by fraction-free elimination), so the
    rows dropped are provably unused and the enumeration on the rest stays
    complete. Rows are taken in the order given: a reduced basis has the
    long ones last. A basis of more than ``_EXACT_GSO_MAX`` rows is returned
    as it is.
    """
    d = len(rows)
    if d > _EXACT_GSO_MAX:
        return rows
    try:
        minors = _leading_minors([[sum(x * y for x, y in zip(u, v)) for v in rows] for u in rows])
    except ValueError:  # pragma: no cover - the rows are a basis
        return rows
    keep = d
    # |b*_(k-1)|^2 = D_k / D_(k-1) > radius_sq, in integers.
    while keep > 0 and minors[keep] > radius_sq * minors[keep - 1]:
        keep -= 1
    if keep < d:
        steps.append(
            f"lattice: {d - keep} basis vectors beyond the radius dropped (exact Gram-Schmidt)"
        )
    return [list(r) for r in rows[:keep]]


def _near_kernel(
    reduced: list[list[int]], n: int, radius: tuple[int, int], steps: list[str]
) -> Optional[list[list[int]]]:
    """When reduction could not isolate the whole kernel lattice: a basis
    of the kernel vectors that can be solutions, or None.

    Every solution is a vector of the embedding's lattice of squared norm
    at most ``radius_sq + weight^2`` (``radius = (weight, radius_sq)``)
    with a zero equation part. The reduced embedding's rows beyond that
    radius are dropped (:func:`_within_radius`, exact); when the rows left
    all have a zero equation part, they span every solution, and are
    returned cut to the kernel coordinates. Degenerate instances (a few
    distinct columns, many copies) have kernel vectors far longer than the
    equation weights, which the weight would have to pass to isolate them.
    """
    weight, radius_sq = radius
    dropped: list[str] = []
    near = _within_radius(reduced, radius_sq + weight**2, dropped)
    if len(near) == len(reduced) or any(any(r[n + 1 :]) for r in near):
        return None
    steps.extend(dropped)
    return _kernel_rows(near, n, weight)


def _decode(
    y: npt.NDArray[np.int64],
    c: npt.NDArray[np.int64],
    where: npt.NDArray[np.intp],
    A_full: IntArray,
    b: IntArray,
) -> Optional[UInt8Array]:
    """The 0/1 solution behind a bounded kernel vector ``y``, checked
    ``A x = b`` in exact integers (None if it fails)."""
    n = len(c)
    # The solution vector is (2x - c, -1): -1 in the homogenising coordinate.
    y = -y if y[n] == 1 else y
    counts = (y[:n] + c) // 2
    # Spread each count over the first copies of its column: the copies of
    # column j in index order, each with its rank among them.
    order = np.argsort(where, kind="stable")
    rank = np.arange(len(where)) - (np.cumsum(c) - c)[where[order]]
    x = np.zeros(A_full.shape[1], dtype=np.uint8)
    x[order] = rank < counts[where[order]]
    return x if np.array_equal(A_full @ x.astype(np.int64), b) else None
