"""Decoders whose MLP is not gated: Falcon, BLOOM, GPT-J, CodeGen, Phi,
GPTBigCode (StarCoder), StarCoder2, MPT and GPT-NeoX.

Their blocks ``W_down act(W_up y + b_up) + b_down`` are the ones where the
verdict is not settled by the linearization argument alone. Several of them
(Falcon, GPT-J, CodeGen, Phi) add attention and the FFN to the same
residual sum, ``x + attn(LN x) + f(LN x)``: each part's ``form`` says which,
and its ``note`` what the verdict then concerns.

Tensor names and config keys are those of the Hugging Face transformers
model definitions (``src/transformers/models/<family>/modeling_*.py`` and
``configuration_*.py``) and of public checkpoints; the tests in
``tests/test_families_decoders.py`` cite the sources family by family.
"""

from __future__ import annotations

from typing import Any, Optional

from skipsearch._types import Norm
from skipsearch.io.checkpoints import CheckpointError
from skipsearch.io.layouts import Family, Part, Times, config_flag, config_number, integer

__all__ = ["FAMILIES"]

#: The FFN block taken by itself, when the layer adds attention to the same sum.
_PARALLEL_NOTE = (
    "parallel attention: the layer adds attn(LN x) and f(LN x) to the same residual x, so the "
    "verdict concerns the FFN block y -> y + f(y) for its own input y taken alone; an absorbable "
    "block does not make the layer skip-free, since the attention branch still needs x"
)
_PARALLEL_ONE_LN = "x + attn(LN x) + f(LN x) (parallel attention, one LayerNorm for both)"
_PARALLEL_TWO_LN = (
    "x + attn(LN_attn x) + f(LN_mlp x) (parallel attention, a LayerNorm for each branch)"
)
_SEQUENTIAL = "h = x + attn(LN_1 x); h + f(LN_2 h) (pre-LN)"


def _mlp(at: str, up: str, down: str, **fields: Any) -> Part:
    """The one ungated MLP of a decoder layer, ``<at>{up}.weight`` and
    ``<at>{down}.weight`` (pre-LN unless ``fields`` give another ``norm``)."""
    return Part(
        kind="mlp", up=f"{at}{up}.weight", down=f"{at}{down}.weight", **{"norm": "pre", **fields}
    )


def _times_four(width: str, m_keys: tuple[str, ...], layer_keys: tuple[str, ...]) -> dict[str, Any]:
    """The sizes of a GPT-2-like config: the width ``width`` (or
    ``hidden_size``), the hidden width ``m_keys`` or else 4 times the
    width, the layer count ``layer_keys``."""
    return dict(
        d_keys=(width, "hidden_size"),
        m_keys=m_keys,
        m_rule=Times(4, (width, "hidden_size")),
        layer_keys=layer_keys,
    )


# -- Falcon ---------------------------------------------------------------------------------


def _falcon_layout(config: dict[str, Any]) -> str:
    """``"sequential"``, ``"one_ln"`` or ``"two_ln"``: how a Falcon layer
    combines attention and the MLP (``FalconDecoderLayer``)."""
    where = "falcon config.json"
    model_type = config.get("model_type")
    if model_type == "RefinedWeb":
        # The Falcon-40B remote code (modelling_RW.py of model_type
        # "RefinedWeb") always has ln_attn and ln_mlp; its configs lack
        # new_decoder_architecture.
        return "two_ln"
    new = config_flag(config, "new_decoder_architecture", False, where)
    parallel = config_flag(config, "parallel_attn", True, where)
    if new:
        # FalconDecoderLayer: num_ln_in_parallel_attn None means 2 with the
        # new architecture, which ignores parallel_attn.
        n_ln = config.get("num_ln_in_parallel_attn")
        if n_ln is None:
            n_ln = 2
        if n_ln not in (1, 2) or isinstance(n_ln, bool):
            raise CheckpointError(f"{where}: num_ln_in_parallel_attn must be 1 or 2, got {n_ln!r}")
        return "two_ln" if n_ln == 2 else "one_ln"
    return "one_ln" if parallel else "sequential"


def _falcon_form(config: dict[str, Any]) -> str:
    layout = _falcon_layout(config)
    if layout == "sequential":
        return _SEQUENTIAL
    # FalconDecoderLayer does not read apply_residual_connection_post_layernorm
    # (false in the Falcon configs): the residual is always x.
    return _PARALLEL_TWO_LN if layout == "two_ln" else _PARALLEL_ONE_LN


def _falcon_note(config: dict[str, Any]) -> Optional[str]:
    layout = _falcon_layout(config)
    if layout == "sequential":
        return None
    note = _PARALLEL_NOTE
    if layout == "two_ln":
        note += "; the FFN's input y is ln_mlp(x), the attention reads ln_attn(x)"
    return note


# -- GPT-NeoX ---------------------------------------------------------------------------------


def _neox_parallel(config: dict[str, Any]) -> bool:
    # GPTNeoXConfig: use_parallel_residual defaults to True (Pythia).
    return config_flag(config, "use_parallel_residual", True, "gpt_neox config.json")


def _neox_form(config: dict[str, Any]) -> str:
    return _PARALLEL_TWO_LN if _neox_parallel(config) else _SEQUENTIAL


def _neox_note(config: dict[str, Any]) -> Optional[str]:
    if not _neox_parallel(config):
        return None
    return (
        _PARALLEL_NOTE + "; the FFN's input y is post_attention_layernorm(x), the attention "
        "reads input_layernorm(x)"
    )


# transformers models/gpt_neox/modeling_gpt_neox.py (GPTNeoXLayer.forward:
# x + attn(ln1 x) + mlp(ln2 x) when use_parallel_residual) and
# configuration_gpt_neox.py (use_parallel_residual=True, hidden_act "gelu").
_GPT_NEOX = Family(
    name="gpt_neox",
    parts=(
        _mlp(
            "*layers.{i}.mlp.", "dense_h_to_4h", "dense_4h_to_h", form=_neox_form, note=_neox_note
        ),
    ),
)


_FALCON = Family(
    name="falcon",
    parts=(
        _mlp(
            "*h.{i}.mlp.",
            "dense_h_to_4h",
            "dense_4h_to_h",
            # FalconConfig: activation="gelu"; the RW remote code and older
            # transformers hard-code nn.GELU() (exact).
            activation_keys=("activation",),
            activation="gelu",
            # FalconConfig pops the n_embed kwarg and lets it override
            # hidden_size; ffn_hidden_size None means hidden_size * 4; RW
            # configs name the layer count n_layer.
            **_times_four("n_embed", ("ffn_hidden_size",), ("num_hidden_layers", "n_layer")),
            form=_falcon_form,
            note=_falcon_note,
        ),
    ),
)


# -- BLOOM ----------------------------------------------------------------------------------


def _bloom_post(config: dict[str, Any]) -> bool:
    return config_flag(
        config, "apply_residual_connection_post_layernorm", False, "bloom config.json"
    )


def _bloom_norm(config: dict[str, Any]) -> Optional[Norm]:
    # With the residual taken after the LayerNorm, the model's own sub-layer
    # is y -> y + f(y) for y = LN(h): neither the pre- nor the post-LN sentence.
    return None if _bloom_post(config) else "pre"


def _bloom_form(config: dict[str, Any]) -> str:
    if _bloom_post(config):
        return "y + f(y), y = LN_2 h (apply_residual_connection_post_layernorm: the residual is LN_2's output)"
    return _SEQUENTIAL


def _bloom_note(config: dict[str, Any]) -> Optional[str]:
    if _bloom_post(config):
        return (
            "apply_residual_connection_post_layernorm: BloomBlock adds f to the LayerNorm's "
            "output, so the verdict concerns the model's own map y -> y + f(y) on y = LN_2(h)"
        )
    return None


_BLOOM = Family(
    name="bloom",
    parts=(
        # BloomModel's own keys have no prefix (the bigscience checkpoints);
        # BloomForCausalLM's have "transformer.".
        _mlp(
            "*h.{i}.mlp.",
            "dense_h_to_4h",
            "dense_4h_to_h",
            # BloomMLP: BloomGelu, the tanh form of GELU; no config key.
            activation_keys=(),
            activation="gelu_pytorch_tanh",
            # BloomMLP: 4 * hidden_size always; n_inner is not read.
            **_times_four("n_embed", (), ("n_layer", "num_hidden_layers")),
            norm=_bloom_norm,
            form=_bloom_form,
            note=_bloom_note,
        ),
    ),
)


# -- GPT-J and CodeGen ------------------------------------------------------------------------


def _gptj(name: str) -> Family:
    """GPT-J and CodeGen: ``fc_in``/``fc_out`` beside the attention of one ``ln_1``."""
    return Family(
        name=name,
        parts=(
            _mlp(
                "*h.{i}.mlp.",
                "fc_in",
                "fc_out",
                activation_keys=("activation_function",),
                activation="gelu_new",
                # attribute_map: hidden_size -> n_embd, num_hidden_layers ->
                # n_layer; n_inner None means 4 * n_embd (GPTJMLP / CodeGenMLP).
                **_times_four("n_embd", ("n_inner",), ("n_layer", "num_hidden_layers")),
                form=_PARALLEL_ONE_LN,
                note=_PARALLEL_NOTE,
            ),
        ),
    )


# -- Phi ------------------------------------------------------------------------------------

_PHI = Family(
    name="phi",
    parts=(
        _mlp(
            "*layers.{i}.mlp.",
            "fc1",
            "fc2",
            activation_keys=("hidden_act",),
            activation="gelu_new",
            form=_PARALLEL_ONE_LN,
            note=_PARALLEL_NOTE,
        ),
    ),
)


# -- GPTBigCode and StarCoder2 ----------------------------------------------------------------

_GPT_BIGCODE = Family(
    name="gpt_bigcode",
    parts=(
        # GPT-2's names, but nn.Linear weights (out, in), not Conv1D.
        _mlp(
            "*h.{i}.mlp.",
            "c_fc",
            "c_proj",
            activation_keys=("activation_function",),
            activation="gelu_pytorch_tanh",
            # attribute_map: hidden_size -> n_embd, num_hidden_layers ->
            # n_layer; n_inner None means 4 * n_embd (GPTBigCodeMLP).
            **_times_four("n_embd", ("n_inner",), ("n_layer", "num_hidden_layers")),
            form=_SEQUENTIAL,
        ),
    ),
)

_STARCODER2 = Family(
    name="starcoder2",
    parts=(
        _mlp(
            "*layers.{i}.mlp.",
            "c_fc",
            "c_proj",
            # Starcoder2MLP reads hidden_act; the checkpoints' activation_function
            # ("gelu") is a leftover the model never reads.
            activation_keys=("hidden_act",),
            activation="gelu_pytorch_tanh",
            form=_SEQUENTIAL,
        ),
    ),
)


# -- MPT ------------------------------------------------------------------------------------


def _mpt_ffn_config(config: dict[str, Any]) -> dict[str, Any]:
    """MPT's ``ffn_config``, refused unless it is the plain GELU ``mptmlp``."""
    where = "mpt config.json"
    ffn = config.get("ffn_config")
    if ffn is None:
        return {}
    if not isinstance(ffn, dict):
        raise CheckpointError(f"{where}: ffn_config must be an object, got {ffn!r}")
    ffn_type = ffn.get("ffn_type", "mptmlp")
    if ffn_type != "mptmlp":
        raise CheckpointError(
            f"{where}: ffn_config.ffn_type is {ffn_type!r}; the scan reads MPT's plain "
            "'mptmlp' FFN (up_proj, GELU, down_proj) only, and a gated 'mptglu' block would "
            "be misread as an ungated one"
        )
    act = ffn.get("ffn_act_fn")
    if act is not None and not (
        isinstance(act, dict)
        and act.get("name") == "gelu"
        and act.get("approximate", "none") == "none"
        and set(act) <= {"name", "approximate"}
    ):
        raise CheckpointError(
            f"{where}: ffn_config.ffn_act_fn is {act!r}; the scan reads MPT's default "
            "activation, the exact GELU (torch.nn.GELU(approximate='none')), only"
        )
    return ffn


def _mpt_width(config: dict[str, Any]) -> Optional[int]:
    """``ffn_config.ffn_hidden_size``, else ``d_model * expansion_ratio``
    (llm-foundry's resolve_ffn_hidden_size; expansion_ratio defaults to 4)."""
    where = "mpt config.json"
    ffn = _mpt_ffn_config(config)
    width = ffn.get("ffn_hidden_size")
    if width is not None:
        number = integer(width)
        if number is None or number < 1:
            raise CheckpointError(
                f"{where}: ffn_config.ffn_hidden_size must be a positive integer, got {width!r}"
            )
        return number
    raw = config.get("d_model")
    d_model = integer(config.get("hidden_size") if raw is None else raw)
    ratio = config_number(config, "expansion_ratio", 4, where=where, positive=True)
    if d_model is None:
        return None
    if d_model * ratio != int(d_model * ratio):
        raise CheckpointError(
            f"{where}: d_model * expansion_ratio must be an integer, got {d_model} * {ratio}"
        )
    return int(d_model * ratio)


def _mpt_form(config: dict[str, Any]) -> str:
    _mpt_ffn_config(config)
    return _SEQUENTIAL


_MPT = Family(
    name="mpt",
    parts=(
        _mlp(
            "*blocks.{i}.ffn.",
            "up_proj",
            "down_proj",
            # MptMLP: nn.GELU(approximate="none"); no config key in transformers.
            activation_keys=(),
            activation="gelu",
            # attribute_map: hidden_size -> d_model, num_hidden_layers -> n_layers.
            d_keys=("d_model", "hidden_size"),
            m_keys=(),
            m_rule=_mpt_width,
            layer_keys=("n_layers", "num_hidden_layers"),
            form=_mpt_form,
        ),
    ),
)


#: ``model_type`` -> :class:`~skipsearch.io.layouts.Family`.
FAMILIES: dict[str, Family] = {
    "gpt_neox": _GPT_NEOX,
    "falcon": _FALCON,
    # The configs of the Falcon remote code before transformers took it in:
    # "RefinedWebModel" (Falcon-7B), "RefinedWeb" (Falcon-40B).
    "RefinedWebModel": _FALCON,
    "RefinedWeb": _FALCON,
    "bloom": _BLOOM,
    "gptj": _gptj("gptj"),
    "codegen": _gptj("codegen"),
    "phi": _PHI,
    "gpt_bigcode": _GPT_BIGCODE,
    "starcoder2": _STARCODER2,
    "mpt": _MPT,
}
