"""Where each model family keeps its FFN blocks, and how its config names them.

A :class:`Layout` names the tensors of one FFN block by key patterns: ``{i}``
stands for the layer index and ``*`` for any run of characters (a prefix
such as ``"bert.encoder."`` or T5's sub-layer number). The scan finds every
key that matches the ``up`` pattern and reads the ``down`` (and ``gate``)
tensor whose key has the same ``{i}`` and ``*`` parts. Biases are the same
keys with ``.weight`` replaced by ``.bias``, when present.

:data:`FAMILIES` maps each supported ``model_type`` to its layout and to
the ``config.json`` keys that family uses for the activation and the sizes.
Any other model is scanned through a user-given :class:`Layout` (the
generic mapping), which must then name the activation.

Activation names from ``config.json`` are mapped explicitly (THEORY §2):
flip-linear ones (``relu``, ``gelu``, ``gelu_new``, ``gelu_pytorch_tanh``,
``silu``, ...) through the activation registry, and a gated block's
activation to its gated registry entry (``silu`` -> ``swiglu``, ``gelu*``
-> ``geglu``, ``relu`` -> ``reglu``). An unknown name is an error that lists
the known ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

from skipsearch._types import Norm
from skipsearch.activations import GATED_ENTRIES, Activation, get_activation
from skipsearch.checkpoints import CheckpointError

__all__ = ["FAMILIES", "Family", "Layout", "NORM_SCOPES", "supported_model_types"]

#: What a row of the report concerns, by LayerNorm placement.
NORM_SCOPES: dict[Optional[Norm], str] = {
    "post": (
        "FFN sub-layer with its residual, post-LN: the LayerNorm receives x + f(x), so the "
        "verdict is about the model's own residual block"
    ),
    "pre": (
        "FFN sub-layer with its residual, pre-LN: the model computes x + f(LN(x)); the verdict "
        "concerns y -> y + f(y) for the FFN's own input y, not the model's residual stream"
    ),
    None: (
        "FFN sub-layer with its residual (LayerNorm placement not given): the verdict concerns "
        "y -> y + f(y) for the FFN's own input y"
    ),
}


@dataclass(frozen=True)
class Layout:
    """The tensor names of the FFN blocks of one model.

    Parameters
    ----------
    up, down : str
        Key patterns of ``W_up`` and ``W_down``; ``{i}`` is the layer index
        (required in ``up``) and ``*`` any run of characters, e.g.
        ``"*layers.{i}.mlp.up_proj.weight"``.
    gate : str, optional
        Key pattern of ``W_gate`` for gated blocks. Default: none.
    activation : str or Activation, optional
        The activation, for the generic mapping (a registry name, an alias
        or ``"leaky_relu(<slope>)"``); families read it from ``config.json``.
        For a gated layout give the gated name (``"swiglu"``, ``"geglu"``).
    norm : {"pre", "post"}, optional
        Where the model's LayerNorm sits; only changes the scope sentence of
        each report row. Default: not given.
    transpose : bool
        The weights are stored ``(in, out)`` (GPT-2's Conv1D) instead of
        ``torch.nn.Linear``'s ``(out, in)``. Default: False.

    Raises
    ------
    ValueError
        A pattern is empty, lacks ``{i}`` or has it more than once, has more
        ``*`` than ``up``, two patterns are equal, or ``norm`` is not
        ``"pre"``, ``"post"`` or None.
    TypeError
        A pattern is not a string, ``transpose`` is not a bool, or
        ``activation`` is not a name, an ``Activation`` or None.
    """

    up: str
    down: str
    gate: Optional[str] = None
    activation: Union[str, Activation, None] = None
    norm: Optional[Norm] = None
    transpose: bool = False

    def __post_init__(self) -> None:
        for name in ("up", "down", "gate"):
            value = getattr(self, name)
            if value is None and name == "gate":
                continue
            if not isinstance(value, str):
                raise TypeError(
                    f"Layout {name} must be a key pattern string, got {type(value).__name__} "
                    f"{value!r}"
                )
            if not value:
                raise ValueError(f"Layout {name} must be a non-empty key pattern string")
            # Each projection of layer i must be found through i: a pattern
            # without it would give every layer the same tensor.
            if value.count("{i}") != 1:
                raise ValueError(
                    f"Layout {name} pattern {value!r} must contain {{i}} (the layer index) exactly "
                    f"once; it has it {value.count('{i}')} times"
                )
            if value.count("*") > self.up.count("*"):
                raise ValueError(
                    f"Layout {name} pattern {value!r} has more '*' than the up pattern {self.up!r}, "
                    "so its key cannot be filled in from the up key"
                )
        if len({self.up, self.down, self.gate} - {None}) < (3 if self.gate else 2):
            raise ValueError("Layout up, down and gate patterns must differ")
        if self.norm not in ("pre", "post", None):
            raise ValueError(f"Layout norm must be 'pre', 'post' or None, got {self.norm!r}")
        if not isinstance(self.transpose, bool):
            raise TypeError(f"Layout transpose must be True or False, got {self.transpose!r}")
        if self.activation is not None and not isinstance(self.activation, (str, Activation)):
            raise TypeError(
                "Layout activation must be a registry name (see skipsearch.known_activations()), "
                f"a skipsearch.Activation or None, got {type(self.activation).__name__}"
            )

    def regex(self, pattern: str) -> re.Pattern[str]:
        """``pattern`` as an anchored regular expression with named groups."""
        out, star = [], 0
        for part in re.split(r"(\{i\}|\*)", pattern):
            if part == "{i}":
                out.append(r"(?P<layer>[0-9]+)")
            elif part == "*":
                out.append(f"(?P<s{star}>.*?)")
                star += 1
            else:
                out.append(re.escape(part))
        return re.compile("^" + "".join(out) + "$")

    @staticmethod
    def fill(pattern: str, match: re.Match[str]) -> str:
        """``pattern`` with ``{i}`` and the ``*`` parts taken from ``match``
        of another pattern of the same layout."""
        groups = match.groupdict()
        out, star = [], 0
        for part in re.split(r"(\{i\}|\*)", pattern):
            if part == "{i}":
                out.append(groups["layer"])
            elif part == "*":
                out.append(groups.get(f"s{star}", ""))
                star += 1
            else:
                out.append(part)
        return "".join(out)


def _first(config: dict[str, Any], keys: tuple[str, ...]) -> tuple[Optional[str], Any]:
    for key in keys:
        if config.get(key) is not None:
            return key, config[key]
    return None, None


@dataclass(frozen=True)
class Family:
    """A model family: its layout and its ``config.json`` keys.

    ``activation_keys`` are tried in order (Gemma's ``hidden_activation``
    before ``hidden_act``); ``d_keys``, ``m_keys`` and ``layer_keys`` give
    the model width, the hidden width and the number of FFN blocks.
    """

    name: str
    layout: Layout
    activation_keys: tuple[str, ...] = ("hidden_act",)
    d_keys: tuple[str, ...] = ("hidden_size",)
    m_keys: tuple[str, ...] = ("intermediate_size",)
    layer_keys: tuple[str, ...] = ("num_hidden_layers",)
    norm: Union[Norm, Callable[[dict[str, Any]], Norm]] = "pre"
    # Rewrites the config before reading (T5: feed_forward_proj).
    adapt: Optional[Callable[[dict[str, Any]], tuple[Layout, Optional[str]]]] = field(
        default=None, repr=False
    )

    def resolve(
        self, config: dict[str, Any], where: str, read_activation: bool = True
    ) -> dict[str, Any]:
        """Layout, activation, sizes and norm placement for ``config``; the
        activation is None when ``read_activation`` is false (the user
        names it)."""
        layout, act_name = self.layout, None
        if self.adapt is not None:
            layout, act_name = self.adapt(config)
        if act_name is None and read_activation:
            key, act_name = _first(config, self.activation_keys)
            if key is None:
                raise CheckpointError(
                    f"{where} has none of {', '.join(self.activation_keys)}: the {self.name} "
                    "scan reads the activation from it"
                )
        d = _size(config, self.d_keys, where)
        m = _size(config, self.m_keys, where, default=4 * d if self.name == "gpt2" else None)
        layers, layer_key = None, None
        key, value = _first(config, self.layer_keys)
        if key is not None:
            layers, layer_key = _size(config, (key,), where), key
        d_key = _first(config, self.d_keys)[0]
        m_key = _first(config, self.m_keys)[0] or f"{self.m_keys[0]} (default 4 * {d_key})"
        norm = self.norm(config) if callable(self.norm) else self.norm
        act = (
            config_activation(act_name, gated=layout.gate is not None, where=where)
            if read_activation
            else None
        )
        return dict(
            layout=layout,
            activation=act,
            hidden_act=act_name,
            d=d,
            m=m,
            layers=layers,
            norm=norm,
            sizes=f"{d_key}={d}, {m_key}={m}",
            layer_key=layer_key,
        )


def _size(
    config: dict[str, Any], keys: tuple[str, ...], where: str, default: Optional[int] = None
) -> int:
    key, value = _first(config, keys)
    if key is None and default is not None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        got = "it is missing" if key is None else f"got {key}={value!r}"
        raise CheckpointError(f"{where}: {' or '.join(keys)} must be a positive integer; {got}")
    return value


def config_activation(name: Any, gated: bool, where: str) -> Activation:
    """The registry activation for an activation name read from a config.

    Raises
    ------
    CheckpointError
        The name is not a string or not known (the message lists the known
        names), or a gated block's gate activation has no gated entry.
    """
    if not isinstance(name, str):
        raise CheckpointError(f"the activation in {where} must be a name, got {name!r}")
    try:
        act = get_activation(name)
    except ValueError as e:
        raise CheckpointError(f"{e}; it came from {where}") from e
    if not gated or act.gated:
        if act.gated and not gated:
            raise CheckpointError(
                f"activation {name!r} in {where} is gated, but the block has no gate projection"
            )
        return act
    gated_name = GATED_ENTRIES.get(act.name)
    if gated_name is None:
        raise CheckpointError(
            f"activation {name!r} in {where} drives a gate, and skipsearch has no gated entry for "
            f"it; gated activations known: {', '.join(sorted(set(GATED_ENTRIES.values())))} (gates "
            f"{', '.join(sorted(GATED_ENTRIES))})"
        )
    return get_activation(gated_name)


def _bert(norm: Norm, name: str = "bert") -> Family:
    return Family(
        name=name,
        layout=Layout(
            up="*layer.{i}.intermediate.dense.weight",
            down="*layer.{i}.output.dense.weight",
            norm=norm,
        ),
        norm=norm,
    )


def _t5(config: dict[str, Any]) -> tuple[Layout, Optional[str]]:
    proj = config.get("feed_forward_proj", "relu")
    if not isinstance(proj, str) or not proj:
        raise CheckpointError(
            f"feed_forward_proj must be a name like 'relu' or 'gated-gelu', got {proj!r}"
        )
    parts = proj.split("-")
    gated = parts[0] == "gated" and len(parts) == 2
    act = config.get("dense_act_fn") or parts[-1]
    if proj == "gated-gelu":
        act = "gelu_new"  # as Hugging Face's T5Config does
    base = "*block.{i}.layer.*.DenseReluDense."
    if gated:
        layout = Layout(
            up=base + "wi_1.weight", gate=base + "wi_0.weight", down=base + "wo.weight", norm="pre"
        )
    else:
        layout = Layout(up=base + "wi.weight", down=base + "wo.weight", norm="pre")
    return layout, act


def _gated(name: str, activation_keys: tuple[str, ...] = ("hidden_act",)) -> Family:
    return Family(
        name=name,
        layout=Layout(
            up="*layers.{i}.mlp.up_proj.weight",
            gate="*layers.{i}.mlp.gate_proj.weight",
            down="*layers.{i}.mlp.down_proj.weight",
            norm="pre",
        ),
        activation_keys=activation_keys,
    )


def _opt_norm(config: dict[str, Any]) -> Norm:
    value = config.get("do_layer_norm_before", True)
    if not isinstance(value, bool):
        raise CheckpointError(
            f"do_layer_norm_before must be true or false in config.json, got {value!r}"
        )
    return "pre" if value else "post"


_BERT = _bert("post")
_LLAMA = _gated("llama")
_GEMMA = _gated("gemma", activation_keys=("hidden_activation", "hidden_act"))

#: ``model_type`` -> :class:`Family`.
FAMILIES: dict[str, Family] = {
    "bert": _BERT,
    "roberta": _BERT,
    "xlm-roberta": _BERT,
    "electra": _BERT,
    # ViT keeps BERT's tensor names but puts its LayerNorms before the sub-layers.
    "vit": _bert("pre", name="vit"),
    "gpt2": Family(
        name="gpt2",
        layout=Layout(
            up="*h.{i}.mlp.c_fc.weight", down="*h.{i}.mlp.c_proj.weight", norm="pre", transpose=True
        ),
        activation_keys=("activation_function",),
        d_keys=("n_embd",),
        m_keys=("n_inner",),
        layer_keys=("n_layer",),
    ),
    "gpt_neox": Family(
        name="gpt_neox",
        layout=Layout(
            up="*layers.{i}.mlp.dense_h_to_4h.weight",
            down="*layers.{i}.mlp.dense_4h_to_h.weight",
            norm="pre",
        ),
    ),
    "opt": Family(
        name="opt",
        layout=Layout(up="*layers.{i}.fc1.weight", down="*layers.{i}.fc2.weight"),
        activation_keys=("activation_function",),
        m_keys=("ffn_dim",),
        norm=_opt_norm,
    ),
    "t5": Family(
        name="t5",
        # Read from feed_forward_proj by _t5; this is the v1.0 layout.
        layout=Layout(
            up="*block.{i}.layer.*.DenseReluDense.wi.weight",
            down="*block.{i}.layer.*.DenseReluDense.wo.weight",
        ),
        d_keys=("d_model",),
        m_keys=("d_ff",),
        layer_keys=(),
        adapt=_t5,
    ),
    "llama": _LLAMA,
    "mistral": _LLAMA,
    "qwen2": _LLAMA,
    "qwen3": _LLAMA,
    "gemma": _GEMMA,
    "gemma2": _GEMMA,
    "gemma3_text": _GEMMA,
}
FAMILIES["mt5"] = FAMILIES["umt5"] = FAMILIES["t5"]


def supported_model_types() -> list[str]:
    """The ``model_type`` values the scan reads without a user layout."""
    return sorted(FAMILIES)
