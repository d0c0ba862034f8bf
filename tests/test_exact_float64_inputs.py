"""Inputs float64 cannot hold exactly are refused, never rounded into a verdict.

Scalars (Python and numpy integers beyond 2**53, Fractions, Decimals,
long doubles) and long-double arrays whose values change in float64 would
otherwise be decided as the rounded block: a verdict about a block the
caller did not pass. Each case below states the exact truth it would get
wrong.
"""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
import skipsearch
from skipsearch import baseline

U53 = np.array([[-(2.0**53)]])
ONE = np.array([[1.0]])
# A generic 2 x 2 block with three neurons: no flip set absorbs any nonzero
# multiple of the identity exactly.
UG = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
VG = np.array([[-1.0, 0.0, 0.5], [0.0, -1.0, 0.0]])

LONG = np.finfo(np.longdouble).eps < np.finfo(np.float64).eps
needs_long = pytest.mark.skipif(not LONG, reason="np.longdouble is float64 on this platform")


@pytest.mark.parametrize(
    "skip",
    [
        2**53 + 1,
        np.int64(2**53 + 1),
        np.uint64(2**53 + 1),
        Fraction(2**53 + 1),
        np.array(2**53 + 1),
    ],
    ids=["int", "int64", "uint64", "Fraction", "0-d array"],
)
def test_scalar_skip_beyond_float64_is_refused(skip: object) -> None:
    # Exactly: E_{0} = (2^53 + 1) - 2^53 = 1, relative residual 1/(2^53 + 1)
    # > tol, and E_{} = 2^53 + 1: not absorbable. Rounded to 2^53, the flip
    # set {0} would absorb it exactly.
    exact = Fraction(2**53 + 1)
    assert Fraction(float(exact)) != exact
    with pytest.raises(ValueError, match=r"skip=.*9007199254740993.*float64 cannot hold"):
        skipsearch.find_absorbing_subset(U53, ONE, skip=skip, tol=1e-17)
    with pytest.raises(ValueError, match=r"skip=.*float64 cannot hold"):
        baseline.find_absorbing_subset(U53, ONE, skip=skip, tol=1e-17)
    with pytest.raises(ValueError, match=r"skip=.*float64 cannot hold"):
        skipsearch.check_certificate(ONE, U53, ONE, skip=skip)
    with pytest.raises(ValueError, match=r"skip=.*float64 cannot hold"):
        skipsearch.residual_block_output(ONE, U53, ONE, skip=skip)
    with pytest.raises(ValueError, match=r"skip=.*float64 cannot hold"):
        skipsearch.decide_stack([{"W_up": U53, "W_down": ONE, "skip": skip}])


def test_exactly_representable_scalars_still_pass() -> None:
    # 2^60 + 2^8 and 3/4 are float64 values, whatever type they come in.
    for skip in [2**60 + 2**8, np.int64(2**60 + 2**8), Fraction(3, 4)]:
        value = Fraction(skip) if not isinstance(skip, np.integer) else Fraction(int(skip))
        W_up = np.array([[-float(value)]])
        r = skipsearch.find_absorbing_subset(W_up, ONE, skip=skip, tol=1e-17)
        assert r.verdict == "absorbable" and list(r.subset) == [0] and r.residual == 0.0


@pytest.mark.parametrize(
    "skip",
    [Fraction(1, 10**400)] + ([np.longdouble("1e-4000")] if LONG else []),
    ids=lambda s: type(s).__name__,
)
def test_nonzero_scalar_skip_that_rounds_to_zero_is_refused(skip: object) -> None:
    # Exactly the skip is nonzero: "the skip A is zero" would be false.
    assert Fraction(float(skip)) == 0 and skip != 0  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"skip=.*rounds to 0\.0"):
        skipsearch.find_absorbing_subset(UG, VG, skip=skip)


@needs_long
def test_long_double_scalar_skip_is_refused() -> None:
    s = np.longdouble(1) + np.longdouble(2) ** -60
    with pytest.raises(ValueError, match=r"skip=.*float64 cannot hold"):
        skipsearch.find_absorbing_subset(-np.eye(1), ONE, skip=s)
    # One float64 holds exactly is accepted.
    r = skipsearch.find_absorbing_subset(-np.eye(1), ONE, skip=np.longdouble(0.5) * 2)
    assert r.verdict == "absorbable"


@needs_long
def test_long_double_arrays_that_change_in_float64_are_refused() -> None:
    # Exactly: E_{0} = 1 - (1 + 2^-60) = -2^-60, relative 2^-60 > 1e-30, and
    # E_{} = 1: not absorbable. Rounded, W_up = -1 absorbs it exactly.
    Ul = np.array([[-(np.longdouble(1) + np.longdouble(2) ** -60)]])
    with pytest.raises(ValueError, match=r"W_up has float128 entry .* at index \(0, 0\)"):
        skipsearch.find_absorbing_subset(Ul, ONE, tol=1e-30)
    with pytest.raises(ValueError, match=r"skip has float128 entry"):
        # (built in long double explicitly: numpy < 2 keeps a float64 array
        # float64 when a long-double scalar is added)
        skip = np.eye(2, dtype=np.longdouble) + Ul[0, 0] + 1
        skipsearch.find_absorbing_subset(-np.eye(2), np.eye(2), skip=skip)
    with pytest.raises(ValueError, match=r"certificate has float128 entry"):
        skipsearch.check_certificate(Ul, -ONE, ONE)
    with pytest.raises(ValueError, match=r"A has float128 entry"):
        skipsearch.subset_sum(Ul, np.array([1.0]))
    tiny = np.array([[np.longdouble("1e-4000")]])
    with pytest.raises(ValueError, match=r"skip has float128 entry .*rounds to 0\.0"):
        skipsearch.find_absorbing_subset(ONE, ONE, skip=tiny)
    huge = np.array([[np.longdouble("1e4000")]])
    with pytest.raises(ValueError, match=r"W_down has float128 entry .*beyond float64's range"):
        skipsearch.find_absorbing_subset(ONE, huge)
    with pytest.raises(ValueError, match=r"x has float128 entry"):
        skipsearch.residual_block_output(Ul, ONE, ONE)
    # Long doubles holding float64 values are widened as before.
    r = skipsearch.find_absorbing_subset(np.array([[np.longdouble(-1)]]), ONE)
    assert r.verdict == "absorbable" and r.subset == [0]


def test_tolerance_is_rounded_down_never_up() -> None:
    from skipsearch._validation import check_tol

    third = Fraction(1, 10)  # float(1/10) > 1/10
    got = check_tol(third)
    assert got is not None and Fraction(got) <= third
    assert Fraction(check_tol(0.25) or 0) == Fraction(1, 4)


def test_lists_mixing_floats_and_big_integers_are_refused() -> None:
    # np.asarray([0.5, 2**53 + 1]) is a float64 array with 2**53 in it.
    for skip in ([[0.5, 2**53 + 1], [0, 1]], [[0.5, np.int64(2**53 + 1)], [0, 1]]):
        with pytest.raises(ValueError, match=r"skip has integer entry 9007199254740993 at"):
            skipsearch.find_absorbing_subset(-np.eye(2), np.eye(2), skip=skip)
    with pytest.raises(ValueError, match=r"W_up has integer entry 9007199254740993"):
        skipsearch.find_absorbing_subset([[0.5, 2**53 + 1]], [[1.0]], skip=[[1.0, 0.0]])
    # subset_sum decides int arrays exactly, but this list is a float64 one.
    with pytest.raises(ValueError, match=r"A has integer entry 9007199254740993"):
        skipsearch.subset_sum([[1.0, 2**53 + 1]], [2**53 + 1])
    assert skipsearch.subset_sum([[3, 2**53 + 1]], [2**53 + 1]).status == "feasible"
    # Integers float64 holds exactly are fine in a list of floats.
    r = skipsearch.find_absorbing_subset(
        [[-1.0, 0.0], [0.0, -(2.0**60)]], np.eye(2), skip=[[1, 0.0], [0, 2**60]]
    )
    assert r.verdict == "absorbable" and list(r.subset) == [0, 1]


@pytest.mark.parametrize(
    ("where", "kwargs"),
    [
        ("W_up[0, 1]", {"W_up": [[1, Decimal("sNaN")], [0, 1]]}),
        ("skip", {"skip": Decimal("sNaN")}),
        ("b_down[0]", {"b_down": [Decimal("-sNaN"), 0]}),
    ],
)
def test_signaling_nan_decimal_names_its_entry(where: str, kwargs: dict) -> None:
    # float(Decimal("sNaN")) raises "cannot convert signaling NaN to
    # float", which named no argument.
    args = {"W_up": np.eye(2), "W_down": -np.eye(2), **kwargs}
    value = "Decimal('-sNaN')" if where == "b_down[0]" else "Decimal('sNaN')"
    message = re.escape(f"{where} must be finite, got {value}")
    for find in (skipsearch.find_absorbing_subset, baseline.find_absorbing_subset):
        with pytest.raises(ValueError, match=f"^{message}$"):
            find(**args)
    with pytest.raises(ValueError, match=r"^certificate\[0, 0\] must be finite"):
        skipsearch.check_certificate([[Decimal("sNaN"), 0], [0, 1]], np.eye(2), -np.eye(2))
