"""Text and vision towers (CLIP, SigLIP) and multimodal models with their
language models (LLaVA, Gemma 3, Qwen2-VL, Qwen2.5-VL).

Each tower is its own :class:`~skipsearch.io.layouts.Part` with its own stack
(``"vision"``, ``"text"``) and sizes, read from the tower's sub-config
(``vision_config``, ``text_config``). Real configs often write only the
values that differ from the transformers config class's defaults, so the
sub-config is completed with those defaults (:class:`TowerPart`).

Sources (Hugging Face transformers, ``src/transformers/models/``):
``clip/configuration_clip.py`` and ``clip/modeling_clip.py`` (``CLIPMLP``:
``fc1``, ``fc2`` with biases; ``CLIPEncoderLayer``: ``x + mlp(layer_norm2
x)``; ``CLIPConfig`` merges ``text_config_dict`` / ``vision_config_dict``
over the sub-configs), ``siglip/configuration_siglip.py`` and
``siglip/modeling_siglip.py`` (``SiglipMLP`` copied from ``CLIPMLP``),
``llava/configuration_llava.py`` and ``modeling_llava.py``
(``_checkpoint_conversion_mapping``: ``^language_model.model`` ->
``model.language_model``, ``^vision_tower`` -> ``model.vision_tower``),
``gemma3/configuration_gemma3.py`` (``Gemma3TextConfig``,
``SiglipVisionConfig`` sub-configs), ``qwen2_vl/configuration_qwen2_vl.py``
and ``modeling_qwen2_vl.py`` (``Qwen2VLVisionBlock``: ``VisionMlp(dim=
embed_dim, hidden_dim=int(embed_dim * mlp_ratio))``),
``qwen2_5_vl/configuration_qwen2_5_vl.py`` and ``modeling_qwen2_5_vl.py``
(``Qwen2_5_VLMLP(config, bias=True)`` in every vision block).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from skipsearch._types import Norm
from skipsearch.io.checkpoints import CheckpointError
from skipsearch.io.layouts import (
    SANDWICH_FORM,
    SANDWICH_NOTE,
    Family,
    Part,
    config_int,
    config_number,
    llama_names,
)

__all__ = ["FAMILIES", "TowerPart"]

#: Sub-config defaults, by the sub-config's ``model_type``.
Defaults = Callable[[dict[str, Any]], dict[str, Any]]

# CLIPTextConfig / CLIPVisionConfig (configuration_clip.py).
CLIP_TEXT = {
    "hidden_size": 512,
    "intermediate_size": 2048,
    "num_hidden_layers": 12,
    "hidden_act": "quick_gelu",
}
CLIP_VISION = {
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "hidden_act": "quick_gelu",
}
# SiglipTextConfig / SiglipVisionConfig (configuration_siglip.py): both towers
# default to the same sizes and activation.
SIGLIP_TEXT = {
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "hidden_act": "gelu_pytorch_tanh",
}
SIGLIP_VISION = dict(SIGLIP_TEXT)
# LlamaConfig, what LlavaConfig builds for a text_config without model_type.
LLAMA = {
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "hidden_act": "silu",
}
# LlavaConfig with vision_config None: CLIPVisionConfig with these overrides.
LLAVA_VISION = dict(CLIP_VISION, hidden_size=1024, intermediate_size=4096, num_hidden_layers=24)
# Gemma3TextConfig (configuration_gemma3.py); the MLP reads hidden_activation.
GEMMA3_TEXT = {
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_hidden_layers": 26,
    "hidden_activation": "gelu_pytorch_tanh",
}
# Qwen2VLVisionConfig / Qwen2VLTextConfig (configuration_qwen2_vl.py).
QWEN2_VL_VISION = {"depth": 32, "embed_dim": 1280, "mlp_ratio": 4, "hidden_act": "quick_gelu"}
QWEN2_VL_TEXT = {
    "hidden_size": 8192,
    "intermediate_size": 29568,
    "num_hidden_layers": 80,
    "hidden_act": "silu",
}
# Qwen2_5_VLVisionConfig / Qwen2_5_VLTextConfig (configuration_qwen2_5_vl.py).
QWEN2_5_VL_VISION = {
    "depth": 32,
    "hidden_size": 3584,
    "intermediate_size": 3420,
    "hidden_act": "silu",
}
QWEN2_5_VL_TEXT = dict(QWEN2_VL_TEXT)


Items = tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class _Fixed:
    """The same defaults for every sub-config (a dataclass of items, so that
    families pickle, compare and hash by value)."""

    items: Items

    def __call__(self, sub: dict[str, Any]) -> dict[str, Any]:
        return dict(self.items)


@dataclass(frozen=True)
class _ByType:
    """Defaults chosen by the sub-config's ``model_type`` (``absent`` when it
    has none, as LLaVA's config assumes); other types get none."""

    table: tuple[tuple[str, Items], ...]
    absent: str

    def __call__(self, sub: dict[str, Any]) -> dict[str, Any]:
        return dict(dict(self.table).get(sub.get("model_type") or self.absent, ()))


def _fixed(defaults: dict[str, Any]) -> Defaults:
    return _Fixed(tuple(defaults.items()))


def _by_type(table: dict[str, dict[str, Any]], absent: str) -> Defaults:
    return _ByType(tuple((k, tuple(v.items())) for k, v in table.items()), absent)


@dataclass(frozen=True)
class TowerPart(Part):
    """A :class:`~skipsearch.io.layouts.Part` whose sub-config is completed with
    the transformers config class's defaults.

    Parameters
    ----------
    defaults : callable
        The (raw) sub-config -> the defaults of its config class; a key that
        is absent or null in the sub-config takes the default's value.
    when_absent : tuple of (key, value) pairs, optional
        The defaults when the sub-config itself is absent or null (LLaVA
        builds a larger CLIP tower then). Default: ``defaults({})``.
    legacy : str, optional
        A top-level key whose object replaces the sub-config when present:
        ``CLIPConfig`` rebuilds ``text_config`` from ``text_config_dict``
        (its missing keys take the class defaults, not ``text_config``'s).
    top_level : bool
        The keys are read from the top level when the sub-config is absent
        (Qwen2-VL configs written before ``text_config`` existed).
    """

    defaults: Defaults = field(default=_fixed({}), repr=False)
    when_absent: Optional[Items] = field(default=None, repr=False)
    legacy: Optional[str] = None
    top_level: bool = False

    def sub_config(self, config: dict[str, Any], where: str) -> dict[str, Any]:
        """The sub-config, completed with its config class's defaults."""
        raw: Any = config
        for key in self.config:
            raw = raw.get(key) if isinstance(raw, dict) else None
        if self.legacy is not None and config.get(self.legacy) is not None:
            raw = config[self.legacy]
            if not isinstance(raw, dict):
                raise CheckpointError(f"{where}: {self.legacy} must be an object, got {raw!r}")
        elif raw is None and self.top_level:
            raw = config
        elif raw is None:
            base = self.when_absent if self.when_absent is not None else self.defaults({})
            return dict(base)
        else:
            # Raises for a sub-config that is not an object.
            raw = super().sub_config(config, where)
        out = dict(self.defaults(raw))
        out.update({k: v for k, v in raw.items() if v is not None})
        return out


_PRE: Norm = "pre"
_CLIP_FORM = "x + f(LN x) (pre-LN: layer_norm2 before the MLP)"
_QWEN_VISION_FORM = "x + f(N x) (pre-norm: norm2 before the MLP)"
_LM_FORM = "x + f(RMSNorm x) (pre-norm: post_attention_layernorm before the MLP)"


def _fc(
    prefix: str,
    stack: str,
    config: tuple[str, ...],
    defaults: Defaults,
    *,
    form: str = _CLIP_FORM,
    **kw: Any,
) -> TowerPart:
    """A CLIP-style ``fc1``/``fc2`` MLP at ``<prefix>{i}.mlp``."""
    return TowerPart(
        kind="mlp",
        up=f"*{prefix}{{i}}.mlp.fc1.weight",
        down=f"*{prefix}{{i}}.mlp.fc2.weight",
        stack=stack,
        config=config,
        defaults=defaults,
        norm=_PRE,
        form=form,
        **kw,
    )


def _vision_tower(defaults: Defaults, **kw: Any) -> TowerPart:
    """A multimodal model's CLIP-style vision tower (``vision_config``):
    ``vision_tower.vision_model.encoder.layers.{i}.mlp``, or since
    transformers 4.52 ``model.vision_tower.vision_model.encoder.layers``."""
    return _fc(
        "vision_tower.vision_model.encoder.layers.", "vision", ("vision_config",), defaults, **kw
    )


def _clip(text: dict[str, Any], vision: dict[str, Any], name: str, legacy: bool) -> Family:
    """CLIP/SigLIP: ``text_model.encoder.layers`` and
    ``vision_model.encoder.layers``; either tower may be missing (a
    ``CLIPVisionModel`` or ``CLIPTextModel`` export under ``model_type``
    ``clip``, the Stable Diffusion safety checker's vision-only tower)."""
    note = (
        "the SigLIP vision tower's attention-pooling head (vision_model.head.mlp, "
        "x + mlp(LN x) on the pooled token) is one more residual MLP outside the layer "
        "stack; it is not scanned"
        if name == "siglip"
        else None
    )
    return Family(
        name=name,
        parts=(
            _fc(
                "text_model.encoder.layers.",
                "text",
                ("text_config",),
                _fixed(text),
                legacy="text_config_dict" if legacy else None,
                optional=True,
            ),
            _fc(
                "vision_model.encoder.layers.",
                "vision",
                ("vision_config",),
                _fixed(vision),
                legacy="vision_config_dict" if legacy else None,
                note=note,
                optional=True,
            ),
        ),
    )


def _single(defaults: dict[str, Any], prefix: str, stack: str, name: str) -> Family:
    """A standalone tower config (``clip_vision_model``, ...): its keys sit at
    the top level."""
    return Family(
        name=name,
        parts=(
            _fc(
                prefix,
                stack,
                (),
                _fixed(defaults),
                top_level=True,
            ),
        ),
    )


_VISION_TYPES = {"clip_vision_model": CLIP_VISION, "siglip_vision_model": SIGLIP_VISION}


def _lm(
    config: tuple[str, ...],
    defaults: Defaults,
    *,
    prefix: str = "*language_model.*layers.{i}.mlp.",
    activation_keys: tuple[str, ...] = ("hidden_act",),
    **kw: Any,
) -> TowerPart:
    """The gated ``gate_proj``/``up_proj``/``down_proj`` MLP of the language model."""
    return TowerPart(
        kind="mlp",
        **llama_names(prefix),
        stack="text",
        config=config,
        defaults=defaults,
        activation_keys=activation_keys,
        norm=_PRE,
        **kw,
    )


_LLAVA = Family(
    name="llava",
    parts=(
        _vision_tower(
            _by_type(_VISION_TYPES, "clip_vision_model"),
            when_absent=tuple(LLAVA_VISION.items()),
            note=(
                "LLaVA feeds the language model the vision tower's hidden state at "
                "vision_feature_layer (-2 by default): the last vision layers do not reach "
                "the output"
            ),
        ),
        # Old names language_model.model.layers.{i}.mlp; new model.language_model.layers.
        _lm(
            ("text_config",),
            _by_type({"llama": LLAMA}, "llama"),
            when_absent=tuple(LLAMA.items()),
            form=_LM_FORM,
        ),
    ),
)

_GEMMA3 = Family(
    name="gemma3",
    parts=(
        _vision_tower(
            _fixed(SIGLIP_VISION),
            note="SigLIP vision tower (SiglipVisionConfig defaults for absent keys)",
        ),
        _lm(
            ("text_config",),
            _fixed(GEMMA3_TEXT),
            activation_keys=("hidden_activation",),
            form=SANDWICH_FORM,
            note=SANDWICH_NOTE + "; the MLP reads text_config.hidden_activation (Gemma3TextConfig)",
        ),
    ),
)


def _qwen_lm(defaults: dict[str, Any]) -> TowerPart:
    # Old names model.layers.{i}.mlp; since transformers 4.52
    # model.language_model.layers.{i}.mlp. Sizes from text_config, or from the
    # top level in configs that predate it.
    return _lm(
        ("text_config",),
        _fixed(defaults),
        prefix="*layers.{i}.mlp.",
        top_level=True,
        form=_LM_FORM,
    )


def _qwen2_vl_m(sub: dict[str, Any]) -> Optional[int]:
    """``int(embed_dim * mlp_ratio)``, as ``Qwen2VLVisionBlock`` builds it.

    Raises
    ------
    CheckpointError
        ``mlp_ratio`` is not a finite positive number.
    """
    ratio = config_number(sub, "mlp_ratio", positive=True, name="vision_config.mlp_ratio")
    d = config_int(sub, "embed_dim")
    return None if d is None else int(d * ratio)


_QWEN2_VL = Family(
    name="qwen2_vl",
    parts=(
        # visual.blocks.{i}.mlp (new: model.visual.blocks.{i}.mlp). The vision
        # width is embed_dim; vision_config.hidden_size is the LM's width (the
        # merger's output), not the tower's.
        _fc(
            "visual.blocks.",
            "vision",
            ("vision_config",),
            _fixed(QWEN2_VL_VISION),
            d_keys=("embed_dim",),
            m_keys=(),
            m_rule=_qwen2_vl_m,
            layer_keys=("depth",),
            form=_QWEN_VISION_FORM,
        ),
        _qwen_lm(QWEN2_VL_TEXT),
    ),
)

_QWEN2_5_VL = Family(
    name="qwen2_5_vl",
    parts=(
        # A gated MLP with biases on every projection (Qwen2_5_VLMLP(config,
        # bias=True)), after an RMSNorm.
        TowerPart(
            kind="mlp",
            **llama_names("*visual.blocks.{i}.mlp."),
            stack="vision",
            config=("vision_config",),
            defaults=_fixed(QWEN2_5_VL_VISION),
            layer_keys=("depth",),
            norm=_PRE,
            form=_QWEN_VISION_FORM,
            note="vision MLP with biases on gate_proj, up_proj and down_proj",
        ),
        _qwen_lm(QWEN2_5_VL_TEXT),
    ),
)

#: ``model_type`` -> :class:`~skipsearch.io.layouts.Family`.
FAMILIES: dict[str, Family] = {
    "clip": _clip(CLIP_TEXT, CLIP_VISION, "clip", legacy=True),
    "siglip": _clip(SIGLIP_TEXT, SIGLIP_VISION, "siglip", legacy=False),
    "clip_vision_model": _single(
        CLIP_VISION, "vision_model.encoder.layers.", "vision", "clip_vision_model"
    ),
    "clip_text_model": _single(CLIP_TEXT, "text_model.encoder.layers.", "text", "clip_text_model"),
    "siglip_vision_model": _single(
        SIGLIP_VISION, "vision_model.encoder.layers.", "vision", "siglip_vision_model"
    ),
    "llava": _LLAVA,
    "gemma3": _GEMMA3,
    "qwen2_vl": _QWEN2_VL,
    "qwen2_5_vl": _QWEN2_5_VL,
}
