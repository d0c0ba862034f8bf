"""A residual multiplier ``a`` (the block computes ``A x + a f(x)``) is
decided exactly by folding ``a`` into the activation (docs/theory.md §2.3):
the flip constant becomes ``a c`` as an exact double-double, the class and
its hypotheses stay those of ``act``, and a flip set's block evaluates
``a act`` with ``W_down`` unchanged, so it equals ``A x + a f(x)``."""

from __future__ import annotations

import math
import pickle
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
    with pytest.raises(ValueError, match=r"flip constant 0\.242 is not the sum of a float64"):
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
    with pytest.raises(ValueError, match=r"the factor must be a number, e\.g\. '0\.22\*swiglu'"):
        skipsearch.get_activation("x*relu")
    nested = scaled_activation(scaled_activation("leaky_relu(0.5)", 2), -0.75)
    assert (nested.name, nested.flip_constant) == ("-0.75*2*leaky_relu(0.5)", -2.25)
    assert skipsearch.get_activation(nested.name) == nested
    with pytest.raises(ValueError, match="unknown activation 'nope'"):
        skipsearch.get_activation("0.5*nope")


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


def test_gated_blocks_keep_the_linearization_verdict_for_every_multiplier():
    rng = np.random.default_rng(9)
    W_up, W_gate, W_down = (rng.standard_normal(s) for s in ((6, 3), (6, 3), (3, 6)))
    for a in (0.22, -1e-300, 5e-324, 1e300):
        result, _ = decide_block(
            BlockJob(W_up, W_down, "swiglu", None, None, W_gate, None, SearchOptions(), scale=a)
        )
        assert (result.verdict, result.argument) == ("not_absorbable", "linearization")
