"""Time and peak memory of skipsearch against numpy/scipy at real-model scale.

What it measures: for GELU blocks with an identity
skip and shapes (d, m) from MiniLM to Falcon-40B, each of

- ``numpy``: the baseline a user would write,
  ``G = (W_down.T @ W_down) * (W_up @ W_up.T)``, ``scipy.linalg.cho_factor``
  and ``cho_solve`` on ``h_i = -v_i . u_i``, then the relaxation distance
  ``||I + W_down diag(s) W_up||_F / ||I||_F``. Where the Gram matrix has
  2^31 bytes or more (m >= 16384), numpy's syrk and the Cholesky of the
  OpenBLAS that the numpy and scipy wheels bundle segfault, so there the
  row is the GEMM-path Gram factors only, ``W_down.T @ W_down.copy()`` and
  ``W_up @ W_up.T.copy()`` (their product too when it fits the budget);
  its seconds are the two factors' and the table says so;
- ``exact``: ``skipsearch.find_absorbing_subset(..., distance=True,
  bracket=False)``, the exact relaxation distance, compared with numpy's
  (numpy computes the distance only; the bracket on the best flip set,
  which the default ``bracket=None`` adds, is ``bracket_compare.py``'s and
  its seconds are printed beside the row when a run computes one);
- ``exact_no_y``: the same with ``keep_certificate=False``, whose
  certificate is bounded from the Gram matrix without forming ``Y`` (what
  ``skipsearch scan`` runs);
- ``exact_bracket`` (only when ``--runs`` names it): the API's own
  ``find_absorbing_subset(..., distance=True)``, its default bracket on the
  best flip set included, ``Y`` formed;
- ``verdict``: ``find_absorbing_subset(..., distance=False)``, which stops
  at the first certificate that decides and reports its proven bound;

runs in a process of its own. Its peak memory is that process's
``ru_maxrss`` (from ``os.wait4``, so a crashed run has one too), reported
absolute and above the RSS measured right after the weights were built.
Synthetic blocks are float64, built in the child from a fixed seed:
``trained`` (``W_up ~ N(0, 1/d)``, ``W_down ~ N(0, 1/m)``) and ``hard``
(the same plus ``-(1.2 d / m) W_up.T`` in ``W_down``, so that
``sum_i v_i . u_i ~ -1.2 d`` and the certificate ``Y = A`` proves nothing).
The real blocks are the 6 layers of all-MiniLM-L6-v2 (the scan's default
checkpoint), passed to skipsearch as stored (float32, with their biases,
as ``skipsearch scan`` does) and widened to float64 for numpy. Only the
call is timed, best of ``--repeat`` runs (a call over 60 s runs once).
Both skipsearch runs get ``memory_limit`` = the budget (``--memory-gb``)
less the RSS after the weights, so the core's own guard uses the same
budget as this script.

Usage::

    python benches/scale.py                       # shapes up to 1600x6400, and MiniLM
    python benches/scale.py --shapes 384x1536 --repeat 1
    python benches/scale.py --minilm --markdown
    python benches/scale.py --shapes 4096x16384,8192x32768 --repeat 1 --json big.json

Options: ``--shapes`` (comma-separated ``DxM``, or ``all``), ``--kinds``
(``trained,hard``), ``--runs`` (``numpy,exact,verdict``), ``--minilm``
(the MiniLM layers; implied when neither ``--shapes`` nor ``--minilm`` is
given), ``--repeat N``, ``--timeout S`` per run, ``--memory-gb`` (runs
whose estimated memory exceeds it are skipped with the reason; default 90%
of MemAvailable), ``--numpy-full`` (try the full numpy baseline even where
it is known to crash), ``--json FILE`` and ``--markdown`` (the machine
description as a Markdown list, ready for the README). Runs that crash,
are killed or time out are rows of the table, not errors of the script.
For a fair numpy timing on machines that set them, run it under
``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time

from machine import cpu

DEFAULT_SHAPES = ((384, 1536), (768, 3072), (1600, 6400))
BIG_SHAPES = ((4096, 16384), (8192, 32768))
KINDS = ("trained", "hard")
RUNS = ("numpy", "exact", "exact_no_y", "exact_bracket", "verdict")
#: What runs unless ``--runs`` says otherwise (the bracketed call only on request).
DEFAULT_RUNS = ("numpy", "exact", "exact_no_y", "verdict")
#: The runs that ask for the exact distance.
EXACT_RUNS = ("exact", "exact_no_y", "exact_bracket")
MINILM_LAYERS = 6
SEED = 10
HARD_ALIGNMENT = -1.2  # sum_i v_i . u_i ~ HARD_ALIGNMENT * d
CRASH_GRAM_BYTES = 2**31  # numpy/scipy's syrk and Cholesky segfault from here on
ONCE_SECONDS = 60.0  # a call slower than this is not repeated
OVERHEAD = 512 * 2**20  # interpreter, numpy, scipy, skipsearch, BLAS buffers
MB = 2**20
GB = 2**30


# ---------------------------------------------------------------- the child


def _rss_bytes() -> int:
    """Current resident set size of this process (VmRSS)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _max_rss_bytes() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def synthetic_block(d: int, m: int, kind: str):
    """Seeded float64 ``(W_up, W_down)``; ``hard`` is ``trained`` plus the
    alignment term, built without temporaries of the weights' size."""
    import numpy as np

    rng = np.random.default_rng([SEED, d, m])
    W_up = rng.standard_normal((m, d))
    W_up *= 1.0 / np.sqrt(d)
    W_down = rng.standard_normal((d, m))
    W_down *= 1.0 / np.sqrt(m)
    if kind == "hard":
        coef = HARD_ALIGNMENT * d / m
        for j in range(0, m, 1024):
            W_down[:, j : j + 1024] += coef * W_up[j : j + 1024].T
    return W_up, W_down


def minilm_block(layer: int):
    """Layer ``layer`` of the default checkpoint as stored (float32):
    ``(W_up, b_up, W_down, b_down)``."""
    import importlib

    from safetensors import safe_open

    path = importlib.import_module("skipsearch.scan").default_checkpoint() / "model.safetensors"
    names = {
        "W_up": f"layer.{layer}.intermediate.dense.weight",
        "b_up": f"layer.{layer}.intermediate.dense.bias",
        "W_down": f"layer.{layer}.output.dense.weight",
        "b_down": f"layer.{layer}.output.dense.bias",
    }
    out = {}
    with safe_open(str(path), "np") as f:
        keys = list(f.keys())
        for role, suffix in names.items():
            key = next(k for k in keys if k == suffix or k.endswith("." + suffix))
            out[role] = f.get_tensor(key)
    return out["W_up"], out["b_up"], out["W_down"], out["b_down"]


def numpy_distance(W_up, W_down, phase) -> float:
    """The user's baseline: Gram, Cholesky, solve, distance (GELU, c = 1)."""
    import numpy as np
    from scipy.linalg import cho_factor, cho_solve

    phase("Gram (W_down.T @ W_down) * (W_up @ W_up.T)")
    G = (W_down.T @ W_down) * (W_up @ W_up.T)
    h = -np.einsum("pi,ip->i", W_down, W_up)
    phase("cho_factor")
    factor = cho_factor(G)
    phase("cho_solve")
    s = cho_solve(factor, h)
    del G, factor
    phase("distance")
    Y = (W_down * s) @ W_up
    Y[np.diag_indices_from(Y)] += 1.0
    return float(np.linalg.norm(Y) / np.sqrt(Y.shape[0]))


def numpy_gram_factors(W_up, W_down, keep_both: bool, phase) -> dict:
    """The two Gram factors through numpy's GEMM path (the ``.copy()`` keeps
    numpy off syrk); their product only when ``keep_both``."""
    t0 = time.perf_counter()
    phase("W_down.T @ W_down.copy()")
    F1 = W_down.T @ W_down.copy()
    t1 = time.perf_counter()
    if not keep_both:
        del F1
    phase("W_up @ W_up.T.copy()")
    F2 = W_up @ W_up.T.copy()
    t2 = time.perf_counter()
    out = {"seconds_down": t1 - t0, "seconds_up": t2 - t1, "seconds_product": None}
    if keep_both:
        phase("product of the Gram factors")
        F1 *= F2
        out["seconds_product"] = time.perf_counter() - t2
    return out


def skipsearch_call(block: dict, run: str, memory_limit: int):
    import skipsearch

    return skipsearch.find_absorbing_subset(
        activation="gelu",
        distance=run in EXACT_RUNS,
        bracket=False if run in ("exact", "exact_no_y") else None,
        memory_limit=memory_limit,
        keep_certificate=run != "exact_no_y",
        **block,
    )


def _summary(r) -> dict:
    return {
        "verdict": r.verdict,
        "status": r.status,
        "argument": r.argument,
        "relaxation_distance": r.relaxation_distance,
        "distance_bound": r.distance_bound,
        "rounding_bound": r.rounding_bound,
        "method": list(r.stats.method),
        "krylov_steps": getattr(r.stats, "krylov_steps", None),
        "core_seconds": r.stats.seconds,
        "timings": [list(t) for t in r.stats.timings],
        "precision": r.stats.relaxation_precision,
        "gram_rank": r.stats.gram_rank,
    }


def child(spec: dict) -> None:
    """Build the block, run one measurement and append JSON records (phases,
    then the result) to ``spec["out"]``."""
    with open(spec["out"], "a") as log:

        def record(**fields):
            log.write(json.dumps(fields) + "\n")
            log.flush()

        measure(spec, record)


def measure(spec: dict, record) -> None:
    """The body of :func:`child`; ``record(**fields)`` appends a record."""
    import numpy as np
    import scipy.linalg  # noqa: F401  (loaded before the RSS baseline)
    import skipsearch  # noqa: F401

    def phase(name):
        record(phase=name)

    run = spec["run"]
    phase("weights")
    if spec["layer"] is not None:
        W_up, b_up, W_down, b_down = minilm_block(spec["layer"])
        if run == "numpy":
            W_up, W_down = W_up.astype(np.float64), W_down.astype(np.float64)
            block = None
        else:
            block = {"W_up": W_up, "W_down": W_down, "b_up": b_up, "b_down": b_down}
    else:
        W_up, W_down = synthetic_block(spec["d"], spec["m"], spec["kind"])
        block = {"W_up": W_up, "W_down": W_down}
    rss_weights, max_rss_weights = _rss_bytes(), _max_rss_bytes()
    record(rss_weights=rss_weights, max_rss_weights=max_rss_weights)
    m = W_up.shape[0]
    memory_limit = max(spec["budget"] - rss_weights, 0)

    best, result, extra, runs = float("inf"), None, {}, 0
    while runs < spec["repeat"]:
        if run == "numpy" and spec["gram_only"]:
            keep_both = rss_weights + 2 * 8 * m * m + OVERHEAD <= spec["budget"]
            parts = numpy_gram_factors(W_up, W_down, keep_both, phase)
            elapsed = parts["seconds_down"] + parts["seconds_up"]
            if elapsed < best:
                extra = parts
            out = None
        elif run == "numpy":
            start = time.perf_counter()
            out = numpy_distance(W_up, W_down, phase)
            elapsed = time.perf_counter() - start
        else:
            phase(f"find_absorbing_subset ({run})")
            start = time.perf_counter()
            out = skipsearch_call(block, run, memory_limit)
            elapsed = time.perf_counter() - start
            out = _summary(out)
        best, result, runs = min(best, elapsed), out, runs + 1
        if elapsed > ONCE_SECONDS:
            break
    record(
        done=True, seconds=best, runs=runs, result=result, **extra, max_rss_self=_max_rss_bytes()
    )


# --------------------------------------------------------------- the parent


def estimate_bytes(d: int, m: int, run: str, gram_only: bool) -> int:
    """What a run may need at most: the float64 weights, the run's own
    arrays, and a fixed allowance for the interpreter and libraries."""
    weights = 2 * 8 * m * d
    if run == "numpy":
        if gram_only:  # one factor at a time at the least
            return OVERHEAD + weights + 8 * m * m + 8 * m * d
        return OVERHEAD + weights + 3 * 8 * m * m + 8 * m * d
    if run in EXACT_RUNS:  # the core's own estimate of its Gram path
        return OVERHEAD + weights + 16 * m * m
    return OVERHEAD + 2 * weights + 4 * 8 * d * d


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def run_child(spec: dict, timeout: float) -> dict:
    """Run one measurement in a fresh interpreter; return its records plus
    ``state`` (ok, error, crashed, killed, timeout) and ``peak`` (bytes)."""
    with tempfile.TemporaryDirectory(prefix="skipsearch-scale-") as tmp:
        spec = dict(spec, out=os.path.join(tmp, "records.jsonl"))
        log_path = os.path.join(tmp, "child.log")
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            start, delay, timed_out = time.monotonic(), 0.01, False
            try:
                while True:
                    pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                    if pid:
                        break
                    if time.monotonic() - start > timeout:
                        proc.kill()
                        pid, status, usage = os.wait4(proc.pid, 0)
                        timed_out = True
                        break
                    time.sleep(delay)
                    delay = min(delay * 1.5, 0.25)
            except BaseException:  # Ctrl-C: take the child down too
                proc.kill()
                os.wait4(proc.pid, 0)
                proc.returncode = -signal.SIGKILL
                raise
            proc.returncode = os.waitstatus_to_exitcode(status)
        out = {"phase": None}
        if os.path.exists(spec["out"]):
            with open(spec["out"]) as f:
                for line in f:
                    out.update(json.loads(line))
        with open(log_path, errors="replace") as f:
            tail = [line.strip() for line in f if line.strip()]
    out["peak"] = usage.ru_maxrss * 1024
    out["wall"] = time.monotonic() - start
    code = proc.returncode
    if timed_out:
        out["state"], out["why"] = "timeout", f"timed out after {timeout:g} s"
    elif code < 0:
        name = _signal_name(-code)
        out["state"] = "killed" if -code == signal.SIGKILL else "crashed"
        out["why"] = f"{'killed' if out['state'] == 'killed' else 'crashed'} ({name})"
        if -code == signal.SIGKILL:
            out["why"] += ", out of memory?"
    elif code != 0 or not out.get("done"):
        out["state"], out["why"] = "error", tail[-1] if tail else f"exit status {code}"
    else:
        out["state"], out["why"] = "ok", None
    if out["state"] != "ok" and out.get("phase"):
        out["why"] += f", in {out['phase']}"
    return out


def _read_meminfo() -> dict:
    info = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                key, value = line.split(":", 1)
                info[key] = int(value.split()[0]) * 1024
    except OSError:
        pass
    return info


def _openblas_runtime() -> list:
    """Core type and threads of each OpenBLAS loaded in this process, read
    through its own API (threadpoolctl's numbers when it is installed)."""
    try:
        import threadpoolctl

        return [
            f"{p.get('internal_api')} {p.get('version')} "
            f"({os.path.basename(p.get('filepath', '?'))}): "
            f"{p.get('architecture')}, {p.get('num_threads')} threads"
            for p in threadpoolctl.threadpool_info()
        ]
    except ImportError:
        pass
    libs, out = [], []
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "openblas" in path.lower() and path not in libs:
                libs.append(path)
    for path in libs:
        lib = ctypes.CDLL(path)
        found = {}
        for what in ("get_corename", "get_config", "get_num_threads"):
            for prefix in ("openblas_", "scipy_openblas_"):
                for suffix in ("64_", ""):
                    fn = getattr(lib, prefix + what + suffix, None)
                    if fn is not None and what not in found:
                        fn.restype = ctypes.c_int if what == "get_num_threads" else ctypes.c_char_p
                        value = fn()
                        found[what] = value.decode() if isinstance(value, bytes) else value
        out.append(
            f"{os.path.basename(path)}: core {found.get('get_corename', '?')}, "
            f"{found.get('get_num_threads', '?')} threads, {found.get('get_config', '?')}"
        )
    return out


def machine() -> dict:
    """CPU, memory, library versions and BLAS, for the table's header."""
    import numpy as np
    import scipy
    import scipy.linalg  # loads scipy's OpenBLAS, for _openblas_runtime
    import skipsearch

    def blas(module):
        try:
            deps = module.show_config(mode="dicts")["Build Dependencies"]["blas"]
            return f"{deps.get('name')} {deps.get('version')}"
        except (TypeError, KeyError, AttributeError):  # no mode="dicts" (old versions)
            return "unknown"

    mem = _read_meminfo()
    try:
        commit = (
            subprocess.run(
                ["git", "rev-parse", "--short", "HEAD"],
                capture_output=True,
                text=True,
                cwd=os.path.dirname(os.path.abspath(__file__)),
                check=False,
            ).stdout.strip()
            or None
        )
    except OSError:
        commit = None
    return {
        "cpu": cpu(),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_total": mem.get("MemTotal"),
        "memory_available": mem.get("MemAvailable"),
        "load_average": open("/proc/loadavg").read().split()[:3]
        if os.path.exists("/proc/loadavg")
        else None,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "numpy": f"{np.__version__} ({blas(np)})",
        "scipy": f"{scipy.__version__} ({blas(scipy)})",
        "openblas_runtime": _openblas_runtime(),
        "skipsearch": f"{skipsearch.__version__}" + (f" (git {commit})" if commit else ""),
        "env": {
            k: os.environ.get(k)
            for k in (
                "OPENBLAS_CORETYPE",
                "OPENBLAS_L2_SIZE",
                "OPENBLAS_NUM_THREADS",
                "OMP_NUM_THREADS",
            )
        },
    }


def print_machine(info: dict, markdown: bool) -> None:
    def gb(n):
        return f"{n / GB:.1f} GB" if n else "?"

    lines = [
        ("CPU", f"{info['cpu']}, {info['cores']} cores ({info['cores_usable']} usable)"),
        (
            "memory",
            (
                f"{gb(info['memory_total'])} ({gb(info['memory_available'])} available "
                f"at start), load average {' '.join(info['load_average'] or ['?'])}"
            ),
        ),
        (
            "software",
            (
                f"Linux {info['kernel']}, Python {info['python']}, "
                f"numpy {info['numpy']}, scipy {info['scipy']}, "
                f"skipsearch {info['skipsearch']}"
            ),
        ),
        ("OpenBLAS at run time", "; ".join(info["openblas_runtime"]) or "not found"),
        (
            "environment",
            ", ".join(f"{k}={v if v is not None else '<unset>'}" for k, v in info["env"].items()),
        ),
    ]
    for key, value in lines:
        print(f"- **{key}**: {value}" if markdown else f"{key}: {value}")
    print()


def _num(x, digits: int = 10) -> str:
    return "None" if x is None else f"{x:.{digits}g}"


def _seconds(s) -> str:
    if s is None:
        return "—"
    if s >= 100:
        return f"{s:.0f}"
    return f"{s:.{1 if s >= 10 else 2 if s >= 1 else 3}f}" if s >= 0.01 else f"{s:.1e}"


def _ratio(a, b) -> str:
    if a is None or not b:
        return "—"
    return f"{a / b:.2f}×" if a / b >= 0.1 else f"{a / b:.2g}×"


def result_text(rec: dict) -> str:
    if rec["state"] != "ok":
        return rec["why"]
    r = rec["result"]
    if rec["run"] == "numpy":
        if rec.get("gram_only"):
            text = (
                f"Gram factors only: {_seconds(rec['seconds_down'])} s + "
                f"{_seconds(rec['seconds_up'])} s"
            )
            if rec.get("seconds_product") is not None:
                text += f", product {_seconds(rec['seconds_product'])} s"
            return text + " (no Cholesky¹)"
        return f"distance {_num(r)}"
    text = r["verdict"] + ("" if r["status"] == "complete" else f" ({r['status']})")
    if rec["run"] in EXACT_RUNS:
        return f"{text}, distance {_num(r['relaxation_distance'])}"
    steps = r["krylov_steps"]
    return f"{text}, bound ≥ {_num(r['distance_bound'], 6)}, {' → '.join(r['method'])}" + (
        f", {steps} CG step{'s' if steps != 1 else ''}" if steps else ""
    )


def agreement(rec: dict, numpy_rec, exact_rec) -> str:
    if rec["state"] != "ok":
        return "—"
    if rec["run"] in EXACT_RUNS:
        ref = numpy_rec["result"] if numpy_rec and numpy_rec["state"] == "ok" else None
        mine = rec["result"]["relaxation_distance"]
        if ref is None or mine is None:
            return "—"
        return f"rel. diff {abs(mine - ref) / abs(ref):.1e}"
    if rec["run"] == "verdict" and exact_rec and exact_rec["state"] == "ok":
        theirs = exact_rec["result"]["verdict"]
        same = rec["result"]["verdict"] == theirs
        return "same verdict as exact" if same else f"DIFFERS from exact ({theirs})"
    return "—"


def print_table(records: list) -> None:
    by_key = {(r["group"], r["kind"], r["run"]): r for r in records}
    print(
        "| d × m | block | run | seconds | peak MB | above weights MB | result "
        "| time ÷ numpy | peak ÷ numpy | above ÷ numpy | agreement |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for rec in records:
        numpy_rec = by_key.get((rec["group"], rec["kind"], "numpy"))
        exact_rec = by_key.get((rec["group"], rec["kind"], "exact"))
        ok = rec["state"] == "ok"
        peak = rec.get("peak") if rec["state"] != "skipped" else None
        above = peak - rec["rss_weights"] if peak and rec.get("rss_weights") else None
        base_ok = rec["run"] != "numpy" and numpy_rec is not None and numpy_rec["state"] == "ok"
        n_peak = numpy_rec.get("peak") if base_ok else None
        n_above = (n_peak - numpy_rec["rss_weights"]) if n_peak else None
        cells = [
            rec["group"],
            rec["kind"],
            rec["run"],
            _seconds(rec.get("seconds")) if ok else "—",
            f"{peak / MB:.0f}" if peak else "—",
            f"{above / MB:.0f}" if above is not None else "—",
            result_text(rec),
            _ratio(rec.get("seconds"), numpy_rec.get("seconds")) if base_ok and ok else "—",
            _ratio(peak, n_peak) if base_ok and peak else "—",
            _ratio(above, n_above) if base_ok and above is not None else "—",
            agreement(rec, numpy_rec, exact_rec),
        ]
        print("| " + " | ".join(cells) + " |")


def minilm_totals(records: list) -> list:
    """One row per run over the MiniLM layers: total seconds, largest peak,
    the verdicts, and for ``verdict`` how many agree with ``exact``."""
    layers = [r for r in records if r["layer"] is not None]
    exact = {
        r["layer"]: r["result"]["verdict"]
        for r in layers
        if r["run"] == "exact" and r["state"] == "ok"
    }
    rows = []
    for run in RUNS:
        recs = [r for r in layers if r["run"] == run]
        if not recs:
            continue
        ok = [r for r in recs if r["state"] == "ok"]
        row = {
            "run": run,
            "layers": len(recs),
            "ok": len(ok),
            "seconds": sum(r["seconds"] for r in ok) if len(ok) == len(recs) else None,
            "peak": max((r["peak"] for r in ok), default=None),
            "verdicts": {},
            "same_as_exact": None,
        }
        for r in ok:
            if run != "numpy":
                v = r["result"]["verdict"]
                row["verdicts"][v] = row["verdicts"].get(v, 0) + 1
        if run == "verdict":
            row["same_as_exact"] = sum(
                r["result"]["verdict"] == exact[r["layer"]] for r in ok if r["layer"] in exact
            )
        rows.append(row)
    return rows


def print_minilm_totals(rows: list, exact_layers: int) -> None:
    base = next((r for r in rows if r["run"] == "numpy" and r["seconds"] is not None), None)
    for row in rows:
        if row["ok"] < row["layers"]:
            text = f"{row['layers'] - row['ok']} of {row['layers']} runs failed"
        elif row["run"] == "numpy":
            text = "sum over the layers"
        else:
            text = ", ".join(f"{n} {v}" for v, n in sorted(row["verdicts"].items()))
        agree = "—"
        if row["same_as_exact"] is not None and exact_layers:
            agree = f"{row['same_as_exact']} of {exact_layers} verdicts as exact"
        use = base if base is not None and row is not base else None
        print(
            "| "
            + " | ".join(
                [
                    "384x1536",
                    f"MiniLM, {row['layers']} layers",
                    row["run"],
                    _seconds(row["seconds"]),
                    f"{row['peak'] / MB:.0f}" if row["peak"] else "—",
                    "—",
                    text,
                    _ratio(row["seconds"], use["seconds"]) if use else "—",
                    _ratio(row["peak"], use["peak"]) if use else "—",
                    "—",
                    agree,
                ]
            )
            + " |"
        )


def parse_shapes(text: str) -> list:
    if text == "all":
        return list(DEFAULT_SHAPES + BIG_SHAPES)
    shapes = []
    for part in text.split(","):
        d, _, m = part.strip().lower().partition("x")
        shapes.append((int(d), int(m)))
    return shapes


def parse_list(text: str, allowed: tuple, what: str) -> list:
    items = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in items if t not in allowed]
    if bad:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {', '.join(bad)}; choose from {', '.join(allowed)}"
        )
    return items


def plan(args) -> list:
    """The runs, in order: per shape and kind, numpy first (the reference)."""
    jobs = []
    for d, m in args.shapes:
        for kind in args.kinds:
            for run in args.runs:
                jobs.append(
                    {"group": f"{d}x{m}", "kind": kind, "run": run, "d": d, "m": m, "layer": None}
                )
    if args.minilm:
        for layer in range(MINILM_LAYERS):
            for run in args.runs:
                jobs.append(
                    {
                        "group": "384x1536",
                        "kind": f"MiniLM L{layer}",
                        "run": run,
                        "d": 384,
                        "m": 1536,
                        "layer": layer,
                    }
                )
    return jobs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--shapes",
        type=parse_shapes,
        default=None,
        help="comma-separated DxM, or 'all' (default: all up to 1600x6400)",
    )
    parser.add_argument(
        "--kinds",
        type=lambda t: parse_list(t, KINDS, "kind"),
        default=list(KINDS),
        help="trained,hard",
    )
    parser.add_argument(
        "--runs",
        type=lambda t: parse_list(t, RUNS, "run"),
        default=list(DEFAULT_RUNS),
        help="numpy,exact,exact_no_y,verdict (and exact_bracket)",
    )
    parser.add_argument(
        "--minilm",
        action="store_true",
        help="the 6 MiniLM layers (default when --shapes is not given)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per call, best kept")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per process")
    parser.add_argument(
        "--memory-gb",
        type=float,
        default=None,
        help="skip runs estimated above this (default: 90%% of MemAvailable)",
    )
    parser.add_argument(
        "--numpy-full",
        action="store_true",
        help="full numpy baseline even where its Gram has 2^31 bytes or more",
    )
    parser.add_argument("--json", metavar="FILE", help="write machine and records as JSON")
    parser.add_argument(
        "--markdown", action="store_true", help="machine description as a Markdown list"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(json.loads(args.child))
        return 0
    if args.shapes is None:
        args.shapes = [] if args.minilm else list(DEFAULT_SHAPES)
        args.minilm = True
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")

    info = machine()
    budget = int(args.memory_gb * GB) if args.memory_gb else int(0.9 * info["memory_available"])
    info["memory_budget"] = budget
    print_machine(info, args.markdown)

    jobs = plan(args)
    records = []
    for n, job in enumerate(jobs, 1):
        d, m = job["d"], job["m"]
        gram_only = job["run"] == "numpy" and 8 * m * m >= CRASH_GRAM_BYTES and not args.numpy_full
        need = estimate_bytes(d, m, job["run"], gram_only)
        rec = dict(job, gram_only=gram_only, estimate=need)
        if need > budget:
            rec["state"] = "skipped"
            rec["why"] = (
                f"skipped: needs about {need / GB:.1f} GB, budget {budget / GB:.1f} GB"
                " (--memory-gb)"
            )
        else:
            spec = dict(job, repeat=args.repeat, budget=budget, gram_only=gram_only)
            rec.update(run_child(spec, args.timeout))
        records.append(rec)
        summary = (
            f"{_seconds(rec.get('seconds'))} s, peak {rec['peak'] / MB:.0f} MB"
            if rec["state"] == "ok"
            else rec["why"]
        )
        detail = result_text(rec) if rec["state"] == "ok" else ""
        print(
            f"[{n}/{len(jobs)}] {job['group']} {job['kind']} {job['run']}: {summary}"
            + (f"; {detail}" if detail else ""),
            file=sys.stderr,
            flush=True,
        )

    print_table(records)
    totals = minilm_totals(records)
    print_minilm_totals(
        totals,
        sum(r["layer"] is not None and r["run"] == "exact" and r["state"] == "ok" for r in records),
    )
    print()
    calls = (
        "one call"
        if args.repeat == 1
        else (f"the best of {args.repeat} calls (one when a call takes over {ONCE_SECONDS:.0f} s)")
    )
    print(
        f"Each run is a process of its own; seconds are {calls}, weights built beforehand. "
        "Peak MB is the process's maximum RSS; above weights subtracts the RSS right after "
        "the weights were built (imports included). Ratios above 1× mean skipsearch took "
        "longer or more memory than numpy."
    )
    if any(r.get("gram_only") and r["state"] != "skipped" for r in records):
        print()
        print(
            "¹ From m = 16384 the Gram matrix has 2^31 bytes or more, and numpy's syrk "
            "(`W_down.T @ W_down`), `np.linalg.cholesky` and `scipy.linalg.cho_factor` "
            "segfault in the OpenBLAS that the numpy and scipy wheels bundle (numpy/numpy#19685,"
            " OpenMathLib/OpenBLAS#352). The numpy row there is the two Gram factors through "
            "the GEMM path (`W_down.T @ W_down.copy()`, `W_up @ W_up.T.copy()`), their product "
            "only when both fit the memory budget, and its seconds are the two factors'."
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "machine": info,
                    "args": vars(args) | {"shapes": args.shapes},
                    "records": records,
                    "minilm_totals": totals,
                },
                f,
                indent=1,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
