"""Limits give a status, not an exception; results do not depend on the
thread count; Ctrl-C stops a long search."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest
import skipsearch

from tests.conftest import interrupt, needs_lattice, planted_block


def hard_instance(m=80, seed=0, d=4):
    """Integer weights in [-3, 3]: the relaxation is exact (m > d^2), and
    the float branch and bound does not finish within a minute; the exact
    lattice route (a 65-dimensional kernel) proves in about half a second
    that no flip set exists."""
    rng = np.random.default_rng([d, m, seed, 0])
    W_up = rng.integers(-3, 4, size=(m, d)).astype(float)
    W_down = rng.integers(-3, 4, size=(d, m)).astype(float)
    return W_up, W_down


def test_node_limit_is_a_status():
    r = skipsearch.find_absorbing_subset(*hard_instance(), node_limit=5000)
    assert r.verdict == "undecided"
    assert r.status == "node_limit"
    assert r.stats.nodes == 5000
    assert "node limit" in r.reason
    assert r.relaxation_distance is not None and r.relaxation_distance < 1e-9


@needs_lattice
def test_time_limit_is_a_status():
    # m = 160, d = 5: the lattice route has not settled it after 30 s (the
    # m = 80 instance is settled in about half a second, too close to the
    # limit on a fast CPU).
    slow = hard_instance(m=160, d=5)
    start = time.perf_counter()
    r = skipsearch.find_absorbing_subset(*slow, time_limit=0.2)
    assert r.verdict == "undecided" and r.status == "time_limit"
    assert 0.2 <= r.stats.seconds < 0.2 + 5.0
    assert time.perf_counter() - start >= 0.2
    r = skipsearch.find_absorbing_subset(*slow, time_limit=0)
    assert r.status == "time_limit"


def test_without_the_lattice_extra_an_integer_block_is_honestly_undecided(without_lattice):
    # m = 80 integer neurons: one component of 80 columns, which the core's
    # LLL and the enumeration settle (no flip set), as fpylll's BKZ does.
    r = skipsearch.find_absorbing_subset(*hard_instance(), time_limit=60)
    assert r.verdict == "undecided" and r.status == "complete"
    assert r.subset is None and r.certificate is None
    exact = r.stats.method[-1]
    assert "lattice: fpylll is not installed; reduced with the core's LLL" in exact
    assert exact.endswith("depth-first enumeration ran to its end: infeasible)")
    assert "proves no flip set exists" in r.reason
    # Its rows hold proportional pairs: the reason says that finishing the
    # search could not prove it not absorbable either.
    assert r.genericity is not None and not r.genericity.passed
    assert "the genericity check failed" in r.reason


def test_a_time_limit_below_the_exact_estimate_tries_the_cheap_certificates_first(rng):
    # m = 8192, d = 1024: the exact path's Gram matrix (m^2 d = 6.9e10
    # multiply-adds) is estimated at well over 0.3 s on any CPU this runs
    # on, while Y = A proves the bound in O(m d). Under distance=None the
    # limit must not leave the block undecided for want of the exact path.
    W_up = rng.standard_normal((8192, 1024))
    W_down = 1e-3 * rng.standard_normal((1024, 8192))
    r = skipsearch.find_absorbing_subset(W_up, W_down, time_limit=0.3)
    assert r.stats.exact_seconds_estimate > 0.3
    assert (r.verdict, r.argument, r.status) == ("not_absorbable", "certificate", "complete")
    assert r.distance_bound > 0.5 and r.relaxation_distance is None
    # distance=True asks for the exact path whatever the limit.
    r = skipsearch.find_absorbing_subset(W_up, W_down, time_limit=0.3, distance=True)
    assert (r.verdict, r.status) == ("undecided", "time_limit")


def test_results_do_not_depend_on_threads(rng):
    planted, _, _ = planted_block(rng, 24, 24, 300, 30, bias=True)
    W = rng.standard_normal((200, 20)), rng.standard_normal((20, 200))
    cases = [
        (planted, {}),
        ({"W_up": W[0], "W_down": W[1]}, {"activation": "gelu"}),
        (dict(zip(("W_up", "W_down"), hard_instance())), {"node_limit": 20000}),
        (dict(zip(("W_up", "W_down"), hard_instance(40, 3, d=3))), {}),
    ]
    for kwargs, opts in cases:
        results = [skipsearch.find_absorbing_subset(**kwargs, **opts, threads=t) for t in (1, 2, 3)]
        first = results[0]
        for r in results[1:]:
            assert r.verdict == first.verdict and r.status == first.status
            assert r.relaxation_distance == first.relaxation_distance
            assert r.residual == first.residual
            assert r.stats.nodes == first.stats.nodes
            assert r.stats.gram_rank == first.stats.gram_rank
            if first.subset is not None:
                np.testing.assert_array_equal(r.subset, first.subset)
            if first.certificate is not None:
                np.testing.assert_array_equal(r.certificate, first.certificate)


@needs_lattice
@pytest.mark.skipif(os.name != "posix", reason="sends SIGINT")
def test_ctrl_c_interrupts_a_long_search():
    setup = """
        import numpy as np, skipsearch
        # d = 4, m = 120: more than 20 s of lattice search.
        rng = np.random.default_rng([4, 120, 0, 0])
        W_up = rng.integers(-3, 4, size=(120, 4)).astype(float)
        W_down = rng.integers(-3, 4, size=(4, 120)).astype(float)
    """
    code, out, waited = interrupt(setup, "skipsearch.find_absorbing_subset(W_up, W_down)")
    assert (code, out) == (3, "interrupted")
    # Generous bound: this checks that the cancel flag works, not speed.
    assert waited < 10
