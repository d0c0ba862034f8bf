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
from skipsearch.checkpoints import CheckpointError
from skipsearch.layouts import Family, Part, Times, finite_number

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


def _flag(config: dict[str, Any], key: str, default: bool, where: str) -> bool:
    """A true/false config key; absent or null means ``default``."""
    value = config.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise CheckpointError(f"{where}: {key} must be true or false in config.json, got {value!r}")
    return value


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
    new = _flag(config, "new_decoder_architecture", False, where)
    parallel = _flag(config, "parallel_attn", True, where)
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
    return _flag(config, "use_parallel_residual", True, "gpt_neox config.json")


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
        Part(
            kind="mlp",
            up="*layers.{i}.mlp.dense_h_to_4h.weight",
            down="*layers.{i}.mlp.dense_4h_to_h.weight",
            norm="pre",
            form=_neox_form,
            note=_neox_note,
        ),
    ),
)


_FALCON = Family(
    name="falcon",
    parts=(
        Part(
            kind="mlp",
            up="*h.{i}.mlp.dense_h_to_4h.weight",
            down="*h.{i}.mlp.dense_4h_to_h.weight",
            # FalconConfig: activation="gelu"; the RW remote code and older
            # transformers hard-code nn.GELU() (exact).
            activation_keys=("activation",),
            activation="gelu",
            # FalconConfig pops the n_embed kwarg and lets it override hidden_size.
            d_keys=("n_embed", "hidden_size"),
            # FalconConfig: ffn_hidden_size None means hidden_size * 4.
            m_keys=("ffn_hidden_size",),
            m_rule=Times(4, ("n_embed", "hidden_size")),
            # RW configs name the layer count n_layer.
            layer_keys=("num_hidden_layers", "n_layer"),
            norm="pre",
            form=_falcon_form,
            note=_falcon_note,
        ),
    ),
)


# -- BLOOM ----------------------------------------------------------------------------------


def _bloom_post(config: dict[str, Any]) -> bool:
    return _flag(config, "apply_residual_connection_post_layernorm", False, "bloom config.json")


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
        Part(
            kind="mlp",
            # BloomModel's own keys have no prefix (the bigscience checkpoints);
            # BloomForCausalLM's have "transformer.".
            up="*h.{i}.mlp.dense_h_to_4h.weight",
            down="*h.{i}.mlp.dense_4h_to_h.weight",
            # BloomMLP: BloomGelu, the tanh form of GELU; no config key.
            activation_keys=(),
            activation="gelu_pytorch_tanh",
            d_keys=("n_embed", "hidden_size"),
            # BloomMLP: 4 * hidden_size always; n_inner is not read.
            m_keys=(),
            m_rule=Times(4, ("n_embed", "hidden_size")),
            layer_keys=("n_layer", "num_hidden_layers"),
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
            Part(
                kind="mlp",
                up="*h.{i}.mlp.fc_in.weight",
                down="*h.{i}.mlp.fc_out.weight",
                activation_keys=("activation_function",),
                activation="gelu_new",
                # attribute_map: hidden_size -> n_embd, num_hidden_layers -> n_layer.
                d_keys=("n_embd", "hidden_size"),
                # n_inner None means 4 * n_embd (GPTJMLP / CodeGenMLP).
                m_keys=("n_inner",),
                m_rule=Times(4, ("n_embd", "hidden_size")),
                layer_keys=("n_layer", "num_hidden_layers"),
                norm="pre",
                form=_PARALLEL_ONE_LN,
                note=_PARALLEL_NOTE,
            ),
        ),
    )


# -- Phi ------------------------------------------------------------------------------------

_PHI = Family(
    name="phi",
    parts=(
        Part(
            kind="mlp",
            up="*layers.{i}.mlp.fc1.weight",
            down="*layers.{i}.mlp.fc2.weight",
            activation_keys=("hidden_act",),
            activation="gelu_new",
            norm="pre",
            form=_PARALLEL_ONE_LN,
            note=_PARALLEL_NOTE,
        ),
    ),
)


# -- GPTBigCode and StarCoder2 ----------------------------------------------------------------

_GPT_BIGCODE = Family(
    name="gpt_bigcode",
    parts=(
        Part(
            kind="mlp",
            # GPT-2's names, but nn.Linear weights (out, in), not Conv1D.
            up="*h.{i}.mlp.c_fc.weight",
            down="*h.{i}.mlp.c_proj.weight",
            activation_keys=("activation_function",),
            activation="gelu_pytorch_tanh",
            # attribute_map: hidden_size -> n_embd, num_hidden_layers -> n_layer.
            d_keys=("n_embd", "hidden_size"),
            # n_inner None means 4 * n_embd (GPTBigCodeMLP).
            m_keys=("n_inner",),
            m_rule=Times(4, ("n_embd", "hidden_size")),
            layer_keys=("n_layer", "num_hidden_layers"),
            norm="pre",
            form=_SEQUENTIAL,
        ),
    ),
)

_STARCODER2 = Family(
    name="starcoder2",
    parts=(
        Part(
            kind="mlp",
            up="*layers.{i}.mlp.c_fc.weight",
            down="*layers.{i}.mlp.c_proj.weight",
            # Starcoder2MLP reads hidden_act; the checkpoints' activation_function
            # ("gelu") is a leftover the model never reads.
            activation_keys=("hidden_act",),
            activation="gelu_pytorch_tanh",
            norm="pre",
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
        if isinstance(width, bool) or not isinstance(width, int) or width < 1:
            raise CheckpointError(
                f"{where}: ffn_config.ffn_hidden_size must be a positive integer, got {width!r}"
            )
        return width
    d_model = config.get("d_model")
    if d_model is None:
        d_model = config.get("hidden_size")
    ratio = config.get("expansion_ratio")
    if ratio is None:
        ratio = 4
    number = finite_number(ratio)
    if number is None or number <= 0:
        raise CheckpointError(
            f"{where}: expansion_ratio must be a finite positive number, got {ratio!r}"
        )
    ratio = number
    if isinstance(d_model, bool) or not isinstance(d_model, int):
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
        Part(
            kind="mlp",
            up="*blocks.{i}.ffn.up_proj.weight",
            down="*blocks.{i}.ffn.down_proj.weight",
            # MptMLP: nn.GELU(approximate="none"); no config key in transformers.
            activation_keys=(),
            activation="gelu",
            # attribute_map: hidden_size -> d_model, num_hidden_layers -> n_layers.
            d_keys=("d_model", "hidden_size"),
            m_keys=(),
            m_rule=_mpt_width,
            layer_keys=("n_layers", "num_hidden_layers"),
            norm="pre",
            form=_mpt_form,
        ),
    ),
)


#: ``model_type`` -> :class:`~skipsearch.layouts.Family`.
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
