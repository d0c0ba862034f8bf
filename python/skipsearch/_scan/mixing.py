"""The figures of a hyper-connection's mixing around each FFN, as the scan
reports them beside the verdicts.

DeepSeek-V4's mHC (transformers ``modeling_deepseek_v4.py`` at 01976081,
``DeepseekV4HyperConnection.forward`` and the decoder layer) computes, for
the ``n = hc_mult`` streams ``X`` of a token, ``x = RMSNorm(flatten X)``
(unweighted) and the logits ``fn x`` split as ``[pre | post | comb]`` (``n``,
``n`` and ``n x n``), then

- ``pre = sigmoid(scale[0] fn_pre x + base_pre) + hc_eps``,
- ``post = 2 sigmoid(scale[1] fn_post x + base_post)``,
- ``comb = softmax(scale[2] fn_comb x + base_comb, rows) + hc_eps``, then
  a column normalisation and ``hc_sinkhorn_iters - 1`` rounds of row and
  column normalisations (each sum ``+ hc_eps``),

and the FFN's output enters stream ``k`` as ``post_k F(sum_j pre_j X_j) +
sum_j comb[j, k] X_j``: in :func:`skipsearch.decide_hyper_connection`'s terms
``H_res = comb``, ``H_pre = pre`` and ``H_post = post``.

The *static point* sets the token-dependent part ``scale fn x`` to zero. The
figures, per layer, of the FFN site (``ffn_hc`` / ``hc_ffn_*``):

- ``hc_res_min_singular`` and ``hc_res_rank``: the smallest singular value
  and the numerical rank (numpy's ``matrix_rank``) of the static ``H_res``;
- ``hc_dynamic``: the largest logit the token-dependent part can add,
  ``max_i |scale_i| ||fn_i||_2 sqrt(n C)`` (the normalised input has norm
  below ``sqrt(n C)``); the static point is the block only when it is 0;
- ``hc_pre``, ``hc_post`` and ``hc_res``: the static ``H_pre``, ``H_post``
  and ``H_res``.

They describe the mixing: the token-dependent block is undecided whatever
they are (docs/theory.md section 4.6). Where ``hc_dynamic`` is exactly 0 the
layer's block is the static hyper-connection they give, and the scan decides
it (:func:`static_job_mixing`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from skipsearch._types import FloatArray

__all__ = ["MixingFigures", "ffn_mixing", "static_mixing"]


@dataclass(frozen=True)
class MixingFigures:
    """The figures of one layer's FFN-site mixing (see the module)."""

    streams: int
    res_min_singular: float
    res_rank: int
    dynamic: float
    pre: tuple[float, ...]
    post: tuple[float, ...]
    #: The static ``H_res`` itself, row by row (``res[j][k]``: stream ``j``
    #: in output stream ``k``).
    res: tuple[tuple[float, ...], ...] = ()


def static_mixing(
    base: FloatArray, n: int, eps: float, iters: int
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``(H_res, H_pre, H_post)`` at the static point, in float64, from the
    ``base`` of ``(2 + n) n`` logits, as DeepSeek-V4's forward computes them
    (the module's docstring)."""
    base = np.asarray(base, dtype=np.float64).reshape(-1)
    pre_b, post_b, comb_b = base[:n], base[n : 2 * n], base[2 * n :].reshape(n, n)
    pre = 1.0 / (1.0 + np.exp(-pre_b)) + eps
    post = 2.0 / (1.0 + np.exp(-post_b))
    shifted = np.exp(comb_b - comb_b.max(axis=1, keepdims=True))
    comb = shifted / shifted.sum(axis=1, keepdims=True) + eps
    comb = comb / (comb.sum(axis=0, keepdims=True) + eps)
    for _ in range(iters - 1):
        comb = comb / (comb.sum(axis=1, keepdims=True) + eps)
        comb = comb / (comb.sum(axis=0, keepdims=True) + eps)
    return comb, pre, post


#: The FFN site's tensors, by naming: (fn, base, scale) with ``{i}`` the layer.
_SITES = (
    ("model.layers.{i}.ffn_hc.fn", "model.layers.{i}.ffn_hc.base", "model.layers.{i}.ffn_hc.scale"),
    ("layers.{i}.hc_ffn_fn", "layers.{i}.hc_ffn_base", "layers.{i}.hc_ffn_scale"),
    ("blk.{i}.hc_ffn_fn.weight", "blk.{i}.hc_ffn_base.weight", "blk.{i}.hc_ffn_scale.weight"),
)


def _settings(config: dict[str, Any]) -> tuple[Optional[int], float, int]:
    """``(n, hc_eps, hc_sinkhorn_iters)`` from a config (``DeepseekV4Config``'s
    keys, defaults 4, 1e-6 and 20) or a GGUF file's metadata
    (``deepseek4.hyper_connection.count`` / ``.epsilon`` /
    ``.sinkhorn_iterations``)."""
    text = config.get("text_config")
    sub: dict[str, Any] = text if isinstance(text, dict) else config
    gguf = {k.split(".", 1)[1]: v for k, v in config.items() if ".hyper_connection." in k}
    n = sub.get("hc_mult", gguf.get("hyper_connection.count"))
    eps = sub.get("hc_eps", gguf.get("hyper_connection.epsilon", 1e-6))
    iters = sub.get("hc_sinkhorn_iters", gguf.get("hyper_connection.sinkhorn_iterations", 20))
    if n is None and config.get("model_type") in ("deepseek_v4", "gguf-deepseek4"):
        n = 4

    def integer(v: Any, top: int) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= top

    # Settings the forward could not run with give no figures (they carry no
    # verdict; the blocks are undecided all the same).
    real = isinstance(eps, (int, float)) and not isinstance(eps, bool)
    if not (integer(n, 1024) and integer(iters, 10_000) and real and 0 <= eps < 1):
        return None, 0.0, 0
    return n, float(eps), iters


def ffn_mixing(ckpt: Any, config: dict[str, Any], layers: set[int]) -> dict[int, MixingFigures]:
    """The figures of each layer in ``layers`` whose FFN-site mixing the
    checkpoint holds, read from ``ckpt`` (a :class:`~skipsearch.io.checkpoints.Checkpoint`
    or GGUF reader: ``in``, ``shape``, ``get``); layers without it, or with
    tensors of other shapes than ``fn [(2 + n) n, n C]``, ``base [(2 + n) n]``
    and ``scale [3]``, are left out."""
    n, eps, iters = _settings(config)
    if n is None:
        return {}
    mix = (2 + n) * n
    out: dict[int, MixingFigures] = {}
    for i in sorted(layers):
        for names in _SITES:
            fn_key, base_key, scale_key = (name.format(i=i) for name in names)
            if not all(k in ckpt for k in (fn_key, base_key, scale_key)):
                continue
            fn_shape = tuple(ckpt.shape(fn_key))
            if len(fn_shape) != 2 or fn_shape[0] != mix or fn_shape[1] % n:
                continue
            base = np.asarray(ckpt.get(base_key), dtype=np.float64).reshape(-1)
            scale = np.asarray(ckpt.get(scale_key), dtype=np.float64).reshape(-1)
            if base.size != mix or scale.size != 3:
                continue
            fn = np.asarray(ckpt.get(fn_key), dtype=np.float64)
            if not (np.all(np.isfinite(base)) and np.all(np.isfinite(scale))):
                break  # a forward that gives NaN: no figures for this layer
            res, pre, post = static_mixing(base, n, eps, iters)
            if not np.all(np.isfinite(res)):
                break
            singular = np.linalg.svd(res, compute_uv=False)
            rows = (slice(0, n), slice(n, 2 * n), slice(2 * n, mix))
            dynamic = (
                max(abs(scale[k]) * float(np.linalg.norm(fn[rows[k]], 2)) for k in range(3))
                * math.sqrt(fn_shape[1])
                if np.all(np.isfinite(fn))
                else math.inf
            )
            out[i] = MixingFigures(
                streams=n,
                res_min_singular=float(singular.min()),
                res_rank=int(np.linalg.matrix_rank(res)),
                dynamic=float(dynamic),
                pre=tuple(float(v) for v in pre),
                post=tuple(float(v) for v in post),
                res=tuple(tuple(float(v) for v in row) for row in res),
            )
            break
    return out
