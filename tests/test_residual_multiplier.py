"""A residual multiplier ``a`` (the block computes ``A x + a f(x)``) is
decided exactly by folding ``a`` into the activation (docs/theory.md §2.3):
the flip constant becomes ``a c`` as an exact double-double, the class and
its hypotheses stay those of ``act``, and a flip set's block evaluates
``a act`` with ``W_down`` unchanged, so it equals ``A x + a f(x)``."""

from __future__ import annotations

import itertools
import math
import pickle
import re
from fractions import Fraction

import numpy as np
import pytest
import skipsearch
from skipsearch import ACTIVATIONS, leaky_relu, scaled_activation
from skipsearch._scan.decide import BlockJob, decide_block
from skipsearch.options import SearchOptions

FACTORS = [0.22, -3.0, 2.0**-10, 1e-300, 7.5e10]


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@pytest.mark.parametrize("a", FACTORS)
def test_scaling_keeps_the_class_and_scales_the_flip_constant_exactly(name, a):
    act = ACTIVATIONS[name]
    if act.flip_constant is not None:
        exact = Fraction(a) * (Fraction(act.flip_constant) + Fraction(act.flip_constant_lo))
        hi = float(exact)
        if Fraction(hi) + Fraction(float(exact - Fraction(hi))) != exact:
            # leaky_relu's 1.01 is hi + lo, and 0.22 (1.01) needs three floats.
            assert act.flip_constant_lo != 0.0
            with pytest.raises(ValueError, match="not the sum of a float64"):
                scaled_activation(act, a)
            return
    scaled = scaled_activation(act, a)
    assert scaled.name == f"{a!r}*{act.name}".replace(".0*", "*")
    same = ("kind", "degree", "gate_differentiable", "necessity", "genericity", "rule")
    assert [getattr(scaled, f) for f in same] == [getattr(act, f) for f in same]
    if act.flip_constant is None:
        assert scaled.flip_constant is None
    else:
        assert Fraction(scaled.flip_constant) + Fraction(scaled.flip_constant_lo) == exact
    if act.gate_at_zero is not None:
        assert scaled.gate_at_zero == a * act.gate_at_zero
    z = np.linspace(-4.0, 4.0, 33)
    assert np.array_equal(scaled(z), a * act(z))
    for again in (pickle.loads(pickle.dumps(scaled)), skipsearch.get_activation(scaled.name)):
        assert again == scaled
        assert np.array_equal(again(z), scaled(z))


def test_what_scaling_cannot_hold_exactly_is_refused():
    # 1.1 is no float64, so leaky_relu(0.1)'s c is hi + lo; 0.22 c needs
    # more than two float64s, while a power of two only shifts both.
    assert scaled_activation(leaky_relu(0.1), 0.5).flip_constant_lo != 0.0
    with pytest.raises(
        ValueError, match=r"flip constant a c \(about 0\.242\) is not the sum of a float64"
    ):
        scaled_activation(leaky_relu(0.1), 0.22)
    # 1.5 * 2^-1074 falls between two subnormals, and no float64 holds the rest.
    assert scaled_activation("relu", 5e-324).flip_constant == 5e-324
    with pytest.raises(ValueError, match="not the sum of a float64"):
        scaled_activation(leaky_relu(0.5), 5e-324)
    with pytest.raises(ValueError, match=r"gate\(0\) = 0\.5 times 5e-324 is not a nonzero float64"):
        scaled_activation("glu", 5e-324)
    for bad in (0.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="factor must be finite and nonzero"):
            scaled_activation("relu", bad)
    with pytest.raises(TypeError, match="factor must be a real number, got bool"):
        scaled_activation("relu", True)
    nested = scaled_activation(scaled_activation("leaky_relu(0.5)", 2), -0.75)
    assert (nested.name, nested.flip_constant) == ("-0.75*2*leaky_relu(0.5)", -2.25)
    assert skipsearch.get_activation(nested.name) == nested
    with pytest.raises(ValueError, match="unknown activation 'nope'"):
        skipsearch.get_activation("0.5*nope")


def test_factors_float64_cannot_hold_are_refused_not_rounded():
    # 2^53 + 1 would round to 2^53, and a c with it: a wrong "exact" constant.
    with pytest.raises(ValueError, match=r"factor 9007199254740993 is not a float64"):
        scaled_activation("relu", 2**53 + 1)
    with pytest.raises(ValueError, match="is not a float64"):
        scaled_activation("relu", np.longdouble(1) / 10)
    with pytest.raises(ValueError, match=r"finite and nonzero in float64, got 10000.*characters"):
        scaled_activation("relu", 10**400)
    assert scaled_activation("relu", 2**53).flip_constant == 2.0**53
    assert scaled_activation("relu", np.float32(0.1)).flip_constant == float(np.float32(0.1))


def test_huge_factors_give_errors_or_usable_activations():
    # a c beyond float64: a ValueError (not an OverflowError).
    with pytest.raises(ValueError, match="beyond float64's range"):
        scaled_activation(leaky_relu(3.0), 1e308)
    with pytest.raises(ValueError, match="beyond float64's range"):
        skipsearch.get_activation("1e308*leaky_relu(3)")
    # a act overflows at |z| of a few, but the claims are those of act: the
    # activation is checked through act, not by sampling a act.
    for name, a in (("relu", 1e308), ("relu2", 1e307), ("reglu", 5e307), ("tanh", -1e308)):
        act = scaled_activation(name, a)
        assert skipsearch.get_activation(act) == act == skipsearch.get_activation(act.name)
    W = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    r, _ = decide_block(
        BlockJob(W, np.ones((2, 3)), "reglu", None, None, W, None, SearchOptions(), scale=5e307)
    )
    assert (r.verdict, r.argument) == ("not_absorbable", "degree")


def test_scaled_names_are_parsed_strictly_and_errors_name_the_whole_input():
    for name, message in [
        ("0.5**relu", "each factor must be a decimal number"),
        ("2*x*relu", "each factor must be a decimal number"),
        ("1_0*relu", "each factor must be a decimal number"),
        ("nan*relu", "each factor must be a decimal number"),
        ("relu*", "each factor must be a decimal number"),
        ("1e-400*relu", "the factor 1e-400 rounds to 0 in float64"),
        ("0.5*nope", "unknown activation 'nope'"),
        ("1*" * 17 + "relu", "at most 16 factors, got 17"),
    ]:
        with pytest.raises(ValueError, match=re.escape(f"activation {name!r}: ") + ".*" + message):
            skipsearch.get_activation(name)
    assert skipsearch.get_activation(" +2.*GELU").name == "2*gelu"


def planted(rng, a, act="relu", d=3, m=8, flip=(1, 4, 6)):
    """W_up, W_down, b_down of x + a f(x) with a c W_down[:, S] W_up[S, :] =
    -I up to the rounding of 1/a (S = ``flip``)."""
    W_up, W_down = rng.standard_normal((m, d)), rng.standard_normal((d, m))
    S = list(flip)
    W_up[S] = np.eye(d)
    W_down[:, S] = -np.eye(d) / a
    return W_up, W_down, rng.standard_normal(d)


def job(W_up, W_down, b_down, a, act="relu"):
    return BlockJob(W_up, W_down, act, None, b_down, None, None, SearchOptions(), scale=a)


@pytest.mark.parametrize("act", ["relu", "gelu"])
@pytest.mark.parametrize("a", [0.22, -0.7, 3.0])
def test_a_multiplier_whose_reciprocal_is_inexact_is_decided(act, a):
    # Before, x + a f(x) was decided as the skip (1/a) I, and with 1/a no
    # float64 the flip verdicts were "undecided".
    rng = np.random.default_rng(5)
    W_up, W_down, b_down = planted(rng, a)
    result, _ = decide_block(job(W_up, W_down, b_down, a, act))
    assert (result.verdict, result.argument) == ("absorbable", "flip_construction")
    assert result.subset.tolist() == [1, 4, 6]
    assert result.activation == f"{a!r}*{act}".replace(".0*", "*")
    assert result.residual <= result.tolerance
    # The witness is the model's block without its skip: W_down kept, a act.
    block = result.block
    assert np.array_equal(block.W_down, W_down)
    x = rng.standard_normal((16, 3))
    f = ACTIVATIONS[act](x @ W_up.T) @ W_down.T + b_down
    assert np.allclose(block(x), x + a * f, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("a", [0.22, -5.0])
def test_a_multiplied_block_without_a_flip_set_has_a_certificate_for_its_own_constant(a):
    rng = np.random.default_rng(6)
    W_up, W_down = rng.standard_normal((8, 3)), rng.standard_normal((3, 8))
    result, _ = decide_block(job(W_up, W_down, None, a))
    assert (result.verdict, result.argument) == ("not_absorbable", "certificate")
    bound = skipsearch.check_certificate(
        result.certificate, W_up, W_down, activation=scaled_activation("relu", a)
    )
    assert bound > result.tolerance
    # The same weights with a = 1 are a different block; a = 1/|a| scales.
    plain = skipsearch.find_absorbing_subset(W_up, W_down * a, skip=None)
    assert plain.verdict == "not_absorbable"


def test_a_flip_constant_no_double_double_holds_is_undecided_with_the_reason():
    rng = np.random.default_rng(7)
    W_up, W_down, b_down = planted(rng, 0.22)
    result, _ = decide_block(job(W_up, W_down, b_down, 0.22, leaky_relu(0.1)))
    assert (result.verdict, result.argument) == ("undecided", "none")
    assert "a = 0.22" in result.reason and "not the sum of a float64" in result.reason
    # Still validated as the decision validates.
    with pytest.raises(ValueError, match="W_down"):
        decide_block(job(W_up, W_down[:, :3], b_down, 0.22, leaky_relu(0.1)))


def test_an_output_bias_the_multiplier_overflows_is_undecided_not_an_error():
    rng = np.random.default_rng(8)
    W_up, W_down, _ = planted(rng, 2.0**20)
    result, _ = decide_block(job(W_up, W_down, np.full(3, 1e303), 2.0**20))
    assert result.verdict == "undecided"
    assert "a b_down, which overflows float64" in result.reason
    # Without the bias the same block is absorbable (2^20 is exact).
    result, _ = decide_block(job(W_up, W_down, None, 2.0**20))
    assert result.verdict == "absorbable"


def test_a_job_validates_its_scale_reason_and_output_bias_as_the_decision_would():
    rng = np.random.default_rng(10)
    W_up, W_down, _ = planted(rng, 0.22)
    for bad in (0.0, -0.0, math.nan, math.inf, True, "2"):
        with pytest.raises(ValueError, match="scale must be a finite nonzero number or None"):
            job(W_up, W_down, None, bad)
    for bad in ("", 123):
        with pytest.raises(ValueError, match="undecided must be a non-empty reason"):
            BlockJob(W_up, W_down, "relu", None, None, None, None, SearchOptions(), undecided=bad)
    for b_down in ([[1.0, 2.0], [3.0]], "abc", ["1", "2", "3"], np.array([1j, 0, 0])):
        with pytest.raises((TypeError, ValueError)) as reference:
            skipsearch.find_absorbing_subset(W_up, W_down, b_down=b_down)
        with pytest.raises(type(reference.value)) as scaled:
            decide_block(job(W_up, W_down, b_down, 0.22))
        assert "b_down" in str(scaled.value)
        assert str(scaled.value).split(":")[0] == str(reference.value).split(":")[0]


def test_gated_blocks_keep_the_linearization_verdict_for_every_multiplier():
    rng = np.random.default_rng(9)
    W_up, W_gate, W_down = (rng.standard_normal(s) for s in ((6, 3), (6, 3), (3, 6)))
    for a in (0.22, -1e-300, 5e-324, 1e300):
        result, _ = decide_block(
            BlockJob(W_up, W_down, "swiglu", None, None, W_gate, None, SearchOptions(), scale=a)
        )
        assert (result.verdict, result.argument) == ("not_absorbable", "linearization")
    # a b_down overflows, but a gated verdict never reads b_down.
    result, _ = decide_block(
        BlockJob(
            W_up, W_down, "swiglu", None, np.full(3, 1e10), W_gate, None, SearchOptions(), 1e300
        )
    )
    assert (result.verdict, result.argument) == ("not_absorbable", "linearization")


def test_a_certificate_within_rounding_of_the_tolerance_is_confirmed_with_tol():
    # From the breaker's boundary search: the decision proves a bound just
    # above tol with exact sums; the a-priori allowance alone leaves the
    # user's check just below it. check_certificate(tol=...) re-evaluates
    # exactly and confirms.
    W_up = np.array([[1.0], [-0.10639959608685703], [-0.9494908518002053], [0.3242014124060831]])
    W_down = np.array(
        [[-9.999999850988385, -0.6657762623743938, -0.31839120057526804, 0.9355282866027194]]
    )
    tol, a = 1.4901161193847656e-08, 0.1
    result, _ = decide_block(
        BlockJob(W_up, W_down, "gelu", None, None, None, None, SearchOptions(tol=tol), scale=a)
    )
    assert (result.verdict, result.argument) == ("not_absorbable", "certificate")
    act = scaled_activation("gelu", a)
    loose = skipsearch.check_certificate(result.certificate, W_up, W_down, activation=act)
    settled = skipsearch.check_certificate(
        result.certificate, W_up, W_down, activation=act, tol=result.tolerance
    )
    assert loose <= tol < settled
    # The exact value, in rationals: min over S of |1 + a c sum_S V U| (d = 1).
    c = Fraction(a)
    best = min(
        abs(1 + c * sum(Fraction(W_down[0, i]) * Fraction(W_up[i, 0]) for i in S))
        for k in range(5)
        for S in itertools.combinations(range(4), k)
    )
    assert Fraction(settled) <= best
    with pytest.raises(ValueError, match="tol must be a finite number or None"):
        skipsearch.check_certificate(result.certificate, W_up, W_down, activation=act, tol="x")
