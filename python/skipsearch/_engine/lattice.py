"""The lattice search of one component: equal columns merged into bounded
variables, the kernel basis of the embedding reduced, short searches on
its LLL basis, then BKZ and the portfolio of searches."""

from __future__ import annotations

from typing import Optional

import numpy as np
import numpy.typing as npt

from skipsearch import _core
from skipsearch._engine.distributed import ClusterOptions, Coordinator, EngineOptions
from skipsearch._engine.embedding import _decode, _embedding_weights, _reduced_kernel
from skipsearch._engine.integer_algebra import _rank
from skipsearch._engine.kernel_search import _KernelSearch
from skipsearch._engine.portfolio import _BKZ_BLOCK, _ESTIMATE_DIVES, _LDS_END, _portfolio
from skipsearch._engine.reduction import (
    _LATTICE_MAX_DIM,
    LATTICE_CORE,
    _closest_vector_form,
    _failure,
    _fpylll_loaded,
    _import_fpylll,
    _reduction_name,
    _reduction_stop,
)
from skipsearch._types import IntArray, UInt8Array

#: Limited-discrepancy, then depth-first nodes tried on the LLL basis before
#: BKZ (for n >= 30): the first settles planted and easy instances, the
#: second ends small trees. On fpylll's LLL basis, in closest-vector form,
#: limited discrepancy reaches the solution of QOBLIB's ms_06 in 7 k to
#: 167 k nodes where depth-first needs 36 k to 1.2 M (11 of 12 fewer, the
#: twelfth beyond both caps); in this order ms_06 took 1.6 M nodes in all
#: against 3.0 M (2 threads), and MS(5) to MS(7) seeds 0-5 kept their
#: node counts up to thread timing.
_LLL_PROBE_NODES = 200_000


def _lattice(
    A_full: IntArray,
    b: IntArray,
    time_limit: Optional[float],
    node_limit: Optional[int],
    options: EngineOptions,
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
        threads=options.threads,
        seed=options.seed,
        memory=8 * size,
    )
    # Rows that carry the homogenising coordinate go last, in their order.
    kernel_rows.sort(key=lambda r: r[-1] != 0)
    lll_kernel = np.array(kernel_rows, dtype=np.int64).reshape(-1, n + 1)
    x, stop = _search_kernel(lll_kernel, search, weight, deadline, options.cluster, steps)
    return x, stop, search.nodes, search.memory, steps


def _search_kernel(
    lll_kernel: npt.NDArray[np.int64],
    search: _KernelSearch,
    weight: int,
    deadline: Optional[float],
    cluster: Optional[ClusterOptions],
    steps: list[str],
) -> tuple[Optional[UInt8Array], Optional[str]]:
    """Search the LLL-reduced kernel basis ``lll_kernel`` (its rows with
    the homogenising coordinate last, weighted by ``weight`` in the
    reductions): depth first to the end below 30 variables; else short
    searches on it, then BKZ and the portfolio (distributed by ``cluster``
    when given). The solution or the stop; the method steps go into
    ``steps``."""
    want = len(lll_kernel)
    if lll_kernel.shape[1] - 1 < 30:
        steps.append("enumeration")
        return search.depth_first(lll_kernel, None)
    probed = _probe(lll_kernel, search, steps)
    if probed is not None:
        return probed
    block = min(_BKZ_BLOCK, len(lll_kernel))
    first = _closest_vector_form(lll_kernel.tolist(), block, weight, deadline, want)
    if first is None:
        failed = _reduction_stop(deadline)
        steps.append(f"{_reduction_name(block)} ({_failure(failed)})")
        return None, failed
    steps.append(_reduction_name(block))
    estimate = _core.estimate_nodes(first, search.bounds, search.radius_sq, _ESTIMATE_DIVES)
    steps.append(f"estimate: {estimate:.1e} nodes depth first")
    if cluster is not None:
        x, stop, more = Coordinator(first, estimate, search, weight, deadline, cluster).run()
    else:
        x, stop, more = _portfolio(first, estimate, search, weight, deadline)
    steps.extend(more)
    return x, stop


def _probe(
    lll_kernel: npt.NDArray[np.int64], search: _KernelSearch, steps: list[str]
) -> Optional[tuple[Optional[UInt8Array], Optional[str]]]:
    """Short searches on the LLL basis, ``_LLL_PROBE_NODES`` each: the
    solution or the stop when one settles the component (or a limit stops
    it), None when BKZ is due."""
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
            return x, stop
    return None
