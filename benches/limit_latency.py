"""How late ``time_limit`` and Ctrl-C take effect on large blocks.

What it measures: for the ``hard`` synthetic blocks of ``benches/scale.py``
(``W_down`` aligned against ``W_up`` so that the certificate ``Y = A``
proves nothing and the search needs conjugate-gradient steps or the Gram
path), the wall time of ``skipsearch.find_absorbing_subset`` with a
``time_limit`` against that limit (the *overrun*), and the time from a
SIGINT sent to this process at a fixed moment to the ``KeyboardInterrupt``
it raises (the *Ctrl-C latency*). Each case is repeated ``--repeat``
times; the table gives the minimum, median and maximum. The weights are
built once per shape, outside the timed calls.

Cases (``--cases``, comma-separated; default all):

- ``limit``: ``d = 4000, m = 2500``, ``distance=False``, ``time_limit`` in
  ``--limits`` (default ``0.5,1.3``);
- ``distance``: ``d = 6000, m = 1000``, ``distance=True``,
  ``time_limit = 1``;
- ``ctrl-c``: ``d = 4000, m = 2500``, ``distance=False``, no limit, SIGINT
  after each of ``--interrupt-after`` seconds (default ``1,2,3``, so the
  signal lands at different points of the conjugate-gradient steps).

- ``call``: the round trip of ``--calls`` calls (default 3000) of two
  core bindings on tiny inputs, with 1 and 2 threads: the lattice
  enumeration of Z^3 and Schroeppel-Shamir on 4 columns, the two that
  ``subset_sum`` makes with ``threads``. The binding waits for its worker
  in naps of 20 ms; before 2026-12-03 it could miss the worker's wake-up
  and nap the whole 20 ms (2 to 3 calls in 100 with two threads). The
  table gives milliseconds per call and how many took 10 ms or more.

Usage::

    python benches/limit_latency.py
    python benches/limit_latency.py --cases limit --limits 0.5 --repeat 5
    python benches/limit_latency.py --threads 1 --json latency.json
    python benches/limit_latency.py --cases call

The machine matters: say what ``lscpu`` names, and how many other jobs ran.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from scale import synthetic_block


def _call(block, **kwargs):
    import skipsearch

    return skipsearch.find_absorbing_subset(activation="gelu", **block, **kwargs)


def limit_overrun(block, limit: float, distance: bool, threads) -> dict:
    """One call with ``time_limit=limit``: its wall time and status."""
    start = time.perf_counter()
    r = _call(block, distance=distance, time_limit=limit, threads=threads)
    wall = time.perf_counter() - start
    return {
        "wall": wall,
        "overrun": wall - limit,
        "status": r.status,
        "verdict": r.verdict,
        "method": list(r.stats.method),
        "krylov_steps": getattr(r.stats, "krylov_steps", None),
    }


def interrupt_latency(block, after: float, threads) -> dict:
    """One call without limits, SIGINT sent to this process ``after``
    seconds in: the seconds from the signal to the KeyboardInterrupt."""
    sent = {}

    def fire():
        sent["at"] = time.perf_counter()
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(after, fire)
    start = time.perf_counter()
    timer.start()
    try:
        r = _call(block, distance=False, threads=threads)
    except KeyboardInterrupt:
        caught = time.perf_counter()
        return {"latency": caught - sent["at"], "wall": caught - start, "status": "interrupted"}
    finally:
        timer.cancel()
    return {"latency": None, "wall": time.perf_counter() - start, "status": r.status}


def call_round_trips(calls: int, threads: int) -> dict:
    """Milliseconds of each of ``calls`` round trips of the two core
    bindings that take ``threads``, on tiny inputs."""
    import numpy as np
    from skipsearch import _core

    basis, bounds = np.eye(3, dtype=np.int64), np.ones(3, dtype=np.int64)
    A, b = np.array([[3, 5, 7, 9]]), np.array([12])
    cases = {
        "enumerate_bounded": lambda: _core.enumerate_bounded(
            basis, bounds, 3.0, 1, None, None, threads, 0
        ),
        "schroeppel_shamir": lambda: _core.schroeppel_shamir(A, b, None, None, threads),
    }
    out = {}
    for name, call in cases.items():
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            call()
            times.append(1e3 * (time.perf_counter() - start))
        out[name] = times
    return out


def _row(name: str, values: list[float]) -> str:
    if not values:
        return f"| {name} | - | - | - |"
    return f"| {name} | {min(values):.2f} | {statistics.median(values):.2f} | {max(values):.2f} |"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="limit,distance,ctrl-c,call")
    parser.add_argument("--limits", default="0.5,1.3")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--interrupt-after", default="1,2,3")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    records = []
    rows = ["| case | min (s) | median (s) | max (s) |", "|---|---|---|---|"]
    blocks = {}

    def block(d, m):
        if (d, m) not in blocks:
            W_up, W_down = synthetic_block(d, m, "hard")
            blocks.clear()
            blocks[(d, m)] = {"W_up": W_up, "W_down": W_down}
        return blocks[(d, m)]

    def record(case, out):
        out["case"] = case
        records.append(out)
        print(json.dumps(out), flush=True)

    if "limit" in cases:
        for limit in [float(x) for x in args.limits.split(",")]:
            runs = []
            for _ in range(args.repeat):
                out = limit_overrun(block(4000, 2500), limit, False, args.threads)
                record(f"limit {limit}", out)
                runs.append(out["overrun"])
            rows.append(_row(f"overrun, d=4000 m=2500 distance=False limit={limit}", runs))
    if "distance" in cases:
        runs = []
        for _ in range(args.repeat):
            out = limit_overrun(block(6000, 1000), 1.0, True, args.threads)
            record("distance 1.0", out)
            runs.append(out["overrun"])
        rows.append(_row("overrun, d=6000 m=1000 distance=True limit=1", runs))
    if "ctrl-c" in cases:
        runs = []
        after = [float(x) for x in args.interrupt_after.split(",")]
        for _ in range(args.repeat):
            for at in after:
                out = interrupt_latency(block(4000, 2500), at, args.threads)
                record(f"ctrl-c {at}", out)
                if out["latency"] is not None:
                    runs.append(out["latency"])
        rows.append(
            _row(f"Ctrl-C latency, d=4000 m=2500, SIGINT at {args.interrupt_after} s", runs)
        )
    if "call" in cases:
        calls = [
            "",
            "| core call, threads | min (ms) | median (ms) | mean (ms) | max (ms) | 10 ms or more |",
            "|---|---|---|---|---|---|",
        ]
        for threads in (1, 2):
            for name, ms in call_round_trips(args.calls, threads).items():
                slow = sum(t >= 10 for t in ms)
                out = {
                    "binding": name,
                    "threads": threads,
                    "calls": len(ms),
                    "min_ms": min(ms),
                    "median_ms": statistics.median(ms),
                    "mean_ms": statistics.fmean(ms),
                    "max_ms": max(ms),
                    "calls_over_10_ms": slow,
                }
                record(f"call {name} {threads}", out)
                calls.append(
                    f"| {name}, {threads} | {out['min_ms']:.3f} | {out['median_ms']:.3f} | "
                    f"{out['mean_ms']:.3f} | {out['max_ms']:.1f} | {slow} of {len(ms)} |"
                )
        rows += calls
    if len(rows) == 2:
        # Only the call case ran: its own table follows the empty header.
        rows = rows[2:]
    print("\n".join(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
