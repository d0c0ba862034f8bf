"""Verdicts, bounds and certificates do not depend on the floating-point
environment a process was left in.

A shared library built with ``-ffast-math`` turns on flush-to-zero and
denormals-are-zero in the thread that loads it. The tests build such a
library with the C compiler (skipped when there is none, or on a processor
whose control register the library below does not know), load it into a
fresh interpreter, and decide blocks at subnormal scale there and in a clean
interpreter: every field must agree, and agree with the exact answer.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import skipsearch
from skipsearch import _core
from skipsearch._float_env import standard_float_env

MACHINE = platform.machine().lower()
CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")

# A constructor that sets the flushing modes explicitly, on top of whatever
# -ffast-math links in (compilers differ on whether a shared library gets
# crtfastmath), and rounds towards +infinity.
FLUSH_SOURCE = {
    "x86_64": """
        #include <xmmintrin.h>
        __attribute__((constructor)) static void flush(void) {
            _mm_setcsr(_mm_getcsr() | 0x8040 | 0x4000);  /* FTZ, DAZ, round up */
        }
        double fast_sum(const double *x, int n) {
            double s = 0; for (int i = 0; i < n; i++) s += x[i]; return s;
        }
    """,
    "aarch64": """
        #include <stdint.h>
        __attribute__((constructor)) static void flush(void) {
            uint64_t fpcr;
            __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
            fpcr |= (1ull << 24) | (1ull << 22);  /* FZ, round up */
            __asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
        }
        double fast_sum(const double *x, int n) {
            double s = 0; for (int i = 0; i < n; i++) s += x[i]; return s;
        }
    """,
}
ARCH = {"amd64": "x86_64", "arm64": "aarch64"}.get(MACHINE, MACHINE)

# Runs in a fresh interpreter; argv[1] is the library to load, or "".
SCRIPT = textwrap.dedent(
    """
    import ctypes, json, sys
    import numpy as np
    import skipsearch

    # Every input is built before the library is loaded: under flush-to-zero
    # the arithmetic that builds them would flush them already.
    tiny = 2.0 ** -1060  # subnormal
    rng = np.random.default_rng(7)
    eye2, eye3, eye4 = tiny * np.eye(2), tiny * np.eye(3), tiny * np.eye(4)
    blocks = {
        # 1. A skip that is a nonzero subnormal matrix.
        "subnormal_skip": (rng.normal(size=(6, 3)), rng.normal(size=(3, 6)), eye3),
        # 2. An exact flip set at subnormal scale.
        "subnormal_flip_set": (
            np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
            np.array([[-tiny, 0.0, 0.5 * tiny], [0.0, -tiny, 0.0]]),
            eye2,
        ),
        # 3. No flip set at subnormal scale.
        "no_flip_set": (rng.normal(size=(8, 4)), tiny * rng.normal(size=(4, 8)), eye4),
        # 4. Every factor subnormal: its rows square to zero, yet every
        # neuron is alive (a dead-neuron test on squares said otherwise).
        "subnormal_weights": (tiny * rng.normal(size=(6, 3)), tiny * rng.normal(size=(3, 6)), eye3),
    }
    baseline_block = (np.eye(2), -eye2, eye2)
    subset_sum_system = (np.array([[tiny, 2 * tiny, 3 * tiny]]), np.array([4 * tiny]))

    if sys.argv[1]:
        ctypes.CDLL(sys.argv[1])
    flushed = sys.float_info.min / 3 == 0.0
    out = {"flushed": flushed}

    def subset(r):
        return None if r.subset is None else r.subset.tolist()

    for name, (W_up, W_down, A) in blocks.items():
        r = skipsearch.find_absorbing_subset(W_up, W_down, skip=A, bracket=False)
        cert = (skipsearch.check_certificate(r.certificate, W_up, W_down, skip=A)
                if r.certificate is not None else None)
        out[name] = [r.verdict, r.argument, r.status, subset(r), r.residual, r.distance_bound,
                     r.relaxation_distance, cert, r.genericity.dead_neurons.tolist()]
        g = skipsearch.find_absorbing_subset(W_up, W_down, skip=A, activation="gelu")
        out[name + "_gelu"] = [g.verdict, g.status, g.genericity.dead_neurons.tolist()]
    W_up, W_down, A = blocks["subnormal_flip_set"]
    out["check_certificate_absorbable"] = skipsearch.check_certificate(A, W_up, W_down, skip=A)
    r = skipsearch.baseline.find_absorbing_subset(*baseline_block[:2], skip=baseline_block[2])
    out["baseline"] = [r.verdict, subset(r)]
    s = skipsearch.subset_sum(*subset_sum_system)
    out["subset_sum"] = [s.status, None if s.solution is None else s.solution.tolist()]

    # The interpreter's own environment is left as it was found.
    out["flushed_after"] = sys.float_info.min / 3 == 0.0
    print(json.dumps(out))
    """
)


def _run(library: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, library],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def fast_math_library(tmp_path_factory: pytest.TempPathFactory) -> str:
    if CC is None:
        pytest.skip("no C compiler to build a -ffast-math library")
    if ARCH not in FLUSH_SOURCE:
        pytest.skip(f"no flushing library for {MACHINE}")
    root = tmp_path_factory.mktemp("fastmath")
    src, lib = root / "fastmath.c", root / "libfastmath.so"
    src.write_text(FLUSH_SOURCE[ARCH])
    built = subprocess.run(
        [CC, "-O2", "-ffast-math", "-shared", "-fPIC", str(src), "-o", str(lib)],
        capture_output=True,
        text=True,
    )
    if built.returncode != 0:
        pytest.skip(f"could not build the -ffast-math library: {built.stderr[:200]}")
    return str(lib)


def test_a_fast_math_library_changes_nothing(fast_math_library: str) -> None:
    clean, dirty = _run(""), _run(fast_math_library)
    assert clean["flushed"] is False
    assert dirty["flushed"] is True, "the library did not set flush-to-zero"
    assert dirty["flushed_after"] is True, "skipsearch must restore the caller's environment"
    for key in clean:
        if key not in ("flushed", "flushed_after"):
            assert dirty[key] == clean[key], key
    # And the clean answers are the exact ones.
    assert clean["subnormal_skip"][1] != "zero_skip"
    assert clean["subnormal_flip_set"][0] == "absorbable"
    assert clean["subnormal_flip_set"][3] == [0, 1]
    assert clean["subnormal_flip_set"][4] <= 1e-8
    assert clean["check_certificate_absorbable"] == 0.0
    assert clean["baseline"] == ["absorbable", [0, 1]]
    assert clean["subset_sum"] == ["feasible", [1, 0, 1]]
    # Weights at subnormal scale: decided, every neuron alive, in both modes.
    assert clean["subnormal_weights"][0] == "not_absorbable"
    assert clean["subnormal_weights"][8] == []
    assert clean["subnormal_weights_gelu"] == ["not_absorbable", "complete", []]


def test_the_environment_is_restored_after_a_call() -> None:
    saved = _core.enter_float_env()
    _core.restore_float_env(saved)
    with standard_float_env():
        assert sys.float_info.min / 3 != 0.0
    r = skipsearch.find_absorbing_subset(np.eye(2), -np.eye(2))
    assert r.verdict == "absorbable"
    assert sys.float_info.min / 3 != 0.0


def test_a_library_loaded_in_process_is_undone_for_the_call(fast_math_library: str) -> None:
    """In this process too: load the library, decide, and put the
    environment back for the rest of the test run."""
    import ctypes

    tiny = 2.0**-1060
    W_down, skip = -tiny * np.eye(2), tiny * np.eye(2)  # built before flushing
    saved = _core.enter_float_env()  # the clean state, to restore below
    try:
        ctypes.CDLL(fast_math_library)
        assert sys.float_info.min / 3 == 0.0
        r = skipsearch.find_absorbing_subset(np.eye(2), W_down, skip=skip)
        assert r.verdict == "absorbable"
        assert r.subset.tolist() == [0, 1]
        assert sys.float_info.min / 3 == 0.0, "the caller's environment is restored"
    finally:
        _core.restore_float_env(saved)
    assert sys.float_info.min / 3 != 0.0
