"""skipsearch.scan on tiny checkpoints of the tower and multimodal families:
CLIP, SigLIP, LLaVA, Gemma 3, Qwen2-VL and Qwen2.5-VL.

Every checkpoint uses the real tensor names (prefix included) and the real
config keys, shrunk: towers of different widths (text d=4, m=8; vision d=6,
m=12), two layers each, a planted absorbable block (docs/theory.md §2.2: the
flip set {0..d-1}, c = 1) in layer 0 of each ungated tower and a random one
in layer 1. Sources are named in each builder.
"""

from __future__ import annotations

import numpy as np
import pytest
from skipsearch.io.checkpoints import CheckpointError
from skipsearch.io.layouts import FAMILIES

from tests.family_builders import biased_pair
from tests.test_families import generic, planted, save, scan

DT, MT = 4, 8  # text tower / language model
DV, MV = 6, 12  # vision tower


def rows(reports):
    return [(r.stack, r.block, r.kind, r.d, r.m, r.verdict) for r in reports]


def fc_tower(rng, t, base, d, m, layers=2, plant=(0,)):
    """CLIP/SigLIP encoder layers at ``base{i}.``: CLIPEncoderLayer's layer_norm1,
    self_attn (q/k/v/out_proj), layer_norm2 and mlp.fc1 (m, d) / mlp.fc2 (d, m), with biases
    (src/transformers/models/clip/modeling_clip.py, CLIPMLP and CLIPEncoderLayer)."""
    for i in range(layers):
        up, down = planted(rng, d, m) if i in plant else generic(rng, d, m)
        p = f"{base}{i}."
        t[p + "layer_norm1.weight"] = np.ones(d)
        t[p + "self_attn.q_proj.weight"] = rng.standard_normal((d, d))
        t[p + "self_attn.out_proj.weight"] = rng.standard_normal((d, d))
        t[p + "layer_norm2.weight"] = np.ones(d)
        biased_pair(rng, t, p + "mlp.fc1", p + "mlp.fc2", up, down)
    return t


def gated_lm(rng, t, base, d=DT, m=MT, layers=2, bias=False, mlp="mlp"):
    """LLaMA-style decoder layers at ``base{i}.``: input_layernorm, self_attn.o_proj,
    post_attention_layernorm and mlp.gate_proj / up_proj (m, d), down_proj (d, m)."""
    for i in range(layers):
        p = f"{base}{i}."
        t[p + "input_layernorm.weight"] = np.ones(d)
        t[p + "self_attn.o_proj.weight"] = rng.standard_normal((d, d))
        t[p + "post_attention_layernorm.weight"] = np.ones(d)
        for name, shape in (("gate_proj", (m, d)), ("up_proj", (m, d)), ("down_proj", (d, m))):
            t[f"{p}{mlp}.{name}.weight"] = rng.standard_normal(shape)
            if bias:
                t[f"{p}{mlp}.{name}.bias"] = rng.standard_normal(shape[0]) * 0.1
    return t


# -- CLIP ------------------------------------------------------------------------------------


def clip_config(**extra):
    """openai/clip-vit-large-patch14's config.json (copy in the ourml/clip-vit-large-patch14
    repository, config.json): model_type clip, full text_config / vision_config (model_type
    clip_text_model / clip_vision_model, hidden_act quick_gelu) next to the legacy
    text_config_dict / vision_config_dict that CLIPConfig merges over them."""
    return {
        "architectures": ["CLIPModel"],
        "model_type": "clip",
        "projection_dim": 4,
        "text_config": {
            "hidden_act": "quick_gelu",
            "hidden_size": DT,
            "intermediate_size": MT,
            "model_type": "clip_text_model",
            "num_attention_heads": 2,
            "num_hidden_layers": 2,
        },
        "text_config_dict": {
            "hidden_size": DT,
            "intermediate_size": MT,
            "num_attention_heads": 2,
            "num_hidden_layers": 2,
        },
        "vision_config": {
            "hidden_act": "quick_gelu",
            "hidden_size": DV,
            "intermediate_size": MV,
            "model_type": "clip_vision_model",
            "num_attention_heads": 2,
            "num_hidden_layers": 2,
            "patch_size": 14,
        },
        "vision_config_dict": {
            "hidden_size": DV,
            "intermediate_size": MV,
            "num_attention_heads": 2,
            "num_hidden_layers": 2,
            "patch_size": 14,
        },
        **extra,
    }


def clip_tensors(rng, text=True, vision=True, vision_prefix="vision_model."):
    t = {"logit_scale": np.ones(())}
    if text:
        t["text_model.embeddings.token_embedding.weight"] = rng.standard_normal((11, DT))
        t["text_model.final_layer_norm.weight"] = np.ones(DT)
        t["text_projection.weight"] = rng.standard_normal((4, DT))
        fc_tower(rng, t, "text_model.encoder.layers.", DT, MT)
    if vision:
        t[vision_prefix + "embeddings.class_embedding"] = rng.standard_normal(DV)
        t[vision_prefix + "post_layernorm.weight"] = np.ones(DV)
        fc_tower(rng, t, vision_prefix + "encoder.layers.", DV, MV)
    return t


def test_clip_two_towers(tmp_path):
    path = save(tmp_path / "clip", clip_tensors(np.random.default_rng(0)), clip_config())
    reports = scan(path)
    # quick_gelu: a flip set proves absorbable; the random blocks stay undecided.
    assert rows(reports) == [
        ("text", "text_model.encoder.layers.0.mlp", "mlp", DT, MT, "absorbable"),
        ("text", "text_model.encoder.layers.1.mlp", "mlp", DT, MT, "undecided"),
        ("vision", "vision_model.encoder.layers.0.mlp", "mlp", DV, MV, "absorbable"),
        ("vision", "vision_model.encoder.layers.1.mlp", "mlp", DV, MV, "undecided"),
    ]
    for r in reports:
        assert (r.family, r.activation, r.expert, r.norm) == ("clip", "quick_gelu", None, "pre")
        assert "LN" in r.form
    assert reports[0].result.subset.tolist() == list(range(DT))
    assert reports[2].result.subset.tolist() == list(range(DV))


def test_clip_legacy_dict_wins(tmp_path):
    # CLIPConfig rebuilds text_config from CLIPTextConfig(**text_config_dict): its sizes
    # win over text_config's, and a key it lacks takes the class default (quick_gelu),
    # not text_config's value.
    config = clip_config()
    config["text_config"].update(intermediate_size=99, hidden_act="relu")
    path = save(tmp_path / "clip", clip_tensors(np.random.default_rng(1)), config)
    reports = scan(path)
    text = [r for r in reports if r.stack == "text"]
    assert [(r.m, r.activation) for r in text] == [(MT, "quick_gelu")] * 2
    # Without the legacy dict, text_config is read.
    del config["text_config_dict"]
    config["text_config"].update(intermediate_size=MT)
    path = save(tmp_path / "clip2", clip_tensors(np.random.default_rng(1)), config)
    text = [r for r in scan(path) if r.stack == "text"]
    assert [r.activation for r in text] == ["relu"] * 2


def test_clip_defaults():
    """CLIPTextConfig / CLIPVisionConfig defaults (configuration_clip.py) when keys are absent."""
    text, vision = FAMILIES["clip"].resolve_parts({})
    for part, sizes in ((text, (512, 2048, 12)), (vision, (768, 3072, 12))):
        spec = part.resolve({"model_type": "clip"}, "config.json")
        assert (spec["d"], spec["m"], spec["layers"], spec["hidden_act"]) == (*sizes, "quick_gelu")
    spec = vision.resolve({"vision_config": {"hidden_size": 1024}}, "config.json")
    assert (spec["d"], spec["m"]) == (1024, 3072)


def test_clip_default_sizes_must_match(tmp_path):
    # No sizes in the config: the class defaults (512, 2048) do not fit the tensors.
    path = save(tmp_path / "clip", clip_tensors(np.random.default_rng(2)), {"model_type": "clip"})
    with pytest.raises(CheckpointError):
        scan(path)


def test_safety_checker_vision_only(tmp_path):
    """CompVis/stable-diffusion-safety-checker: model_type clip, a CLIPVisionModel at
    vision_model (keys vision_model.vision_model.encoder.layers...), no text tower; its
    config.json (copy in the taproot repository's safety checker module) carries
    text_config_dict / vision_config_dict."""
    rng = np.random.default_rng(3)
    tensors = clip_tensors(rng, text=False, vision_prefix="vision_model.vision_model.")
    tensors["concept_embeds"] = rng.standard_normal((3, 4))
    tensors["visual_projection.weight"] = rng.standard_normal((4, DV))
    reports = scan(save(tmp_path / "sc", tensors, clip_config()))
    assert rows(reports) == [
        ("vision", "vision_model.vision_model.encoder.layers.0.mlp", "mlp", DV, MV, "absorbable"),
        ("vision", "vision_model.vision_model.encoder.layers.1.mlp", "mlp", DV, MV, "undecided"),
    ]


def test_clip_vision_model_standalone(tmp_path):
    # A CLIPVisionModel export: model_type clip_vision_model, keys at the top level.
    config = dict(clip_config()["vision_config"])
    del config["hidden_act"]  # CLIPVisionConfig default: quick_gelu
    tensors = clip_tensors(np.random.default_rng(4), text=False)
    reports = scan(save(tmp_path / "v", tensors, config))
    assert [(r.stack, r.d, r.m, r.activation, r.verdict) for r in reports] == [
        ("vision", DV, MV, "quick_gelu", "absorbable"),
        ("vision", DV, MV, "quick_gelu", "undecided"),
    ]


# -- SigLIP ----------------------------------------------------------------------------------


def siglip_config():
    """SiglipConfig: text_config / vision_config with model_type siglip_text_model /
    siglip_vision_model and no hidden_act (SiglipTextConfig and SiglipVisionConfig default
    to gelu_pytorch_tanh, src/transformers/models/siglip/configuration_siglip.py), as in
    google/siglip-* configs and Gemma 3's vision_config."""
    return {
        "architectures": ["SiglipModel"],
        "model_type": "siglip",
        "text_config": {
            "hidden_size": DT,
            "intermediate_size": MT,
            "model_type": "siglip_text_model",
            "num_attention_heads": 2,
            "num_hidden_layers": 2,
        },
        "vision_config": {
            "hidden_size": DV,
            "intermediate_size": MV,
            "model_type": "siglip_vision_model",
            "num_attention_heads": 2,
            "num_hidden_layers": 2,
            "patch_size": 14,
        },
    }


def test_siglip_two_towers(tmp_path):
    rng = np.random.default_rng(5)
    tensors = clip_tensors(rng)
    tensors["vision_model.head.probe"] = rng.standard_normal((1, 1, DV))
    tensors["vision_model.head.mlp.fc1.weight"] = rng.standard_normal((MV, DV))
    tensors["vision_model.head.mlp.fc2.weight"] = rng.standard_normal((DV, MV))
    reports = scan(save(tmp_path / "siglip", tensors, siglip_config()))
    # gelu_tanh: the random blocks are not absorbable (generic weights).
    assert rows(reports) == [
        ("text", "text_model.encoder.layers.0.mlp", "mlp", DT, MT, "absorbable"),
        ("text", "text_model.encoder.layers.1.mlp", "mlp", DT, MT, "not_absorbable"),
        ("vision", "vision_model.encoder.layers.0.mlp", "mlp", DV, MV, "absorbable"),
        ("vision", "vision_model.encoder.layers.1.mlp", "mlp", DV, MV, "not_absorbable"),
    ]
    assert {r.activation for r in reports} == {"gelu_tanh"}
    assert "head" in reports[-1].note


def test_siglip_defaults():
    text, vision = FAMILIES["siglip"].resolve_parts({})
    for part in (text, vision):
        spec = part.resolve({"model_type": "siglip"}, "config.json")
        assert (spec["d"], spec["m"], spec["layers"]) == (768, 3072, 12)
        assert spec["hidden_act"] == "gelu_pytorch_tanh"


# -- LLaVA -----------------------------------------------------------------------------------


def llava_config(**text):
    """llava-hf/llava-1.5-7b-hf's config.json (as logged by transformers in a public issue
    thread and in lite_llama's test): text_config with model_type llama and no sizes or
    hidden_act (LlamaConfig defaults), vision_config clip_vision_model without hidden_act,
    vision_feature_layer -2."""
    return {
        "architectures": ["LlavaForConditionalGeneration"],
        "image_token_index": 32000,
        "model_type": "llava",
        "projector_hidden_act": "gelu",
        "text_config": {
            "_name_or_path": "lmsys/vicuna-7b-v1.5",
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "rms_norm_eps": 1e-05,
            "hidden_size": DT,
            "intermediate_size": MT,
            "num_hidden_layers": 2,
            **text,
        },
        "vision_config": {
            "hidden_size": DV,
            "image_size": 336,
            "intermediate_size": MV,
            "model_type": "clip_vision_model",
            "num_attention_heads": 2,
            "num_hidden_layers": 2,
            "patch_size": 14,
        },
        "vision_feature_layer": -2,
        "vision_feature_select_strategy": "default",
    }


# LlavaForConditionalGeneration._checkpoint_conversion_mapping (modeling_llava.py):
# ^language_model.model -> model.language_model, ^vision_tower -> model.vision_tower.
LLAVA_NAMES = {
    "old": ("vision_tower.vision_model.", "language_model.model.layers."),
    "new": ("model.vision_tower.vision_model.", "model.language_model.layers."),
}


@pytest.mark.parametrize("names", ["old", "new"])
def test_llava(tmp_path, names):
    vision, lm = LLAVA_NAMES[names]
    rng = np.random.default_rng(6)
    t = {
        "multi_modal_projector.linear_1.weight": rng.standard_normal((DT, DV)),
        lm.replace("layers.", "embed_tokens.weight"): rng.standard_normal((11, DT)),
    }
    fc_tower(rng, t, vision + "encoder.layers.", DV, MV)
    gated_lm(rng, t, lm)
    reports = scan(save(tmp_path / names, t, llava_config()))
    assert rows(reports) == [
        ("vision", f"{vision}encoder.layers.0.mlp", "mlp", DV, MV, "absorbable"),
        ("vision", f"{vision}encoder.layers.1.mlp", "mlp", DV, MV, "undecided"),
        ("text", f"{lm}0.mlp", "mlp", DT, MT, "not_absorbable"),
        ("text", f"{lm}1.mlp", "mlp", DT, MT, "not_absorbable"),
    ]
    assert [r.activation for r in reports] == ["quick_gelu"] * 2 + ["swiglu"] * 2
    assert "vision_feature_layer" in reports[0].note


def test_llava_defaults():
    """The real llava-1.5 config: LlamaConfig and CLIPVisionConfig defaults fill the gaps;
    no vision_config at all gives LlavaConfig's own CLIP tower (1024, 4096, 24 layers)."""
    vision, text = FAMILIES["llava"].resolve_parts({})
    config = llava_config()
    for key in ("hidden_size", "intermediate_size", "num_hidden_layers"):
        del config["text_config"][key]
    spec = text.resolve(config, "config.json")
    assert (spec["d"], spec["m"], spec["layers"], spec["hidden_act"]) == (4096, 11008, 32, "silu")
    assert spec["activation"].name == "swiglu"
    spec = vision.resolve(config, "config.json")
    assert (spec["d"], spec["m"], spec["hidden_act"]) == (DV, MV, "quick_gelu")
    spec = vision.resolve({"model_type": "llava"}, "config.json")
    assert (spec["d"], spec["m"], spec["layers"]) == (1024, 4096, 24)
    # llava-interleave-qwen: a SigLIP vision tower takes SigLIP's default activation.
    spec = vision.resolve({"vision_config": {"model_type": "siglip_vision_model"}}, "c")
    assert spec["hidden_act"] == "gelu_pytorch_tanh"


def test_llava_unknown_text_model_needs_hidden_act():
    # A text model other than llama gets no class defaults: its activation must be named.
    _, text = FAMILIES["llava"].resolve_parts({})
    with pytest.raises(CheckpointError, match="hidden_act"):
        text.resolve({"text_config": {"model_type": "mistral"}}, "config.json")


# -- Gemma 3 ---------------------------------------------------------------------------------


def gemma3_config():
    """google/gemma-3-27b-it's config.json (copy in a LitGPT-to-HF conversion script):
    model_type gemma3, text_config gemma3_text with hidden_activation, vision_config
    siglip_vision_model without hidden_act, vision_use_head false."""
    return {
        "architectures": ["Gemma3ForConditionalGeneration"],
        "mm_tokens_per_image": 256,
        "model_type": "gemma3",
        "text_config": {
            "head_dim": 2,
            "hidden_activation": "gelu_pytorch_tanh",
            "hidden_size": DT,
            "intermediate_size": MT,
            "model_type": "gemma3_text",
            "num_attention_heads": 2,
            "num_hidden_layers": 2,
            "sliding_window_pattern": 6,
        },
        "vision_config": {
            "hidden_size": DV,
            "image_size": 896,
            "intermediate_size": MV,
            "model_type": "siglip_vision_model",
            "num_attention_heads": 2,
            "num_hidden_layers": 2,
            "patch_size": 14,
            "vision_use_head": False,
        },
    }


@pytest.mark.parametrize("names", ["old", "new"])
def test_gemma3(tmp_path, names):
    vision, lm = LLAVA_NAMES[names]  # Gemma3ForConditionalGeneration uses LLaVA's mapping
    rng = np.random.default_rng(7)
    t = {"multi_modal_projector.mm_input_projection_weight": rng.standard_normal((DV, DT))}
    fc_tower(rng, t, vision + "encoder.layers.", DV, MV)
    gated_lm(rng, t, lm)
    for i in range(2):
        t[f"{lm}{i}.pre_feedforward_layernorm.weight"] = np.ones(DT)
        t[f"{lm}{i}.post_feedforward_layernorm.weight"] = np.ones(DT)
    reports = scan(save(tmp_path / names, t, gemma3_config()))
    assert rows(reports) == [
        ("vision", f"{vision}encoder.layers.0.mlp", "mlp", DV, MV, "absorbable"),
        ("vision", f"{vision}encoder.layers.1.mlp", "mlp", DV, MV, "not_absorbable"),
        ("text", f"{lm}0.mlp", "mlp", DT, MT, "not_absorbable"),
        ("text", f"{lm}1.mlp", "mlp", DT, MT, "not_absorbable"),
    ]
    assert [r.activation for r in reports] == ["gelu_tanh"] * 2 + ["geglu"] * 2
    for r in reports[2:]:
        # The verdict is the MLP's own (the linearization argument); the row
        # says the model normalizes its output inside the residual branch.
        assert r.result.argument == "linearization"
        assert "post_feedforward_layernorm" in r.note and "MLP alone" in r.note
        assert "RMSNorm_post" in r.form


def test_gemma3_defaults():
    vision, text = FAMILIES["gemma3"].resolve_parts({})
    spec = text.resolve({"model_type": "gemma3"}, "config.json")
    assert (spec["d"], spec["m"], spec["layers"]) == (2304, 9216, 26)
    assert spec["hidden_act"] == "gelu_pytorch_tanh"
    # hidden_act is not what Gemma3MLP reads.
    spec = text.resolve({"text_config": {"hidden_act": "silu"}}, "config.json")
    assert spec["hidden_act"] == "gelu_pytorch_tanh"
    spec = vision.resolve(gemma3_config(), "config.json")
    assert spec["hidden_act"] == "gelu_pytorch_tanh"


# -- Qwen2-VL and Qwen2.5-VL -----------------------------------------------------------------


def qwen2_vl_config(text_config=False):
    """Qwen/Qwen2-VL-7B-Instruct's config.json layout: the language model's keys at the top
    level (Qwen2VLConfig builds text_config from them), vision_config with depth, embed_dim,
    mlp_ratio and hidden_size = the LM width (the merger's output), hidden_act quick_gelu."""
    lm = {"hidden_act": "silu", "hidden_size": DT, "intermediate_size": MT, "num_hidden_layers": 2}
    config = {
        "architectures": ["Qwen2VLForConditionalGeneration"],
        "model_type": "qwen2_vl",
        "vision_config": {
            "depth": 2,
            "embed_dim": DV,
            "hidden_act": "quick_gelu",
            "hidden_size": DT,
            "mlp_ratio": MV // DV,
            "num_heads": 2,
            "patch_size": 14,
            "spatial_merge_size": 2,
        },
    }
    if text_config:
        config["text_config"] = {**lm, "model_type": "qwen2_vl_text"}
    else:
        config.update(lm)
    return config


# Qwen2-VL's mapping (modeling_qwen2_vl.py): ^visual -> model.visual,
# ^model(?!.(language_model|visual)) -> model.language_model.
QWEN_NAMES = {
    "old": ("visual.blocks.", "model.layers."),
    "new": ("model.visual.blocks.", "model.language_model.layers."),
}


@pytest.mark.parametrize("names", ["old", "new"])
def test_qwen2_vl(tmp_path, names):
    vision, lm = QWEN_NAMES[names]
    rng = np.random.default_rng(8)
    t = {"visual.merger.mlp.0.weight": rng.standard_normal((DT, 4 * DV))}
    for i in range(2):
        up, down = planted(rng, DV, MV) if i == 0 else generic(rng, DV, MV)
        p = f"{vision}{i}."
        t[p + "norm1.weight"] = np.ones(DV)
        t[p + "attn.qkv.weight"] = rng.standard_normal((3 * DV, DV))
        t[p + "norm2.weight"] = np.ones(DV)
        biased_pair(rng, t, p + "mlp.fc1", p + "mlp.fc2", up, down)
    gated_lm(rng, t, lm)
    reports = scan(save(tmp_path / names, t, qwen2_vl_config(text_config=names == "new")))
    assert rows(reports) == [
        ("vision", f"{vision}0.mlp", "mlp", DV, MV, "absorbable"),
        ("vision", f"{vision}1.mlp", "mlp", DV, MV, "undecided"),
        ("text", f"{lm}0.mlp", "mlp", DT, MT, "not_absorbable"),
        ("text", f"{lm}1.mlp", "mlp", DT, MT, "not_absorbable"),
    ]
    assert [r.activation for r in reports] == ["quick_gelu"] * 2 + ["swiglu"] * 2


def test_qwen2_vl_defaults():
    """Qwen2VLVisionConfig: depth 32, embed_dim 1280, mlp_ratio 4, quick_gelu; the vision
    width is embed_dim, never vision_config.hidden_size."""
    vision, text = FAMILIES["qwen2_vl"].resolve_parts({})
    spec = vision.resolve({"vision_config": {"hidden_size": 3584}}, "config.json")
    assert (spec["d"], spec["m"], spec["layers"], spec["hidden_act"]) == (
        1280,
        5120,
        32,
        "quick_gelu",
    )
    spec = text.resolve({"hidden_size": 3584, "intermediate_size": 18944}, "config.json")
    assert (spec["d"], spec["m"], spec["layers"], spec["hidden_act"]) == (3584, 18944, 80, "silu")


def test_qwen2_vl_vision_width_must_match(tmp_path):
    rng = np.random.default_rng(9)
    t = {}
    fc_tower(rng, t, "visual.blocks.", DV, MV)
    gated_lm(rng, t, "model.layers.")
    config = qwen2_vl_config()
    config["vision_config"]["mlp_ratio"] = 3  # m = 18, the tensors have 12
    with pytest.raises(CheckpointError):
        scan(save(tmp_path / "q", t, config))


def test_qwen2_5_vl(tmp_path):
    """Qwen/Qwen2.5-VL-7B-Instruct (config.json as saved by transformers 4.53.1, copy in a
    HunyuanImage text-encoder loader): vision_config hidden_size 1280, intermediate_size
    3420, hidden_act silu, depth 32; text_config qwen2_5_vl_text. Vision blocks hold a gated
    MLP with biases (Qwen2_5_VLMLP(config, bias=True)): undecided, as biased gated blocks are."""
    rng = np.random.default_rng(10)
    t = {}
    gated_lm(rng, t, "visual.blocks.", d=DV, m=MV, bias=True)
    gated_lm(rng, t, "model.layers.")
    config = {
        "architectures": ["Qwen2_5_VLForConditionalGeneration"],
        "model_type": "qwen2_5_vl",
        "text_config": {
            "hidden_act": "silu",
            "hidden_size": DT,
            "intermediate_size": MT,
            "model_type": "qwen2_5_vl_text",
            "num_hidden_layers": 2,
        },
        "vision_config": {
            "depth": 2,
            "fullatt_block_indexes": [1],
            "hidden_act": "silu",
            "hidden_size": DV,
            "intermediate_size": MV,
            "model_type": "qwen2_5_vl",
            "out_hidden_size": DT,
        },
    }
    reports = scan(save(tmp_path / "q25", t, config))
    assert rows(reports) == [
        ("vision", "visual.blocks.0.mlp", "mlp", DV, MV, "undecided"),
        ("vision", "visual.blocks.1.mlp", "mlp", DV, MV, "undecided"),
        ("text", "model.layers.0.mlp", "mlp", DT, MT, "not_absorbable"),
        ("text", "model.layers.1.mlp", "mlp", DT, MT, "not_absorbable"),
    ]
    assert all(r.activation == "swiglu" for r in reports)
    assert "bias" in reports[0].reason
