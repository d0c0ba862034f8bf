"""skipsearch.subset_sum on QOBLIB's market-split instances, with
solvediophant beside it when an ``sd2`` binary is given.

    python benches/market_split.py                          # ms_06 .. ms_10_050
    python benches/market_split.py --sets ms_08 --time-limit 90
    python benches/market_split.py --sd2 /path/to/sd2       # side by side
    python benches/market_split.py --sets ms_06 --others highs cpsat

One-time imports are paid before the first timing (``warm_up``). The
instances (``benches/data/qoblib_marketsplit``, CC BY 4.0, see the README
there) are all feasible. Each solution is re-checked, ``A x = b``, here.
skipsearch runs with ``threads`` = all cores and the per-instance time
limit; a limit status counts at that limit. With ``--sd2``, solvediophant
(built from Wassermann's public source with ``make``, never required) runs
on the same instance in the same run, as its own QOBLIB script runs it (see
``run_sd2``); the ratio column is skipsearch's time over its. An instance
that both solve in under a second is run ``--repeat`` times by each
(default 5), in turn, and the least time of each is reported. The
CPU heads the output. ``--others highs cpsat`` adds HiGHS and CP-SAT, run as
``subset_sum_table.py`` runs them (``pip install ".[bench]"``); they stall
from ms_07 on, so each costs up to the time limit per instance.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from machine import cpu

DATA = Path(__file__).resolve().parent / "data" / "qoblib_marketsplit"
SETS = ("ms_06", "ms_07", "ms_08", "ms_09", "ms_10_050")
#: Parts of ms_09, as the README's tables split it.
SUBSETS = ("ms_09_050", "ms_09_100", "ms_09_200")


def read_instance(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """``(A, b)`` of a QOBLIB ``.dat`` file (comments, ``k n``, then rows of
    ``A`` each followed by its entry of ``b``)."""
    rows = [
        line.split()
        for line in path.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    k, n = (int(x) for x in rows[0])
    body = np.array([[int(x) for x in r] for r in rows[1 : 1 + k]], dtype=np.int64)
    if body.shape != (k, n + 1):
        raise ValueError(f"{path.name}: expected {k} rows of {n + 1} integers")
    return body[:, :n], body[:, n]


def instances(sets: list[str]) -> list[Path]:
    return sorted(p for p in DATA.glob("ms_*.dat") if any(p.name.startswith(s) for s in sets))


def run_skipsearch(A: np.ndarray, b: np.ndarray, limit: float) -> tuple[str, float, str]:
    import skipsearch

    t = time.perf_counter()
    r = skipsearch.subset_sum(A, b, time_limit=limit, threads=os.cpu_count())
    seconds = time.perf_counter() - t
    if r.solution is not None:
        if not np.array_equal(A @ np.asarray(r.solution, dtype=np.int64), b):
            raise AssertionError("skipsearch returned a wrong solution")
        return "solved", seconds, " → ".join(r.method)
    if r.status == "infeasible":
        raise AssertionError("skipsearch called a feasible QOBLIB instance infeasible")
    return r.status, limit, " → ".join(r.method)


def warm_up() -> None:
    """Pay the one-time costs before the first timing: importing fpylll
    (0.1 s warm, 0.5 to 2.5 s from a cold disk cache, measured on the first
    ms_06 instance that reaches the lattice) and starting the core's thread
    pool. solvediophant's start-up, a few milliseconds, stays in its times."""
    import skipsearch

    A = np.array([[3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41] * 3], dtype=np.int64)
    skipsearch.subset_sum(A, np.array([int(A.sum()) // 2]), threads=os.cpu_count())
    with contextlib.suppress(ImportError):
        import fpylll  # noqa: F401  # type: ignore[import-untyped, unused-ignore]


def run_sd2(binary: str, path: Path, limit: float) -> tuple[str, float]:
    """solvediophant as its own QOBLIB script (``QOBLIB/start_parallel.bash``
    in its repository) runs it: ``sd2 -bkz -beta40 -t1`` with depth-first
    and with limited-discrepancy (``-lds20``) enumeration in two processes
    on the ``.dat`` file itself, the first to finish ending both."""
    with tempfile.TemporaryDirectory() as tmp:
        sols = [Path(tmp) / "dfs.sol", Path(tmp) / "lds.sol"]
        base = [binary, "-bkz", "-beta40", "-t1"]
        cmds = [base + [f"-o{sols[0]}", str(path)], base + ["-lds20", f"-o{sols[1]}", str(path)]]
        finished = threading.Event()

        def watch(proc: subprocess.Popen) -> None:
            proc.wait()
            finished.set()

        t = time.perf_counter()
        procs = [
            subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp)
            for c in cmds
        ]
        try:
            # Woken by the first exit, not by polling: a poll every 10 ms
            # added up to 10 ms to solvediophant's time, as much as it
            # takes on ms_06.
            for proc in procs:
                threading.Thread(target=watch, args=(proc,), daemon=True).start()
            if not finished.wait(limit):
                return "time_limit", limit
            seconds = time.perf_counter() - t
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                p.wait()
        solved = any(f.exists() and f.stat().st_size > 0 for f in sols)
        return ("solved" if solved else "no solution"), seconds


def _seconds(t: float) -> str:
    """Seconds with two decimals, three below 0.1 s."""
    return f"{t:.3f}" if t < 0.1 else f"{t:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sets",
        nargs="+",
        default=list(SETS),
        choices=SETS + SUBSETS,
        help="sets to run (ms_09_050, ms_09_100 and ms_09_200 pick parts of ms_09)",
    )
    parser.add_argument("--time-limit", type=float, default=150.0, help="seconds per instance")
    parser.add_argument("--sd2", help="path to solvediophant's sd2 binary (optional)")
    parser.add_argument(
        "--others", nargs="+", default=[], choices=["highs", "cpsat"], help="more solvers"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=5,
        help="runs of each solver, alternating, on an instance that both solve in under 1 s; "
        "the least time of each is reported (default 5)",
    )
    parser.add_argument(
        "--without-lattice",
        action="store_true",
        help="hide fpylll, as an install without the lattice extra (the core's LLL, no BKZ)",
    )
    args = parser.parse_args(argv)
    if args.without_lattice:
        # An import of fpylll now fails as if it were not installed.
        sys.modules["fpylll"] = None  # type: ignore[assignment]
    others = {}
    if args.others:
        from subset_sum_table import SOLVERS

        others = {name: SOLVERS[name] for name in args.others}
    if args.without_lattice:
        lattice = "without the lattice extra"
    elif importlib.util.find_spec("fpylll") is None:
        lattice = "without the lattice extra (fpylll is not installed)"
    else:
        lattice = "with fpylll"
    print(f"CPU: {cpu()}, {os.cpu_count()} cores; time limit {args.time_limit:g} s; {lattice}")
    warm_up()
    extra = "".join(f" {name} |" for name in others)
    print(f"| instance | k × n | skipsearch | seconds | stages | solvediophant | ratio |{extra}")
    print("|---|---|---|---|---|---|---|" + "---|" * len(others))
    for path in instances(args.sets):
        A, b = read_instance(path)
        status, seconds, method = run_skipsearch(A, b, args.time_limit)
        sd = ratio = "—"
        if args.sd2:
            sd_status, sd_seconds = run_sd2(args.sd2, path, args.time_limit)
            if max(seconds, sd_seconds) < 1.0:
                # Runs of 10 to 50 ms vary by 20% on a shared host: the
                # least of a few runs of each, taken in turn.
                for _ in range(args.repeat - 1):
                    again, more, _ = run_skipsearch(A, b, args.time_limit)
                    sd_again, sd_more = run_sd2(args.sd2, path, args.time_limit)
                    if (again, sd_again) != (status, sd_status):
                        raise RuntimeError(f"{path.stem}: another status when run again")
                    seconds, sd_seconds = min(seconds, more), min(sd_seconds, sd_more)
            sd = f"{sd_status} {_seconds(sd_seconds)} s"
            ratio = f"{seconds / max(sd_seconds, 1e-3):.2f}×"
        cells = ""
        for run in others.values():
            other_status, other_seconds = run(A, b, args.time_limit)
            cells += f" {other_status} {other_seconds:.2f} s |"
        k, n = A.shape
        print(
            f"| {path.stem} | {k} × {n} | {status} | {_seconds(seconds)} | {method} | {sd} | "
            f"{ratio} |" + cells,
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
