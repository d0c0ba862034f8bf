"""Independent re-checks a user can run on a result, in plain numpy."""

from __future__ import annotations

from typing import Any, Union

import numpy as np

from skipsearch._validation import Weights, as_float_array
from skipsearch.activations import Activation, get_activation

__all__ = ["check_certificate"]


def check_certificate(
    certificate: Any,
    W_up: Any,
    W_down: Any,
    *,
    activation: Union[str, Activation] = "relu",
    skip: Any = None,
) -> float:
    """Lower bound on how far every flip set is from absorbing the skip.

    With ``R_i = c W_down[:, i] W_up[i, :]`` and target ``T = -A``, any
    ``Y`` gives, for every ``s`` in ``[0, 1]^m``,
    ``||sum_i s_i R_i - T||_F >= (<Y, T> - sum_i |<Y, R_i>|) / ||Y||_F``.
    For the certificate returned by the search, ``<Y, R_i>`` vanishes up to
    rounding and the bound equals the relaxation distance. A value above
    the tolerance proves that no flip set exists. The bound does not trust
    the search: a wrong ``Y`` only gives a weaker (or zero) bound.

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

    Returns
    -------
    float
        The bound, relative to ``||A||_F`` (0 when nothing is proved).

    Raises
    ------
    ValueError
        On shape mismatches, non-finite values or a non-flip-linear
        activation.

    References
    ----------
    The certificate is the least-squares residual of the relaxation of the
    flip condition (Mijoski & Karbevski 2026, arXiv:2604.23705, state the
    condition; the certificate is this project's).
    """
    act = get_activation(activation)
    if act.flip_constant is None:
        raise ValueError(f"activation {act.name!r} is not flip-linear; no certificate applies")
    w = Weights(W_up, W_down, None, None, None, skip)
    Y, _ = as_float_array("certificate", certificate, 2, f"({w.d_out}, {w.d_in})")
    if Y.shape != w.A.shape:
        raise ValueError(f"certificate has shape {Y.shape}, expected {w.A.shape} like skip")
    # The bound is invariant to the scale of Y: normalise it first, so that
    # a huge or tiny Y cannot overflow or underflow the products below.
    y_max = float(np.max(np.abs(Y), initial=0.0))
    if y_max > 0:
        Y = Y / y_max
    y_norm, a_norm = np.linalg.norm(Y), np.linalg.norm(w.A)
    if y_norm == 0 or a_norm == 0:
        return 0.0
    y_dot_t = -float(np.sum(Y * w.A))
    # <Y, R_i> = c v_i^T Y u_i for every neuron i at once
    leak = np.abs(act.flip_constant * np.einsum("pi,pi->i", w.W_down, Y @ w.W_up.T)).sum()
    return max(0.0, (y_dot_t - leak) / (y_norm * a_norm))
