"""Hand-made activations whose fields contradict each other are refused, with
a ValueError naming the field, before any verdict rests on them.

Each refused combination would have let a theorem be cited for a class it
does not cover; the first two tests show, in exact arithmetic, a block the
contradiction would have called "not absorbable" although it is absorbable.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import skipsearch

RELU = skipsearch.get_activation("relu")


def _relu_exact(z):
    return max(z, Fraction(0))


def test_degree_one_is_refused(rng):
    # x - relu(x) = -relu(-x) for every x: the block x -> x + f(x) with
    # f(x) = -relu(x) is the skip-free block -relu(-x). The degree argument
    # needs k != 1, so a "homogeneous of degree 1" claim must not decide it.
    for x in [Fraction(v, 8) for v in range(-24, 25)]:
        assert x - _relu_exact(x) == -_relu_exact(-x)
    act = skipsearch.Activation("my_relu", "homogeneous", RELU.function, degree=1)
    with pytest.raises(ValueError, match="degree=1"):
        skipsearch.find_absorbing_subset([[1.0]], [[-1.0]], activation=act)
    with pytest.raises(ValueError, match=r"blocks\[0\].*degree=1"):
        skipsearch.decide_stack([{"W_up": [[1.0]], "W_down": [[-1.0]], "activation": act}])
    gated = skipsearch.Activation("g", "gated", np.abs, degree=1, gate_at_zero=0.0)
    with pytest.raises(ValueError, match="degree=1"):
        skipsearch.get_activation(gated)
    # The registry's own relu is flip-linear and finds the flip set.
    r = skipsearch.find_absorbing_subset([[1.0]], [[-1.0]], activation="relu")
    assert (r.verdict, r.subset.tolist()) == ("absorbable", [0])


def test_a_necessity_claim_needs_its_row_test():
    # x - 0.5 relu(x) = 0.5 relu(x) - relu(-x): absorbable with two neurons,
    # though no flip set exists for W_up = [[1], [1]], W_down = [[-2, 1.5]]
    # (S = {}, {0}, {1}, {0, 1} give residuals 1, -1, 2.5, 0.5, all nonzero).
    for x in [Fraction(v, 4) for v in range(-12, 13)]:
        assert x - 2 * _relu_exact(x) + Fraction(3, 2) * _relu_exact(x) == Fraction(
            1, 2
        ) * _relu_exact(x) - _relu_exact(-x)
    residuals = {S: 1 + sum((-2, Fraction(3, 2))[i] for i in S) for S in [(), (0,), (1,), (0, 1)]}
    assert all(v != 0 for v in residuals.values())
    # Claiming the kink-hyperplane argument without its row test would turn
    # "no flip set" into a false "not absorbable" (the rows are proportional).
    claim = skipsearch.Activation(
        "my_relu", "flip_linear", RELU.function, flip_constant=1.0, necessity="genericity_checked"
    )
    with pytest.raises(ValueError, match="genericity='non_proportional'"):
        skipsearch.find_absorbing_subset([[1.0], [1.0]], [[-2.0, 1.5]], activation=claim)
    checked = skipsearch.Activation(
        "my_relu",
        "flip_linear",
        RELU.function,
        flip_constant=1.0,
        necessity="genericity_checked",
        genericity="non_proportional",
    )
    r = skipsearch.find_absorbing_subset([[1.0], [1.0]], [[-2.0, 1.5]], activation=checked)
    assert r.verdict == "undecided" and not r.genericity.passed
    generic = skipsearch.Activation(
        "g", "flip_linear", RELU.function, flip_constant=1.0, necessity="generic_weights"
    )
    with pytest.raises(ValueError, match="genericity='distinct_up_to_sign'"):
        skipsearch.get_activation(generic)


@pytest.mark.parametrize(
    "fields, field",
    [
        (dict(kind="homogeneous"), "needs its degree"),
        (dict(kind="homogeneous", degree=2.5), "degree must be an integer"),
        (dict(kind="homogeneous", degree=True), "degree must be an integer"),
        (dict(kind="flip_linear", flip_constant=1.0, degree=2), "no degree"),
        (dict(kind="bounded", degree=2), "degree is only for"),
        (dict(kind="other", degree=3), "degree is only for"),
        (dict(kind="gated", degree=2, gate_at_zero=0.5), "gate_at_zero=0.5"),
        (dict(kind="homogeneous", degree=2, flip_constant=1.0), "flip_constant is only"),
        (dict(kind="bounded", flip_constant=2.0), "flip_constant is only"),
        (dict(kind="gated", gate_at_zero=0.0, flip_constant_lo=1e-20), "flip_constant is only"),
        (dict(kind="homogeneous", degree=2, necessity="generic_weights"), "necessity and"),
        (dict(kind="bounded", genericity="non_proportional"), "necessity and"),
        (dict(kind="homogeneous", degree=2, gate_at_zero=0.0), "gate_at_zero and"),
        (dict(kind="bounded", gate_differentiable=True), "gate_at_zero and"),
        (dict(kind="gated", gate_at_zero=float("nan")), "gate_at_zero must be"),
        (dict(kind="flip_linear", flip_constant=1.0, flip_constant_lo=0.5), "flip_constant_lo"),
        (
            dict(kind="flip_linear", flip_constant=1.0, flip_constant_lo=float("inf")),
            "flip_constant_lo",
        ),
    ],
)
def test_contradictory_fields_are_refused_naming_them(fields, field):
    act = skipsearch.Activation("hand_made", function=np.tanh, **fields)
    with pytest.raises(ValueError, match="Activation 'hand_made'") as info:
        skipsearch.get_activation(act)
    assert field in str(info.value)


def test_consistent_hand_made_activations_are_accepted():
    ok = [
        skipsearch.Activation("cube", "homogeneous", lambda z: z**3, degree=3),
        skipsearch.Activation("step", "homogeneous", np.sign, degree=0),
        skipsearch.Activation("g", "gated", np.abs, degree=2, gate_at_zero=0.0),
        skipsearch.Activation("g", "gated", np.tanh, gate_at_zero=0.0, gate_differentiable=True),
        skipsearch.Activation("b", "bounded", np.tanh),
        skipsearch.Activation("o", "other", np.tanh),
        skipsearch.Activation(
            "f",
            "flip_linear",
            lambda z: np.where(z >= 0, z, 0.2 * z),
            flip_constant=1.2,
            flip_constant_lo=2.0**-60,
        ),
    ]
    for act in ok:
        assert skipsearch.get_activation(act) is act
    for act in skipsearch.ACTIVATIONS.values():
        assert skipsearch.get_activation(act) is act
