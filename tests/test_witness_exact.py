"""The witness block in exact arithmetic: its b_down is the float64 nearest
b_down + c W_down[:, S] b_up[S], even where large neurons cancel, and the
block it gives matches A x + f(x) up to that rounding alone."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import skipsearch
from skipsearch import _error_free

RELU_C = Fraction(1)
LEAKY_C = Fraction(1) + Fraction(0.2)  # 1 + the float64 slope, not a float64 itself


def cancelling_block(rng, d, pairs, e, *, perm=True):
    """Neuron pairs with W_down entries +-2^e whose rows (u, b_up) differ by
    small multiples of 2^-e; per output j the row differences sum to
    2^-e e_j, so W_down W_up = -I exactly (checked in Fractions by callers)
    while every partial sum in float64 is of size 2^e."""
    m = 2 * pairs * d
    W_up = rng.uniform(1.0, 2.0, (m, d))
    W_down = np.zeros((d, m))
    b_up = rng.uniform(1.0, 2.0, m)
    k = 0
    for j in range(d):
        total = np.zeros(d)
        for p in range(pairs):
            a, b = k, k + 1
            k += 2
            if p < pairs - 1:
                delta = rng.integers(-4, 5, d) * 2.0**-e
            else:
                delta = -total
                delta[j] += 2.0**-e
            total = total + delta
            W_up[b] = W_up[a] + delta
            # Bias differences with bits below b_up's own ulp times 2^e: the
            # float64 sum of the products rounds.
            b_up[b] = b_up[a] + rng.integers(-4, 5) * 2.0**-e + rng.uniform(-1, 1) * 2.0**-40
            W_down[j, a], W_down[j, b] = 2.0**e, -(2.0**e)
    if perm:
        order = rng.permutation(m)
        W_up, W_down, b_up = W_up[order], W_down[:, order], b_up[order]
    return W_up, W_down, b_up


def fr(x):
    return np.vectorize(Fraction, otypes=[object])(np.asarray(x, dtype=np.float64))


def exact_matmul(P, Q):
    return np.array(
        [
            [sum(P[i, k] * Q[k, j] for k in range(P.shape[1])) for j in range(Q.shape[1])]
            for i in range(P.shape[0])
        ],
        dtype=object,
    )


def exact_flip_bias(W_down, b_up, b_down, S, c):
    """b_down + c W_down[:, S] b_up[S] in Fractions, one per output."""
    Wd, bu, bd = fr(W_down), fr(b_up), fr(b_down)
    return [bd[j] + c * sum(Wd[j, i] * bu[i] for i in S) for j in range(len(bd))]


def exact_relu_block(W_up, b_up, W_down, b_down, x, slope=Fraction(0)):
    """W_down act(W_up x + b_up) + b_down in Fractions (LeakyReLU with the slope)."""
    z = [sum(W_up[i, k] * x[k] for k in range(len(x))) + b_up[i] for i in range(W_up.shape[0])]
    h = [zi if zi >= 0 else slope * zi for zi in z]
    return [
        sum(W_down[j, i] * h[i] for i in range(len(h))) + b_down[j] for j in range(W_down.shape[0])
    ]


def half_ulp(v: float) -> Fraction:
    return Fraction(np.spacing(abs(v))) / 2


@pytest.mark.parametrize("activation, c", [("relu", RELU_C), ("leaky_relu(0.2)", LEAKY_C)])
def test_bias_is_the_nearest_float_under_cancellation(activation, c):
    mismatched_by_plain_float = 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        W_up, W_down, b_up = cancelling_block(rng, 3, 4, 52)
        b_down = rng.standard_normal(3)
        S = np.arange(W_up.shape[0])
        block = skipsearch.build_skip_free_block(
            W_up, W_down, S, activation=activation, b_up=b_up, b_down=b_down
        )
        want = [float(v) for v in exact_flip_bias(W_down, b_up, b_down, S, c)]
        assert block.b_down.tolist() == want
        plain = b_down + float(c) * (W_down[:, S] @ b_up[S])
        mismatched_by_plain_float += not np.array_equal(plain, want)
    # The instances are hard: the plain float64 expression misses some.
    assert mismatched_by_plain_float >= 3


def test_found_block_is_the_flip_construction_exactly():
    """The decision's own witness on a block absorbed by all neurons: the
    exact function of r.block differs from x + f(x) by less than half an ulp
    of each b_down entry, at every x (the gap is the constant b_down' - exact)."""
    rng = np.random.default_rng(0)
    W_up, W_down, b_up = cancelling_block(rng, 2, 3, 52)
    b_down = np.array([0.375, -1.5])
    Wu, Wd = fr(W_up), fr(W_down)
    assert (exact_matmul(Wd, Wu) == -np.eye(2, dtype=object)).all()
    r = skipsearch.find_absorbing_subset(W_up, W_down, b_up=b_up, b_down=b_down)
    assert r.verdict == "absorbable"
    S = r.subset.tolist()
    exact_b = exact_flip_bias(W_down, b_up, b_down, S, RELU_C)
    assert r.block.b_down.tolist() == [float(v) for v in exact_b]
    g = r.block
    for x in (np.array([0.5, -2.0]), np.array([3.0, 1.25]), np.array([-7.0, 0.0])):
        xs = fr(x)
        lhs = exact_relu_block(fr(g.W_up), fr(g.b_up), fr(g.W_down), fr(g.b_down), xs)
        rhs = exact_relu_block(Wu, fr(b_up), Wd, fr(b_down), xs)
        for j in range(2):
            target = rhs[j] + xs[j]
            assert abs(lhs[j] - target) <= half_ulp(g.b_down[j])
            assert lhs[j] - target == Fraction(g.b_down[j]) - exact_b[j]


def test_pairs_at_two_to_fifty_three_keep_their_last_bits():
    """W_down entries +-2^53 on biases one ulp apart: the exact sum is 0, and
    summed left to right in float64 it is -2 (5 2^52 + 2 is a tie that
    rounds to even)."""
    W_down = np.array([[2.0**53, 2.0**53, -(2.0**53), -(2.0**53)], [0.0, 0.0, 0.0, 1.0]])
    b_up = np.array([1.5, 1.0 + 2.0**-52, 1.5 + 2.0**-52, 1.0])
    W_up = np.ones((4, 3))
    S = np.arange(4)
    block = skipsearch.build_skip_free_block(W_up, W_down, S, b_up=b_up, b_down=[0.0, -2.0])
    assert exact_flip_bias(W_down, b_up, [0.0, -2.0], S, RELU_C) == [0, -1]
    assert block.b_down.tolist() == [0.0, -1.0]
    assert np.array_equal(block.W_up, -W_up) and np.array_equal(block.b_up, -b_up)
    assert np.array_equal(block.W_down, W_down)


def test_ties_and_extreme_exponents_take_the_exact_route():
    # 1 + 2^-53 is halfway between 1 and its successor: ties go to even (1.0).
    W = np.array([[1.0], [1.0], [2.0**-300]])
    v = np.array([2.0**-53])
    got = _error_free.rounded_flip_sum(W, np.array([0]), v, 1.0, 0.0, [np.array([1.0, 3.0, 0.0])])
    assert got.tolist() == [1.0, float(Fraction(3) + Fraction(2) ** -53), 2.0**-353]
    # Products far outside the range of Dekker's TwoProduct, and subnormals.
    rng = np.random.default_rng(3)
    for _ in range(30):
        n = int(rng.integers(1, 9))
        W = rng.standard_normal((4, n)) * 2.0 ** rng.integers(-600, 600, (4, n)).astype(float)
        v = rng.standard_normal(n) * 2.0 ** rng.integers(-500, 500, n).astype(float)
        W[0, 0] = 5e-324
        extra = rng.standard_normal(4) * 2.0 ** rng.integers(-1000, 900, 4).astype(float)
        c = Fraction(1.2) + Fraction(-4.440892098500626e-17)
        exact = [
            Fraction(extra[j]) + c * sum(Fraction(W[j, i]) * Fraction(v[i]) for i in range(n))
            for j in range(4)
        ]
        want = []
        for e in exact:
            try:
                want.append(float(e))
            except OverflowError:
                want.append(None)
        if None in want:
            with pytest.raises(OverflowError, match="entry"):
                _error_free.rounded_flip_sum(
                    W, np.arange(n), v, 1.2, -4.440892098500626e-17, [extra]
                )
            continue
        got = _error_free.rounded_flip_sum(W, np.arange(n), v, 1.2, -4.440892098500626e-17, [extra])
        assert got.tolist() == want


@pytest.mark.parametrize("c_lo", [0.0, -4.440892098500626e-17])
def test_random_sums_are_correctly_rounded(c_lo):
    rng = np.random.default_rng(11)
    c = Fraction(1.2) + Fraction(c_lo)
    for _ in range(40):
        R, n = 5, int(rng.integers(1, 60))
        W = rng.standard_normal((R, n)) * 2.0 ** rng.integers(-30, 30, (R, n)).astype(float)
        # Half the columns cancel the other half up to a last-bit difference.
        half = n // 2
        v = rng.standard_normal(n)
        if half:
            W[:, half : 2 * half] = -W[:, :half]
            v[half : 2 * half] = np.nextafter(v[:half], np.inf)
        extra = rng.standard_normal(R)
        got = _error_free.rounded_flip_sum(W, np.arange(n), v, 1.2, c_lo, [extra])
        want = [
            float(
                Fraction(extra[j]) + c * sum(Fraction(W[j, i]) * Fraction(v[i]) for i in range(n))
            )
            for j in range(R)
        ]
        assert got.tolist() == want


def test_a_bias_beyond_float64_leaves_no_block():
    # c W_down W_up = -1 = -A, and b_down' = -2^500 * 2^525 overflows.
    W_up, W_down, b_up = [[2.0**-500]], [[-(2.0**500)]], [2.0**525]
    with pytest.raises(ValueError, match="beyond float64's range in entry 0"):
        skipsearch.build_skip_free_block(W_up, W_down, [0], b_up=b_up)
    # The core reports such weights as overflowing before any flip set, so
    # the result is assembled here from what a search reporting S = {0} gives.
    from skipsearch import absorption
    from skipsearch._validation import Weights
    from skipsearch.activations import get_activation
    from skipsearch.result import SearchStats

    act = get_activation("relu")
    raw = {"finding": "subset", "subset": [0], "residual": 0.0, "method": ["relaxation"]}
    raw.update(nodes=0, seconds=0.0)
    common = dict(
        activation="relu", activation_class="flip_linear", flip_constant=1.0, stats=SearchStats()
    )
    w = Weights(W_up, W_down, b_up, None, None, 1.0)
    r = absorption._from_search(raw, act, w, 1e-8, common, "rust")
    assert r.verdict == "absorbable" and r.block is None
    assert "none is returned" in r.reason and "beyond float64's range in entry 0" in r.reason


def test_inputs_are_not_modified_and_zero_biases_are_copied():
    rng = np.random.default_rng(5)
    W_up, W_down, b_up = cancelling_block(rng, 2, 2, 40)
    b_down = rng.standard_normal(2)
    saved = [a.copy() for a in (W_up, W_down, b_up, b_down)]
    block = skipsearch.build_skip_free_block(W_up, W_down, [0, 3], b_up=b_up, b_down=b_down)
    for a, b in zip((W_up, W_down, b_up, b_down), saved):
        assert np.array_equal(a, b)
    assert block.b_down is not b_down
    no_bias = skipsearch.build_skip_free_block(W_up, W_down, [0, 3], b_down=b_down)
    assert np.array_equal(no_bias.b_down, b_down) and no_bias.b_down is not b_down


def test_two_product_is_error_free_across_the_safe_range():
    rng = np.random.default_rng(21)
    a = rng.uniform(-2, 2, 4000) * 2.0 ** rng.integers(-450, 449, 4000).astype(float)
    b = rng.uniform(-2, 2, 4000) * 2.0 ** rng.integers(-450, 449, 4000).astype(float)
    a[:8] = [2.0**449, -(2.0**-449), 1.0 - 2.0**-53, 3.0, 0.0, 2.0**-450, 1.5, -7.0]
    p, e = _error_free.two_product(a, b)
    for x, y, hi, lo in zip(a, b, p, e):
        assert Fraction(hi) + Fraction(lo) == Fraction(x) * Fraction(y)


@pytest.mark.parametrize("c_hi, c_lo", [(1.0, 0.0), (1.2, -4.440892098500626e-17), (0.75, 0.0)])
def test_values_a_hair_from_a_rounding_boundary(c_hi, c_lo):
    """Long sums of terms near 2^40 that cancel exactly, plus c tau, plus
    extras 1 and 2^-53 whose sum is the halfway point between 1 and its
    successor: tau of 0 or +-2^-80 is inside the fast path's error bound
    (the exact route decides), +-2^-30 outside it."""
    c = Fraction(c_hi) + Fraction(c_lo)
    rng = np.random.default_rng(17)
    n = 3000
    W = rng.standard_normal((5, n + 1)) * 2.0**40
    v = rng.standard_normal(n + 1)
    W[:, n // 2 : n] = -W[:, : n // 2]
    v[n // 2 : n] = v[: n // 2]
    W[:, n] = [0.0, 2.0**-80, -(2.0**-80), 2.0**-30, -(2.0**-30)]
    v[n] = 1.0
    extras = [np.ones(5), np.full(5, 2.0**-53)]
    got = _error_free.rounded_flip_sum(W, np.arange(n + 1), v, c_hi, c_lo, extras)
    Wf, vf = fr(W), fr(v)
    for j in range(5):
        main = sum(Wf[j, i] * vf[i] for i in range(n))
        assert main == 0
        exact = 1 + Fraction(2) ** -53 + c * (main + Wf[j, n] * vf[n])
        assert got[j] == float(exact)
    assert got[0] == 1.0  # the tie goes to even
