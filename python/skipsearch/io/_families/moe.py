"""Mixture-of-experts decoders: Mixtral, Qwen2-MoE, Qwen3-MoE, DeepSeek-V2/V3/V4,
GraniteMoE and gpt-oss.

An MoE layer computes ``x + sum_e p_e(x) f_e(x)`` (plus, where the model has
one, a shared expert's term): the router's weights ``p_e(x)`` depend on the
input and several experts are summed, so no single block ``x + f(x)`` is
the layer. The scan decides each expert's own block ``x + f_e(x)``, one row
per expert, and every row says so.

Tensor names and config keys are taken from Hugging Face transformers
(``src/transformers/models/<model>/modeling_<model>.py``, ``modular_*.py``
and ``configuration_<model>.py``; ``src/transformers/conversion_mapping.py``
for the fused expert tensors that transformers v5 writes) and from public
checkpoints' ``model.safetensors.index.json`` files; the tests
(``tests/test_families_moe.py``) name each source.

Every MoE family reads both forms of its routed experts:

- per expert, ``...experts.{e}.<proj>.weight`` (what transformers v4 and
  the original releases write), and
- fused, ``...mlp.experts.gate_up_proj`` ``[E, 2m, d]`` (``[W_gate; W_up]``
  per expert: ``chunk(2, dim=-1)`` gives gate then up) with
  ``...mlp.experts.down_proj`` ``[E, d, m]`` (transformers v5's
  ``MergeModulelist`` + ``Concatenate(dim=1)`` of the per-expert tensors).

Both are optional parts; the layer count of the stack, checked over the
union of the parts found, requires one of them (or a dense MLP) in every
layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from skipsearch.io.layouts import Family, Part, config_int, config_number, integer, llama_names

__all__ = ["DEEPSEEK_V4_REASON", "FAMILIES", "GPT_OSS_REASON"]

#: Every expert row's caveat: what the verdict is about.
_PER_EXPERT = (
    "the verdict is for this expert's own block x + f_e(x), not for the layer: the routing "
    "weights p_e(x) depend on x and the layer adds several experts' outputs, so an expert "
    "whose block is (or is not) absorbable says nothing direct about the layer"
)


def _fmt(value: float) -> str:
    return f"{value:g}"


@dataclass(frozen=True)
class _DeepseekForm:
    """DeepSeek's MoE layer, with its ``routed_scaling_factor`` (default as
    the config class has it: 1.0 for V2, 2.5 for V3)."""

    default_scale: float

    def __call__(self, config: dict[str, Any]) -> str:
        s = _fmt(config_number(config, "routed_scaling_factor", self.default_scale))
        return (
            f"x + s sum_e p_e(x) f_e(x) + f_s(x) with s = routed_scaling_factor = {s}: routed "
            "SwiGLU experts f_e weighted by the router's top-k weights p_e, plus the shared "
            "experts f_s (n_shared_experts of them fused into one SwiGLU MLP) ungated, all on "
            "RMSNorm(x)"
        )


def _granitemoe_form(config: dict[str, Any]) -> str:
    """GraniteMoE's MoE layer, with its ``residual_multiplier``."""
    a = _fmt(config_number(config, "residual_multiplier", 1.0))
    return (
        f"x + a sum_e p_e(x) f_e(x) with a = residual_multiplier = {a}: SwiGLU experts "
        "f_e(x) = output_linear[e] (silu(g) * u), [g; u] = input_linear[e] RMSNorm(x), weighted "
        "by the top-k softmax router weights p_e"
    )


@dataclass(frozen=True)
class _QwenSparseLayers:
    """The layers of a Qwen2-MoE / Qwen3-MoE model that hold experts (``sparse``)
    or a dense MLP: layer ``i`` is sparse when ``i`` is not in
    ``mlp_only_layers``, ``num_experts > 0`` and ``(i + 1) %
    decoder_sparse_step == 0`` (``Qwen2MoeDecoderLayer.__init__``;
    defaults as the config classes have them: step 1, no dense-only
    layers). None when the config's values are not what that rule reads."""

    sparse: bool

    def __call__(self, config: dict[str, Any], layers: int) -> Optional[frozenset[int]]:
        step = config.get("decoder_sparse_step", 1)
        dense_only = config.get("mlp_only_layers") or []
        experts = config_int(config, "num_experts")
        if integer(step) is None or step < 1 or not isinstance(dense_only, list) or experts is None:
            return None
        sparse = {
            i for i in range(layers) if i not in dense_only and experts > 0 and (i + 1) % step == 0
        }
        return frozenset(sparse if self.sparse else set(range(layers)) - sparse)


@dataclass(frozen=True)
class _DeepseekSparseLayers:
    """The layers of a DeepSeek-V2/V3 model that hold experts (``sparse``) or
    a dense MLP: layer ``i`` is sparse when ``n_routed_experts`` is set, ``i
    >= first_k_dense_replace`` and ``i % moe_layer_freq == 0`` (the
    DeepSeek decoder layer; ``moe_layer_freq`` defaults to 1). None when
    the config's values are not what that rule reads."""

    sparse: bool

    def __call__(self, config: dict[str, Any], layers: int) -> Optional[frozenset[int]]:
        first = config.get("first_k_dense_replace", 0)
        freq = config.get("moe_layer_freq", 1)
        if integer(first) is None or integer(freq) is None:
            return None
        if freq < 1 or first < 0:
            return None
        routed = config.get("n_routed_experts") is not None
        sparse = {i for i in range(layers) if routed and i >= first and i % freq == 0}
        return frozenset(sparse if self.sparse else set(range(layers)) - sparse)


def _experts(  # noqa: PLR0913 - the keyword-only fields of a registry entry
    kind: str,
    base: str,
    names: tuple[str, str, str],
    *,
    m_keys: tuple[str, ...],
    experts_keys: tuple[str, ...],
    form: Any,
    note: Any,
    activation: str = "silu",
    fused_base: Optional[str] = None,
    layers: Any = None,
    undecided: Optional[str] = None,
) -> tuple[Part, Part]:
    """The two forms of a family's routed experts: one tensor per expert
    (``names`` = gate, up, down under ``base.experts.{e}.``) and the fused
    3-D tensors under ``fused_base`` (default ``*layers.{i}.mlp.experts.``)."""
    gate, up, down = names
    common: dict[str, Any] = dict(
        kind=kind,
        activation=activation,
        m_keys=m_keys,
        experts_keys=experts_keys,
        form=form,
        note=note,
        optional=True,
        layers=layers,
        undecided=undecided,
    )
    per_expert = Part(
        up=f"{base}experts.{{e}}.{up}.weight",
        gate=f"{base}experts.{{e}}.{gate}.weight",
        down=f"{base}experts.{{e}}.{down}.weight",
        **common,
    )
    fused_at = fused_base or "*layers.{i}.mlp.experts."
    fused = Part(
        up=f"{fused_at}gate_up_proj",
        down=f"{fused_at}down_proj",
        fused="gate_up",
        experts=True,
        **common,
    )
    return per_expert, fused


def _sparse(
    rule: Callable[..., Any], dense_note: str, experts_keys: tuple[str, ...], form: Any
) -> tuple[Part, Part, Part]:
    """A decoder whose layers hold, as ``rule(sparse=...)`` says, either a
    dense SwiGLU MLP (``LlamaMLP``'s names, ``intermediate_size`` wide) or
    routed experts with the same names (``moe_intermediate_size`` wide), in
    both forms of :func:`_experts`."""
    return (
        _swiglu(
            "mlp",
            "*layers.{i}.mlp.",
            ("intermediate_size",),
            "x + f(x)",
            dense_note,
            rule(sparse=False),
        ),
        *_experts(
            "expert",
            "*layers.{i}.mlp.",
            ("gate_proj", "up_proj", "down_proj"),
            m_keys=("moe_intermediate_size",),
            experts_keys=experts_keys,
            form=form,
            note=_PER_EXPERT,
            layers=rule(sparse=True),
        ),
    )


def _swiglu(
    kind: str,
    prefix: str,
    m_keys: tuple[str, ...],
    form: Any,
    note: str,
    layers: Any = None,
    **fields: Any,
) -> Part:
    """An optional SwiGLU MLP with ``LlamaMLP``'s names under ``prefix``: a
    dense layer's MLP or a shared expert."""
    return Part(
        kind=kind,
        **llama_names(prefix),
        activation="silu",
        m_keys=m_keys,
        form=form,
        note=note,
        optional=True,
        layers=layers,
        **fields,
    )


# -- Mixtral ---------------------------------------------------------------------------------------

_MIXTRAL_FORM = (
    "x + sum_e p_e(x) f_e(x): a mixture of SwiGLU experts f_e(x) = W_down (silu(W_gate x) * "
    "W_up x) (w2, w1, w3 per expert, or the fused gate_up_proj and down_proj) on "
    "RMSNorm(x), p_e the softmax router weights of the top-k experts (renormalized), 0 for the "
    "others"
)
_MIXTRAL = Family(
    name="mixtral",
    parts=_experts(
        "expert",
        "*layers.{i}.block_sparse_moe.",
        ("w1", "w3", "w2"),
        m_keys=("intermediate_size",),
        experts_keys=("num_local_experts", "num_experts"),
        form=_MIXTRAL_FORM,
        note=_PER_EXPERT,
    ),
)

# -- Qwen2-MoE / Qwen3-MoE ------------------------------------------------------------------------

_QWEN_DENSE_NOTE = (
    "a dense layer of a mixture-of-experts model (mlp_only_layers, or a layer decoder_sparse_step "
    "skips): the block x + f(x) is the layer's FFN with its residual"
)
_QWEN2_FORM = (
    "x + sum_e p_e(x) f_e(x) + sigmoid(w_g . x) f_s(x): routed SwiGLU experts f_e weighted by the "
    "top-k softmax router weights p_e, plus the shared expert f_s behind its sigmoid "
    "shared_expert_gate, all on RMSNorm(x)"
)
_QWEN2_SHARED_NOTE = (
    "the verdict is for the shared expert's own block x + f_s(x), not for the layer: the model "
    "scales f_s(x) by sigmoid(w_g . x), which depends on x, and adds the routed experts' "
    "outputs sum_e p_e(x) f_e(x)"
)
_QWEN2_MOE = Family(
    name="qwen2_moe",
    parts=(
        *_sparse(_QwenSparseLayers, _QWEN_DENSE_NOTE, ("num_experts",), _QWEN2_FORM),
        _swiglu(
            "shared_expert",
            "*layers.{i}.mlp.shared_expert.",
            ("shared_expert_intermediate_size",),
            _QWEN2_FORM,
            _QWEN2_SHARED_NOTE,
            # Qwen2MoeSparseMoeBlock always has its shared expert.
            _QwenSparseLayers(sparse=True),
        ),
    ),
)

_QWEN3_FORM = (
    "x + sum_e p_e(x) f_e(x): routed SwiGLU experts f_e on RMSNorm(x), weighted by the top-k "
    "softmax router weights p_e (renormalized when norm_topk_prob), no shared expert"
)
_QWEN3_MOE = Family(
    name="qwen3_moe",
    parts=_sparse(
        _QwenSparseLayers, _QWEN_DENSE_NOTE, ("num_experts", "num_local_experts"), _QWEN3_FORM
    ),
)

# -- DeepSeek-V2 / V3 -----------------------------------------------------------------------------

_DEEPSEEK_SHARED_NOTE = (
    "the verdict is for the shared experts' own block x + f_s(x), not for the layer, which also "
    "adds the routed experts' outputs s sum_e p_e(x) f_e(x)"
)
_DEEPSEEK_DENSE_NOTE = (
    "a dense layer (one of the first first_k_dense_replace layers): the block x + f(x) is the "
    "layer's FFN with its residual"
)


@dataclass(frozen=True)
class _SharedWidth:
    """The width of DeepSeek's shared experts, ``moe_intermediate_size *
    n_shared_experts`` (DeepseekV2Moe / DeepseekV3MoE), with
    ``n_shared_experts`` defaulting as the config class does (a dataclass,
    so that the family pickles and compares by value)."""

    default: int

    def __str__(self) -> str:
        return f"moe_intermediate_size * n_shared_experts (n_shared_experts default {self.default})"

    def __call__(self, config: dict[str, Any]) -> Optional[int]:
        width = config_int(config, "moe_intermediate_size")
        if width is None:
            return None
        if config.get("n_shared_experts") is None:
            return width * self.default
        count = config_int(config, "n_shared_experts")
        return None if count is None or count < 1 else width * count


def _deepseek(name: str, shared_width: _SharedWidth, form: _DeepseekForm) -> Family:
    return Family(
        name=name,
        parts=(
            *_sparse(
                _DeepseekSparseLayers,
                _DEEPSEEK_DENSE_NOTE,
                ("n_routed_experts", "num_local_experts", "num_experts"),
                form,
            ),
            _swiglu(
                "shared_expert",
                "*layers.{i}.mlp.shared_experts.",
                (),
                form,
                _DEEPSEEK_SHARED_NOTE,
                m_rule=shared_width,
            ),
        ),
    )


# -- GraniteMoE ------------------------------------------------------------------------------------

_GRANITEMOE_NOTE = (
    "the verdict is for this expert's own block x + a f_e(x) (a = residual_multiplier), not for "
    "the layer: the routing weights p_e(x) depend on x and the layer adds several experts' outputs"
)
_GRANITEMOE = Family(
    name="granitemoe",
    parts=(
        Part(
            kind="expert",
            # GraniteMoeParallelExperts: weight [E, out, in]; input_linear's
            # output is chunk(2, dim=-1) -> (gate, up), activation on the first.
            up="*layers.{i}.block_sparse_moe.input_linear.weight",
            down="*layers.{i}.block_sparse_moe.output_linear.weight",
            fused="gate_up",
            experts=True,
            activation="silu",
            m_keys=("intermediate_size",),
            experts_keys=("num_local_experts",),
            scale_keys=("residual_multiplier",),
            form=_granitemoe_form,
            note=_GRANITEMOE_NOTE,
        ),
    ),
)

# -- gpt-oss ---------------------------------------------------------------------------------------

GPT_OSS_REASON = (
    "gpt-oss's experts compute (clamp(u, -L, L) + 1) * g * sigmoid(alpha g) with "
    "g = min(gate, L) (alpha = 1.702, L = swiglu_limit = 7): the clamps and the +1 on the up "
    "projection make it no gated activation skipsearch has a theorem for"
)
_GPT_OSS = Family(
    name="gpt_oss",
    parts=(
        Part(
            kind="expert",
            # GptOssExperts: gate_up_proj [E, d, 2m] stored (in, out), gate at
            # even and up at odd columns (gate_up[..., ::2], gate_up[..., 1::2]);
            # down_proj [E, m, d]; biases gate_up_proj_bias, down_proj_bias.
            up="*layers.{i}.mlp.experts.gate_up_proj",
            down="*layers.{i}.mlp.experts.down_proj",
            fused="interleaved",
            experts=True,
            transpose=True,
            activation="silu",
            m_keys=("intermediate_size",),
            experts_keys=("num_local_experts", "num_experts"),
            form=(
                "x + sum_e p_e(x) f_e(x): experts f_e(x) = W_down (clamped SwiGLU with (up + 1)) "
                "+ b_down on RMSNorm(x), p_e the softmax of the top-k router logits"
            ),
            note=_PER_EXPERT,
            undecided=GPT_OSS_REASON,
        ),
    ),
)

# -- DeepSeek-V4 -----------------------------------------------------------------------------------

#: Why no DeepSeek-V4 block is decided (modeling_deepseek_v4.py:
#: DeepseekV4DecoderLayer.forward, DeepseekV4HyperConnection, DeepseekV4MLP
#: and DeepseekV4Experts._apply_gate; DeepSeek's inference/model.py,
#: Block.hc_pre/hc_post and Expert.forward).
DEEPSEEK_V4_REASON = (
    "DeepSeek-V4's residual is a hyper-connection over hc_mult streams X_j: the layer computes "
    "X'_k = post_k(X) F(x) + sum_j H_res(X)[j, k] X_j with x = RMSNorm(sum_j pre_j(X) X_j), "
    "where pre, post and the Sinkhorn-normalised H_res depend on the token, so F's skip is no "
    "fixed linear map of its input and no theorem applies (docs/theory.md section 4.6; the "
    "clamped SwiGLU of its experts, silu(min(g, L)) * clamp(u, -L, L) with L = swiglu_limit, is "
    "not the obstacle)"
)


def _deepseek_v4_form(config: dict[str, Any]) -> str:
    s = _fmt(config_number(config, "routed_scaling_factor", 1.5))
    n = config.get("hc_mult", 4)
    return (
        f"X'_k = post_k(X) F(x) + sum_j H_res(X)[j, k] X_j on hc_mult = {n} streams (a "
        "manifold-constrained hyper-connection), x = RMSNorm(sum_j pre_j(X) X_j), F(x) = s sum_e "
        f"p_e(x) f_e(x) + f_s(x) with s = routed_scaling_factor = {s}: routed clamped-SwiGLU "
        "experts f_e under the top-k (or hashed) router weights p_e, plus the shared expert f_s"
    )


_DEEPSEEK_V4_SHARED_NOTE = (
    "the shared expert's own block: the layer adds the routed experts' outputs and mixes the "
    "hc_mult residual streams around it"
)
_DEEPSEEK_V4 = Family(
    name="deepseek_v4",
    parts=(
        # Routed experts: DeepSeek's release names (w1 gate, w3 up, w2 down
        # per expert) and transformers' fused gate_up_proj [E, 2m, d]
        # (gate first, Concatenate(dim=1) of [w1, w3]) with down_proj
        # [E, d, m]. Every layer is a mixture of experts.
        *_experts(
            "expert",
            "*layers.{i}.ffn.",
            ("w1", "w3", "w2"),
            m_keys=("moe_intermediate_size", "intermediate_size"),
            experts_keys=("n_routed_experts", "num_local_experts"),
            form=_deepseek_v4_form,
            note=_PER_EXPERT,
            undecided=DEEPSEEK_V4_REASON,
        ),
        # The shared expert (DeepseekV4MLP, moe_intermediate_size wide; the
        # reference asserts n_shared_experts == 1): transformers' names,
        # then DeepSeek's.
        _swiglu(
            "shared_expert",
            "*layers.{i}.mlp.shared_experts.",
            ("moe_intermediate_size", "intermediate_size"),
            _deepseek_v4_form,
            _DEEPSEEK_V4_SHARED_NOTE,
            undecided=DEEPSEEK_V4_REASON,
        ),
        Part(
            kind="shared_expert",
            up="*layers.{i}.ffn.shared_experts.w3.weight",
            gate="*layers.{i}.ffn.shared_experts.w1.weight",
            down="*layers.{i}.ffn.shared_experts.w2.weight",
            activation="silu",
            m_keys=("moe_intermediate_size", "intermediate_size"),
            form=_deepseek_v4_form,
            note=_DEEPSEEK_V4_SHARED_NOTE,
            optional=True,
            undecided=DEEPSEEK_V4_REASON,
        ),
    ),
)

#: ``model_type`` -> :class:`~skipsearch.io.layouts.Family` for the MoE models.
FAMILIES: dict[str, Family] = {
    "mixtral": _MIXTRAL,
    "qwen2_moe": _QWEN2_MOE,
    "qwen3_moe": _QWEN3_MOE,
    # DeepseekV2Config: n_shared_experts 2, routed_scaling_factor 1.0;
    # DeepseekV3Config: n_shared_experts 1, routed_scaling_factor 2.5.
    "deepseek_v2": _deepseek("deepseek_v2", _SharedWidth(2), _DeepseekForm(1.0)),
    "deepseek_v3": _deepseek("deepseek_v3", _SharedWidth(1), _DeepseekForm(2.5)),
    "granitemoe": _GRANITEMOE,
    "gpt_oss": _GPT_OSS,
    "deepseek_v4": _DEEPSEEK_V4,
}
