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
"""

from __future__ import annotations

import functools
import math
import numbers
import os
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np
import numpy.typing as npt

from skipsearch import _core, rounding
from skipsearch._float_env import in_standard_float_env
from skipsearch._types import FloatArray, IntArray, SubsetSumStatus, UInt8Array
from skipsearch._validation import (
    as_float_array,
    check_limit,
    check_threads,
    check_tol,
    default_memory_limit,
)
from skipsearch.result import FieldEquality

__all__ = ["SubsetSumResult", "subset_sum"]

#: Components with at most this many columns are solved by Schroeppel-Shamir
#: (2^(n/2) time, 2^(n/4) memory: under 100 KiB at n = 32); the lattice is
#: faster beyond.
_LISTS_MAX = 32
#: Larger components go to Schroeppel-Shamir too when the lattice cannot
#: be used (entries too large for it): up to 2^26 pairs, quarter lists of
#: 2^13.
_LISTS_FALLBACK_MAX = 52
#: Branch-and-bound nodes of the float heuristic tried before the lattice.
_HEURISTIC_NODES = 20_000
#: The float heuristic runs before the lattice only when fpylll's LLL of
#: the embedding is predicted (as ``_fpylll_in_time`` predicts it, 4 to 7
#: times over) to take longer than this; below it the LLL and the short
#: searches on its basis are the quicker heuristic. On the integer families
#: of ``benches/subset_sum_table.py`` (MS(3) to MS(6), planted or not,
#: ABS-int, ABS-split; seeds 0 to 4) the float heuristic solved none: each
#: was solved by feasibility jump, Schroeppel-Shamir or the lattice. It cost
#: 1.4 to 2.6 ms of the 15 to 20 ms QOBLIB's ms_06 takes (predicted LLL:
#: 31 ms; ms_07: 64 ms; ms_08: 119 ms, where it still runs).
_HEURISTIC_LLL_SECONDS = 0.1
#: Float instances of at most this many columns that the branch and bound
#: does not settle within ``_HEURISTIC_NODES`` go to meeting in the middle on
#: a projection (2^20 subset sums of 16 bytes a side at most: 16 MiB).
_FLOAT_MITM_MAX = 40
#: Feasibility jump: moves per column, and a cap on its work (row-column
#: updates, about 10 ms).
_JUMP_MOVES_PER_COLUMN = 20
_JUMP_WORK = 4_000_000
#: Limited-discrepancy, then depth-first nodes tried on the LLL basis before
#: BKZ (for n >= 30): the first settles planted and easy instances, the
#: second ends small trees. On fpylll's LLL basis, in closest-vector form,
#: limited discrepancy reaches the solution of QOBLIB's ms_06 in 7 k to
#: 167 k nodes where depth-first needs 36 k to 1.2 M (11 of 12 fewer, the
#: twelfth beyond both caps); in this order ms_06 took 1.6 M nodes in all
#: against 3.0 M (2 threads), and MS(5) to MS(7) seeds 0-5 kept their
#: node counts up to thread timing.
_LLL_PROBE_NODES = 200_000
#: Times the equation weight of the lattice embedding is raised (by 2^32)
#: when LLL leaves kernel vectors mixed with the others.
_LATTICE_RESCALES = 4
#: Largest lattice dimension (distinct columns + 1) reduced: LLL takes
#: seconds at a few hundred and its memory grows fast beyond.
_LATTICE_MAX_DIM = 600
#: Primes for the rank of ``[A | b]`` (products stay below 2^62).
_RANK_PRIMES = (2_147_483_647, 2_147_483_629, 2_147_483_587)
#: Block size of the BKZ pass after LLL (for n >= 30).
_BKZ_BLOCK = 20
#: Block size of the stronger reduction of the kernel lattice alone, run on
#: each basis of the restarts (0.2 to 0.4 s at n = 80).
_BKZ_RESTART_BLOCK = 30
#: Nodes of one unit of the restart schedule (Luby's sequence of units per
#: basis): about half a second on two cores, a little more than reducing a
#: new basis costs (2^23 to 2^25 measured on QOBLIB's ms_09_100 and
#: ms_09_200 with BKZ-20, -25 and -30 restarts: 2^25 with BKZ-30 was the
#: steadiest).
_RESTART_UNIT = 1 << 25
#: Re-randomised bases searched at once from the third restart on, each
#: with its share of the threads and of the unit (so a step spends the same
#: nodes): the first to find a solution stops the others. Nodes to a
#: solution vary by orders of magnitude from basis to basis, so two bases
#: at a time finish sooner than one searched by both threads. On QOBLIB's
#: ms_09_100 (60 BKZ-30 bases each, AMD EPYC, 2 cores), the mean time of
#: the schedule, simulated from the nodes each basis needed, fell from
#: 7.8-13.4 s to 3.8-9.4 s (2^24 nodes a unit each); a thread alone also
#: searches about 10% more nodes a second than half of two on one basis.
#: Run on four seeds, the 16 solves took 178 s against 216 s.
_RESTART_STREAMS = 2
#: Rows added to each row of the BKZ-30 basis (after a random permutation)
#: to re-randomise it for a restart. One, from the BKZ-30 basis, against
#: two from the BKZ-20 basis before: on QOBLIB's ms_09_100 (AMD EPYC, 2
#: cores) the reduction took 0.26 s against 0.37 s (median of 15), limited
#: discrepancy found a solution within 2^25 nodes on 19 bases of 80 against
#: 20 of 120 (_001 and _003), and the 16 solves of four seeds took 138 s
#: against 178 s.
_RESTART_ADDITIONS = 1
#: Nodes the complete depth-first search gets for each node of the
#: limited-discrepancy restarts on large trees; less on trees estimated
#: beyond ``_COMPLETE_FAR`` nodes, which it cannot finish in minutes.
_COMPLETE_SHARE = 1 / 2
_COMPLETE_SHARE_FAR = 1 / 8
_COMPLETE_FAR = 1e9
#: Below this estimate of the depth-first tree on the BKZ-20 basis (Knuth's,
#: from ``_ESTIMATE_DIVES`` random dives) one short limited-discrepancy pass
#: runs, then the depth-first search to its end; from it, the restarts take
#: turns with it. The estimates run low on these trees: MS(7) estimates at
#: 1e6 to 5e6 and searches 5e7 to 1.3e8 nodes; QOBLIB's ms_07 estimates at
#: 4e5 to 1.4e7, ms_08 at 1.5e7 to 1e9, ms_09 at 3e9 to 8e10. At 3e7 rather
#: than 2e7: the infeasible MS(7) seed 3, estimated at 2.5e7, searched 87 M
#: nodes with restarts and 45 M without (1.5 s against 0.7 s on 2 cores),
#: and no QOBLIB instance of ms_06 to ms_08 changes path.
_RESTART_MIN_NODES = 3e7
_ESTIMATE_DIVES = 2048
#: Deep insertions of the core's LLL on kernel bases (without fpylll):
#: every position (Schnorr & Euchner's deep-insertion LLL, unrestricted).
#: On QOBLIB's ms_08, ms_09_050 and ms_10_050 (20 instances, 2 threads)
#: the lean route took 55.8 s in all with plain LLL, 52.0 s with depth 10,
#: 39.1 s with depth 40 and 19.4 s unrestricted; the infeasible MS(7)
#: seed 0 took 5.9, 1.5, 0.9 and 1.0 s. It costs about 1 s per reduction
#: at dimension 91 and 3 s at 297, against 0.01 to 0.03 s.
_CORE_DEEP = _LATTICE_MAX_DIM
#: Seed of the random unimodular transforms of the restarts (fixed, so a run
#: is repeatable).
_RESTART_SEED = 20_260_423


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


#: Integer data must keep every row sum of ``|A|`` plus ``|b|`` below this,
#: so that exact int64 arithmetic cannot overflow.
_INT_BOUND = 2.0**62


def _reject_beyond_int64(name: str, raw: npt.ArrayLike) -> None:
    """Raise ``ValueError`` naming ``name`` when ``raw`` holds integers that
    int64 cannot (numpy keeps Python integers of 2**63 or more as objects,
    or as uint64), rather than a dtype error or a float64 one."""
    if isinstance(raw, np.ndarray) and raw.dtype.kind not in "uO":
        return
    try:
        arr = np.asarray(raw)
        if (
            not isinstance(raw, np.ndarray)
            and arr.dtype.kind == "f"
            and arr.size
            and float(np.max(np.abs(arr))) >= 2.0**63
        ):
            # numpy widened a list holding such an integer to float64,
            # rounding it: look at the Python integers themselves.
            arr = np.asarray(raw, dtype=object)
    except (ValueError, TypeError):
        return  # as_float_array reports it
    if arr.dtype.kind == "O":
        values = arr.reshape(-1).tolist()
        big = any(
            isinstance(v, numbers.Integral)
            and not isinstance(v, bool)
            and not -(2**63) <= int(v) < 2**63
            for v in values
        )
    else:
        big = arr.dtype.kind == "u" and arr.size > 0 and int(arr.max()) >= 2**63
    if big:
        raise ValueError(
            f"{name} has integers of magnitude 2**63 or more; skipsearch works in int64 "
            "(every row sum of |A| plus |b| below 2**62)"
        )


def _as_integers(name: str, raw: npt.ArrayLike, widened: FloatArray) -> Optional[IntArray]:
    """``raw`` as exact int64 when it holds integers (integer dtype, or
    integral float values), else None. ``widened`` is its float64 copy."""
    arr = np.asarray(raw)
    if arr.dtype.kind in "iu":
        if arr.dtype.kind == "u" and arr.size and int(arr.max()) >= 2**63:
            raise ValueError(f"{name} has integers of 2**63 or more; skipsearch works in int64")
        return arr.astype(np.int64)
    if np.all(widened == np.round(widened)):
        if widened.size and np.max(np.abs(widened)) >= _INT_BOUND:
            # Float data this large: every float64 of 2**53 or more is an
            # integer, so these are floats at heart; the float path takes them.
            return None
        return widened.astype(np.int64)
    return None


@in_standard_float_env
def subset_sum(
    A: npt.ArrayLike,
    b: npt.ArrayLike,
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
        of 2^14 per thread, plus the pairs of the residue in hand.
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
        status, can depend on it.

    Returns
    -------
    SubsetSumResult

    Raises
    ------
    ValueError
        Wrong shapes (both are named), NaN or Inf, options out of range, or
        integers so large that a row sum of ``|A|`` plus ``|b|`` reaches
        2**62 (exact int64 arithmetic could overflow).
    TypeError
        Complex or non-numeric input.
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
    # b is read as integers only when A is: float A takes the float path,
    # whatever b holds.
    A_int = _as_integers("A", A, A_arr)
    b_int = None if A_int is None else _as_integers("b", b, b_arr)
    if A_int is not None and b_int is not None:
        # A float64 estimate of the largest row magnitude, with room to spare.
        bound = float(np.max(np.abs(A_arr).sum(axis=1) + np.abs(b_arr), initial=0.0))
        integer_dtypes = all(np.asarray(x).dtype.kind in "iu" for x in (A, b))
        if bound >= _INT_BOUND and not integer_dtypes:
            # Integral floats whose row sums leave int64: the float path.
            A_int = None
        elif bound >= _INT_BOUND:
            raise ValueError(
                "A and b hold integers too large for exact arithmetic: every row sum of |A| plus "
                f"|b| must stay below 2**62 (got about 2**{math.log2(bound):.1f}); divide them by "
                "a common factor"
            )
    if A_int is not None and b_int is not None:
        return _integer(A_int, b_int, start, time_limit, node_limit, threads)
    tol = math.sqrt(max(eps_a, eps_b)) if tol is None else tol
    return _float(A_arr, b_arr, tol, start, time_limit, node_limit, threads)


def _done(start: float, **fields: Any) -> SubsetSumResult:
    return SubsetSumResult(seconds=time.perf_counter() - start, **fields)


def _jump_moves(k: int, n: int) -> int:
    """The feasibility-jump budget: ``_JUMP_MOVES_PER_COLUMN`` moves per
    column, at most ``_JUMP_WORK`` row-column updates in all."""
    return min(_JUMP_MOVES_PER_COLUMN * n, _JUMP_WORK // max(1, k * n))


def _integer(
    A: IntArray,
    b: IntArray,
    start: float,
    time_limit: Optional[float],
    node_limit: Optional[int],
    threads: Optional[int],
) -> SubsetSumResult:
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
            A[np.ix_(rows, free[cols])], rhs[rows], remaining, budget, threads
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


def _presolve(
    A: IntArray, b: IntArray, deadline: Optional[float] = None
) -> tuple[npt.NDArray[np.int8], Optional[str]]:
    """Fix variables by row bounds until nothing changes (or the deadline, a
    ``perf_counter`` time, passes: the fixings are optional). Returns
    ``fixed`` (-1 free, 0 or 1 fixed) and ``None``, or the reason for
    infeasibility."""
    k, n = A.shape
    fixed = np.full(n, -1, dtype=np.int8)
    pos, neg = np.maximum(A, 0), np.minimum(A, 0)
    while True:
        free = fixed < 0
        r = b - A[:, fixed == 1].sum(axis=1)
        lo = neg[:, free].sum(axis=1)
        hi = pos[:, free].sum(axis=1)
        if np.any(r < lo) or np.any(r > hi):
            return fixed, "row bounds"
        # With x_j = 1 a row ranges over [lo + pos_ij, hi + neg_ij]; with
        # x_j = 0 over [lo - neg_ij, hi - pos_ij].
        lo_c, hi_c, r_c = lo[:, None], hi[:, None], r[:, None]
        P, N = pos[:, free], neg[:, free]
        one_bad = np.any((lo_c + P > r_c) | (hi_c + N < r_c), axis=0)
        zero_bad = np.any((lo_c - N > r_c) | (hi_c - P < r_c), axis=0)
        if np.any(one_bad & zero_bad):
            return fixed, "row bounds fix a variable both ways"
        if not (np.any(one_bad) or np.any(zero_bad)):
            break
        idx = np.flatnonzero(free)
        fixed[idx[one_bad]] = 0
        fixed[idx[zero_bad]] = 1
        if deadline is not None and time.perf_counter() >= deadline:
            break
    free = fixed < 0
    r = b - A[:, fixed == 1].sum(axis=1)
    for i in range(k):
        g = int(np.gcd.reduce(np.abs(A[i, free]))) if np.any(free) else 0
        if (g == 0 and r[i] != 0) or (g > 0 and r[i] % g != 0):
            return fixed, "row gcd"
    return fixed, None


def _components(A: IntArray) -> list[tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]]:
    """Independent blocks of ``A``: (rows, columns) index arrays of the
    connected components of its row-column graph; zero columns and zero
    rows (whose right-hand side the presolve has checked) are left out."""
    nonzero = A != 0
    rows_left = np.any(nonzero, axis=1)
    cols_left = np.any(nonzero, axis=0)
    out = []
    while rows_left.any():
        # Grow from the first row left: its columns, their rows, ... until
        # nothing is added (one or two rounds for a dense matrix).
        rows = np.zeros_like(rows_left)
        rows[np.argmax(rows_left)] = True
        while True:
            cols = np.any(nonzero[rows], axis=0)
            grown = np.any(nonzero[:, cols], axis=1)
            if np.array_equal(grown, rows):
                break
            rows = grown
        out.append((np.flatnonzero(rows), np.flatnonzero(cols)))
        rows_left &= ~rows
        cols_left &= ~cols
    return out


def _component(
    A: IntArray,
    b: IntArray,
    time_limit: Optional[float],
    node_limit: Optional[int],
    threads: Optional[int],
) -> tuple[Optional[UInt8Array], Optional[str], int, int, list[str]]:
    """Solve one independent block: Schroeppel-Shamir when it is small,
    else the lattice, after a float heuristic when the lattice's reduction
    is predicted to be slow."""
    n = A.shape[1]
    entered = time.perf_counter()
    if n <= _LISTS_MAX:
        x, stop, nodes, memory, step = _lists(A, b, time_limit, node_limit, threads)
        return x, stop, nodes, memory, [step]
    used = 0
    heuristic: list[str] = []
    if _lll_predicted_seconds(A, b) > _HEURISTIC_LLL_SECONDS:
        # A cheap primal heuristic first: the float relaxation and a short
        # branch and bound find planted or easy solutions in milliseconds.
        heuristic = ["float heuristic"]
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
                return ones.astype(np.uint8), None, used, 8 * n * n, heuristic
        if node_limit is not None and used >= node_limit:
            return None, "node_limit", used, 8 * n * n, heuristic
        # The heuristic's time counts against the limit too; the reduction
        # (fpylll) cannot be stopped once started, so it starts only in time.
        if time_limit is not None and time.perf_counter() - entered >= time_limit:
            return None, "time_limit", used, 8 * n * n, heuristic
    left = None if node_limit is None else node_limit - used
    x, stop, nodes, memory, steps = _lattice(A, b, time_limit, left, threads, entered)
    nodes += used
    if stop == "incomplete" and n <= _LISTS_FALLBACK_MAX:
        # The lattice could not be used; the lists need no reduction.
        remaining = (
            None if time_limit is None else max(0.0, time_limit - (time.perf_counter() - entered))
        )
        budget = None if node_limit is None else max(1, node_limit - nodes)
        x, stop, more, lists_memory, step = _lists(A, b, remaining, budget, threads)
        steps.append(step)
        nodes += more
        memory = max(memory, lists_memory)
    return x, stop, nodes, memory, [*heuristic, *steps]


def _lists(
    A: IntArray,
    b: IntArray,
    time_limit: Optional[float],
    node_limit: Optional[int],
    threads: Optional[int],
) -> tuple[Optional[UInt8Array], Optional[str], int, int, str]:
    """Schroeppel-Shamir on one block: solution, stop, nodes, memory and the
    method step naming it."""
    out = _core.schroeppel_shamir(A, b, time_limit, node_limit, threads)
    step = f"Schroeppel-Shamir (n={A.shape[1]}, {out['memory_bytes'] >> 10} KiB)"
    return out["solution"], out["stop"], int(out["nodes"]), int(out["memory_bytes"]), step


def _lattice(
    A_full: IntArray,
    b: IntArray,
    time_limit: Optional[float],
    node_limit: Optional[int],
    threads: Optional[int],
    start: float,
) -> tuple[Optional[UInt8Array], Optional[str], int, int, list[str]]:
    """Reduce the embedding (fpylll, or the core's LLL without the lattice
    extra), enumerate its kernel part in Rust."""
    fpylll = _import_fpylll()
    # Equal columns become one variable x_j in 0..c_j (c_j copies): a
    # smaller lattice, and no symmetric copies of each solution to visit.
    A, where, c = np.unique(A_full, axis=1, return_inverse=True, return_counts=True)
    where = np.asarray(where).reshape(-1)
    n = A.shape[1]
    steps: list[str] = [] if fpylll else [LATTICE_CORE]
    if n < A_full.shape[1]:
        steps.append(
            f"lattice: {A_full.shape[1] - n} duplicate columns merged into bounded variables"
        )
    bounds = np.append(c, 1).astype(np.int64)
    radius_sq = float(np.sum(bounds.astype(float) ** 2))
    # The homogenising coordinate weighted from the start (closest-vector
    # form), the equations beyond every admissible vector.
    weight, scale = _embedding_weights(radius_sq)
    if n + 1 > _LATTICE_MAX_DIM:
        # Checked before the (n + 1)^2 basis is built: at n = 25000 that
        # alone would not fit in memory.
        steps.append(f"lattice: dimension {n + 1} is beyond the {_LATTICE_MAX_DIM} reduced here")
        return None, "incomplete", 0, 0, steps
    deadline = None if time_limit is None else start + time_limit
    want = n + 1 - _rank(np.column_stack([A, b]))
    kernel_rows, failed, size = _reduced_kernel(A, b, c, (weight, scale), want, deadline, steps)
    if kernel_rows is None:
        return None, failed, 0, 0, steps
    # Fewer when rows beyond the radius were dropped (_within_radius).
    want = len(kernel_rows)
    if not any(r[-1] for r in kernel_rows):
        # No vector within the radius has the homogenising coordinate +-1,
        # which every solution has.
        steps.append("lattice: no kernel vector within the radius reaches b: infeasible")
        return None, None, 0, 0, steps
    search = _KernelSearch(
        bounds=bounds,
        radius_sq=radius_sq,
        decode=lambda y: _decode(y, c, where, A_full, b),
        start=start,
        time_limit=time_limit,
        node_limit=node_limit,
        threads=threads,
        memory=8 * size,
    )
    # Rows that carry the homogenising coordinate go last, in their order.
    kernel_rows.sort(key=lambda r: r[-1] != 0)
    lll_kernel = np.array(kernel_rows, dtype=np.int64).reshape(-1, n + 1)
    if n < 30:
        steps.append("enumeration")
        x, stop = search.depth_first(lll_kernel, None)
        return x, stop, search.nodes, search.memory, steps
    # Small trees end in a short depth-first search on the LLL basis, and
    # planted and easy instances fall to it or to a short limited-
    # discrepancy search there; BKZ is paid only when neither settles it.
    # Limited discrepancy first on fpylll's basis (see _LLL_PROBE_NODES);
    # depth first first on the core's, where it ends small infeasible trees
    # within its cap (MS(5) seed 0 without fpylll: 53 k nodes, against
    # 253 k with limited discrepancy first).
    for lds in (True, False) if _fpylll_loaded() else (False, True):
        probe = search.left(_LLL_PROBE_NODES)
        if lds:
            steps.append(f"limited discrepancy (LLL basis, {probe} nodes)")
            x, stop = search.limited_discrepancy(lll_kernel, probe)
            if x is None and stop is None:
                steps.append(_LDS_END[True])
        else:
            steps.append(f"enumeration (LLL basis, {probe} nodes)")
            x, stop = search.depth_first(lll_kernel, probe)
        if x is not None or stop != "node_limit" or search.limit_reached():
            return x, stop, search.nodes, search.memory, steps
    block = min(_BKZ_BLOCK, len(lll_kernel))
    first = _closest_vector_form(lll_kernel.tolist(), block, weight, deadline, want)
    if first is None:
        stop = _reduction_stop(deadline)
        steps.append(f"{_reduction_name(block)} ({_failure(stop)})")
        return None, stop, search.nodes, search.memory, steps
    steps.append(_reduction_name(block))
    estimate = _core.estimate_nodes(first, bounds, radius_sq, _ESTIMATE_DIVES)
    steps.append(f"estimate: {estimate:.1e} nodes depth first")
    x, stop, more = _portfolio(first, estimate, search, weight, deadline)
    return x, stop, search.nodes, search.memory, steps + more


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
    # The rows with a zero equation part are a basis of the kernel lattice
    # only if there are n + 1 - rank of them; a weight too small for large
    # entries leaves kernel vectors mixed with equation vectors. Raise the
    # weight until they separate.
    radius_sq = sum(int(v) ** 2 for v in c) + 1
    kernel_rows = _kernel_rows(reduced, n, weight)
    failed = None
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
                return None, _stop_of(failed), 0
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
            return None, _stop_of(failed), 0
        kernel_rows = near
    if by_core:
        # The core's LLL on the embedding is not certified (its equation
        # weights are beyond what f64 resolves against the kernel vectors):
        # the kernel basis is reduced again on its own, and certified, since
        # the enumeration's float Gram-Schmidt data need a reduced basis.
        certified, failed = _core.lll_reduce(
            kernel_rows, 0.99, _remaining(deadline), deep=_CORE_DEEP
        )
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
            return None, _stop_of(failed), 0
        kernel_rows = certified
    if not _fits_int64(kernel_rows):
        # A prefix of a reduced basis is reduced: no certificate is lost.
        kernel_rows = _within_radius(kernel_rows, radius_sq, steps)
    if not _fits_int64(kernel_rows):
        steps.append("lattice: kernel basis has entries of 2**62 or more")
        return None, "incomplete", 0
    return kernel_rows, None, size


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


def _leading_minors(G: list[list[int]]) -> list[int]:
    """``D_0 = 1, D_1, ..., D_d``: the leading principal minors of a
    positive definite integer matrix, by Bareiss's fraction-free
    elimination (every division exact)."""
    M = [list(r) for r in G]
    d = len(M)
    minors, prev = [1], 1
    for k in range(d):
        pivot = M[k][k]
        if pivot <= 0:
            raise ValueError("the Gram matrix is not positive definite")
        minors.append(pivot)
        for i in range(k + 1, d):
            for j in range(k + 1, d):
                M[i][j] = (M[i][j] * pivot - M[i][k] * M[k][j]) // prev
        prev = pivot
    return minors


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


def _fpylll_loaded() -> bool:
    """Whether fpylll is imported (after ``_import_fpylll``): it reduces the
    lattices then; else the core's LLL does."""
    return sys.modules.get("fpylll") is not None


#: The method step of a lattice search without the lattice extra.
LATTICE_CORE = (
    "lattice: fpylll is not installed; reduced with the core's LLL alone (BKZ needs the "
    "lattice extra: pip install 'skipsearch[lattice]')"
)


def _failure(failed: Optional[str]) -> str:
    """What a reduction's failure reads as in the method trace."""
    if failed == "time_limit":
        return "stopped by the time limit"
    if failed == "incomplete":
        return "the core's LLL could not certify its result in double precision"
    return str(failed)


def _reduction_stop(deadline: Optional[float]) -> str:
    """Why a kernel basis reduction returned nothing: the deadline (all
    that stops fpylll's), or an uncertified result of the core's LLL."""
    if _fpylll_loaded():
        return "time_limit"
    if deadline is not None and time.perf_counter() >= deadline:
        return "time_limit"
    return "incomplete"


def _stop_of(failed: Optional[str]) -> str:
    """The search's status when a reduction fails: its limit, or
    ``incomplete`` when the reducer could not go on (no answer either way)."""
    return failed if failed in ("time_limit", "interrupted") else "incomplete"


def _reduction_name(block: int) -> str:
    """The method step of reducing a kernel basis with BKZ-``block``: the
    core's LLL does it instead without the lattice extra."""
    return f"BKZ-{block}" if _fpylll_loaded() else "LLL"


def _lll(
    rows: list[list[int]], deadline: Optional[float], core: Optional[bool] = None
) -> tuple[Optional[list[list[int]]], Optional[str]]:
    """LLL-reduce ``rows`` with the core's LLL when ``core`` says so (by
    default: when fpylll is not installed or might not end in time, see
    ``_fpylll_in_time``), else with fpylll: in 64-bit integers when the
    result is proved to span the same lattice (``_lll_in_machine_integers``),
    else with fplll's proved default. The reduced rows, or None and why
    (``"time_limit"``, or the core's reason)."""
    if core is None:
        core = not _fpylll_in_time(rows, deadline)
    if core:
        try:
            return _core.lll_reduce(rows, 0.99, _remaining(deadline), certify=False)
        except OverflowError:
            # The equation weight raised past 128 bits.
            return None, "an entry is beyond the core's 128-bit integers"
    # fpylll ships no types: pyproject's mypy config ignores it, stubtest needs this.
    from fpylll import LLL, IntegerMatrix  # type: ignore[import-untyped, unused-ignore]

    fast: list[Optional[list[list[int]]]] = []
    if not _reduce(lambda: fast.append(_lll_in_machine_integers(rows)), deadline):
        return None, "time_limit"
    if fast[0] is not None:
        return fast[0], None
    basis = IntegerMatrix.from_matrix(rows)
    if not _reduce(lambda: LLL.reduction(basis), deadline):
        return None, "time_limit"
    out = [[0] * basis.ncols for _ in range(basis.nrows)]
    basis.to_matrix(out)
    return out, None


#: Bits of the largest entry of a basis that fplll reduces in machine
#: integers (``_lll_in_machine_integers``); larger ones go to its default.
#: QOBLIB's market-split embeddings have 33 to 35; the 2^23 left keeps the
#: reduction's own entries (a few times the input's) far from overflow, so
#: a failed check stays rare (a breaker's 80 x 80 inputs of 2^45 took 15 s
#: once).
_MACHINE_LLL_BITS = 40


def _lll_in_machine_integers(rows: list[list[int]]) -> Optional[list[list[int]]]:
    """fplll's LLL of ``rows`` in 64-bit integers and doubles, with its
    transform ``U`` and the transform's inverse transpose ``V`` kept: the
    reduced rows, or None where that reduction fails or its result is not
    shown to span the lattice of ``rows`` (``_same_lattice``).

    fplll's default (``LLL.reduction``) runs this same reduction and then
    proves it in multiprecision arithmetic, 2.5 times the time on QOBLIB's
    ms_06 (5.4 against 2.1 ms, the same basis on all 72 market-split
    embeddings tried). What matters here is only the lattice, and fplll's
    64-bit integers are not checked for overflow; so the result is checked
    exactly instead, and a basis that fails goes to the default. None too
    for entries of more than ``_MACHINE_LLL_BITS`` bits."""
    from fpylll import GSO, LLL, IntegerMatrix  # type: ignore[import-untyped, unused-ignore]
    from fpylll.util import ReductionError  # type: ignore[import-untyped, unused-ignore]

    try:
        B = np.array(rows, dtype=np.int64)
    except OverflowError:
        return None
    if B.size == 0 or max(int(B.max()), -int(B.min())) >= 2**_MACHINE_LLL_BITS:
        return None
    d = len(rows)
    M = IntegerMatrix.from_matrix(rows, int_type="long")
    U = IntegerMatrix.identity(d, int_type="long")
    V = IntegerMatrix.identity(d, int_type="long")
    try:
        LLL.Reduction(GSO.Mat(M, U=U, UinvT=V, float_type="double"))()
    except ReductionError:
        return None
    out = [[[0] * m.ncols for _ in range(d)] for m in (M, U, V)]
    for m, o in zip((M, U, V), out):
        m.to_matrix(o)
    reduced, transform, inverse = out
    return reduced if _same_lattice(B, reduced, transform, inverse) else None


def _same_lattice(
    B: IntArray,
    reduced: list[list[int]],
    transform: list[list[int]],
    inverse: list[list[int]],
) -> bool:
    """Whether ``reduced = transform @ B`` and ``transform @ inverse.T = I``
    hold exactly: then ``transform`` is unimodular (an integer matrix with
    an integer inverse) and ``reduced`` spans the lattice of the rows of ``B``.
    In int64, or in f64 where every product and partial sum stays below
    2^53, after a bound shows that none reaches 2^63 (False when one
    might)."""
    # Signed integers within int64 only: a float would be truncated, an
    # unsigned 64-bit entry would wrap.
    U, Vt, R = (np.asarray(m) for m in (transform, inverse, reduced))
    d = len(B)
    if any(m.dtype.kind != "i" for m in (U, Vt, R)):
        return False
    if U.shape != (d, d) or Vt.shape != (d, d) or R.shape != B.shape:
        return False
    U, Vt, R = (m.astype(np.int64) for m in (U, Vt, R))
    Vt = Vt.T
    largest = [max(int(m.max(initial=0)), -int(m.min(initial=0))) for m in (B, U, Vt)]
    bound = d * largest[1] * max(largest[0], largest[2])
    if bound >= 2**63:
        return False
    if bound < 2**53:
        # Every product and partial sum is an integer below 2^53: exact in
        # f64 in any order of summation, so BLAS may multiply.
        Uf, Vf, Bf = (m.astype(np.float64) for m in (U, Vt, B))
        return bool(np.array_equal(Uf @ Vf, np.eye(d)) and np.array_equal(Uf @ Bf, R))
    return bool(np.array_equal(U @ Vt, np.eye(d)) and np.array_equal(U @ B, R))


def _remaining(deadline: Optional[float]) -> Optional[float]:
    return None if deadline is None else max(0.0, deadline - time.perf_counter())


#: Least weight of the homogenising coordinate while a kernel basis is
#: reduced (solvediophant scales its last line by 1024 the same way).
_HOMOGENISING_WEIGHT = 1024


def _closest_vector_form(
    rows: list[list[int]], block: int, weight: int, deadline: Optional[float], want: int
) -> Optional[npt.NDArray[np.int64]]:
    """Reduce a kernel basis (LLL, then BKZ-``block`` when it is not 0) with
    its last, homogenising coordinate multiplied by ``weight``.

    Every solution has that coordinate +-1, and the weighted reduction
    leaves it on one basis vector only (solvediophant's scaled last line):
    the others span the kernel vectors with a zero homogenising coordinate,
    which are never solutions, and come out reduced among themselves. That
    vector is put last, at the top of the enumeration, where the core
    (``top_values`` in ``rust/subset_sum/lattice.rs``) can only give it the
    coefficient 1: the enumeration becomes the closest-vector search around
    it, and the search order below it suits limited discrepancy. The
    lattice is the same whatever happens, so the search stays complete;
    should the weight not separate the coordinate, the core just gets no
    restriction. Returns None when the deadline stops the reduction, or
    when the core's LLL (without fpylll) cannot certify its result.
    """
    weighted = [[*r[:-1], int(r[-1]) * weight] for r in rows]
    if not _fpylll_loaded():
        # Without the lattice extra: the core's LLL, certified, no BKZ.
        out, _ = _core.lll_reduce(weighted, 0.99, _remaining(deadline), deep=_CORE_DEEP)
        return None if out is None else _unweighted(out, rows, weight, want)
    from fpylll import BKZ, LLL, IntegerMatrix  # type: ignore[import-untyped, unused-ignore]

    M = IntegerMatrix.from_matrix(weighted)

    def run() -> None:
        LLL.reduction(M)
        if block:
            flags, extra = BKZ.AUTO_ABORT, {}
            if deadline is not None:
                # fplll's own clock, in whole seconds, for when no alarm can be set.
                flags, extra = (
                    flags | BKZ.MAX_TIME,
                    {"max_time": max(0.0, deadline - time.perf_counter())},
                )
            BKZ.reduction(M, BKZ.Param(block_size=block, strategies=None, flags=flags, **extra))

    if not _reduce(run, deadline):
        return None
    out = [[0] * M.ncols for _ in range(M.nrows)]
    M.to_matrix(out)
    return _unweighted(out, rows, weight, want)


def _unweighted(
    out: list[list[int]], rows: list[list[int]], weight: int, want: int
) -> npt.NDArray[np.int64]:
    """A reduced, weighted kernel basis with its weight taken off again, the
    row carrying the homogenising coordinate last (``rows`` as they were
    should the reduction have lost a vector)."""
    kept = [[*r[:-1], r[-1] // weight] for r in out if any(r)]
    if len(kept) != want or not _fits_int64(kept):  # pragma: no cover - fplll keeps a basis
        kept = [list(r) for r in rows]
    # Rows that carry the homogenising coordinate go last, in their order.
    kept.sort(key=lambda r: r[-1] != 0)
    return np.array(kept, dtype=np.int64).reshape(-1, len(rows[0]))


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


class _KernelSearch:
    """The enumerations of one component's kernel lattice: the bounds, the
    decoding of solutions, and the limits and counters they share."""

    def __init__(  # noqa: PLR0913 - keyword-only fields of the search's record
        self,
        *,
        bounds: npt.NDArray[np.int64],
        radius_sq: float,
        decode: Callable[[npt.NDArray[np.int64]], Optional[UInt8Array]],
        start: float,
        time_limit: Optional[float],
        node_limit: Optional[int],
        threads: Optional[int],
        memory: int,
    ) -> None:
        self.bounds, self.radius_sq, self.decode = bounds, radius_sq, decode
        self.start, self.time_limit, self.node_limit = start, time_limit, node_limit
        self.threads = threads
        self.nodes = 0
        self.memory = memory
        self._base_memory = memory

    def remaining(self) -> Optional[float]:
        if self.time_limit is None:
            return None
        return max(0.0, self.time_limit - (time.perf_counter() - self.start))

    def left(self, cap: Optional[int]) -> Optional[int]:
        """``cap`` nodes, or fewer when the node limit is nearer."""
        if self.node_limit is None:
            return cap
        rest = max(1, self.node_limit - self.nodes)
        return rest if cap is None else max(1, min(cap, rest))

    def limit_reached(self) -> bool:
        return self.node_limit is not None and self.nodes >= self.node_limit

    def _result(
        self, out: Mapping[str, Any], basis: npt.NDArray[np.int64]
    ) -> tuple[Optional[UInt8Array], Optional[str]]:
        self.nodes += int(out["nodes"])
        self.memory = max(self.memory, self._base_memory + basis.nbytes)
        for y in np.asarray(out["solutions"]):
            x = self.decode(y)
            if x is not None:
                return x, None
        if len(out["solutions"]):
            # The search stopped at vectors that do not decode (every one
            # the core returns should): it proves nothing either way.
            return None, "incomplete"
        return None, out["stop"]

    def depth_first(
        self, basis: npt.NDArray[np.int64], cap: Optional[int]
    ) -> tuple[Optional[UInt8Array], Optional[str]]:
        """The depth-first search of ``basis``, complete unless ``cap``
        nodes or a limit stop it (the stop is returned)."""
        out = _core.enumerate_bounded(
            basis, self.bounds, self.radius_sq, 1, self.remaining(), self.left(cap), self.threads
        )
        return self._result(out, basis)

    def limited_discrepancy(
        self, basis: npt.NDArray[np.int64], cap: Optional[int]
    ) -> tuple[Optional[UInt8Array], Optional[str]]:
        """Limited-discrepancy passes on ``basis`` for up to ``cap`` nodes.
        A stop of None without a solution means a pass passed over nothing:
        a proof that there is none."""
        return self._result(self._passes(basis, self.left(cap), self.threads), basis)

    def _passes(
        self,
        basis: npt.NDArray[np.int64],
        cap: Optional[int],
        threads: Optional[int],
        stop_event: Optional[threading.Event] = None,
    ) -> Mapping[str, Any]:
        """The core's limited-discrepancy passes on ``basis``, as it returns
        them (no counter is touched: safe on any thread)."""
        return _core.enumerate_bounded(
            basis,
            self.bounds,
            self.radius_sq,
            1,
            self.remaining(),
            cap,
            threads,
            lds_nodes=1 << 62,
            stop_event=stop_event,
        )

    def limited_discrepancy_streams(
        self,
        bases: Sequence[Callable[[], Optional[npt.NDArray[np.int64]]]],
        cap: int,
        threads: int,
    ) -> tuple[Optional[UInt8Array], Optional[str], bool]:
        """Limited-discrepancy passes on several bases at once, one Python
        thread (and ``threads`` core threads) each, up to ``cap`` nodes each.
        ``bases`` build them (a reduction each) on this thread, one after
        the other, each while the searches already started run: fpylll's
        signal handling (cysignals) is safe only on the thread that handles
        signals, and a reduction on another thread turned Ctrl-C into a
        segmentation fault or a hang. The first search to find a solution
        stops the others (``stop_event``). Returns the solution, the stop
        (None with no solution: a pass passed over nothing, a proof that
        there is none) and whether every basis was built (False: the
        deadline stopped a reduction).
        """
        streams = len(bases)
        if self.node_limit is not None:
            # The streams together stay within the node limit.
            cap = max(1, min(cap, (self.node_limit - self.nodes) // streams))
        halt = threading.Event()
        outs: list[Optional[Mapping[str, Any]]] = [None] * streams
        built: list[Optional[npt.NDArray[np.int64]]] = [None] * streams
        errors: list[BaseException] = []

        def search(k: int, basis: npt.NDArray[np.int64]) -> None:
            try:
                out = self._passes(basis, cap, threads, halt)
            except BaseException as err:  # re-raised on the calling thread
                errors.append(err)
                halt.set()
                return
            outs[k] = out
            if len(out["solutions"]):
                halt.set()

        workers: list[threading.Thread] = []
        try:
            for k, build in enumerate(bases):
                basis = build() if not halt.is_set() else None
                if basis is None:
                    break
                built[k] = basis
                workers.append(threading.Thread(target=search, args=(k, basis)))
                workers[-1].start()
            for w in workers:
                w.join()
        except BaseException:
            # Ctrl-C (or an error) here: the searches stop within a poll
            # (20 ms) and are waited for.
            halt.set()
            for w in workers:
                w.join()
            raise
        if errors:
            raise errors[0]
        self.memory = max(
            self.memory, self._base_memory + sum(b.nbytes for b in built if b is not None)
        )
        stops: list[Optional[str]] = []
        for out, basis in zip(outs, built):
            if out is None or basis is None:
                continue
            x, stop = self._result(out, basis)
            if x is not None:
                return x, None, True
            stops.append(stop)
        if None in stops:
            # A pass that passed over nothing: a proof of infeasibility.
            return None, None, True
        for stop in ("time_limit", "incomplete"):
            if stop in stops:
                return None, stop, True
        # The rest ran their cap (or were stopped by a peer's find).
        return None, "node_limit", all(b is not None for b in built)

    def resume(
        self, tree: _core.KernelTree, basis: npt.NDArray[np.int64], cap: Optional[int]
    ) -> tuple[Optional[UInt8Array], Optional[str]]:
        """Go on with ``tree``'s depth-first search for up to ``cap`` nodes."""
        out = tree.depth_first(1, self.remaining(), self.left(cap), self.threads)
        return self._result(out, basis)


#: The last method step of the portfolio: which search ended it, and how.
_LDS_END = {
    False: "solved by limited discrepancy",
    True: "limited discrepancy ran to its end: infeasible",
}
_DFS_END = {
    False: "solved by depth-first enumeration",
    True: "depth-first enumeration ran to its end: infeasible",
}


def _luby(i: int) -> int:
    """Term ``i`` (from 1) of Luby, Sinclair & Zuckerman's universal restart
    sequence: 1, 1, 2, 1, 1, 2, 4, 1, 1, 2, ..."""
    k = 1
    while (1 << k) - 1 < i:
        k += 1
    while i != (1 << k) - 1:
        i -= (1 << (k - 1)) - 1
        k = 1
        while (1 << k) - 1 < i:
            k += 1
    return 1 << (k - 1)


def _portfolio(
    first: npt.NDArray[np.int64],
    estimate: float,
    search: _KernelSearch,
    weight: int,
    deadline: Optional[float],
) -> tuple[Optional[UInt8Array], Optional[str], list[str]]:
    """Search the BKZ-reduced kernel basis ``first`` (in closest-vector
    form) for a solution, or prove there is none.

    Two searches take turns on all threads. Limited-discrepancy searches
    find the solutions of feasible market splits far sooner than the
    depth-first order, but the nodes they need vary by orders of magnitude
    from one reduced basis to the next, so they run on a sequence of bases
    (``first``, its BKZ-30 reduction, then BKZ-30 reductions of random
    unimodular transforms of that, two at a time with two threads or more),
    each with Luby's number of units of
    nodes: the restart strategy of Gomes, Selman & Kautz (2000) for such
    heavy tails. The complete depth-first search on one fixed basis goes on
    between them, each turn where the last stopped (``_core.KernelTree``),
    so it proves infeasibility. Below ``_RESTART_MIN_NODES`` estimated
    nodes it runs to its end after one short limited-discrepancy pass on
    ``first``; above, it gets ``_COMPLETE_SHARE`` nodes for each node of the
    restarts (``_COMPLETE_SHARE_FAR`` on trees estimated beyond
    ``_COMPLETE_FAR`` nodes, out of its reach in minutes). Every turn is
    counted in nodes, so one thread gives a repeatable run. Returns the
    solution or the stop, and the method steps.
    """
    d = len(first)
    block = min(_BKZ_RESTART_BLOCK, d)
    rng = np.random.default_rng(_RESTART_SEED)
    small = estimate < _RESTART_MIN_NODES
    small_cap = min(_RESTART_UNIT, max(1, int(estimate)))
    share = _COMPLETE_SHARE if estimate < _COMPLETE_FAR else _COMPLETE_SHARE_FAR
    bases, complete_turns, found_by = 0, 0, ""
    best = first

    def steps() -> list[str]:
        if small:
            # One short pass, then the whole depth-first search.
            out = [
                f"limited discrepancy ({_reduction_name(_BKZ_BLOCK)} basis, "
                f"up to {int(small_cap)} nodes)"
            ]
            if complete_turns:
                out.append("depth-first enumeration (to the end)")
            return out + ([found_by] if found_by else [])
        out = [f"{_reduction_name(block)} (kernel lattice)"]
        if bases > 2:
            out.append(f"{_reduction_name(block)} on {bases - 2} re-randomised bases")
        if bases:
            at_once = f", {streams} at a time" if streams > 1 and bases > 2 else ""
            out.append(f"limited discrepancy on {bases} bases (Luby restarts{at_once})")
        if complete_turns:
            out.append(f"depth-first enumeration ({complete_turns} turns)")
        if found_by:
            out.append(found_by)
        return out

    streams, stream_threads = _restart_streams(search.threads)
    tree: Optional[_core.KernelTree] = None
    lds_spent = complete_spent = 0
    i = 0
    while True:
        i += 1
        before = search.nodes
        if small or i <= 2:
            if i == 2 and not small:
                stronger = _closest_vector_form(first.tolist(), block, weight, deadline, d)
                if stronger is None:
                    return None, _reduction_stop(deadline), steps()
                best = stronger
            cap = small_cap if small else _luby(i) * _RESTART_UNIT
            x, stop = search.limited_discrepancy(best, cap)
            bases += 1
        else:
            # Re-randomised bases, several at once: the same nodes in all.
            x, stop, built = search.limited_discrepancy_streams(
                [
                    functools.partial(
                        _closest_vector_form, _randomised(best, rng), block, weight, deadline, d
                    )
                    for _ in range(streams)
                ],
                _luby(i) * _RESTART_UNIT // streams,
                stream_threads,
            )
            if not built:
                return None, _reduction_stop(deadline), steps()
            bases += streams
        lds_spent += search.nodes - before
        if x is not None or stop is None:
            # Found, or every leaf passed: a proof of infeasibility.
            found_by = _LDS_END[x is None]
            return x, stop, steps()
        if stop != "node_limit" or search.limit_reached():
            return None, stop, steps()
        if small or i >= 2:
            if tree is None:
                tree = _core.KernelTree(best, search.bounds, search.radius_sq)
            turn = None if small else max(1, int(share * lds_spent) - complete_spent)
            complete_turns += 1
            before = search.nodes
            x, stop = search.resume(tree, best, turn)
            complete_spent += search.nodes - before
            if x is not None or stop is None:
                found_by = _DFS_END[x is None]
                return x, stop, steps()
            if stop != "node_limit" or search.limit_reached():
                return None, stop, steps()


def _randomised(basis: npt.NDArray[np.int64], rng: np.random.Generator) -> list[list[int]]:
    """A random unimodular transform of ``basis``: its rows permuted, then
    plus or minus ``_RESTART_ADDITIONS`` rows before it added to each row."""
    d = len(basis)
    rows = [basis[p].tolist() for p in rng.permutation(d)]
    for r in range(1, d):
        for _ in range(_RESTART_ADDITIONS):
            q, sign = int(rng.integers(0, r)), int(rng.choice((-1, 1)))
            rows[r] = [u + sign * v for u, v in zip(rows[r], rows[q])]
    return rows


def _restart_streams(threads: Optional[int]) -> tuple[int, int]:
    """How many re-randomised bases the restarts search at once
    (``_RESTART_STREAMS``, at most one per thread), and the core threads
    each gets. ``threads`` None means one per core, as in the core."""
    if threads is None:
        affinity = getattr(os, "sched_getaffinity", None)
        threads = len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)
    streams = max(1, min(_RESTART_STREAMS, threads))
    return streams, threads // streams


def _import_fpylll() -> bool:
    """Import fpylll, from any thread; False when it is not installed.

    Its import runs cysignals' set-up, which calls ``signal.signal`` and so
    raises ``ValueError`` on any thread but the main one. Off the main
    thread that call is made a no-op for the import (the handlers are left
    as they are); no reduction relies on them (see ``_reduce``).
    """
    import signal

    if _fpylll_loaded():
        return True
    if threading.current_thread() is threading.main_thread():
        try:
            import fpylll  # type: ignore[import-untyped, unused-ignore]
        except ImportError:
            return False
        return True
    with _IMPORT_LOCK:
        original = signal.signal
        signal.signal = lambda signum, handler: signal.getsignal(signum)  # type: ignore[assignment]
        try:
            import fpylll  # noqa: F401
        except ImportError:
            return False
        finally:
            signal.signal = original
    return True


_IMPORT_LOCK = threading.Lock()


def _reduce(reduction: Callable[[], object], deadline: Optional[float]) -> bool:
    """Run an fpylll reduction to its end, unless the deadline (a
    ``perf_counter`` time) has passed before it starts: False then.

    fplll cannot be stopped safely once started. A cysignals alarm did
    stop it at the deadline, but an alarm that lands inside ``malloc``
    leaves the allocator's lock held, and the process then deadlocks on
    it (a breaker hit this in 2 of 43 runs with limits of a millisecond).
    So no reduction is interrupted: the embedding's LLL goes to the core
    when fpylll might not end in time (``_fpylll_in_time``), and BKZ
    watches its own clock (``BKZ.MAX_TIME``, checked between tours).
    One reduction runs at a time in the process (``_FPLLL_LOCK``).
    """
    with _FPLLL_LOCK:
        if deadline is not None and deadline - time.perf_counter() <= 0:
            return False
        reduction()
    return True


#: fplll is not safe to run on two threads at once: two BKZ-30 reductions
#: on two Python threads crashed the process (a segmentation fault in
#: fplll's SVP step) in 1 of 3 runs of 40. The restarts reduce on the
#: calling thread only, but a pipeline may call ``subset_sum`` from
#: several threads: every reduction, from any thread or call, holds this
#: lock.
_FPLLL_LOCK = threading.Lock()


#: Seconds per unit of ``d^2 k^2 bits`` (basis rows, equation columns, bits
#: of the largest entry) that fplll's LLL of an embedding is predicted to
#: take: 4 to 7 times what it took on an Intel Xeon 6/167 (QOBLIB's ms_06
#: to ms_10_050: 8 to 41 ms, predicted 31 to 282 ms; a 90 x 100 system of
#: 30-bit entries: 11 s, predicted 48 s).
_LLL_SECONDS_PER_UNIT = 1e-8


def _fpylll_in_time(rows: list[list[int]], deadline: Optional[float]) -> bool:
    """Whether fpylll reduces the embedding ``rows``: it is installed, and
    without a deadline, or with its LLL predicted to end well before it
    (see ``_reduce``: it is never interrupted)."""
    if not _fpylll_loaded():
        return False
    if deadline is None:
        return True
    d, k = len(rows), max(1, len(rows[0]) - len(rows))
    bits = max((max(max(row), -min(row)).bit_length() for row in rows if row), default=1)
    return _lll_seconds(d, k, bits) <= deadline - time.perf_counter()


def _lll_seconds(d: int, k: int, bits: int) -> float:
    """fpylll's LLL time predicted for an embedding of ``d`` rows, ``k``
    equation columns and entries of ``bits`` bits (``_LLL_SECONDS_PER_UNIT``)."""
    return float(_LLL_SECONDS_PER_UNIT * d * d * k * k * bits)


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


def _kernel_rows(rows: list[list[int]], n: int, weight: int = 1) -> list[list[int]]:
    """The nonzero rows of a reduced embedding basis whose equation part is
    zero, cut to their first ``n + 1`` coordinates (Python integers), the
    last one (the homogenising coordinate) divided by its ``weight``."""
    return [
        [*row[:n], row[n] // weight] for row in rows if not any(row[n + 1 :]) and any(row[: n + 1])
    ]


def _fits_int64(rows: list[list[int]]) -> bool:
    """Whether every entry stays below 2^62 (room for the enumeration's sums)."""
    # Row by row in C (max and min), not entry by entry: it runs on every
    # reduced basis, and an entry-wise loop cost 2 ms of a 20 ms search.
    return all(min(row, default=0) > -(2**62) and max(row, default=0) < 2**62 for row in rows)


def _rank(M: npt.ArrayLike) -> int:
    """The rank over the rationals of an integer matrix: its rank modulo
    three primes below 2^31 (a rank modulo p is never above the rational
    one, and equals it unless p divides every maximal nonzero minor), and
    when that is not full, the rational rank by fraction-free elimination
    in Python integers (entries near 2^52 can make all three primes divide
    every minor), for matrices small enough to afford it."""
    M = np.asarray(M, dtype=np.int64)
    rank = _modular_rank(M)
    rows, cols = M.shape
    if rank < min(rows, cols) and rows * rows * cols <= _EXACT_RANK_WORK:
        return _exact_rank(M)
    return rank


#: Most ``rows^2 cols`` integer operations the exact rank may take (a few
#: seconds at worst in Python integers); beyond it the modular rank stands,
#: a lower bound whose only cost is an "incomplete" where the lattice could
#: not isolate its kernel.
_EXACT_RANK_WORK = 20_000_000


def _exact_rank(M: IntArray) -> int:
    """The rank over the rationals by Bareiss's fraction-free elimination:
    every division is exact, and the entries stay minors of ``M``."""
    R = [[int(v) for v in row] for row in M]
    rows, cols = M.shape
    rank, previous = 0, 1
    for c in range(cols):
        pivot = next((r for r in range(rank, rows) if R[r][c]), None)
        if pivot is None:
            continue
        R[rank], R[pivot] = R[pivot], R[rank]
        top = R[rank]
        for r in range(rank + 1, rows):
            row, lead = R[r], R[r][c]
            R[r] = [(top[c] * row[j] - lead * top[j]) // previous for j in range(cols)]
        previous = top[c]
        rank += 1
        if rank == rows:
            break
    return rank


def _modular_rank(M: IntArray) -> int:
    """The largest rank of ``M`` modulo the three primes of _RANK_PRIMES;
    the first prime alone when it gives ``min(rows, cols)``, which no rank
    can exceed."""
    best = 0
    for p in _RANK_PRIMES:
        if best == min(M.shape):
            break
        R = np.mod(np.asarray(M, dtype=np.int64), p)
        rank = 0
        rows, cols = R.shape
        for c in range(cols):
            pivot = next((r for r in range(rank, rows) if R[r, c]), None)
            if pivot is None:
                continue
            R[[rank, pivot]] = R[[pivot, rank]]
            inv = pow(int(R[rank, c]), p - 2, p)
            R[rank] = R[rank] * inv % p
            others = np.arange(rows) != rank
            R[others] = (R[others] - np.outer(R[others, c], R[rank])) % p
            rank += 1
            if rank == rows:
                break
        best = max(best, rank)
    return best


def _float(
    A: FloatArray,
    b: FloatArray,
    tol: float,
    start: float,
    time_limit: Optional[float],
    node_limit: Optional[int],
    threads: Optional[int],
) -> SubsetSumResult:
    k, n = A.shape
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
    method: tuple[str, ...] = tuple(raw["method"])
    nodes = int(raw["nodes"])
    base: dict[str, Any] = dict(exact=False, memory_bytes=8 * n * n, tolerance=tol)

    def found(solution: UInt8Array) -> SubsetSumResult:
        residual = float(np.max(np.abs(A @ solution - b), initial=0.0))
        return _done(
            start,
            status="feasible",
            solution=solution,
            residual=residual,
            nodes=nodes,
            method=method,
            **base,
        )

    def verified(solution: UInt8Array) -> Optional[bool]:
        """Whether ||A x - b|| <= tol ||b|| holds exactly (None: unresolved)."""
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

    if raw["finding"] == "subset":
        solution = np.zeros(n, dtype=np.uint8)
        solution[np.asarray(raw["subset"], dtype=np.int64)] = 1
        return found(solution)
    if raw["finding"] == "no_subset":
        return _done(start, status="infeasible", solution=None, nodes=nodes, method=method, **base)
    status: str = raw.get("stop") or raw.get("numerics") or raw["finding"]
    user_stop = status in ("time_limit", "interrupted") or (
        status == "node_limit" and cap == node_limit
    )
    if not listed or user_stop:
        return _done(start, status=status, solution=None, nodes=nodes, method=method, **base)
    # Small and unsettled (a stalled tree, or float64 too coarse for the
    # relaxation): meet in the middle on a projection, complete within tol.
    remaining = None if time_limit is None else max(0.0, time_limit - (time.perf_counter() - start))
    left = None if node_limit is None else max(1, node_limit - nodes)
    # The radius is rounded up: the search drops a subset only when its
    # residual provably exceeds it, and what it returns is verified here.
    radius = rounding.up(tol * rounding.norm_upper(b), 3)
    out = _core.meet_in_the_middle(A, b, radius, remaining, left, threads, tol=tol)
    method += (f"meet in the middle (projection, n={n}, {out['memory_bytes'] >> 10} KiB)",)
    nodes += int(out["nodes"])
    base["memory_bytes"] = max(base["memory_bytes"], int(out["memory_bytes"]))
    if out["solution"] is not None:
        solution = np.asarray(out["solution"], dtype=np.uint8)
        if verified(solution):  # verified in the core too; checked again here
            return found(solution)
        return _done(start, status="unresolved", solution=None, nodes=nodes, method=method, **base)
    if out["unresolved"] and out["stop"] is None:
        # A subset sat on tol ||b|| to rounding: nothing is proved.
        return _done(start, status="unresolved", solution=None, nodes=nodes, method=method, **base)
    status = "infeasible" if out["stop"] is None else out["stop"]
    return _done(start, status=status, solution=None, nodes=nodes, method=method, **base)
