"""A time limit or Ctrl-C takes effect inside the long dense kernels (the
GEMMs of a conjugate-gradient step, the Gram products, the relaxation's
certificate), not only between them.

The blocks are the ``hard`` ones of ``benches/scale.py``: ``W_down`` leans
against ``W_up`` (``sum_i v_i . u_i`` near ``-1.2 d``), so the certificate
``Y = A`` proves nothing and the search goes on to steps whose GEMMs are
``d x m x d``. Where these kernels are polled only between steps, one
step runs for seconds past the limit (3 to 4.7 s on two cores, where a
step is some 5 s; a machine many times faster would not notice); the
bounds below are loose (the limit plus 1.5 s) so that a loaded machine
passes them. The precise figures come from ``benches/limit_latency.py``.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest
import skipsearch

SLACK = 1.5


def leaning_block(d: int, m: int):
    """``W_up ~ N(0, 1/d)``, ``W_down ~ N(0, 1/m) - (1.2 d / m) W_up.T``."""
    rng = np.random.default_rng([10, d, m])
    W_up = rng.standard_normal((m, d)) / np.sqrt(d)
    W_down = rng.standard_normal((d, m)) / np.sqrt(m)
    W_down -= (1.2 * d / m) * W_up.T
    return W_up, W_down


@pytest.fixture(scope="module")
def wide_block():
    return leaning_block(4000, 2500)


def test_time_limit_stops_a_conjugate_gradient_step(wide_block):
    W_up, W_down = wide_block
    # Past the stages before the conjugate gradients (0.2 to 0.7 s here),
    # so the limit falls inside the first step.
    limit = 1.0
    start = time.perf_counter()
    r = skipsearch.find_absorbing_subset(
        W_up, W_down, activation="gelu", distance=False, time_limit=limit
    )
    wall = time.perf_counter() - start
    assert r.verdict == "undecided" and r.status == "time_limit"
    assert "conjugate gradients" in r.stats.method
    # The limit covers the whole call, validation included.
    assert r.stats.seconds <= wall and limit <= wall < limit + SLACK


def test_time_limit_stops_the_relaxation_certificate():
    # distance=True: the Gram matrix (m = 1000) is quick; the residual of
    # the relaxed solution and its inner products are GEMMs of 6000 x 1000
    # x 6000, seconds each.
    W_up, W_down = leaning_block(6000, 1000)
    limit = 0.8
    start = time.perf_counter()
    r = skipsearch.find_absorbing_subset(
        W_up, W_down, activation="gelu", distance=True, time_limit=limit
    )
    wall = time.perf_counter() - start
    assert r.verdict == "undecided" and r.status == "time_limit"
    assert "relaxation" in r.stats.method
    # The limit covers the whole call, validation included.
    assert r.stats.seconds <= wall and limit <= wall < limit + SLACK


@pytest.mark.skipif(os.name != "posix", reason="sends SIGINT")
def test_ctrl_c_stops_a_conjugate_gradient_step(wide_block):
    W_up, W_down = wide_block
    sent = {}

    def ctrl_c():
        sent["at"] = time.perf_counter()
        os.kill(os.getpid(), signal.SIGINT)

    # Python's own Ctrl-C handler, as in an interactive session: a process
    # started in the background by a non-interactive shell inherits SIGINT
    # ignored, and Python then leaves it ignored.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.6, ctrl_c)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            # The limit only keeps a broken cancel from hanging the suite.
            skipsearch.find_absorbing_subset(
                W_up, W_down, activation="gelu", distance=False, time_limit=60.0
            )
        caught = time.perf_counter()
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert caught - sent["at"] < SLACK - 0.5


def test_time_limit_counts_the_validation(monkeypatch):
    """Time spent before the core starts (validation, the skip's expansion)
    comes out of the limit handed to the core."""
    import skipsearch.absorption as absorption

    seen = []
    real = absorption._core.search_flip_set

    def spy(*args, **kwargs):
        seen.append(args[7])  # time_limit, positional
        return real(*args, **kwargs)

    real_weights = absorption.Weights

    def slow_weights(*args, **kwargs):
        time.sleep(0.3)
        return real_weights(*args, **kwargs)

    monkeypatch.setattr(absorption._core, "search_flip_set", spy)
    monkeypatch.setattr(absorption, "Weights", slow_weights)
    rng = np.random.default_rng(3)
    skipsearch.find_absorbing_subset(
        rng.normal(size=(12, 4)), rng.normal(size=(4, 12)), time_limit=1.0, bracket=False
    )
    assert len(seen) == 1 and 0.0 <= seen[0] <= 0.7
