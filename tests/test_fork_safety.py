"""Calls work in a child made by ``fork`` after calls in the parent.

The core keeps its worker pools for the life of the process; a forked
child has the pools' bookkeeping but none of their threads. Each scenario
runs in a fresh interpreter under a timeout, so a hang fails the test
instead of stalling the run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")

# Decides blocks on the default pool and on pools of one and two workers, so
# that each kind of pool exists in the parent before it forks.
PRELUDE = textwrap.dedent(
    """
    import os, sys
    import numpy as np
    import skipsearch

    W_up = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    W_down = np.array([[-1.0, 0.0, 0.5], [0.0, -1.0, 0.0]])

    def decide(threads=None):
        r = skipsearch.find_absorbing_subset(W_up, W_down, threads=threads)
        assert r.verdict == "absorbable" and r.subset.tolist() == [0, 1], r
        rng = np.random.default_rng(0)
        g = skipsearch.find_absorbing_subset(
            rng.normal(size=(40, 8)), rng.normal(size=(8, 40)), threads=threads)
        assert g.verdict == "not_absorbable", g
        return "ok"

    decide()
    decide(threads=1)  # the size a process-pool scan gives each block
    decide(threads=2)
    """
)

SCENARIOS = {
    "os.fork": """
        pid = os.fork()
        if pid == 0:
            try:
                decide(); decide(threads=2); decide(threads=3)
            except BaseException:
                os._exit(1)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
        print("ok")
    """,
    "multiprocessing fork pool": """
        import multiprocessing as mp
        with mp.get_context("fork").Pool(2) as pool:
            assert pool.map(decide, [None, 1, 2, None]) == ["ok"] * 4
        print("ok")
    """,
    "process-pool scan": """
        import json, multiprocessing as mp, tempfile
        from concurrent.futures import ProcessPoolExecutor
        from pathlib import Path
        from safetensors.numpy import save_file

        root = Path(tempfile.mkdtemp())
        rng = np.random.default_rng(1)
        tensors = {}
        for i in range(3):
            tensors[f"blocks.{i}.up.weight"] = rng.normal(size=(12, 4))
            tensors[f"blocks.{i}.down.weight"] = rng.normal(size=(4, 12))
        save_file(tensors, str(root / "model.safetensors"))
        layout = skipsearch.Layout(up="blocks.{i}.up.weight", down="blocks.{i}.down.weight",
                                   activation="relu")
        serial = skipsearch.scan(root, layout=layout, progress=False)
        with ProcessPoolExecutor(2, mp_context=mp.get_context("fork")) as ex:
            forked = skipsearch.scan(root, layout=layout, progress=False, executor=ex)
        assert [r.verdict for r in forked] == [r.verdict for r in serial] == ["not_absorbable"] * 3
        assert [r.relaxation_distance for r in forked] == [r.relaxation_distance for r in serial]
        print("ok")
    """,
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_calls_after_fork_finish(scenario: str) -> None:
    code = PRELUDE + textwrap.dedent(SCENARIOS[scenario])
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{scenario}: the child hung after fork")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().endswith("ok")
