"""The portfolio as units on an executor (a dask.distributed cluster, a
process pool, or this thread), resumable from a state file.

The same two searches as :mod:`skipsearch._engine.portfolio`, cut into
units that any worker can run (:mod:`skipsearch._engine.tasks`): the
limited-discrepancy restarts, one unit per re-randomised basis, and the
complete depth-first search of the BKZ-30 basis, cut into subtrees by
their prefixes (``_core.root_prefixes``) and searched a node budget at a
time; a unit hands back the prefixes of what it did not search. The
coordinator keeps every prefix not yet searched to its end, those in
flight included, so the search is ``infeasible`` only once every subtree
has ended, whichever worker ran it; a unit lost with its worker is run
again. The first verified solution ends the search and the rest is
cancelled. With a ``checkpoint`` the state is written every
``interval`` seconds (:mod:`skipsearch._engine.state`); a run given the
same file goes on from it.
"""

from __future__ import annotations

import concurrent.futures as cf
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np
import numpy.typing as npt

from skipsearch import _core
from skipsearch._engine import state as state_file
from skipsearch._engine.kernel_search import _KernelSearch
from skipsearch._engine.portfolio import (
    _BKZ_RESTART_BLOCK,
    _COMPLETE_FAR,
    _COMPLETE_SHARE,
    _COMPLETE_SHARE_FAR,
    _LDS_FREE_WIDTH,
    _RESTART_MIN_NODES,
    _RESTART_UNIT,
    _luby,
)
from skipsearch._engine.reduction import (
    _closest_vector_form,
    _import_fpylll,
    _reduction_name,
    _reduction_stop,
)
from skipsearch._engine.tasks import (
    InlineExecutor,
    executor_slots,
    restart_unit,
    subtree_unit,
)
from skipsearch._types import UInt8Array

#: Nodes of one subtree unit: a few seconds on one core, so that a state
#: written every minute loses little, and a lost worker costs little.
SUBTREE_UNIT = 1 << 26
#: Prefixes given to one subtree unit at most.
SUBTREE_PREFIXES = 64
#: Times a unit is run again after its worker failed before the search
#: gives up.
RETRIES = 3
#: Seconds between progress reports.
PROGRESS_EVERY = 0.5
#: Seconds the units in flight are waited for at a limit: their own limits
#: stop them with the search's, within a poll.
DRAIN_SECONDS = 2.0


@dataclass(frozen=True)
class SearchProgress:
    """Where a distributed or resumable search stands.

    Attributes
    ----------
    seconds : float
        Wall time so far, earlier runs of a resumed search included.
    nodes : int
        Nodes searched so far, earlier runs included.
    bases : int
        Re-randomised bases whose limited-discrepancy restart has ended.
    subtrees_done : int
        Subtrees of the complete depth-first search searched to their end.
    subtrees_known : int
        Subtrees known so far: those done, pending and in flight (a unit
        cut by its budget hands back the rest of its subtrees as new ones).
    """

    seconds: float
    nodes: int
    bases: int
    subtrees_done: int
    subtrees_known: int


@dataclass(frozen=True)
class ClusterOptions:
    """The distributed and resumable search's options, checked once."""

    executor: cf.Executor
    checkpoint: Optional[str]
    interval: float
    progress: Optional[Callable[[SearchProgress], None]]
    instance: str
    unit_threads: Optional[int]

    def settings(self, seed: int) -> dict[str, Any]:
        """What a state file of a search with the restarts' ``seed`` must
        agree on to be resumed."""
        fpylll_version = None
        if _import_fpylll():
            import fpylll  # type: ignore[import-untyped, unused-ignore]

            fpylll_version = getattr(fpylll, "__version__", "unknown")
        return {
            "restart_unit": _RESTART_UNIT,
            "restart_free_width": _LDS_FREE_WIDTH,
            "restart_seed": seed,
            "bkz_block": _BKZ_RESTART_BLOCK,
            "fpylll": fpylll_version,
        }


@dataclass(frozen=True)
class EngineOptions:
    """The exact engine's options of one ``subset_sum`` call, checked once
    and passed down to every stage."""

    #: Core threads (None: one per core).
    threads: Optional[int]
    #: The restarts' seed (``subset_sum(seed=)``).
    seed: int
    #: The distributed and resumable search's options, None without
    #: ``executor`` and ``checkpoint`` (the portfolio on threads).
    cluster: Optional[ClusterOptions]


#: A unit in flight: what it searches, and how often it was run again.
_Unit = tuple[str, Union[int, list[list[int]]], int]


class Coordinator:
    """One component's distributed search (see the module)."""

    def __init__(
        self,
        first: npt.NDArray[np.int64],
        estimate: float,
        search: _KernelSearch,
        weight: int,
        deadline: Optional[float],
        options: ClusterOptions,
    ) -> None:
        self.first, self.search, self.weight, self.deadline = first, search, weight, deadline
        self.options = options
        # The component's record in the state file: its BKZ-20 basis names it.
        self.key = state_file.digest(first)
        self.solution: Optional[list[int]] = None
        self.small = estimate < _RESTART_MIN_NODES
        self.share = _COMPLETE_SHARE if estimate < _COMPLETE_FAR else _COMPLETE_SHARE_FAR
        self.block = min(_BKZ_RESTART_BLOCK, len(first))
        self.executor = options.executor
        self.slots = executor_slots(self.executor)
        self.flight: dict[cf.Future[dict[str, Any]], _Unit] = {}
        self.pending: list[list[int]] = []
        self.restarts: set[int] = set()
        self.next_restart = 1
        self.finished = self.units = 0
        self.lds_spent = self.dfs_spent = 0
        self.earlier_nodes, self.earlier_seconds = 0, 0.0
        self.found_by, self.resumed = "", False
        self.best: Optional[npt.NDArray[np.int64]] = None
        self.state: Optional[state_file.SearchState] = None
        self.record: Optional[state_file.ComponentState] = None

    # -- set-up ------------------------------------------------------------

    def _start(self) -> Optional[str]:
        """Reduce the basis and list the subtrees, or take both from the
        state file; the stop when the reduction cannot finish."""
        best = _closest_vector_form(
            self.first.tolist(), self.block, self.weight, self.deadline, len(self.first)
        )
        if best is None:
            return _reduction_stop(self.deadline)
        self.best = best
        basis_digest = state_file.digest(best)
        opts = self.options
        settings = opts.settings(self.search.seed)
        if opts.checkpoint is not None:
            self.state = state_file.load(opts.checkpoint, opts.instance, settings)
        if self.state is None:
            self.state = state_file.SearchState(instance=opts.instance, settings=settings)
        record = self.state.components.get(self.key)
        if record is not None and record.basis != basis_digest:
            raise state_file.CheckpointMismatch(
                f"checkpoint {opts.checkpoint!r}: the reduced basis of this run differs from the "
                "one its subtrees belong to (another fpylll or platform?); start a new state file"
            )
        if record is None:
            prefixes, listing = _core.root_prefixes(best, self.search.bounds, self.search.radius_sq)
            record = state_file.ComponentState(basis=basis_digest, pending=prefixes)
            self.state.components[self.key] = record
            self.search.nodes += listing
        else:
            self.resumed = True
        self.record = record
        self.pending = [list(p) for p in record.pending]
        self.finished, self.restarts = record.finished, set(record.restarts)
        self.earlier_nodes, self.earlier_seconds = record.nodes, record.seconds
        return None

    # -- the loop ----------------------------------------------------------

    def run(self) -> tuple[Optional[UInt8Array], Optional[str], list[str]]:
        """Units until a solution, a proof or a limit: the solution or the
        stop, and the method steps."""
        stop = self._start()
        if stop is not None:
            return None, stop, [f"{_reduction_name(self.block)} (kernel lattice, {stop})"]
        record = self.record
        assert record is not None
        if record.solution is not None or record.infeasible:
            x = None if record.solution is None else self._decoded(record.solution)
            if record.solution is not None and x is None:
                raise state_file.CheckpointMismatch(
                    f"checkpoint {self.options.checkpoint!r}: its solution does not solve this "
                    "instance; start a new state file"
                )
            self.found_by = "resumed: " + ("solved" if x is not None else "infeasible")
            return x, None, self.steps()
        x, stop, ended = None, None, False
        started = time.perf_counter()
        saved = reported = started
        try:
            while True:
                x, stop, ended = self._fill_and_wait()
                now = time.perf_counter()
                if ended:
                    break
                if self.options.checkpoint is not None and now - saved >= self.options.interval:
                    self._save(now - started)
                    saved = now
                if self.options.progress is not None and now - reported >= PROGRESS_EVERY:
                    self.options.progress(self._progress(now - started))
                    reported = now
        finally:
            self._cancel()
            if x is not None:
                record.solution = self.solution
            elif ended and stop is None and not self.pending:
                # Only a search that ended with a proof (no exception,
                # no Ctrl-C, no unit lost) is recorded as infeasible.
                record.infeasible = True
            if self.options.checkpoint is not None:
                self._save(time.perf_counter() - started)
        return x, stop, self.steps()

    def _fill_and_wait(self) -> tuple[Optional[UInt8Array], Optional[str], bool]:
        """Submit units while slots are free, then take those that ended:
        the solution, the stop, and whether the search ended."""
        if not self.pending and not any(kind == "dfs" for kind, _, _ in self.flight.values()):
            # No subtree pending and none in flight: every one has ended
            # (restarts still running prove nothing more).
            self.found_by = "depth-first enumeration ran to its end: infeasible"
            return None, None, True
        limit = self._limit()
        if limit is not None:
            return self._drain(limit)
        while len(self.flight) < self.slots and self._submit():
            pass
        done, _ = cf.wait(list(self.flight), timeout=0.2, return_when=cf.FIRST_COMPLETED)
        for future in done:
            x, stop, ended = self._take(future)
            if ended:
                return x, stop, True
        return None, None, False

    def _drain(self, limit: str) -> tuple[Optional[UInt8Array], Optional[str], bool]:
        """At a limit: the units in flight, whose own limits stop them with
        it, are waited for a moment (``DRAIN_SECONDS``), so that their
        nodes count and the subtrees they hand back are kept; a solution
        among them still ends the search as found."""
        done, _ = cf.wait(list(self.flight), timeout=DRAIN_SECONDS)
        for future in done:
            if future.cancelled() or future.exception() is not None:
                continue  # left in flight: its subtrees stay pending
            x, stop, ended = self._take(future, relaunch=False)
            if ended and (x is not None or stop is None):
                return x, stop, True
        return None, limit, True

    def _limit(self) -> Optional[str]:
        search = self.search
        if search.limit_reached():
            return "node_limit"
        if self.deadline is not None and time.perf_counter() >= self.deadline:
            return "time_limit"
        return None

    def _budget(self, cap: int) -> int:
        left = self.search.left(cap)
        return cap if left is None else left

    def _submit(self) -> bool:
        """Submit the next unit; False when there is none to submit now."""
        # Without fpylll the restarts reduce with the core's LLL, as the
        # threads-only portfolio's do.
        want_dfs = bool(self.pending) and (
            self.small or self.dfs_spent <= self.share * self.lds_spent
        )
        if want_dfs:
            chunk = self.pending[:SUBTREE_PREFIXES]
            self._launch(("dfs", chunk, 0))  # if submit raises, the chunk stays pending
            del self.pending[: len(chunk)]
            return True
        if self.small:
            return False
        while self.next_restart in self.restarts:
            self.next_restart += 1
        self._launch(("restart", self.next_restart, 0))
        self.next_restart += 1
        return True

    def _launch(self, unit: _Unit) -> None:
        kind, what, _ = unit
        best, search, threads = self.best, self.search, self.options.unit_threads
        assert best is not None
        if kind == "dfs":
            assert isinstance(what, list)
            budget = self._budget(SUBTREE_UNIT)
            future = self.executor.submit(
                subtree_unit,
                best,
                search.bounds,
                search.radius_sq,
                what,
                budget,
                threads,
                search.remaining(),
            )
        else:
            assert isinstance(what, int)
            cap = self._budget(_luby(what) * _RESTART_UNIT)
            future = self.executor.submit(
                restart_unit,
                best,
                search.bounds,
                search.radius_sq,
                what,
                cap,
                self.block,
                self.weight,
                threads,
                search.remaining(),
                search.seed,
            )
        self.flight[future] = unit
        self.units += 1

    def _take(
        self, future: cf.Future[dict[str, Any]], relaunch: bool = True
    ) -> tuple[Optional[UInt8Array], Optional[str], bool]:
        """Account for a unit that ended (run it again if its worker
        failed, unless ``relaunch`` is False): the solution, the stop, and
        whether the search ended."""
        kind, what, tries = self.flight.pop(future)
        try:
            out = future.result()
        except cf.CancelledError:
            out = None
        except Exception as err:
            if tries >= RETRIES:
                self._keep(kind, what)
                raise RuntimeError(
                    f"a {kind} unit of the search failed {tries + 1} times; last error: {err!r}"
                ) from err
            out = None
        if out is None:
            if not relaunch:
                self._keep(kind, what)
                return None, None, False
            try:
                self._launch((kind, what, tries + 1))
            except BaseException:
                self._keep(kind, what)  # a broken executor: the subtrees stay pending
                raise
            return None, None, False
        self.search.nodes += out["nodes"]
        if kind == "dfs":
            self.dfs_spent += out["nodes"]
            self.finished += out["finished"]
            self.pending[:0] = out["pending"]
        else:
            self.lds_spent += out["nodes"]
            assert isinstance(what, int)
            if out["stop"] != "incomplete":
                self.restarts.add(what)
        for y in out["solutions"]:
            x = self._decoded(y)
            if x is not None:
                self.solution = list(y)
                self.found_by = (
                    "solved by limited discrepancy"
                    if kind == "restart"
                    else "solved by depth-first enumeration"
                )
                return x, None, True
        if out["solutions"]:
            return None, "incomplete", True
        if kind == "restart" and out["stop"] is None:
            self.found_by = "limited discrepancy ran to its end: infeasible"
            self.pending.clear()
            return None, None, True
        return None, None, False

    def _keep(self, kind: str, what: Union[int, list[list[int]]]) -> None:
        """Put a lost unit's subtrees back among the pending ones."""
        if kind == "dfs":
            assert isinstance(what, list)
            self.pending[:0] = what

    def _cancel(self) -> None:
        for future in self.flight:
            future.cancel()

    # -- state and reports -------------------------------------------------

    def _in_flight_prefixes(self) -> list[list[int]]:
        return [p for kind, what, _ in self.flight.values() if kind == "dfs" for p in what]  # type: ignore[union-attr]

    def _save(self, seconds: float) -> None:
        record, state = self.record, self.state
        assert record is not None and state is not None and self.options.checkpoint is not None
        record.pending = self._in_flight_prefixes() + self.pending
        record.finished = self.finished
        record.restarts = sorted(self.restarts)
        record.nodes = self.earlier_nodes + self.search.nodes
        record.seconds = self.earlier_seconds + seconds
        state_file.save(self.options.checkpoint, state)

    def _progress(self, seconds: float) -> SearchProgress:
        known = self.finished + len(self.pending) + len(self._in_flight_prefixes())
        return SearchProgress(
            seconds=self.earlier_seconds + seconds,
            nodes=self.earlier_nodes + self.search.nodes,
            bases=len(self.restarts),
            subtrees_done=self.finished,
            subtrees_known=known,
        )

    def _decoded(self, y: list[int]) -> Optional[UInt8Array]:
        """The 0/1 solution behind the kernel vector ``y``, checked
        ``A x = b`` exactly (None if it fails)."""
        return self.search.decode(np.asarray(y, dtype=np.int64))

    def steps(self) -> list[str]:
        """The method steps of the run."""
        where = (
            "this thread"
            if isinstance(self.executor, InlineExecutor)
            else f"an executor of {self.slots} slots"
        )
        out = [f"{_reduction_name(self.block)} (kernel lattice)"]
        if self.resumed:
            out.append(f"resumed from {self.options.checkpoint}")
        out.append(
            f"units on {where}: limited discrepancy on {len(self.restarts)} bases, "
            f"depth-first enumeration in subtrees ({self.finished} searched to their end)"
        )
        if self.found_by:
            out.append(self.found_by)
        return out
