"""The units of the distributed search, as functions any executor can run:
plain arguments, plain results, no state of the calling process.

Each unit is repeatable from its arguments alone, so a unit lost with its
worker is just run again:

- :func:`restart_unit`: restart ``index`` of the limited-discrepancy
  search, on the reduced basis re-randomised from a seed of its own, for
  Luby's number of nodes;
- :func:`subtree_unit`: the complete depth-first search below a list of
  prefixes, for a node budget; it hands back the prefixes of what it did
  not search (``_core.search_subtrees``).

:class:`InlineExecutor` runs them on the calling thread, for a resumable
search without a cluster (fpylll reduces only on the thread that handles
signals: see ``reduction._reduce``).
"""

from __future__ import annotations

import time
from concurrent.futures import Executor, Future
from typing import Any, Callable, Optional, TypeVar

import numpy as np
import numpy.typing as npt

from skipsearch import _core
from skipsearch._engine.portfolio import _LDS_FREE_WIDTH, _RESTART_SEED, _randomised
from skipsearch._engine.reduction import _closest_vector_form

T = TypeVar("T")


def restart_basis(
    best: npt.NDArray[np.int64],
    index: int,
    block: int,
    weight: int,
    deadline: Optional[float] = None,
    seed: int = _RESTART_SEED,
) -> Optional[npt.NDArray[np.int64]]:
    """The basis of restart ``index``: ``best`` itself for index 1, else the
    BKZ-``block`` reduction of a random unimodular transform of it, drawn
    from the seed ``(seed, index)``; None if the reduction fails."""
    if index <= 1:
        return best
    rng = np.random.default_rng([seed, index])
    return _closest_vector_form(_randomised(best, rng), block, weight, deadline, len(best))


def restart_unit(  # noqa: PLR0913 - the unit's whole input, for any executor
    best: npt.NDArray[np.int64],
    bounds: npt.NDArray[np.int64],
    radius_sq: float,
    index: int,
    cap: int,
    block: int,
    weight: int,
    threads: Optional[int],
    time_limit: Optional[float] = None,
    seed: int = _RESTART_SEED,
    free_width: int = _LDS_FREE_WIDTH,
) -> dict[str, Any]:
    """Limited-discrepancy passes on restart ``index``'s basis, up to
    ``cap`` nodes, no discrepancy counted down to the depth of at most
    ``free_width`` nodes. Returns ``index``, ``solutions`` (kernel vectors, to be
    decoded and checked by the caller), ``stop`` (None without a solution:
    a pass passed over nothing, a proof that there is none), ``nodes`` and
    ``reduce_seconds`` (the basis's reduction)."""
    start = time.perf_counter()
    deadline = None if time_limit is None else start + time_limit
    basis = restart_basis(best, index, block, weight, deadline, seed)
    reduced = time.perf_counter() - start
    if basis is None:
        return {
            "index": index,
            "solutions": [],
            "stop": "incomplete",
            "nodes": 0,
            "reduce_seconds": reduced,
        }
    if deadline is not None:
        time_limit = max(0.0, deadline - time.perf_counter())
    out = _core.enumerate_bounded(
        basis,
        bounds,
        radius_sq,
        1,
        time_limit,
        cap,
        threads,
        lds_nodes=1 << 62,
        lds_free_width=free_width,
    )
    return {
        "index": index,
        "solutions": np.asarray(out["solutions"]).tolist(),
        "stop": out["stop"],
        "nodes": int(out["nodes"]),
        "reduce_seconds": reduced,
    }


def subtree_unit(
    best: npt.NDArray[np.int64],
    bounds: npt.NDArray[np.int64],
    radius_sq: float,
    prefixes: list[list[int]],
    budget: int,
    threads: Optional[int],
    time_limit: Optional[float] = None,
) -> dict[str, Any]:
    """The depth-first search below ``prefixes`` for up to ``budget`` nodes.
    Returns ``solutions``, ``pending`` (what is left of these subtrees),
    ``finished`` and ``nodes``."""
    out = _core.search_subtrees(best, bounds, radius_sq, prefixes, 1, time_limit, budget, threads)
    return {
        "solutions": np.asarray(out["solutions"]).tolist(),
        "pending": out["pending"],
        "finished": int(out["finished"]),
        "nodes": int(out["nodes"]),
    }


class InlineExecutor(Executor):
    """Runs each submitted call at once, on the calling thread, and returns
    its finished future: the distributed search's loop without workers."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as err:
            future.set_exception(err)
        return future


def executor_slots(executor: Executor) -> int:
    """Units to keep in flight on ``executor``: its worker threads for a
    dask.distributed client's executor, its workers for a process or
    thread pool, else 2."""
    client = getattr(executor, "_client", None)
    if client is not None:
        try:
            return max(1, int(sum(client.nthreads().values())))
        except Exception:
            return 2
    workers = getattr(executor, "_max_workers", None)
    if isinstance(workers, int) and workers > 0:
        return workers
    return 1 if isinstance(executor, InlineExecutor) else 2
