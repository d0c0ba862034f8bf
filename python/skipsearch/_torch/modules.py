"""Match a PyTorch module to an MLP layout and read it as an MLPBlock.

:func:`dispatch` recognises ``nn.Sequential(Linear, activation, Linear)``
(Dropout and Identity ignored, nested Sequentials flattened), the MLP
modules of the Hugging Face families (:data:`LAYOUTS`, matched by attribute
names), and a transformer layer whose ``.mlp`` or ``.DenseReluDense`` is one
of those. Weights come from :mod:`skipsearch._torch.tensors`, activations
from :mod:`skipsearch._torch.activations`.
"""

from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np

from skipsearch._torch.activations import detected_activation, override
from skipsearch._torch.tensors import (
    Widened,
    get_attribute,
    is_linear,
    read_linear,
    refuse_quantized,
)
from skipsearch.absorption import MLPBlock
from skipsearch.activations import Activation

#: One MLP layout: description, up, down, gate (or None) and the activation
#: attributes tried in order.
_Layout = tuple[str, str, str, Optional[str], tuple[str, ...]]

__all__ = ["LAYOUTS", "dispatch"]

#: (description, up, down, gate or None, activation attributes tried in order).
#: Dotted names are attribute paths.
LAYOUTS: tuple[_Layout, ...] = (
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
    for desc, up, down, gate, acts in LAYOUTS:
        names = ([gate] if gate else []) + [up, down, acts[0]]
        rows.append(f"{desc}: {', '.join(names)}")
    rows.append(f"a module whose .{' or .'.join(_CONTAINERS)} is one of these")
    return "; ".join(rows)


def _match(mod: Any) -> Optional[_Layout]:
    for layout in LAYOUTS:
        _, up, down, gate, _ = layout
        if all(get_attribute(mod, p) is not None for p in (up, down) + ((gate,) if gate else ())):
            return layout
    return None


def _ignored(mod: Any) -> bool:
    name = type(mod).__name__
    return "Dropout" in name or name == "Identity"


def _check_chain(
    W_up: np.ndarray,
    W_down: np.ndarray,
    W_gate: Optional[np.ndarray],
    names: tuple[str, str, str],
    where: str,
) -> None:
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


def _from_sequential(
    module: Any, where: str, activation: Union[str, Activation, None], widened: Widened
) -> MLPBlock:
    items: list[tuple[str, Any]] = []

    def flatten(seq: Any, prefix: str) -> None:
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
        refuse_quantized(mod, name)
    linear = [k for k, (_, mod) in enumerate(kept) if is_linear(mod)]
    layers = ", ".join(f"{name} {type(mod).__name__}" for name, mod in kept) or "none"
    if len(linear) != 2:
        raise ValueError(
            f"{where}: expected exactly 2 Linear layers (Linear, activation, Linear), found "
            f"{len(linear)}; the layers other than Dropout and Identity are: {layers}"
        )
    first, second = linear
    outside = kept[:first] + kept[second + 1 :]
    if outside:
        name, mod = outside[0]
        raise ValueError(
            f"{name}: {type(mod).__name__} lies outside the two Linear layers; from_torch reads "
            "the form W_down act(W_up x + b_up) + b_down, i.e. Sequential(Linear, activation, "
            "Linear), with Dropout and Identity modules ignored"
        )
    between = kept[first + 1 : second]
    if len(between) != 1:
        found = ", ".join(f"{n} {type(m).__name__}" for n, m in between)
        raise ValueError(
            f"{where}: expected exactly one activation module between the two Linear layers, "
            f"found {len(between)}" + (f" ({found})" if found else " (the block is linear)")
        )
    (up_name, up_mod), (act_name, act_mod), (down_name, down_mod) = kept[first : second + 1]
    W_up, b_up = read_linear(up_mod, up_name, widened)
    W_down, b_down = read_linear(down_mod, down_name, widened)
    _check_chain(W_up, W_down, None, (up_name, down_name, ""), where)
    act: Union[str, Activation]
    if activation is None:
        act = detected_activation(act_mod, act_name, gated=False)
    else:
        act = override(activation, False, where)
    return MLPBlock(W_up=W_up, W_down=W_down, activation=act, b_up=b_up, b_down=b_down)


def _from_layout(
    module: Any,
    layout: _Layout,
    where: str,
    activation: Union[str, Activation, None],
    widened: Widened,
) -> MLPBlock:
    desc, up, down, gate, act_paths = layout
    W_up, b_up = read_linear(get_attribute(module, up), f"{where}.{up}", widened)
    W_down, b_down = read_linear(get_attribute(module, down), f"{where}.{down}", widened)
    W_gate = b_gate = None
    if gate is not None:
        # A gate bias, even all zeros, gives the block's form inner biases;
        # MLPBlock carries it as b_gate for the decision to see.
        W_gate, b_gate = read_linear(
            get_attribute(module, gate), f"{where}.{gate}", widened, flip=False
        )
    _check_chain(W_up, W_down, W_gate, (up, down, gate or ""), f"{where} ({desc})")
    act: Union[str, Activation]
    if activation is not None:
        act = override(activation, gate is not None, f"{where} ({desc})")
    else:
        found = [
            (p, get_attribute(module, p)) for p in act_paths if get_attribute(module, p) is not None
        ]
        if not found:
            raise ValueError(
                f"{where} ({desc}) has {up} and {down} but no activation attribute (looked for "
                f"{', '.join(act_paths)}); pass activation=<registry name>"
            )
        path, act_mod = found[0]
        act = detected_activation(act_mod, f"{where}.{path}", gated=gate is not None)
    return MLPBlock(
        W_up=W_up,
        W_down=W_down,
        activation=act,
        b_up=b_up,
        b_down=b_down,
        W_gate=W_gate,
        b_gate=b_gate,
    )


def dispatch(
    module: Any,
    where: str,
    activation: Union[str, Activation, None],
    widened: Widened,
    depth: int = 0,
) -> MLPBlock:
    """The MLPBlock of ``module``, whose name in messages is ``where``;
    ``depth`` 0 also looks inside a layer's ``.mlp`` or ``.DenseReluDense``."""
    if type(module).__name__ == "Sequential" or isinstance(module, (list, tuple)):
        return _from_sequential(module, where, activation, widened)
    layout = _match(module)
    if layout is not None:
        return _from_layout(module, layout, where, activation, widened)
    if depth == 0:
        for attr in _CONTAINERS:
            inner = getattr(module, attr, None)
            if inner is not None:
                return dispatch(inner, f"{where}.{attr}", activation, widened, depth + 1)
    hint = ""
    if is_linear(module):
        hint = " A single Linear layer is not an MLP block."
    raise ValueError(
        f"{where}: unrecognised module {type(module).__name__}.{hint} Supported layouts: "
        f"{_supported_layouts()}. Pass the MLP itself, e.g. model.model.layers[0].mlp."
    )
