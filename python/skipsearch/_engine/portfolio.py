"""The search of a large kernel lattice: limited-discrepancy searches on a
sequence of re-randomised bases with Luby's restart budgets, taking turns
with the complete depth-first search on one basis."""

from __future__ import annotations

import functools
import os
from typing import Optional

import numpy as np
import numpy.typing as npt

from skipsearch import _core
from skipsearch._engine.kernel_search import _KernelSearch
from skipsearch._engine.reduction import _closest_vector_form, _reduction_name, _reduction_stop
from skipsearch._types import UInt8Array

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
#: Seed of the random unimodular transforms of the restarts (fixed, so a run
#: is repeatable).
_RESTART_SEED = 20_260_423


#: The portfolio's limited-discrepancy passes spend no discrepancy on the
#: top levels of the tree, down to the deepest depth holding at most this
#: many nodes (the core's ``lds_free_width``): there the Gram-Schmidt
#: vectors are shortest and a solution leaves the search order at most
#: levels. Measured on the BKZ-30 restart bases of QOBLIB's ms_10_100_003
#: (AMD EPYC Zen 4): its known solution leaves the order at 7 to 20 levels
#: (median 13), the top five (one fixed) nearly always among them; with
#: none free, no basis of 240 yielded it within 2^23 to 2^24 nodes, with
#: the top 5 levels free (16 nodes at that depth; 4 and 6 levels: 8 and 32
#: nodes) 2 did, in 4.4e6 to 8e6 nodes. Each level freed doubles a pass's
#: nodes there, so a width of 32 or more did no better.
_LDS_FREE_WIDTH = 16

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
    return _Portfolio(first, estimate, search, weight, deadline).run()


class _Portfolio:
    """One run of :func:`_portfolio`: the bases searched, the depth-first
    tree and the nodes each search has spent (see there)."""

    def __init__(
        self,
        first: npt.NDArray[np.int64],
        estimate: float,
        search: _KernelSearch,
        weight: int,
        deadline: Optional[float],
    ) -> None:
        self.first, self.search, self.weight, self.deadline = first, search, weight, deadline
        self.d = len(first)
        self.block = min(_BKZ_RESTART_BLOCK, self.d)
        self.rng = np.random.default_rng(search.seed)
        self.small = estimate < _RESTART_MIN_NODES
        self.small_cap = min(_RESTART_UNIT, max(1, int(estimate)))
        self.share = _COMPLETE_SHARE if estimate < _COMPLETE_FAR else _COMPLETE_SHARE_FAR
        self.bases, self.complete_turns, self.found_by = 0, 0, ""
        self.best = first
        self.streams, self.stream_threads = _restart_streams(search.threads)
        self.tree: Optional[_core.KernelTree] = None
        self.lds_spent = self.complete_spent = 0

    def run(self) -> tuple[Optional[UInt8Array], Optional[str], list[str]]:
        """Turns until one search ends: the solution or the stop, and the
        method steps."""
        i = 0
        while True:
            i += 1
            ended, x, stop = self._limited_discrepancy(i)
            if not ended and (self.small or i >= 2):
                ended, x, stop = self._depth_first()
            if ended:
                return x, stop, self.steps()

    def _limited_discrepancy(self, i: int) -> tuple[bool, Optional[UInt8Array], Optional[str]]:
        """Turn ``i`` (from 1) of the limited-discrepancy searches: on
        ``first`` (the short pass of a small tree, or Luby's first unit),
        then on its BKZ-30 reduction, then on re-randomised bases, several
        at once. Whether the search ended, the solution and the stop."""
        search = self.search
        before = search.nodes
        if self.small or i <= 2:
            if i == 2 and not self.small:
                stronger = _closest_vector_form(
                    self.first.tolist(), self.block, self.weight, self.deadline, self.d
                )
                if stronger is None:
                    return True, None, _reduction_stop(self.deadline)
                self.best = stronger
            cap = self.small_cap if self.small else _luby(i) * _RESTART_UNIT
            # A small tree's short pass frees no level: it ends in the
            # depth-first search anyway.
            free = 0 if self.small else _LDS_FREE_WIDTH
            x, stop = search.limited_discrepancy(self.best, cap, free)
            self.bases += 1
        else:
            # Re-randomised bases, several at once: the same nodes in all.
            x, stop, built = search.limited_discrepancy_streams(
                [
                    functools.partial(
                        _closest_vector_form,
                        _randomised(self.best, self.rng),
                        self.block,
                        self.weight,
                        self.deadline,
                        self.d,
                    )
                    for _ in range(self.streams)
                ],
                _luby(i) * _RESTART_UNIT // self.streams,
                self.stream_threads,
                _LDS_FREE_WIDTH,
            )
            if not built:
                return True, None, _reduction_stop(self.deadline)
            self.bases += self.streams
        self.lds_spent += search.nodes - before
        if x is not None or stop is None:
            # Found, or every leaf passed: a proof of infeasibility.
            self.found_by = _LDS_END[x is None]
            return True, x, stop
        return stop != "node_limit" or search.limit_reached(), None, stop

    def _depth_first(self) -> tuple[bool, Optional[UInt8Array], Optional[str]]:
        """A turn of the complete depth-first search on ``best``, where the
        last one stopped: to its end on a small tree, else its share of the
        nodes the restarts have spent. Whether the search ended, the
        solution and the stop."""
        search = self.search
        if self.tree is None:
            self.tree = _core.KernelTree(self.best, search.bounds, search.radius_sq)
        turn = (
            None if self.small else max(1, int(self.share * self.lds_spent) - self.complete_spent)
        )
        self.complete_turns += 1
        before = search.nodes
        x, stop = search.resume(self.tree, self.best, turn)
        self.complete_spent += search.nodes - before
        if x is not None or stop is None:
            self.found_by = _DFS_END[x is None]
            return True, x, stop
        return stop != "node_limit" or search.limit_reached(), None, stop

    def steps(self) -> list[str]:
        """The method steps of the run so far."""
        if self.small:
            # One short pass, then the whole depth-first search.
            out = [
                f"limited discrepancy ({_reduction_name(_BKZ_BLOCK)} basis, "
                f"up to {int(self.small_cap)} nodes)"
            ]
            if self.complete_turns:
                out.append("depth-first enumeration (to the end)")
            return out + ([self.found_by] if self.found_by else [])
        block, bases = self.block, self.bases
        out = [f"{_reduction_name(block)} (kernel lattice)"]
        if bases > 2:
            out.append(f"{_reduction_name(block)} on {bases - 2} re-randomised bases")
        if bases:
            at_once = f", {self.streams} at a time" if self.streams > 1 and bases > 2 else ""
            out.append(f"limited discrepancy on {bases} bases (Luby restarts{at_once})")
        if self.complete_turns:
            out.append(f"depth-first enumeration ({self.complete_turns} turns)")
        if self.found_by:
            out.append(self.found_by)
        return out


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
