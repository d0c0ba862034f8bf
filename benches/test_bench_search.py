"""Flip-set search: the Rust core against the numpy baseline at m = 12, 16, 20.

The instances (see ``instances.py``) are degenerate on purpose: ``d = 2``,
integer weights, relaxation distance ~1e-16, so the certificate cannot end
the question and the baseline really enumerates subsets (at least
``2^(m-1)`` of them; all ``2^m`` for the infeasible kind), while the Rust
core runs its null-space branch and bound. Every benchmark asserts that both
backends give the same verdict, the expected one.

Run with ``pytest benches/test_bench_search.py --benchmark-only``.
"""

from __future__ import annotations

import functools

import instances
import pytest
import skipsearch
from skipsearch import baseline

KINDS = ("planted", "infeasible")


@functools.cache
def instance(kind: str, m: int) -> instances.Instance:
    return getattr(instances, kind)(m)


def run_rust(inst: instances.Instance):
    return skipsearch.find_absorbing_subset(
        inst.W_up, inst.W_down, activation=instances.SEARCH_ACTIVATION
    )


def run_baseline(inst: instances.Instance):
    return baseline.find_absorbing_subset(
        inst.W_up, inst.W_down, activation=instances.SEARCH_ACTIVATION
    )


@functools.cache
def reference(kind: str, m: int):
    """Both backends' results on one instance, checked against each other."""
    inst = instance(kind, m)
    rust, base = run_rust(inst), run_baseline(inst)
    check_pair(inst, rust, base)
    return rust, base


def check_pair(inst, rust, base) -> None:
    assert rust.verdict == base.verdict == inst.expected, (inst.name, rust.reason, base.reason)
    # The relaxation leaves the question open, so the search did the work.
    assert rust.relaxation_distance < 1e-12 and base.relaxation_distance < 1e-12
    assert base.argument in ("flip_construction", "enumeration")
    # Integer-valued infeasible blocks are settled by the exact integer
    # engine (skipsearch.subset_sum), the others by branch and bound.
    assert rust.argument in ("flip_construction", "branch_and_bound", "exact_integer")
    if inst.kind == "planted":
        # The baseline counts subsets in binary order (neuron i = bit i):
        # a set containing neuron m - 1 comes after 2^(m-1) others.
        assert inst.m - 1 in base.subset.tolist()
        assert base.stats.nodes >= 1 << (inst.m - 1)
        assert rust.residual <= rust.tolerance and base.residual <= base.tolerance
    else:
        assert base.stats.nodes == 1 << inst.m


def _params():
    return [
        pytest.param(kind, m, id=f"{kind}-m{m}", marks=pytest.mark.benchmark(group=f"search m={m}"))
        for m in instances.WIDTHS
        for kind in KINDS
    ]


@pytest.mark.parametrize(("kind", "m"), _params())
def test_search_rust(benchmark, kind, m):
    inst = instance(kind, m)
    _, base = reference(kind, m)
    result = benchmark(run_rust, inst)
    check_pair(inst, result, base)


@pytest.mark.parametrize(("kind", "m"), _params())
def test_search_baseline(benchmark, kind, m):
    inst = instance(kind, m)
    rust, _ = reference(kind, m)
    if m >= 20:
        # Slow: a few rounds only.
        result = benchmark.pedantic(
            run_baseline, args=(inst,), rounds=3, iterations=1, warmup_rounds=0
        )
    else:
        result = benchmark(run_baseline, inst)
    check_pair(inst, rust, result)
