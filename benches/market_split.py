"""skipsearch.subset_sum on QOBLIB's market-split instances, beside the
run times QOBLIB publishes, with solvediophant run here when an ``sd2``
binary is given.

    python benches/market_split.py                          # ms_06 .. ms_10_050
    python benches/market_split.py --sets ms_08 --time-limit 90
    python benches/market_split.py --all --results-csv results.csv
    python benches/market_split.py --sd2 /path/to/sd2       # side by side
    python benches/market_split.py --sets ms_06 --others highs cpsat
    python benches/market_split.py --data /tmp/gen          # generated instances

One-time imports are paid before the first timing (``warm_up``). The 156
instances (``benches/data/qoblib_marketsplit``, ``ms_03`` to ``ms_15``, CC BY
4.0, see the README there) are all feasible. ``--sets`` takes any prefix of
their names (``ms_12``, ``ms_09_200``, ``ms_1``), ``--all`` takes them all.
Each solution is re-checked, ``A x = b``, here. skipsearch runs with
``threads`` = all cores and the per-instance time limit; a limit status
counts at that limit. The columns ``... (pub.)`` are the times published in
QOBLIB's submissions for solvediophant (Xeon E-2288G, whole seconds: ``<1``
is a published 0), Gurobi (EPYC 7542, ms_03 to ms_07) and the GPU variant of
Schroeppel-Shamir (H200, ms_03 to ms_11_050), read from ``published.csv``
there (written by ``qoblib_published.py``); other hardware, so a ratio to
them is no like-for-like comparison. With ``--sd2``, solvediophant (built
from Wassermann's public source with ``make``, never required) runs on the
same instance in the same run, as its own QOBLIB script runs it (see
``run_sd2``); the ratio column is skipsearch's time over its. An instance
that both solve in under a second is run ``--repeat`` times by each (default
5), in turn, and the least time of each is reported. The CPU heads the
output. ``--others highs cpsat`` adds HiGHS and CP-SAT, run as
``subset_sum_table.py`` runs them (``pip install ".[bench]"``); they stall
from ms_07 on, so each costs up to the time limit per instance.

``--results-csv PATH`` writes one row per instance in the columns of
QOBLIB's submissions (``misc/submission_template.csv``, the header
``misc/check_submission.py`` requires); runtimes there are the mean over the
runs, as QOBLIB's CONTRIBUTING.md asks, where the table shows the least.

``--data DIR`` runs the ``.dat`` files of another folder, such as those
``market_split_generators.py --write DIR`` makes: a ``# expected: feasible``
or ``# expected: infeasible`` comment line in a file is checked against the
answer; without one, an instance outside QOBLIB's folder may be either.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

import numpy as np
from machine import cpu

# The package's reader (QOBLIB's .dat format), re-exported for the tests.
from skipsearch._engine.instances import read_instance

DATA = Path(__file__).resolve().parent / "data" / "qoblib_marketsplit"
PUBLISHED = DATA / "published.csv"
#: The sets run when neither ``--sets`` nor ``--all`` is given.
SETS = ("ms_06", "ms_07", "ms_08", "ms_09", "ms_10_050")
#: Published solvers in ``published.csv`` and their column titles.
PUBLISHED_SOLVERS = {
    "solvediophant": "solvediophant (pub.)",
    "Gurobi": "Gurobi (pub.)",
    "Schroeppel-Shamir (GPU)": "GPU S-S (pub.)",
}
#: The header of a QOBLIB submission CSV, in order: ``REQUIRED_COLUMNS`` of
#: QOBLIB's ``misc/check_submission.py`` (= ``misc/submission_template.csv``,
#: commit de698d4).
QOBLIB_COLUMNS = (
    "Problem",
    "Submitter",
    "Date",
    "Reference",
    "Best Objective Value",
    "Optimality Bound",
    "Modeling Approach",
    "# Decision Variables",
    "# Binary Variables",
    "# Integer Variables",
    "# Continuous Variables",
    "# Non-Zero Coefficients",
    "Coefficients Type",
    "Coefficients Range",
    "Workflow",
    "Algorithm Type",
    "# Runs",
    "# Feasible Runs",
    "# Successful Runs",
    "Success Threshold",
    "Hardware Specifications",
    "Total Runtime",
    "CPU Runtime",
    "GPU Runtime",
    "QPU Runtime",
    "Other HW Runtime",
    "Remarks",
)


def expected_answer(path: Path) -> str:
    """What ``path`` should come out as: ``'feasible'`` or ``'infeasible'``
    from a ``# expected: ...`` comment line in it; without one,
    ``'feasible'`` for QOBLIB's instances (all feasible by construction) and
    ``'unknown'`` elsewhere."""
    for line in path.read_text().splitlines():
        match = re.match(r"\s*#\s*expected:\s*(feasible|infeasible)\b", line)
        if match:
            return match.group(1)
    return "feasible" if path.resolve().parent == DATA else "unknown"


def instances(sets: list[str], data: Path = DATA) -> list[Path]:
    """The ``.dat`` files of ``data`` whose names start with one of ``sets``.

    Raises
    ------
    ValueError
        When a prefix in ``sets`` matches no file, naming the sets there.
    """
    files = sorted(data.glob("*.dat"))
    for prefix in sets:
        if not any(p.name.startswith(prefix) for p in files):
            there = sorted({p.stem.rsplit("_", 2)[0] for p in files})
            raise ValueError(
                f"--sets: {prefix!r} matches no .dat file in {data}; sets there: {there}"
            )
    return [p for p in files if any(p.name.startswith(s) for s in sets)]


class Run(NamedTuple):
    """One skipsearch run: status, wall seconds (the limit for a limit
    status), method stages, process CPU seconds (all threads)."""

    status: str
    seconds: float
    method: str
    cpu_seconds: float


def run_skipsearch(A: np.ndarray, b: np.ndarray, limit: float, expected: str = "feasible") -> Run:
    """skipsearch on ``A x = b``; a solution is re-checked, and an answer
    against ``expected`` (``'feasible'``, ``'infeasible'``, ``'unknown'``)
    raises AssertionError."""
    import skipsearch

    cpu_start = time.process_time()
    t = time.perf_counter()
    r = skipsearch.subset_sum(A, b, time_limit=limit, threads=os.cpu_count())
    seconds = time.perf_counter() - t
    cpu_seconds = time.process_time() - cpu_start
    method = " → ".join(r.method)
    if r.solution is not None:
        if not np.array_equal(A @ np.asarray(r.solution, dtype=np.int64), b):
            raise AssertionError("skipsearch returned a wrong solution")
        if expected == "infeasible":
            raise AssertionError("a checked solution of an instance infeasible by construction")
        return Run("solved", seconds, method, cpu_seconds)
    if r.status == "infeasible":
        if expected == "feasible":
            raise AssertionError("skipsearch called a feasible instance infeasible")
        return Run("infeasible", seconds, method, cpu_seconds)
    return Run(r.status, limit, method, cpu_seconds)


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


def load_published(path: Path = PUBLISHED) -> dict[str, dict[str, float]]:
    """``{instance: {solver: seconds}}`` from ``published.csv`` (empty when
    the file is absent)."""
    table: dict[str, dict[str, float]] = {}
    if not path.exists():
        return table
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            table.setdefault(row["instance"], {})[row["solver"]] = float(row["seconds"])
    return table


def published_cells(times: dict[str, float]) -> str:
    """The published columns of one table row; ``<1`` for a published 0
    (solvediophant's times are whole seconds)."""
    cells = ""
    for solver in PUBLISHED_SOLVERS:
        t = times.get(solver)
        cells += " — |" if t is None else (" <1 |" if t == 0 else f" {t:g} |")
    return cells


class Measured(NamedTuple):
    """An instance's runs: every skipsearch run and the status the table shows."""

    runs: list[Run]
    status: str
    method: str


def results_row(path: Path, A: np.ndarray, measured: Measured, args: argparse.Namespace) -> dict:
    """One row of a QOBLIB submission CSV for ``measured`` on ``path``.

    The objective is that of QOBLIB's binary linear model (minimise the sum
    of the slacks ``s >= 0`` in ``A x + s = b``): 0 for a solution; a proven
    infeasibility bounds it below by 1, an integer above 0.
    """
    import skipsearch

    runs = measured.runs
    solved = sum(r.status == "solved" for r in runs)
    nonzero = A[A != 0]
    k, n = A.shape
    objective, bound = {"solved": ("0", "0"), "infeasible": ("N/A", "1")}.get(
        measured.status, ("N/A", "0")
    )
    least = min(r.seconds for r in runs)
    return {
        "Problem": path.stem,
        "Submitter": args.submitter,
        "Date": datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
        "Reference": f"skipsearch {skipsearch.__version__}, benches/market_split.py",
        "Best Objective Value": objective,
        "Optimality Bound": bound,
        "Modeling Approach": f"Multi-dimensional subset sum A x = b, x binary ({k} rows)",
        "# Decision Variables": n,
        "# Binary Variables": n,
        "# Integer Variables": 0,
        "# Continuous Variables": 0,
        "# Non-Zero Coefficients": int(nonzero.size),
        "Coefficients Type": "Integer",
        "Coefficients Range": f"{nonzero.min()} - {nonzero.max()}" if nonzero.size else "N/A",
        "Workflow": f"skipsearch.subset_sum(A, b, time_limit={args.time_limit:g}, "
        f"threads={os.cpu_count()}): {measured.method}",
        "Algorithm Type": "Deterministic",
        "# Runs": len(runs),
        "# Feasible Runs": solved,
        "# Successful Runs": solved,
        "Success Threshold": "0",
        "Hardware Specifications": f"{cpu()}, {os.cpu_count()} cores",
        "Total Runtime": f"{sum(r.seconds for r in runs) / len(runs):.4f}",
        "CPU Runtime": f"{sum(r.cpu_seconds for r in runs) / len(runs):.4f}",
        "GPU Runtime": "N/A",
        "QPU Runtime": "N/A",
        "Other HW Runtime": "N/A",
        "Remarks": f"status {measured.status}; runtimes are the mean of {len(runs)} run(s), "
        f"least {least:.4f} s; a limit status counts at the limit; one-time imports paid "
        "before timing; CPU Runtime is the process's CPU time (all threads); "
        f"{args.lattice}",
    }


def measure(path: Path, args: argparse.Namespace, others: dict) -> tuple[Measured, str]:
    """Run skipsearch (and solvediophant, the other solvers) on ``path``;
    the runs and the table row's cells after the instance name."""
    A, b = read_instance(path)
    expected = expected_answer(path)
    first = run_skipsearch(A, b, args.time_limit, expected)
    runs, seconds = [first], first.seconds
    sd = ratio = "—"
    if args.sd2:
        sd_status, sd_seconds = run_sd2(args.sd2, path, args.time_limit)
        if max(seconds, sd_seconds) < 1.0:
            # Runs of 10 to 50 ms vary by 20% on a shared host: the
            # least of a few runs of each, taken in turn.
            for _ in range(args.repeat - 1):
                again = run_skipsearch(A, b, args.time_limit, expected)
                sd_again, sd_more = run_sd2(args.sd2, path, args.time_limit)
                if (again.status, sd_again) != (first.status, sd_status):
                    raise RuntimeError(f"{path.stem}: another status when run again")
                runs.append(again)
                seconds, sd_seconds = min(seconds, again.seconds), min(sd_seconds, sd_more)
        sd = f"{sd_status} {_seconds(sd_seconds)} s"
        ratio = f"{seconds / max(sd_seconds, 1e-3):.2f}×"
    cells = ""
    for run in others.values():
        other_status, other_seconds = run(A, b, args.time_limit)
        cells += f" {other_status} {other_seconds:.2f} s |"
    k, n = A.shape
    row = (
        f"{k} × {n} | {first.status} | {_seconds(seconds)} | {first.method} | {sd} | {ratio} |"
        + published_cells(args.published.get(path.stem, {}))
        + cells
    )
    return Measured(runs, first.status, first.method), row


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    pick = parser.add_mutually_exclusive_group()
    pick.add_argument(
        "--sets",
        nargs="+",
        default=list(SETS),
        metavar="PREFIX",
        help="name prefixes of the instances to run: ms_03 .. ms_15, ms_09_200, ... "
        f"(default {' '.join(SETS)})",
    )
    pick.add_argument("--all", action="store_true", help="every .dat file of the data folder")
    parser.add_argument("--data", type=Path, default=DATA, help="folder of .dat files (QOBLIB's)")
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
    parser.add_argument(
        "--results-csv", type=Path, help="write QOBLIB's submission CSV, a row per instance"
    )
    parser.add_argument(
        "--submitter", default="skipsearch project", help="the CSV's Submitter column"
    )
    args = parser.parse_args(argv)
    if args.time_limit <= 0:
        parser.error(f"--time-limit: expected seconds > 0, got {args.time_limit:g}")
    if args.repeat < 1:
        parser.error(f"--repeat: expected a count >= 1, got {args.repeat}")
    if not args.data.is_dir():
        parser.error(f"--data: {args.data} is no folder")
    try:
        args.paths = instances([""] if args.all else args.sets, args.data)
    except ValueError as e:
        parser.error(str(e))
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.without_lattice:
        # An import of fpylll now fails as if it were not installed.
        sys.modules["fpylll"] = None  # type: ignore[assignment]
    others = {}
    if args.others:
        from subset_sum_table import SOLVERS

        others = {name: SOLVERS[name] for name in args.others}
    if args.without_lattice:
        args.lattice = "without the lattice extra"
    elif importlib.util.find_spec("fpylll") is None:
        args.lattice = "without the lattice extra (fpylll is not installed)"
    else:
        args.lattice = "with fpylll"
    args.published = load_published()
    print(f"CPU: {cpu()}, {os.cpu_count()} cores; time limit {args.time_limit:g} s; {args.lattice}")
    warm_up()
    titles = "".join(f" {t} |" for t in PUBLISHED_SOLVERS.values())
    extra = "".join(f" {name} |" for name in others)
    print(
        "| instance | k × n | skipsearch | seconds | stages | solvediophant | ratio |"
        + titles
        + extra
    )
    print("|---|---|---|---|---|---|---|" + "---|" * (len(PUBLISHED_SOLVERS) + len(others)))
    writer = None
    with contextlib.ExitStack() as stack:
        if args.results_csv:
            f = stack.enter_context(args.results_csv.open("w", newline=""))
            writer = csv.DictWriter(f, fieldnames=QOBLIB_COLUMNS, lineterminator="\n")
            writer.writeheader()
        for path in args.paths:
            measured, row = measure(path, args, others)
            print(f"| {path.stem} | {row}", flush=True)
            if writer is not None:
                A, _ = read_instance(path)
                writer.writerow(results_row(path, A, measured, args))
                f.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
