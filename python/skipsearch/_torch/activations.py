"""Which registry activation a PyTorch activation module is.

Modules are recognised by class name (``torch.nn`` and
``transformers.activations``) and the attributes that change the function
(``approximate``, ``negative_slope``, ``alpha``, ``beta``, ``min_val``,
``max_val``, PReLU's single weight). Gates map to the gated registry entries
(:data:`skipsearch.activations.GATED_ENTRIES`). A user-given ``activation=``
replaces the detection (:func:`override`).
"""

from __future__ import annotations

from typing import Any, Union

from skipsearch._torch.tensors import to_numpy
from skipsearch.activations import GATED_ENTRIES, Activation, get_activation

__all__ = ["detected_activation", "override"]

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
        weight = to_numpy(getattr(mod, "weight", None), f"{where}.weight")
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


def detected_activation(mod: Any, where: str, gated: bool) -> str:
    """The registry name of activation module ``mod``; for a gate
    (``gated``), the gated entry it drives (``SiLU`` -> ``"swiglu"``)."""
    token = _activation_token(mod, where)
    if gated:
        if token not in GATED_ENTRIES:
            raise ValueError(
                f"{where}: the gate activation {_describe(mod)} (registry name {token!r}) has no "
                f"gated registry entry. Supported gates: {_SUPPORTED_GATES}. Pass "
                "activation=<gated registry name> to name it yourself."
            )
        return GATED_ENTRIES[token]
    if token == "identity":
        raise ValueError(
            f"{where}: the activation {_describe(mod)} is the identity, so the block is linear; "
            "skipsearch decides blocks with a nonlinear activation. Pass activation=<registry "
            "name> if the block has one."
        )
    return token


def override(activation: Union[str, Activation], gated: bool, where: str) -> Union[str, Activation]:
    """A user-given activation, checked to be gated exactly when the layout
    has a gate projection; names are kept as given (stripped)."""
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
