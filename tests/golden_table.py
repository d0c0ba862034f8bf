"""Stored tables of decisions, which hold a refactor to identical answers.

A table maps a hash of a call's inputs to what the call decided: verdicts,
statuses, subsets, method steps, node counts and the proven bounds. The
tests that make the calls observe them; at the end of the module the table
is compared with the one stored in ``tests/golden/``, or, with
``SKIPSEARCH_GOLDEN_RECORD=1`` in the environment, stored anew.

On the machine that recorded the table everything is compared exactly
(the floats to 1e-12): the core's products have a fixed order, so they are
bit-identical for any thread count. Another CPU rounds differently in two
places, the core's SIMD kernel and the kernels OpenBLAS picks for numpy's
BLAS and LAPACK calls by CPU model (the inputs that tests build with
``np.linalg.inv``, the least-squares relaxation of small blocks). A
different last bit there can move a relaxation distance, end a decision
with the certificate instead of the enumeration, or change the node count.
So a table stores the fingerprint of the platform it was recorded on
(``platform()``), and on any other only the fields that no rounding may
change are compared: ``verdict``, ``status`` and ``exact``. The fixed
instances of ``test_golden.py`` are keyed by name, so that those built by
BLAS calls find their row on every CPU; the examples of the exact-truth
tests are keyed by their bytes, and on another CPU the rows whose inputs
came out of BLAS with other bits are not seen (a table skips when fewer
than half of its rows are).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

DIR = Path(__file__).resolve().parent / "golden"
RECORD = os.environ.get("SKIPSEARCH_GOLDEN_RECORD") == "1"


def key(*parts: Any) -> str:
    """A hash of a call's inputs: arrays by dtype, shape and bytes, the rest
    by ``repr``. Inputs that a test builds with BLAS calls have other bytes
    on another CPU; tables of fixed instances key them by name instead."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, (np.ndarray, np.generic)) or (
            isinstance(part, (list, tuple)) and part and not isinstance(part[0], str)
        ):
            a = np.asarray(part)
            if a.dtype == object:
                h.update(repr(a.tolist()).encode())
            else:
                h.update(f"{a.dtype.str}{a.shape}".encode())
                h.update(np.ascontiguousarray(a).tobytes())
        else:
            h.update(repr(part).encode())
        h.update(b"|")
    return h.hexdigest()[:32]


def _float(x: Any) -> Any:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else repr(x)


def absorption_row(r: Any) -> dict[str, Any]:
    """What a decision established, without its timings."""
    s = r.stats
    return {
        "verdict": r.verdict,
        "status": r.status,
        "argument": r.argument,
        "subset": None if r.subset is None else [int(i) for i in r.subset],
        "best_subset": None if r.best_subset is None else [int(i) for i in r.best_subset],
        "residual": _float(r.residual),
        "relaxation_distance": _float(r.relaxation_distance),
        "distance_bound": _float(r.distance_bound),
        "tolerance": _float(r.tolerance),
        "method": list(s.method),
        "nodes": int(s.nodes),
        "gram_rank": s.gram_rank,
        "components": list(s.components),
        "candidates": int(s.candidates),
    }


def subset_sum_row(r: Any) -> dict[str, Any]:
    return {
        "status": r.status,
        "solution": None if r.solution is None else np.flatnonzero(r.solution).tolist(),
        "exact": bool(r.exact),
        "method": list(r.method),
        "nodes": int(r.nodes),
        "residual": _float(r.residual),
    }


def platform() -> str:
    """The core's SIMD kernel here, and a hash of what numpy's BLAS and
    LAPACK return on fixed products whose last bits depend on the kernels
    (and their summation order) OpenBLAS chose for this CPU."""
    import skipsearch

    r = skipsearch.find_absorbing_subset(
        np.eye(3), -np.eye(3) + 0.5, distance=True, time_limit=10.0
    )
    rng = np.random.default_rng(20261202)
    a, b = rng.standard_normal((67, 53)), rng.standard_normal((53, 41))
    h = hashlib.sha256()
    for x in (
        a @ b,
        a.T @ a[:, 0],
        np.linalg.inv(a[:53]),
        np.linalg.lstsq(a, rng.standard_normal(67), rcond=None)[0],
        np.linalg.svd(a, compute_uv=False),
        np.linalg.solve(a[:53], b),
    ):
        h.update(np.ascontiguousarray(x).tobytes())
    return f"{r.stats.kernel} blas:{h.hexdigest()[:16]}"


#: The row fields that hold on every platform: what was decided. A
#: rounding elsewhere may change the path, the bounds and the node counts.
_PLATFORM_FREE = ("verdict", "status", "exact")


def _differences(
    old: Any, new: Any, same_platform: bool, path: str = "", ignore: tuple[str, ...] = ()
) -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for k in sorted(set(old) | set(new)):
            if (not same_platform and k not in _PLATFORM_FREE) or k in ignore:
                continue
            out += _differences(old.get(k), new.get(k), same_platform, f"{path}.{k}")
        return out
    if isinstance(old, float) and isinstance(new, float):
        if math.isclose(old, new, rel_tol=1e-12, abs_tol=1e-300):
            return []
    elif old == new:
        return []
    return [f"{path}: stored {old!r}, now {new!r}"]


class Table:
    """The rows one test module observes, and the stored table."""

    def __init__(self, name: str, ignore: tuple[str, ...] = ()) -> None:
        self.path = DIR / f"{name}.json.gz"
        self.rows: dict[str, Any] = {}
        #: Row fields recorded but not compared: those that depend on time.
        self.ignore = ignore

    def observe(self, key: str, row: Any) -> None:
        self.rows[key] = row

    def finish(self, *, require_all: bool) -> list[str]:
        """Store the rows (recording), or the differences from the stored
        table. With ``require_all`` every stored row must have been seen
        again (fixed inputs); otherwise only the rows seen both times are
        compared (inputs drawn by hypothesis, whose examples change between
        its releases), and the test is skipped when fewer than half of the
        stored rows were seen."""
        if RECORD:
            DIR.mkdir(exist_ok=True)
            payload = {"platform": platform(), "rows": self.rows}
            text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
            # mtime 0: the same table gives the same bytes.
            self.path.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
            return []
        with gzip.open(self.path, "rt", encoding="utf-8") as f:
            stored = json.load(f)
        same_platform = stored.get("platform") == platform()
        old = stored["rows"]
        problems = []
        common = sorted(set(old) & set(self.rows))
        if require_all:
            problems += [f"{k}: stored, not seen now" for k in sorted(set(old) - set(self.rows))]
        elif len(common) < len(old) // 2:
            import pytest

            pytest.skip(
                f"only {len(common)} of {len(old)} stored rows seen again (a part of the module "
                "ran, or hypothesis draws other examples now): record the table again "
                "(SKIPSEARCH_GOLDEN_RECORD=1) before changing the engine"
            )
        for k in common:
            problems += [
                f"{k}{p}"
                for p in _differences(old[k], self.rows[k], same_platform, ignore=self.ignore)
            ]
        return problems
