"""GGUF checkpoints (llama.cpp): families keyed by ``"gguf-<architecture>"``.

A GGUF file is read by :class:`skipsearch.io.gguf.GGUFCheckpoint`,
whose config holds the file's metadata under GGUF's own keys
(``<arch>.embedding_length``, ``<arch>.feed_forward_length``,
``<arch>.block_count``, ``<arch>.expert_count``, ...) and whose tensors
keep GGUF's names. The names here are those of ``gguf.constants``
(``TENSOR_NAMES`` of ``MODEL_TENSOR.FFN_UP``, ``FFN_GATE``, ``FFN_DOWN``,
``FFN_UP_EXP``, ``FFN_UP_SHEXP``, ...; ``MODEL_TENSORS`` lists which an
architecture has), checked against the package by the tests; this module
does not import ``gguf``, an optional dependency.

GGUF stores no activation name: each architecture's activation, gate and
residual form are fixed by its graph in llama.cpp (``src/models/<arch>.cpp``,
``build_ffn``/``build_moe_ffn`` in ``src/llama-graph.cpp``):

- ``llama``, ``qwen2``, ``qwen3``: ``LLM_FFN_SILU, LLM_FFN_PAR`` (SwiGLU with
  ``ffn_gate``), after RMSNorm; ``llama`` with ``ffn_*_exps`` is Mixtral's
  MoE (``build_moe_ffn`` with ``LLM_FFN_SILU``), with a shared expert
  ``ffn_*_shexp`` when ``llama.expert_shared_feed_forward_length`` is set
  (Granite MoE shared).
- ``gemma``: ``LLM_FFN_GELU, LLM_FFN_PAR``: GeGLU with ``ggml_gelu``, the
  tanh approximation.
- ``phi3``: ``LLM_FFN_SWIGLU, LLM_FFN_SEQ`` on one ``ffn_up`` of
  ``2 n_ff`` rows: ``ggml_swiglu`` applies SiLU to the first half (the
  gate) and multiplies by the second (the up projection).
- ``gpt2``, ``bloom``, ``starcoder``, ``mpt``, ``gptneox``, ``falcon``:
  ``LLM_FFN_GELU, LLM_FFN_SEQ``: ``ggml_gelu`` (tanh approximation), with
  biases where the file has them. GPT-NeoX adds attention and FFN in
  parallel when ``gptneox.use_parallel_residual`` is true; Falcon always
  does, feeding the FFN the attention's LayerNorm output.
- ``granite``, ``granitemoe`` (``src/models/granite.cpp``): SwiGLU
  (``LLM_FFN_SILU, LLM_FFN_PAR``) after RMSNorm, its output multiplied by
  ``<arch>.residual_scale`` (read when present; 0 or absent is no scaling)
  before the residual add: ``x + a f(x)``. ``granite`` has the dense
  ``ffn_gate``/``ffn_up``/``ffn_down`` with optional biases;
  ``granitemoe`` has routed SwiGLU experts ``ffn_*_exps`` of width
  ``<arch>.feed_forward_length`` and, when
  ``<arch>.expert_shared_feed_forward_length`` is set, a shared expert
  ``ffn_*_shexp`` added to them before the scaling (Granite MoE Shared).
- ``minicpm`` (``src/models/minicpm.cpp``, the granite graph): SwiGLU with
  optional biases, or routed SwiGLU experts of ``feed_forward_length``,
  scaled by ``minicpm.residual_scale``, which defaults to
  ``1.4f / sqrtf(n_layer)`` (float32) when the file lacks it.
- ``gemma2``, ``gemma3``: GeGLU with ``ggml_gelu`` (``LLM_FFN_GELU,
  LLM_FFN_PAR``) between ``ffn_norm`` and ``post_ffw_norm``, both RMSNorm:
  the FFN's output is normalized before the residual add.
- ``olmo2``, ``exaone4``: SwiGLU on the residual stream itself (no norm
  before it), ``post_ffw_norm`` on its output before the add.
- ``internlm2``, ``exaone``, ``smollm3``, ``seed_oss``: SwiGLU after
  RMSNorm (``seed_oss`` names that norm ``post_attention_norm``).
- ``command-r``: SwiGLU fed by the attention's LayerNorm, added in parallel
  with attention. ``phi2``: ``ffn_up``/``ffn_down`` with biases and
  ``LLM_FFN_GELU, LLM_FFN_SEQ``, in parallel with attention on one
  LayerNorm. ``starcoder2``: the same FFN in sequence, after a LayerNorm.
  ``stablelm``: SwiGLU after its LayerNorm ``ffn_norm``, or, in files
  without one (StableLM 2 12B), in parallel on the attention's.
- ``nemotron``: ``ffn_up``/``ffn_down`` with optional biases and
  ``LLM_FFN_RELU_SQR`` (squared ReLU), after a LayerNorm.
- ``deepseek2``: SwiGLU in the first ``<arch>.leading_dense_block_count``
  layers (``feed_forward_length`` wide), routed SwiGLU experts
  (``expert_feed_forward_length``) and one shared SwiGLU expert of
  ``expert_feed_forward_length * expert_shared_count`` in the others, added
  unscaled to the routed sum.
- ``olmoe``: routed SwiGLU experts of ``feed_forward_length`` only.
  ``mistral3``: dense SwiGLU with optional biases, or routed SwiGLU experts
  of ``feed_forward_length`` (files whose experts have no ``ffn_gate_exps``
  compute ``silu(up)`` and are not read).
- ``gpt-oss`` (``src/models/openai-moe.cpp``): routed experts with biases
  and ``ggml_swiglu_oai`` (``min(g, 7)`` and ``clamp(u, -7, 7) + 1``):
  undecided, as for the transformers checkpoints.
- ``qwen2moe``: routed SwiGLU experts (``ffn_*_exps``) plus a shared SwiGLU
  expert (``ffn_*_shexp``) scaled by ``sigmoid(ffn_gate_inp_shexp . y)``;
  ``qwen3moe``: routed experts only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from skipsearch.io._families.moe import DEEPSEEK_V4_REASON, GPT_OSS_REASON
from skipsearch.io.checkpoints import CheckpointError
from skipsearch.io.layouts import Family, Part, config_int, integer

__all__ = ["FAMILIES", "FFN_TENSORS"]

#: The FFN tensor names read here, by ``gguf.constants.MODEL_TENSOR`` member.
FFN_TENSORS = {
    "FFN_UP": "blk.{i}.ffn_up.weight",
    "FFN_GATE": "blk.{i}.ffn_gate.weight",
    "FFN_DOWN": "blk.{i}.ffn_down.weight",
    "FFN_UP_EXP": "blk.{i}.ffn_up_exps.weight",
    "FFN_GATE_EXP": "blk.{i}.ffn_gate_exps.weight",
    "FFN_DOWN_EXP": "blk.{i}.ffn_down_exps.weight",
    "FFN_UP_SHEXP": "blk.{i}.ffn_up_shexp.weight",
    "FFN_GATE_SHEXP": "blk.{i}.ffn_gate_shexp.weight",
    "FFN_DOWN_SHEXP": "blk.{i}.ffn_down_shexp.weight",
}

_SEQ = "x + f(N(x)), N the FFN's norm (pre-norm: attention and FFN in sequence)"
_PARALLEL = "x + attn(N1(x)) + f(N2(x)) (parallel attention and FFN)"
_FALCON = "x + attn(LN(x)) + f(LN(x)) (parallel attention and FFN, one LayerNorm)"
_ROUTED = (
    "one routed expert of a mixture-of-experts layer: the layer computes x + sum over the "
    "top-k experts of p_e(y) f_e(y), y = RMSNorm(x), with router weights p_e(y){shared}; the "
    "verdict concerns y -> y + f_e(y) for this expert alone"
)
_SHARED = (
    "the shared expert of a mixture-of-experts layer: it is added to the routed experts' "
    "output{scaled}; the verdict concerns y -> y + f(y) for this expert alone"
)


def _sizes(arch: str, m_keys: Optional[tuple[str, ...]] = None) -> dict[str, Any]:
    return dict(
        activation_keys=(),
        d_keys=(f"{arch}.embedding_length",),
        m_keys=m_keys if m_keys is not None else (f"{arch}.feed_forward_length",),
        layer_keys=(f"{arch}.block_count",),
        norm="pre",
    )


def _ffn(
    arch: str,
    kind: str,
    suffix: str = "",
    *,
    gate: bool = True,
    m_keys: Optional[tuple[str, ...]] = None,
    **kw: Any,
) -> Part:
    """The part of tensors ``FFN_UP<suffix>``, ``FFN_GATE<suffix>`` (when
    ``gate``) and ``FFN_DOWN<suffix>``, pre-norm, sized by ``arch``'s keys
    (``m_keys`` for the hidden width); ``form`` defaults to the sequential one."""
    return Part(
        kind=kind,
        up=FFN_TENSORS["FFN_UP" + suffix],
        gate=FFN_TENSORS["FFN_GATE" + suffix] if gate else None,
        down=FFN_TENSORS["FFN_DOWN" + suffix],
        **{"form": _SEQ, **_sizes(arch, m_keys), **kw},
    )


def _gated(arch: str, activation: str, **kw: Any) -> Part:
    """The dense gated MLP: ffn_up, ffn_gate, ffn_down."""
    return _ffn(arch, "mlp", activation=activation, **kw)


def _plain(arch: str, form: Any = _SEQ) -> Part:
    """The dense MLP without a gate: ffn_up, ffn_down (biases when present)."""
    return _ffn(arch, "mlp", gate=False, activation="gelu_tanh", form=form)


def _experts(arch: str, m_keys: tuple[str, ...], shared: str = "", **kw: Any) -> Part:
    """Routed SwiGLU experts in 3-D ``[E, out, in]`` tensors."""
    return _ffn(
        arch,
        "expert",
        "_EXP",
        m_keys=m_keys,
        experts=True,
        activation="silu",
        note=_ROUTED.format(shared=shared),
        **kw,
    )


def _shared(arch: str, m_keys: tuple[str, ...], scaled: str = "", **kw: Any) -> Part:
    """The shared SwiGLU expert: ffn_up_shexp, ffn_gate_shexp, ffn_down_shexp."""
    return _ffn(
        arch,
        "shared_expert",
        "_SHEXP",
        m_keys=m_keys,
        activation="silu",
        note=_SHARED.format(scaled=scaled),
        **kw,
    )


def _residual_scale(arch: str, *, default: bool = False) -> dict[str, Any]:
    """llama.cpp's granite graph scales the FFN's output by
    ``<arch>.residual_scale`` (``ggml_scale`` before the residual add)."""
    return {"scale_rule": _ResidualScale(arch, default)}


@dataclass(frozen=True)
class _ResidualScale:
    """``<arch>.residual_scale`` as llama.cpp's granite graph reads it:
    ``if (hparams.f_residual_scale)`` scales, so 0 (or no key) is no
    scaling. With ``default`` (MiniCPM) a missing key is
    ``1.4f / sqrtf(float(n_layer))`` in float32, ``n_layer`` the block count
    less ``nextn_predict_layers``, as ``load_arch_hparams`` sets it."""

    arch: str
    default: bool

    def __call__(self, config: dict[str, Any]) -> Optional[tuple[str, Any]]:
        key = f"{self.arch}.residual_scale"
        if key in config:
            value = config[key]
            if not isinstance(value, bool) and isinstance(value, (int, float)) and value == 0:
                return None
            return key, value  # the layout checks it is a finite number
        if not self.default:
            return None
        blocks_key = f"{self.arch}.block_count"
        nextn_key = f"{self.arch}.nextn_predict_layers"
        blocks = config_int(config, blocks_key)
        nextn = config.get(nextn_key, 0)
        if blocks is None or integer(nextn) is None or nextn < 0 or blocks - nextn < 1:
            raise CheckpointError(
                f"{key} is missing, and llama.cpp's default 1.4 / sqrt(n_layer) needs "
                f"{blocks_key} ({config.get(blocks_key)!r}) above {nextn_key} ({nextn!r}), both "
                "non-negative integers"
            )
        n = blocks - nextn
        label = f"{key} missing: llama.cpp's default 1.4f / sqrtf({n}) in float32"
        return label, float(np.float32(1.4) / np.sqrt(np.float32(n), dtype=np.float32))


_SANDWICH = "x + N2(f(N1(x))), N1 = ffn_norm and N2 = post_ffw_norm (RMSNorms)"
_SANDWICH_NOTE = (
    "the model normalizes the FFN's output (post_ffw_norm) before adding it to x; the verdict "
    "concerns y -> y + f(y) for the FFN alone, not the model's residual block"
)
_POST = "x + N(f(x)), N = post_ffw_norm (RMSNorm) inside the residual branch, no norm before f"
_POST_NOTE = (
    "the model normalizes the FFN's output (post_ffw_norm) before adding it to x; the verdict "
    "concerns x -> x + f(x) for the FFN alone"
)
_STABLELM = (
    "x + f(LN(x + attn)) with ffn_norm; in files without it (StableLM 2 12B) x + attn(LN(x)) + "
    "f(LN(x)), in parallel"
)


@dataclass(frozen=True)
class _LeadingDense:
    """The layers of a deepseek2 file with a dense FFN (``sparse`` False) or
    with experts: the first ``<arch>.leading_dense_block_count`` (default 0,
    as llama.cpp reads it) are dense."""

    arch: str
    sparse: bool

    def __call__(self, config: dict[str, Any], layers: int) -> Optional[frozenset[int]]:
        key = f"{self.arch}.leading_dense_block_count"
        lead = config.get(key, 0)
        if integer(lead) is None or lead < 0:
            raise CheckpointError(f"{key} must be a non-negative integer, got {lead!r}")
        dense = set(range(min(lead, layers)))
        return frozenset(set(range(layers)) - dense if self.sparse else dense)


@dataclass(frozen=True)
class _ByExpertCount:
    """The layers of a file whose architecture has either a dense FFN or
    experts in every layer, by ``<arch>.expert_count`` (llama.cpp's
    ``n_expert == 0`` test in ``load_arch_tensors``): all (``sparse`` False)
    or none for 0 or no key; the reverse for a positive count."""

    arch: str
    sparse: bool

    def __call__(self, config: dict[str, Any], layers: int) -> Optional[frozenset[int]]:
        key = f"{self.arch}.expert_count"
        count = config.get(key, 0)
        if integer(count) is None or count < 0:
            raise CheckpointError(f"{key} must be a non-negative integer, got {count!r}")
        return frozenset(range(layers)) if (count > 0) == self.sparse else frozenset()


@dataclass(frozen=True)
class _OptionalSize:
    """A size key llama.cpp reads as optional: its value when positive, else
    no size from the metadata (the tensors give it); ``zero`` says whether 0
    is allowed (granitemoe's ``expert_shared_feed_forward_length`` 0 means
    no shared expert)."""

    key: str
    zero: bool = False

    def __str__(self) -> str:
        return self.key

    def __call__(self, config: dict[str, Any]) -> Optional[int]:
        if config.get(self.key) is None:
            return None
        value = integer(config[self.key])
        if value is None or value < 0 or (value == 0 and not self.zero):
            raise CheckpointError(
                f"{self.key} must be a positive integer, got {config[self.key]!r}"
            )
        return value or None


@dataclass(frozen=True)
class _SharedExperts:
    """deepseek2's shared expert width, ``expert_feed_forward_length *
    expert_shared_count`` (llama.cpp's ``n_ff_exp * n_expert_shared``)."""

    arch: str

    def __str__(self) -> str:
        return f"{self.arch}.expert_feed_forward_length * {self.arch}.expert_shared_count"

    def __call__(self, config: dict[str, Any]) -> Optional[int]:
        width = config_int(config, f"{self.arch}.expert_feed_forward_length")
        count = config_int(config, f"{self.arch}.expert_shared_count")
        return None if width is None or count is None or count < 1 else width * count


def _deepseek2() -> tuple[Part, ...]:
    arch = "deepseek2"
    expert_width = (f"{arch}.expert_feed_forward_length",)
    return (
        # feed_forward_length is optional in llama.cpp (a file of MoE layers
        # only has none).
        _gated(
            arch,
            "silu",
            optional=True,
            layers=_LeadingDense(arch, sparse=False),
            m_keys=(),
            m_rule=_OptionalSize(f"{arch}.feed_forward_length"),
        ),
        _experts(
            arch,
            expert_width,
            shared=" and the shared expert",
            experts_keys=(f"{arch}.expert_count",),
            optional=True,
            layers=_LeadingDense(arch, sparse=True),
        ),
        _shared(
            arch,
            (),
            m_rule=_SharedExperts(arch),
            optional=True,
            layers=_LeadingDense(arch, sparse=True),
        ),
    )


def _deepseek4() -> tuple[Part, ...]:
    """DeepSeek-V4 as llama.cpp writes it (``conversion/deepseek.py``,
    ``src/models/deepseek4.cpp``): every layer holds routed experts
    (``ffn_gate_exps``/``ffn_up_exps``/``ffn_down_exps`` from ``w1``/``w3``/
    ``w2``, ``expert_feed_forward_length`` wide) and the shared expert
    (``*_shexp``, times ``expert_shared_count``), all undecided: the
    residual is a token-dependent hyper-connection (``blk.N.hc_ffn_fn``)."""
    arch = "deepseek4"
    form = (
        "X'_k = post_k(X) F(x) + sum_j H_res(X)[j, k] X_j on deepseek4.hyper_connection.count "
        "streams, x = RMSNorm(sum_j pre_j(X) X_j), F the routed clamped-SwiGLU experts under "
        "the router's weights plus the shared expert"
    )
    return (
        _experts(
            arch,
            (f"{arch}.expert_feed_forward_length",),
            shared=" and the shared expert",
            experts_keys=(f"{arch}.expert_count",),
            form=form,
            undecided=DEEPSEEK_V4_REASON,
        ),
        _shared(arch, (), m_rule=_SharedExperts(arch), form=form, undecided=DEEPSEEK_V4_REASON),
    )


def _neox_form(config: dict[str, Any]) -> str:
    # llama.cpp's gptneox graph: parallel when use_parallel_residual is true
    # (the converter writes it; GPTNeoXConfig's default is true).
    return _PARALLEL if config.get("gptneox.use_parallel_residual", True) is not False else _SEQ


def _family(arch: str, *parts: Part) -> tuple[str, Family]:
    return "gguf-" + arch, Family(name="gguf-" + arch, parts=parts)


_FORM: Callable[[dict[str, Any]], str] = _neox_form

#: ``"gguf-<architecture>"`` -> :class:`~skipsearch.io.layouts.Family`.
FAMILIES: dict[str, Family] = dict(
    [
        # Dense llama, or Mixtral's MoE (3-D experts: llama.cpp's llama graph
        # calls build_moe_ffn with n_ff-wide experts and no shared expert).
        _family(
            "llama",
            _gated("llama", "silu", optional=True),
            _experts("llama", ("llama.feed_forward_length",), optional=True),
        ),
        _family("granite", _gated("granite", "silu", **_residual_scale("granite"))),
        _family(
            "granitemoe",
            _experts(
                "granitemoe",
                ("granitemoe.feed_forward_length",),
                shared=" and a shared expert when the file has one",
                experts_keys=("granitemoe.expert_count",),
                **_residual_scale("granitemoe"),
            ),
            # Present only when expert_shared_feed_forward_length is positive
            # (llama.cpp: n_ff_shexp > 0); 0 or no key is no shared expert.
            _shared(
                "granitemoe",
                (),
                m_rule=_OptionalSize("granitemoe.expert_shared_feed_forward_length", zero=True),
                optional=True,
                **_residual_scale("granitemoe"),
            ),
        ),
        _family(
            "minicpm",
            _gated(
                "minicpm",
                "silu",
                optional=True,
                layers=_ByExpertCount("minicpm", sparse=False),
                **_residual_scale("minicpm", default=True),
            ),
            _experts(
                "minicpm",
                ("minicpm.feed_forward_length",),
                experts_keys=("minicpm.expert_count",),
                optional=True,
                layers=_ByExpertCount("minicpm", sparse=True),
                **_residual_scale("minicpm", default=True),
            ),
        ),
        _family("gemma2", _gated("gemma2", "gelu_tanh", form=_SANDWICH, note=_SANDWICH_NOTE)),
        _family("gemma3", _gated("gemma3", "gelu_tanh", form=_SANDWICH, note=_SANDWICH_NOTE)),
        _family("olmo2", _gated("olmo2", "silu", norm=None, form=_POST, note=_POST_NOTE)),
        _family("exaone4", _gated("exaone4", "silu", norm=None, form=_POST, note=_POST_NOTE)),
        _family("internlm2", _gated("internlm2", "silu")),
        _family("exaone", _gated("exaone", "silu")),
        _family("smollm3", _gated("smollm3", "silu")),
        _family("seed_oss", _gated("seed_oss", "silu")),
        _family("command-r", _gated("command-r", "silu", form=_FALCON)),
        _family("stablelm", _gated("stablelm", "silu", form=_STABLELM)),
        _family("phi2", _plain("phi2", form=_FALCON)),
        _family("starcoder2", _plain("starcoder2")),
        _family("nemotron", _ffn("nemotron", "mlp", gate=False, activation="relu2")),
        _family("deepseek2", *_deepseek2()),
        _family("deepseek4", *_deepseek4()),
        _family(
            "olmoe",
            _experts("olmoe", ("olmoe.feed_forward_length",), experts_keys=("olmoe.expert_count",)),
        ),
        _family(
            "mistral3",
            _gated(
                "mistral3", "silu", optional=True, layers=_ByExpertCount("mistral3", sparse=False)
            ),
            _experts(
                "mistral3",
                ("mistral3.feed_forward_length",),
                experts_keys=("mistral3.expert_count",),
                optional=True,
                layers=_ByExpertCount("mistral3", sparse=True),
            ),
        ),
        _family(
            "gpt-oss",
            _experts(
                "gpt-oss",
                ("gpt-oss.expert_feed_forward_length",),
                experts_keys=("gpt-oss.expert_count",),
                undecided=GPT_OSS_REASON,
            ),
        ),
        _family("qwen2", _gated("qwen2", "silu")),
        _family("qwen3", _gated("qwen3", "silu")),
        _family("gemma", _gated("gemma", "gelu_tanh")),
        _family(
            "phi3",
            # One ffn_up of 2 n_ff rows, the gate first.
            _ffn("phi3", "mlp", gate=False, fused="gate_up", activation="silu"),
        ),
        _family("gpt2", _plain("gpt2")),
        _family("bloom", _plain("bloom")),
        _family("starcoder", _plain("starcoder")),
        _family("mpt", _plain("mpt")),
        _family("gptneox", _plain("gptneox", form=_FORM)),
        _family("falcon", _plain("falcon", form=_FALCON)),
        _family(
            "qwen2moe",
            _experts(
                "qwen2moe",
                ("qwen2moe.expert_feed_forward_length",),
                shared=" and a shared expert",
                experts_keys=("qwen2moe.expert_count",),
            ),
            # llama.cpp: n_ff_shexp defaults to n_ff when the key is absent.
            _shared(
                "qwen2moe",
                ("qwen2moe.expert_shared_feed_forward_length", "qwen2moe.feed_forward_length"),
                scaled=" scaled by sigmoid(ffn_gate_inp_shexp . y)",
            ),
        ),
        _family(
            "qwen3moe",
            _experts(
                "qwen3moe",
                ("qwen3moe.expert_feed_forward_length",),
                experts_keys=("qwen3moe.expert_count",),
            ),
        ),
    ]
)
