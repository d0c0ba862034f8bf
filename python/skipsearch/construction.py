"""Build the skip-free block from a flip set, and evaluate blocks.

For a flip-linear activation (``act(z) - act(-z) = c z``) and a flip set
``S`` with ``c W_down[:, S] W_up[S, :] = -A``, negate ``W_up[i]`` and
``b_up[i]`` for ``i`` in ``S``, keep ``W_down``, and set
``b_down' = b_down + c W_down[:, S] b_up[S]``. The result equals
``A x + f(x)`` for every ``x`` (Mijoski & Karbevski 2026, arXiv:2604.23705,
the flip construction). The negations and the copy are exact; ``b_down'``
is built as the float64 nearest its exact value (``_error_free``), so the
built block is the flip construction up to half an ulp of ``b_down'``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Optional, Union, cast

import numpy as np
import numpy.typing as npt

from skipsearch import _error_free
from skipsearch._float_env import in_standard_float_env
from skipsearch._types import FloatArray
from skipsearch._validation import RaggedWarning, Weights, as_float_array, reject_masked
from skipsearch.activations import Activation, get_activation
from skipsearch.result import FieldEquality

__all__ = [
    "SkipFreeBlock",
    "build_skip_free_block",
    "max_abs_difference",
    "relative_output_error",
    "residual_block_output",
]


@dataclass(frozen=True, eq=False)
class SkipFreeBlock(FieldEquality):
    """A skip-free MLP block ``x -> W_down act(W_up x + b_up) + b_down``.

    For gated activations it is ``W_down (gate(W_gate x) * (W_up x + b_up)) + b_down``.
    Calling it evaluates that in float64; the block built by
    :func:`build_skip_free_block` is exact in its weights (see there).
    Two blocks are equal when their activations are and their arrays have
    the same dtype, shape and values, so a block equals its copy through
    ``pickle``.

    Attributes
    ----------
    W_up : ndarray, shape (m, d_in)
    b_up : ndarray, shape (m,)
    W_down : ndarray, shape (d_out, m)
    b_down : ndarray, shape (d_out,)
    activation : Activation
    W_gate : ndarray, shape (m, d_in), or None
    """

    W_up: FloatArray
    b_up: FloatArray
    W_down: FloatArray
    b_down: FloatArray
    activation: Activation
    W_gate: Optional[FloatArray] = None

    _HASH_FIELDS = ("activation",)

    def __repr__(self) -> str:
        m, d_in = self.W_up.shape
        gate = "" if self.W_gate is None else ", gated"
        return (
            f"SkipFreeBlock(d_in={d_in}, m={m}, d_out={self.W_down.shape[0]}, "
            f"activation={self.activation.name!r}{gate})"
        )

    def __call__(self, x: npt.ArrayLike) -> FloatArray:
        """Evaluate the block on ``x`` of shape ``(d_in,)`` or ``(n, d_in)``.

        Raises
        ------
        TypeError
            ``x`` is not a real numeric array (strings, complex, bool,
            masked values or None).
        ValueError
            ``x`` is ragged, not 1-D or 2-D, has ``d_in`` wrong, or holds NaN
            or Inf.
        """
        d_in = self.W_up.shape[1]
        reject_masked("x", x)
        try:
            with warnings.catch_warnings():
                # numpy < 1.24 warns on ragged sequences where later ones raise.
                warnings.simplefilter("error", RaggedWarning)
                ndim = np.ndim(x)
        except (ValueError, RaggedWarning) as e:  # ragged nested sequences
            raise ValueError(f"x is not a rectangular numeric array: {e}") from None
        expected = f"(d_in,) or (n, d_in) with d_in = {d_in}"
        xs, _ = as_float_array("x", x, 1 if ndim == 1 else 2, expected)
        if xs.shape[-1] != d_in:
            raise ValueError(f"x has shape {xs.shape}, expected {expected}")
        pre = xs @ self.W_up.T + self.b_up
        hidden: FloatArray
        if self.W_gate is not None:
            hidden = self.activation(xs @ self.W_gate.T) * pre
        else:
            hidden = self.activation(pre)
        out: FloatArray = hidden @ self.W_down.T + self.b_down
        return out


@in_standard_float_env
def build_skip_free_block(
    W_up: npt.ArrayLike,
    W_down: npt.ArrayLike,
    subset: npt.ArrayLike,
    *,
    activation: Union[str, Activation] = "relu",
    b_up: Optional[npt.ArrayLike] = None,
    b_down: Optional[npt.ArrayLike] = None,
) -> SkipFreeBlock:
    """Flip the neurons of ``subset`` to get the skip-free block.

    Parameters
    ----------
    W_up : array_like, shape (m, d_in)
    W_down : array_like, shape (d_out, m)
    subset : array_like of int
        The flip set ``S`` (indices in ``[0, m)``).
    activation : str or Activation, default "relu"
        Must be flip-linear (``act(z) - act(-z) = c z``).
    b_up : array_like, shape (m,), optional
        Defaults to zeros.
    b_down : array_like, shape (d_out,), optional
        Defaults to zeros.

    Returns
    -------
    SkipFreeBlock
        ``W_up`` and ``b_up`` with the rows of ``S`` negated (exact),
        ``W_down`` copied, and ``b_down' = b_down + c W_down[:, S] b_up[S]``
        with each entry the float64 nearest its exact value (``c =
        flip_constant + flip_constant_lo``, exact; error-free sums with an
        a-priori bound, and exact integer sums for the entries that bound
        leaves open, so cancelling neurons cannot make it wrong). Its
        function is exactly ``A x + f(x) - E_S x + (b_down' - exact)`` with
        ``E_S = A + c W_down[:, S] W_up[S, :]``: equal to ``A x + f(x)`` up
        to half an ulp of each ``b_down'`` entry when ``E_S = 0``. Measure
        the gap on data with :func:`relative_output_error`.

    Raises
    ------
    ValueError
        If the activation is not flip-linear, an index is out of range or
        repeated, or an entry of ``b_down'`` lies beyond float64's range
        (no float64 block exists then).

    References
    ----------
    Mijoski & Karbevski 2026, arXiv:2604.23705, the flip construction.
    """
    act = get_activation(activation)
    if act.flip_constant is None:
        raise ValueError(
            f"activation {act.name!r} is not flip-linear (act(z) - act(-z) != c z), "
            "so flipping neurons does not absorb a skip"
        )
    up, _ = as_float_array("W_up", W_up, 2, "(m, d_in)")
    down, _ = as_float_array("W_down", W_down, 2, "(d_out, m)")
    w = Weights(up, down, b_up, b_down, None, np.zeros((down.shape[0], up.shape[1])))
    reject_masked("subset", subset)
    s, _ = as_float_array("subset", np.asarray(subset).reshape(-1), 1, "(|S|,)")
    if len(s) and (np.any(s != np.round(s)) or s.min() < 0 or s.max() >= w.m):
        raise ValueError(f"subset must hold integer neuron indices in [0, {w.m}), got {subset!r}")
    idx = s.astype(np.int64)
    if len(np.unique(idx)) != len(idx):
        raise ValueError("subset must not repeat a neuron")
    b_up_arr = w.b_up if w.b_up is not None else np.zeros(w.m)
    b_down_arr = w.b_down if w.b_down is not None else np.zeros(w.d_out)
    sign = np.ones(w.m)
    sign[idx] = -1.0
    new_b_down = _flipped_b_down(w.W_down, b_up_arr, b_down_arr, idx, act)
    return SkipFreeBlock(
        W_up=w.W_up * sign[:, None] + 0.0,  # + 0.0 turns -0.0 into 0.0
        b_up=b_up_arr * sign + 0.0,
        W_down=w.W_down.copy(),
        b_down=new_b_down,
        activation=act,
    )


def _flipped_b_down(
    W_down: FloatArray,
    b_up: FloatArray,
    b_down: FloatArray,
    idx: npt.NDArray[np.int64],
    act: Activation,
) -> FloatArray:
    """``b_down + c W_down[:, S] b_up[S]``, each entry the float64 nearest
    its exact value, with ``c = flip_constant + flip_constant_lo`` exact.

    Raises
    ------
    ValueError
        When an exact entry lies beyond float64's range.
    """
    keep = idx[b_up[idx] != 0]
    if len(keep) == 0:
        out: FloatArray = b_down.copy()
        return out
    c_hi, c_lo = float(cast(float, act.flip_constant)), float(act.flip_constant_lo)
    try:
        return _error_free.rounded_flip_sum(W_down, keep, b_up, c_hi, c_lo, [b_down])
    except OverflowError as e:
        raise ValueError(
            "the skip-free block's b_down = b_down + c W_down[:, S] b_up[S] lies beyond "
            f"float64's range in {e}, so the block cannot be stored in float64 (rescale the "
            "block)"
        ) from None


def residual_block_output(  # noqa: PLR0913 - a block's arrays, as find_absorbing_subset takes them
    x: npt.ArrayLike,
    W_up: npt.ArrayLike,
    W_down: npt.ArrayLike,
    *,
    activation: Union[str, Activation] = "relu",
    b_up: Optional[npt.ArrayLike] = None,
    b_down: Optional[npt.ArrayLike] = None,
    W_gate: Optional[npt.ArrayLike] = None,
    skip: Optional[npt.ArrayLike] = None,
) -> FloatArray:
    """Evaluate ``A x + f(x)`` on ``x`` of shape ``(n, d_in)``.

    Parameters follow :func:`skipsearch.find_absorbing_subset`.

    Returns
    -------
    ndarray, shape (n, d_out)
    """
    act = get_activation(activation)
    if act.gated != (W_gate is not None):
        raise ValueError(
            f"activation {act.name!r} is {'gated: pass W_gate' if act.gated else 'not gated'}"
            + ("" if act.gated else ", but W_gate was given")
        )
    w = Weights(W_up, W_down, b_up, b_down, W_gate, skip)
    reject_masked("x", x)  # before np.atleast_2d, which drops masks inside lists
    xs, _ = as_float_array("x", np.atleast_2d(x), 2, f"(n, {w.d_in})")
    if xs.shape[1] != w.d_in:
        raise ValueError(f"x has shape {xs.shape}, expected (n, {w.d_in})")
    pre = xs @ w.W_up.T + (w.b_up if w.b_up is not None else 0.0)
    hidden: FloatArray = act(xs @ w.W_gate.T) * pre if w.W_gate is not None else act(pre)
    out: FloatArray = hidden @ w.W_down.T + xs @ w.A.T
    return out + (w.b_down if w.b_down is not None else 0.0)


def _original_output(  # noqa: PLR0913 - a block's arrays, as find_absorbing_subset takes them
    block: SkipFreeBlock,
    x: npt.ArrayLike,
    W_up: npt.ArrayLike,
    W_down: npt.ArrayLike,
    activation: Union[str, Activation, None],
    b_up: Optional[npt.ArrayLike],
    b_down: Optional[npt.ArrayLike],
    W_gate: Optional[npt.ArrayLike],
    skip: Optional[npt.ArrayLike],
) -> FloatArray:
    """``A x + f(x)`` of the block that ``block`` replaces (its activation
    by default ``block``'s), after checking that ``block`` is one."""
    if not isinstance(block, SkipFreeBlock):
        raise TypeError(f"block must be a SkipFreeBlock, got {type(block).__name__}")
    return residual_block_output(
        x,
        W_up,
        W_down,
        activation=block.activation if activation is None else activation,
        b_up=b_up,
        b_down=b_down,
        W_gate=W_gate,
        skip=skip,
    )


def max_abs_difference(  # noqa: PLR0913 - a block's arrays, as find_absorbing_subset takes them
    block: SkipFreeBlock,
    W_up: npt.ArrayLike,
    W_down: npt.ArrayLike,
    *,
    activation: Union[str, Activation, None] = None,
    b_up: Optional[npt.ArrayLike] = None,
    b_down: Optional[npt.ArrayLike] = None,
    W_gate: Optional[npt.ArrayLike] = None,
    skip: Optional[npt.ArrayLike] = None,
    n_samples: int = 1000,
    scale: float = 3.0,
    seed: int = 0,
) -> float:
    """Largest ``|block(x) - (A x + f(x))|`` over random inputs.

    Parameters
    ----------
    block : SkipFreeBlock
        Typically ``result.block``.
    W_up, W_down, b_up, b_down, W_gate, skip
        The original residual block, as passed to
        :func:`skipsearch.find_absorbing_subset`.
    activation : str or Activation, optional
        The original block's activation. Default: ``block.activation``, the
        one the flip set was found for.
    n_samples : int, default 1000
        Number of inputs ``x ~ N(0, scale^2 I)``.
    scale : float, default 3.0
        Standard deviation of the inputs.
    seed : int, default 0
        Seed of the random generator, for reproducible checks.

    Returns
    -------
    float
        The maximum absolute difference over all samples and outputs, both
        outputs evaluated in float64: a sanity check, not a proof (large
        cancelling neurons make it large for blocks that are exact;
        :func:`relative_output_error` evaluates a flip block's gap exactly).
    """
    if not isinstance(block, SkipFreeBlock):
        raise TypeError(f"block must be a SkipFreeBlock, got {type(block).__name__}")
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}")
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not 0 < scale < np.inf:
        raise ValueError(f"scale must be a finite positive number, got {scale!r}")
    for name, given, built in (("W_up", W_up, block.W_up), ("W_down", W_down, block.W_down)):
        if np.ndim(given) == 2 and np.shape(given) != built.shape:
            raise ValueError(
                f"{name} has shape {np.shape(given)}, but block's {name} has shape "
                f"{built.shape}: pass the weights the block was built from"
            )
    rng = np.random.default_rng(seed)
    x = scale * rng.standard_normal((int(n_samples), block.W_up.shape[1]))
    want = _original_output(block, x, W_up, W_down, activation, b_up, b_down, W_gate, skip)
    return float(np.max(np.abs(block(x) - want)))


@in_standard_float_env
def relative_output_error(  # noqa: PLR0913 - a block's arrays, as find_absorbing_subset takes them
    block: SkipFreeBlock,
    X: npt.ArrayLike,
    W_up: npt.ArrayLike,
    W_down: npt.ArrayLike,
    *,
    activation: Union[str, Activation, None] = None,
    b_up: Optional[npt.ArrayLike] = None,
    b_down: Optional[npt.ArrayLike] = None,
    W_gate: Optional[npt.ArrayLike] = None,
    skip: Optional[npt.ArrayLike] = None,
) -> float:
    """What replacing the residual block by ``block`` costs on the inputs ``X``.

    Returns ``||g(X) - (A X + f(X))||_F / ||A X + f(X)||_F`` over the rows of
    ``X``, where ``g`` is ``block``. This measure is ours, not Mijoski &
    Karbevski's (2026, arXiv:2604.23705), whose results are exact yes/no
    answers.

    **Flip blocks.** When ``block`` is the flip of a set ``S`` of the same
    weights (the same ``W_down``, each row of ``W_up`` and ``b_up`` equal
    to the original or to its negation, the same flip-linear activation, as
    :func:`build_skip_free_block` makes them, whatever ``b_down``), the gap
    is exactly ``g(x) - (A x + f(x)) = delta - E_S x`` with
    ``E_S = A + c W_down[:, S] W_up[S, :]`` and ``delta = block.b_down -
    (b_down + c W_down[:, S] b_up[S])``. The numerator is evaluated from
    that identity, not as the difference of two float64 outputs (which
    loses every digit when large neurons cancel): ``E_S`` and ``delta``
    are computed exactly and rounded to the nearest float64 (error-free
    slice products, Ozaki et al. 2012, and error-free sums, Ogita, Rump &
    Oishi 2005), then multiplied by ``X`` in float64. So the numerator is 0
    exactly when ``E_S`` and ``delta`` are, and otherwise off by at most
    about ``(d_in + 2) u || |delta| + |X| |E_S|^T ||_F`` (to first order
    in ``u = 2^-53``). For isotropic inputs the numerator is proportional to
    ``||E_S||_F``, the relative residual that ``find_absorbing_subset``
    reports times ``||A||_F``. The cost is ``K^2`` float64 products of
    shape ``d_out x |S| x d_in``, ``K`` the slices per factor (3 for
    float32-valued weights, 4 for float64 ones, up to 8), against about
    ``4 n m d`` for the float64 difference: seconds at ``d = 768``, much
    more than the difference at ``d = 4096``.

    **Other blocks** (another activation, different weights, weights with a
    row of ``W_down[:, S]`` or a column of ``W_up[S, :]`` spanning more than
    160 bits, or exponents beyond the range of the exact slice products):
    the numerator is the float64 norm of ``g(X) - (A X + f(X))``, both
    outputs evaluated in float64. Each output entry is then off by up to
    about ``(m + d_in) u`` times the magnitudes it is summed from,
    ``|W_down| (|h| + L (|W_up| |x| + |b_up|)) + |A| |x| + |b_down|`` with
    ``h`` the hidden activations and ``L`` the activation's Lipschitz
    constant, plus ``|W_down|`` times the activation's own evaluation error
    (Higham, *Accuracy and Stability of Numerical Algorithms*, 2002, ch. 3):
    more than the gap itself when those magnitudes cancel.

    **The denominator** ``||A X + f(X)||_F`` is a float64 evaluation in
    every case, with that same error per entry.

    Parameters
    ----------
    block : SkipFreeBlock
        The skip-free replacement, e.g. ``build_skip_free_block(..., subset)``.
    X : array_like, shape (n, d_in)
        The inputs, one per row (for instance hidden states captured from
        a model at this block's input).
    W_up, W_down, b_up, b_down, W_gate, skip
        The original residual block, as passed to
        :func:`skipsearch.find_absorbing_subset`.
    activation : str or Activation, optional
        The original block's activation. Default: ``block.activation``.

    Returns
    -------
    float
        The relative error, dimensionless.

    Raises
    ------
    TypeError
        ``block`` is not a :class:`SkipFreeBlock`, or ``X`` is not a real array.
    ValueError
        ``X`` has the wrong shape or non-finite entries, ``block`` does not
        match the weights' shapes, ``A X + f(X)`` is zero on ``X``, or
        ``A X + f(X)`` or ``block(X)`` overflows float64 on ``X`` (or the
        ratio lies beyond its range), where the error cannot be evaluated.

    Notes
    -----
    Both norms are taken after scaling by a power of two (largest entry in
    ``[1/2, 1)``), and the ratio is formed from the scaled values: tiny
    outputs and gaps (down to subnormal ones) neither underflow to zero nor
    overflow when squared, and ``delta - X E_S^T`` is re-evaluated at a
    scale where it stays finite when it would overflow.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        want = _original_output(block, X, W_up, W_down, activation, b_up, b_down, W_gate, skip)
    xs = np.atleast_2d(np.asarray(X, dtype=np.float64))
    if block.W_up.shape[1] != xs.shape[1] or block.W_down.shape[0] != want.shape[1]:
        raise ValueError(
            f"block maps {block.W_up.shape[1]} inputs to {block.W_down.shape[0]} outputs, but "
            f"the residual block maps {xs.shape[1]} to {want.shape[1]}"
        )
    _require_finite("A X + f(X)", want)
    if not np.any(want):
        raise ValueError("A X + f(X) is zero on X: the relative error is undefined")
    den = _scaled_norm(want)
    act = block.activation if activation is None else get_activation(activation)
    w = Weights(W_up, W_down, b_up, b_down, W_gate, skip)
    gap = _flip_gap(block, act, w)
    if gap is not None:
        E, delta = gap
        num = _scaled_affine_norm(delta, xs, E)
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            got = block(xs)
        _require_finite("block(X)", got)
        num = _scaled_difference_norm(got, want)
    return _scaled_ratio(num, den)


def _require_finite(what: str, values: FloatArray) -> None:
    """Refuse an output that overflowed float64 (its norm, and so the
    relative error, would be inf or NaN)."""
    if not np.isfinite(values).all():
        row = int(np.argwhere(~np.isfinite(values))[0][0])
        raise ValueError(
            f"{what} overflows float64 on X (first at row {row} of X): the relative error "
            "cannot be evaluated in float64; rescale X or the block"
        )


def _scaled_norm(values: FloatArray) -> tuple[float, int]:
    """``(v, k)`` with ``||values||_F = v * 2**k`` up to float64 rounding:
    the entries are scaled by a power of two so the largest lies in
    ``[1/2, 1)`` before squaring, so the squares neither overflow nor
    underflow to zero. ``values`` must be finite."""
    big = float(np.max(np.abs(values), initial=0.0))
    if big == 0.0:
        return 0.0, 0
    k = math.frexp(big)[1]
    with np.errstate(under="ignore"):
        return float(np.linalg.norm(np.ldexp(values, -k))), k


def _scaled_affine_norm(delta: FloatArray, xs: FloatArray, E: FloatArray) -> tuple[float, int]:
    """:func:`_scaled_norm` of ``delta - xs @ E.T``, evaluated at a scale
    where it cannot overflow (each factor scaled by a power of two)."""
    with np.errstate(over="ignore", invalid="ignore"):
        direct = delta - xs @ E.T
    if np.isfinite(direct).all():
        return _scaled_norm(direct)
    kx = math.frexp(float(np.max(np.abs(xs), initial=0.0)))[1]
    ke = math.frexp(float(np.max(np.abs(E), initial=0.0)))[1]
    with np.errstate(under="ignore"):
        scaled = np.ldexp(delta, -(kx + ke)) - np.ldexp(xs, -kx) @ np.ldexp(E, -ke).T
    v, k = _scaled_norm(scaled)
    return v, k + kx + ke


def _scaled_difference_norm(got: FloatArray, want: FloatArray) -> tuple[float, int]:
    """:func:`_scaled_norm` of ``got - want`` (both finite), without overflow."""
    with np.errstate(over="ignore", invalid="ignore"):
        direct = got - want
    if np.isfinite(direct).all():
        return _scaled_norm(direct)
    with np.errstate(under="ignore"):
        v, k = _scaled_norm(np.ldexp(got, -1) - np.ldexp(want, -1))
    return v, k + 1


def _scaled_ratio(num: tuple[float, int], den: tuple[float, int]) -> float:
    """``(num_v 2**num_k) / (den_v 2**den_k)`` as a float64, refusing a ratio
    beyond float64's range rather than returning inf."""
    if num[0] == 0.0:
        return 0.0
    try:
        return math.ldexp(num[0] / den[0], num[1] - den[1])
    except OverflowError:
        raise ValueError(
            "the relative error on X lies beyond float64's range (the gap exceeds A X + f(X) "
            "by more than 2**1024)"
        ) from None


def _flip_set(block: SkipFreeBlock, act: Activation, w: Weights) -> Optional[npt.NDArray[np.int64]]:
    """The set ``S`` when ``block`` is the flip of ``S`` of the weights
    ``w`` with activation ``act``, else None."""
    same_act = act == block.activation and act.function == block.activation.function
    if not same_act or act.flip_constant is None or block.W_gate is not None:
        return None
    if w.W_gate is not None or block.W_up.shape != w.W_up.shape:
        return None
    if block.W_down.shape != w.W_down.shape or not np.array_equal(block.W_down, w.W_down):
        return None
    b_up = w.b_up if w.b_up is not None else np.zeros(w.m)
    if block.b_up.shape != b_up.shape:
        return None
    kept = np.all(block.W_up == w.W_up, axis=1) & (block.b_up == b_up)
    flipped = np.all(block.W_up == -w.W_up, axis=1) & (block.b_up == -b_up)
    if not np.all(kept | flipped):
        return None
    return np.flatnonzero(~kept).astype(np.int64)


def _flip_gap(
    block: SkipFreeBlock, act: Activation, w: Weights
) -> Optional[tuple[FloatArray, FloatArray]]:
    """``(E_S, delta)`` rounded to the nearest float64, entry by entry, when
    ``block`` is a flip block of ``w``: ``g(x) - (A x + f(x)) = delta -
    E_S x`` exactly. None when it is not, or when the exponents leave the
    range of the exact products."""
    S = _flip_set(block, act, w)
    if S is None:
        return None
    c_hi, c_lo = float(cast(float, act.flip_constant)), float(act.flip_constant_lo)
    P = np.ascontiguousarray(w.W_down[:, S])
    Q = np.ascontiguousarray(w.W_up[S, :])
    terms = _error_free.exact_product_slices(P, Q)
    if terms is None:
        return None
    b_up = w.b_up if w.b_up is not None else np.zeros(w.m)
    b_down = w.b_down if w.b_down is not None else np.zeros(w.d_out)
    keep = S[b_up[S] != 0]
    try:
        E = _error_free.rounded_sums([t.ravel() for t in terms], c_hi, c_lo, w.A.ravel())
        delta = _error_free.rounded_flip_sum(
            w.W_down, keep, b_up, -c_hi, -c_lo, [block.b_down, -b_down]
        )
    except OverflowError:
        return None
    return E.reshape(w.A.shape), delta
