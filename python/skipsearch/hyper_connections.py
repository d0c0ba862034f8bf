"""Hyper-connection blocks: an FFN between several residual streams.

A hyper-connection (Zhu et al. 2024, arXiv:2409.19606; the manifold-
constrained mHC of Xie et al. 2025, arXiv:2512.24880, which DeepSeek-V4
uses) keeps ``n`` residual streams ``X_1 .. X_n`` of width ``C`` and computes,
around an FFN ``f`` of width ``m`` on ``R^C``,

``X'_k = sum_j H_res[j, k] X_j + H_post[k] f(sum_j H_pre[j] X_j)``.

With the mixing fixed, stacking the streams (``X = [X_1; ..; X_n]`` in
``R^{nC}``) makes it an ordinary residual block of width ``m`` with skip
``A = H_res^T (x) I_C``, ``W~_up = W_up (H_pre^T (x) I_C)`` and ``W~_down =
(H_post (x) I_C) W_down`` (docs/theory.md section 4.6).
:func:`decide_hyper_connection` decides that block without forming it: the
mixing's angle to the rank-one maps the FFN can reach settles most blocks
in exact rational arithmetic on the ``n x n`` mixing, and the rest reduce to
:func:`skipsearch.find_absorbing_subset` on the FFN itself.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Optional, Union

import numpy as np
import numpy.typing as npt

from skipsearch import _core
from skipsearch._types import FloatArray, Verdict
from skipsearch._validation import Weights, as_float_array, check_tol
from skipsearch.absorption import PAPER, MLPBlock, _validated, find_absorbing_subset
from skipsearch.activations import FLIP_LINEAR, Activation, get_activation
from skipsearch.construction import SkipFreeBlock, build_skip_free_block
from skipsearch.options import SearchOptions, merged
from skipsearch.result import AbsorptionResult, FieldEquality, GenericityChecks

__all__ = ["HyperConnectionResult", "decide_hyper_connection", "hyper_connection_output"]

_THEORY = "docs/theory.md section 4.6"


@dataclass(frozen=True, eq=False)
class HyperConnectionResult(FieldEquality):
    """The verdict on a hyper-connection block (see
    :func:`decide_hyper_connection`).

    Attributes
    ----------
    verdict : {"absorbable", "not_absorbable", "undecided"}
        Whether the block on the stacked streams ``R^{nC}`` equals a
        skip-free block of the same kind and width ``m`` there.
    reason : str
        The argument, in words, with its source.
    argument : str
        ``"mixing_angle"`` (no flip set, from the mixing alone, with the
        genericity checks of ``W_up``), ``"zero_skip"``, an argument of the
        single-stream decision it reduced to (``"flip_construction"``,
        ``"certificate"``, ``"degree"``, ...) or ``"none"``.
    tolerance : float
        The relative Frobenius tolerance of the flip condition.
    streams : int
        ``n``.
    width : int
        ``C``, the width of each stream.
    mixing_bound : float or None
        A proven lower bound on the relative residual ``||A + c W~_down[:, S]
        W~_up[S, :]||_F / ||A||_F`` of every flip set ``S``: ``sin theta``,
        theta the angle between ``H_res^T`` and ``H_post H_pre^T``, rounded
        down. None for a zero ``H_res``.
    stream_skip : float or None
        The scalar ``mu`` of the single-stream problem the block reduced to
        (skip ``mu I_C``, when ``H_res^T = mu H_post H_pre^T`` exactly), else
        None.
    subset : ndarray of int or None
        The flip set of an absorbable block.
    stream_result : AbsorptionResult or None
        The single-stream decision the verdict rests on, when it rests on one.
    genericity : GenericityChecks or None
        The checks of ``W_up`` run for the ``"mixing_angle"`` argument.
    H_pre, H_post : ndarray, shape (n,)
        The read-in and write-out, float64 copies.

    Notes
    -----
    Two results are equal when every field is (arrays by dtype, shape and
    values); they pickle and compare equal to the original afterwards.
    An absorbable block's witness is exact in factored form: the skip-free
    block ``X -> H_post (x) g(sum_j H_pre[j] X_j)`` with ``g =
    stream_result.block``. :meth:`skip_free_block` multiplies it out.
    """

    verdict: Verdict
    reason: str
    argument: str
    tolerance: float
    streams: int
    width: int
    mixing_bound: Optional[float] = None
    stream_skip: Optional[float] = None
    subset: Optional[npt.NDArray[np.int64]] = None
    stream_result: Optional[AbsorptionResult] = None
    genericity: Optional[GenericityChecks] = None
    H_pre: FloatArray = field(default_factory=lambda: np.zeros(0))
    H_post: FloatArray = field(default_factory=lambda: np.zeros(0))

    _HASH_FIELDS = ("verdict", "argument", "streams", "width")

    def skip_free_block(self) -> SkipFreeBlock:
        """The witness of an absorbable block as one skip-free block on
        ``R^{nC}``: ``W_up = g.W_up (H_pre^T (x) I_C)``, ``W_down = (H_post
        (x) I_C) g.W_down``, ``b_down = H_post (x) g.b_down``.

        Its weights are those products rounded to float64 (exact where the
        entries of ``H_pre`` and ``H_post`` are powers of two); the factored
        form of the class notes is exact.

        Raises
        ------
        ValueError
            The block is not absorbable (there is no witness), or a product
            overflows float64 (weights near its range's ends: the factored
            form, ``stream_result.block`` with ``H_pre`` and ``H_post``,
            stays exact).
        """
        g = None if self.stream_result is None else self.stream_result.block
        if self.verdict != "absorbable" or g is None:
            raise ValueError(f"the block is {self.verdict}: there is no witness to build")
        eye = np.eye(self.width)
        with np.errstate(over="ignore", invalid="ignore"):
            block = self._stacked(g, eye)
        arrays = (block.W_up, block.b_up, block.W_down, block.b_down, block.W_gate)
        if not all(np.isfinite(a).all() for a in arrays if a is not None):
            raise ValueError(
                "the witness's weights on R^{nC} overflow float64 (H_post or H_pre times the "
                "stream block's weights); use the factored form: stream_result.block with "
                "H_pre and H_post"
            )
        return block

    def _stacked(self, g: SkipFreeBlock, eye: FloatArray) -> SkipFreeBlock:
        """The stream block ``g`` lifted to the stacked streams."""
        return SkipFreeBlock(
            W_up=g.W_up @ np.kron(self.H_pre[None, :], eye),
            b_up=g.b_up.copy(),
            W_down=np.kron(self.H_post[:, None], eye) @ g.W_down,
            b_down=np.asarray(np.kron(self.H_post, g.b_down), dtype=np.float64),
            activation=g.activation,
            W_gate=None if g.W_gate is None else g.W_gate @ np.kron(self.H_pre[None, :], eye),
        )


def hyper_connection_output(  # noqa: PLR0913 - a block's arrays and its mixing
    X: npt.ArrayLike,
    W_up: npt.ArrayLike,
    W_down: npt.ArrayLike,
    H_res: npt.ArrayLike,
    H_pre: npt.ArrayLike,
    H_post: npt.ArrayLike,
    *,
    activation: Union[str, Activation] = "relu",
    b_up: Optional[npt.ArrayLike] = None,
    b_down: Optional[npt.ArrayLike] = None,
    W_gate: Optional[npt.ArrayLike] = None,
) -> FloatArray:
    """Evaluate a static hyper-connection block in float64.

    Parameters
    ----------
    X : array_like, shape (N, n, C) or (n, C)
        The residual streams of ``N`` tokens (or one).
    W_up, W_down, H_res, H_pre, H_post, activation, b_up, b_down, W_gate
        As for :func:`decide_hyper_connection`.

    Returns
    -------
    ndarray, shape of ``X``
        ``X'_k = sum_j H_res[j, k] X_j + H_post[k] f(sum_j H_pre[j] X_j)``.
    """
    streams = np.asarray(X, dtype=np.float64)
    if streams.ndim not in (2, 3):
        raise ValueError(f"X has shape {streams.shape}, expected (N, n, C) or (n, C)")
    xs = streams[None] if streams.ndim == 2 else streams
    up = np.asarray(W_up, dtype=np.float64)
    down = np.asarray(W_down, dtype=np.float64)
    m = up.shape[0]
    f = SkipFreeBlock(
        W_up=up,
        b_up=np.zeros(m) if b_up is None else np.asarray(b_up, dtype=np.float64),
        W_down=down,
        b_down=np.zeros(down.shape[0]) if b_down is None else np.asarray(b_down, dtype=np.float64),
        activation=get_activation(activation),
        W_gate=None if W_gate is None else np.asarray(W_gate, dtype=np.float64),
    )
    x = np.einsum("j,tjc->tc", np.asarray(H_pre, dtype=np.float64), xs)
    post = np.asarray(H_post, dtype=np.float64)
    out = np.einsum("jk,tjc->tkc", np.asarray(H_res, dtype=np.float64), xs)
    out += post[None, :, None] * f(x)[:, None, :]
    return np.asarray(out[0] if streams.ndim == 2 else out, dtype=np.float64)


def _fractions(a: FloatArray) -> list[Fraction]:
    return [Fraction(float(v)) for v in a.ravel()]


def _sqrt_down(x: Fraction) -> float:
    """The largest float64 whose square is at most ``x``, near enough: a
    float at most ``sqrt(x)``."""
    s = math.sqrt(float(x))
    while s > 0 and Fraction(s) ** 2 > x:
        s = math.nextafter(s, 0.0)
    return s


def _dynamic_part(dynamic: Optional[Sequence[Any]]) -> Optional[str]:
    """None when the dynamic part is absent or exactly zero; else which pair
    makes it token-dependent."""
    if dynamic is None:
        return None
    if not isinstance(dynamic, (list, tuple)):
        raise TypeError(
            "dynamic must be a list of (projection, scale) pairs or None, got "
            f"{type(dynamic).__name__}"
        )
    for i, pair in enumerate(dynamic):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(
                f"dynamic[{i}] must be a (projection, scale) pair of arrays, got "
                f"{type(pair).__name__}"
            )
        fn, _ = as_float_array(f"dynamic[{i}][0]", np.ravel(pair[0]), 1, "(projection)")
        scale, _ = as_float_array(f"dynamic[{i}][1]", np.ravel(pair[1]), 1, "(scale)")
        if np.any(fn) and np.any(scale):
            return f"dynamic[{i}]: a nonzero projection times a nonzero scale"
    return None


def decide_hyper_connection(  # noqa: PLR0913 - the block's arrays, its mixing and the search's options
    W_up: npt.ArrayLike,
    W_down: npt.ArrayLike,
    H_res: npt.ArrayLike,
    H_pre: npt.ArrayLike,
    H_post: npt.ArrayLike,
    *,
    activation: Union[str, Activation] = "relu",
    b_up: Optional[npt.ArrayLike] = None,
    b_down: Optional[npt.ArrayLike] = None,
    W_gate: Optional[npt.ArrayLike] = None,
    b_gate: Optional[npt.ArrayLike] = None,
    dynamic: Optional[Sequence[tuple[npt.ArrayLike, npt.ArrayLike]]] = None,
    tol: Optional[float] = None,
    options: Optional[SearchOptions] = None,
) -> HyperConnectionResult:
    """Decide whether a hyper-connection block is a skip-free block of the
    same width on its stacked streams.

    The block is ``X'_k = sum_j H_res[j, k] X_j + H_post[k] f(x)`` with ``x =
    sum_j H_pre[j] X_j`` on ``n`` streams of width ``C`` and ``f`` the FFN of
    :func:`skipsearch.find_absorbing_subset` (``W_up`` of shape ``(m, C)``,
    ``W_down`` of shape ``(C, m)``). With the mixing fixed it is the residual
    block ``A X + W~_down act(W~_up X + b_up) + b~_down`` on ``R^{nC}`` with
    ``A = H_res^T (x) I_C`` (docs/theory.md section 4.6), and the question is
    that of :func:`find_absorbing_subset` for it.

    The decision, each step proved on the input:

    - a nonzero dynamic part: undecided (the mixing depends on the token);
    - ``H_res = 0``: the block is skip-free already;
    - gated, homogeneous (degree ``k != 1``) and bounded activations: the
      degree, linearization and boundedness arguments (MK26 and this
      project) need only ``A != 0``, and a block without inner biases is not
      absorbable;
    - flip-linear activations: every flip set leaves a relative residual of
      at least ``sin theta``, theta the angle between ``H_res^T`` and
      ``H_post H_pre^T`` (computed exactly in rationals). Above ``tol`` no
      flip set exists, and for ReLU and LeakyReLU, whose kink argument
      (§3.2) holds for any skip, ``W_up`` passing the genericity checks
      makes the block not absorbable; for GELU and the others the verdict
      is undecided (MK26's theorem is not proved for the structured
      ``W~_up``). When ``H_res^T = mu H_post H_pre^T`` exactly, the block
      reduces to the single-stream problem with skip ``mu I_C``, which
      :func:`find_absorbing_subset` decides; its witness lifts to the
      streams, and its "no flip set" lifts for ReLU and LeakyReLU.

    Parameters
    ----------
    W_up : array_like, shape (m, C)
    W_down : array_like, shape (C, m)
    H_res : array_like, shape (n, n)
        The residual mixing, ``H_res[j, k]`` the weight of stream ``j`` in
        output stream ``k`` (lucidrains' ``static_alpha[:, 1:]``;
        DeepSeek-V4's Sinkhorn-normalised ``comb`` as it is, since its
        forward computes ``comb^T X``, that is ``sum_j comb[j, k] X_j``).
    H_pre : array_like, shape (n,)
        The read-in (lucidrains' ``static_alpha[:, 0]``).
    H_post : array_like, shape (n,)
        The write-out (lucidrains' ``static_beta``).
    activation, b_up, b_down, W_gate, b_gate
        As for :func:`skipsearch.find_absorbing_subset`.
    dynamic : sequence of (projection, scale) pairs, optional
        The token-dependent part of the mixing, as pairs whose product
        scales it (lucidrains' ``(dynamic_alpha_fn, dynamic_alpha_scale)``
        and ``(dynamic_beta_fn, dynamic_beta_scale)``; DeepSeek-V4's ``fn``
        and ``scale``). A pair with a nonzero projection and a nonzero scale
        makes the block undecided. None: the mixing is static.
    tol : float, optional
        Relative Frobenius tolerance of the flip condition on the stacked
        block. Default: ``sqrt(eps)`` of the coarsest dtype among ``W_up``,
        ``W_down``, ``H_res``, ``H_pre`` and ``H_post``.
    options : SearchOptions, optional
        The single-stream search's options (time and node limits, threads,
        memory); its ``tol`` is overridden by this function's.

    Returns
    -------
    HyperConnectionResult

    Raises
    ------
    ValueError
        Wrong shapes (``W_down`` must map back to the stream width ``C``;
        ``H_res`` square with ``n`` the length of ``H_pre`` and ``H_post``),
        NaN or Inf, and every error of :func:`find_absorbing_subset`.
    TypeError
        Complex or non-numeric arrays.

    Examples
    --------
    Two streams of width 2 mixed by the identity around a ReLU FFN of three
    neurons: every flip term is a multiple of ``H_post H_pre^T = [[1, 1],
    [1, 1]]``, at ``sin theta = 1/sqrt(2)`` from ``H_res^T = I``, so no flip
    set exists, and the rows of ``W_up`` pass the kink argument's checks.
    With ``H_res = H_pre H_post^T / 2`` instead, the block reduces to one
    stream with skip ``I / 2``, which flipping neurons 0 and 1 absorbs.

    >>> import numpy as np, skipsearch
    >>> W_up = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> W_down = np.array([[-0.5, 0.0, 0.25], [0.0, -0.5, 0.25]])
    >>> one = np.ones(2)
    >>> r = skipsearch.decide_hyper_connection(W_up, W_down, np.eye(2), one, one)
    >>> r.verdict, r.argument, round(r.mixing_bound, 6)
    ('not_absorbable', 'mixing_angle', 0.707107)
    >>> r = skipsearch.decide_hyper_connection(W_up, W_down, np.full((2, 2), 0.5), one, one)
    >>> r.verdict, r.stream_skip, r.subset.tolist()
    ('absorbable', 0.5, [0, 1])
    >>> X = np.random.default_rng(0).standard_normal((3, 2, 2))
    >>> block = r.skip_free_block()
    >>> want = skipsearch.hyper_connection_output(X, W_up, W_down, np.full((2, 2), 0.5), one, one)
    >>> bool(np.allclose(block(X.reshape(3, 4)).reshape(X.shape), want))
    True

    References
    ----------
    Mijoski & Karbevski 2026, arXiv:2604.23705 (the flip construction, the
    degree and linearization arguments); Zhu et al. 2024, arXiv:2409.19606
    and Xie et al. 2025, arXiv:2512.24880 (the hyper-connection); the
    lifting, the angle bound and the reduction are this project's
    (docs/theory.md section 4.6).
    """
    act = get_activation(activation)
    h, e_h = as_float_array("H_res", H_res, 2, "(n, n)")
    n = h.shape[0]
    if h.shape != (n, n) or n == 0:
        raise ValueError(f"H_res has shape {h.shape}, expected a square (n, n) with n >= 1")
    q, e_q = as_float_array("H_pre", H_pre, 1, f"({n},)")
    p, e_p = as_float_array("H_post", H_post, 1, f"({n},)")
    for name, v in (("H_pre", q), ("H_post", p)):
        if v.shape != (n,):
            raise ValueError(f"{name} has shape {v.shape}, expected ({n},) like H_res {h.shape}")
    up, e_up = as_float_array("W_up", W_up, 2, "(m, C)")
    down, e_down = as_float_array("W_down", W_down, 2, f"(C, {up.shape[0]})")
    if down.shape[0] != up.shape[1]:
        raise ValueError(
            f"W_up has shape {up.shape} and W_down {down.shape}: the FFN of a "
            f"hyper-connection maps the stream width C back to itself, so W_down must be (C, m) "
            f"with C = {up.shape[1]}"
        )
    # Every argument is checked as find_absorbing_subset checks it (a gate
    # for an ungated activation, b_gate without W_gate, ...), whatever path
    # decides below; W_up and W_down are float64 already (no copy).
    w, _, _, _ = _validated(
        MLPBlock(up, down, activation, b_up, b_down, W_gate, 1.0, b_gate), act, None, "rust"
    )
    checked = check_tol(tol)
    eps = max(e_up, e_down, e_h, e_q, e_p)
    tol_value = math.sqrt(eps) if checked is None else checked
    # The single stream's bracket is not the streams': it is not computed.
    opts = merged(options).replace(tol=tol_value, bracket=False)
    common: dict[str, Any] = dict(
        tolerance=tol_value, streams=n, width=w.d_in, H_pre=q.copy(), H_post=p.copy()
    )

    def single(skip: float) -> AbsorptionResult:
        return find_absorbing_subset(
            W_up,
            W_down,
            activation=act,
            b_up=b_up,
            b_down=b_down,
            W_gate=W_gate,
            b_gate=b_gate,
            skip=skip,
            options=opts,
        )

    moving = _dynamic_part(dynamic)
    if moving is not None:
        return HyperConnectionResult(
            verdict="undecided",
            reason=(
                f"Undecided: the mixing has a token-dependent part ({moving}), so the skip is no "
                f"fixed linear map of the streams and no theorem applies ({_THEORY})."
            ),
            argument="none",
            **common,
        )
    H, P_, Q_ = _fractions(h), _fractions(p), _fractions(q)
    HH = sum(x * x for x in H)
    if HH == 0:
        r = single(0.0)
        if r.block is None:
            # A class without the flip construction: the witness is f itself.
            r = dataclasses.replace(r, block=_own_block(w, act))
        return HyperConnectionResult(
            verdict=r.verdict,
            reason="The mixing H_res is zero, so the block is skip-free already (empty flip set).",
            argument=r.argument,
            subset=r.subset,
            stream_result=r,
            mixing_bound=None,
            **common,
        )
    if act.kind != FLIP_LINEAR:
        r = single(1.0)
        return HyperConnectionResult(
            verdict=r.verdict,
            reason=(
                f"On the stacked streams the skip is A = H_res^T (x) I_C != 0 ({_THEORY}), and "
                f"that is all this argument needs of it. {r.reason}"
            ),
            argument=r.argument,
            stream_result=r,
            **common,
        )
    PP = sum(x * x for x in P_) * sum(x * x for x in Q_)
    dot = sum(Q_[j] * H[j * n + k] * P_[k] for j in range(n) for k in range(n))
    cos2 = Fraction(0) if PP == 0 else dot * dot / (PP * HH)
    sin2 = 1 - cos2
    bound = _sqrt_down(sin2)
    common["mixing_bound"] = bound
    tol_q = Fraction(tol_value)
    if sin2 > tol_q * tol_q:
        return _no_flip_set(act, w, q, p, bound, opts, common)
    mu = dot / PP
    reduced = None if sin2 != 0 else _reduced(w, mu)
    if reduced is None:
        why = (
            f"H_res^T lies within the tolerance of H_post H_pre^T's line (sin theta = "
            f"{math.sqrt(float(sin2)):.3g} <= tol) but not on it"
            if sin2 != 0
            else f"the reduced skip mu = {_shown(mu)} has more than 53 significant bits, or "
            "scaling the weights to bring it into float64's range would round them"
        )
        return HyperConnectionResult(
            verdict="undecided",
            reason=(
                f"Undecided: {why}, so the single-stream problem it reduces to ({_THEORY}) "
                "cannot be posed exactly in float64."
            ),
            argument="none",
            **common,
        )
    scaled_up, scaled_down, scaled_b_up, skip = reduced
    r = find_absorbing_subset(
        scaled_up,
        scaled_down,
        activation=act,
        b_up=scaled_b_up,
        b_down=b_down,
        skip=skip,
        options=opts,
    )
    if r.block is not None and r.subset is not None and scaled_up is not w.W_up:
        # The witness on the weights as given, not on their rescaled copy.
        r = dataclasses.replace(
            r,
            block=build_skip_free_block(
                w.W_up, w.W_down, r.subset, activation=act, b_up=w.b_up, b_down=w.b_down
            ),
        )
    common.update(stream_skip=_float_or_none(mu), stream_result=r)
    lifted = (
        f"H_res^T = mu H_post H_pre^T with mu = {_shown(mu)}, so the block reduces to one "
        f"stream with skip mu I_C ({_THEORY})"
    )
    if r.verdict == "absorbable":
        return HyperConnectionResult(
            verdict="absorbable",
            reason=f"Absorbable: {lifted}, where {r.reason[0].lower()}{r.reason[1:]}",
            argument=r.argument,
            subset=r.subset,
            **common,
        )
    if r.verdict == "not_absorbable" and act.necessity == "genericity_checked":
        return HyperConnectionResult(
            verdict="not_absorbable",
            reason=(
                f"Not absorbable: {lifted}, and on that stream: {r.reason} The kink argument "
                "holds on the streams: the rows H_pre (x) u_i are proportional exactly when the "
                "u_i are."
            ),
            argument=r.argument,
            **common,
        )
    if r.verdict == "not_absorbable":
        return HyperConnectionResult(
            verdict="undecided",
            reason=(
                f"Undecided: {lifted}, where no flip set exists ({r.reason}), but {act.name}'s "
                f"necessity rests on MK26's theorem for generic weights ({PAPER}), not proved "
                "for the structured weights of the streams."
            ),
            argument="none",
            **common,
        )
    return HyperConnectionResult(
        verdict="undecided",
        reason=f"Undecided: {lifted}, where: {r.reason}",
        argument="none",
        **common,
    )


def _float_or_none(x: Fraction) -> Optional[float]:
    """``x`` as a float64 when it is one exactly, else None."""
    try:
        f = float(x)
    except OverflowError:
        return None
    return f if Fraction(f) == x else None


def _shown(x: Fraction) -> str:
    """A rational for a reason: the float64 it is, or its value in words."""
    f = _float_or_none(x)
    if f is not None:
        return repr(f)
    odd, e = _dyadic(x) or (None, 0)
    return f"{odd} * 2^{e}" if odd is not None else f"{x.numerator}/{x.denominator}"


def _dyadic(x: Fraction) -> Optional[tuple[int, int]]:
    """``(odd, e)`` with ``x = odd * 2^e`` and ``|odd|`` odd of at most 53
    bits (``(0, 0)`` for 0); None when ``x`` is no such number."""
    if x == 0:
        return 0, 0
    num, den = x.numerator, x.denominator
    if den & (den - 1):
        return None
    zeros = (num & -num).bit_length() - 1
    odd = num >> zeros
    if abs(odd).bit_length() > 53:
        return None
    return odd, zeros - (den.bit_length() - 1)


def _reduced(
    w: Weights, mu: Fraction
) -> Optional[tuple[FloatArray, FloatArray, Optional[FloatArray], float]]:
    """The single-stream problem ``c W_down[:, S] W_up[S, :] = -mu I`` posed
    exactly in float64: ``mu = odd 2^e`` brought to ``[1, 2)`` by moving
    ``2^e`` onto ``W_up`` (with ``b_up``, so that its rows keep their
    directions) and ``W_down``, each scaled exactly. None when ``mu`` has
    more than 53 significant bits or a scaled weight would round."""
    split = _dyadic(mu)
    if split is None:
        return None
    odd, e = split
    if odd == 0:
        return w.W_up, w.W_down, w.b_up, 0.0
    k = e + abs(odd).bit_length() - 1
    # mu = odd 2^e = skip 2^k with skip in [1, 2): exact, odd having <= 53 bits.
    skip = math.ldexp(float(odd), e - k)
    if k == 0:
        return w.W_up, w.W_down, w.b_up, skip
    # 2^k goes half onto each side, or as near half as keeps every scaled
    # entry exact (one side may be near the subnormals or the overflow).
    up_lo, up_hi = _exact_shifts(w.W_up, w.b_up)
    down_lo, down_hi = _exact_shifts(w.W_down)
    lo, hi = max(up_lo, k - down_hi), min(up_hi, k - down_lo)
    if lo > hi:
        return None
    k_up = min(max(k - k // 2, lo), hi)
    k_down = k - k_up

    def scaled(a: FloatArray, by: int) -> FloatArray:
        out = np.ldexp(a, -by)
        assert np.array_equal(np.ldexp(out, by), a)  # _exact_shifts' promise
        return out

    bias = None if w.b_up is None else scaled(w.b_up, k_up)
    return scaled(w.W_up, k_up), scaled(w.W_down, k_down), bias, skip


def _exact_shifts(*arrays: Optional[FloatArray]) -> tuple[int, int]:
    """The range ``[lo, hi]`` of the shifts ``by`` for which ``a 2^-by`` is
    exact in float64 for every array given: no entry overflows or loses a
    bit below the subnormals (all-zero arrays allow any shift)."""
    lo, hi = -(10**6), 10**6
    for a in arrays:
        if a is None:
            continue
        x = np.abs(a[a != 0])
        if x.size == 0:
            continue
        mantissa, exponent = np.frexp(x)  # x = mantissa 2^exponent, mantissa in [0.5, 1)
        # The lowest set bit: the 53-bit integer mantissa's trailing zeros.
        bits = np.ldexp(mantissa, 53).astype(np.int64)
        trailing = np.log2((bits & -bits).astype(np.float64)).astype(np.int64)
        low = exponent - 53 + trailing  # x is an odd multiple of 2^low
        # Top: x < 2^exponent must stay below 2^1024; low: >= 2^-1074.
        lo = max(lo, int(exponent.max()) - 1024)
        hi = min(hi, int(low.min()) + 1074)
    return lo, hi


def _own_block(w: Weights, act: Activation) -> SkipFreeBlock:
    """The block ``f`` itself, as a skip-free block (the witness of a zero
    mixing, which the flip construction does not build for every class)."""
    return SkipFreeBlock(
        W_up=w.W_up.copy(),
        b_up=np.zeros(w.m) if w.b_up is None else w.b_up.copy(),
        W_down=w.W_down.copy(),
        b_down=np.zeros(w.d_out) if w.b_down is None else w.b_down.copy(),
        activation=act,
        W_gate=None if w.W_gate is None else w.W_gate.copy(),
    )


def _no_flip_set(
    act: Activation,
    w: Weights,
    q: FloatArray,
    p: FloatArray,
    bound: float,
    opts: SearchOptions,
    common: dict[str, Any],
) -> HyperConnectionResult:
    """The verdict when the mixing alone proves that no flip set exists."""
    angle = (
        f"every flip set leaves a relative residual of at least sin theta >= {bound:.6g} > tol, "
        "theta the angle between H_res^T and H_post H_pre^T, because the flip terms on the "
        f"stacked streams are all multiples of H_post H_pre^T (x) I_C ({_THEORY})"
    )
    if act.necessity != "genericity_checked":
        return HyperConnectionResult(
            verdict="undecided",
            reason=(
                f"Undecided: no flip set exists, since {angle}; but {act.name}'s necessity rests "
                f"on MK26's theorem for generic weights ({PAPER}), not proved for the structured "
                "weights of the streams."
            ),
            argument="none",
            **common,
        )
    raw = _core.genericity_checks(
        w.W_up, w.W_down, w.b_up, act.genericity, float(common["tolerance"]), opts.threads
    )
    dead = np.asarray(raw["dead"], dtype=np.int64)
    if not np.any(q) or not np.any(p):
        dead = np.arange(w.m, dtype=np.int64)
    checks = GenericityChecks(
        check=raw["check"],
        passed=len(dead) == 0 and int(raw["pair_count"]) == 0,
        dead_neurons=dead,
        offending_pairs=np.asarray(raw["pairs"], dtype=np.int64).reshape(-1, 2),
        offending_pair_count=int(raw["pair_count"]),
    )
    if not checks.passed:
        zero = "" if np.any(q) and np.any(p) else " (H_pre or H_post is zero, so every neuron is)"
        return HyperConnectionResult(
            verdict="undecided",
            reason=(
                f"Undecided: no flip set exists, since {angle}; but the kink argument needs every "
                f"neuron alive and no two proportional, and the checks found {checks.describe()}"
                f"{zero}."
            ),
            argument="none",
            genericity=checks,
            **common,
        )
    return HyperConnectionResult(
        verdict="not_absorbable",
        reason=(
            f"Not absorbable: no flip set exists, since {angle}; W_up's rows are alive and no two "
            "are proportional, so the kink argument (docs/theory.md section 3.2), which holds "
            "for any skip, makes the flip condition necessary."
        ),
        argument="mixing_angle",
        genericity=checks,
        **common,
    )
