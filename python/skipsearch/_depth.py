"""The hypotheses of the depth theorem, checked on a stack of blocks.

The depth theorem of Mijoski & Karbevski (2026, arXiv:2604.23705) compares
Jacobians at the origin. A skip-free block without inner biases whose
activation is gated with ``gate(0) = 0`` (and a gate differentiable at 0)
or homogeneous of degree ``k >= 2`` has Jacobian 0 at the input 0, so a
stack of such skip-free blocks has Jacobian 0 at 0 (the later blocks,
whatever output biases move their inputs, are locally Lipschitz). The
residual stack ``x -> A_L x + f_L(...)`` maps 0 to 0 when no block before
the last has a nonzero ``b_down``, and its Jacobian there is the product
``A_L ... A_1`` of the skips. The theorem proves "not absorbable" exactly
when that product is nonzero, and this module decides that rigorously:

* identity and scalar skips factor out: the product is nonzero iff every
  scalar is and the product of the matrix skips is;
* the matrix skips are multiplied in float64, first with a few random
  vectors (``P X != 0`` proves ``P != 0``) and then in full, with a running bound on the
  rounding of every entry (each float product of inner dimension ``k`` is
  off by at most ``gamma_k |B| |Q|`` plus ``k`` underflow units, Higham
  2002, ch. 3, and the error carried in ``Q`` grows by ``|B|``); an entry
  whose magnitude exceeds its bound proves the product nonzero. The bound
  assumes only IEEE 754 arithmetic in some rounding mode, with or without
  subnormals (unit roundoff ``2^-52``, underflow unit ``2^-1020``);
* square skip matrices that are each proved nonsingular (an approximate
  inverse ``R`` with ``||R A - I||_inf < 1/2``, rounding bounded the same
  way) have a nonzero product, however long the chain;
* when no entry clears its bound and the product is small enough
  (:data:`EXACT_MAX_OPS` multiply-adds), it is computed exactly in Python
  integers (each float64 is an integer times a power of two);
* otherwise the question stays open.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Optional, Union

import numpy as np

from skipsearch._types import FloatArray
from skipsearch.activations import GATED, HOMOGENEOUS, Activation, is_registry

__all__ = ["EXACT_MAX_OPS", "FLOAT_MAX_OPS", "depth_class_problem", "skip_product_nonzero"]

#: Largest number of multiply-adds of the exact integer product.
EXACT_MAX_OPS = 250_000
#: Largest number of multiply-adds of the whole float64 product, and of the
#: inversions that prove square skips nonsingular (after the product with a
#: few random vectors proved nothing).
FLOAT_MAX_OPS = 10**10
#: Random vectors the product is applied to first.
_PROBES = 4

#: Unit roundoff, for any IEEE 754 rounding mode (twice round-to-nearest's).
_U = 2.0**-52
#: What one product or read may lose to underflow, flush-to-zero included.
_ETA = 2.0**-1020


def depth_class_problem(act: Activation, first: bool) -> Optional[str]:
    """Why a block with activation ``act`` is outside the depth theorem's
    classes, or None when it is inside.

    Inside: homogeneous of degree ``k >= 2``; gated of degree ``k >= 2``
    (the gate is homogeneous of degree ``k - 1 >= 1``, so ``gate(0) = 0``);
    gated with ``gate(0) = 0`` and a gate differentiable at 0. A skip-free
    block of these kinds without inner biases has Jacobian 0 at 0. A block
    after the first is evaluated wherever the earlier skip-free blocks'
    output biases put it, so its activation must also be locally Lipschitz
    everywhere: a homogeneous function of degree ``>= 1`` is, and so are
    the registry's gates (SiLU, GELU, ReLU, the identity); a hand-made gate
    known only at 0 is not known to be.
    """
    k = act.degree
    if act.kind == HOMOGENEOUS:
        if k is not None and k >= 2:
            return None
        return (
            f"{act.name} is homogeneous of degree {k}, and only degree k >= 2 gives a skip-free "
            "block Jacobian 0 at 0"
        )
    if act.kind == GATED:
        if k is not None and k >= 2:
            return None
        if act.gate_at_zero == 0.0 and act.gate_differentiable:
            if first or is_registry(act):
                return None
            return (
                f"{act.name} is a hand-made gate known only at 0 (gate(0) = 0, differentiable "
                "there); after the first block the skip-free blocks are evaluated away from 0, "
                "where the theorem needs a locally Lipschitz gate, which it does not state "
                "(give its degree if it is homogeneous)"
            )
        if act.gate_at_zero not in (None, 0.0):
            return f"{act.name} has gate(0) = {act.gate_at_zero:g}, not 0"
        return f"{act.name} is gated without a gate known to vanish and be differentiable at 0"
    return (
        f"{act.name} is {act.kind.replace('_', '-')}, neither gated with gate(0) = 0 nor "
        "homogeneous of degree k >= 2"
    )


Skip = Union[float, FloatArray]


def skip_product_nonzero(skips: Sequence[Skip]) -> tuple[Optional[bool], str]:
    """Whether ``A_L ... A_1`` is nonzero, proved, and how.

    Parameters
    ----------
    skips : sequence of float or ndarray
        ``A_1`` first: a float ``alpha`` is ``alpha * I``, an array a
        float64 matrix of shape ``(d_out, d_in)``; consecutive shapes
        compose.

    Returns
    -------
    (bool or None, str)
        True (proved nonzero), False (proved zero) or None (neither could
        be proved), and the method in words.
    """
    scalars = [float(s) for s in skips if not isinstance(s, np.ndarray)]
    mats = [s for s in skips if isinstance(s, np.ndarray)]
    if any(a == 0.0 for a in scalars):
        return False, "a scalar skip is 0"
    if not mats:
        return True, "every skip is a nonzero multiple of the identity"
    if any(not np.any(a) for a in mats):
        return False, "a skip matrix is zero"
    if len(mats) == 1:
        return True, "the one skip matrix is nonzero and the other skips are nonzero scalars"
    bound = "exceeds its rigorous rounding bound (Higham 2002, ch. 3)"
    # A few columns first: P X != 0 proves P != 0, at O(L d^2) instead of
    # O(L d^3), and for Gaussian X, P X = 0 only where P = 0 (almost surely).
    probe = np.random.default_rng(0).standard_normal((mats[0].shape[1], _PROBES))
    if _float_product_nonzero([probe, *mats]):
        return True, f"an entry of the float64 product with {_PROBES} random vectors {bound}"
    ops = sum(b.shape[0] * b.shape[1] * mats[0].shape[1] for b in mats[1:])
    square = all(a.shape[0] == a.shape[1] for a in mats)
    inversion_ops = sum(3 * a.shape[0] ** 3 for a in mats)
    if square and inversion_ops <= FLOAT_MAX_OPS and all(_nonsingular(a) for a in mats):
        return True, (
            "every skip matrix is proved nonsingular (an approximate inverse R gives "
            "||R A - I||_inf < 1/2 with a rigorous rounding bound), so their product is too"
        )
    if ops <= FLOAT_MAX_OPS and _float_product_nonzero(mats):
        return True, f"an entry of the float64 product {bound}"
    if ops <= EXACT_MAX_OPS:
        exact = _exact_product(mats)
        if any(v != 0 for row in exact for v in row):
            return True, "the exact product, in integer arithmetic, is nonzero"
        return False, "the exact product, in integer arithmetic, is zero"
    return None, (
        "no entry of the float64 product clears its rigorous rounding bound, and the product is "
        f"too large ({ops} multiply-adds, more than {EXACT_MAX_OPS}) to compute exactly"
        if ops <= FLOAT_MAX_OPS
        else f"no entry of the float64 product with {_PROBES} random vectors clears its rigorous "
        f"rounding bound, and the whole product ({ops} multiply-adds) is beyond "
        f"{FLOAT_MAX_OPS} in float64 and {EXACT_MAX_OPS} exactly"
    )


def _scaled(a: FloatArray) -> Optional[tuple[FloatArray, int]]:
    """``a`` times ``2^-e``, the power of two that puts its largest magnitude
    in ``[1/2, 1)``, and ``e``; None when that scaling is not exact."""
    top = float(np.max(np.abs(a)))
    _, e = math.frexp(top)
    out = np.ldexp(a, -e)
    if not np.array_equal(np.ldexp(out, e), a):
        return None
    return out, e


def _up(x: FloatArray) -> FloatArray:
    """``x`` rounded up by one ulp (a float bound rounded to nearest may sit
    one ulp below the exact value)."""
    return np.nextafter(x, np.inf)


def _float_product_nonzero(mats: Sequence[FloatArray]) -> bool:
    """Whether the float64 product with its rounding bound proves some
    entry of ``A_L ... A_1`` nonzero: ``|Q| > E`` there."""
    bounded = _float_product_bound(mats)
    if bounded is None:
        return False
    q, err, _ = bounded
    return bool(np.any(np.abs(q) > err))


def _float_product_bound(
    mats: Sequence[FloatArray],
) -> Optional[tuple[FloatArray, FloatArray, int]]:
    """``(Q, E, s)`` with ``|Q - 2^-s A_L ... A_1| <= E`` entry by entry, in
    exact arithmetic; None when float64 cannot bound it (a matrix that
    cannot be scaled exactly, or a bound that overflows).

    With ``P`` the exact product of the matrices scaled by powers of two
    and ``Q`` its float64 evaluation: ``Q_1 = A_1`` exactly; for ``Q' =
    fl(B Q)`` with ``B`` of inner dimension ``k``, ``|Q' - B P| <= |B| E +
    gamma_k |B| |Q| + k eta`` (any order of summation, fused multiply-adds
    included; ``eta`` covers underflow), so the new ``E'`` is that bound,
    evaluated in float64 and inflated for its own rounding. After each step
    ``Q'`` and ``E'`` are rescaled by the same power of two (overflow never
    arises), and ``s`` sums the powers.
    """
    scaled = [_scaled(a) for a in mats]
    if any(x is None for x in scaled):
        return None
    first = scaled[0]
    assert first is not None
    q, shift = first
    err = np.zeros_like(q)
    with np.errstate(all="ignore"):
        for item in scaled[1:]:
            assert item is not None
            b, e_b = item
            shift += e_b
            k = b.shape[1]
            if k * _U > 1e-3:
                return None
            gamma = 1.01 * k * _U / (1.0 - k * _U)  # >= gamma_k with unit roundoff _U
            abs_b = np.abs(b)
            new_q = b @ q
            # E' >= |B| (E + gamma |Q|) + k eta, with the rounding of its own
            # evaluation: each sum and product of nonnegative floats below
            # loses at most a factor (1 + _U) and one eta per term.
            s = _up(err + _up(gamma * np.abs(q)) + _ETA)
            t = _up(abs_b @ s)
            factor = 1.0 + 4.0 * (k + 4) * _U
            err = _up((t + (3 * k + 4) * _ETA) * factor)
            top = float(np.max(np.abs(new_q)))
            if not (math.isfinite(top) and np.all(np.isfinite(err))):
                return None
            if top > 0.0:
                _, e = math.frexp(top)
                # The rescaled Q' loses at most eta per entry; E' is rounded up.
                q = np.ldexp(new_q, -e)
                err = _up(np.ldexp(err, -e)) + _ETA
                shift += e
            else:
                q = new_q
    if not np.all(np.isfinite(err)):
        return None
    return q, err, shift


def _nonsingular(a: FloatArray) -> bool:
    """Whether the square matrix ``a`` is proved nonsingular: with ``R`` a
    float64 inverse of ``a`` scaled by a power of two, ``||R a - I||_inf <
    1`` (then ``R a`` is invertible, so ``a`` is). ``fl(R a)`` is off by at
    most ``gamma_d |R| |a|`` plus ``d`` underflow units per entry; the norm
    is bounded with every sum inflated for its own rounding, and must come
    out below 1/2."""
    item = _scaled(a)
    if item is None:
        return False
    b = item[0]
    d = b.shape[0]
    if d * _U > 1e-3:
        return False
    with np.errstate(all="ignore"):
        try:
            r = np.linalg.inv(b)
        except np.linalg.LinAlgError:
            return False
        if not np.all(np.isfinite(r)):
            return False
        gap = np.abs(r @ b - np.eye(d))
        spread = np.abs(r) @ np.abs(b)
        gamma = 1.01 * d * _U / (1.0 - d * _U)
        grow = 1.0 + 4.0 * (d + 4) * _U
        rows = (gap.sum(axis=1) * grow + gamma * spread.sum(axis=1) * grow) * grow
        bound = float(np.max(rows)) + (3 * d * d + 8) * _ETA
    return math.isfinite(bound) and bound < 0.5


def _exact_product(mats: Sequence[FloatArray]) -> list[list[int]]:
    """The product ``A_L ... A_1`` up to a positive power of two, exactly,
    as a list of rows of Python integers."""

    def integers(a: FloatArray) -> list[list[int]]:
        mant, exp = np.frexp(a)
        nz = a != 0
        low = int(exp[nz].min()) - 53 if np.any(nz) else 0
        # a = (mant * 2^53) * 2^(exp - 53), mant * 2^53 an integer below 2^53.
        ints = (mant * 2.0**53).astype(np.int64)
        return [
            [int(v) << (int(e) - 53 - low) if v else 0 for v, e in zip(r_v, r_e)]
            for r_v, r_e in zip(ints.tolist(), exp.tolist())
        ]

    p = integers(mats[0])
    for b in mats[1:]:
        bi = integers(b)
        cols = list(zip(*p))
        p = [[sum(x * y for x, y in zip(row, col)) for col in cols] for row in bi]
    return p
