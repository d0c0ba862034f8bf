"""Encoders and encoder-decoders: DistilBERT, DeBERTa-v2, ALBERT, BART, mBART,
Marian, PEGASUS and Whisper.

Tensor names and config keys are those of Hugging Face transformers'
``modeling_<family>.py`` and ``configuration_<family>.py`` (the defaults below
are the config classes' ``__init__`` defaults), checked against public
checkpoints' ``config.json`` files; tests/test_families_encoders.py names the
sources family by family.

LayerNorm placement is the one each model class's forward hard-codes:

- post-LN, ``LN(x + f(x))``: DistilBERT (``TransformerBlock``), DeBERTa-v2
  (``DebertaV2Output``), ALBERT (``AlbertLayer``), BART and Marian (their
  encoder and decoder layers);
- pre-LN, ``x + f(LN x)``: mBART, PEGASUS and Whisper (their encoder and
  decoder layers).

The BART-like configs carry a ``normalize_before`` key from an older shared
implementation; the current classes ignore it, and so does the scan (a note
says so when it disagrees with the class).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from skipsearch._types import Norm
from skipsearch.io.layouts import NORM_FORMS, POST_LN, PRE_LN, Family, Part, config_int

# POST_LN and PRE_LN, the forms by LayerNorm placement, are named here too.
__all__ = ["FAMILIES", "POST_LN", "PRE_LN"]


def _mlp(up: str, down: str, norm: Norm, **fields: Any) -> Part:
    """The FFN of a post- or pre-LN encoder (``norm``), with that form."""
    return Part(kind="mlp", up=up, down=down, norm=norm, form=NORM_FORMS[norm], **fields)


@dataclass(frozen=True)
class _IgnoredNormalizeBefore:
    """A note for configs whose ``normalize_before`` contradicts the model
    class, which hard-codes the LayerNorm placement and never reads it (a
    dataclass, so that the family pickles and compares by value)."""

    family: str
    norm: Norm

    def __call__(self, config: dict[str, Any]) -> Optional[str]:
        value = config.get("normalize_before")
        if isinstance(value, bool) and value != (self.norm == "pre"):
            placement = "before" if self.norm == "pre" else "after"
            return (
                f"config.json has normalize_before={str(value).lower()}, which transformers' "
                f"{self.family} layers ignore: they put the LayerNorm {placement} the FFN"
            )
        return None


def _seq2seq(
    name: str, norm: Norm, activation: str = "gelu", note: Optional[Callable[..., Any]] = None
) -> Family:
    """A BART-like encoder-decoder: ``fc1``/``fc2`` in ``encoder.layers.{i}``
    and ``decoder.layers.{i}``, sized by ``d_model`` and
    ``encoder_ffn_dim``/``decoder_ffn_dim``, counted by
    ``encoder_layers``/``decoder_layers``.

    Either stack may be missing: the ``*ForCausalLM`` classes keep only the
    decoder (``model.decoder.layers.{i}``), Whisper's audio classifier only
    the encoder, under the same ``model_type``.
    """
    parts = tuple(
        _mlp(
            f"*{stack}.layers.{{i}}.fc1.weight",
            f"*{stack}.layers.{{i}}.fc2.weight",
            norm,
            stack=stack,
            activation_keys=("activation_function",),
            activation=activation,
            d_keys=("d_model",),
            m_keys=(f"{stack}_ffn_dim",),
            layer_keys=(f"{stack}_layers",),
            note=note,
            optional=True,
        )
        for stack in ("encoder", "decoder")
    )
    return Family(name=name, parts=parts)


def _deberta_note(config: dict[str, Any]) -> Optional[str]:
    """DeBERTa-v2's ``ConvLayer`` (``conv_kernel_size > 0``, e.g.
    deberta-v2-xlarge): after layer 0 the encoder computes
    ``LN(out + conv_act(conv(x)))`` from the layer's input ``x`` and output
    ``out``; the FFN block inside layer 0 is unchanged."""
    kernel = config_int(config, "conv_kernel_size")
    if kernel is not None and kernel > 0:
        act = config.get("conv_act") or "tanh"
        return (
            f"conv_kernel_size={kernel}: after layer 0 the encoder also adds a convolution of "
            f"the layer's input to its output, LN(out + {act}(conv x)); the FFN block of "
            "layer 0 is LN(x + f(x)) as in every layer"
        )
    return None


def _albert_note(config: dict[str, Any]) -> Optional[str]:
    groups = config.get("num_hidden_groups", 1)
    inner = config.get("inner_group_num", 1)
    layers = config.get("num_hidden_layers")
    if groups == 1 and inner == 1:
        return None
    each = (
        f"{layers // groups}"
        if isinstance(layers, int) and isinstance(groups, int) and groups > 0
        else "num_hidden_layers / num_hidden_groups"
    )
    return (
        f"num_hidden_groups={groups}, inner_group_num={inner}: the model holds one layer "
        "group per albert_layer_groups index, each of inner_group_num layers, and applies "
        f"each group {each} times in sequence (every inner layer once per application), not "
        "every block num_hidden_layers times; a block's layer is its index inside its group"
    )


#: ``model_type`` -> :class:`Family`.
FAMILIES: dict[str, Family] = {
    # DistilBertForMaskedLM & co.: distilbert.transformer.layer.{i}.ffn.lin1 /
    # lin2; TransformerBlock: output_layer_norm(ffn(x) + x).
    "distilbert": Family(
        name="distilbert",
        parts=(
            _mlp(
                "*transformer.layer.{i}.ffn.lin1.weight",
                "*transformer.layer.{i}.ffn.lin2.weight",
                "post",
                activation_keys=("activation",),
                activation="gelu",
                d_keys=("dim",),
                m_keys=("hidden_dim",),
                layer_keys=("n_layers",),
            ),
        ),
    ),
    # DebertaV2Layer: intermediate.dense, then output.dense with
    # output.LayerNorm(dense(h) + input), BERT's names under deberta.encoder.
    "deberta-v2": Family(
        name="deberta-v2",
        parts=(
            _mlp(
                "*encoder.layer.{i}.intermediate.dense.weight",
                "*encoder.layer.{i}.output.dense.weight",
                "post",
                activation="gelu",
                note=_deberta_note,
            ),
        ),
    ),
    # AlbertTransformer: num_hidden_layers passes through
    # albert_layer_groups[group].albert_layers[j]; AlbertLayer:
    # full_layer_layer_norm(ffn_output(act(ffn(x))) + x).
    "albert": Family(
        name="albert",
        parts=(
            _mlp(
                # {i} is the layer's index inside its group, so that blocks
                # come group by group, in the order the model applies them.
                "*albert_layer_groups.*.albert_layers.{i}.ffn.weight",
                "*albert_layer_groups.*.albert_layers.{i}.ffn_output.weight",
                "post",
                activation="gelu_new",
                note=_albert_note,
                repeat_keys=("num_hidden_layers",),
            ),
        ),
    ),
    "bart": _seq2seq("bart", "post", note=_IgnoredNormalizeBefore("BART", "post")),
    "mbart": _seq2seq("mbart", "pre", note=_IgnoredNormalizeBefore("mBART", "pre")),
    "marian": _seq2seq("marian", "post", note=_IgnoredNormalizeBefore("Marian", "post")),
    "pegasus": _seq2seq("pegasus", "pre", note=_IgnoredNormalizeBefore("PEGASUS", "pre")),
    "whisper": _seq2seq("whisper", "pre"),
}
