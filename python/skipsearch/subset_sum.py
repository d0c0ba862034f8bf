"""Exact 0/1 subset sum: find ``s`` in ``{0, 1}^n`` with ``A s = b``.

Integer data are solved exactly. A feasibility jump (a weighted local search
from zero, Luteberget & Sartor 2023) runs first, with a budget of a few
milliseconds: it finds small solutions such as planted flip sets at once, and
proves nothing when it fails. A presolve then fixes variables by row bounds,
checks row gcds, drops zero columns and splits the rest into independent
components (no row shared). A component of at most 32 columns is solved by
Schroeppel & Shamir's four-list search (1981) in the modular form of
Howgrave-Graham & Joux (2010), with exact fingerprint matching: meet-in-the-
middle time in ``2^(n/4)`` memory. A larger one is embedded in a lattice (after a
float heuristic when its reduction is predicted to take over 0.1 s) whose short
bounded vectors are its solutions
(Aardal, Hurkens & Lenstra 2000; the embedding of Wassermann's
solvediophant), with equal columns merged into one bounded variable. fpylll
(the ``lattice`` extra) reduces the basis (LLL, then BKZ): a well-kept library
does the reduction, which is not where the difficulty lies. Without it, the
core's own LLL (``rust/subset_sum/reduction.rs``: floating-point Gram-Schmidt
data over an exact integer basis, so the lattice is always the same) stands in,
without BKZ, and the searches below run on its bases. The
Rust core then enumerates the kernel lattice completely, in parallel, so an
empty enumeration proves infeasibility. When Knuth's estimate of that tree
exceeds 1e8 nodes (QOBLIB's ms_08 to ms_10 market splits), where the nodes to
the first solution vary by orders of magnitude from one reduced basis to the
next, limited-discrepancy searches (Harvey & Ginsberg 1995) run on a sequence
of re-randomised BKZ-30 bases with Luby's restart budgets (Luby, Sinclair &
Zuckerman 1993; Gomes, Selman & Kautz 2000), raced against the complete
depth-first search, the first to finish stopping the other, as Wassermann's
solvediophant races its two searches. Float data go through the relaxation,
null-space and branch-and-bound pipeline of
:func:`skipsearch.find_absorbing_subset`, with a relative tolerance; an
instance of at most 40 columns that it leaves open after a few thousand
nodes is settled by meeting in the middle on a projection, with a window as
wide as the tolerance (complete: no solution within it is missed).

Market-split instances (Cornuejols & Dawande 1998) are the hard family this
targets; LP-based branch and bound stalls on them.

This module holds the public function, its result record and the integer
path's order of stages; the stages themselves live in
:mod:`skipsearch._engine`, one module each.
"""

from __future__ import annotations

import math
import numbers
import os
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np
import numpy.typing as npt

from skipsearch import _core
from skipsearch._engine.cluster import check_cluster_options
from skipsearch._engine.components import _component
from skipsearch._engine.distributed import EngineOptions, SearchProgress
from skipsearch._engine.floats import _float
from skipsearch._engine.integers import _INT_BOUND, _as_integers, _reject_beyond_int64
from skipsearch._engine.portfolio import _RESTART_SEED
from skipsearch._engine.presolve import _components, _jump_moves, _presolve
from skipsearch._float_env import in_standard_float_env
from skipsearch._types import IntArray, SubsetSumStatus, UInt8Array
from skipsearch._validation import as_float_array, check_limit, check_threads, check_tol
from skipsearch.result import FieldEquality

__all__ = ["SubsetSumResult", "subset_sum"]


@dataclass(frozen=True, eq=False, repr=False)
class SubsetSumResult(FieldEquality):
    """Outcome of :func:`subset_sum`.

    Attributes
    ----------
    status : SubsetSumStatus
        ``"feasible"``, ``"infeasible"``, ``"time_limit"`` or ``"node_limit"``
        (a limit stopped the search before a proof),
        ``"incomplete"`` (the lattice reduction could not isolate a basis of
        the integer kernel; the last ``method`` step says why; nothing was
        proved); for
        float data also ``"memory_limit"`` (the relaxation's Gram matrix
        does not fit the memory budget and no certificate decided),
        ``"ill_conditioned"`` or ``"overflow"`` (float64 cannot settle the
        instance) and ``"unresolved"`` (a candidate's residual sits on the
        tolerance to rounding).
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

    Two results are equal when every field is, ``solution`` by dtype, shape
    and values (``seconds`` too: a pickled copy is equal, a second run
    rarely); the hash covers ``status``, ``exact``, ``method`` and ``nodes``.
    """

    _HASH_FIELDS = ("status", "exact", "method", "nodes")

    status: SubsetSumStatus
    solution: Optional[UInt8Array]
    exact: bool
    method: tuple[str, ...]
    nodes: int
    seconds: float
    memory_bytes: int
    residual: Optional[float] = None
    tolerance: Optional[float] = None

    def __repr__(self) -> str:
        sol = (
            "None"
            if self.solution is None
            else f"<{len(self.solution)} entries, ones at {np.flatnonzero(self.solution).tolist()}>"
        )
        return (
            f"SubsetSumResult(status={self.status!r}, solution={sol}, exact={self.exact}, "
            f"method={' -> '.join(self.method)}, nodes={self.nodes}, "
            f"seconds={self.seconds:.3g}, memory_bytes={self.memory_bytes})"
        )


@in_standard_float_env
def subset_sum(  # noqa: PLR0913 - keyword-only options, each documented
    A: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    tol: Optional[float] = None,
    time_limit: Optional[float] = None,
    node_limit: Optional[int] = None,
    threads: Optional[int] = None,
    seed: Optional[int] = None,
    executor: Optional[Executor] = None,
    checkpoint: Optional[Union[str, os.PathLike[str]]] = None,
    checkpoint_interval: float = 60.0,
    progress: Optional[Callable[[SearchProgress], None]] = None,
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
        ``sqrt(eps)`` of the input dtype. Integer data (an integer dtype, or
        floats whose values are all integers, of any size up to the 2**62
        bound below) are solved exactly and ignore it.
    time_limit : float, optional
        Seconds before the search stops with status ``"time_limit"``.
        fpylll's reductions cannot be stopped safely once started, so they
        run to their end: the LLL of the embedding starts in fpylll only
        when it is predicted to end in time (else the core's LLL, which
        watches the clock, reduces it), and BKZ stops after the tour that
        passes the limit. A call can pass its limit by that much.
    node_limit : int, optional
        Nodes before it stops with status ``"node_limit"``. Parallel
        lattice walkers count in batches, so ``nodes`` may pass it by up to
        1024 per thread; Schroeppel-Shamir counts its list work in batches
        of 2^14 per thread, plus the pairs of the residue in hand. With
        ``executor`` the units in flight at the limit run out their
        budgets (2^26 nodes a subtree unit, Luby's multiple of 2^25 a
        restart), so ``nodes`` may pass it by up to that much per slot.
        The stages before the distributed search (presolve, the first
        limited-discrepancy passes, the tree estimate) count too, and run
        again on a resumed call: a ``node_limit`` below them stops a
        resumed search before it goes on; bound a resumable run by
        ``time_limit`` instead.
    threads : int, optional
        Worker threads (default: one per core). The status of a search that
        runs to the end does not depend on it. Neither does the solution,
        except on the largest lattices (Knuth's tree estimate above 1e8
        nodes) with two or more threads and no ``node_limit``: there the
        restarts race the complete search, and which of several solutions
        comes back depends on which finds one first. With one thread or a
        ``node_limit`` they take turns instead, and the run is repeatable.
        With ``node_limit`` or ``time_limit``, the point where a parallel
        search is cut, and so whether it ends with a solution or a limit
        status, can depend on it. With ``executor``, the core threads of
        each unit of work (default 1 per unit; all cores with
        ``checkpoint`` alone).
    seed : int, optional
        Seed of the random unimodular transforms behind the lattice
        restarts' bases (default: a fixed one, so a run is repeatable). The
        nodes to a solution found by the restarts vary by orders of
        magnitude with it; the status of a search run to its end does not.
    executor : concurrent.futures.Executor, optional
        Run the largest lattice searches (Knuth's tree estimate above 1e8
        nodes, QOBLIB's ms_08 and beyond) as units on this executor:
        ``distributed.Client(...).get_executor()`` (the ``dask`` extra), a
        ``ProcessPoolExecutor``, or anything with the same protocol. The
        units are the limited-discrepancy restarts, one per re-randomised
        basis (seeded by its index, so repeatable), and the complete
        depth-first search cut into subtrees by their prefixes, each run
        for a node budget and handing back what it did not search. The
        first verified solution cancels the rest; ``"infeasible"`` needs
        every subtree to have ended, whichever worker ran it; a unit that
        fails with its worker is run again (three times at most, then
        RuntimeError). Integer data only. Smaller searches run here as
        without it.
    checkpoint : str or os.PathLike, optional
        A state file for the same search: written every
        ``checkpoint_interval`` seconds and at the end, atomically (a
        temporary file renamed over it); a call given an existing file
        goes on from it (after kill -9, a lost cluster or a reboot),
        losing at most one interval of the depth-first search and the
        restarts then in flight. Without ``executor`` the units run on the
        calling thread, in turns. Integer data only.
    checkpoint_interval : float, default 60
        Seconds between two writes of ``checkpoint``.
    progress : callable, optional
        Called about twice a second, on the calling thread, with a
        :class:`skipsearch.SearchProgress` (seconds, nodes, bases,
        subtrees done and known) while a search runs on ``executor`` or
        with ``checkpoint``.

    Returns
    -------
    SubsetSumResult

    Raises
    ------
    ValueError
        Wrong shapes (both are named), NaN or Inf, options out of range, or
        integers so large that a row sum of ``|A|`` plus ``|b|`` reaches
        2**62 (exact int64 arithmetic could overflow); ``executor`` or
        ``checkpoint`` with float data.
    skipsearch.CheckpointMismatch
        (a ValueError) ``checkpoint`` holds the state of another instance,
        skipsearch version or search settings, or is damaged.
    TypeError
        Complex or non-numeric input; an ``executor`` that is not a
        ``concurrent.futures.Executor``, a ``progress`` that is not callable.
    FileNotFoundError
        The folder of ``checkpoint`` does not exist.
    KeyboardInterrupt
        On Ctrl-C.

    References
    ----------
    K. Aardal, C. Hurkens, A. K. Lenstra, Solving a system of linear
    Diophantine equations with lower and upper bounds on the variables,
    Math. Oper. Res. 25 (2000); G. Cornuejols, M. Dawande, A class of hard
    small 0-1 programs, INFORMS J. Comput. 11 (1999); B. Luteberget,
    G. Sartor, Feasibility Jump: an LP-free Lagrangian MIP heuristic, Math.
    Prog. Comp. 15 (2023); W. D. Harvey, M. L. Ginsberg, Limited discrepancy
    search, IJCAI (1995); M. Luby, A. Sinclair, D. Zuckerman, Optimal
    speedup of Las Vegas algorithms, Inf. Process. Lett. 47 (1993);
    C. P. Gomes, B. Selman, H. Kautz, Boosting combinatorial search through
    randomization, AAAI (1998) and J. Autom. Reason. 24 (2000);
    D. E. Knuth, Estimating the efficiency of backtrack programs, Math.
    Comp. 29 (1975); A. Wassermann, solvediophant (github.com/
    alfredwassermann/solvediophant).

    Examples
    --------
    >>> import numpy as np, skipsearch
    >>> A = np.array([[3, 5, 7, 9]])
    >>> r = skipsearch.subset_sum(A, np.array([12]))
    >>> r.status, (A @ r.solution).tolist()
    ('feasible', [12])
    >>> skipsearch.subset_sum(np.array([[2, 4, 6, 8]]), np.array([9])).status
    'infeasible'
    """
    start = time.perf_counter()
    _reject_beyond_int64("A", A)
    _reject_beyond_int64("b", b)
    # Integers beyond 2^53 are handled exactly by the integer path below.
    A_arr, eps_a = as_float_array("A", A, 2, "(k, n)", exact_integers=False)
    b_arr, eps_b = as_float_array("b", b, 1, f"({A_arr.shape[0]},)", exact_integers=False)
    if b_arr.shape != (A_arr.shape[0],):
        raise ValueError(
            f"b has shape {b_arr.shape} but A has shape {A_arr.shape}: expected ({A_arr.shape[0]},)"
        )
    tol = check_tol(tol)
    time_limit = check_limit("time_limit", time_limit, integer=False)
    node_limit = check_limit("node_limit", node_limit, integer=True)
    threads = check_threads(threads)
    if seed is not None and (
        isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**63
    ):
        raise ValueError(f"seed must be an integer from 0 to 2**63 - 1, got {seed!r}")
    # A plain int: numpy integers would not go into the state file's JSON.
    seed = _RESTART_SEED if seed is None else int(seed)
    # b is read as integers only when A is: float A takes the float path,
    # whatever b holds.
    A_int = _as_integers("A", A, A_arr)
    b_int = None if A_int is None else _as_integers("b", b, b_arr)
    if A_int is not None and b_int is not None:
        # The largest row magnitude, exactly (a float64 sum rounds up past
        # 2**62 on valid rows just below it).
        bound = max(
            (sum(abs(v) for v in row) + abs(r) for row, r in zip(A_int.tolist(), b_int.tolist())),
            default=0,
        )
        integer_dtypes = all(np.asarray(x).dtype.kind in "iu" for x in (A, b))
        if bound >= _INT_BOUND and not integer_dtypes:
            # Integral floats whose row sums leave int64: the float path.
            A_int = None
        elif bound >= _INT_BOUND:
            raise ValueError(
                "A and b hold integers too large for exact arithmetic: every row sum of |A| plus "
                f"|b| must stay below 2**62 (got {bound}, about 2**{math.log2(bound):.2f}); divide "
                "them by a common factor"
            )
    cluster = check_cluster_options(
        executor, checkpoint, checkpoint_interval, progress, threads, A_int, b_int, seed
    )
    if A_int is not None and b_int is not None:
        options = EngineOptions(threads=threads, seed=seed, cluster=cluster)
        return _integer(A_int, b_int, start, time_limit, node_limit, options)
    tol = math.sqrt(max(eps_a, eps_b)) if tol is None else tol
    return _done(start, **_float(A_arr, b_arr, tol, start, time_limit, node_limit, threads))


def _done(start: float, **fields: Any) -> SubsetSumResult:
    """The result with ``fields``, timed from ``start`` (a ``perf_counter`` time)."""
    return SubsetSumResult(seconds=time.perf_counter() - start, **fields)


def _integer(
    A: IntArray,
    b: IntArray,
    start: float,
    time_limit: Optional[float],
    node_limit: Optional[int],
    options: EngineOptions,
) -> SubsetSumResult:
    """Solve integer data exactly: the feasibility jump, the presolve, then
    each independent component (``_engine.components``), smallest first."""
    k, n = A.shape
    base = dict(exact=True, nodes=0, memory_bytes=0)
    method: list[str] = []
    moves = _jump_moves(k, n)
    if moves:
        # A local search first: it finds small solutions (planted flip
        # sets) in microseconds and costs a few milliseconds when it fails.
        jump = _core.feasibility_jump(
            np.ascontiguousarray(A), np.ascontiguousarray(b), moves, time_limit
        )
        method.append(f"feasibility jump ({jump['moves']} moves)")
        if jump["solution"] is not None:
            return _done(
                start,
                status="feasible",
                solution=jump["solution"],
                method=tuple(method),
                residual=0.0,
                **base,
            )
    fixed, why = _presolve(A, b, None if time_limit is None else start + time_limit)
    if why is not None:
        return _done(
            start, status="infeasible", solution=None, method=(*method, f"presolve: {why}"), **base
        )
    method.append("presolve")
    if np.any(fixed >= 0):
        method.append(f"presolve: {int(np.sum(fixed >= 0))} of {n} fixed")
    solution = np.where(fixed == 1, 1, 0).astype(np.uint8)
    free = np.flatnonzero(fixed < 0)
    rhs = b - A[:, fixed == 1].sum(axis=1)
    components = _components(A[:, free])
    if len(components) > 1:
        method.append(f"presolve: {len(components)} independent components")
    nodes = memory = 0
    # Smallest components first: an infeasible one ends the search soonest.
    for rows, cols in sorted(components, key=lambda rc: len(rc[1])):
        remaining = (
            None if time_limit is None else max(0.0, time_limit - (time.perf_counter() - start))
        )
        budget = None if node_limit is None else max(1, node_limit - nodes)
        x, stop, used, mem, steps = _component(
            A[np.ix_(rows, free[cols])], rhs[rows], remaining, budget, options
        )
        nodes += used
        memory = max(memory, mem)
        method += [step for step in steps if step not in method]
        if x is None:
            base.update(nodes=nodes, memory_bytes=memory)
            status = "infeasible" if stop is None else stop
            return _done(start, status=status, solution=None, method=tuple(method), **base)
        solution[free[cols]] = x
    base.update(nodes=nodes, memory_bytes=memory)
    if not np.array_equal(A @ solution.astype(np.int64), b):  # pragma: no cover - a bug
        raise RuntimeError("internal error: the solution does not satisfy A s = b")
    return _done(
        start, status="feasible", solution=solution, method=tuple(method), residual=0.0, **base
    )
