"""Bad input gets a clear error naming the argument; layouts and dtypes
do not change the answer; nothing the user passes is modified."""

from __future__ import annotations

import numpy as np
import pytest
import skipsearch
from skipsearch import baseline

from tests.conftest import planted_block

find = skipsearch.find_absorbing_subset


@pytest.fixture
def block(rng):
    return rng.standard_normal((6, 3)), rng.standard_normal((3, 6))


def test_transposed_down_projection_names_both_shapes(block):
    W_up, W_down = block
    with pytest.raises(ValueError, match=r"W_down has shape \(6, 3\) but W_up has shape \(6, 3\)"):
        find(W_up, W_down.T)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("argument", ["W_up", "W_down", "b_up", "skip"])
def test_non_finite_values_are_rejected(block, bad, argument):
    W_up, W_down = block
    kwargs = {"W_up": W_up.copy(), "W_down": W_down.copy(), "b_up": np.zeros(6), "skip": np.eye(3)}
    kwargs[argument].flat[1] = bad
    with pytest.raises(ValueError, match=f"{argument} contains NaN or Inf"):
        find(**kwargs)


def test_complex_and_non_numeric_dtypes(block):
    W_up, W_down = block
    with pytest.raises(TypeError, match="W_up has complex dtype"):
        find(W_up.astype(complex), W_down)
    with pytest.raises(TypeError, match="W_down has dtype bool"):
        find(W_up, W_down > 0)
    with pytest.raises(TypeError, match="W_up has dtype"):
        find(np.array([["a", "b"]]), W_down)
    with pytest.raises(TypeError, match="W_up is required"):
        find(None, W_down)


def test_wrong_dimensions(block):
    W_up, W_down = block
    with pytest.raises(
        ValueError, match=r"W_up must be 2-D with shape \(m, d_in\), got shape \(18,\)"
    ):
        find(W_up.ravel(), W_down)
    with pytest.raises(ValueError, match=r"b_up has shape \(5,\), expected \(6,\)"):
        find(W_up, W_down, b_up=np.zeros(5))
    with pytest.raises(ValueError, match=r"b_down has shape \(6,\), expected \(3,\)"):
        find(W_up, W_down, b_down=np.zeros(6))


def test_skip_shapes(rng):
    W_up, W_down = rng.standard_normal((6, 4)), rng.standard_normal((3, 6))
    with pytest.raises(
        ValueError, match=r"skip=None \(the identity\) needs d_in == d_out.*d_in=4.*d_out=3"
    ):
        find(W_up, W_down)
    with pytest.raises(ValueError, match=r"skip=2 \(alpha \* I\) needs d_in == d_out"):
        find(W_up, W_down, skip=2.0)
    with pytest.raises(
        ValueError, match=r"skip has shape \(4, 3\), expected \(d_out, d_in\) = \(3, 4\)"
    ):
        find(W_up, W_down, skip=np.zeros((4, 3)))
    with pytest.raises(TypeError, match="skip must be None, a real number"):
        find(np.eye(2), np.eye(2), skip=True)
    assert find(W_up, W_down, skip=rng.standard_normal((3, 4))).verdict == "not_absorbable"


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"tol": 0.0}, ValueError, r"tol must lie in \(0, 1\)"),
        ({"tol": 2.0}, ValueError, r"tol must lie in \(0, 1\)"),
        ({"tol": "1e-3"}, TypeError, "tol must be a real number"),
        ({"threads": 0}, ValueError, "threads must be between 1 and 1024"),
        ({"threads": 1.5}, TypeError, "threads must be a positive integer"),
        ({"node_limit": -1}, ValueError, "node_limit must be a finite non-negative"),
        ({"node_limit": 2.5}, TypeError, "node_limit must be an integer"),
        ({"time_limit": float("nan")}, ValueError, "time_limit must be a finite non-negative"),
        ({"activation": 3}, TypeError, "activation must be a registry name"),
    ],
)
def test_bad_options(block, kwargs, error, match):
    with pytest.raises(error, match=match):
        find(*block, skip=np.zeros((3, 3)) + 1, **kwargs)


def test_leaky_relu_slope_checked():
    with pytest.raises(ValueError, match="negative_slope"):
        skipsearch.leaky_relu(1.0)
    with pytest.raises(TypeError, match="negative_slope"):
        skipsearch.leaky_relu("steep")


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int64, np.int8])
def test_low_precision_and_integer_inputs_are_widened(dtype):
    W_up = np.array([[1, 0], [0, 1], [1, 1]], dtype=dtype)
    W_down = np.array([[-1, 0, 0], [0, -1, 0]], dtype=dtype)
    r = find(W_up, W_down)
    assert r.verdict == "absorbable" and r.subset.tolist() == [0, 1]
    eps = np.finfo(dtype).eps if np.issubdtype(dtype, np.floating) else np.finfo(np.float64).eps
    assert r.tolerance == pytest.approx(np.sqrt(eps))


def test_layouts_give_the_same_answer(rng):
    kwargs, S, _ = planted_block(rng, 4, 4, 12, 5, bias=True)
    W_up, W_down = kwargs["W_up"], kwargs["W_down"]
    ref = find(**kwargs)
    layouts = {
        "fortran": (np.asfortranarray(W_up), np.asfortranarray(W_down)),
        "strided": (np.repeat(W_up, 2, axis=1)[:, ::2], np.repeat(W_down, 3, axis=0)[::3]),
        "negative": (W_up[::-1].copy()[::-1], W_down[:, ::-1].copy()[:, ::-1]),
        "transposed_view": (np.ascontiguousarray(W_up.T).T, np.ascontiguousarray(W_down.T).T),
    }
    assert layouts["negative"][0].strides[0] < 0 and layouts["negative"][1].strides[1] < 0
    for name, (u, d) in layouts.items():
        np.testing.assert_array_equal(u, W_up)
        r = find(u, d, b_up=kwargs["b_up"], b_down=kwargs["b_down"])
        assert r.subset.tolist() == ref.subset.tolist() == S.tolist(), name
        assert r.residual == ref.residual, name
    gen = rng.standard_normal((8, 3)), rng.standard_normal((3, 8))
    ref = find(*gen)
    r = find(gen[0][::-1].copy()[::-1], np.asfortranarray(gen[1]))
    assert r.relaxation_distance == ref.relaxation_distance


def test_inputs_are_not_modified(rng):
    kwargs, _, _ = planted_block(rng, 3, 3, 9, 4, bias=True)
    kwargs["skip"] = np.eye(3)
    before = {k: v.copy() for k, v in kwargs.items()}
    for v in kwargs.values():
        v.flags.writeable = True
    r = find(**kwargs)
    skipsearch.build_skip_free_block(
        kwargs["W_up"], kwargs["W_down"], r.subset, b_up=kwargs["b_up"], b_down=kwargs["b_down"]
    )
    for k, v in kwargs.items():
        np.testing.assert_array_equal(v, before[k])
        assert v.flags.writeable, k
    # Read-only inputs are fine too.
    for v in kwargs.values():
        v.flags.writeable = False
    assert find(**kwargs).subset.tolist() == r.subset.tolist()


@pytest.mark.parametrize("backend", [find, baseline.find_absorbing_subset])
def test_zero_width_block_is_answered(backend):
    # Zero neurons: both engines give the same answer (the baseline once crashed).
    r = backend(np.zeros((0, 3)), np.zeros((3, 0)))
    assert r.verdict == "not_absorbable" and r.argument == "certificate"
    assert r.relaxation_distance == pytest.approx(1.0)
    assert r.distance_bound == pytest.approx(1.0)
    r = backend(np.zeros((0, 3)), np.zeros((3, 0)), skip=0.0)
    assert r.verdict == "absorbable" and r.subset.tolist() == []
    with pytest.raises(ValueError, match="d_in and d_out must be at least 1"):
        backend(np.zeros((3, 0)), np.zeros((0, 3)))


def test_lists_are_accepted():
    r = find([[1.0]], [[-1.0]])
    assert r.subset.tolist() == [0]


def test_build_block_rejects_bad_subsets(block):
    W_up, W_down = block
    with pytest.raises(ValueError, match=r"subset must hold integer neuron indices in \[0, 6\)"):
        skipsearch.build_skip_free_block(W_up, W_down, [7])
    with pytest.raises(ValueError, match="must not repeat"):
        skipsearch.build_skip_free_block(W_up, W_down, [1, 1])
    with pytest.raises(ValueError, match="not flip-linear"):
        skipsearch.build_skip_free_block(W_up, W_down, [1], activation="tanh")


def test_result_repr_is_readable(block):
    r = find(*block, skip=np.ones((3, 3)))
    text = repr(r)
    assert text.startswith("AbsorptionResult(") and "verdict: not_absorbable" in text
    assert "relaxation_distance" in text and "certificate: Y, shape (3, 3)" in text
    with pytest.raises(AttributeError):
        r.verdict = "absorbable"
    W_up, W_down = np.eye(3), -np.eye(3)
    built = find(W_up, W_down).block
    assert repr(built) == "SkipFreeBlock(d_in=3, m=3, d_out=3, activation='relu')"


def test_masked_and_ragged_inputs(block):
    W_up, W_down = block
    masked = np.ma.masked_array(W_up, mask=np.zeros_like(W_up, dtype=bool))
    masked.mask[0, 0] = True
    with pytest.raises(TypeError, match="W_up has masked entries"):
        find(masked, W_down)
    with pytest.raises(ValueError, match="W_down is not a rectangular numeric array"):
        find(W_up, [[1.0, 2.0], [3.0]])


def test_hand_made_activations_are_checked(block):
    bad = skipsearch.Activation("abs", "flip_linear", np.abs, flip_constant=None)
    with pytest.raises(ValueError, match="needs a finite nonzero flip_constant"):
        find(*block, skip=np.ones((3, 3)), activation=bad)
    odd = skipsearch.Activation("odd", "flip_linear", np.abs, flip_constant=1.0, genericity="x")
    with pytest.raises(ValueError, match="genericity one of"):
        find(*block, skip=np.ones((3, 3)), activation=odd)
    # A hand-made flip-linear activation without a necessity claim is
    # sufficient-only: "no flip set" is undecided, not a theorem's verdict.
    mine = skipsearch.Activation("mine", "flip_linear", lambda z: z, flip_constant=2.0)
    assert find(*block, skip=np.ones((3, 3)), activation=mine).verdict == "undecided"
    with pytest.raises(TypeError, match="negative_slope"):
        skipsearch.leaky_relu(True)


def test_option_errors_are_not_blamed_on_a_block(block):
    with pytest.raises(ValueError, match=r"^threads must be"):
        skipsearch.decide_stack([{"W_up": block[0], "W_down": block[1], "skip": 0.0}], threads=0)


def test_helpers_check_their_arguments(block):
    W_up, W_down = block
    with pytest.raises(ValueError, match=r"W_up must be 2-D"):
        skipsearch.build_skip_free_block(W_up.ravel(), W_down, [0])
    r = find(np.eye(2), -np.eye(2))
    for bad in (0, -1, 2.5, "5"):
        with pytest.raises(ValueError, match="n_samples must be a positive integer"):
            skipsearch.max_abs_difference(r.block, np.eye(2), -np.eye(2), n_samples=bad)
    with pytest.raises(ValueError, match="scale must be a finite positive number"):
        skipsearch.max_abs_difference(r.block, np.eye(2), -np.eye(2), scale=float("nan"))
