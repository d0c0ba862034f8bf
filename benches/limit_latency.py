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

Usage::

    python benches/limit_latency.py
    python benches/limit_latency.py --cases limit --limits 0.5 --repeat 5
    python benches/limit_latency.py --threads 1 --json latency.json

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


def _row(name: str, values: list[float]) -> str:
    if not values:
        return f"| {name} | - | - | - |"
    return f"| {name} | {min(values):.2f} | {statistics.median(values):.2f} | {max(values):.2f} |"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="limit,distance,ctrl-c")
    parser.add_argument("--limits", default="0.5,1.3")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--interrupt-after", default="1,2,3")
    parser.add_argument("--threads", type=int, default=None)
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
    print("\n".join(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
