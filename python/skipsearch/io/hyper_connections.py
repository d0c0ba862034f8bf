"""Residuals that are hyper-connections: several streams mixed around each
sub-layer by token-dependent maps.

A hyper-connection (Zhu et al. 2024, arXiv:2409.19606; the manifold-
constrained form of Xie et al. 2025, arXiv:2512.24880, eqs. 7-9, which
DeepSeek-V4 uses) keeps ``n = hc_mult`` residual streams ``X_j`` and
computes, around an FFN ``F``,

``X'_k = post_k(X) F(RMSNorm(sum_j pre_j(X) X_j)) + sum_j H_res(X)[j, k] X_j``

where ``pre``, ``post`` and the Sinkhorn-normalised ``H_res`` are functions
of the token (DeepSeek-V4: ``DeepseekV4HyperConnection`` in
transformers' ``modeling_deepseek_v4.py``). ``F``'s skip is then no fixed
linear map of its own input. Every theorem skipsearch applies assumes one
(Mijoski & Karbevski 2026, arXiv:2604.23705, reduce a fixed invertible skip
to the identity, and say nothing of token-dependent mixing), so a block of
such a model is undecided, with this module's reason, whatever layout
located it: a registry family, the automatic layout or the user's own.

The markers are the hyper-connection parameters' names as the public
sources write them:

- transformers: ``model.layers.{i}.attn_hc.fn`` / ``.base`` / ``.scale``,
  ``ffn_hc.*``, and ``model.hc_head.hc_fn`` / ``hc_base`` / ``hc_scale``;
- DeepSeek's release: ``layers.{i}.hc_attn_fn`` / ``hc_attn_base`` /
  ``hc_attn_scale``, ``hc_ffn_*``, and ``hc_head_fn`` / ``_base`` /
  ``_scale``;
- llama.cpp's GGUF (``deepseek4``): ``blk.{i}.hc_attn_fn``, ``hc_ffn_*``
  and ``output_hc_*``;

- lucidrains' ``hyper-connections`` package (``HyperConnections`` and
  its manifold-constrained ``mHC``): ``static_alpha``, ``static_beta``,
  ``dynamic_alpha_fn``, ``dynamic_beta_fn``, ``dynamic_alpha_scale``,
  ``dynamic_beta_scale`` and ``h_post_scale``;

and a config's ``hc_mult`` (``DeepseekV4Config``) or
``num_residual_streams`` (lucidrains' constructor) other than 1, at any
depth (``text_config``, ``language_config``, ``thinker_config.text_config``
...), or a GGUF file's ``<arch>.hyper_connection.count``. A
``model_type`` of ``deepseek_v4`` (or the GGUF architecture ``deepseek4``)
marks it too, whatever the config spells out: ``DeepseekV4Config``
defaults ``hc_mult`` to 4, and even one stream keeps its token-dependent
read-in and write-out gates.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Optional

__all__ = ["hyper_connection_reason"]

_MARKER = re.compile(
    r"(?:^|\.)(?:"
    r"(?:attn_hc|ffn_hc)\.(?:fn|base|scale)"
    r"|hc_head\.hc_(?:fn|base|scale)"
    r"|(?:hc_attn|hc_ffn|hc_head|output_hc)_(?:fn|base|scale)"
    r"|static_alpha|static_beta|dynamic_(?:alpha|beta)_(?:fn|scale)|h_post_scale"
    r")(?:\.weight)?$"
)

#: Config keys that count residual streams, at any depth of the config.
_STREAM_KEYS = ("hc_mult", "num_residual_streams")

#: Model types whose residual is a hyper-connection by definition (the
#: config class's default ``hc_mult`` is 4), and their GGUF architectures.
_HC_MODEL_TYPES = ("deepseek_v4", "gguf-deepseek4")


def _nested(config: Any, depth: int = 0) -> list[tuple[str, dict[str, Any]]]:
    """Every dict of a config with the dotted path to it: the config itself
    (path ``""``), its ``text_config``, ``language_config``,
    ``thinker_config.text_config`` and so on, to a depth of 6."""
    if not isinstance(config, dict) or depth > 6:
        return []
    found = [("", config)]
    for key, value in config.items():
        for path, sub in _nested(value, depth + 1):
            found.append((f"{key}.{path}" if path else str(key), sub))
    return found


def _streams(config: dict[str, Any]) -> Optional[str]:
    """How the config gives several residual streams: ``hc_mult`` or
    ``num_residual_streams`` of the config or any sub-config, a GGUF file's
    ``<arch>.hyper_connection.count``, or a model type that is a
    hyper-connection model by definition, as ``"hc_mult = 4"``; None when
    absent, null or 1. A value that is no integer (``4.0``, ``"4"``) counts
    too: the config says streams, and an undecided block is the safe
    reading."""
    found: list[tuple[str, Any]] = []
    for path, where in _nested(config):
        prefix = f"{path}." if path else ""
        found += [(prefix + k, where.get(k)) for k in _STREAM_KEYS if k in where]
        found += [
            (prefix + k, v) for k, v in where.items() if str(k).endswith(".hyper_connection.count")
        ]
    for key, value in found:
        if value is None or (not isinstance(value, bool) and value == 1):
            continue
        shown = value if isinstance(value, int) and not isinstance(value, bool) else repr(value)
        return f"{key} = {shown}"
    for path, where in _nested(config):
        kind = where.get("model_type")
        if kind in _HC_MODEL_TYPES:
            at = f"{path}.model_type" if path else "model_type"
            return f"{at} = {kind!r}, whose hyper-connection is token-dependent at any hc_mult"
    return None


def hyper_connection_reason(config: dict[str, Any], keys: Iterable[str]) -> Optional[str]:
    """Why no block of this checkpoint can be decided, when its residual is a
    hyper-connection; None otherwise.

    Parameters
    ----------
    config : dict
        The checkpoint's ``config.json`` (empty when it has none).
    keys : iterable of str
        Its tensor names.

    Returns
    -------
    str or None
        The reason, naming what marked the hyper-connection: a config's
        ``hc_mult`` other than 1, or a tensor such as ``...ffn_hc.fn``.
    """
    streams = _streams(config)
    marker = next((k for k in keys if _MARKER.search(k)), None)
    if marker is None and streams is None:
        return None
    what = []
    if streams is not None:
        what.append(f"{streams} residual streams")
    if marker is not None:
        what.append(f"hyper-connection tensors such as {marker!r}")
    return (
        f"the residual is a hyper-connection ({' and '.join(what)}): the streams are mixed "
        "around the FFN (X'_k = post_k(X) F(x) + sum_j H_res(X)[j, k] X_j, x from sum_j "
        "pre_j(X) X_j) by maps that may depend on the token, and the scan reads no fixed mixing "
        "for them, so the FFN's skip is no known fixed linear map of its input, which every "
        "theorem skipsearch applies assumes (docs/theory.md section 4.6; a fixed mixing is "
        "decided by skipsearch.decide_hyper_connection)"
    )
