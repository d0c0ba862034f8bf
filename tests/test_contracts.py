"""Contracts: the default tolerance, what b_up means,
and activation names that round-trip."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import skipsearch
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.numpy import save_file
from skipsearch import baseline, find_absorbing_subset, get_activation

EPS64, EPS32, EPS16 = (float(np.finfo(t).eps) for t in (np.float64, np.float32, np.float16))


@pytest.fixture
def near_planted():
    """A float64 ReLU block about 1e-5 (relative) away from absorbable by
    S = {0, 1, 2}: within float16's tolerance (3.1e-2), far outside float64's
    (1.5e-8). The relaxation proves it: ||Y||_F / ||A||_F = 7.4e-6."""
    rng = np.random.default_rng(7)
    W_up = rng.standard_normal((5, 3))
    W_down = rng.standard_normal((3, 5))
    W_down[:, :3] = -np.linalg.inv(W_up[:3]) + 1e-5 * rng.standard_normal((3, 3))
    return W_up, W_down


# -- default tolerance -----------------------------------------------------------------------


def test_float16_output_bias_does_not_loosen_the_tolerance(near_planted):
    W_up, W_down = near_planted
    plain = find_absorbing_subset(W_up, W_down)
    assert plain.tolerance == pytest.approx(math.sqrt(EPS64))
    assert plain.verdict == "not_absorbable", plain
    # At float16 precision the same block is absorbable: the tolerance matters here.
    coarse = find_absorbing_subset(W_up.astype(np.float16), W_down)
    assert (coarse.verdict, coarse.subset.tolist()) == ("absorbable", [0, 1, 2])
    for zeros in (np.zeros(3, dtype=np.float16), np.zeros(5, dtype=np.float16)):
        kw = {"b_down": zeros} if zeros.size == 3 else {"b_up": zeros}
        r = find_absorbing_subset(W_up, W_down, **kw)
        assert r.tolerance == plain.tolerance
        assert r.verdict == "not_absorbable", r
        assert r.subset is None


def test_float16_gate_does_not_loosen_the_tolerance(rng):
    W_up, W_down = rng.standard_normal((6, 3)), rng.standard_normal((3, 6))
    gate = rng.standard_normal((6, 3)).astype(np.float16)
    r = find_absorbing_subset(W_up, W_down, W_gate=gate, activation="swiglu")
    assert r.tolerance == pytest.approx(math.sqrt(EPS64))


@pytest.mark.parametrize(
    "which, eps",
    [("W_up", EPS16), ("W_down", EPS32), ("skip", EPS32), ("none", EPS64)],
)
def test_flip_condition_data_set_the_tolerance(near_planted, which, eps):
    W_up, W_down = near_planted
    kw = dict(W_up=W_up, W_down=W_down, skip=np.eye(3))
    if which == "W_up":
        kw["W_up"] = W_up.astype(np.float16)
    elif which == "W_down":
        kw["W_down"] = W_down.astype(np.float32)
    elif which == "skip":
        kw["skip"] = np.eye(3, dtype=np.float32)
    r = find_absorbing_subset(**kw, b_down=np.zeros(3, dtype=np.float16))
    assert r.tolerance == pytest.approx(math.sqrt(eps))


def test_scan_tolerance_ignores_bias_dtypes(tmp_path):
    rng = np.random.default_rng(3)
    d, m = 4, 6
    tensors = {}
    for i in range(2):
        base = f"bert.encoder.layer.{i}."
        tensors[base + "intermediate.dense.weight"] = rng.standard_normal((m, d)).astype(np.float32)
        tensors[base + "intermediate.dense.bias"] = np.zeros(m, dtype=np.float16)
        tensors[base + "output.dense.weight"] = rng.standard_normal((d, m)).astype(np.float32)
        tensors[base + "output.dense.bias"] = np.zeros(d, dtype=np.float16)
    path = tmp_path / "mixed"
    path.mkdir()
    save_file(tensors, str(path / "model.safetensors"))
    config = dict(
        model_type="bert",
        hidden_act="relu",
        hidden_size=d,
        intermediate_size=m,
        num_hidden_layers=2,
    )
    (path / "config.json").write_text(json.dumps(config))
    reports = skipsearch.scan(path, progress=False)
    assert [r.result.tolerance for r in reports] == [pytest.approx(math.sqrt(EPS32))] * 2


# -- inner biases ----------------------------------------------------------------------------


@pytest.fixture
def gated(rng):
    return rng.standard_normal((6, 3)), rng.standard_normal((3, 6)), rng.standard_normal((6, 3))


@pytest.mark.parametrize(
    "name, argument",
    [
        ("swiglu", "linearization"),
        ("geglu", "linearization"),
        ("reglu", "degree"),
        ("bilinear", "degree"),
    ],
)
def test_zero_inner_bias_voids_the_gated_arguments(gated, name, argument):
    W_up, W_down, W_gate = gated
    r = find_absorbing_subset(W_up, W_down, W_gate=W_gate, activation=name)
    assert (r.verdict, r.argument) == ("not_absorbable", argument)
    assert "no inner biases (b_up=None)" in r.reason
    r = find_absorbing_subset(W_up, W_down, W_gate=W_gate, activation=name, b_up=np.zeros(6))
    assert (r.verdict, r.argument, r.status) == ("undecided", "none", "complete")
    assert f"the {argument} argument" in r.reason
    assert "b_up was given (all zeros, which still counts)" in r.reason
    assert "inner biases" in r.reason


@pytest.mark.parametrize("name, argument", [("swiglu", "linearization"), ("reglu", "degree")])
@pytest.mark.parametrize("backend", ["rust", "baseline"])
def test_a_gate_bias_voids_the_gated_arguments(gated, name, argument, backend):
    # The gate reads gate(W_gate x + b_gate): an inner bias, even all zeros.
    W_up, W_down, W_gate = gated
    find = find_absorbing_subset if backend == "rust" else baseline.find_absorbing_subset
    for b_gate, zeros in ((np.zeros(6), True), (np.linspace(-1, 1, 6), False)):
        r = find(W_up, W_down, W_gate=W_gate, b_gate=b_gate, activation=name)
        assert (r.verdict, r.argument, r.status) == ("undecided", "none", "complete")
        assert f"the {argument} argument" in r.reason
        assert "gate bias b_gate" in r.reason
        assert ("all zeros, which still counts" in r.reason) == zeros
    # b_up takes precedence in the reason when both are given.
    r = find(W_up, W_down, W_gate=W_gate, b_gate=np.ones(6), b_up=np.ones(6), activation=name)
    assert r.verdict == "undecided" and "b_up was given" in r.reason


def test_a_gate_bias_needs_a_gate_of_its_shape(gated):
    W_up, W_down, W_gate = gated
    with pytest.raises(ValueError, match="b_gate was given but the block has no W_gate"):
        find_absorbing_subset(W_up, W_down, b_gate=np.zeros(6))
    with pytest.raises(ValueError, match=r"b_gate has shape \(5,\), expected \(6,\)"):
        find_absorbing_subset(W_up, W_down, W_gate=W_gate, b_gate=np.zeros(5), activation="swiglu")
    b_gate = np.zeros(6)
    b_gate.flags.writeable = False  # never written to
    find_absorbing_subset(W_up, W_down, W_gate=W_gate, b_gate=b_gate, activation="swiglu")


def test_zero_inner_bias_voids_the_degree_argument(gated):
    W_up, W_down, _ = gated
    assert find_absorbing_subset(W_up, W_down, activation="relu2").verdict == "not_absorbable"
    for b_up in (np.zeros(6), [0.0] * 6, np.full(6, -0.0)):
        r = find_absorbing_subset(W_up, W_down, activation="relu2", b_up=b_up)
        assert (r.verdict, r.argument) == ("undecided", "none")
        assert "degree argument" in r.reason and "b_up was given" in r.reason
    r = find_absorbing_subset(W_up, W_down, activation="relu2", b_up=np.ones(6))
    assert r.verdict == "undecided" and "all zeros" not in r.reason


def test_stack_with_zero_inner_bias_is_undecided(gated):
    W_up, W_down, W_gate = gated
    block = skipsearch.MLPBlock(W_up, W_down, activation="swiglu", W_gate=W_gate)
    assert skipsearch.decide_stack([block, block]).verdict == "not_absorbable"
    biased = skipsearch.MLPBlock(W_up, W_down, activation="swiglu", W_gate=W_gate, b_up=np.zeros(6))
    assert skipsearch.decide_stack([block, biased]).verdict == "undecided"


def test_zero_inner_bias_keeps_flip_verdicts(near_planted):
    W_up, W_down = near_planted
    exact = W_down.copy()
    exact[:, :3] = -np.linalg.inv(W_up[:3])
    for b_up in (None, np.zeros(5)):
        r = find_absorbing_subset(W_up, exact, b_up=b_up)
        assert (r.verdict, r.subset.tolist()) == ("absorbable", [0, 1, 2])
        assert find_absorbing_subset(W_up, W_down, b_up=b_up).verdict == "not_absorbable"


def test_weights_has_inner_bias_means_given():
    from skipsearch._validation import Weights

    eye = np.eye(2)
    assert not Weights(eye, eye, None, None, None, None).has_inner_bias
    assert Weights(eye, eye, np.zeros(2), None, None, None).has_inner_bias
    assert Weights(eye, eye, np.ones(2), None, None, None).has_inner_bias
    assert not Weights(eye, eye, None, np.ones(2), None, None).has_inner_bias


# -- activation names ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "slope, name",
    [
        (0.999999999, "leaky_relu(0.999999999)"),
        (0.2, "leaky_relu(0.2)"),
        (0.01, "leaky_relu(0.01)"),
        (1e-5, "leaky_relu(1e-05)"),
        (2.0, "leaky_relu(2)"),
        (0.0, "leaky_relu(0)"),
        (-0.0, "leaky_relu(0)"),
        (-0.5, "leaky_relu(-0.5)"),
        (0.1 + 0.2, "leaky_relu(0.30000000000000004)"),
        (1 - 2.0**-53, "leaky_relu(0.9999999999999999)"),
    ],
)
def test_leaky_relu_names_are_exact(slope, name):
    act = skipsearch.leaky_relu(slope)
    assert act.name == name
    again = get_activation(act.name)
    assert again == act and again.flip_constant == 1.0 + slope
    assert (
        find_absorbing_subset(np.eye(2), -np.eye(2) / (1.0 + slope), activation=act.name).activation
        == name
    )


@settings(max_examples=300, deadline=None)
@given(
    st.floats(allow_nan=False, allow_infinity=False, width=64).filter(
        lambda s: s not in (1.0, -1.0)
    )
)
def test_activation_names_round_trip(slope):
    act = skipsearch.leaky_relu(slope)
    again = get_activation(act.name)
    assert again == act
    assert again.name == act.name
    assert again.flip_constant == act.flip_constant == 1.0 + slope
    # The name as reported by a result resolves to the same activation.
    assert get_activation(get_activation(f"leaky_relu({slope!r})").name) == act


@pytest.mark.parametrize("name", skipsearch.known_activations())
def test_registry_names_round_trip(name):
    act = get_activation(name)
    assert get_activation(act.name) == act


def test_the_gelu_theorem_is_cited_for_invertible_skips_only():
    # MK26's theorem makes the flip condition necessary for GELU with an
    # identity skip, and so for invertible ones (docs/theory.md §4.4); the
    # kink argument for ReLU needs no such hypothesis.
    rng = np.random.default_rng(7)
    W_up, W_down = rng.standard_normal((6, 3)), rng.standard_normal((3, 6))
    dense = rng.standard_normal((3, 3))
    singular = np.outer(rng.standard_normal(3), rng.standard_normal(3))
    for skip, verdict in (
        (None, "not_absorbable"),
        (2.0, "not_absorbable"),
        (dense, "not_absorbable"),
        (singular, "undecided"),
    ):
        r = find_absorbing_subset(W_up, W_down, activation="gelu", skip=skip)
        assert r.verdict == verdict, (skip, r.reason)
    assert "not proved invertible" in r.reason
    W_down4 = rng.standard_normal((4, 6))
    r = find_absorbing_subset(W_up, W_down4, activation="gelu", skip=rng.standard_normal((4, 3)))
    assert r.verdict == "undecided" and "this skip is rectangular" in r.reason
    r = find_absorbing_subset(W_up, W_down4, activation="relu", skip=rng.standard_normal((4, 3)))
    assert r.verdict == "not_absorbable"


@pytest.mark.parametrize("backend", ["rust", "baseline"])
def test_a_certificate_of_a_subnormal_block_still_proves_its_bound(backend):
    # Scaled back to the skip's units, this Y would be subnormal and lose
    # the bits its proof rests on; any positive multiple proves the same,
    # so it comes back scaled as near those units as no bit is lost.
    h = lambda rows: np.array([[float.fromhex(x) for x in r] for r in rows])  # noqa: E731
    W_up = h([["-0x1.8p-1020", "-0x1p-1022"], ["0x1p-1022", "-0x1.8p-1020"]])
    W_down = h([["0x1p-1", "0x0p+0"], ["0x0p+0", "-0x1p-1"], ["0x0p+0", "-0x1.cp+0"]])
    A = h(
        [
            ["0x1.a66666666bb3ap-1021", "0x0.8ccccccc8d2edp-1022"],
            ["-0x0.0000000098cb2p-1022", "-0x0.000000007338cp-1022"],
            ["0x0.000000012a208p-1022", "0x0.000000004b552p-1022"],
        ]
    )
    find = find_absorbing_subset if backend == "rust" else baseline.find_absorbing_subset
    act = "leaky_relu(0.1)"
    r = find(W_up, W_down, activation=act, skip=A, tol=1e-10)
    assert (r.verdict, r.argument) == ("not_absorbable", "certificate")
    assert r.distance_bound > 1e-10
    proved = skipsearch.check_certificate(r.certificate, W_up, W_down, activation=act, skip=A)
    assert proved > 1e-10


def test_a_numpy_scalar_skip_counts_as_its_dtype_a_python_number_as_float64():
    # The documented default tol: sqrt(eps) of the coarsest data of the flip
    # condition; a numpy scalar skip brings its precision, a Python float
    # does not.
    V = -np.eye(2) * (1 + 2**-20)  # off by 9.5e-7: within float32's tol only
    r64 = skipsearch.find_absorbing_subset(np.eye(2), V, skip=1.0)
    r32 = skipsearch.find_absorbing_subset(np.eye(2), V, skip=np.float32(1.0))
    assert r64.tolerance == pytest.approx(np.sqrt(np.finfo(np.float64).eps))
    assert r32.tolerance == pytest.approx(np.sqrt(np.finfo(np.float32).eps))
    assert (r64.verdict, r32.verdict) == ("not_absorbable", "absorbable")
