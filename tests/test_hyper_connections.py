"""Checkpoints whose residual is a hyper-connection: DeepSeek-V4 and others.

A hyper-connection mixes ``hc_mult`` residual streams around each FFN by
maps that depend on the token, so the FFN's skip is no fixed linear map and
no theorem skipsearch applies covers the block: every block is reported,
once, as undecided with a reason naming the hyper-connection, whatever
layout found it.

Sources for DeepSeek-V4's names and config keys:

- huggingface/transformers ``src/transformers/models/deepseek_v4/``:
  ``configuration_deepseek_v4.py`` (commit 015c0781: ``hc_mult`` 4,
  ``moe_intermediate_size``, ``n_routed_experts``, ``swiglu_limit`` 10.0,
  ``attribute_map`` intermediate_size -> moe_intermediate_size) and
  ``modeling_deepseek_v4.py`` (commit 01976081: ``DeepseekV4DecoderLayer``
  with ``self_attn``, ``mlp``, ``input_layernorm``,
  ``post_attention_layernorm``, ``attn_hc``, ``ffn_hc``;
  ``DeepseekV4HyperConnection`` ``fn [(2 + N) N, N d]``, ``base``,
  ``scale [3]``; ``DeepseekV4Experts`` ``gate_up_proj [E, 2m, d]`` split by
  ``chunk(2, dim=-1)`` as gate then up, ``down_proj [E, d, m]``;
  ``DeepseekV4MLP`` shared expert; routers ``gate.weight`` with
  ``e_score_correction_bias`` or the hash layers' ``tid2eid``;
  ``DeepseekV4HyperHead`` ``hc_fn``, ``hc_base``, ``hc_scale``);
- DeepSeek's reference ``inference/model.py`` (``Block``: ``hc_attn_fn``,
  ``hc_attn_base``, ``hc_attn_scale``, ``hc_ffn_*``; ``Expert``: ``w1``
  gate, ``w3`` up, ``w2`` down; ``Transformer``: ``hc_head_*``) for the
  release's names;
- DeepSeek-V4-Flash's ``config.json`` (deepseek-ai/DeepSeek-V4-Flash), whose
  keys the fixture keeps, its sizes shrunk to d = 8, m = 16, 4 routed
  experts and 3 layers;
- llama.cpp (ggml-org/llama.cpp, ``deepseek4``) for the GGUF names
  ``blk.N.hc_ffn_fn`` and ``output_hc_fn``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import save_file
from skipsearch.io.checkpoints import CheckpointError
from skipsearch.io.hyper_connections import hyper_connection_reason

from tests.family_builders import assert_weights
from tests.test_families import scan
from tests.test_families_moe import read

D, M, E, LAYERS, N = 8, 16, 4, 3, 4


def flash_config(**overrides) -> dict:
    """DeepSeek-V4-Flash's config.json, every key kept, its sizes shrunk."""
    config = {
        "architectures": ["DeepseekV4ForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 0,
        "eos_token_id": 1,
        "expert_dtype": "fp4",
        "hc_eps": 1e-06,
        "hc_mult": N,
        "hc_sinkhorn_iters": 20,
        "head_dim": 4,
        "hidden_act": "silu",
        "hidden_size": D,
        "index_head_dim": 2,
        "index_n_heads": 2,
        "index_topk": 4,
        "initializer_range": 0.02,
        "max_position_embeddings": 64,
        "model_type": "deepseek_v4",
        "moe_intermediate_size": M,
        "n_routed_experts": E,
        "n_shared_experts": 1,
        "norm_topk_prob": True,
        "num_attention_heads": 2,
        "num_experts_per_tok": 2,
        "num_hidden_layers": LAYERS,
        "num_hash_layers": 1,
        "num_key_value_heads": 1,
        "num_nextn_predict_layers": 1,
        "o_groups": 2,
        "o_lora_rank": 4,
        "q_lora_rank": 4,
        "qk_rope_head_dim": 2,
        "rms_norm_eps": 1e-06,
        "rope_theta": 10000,
        "routed_scaling_factor": 1.5,
        "scoring_func": "sqrtsoftplus",
        "sliding_window": 4,
        "swiglu_limit": 10.0,
        "tie_word_embeddings": False,
        "topk_method": "noaux_tc",
        "torch_dtype": "bfloat16",
        "vocab_size": 11,
        "compress_rope_theta": 160000,
        "compress_ratios": [0, 4, 128, 0],
    }
    config.update(overrides)
    return config


def save(directory, tensors: dict, config: dict):
    """Floats as float32, the hash router's ``tid2eid`` as int64."""
    directory.mkdir(parents=True, exist_ok=True)
    save_file(
        {
            k: np.ascontiguousarray(v, dtype=np.int64 if k.endswith("tid2eid") else np.float32)
            for k, v in tensors.items()
        },
        str(directory / "model.safetensors"),
    )
    (directory / "config.json").write_text(json.dumps(config))
    return directory


def swiglu(rng):
    return rng.standard_normal((M, D)), rng.standard_normal((M, D)), rng.standard_normal((D, M))


def transformers_names(rng) -> tuple[dict, dict]:
    """Every tensor of transformers' DeepseekV4ForCausalLM layout; returns the
    tensors and the planted (gate, up, down) by (layer, expert or None)."""
    mix = (2 + N) * N
    t = {
        "model.embed_tokens.weight": rng.standard_normal((11, D)),
        "model.norm.weight": np.ones(D),
        "lm_head.weight": rng.standard_normal((11, D)),
        "model.hc_head.hc_fn": rng.standard_normal((N, N * D)),
        "model.hc_head.hc_base": rng.standard_normal(N),
        "model.hc_head.hc_scale": rng.standard_normal(1),
    }
    planted = {}
    for i in range(LAYERS):
        b = f"model.layers.{i}."
        t[b + "input_layernorm.weight"] = np.ones(D)
        t[b + "post_attention_layernorm.weight"] = np.ones(D)
        for hc in ("attn_hc", "ffn_hc"):
            t[b + f"{hc}.fn"] = rng.standard_normal((mix, N * D))
            t[b + f"{hc}.base"] = rng.standard_normal(mix)
            t[b + f"{hc}.scale"] = rng.standard_normal(3)
        for proj, shape in (
            ("q_a_proj", (4, D)),
            ("q_a_norm", (4,)),
            ("q_b_proj", (8, 4)),
            ("kv_proj", (4, D)),
            ("kv_norm", (4,)),
            ("o_a_proj", (4, 4)),
            ("o_b_proj", (D, 4)),
        ):
            t[b + f"self_attn.{proj}.weight"] = rng.standard_normal(shape)
        t[b + "self_attn.sinks"] = rng.standard_normal(2)
        if i > 0:  # compressed attention layers (compress_ratios 4, 128)
            c = b + "self_attn.compressor."
            t[c + "kv_proj.weight"] = rng.standard_normal((4, D))
            t[c + "gate_proj.weight"] = rng.standard_normal((4, D))
            t[c + "position_bias"] = rng.standard_normal((4, 4))
            t[c + "kv_norm.weight"] = np.ones(4)
        t[b + "mlp.gate.weight"] = rng.standard_normal((E, D))
        if i < 1:  # num_hash_layers
            t[b + "mlp.gate.tid2eid"] = rng.integers(0, E, size=(11, 2))
        else:
            t[b + "mlp.gate.e_score_correction_bias"] = rng.standard_normal(E)
        experts = [swiglu(rng) for _ in range(E)]
        t[b + "mlp.experts.gate_up_proj"] = np.stack(
            [np.concatenate([g, u]) for g, u, _ in experts]
        )
        t[b + "mlp.experts.down_proj"] = np.stack([w for _, _, w in experts])
        shared = swiglu(rng)
        for name, w in zip(("gate_proj", "up_proj", "down_proj"), shared):
            t[b + f"mlp.shared_experts.{name}.weight"] = w
        planted.update({(i, e): w for e, w in enumerate(experts)})
        planted[i, None] = shared
    return t, planted


def release_names(rng) -> tuple[dict, dict]:
    """DeepSeek's own names (inference/model.py), unquantized."""
    mix = (2 + N) * N
    t = {
        "embed.weight": rng.standard_normal((11, D)),
        "norm.weight": np.ones(D),
        "head.weight": rng.standard_normal((11, D)),
        "hc_head_fn": rng.standard_normal((N, N * D)),
        "hc_head_base": rng.standard_normal(N),
        "hc_head_scale": rng.standard_normal(1),
    }
    planted = {}
    for i in range(LAYERS):
        b = f"layers.{i}."
        t[b + "attn_norm.weight"] = np.ones(D)
        t[b + "ffn_norm.weight"] = np.ones(D)
        for hc in ("hc_attn", "hc_ffn"):
            t[b + f"{hc}_fn"] = rng.standard_normal((mix, N * D))
            t[b + f"{hc}_base"] = rng.standard_normal(mix)
            t[b + f"{hc}_scale"] = rng.standard_normal(3)
        t[b + "attn.wq_a.weight"] = rng.standard_normal((4, D))
        t[b + "ffn.gate.weight"] = rng.standard_normal((E, D))
        experts = [swiglu(rng) for _ in range(E)]
        for e, (g, u, w) in enumerate(experts):
            t[b + f"ffn.experts.{e}.w1.weight"] = g
            t[b + f"ffn.experts.{e}.w3.weight"] = u
            t[b + f"ffn.experts.{e}.w2.weight"] = w
        shared = swiglu(rng)
        for name, w in zip(("w1", "w3", "w2"), shared):
            t[b + f"ffn.shared_experts.{name}.weight"] = w
        planted.update({(i, e): w for e, w in enumerate(experts)})
        planted[i, None] = shared
    return t, planted


def check_rows(reports, family: str = "deepseek_v4") -> None:
    """Every block once: 4 routed experts and the shared one in each layer,
    all undecided for the hyper-connection."""
    keys = sorted((r.layer, r.kind, r.expert is None, r.expert or 0) for r in reports)
    want = sorted(
        [(i, "expert", False, e) for i in range(LAYERS) for e in range(E)]
        + [(i, "shared_expert", True, 0) for i in range(LAYERS)]
    )
    assert keys == want
    for r in reports:
        assert (r.family, r.d, r.m) == (family, D, M), r
        assert r.verdict == "undecided", r.result
        assert "hyper-connection" in r.reason


@pytest.mark.parametrize("names", [transformers_names, release_names])
def test_deepseek_v4_every_block_once_and_undecided(tmp_path, names):
    tensors, planted = names(np.random.default_rng(46))
    path = save(tmp_path / "dsv4", tensors, flash_config())
    reports = scan(path)
    check_rows(reports)
    for r in reports:
        assert "section 4.6" in r.reason and "swiglu_limit" in r.reason
        assert "hc_mult = 4" in r.form and "routed_scaling_factor = 1.5" in r.form
    # The fused experts split as gate then up; the release's w1 is the gate.
    for layer in range(LAYERS):
        for e in range(E):
            assert_weights(read(path, layer, e), *planted[layer, e])


def test_the_automatic_layout_never_assumes_an_identity_skip(tmp_path):
    # A model type the registry lacks, with LLaMA's MLP names and
    # DeepSeek-V4's hyper-connection tensors: every block is found by the
    # automatic layout and is undecided, naming the hyper-connection.
    rng = np.random.default_rng(47)
    t = {}
    for i in range(2):
        b = f"model.layers.{i}."
        g, u, w = swiglu(rng)
        t[b + "mlp.gate_proj.weight"], t[b + "mlp.up_proj.weight"] = g, u
        t[b + "mlp.down_proj.weight"] = w
        t[b + "ffn_hc.fn"] = rng.standard_normal((24, 4 * D))
        t[b + "ffn_hc.base"] = rng.standard_normal(24)
        t[b + "ffn_hc.scale"] = rng.standard_normal(3)
    config = {
        "model_type": "my_hyper_model",
        "hidden_size": D,
        "intermediate_size": M,
        "num_hidden_layers": 2,
        "hidden_act": "silu",
    }
    with pytest.warns(UserWarning):
        reports = scan(save(tmp_path / "auto", t, config))
    assert len(reports) == 2
    for r in reports:
        assert r.verdict == "undecided"
        assert "hyper-connection tensors such as 'model.layers.0.ffn_hc." in r.reason
    # Without the tensors, hc_mult alone marks it.
    plain = {k: v for k, v in t.items() if "_hc." not in k}
    with pytest.warns(UserWarning):
        reports = scan(save(tmp_path / "streams", plain, dict(config, hc_mult=2)))
    assert [r.verdict for r in reports] == ["undecided", "undecided"]
    assert all("hc_mult = 2 residual streams" in r.reason for r in reports)
    with pytest.warns(UserWarning):
        reports = scan(save(tmp_path / "one", plain, dict(config, hc_mult=1)))
    assert [r.verdict for r in reports] == ["not_absorbable", "not_absorbable"]


@pytest.mark.parametrize(
    "key",
    [
        "model.layers.3.attn_hc.fn",
        "model.layers.0.ffn_hc.scale",
        "model.hc_head.hc_base",
        "layers.12.hc_ffn_fn",
        "layers.0.hc_attn_base",
        "hc_head_scale",
        "blk.5.hc_ffn_fn.weight",
        "output_hc_scale.weight",
    ],
)
def test_the_markers_of_each_source(key):
    reason = hyper_connection_reason({}, ["model.layers.0.mlp.up_proj.weight", key])
    assert reason is not None and repr(key) in reason


@pytest.mark.parametrize(
    "key",
    [
        "model.layers.0.mlp.up_proj.weight",
        "model.layers.0.mlp.fn",
        "model.layers.0.ffn_hc_extra.fn",
        "blk.0.ffn_up.weight",
        "layers.0.hc_ffn_fn_extra",
    ],
)
def test_what_is_no_marker(key):
    assert hyper_connection_reason({"hc_mult": 1}, [key]) is None
    assert "hc_mult = 4" in hyper_connection_reason({"text_config": {"hc_mult": 4}}, [key])
    gguf = {"deepseek4.hyper_connection.count": 4}
    assert "deepseek4.hyper_connection.count = 4" in hyper_connection_reason(gguf, [key])
    # A value that is no integer still says streams: undecided is the safe reading.
    for value, shown in ((4.0, "4.0"), ("4", "'4'"), ([4], "[4]")):
        assert f"hc_mult = {shown}" in hyper_connection_reason({"hc_mult": value}, [key])
    assert (
        hyper_connection_reason({"hc_mult": None, "text_config": {"hc_mult": 1.0}}, [key]) is None
    )


def test_the_releases_fp4_experts_are_refused_by_name(tmp_path):
    # DeepSeek-V4-Flash's release stores its routed experts as FP4 pairs
    # packed in int8, [out, in / 2], with E8M0 scales ("expert_dtype": "fp4"):
    # a refusal naming them, not a shape error.
    rng = np.random.default_rng(48)
    tensors, _ = release_names(rng)
    packed = {}
    for key, value in tensors.items():
        if ".experts." in key and key.endswith(".weight"):
            out, inner = value.shape
            packed[key] = rng.integers(-128, 128, size=(out, inner // 2)).astype(np.int8)
            packed[key.removesuffix("weight") + "scale"] = np.ones((out, 1), np.float32)
        else:
            packed[key] = np.asarray(value, np.float32)
    path = tmp_path / "fp4"
    path.mkdir()
    save_file(packed, str(path / "model.safetensors"))
    (path / "config.json").write_text(json.dumps(flash_config()))
    with pytest.raises(
        CheckpointError,
        match=r"has dtype I8; expected a float dtype \(config.json expert_dtype = 'fp4'",
    ):
        scan(path)
