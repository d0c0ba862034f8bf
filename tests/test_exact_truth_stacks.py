"""Stack verdicts against exact ground truth.

The depth theorem proves a stack of gated (gate(0) = 0) or homogeneous
(degree k >= 2) blocks not absorbable by comparing Jacobians at 0: a
skip-free stack of these kinds has Jacobian 0 there, the residual stack
(without inner biases, and with no ``b_down`` before the last block moving
the origin) has the product ``A_L ... A_1`` of its skips. So "not
absorbable" is right exactly when that product is nonzero, which these
tests compute in rational arithmetic (``fractions.Fraction``), never with
skipsearch. Every other stack of these kinds must be "undecided" (or
"absorbable" when every skip is zero), never "not_absorbable".
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import skipsearch
from skipsearch import _depth

GATED = ("swiglu", "geglu", "reglu", "bilinear")


def _cube(z):
    return z**3


#: Hand-made activations: a homogeneous one of degree 3 and a gate known only at 0.
CUBE = skipsearch.Activation("cube", "homogeneous", _cube, degree=3)
TANH_GATE = skipsearch.Activation(
    "tanh_gate", "gated", np.tanh, gate_at_zero=0.0, gate_differentiable=True
)


# -- exact helpers (no skipsearch) ------------------------------------------------------------


def exact(a):
    """A float64 matrix as rows of Fractions (every float64 is a rational)."""
    return [[Fraction(float(v)) for v in row] for row in np.asarray(a, dtype=np.float64)]


def exact_matmul(a, b):
    cols = list(zip(*b))
    return [[sum((x * y for x, y in zip(row, col)), Fraction(0)) for col in cols] for row in a]


def exact_skip_product(skips, widths):
    """``A_L ... A_1`` exactly; ``skips[k]`` is None, a float (``alpha I``) or
    a matrix, ``widths[k]`` the block's ``(d_in, d_out)``."""
    product = None
    for skip, (d_in, d_out) in zip(skips, widths):
        if skip is None or np.ndim(skip) == 0:
            alpha = Fraction(1.0 if skip is None else float(skip))
            a = [[alpha if i == j else Fraction(0) for j in range(d_in)] for i in range(d_out)]
        else:
            a = exact(skip)
        product = a if product is None else exact_matmul(a, product)
    return product


def is_zero(matrix):
    return all(v == 0 for row in matrix for v in row)


def exact_relu2_stack(blocks, x):
    """The residual stack of relu2 blocks at ``x``, exactly."""
    y = [Fraction(float(v)) for v in x]
    for blk in blocks:
        A = exact(blk["skip"])
        up, down = exact(blk["W_up"]), exact(blk["W_down"])
        pre = [sum((u * v for u, v in zip(row, y)), Fraction(0)) for row in up]
        hidden = [max(z, Fraction(0)) ** 2 for z in pre]
        y = [
            sum((a * v for a, v in zip(A[p], y)), Fraction(0))
            + sum((w * h for w, h in zip(down[p], hidden)), Fraction(0))
            for p in range(len(down))
        ]
    return y


# -- the zero map: two rank-deficient skips whose product vanishes ------------------------------


def zero_map_stack(first, second, second_skip=(0.0, 1.0)):
    """Block 1 keeps only coordinate 0 and outputs 0 in coordinate 1 (skip
    diag(1, 0), zero second row of W_down); block 2 reads only coordinate 1
    (zero first column of W_up) and keeps only it (skip diag(0, 1)). The
    stack is the zero map."""
    W_up1 = np.array([[1.0, 0.5], [-1.0, 2.0], [0.25, -1.0]])
    W_down1 = np.array([[1.0, -2.0, 0.5], [0.0, 0.0, 0.0]])
    W_up2 = np.array([[0.0, 1.0], [0.0, -0.5], [0.0, 3.0]])
    W_down2 = np.array([[1.0, 1.0, -1.0], [2.0, -1.0, 0.5]])
    gate = np.array([[0.5, -1.0], [1.0, 1.0], [-2.0, 0.25]])
    blocks = [
        dict(W_up=W_up1, W_down=W_down1, activation=first, skip=np.diag([1.0, 0.0])),
        dict(W_up=W_up2, W_down=W_down2, activation=second, skip=np.diag(second_skip)),
    ]
    for blk in blocks:
        if skipsearch.get_activation(blk["activation"]).gated:
            blk["W_gate"] = gate
    return blocks


PAIRS = [("swiglu", "swiglu"), ("geglu", "relu2"), ("relu2", "relu2"), ("reglu", "bilinear")]


@pytest.mark.parametrize("first, second", PAIRS)
def test_a_stack_that_is_the_zero_map_is_not_called_not_absorbable(first, second):
    blocks = zero_map_stack(first, second)
    # Ground truth: A_2 A_1 = 0 exactly, and the stack is the zero map (block
    # 1's output has coordinate 1 exactly 0, which is all block 2 reads and
    # keeps), which the two skip-free MLPs with W_down = 0 compute too.
    widths = [(2, 2), (2, 2)]
    assert is_zero(exact_skip_product([b["skip"] for b in blocks], widths))
    if (first, second) == ("relu2", "relu2"):
        rng = np.random.default_rng(1)
        for x in rng.integers(-8, 9, size=(6, 2)) / 4:
            assert exact_relu2_stack(blocks, x) == [0, 0]
    r = skipsearch.decide_stack(blocks)
    assert r.verdict == "undecided"
    assert "product A_L ... A_1 of the skips is zero" in r.reason
    # Each block alone is not absorbable: the per-block verdicts do not carry over.
    assert [b.verdict for b in r.blocks] == ["not_absorbable", "not_absorbable"]


@pytest.mark.parametrize("first, second", PAIRS)
def test_the_same_stack_with_a_nonzero_product_is_not_absorbable(first, second):
    blocks = zero_map_stack(first, second, second_skip=(1.0, 1.0))
    product = exact_skip_product([b["skip"] for b in blocks], [(2, 2), (2, 2)])
    assert product == [[1, 0], [0, 0]]
    r = skipsearch.decide_stack(blocks)
    assert r.verdict == "not_absorbable" and "depth theorem" in r.reason


def test_the_relu2_stack_jacobian_at_zero_is_the_skip_product():
    # The fact the theorem rests on, checked exactly on a rational stack:
    # (R(t e_j) - R(0)) / t -> (A_2 A_1) e_j, off by O(t).
    blocks = zero_map_stack("relu2", "relu2", second_skip=(1.0, 1.0))
    product = exact_skip_product([b["skip"] for b in blocks], [(2, 2), (2, 2)])
    t = Fraction(1, 2**30)
    for j in range(2):
        x = [float(t) if i == j else 0.0 for i in range(2)]
        y = exact_relu2_stack(blocks, x)
        for p in range(2):
            assert abs(y[p] / t - product[p][j]) < Fraction(1, 2**20)


# -- the hypotheses: biases and hand-made gates ---------------------------------------------


def gated_pair(rng, **second):
    W = [rng.standard_normal(s) for s in ((5, 3), (3, 5), (5, 3))]
    first = dict(W_up=W[0], W_down=W[1], W_gate=W[2], activation="swiglu")
    return [first, dict(first, **second)]


def test_b_down_before_the_last_block_is_undecided(rng):
    blocks = gated_pair(rng)
    assert skipsearch.decide_stack(blocks).verdict == "not_absorbable"
    # In the last block it only shifts the output: still not absorbable.
    last = gated_pair(rng, b_down=np.ones(3))
    assert skipsearch.decide_stack(last).verdict == "not_absorbable"
    # Zeros move nothing.
    blocks[0]["b_down"] = np.zeros(3)
    assert skipsearch.decide_stack(blocks).verdict == "not_absorbable"
    blocks[0]["b_down"] = np.array([0.0, 2.0**-1074, 0.0])
    r = skipsearch.decide_stack(blocks)
    assert r.verdict == "undecided"
    assert "blocks[0] has a nonzero b_down" in r.reason


def test_inner_biases_anywhere_are_undecided(rng):
    blocks = gated_pair(rng)
    blocks[1]["b_up"] = np.zeros(5)
    r = skipsearch.decide_stack(blocks)
    assert r.verdict == "undecided" and "blocks[1] has inner biases" in r.reason


def test_a_gate_bias_anywhere_is_undecided(rng):
    # A bilinear block with a gate bias is absorbable: x + (x + 1) x equals
    # (x + 2) x, the skip-free block with b_gate = 2. The depth theorem needs
    # blocks without inner biases, so the stack cannot be "not absorbable".
    block = dict(
        W_up=np.array([[1.0]]),
        W_down=np.array([[1.0]]),
        W_gate=np.array([[1.0]]),
        b_gate=np.array([1.0]),
        activation="bilinear",
    )
    x = np.linspace(-3, 3, 13)
    assert np.allclose(x + (x + 1) * x, (x + 2) * x)
    for blocks in ([block], [block, block], [block, skipsearch.MLPBlock(**block)]):
        r = skipsearch.decide_stack(blocks)
        assert r.verdict == "undecided"
        assert "blocks[0] has inner biases (b_gate was given)" in r.reason
    blocks = gated_pair(rng)
    blocks[1]["b_gate"] = np.zeros(5)
    r = skipsearch.decide_stack(blocks)
    assert r.verdict == "undecided" and "blocks[1] has inner biases (b_gate" in r.reason


def test_a_hand_made_gate_is_trusted_only_in_the_first_block(rng):
    W = [rng.standard_normal(s) for s in ((5, 3), (3, 5), (5, 3))]
    hand = dict(W_up=W[0], W_down=W[1], W_gate=W[2], activation=TANH_GATE)
    reg = dict(hand, activation="geglu")
    assert skipsearch.decide_stack([hand, reg]).verdict == "not_absorbable"
    r = skipsearch.decide_stack([reg, hand])
    assert r.verdict == "undecided"
    assert "blocks[1]" in r.reason and "locally Lipschitz" in r.reason
    # A hand-made gate that is homogeneous (degree 2: the gate is 1-homogeneous)
    # is locally Lipschitz, so it counts anywhere.
    hom = skipsearch.Activation("abs_gate", "gated", np.abs, degree=2, gate_at_zero=0.0)
    assert skipsearch.decide_stack([reg, dict(hand, activation=hom)]).verdict == "not_absorbable"


def test_stack_widths_must_compose():
    blocks = [
        {"W_up": np.eye(2), "W_down": np.eye(2), "activation": "relu2"},
        {"W_up": np.eye(3), "W_down": np.eye(3), "activation": "relu2"},
    ]
    with pytest.raises(ValueError) as info:
        skipsearch.decide_stack(blocks)
    message = str(info.value)
    assert "blocks[0]" in message and "blocks[1]" in message
    assert "width 2" in message and "width 3" in message
    # Rectangular blocks with matrix skips compose: 3 -> 2 -> 4.
    rect = [
        {"W_up": np.ones((4, 3)), "W_down": np.ones((2, 4)), "skip": np.ones((2, 3))},
        {"W_up": np.ones((4, 2)), "W_down": np.ones((4, 4)), "skip": np.ones((4, 2))},
    ]
    for blk in rect:
        blk["activation"] = "relu2"
    assert skipsearch.decide_stack(rect).verdict == "not_absorbable"
    with pytest.raises(ValueError, match=r"blocks\[0\] and blocks\[1\] do not compose"):
        skipsearch.decide_stack(rect[::-1])


# -- seeded property loop: random stacks against the exact rule --------------------------------


def _random_skip(rng, d_in, d_out):
    """None, a scalar (0 included) or a small integer matrix (often
    rank-deficient), scaled by a power of two."""
    kinds = ["matrix", "rank1", "zero_rows"] + (["none", "scalar"] if d_in == d_out else [])
    kind = kinds[rng.integers(len(kinds))]
    if kind == "none":
        return None
    if kind == "scalar":
        return float(rng.choice([0.0, 1.0, -0.5, 3.0]))
    if kind == "rank1":
        a = np.outer(rng.integers(-2, 3, d_out), rng.integers(-2, 3, d_in)).astype(float)
    else:
        a = rng.integers(-2, 3, size=(d_out, d_in)).astype(float)
        if kind == "zero_rows":
            a[rng.random(d_out) < 0.5] = 0.0
    return a * 2.0 ** int(rng.integers(-40, 41))


def _random_stack(rng):
    L = int(rng.integers(1, 4))
    widths = [int(rng.integers(1, 4)) for _ in range(L + 1)]
    blocks = []
    for k in range(L):
        d_in, d_out = widths[k], widths[k + 1]
        m = int(rng.integers(1, 4))
        act = [*GATED, "relu2", CUBE, TANH_GATE][rng.integers(len(GATED) + 3)]
        blk = dict(
            W_up=rng.standard_normal((m, d_in)),
            W_down=rng.standard_normal((d_out, m)),
            activation=act,
            skip=_random_skip(rng, d_in, d_out),
        )
        if skipsearch.get_activation(act).gated:
            blk["W_gate"] = rng.standard_normal((m, d_in))
        if rng.random() < 0.15:
            blk["b_up"] = np.zeros(m)
        r = rng.random()
        if r < 0.2:
            blk["b_down"] = rng.standard_normal(d_out)
        elif r < 0.4:
            blk["b_down"] = np.zeros(d_out)
        blocks.append(blk)
    return blocks, [(widths[k], widths[k + 1]) for k in range(L)]


def _expected(blocks, widths):
    """The verdict the exact rule gives."""
    skips = [b["skip"] for b in blocks]

    def zero_skip(s, w):
        return is_zero(exact_skip_product([s], [w]))

    if all(zero_skip(s, w) for s, w in zip(skips, widths)):
        return "absorbable"
    if any(b["activation"] is TANH_GATE for b in blocks[1:]):
        return "undecided"
    if any("b_up" in b for b in blocks):
        return "undecided"
    if any(np.any(b.get("b_down", 0.0)) for b in blocks[:-1]):
        return "undecided"
    product = exact_skip_product(skips, widths)
    return "undecided" if is_zero(product) else "not_absorbable"


@pytest.mark.parametrize("seed", range(150))
def test_random_stacks_follow_the_exact_rule(seed):
    rng = np.random.default_rng(9000 + seed)
    blocks, widths = _random_stack(rng)
    r = skipsearch.decide_stack(blocks)
    assert r.verdict == _expected(blocks, widths), r.reason


# -- the rigorous product, beyond the exact fallback --------------------------------------------


def test_a_product_that_cancels_only_in_exact_arithmetic_is_never_called_nonzero():
    # u = (1, 2^-60, 1, 2^-60) and w = (1, 1, -1, -1): w . u = 0 exactly, while a
    # float64 sum in order gives -2^-60. Embedded in 70 x 70 matrices (over
    # the exact fallback's size) with every other entry zero.
    n = 70
    A1 = np.zeros((n, n))
    A1[:4, 0] = [1.0, 2.0**-60, 1.0, 2.0**-60]
    A2 = np.zeros((n, n))
    A2[0, :4] = [1.0, 1.0, -1.0, -1.0]
    assert is_zero(exact_matmul(exact(A2[:1, :4]), exact(A1[:4, :1])))
    assert n**3 > _depth.EXACT_MAX_OPS
    nonzero, how = _depth.skip_product_nonzero([A1, A2])
    assert nonzero is None and "too large" in how
    W = np.ones((2, n))
    blocks = [dict(W_up=W, W_down=W.T, activation="relu2", skip=a) for a in (A1, A2)]
    r = skipsearch.decide_stack(blocks)
    assert r.verdict == "undecided" and "could not be proved nonzero" in r.reason
    # Small enough for the exact product: proved zero.
    assert _depth.skip_product_nonzero([A1[:4, :4], A2[:4, :4]])[0] is False


def test_a_tiny_nonzero_product_is_proved_exactly_or_by_its_bound():
    # w . u = 2^-60 != 0, below the float64 rounding of the sum: the float
    # bound cannot prove it, the exact product does.
    u = np.array([[1.0], [2.0**-60], [-1.0]])
    w = np.array([[1.0, 1.0, 1.0]])
    assert exact_matmul(exact(w), exact(u)) == [[Fraction(1, 2**60)]]
    assert _depth.skip_product_nonzero([u, w]) == (
        True,
        "the exact product, in integer arithmetic, is nonzero",
    )
    assert not _depth._float_product_nonzero([u, w])


@pytest.mark.parametrize("scale", [2.0**-1074, 2.0**-1000, 1.0, 2.0**1000])
def test_extreme_scales_keep_the_product_rigorous(scale):
    rng = np.random.default_rng(5)
    n = 80  # n^3 > EXACT_MAX_OPS: only the float bound decides
    a = rng.integers(-3, 4, size=(n, n)).astype(float) * scale
    b = np.eye(n) * scale
    nonzero, how = _depth.skip_product_nonzero([a, b, a.T])
    # Exact truth: the product is scale^3 a a^T, nonzero since a != 0 (its
    # trace is scale^3 ||a||_F^2 > 0).
    assert np.any(a)
    assert nonzero is True and "rounding bound" in how
    # Mixed magnitudes within one matrix (2^1000 and 2^-1074) cannot be
    # scaled exactly: small sizes fall back to the exact product.
    mixed = np.array([[2.0**1000, 0.0], [0.0, 2.0**-1074]])
    assert _depth.skip_product_nonzero([mixed, mixed]) == (
        True,
        "the exact product, in integer arithmetic, is nonzero",
    )
    nil = np.array([[0.0, 2.0**1000], [0.0, 0.0]])  # nilpotent: nil @ nil = 0
    assert _depth.skip_product_nonzero([nil, nil])[0] is False


def test_scalar_and_identity_skips_are_decided_without_products():
    assert _depth.skip_product_nonzero([1.0, -3.0, 2.0**-1074]) == (
        True,
        "every skip is a nonzero multiple of the identity",
    )
    assert _depth.skip_product_nonzero([1.0, 0.0, 5.0])[0] is False
    assert _depth.skip_product_nonzero([np.eye(3), 0.0])[0] is False
    one = np.zeros((3, 3))
    one[2, 1] = 2.0**-1074
    assert _depth.skip_product_nonzero([2.0, one, 1.0])[0] is True


@pytest.mark.parametrize("seed", range(40))
def test_float_bound_never_claims_a_zero_product_nonzero(seed):
    # Random float matrices whose exact product is zero or tiny: whenever the
    # float path claims nonzero, the exact product agrees.
    rng = np.random.default_rng(700 + seed)
    d = int(rng.integers(2, 6))
    r = int(rng.integers(1, d))
    # A1 = P D1 Q and A2 = R D2 P^-1 with complementary diagonal supports D1,
    # D2, and P^-1 the float64 inverse of P: in exact arithmetic with the
    # exact inverse the product would vanish; with these floats it is tiny.
    P = rng.standard_normal((d, d))
    Pinv = np.linalg.inv(P)
    D1 = np.diag([1.0] * r + [0.0] * (d - r))
    D2 = np.diag([0.0] * r + [1.0] * (d - r))
    A1 = P @ D1 @ rng.standard_normal((d, d))
    A2 = rng.standard_normal((d, d)) @ D2 @ Pinv
    truth = not is_zero(exact_matmul(exact(A2), exact(A1)))
    if _depth._float_product_nonzero([A1, A2]):
        assert truth
    assert _depth.skip_product_nonzero([A1, A2])[0] is truth


def _adversarial_matrix(rng, rows, cols):
    """Entries that round: near 1 +- ulps, cancelling pairs, tiny and huge
    powers of two (within 2^900 of each other), exact zeros."""
    kind = rng.integers(4)
    if kind == 0:
        a = 1.0 + rng.integers(-4, 5, size=(rows, cols)) * 2.0**-52
        a *= rng.choice([-1.0, 1.0], size=(rows, cols))
    elif kind == 1:
        a = rng.standard_normal((rows, cols)) * 2.0 ** rng.integers(-60, 61, size=(rows, cols))
    elif kind == 2:
        a = rng.integers(-3, 4, size=(rows, cols)) * 2.0**-1074
    else:
        a = rng.standard_normal((rows, cols))
        a[rng.random((rows, cols)) < 0.4] = 0.0
    return a * 2.0 ** int(rng.integers(-900, 901)) if kind != 2 else a


@pytest.mark.parametrize("seed", range(60))
def test_the_float_product_bound_holds_in_exact_arithmetic(seed):
    # |Q - 2^-s A_L ... A_1| <= E entry by entry, checked in rationals.
    rng = np.random.default_rng(4000 + seed)
    L = int(rng.integers(2, 5))
    dims = [int(rng.integers(1, 6)) for _ in range(L + 1)]
    mats = [_adversarial_matrix(rng, dims[k + 1], dims[k]) for k in range(L)]
    if any(not np.any(a) for a in mats):
        mats = [a + (a == 0) * 0.5 * np.max(np.abs(a), initial=1.0) for a in mats]
    bounded = _depth._float_product_bound(mats)
    if bounded is None:  # a matrix that could not be scaled exactly: nothing claimed
        return
    q, err, shift = bounded
    product = None
    for a in mats:
        product = exact(a) if product is None else exact_matmul(exact(a), product)
    scale = Fraction(2) ** -shift
    for i, row in enumerate(product):
        for j, value in enumerate(row):
            gap = abs(Fraction(float(q[i, j])) - scale * value)
            assert gap <= Fraction(float(err[i, j])), (i, j, float(gap), float(err[i, j]))


def exact_det(a):
    """The determinant of a float64 matrix, exactly (Gaussian elimination in
    rationals)."""
    m = exact(a)
    n, det = len(m), Fraction(1)
    for c in range(n):
        pivot = next((r for r in range(c, n) if m[r][c] != 0), None)
        if pivot is None:
            return Fraction(0)
        if pivot != c:
            m[c], m[pivot] = m[pivot], m[c]
            det = -det
        det *= m[c][c]
        for r in range(c + 1, n):
            f = m[r][c] / m[c][c]
            m[r] = [x - f * y for x, y in zip(m[r], m[c])]
    return det


def test_long_chains_of_nonsingular_skips_are_proved_nonzero():
    # A_l = (signed permutation) (I + strictly upper triangular integers):
    # det A_l = +-1 by structure, so the product is nonsingular, hence
    # nonzero. The chain is too long for the entrywise bound and too large
    # for the exact product; the inverses prove it.
    rng = np.random.default_rng(12)
    d, L = 40, 40
    mats = []
    for _ in range(L):
        upper = np.triu(rng.integers(-3, 4, size=(d, d)), 1).astype(float)
        perm = np.eye(d)[rng.permutation(d)] * rng.choice([-1.0, 1.0], size=(d, 1))
        mats.append(perm @ (np.eye(d) + upper) * 2.0 ** int(rng.integers(-300, 301)))
    assert (L - 1) * d**3 > _depth.EXACT_MAX_OPS
    nonzero, how = _depth.skip_product_nonzero(mats)
    assert nonzero is True
    blocks = [
        dict(W_up=np.ones((2, d)), W_down=np.ones((d, 2)), activation="relu2", skip=a) for a in mats
    ]
    assert skipsearch.decide_stack(blocks).verdict == "not_absorbable"


@pytest.mark.parametrize("seed", range(60))
def test_nonsingularity_is_claimed_only_for_nonsingular_matrices(seed):
    # Nearly singular matrices (a row that is, in float64, a combination of
    # others, a rank-deficient product, a column copied to an ulp) and
    # ordinary ones: a claim must agree with the exact determinant.
    rng = np.random.default_rng(300 + seed)
    d = int(rng.integers(2, 7))
    a = rng.standard_normal((d, d)) * 2.0 ** rng.integers(-30, 31, size=(d, 1))
    kind = seed % 4
    if kind == 0:
        a[-1] = a[0] * 3.0 - a[1] * 0.7 if d > 2 else a[0] * 0.1
    elif kind == 1:
        a = a[:, : d - 1] @ rng.standard_normal((d - 1, d))
    elif kind == 2:
        a[:, 0] = a[:, 1] * (1.0 + 2.0**-52)
    if _depth._nonsingular(a):
        assert exact_det(a) != 0
    elif kind == 3:  # a random, well-conditioned matrix: proved
        assert np.linalg.cond(a) > 1e12
    # Exactly singular: two equal rows.
    b = a.copy()
    b[-1] = b[0]
    assert exact_det(b) == 0 and not _depth._nonsingular(b)
