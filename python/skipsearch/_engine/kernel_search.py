"""The enumerations of one component's kernel lattice by the core
(depth first, limited discrepancy, several bases at once, a depth-first
tree resumed in turns), with the limits and counters they share."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional

import numpy as np
import numpy.typing as npt

from skipsearch import _core
from skipsearch._types import UInt8Array


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
        seed: int,
        memory: int,
    ) -> None:
        self.bounds, self.radius_sq, self.decode = bounds, radius_sq, decode
        self.start, self.time_limit, self.node_limit = start, time_limit, node_limit
        self.threads, self.seed = threads, seed
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
        self, basis: npt.NDArray[np.int64], cap: Optional[int], free_width: int = 0
    ) -> tuple[Optional[UInt8Array], Optional[str]]:
        """Limited-discrepancy passes on ``basis`` for up to ``cap`` nodes,
        the top levels free down to ``free_width`` nodes (the core's
        ``lds_free_width``). A stop of None without a solution means a pass
        passed over nothing: a proof that there is none."""
        out = self._passes(basis, self.left(cap), self.threads, free_width)
        return self._result(out, basis)

    def _passes(
        self,
        basis: npt.NDArray[np.int64],
        cap: Optional[int],
        threads: Optional[int],
        free_width: int,
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
            lds_free_width=free_width,
        )

    def limited_discrepancy_streams(
        self,
        bases: Sequence[Callable[[], Optional[npt.NDArray[np.int64]]]],
        cap: int,
        threads: int,
        free_width: int,
    ) -> tuple[Optional[UInt8Array], Optional[str], bool]:
        """Limited-discrepancy passes on several bases at once, one Python
        thread (and ``threads`` core threads) each, up to ``cap`` nodes each,
        the top levels free down to ``free_width`` nodes.
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
                out = self._passes(basis, cap, threads, free_width, halt)
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
        return self._streams_result(outs, built)

    def _streams_result(
        self,
        outs: Sequence[Optional[Mapping[str, Any]]],
        built: Sequence[Optional[npt.NDArray[np.int64]]],
    ) -> tuple[Optional[UInt8Array], Optional[str], bool]:
        """What ``limited_discrepancy_streams`` returns, from the searches'
        outputs ``outs`` on the bases ``built`` (None where none ran): the
        counters are taken, then the solutions decoded in order."""
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
