"""Resources that run out surface as ordinary exceptions, never as a Rust
panic (which Python sees as a ``BaseException`` that ``except Exception``
does not catch) or an abort, and inputs carry their precision whatever
their form."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import skipsearch
from safetensors.numpy import save_file
from skipsearch.io.checkpoints import CheckpointError

SCRIPT = textwrap.dedent(
    """
    import resource, sys
    import numpy as np, skipsearch
    U = np.random.default_rng(0).normal(size=(6, 4)); V = np.random.default_rng(1).normal(size=(4, 6))
    A = np.array([[0.5, 1.0, 1.5]]); b = np.array([1.5])
    vm = [int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize")][0]
    resource.setrlimit(resource.RLIMIT_AS, (vm + int(sys.argv[1]) * 2**20, resource.RLIM_INFINITY))
    for call in (lambda: skipsearch.find_absorbing_subset(U, V, threads=1),
                 lambda: skipsearch.subset_sum(A, b, threads=1)):
        try:
            call()
            print("answered")
        except Exception as e:
            print("exception", type(e).__name__)
        except BaseException as e:
            print("NOT AN EXCEPTION", type(e).__module__, type(e).__name__)
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc")
@pytest.mark.parametrize("headroom_mib", [1, 2, 4, 8])
def test_a_thread_that_cannot_start_is_an_exception(headroom_mib):
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(headroom_mib)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "NOT AN EXCEPTION" not in proc.stdout, proc.stdout
    assert proc.stdout.count("\n") == 2


def test_a_float16_scalar_skip_carries_float16_precision():
    # The same skip three ways: the default tolerance follows its float16
    # precision in each (sqrt(2^-10) = 2^-5), so the verdicts agree.
    W_up, W_down, alpha = np.eye(2), -0.1 * np.eye(2), np.float16(0.1)
    results = [
        skipsearch.find_absorbing_subset(W_up, W_down, skip=s)
        for s in (alpha, np.array(alpha), np.eye(2, dtype=np.float16) * alpha)
    ]
    assert [r.tolerance for r in results] == [2.0**-5] * 3
    assert [r.verdict for r in results] == ["absorbable"] * 3
    # A Python float is float64 data.
    assert skipsearch.find_absorbing_subset(W_up, W_down, skip=0.1).tolerance == 2.0**-26


def test_a_zero_width_ffn_is_refused_by_the_scan(tmp_path):
    save_file(
        {
            "blocks.0.up.weight": np.zeros((0, 4), np.float32),
            "blocks.0.down.weight": np.zeros((4, 0), np.float32),
        },
        str(tmp_path / "model.safetensors"),
    )
    layout = skipsearch.Layout(up="blocks.{i}.up.weight", down="blocks.{i}.down.weight")
    with pytest.raises(CheckpointError, match=r"m=0 .*needs d >= 1 and m >= 1"):
        skipsearch.scan(tmp_path, layout=layout, activation="relu", progress=False)
