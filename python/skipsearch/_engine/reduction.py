"""Lattice basis reduction: LLL and BKZ by fpylll (the ``lattice`` extra),
run to their end one at a time, or the core's LLL
(``rust/subset_sum/reduction.rs``) without it; the prediction of fpylll's
time that chooses between them, and the method steps that name them."""

from __future__ import annotations

import sys
import threading
import time
from typing import Callable, Optional

import numpy as np
import numpy.typing as npt

from skipsearch import _core
from skipsearch._types import IntArray

#: Largest lattice dimension (distinct columns + 1) reduced: LLL takes
#: seconds at a few hundred and its memory grows fast beyond.
_LATTICE_MAX_DIM = 600
#: Deep insertions of the core's LLL on kernel bases (without fpylll):
#: every position (Schnorr & Euchner's deep-insertion LLL, unrestricted).
#: On QOBLIB's ms_08, ms_09_050 and ms_10_050 (20 instances, 2 threads)
#: the lean route took 55.8 s in all with plain LLL, 52.0 s with depth 10,
#: 39.1 s with depth 40 and 19.4 s unrestricted; the infeasible MS(7)
#: seed 0 took 5.9, 1.5, 0.9 and 1.0 s. It costs about 1 s per reduction
#: at dimension 91 and 3 s at 297, against 0.01 to 0.03 s.
_CORE_DEEP = _LATTICE_MAX_DIM


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


def _fpylll_loaded() -> bool:
    """Whether fpylll is imported (after ``_import_fpylll``): it reduces the
    lattices then; else the core's LLL does."""
    return sys.modules.get("fpylll") is not None


#: The method step of a lattice search without the lattice extra.
LATTICE_CORE = (
    "lattice: fpylll is not installed; reduced with the core's LLL alone (BKZ needs the "
    "lattice extra: pip install 'skipsearch[lattice]')"
)


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


def _fits_int64(rows: list[list[int]]) -> bool:
    """Whether every entry stays below 2^62 (room for the enumeration's sums)."""
    # Row by row in C (max and min), not entry by entry: it runs on every
    # reduced basis, and an entry-wise loop cost 2 ms of a 20 ms search.
    return all(min(row, default=0) > -(2**62) and max(row, default=0) < 2**62 for row in rows)


def _remaining(deadline: Optional[float]) -> Optional[float]:
    return None if deadline is None else max(0.0, deadline - time.perf_counter())


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
