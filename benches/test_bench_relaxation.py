"""Gram relaxation on a d = 384, m = 1536 block: Rust core against numpy.

Gaussian float64 weights scaled by ``1/sqrt(d)``, identity skip, GELU. Such
weights are generic, so the Rust call ends after the relaxation and its
certificate (verdict ``not_absorbable``, argument ``certificate``); its time
also includes input validation, the genericity check (an ``m x m`` Gram of
``W_up``) and building the ``d x d`` certificate. The numpy side is the bare
Gram solve in ``instances.numpy_relaxation``:
``G = (W_down^T W_down) * (W_up W_up^T)``, ``h_i = -v_i^T A u_i``,
``s = cho_solve(G, h)``, ``Y = -A - W_down diag(s) W_up``,
distance ``||Y||_F / ||A||_F``.

Run with ``pytest benches/test_bench_relaxation.py --benchmark-only``.
"""

from __future__ import annotations

import instances
import pytest
import skipsearch

GROUP = f"relaxation d={instances.RELAX_D} m={instances.RELAX_M}"
ROUNDS = 5


@pytest.fixture(scope="module")
def block():
    return instances.relaxation_block()


@pytest.fixture(scope="module")
def numpy_distance(block):
    return instances.numpy_relaxation(*block)


def run_rust(W_up, W_down, threads):
    return skipsearch.find_absorbing_subset(
        W_up, W_down, activation=instances.RELAX_ACTIVATION, threads=threads
    )


@pytest.mark.benchmark(group=GROUP)
def test_relaxation_numpy(benchmark, block):
    distance = benchmark.pedantic(
        instances.numpy_relaxation, args=block, rounds=ROUNDS, iterations=1, warmup_rounds=1
    )
    rust = run_rust(*block, threads=None)
    assert distance == pytest.approx(rust.relaxation_distance, rel=1e-6)


@pytest.mark.benchmark(group=GROUP)
@pytest.mark.parametrize("threads", [None, 1], ids=["threads=None", "threads=1"])
def test_relaxation_rust(benchmark, block, numpy_distance, threads):
    result = benchmark.pedantic(
        run_rust, args=(*block, threads), rounds=ROUNDS, iterations=1, warmup_rounds=1
    )
    assert result.verdict == "not_absorbable"
    assert result.argument == "certificate"
    assert result.stats.method == ("relaxation", "certificate")
    assert result.relaxation_distance == pytest.approx(numpy_distance, rel=1e-6)
