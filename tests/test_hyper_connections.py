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

import dataclasses
import json

import numpy as np
import pytest
import skipsearch
from safetensors.numpy import save_file
from skipsearch._scan.locate import locate
from skipsearch._scan.tensors import read_block
from skipsearch.io.checkpoints import CheckpointError
from skipsearch.io.hyper_connections import hyper_connection_reason

from tests.family_builders import assert_weights
from tests.test_families import scan
from tests.test_families_moe import read
from tests.test_quantized import random_codes, write_safetensors

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


def llama_named(rng) -> tuple[dict, dict, dict]:
    """Two layers of LLaMA's MLP names under a model type the registry lacks,
    the FFN site's hyper-connection tensors in transformers' names beside
    them (apart), and the config."""
    mlp, mixing = {}, {}
    for i in range(2):
        b = f"model.layers.{i}."
        g, u, w = swiglu(rng)
        mlp[b + "mlp.gate_proj.weight"], mlp[b + "mlp.up_proj.weight"] = g, u
        mlp[b + "mlp.down_proj.weight"] = w
        mixing[b + "ffn_hc.fn"] = rng.standard_normal((24, 4 * D))
        mixing[b + "ffn_hc.base"] = rng.standard_normal(24)
        mixing[b + "ffn_hc.scale"] = rng.standard_normal(3)
    config = {
        "model_type": "my_hyper_model",
        "hidden_size": D,
        "intermediate_size": M,
        "num_hidden_layers": 2,
        "hidden_act": "silu",
    }
    return mlp, mixing, config


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
    t, mixing, config = llama_named(np.random.default_rng(47))
    t.update(mixing)
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
    assert all(r.mixing is None and r.to_dict()["hc_pre"] is None for r in reports)


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
        # lucidrains/hyper-connections (hyper_connections.py and
        # manifold_constrained_hyper_connections.py at 47751035).
        "layers.0.ff_hc.static_alpha",
        "layers.0.ff_hc.static_beta",
        "blocks.3.hc.dynamic_alpha_fn",
        "blocks.3.hc.dynamic_beta_fn",
        "blocks.3.hc.dynamic_alpha_scale",
        "dynamic_beta_scale",
        "layers.1.mhc.h_post_scale",
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


@pytest.mark.parametrize(
    ("config", "shown"),
    [
        ({"language_config": {"hc_mult": 4}}, "language_config.hc_mult = 4"),
        ({"llm_config": {"hc_mult": 2}}, "llm_config.hc_mult = 2"),
        ({"thinker_config": {"text_config": {"hc_mult": 4}}}, "thinker_config.text_config.hc_mult"),
        ({"num_residual_streams": 4}, "num_residual_streams = 4"),
        # DeepseekV4Config defaults hc_mult to 4, and one stream still has
        # token-dependent gates: the model type itself marks it.
        ({"model_type": "deepseek_v4"}, "model_type = 'deepseek_v4'"),
        ({"model_type": "deepseek_v4", "hc_mult": 1}, "model_type = 'deepseek_v4'"),
        ({"text_config": {"model_type": "deepseek_v4"}}, "text_config.model_type"),
        ({"model_type": "gguf-deepseek4"}, "model_type = 'gguf-deepseek4'"),
    ],
)
def test_streams_at_any_depth_of_the_config(config, shown):
    reason = hyper_connection_reason(config, ["model.layers.0.mlp.up_proj.weight"])
    assert reason is not None and shown in reason


def test_one_shard_scanned_alone_sees_its_siblings_markers(tmp_path):
    # The shard holds only the MLP; the hyper-connection's tensors sit in
    # the other shard named by the index beside it.
    mlp, mixing, config = llama_named(np.random.default_rng(49))
    folder = tmp_path / "sharded"
    folder.mkdir()
    names = {"mlp": "model-00001-of-00002.safetensors", "hc": "model-00002-of-00002.safetensors"}
    for which, tensors in (("mlp", mlp), ("hc", mixing)):
        save_file({k: v.astype(np.float32) for k, v in tensors.items()}, str(folder / names[which]))
    weight_map = {k: names["mlp"] for k in mlp} | {k: names["hc"] for k in mixing}
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.warns(UserWarning):
        reports = scan(folder / names["mlp"])
    assert [r.verdict for r in reports] == ["undecided", "undecided"]
    assert all("'model.layers.0.ffn_hc.fn'" in r.reason for r in reports)


def _knows_e8m0() -> bool:
    import safetensors

    return tuple(int(p) for p in safetensors.__version__.split(".")[:3]) >= (0, 6, 1)


#: safetensors reads F8_E8M0 headers from 0.6.1 on; with an older release
#: the scan refuses such a file, naming the upgrade (test_from_torch).
needs_e8m0 = pytest.mark.skipif(not _knows_e8m0(), reason="safetensors < 0.6.1 lacks F8_E8M0")


@needs_e8m0
def test_the_releases_fp8_shared_expert_is_read_with_its_e8m0_scales(tmp_path):
    # DeepSeek-V4-Flash's release stores the shared expert as F8_E4M3 with a
    # ".scale" of F8_E8M0 beside each weight, in blocks of 128 x 128 ([2048,
    # 4096] with a [16, 32] scale; here [16, 8] with [1, 1]); the routed
    # experts are left in float here (their FP4 form is refused, below).
    rng = np.random.default_rng(50)
    tensors, planted = release_names(rng)
    written: dict = {k: np.asarray(v, dtype=np.float32) for k, v in tensors.items()}
    for layer in range(LAYERS):
        shared = []
        for name in ("w1", "w3", "w2"):
            key = f"layers.{layer}.ffn.shared_experts.{name}"
            codes = random_codes(rng, tensors[key + ".weight"].shape)
            scale = np.array([[2.0 ** int(rng.integers(-8, 3))]])
            written[key + ".weight"] = ("F8_E4M3", codes)
            written[key + ".scale"] = ("F8_E8M0", scale)
            shared.append(codes * scale[0, 0])
        planted[layer, None] = tuple(shared)
    path = tmp_path / "fp8"
    path.mkdir()
    write_safetensors(path / "model.safetensors", written)
    (path / "config.json").write_text(json.dumps(flash_config()))
    reports = scan(path)
    check_rows(reports)
    for layer in range(LAYERS):
        for e in range(E):
            assert_weights(read(path, layer, e), *planted[layer, e])
    shared_rows = [r for r in reports if r.kind == "shared_expert"]
    assert len(shared_rows) == LAYERS
    info, ckpt = locate(path)
    for b in (b for b in info._blocks if info.parts[b.part].kind == "shared_expert"):
        got = read_block(info, ckpt, b)
        gate, up, down = planted[b.layer, None]
        np.testing.assert_array_equal(got["W_gate"], gate)
        np.testing.assert_array_equal(got["W_up"], up)
        np.testing.assert_array_equal(got["W_down"], down)
    assert "F8_E4M3 x scale" in (info.quantization or "")


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


def published_forward(X, fn, base, scale, n, eps, iters, norm_eps=1e-6):
    """DeepseekV4HyperConnection.forward (transformers modeling_deepseek_v4.py
    at 01976081), line for line in float64 numpy, for one token's streams
    X [n, C]: returns (post, comb, collapsed)."""
    flat = X.reshape(-1)
    flat = flat / np.sqrt(np.mean(flat**2) + norm_eps)  # DeepseekV4UnweightedRMSNorm
    logits = fn @ flat
    pre_w, post_w, comb_w = logits[:n], logits[n : 2 * n], logits[2 * n :].reshape(n, n)
    pre_b, post_b, comb_b = base[:n], base[n : 2 * n], base[2 * n :].reshape(n, n)
    pre = 1 / (1 + np.exp(-(pre_w * scale[0] + pre_b))) + eps
    post = 2 / (1 + np.exp(-(post_w * scale[1] + post_b)))
    z = comb_w * scale[2] + comb_b
    comb = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True) + eps
    comb = comb / (comb.sum(axis=-2, keepdims=True) + eps)
    for _ in range(iters - 1):
        comb = comb / (comb.sum(axis=-1, keepdims=True) + eps)
        comb = comb / (comb.sum(axis=-2, keepdims=True) + eps)
    collapsed = (pre[:, None] * X).sum(axis=0)
    return post, comb, collapsed


def check_mixing(reports, hc_tensors, rng, n=N, eps=1e-6, iters=20) -> None:
    """Each row's hc_* figures against the published forward on its layer's
    FFN-site tensors ``hc_tensors[layer] = (fn, base, scale)``."""
    for r in reports:
        row = r.to_dict()
        fn, base, scale = (
            np.asarray(a, dtype=np.float32).astype(np.float64) for a in hc_tensors[r.layer]
        )
        C = fn.shape[1] // n
        X = rng.standard_normal((n, C))
        # The static point: the token-dependent part scale * fn x set to 0.
        post, comb, collapsed = published_forward(X, fn, base, np.zeros(3), n, eps, iters)
        assert row["hc_streams"] == n
        np.testing.assert_allclose(row["hc_post"], post, rtol=1e-13)
        pre = np.linalg.lstsq(X.T, collapsed, rcond=None)[0]  # collapsed = sum_j pre_j X_j
        np.testing.assert_allclose(row["hc_pre"], pre, rtol=1e-9)
        sv = np.linalg.svd(comb, compute_uv=False)
        assert row["hc_res_min_singular"] == pytest.approx(sv.min(), rel=1e-9)
        assert row["hc_res_rank"] == np.linalg.matrix_rank(comb)
        # The layer's map at the static point is X'_k = post_k F + sum_j comb[j, k] X_j
        # (comb consumed transposed), which decide_hyper_connection reads as H_res = comb.
        # The dynamic bound holds for every token and is met along fn's top direction.
        for _ in range(5):
            flat = rng.standard_normal(n * C)
            flat = flat / np.sqrt(np.mean(flat**2) + 1e-6)
            for k, rows in enumerate((slice(0, n), slice(n, 2 * n), slice(2 * n, None))):
                assert np.linalg.norm(scale[k] * fn[rows] @ flat) <= row["hc_dynamic"] * (1 + 1e-12)
        top = max(
            abs(scale[k]) * np.linalg.norm(fn[rows], 2)
            for k, rows in enumerate((slice(0, n), slice(n, 2 * n), slice(2 * n, None)))
        )
        assert row["hc_dynamic"] == pytest.approx(top * np.sqrt(n * C), rel=1e-12)


@pytest.mark.parametrize(
    ("names", "site"),
    [(transformers_names, "model.layers.{i}.ffn_hc.{p}"), (release_names, "layers.{i}.hc_ffn_{p}")],
)
def test_the_mixing_figures_match_the_published_forward(tmp_path, names, site):
    tensors, _ = names(np.random.default_rng(51))
    path = save(tmp_path / "dsv4", tensors, flash_config())
    reports = scan(path)
    check_rows(reports)
    hc = {
        i: tuple(tensors[site.format(i=i, p=p)] for p in ("fn", "base", "scale"))
        for i in range(LAYERS)
    }
    check_mixing(reports, hc, np.random.default_rng(52))
    # The figures differ by layer and are the same for every block of one.
    by_layer = {}
    for r in reports:
        by_layer.setdefault(r.layer, set()).add(tuple(r.to_dict()["hc_pre"]))
    assert all(len(v) == 1 for v in by_layer.values()) and len(by_layer) == LAYERS


def test_the_mixing_figures_in_json_csv_and_frames(tmp_path):
    import csv
    import io
    import subprocess
    import sys

    pytest.importorskip("pandas")
    tensors, _ = transformers_names(np.random.default_rng(53))
    path = save(tmp_path / "dsv4", tensors, flash_config())
    run = [sys.executable, "-m", "skipsearch", "scan", str(path)]
    document = json.loads(subprocess.run([*run, "--json"], capture_output=True, check=True).stdout)
    rows = document["blocks"]
    assert len(rows) == LAYERS * (E + 1) and all(len(r["hc_pre"]) == N for r in rows)
    import jsonschema
    from skipsearch._scan.report import report_schema

    jsonschema.validate(document, report_schema())
    text = subprocess.run([*run, "--csv"], capture_output=True, check=True, text=True).stdout
    table = list(csv.DictReader(io.StringIO(text)))
    assert [float(v) for v in table[0]["hc_post"].split()] == pytest.approx(rows[0]["hc_post"])
    assert int(table[0]["hc_res_rank"]) == rows[0]["hc_res_rank"]
    table_text = subprocess.run(run, capture_output=True, check=True, text=True).stdout
    low = min(r["hc_res_min_singular"] for r in rows)
    assert (
        f"hyper-connection mixing at its static point, over {LAYERS} layer(s): smallest "
        f"singular value of H_res {low:.3g} to" in table_text
    )
    frame = skipsearch.document_to_pandas(document)
    assert frame["hc_res_min_singular"].dtype == np.float64
    assert list(frame["hc_pre"].iloc[0]) == pytest.approx(rows[0]["hc_pre"])


def test_the_mixing_is_plotted_by_layer(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from skipsearch import plot

    tensors, _ = release_names(np.random.default_rng(54))
    reports = scan(save(tmp_path / "dsv4", tensors, flash_config()))
    drawn = []
    real = plot.plot_hyper_connections
    monkeypatch.setattr(plot, "plot_hyper_connections", lambda r, p: drawn.append(p) or real(r, p))
    plot.plot_scan(reports, tmp_path / "mixing.png")
    assert drawn == [tmp_path / "mixing.png"]
    assert (tmp_path / "mixing.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    plain = [dataclasses.replace(r, mixing=None) for r in reports]
    with pytest.raises(ValueError, match="no report has hyper-connection mixing figures"):
        real(plain, tmp_path / "none.png")


def test_a_layer_without_a_dynamic_part_is_decided_as_a_static_hyper_connection(tmp_path):
    # Layer 1's FFN-site scales are 0: its mixing is the static point, so
    # each of its blocks is X -> (H_res^T (x) I) X + H_post (x) f(H_pre^T X)
    # with H_res != 0, and the gated experts are not absorbable by the
    # linearization argument (theory 4.6: the clamp does not change it).
    tensors, _ = transformers_names(np.random.default_rng(55))
    tensors["model.layers.1.ffn_hc.scale"] = np.zeros(3)
    path = save(tmp_path / "dsv4", tensors, flash_config())
    reports = scan(path)
    check_rows_static = [r for r in reports if r.layer == 1]
    assert len(check_rows_static) == E + 1
    for r in reports:
        row = r.to_dict()
        assert "hyper-connection" in r.scope and "stacked streams" in r.scope
        if r.layer == 1:
            assert row["hc_dynamic"] == 0.0
            assert (r.verdict, r.result.argument) == ("not_absorbable", "linearization"), r.reason
            assert "static hyper-connection" in r.reason and "H_res^T (x) I_C != 0" in r.reason
        else:
            assert row["hc_dynamic"] > 0 and r.verdict == "undecided"
        assert np.allclose(np.sum(row["hc_res"], axis=0), 1, atol=1e-5)


def test_a_static_mixing_around_a_flip_linear_block_points_to_the_api(rng):
    from skipsearch._scan.decide import BlockJob, decide_block
    from skipsearch.options import SearchOptions

    W_up, W_down = rng.standard_normal((6, 3)), rng.standard_normal((3, 6))
    mixing = (np.eye(2), np.ones(2), np.ones(2))
    job = BlockJob(W_up, W_down, "relu", None, None, None, None, SearchOptions(), mixing=mixing)
    result, _ = decide_block(job)
    assert result.verdict == "undecided"
    assert "skipsearch.decide_hyper_connection(W_up, W_down, H_res, H_pre, H_post)" in result.reason


@pytest.mark.parametrize(
    ("change", "config"),
    [
        ({"model.layers.1.ffn_hc.base": np.full(24, np.nan)}, {}),
        ({"model.layers.1.ffn_hc.fn": np.full((24, 4 * D), np.inf)}, {}),
        ({}, {"hc_eps": None}),
        ({}, {"hc_sinkhorn_iters": 10**12}),
        ({}, {"hc_sinkhorn_iters": 2.5}),
    ],
)
def test_mixing_figures_the_forward_cannot_give_are_left_out(tmp_path, change, config):
    # The figures carry no verdict: a NaN logit or settings the forward
    # could not run with leave them out (or infinite), never the scan.
    tensors, _ = transformers_names(np.random.default_rng(56))
    tensors.update(change)
    reports = scan(save(tmp_path / "dsv4", tensors, flash_config(**config)))
    check_rows(reports)
    rows = [r.to_dict() for r in reports]
    if config:
        assert all(row["hc_streams"] is None for row in rows)
    else:
        layer1 = [row for row in rows if row["layer"] == 1]
        assert all(row["hc_dynamic"] is None for row in layer1)
        assert all(row["hc_streams"] == N for row in rows if row["layer"] != 1)


@needs_e8m0
def test_two_scales_beside_one_fp8_weight_are_refused(tmp_path):
    rng = np.random.default_rng(57)
    tensors, _ = release_names(rng)
    written: dict = {k: np.asarray(v, dtype=np.float32) for k, v in tensors.items()}
    key = "layers.0.ffn.shared_experts.w1"
    written[key + ".weight"] = ("F8_E4M3", random_codes(rng, tensors[key + ".weight"].shape))
    written[key + ".scale"] = ("F8_E8M0", np.array([[1.0]]))
    written[key + ".weight_scale_inv"] = np.array([[2.0]], dtype=np.float32)
    path = tmp_path / "two"
    path.mkdir()
    write_safetensors(path / "model.safetensors", written)
    (path / "config.json").write_text(json.dumps(flash_config()))
    with pytest.raises(CheckpointError, match="has two scales beside it"):
        scan(path)
