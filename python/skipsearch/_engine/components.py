"""One independent component of an integer instance: Schroeppel-Shamir's
four lists when it is small, else the lattice, after a float heuristic
when the lattice's reduction is predicted to be slow, and the lists again
when the lattice cannot be used."""

from __future__ import annotations

import time
from typing import Optional

from skipsearch import _core
from skipsearch._engine.distributed import EngineOptions
from skipsearch._engine.embedding import _lll_predicted_seconds
from skipsearch._engine.floats import _float_heuristic
from skipsearch._engine.lattice import _lattice
from skipsearch._types import IntArray, UInt8Array

#: Components with at most this many columns are solved by Schroeppel-Shamir
#: (2^(n/2) time, 2^(n/4) memory: under 100 KiB at n = 32); the lattice is
#: faster beyond.
_LISTS_MAX = 32
#: Larger components go to Schroeppel-Shamir too when the lattice cannot
#: be used (entries too large for it): up to 2^26 pairs, quarter lists of
#: 2^13.
_LISTS_FALLBACK_MAX = 52
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


def _component(
    A: IntArray,
    b: IntArray,
    time_limit: Optional[float],
    node_limit: Optional[int],
    options: EngineOptions,
) -> tuple[Optional[UInt8Array], Optional[str], int, int, list[str]]:
    """Solve one independent block: Schroeppel-Shamir when it is small,
    else the lattice, after a float heuristic when the lattice's reduction
    is predicted to be slow."""
    n = A.shape[1]
    threads = options.threads
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
        found, used = _float_heuristic(A, b, time_limit, node_limit, threads)
        if found is not None:
            return found, None, used, 8 * n * n, heuristic
        if node_limit is not None and used >= node_limit:
            return None, "node_limit", used, 8 * n * n, heuristic
        # The heuristic's time counts against the limit too; the reduction
        # (fpylll) cannot be stopped once started, so it starts only in time.
        if time_limit is not None and time.perf_counter() - entered >= time_limit:
            return None, "time_limit", used, 8 * n * n, heuristic
    left = None if node_limit is None else node_limit - used
    x, stop, nodes, memory, steps = _lattice(A, b, time_limit, left, options, entered)
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
