"""SearchOptions: one validated object for the options every entry point
takes, the same decisions as the keywords, and the named distance modes."""

from __future__ import annotations

import numpy as np
import pytest
import skipsearch
from skipsearch import SearchOptions, baseline

from tests.golden_table import absorption_row


def block(seed=0, d=6, m=24):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, d)), rng.standard_normal((d, m)) / np.sqrt(m)


@pytest.mark.parametrize(
    ("keywords", "options"),
    [
        ({}, SearchOptions()),
        ({"distance": True}, SearchOptions(distance="exact")),
        ({"distance": False}, SearchOptions(distance="bound")),
        ({"distance": None, "bracket": True}, SearchOptions(distance="auto", bracket=True)),
        ({"tol": 1e-6, "keep_certificate": False}, SearchOptions(tol=1e-6, keep_certificate=False)),
    ],
)
def test_options_decide_as_the_keywords_do(keywords, options):
    W_up, W_down = block()
    by_keywords = skipsearch.find_absorbing_subset(W_up, W_down, **keywords)
    by_options = skipsearch.find_absorbing_subset(W_up, W_down, options=options)
    assert absorption_row(by_options) == absorption_row(by_keywords)
    assert by_options.verdict == "not_absorbable"


def test_distance_modes_and_their_aliases():
    for alias, mode in (
        (None, "auto"),
        (True, "exact"),
        (False, "bound"),
        (np.bool_(True), "exact"),
    ):
        assert SearchOptions(distance=alias).distance == mode
        assert SearchOptions(distance=mode).distance == mode
    assert SearchOptions(distance="exact").exact_distance is True
    assert SearchOptions(distance="bound").exact_distance is False
    assert SearchOptions().exact_distance is None
    W_up, W_down = block(1)
    exact = skipsearch.find_absorbing_subset(W_up, W_down, distance="exact")
    bound = skipsearch.find_absorbing_subset(W_up, W_down, distance="bound")
    assert exact.relaxation_distance is not None and bound.relaxation_distance is None
    assert bound.distance_bound is not None and bound.distance_bound <= exact.relaxation_distance


def test_options_are_validated_once_with_named_errors():
    with pytest.raises(ValueError, match="tol must lie in"):
        SearchOptions(tol=2.0)
    with pytest.raises(ValueError, match="threads must be between"):
        SearchOptions(threads=0)
    with pytest.raises(TypeError, match="distance must be True, False or None"):
        SearchOptions(distance="fast")
    with pytest.raises(TypeError, match="bracket must be True, False or None"):
        SearchOptions(bracket="yes")
    with pytest.raises(ValueError, match="memory_limit must be at least"):
        SearchOptions(memory_limit=0)
    with pytest.raises(TypeError, match="keep_certificate must be True or False"):
        SearchOptions(keep_certificate=None)
    with pytest.raises(ValueError, match="distance_budget"):
        SearchOptions(distance_budget=-1)
    options = SearchOptions(time_limit=5)
    with pytest.raises(AttributeError):
        options.time_limit = 1.0  # type: ignore[misc]


def test_options_and_keywords_together_are_refused():
    W_up, W_down = block()
    options = SearchOptions(tol=1e-6)
    with pytest.raises(TypeError, match="either options=SearchOptions"):
        skipsearch.find_absorbing_subset(W_up, W_down, options=options, threads=2)
    with pytest.raises(TypeError, match="either options=SearchOptions"):
        baseline.find_absorbing_subset(W_up[:8], W_down[:, :8], options=options, tol=1e-3)
    with pytest.raises(TypeError, match="either options=SearchOptions"):
        skipsearch.decide_stack([{"W_up": W_up, "W_down": W_down}], options=options, threads=1)
    with pytest.raises(TypeError, match=r"must be a skipsearch.SearchOptions"):
        skipsearch.find_absorbing_subset(W_up, W_down, options={"tol": 1e-6})  # type: ignore[arg-type]
    # Keywords at their defaults are not a conflict.
    r = skipsearch.find_absorbing_subset(W_up, W_down, options=options, distance=None)
    assert r.tolerance == 1e-6


def test_the_baseline_and_a_stack_take_the_same_options():
    W_up, W_down = np.eye(3), -np.eye(3)
    options = SearchOptions(tol=1e-9, node_limit=1000)
    r = baseline.find_absorbing_subset(W_up, W_down, options=options)
    assert r.verdict == "absorbable" and r.tolerance == 1e-9
    stack = skipsearch.decide_stack([{"W_up": W_up, "W_down": W_down}] * 2, options=options)
    assert stack.verdict == "absorbable"
    assert all(b.tolerance == 1e-9 for b in stack.blocks)


def test_distance_budget_takes_any_real_number():
    from fractions import Fraction

    assert SearchOptions(distance_budget=Fraction(1, 4)).distance_budget == 0.25
    # An integer beyond float64 is no budget at all (or a negative one).
    assert SearchOptions(distance_budget=10**400).distance_budget == float("inf")
    with pytest.raises(ValueError, match="distance_budget must be a non-negative"):
        SearchOptions(distance_budget=-(10**400))
    with pytest.raises(TypeError, match="distance_budget must be a number"):
        SearchOptions(distance_budget=1j)


def test_a_conflict_names_the_keyword_the_caller_used():
    with pytest.raises(TypeError, match=r"options=SearchOptions\(\.\.\.\) or keep_certificates,"):
        skipsearch.scan("unused", options=SearchOptions(), keep_certificates=False)
