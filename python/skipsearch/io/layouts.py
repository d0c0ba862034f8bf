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

Activation names from ``config.json`` are mapped explicitly (docs/theory.md §2.1):
flip-linear ones (``relu``, ``gelu``, ``gelu_new``, ``gelu_pytorch_tanh``,
``silu``, ...) through the activation registry, and a gated block's
activation to its gated registry entry (``silu`` -> ``swiglu``, ``gelu*``
-> ``geglu``, ``relu`` -> ``reglu``). An unknown name is an error that lists
the known ones.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

from skipsearch._types import Norm
from skipsearch.activations import GATED_ENTRIES, Activation, get_activation
from skipsearch.io.checkpoints import CheckpointError

__all__ = [
    "FAMILIES",
    "FUSED_LAYOUTS",
    "HYPER_CONNECTION_SCOPE",
    "NORM_SCOPES",
    "Family",
    "Layout",
    "Part",
    "Times",
    "config_flag",
    "config_int",
    "config_number",
    "finite_number",
    "integer",
    "llama_names",
    "norm_scope",
    "supported_model_types",
]

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


def norm_scope(norm: Optional[Norm], form: str) -> str:
    """:data:`NORM_SCOPES` of ``norm``, worded as the ``form`` words the
    norm: an RMSNorm model's scope says ``pre-norm`` and ``RMSNorm(x)``
    where a LayerNorm model's says ``pre-LN`` and ``LN(x)``."""
    scope = NORM_SCOPES[norm]
    if "RMSNorm" not in form:
        return scope
    return (
        scope.replace("pre-LN", "pre-norm")
        .replace("post-LN", "post-norm")
        .replace("LN(", "RMSNorm(")
        .replace("LayerNorm", "RMSNorm")
    )


#: The scope of a block whose residual is a hyper-connection, whatever the
#: norm's placement (docs/theory.md section 4.6).
HYPER_CONNECTION_SCOPE = (
    "FFN sub-layer between hyper-connection streams: the model computes X'_k = sum_j "
    "H_res[j, k] X_j + H_post[k] f(norm(sum_j H_pre[j] X_j)), the maps H depending on the token "
    "unless their dynamic part is 0; the verdict concerns the block on the stacked streams, "
    "X -> (H_res^T (x) I) X + H_post (x) f(H_pre^T X), for the FFN's own input"
)


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
        return Layout.regex_of(pattern)

    @staticmethod
    def regex_of(pattern: str) -> re.Pattern[str]:
        """``pattern`` as an anchored regular expression with named groups:
        ``layer`` for ``{i}``, ``expert`` for ``{e}``, ``s0``, ``s1``, ...
        for the ``*`` parts."""
        out, star = [], 0
        for part in re.split(r"(\{i\}|\{e\}|\*)", pattern):
            if part == "{i}":
                out.append(r"(?P<layer>[0-9]+)")
            elif part == "{e}":
                out.append(r"(?P<expert>[0-9]+)")
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
        for part in re.split(r"(\{i\}|\{e\}|\*)", pattern):
            if part == "{i}":
                out.append(groups["layer"])
            elif part == "{e}":
                out.append(groups.get("expert") or "")
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


#: How a fused projection holds ``W_gate`` and ``W_up`` along its output axis:
#: ``"gate_up"`` is ``[W_gate; W_up]`` (Phi-3's ``gate_up_proj``, the 3-D
#: expert tensors of recent transformers), ``"up_gate"`` is ``[W_up; W_gate]``,
#: ``"interleaved"`` puts gate rows at even and up rows at odd positions
#: (gpt-oss).
FUSED_LAYOUTS = ("gate_up", "up_gate", "interleaved")

#: A config key's value, or a rule computing it from the (sub-)config.
SizeRule = Callable[[dict[str, Any]], Optional[int]]


@dataclass(frozen=True)
class Part:
    """One kind of FFN block of a family: the dense MLP, a routed expert, a
    shared expert, a vision tower's MLP, ...

    Parameters
    ----------
    kind : str
        What the block is, shown in every row: ``"mlp"``, ``"expert"``,
        ``"shared_expert"``, ...
    up, down, gate : str
        Key patterns as in :class:`Layout`; ``{e}`` may stand for the expert
        index (one block per expert). With ``fused``, ``up`` names the
        fused gate/up tensor and ``gate`` is None.
    fused : {"gate_up", "up_gate", "interleaved"}, optional
        How the ``up`` tensor holds ``W_gate`` and ``W_up`` (see
        :data:`FUSED_LAYOUTS`).
    experts : bool
        The tensors are 3-D, ``[E, out, in]`` (``[E, in, out]`` when
        ``transpose``): one block per leading index.
    transpose : bool
        Stored ``(in, out)`` rather than ``torch.nn.Linear``'s ``(out, in)``.
    stack : str, optional
        The stack or tower (``"encoder"``, ``"decoder"``, ``"vision"``,
        ``"text"``, ...); None for a model's only stack.
    config : tuple of str
        The sub-config its keys are read from (``("vision_config",)``);
        empty for the top level.
    activation_keys : tuple of str
        Config keys of the activation, tried in order.
    activation : str, optional
        The activation when every key is absent or null (the default the
        transformers config class applies), or the one the model's code
        fixes when ``activation_keys`` is empty (BLOOM, MPT).
    d_keys, m_keys, layer_keys : tuple of str
        Config keys of the model width, the hidden width and the number of
        layers of the stack; ``m_rule`` computes the hidden width when none
        of ``m_keys`` is set (e.g. ``4 * hidden_size``), ``d_rule`` likewise.
        A size whose keys are all absent or null, with no rule, is an error;
        with empty keys (and no rule) it is read from the first ``W_up``.
    experts_keys : tuple of str
        Config keys of the number of experts per layer, checked when set.
    norm : {"pre", "post"} or callable, optional
        LayerNorm placement, or a rule reading it from the config.
    form : str or callable
        What the model computes around this FFN, in words and symbols, for
        the report (``"x + f(x)"``, ``"x + attn(LN x) + f(LN x)"``, ...).
    note : str or callable, optional
        What else a reader of the verdict must know (shared layers, norms
        inside the residual branch, routing).
    undecided : str, optional
        The block's form is outside every theorem skipsearch applies: every
        block of the part is ``"undecided"`` with this reason.
    scale_keys : tuple of str
        Config keys of a residual multiplier ``a``: the model computes
        ``x + a f(x)``, decided as that block.
    scale_rule : callable, optional
        ``scale_rule(config)``, used when none of ``scale_keys`` is present:
        ``(label, value)`` of the multiplier (a GGUF key read with
        llama.cpp's rules, or MiniCPM's default with the formula as its
        label), or None for none. It raises ``CheckpointError`` for
        metadata it cannot read.
    repeat_keys : tuple of str
        Config keys of how many layers apply this one block (ALBERT's shared
        layer); the layer count is not checked against the stack.
    layers : callable, optional
        ``layers(config, num_layers)``: the layers that hold this kind of
        block, by the config (a mixture-of-experts model's sparse layers,
        its dense ones), or None for no rule; the blocks found (of this
        ``kind`` and ``stack``, in whichever part) must be in exactly those
        layers.
    optional : bool
        The part may be absent from a checkpoint (MoE layers of a model
        with dense ones only, a tower the checkpoint lacks).
    """

    kind: str
    up: str
    down: str
    gate: Optional[str] = None
    fused: Optional[str] = None
    experts: bool = False
    transpose: bool = False
    stack: Optional[str] = None
    config: tuple[str, ...] = ()
    activation_keys: tuple[str, ...] = ("hidden_act",)
    activation: Optional[str] = None
    d_keys: tuple[str, ...] = ("hidden_size",)
    m_keys: tuple[str, ...] = ("intermediate_size",)
    layer_keys: tuple[str, ...] = ("num_hidden_layers",)
    d_rule: Optional[SizeRule] = field(default=None, repr=False)
    m_rule: Optional[SizeRule] = field(default=None, repr=False)
    experts_keys: tuple[str, ...] = ()
    norm: Union[Norm, Callable[[dict[str, Any]], Optional[Norm]], None] = "pre"
    form: Union[str, Callable[[dict[str, Any]], str]] = "x + f(x)"
    note: Union[str, Callable[[dict[str, Any]], Optional[str]], None] = None
    undecided: Optional[str] = None
    scale_keys: tuple[str, ...] = ()
    scale_rule: Optional[Callable[[dict[str, Any]], Optional[tuple[str, Any]]]] = field(
        default=None, repr=False
    )
    repeat_keys: tuple[str, ...] = ()
    optional: bool = False
    layers: Optional[Callable[[dict[str, Any], int], Optional[frozenset[int]]]] = field(
        default=None, repr=False
    )

    def __post_init__(self) -> None:
        if self.fused is not None and self.fused not in FUSED_LAYOUTS:
            raise ValueError(
                f"Part fused must be one of {FUSED_LAYOUTS} or None, got {self.fused!r}"
            )
        if self.fused is not None and self.gate is not None:
            raise ValueError("Part with a fused gate/up tensor names no separate gate pattern")
        # Checks the patterns ({i} once, no more '*' than up).
        self.layout()
        expert_up = self.up.count("{e}")
        for name in ("up", "down", "gate"):
            value = getattr(self, name)
            if value is not None and (value.count("{e}") > 1 or (value.count("{e}") != expert_up)):
                raise ValueError(
                    f"Part {name} pattern {value!r} must hold {{e}} (the expert index) as often as "
                    f"the up pattern does, at most once"
                )
        if expert_up and self.experts:
            raise ValueError("Part: experts are either named by {e} or stacked in 3-D tensors")

    def layout(self, activation: Union[str, Activation, None] = None) -> Layout:
        """The part's patterns as a :class:`Layout` (the fused gate is read
        from the ``up`` tensor)."""
        return Layout(
            up=self.up,
            down=self.down,
            gate=self.gate,
            activation=activation,
            norm=None,
            transpose=self.transpose,
        )

    def sub_config(self, config: dict[str, Any], where: str) -> dict[str, Any]:
        """The (sub-)config the part's keys are read from."""
        out = config
        for key in self.config:
            value = out.get(key)
            if value is None:
                return {}
            if not isinstance(value, dict):
                raise CheckpointError(f"{where}: {key} must be an object, got {value!r}")
            out = value
        return out

    @property
    def gated(self) -> bool:
        return self.gate is not None or self.fused is not None

    def resolve(
        self, config: dict[str, Any], where: str, read_activation: bool = True
    ) -> dict[str, Any]:
        """Activation, sizes, norm, form and note of the part under ``config``."""
        sub = self.sub_config(config, where)
        at = where + (f" ({'.'.join(self.config)})" if self.config else "")
        act_name: Any = None
        act_key: Optional[str] = None
        if read_activation:
            act_key, act_name = _first(sub, self.activation_keys)
            if act_key is None:
                act_name = self.activation
            if act_name is None:
                raise CheckpointError(
                    f"{at} has none of {', '.join(self.activation_keys)}: the scan reads the "
                    f"activation of the {self.kind} blocks from it"
                )
        d_key, d = _part_size(sub, self.d_keys, self.d_rule, at)
        m_key, m = _part_size(sub, self.m_keys, self.m_rule, at)
        layers, layer_key = None, None
        if not self.repeat_keys:
            layer_key, layers = _first(sub, self.layer_keys)
            if layer_key is not None:
                layers = _size(sub, (layer_key,), at)
        repeat = None
        if self.repeat_keys:
            key, _ = _first(sub, self.repeat_keys)
            repeat = _size(sub, (key,), at) if key is not None else None
        experts, experts_key = None, None
        if self.experts_keys:
            experts_key, _ = _first(sub, self.experts_keys)
            experts = _size(sub, (experts_key,), at) if experts_key is not None else None
        scale: Optional[float] = None
        scale_key, value = _first(sub, self.scale_keys)
        if scale_key is None and self.scale_rule is not None:
            found = self.scale_rule(sub)
            if found is not None:
                scale_key, value = found
        if scale_key is not None:
            scale = finite_number(value)
            if scale is None or scale == 0:
                raise CheckpointError(
                    f"{at}: {scale_key} must be a finite nonzero number, got {value!r}"
                )
            if scale == 1.0:
                scale = None
        norm = self.norm(sub if self.config else config) if callable(self.norm) else self.norm
        form = self.form(sub if self.config else config) if callable(self.form) else self.form
        note = self.note(sub if self.config else config) if callable(self.note) else self.note
        act = config_activation(act_name, gated=self.gated, where=at) if read_activation else None
        sizes = ", ".join(
            f"{k}={v}" for k, v in ((d_key, d), (m_key, m)) if k is not None and v is not None
        )
        layer_set = None
        if self.layers is not None and layers is not None:
            layer_set = self.layers(sub, layers)
        return dict(
            layer_set=layer_set,
            activation=act,
            hidden_act=act_name,
            d=d,
            m=m,
            layers=layers,
            layer_key=layer_key,
            experts=experts,
            experts_key=experts_key,
            repeat=repeat,
            scale=scale,
            scale_key=scale_key,
            norm=norm,
            form=form,
            note=note,
            sizes=sizes,
        )


@dataclass(frozen=True)
class Family:
    """A model family: the parts (kinds of FFN block) it has, and its
    ``config.json`` keys.

    ``Family(name, layout, ...)`` with one :class:`Layout` and the keys
    describes a model with one kind of block; ``parts`` lists several
    (:class:`Part`). ``activation_keys`` are tried in order (Gemma's
    ``hidden_activation`` before ``hidden_act``); ``d_keys``, ``m_keys`` and
    ``layer_keys`` give the model width, the hidden width and the number of
    FFN blocks.
    """

    name: str
    layout: Optional[Layout] = None
    activation_keys: tuple[str, ...] = ("hidden_act",)
    d_keys: tuple[str, ...] = ("hidden_size",)
    m_keys: tuple[str, ...] = ("intermediate_size",)
    layer_keys: tuple[str, ...] = ("num_hidden_layers",)
    norm: Union[Norm, Callable[[dict[str, Any]], Norm]] = "pre"
    # Rewrites the config before reading (T5: feed_forward_proj).
    adapt: Optional[Callable[[dict[str, Any]], tuple[Layout, Optional[str]]]] = field(
        default=None, repr=False
    )
    parts: tuple[Part, ...] = ()
    m_rule: Optional[SizeRule] = field(default=None, repr=False)
    form: Union[str, Callable[[dict[str, Any]], str]] = "x + f(x)"
    note: Union[str, Callable[[dict[str, Any]], Optional[str]], None] = None

    def __post_init__(self) -> None:
        if (self.layout is None) == (not self.parts):
            raise ValueError(f"Family {self.name!r} needs a layout or parts, not both")

    def resolve_parts(self, config: dict[str, Any]) -> tuple[Part, ...]:
        """The parts for ``config`` (T5 reads its layout from ``feed_forward_proj``)."""
        if self.parts:
            return self.parts
        layout, act_name = self.layout, None
        if self.adapt is not None:
            layout, act_name = self.adapt(config)
        assert layout is not None
        return (
            Part(
                kind="mlp",
                up=layout.up,
                down=layout.down,
                gate=layout.gate,
                transpose=layout.transpose,
                activation_keys=() if act_name is not None else self.activation_keys,
                activation=act_name,
                d_keys=self.d_keys,
                m_keys=self.m_keys,
                layer_keys=self.layer_keys,
                m_rule=self.m_rule,
                norm=self.norm,
                form=self.form,
                note=self.note,
            ),
        )


def finite_number(value: Any) -> Optional[float]:
    """``value`` as a finite float, or None when it is not a number (bools
    are not), is NaN or infinite, or is an integer too large for a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def integer(value: Any) -> Optional[int]:
    """``value`` when it is an integer (bools are not), else None."""
    return None if isinstance(value, bool) or not isinstance(value, int) else value


def config_int(config: dict[str, Any], key: str) -> Optional[int]:
    """``config[key]`` when it is an integer (bools are not), else None
    (absent, null or anything else)."""
    return integer(config.get(key))


def config_flag(
    config: dict[str, Any],
    key: str,
    default: bool,
    where: Optional[str] = None,
    *,
    null_ok: bool = True,
) -> bool:
    """The true/false config key ``key``; ``default`` when it is absent, or
    null unless ``null_ok`` is false (a null is then refused like any other
    value that is not a bool). ``where`` opens the error message.

    Raises
    ------
    CheckpointError
        The value is not true or false.
    """
    value = config.get(key, default)
    if value is None and null_ok:
        return default
    if not isinstance(value, bool):
        at = f"{where}: " if where else ""
        raise CheckpointError(f"{at}{key} must be true or false in config.json, got {value!r}")
    return value


def config_number(
    config: dict[str, Any],
    key: str,
    default: Optional[float] = None,
    *,
    where: str = "config.json",
    positive: bool = False,
    name: Optional[str] = None,
) -> float:
    """``config[key]`` as a finite float (positive when ``positive``);
    ``default`` when it is absent or null and a default is given. ``where``
    opens the error message and ``name`` (default ``key``) names the key in it.

    Raises
    ------
    CheckpointError
        The value is not a finite (positive) number.
    """
    value = config.get(key)
    if value is None and default is not None:
        return float(default)
    number = finite_number(value)
    if number is None or (positive and number <= 0):
        what = "a finite positive number" if positive else "a finite number"
        raise CheckpointError(f"{where}: {name or key} must be {what}, got {value!r}")
    return number


@dataclass(frozen=True)
class Times:
    """A size rule: ``factor`` times the first of ``keys`` the config sets,
    or None when none is a positive integer (e.g. "a null FFN width means 4
    x hidden": ``Times(4, "n_embd")``). A dataclass rather than a lambda, so
    that families pickle and compare by value."""

    factor: int
    keys: Union[str, tuple[str, ...]]

    def __str__(self) -> str:
        keys = (self.keys,) if isinstance(self.keys, str) else self.keys
        return f"{self.factor} * {' or '.join(keys)}"

    def __call__(self, config: dict[str, Any]) -> Optional[int]:
        keys = (self.keys,) if isinstance(self.keys, str) else self.keys
        _, value = _first(config, keys)
        number = integer(value)
        return None if number is None or number < 1 else self.factor * number


def _part_size(
    config: dict[str, Any], keys: tuple[str, ...], rule: Optional[SizeRule], at: str
) -> tuple[Optional[str], Optional[int]]:
    """A part's size and the key (or rule) it came from: the first of
    ``keys`` set, else ``rule``; ``(None, None)`` when neither is given
    (the size is then read from the tensors).

    Raises
    ------
    CheckpointError
        The key's value is not a positive integer, or the keys are all
        absent or null and no rule gives the size.
    """
    key, value = _first(config, keys)
    if key is not None:
        return key, _size(config, (key,), at)
    if rule is not None:
        value = rule(config)
        if value is not None:
            label = f"{keys[0]} (default {rule})" if keys else str(rule)
            return label, value
    if keys:
        raise CheckpointError(
            f"{at}: {' or '.join(keys)} must be a positive integer; it is missing"
        )
    return None, None


def _size(
    config: dict[str, Any], keys: tuple[str, ...], where: str, default: Optional[int] = None
) -> int:
    key, value = _first(config, keys)
    if key is None and default is not None:
        return default
    number = integer(value)
    if number is None or number < 1:
        got = "it is missing" if key is None else f"got {key}={value!r}"
        raise CheckpointError(f"{where}: {' or '.join(keys)} must be a positive integer; {got}")
    return number


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


#: The forms of a sub-layer with its LayerNorm after the residual sum
#: (post-LN) and inside the residual branch (pre-LN).
POST_LN = "LN(x + f(x)) (post-LN: the LayerNorm follows the residual sum)"
PRE_LN = "x + f(LN x) (pre-LN: the LayerNorm is inside the residual branch, before the FFN)"
#: A gated decoder's MLP behind its RMSNorm.
PRE_RMS = "x + f(RMSNorm x) (pre-norm: the RMSNorm is inside the residual branch)"
NORM_FORMS: dict[Norm, str] = {"post": POST_LN, "pre": PRE_LN}


def _bert(norm: Norm, name: str = "bert") -> Family:
    return Family(
        name=name,
        layout=Layout(
            up="*layer.{i}.intermediate.dense.weight",
            down="*layer.{i}.output.dense.weight",
            norm=norm,
        ),
        norm=norm,
        form=NORM_FORMS[norm],
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


def llama_names(prefix: str = "*layers.{i}.mlp.") -> dict[str, Any]:
    """The ``up``, ``gate`` and ``down`` patterns of a gated MLP with LLaMA's
    tensor names (``up_proj``, ``gate_proj``, ``down_proj``) under
    ``prefix``, as keywords of a :class:`Part` or :class:`Layout`."""
    return dict(
        up=prefix + "up_proj.weight",
        gate=prefix + "gate_proj.weight",
        down=prefix + "down_proj.weight",
    )


def _gated(name: str, activation_keys: tuple[str, ...] = ("hidden_act",)) -> Family:
    return Family(
        name=name,
        layout=Layout(**llama_names(), norm="pre"),
        activation_keys=activation_keys,
        form=PRE_RMS,
    )


def _opt_norm(config: dict[str, Any]) -> Norm:
    # A null is refused here, not read as the default.
    before = config_flag(config, "do_layer_norm_before", True, null_ok=False)
    return "pre" if before else "post"


def _opt_form(config: dict[str, Any]) -> str:
    return NORM_FORMS[_opt_norm(config)]


#: The form and note of Gemma 2 and 3, whose MLP sits between two RMSNorms
#: inside the residual branch (``Gemma2DecoderLayer.forward``,
#: transformers ``models/gemma2/modeling_gemma2.py``).
SANDWICH_FORM = "x + RMSNorm_post(f(RMSNorm_pre x)) (pre_ and post_feedforward_layernorm)"
SANDWICH_NOTE = (
    "the model normalizes the MLP's output (post_feedforward_layernorm) before adding it to x; "
    "the verdict concerns y -> y + f(y) for the MLP alone, not the model's residual block"
)

_BERT = _bert("post")
_LLAMA = _gated("llama")
_GEMMA = _gated("gemma", activation_keys=("hidden_activation", "hidden_act"))
_GEMMA2 = Family(
    name="gemma",
    layout=_GEMMA.layout,
    activation_keys=_GEMMA.activation_keys,
    form=SANDWICH_FORM,
    note=SANDWICH_NOTE,
)

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
        # GPT2Config: n_inner None means 4 * n_embd.
        m_rule=Times(4, "n_embd"),
        form=PRE_LN,
    ),
    "opt": Family(
        name="opt",
        layout=Layout(up="*layers.{i}.fc1.weight", down="*layers.{i}.fc2.weight"),
        activation_keys=("activation_function",),
        m_keys=("ffn_dim",),
        norm=_opt_norm,
        form=_opt_form,
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
        form="x + f(RMSNorm x) (pre-norm: T5's LayerNorm scales without centring)",
    ),
    "llama": _LLAMA,
    "mistral": _LLAMA,
    "qwen2": _LLAMA,
    "qwen3": _LLAMA,
    "gemma": _GEMMA,
    "gemma2": _GEMMA2,
    "gemma3_text": _GEMMA2,
}
FAMILIES["mt5"] = FAMILIES["umt5"] = FAMILIES["t5"]


def supported_model_types() -> list[str]:
    """The ``model_type`` values the scan reads without a user layout."""
    return sorted(FAMILIES)


def _merge_families() -> None:
    """Add the families of :mod:`skipsearch.io._families`; a ``model_type``
    defined twice is a bug."""
    from skipsearch.io._families import decoders, encoders, gated, gguf, moe, towers

    for module in (decoders, encoders, gated, gguf, moe, towers):
        twice = sorted(set(FAMILIES) & set(module.FAMILIES))
        if twice:
            raise RuntimeError(f"model_type defined twice: {', '.join(twice)}")
        FAMILIES.update(module.FAMILIES)


_merge_families()
