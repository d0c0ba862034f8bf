"""Read an MLP block out of a PyTorch module, without importing torch.

:func:`from_torch` turns an ``nn.Sequential(Linear, activation, Linear)`` or
the MLP of a Hugging Face model into an :class:`~skipsearch.MLPBlock` whose
fields are the arguments of :func:`~skipsearch.find_absorbing_subset`.
:func:`load_state_dict` reads a checkpoint file into numpy arrays without
unpickling arbitrary objects.

Everything here is duck-typed: modules are recognised by their class names
and attribute names, tensors by their ``detach``/``cpu``/``float``/``numpy``
methods. torch is imported only by :func:`load_state_dict`, and only for
``.bin``/``.pt``/``.pth`` files; ``transformers`` is never imported.
"""

from __future__ import annotations

import os
import pickle
import warnings
from typing import Any, Optional, Union

import numpy as np

from skipsearch._validation import reject_masked
from skipsearch.absorption import MLPBlock
from skipsearch.checkpoints import NARROW_TOL
from skipsearch.quantization import SCALE_NAMES, dequantize
from skipsearch.activations import Activation, get_activation

__all__ = ["BF16_TOL", "from_torch", "load_state_dict"]

PAPER = "Mijoski & Karbevski 2026, arXiv:2604.23705"

#: Square root of the bfloat16 machine epsilon: the tolerance that
#: ``find_absorbing_subset`` would pick for weights stored in bfloat16.
BF16_TOL = NARROW_TOL["BF16"]

# --------------------------------------------------------------------------
# Activations
# --------------------------------------------------------------------------

#: Activation module classes without parameters that matter, by class name
#: (torch.nn and transformers.activations), and the registry name each maps to.
#: "identity" is not a registry name: it is only valid as a gate ("bilinear").
_PLAIN_ACTIVATIONS = {
    "ReLU": "relu",
    "SiLU": "silu",
    "SiLUActivation": "silu",
    "Tanh": "tanh",
    "Sigmoid": "sigmoid",
    "Hardswish": "hardswish",
    "Mish": "mish",
    "MishActivation": "mish",
    "ReLU6": "relu6",
    "GELUActivation": "gelu",
    "NewGELUActivation": "gelu_tanh",
    "GELUTanh": "gelu_tanh",
    "PytorchGELUTanh": "gelu_tanh",
    "FastGELUActivation": "gelu_tanh",
    "AccurateGELUActivation": "gelu_tanh",
    "BloomGelu": "gelu_tanh",
    "QuickGELUActivation": "quick_gelu",
    "ReLUSquaredActivation": "relu2",
    "Identity": "identity",
    "LinearActivation": "identity",
}

#: Gate activation -> gated registry entry. The registry's "geglu" gate is the
#: exact GELU; a tanh-approximated GELU gate maps to it too, since the verdict
#: (the linearization argument) only uses gate(0) = 0 and differentiability at
#: 0, which both gates share.
_GATED = {
    "silu": "swiglu",
    "gelu": "geglu",
    "gelu_tanh": "geglu",
    "relu": "reglu",
    "sigmoid": "glu",
    "identity": "bilinear",
}

_SUPPORTED_ACTIVATIONS = (
    "ReLU, GELU(approximate='none' or 'tanh'), SiLU, LeakyReLU(negative_slope), "
    "PReLU(num_parameters=1), Tanh, Sigmoid, ELU(alpha=1), Softplus(beta=1), Hardswish, Mish, "
    "ReLU6, Hardtanh(min_val=-1, max_val=1), and from transformers GELUActivation, "
    "NewGELUActivation, GELUTanh, PytorchGELUTanh, FastGELUActivation, AccurateGELUActivation, "
    "BloomGelu, QuickGELUActivation, SiLUActivation, MishActivation, ReLUSquaredActivation"
)
_SUPPORTED_GATES = (
    "SiLU (-> swiglu), GELU or its tanh approximations (-> geglu), ReLU (-> reglu), "
    "Sigmoid (-> glu), Identity/LinearActivation (-> bilinear)"
)


def _describe(mod: Any) -> str:
    """The class name with the attributes that decide the activation."""
    name = type(mod).__name__
    attrs = [
        f"{a}={getattr(mod, a)!r}"
        for a in ("approximate", "negative_slope", "alpha", "beta", "min_val", "max_val")
        if isinstance(getattr(mod, a, None), (str, int, float))
    ]
    return f"{name}({', '.join(attrs)})" if attrs else name


def _unsupported(mod: Any, where: str, why: str = "") -> ValueError:
    why = f" ({why})" if why else ""
    return ValueError(
        f"{where}: unsupported activation module {_describe(mod)}{why}. Supported: "
        f"{_SUPPORTED_ACTIVATIONS}. Pass activation=<registry name> (see "
        "skipsearch.known_activations()) to name it yourself."
    )


def _number(mod: Any, attribute: str, default: float, where: str) -> float:
    """A numeric setting of an activation module, e.g. LeakyReLU's slope."""
    value = getattr(mod, attribute, default)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(
            f"{where}: {type(mod).__name__}.{attribute} must be a number, got {value!r}"
        ) from None
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"{where}: {type(mod).__name__}.{attribute} must be finite, got {value!r}")
    return number


def _activation_token(mod: Any, where: str) -> str:
    """The registry name (or "identity") of an activation module."""
    name = type(mod).__name__
    if name in _PLAIN_ACTIVATIONS:
        return _PLAIN_ACTIVATIONS[name]
    if name == "GELU":
        approximate = getattr(mod, "approximate", "none")
        if approximate == "none":
            return "gelu"
        if approximate == "tanh":
            return "gelu_tanh"
        raise _unsupported(mod, where, f"approximate={approximate!r}")
    if name == "LeakyReLU":
        return _leaky(_number(mod, "negative_slope", 0.01, where), mod, where)
    if name == "PReLU":
        weight = _to_numpy(getattr(mod, "weight", None), f"{where}.weight")
        if weight is None or weight.size != 1:
            raise _unsupported(mod, where, "only a single shared slope (num_parameters=1)")
        return _leaky(float(weight.reshape(-1)[0]), mod, where)
    if name == "ELU":
        if _number(mod, "alpha", 1.0, where) != 1.0:
            raise _unsupported(mod, where, "the registry's elu has alpha = 1")
        return "elu"
    if name == "Softplus":
        if _number(mod, "beta", 1.0, where) != 1.0:
            raise _unsupported(mod, where, "the registry's softplus has beta = 1")
        return "softplus"
    if name == "Hardtanh":
        bounds = (_number(mod, "min_val", -1.0, where), _number(mod, "max_val", 1.0, where))
        if bounds != (-1.0, 1.0):
            raise _unsupported(mod, where, "the registry's hardtanh clips to [-1, 1]")
        return "hardtanh"
    raise _unsupported(mod, where)


def _leaky(slope: float, mod: Any, where: str) -> str:
    # repr keeps every digit; get_activation parses it back exactly.
    token = f"leaky_relu({slope!r})"
    try:
        get_activation(token)
    except ValueError as e:
        raise _unsupported(mod, where, str(e)) from None
    return token


def _detected_activation(mod: Any, where: str, gated: bool) -> str:
    token = _activation_token(mod, where)
    if gated:
        if token not in _GATED:
            raise ValueError(
                f"{where}: the gate activation {_describe(mod)} (registry name {token!r}) has no "
                f"gated registry entry. Supported gates: {_SUPPORTED_GATES}. Pass "
                "activation=<gated registry name> to name it yourself."
            )
        return _GATED[token]
    if token == "identity":
        raise ValueError(
            f"{where}: the activation {_describe(mod)} is the identity, so the block is linear; "
            "skipsearch decides blocks with a nonlinear activation. Pass activation=<registry "
            "name> if the block has one."
        )
    return token


def _override(activation: Union[str, Activation], gated: bool, where: str):
    act = get_activation(activation)  # ValueError / TypeError for bad names and objects
    if act.gated != gated:
        if gated:
            raise ValueError(
                f"{where} is a gated block (it has a gate projection) but activation={act.name!r} "
                "is not gated; pass a gated registry name: swiglu, geglu, reglu, bilinear or glu"
            )
        raise ValueError(
            f"{where} has no gate projection but activation={act.name!r} is gated; pass an "
            "ungated registry name such as 'relu' or 'gelu'"
        )
    return activation.strip() if isinstance(activation, str) else activation


# --------------------------------------------------------------------------
# Tensors
# --------------------------------------------------------------------------


class _Widened:
    """Records which W_up/W_down dtypes were widened from bfloat16/float8
    (``dtypes``) or dequantized with their scales (``dequantized``): the
    default tolerance then no longer follows the stored precision."""

    def __init__(self) -> None:
        self.dtypes: set = set()
        self.dequantized: set = set()


def _stored_tol(dtypes) -> float:
    """sqrt(eps) of the coarsest of the stored dtypes (torch names)."""
    tols = [
        NARROW_TOL["F8_E5M2"] if d.startswith("float8_e5m2")
        else NARROW_TOL["F8_E4M3"] if d.startswith("float8")
        else BF16_TOL
        for d in dtypes
    ]
    return max(tols, default=BF16_TOL)


def _dtype_name(t: Any) -> str:
    return str(getattr(t, "dtype", "")).replace("torch.", "")


#: bitsandbytes module and parameter classes.
_BNB_CLASSES = ("Linear4bit", "LinearNF4", "LinearFP4", "Linear8bitLt", "Params4bit", "Int8Params")


def _refuse_quantized(mod: Any, where: str) -> None:
    """Raise ``ValueError`` naming the format for a quantized layer that
    skipsearch does not dequantize (everything but FP8 with its scales)."""
    cls = type(mod).__name__
    weight = getattr(mod, "weight", None)
    wcls = type(weight).__name__
    hint = "skipsearch decides only real weights: dequantize the layer first (or use the unquantized model)"
    if hasattr(mod, "qweight"):
        name = "AWQ" if ("WQLinear" in cls or "AWQ" in cls.upper()) else "GPTQ" if (
            "GPTQ" in cls.upper() or "QuantLinear" in cls or "Marlin" in cls or "Exllama" in cls
        ) else "GPTQ or AWQ"
        raise ValueError(
            f"{where}: {cls} is a {name}-quantized layer (packed qweight, qzeros, scales), which "
            f"skipsearch cannot dequantize; {hint}"
        )
    if cls in _BNB_CLASSES or wcls in _BNB_CLASSES or any(
        hasattr(x, a) for x in (mod, weight) for a in ("quant_state", "SCB")
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
    if "Quantized" in wcls or wcls in ("QBytesTensor", "WeightQBytesTensor", "QTensor", "Float8Tensor"):
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
    if zero_point is not None and np.any(_to_numpy(zero_point, f"{where}.weight_zero_point") != 0):
        raise ValueError(
            f"{where}: {cls} has a nonzero weight_zero_point (asymmetric quantization), which "
            f"skipsearch does not dequantize; {hint}"
        )


def _block_size(mod: Any) -> Optional[tuple]:
    """The block size of block-wise scales, when the layer states it
    (Hugging Face FP8Linear ``block_size``, compressed-tensors
    ``quantization_scheme.weights.block_structure``)."""
    for path in ("block_size", "weight_block_size", "quantization_scheme.weights.block_structure"):
        value = _get(mod, path)
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
    scale = _to_numpy(getattr(mod, name), f"{where}.{name}")
    return dequantize(W, scale, _block_size(mod), f"{where}.{name}")


def _to_numpy(
    t: Any, where: str, widened: Optional[_Widened] = None, numeric: bool = True
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
            dtype = str(getattr(t, "dtype", "")).replace("torch.", "")
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


def _linear(
    mod: Any, where: str, widened: _Widened, flip: bool = True
) -> tuple[np.ndarray, Optional[np.ndarray]]:
    """Weight ``(out, in)`` and bias ``(out,)`` (or None) of a Linear-like module.

    A transformers ``Conv1D`` (GPT-2) stores its weight as ``(in, out)``; it
    is transposed. An FP8 weight with a ``weight_scale_inv`` or
    ``weight_scale`` is dequantized (float64); other quantized layers are
    refused. ``flip``: the weight is in the flip condition (W_up, W_down),
    so its widening matters to the default tolerance.
    """
    if mod is not None:
        _refuse_quantized(mod, where)
    if mod is None or not hasattr(mod, "weight"):
        raise TypeError(
            f"{where}: expected a Linear-like module with a .weight, got {type(mod).__name__}"
        )
    dtype = _dtype_name(mod.weight)
    this = _Widened()
    W = _to_numpy(mod.weight, f"{where}.weight", this)
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
    b = _to_numpy(getattr(mod, "bias", None), f"{where}.bias")
    if b is not None and b.shape != (W.shape[0],):
        raise ValueError(
            f"{where}: bias has shape {b.shape}, expected ({W.shape[0]},) for a weight of "
            f"(out, in) shape {W.shape}"
        )
    return W, b


def _is_linear(mod: Any) -> bool:
    name = type(mod).__name__
    if name in ("Linear", "Conv1D", "NonDynamicallyQuantizableLinear"):
        return True
    return all(hasattr(mod, a) for a in ("weight", "in_features", "out_features"))


def _ignored(mod: Any) -> bool:
    name = type(mod).__name__
    return "Dropout" in name or name == "Identity"


# --------------------------------------------------------------------------
# Layouts
# --------------------------------------------------------------------------

#: (description, up, down, gate or None, activation attributes tried in order).
#: Dotted names are attribute paths.
_LAYOUTS = (
    ("LLaMA/Mistral/Qwen/Gemma MLP", "up_proj", "down_proj", "gate_proj", ("act_fn", "act")),
    ("Mixtral expert", "w3", "w2", "w1", ("act_fn",)),
    ("T5DenseGatedActDense", "wi_1", "wo", "wi_0", ("act",)),
    ("T5DenseActDense", "wi", "wo", None, ("act",)),
    ("GPT-2 MLP", "c_fc", "c_proj", None, ("act",)),
    ("GPT-NeoX/Falcon/BLOOM MLP", "dense_h_to_4h", "dense_4h_to_h", None, ("act", "gelu_impl")),
    ("GPT-J MLP", "fc_in", "fc_out", None, ("act",)),
    ("OPT/CLIP/Whisper layer", "fc1", "fc2", None, ("activation_fn",)),
    (
        "BERT/ViT layer",
        "intermediate.dense",
        "output.dense",
        None,
        ("intermediate.intermediate_act_fn",),
    ),
)

#: Attributes of a transformer layer that hold its MLP.
_CONTAINERS = ("mlp", "DenseReluDense")


def _supported_layouts() -> str:
    rows = ["nn.Sequential(Linear, activation, Linear) (Dropout and Identity modules ignored)"]
    for desc, up, down, gate, acts in _LAYOUTS:
        names = ([gate] if gate else []) + [up, down, acts[0]]
        rows.append(f"{desc}: {', '.join(names)}")
    rows.append(f"a module whose .{' or .'.join(_CONTAINERS)} is one of these")
    return "; ".join(rows)


def _get(mod: Any, path: str) -> Any:
    for part in path.split("."):
        mod = getattr(mod, part, None)
        if mod is None:
            return None
    return mod


def _match(mod: Any):
    for layout in _LAYOUTS:
        _, up, down, gate, _ = layout
        if all(_get(mod, p) is not None for p in (up, down) + ((gate,) if gate else ())):
            return layout
    return None


def _check_chain(W_up, W_down, W_gate, names: tuple[str, str, str], where: str) -> None:
    up, down, gate = names
    m = W_up.shape[0]
    if W_down.shape[1] != m:
        raise ValueError(
            f"{where}: the layers do not chain: {up} maps {W_up.shape[1]} -> {m} features (W_up "
            f"shape (m, d_in) = {W_up.shape}) but {down} takes {W_down.shape[1]} (W_down shape "
            f"{W_down.shape}, expected (d_out, {m}))"
        )
    if W_gate is not None and W_gate.shape != W_up.shape:
        raise ValueError(
            f"{where}: {gate} weight has shape {W_gate.shape} but {up} weight has shape "
            f"{W_up.shape}; a gated block needs W_gate and W_up of the same shape (m, d_in)"
        )


def _from_sequential(module: Any, where: str, activation, widened: _Widened) -> MLPBlock:
    items: list = []

    def flatten(seq, prefix):
        for i, child in enumerate(seq):
            if type(child).__name__ == "Sequential":
                flatten(child, f"{prefix}[{i}]")
            else:
                items.append((f"{prefix}[{i}]", child))

    flatten(module, where)
    kept = [(name, mod) for name, mod in items if not _ignored(mod)]
    for name, mod in kept:
        # GPTQ/AWQ layers have no .weight and would not count as Linear:
        # name their format rather than miscount the layers.
        _refuse_quantized(mod, name)
    linear = [k for k, (_, mod) in enumerate(kept) if _is_linear(mod)]
    layers = ", ".join(f"{name} {type(mod).__name__}" for name, mod in kept) or "none"
    if len(linear) != 2:
        raise ValueError(
            f"{where}: expected exactly 2 Linear layers (Linear, activation, Linear), found "
            f"{len(linear)}; the layers other than Dropout and Identity are: {layers}"
        )
    first, second = linear
    outside = kept[:first] + kept[second + 1:]
    if outside:
        name, mod = outside[0]
        raise ValueError(
            f"{name}: {type(mod).__name__} lies outside the two Linear layers; from_torch reads "
            "the form W_down act(W_up x + b_up) + b_down, i.e. Sequential(Linear, activation, "
            "Linear), with Dropout and Identity modules ignored"
        )
    between = kept[first + 1:second]
    if len(between) != 1:
        found = ", ".join(f"{n} {type(m).__name__}" for n, m in between)
        raise ValueError(
            f"{where}: expected exactly one activation module between the two Linear layers, "
            f"found {len(between)}" + (f" ({found})" if found else " (the block is linear)")
        )
    (up_name, up_mod), (act_name, act_mod), (down_name, down_mod) = kept[first:second + 1]
    W_up, b_up = _linear(up_mod, up_name, widened)
    W_down, b_down = _linear(down_mod, down_name, widened)
    _check_chain(W_up, W_down, None, (up_name, down_name, ""), where)
    if activation is None:
        act = _detected_activation(act_mod, act_name, gated=False)
    else:
        act = _override(activation, False, where)
    return MLPBlock(W_up=W_up, W_down=W_down, activation=act, b_up=b_up, b_down=b_down)


def _from_layout(module: Any, layout, where: str, activation, widened: _Widened) -> MLPBlock:
    desc, up, down, gate, act_paths = layout
    W_up, b_up = _linear(_get(module, up), f"{where}.{up}", widened)
    W_down, b_down = _linear(_get(module, down), f"{where}.{down}", widened)
    W_gate = None
    if gate is not None:
        W_gate, b_gate = _linear(_get(module, gate), f"{where}.{gate}", widened, flip=False)
        if b_gate is not None and np.any(b_gate != 0):
            raise ValueError(
                f"{where}.{gate} has a nonzero bias, which MLPBlock cannot hold: the gated block "
                "is W_down (gate(W_gate x) * (W_up x + b_up)) + b_down. With a gate bias the "
                f"linearization and degree arguments ({PAPER}) do not apply, so the verdict "
                "would be undecided"
            )
        if b_gate is not None and b_up is None:
            # A zero gate bias leaves f unchanged, but the layer's form has
            # inner biases: a zero b_up says so to find_absorbing_subset.
            b_up = np.zeros(W_up.shape[0], dtype=b_gate.dtype)
    _check_chain(W_up, W_down, W_gate, (up, down, gate or ""), f"{where} ({desc})")
    if activation is not None:
        act = _override(activation, gate is not None, f"{where} ({desc})")
    else:
        found = [(p, _get(module, p)) for p in act_paths if _get(module, p) is not None]
        if not found:
            raise ValueError(
                f"{where} ({desc}) has {up} and {down} but no activation attribute (looked for "
                f"{', '.join(act_paths)}); pass activation=<registry name>"
            )
        path, act_mod = found[0]
        act = _detected_activation(act_mod, f"{where}.{path}", gated=gate is not None)
    return MLPBlock(
        W_up=W_up, W_down=W_down, activation=act, b_up=b_up, b_down=b_down, W_gate=W_gate
    )


def from_torch(module: Any, *, activation: Optional[Union[str, Activation]] = None) -> MLPBlock:
    """Read one MLP block out of a PyTorch module.

    The block is ``f(x) = W_down act(W_up x + b_up) + b_down`` or, gated,
    ``f(x) = W_down (gate(W_gate x) * (W_up x + b_up)) + b_down``; the
    residual block is ``x -> x + f(x)``. The result holds the keyword
    arguments of :func:`~skipsearch.find_absorbing_subset`, so
    ``find_absorbing_subset(**dataclasses.asdict(block))`` decides it.

    Parameters
    ----------
    module : torch.nn.Module or duck-typed equivalent
        One of these layouts, recognised by class and attribute names
        (torch and transformers are never imported):

        * ``nn.Sequential(Linear, activation, Linear)`` (or a list or
          tuple of those modules); Dropout modules
          (any class whose name contains ``Dropout``) and ``nn.Identity``
          are ignored wherever they are, and nested Sequentials are
          flattened.
        * LLaMA, Mistral, Qwen, Gemma MLP: ``gate_proj``, ``up_proj``,
          ``down_proj``, ``act_fn`` (gated).
        * Mixtral expert: ``w1`` (gate), ``w3`` (up), ``w2`` (down),
          ``act_fn`` (gated).
        * T5 ``T5DenseGatedActDense``: ``wi_0`` (gate), ``wi_1`` (up),
          ``wo``, ``act`` (gated); ``T5DenseActDense``: ``wi``, ``wo``,
          ``act``.
        * GPT-2 MLP: ``c_fc``, ``c_proj``, ``act``; a transformers
          ``Conv1D`` stores its weight as ``(in, out)`` and is transposed.
        * GPT-NeoX, Falcon, BLOOM MLP: ``dense_h_to_4h``,
          ``dense_4h_to_h``, ``act`` (BLOOM: ``gelu_impl``).
        * GPT-J MLP: ``fc_in``, ``fc_out``, ``act``.
        * OPT, CLIP, Whisper layer (any module with ``fc1``, ``fc2``,
          ``activation_fn``).
        * BERT, ViT layer: ``intermediate.dense``, ``output.dense``,
          ``intermediate.intermediate_act_fn``.
        * A module whose ``.mlp`` (a transformer decoder layer) or
          ``.DenseReluDense`` (T5 ``T5LayerFF``) is one of the above.

        Weights may be torch tensors of any dtype and device, or numpy
        arrays.
    activation : str or Activation, optional
        Overrides the detected activation: a registry name (see
        :func:`~skipsearch.known_activations`), ``"leaky_relu(<slope>)"``
        or an :class:`~skipsearch.Activation`. It must be gated exactly when
        the layout has a gate projection. With it the activation module
        (which must still be present in a Sequential) is not inspected.

    Returns
    -------
    MLPBlock
        ``W_up`` of shape ``(m, d_in)``, ``W_down`` of shape
        ``(d_out, m)``, ``W_gate`` of shape ``(m, d_in)`` or None,
        ``b_up`` of shape ``(m,)`` or None (None when the layer has
        ``bias=None``; a bias, even all zeros, means the block's form has
        inner biases, which voids the degree and linearization arguments; a
        zero gate bias, which ``MLPBlock`` cannot hold, gives a zero ``b_up``
        when the up projection has none, for the same reason), ``b_down`` of
        shape ``(d_out,)`` or None, the
        ``activation`` as a registry name (or the given Activation object),
        and ``skip=None`` (the identity skip, which needs ``d_in ==
        d_out``; replace it with ``dataclasses.replace`` otherwise). The
        arrays are fresh numpy copies that share no memory with the module,
        which is never modified. float16, float32 and float64 weights keep
        their dtype; bfloat16 and float8 weights are widened to float32. A
        float8 weight with a ``weight_scale_inv`` or ``weight_scale`` beside
        it (Hugging Face ``FP8Linear``, DeepSeek-V3, compressed-tensors,
        FBGEMM FP8) is dequantized as its format defines, per tensor, per
        output channel or in blocks (``block_size``, default 128 x 128), to
        float64 (see :mod:`skipsearch.quantization`).

    Raises
    ------
    ValueError
        An unknown layout (the message lists the supported ones); a
        Sequential that is not ``Linear, activation, Linear`` (the message
        names what was found); layers whose shapes do not chain (both shapes
        are named); an unsupported activation module (the message lists the
        supported ones and suggests ``activation=``); a nonzero gate bias;
        an override that is gated for an ungated layout or the reverse; an
        unknown activation name; a quantized layer other than FP8 with its
        scale (GPTQ, AWQ, bitsandbytes, compressed-tensors packed weights,
        torchao or Quanto tensors, torch quantized tensors, nonzero zero
        points, a scale beside an integer or non-float8 weight), named in
        the message; a scale whose shape does not fit its weight.
    TypeError
        ``module`` is None or not a module; a layer without a ``.weight``;
        a weight that cannot be converted to a real numeric numpy array; an
        ``activation`` that is neither a string nor an Activation.

    Warns
    -----
    UserWarning
        When bfloat16 or float8 ``W_up``/``W_down`` weights were widened to
        float32 (or FP8 ones dequantized to float64): the default tolerance
        of :func:`~skipsearch.find_absorbing_subset` then follows float32
        (float64), while the stored precision calls for ``tol=BF16_TOL``
        (``sqrt(2**-7)``, about 0.088) for bfloat16 and 0.35 for float8
        E4M3; the message gives the value.

    Notes
    -----
    Only the MLP is read. Layer norms before or after it are not part of
    ``f``, and a pre-norm transformer layer computes ``x + f(LN(x))``; the
    verdict concerns ``x + f(x)``.

    Activations map by class name: ``ReLU`` -> ``relu``, ``GELU`` ->
    ``gelu`` (``approximate='tanh'``: ``gelu_tanh``), ``SiLU`` ->
    ``silu``, ``LeakyReLU(s)`` -> ``leaky_relu(s)``, ``Tanh``,
    ``Sigmoid``, ``ELU`` (alpha 1), ``Softplus`` (beta 1; its linear
    threshold is ignored), ``Hardswish``, ``Mish``, ``ReLU6``,
    ``Hardtanh(-1, 1)``, and the transformers classes (``NewGELUActivation``,
    ``GELUTanh``, ``PytorchGELUTanh``, ``FastGELUActivation`` ->
    ``gelu_tanh``; ``QuickGELUActivation`` -> ``quick_gelu``;
    ``ReLUSquaredActivation`` -> ``relu2``). Gates map to gated entries:
    SiLU -> ``swiglu``, GELU -> ``geglu``, ReLU -> ``reglu``, Sigmoid ->
    ``glu``, identity -> ``bilinear``. A tanh-approximated GELU gate
    (Gemma) also maps to ``geglu``, whose gate is the exact GELU: the
    verdict for gated blocks without inner biases (not absorbable, by the
    linearization argument of Mijoski & Karbevski 2026, arXiv:2604.23705)
    uses only ``gate(0) = 0`` and differentiability at 0, which both
    share; function values computed from the block differ by up to about
    1e-3 relative.

    Examples
    --------
    >>> import torch, skipsearch                                  # doctest: +SKIP
    >>> from skipsearch.torch_adapter import from_torch          # doctest: +SKIP
    >>> mlp = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.GELU(),
    ...                           torch.nn.Linear(32, 8))        # doctest: +SKIP
    >>> b = from_torch(mlp)                                       # doctest: +SKIP
    >>> b.activation, b.W_up.shape, b.W_down.shape                # doctest: +SKIP
    ('gelu', (32, 8), (8, 32))
    >>> r = skipsearch.find_absorbing_subset(
    ...     b.W_up, b.W_down, activation=b.activation, b_up=b.b_up, b_down=b.b_down,
    ...     W_gate=b.W_gate)                                     # doctest: +SKIP
    """
    if module is None:
        raise TypeError("from_torch needs a module, got None")
    if activation is not None and not isinstance(activation, (str, Activation)):
        raise TypeError(
            "activation must be a registry name or a skipsearch.Activation, "
            f"got {type(activation).__name__}"
        )
    widened = _Widened()
    block = _dispatch(module, type(module).__name__, activation, widened, depth=0)
    for dtypes, what, wide in (
        (widened.dtypes, "widened to float32", "float32"),
        (widened.dequantized, "dequantized with their scales to float64", "float64"),
    ):
        if dtypes:
            coarsest = max(dtypes, key=lambda d: _stored_tol([d]))
            warnings.warn(
                f"{type(module).__name__}: {', '.join(sorted(dtypes))} weights were {what}, so "
                f"find_absorbing_subset's default tolerance follows {wide}; pass "
                f"tol={_stored_tol(dtypes):.3g} (sqrt of the {coarsest} epsilon) to match the "
                "stored precision",
                UserWarning,
                stacklevel=2,
            )
    return block


def _dispatch(module: Any, where: str, activation, widened: _Widened, depth: int) -> MLPBlock:
    if type(module).__name__ == "Sequential" or isinstance(module, (list, tuple)):
        return _from_sequential(module, where, activation, widened)
    layout = _match(module)
    if layout is not None:
        return _from_layout(module, layout, where, activation, widened)
    if depth == 0:
        for attr in _CONTAINERS:
            inner = getattr(module, attr, None)
            if inner is not None:
                return _dispatch(inner, f"{where}.{attr}", activation, widened, depth + 1)
    hint = ""
    if _is_linear(module):
        hint = " A single Linear layer is not an MLP block."
    raise ValueError(
        f"{where}: unrecognised module {type(module).__name__}.{hint} Supported layouts: "
        f"{_supported_layouts()}. Pass the MLP itself, e.g. model.model.layers[0].mlp."
    )


# --------------------------------------------------------------------------
# Checkpoint files
# --------------------------------------------------------------------------

_TORCH_SUFFIXES = (".bin", ".pt", ".pth")


def load_state_dict(path: Union[str, "os.PathLike[str]"]) -> dict[str, np.ndarray]:
    """Load a checkpoint's tensors as numpy arrays, never unpickling code.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.safetensors`` file, read with ``safetensors.numpy.load_file``
        (no torch needed), or a ``.bin``, ``.pt`` or ``.pth`` file, read
        only with ``torch.load(path, map_location="cpu",
        weights_only=True)``, which restores tensors and plain containers
        and refuses every other pickled object. Pickles are never loaded
        any other way: a checkpoint that needs full unpickling is refused.

    Returns
    -------
    dict of str to ndarray
        Tensor name to a numpy copy. Nested dictionaries in a
        torch checkpoint (e.g. ``{"state_dict": {...}}``) are flattened with
        dotted keys; entries that are not tensors (numbers, strings, lists)
        are left out. float16, bfloat16 and float8 tensors are widened to
        float32 exactly; other dtypes (bool and integer buffers included) are kept.
        Quantized tensors come back as stored, codes and scales side by
        side (e.g. ``...weight`` and ``...weight_scale_inv``): dequantize
        them before deciding (:func:`skipsearch.quantization.dequantize`),
        or use :func:`skipsearch.scan`, which does.
        Weight names follow the checkpoint,
        e.g. ``model.layers.0.mlp.up_proj.weight`` of shape ``(m, d_in)``.

    Raises
    ------
    FileNotFoundError
        The file does not exist.
    ValueError
        An unsupported suffix, an unreadable safetensors file or one with a
        dtype numpy cannot hold other than bfloat16 and float8, a torch
        checkpoint refused by ``weights_only=True`` (it holds objects other
        than tensors and containers), or one whose top level is not a
        dictionary.
    ImportError
        A ``.bin``/``.pt``/``.pth`` file when torch is not installed, or
        torch is too old for ``weights_only`` (before 1.13).

    Examples
    --------
    >>> sd = load_state_dict("model.safetensors")                 # doctest: +SKIP
    >>> up = sd["model.layers.0.mlp.up_proj.weight"]              # doctest: +SKIP
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no checkpoint file at {path!r}")
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".safetensors":
        return _load_safetensors(path)
    if suffix in _TORCH_SUFFIXES:
        return _load_torch(path)
    raise ValueError(
        f"{path!r}: unsupported checkpoint suffix {suffix!r}; expected .safetensors, or "
        f"{', '.join(_TORCH_SUFFIXES)} (loaded with torch.load(weights_only=True))"
    )


def _load_safetensors(path: str) -> dict[str, np.ndarray]:
    from skipsearch.checkpoints import CheckpointError, read_safetensors

    try:
        return read_safetensors(path)
    except CheckpointError as e:
        raise ValueError(str(e)) from None


def _load_torch(path: str) -> dict[str, np.ndarray]:
    try:
        import torch
    except ImportError:
        raise ImportError(
            f"{path!r} is a torch checkpoint and torch is not installed; install torch, or "
            "convert the checkpoint to .safetensors"
        ) from None
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except TypeError as e:
        if "weights_only" in str(e):
            raise ImportError(
                f"torch {getattr(torch, '__version__', '?')} has no weights_only loading "
                "(needs torch >= 1.13); skipsearch does not unpickle checkpoints otherwise"
            ) from None
        raise
    except pickle.UnpicklingError as e:
        raise ValueError(
            f"{path!r} holds objects other than tensors and containers, which "
            f"torch.load(weights_only=True) refuses; skipsearch never unpickles them: {e}"
        ) from None
    if not isinstance(obj, dict):
        raise ValueError(
            f"{path!r} holds a {type(obj).__name__}, expected a dictionary of tensors "
            "(a state dict)"
        )
    out: dict[str, np.ndarray] = {}
    _flatten_tensors(obj, "", out, path)
    return out


def _flatten_tensors(obj: dict, prefix: str, out: dict, path: str) -> None:
    for key, value in obj.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            _flatten_tensors(value, f"{name}.", out, path)
        elif isinstance(value, np.ndarray) or hasattr(value, "detach"):
            out[name] = _to_numpy(value, f"{path}: {name}", numeric=False)
