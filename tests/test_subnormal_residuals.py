"""Residuals and brackets stay proofs when a residual or a skip entry is subnormal.

A relative rounding factor ``(1 + k u)`` does not cover a result in the
subnormal range (one rounding there errs by up to ``2**-1075`` whatever the
result's size), a quotient ``||E|| / ||A||`` can underflow to 0, and scaling a
vector whose largest entry is subnormal by ``2**-floor(log2 max)`` overflows
to infinity (``0 * inf`` is NaN). Every value here is compared with exact
rational ground truth (``tests/exact_oracle.py``).
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import skipsearch

sys.path.insert(0, str(Path(__file__).parent))
from exact_oracle import exact_c, flip_truth

TOL = 1.5e-8


def _eye_with(value: float) -> np.ndarray:
    a = np.eye(3)
    a[0, 1] = value
    return a


# (name, W_up, W_down, skip): each has a flip set with a non-zero residual
# far below the tolerance, made of a subnormal entry next to normal ones.
BLOCKS = [
    # E_{0} = [2^-1022, 0]: relative residual about 2^-1082, which
    # underflows to 0 in float64.
    ("quotient_underflows", [[0.0, 2.0**60]], [[1.0]], [[2.0**-1022, -(2.0**60)]]),
    # E_{0} = [2^-1074, 0]: the smallest subnormal, relative 2^-1074.
    ("smallest_subnormal", [[0.0, 1.0]], [[1.0]], [[5e-324, -1.0]]),
    # E_{0,1,2} has the one entry 1e-310: its norm's scaling used to be inf.
    ("subnormal_off_diagonal", -np.eye(3), np.eye(3), _eye_with(1e-310)),
    # The skip spans 2^-1022 .. 2^500: balancing it to 1 would flush the
    # small entry, which used to give status "overflow" with a residual.
    ("skip_spans_1522_binades", [[0.0, 2.0**500]], [[1.0]], [[2.0**-1022, -(2.0**500)]]),
    ("negative_subnormal", [[0.0, 2.0**-3]], [[8.0]], [[-(2.0**-1070), -1.0]]),
]


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("name, W_up, W_down, A", BLOCKS, ids=[b[0] for b in BLOCKS])
def test_a_subnormal_residual_is_absorbed_with_a_bound_above_its_exact_value(
    name, W_up, W_down, A, activation
) -> None:
    W_up, W_down, A = (np.asarray(x, dtype=np.float64) for x in (W_up, W_down, A))
    truth = flip_truth(W_up, W_down, A, exact_c(activation), TOL)
    assert truth.exists and not truth.exact_sets, "each block's best residual is tiny, not 0"
    r = skipsearch.find_absorbing_subset(W_up, W_down, skip=A, activation=activation, tol=TOL)
    assert r.verdict == "absorbable", (r.status, r.reason)
    assert r.status == "complete"
    subset = tuple(int(i) for i in r.subset)
    assert truth.within(subset)
    assert r.residual is not None and math.isfinite(r.residual)
    assert Fraction(r.residual) ** 2 >= truth.ratio_sq(subset)
    assert r.residual <= TOL


@pytest.mark.parametrize("activation", ["relu", "gelu", "leaky_relu(0.5)"])
@pytest.mark.parametrize("name, W_up, W_down, A", BLOCKS, ids=[b[0] for b in BLOCKS])
def test_the_bracket_encloses_the_exact_residuals_in_the_subnormal_range(
    name, W_up, W_down, A, activation
) -> None:
    W_up, W_down, A = (np.asarray(x, dtype=np.float64) for x in (W_up, W_down, A))
    truth = flip_truth(W_up, W_down, A, exact_c(activation), TOL)
    r = skipsearch.find_absorbing_subset(W_up, W_down, skip=A, activation=activation, tol=TOL)
    assert r.distance_bracket is not None, (r.status, r.reason)
    lo, hi = r.distance_bracket
    best = tuple(int(i) for i in r.best_subset)
    # The upper end bounds best_subset's exact residual, the lower end every
    # flip set's; an upper end of 0 claims E_S = 0 exactly.
    assert Fraction(hi) ** 2 >= truth.ratio_sq(best), (hi, float(truth.ratio_sq(best)))
    assert Fraction(lo) ** 2 <= truth.min_ratio_sq
    assert (hi == 0.0) == (truth.ratio_sq(best) == 0)
    if r.verdict == "absorbable":
        assert truth.within(tuple(int(i) for i in r.subset))
    elif r.verdict == "not_absorbable":
        assert not truth.exists
    else:
        assert r.status != "unresolved" or r.residual is not None
        assert r.residual is None or r.status == "unresolved"


def test_an_exactly_zero_residual_keeps_an_upper_end_of_zero() -> None:
    # The converse: E_S = 0 exactly is reported as 0, not a rounding bump.
    truth = flip_truth(-np.eye(3), np.eye(3), np.eye(3), Fraction(1), TOL)
    assert truth.exact_sets == [(0, 1, 2)]
    r = skipsearch.find_absorbing_subset(-np.eye(3), np.eye(3))
    assert r.verdict == "absorbable" and r.distance_bracket == (0.0, 0.0)


# The skip spans 2^-1074 .. 2^1000 and W_down @ W_up is 2^1000 too: no exact
# power-of-two rescaling keeps the Gram matrix's products (2^2000) finite.
PINNED = ([[2.0**500, 0.0]], [[2.0**500]], [[2.0**-1074, 2.0**1000]])
PINNED_BOTH = ([[2.0**500, 2.0**500]], [[2.0**500]], [[2.0**-1074, -(2.0**1000)]])


def test_an_overflowing_gram_matrix_still_lets_the_skip_certify() -> None:
    # E_{0} = [2^-1074 + 2^1000, 0]: every flip set has residual at least
    # about 1, which the certificate Y = A proves without the Gram matrix.
    W_up, W_down, A = (np.asarray(x, dtype=np.float64) for x in PINNED)
    truth = flip_truth(W_up, W_down, A, Fraction(1), TOL)
    assert not truth.exists
    r = skipsearch.find_absorbing_subset(W_up, W_down, skip=A)
    assert r.verdict == "not_absorbable", r.reason
    assert r.distance_bound is not None
    assert Fraction(r.distance_bound) ** 2 <= truth.min_ratio_sq
    assert r.distance_bound > TOL


@pytest.mark.parametrize("block", [PINNED, PINNED_BOTH], ids=["pinned", "pinned_both"])
def test_overflow_reports_no_residual_and_blames_no_scale_gap_that_is_not_there(block) -> None:
    W_up, W_down, A = (np.asarray(x, dtype=np.float64) for x in block)
    truth = flip_truth(W_up, W_down, A, Fraction(1), TOL)
    assert not truth.exists
    r = skipsearch.find_absorbing_subset(W_up, W_down, skip=A)
    assert r.verdict in ("undecided", "not_absorbable")
    if r.verdict == "undecided":
        assert r.status == "overflow"
        assert r.subset is None and r.residual is None
        # The skip's largest entry and W_down @ W_up are both 2^1000: the
        # reason may not blame a scale gap alone; the subnormal entry pins it.
        assert not r.reason.endswith(
            "the skip and W_down @ W_up differ in scale by more than float64 can hold "
            "(rescale the block)."
        )
        assert "subnormal" in r.reason
