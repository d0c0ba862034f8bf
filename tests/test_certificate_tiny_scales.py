"""Certificate bounds and residual brackets stay proofs at every scale.

Subnormal skips, products that underflow and huge weights are where a
relative rounding bound ``(1 + k u)`` stops covering float64's error (a
subnormal result errs by up to 2**-1075 absolutely). Every value here is
compared with exact rational ground truth (``tests/exact_oracle.py``).
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import skipsearch
from skipsearch import rounding

sys.path.insert(0, str(Path(__file__).parent))
from exact_oracle import certificate_bound_sq, flip_truth

U = 2.0**-1074  # the smallest subnormal


def _bound_sq(b: float) -> Fraction:
    return Fraction(b) ** 2


def test_subnormal_block_absorbed_within_tol_gets_no_bound_above_it() -> None:
    # ||A + W_down W_up|| / ||A|| = 1 / N exactly: S = {0} absorbs within the
    # default tolerance 1.5e-8, so no certificate may prove more than that.
    N = 75_000_000
    A = np.array([[N * U]])
    W_up = np.array([[-(N - 1) * U]])
    W_down = np.array([[1.0]])
    truth = flip_truth(W_up, W_down, A, Fraction(1), 1.5e-8)
    assert truth.within((0,)) and truth.min_ratio_sq == Fraction(1, N**2)
    b = skipsearch.check_certificate(np.array([[0.75]]), W_up, W_down, skip=A)
    assert _bound_sq(b) <= truth.min_ratio_sq
    assert b <= 1.5e-8
    # The exact certificate bound here is 1/N itself: it is reached.
    assert _bound_sq(b) <= certificate_bound_sq(np.array([[0.75]]), W_up, W_down, A, 1)
    assert b == pytest.approx(1 / N, rel=1e-15)


def test_subnormal_skip_bound_never_exceeds_the_empty_set() -> None:
    # The empty flip set has residual exactly 1; the bound was 2.
    A = np.array([[U, U]])
    W_up = np.array([[1.0, 1.0]])
    W_down = np.array([[1.0]])
    Y = np.array([[0.75, 0.75]])
    truth = flip_truth(W_up, W_down, A, Fraction(1), 1.5e-8)
    assert truth.ratio_sq(()) == 1 and truth.min_ratio_sq == 1
    b = skipsearch.check_certificate(Y, W_up, W_down, skip=A)
    assert _bound_sq(b) <= 1
    assert b == 1.0  # exact bound 1 is a float: the exact path reaches it


SCALES = [-1074, -1060, -1040, -1022, -600, 0, 500, 960]


@pytest.mark.parametrize("k_skip", SCALES)
@pytest.mark.parametrize("k_weights", [-540, -30, 0, 480])
def test_bounds_hold_at_extreme_scales(k_skip: int, k_weights: int) -> None:
    rng = np.random.default_rng(abs(k_skip) * 7 + abs(k_weights))
    checked = 0
    for _ in range(12):
        d_out, d_in, m = (int(v) for v in rng.integers(1, 4, size=3))
        m += 1
        A = np.ldexp(rng.integers(-6, 7, size=(d_out, d_in)).astype(float), k_skip)
        if not A.any():
            continue
        W_up = np.ldexp(rng.integers(-6, 7, size=(m, d_in)).astype(float), k_weights)
        # W_down brings W_down W_up back to the skip's scale (or near it).
        k_down = k_skip - k_weights + int(rng.integers(-2, 3))
        W_down = rng.integers(-6, 7, size=(d_out, m)).astype(float)
        W_down = np.ldexp(W_down, max(-1074, min(1000, k_down)))
        truth = flip_truth(W_up, W_down, A, Fraction(1), 1.5e-8)
        for Y in (
            rng.integers(-5, 6, size=A.shape).astype(float),
            np.sign(A) * 0.75,
            np.ldexp(
                rng.integers(-5, 6, size=A.shape).astype(float), int(rng.integers(-1000, 1000))
            ),
        ):
            if not Y.any():
                continue
            b = skipsearch.check_certificate(Y, W_up, W_down, skip=A)
            assert b >= 0.0 and math.isfinite(b)
            assert _bound_sq(b) <= truth.min_ratio_sq, (A, W_up, W_down, Y, b)
            assert _bound_sq(b) <= certificate_bound_sq(Y, W_up, W_down, A, 1)
            checked += 1
        # The residual brackets of every flip set contain its exact ratio.
        subsets = np.array([[(k >> i) & 1 for i in range(m)] for k in range(1 << m)], dtype=float)
        lower, upper = rounding.residual_bounds(W_up, W_down, A, 1.0, subsets)
        for k in range(1 << m):
            exact = truth.ratio_sq(k)
            assert _bound_sq(float(lower[k])) <= exact <= _bound_sq(float(upper[k])), (k, A)
    assert checked > 0


def test_searched_certificates_on_tiny_skips_stay_below_the_minimum() -> None:
    # Integer weights with skips scaled by 2**-1060: the certificate the
    # search returns, re-checked, must not exceed the exact minimum.
    rng = np.random.default_rng(5)
    for _ in range(8):
        W_up = rng.integers(-3, 4, size=(5, 2)).astype(float)
        W_down = rng.integers(-3, 4, size=(2, 5)).astype(float)
        A = np.ldexp(rng.integers(-7, 8, size=(2, 2)).astype(float), -1060)
        if not A.any():
            continue
        W_down = np.ldexp(W_down, -1060)
        r = skipsearch.find_absorbing_subset(W_up, W_down, skip=A)
        truth = flip_truth(W_up, W_down, A, Fraction(1), r.tolerance)
        if r.certificate is not None:
            b = skipsearch.check_certificate(r.certificate, W_up, W_down, skip=A)
            assert _bound_sq(b) <= truth.min_ratio_sq


def test_residual_brackets_do_not_underflow_to_zero() -> None:
    # E = -A / 2 with |A| = 1e-200: its square underflows in float64, and the
    # bracket must not collapse to [0, 0] (which claims an exact absorption).
    A = np.array([[1e-200]])
    lower, upper = rounding.residual_bounds(
        np.array([[-0.5e-200]]), np.array([[1.0]]), A, 1.0, np.array([[1.0], [0.0]])
    )
    exact = (Fraction(1e-200) - Fraction(0.5e-200)) / Fraction(1e-200)
    assert Fraction(float(lower[0])) <= exact <= Fraction(float(upper[0]))
    assert upper[0] > 0.4 and lower[1] <= 1.0 <= upper[1]


def test_norm_bounds_hold_for_subnormal_norms() -> None:
    for x in ([3 * U, 4 * U], [U] * 3, [7 * U], [1.5e-310, 2.5e-311]):
        arr = np.array(x)
        exact_sq = sum(Fraction(v) ** 2 for v in x)
        assert Fraction(rounding.norm_lower(arr)) ** 2 <= exact_sq
        assert Fraction(rounding.norm_upper(arr)) ** 2 >= exact_sq


@pytest.mark.parametrize(
    "q",
    [
        Fraction(2),
        Fraction(1, 3),
        Fraction(1, 10**700),
        Fraction(10**700),
        Fraction(9, 4),
        Fraction(1, 2**2148),
        Fraction(3, 2**2150),
        Fraction(2**1000),
    ],
)
def test_exact_square_roots_are_rounded_the_right_way(q: Fraction) -> None:
    lo, hi = rounding.sqrt_down(q), rounding.sqrt_up(q)
    assert Fraction(lo) ** 2 <= q
    if math.isfinite(hi):
        assert Fraction(hi) ** 2 >= q
    # Within two ulps of each other where the root is a normal float64.
    if 1e-300 < lo < 1e300:
        assert math.nextafter(math.nextafter(lo, math.inf), math.inf) >= hi


@pytest.mark.parametrize("k_skip", SCALES)
def test_float64_path_alone_is_sound_at_extreme_scales(
    k_skip: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without the exact fallback (as for blocks above EXACT_TERMS), the
    # float64 bound with its allowances must still be a proof.
    monkeypatch.setattr(rounding, "EXACT_TERMS", 0)
    rng = np.random.default_rng(1000 + abs(k_skip))
    for _ in range(30):
        d_out, d_in, m = (int(v) for v in rng.integers(1, 4, size=3))
        A = np.ldexp(rng.integers(-9, 10, size=(d_out, d_in)).astype(float), k_skip)
        if not A.any():
            continue
        k_up = int(rng.integers(-600, 600))
        W_up = np.ldexp(rng.standard_normal((m, d_in)), k_up)
        W_down = np.ldexp(rng.standard_normal((d_out, m)), max(-1074, min(1000, k_skip - k_up)))
        for Y in (A, np.ldexp(rng.standard_normal(A.shape), int(rng.integers(-900, 900)))):
            b = skipsearch.check_certificate(Y, W_up, W_down, skip=A)
            assert _bound_sq(b) <= certificate_bound_sq(Y, W_up, W_down, A, 1), (A, Y, b)


def test_underflow_amplified_by_a_huge_w_down_is_allowed_for() -> None:
    # Y W_up = 0.5 * 2**-1074 rounds to 0 (ties to even), and W_down = 2**1000
    # scales that absolute error up to 2**-75: the skip's own scale. Exactly,
    # W_down W_up = 2**-74 = -A, so S = {0} absorbs with residual 0.
    W_up = np.array([[U]])
    W_down = np.array([[2.0**1000]])
    A = np.array([[-(2.0**-74)]])
    truth = flip_truth(W_up, W_down, A, Fraction(1), 1.5e-8)
    assert truth.ratio_sq((0,)) == 0
    assert skipsearch.check_certificate(np.array([[0.5]]), W_up, W_down, skip=A) == 0.0
