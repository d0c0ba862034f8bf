"""Time the Rust core against the numpy baseline on the benchmark instances.

Usage::

    python benches/compare.py [--repeat N]

Prints two tables (best of N ``time.perf_counter`` runs each):

1. the flip-set search at m = 12, 16, 20 (planted and infeasible degenerate
   instances): Rust seconds, baseline seconds, ratio baseline / Rust;
2. the relaxation on a d = 384, m = 1536 GELU block: Rust (threads=None and
   threads=1) against the bare numpy Gram solve, ratio numpy / Rust.

Verdicts are checked to agree between the backends before anything is timed.
For a fair numpy timing on machines that set them, unset the OpenBLAS
variables in the command: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE
python benches/compare.py``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import instances
import numpy as np
import skipsearch
from skipsearch import baseline


def best_of(fn, repeat: int, budget: float = 0.25, cap: int = 200):
    """Best wall time of at least ``repeat`` runs; fast calls are repeated
    until ``budget`` seconds are spent (at most ``cap`` runs).

    Returns ``(best wall seconds, best core seconds, last result)``, the core
    seconds being ``result.stats.seconds`` where the result has them."""
    best, core, out, runs, spent = float("inf"), float("inf"), None, 0, 0.0
    while runs < repeat or (spent < budget and runs < cap):
        t0 = time.perf_counter()
        out = fn()
        elapsed = time.perf_counter() - t0
        best, runs, spent = min(best, elapsed), runs + 1, spent + elapsed
        stats = getattr(out, "stats", None)
        if stats is not None and stats.seconds is not None:
            core = min(core, stats.seconds)
    return best, core, out


def search_table(repeat: int) -> None:
    act = instances.SEARCH_ACTIVATION
    print(
        "Flip-set search (d = 2 integer weights, relaxation distance ~1e-16, "
        f"activation {act}; best of {repeat})"
    )
    header = (
        f"{'m':>3}  {'instance':<10}  {'verdict':<15}  {'rust s':>10}  {'baseline s':>10}  "
        f"{'ratio b/r':>9}  {'core s':>9}  {'rust nodes':>10}  {'base nodes':>10}"
    )
    print(header)
    print("-" * len(header))
    for inst in instances.search_instances():

        def rust(inst=inst):
            return skipsearch.find_absorbing_subset(inst.W_up, inst.W_down, activation=act)

        def base(inst=inst):
            return baseline.find_absorbing_subset(inst.W_up, inst.W_down, activation=act)

        tr, cr, r = best_of(rust, repeat)
        tb, _, b = best_of(base, repeat)
        if not (r.verdict == b.verdict == inst.expected):
            raise SystemExit(
                f"{inst.name}: rust says {r.verdict}, baseline says {b.verdict}, "
                f"expected {inst.expected}"
            )
        print(
            f"{inst.m:>3}  {inst.kind:<10}  {r.verdict:<15}  {tr:>10.5f}  {tb:>10.5f}  "
            f"{tb / tr:>9.1f}  {cr:>9.6f}  {r.stats.nodes:>10}  {b.stats.nodes:>10}"
        )
    print("core s: the Rust core's own time (best stats.seconds); rust s is the wall time of the")
    print("Python call, which includes input validation and the binding's wait for the worker.")
    print()


def relaxation_table(repeat: int) -> None:
    W_up, W_down = instances.relaxation_block()
    d, m = W_down.shape
    act = instances.RELAX_ACTIVATION
    print(
        f"Relaxation (d = {d}, m = {m}, Gaussian float64 / sqrt(d), identity skip, "
        f"activation {act}; best of {repeat})"
    )
    tn, _, dn = best_of(lambda: instances.numpy_relaxation(W_up, W_down), repeat)
    header = (
        f"{'backend':<20}  {'seconds':>9}  {'numpy s':>9}  {'ratio n/r':>9}  "
        f"{'core s':>9}  {'distance':>20}  {'rel. diff':>9}"
    )
    print(header)
    print("-" * len(header))
    for threads in (None, 1):
        tr, cr, r = best_of(
            lambda threads=threads: skipsearch.find_absorbing_subset(
                W_up, W_down, activation=act, threads=threads
            ),
            repeat,
        )
        if r.argument != "certificate":
            raise SystemExit(
                f"rust (threads={threads}) ended with {r.argument}, not the certificate"
            )
        diff = abs(r.relaxation_distance - dn) / abs(dn)
        if diff > 1e-6:
            raise SystemExit(f"rust distance {r.relaxation_distance} != numpy distance {dn}")
        print(
            f"{'rust threads=' + str(threads):<20}  {tr:>9.4f}  {tn:>9.4f}  {tn / tr:>9.2f}  "
            f"{cr:>9.4f}  {r.relaxation_distance:>20.16f}  {diff:>9.1e}"
        )
    print(
        f"{'numpy (cho_solve)':<20}  {tn:>9.4f}  {tn:>9.4f}  {1.0:>9.2f}  {'':>9}  {dn:>20.16f}  {'':>9}"
    )
    print("The Rust call also validates the inputs, runs the genericity check (an m x m Gram")
    print("of W_up) and returns the d x d certificate; numpy does the bare Gram solve.")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (best is kept)")
    args = parser.parse_args()
    blas = {k: os.environ.get(k, "<unset>") for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    print(
        f"skipsearch {skipsearch.__version__}, numpy {np.__version__}, "
        f"Python {platform.python_version()}, {os.cpu_count()} cores, "
        + ", ".join(f"{k}={v}" for k, v in blas.items())
    )
    print()
    search_table(args.repeat)
    relaxation_table(args.repeat)


if __name__ == "__main__":
    main()
