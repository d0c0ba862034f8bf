"""Exact 0/1 subset sum: find ``s`` in ``{0, 1}^n`` with ``A s = b``.

Integer data are solved exactly. After a presolve (zero columns, row bounds,
row gcds), the instance is embedded in a lattice whose short ``+-1`` vectors
are its solutions (Aardal, Hurkens & Lenstra 2000; the embedding of
Wassermann's solvediophant). fpylll reduces the basis (LLL, then BKZ): a
well-kept library does the reduction, which is not where the difficulty lies,
and it is far faster and better tested than a reduction written here. The
Rust core then enumerates the kernel lattice completely, in parallel, so an
empty enumeration proves infeasibility. Float data go through the relaxation,
null-space and branch-and-bound pipeline of
:func:`skipsearch.find_absorbing_subset`, with a relative tolerance.

Market-split instances (Cornuejols & Dawande 1998) are the hard family this
targets; LP-based branch and bound stalls on them.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from skipsearch import _core
from skipsearch._validation import as_float_array, check_limit, check_threads, check_tol

__all__ = ["SubsetSumResult", "subset_sum"]

#: Branch-and-bound nodes of the float heuristic tried before the lattice.
_HEURISTIC_NODES = 20_000
#: Enumeration nodes tried on the LLL basis before BKZ (for n >= 30).
_LLL_PROBE_NODES = 200_000
#: Block size of the BKZ pass after LLL (for n >= 30).
_BKZ_BLOCK = 20


@dataclass(frozen=True, eq=False, repr=False)
class SubsetSumResult:
    """Outcome of :func:`subset_sum`.

    Attributes
    ----------
    status : str
        ``"feasible"``, ``"infeasible"``, ``"time_limit"`` or ``"node_limit"``
        (a limit stopped the search before a proof).
    solution : ndarray of uint8, shape (n,), or None
        ``s`` with ``A s = b`` (exactly for integers, within ``tol`` for floats).
    exact : bool
        Whether integer arithmetic was used throughout.
    method : tuple of str
        The stages run, in order.
    nodes : int
        Enumeration or branch-and-bound nodes.
    seconds : float
        Wall time, in seconds.
    memory_bytes : int
        Peak memory of the chosen method's main data structure (the lattice
        basis, or the Gram matrix), for the few-GiB budget.
    residual : float or None
        ``max |A s - b|`` of the solution, computed in float64.
    tolerance : float or None
        Relative tolerance used (float data only).
    """

    status: str
    solution: Optional[np.ndarray]
    exact: bool
    method: tuple
    nodes: int
    seconds: float
    memory_bytes: int
    residual: Optional[float] = None
    tolerance: Optional[float] = None

    def __repr__(self) -> str:
        sol = None if self.solution is None else np.flatnonzero(self.solution).tolist()
        return (
            f"SubsetSumResult(status={self.status!r}, ones={sol}, exact={self.exact}, "
            f"method={' -> '.join(self.method)}, nodes={self.nodes}, "
            f"seconds={self.seconds:.3g}, memory_bytes={self.memory_bytes})"
        )


def _integral(x: np.ndarray) -> bool:
    return bool(np.all(x == np.round(x))) and (x.size == 0 or float(np.max(np.abs(x))) < 2.0**40)


def subset_sum(
    A: Any,
    b: Any,
    *,
    tol: Optional[float] = None,
    time_limit: Optional[float] = None,
    node_limit: Optional[int] = None,
    threads: Optional[int] = None,
) -> SubsetSumResult:
    """Find ``s`` in ``{0, 1}^n`` with ``A s = b``, or prove there is none.

    Parameters
    ----------
    A : array_like, shape (k, n)
        Integer or float coefficients.
    b : array_like, shape (k,)
        Right-hand side.
    tol : float, optional
        Float data only: ``||A s - b||_2 <= tol ||b||_2``. Default
        ``sqrt(eps)`` of the input dtype. Integer-valued data (any dtype) are
        solved exactly and ignore it.
    time_limit : float, optional
        Seconds before the search stops with status ``"time_limit"``.
    node_limit : int, optional
        Nodes before it stops with status ``"node_limit"``.
    threads : int, optional
        Worker threads (default: one per core). The solution returned does
        not depend on it.

    Returns
    -------
    SubsetSumResult

    Raises
    ------
    ValueError
        Wrong shapes (both are named), NaN or Inf, options out of range.
    TypeError
        Complex or non-numeric input.
    KeyboardInterrupt
        On Ctrl-C.

    References
    ----------
    K. Aardal, C. Hurkens, A. K. Lenstra, Solving a system of linear
    Diophantine equations with lower and upper bounds on the variables,
    Math. Oper. Res. 25 (2000); G. Cornuejols, M. Dawande, A class of hard
    small 0-1 programs, INFORMS J. Comput. 11 (1999).

    Examples
    --------
    >>> import numpy as np, skipsearch
    >>> A = np.array([[3, 5, 7, 9]])
    >>> r = skipsearch.subset_sum(A, np.array([12]))
    >>> r.status, (A @ r.solution).tolist()
    ('feasible', [12])
    >>> skipsearch.subset_sum(np.array([[2, 4, 6]]), np.array([5])).status
    'infeasible'
    """
    start = time.perf_counter()
    A_arr, eps_a = as_float_array("A", A, 2, "(k, n)")
    b_arr, eps_b = as_float_array("b", b, 1, f"({A_arr.shape[0]},)")
    if b_arr.shape != (A_arr.shape[0],):
        raise ValueError(f"b has shape {b_arr.shape} but A has shape {A_arr.shape}: expected ({A_arr.shape[0]},)")
    tol = check_tol(tol)
    time_limit = check_limit("time_limit", time_limit, integer=False)
    node_limit = check_limit("node_limit", node_limit, integer=True)
    threads = check_threads(threads)
    if _integral(A_arr) and _integral(b_arr):
        return _integer(A_arr.astype(np.int64), b_arr.astype(np.int64), start, time_limit, node_limit, threads)
    tol = math.sqrt(max(eps_a, eps_b)) if tol is None else tol
    return _float(A_arr, b_arr, tol, start, time_limit, node_limit, threads)


def _done(start, **fields) -> SubsetSumResult:
    return SubsetSumResult(seconds=time.perf_counter() - start, **fields)


def _integer(A, b, start, time_limit, node_limit, threads) -> SubsetSumResult:
    k, n = A.shape
    method = ["presolve"]
    base = dict(exact=True, nodes=0, memory_bytes=0)
    # Row bounds and gcds prove most trivial infeasibility at once.
    lo = np.where(A < 0, A, 0).sum(axis=1)
    hi = np.where(A > 0, A, 0).sum(axis=1)
    if np.any(b < lo) or np.any(b > hi):
        return _done(start, status="infeasible", solution=None, method=("presolve: row bounds",), **base)
    for i in range(k):
        g = int(np.gcd.reduce(np.abs(A[i]))) if n else 0
        if (g == 0 and b[i] != 0) or (g > 0 and b[i] % g != 0):
            return _done(start, status="infeasible", solution=None, method=("presolve: row gcd",), **base)
    active = np.flatnonzero(np.any(A != 0, axis=0))
    rows = np.flatnonzero(np.any(A[:, active] != 0, axis=1)) if len(active) else np.zeros(0, int)
    solution = np.zeros(n, dtype=np.uint8)
    if len(active) == 0:
        # Every column is zero and b passed the gcd test, so b = 0.
        return _done(start, status="feasible", solution=solution, method=tuple(method), residual=0.0, **base)
    Aa, ba = A[np.ix_(rows, active)], b[rows]
    # A cheap primal heuristic first: the float relaxation and a short
    # branch and bound find planted or easy solutions in milliseconds.
    quick = _core.search_flip_set(
        np.ones((len(active), 1)), Aa.astype(float), -ba[:, None].astype(float), None, 1.0,
        1e-9, "none", time_limit, _HEURISTIC_NODES, threads,
    )
    method.append("float heuristic")
    if quick["finding"] == "subset":
        x = np.zeros(len(active), dtype=np.int64)
        x[np.asarray(quick["subset"], dtype=np.int64)] = 1
        if np.array_equal(Aa @ x, ba):
            solution[active] = x
            base.update(nodes=int(quick["nodes"]), memory_bytes=8 * len(active) ** 2)
            return _done(start, status="feasible", solution=solution, method=tuple(method), residual=0.0, **base)
    x, stop, nodes, memory, steps = _lattice(Aa, ba, time_limit, node_limit, threads, start)
    method += steps
    base.update(nodes=nodes, memory_bytes=memory)
    if x is None:
        status = "infeasible" if stop is None else stop
        return _done(start, status=status, solution=None, method=tuple(method), **base)
    solution[active] = x
    if not np.array_equal(A @ solution.astype(np.int64), b):  # pragma: no cover - a bug
        raise RuntimeError("internal error: the lattice solution does not satisfy A s = b")
    return _done(start, status="feasible", solution=solution, method=tuple(method), residual=0.0, **base)


def _lattice(A, b, time_limit, node_limit, threads, start):
    """Reduce the embedding with fpylll, enumerate its kernel part in Rust."""
    from fpylll import BKZ, LLL, IntegerMatrix

    k, n = A.shape
    # Equations weighted so that any vector with a nonzero equation part is
    # longer than every +-1 vector of length n + 1.
    scale = 2 ** int(math.ceil(math.log2(4 * (n + 1))))
    rows = []
    for j in range(n):
        rows.append([2 if i == j else 0 for i in range(n)] + [0] + [scale * int(v) for v in A[:, j]])
    rows.append([1] * n + [1] + [scale * int(v) for v in b])
    basis = IntegerMatrix.from_matrix(rows)
    LLL.reduction(basis)
    steps = ["lattice: LLL"]
    nodes = 0

    def enumerate_kernel(cap):
        # The enumeration is complete on any basis of the kernel lattice; a
        # better reduced basis only makes its tree smaller.
        nonlocal nodes
        reduced = np.array([[basis[i, j] for j in range(basis.ncols)] for i in range(basis.nrows)], dtype=np.int64)
        kernel = reduced[np.all(reduced[:, n + 1 :] == 0, axis=1), : n + 1]
        kernel = kernel[np.any(kernel != 0, axis=1)]
        remaining = None if time_limit is None else max(0.0, time_limit - (time.perf_counter() - start))
        out = _core.enumerate_pm1(kernel, float(n + 1), 1, remaining, cap, threads)
        nodes += int(out["nodes"])
        for y in np.asarray(out["solutions"]):
            # The solution vector has -1 in the homogenising coordinate.
            y = -y if y[n] == 1 else y
            x = ((y[:n] + 1) // 2).astype(np.uint8)
            if np.array_equal(A @ x.astype(np.int64), b):
                return x, None, reduced.nbytes + kernel.nbytes
        return None, out["stop"], reduced.nbytes + kernel.nbytes

    if n >= 30:
        # Planted and easy instances usually fall to a short enumeration on
        # the LLL basis; BKZ (tens of milliseconds at n = 80) is paid only
        # when that probe neither finds a solution nor finishes its tree.
        probe = _LLL_PROBE_NODES if node_limit is None else min(_LLL_PROBE_NODES, node_limit)
        steps.append(f"enumeration (LLL basis, {probe} nodes)")
        x, stop, memory = enumerate_kernel(probe)
        if x is not None or stop is None or stop != "node_limit" or probe == node_limit:
            return x, stop, nodes, memory, steps
        BKZ.reduction(basis, BKZ.Param(block_size=min(_BKZ_BLOCK, n), strategies=None, flags=BKZ.AUTO_ABORT))
        steps.append(f"BKZ-{min(_BKZ_BLOCK, n)}")
    steps.append("enumeration")
    x, stop, memory = enumerate_kernel(None if node_limit is None else max(1, node_limit - nodes))
    return x, stop, nodes, memory, steps


def _float(A, b, tol, start, time_limit, node_limit, threads) -> SubsetSumResult:
    k, n = A.shape
    # s_i a_i summing to b is the flip condition with u_i = 1, v_i = a_i,
    # c = 1 and skip -b: reuse the relaxation / null space / branch and bound.
    raw = _core.search_flip_set(
        np.ones((n, 1)), A, -b[:, None], None, 1.0, tol, "none", time_limit, node_limit, threads
    )
    method = tuple(raw["method"])
    base = dict(exact=False, nodes=int(raw["nodes"]), memory_bytes=8 * n * n, tolerance=tol, method=method)
    if raw["finding"] == "subset":
        solution = np.zeros(n, dtype=np.uint8)
        solution[np.asarray(raw["subset"], dtype=np.int64)] = 1
        residual = float(np.max(np.abs(A @ solution - b), initial=0.0))
        return _done(start, status="feasible", solution=solution, residual=residual, **base)
    if raw["finding"] == "no_subset":
        return _done(start, status="infeasible", solution=None, **base)
    status = raw.get("stop") or raw.get("numerics") or "undecided"
    return _done(start, status=status, solution=None, **base)
