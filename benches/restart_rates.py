"""Per-basis success rates of the limited-discrepancy restarts, and what a
cluster of many workers would need to find a solution.

    python benches/restart_rates.py benches/data/qoblib_marketsplit/ms_10_100_003.dat \
        --bases 40 --cap 26 --workers 2

The instance goes through the engine's stages as ``subset_sum`` runs them
(with an executor, so that its search reaches the distributed units); at
the first restart unit the run is stopped and the unit's inputs are kept:
the BKZ-30 basis of the kernel lattice, its bounds and radius. Then
restarts ``2 .. bases + 1`` (each a BKZ-30 reduction of a random unimodular
transform of that basis, from the seed ``(seed, index)``, as the
distributed search draws them) each run limited discrepancy for ``2^cap``
nodes on one core, ``--workers`` at a time. A basis counts as a success
when a vector it returns decodes to a 0/1 ``x`` with ``A x = b`` (checked
in exact integers).

With ``p`` the fraction of successes and ``t`` the median seconds of a
unit (reduction included), a worker needs ``1 / p`` units on average (a
geometric draw), so ``W`` workers find a solution in about
``t / (p W)`` seconds: printed for 100 workers. An instance with no success
gives only a bound: with ``s`` units run and none solved, ``p < 3 / s`` at
95% (the rule of three). An instance solved before its restarts (by the
presolve, the float heuristic or the first passes) has no rate to measure.

Measured (AMD EPYC, family 25 model 17, Zen 4, 2 workers), before the
restarts freed their top levels (a53b41c): on QOBLIB's
ms_10_100_003, 0 of 150 bases at 2^25 nodes, 0 of 40 at 2^26 and 0 of 16
at 2^28, while ``subset_sum(seed=1)`` found its solution on the 58th basis
of its Luby schedule (71.6 s): the rate there is below 2% a basis (95%),
too low for 150 bases to measure.

After a53b41c (AMD EPYC family 26 model 2, Zen 5, 2 workers, 160 bases of
2^24 nodes each; the reduction took 0.36-0.52 s of a 1.1-1.2 s unit):
ms_10_100_003 solved on 1 base (8.0e6 nodes), ms_10_200_003 on none,
ms_10_200_001 on 3 (3.1e5, 2.7e6, 1.0e7 nodes), ms_10_100_001 on 2 (5.2e6,
1.2e7), ms_09_200_000 on 13 (3.9e5 to 1.6e7). The nodes to a solution
spread evenly in log scale up to the cap, so no fixed cutoff below 2^24
does clearly better (the printed table): the unit's size is not where
the time goes, the rate per basis is.
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

import numpy as np
import skipsearch
from cluster_rate import cpu_name
from skipsearch._engine import distributed
from skipsearch._engine.instances import read_instance
from skipsearch._engine.portfolio import _LDS_FREE_WIDTH, _RESTART_SEED
from skipsearch._engine.tasks import InlineExecutor, restart_unit


class _Captured(BaseException):
    """Raised at the first restart unit, carrying the coordinator."""

    def __init__(self, coordinator: Any) -> None:
        super().__init__()
        self.coordinator = coordinator


def capture(A: np.ndarray, b: np.ndarray) -> Any:
    """The coordinator of ``subset_sum(A, b)`` at its first restart unit,
    or None when the instance is settled before the restarts."""
    launch = distributed.Coordinator._launch

    def stop_at_restart(self: Any, unit: Any) -> None:
        if unit[0] == "restart":
            raise _Captured(self)
        launch(self, unit)

    distributed.Coordinator._launch = stop_at_restart  # type: ignore[method-assign]
    try:
        skipsearch.subset_sum(A, b, executor=InlineExecutor(), threads=1)
    except _Captured as got:
        return got.coordinator
    finally:
        distributed.Coordinator._launch = launch  # type: ignore[method-assign]
    return None


def timed_unit(*args: Any) -> dict[str, Any]:
    """:func:`restart_unit` and its wall time."""
    t = time.perf_counter()
    out = restart_unit(*args)
    out["seconds"] = time.perf_counter() - t
    return out


def print_cutoffs(results: list[dict[str, Any]], solved: list[int], cap: int) -> None:
    """Seconds per solution of a fixed restart cutoff of ``2^k`` nodes, for
    each ``k`` up to ``cap``, from the nodes each solved basis needed: the
    mean reduction plus the mean nodes searched up to the cutoff (at the
    measured rate), divided by the fraction solved within it."""
    reduce = statistics.mean(r["reduce_seconds"] for r in results)
    searched = sum(r["seconds"] - r["reduce_seconds"] for r in results)
    rate = sum(r["nodes"] for r in results) / max(searched, 1e-9)
    found = {r["index"]: r["nodes"] for r in results if r["index"] in solved}
    print(
        f"reduction mean {reduce:.3f} s; search {rate:.3g} nodes/s a core; "
        f"nodes to the solution: {sorted(found.values())}"
    )
    for k in range(max(10, cap - 10), cap + 1):
        t = 1 << k
        hits = sum(1 for n in found.values() if n <= t)
        spent = statistics.mean(min(r["nodes"], t) for r in results)
        per = (reduce + spent / rate) * len(results) / hits if hits else float("inf")
        print(f"  cutoff 2^{k}: {hits} solved, {per:.1f} core-seconds per solution")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("instance")
    parser.add_argument("--bases", type=int, default=40, help="restart bases to run")
    parser.add_argument("--cap", type=int, default=26, help="log2 of the nodes per basis")
    parser.add_argument("--workers", type=int, default=2, help="processes, one core each")
    parser.add_argument("--seed", type=int, default=_RESTART_SEED)
    parser.add_argument(
        "--free",
        type=int,
        default=_LDS_FREE_WIDTH,
        help="nodes of the top levels searched with no discrepancy counted",
    )
    args = parser.parse_args()
    A, b = read_instance(args.instance)
    print(
        f"CPU: {cpu_name()}; {args.instance}; {args.bases} bases of 2^{args.cap} nodes; "
        f"free width {args.free}"
    )
    c = capture(A, b)
    if c is None:
        print("settled before the restarts: no rate to measure")
        return
    search = c.search
    with ProcessPoolExecutor(args.workers) as pool:
        futures: list[Future[dict[str, Any]]] = [
            pool.submit(
                timed_unit,
                c.best,
                search.bounds,
                search.radius_sq,
                index,
                1 << args.cap,
                c.block,
                c.weight,
                1,
                None,
                args.seed,
                args.free,
            )
            for index in range(2, args.bases + 2)
        ]
        results = [f.result() for f in futures]
    solved = [
        r["index"]
        for r in results
        if any(search.decode(np.asarray(y, dtype=np.int64)) is not None for y in r["solutions"])
    ]
    seconds = [r["seconds"] for r in results]
    t = statistics.median(seconds)
    p = len(solved) / len(results)
    print(
        f"solved on {len(solved)} of {len(results)} bases (indices {solved}); "
        f"unit median {t:.2f} s (range {min(seconds):.2f}-{max(seconds):.2f}), "
        f"nodes median {statistics.median(r['nodes'] for r in results):.3g}"
    )
    print_cutoffs(results, solved, args.cap)
    if p > 0:
        print(f"p = {p:.3f}: 100 workers need about {t / (p * 100):.1f} s on average")
    else:
        bound = 3 / len(results)
        print(
            f"p < {bound:.3f} (95%): 100 workers expect to need at least {t / (bound * 100):.1f} s"
        )


if __name__ == "__main__":
    main()
