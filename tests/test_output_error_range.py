"""relative_output_error neither underflows nor overflows on in-range data.

Plain ``np.linalg.norm`` squares the entries: a gap of 2**-600 squares to
0, an output of 1e-170 reads as "zero on X", and a gap of 2e308 is inf.
The exact ratios below come from Python Fractions.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import skipsearch

W1 = np.array([[1.0]])


def _close(value: float, exact_sq: Fraction, rel: float = 1e-12) -> bool:
    """``value`` matches ``sqrt(exact_sq)`` to ``rel``, compared in Fractions."""
    got = Fraction(value) ** 2
    return abs(got - exact_sq) <= Fraction(rel) * exact_sq


def test_tiny_gap_does_not_underflow_to_zero() -> None:
    W_up, W_down = -np.eye(2), np.eye(2)
    skip = np.array([[1.0, 2.0**-600], [0.0, 1.0]])
    block = skipsearch.build_skip_free_block(W_up, W_down, [0, 1])
    got = skipsearch.relative_output_error(block, np.array([[1.0, 1.0]]), W_up, W_down, skip=skip)
    # gap = -E_S x = (-2**-600, 0); A x + f(x) = (1 + 2**-600, 1).
    t = Fraction(2) ** -600
    exact_sq = t**2 / ((1 + t) ** 2 + 1)
    assert got > 0.0 and _close(got, exact_sq)


def test_tiny_outputs_are_not_zero() -> None:
    block = skipsearch.build_skip_free_block(W1, W1, [0])
    # A x + f(x) = 2e-170 (not zero); g(x) = relu(-x) = 0: the ratio is 1.
    for x in (1e-170, 1e-300, 5e-324):
        got = skipsearch.relative_output_error(block, np.array([[x]]), W1, W1)
        assert got == 1.0, x


def test_gap_beyond_float64_is_scaled_not_inf() -> None:
    block = skipsearch.build_skip_free_block(W1, W1, [0])
    # x = -1e308: A x + f(x) = -1e308, g(x) = relu(1e308) = 1e308, so the
    # gap is 2e308 (beyond float64) and the ratio exactly 2.
    got = skipsearch.relative_output_error(block, np.array([[-1e308]]), W1, W1)
    assert got == 2.0
    # The same through the float64 difference of the outputs (another
    # activation than the block's: no flip identity applies).
    got = skipsearch.relative_output_error(
        block, np.array([[-1e308]]), W1, W1, activation="leaky_relu"
    )
    # A x + f(x) = -1e308 (1 + 0.01), block(x) = 1e308: gap 1e308 (2 + 0.01).
    slope = Fraction(0.01)
    exact = (2 + slope) / (1 + slope)
    assert math.isfinite(got) and _close(got, exact**2, rel=1e-9)


def test_outputs_that_overflow_are_refused_with_x_named() -> None:
    block = skipsearch.build_skip_free_block(W1, W1, [])
    with pytest.raises(ValueError, match=r"A X \+ f\(X\) overflows float64 on X"):
        skipsearch.relative_output_error(
            block, np.array([[1e300]]), W1, W1, skip=np.array([[1e10]])
        )
