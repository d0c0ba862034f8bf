"""Quantized weights: FP8 with its scales is dequantized, anything else refused.

A quantized checkpoint stores codes, not weights: deciding absorption on the
codes with the scales ignored answers a question about another block. So the
scan (:func:`skipsearch.scan`) and :func:`skipsearch.from_torch` apply the
scales where the format defines them exactly, and refuse the rest with an
error naming the format.

Dequantized, as each format defines it (``q`` the FP8 value, decoded
exactly, ``s`` the scale tensor stored beside it):

* **per tensor**, ``weight_scale`` of shape ``()`` or ``(1,)``
  (compressed-tensors / llm-compressor FP8): ``W = q * s``;
* **per output channel**, ``weight_scale`` of shape ``(out, 1)`` or
  ``(out,)`` (compressed-tensors channel strategy, FBGEMM FP8):
  ``W[i, :] = q[i, :] * s[i]``;
* **block-wise**, ``weight_scale_inv`` (DeepSeek-V3, Hugging Face
  ``quant_method="fp8"``) or ``weight_scale`` (compressed-tensors block
  strategy) of shape ``(ceil(out / bo), ceil(in / bi))``, blocks of
  ``bo x bi = 128 x 128`` unless the config says otherwise
  (``weight_block_size``, ``block_structure``): ``W[i, j] = q[i, j] *
  s[i // bo, j // bi]``. Despite its name, ``weight_scale_inv`` multiplies.

The product of a float8 value (4 significant bits) and a float32 scale is
exact in float64, which is what is returned; the precision of the weights is
still that of float8, and the scan's default tolerance follows it.

Refused, with the format named: GPTQ and AWQ (``qweight``, ``qzeros``,
``scales``), bitsandbytes (``weight.absmax``, ``weight.quant_state.*``,
``SCB``), compressed-tensors packed integer formats (``weight_packed``),
integer weights with scales, nonzero zero points, a scale beside a weight
that is not float8, and every ``quantization_config.quant_method`` other
than ``fp8``, ``fbgemm_fp8`` and FP8 ``compressed-tensors``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Callable, Literal, Optional

import numpy as np
import numpy.typing as npt

from skipsearch._types import FloatArray

__all__ = ["DEFAULT_BLOCK", "Quantization", "config_quantization", "dequantize", "scale_layout"]

#: Block size of block-wise FP8 scales when the config does not give one
#: (DeepSeek-V3's ``weight_block_size``).
DEFAULT_BLOCK = (128, 128)

#: Names of the scale tensor stored beside ``<module>.weight``.
SCALE_NAMES = ("weight_scale_inv", "weight_scale")

#: ``quant_method`` values whose FP8 weights skipsearch dequantizes.
_FP8_METHODS = ("fp8", "fbgemm_fp8", "compressed-tensors")

#: Readable names of the methods that are refused.
_FORMAT_NAMES = {
    "gptq": "GPTQ",
    "awq": "AWQ",
    "bitsandbytes": "bitsandbytes",
    "aqlm": "AQLM",
    "hqq": "HQQ",
    "eetq": "EETQ",
    "quanto": "Quanto",
    "torchao": "torchao",
    "exl2": "ExLlamaV2",
    "vptq": "VPTQ",
    "higgs": "HIGGS",
    "bitnet": "BitNet",
    "spqr": "SpQR",
    "mxfp4": "MXFP4",
    "gguf": "GGUF",
    "fp_quant": "FP-Quant",
}

#: The exception class to raise (``ValueError``, or the scan's ``CheckpointError``).
ErrorType = Callable[[str], Exception]

_HINT = (
    "skipsearch decides only real weights: dequantize the checkpoint first (or use the "
    "unquantized original)"
)


@dataclass(frozen=True)
class Quantization:
    """What a checkpoint's ``quantization_config`` says about its weights.

    Attributes
    ----------
    method : str
        ``quant_method``: ``"fp8"``, ``"fbgemm_fp8"`` or ``"compressed-tensors"``.
    block : tuple of int or None
        Block size of block-wise scales, when the config gives one.
    """

    method: str
    block: Optional[tuple[int, ...]] = None


def _refuse(what: str, where: str, error: ErrorType) -> Exception:
    return error(f"{where}: {what}; {_HINT}")


def _block(value: Any, where: str, error: ErrorType) -> Optional[tuple[int, ...]]:
    if value is None:
        return None
    try:
        block = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        block = ()
    if len(block) != 2 or min(block) < 1 or list(block) != list(value):
        raise error(f"{where}: the block size {value!r} must be two positive integers")
    return block


def config_quantization(
    config: dict[str, Any], where: str, error: ErrorType = ValueError
) -> Optional[Quantization]:
    """Read ``quantization_config`` (or ``compression_config``) from a
    ``config.json``; None when the checkpoint is not quantized.

    Raises ``error`` naming the format for every method but FP8 (``fp8``,
    ``fbgemm_fp8``, and ``compressed-tensors`` with 8-bit float weights).
    """
    q = config.get("quantization_config", config.get("compression_config"))
    if q is None:
        return None
    if not isinstance(q, dict):
        raise error(f"{where}: quantization_config must be an object, got {type(q).__name__}")
    method = q.get("quant_method")
    if not isinstance(method, str):
        raise _refuse(
            "quantization_config has no quant_method, so the format of the quantized weights "
            "is unknown",
            where,
            error,
        )
    key = method.lower()
    if key not in _FP8_METHODS:
        name = _FORMAT_NAMES.get(key, repr(method))
        detail = ""
        if key == "bitsandbytes":
            bits = "4-bit" if q.get("load_in_4bit") else "8-bit" if q.get("load_in_8bit") else ""
            detail = f" {bits}" if bits else ""
        elif "bits" in q:
            detail = f" {q['bits']}-bit"
        raise _refuse(
            f"the checkpoint is quantized with {name}{detail} (quantization_config.quant_method = "
            f"{method!r}), which skipsearch cannot dequantize; it dequantizes FP8 only "
            "(quant_method 'fp8', 'fbgemm_fp8', or 'compressed-tensors' with float8 weights)",
            where,
            error,
        )
    if key == "fp8":
        return Quantization(key, _block(q.get("weight_block_size"), where, error))
    if key == "fbgemm_fp8":
        return Quantization(key)
    # compressed-tensors: every config group must quantize weights to 8-bit floats.
    groups = q.get("config_groups") or {}
    if not isinstance(groups, dict):
        raise error(f"{where}: quantization_config.config_groups must be an object")
    fmt = q.get("format")
    blocks: set[Optional[tuple[int, ...]]] = set()
    for name, group in groups.items():
        weights = (group or {}).get("weights") if isinstance(group, dict) else None
        if not weights:
            continue
        kind, bits = weights.get("type"), weights.get("num_bits")
        group_fmt = group.get("format", fmt)
        if kind != "float" or bits != 8:
            raise _refuse(
                f"the checkpoint is quantized with compressed-tensors, config group {name!r}: "
                f"{bits}-bit {kind} weights (format {group_fmt!r}), which skipsearch cannot "
                "dequantize; it dequantizes 8-bit float (FP8) weights only",
                where,
                error,
            )
        if weights.get("symmetric") is False:
            raise _refuse(
                f"the checkpoint is quantized with compressed-tensors, config group {name!r}: "
                "asymmetric FP8 weights (with zero points), which skipsearch does not dequantize",
                where,
                error,
            )
        if weights.get("strategy") == "block":
            blocks.add(_block(weights.get("block_structure"), where, error))
    if fmt not in (None, "float-quantized", "naive-quantized", "dense"):
        raise _refuse(
            f"the checkpoint is stored in the compressed-tensors format {fmt!r}, which skipsearch "
            "cannot read; it reads 'float-quantized' FP8 weights",
            where,
            error,
        )
    sized = {b for b in blocks if b is not None}
    if len(sized) > 1:
        raise error(f"{where}: config groups use different block sizes {sorted(sized)}")
    block = next(iter(sized), None)
    return Quantization(key, block)


def refuse_other_formats(keys: Iterable[str], where: str, error: ErrorType = ValueError) -> None:
    """Raise ``error`` naming the format when tensor names show GPTQ/AWQ,
    bitsandbytes or packed compressed-tensors weights (with or without a
    ``quantization_config``)."""
    keys = set(keys)
    for key in sorted(keys):
        leaf = key.rsplit(".", 1)[-1]
        if leaf in ("qweight", "qzeros", "g_idx") or (
            leaf == "scales" and _has(keys, key, "qweight")
        ):
            raise _refuse(
                f"{key} is a GPTQ/AWQ packed integer tensor (qweight, qzeros, scales), which "
                "skipsearch cannot dequantize",
                where,
                error,
            )
        if (
            ".quant_state." in key
            or leaf in ("absmax", "quant_map", "nested_absmax", "SCB")
            or (leaf == "weight_format")
        ):
            raise _refuse(
                f"{key} belongs to a bitsandbytes-quantized weight (absmax, quant_map, "
                "quant_state, SCB), which skipsearch cannot dequantize",
                where,
                error,
            )
        if leaf in ("weight_packed", "weight_shape"):
            raise _refuse(
                f"{key} is a compressed-tensors packed integer weight (pack-quantized), which "
                "skipsearch cannot dequantize",
                where,
                error,
            )


def _has(keys: Iterable[str], key: str, leaf: str) -> bool:
    base = key.rsplit(".", 1)[0]
    return f"{base}.{leaf}" in keys


def scale_layout(
    weight_shape: tuple[int, ...],
    scale_shape: tuple[int, ...],
    block: Optional[tuple[int, ...]],
    where: str,
    error: ErrorType = ValueError,
) -> tuple[Literal["tensor", "channel", "block"], Optional[tuple[int, int]]]:
    """How a scale of ``scale_shape`` covers a weight of ``weight_shape``
    ``(out, in)``: ``("tensor", None)``, ``("channel", None)`` or
    ``("block", (bo, bi))``. ``block`` is the configured block size (default
    128 x 128). Raises ``error`` when the shapes do not fit."""
    weight_shape, scale_shape = tuple(weight_shape), tuple(scale_shape)
    if len(weight_shape) != 2:
        raise error(f"{where}: a quantized weight must be a matrix, got shape {weight_shape}")
    out, inp = weight_shape
    size = math.prod(scale_shape)
    if size == 1 and len(scale_shape) <= 2:
        return "tensor", None
    if scale_shape in ((out, 1), (out,)):
        return "channel", None
    bo, bi = block or DEFAULT_BLOCK
    if scale_shape == (-(-out // bo), -(-inp // bi)):
        return "block", (bo, bi)
    raise error(
        f"{where}: scale of shape {scale_shape} does not fit the weight of shape {weight_shape}: "
        f"expected () or (1,) (per tensor), ({out}, 1) (per output channel), or "
        f"({-(-out // bo)}, {-(-inp // bi)}) (blocks of {bo} x {bi})"
    )


def dequantize(
    values: npt.ArrayLike,
    scale: npt.ArrayLike,
    block: Optional[tuple[int, ...]],
    where: str,
    error: ErrorType = ValueError,
) -> FloatArray:
    """``values * scale`` as a new float64 array, the scale broadcast per
    tensor, per output channel or per block (see :func:`scale_layout`).

    The product is formed in place, a block row at a time, so no full-size
    copy of the scale is made: peak memory is the float64 result beside
    ``values``."""
    values = np.asarray(values)
    scale = np.asarray(scale, dtype=np.float64)
    kind, size = scale_layout(values.shape, scale.shape, block, where, error)
    if not np.isfinite(scale).all():
        raise error(f"{where}: the scale holds NaN or Inf")
    out = np.array(values, dtype=np.float64, copy=True)
    if kind == "tensor":
        out *= scale.reshape(())
    elif kind == "channel":
        out *= scale.reshape(-1, 1)
    else:
        assert size is not None  # block-wise scales have a block size
        bo, bi = size
        for i, row in enumerate(scale):
            out[i * bo : (i + 1) * bo] *= np.repeat(row, bi)[: out.shape[1]]
    return out
