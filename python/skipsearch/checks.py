"""Independent re-checks a user can run on a result, in plain numpy."""

from __future__ import annotations

import math
from typing import Optional, Union

import numpy as np
import numpy.typing as npt

from skipsearch import rounding
from skipsearch._float_env import in_standard_float_env
from skipsearch._types import FloatArray
from skipsearch._validation import Weights, as_float_array
from skipsearch.activations import Activation, get_activation

__all__ = ["check_certificate"]

FlipPair = tuple[float, float]


@in_standard_float_env
def check_certificate(
    certificate: npt.ArrayLike,
    W_up: npt.ArrayLike,
    W_down: npt.ArrayLike,
    *,
    activation: Union[str, Activation] = "relu",
    skip: Optional[npt.ArrayLike] = None,
    tol: Optional[float] = None,
    excluded: Optional[npt.ArrayLike] = None,
) -> float:
    """Rigorous lower bound on how far every flip set is from absorbing the skip.

    With ``R_i = c W_down[:, i] W_up[i, :]``, any ``Y`` of the skip's shape
    proves something: for every ``s`` in ``{0, 1}^m`` (indeed in the box
    ``[0, 1]^m``), ``<Y, A + sum_i s_i R_i>`` lies in the interval
    ``[<Y, A> + sum of the negative <Y, R_i>, <Y, A> + sum of the positive
    <Y, R_i>]``. If 0 lies outside it, its distance to 0 divided by
    ``||Y||_F`` bounds ``||A + c W_down[:, S] W_up[S, :]||_F`` from below for
    every flip set ``S``. The bound does not trust the search: any ``Y`` is
    a certificate, so a poor one only gives a weaker (or zero) bound. (``Y``
    is first scaled by a power of two so its largest entry is near 1; a
    ``Y`` spanning more than float64's range loses its tiniest entries
    there, and the bound is then the one that rounded ``Y`` proves, still
    rigorous.)

    The bound holds in exact arithmetic. Its float64 evaluation is off by at
    most an a-priori rounding bound (Higham, *Accuracy and Stability of
    Numerical Algorithms*, 2002, ch. 3), which is subtracted from the margin
    first; when that leaves nothing but float64 saw a margin, blocks with
    ``m * d_out * d_in <= 200000`` are re-evaluated in exact rationals. So a
    positive value is a proof, and a block that some flip set absorbs within
    the tolerance can never get a value above it.

    Parameters
    ----------
    certificate : array_like, shape (d_out, d_in)
        ``Y``, usually ``result.certificate``.
    W_up : array_like, shape (m, d_in)
    W_down : array_like, shape (d_out, m)
    activation : str or Activation, default "relu"
        Supplies the flip constant ``c``; must be flip-linear.
    skip : None, float or array_like, default None
        The skip ``A``, as for :func:`skipsearch.find_absorbing_subset`.
    tol : float, optional
        The tolerance the bound is compared with, usually
        ``result.tolerance``. When the a-priori rounding allowance leaves the
        bound at or below it, blocks with ``m * d_out * d_in <= 200000`` are
        re-evaluated in exact rationals, as the decision does, so a
        certificate that proves a bound above ``tol`` is confirmed even when
        its margin over ``tol`` is within rounding. Without it only a bound
        the allowance reduces to nothing is re-evaluated.
    excluded : array_like of int, optional
        Neurons kept out of every flip set by a norm bound, usually
        ``result.excluded_neurons``: ``Y`` then needs to bound only the flip
        sets that avoid them, and the value returned is the least of that
        bound and the one this function proves itself, by the triangle
        inequality, for the flip sets that contain one (each excluded term
        ``c W_down[:, i] W_up[i, :]`` against the skip and every term not yet
        excluded, in exact rationals). A neuron whose term does not outweigh
        the rest makes that bound, and so the value, 0.0.

    Returns
    -------
    float
        The proven bound on ``min_S ||A + c W_down[:, S] W_up[S, :]||_F /
        ||A||_F``, dimensionless (0.0 when nothing is proved). Compare it
        with ``result.tolerance``.

    Raises
    ------
    ValueError
        On shape mismatches, non-finite values or a non-flip-linear
        activation.
    TypeError
        Complex, masked or non-numeric arrays.

    References
    ----------
    Mijoski & Karbevski 2026, arXiv:2604.23705, state the flip condition;
    the interval certificate and its rounding rule are this project's
    (docs/theory.md §5.2, §5.3 and §6).
    """
    act = get_activation(activation)
    if act.flip_constant is None:
        raise ValueError(f"activation {act.name!r} is not flip-linear; no certificate applies")
    if certificate is None:
        raise TypeError(
            "certificate is required, got None (an absorbable result has no certificate: a "
            "flip set absorbs its skip, so there is no impossibility to check)"
        )
    w = Weights(W_up, W_down, None, None, None, skip)
    Y, _ = as_float_array("certificate", certificate, 2, f"({w.d_out}, {w.d_in})")
    if Y.shape != w.A.shape:
        raise ValueError(f"certificate has shape {Y.shape}, expected {w.A.shape} like skip")
    if not np.any(Y) or not np.any(w.A):
        return 0.0
    if tol is not None and (
        isinstance(tol, bool) or not isinstance(tol, (int, float)) or not math.isfinite(tol)
    ):
        raise ValueError(f"tol must be a finite number or None, got {tol!r}")
    out = None if excluded is None else _excluded_indices(excluded, w.W_up.shape[0])
    flip = (float(act.flip_constant), float(act.flip_constant_lo))
    settle = None if tol is None else float(tol)

    def proved(W_up: FloatArray, W_down: FloatArray, A: FloatArray, c: FlipPair) -> float:
        if out is None:
            return rounding.interval_bound(Y, W_up, W_down, A, c, settle)[0]
        keep = np.setdiff1d(np.arange(W_up.shape[0]), out)
        bound, _ = rounding.interval_bound(Y, W_up[keep], W_down[:, keep], A, c, settle)
        return min(bound, rounding.exclusion_bound(W_up, W_down, A, c, out.tolist()))

    bound = proved(w.W_up, w.W_down, w.A, flip)
    # Also on the block balanced by exact powers of two, as the decision
    # does: every relative bound is the same, and products of weights whose
    # scales cancel no longer under- or overflow on the way (the flip
    # constant or W_down at 2^1021). Both are proofs; the larger stands.
    W_up, W_down, A, _, exact, _, c = rounding.balanced(w.W_up, w.W_down, w.A, None, flip)
    same = c == flip and all(
        np.array_equal(x, y) for x, y in ((W_up, w.W_up), (W_down, w.W_down), (A, w.A))
    )
    if exact and not same:
        bound = max(bound, proved(W_up, W_down, A, c))
    return bound


def _excluded_indices(excluded: npt.ArrayLike, m: int) -> npt.NDArray[np.int64]:
    """``excluded`` as sorted distinct neuron indices in ``range(m)``."""
    arr = np.asarray(excluded)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise TypeError(f"excluded must be a 1-D array of neuron indices, got {excluded!r}")
    if arr.size and (arr.min() < 0 or arr.max() >= m):
        raise ValueError(f"excluded must hold neuron indices in [0, {m}), got {arr.tolist()}")
    return np.unique(arr.astype(np.int64))
