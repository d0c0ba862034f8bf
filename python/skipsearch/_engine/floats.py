"""Float data: the relaxation, null-space and branch-and-bound pipeline of
:func:`skipsearch.find_absorbing_subset` with a relative tolerance, then
meeting in the middle on a projection for small instances it leaves open;
and the same branch and bound as a quick heuristic on integer data."""

from __future__ import annotations

import time
from typing import Any, Optional

import numpy as np

from skipsearch import _core, rounding
from skipsearch._types import FloatArray, IntArray, UInt8Array
from skipsearch._validation import default_memory_limit

#: Branch-and-bound nodes of the float heuristic tried before the lattice.
_HEURISTIC_NODES = 20_000
#: Float instances of at most this many columns that the branch and bound
#: does not settle within ``_HEURISTIC_NODES`` go to meeting in the middle on
#: a projection (2^20 subset sums of 16 bytes a side at most: 16 MiB).
_FLOAT_MITM_MAX = 40


def _float_heuristic(
    A: IntArray,
    b: IntArray,
    time_limit: Optional[float],
    node_limit: Optional[int],
    threads: Optional[int],
) -> tuple[Optional[UInt8Array], int]:
    """The float relaxation and a short branch and bound (up to
    ``_HEURISTIC_NODES`` nodes, fewer within ``node_limit``) on integer
    data: a solution, checked ``A x = b`` exactly, or None; and the nodes."""
    n = A.shape[1]
    cap = _HEURISTIC_NODES if node_limit is None else min(node_limit, _HEURISTIC_NODES)
    quick = _core.search_flip_set(
        np.ones((n, 1)),
        A.astype(float),
        -b[:, None].astype(float),
        None,
        1.0,
        1e-9,
        "none",
        time_limit,
        cap,
        threads,
        memory_limit=default_memory_limit(),
    )
    used = int(quick["nodes"])
    if quick["finding"] == "subset":
        ones = np.zeros(n, dtype=np.int64)
        ones[np.asarray(quick["subset"], dtype=np.int64)] = 1
        if np.array_equal(A @ ones, b):
            return ones.astype(np.uint8), used
    return None, used


def _float(
    A: FloatArray,
    b: FloatArray,
    tol: float,
    start: float,
    time_limit: Optional[float],
    node_limit: Optional[int],
    threads: Optional[int],
) -> dict[str, Any]:
    """Solve float data within ``tol``: the fields of the
    :class:`~skipsearch.subset_sum.SubsetSumResult`, all but ``seconds``."""
    n = A.shape[1]
    # s_i a_i summing to b is the flip condition with u_i = 1, v_i = a_i,
    # c = 1 and skip -b: reuse the relaxation / null space / branch and bound,
    # for a limited number of nodes when meeting in the middle can follow.
    listed = n <= _FLOAT_MITM_MAX
    cap = node_limit
    if listed:
        cap = _HEURISTIC_NODES if node_limit is None else min(node_limit, _HEURISTIC_NODES)
    raw = _core.search_flip_set(
        np.ones((n, 1)),
        A,
        -b[:, None],
        None,
        1.0,
        tol,
        "none",
        time_limit,
        cap,
        threads,
        memory_limit=default_memory_limit(),
    )
    fields: dict[str, Any] = dict(
        solution=None,
        nodes=int(raw["nodes"]),
        method=tuple(raw["method"]),
        exact=False,
        memory_bytes=8 * n * n,
        tolerance=tol,
    )
    if raw["finding"] == "subset":
        solution = np.zeros(n, dtype=np.uint8)
        solution[np.asarray(raw["subset"], dtype=np.int64)] = 1
        return _found(A, b, solution, fields)
    if raw["finding"] == "no_subset":
        return {**fields, "status": "infeasible"}
    status: str = raw.get("stop") or raw.get("numerics") or raw["finding"]
    user_stop = status in ("time_limit", "interrupted") or (
        status == "node_limit" and cap == node_limit
    )
    if not listed or user_stop:
        return {**fields, "status": status}
    # Small and unsettled (a stalled tree, or float64 too coarse for the
    # relaxation): meet in the middle on a projection, complete within tol.
    remaining = None if time_limit is None else max(0.0, time_limit - (time.perf_counter() - start))
    left = None if node_limit is None else max(1, node_limit - fields["nodes"])
    return _projected(A, b, tol, (remaining, left, threads), fields)


def _projected(
    A: FloatArray,
    b: FloatArray,
    tol: float,
    limits: tuple[Optional[float], Optional[int], Optional[int]],
    fields: dict[str, Any],
) -> dict[str, Any]:
    """Meeting in the middle on a projection, within ``tol`` and ``limits``
    (seconds, nodes and threads left), after the branch and bound whose
    result ``fields`` holds: the fields of the result."""
    remaining, left, threads = limits
    n = A.shape[1]
    # The radius is rounded up: the search drops a subset only when its
    # residual provably exceeds it, and what it returns is verified here.
    radius = rounding.up(tol * rounding.norm_upper(b), 3)
    out = _core.meet_in_the_middle(A, b, radius, remaining, left, threads, tol=tol)
    fields = {
        **fields,
        "method": (
            *fields["method"],
            f"meet in the middle (projection, n={n}, {out['memory_bytes'] >> 10} KiB)",
        ),
        "nodes": fields["nodes"] + int(out["nodes"]),
        "memory_bytes": max(fields["memory_bytes"], int(out["memory_bytes"])),
    }
    if out["solution"] is not None:
        solution = np.asarray(out["solution"], dtype=np.uint8)
        if _verified(A, b, tol, solution):  # verified in the core too; checked again here
            return _found(A, b, solution, fields)
        return {**fields, "status": "unresolved"}
    if out["unresolved"] and out["stop"] is None:
        # A subset sat on tol ||b|| to rounding: nothing is proved.
        return {**fields, "status": "unresolved"}
    status = "infeasible" if out["stop"] is None else out["stop"]
    return {**fields, "status": status}


def _found(
    A: FloatArray, b: FloatArray, solution: UInt8Array, fields: dict[str, Any]
) -> dict[str, Any]:
    """``fields`` of a feasible result with ``solution`` and its residual."""
    residual = float(np.max(np.abs(A @ solution - b), initial=0.0))
    return {**fields, "status": "feasible", "solution": solution, "residual": residual}


def _verified(A: FloatArray, b: FloatArray, tol: float, solution: UInt8Array) -> Optional[bool]:
    """Whether ||A x - b|| <= tol ||b|| holds exactly (None: unresolved)."""
    k, n = A.shape
    ones = solution.astype(np.float64)[None, :]
    lower, upper = rounding.residual_bounds(np.ones((n, 1)), A, -b[:, None], 1.0, ones)
    if upper[0] <= tol:
        return True
    if lower[0] > tol:
        return False
    if k * n <= rounding.EXACT_TERMS:
        within, _ = rounding.exact_within(
            np.ones((n, 1)), A, -b[:, None], 1.0, np.flatnonzero(solution).tolist(), tol
        )
        return within
    return None
