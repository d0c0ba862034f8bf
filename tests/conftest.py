"""Shared instance builders for the test suite."""

from __future__ import annotations

import importlib.util
import json
import struct
import sys

import numpy as np
import pytest

#: Tests of the lattice route itself need the optional ``skipsearch[lattice]``
#: extra; the rest of the suite runs without it (``.ci/run`` checks both).
needs_lattice = pytest.mark.skipif(
    importlib.util.find_spec("fpylll") is None,
    reason="needs the optional lattice extra: pip install 'skipsearch[lattice]'",
)


@pytest.fixture
def without_lattice(monkeypatch):
    """Run as if the lattice extra were not installed (``import fpylll`` fails)."""
    monkeypatch.setitem(sys.modules, "fpylll", None)


#: Scripts for mypy (tests/test_typing.py), not tests: never collected or imported.
collect_ignore = ["typing"]


def planted_block(rng, d_in, d_out, m, k, *, c=1.0, skip=None, bias=False):
    """A random block whose flip set ``S`` (|S| = k >= d_in) satisfies
    ``c W_down[:, S] W_up[S, :] = -A`` exactly up to float64 rounding.

    Returns (kwargs for find_absorbing_subset, sorted S, A).
    """
    A = np.eye(d_out, d_in) if skip is None else skip
    W_up = rng.standard_normal((m, d_in))
    W_down = rng.standard_normal((d_out, m))
    S = np.sort(rng.choice(m, size=k, replace=False))
    # pinv(W_up[S]) W_up[S] = I_{d_in} because W_up[S] has full column rank.
    W_down[:, S] = -A @ np.linalg.pinv(W_up[S]) / c
    kwargs = dict(W_up=W_up, W_down=W_down)
    if skip is not None:
        kwargs["skip"] = skip
    if bias:
        kwargs["b_up"] = rng.standard_normal(m)
        kwargs["b_down"] = rng.standard_normal(d_out)
    return kwargs, S, A


@pytest.fixture
def rng():
    return np.random.default_rng(20260501)


def interrupt(setup: str, call: str, wait: float = 0.5):
    """Run ``setup`` then ``call`` in a fresh interpreter, send SIGINT
    ``wait`` seconds into the call, and return (exit code, stdout, seconds
    from the signal to the exit). Exit code 3 means KeyboardInterrupt was
    raised by the call."""
    import signal
    import subprocess
    import sys
    import textwrap
    import time

    script = textwrap.dedent(setup) + textwrap.dedent(
        f"""
            import sys
            print("started", flush=True)
            try:
                {call}
            except KeyboardInterrupt:
                print("interrupted", flush=True)
                sys.exit(3)
            print("finished", flush=True)
            """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "started", proc.stderr.read()
    time.sleep(wait)
    sent = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:  # pragma: no cover - the failure being tested
        proc.kill()
        pytest.fail("Ctrl-C was ignored")
    return proc.returncode, out.strip(), time.perf_counter() - sent


def write_bf16_safetensors(path, tensors: dict) -> None:
    """Write ``tensors`` as a BF16 safetensors file (safetensors.numpy
    cannot): each float32 value keeps its top 16 bits, i.e. is truncated to
    bfloat16."""
    header, blobs, offset = {}, [], 0
    for key, value in tensors.items():
        bits = np.ascontiguousarray(value, dtype=np.float32).view(np.uint32)
        blob = (bits >> 16).astype("<u2").tobytes()
        header[key] = {
            "dtype": "BF16",
            "shape": list(np.shape(value)),
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))
