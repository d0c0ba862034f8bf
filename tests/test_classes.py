"""Every class of docs/theory.md §4, the registry, and stacks (§4.5)."""

from __future__ import annotations

import numpy as np
import pytest
import skipsearch
from skipsearch.activations import ACTIVATIONS, ALIASES


@pytest.fixture
def weights(rng):
    return rng.standard_normal((6, 3)), rng.standard_normal((3, 6)), rng.standard_normal((6, 3))


def test_registry_classes_hold_numerically():
    z = np.linspace(-7, 7, 2001)
    for name, act in ACTIVATIONS.items():
        odd = act(z) - act(-z)
        if act.kind == "flip_linear":
            np.testing.assert_allclose(odd, act.flip_constant * z, atol=1e-12, err_msg=name)
        elif not act.gated:
            # Not flip-linear: the odd part is not a multiple of z.
            c = odd[-1] / z[-1]
            assert np.max(np.abs(odd - c * z)) > 1e-3, name
        if act.kind == "bounded":
            assert np.max(np.abs(act(np.array([-1e6, 1e6])))) <= 6.0, name
        if act.degree is not None and not act.gated:
            np.testing.assert_allclose(act(3 * z), 3.0**act.degree * act(z), rtol=1e-12)
        if act.gated:
            assert act(np.array([0.0]))[0] == act.gate_at_zero, name
    for alias, target in ALIASES.items():
        assert skipsearch.get_activation(alias) is ACTIVATIONS[target]


def test_unknown_activation_lists_known_ones():
    with pytest.raises(ValueError, match=r"unknown activation 'swishy'.*gelu_new.*relu"):
        skipsearch.find_absorbing_subset(np.eye(2), -np.eye(2), activation="swishy")


@pytest.mark.parametrize("name", ["swiglu", "geglu"])
def test_gated_linearization(name, weights):
    W_up, W_down, W_gate = weights
    r = skipsearch.find_absorbing_subset(W_up, W_down, W_gate=W_gate, activation=name)
    assert (r.verdict, r.argument) == ("not_absorbable", "linearization")
    assert "Mijoski & Karbevski 2026" in r.reason
    # b_down is only an output constant and keeps the argument valid ...
    r = skipsearch.find_absorbing_subset(
        W_up, W_down, W_gate=W_gate, activation=name, b_down=np.ones(3)
    )
    assert r.verdict == "not_absorbable"
    # ... an inner bias does not.
    r = skipsearch.find_absorbing_subset(
        W_up, W_down, W_gate=W_gate, activation=name, b_up=np.ones(6)
    )
    assert r.verdict == "undecided"


@pytest.mark.parametrize("name", ["reglu", "bilinear"])
def test_gated_degree_two(name, weights):
    W_up, W_down, W_gate = weights
    r = skipsearch.find_absorbing_subset(W_up, W_down, W_gate=W_gate, activation=name)
    assert (r.verdict, r.argument) == ("not_absorbable", "degree")


def test_sigmoid_gated_glu_is_undecided(weights):
    W_up, W_down, W_gate = weights
    r = skipsearch.find_absorbing_subset(W_up, W_down, W_gate=W_gate, activation="glu")
    assert r.verdict == "undecided" and "gate(0) = 0.5, not 0" in r.reason


def test_relu2_degree_argument_needs_no_bias(weights):
    W_up, W_down, _ = weights
    r = skipsearch.find_absorbing_subset(W_up, W_down, activation="relu2")
    assert (r.verdict, r.argument) == ("not_absorbable", "degree")
    r = skipsearch.find_absorbing_subset(W_up, W_down, activation="relu2", b_up=np.ones(6))
    assert r.verdict == "undecided"


@pytest.mark.parametrize("name", ["tanh", "sigmoid", "hardtanh", "relu6"])
def test_bounded_activations(name, weights):
    W_up, W_down, _ = weights
    r = skipsearch.find_absorbing_subset(W_up, W_down, activation=name, b_up=np.ones(6))
    assert (r.verdict, r.argument) == ("not_absorbable", "boundedness")


@pytest.mark.parametrize("name", ["elu", "mish"])
def test_uncovered_activations_are_undecided(name, weights):
    W_up, W_down, _ = weights
    r = skipsearch.find_absorbing_subset(W_up, W_down, activation=name)
    assert r.verdict == "undecided" and r.argument == "none"


@pytest.mark.parametrize("name", ["relu", "swiglu", "tanh", "elu"])
def test_zero_skip_is_trivially_absorbable(name, weights):
    W_up, W_down, W_gate = weights
    gate = W_gate if name == "swiglu" else None
    r = skipsearch.find_absorbing_subset(W_up, W_down, W_gate=gate, activation=name, skip=0.0)
    assert r.verdict == "absorbable" and r.subset.tolist() == []


def test_gate_required_exactly_for_gated(weights):
    W_up, W_down, W_gate = weights
    with pytest.raises(ValueError, match="pass W_gate"):
        skipsearch.find_absorbing_subset(W_up, W_down, activation="swiglu")
    with pytest.raises(ValueError, match="not gated"):
        skipsearch.find_absorbing_subset(W_up, W_down, W_gate=W_gate)


def test_stack_verdicts(rng, weights):
    from tests.conftest import planted_block

    W_up, W_down, W_gate = weights
    gated = skipsearch.MLPBlock(W_up, W_down, activation="swiglu", W_gate=W_gate)
    squared = {"W_up": W_up, "W_down": W_down, "activation": "relu2"}
    r = skipsearch.decide_stack([gated, squared])
    assert r.verdict == "not_absorbable" and "depth theorem" in r.reason
    planted = [planted_block(rng, 3, 3, 8, 4)[0] for _ in range(3)]
    r = skipsearch.decide_stack(planted)
    assert r.verdict == "absorbable"
    assert all(b.block is not None for b in r.blocks)
    # Compose the absorbed blocks and compare with the residual stack.
    x = rng.standard_normal((20, 3))
    y_res, y_abs = x, x
    for kw, b in zip(planted, r.blocks):
        y_res = skipsearch.residual_block_output(y_res, **kw)
        y_abs = b.block(y_abs)
    np.testing.assert_allclose(y_abs, y_res, atol=1e-9)
    mixed = skipsearch.decide_stack([planted[0], gated])
    assert mixed.verdict == "undecided"
    generic = skipsearch.decide_stack([{"W_up": W_up, "W_down": W_down}])
    assert generic.verdict == "undecided"
    with pytest.raises(ValueError, match=r"blocks\[1\].*W_down"):
        skipsearch.decide_stack([gated, {"W_up": W_up, "W_down": W_down.T}])
    with pytest.raises(ValueError, match="at least one"):
        skipsearch.decide_stack([])
