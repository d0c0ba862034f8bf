"""Dense decoders with gated MLPs: Phi-3, OLMo, OLMo 2, StableLM, Granite,
InternLM2 and Qwen (v1).

Every block is ``W_down (act(W_gate x) * (W_up x))`` with the gate's
activation read from the config (``silu`` -> ``swiglu``). Without inner
biases such a block is not absorbable by the linearization argument; a
checkpoint that carries inner biases (Granite's ``mlp_bias``, Qwen's
``no_bias: false``) is undecided, as for LLaMA.

Sources, per family (tensor names, config keys and their defaults):

- ``phi3``: transformers ``models/phi3/modeling_phi3.py`` (``Phi3MLP``:
  ``gate_up_proj`` of ``2 * intermediate_size`` rows, ``gate, up =
  chunk(2)``, so gate first; no biases) and ``configuration_phi3.py``
  (``hidden_act="silu"``, ``hidden_size=3072``,
  ``intermediate_size=8192``).
- ``olmo``: ``models/olmo/modular_olmo.py`` (``OlmoMLP``: LLaMA's
  projections without biases; ``OlmoLayerNorm`` has no weights) and
  ``configuration_olmo.py`` (``hidden_act="silu"``, ``hidden_size=4096``,
  ``intermediate_size=11008``; Olmo2Config the same).
- ``olmo2``: ``models/olmo2/modular_olmo2.py`` (``Olmo2DecoderLayer``: no
  norm before the MLP, ``post_feedforward_layernorm`` after it, inside the
  residual branch).
- ``stablelm``: ``models/stablelm/modeling_stablelm.py`` (``StableLmMLP``:
  LLaMA's projections, ``bias=False``; ``use_parallel_residual``) and
  ``configuration_stablelm.py`` (``hidden_act="silu"``,
  ``hidden_size=2560``, ``intermediate_size=6912``,
  ``use_parallel_residual=False``; ``use_qkv_bias`` only concerns
  attention).
- ``granite``: ``models/granite/modular_granite.py``
  (``GraniteDecoderLayer``: ``residual + mlp(...) * residual_multiplier``)
  and ``configuration_granite.py`` (``residual_multiplier=1.0``,
  ``mlp_bias=False``, ``hidden_act="silu"``, ``hidden_size=4096``,
  ``intermediate_size=11008``).
- ``internlm2``: the remote code ``modeling_internlm2.py`` of InternLM2
  checkpoints (``InternLM2MLP``: ``w2(act(w1(x)) * w3(x))``, so ``w1`` is
  the gate and ``w3`` the up projection; ``bias=False``).
- ``qwen``: the remote code ``modeling_qwen.py`` of Qwen v1 checkpoints
  (``QWenMLP``: ``c_proj(w1(x) * silu(w2(x)))``, so ``w2`` is the gate and
  ``w1`` the up projection, each ``intermediate_size // 2`` wide, biases when
  ``no_bias`` is false; the activation is fixed to SiLU) and
  ``configuration_qwen.py`` (``hidden_size=4096``, ``intermediate_size=22016``,
  ``no_bias=True``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from skipsearch.io.checkpoints import CheckpointError
from skipsearch.io.layouts import Family, Part, config_flag, integer, llama_names

__all__ = ["FAMILIES"]


def _stablelm_form(config: dict[str, Any]) -> str:
    if config_flag(config, "use_parallel_residual", False):
        return (
            "x + attn(LN x) + f(LN x) (use_parallel_residual: one LayerNorm feeds attention and "
            "the MLP, whose outputs join the residual in the same step)"
        )
    return "x + f(LN x)"


def _stablelm_note(config: dict[str, Any]) -> Optional[str]:
    if config_flag(config, "use_parallel_residual", False):
        return (
            "parallel residual: the model adds attention's output in the same step, so the "
            "verdict concerns y -> y + f(y) for the MLP alone, not the model's layer"
        )
    return None


@dataclass(frozen=True)
class _Default:
    """A size rule: the value the config class gives a size key when
    ``config.json`` omits it (a dataclass, so that families pickle and
    compare by value)."""

    value: int

    def __str__(self) -> str:
        return str(self.value)

    def __call__(self, config: dict[str, Any]) -> int:
        return self.value


@dataclass(frozen=True)
class _QwenWidth:
    """Qwen v1's hidden width: each of ``w1``, ``w2`` is ``intermediate_size
    // 2`` wide (``QWenMLP``), with QWenConfig's default 22016 when the key
    is absent or null."""

    default: int = 22016

    def __str__(self) -> str:
        return f"intermediate_size // 2 (default {self.default} // 2)"

    def __call__(self, config: dict[str, Any]) -> int:
        value = config.get("intermediate_size")
        if value is None:
            value = self.default
        number = integer(value)
        if number is None or number < 2:
            raise CheckpointError(
                "intermediate_size must be an integer >= 2 in config.json (Qwen v1's w1 and w2 "
                f"are intermediate_size // 2 wide), got {value!r}"
            )
        return number // 2


def _sizes(hidden: int, intermediate: int) -> dict[str, Any]:
    """The config class's defaults of ``hidden_size`` and ``intermediate_size``."""
    return dict(d_rule=_Default(hidden), m_rule=_Default(intermediate))


def _llama(hidden: int, intermediate: int, **fields: Any) -> Part:
    """The dense SwiGLU MLP with LLaMA's tensor names (``gate_proj``,
    ``up_proj``, ``down_proj`` under ``layers.{i}.mlp``), ``hidden`` and
    ``intermediate`` the config class's default sizes."""
    return Part(
        kind="mlp", **llama_names(), activation="silu", **_sizes(hidden, intermediate), **fields
    )


_PHI3 = Family(
    name="phi3",
    parts=(
        Part(
            kind="mlp",
            up="*layers.{i}.mlp.gate_up_proj.weight",
            down="*layers.{i}.mlp.down_proj.weight",
            fused="gate_up",
            activation="silu",
            **_sizes(3072, 8192),
            form="x + f(RMSNorm x)",
        ),
    ),
)

_OLMO = Family(
    name="olmo",
    parts=(_llama(4096, 11008, form="x + f(LN x) (LayerNorm without weights or biases)"),),
)

_OLMO2 = Family(
    name="olmo2",
    parts=(
        _llama(
            4096,
            11008,
            norm=None,
            form=(
                "x + RMSNorm(f(x)) (post_feedforward_layernorm inside the residual branch, no norm "
                "before the MLP)"
            ),
            note=(
                "the model normalizes the MLP's output before adding it to x; the verdict concerns "
                "x -> x + f(x) for the MLP alone, not the model's x -> x + RMSNorm(f(x))"
            ),
        ),
    ),
)

_STABLELM = Family(
    name="stablelm",
    parts=(_llama(2560, 6912, form=_stablelm_form, note=_stablelm_note),),
)

_GRANITE = Family(
    name="granite",
    parts=(
        _llama(
            4096,
            11008,
            scale_keys=("residual_multiplier",),
            # The scan writes a = residual_multiplier in: "x + 0.22 * f(RMSNorm x) (...)".
            form="x + f(RMSNorm x)",
            note=(
                "embedding_multiplier, attention_multiplier and logits_scaling act outside the MLP "
                "block"
            ),
        ),
    ),
)

_INTERNLM2 = Family(
    name="internlm2",
    parts=(
        Part(
            kind="mlp",
            up="*layers.{i}.feed_forward.w3.weight",
            gate="*layers.{i}.feed_forward.w1.weight",
            down="*layers.{i}.feed_forward.w2.weight",
            activation="silu",
            form="x + f(RMSNorm x)",
        ),
    ),
)

_QWEN = Family(
    name="qwen",
    parts=(
        Part(
            kind="mlp",
            up="*h.{i}.mlp.w1.weight",
            gate="*h.{i}.mlp.w2.weight",
            down="*h.{i}.mlp.c_proj.weight",
            activation_keys=(),
            activation="silu",
            d_rule=_Default(4096),
            m_keys=(),
            m_rule=_QwenWidth(),
            form="x + f(RMSNorm x)",
        ),
    ),
)

#: ``model_type`` -> :class:`~skipsearch.io.layouts.Family`.
FAMILIES: dict[str, Family] = {
    "phi3": _PHI3,
    "olmo": _OLMO,
    "olmo2": _OLMO2,
    "stablelm": _STABLELM,
    "granite": _GRANITE,
    "internlm2": _INTERNLM2,
    "qwen": _QWEN,
}
