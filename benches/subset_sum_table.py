"""skipsearch.subset_sum against HiGHS (scipy.optimize.milp) and OR-Tools
CP-SAT, side by side in one process, on fixed-seed instance families.

    pip install ".[bench]"
    python benches/subset_sum_table.py --time-limit 300            # everything
    python benches/subset_sum_table.py --families MS --ks 3 4 5 --seeds 0 1 2 3 4

Each solver gets the same per-instance time limit; a timeout counts at that
limit. Every solution returned is re-checked against A and b. CP-SAT runs
with as many workers as skipsearch has threads (all cores).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import skipsearch
from families import absorption_int, absorption_split, market_split


def run_skipsearch(A, b, limit):
    t = time.perf_counter()
    r = skipsearch.subset_sum(A, b, time_limit=limit)
    elapsed = time.perf_counter() - t
    status = {"feasible": "feas", "infeasible": "infeas"}.get(r.status, "timeout")
    if r.solution is not None:
        ok = np.array_equal(A @ r.solution, b) if r.exact else np.allclose(A @ r.solution, b)
        assert ok, "skipsearch returned a wrong solution"
    return status, elapsed if status != "timeout" else limit


def run_highs(A, b, limit):
    from scipy.optimize import Bounds, LinearConstraint, milp

    n = A.shape[1]
    t = time.perf_counter()
    res = milp(
        np.zeros(n),
        constraints=LinearConstraint(A, b, b),
        integrality=np.ones(n),
        bounds=Bounds(0, 1),
        options={"time_limit": limit},
    )
    elapsed = time.perf_counter() - t
    if res.status == 0:
        x = np.round(res.x)
        assert np.allclose(A @ x, b), "HiGHS returned a wrong solution"
        return "feas", elapsed
    if res.status == 2:
        return "infeas", elapsed
    return "timeout", limit


def run_cpsat(A, b, limit):
    if not (np.all(np.round(A) == A) and np.all(b == np.round(b))):
        return "n/a", float("nan")
    from ortools.sat.python import cp_model

    k, n = A.shape
    model = cp_model.CpModel()
    x = [model.NewBoolVar(f"x{j}") for j in range(n)]
    for i in range(k):
        model.Add(sum(int(A[i, j]) * x[j] for j in range(n) if A[i, j]) == int(b[i]))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = limit
    solver.parameters.num_workers = os.cpu_count() or 1
    t = time.perf_counter()
    status = solver.Solve(model)
    elapsed = time.perf_counter() - t
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        sol = np.array([solver.Value(v) for v in x])
        assert np.array_equal(A @ sol, b), "CP-SAT returned a wrong solution"
        return "feas", elapsed
    if status == cp_model.INFEASIBLE:
        return "infeas", elapsed
    return "timeout", limit


SOLVERS = {"skipsearch": run_skipsearch, "highs": run_highs, "cpsat": run_cpsat}


def instances(args):
    if "MS" in args.families:
        for k in args.ks:
            for seed in args.seeds:
                yield f"MS({k})", f"s{seed}", *market_split(k, seed)
    if "MSP" in args.families:
        for k in args.ks:
            for seed in args.seeds:
                yield f"MS-planted({k})", f"s{seed}", *market_split(k, seed, planted=True)
    if "ABS" in args.families:
        for d in (3, 4):
            for m in (40, 60, 80):
                for planted in (False, True):
                    for seed in args.seeds:
                        A, b, _, _ = absorption_int(d, m, seed, planted)
                        tag = f"ABS-int({d},{m}){'+S' if planted else ''}"
                        yield tag, f"s{seed}", A, b
    if "SPLIT" in args.families:
        for seed in args.seeds:
            A, b, _, _ = absorption_split(3, 8, seed)
            yield "ABS-split(3,8)", f"s{seed}", A, b


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--families", nargs="+", default=["MS", "MSP", "ABS", "SPLIT"])
    p.add_argument("--ks", nargs="+", type=int, default=[3, 4, 5, 6, 7])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    p.add_argument("--time-limit", type=float, default=300.0)
    p.add_argument("--solvers", nargs="+", default=list(SOLVERS))
    args = p.parse_args()
    print(
        f"skipsearch {skipsearch.__version__}, {os.cpu_count()} cores, limit {args.time_limit:g} s"
    )
    head = f"{'family':<18}{'inst':<5}{'n':>4}" + "".join(f"{s:>20}" for s in args.solvers)
    ratios = {s: {} for s in args.solvers if s != "skipsearch"}
    print(head + "".join(f"{'ratio ' + s:>14}" for s in ratios))
    for family, inst, A, b in instances(args):
        cells, times = [], {}
        for name in args.solvers:
            status, t = SOLVERS[name](A, b, args.time_limit)
            times[name] = (status, t)
            cells.append(f"{status:>8} {t:>9.3f}s" if t == t else f"{status:>19}")
        line = f"{family:<18}{inst:<5}{A.shape[1]:>4}" + "".join(f"{c:>20}" for c in cells)
        if "skipsearch" in times:
            ours = times["skipsearch"][1]
            for name in ratios:
                other = times[name][1]
                r = other / ours if other == other and ours > 0 else float("nan")
                ratios[name].setdefault(
                    family.split("(")[0] + "(" + family.split("(")[1], []
                ).append(r)
                line += f"{r:>14.1f}" if r == r else f"{'n/a':>14}"
        print(line, flush=True)
    print("\nmedian ratio (solver time / skipsearch time; timeouts count at the limit)")
    for name, per in ratios.items():
        groups = dict(per)
        # Whole families too: MS(4..6) together, all ABS-int sizes with and
        # without a planted subset.
        for base in ("MS", "MS-planted"):
            # Only when all three were run: the label names them.
            if all(f"{base}({k})" in per for k in (4, 5, 6)):
                groups[f"{base}(4..6)"] = [r for k in (4, 5, 6) for r in per[f"{base}({k})"]]
        for fam, rs in per.items():
            if fam.startswith("ABS-int"):
                groups.setdefault("ABS-int (all)", []).extend(rs)
        for fam, rs in groups.items():
            rs = [r for r in rs if r == r]
            if rs:
                print(f"  {name:<8} {fam:<18} {statistics.median(rs):10.1f}  ({len(rs)} instances)")


if __name__ == "__main__":
    main()
