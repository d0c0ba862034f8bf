"""The certificate bounded from the Gram matrix (``keep_certificate=False``).

Without ``Y`` the exact path proves its bound from the Gram matrix it built
(``rust/absorption/gram_certificate.rs``). Each test compares it with what
the formed certificate proves, and with flip sets' residuals computed here
in numpy: the bound must lie below every one of them, and the distance must
be numpy's least-squares distance.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import skipsearch


def _numpy_distance(W_up: np.ndarray, W_down: np.ndarray) -> float:
    G = (W_down.T @ W_down) * (W_up @ W_up.T)
    h = -np.einsum("pi,ip->i", W_down, W_up)
    s = np.linalg.lstsq(G, h, rcond=None)[0]
    d = W_down.shape[0]
    return float(np.linalg.norm(np.eye(d) + (W_down * s) @ W_up) / np.sqrt(d))


def _residual(W_up: np.ndarray, W_down: np.ndarray, subset: np.ndarray) -> float:
    d = W_down.shape[0]
    E = np.eye(d) + W_down[:, subset] @ W_up[subset]
    return float(np.linalg.norm(E) / np.sqrt(d))


@pytest.mark.parametrize(("d", "m", "precision"), [(24, 200, "float64"), (48, 2048, "float32")])
def test_the_bound_and_distance_are_the_formed_certificates(d, m, precision):
    rng = np.random.default_rng(d + m)
    W_up = rng.standard_normal((m, d)) / np.sqrt(d)
    # Lean towards -I so that Y = A proves less than the relaxation.
    W_down = rng.standard_normal((d, m)) / np.sqrt(m) - (1.5 * d / m) * W_up.T
    formed = skipsearch.find_absorbing_subset(W_up, W_down, activation="gelu", distance=True)
    bare = skipsearch.find_absorbing_subset(
        W_up, W_down, activation="gelu", distance=True, keep_certificate=False
    )
    assert formed.verdict == bare.verdict == "not_absorbable"
    assert bare.argument == "certificate"
    assert "gram certificate" in bare.stats.method
    assert "gram certificate" not in formed.stats.method
    assert bare.stats.relaxation_precision == precision
    assert bare.certificate is None
    assert formed.certificate is not None
    assert "bounded from the Gram matrix, not formed" in bare.reason
    # Within the certified allowance (the Gram bound's rounding is larger
    # than the formed certificate's, and still small).
    allowance = 2 * bare.rounding_bound + 1e-12
    assert bare.rounding_bound < 1e-7 * bare.relaxation_distance
    assert abs(bare.relaxation_distance - _numpy_distance(W_up, W_down)) <= allowance
    assert abs(bare.relaxation_distance - formed.relaxation_distance) <= allowance
    assert abs(bare.distance_bound - formed.distance_bound) <= allowance
    assert 0 < bare.distance_bound <= bare.relaxation_distance
    # Below every flip set: random ones, and the relaxation's rounding.
    for _ in range(20):
        subset = np.flatnonzero(rng.random(m) < rng.random())
        assert _residual(W_up, W_down, subset) >= bare.distance_bound
    assert bare.stats.gram_rank == formed.stats.gram_rank == m


def test_every_flip_set_lies_above_the_bound_on_a_small_block():
    # All 2^12 flip sets of a block whose relaxation leans towards -I.
    d, m = 4, 12
    rng = np.random.default_rng(5)
    W_up = rng.standard_normal((m, d))
    W_down = rng.standard_normal((d, m)) * 0.3 - 0.4 * W_up.T
    bare = skipsearch.find_absorbing_subset(
        W_up, W_down, activation="relu", distance=True, keep_certificate=False
    )
    least = min(
        _residual(W_up, W_down, np.array(s, dtype=int))
        for k in range(m + 1)
        for s in itertools.combinations(range(m), k)
    )
    assert bare.verdict == "not_absorbable"
    assert "gram certificate" in bare.stats.method
    assert 0 < bare.distance_bound <= least
    allowance = 2 * bare.rounding_bound + 1e-12
    assert abs(bare.relaxation_distance - _numpy_distance(W_up, W_down)) <= allowance


def test_a_planted_flip_set_is_still_found():
    # The relaxation reaches -I: the Gram bound proves nothing, the search runs.
    d, m = 6, 40
    rng = np.random.default_rng(11)
    W_up = rng.standard_normal((m, d))
    W_down = rng.standard_normal((d, m))
    planted = np.sort(rng.choice(m, size=d, replace=False))
    W_down[:, planted] = -np.linalg.inv(W_up[planted])
    r = skipsearch.find_absorbing_subset(
        W_up, W_down, activation="gelu", distance=True, keep_certificate=False
    )
    assert r.verdict == "absorbable"
    assert r.subset.tolist() == planted.tolist()
    diff = skipsearch.max_abs_difference(r.block, W_up=W_up, W_down=W_down, activation="gelu")
    assert diff < 1e-9


@pytest.mark.parametrize("bad", ["no", 1, None, np.array([True])])
def test_keep_certificate_must_be_a_bool(bad):
    with pytest.raises(TypeError, match="keep_certificate must be True or False"):
        skipsearch.find_absorbing_subset(np.eye(2), -np.eye(2), keep_certificate=bad)


def test_a_distance_near_zero_is_confirmed_to_its_own_size_or_y_is_formed():
    # The relaxation comes within 8e-6 of -I: the Gram bound's allowance
    # (about 1e-8 here) is below the tolerance but 0.1% of the distance, so
    # the Gram certificate must give way to the formed Y (found by the red
    # team: the distance came out 1e-3 relative below numpy's).
    W_up = np.array(
        [
            [0.5243989793805718, 0.891972793515643, -0.44514980635175255],
            [-0.2769340572717214, -0.8867425301005084, 1.2994693296722584],
            [-0.9476105979728263, 1.313366475485431, -1.3462590859985564],
            [0.0711862426052541, -0.9779343222607935, -0.08381134493446489],
            [-0.40820890135296595, -0.07793465091904651, 1.8093611395609572],
            [1.5412590689032355, -0.8393553501011766, -1.4660572037640673],
            [-0.34288288175713205, -0.057721201749162884, -1.4087716906696055],
        ]
    )
    W_down = np.array(
        [
            [
                -0.35215747199183,
                0.22199756865644735,
                0.1868447517200365,
                0.18077079226198053,
                -0.9353280986894994,
                -0.30924462177860673,
                0.24379030184877654,
            ],
            [
                -0.37658943731045336,
                -0.5113377668790458,
                -0.1533531127769224,
                0.3176726771122002,
                -0.04931069101558529,
                0.060108706453425705,
                0.18409078909229679,
            ],
            [
                -0.0238265097604508,
                0.49263590711910094,
                0.20219280768582334,
                0.07396079860468154,
                1.3202382292749333,
                0.1869864552511552,
                0.260606101387928,
            ],
        ]
    )
    reference = _numpy_distance(W_up, W_down)
    assert 1e-6 < reference < 1e-5
    for keep in (True, False):
        r = skipsearch.find_absorbing_subset(
            W_up, W_down, activation="relu", distance=True, keep_certificate=keep
        )
        assert r.verdict == "not_absorbable"
        assert r.relaxation_distance == pytest.approx(reference, rel=1e-6)
