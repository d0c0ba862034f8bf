"""Turn the tensors of PyTorch layers into numpy arrays, never sharing memory.

:func:`to_numpy` copies a torch tensor (any device; bfloat16 and float8
widened to float32 exactly) or an array-like. :func:`read_linear` reads the
weight and bias of a Linear-like layer: a transformers ``Conv1D`` is
transposed, an FP8 weight with its ``weight_scale_inv`` or ``weight_scale``
is dequantized (:func:`skipsearch.io.quantization.dequantize`), and every other
quantized layer is refused with its format named (:func:`refuse_quantized`).
:class:`Widened` records what was widened or dequantized, for the warning
about the default tolerance.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Optional, cast

import numpy as np

from skipsearch._validation import reject_masked
from skipsearch.io.checkpoints import NARROW_TOL, stored_tolerance
from skipsearch.io.quantization import SCALE_NAMES, dequantize

__all__ = [
    "BF16_TOL",
    "Widened",
    "get_attribute",
    "is_linear",
    "read_linear",
    "refuse_quantized",
    "stored_tol",
    "to_numpy",
]

#: Square root of the bfloat16 machine epsilon: the tolerance that
#: ``find_absorbing_subset`` would pick for weights stored in bfloat16.
BF16_TOL = NARROW_TOL["BF16"]


class Widened:
    """Records which W_up/W_down dtypes were widened from bfloat16/float8
    (``dtypes``) or dequantized with their scales (``dequantized``): the
    default tolerance then no longer follows the stored precision."""

    def __init__(self) -> None:
        self.dtypes: set[str] = set()
        self.dequantized: set[str] = set()


def _stored_name(dtype: str) -> str:
    """The safetensors name of a widened torch dtype: the float8 formats,
    else bfloat16 (or a dtype numpy lacks, counted as bfloat16)."""
    if dtype.startswith("float8_e5m2"):
        return "F8_E5M2"
    return "F8_E4M3" if dtype.startswith("float8") else "BF16"


def stored_tol(dtypes: Iterable[str]) -> float:
    """sqrt(eps) of the coarsest of the stored dtypes (torch names)."""
    return stored_tolerance({_stored_name(d) for d in dtypes}) or BF16_TOL


def _dtype_name(t: Any) -> str:
    """The dtype of a tensor without the ``torch.`` prefix (``"bfloat16"``)."""
    return str(getattr(t, "dtype", "")).replace("torch.", "")


def get_attribute(mod: Any, path: str) -> Any:
    """The attribute at dotted ``path`` of ``mod``, or None."""
    for part in path.split("."):
        mod = getattr(mod, part, None)
        if mod is None:
            return None
    return mod


#: bitsandbytes module and parameter classes.
_BNB_CLASSES = ("Linear4bit", "LinearNF4", "LinearFP4", "Linear8bitLt", "Params4bit", "Int8Params")


def refuse_quantized(mod: Any, where: str) -> None:
    """Raise ``ValueError`` naming the format for a quantized layer that
    skipsearch does not dequantize (everything but FP8 with its scales)."""
    cls = type(mod).__name__
    weight = getattr(mod, "weight", None)
    wcls = type(weight).__name__
    hint = "skipsearch decides only real weights: dequantize the layer first (or use the unquantized model)"
    if hasattr(mod, "qweight"):
        name = (
            "AWQ"
            if ("WQLinear" in cls or "AWQ" in cls.upper())
            else "GPTQ"
            if (
                "GPTQ" in cls.upper() or "QuantLinear" in cls or "Marlin" in cls or "Exllama" in cls
            )
            else "GPTQ or AWQ"
        )
        raise ValueError(
            f"{where}: {cls} is a {name}-quantized layer (packed qweight, qzeros, scales), which "
            f"skipsearch cannot dequantize; {hint}"
        )
    if (
        cls in _BNB_CLASSES
        or wcls in _BNB_CLASSES
        or any(hasattr(x, a) for x in (mod, weight) for a in ("quant_state", "SCB"))
    ):
        raise ValueError(
            f"{where}: {cls} holds a bitsandbytes-quantized weight ({wcls}), which skipsearch "
            f"cannot dequantize; {hint}"
        )
    if hasattr(mod, "weight_packed"):
        raise ValueError(
            f"{where}: {cls} holds a compressed-tensors packed integer weight (weight_packed), "
            f"which skipsearch cannot dequantize; {hint}"
        )
    if "Quantized" in wcls or wcls in (
        "QBytesTensor",
        "WeightQBytesTensor",
        "QTensor",
        "Float8Tensor",
    ):
        raise ValueError(
            f"{where}: the weight is a quantized tensor ({wcls}, e.g. torchao or Quanto), which "
            f"skipsearch cannot dequantize; {hint}"
        )
    if _dtype_name(weight).startswith(("qint", "quint")):
        raise ValueError(
            f"{where}: the weight is a torch quantized tensor ({_dtype_name(weight)}), which "
            f"skipsearch cannot dequantize; {hint}"
        )
    zero_point = getattr(mod, "weight_zero_point", None)
    if zero_point is not None and np.any(to_numpy(zero_point, f"{where}.weight_zero_point") != 0):
        raise ValueError(
            f"{where}: {cls} has a nonzero weight_zero_point (asymmetric quantization), which "
            f"skipsearch does not dequantize; {hint}"
        )


def _block_size(mod: Any) -> Optional[tuple[int, ...]]:
    """The block size of block-wise scales, when the layer states it
    (Hugging Face FP8Linear ``block_size``, compressed-tensors
    ``quantization_scheme.weights.block_structure``)."""
    for path in ("block_size", "weight_block_size", "quantization_scheme.weights.block_structure"):
        value = get_attribute(mod, path)
        if value is not None:
            try:
                return tuple(int(v) for v in value)
            except (TypeError, ValueError):
                return None
    return None


def _dequantized(mod: Any, W: np.ndarray, dtype: str, where: str) -> Optional[np.ndarray]:
    """The layer's weight dequantized with its ``weight_scale_inv`` or
    ``weight_scale``, or None when it has no scale."""
    name = next((a for a in SCALE_NAMES if getattr(mod, a, None) is not None), None)
    if name is None:
        return None
    if not dtype.startswith("float8"):
        raise ValueError(
            f"{where}: {type(mod).__name__} has a {name} beside a {dtype or W.dtype} weight; "
            "skipsearch dequantizes only float8 weights with their scales (an integer weight is "
            "a quantized format it does not read, and a float weight may already be "
            "dequantized): dequantize the layer first"
        )
    # Not None: the layer has the attribute, as found above.
    scale = cast(np.ndarray, to_numpy(getattr(mod, name), f"{where}.{name}"))
    return dequantize(W, scale, _block_size(mod), f"{where}.{name}")


def to_numpy(
    t: Any, where: str, widened: Optional[Widened] = None, numeric: bool = True
) -> Optional[np.ndarray]:
    """A fresh numpy copy of a torch tensor, numpy array or array-like.

    bfloat16 and float8 tensors, which numpy cannot hold, are widened with
    ``.float()`` (float32, exactly); other dtypes are kept. With ``numeric``
    anything but a real integer or float array is a ``TypeError``.
    """
    if t is None:
        return None
    if not isinstance(t, np.ndarray) and (hasattr(t, "numpy") or hasattr(t, "detach")):
        try:
            if hasattr(t, "detach"):
                t = t.detach()
            if hasattr(t, "cpu"):
                t = t.cpu()
            dtype = _dtype_name(t)
            if dtype.startswith(("bfloat16", "float8")):
                t = t.float()
                if widened is not None:
                    widened.dtypes.add(dtype)
            try:
                t = t.numpy()
            except TypeError:  # a dtype numpy lacks, not caught above
                if not hasattr(t, "float"):
                    raise
                t = t.float().numpy()
                if widened is not None:
                    widened.dtypes.add(dtype or "unknown")
        except (RuntimeError, TypeError, NotImplementedError, AttributeError) as e:
            raise TypeError(
                f"{where}: cannot convert {type(t).__name__} to a numpy array ({e}); "
                "expected a torch tensor or a numpy array"
            ) from None
    reject_masked(where, t)  # np.array would drop the mask
    try:
        arr = np.array(t, copy=True)  # never share memory with the caller's module
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"{where}: cannot convert {type(t).__name__} to a numpy array ({e})"
        ) from None
    if numeric and arr.dtype.kind not in "iuf":
        raise TypeError(f"{where}: expected a real numeric tensor, got dtype {arr.dtype}")
    return arr


def read_linear(
    mod: Any, where: str, widened: Widened, flip: bool = True
) -> tuple[np.ndarray, Optional[np.ndarray]]:
    """Weight ``(out, in)`` and bias ``(out,)`` (or None) of a Linear-like module.

    A transformers ``Conv1D`` (GPT-2) stores its weight as ``(in, out)``; it
    is transposed. An FP8 weight with a ``weight_scale_inv`` or
    ``weight_scale`` is dequantized (float64); other quantized layers are
    refused. ``flip``: the weight is in the flip condition (W_up, W_down),
    so its widening matters to the default tolerance.
    """
    if mod is not None:
        refuse_quantized(mod, where)
    if mod is None or not hasattr(mod, "weight"):
        raise TypeError(
            f"{where}: expected a Linear-like module with a .weight, got {type(mod).__name__}"
        )
    dtype = _dtype_name(mod.weight)
    this = Widened()
    W = to_numpy(mod.weight, f"{where}.weight", this)
    if W is None or W.ndim != 2:
        shape = None if W is None else W.shape
        raise ValueError(
            f"{where}: expected a 2-D weight (Linear: (out_features, in_features)), got "
            f"{type(mod).__name__} with weight shape {shape}"
        )
    scaled = _dequantized(mod, W, dtype or str(W.dtype), where)
    if scaled is not None:
        W, this.dequantized, this.dtypes = scaled, {dtype}, set()
    if flip:
        widened.dtypes |= this.dtypes
        widened.dequantized |= this.dequantized
    if type(mod).__name__ == "Conv1D":
        W = np.ascontiguousarray(W.T)
    b = to_numpy(getattr(mod, "bias", None), f"{where}.bias")
    if b is not None and b.shape != (W.shape[0],):
        raise ValueError(
            f"{where}: bias has shape {b.shape}, expected ({W.shape[0]},) for a weight of "
            f"(out, in) shape {W.shape}"
        )
    return W, b


def is_linear(mod: Any) -> bool:
    """Whether ``mod`` is a Linear-like layer (by class or attributes)."""
    name = type(mod).__name__
    if name in ("Linear", "Conv1D", "NonDynamicallyQuantizableLinear"):
        return True
    return all(hasattr(mod, a) for a in ("weight", "in_features", "out_features"))
