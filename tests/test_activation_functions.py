"""A hand-made activation's function must agree with the claims its
fields make, since the verdict rests on those claims: a gate declared
zero at 0 that is not, a degree the function does not have, a flip
constant it breaks, a "bounded" function that grows, a "differentiable"
gate with a kink. Each contradiction below would give a wrong verdict if
accepted; the exact ground truth is written out for the first."""

from __future__ import annotations

import numpy as np
import pytest
import skipsearch

W = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])


def test_a_cosine_gate_claimed_zero_at_zero_is_refused():
    # With cos(0) = 1, the block W_down (cos(W_gate x) * (W_up x)) with
    # W_down = 0 is the zero map, and x + 0 = x is computed exactly by the
    # skip-free block W_gate' = 0, W_up' = [[1,0],[0,1],[0,0]],
    # W_down' = [[1,0,0],[0,1,0]]: absorbable, not "not absorbable".
    W_up2 = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    W_down2 = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    x = np.array([0.3, -1.7])
    gate = np.cos(np.zeros((3, 2)) @ x)  # W_gate' = 0: every gate is cos(0) = 1
    assert np.array_equal(W_down2 @ (gate * (W_up2 @ x)), x)
    cos_gate = skipsearch.Activation(
        "cosgate", "gated", np.cos, gate_at_zero=0.0, gate_differentiable=True
    )
    with pytest.raises(ValueError, match=r"function\(0\) = 1.0 contradicts gate_at_zero=0.0"):
        skipsearch.find_absorbing_subset(W, np.zeros((2, 3)), activation=cos_gate, W_gate=W)


@pytest.mark.parametrize(
    ("act", "message"),
    [
        (
            skipsearch.Activation("fake2", "homogeneous", lambda z: np.maximum(z, 0), degree=2),
            "contradicts degree=2",
        ),
        (skipsearch.Activation("cube", "homogeneous", np.negative, degree=3), "degree=3"),
        (
            skipsearch.Activation(
                "badc", "flip_linear", lambda z: np.maximum(z, 0), flip_constant=2.0
            ),
            "contradicts flip_constant=2.0",
        ),
        (skipsearch.Activation("unbounded", "bounded", lambda z: z), "kind='bounded'"),
        (
            skipsearch.Activation(
                "kink", "gated", np.abs, gate_at_zero=0.0, gate_differentiable=True
            ),
            "gate_differentiable=True",
        ),
        (
            skipsearch.Activation("g3", "gated", lambda z: z**2, degree=2, gate_at_zero=0.0),
            "contradicts degree=2",
        ),
        (skipsearch.Activation("scalar", "bounded", lambda z: 0.0), "elementwise"),
        (skipsearch.Activation("raises", "bounded", lambda z: z.nonexistent), "failed on"),
    ],
)
def test_a_function_that_breaks_its_claim_is_refused(act, message):
    with pytest.raises(ValueError, match=message):
        skipsearch.get_activation(act)


def test_functions_that_keep_their_claims_are_accepted():
    ok = [
        skipsearch.Activation("sq", "homogeneous", lambda z: np.maximum(z, 0) ** 2, degree=2),
        skipsearch.Activation(
            "silu_gate",
            "gated",
            lambda z: z / (1 + np.exp(-z)),
            gate_at_zero=0.0,
            gate_differentiable=True,
        ),
        skipsearch.Activation(
            "relu_gate", "gated", lambda z: np.maximum(z, 0), degree=2, gate_at_zero=0.0
        ),
        skipsearch.Activation(
            "myrelu", "flip_linear", lambda z: np.maximum(z, 0), flip_constant=1.0
        ),
        skipsearch.Activation("clip", "bounded", lambda z: np.clip(z, -1, 1)),
        skipsearch.Activation("anything", "other", np.cos),
    ]
    for act in ok:
        assert skipsearch.get_activation(act) is act
    r = skipsearch.find_absorbing_subset(
        W, np.array([[-1.0, 0, 0.5], [0, -1, 0]]), activation=ok[3]
    )
    assert r.verdict == "absorbable" and r.subset.tolist() == [0, 1]
    r = skipsearch.find_absorbing_subset(W, -np.ones((2, 3)), activation=ok[0])
    assert (r.verdict, r.argument) == ("not_absorbable", "degree")


def test_a_registry_function_under_other_fields_is_checked():
    # relu's own function declared 2-homogeneous: x - relu(x) = -relu(-x) is
    # skip-free (S = {0, 1} below), so the degree argument's "not
    # absorbable" would be wrong; the borrowed function does not exempt it.
    fake = skipsearch.Activation(
        "relu", "homogeneous", skipsearch.ACTIVATIONS["relu"].function, degree=2
    )
    with pytest.raises(ValueError, match="contradicts degree=2"):
        skipsearch.find_absorbing_subset(np.eye(2), -np.eye(2), activation=fake)
    r = skipsearch.find_absorbing_subset(np.eye(2), -np.eye(2), activation="relu")
    assert r.verdict == "absorbable" and r.subset.tolist() == [0, 1]
    # The registry's own objects, and leaky_relu(a) rebuilt, are trusted as is.
    for act in (*skipsearch.ACTIVATIONS.values(), skipsearch.leaky_relu(0.3)):
        assert skipsearch.get_activation(act) is act
