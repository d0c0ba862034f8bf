"""skipsearch.scan on tiny checkpoints of the dense gated decoders of
:mod:`skipsearch.io._families.gated`: Phi-3, OLMo, OLMo 2, StableLM, Granite,
InternLM2 and Qwen (v1).

Each builder writes the family's real tensor names (its MLP and a few
unrelated tensors: embeddings, norms, attention) and a ``config.json`` with
the real checkpoint's keys and values, shrunk in size, with d != m and two
layers. A gated block without inner biases is not absorbable by the
linearization argument (docs/theory.md §4.2); with inner biases it is undecided.
"""

from __future__ import annotations

import numpy as np
import pytest
from skipsearch._scan.locate import locate
from skipsearch._scan.tensors import read_block
from skipsearch.io.checkpoints import CheckpointError
from skipsearch.io.layouts import norm_scope, supported_model_types
from skipsearch.scan import describe_checkpoint, scan_document

from tests.family_builders import assert_weights
from tests.test_families import save, scan

D, M = 4, 10


def gated(rng, m=M):
    """(gate (m, d), up (m, d), down (d, m)), random."""
    return rng.standard_normal((m, D)), rng.standard_normal((m, D)), rng.standard_normal((D, m))


def assert_not_absorbable(reports, family, blocks, m=M, norm="pre", scale=None):
    assert [r.block for r in reports] == blocks
    assert [r.layer for r in reports] == list(range(len(blocks)))
    for r in reports:
        assert (r.family, r.kind, r.stack, r.expert) == (family, "mlp", None, None)
        assert (r.d, r.m, r.activation, r.norm) == (D, m, "swiglu", norm)
        assert r.verdict == "not_absorbable", r.result
        assert r.result.argument == "linearization"
        assert "linearization" in r.reason
        tail = (
            "" if scale is None else f"; the model scales f by its residual multiplier a = {scale}"
        )
        assert r.scope == norm_scope(norm, r.form) + tail


# -- Phi-3 -------------------------------------------------------------------------------------
# Names: transformers src/transformers/models/phi3/modeling_phi3.py (Phi3MLP: gate_up_proj of
# 2 * intermediate_size rows, `gate, up_states = up_states.chunk(2, dim=-1)`, gate first;
# Phi3DecoderLayer: input_layernorm, post_attention_layernorm, self_attn.qkv_proj/o_proj).
# Checkpoint: YouriLalain/3PRYMMAL-PHI3-3B-SLERP config.json and model.safetensors.index.json
# (model.layers.{i}.mlp.gate_up_proj.weight, model.layers.{i}.mlp.down_proj.weight).
# Defaults: configuration_phi3.py (hidden_act="silu").


def phi3(rng, layers=None):
    layers = layers or [gated(rng), gated(rng)]
    t = {
        "model.embed_tokens.weight": rng.standard_normal((13, D)),
        "model.norm.weight": np.ones(D),
        "lm_head.weight": rng.standard_normal((13, D)),
    }
    for i, (gate, up, down) in enumerate(layers):
        base = f"model.layers.{i}."
        t[base + "input_layernorm.weight"] = np.ones(D)
        t[base + "self_attn.qkv_proj.weight"] = rng.standard_normal((3 * D, D))
        t[base + "self_attn.o_proj.weight"] = rng.standard_normal((D, D))
        t[base + "post_attention_layernorm.weight"] = np.ones(D)
        t[base + "mlp.gate_up_proj.weight"] = np.concatenate([gate, up])
        t[base + "mlp.down_proj.weight"] = down
    config = {
        "architectures": ["Phi3ForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 1,
        "embd_pdrop": 0.0,
        "eos_token_id": 32000,
        "hidden_act": "silu",
        "hidden_size": D,
        "initializer_range": 0.02,
        "intermediate_size": M,
        "max_position_embeddings": 4096,
        "model_type": "phi3",
        "num_attention_heads": 2,
        "num_hidden_layers": len(layers),
        "num_key_value_heads": 2,
        "original_max_position_embeddings": 4096,
        "pad_token_id": 32000,
        "resid_pdrop": 0.0,
        "rms_norm_eps": 1e-05,
        "rope_scaling": None,
        "rope_theta": 10000.0,
        "sliding_window": 2047,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "vocab_size": 13,
    }
    return t, config


def test_phi3_not_absorbable(tmp_path):
    reports = scan(save(tmp_path / "phi3", *phi3(np.random.default_rng(0))))
    assert_not_absorbable(reports, "phi3", ["model.layers.0.mlp", "model.layers.1.mlp"])
    assert {r.form for r in reports} == {"x + f(RMSNorm x)"}
    assert {r.note for r in reports} == {None}


def test_phi3_fused_gate_up_is_split_gate_first(tmp_path):
    rng = np.random.default_rng(1)
    layers = [gated(rng), gated(rng)]
    info, ckpt = locate(save(tmp_path / "phi3", *phi3(rng, layers=layers)))
    assert (info.family, info.d, info.m, info.num_layers) == ("phi3", D, M, 2)
    assert len(info._blocks) == 2
    for block, (gate, up, down) in zip(info._blocks, layers):
        assert block.fused == "gate_up"
        tensors = read_block(info, ckpt, block)
        # Phi3MLP: the first intermediate_size rows are the gate, the rest the up projection.
        assert_weights(tensors, gate, up, down)
        assert tensors["b_up"] is None and tensors["b_gate"] is None


def test_phi3_hidden_act_default_is_silu(tmp_path):
    tensors, config = phi3(np.random.default_rng(2))
    del config["hidden_act"]
    info = describe_checkpoint(save(tmp_path / "phi3", tensors, config))
    assert (info.hidden_act, info.activation) == ("silu", "swiglu")


def test_phi3_size_defaults(tmp_path):
    # Phi3Config: hidden_size 3072, intermediate_size 8192 when absent.
    tensors, config = phi3(np.random.default_rng(20))
    del config["intermediate_size"]
    with pytest.raises(
        CheckpointError, match=r"expected \(16384, 4\).*intermediate_size \(default 8192\)"
    ):
        describe_checkpoint(save(tmp_path / "phi3", tensors, config))


def test_phi3_fused_width_must_match_intermediate_size(tmp_path):
    tensors, config = phi3(np.random.default_rng(3))
    config["intermediate_size"] = 2 * M  # the fused tensor's row count, not each half's
    with pytest.raises(CheckpointError, match="gate_up_proj"):
        describe_checkpoint(save(tmp_path / "phi3", tensors, config))


# -- OLMo, OLMo 2 ------------------------------------------------------------------------------
# Names: transformers src/transformers/models/olmo/modular_olmo.py (OlmoMLP = LlamaMLP without
# biases: mlp.gate_proj/up_proj/down_proj; OlmoLayerNorm has no weights, so no norm tensors;
# self_attn.q_proj/k_proj/v_proj/o_proj) and configuration_olmo.py (hidden_act="silu",
# clip_qkv). OLMo 2: src/transformers/models/olmo2/modular_olmo2.py (Olmo2DecoderLayer: no
# input_layernorm, post_attention_layernorm after attention, post_feedforward_layernorm after
# the MLP, inside the residual branch; self_attn.q_norm/k_norm). No public OLMo checkpoint's
# config.json was found in the index: keys and values follow OlmoConfig/Olmo2Config.


def olmo(rng, model_type="olmo"):
    t = {
        "model.embed_tokens.weight": rng.standard_normal((13, D)),
        "lm_head.weight": rng.standard_normal((13, D)),
    }
    if model_type == "olmo2":
        t["model.norm.weight"] = np.ones(D)
    for i in range(2):
        gate, up, down = gated(rng)
        base = f"model.layers.{i}."
        for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
            t[base + f"self_attn.{proj}.weight"] = rng.standard_normal((D, D))
        if model_type == "olmo2":
            t[base + "self_attn.q_norm.weight"] = np.ones(D)
            t[base + "self_attn.k_norm.weight"] = np.ones(D)
            t[base + "post_attention_layernorm.weight"] = np.ones(D)
            t[base + "post_feedforward_layernorm.weight"] = np.ones(D)
        t[base + "mlp.gate_proj.weight"] = gate
        t[base + "mlp.up_proj.weight"] = up
        t[base + "mlp.down_proj.weight"] = down
    config = {
        "architectures": ["Olmo2ForCausalLM" if model_type == "olmo2" else "OlmoForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "eos_token_id": 50279,
        "hidden_act": "silu",
        "hidden_size": D,
        "initializer_range": 0.02,
        "intermediate_size": M,
        "max_position_embeddings": 4096,
        "model_type": model_type,
        "num_attention_heads": 2,
        "num_hidden_layers": 2,
        "num_key_value_heads": 2,
        "pad_token_id": 1,
        "rope_scaling": None,
        "rope_theta": 500000,
        "tie_word_embeddings": False,
        "vocab_size": 13,
    }
    if model_type == "olmo2":
        config["rms_norm_eps"] = 1e-06
    else:
        config["clip_qkv"] = None
    return t, config


def test_olmo_not_absorbable(tmp_path):
    reports = scan(save(tmp_path / "olmo", *olmo(np.random.default_rng(4))))
    assert_not_absorbable(reports, "olmo", ["model.layers.0.mlp", "model.layers.1.mlp"])
    assert {r.form for r in reports} == {"x + f(LN x) (LayerNorm without weights or biases)"}


def test_olmo2_norm_inside_the_residual_branch(tmp_path):
    reports = scan(save(tmp_path / "olmo2", *olmo(np.random.default_rng(5), "olmo2")))
    assert_not_absorbable(reports, "olmo2", ["model.layers.0.mlp", "model.layers.1.mlp"], norm=None)
    for r in reports:
        assert r.form.startswith("x + RMSNorm(f(x))")
        assert "post_feedforward_layernorm" in r.form
        assert "not the model's x -> x + RMSNorm(f(x))" in r.note


def test_olmo_hidden_act_default_is_silu(tmp_path):
    tensors, config = olmo(np.random.default_rng(6))
    config["hidden_act"] = None
    assert describe_checkpoint(save(tmp_path / "olmo", tensors, config)).activation == "swiglu"


# -- StableLM ----------------------------------------------------------------------------------
# Names: transformers src/transformers/models/stablelm/modeling_stablelm.py (StableLmMLP:
# mlp.gate_proj/up_proj/down_proj with bias=False; StableLmAttention: q/k/v_proj with
# bias=use_qkv_bias, o_proj without; StableLmDecoderLayer: input_layernorm and
# post_attention_layernorm are nn.LayerNorm (weight and bias); use_parallel_residual: x +
# attn(ln1(x)) + mlp(ln1(x))) and configuration_stablelm.py (hidden_act="silu",
# use_qkv_bias=False, use_parallel_residual=False, layer_norm_eps, partial_rotary_factor). No
# public StableLM checkpoint's config.json was found in the index: keys follow StableLmConfig.


def stablelm(rng, **overrides):
    t = {
        "model.embed_tokens.weight": rng.standard_normal((13, D)),
        "model.norm.weight": np.ones(D),
        "model.norm.bias": np.zeros(D),
        "lm_head.weight": rng.standard_normal((13, D)),
    }
    for i in range(2):
        gate, up, down = gated(rng)
        base = f"model.layers.{i}."
        t[base + "input_layernorm.weight"] = np.ones(D)
        t[base + "input_layernorm.bias"] = np.zeros(D)
        for proj in ("q_proj", "k_proj", "v_proj"):
            t[base + f"self_attn.{proj}.weight"] = rng.standard_normal((D, D))
            t[base + f"self_attn.{proj}.bias"] = rng.standard_normal(D)  # use_qkv_bias
        t[base + "self_attn.o_proj.weight"] = rng.standard_normal((D, D))
        if not overrides.get("use_parallel_residual"):
            t[base + "post_attention_layernorm.weight"] = np.ones(D)
            t[base + "post_attention_layernorm.bias"] = np.zeros(D)
        t[base + "mlp.gate_proj.weight"] = gate
        t[base + "mlp.up_proj.weight"] = up
        t[base + "mlp.down_proj.weight"] = down
    config = {
        "architectures": ["StableLmForCausalLM"],
        "bos_token_id": 100257,
        "eos_token_id": 100257,
        "hidden_act": "silu",
        "hidden_dropout": 0.0,
        "hidden_size": D,
        "initializer_range": 0.02,
        "intermediate_size": M,
        "layer_norm_eps": 1e-05,
        "max_position_embeddings": 4096,
        "model_type": "stablelm",
        "num_attention_heads": 2,
        "num_hidden_layers": 2,
        "num_key_value_heads": 2,
        "partial_rotary_factor": 0.25,
        "rope_theta": 10000,
        "tie_word_embeddings": False,
        "use_cache": True,
        "use_qkv_bias": True,
        "use_parallel_residual": False,
        "vocab_size": 13,
        **overrides,
    }
    return t, config


def test_stablelm_not_absorbable(tmp_path):
    reports = scan(save(tmp_path / "stablelm", *stablelm(np.random.default_rng(7))))
    assert_not_absorbable(reports, "stablelm", ["model.layers.0.mlp", "model.layers.1.mlp"])
    # The attention biases (use_qkv_bias) are not the MLP's.
    assert {(r.form, r.note) for r in reports} == {("x + f(LN x)", None)}


def test_stablelm_parallel_residual(tmp_path):
    tensors, config = stablelm(np.random.default_rng(8), use_parallel_residual=True)
    reports = scan(save(tmp_path / "stablelm", tensors, config))
    assert_not_absorbable(reports, "stablelm", ["model.layers.0.mlp", "model.layers.1.mlp"])
    for r in reports:
        assert r.form.startswith("x + attn(LN x) + f(LN x)")
        assert "parallel residual" in r.note


def test_stablelm_config_defaults(tmp_path):
    # StableLmConfig: hidden_act "silu", use_parallel_residual False when absent or null.
    tensors, config = stablelm(np.random.default_rng(9))
    del config["hidden_act"]
    config["use_parallel_residual"] = None
    info = describe_checkpoint(save(tmp_path / "a", tensors, config))
    assert info.activation == "swiglu"
    assert [(p.form, p.note) for p in info.parts] == [("x + f(LN x)", None)]
    config["use_parallel_residual"] = "yes"
    with pytest.raises(CheckpointError, match="use_parallel_residual must be true or false"):
        describe_checkpoint(save(tmp_path / "b", tensors, config))


# -- Granite -----------------------------------------------------------------------------------
# Names: transformers src/transformers/models/granite/modular_granite.py (GraniteDecoderLayer =
# LlamaDecoderLayer with `hidden_states = residual + hidden_states * self.residual_multiplier`
# after the MLP; LlamaMLP: mlp.gate_proj/up_proj/down_proj, bias=mlp_bias;
# embedding_multiplier scales the embeddings, attention_multiplier is attention's scaling,
# logits_scaling divides the logits) and configuration_granite.py (residual_multiplier=1.0,
# mlp_bias=False, hidden_act="silu"). Config values: jeremieconte/granite-3.1-1b-a400m-instruct
# config.json (IBM's Granite 3.1 MoE sibling, with the same multiplier keys:
# attention_multiplier 0.015625, embedding_multiplier 12.0, logits_scaling 6.0,
# residual_multiplier 0.22, rms_norm_eps 1e-06, rope_theta 1.5e6). No dense granite
# checkpoint's config.json was found in the public index.


def granite(rng, mlp_bias=False, **overrides):
    t = {"model.embed_tokens.weight": rng.standard_normal((13, D)), "model.norm.weight": np.ones(D)}
    for i in range(2):
        gate, up, down = gated(rng)
        base = f"model.layers.{i}."
        t[base + "input_layernorm.weight"] = np.ones(D)
        for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
            t[base + f"self_attn.{proj}.weight"] = rng.standard_normal((D, D))
        t[base + "post_attention_layernorm.weight"] = np.ones(D)
        t[base + "mlp.gate_proj.weight"] = gate
        t[base + "mlp.up_proj.weight"] = up
        t[base + "mlp.down_proj.weight"] = down
        if mlp_bias:
            for proj, size in (("gate_proj", M), ("up_proj", M), ("down_proj", D)):
                t[base + f"mlp.{proj}.bias"] = rng.standard_normal(size)
    config = {
        "architectures": ["GraniteForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "attention_multiplier": 0.015625,
        "bos_token_id": 0,
        "embedding_multiplier": 12.0,
        "eos_token_id": 0,
        "hidden_act": "silu",
        "hidden_size": D,
        "initializer_range": 0.02,
        "intermediate_size": M,
        "logits_scaling": 6.0,
        "max_position_embeddings": 131072,
        "mlp_bias": mlp_bias,
        "model_type": "granite",
        "num_attention_heads": 2,
        "num_hidden_layers": 2,
        "num_key_value_heads": 2,
        "residual_multiplier": 0.22,
        "rms_norm_eps": 1e-06,
        "rope_theta": 1500000.0,
        "tie_word_embeddings": True,
        "vocab_size": 13,
        **overrides,
    }
    return t, config


def test_granite_residual_multiplier(tmp_path):
    path = save(tmp_path / "granite", *granite(np.random.default_rng(10)))
    info = describe_checkpoint(path)
    assert [p.scale for p in info.parts] == [0.22]
    reports = scan(path)
    # x + 0.22 f(x) is decided with the activation 0.22 swiglu: still gated,
    # gate(0) = 0, so the linearization argument applies.
    assert_not_absorbable(
        reports, "granite", ["model.layers.0.mlp", "model.layers.1.mlp"], scale=0.22
    )
    for r in reports:
        assert r.form == "x + 0.22 * f(RMSNorm x) (residual_multiplier = 0.22)"
        assert "embedding_multiplier" in r.note
    document = scan_document([info], reports)
    assert document["models"][0]["scope"] == reports[0].scope


def test_granite_residual_multiplier_default_and_errors(tmp_path):
    tensors, config = granite(np.random.default_rng(11))
    del config["residual_multiplier"]  # GraniteConfig: 1.0
    info = describe_checkpoint(save(tmp_path / "a", tensors, config))
    assert [(p.scale, p.form) for p in info.parts] == [(None, "x + f(RMSNorm x)")]
    config["residual_multiplier"] = 0
    with pytest.raises(CheckpointError, match="residual_multiplier must be a finite nonzero"):
        describe_checkpoint(save(tmp_path / "b", tensors, config))


@pytest.mark.parametrize("multiplier", [0.25, 1.0, 0.22])
def test_granite_mlp_bias_undecided(tmp_path, multiplier):
    tensors, config = granite(
        np.random.default_rng(12), mlp_bias=True, residual_multiplier=multiplier
    )
    reports = scan(save(tmp_path / "granite", tensors, config))
    assert len(reports) == 2
    for r in reports:
        assert (r.family, r.activation, r.d, r.m) == ("granite", "swiglu", D, M)
        assert r.verdict == "undecided", r.result
        assert r.result.argument == "none"
        # With a folded into the activation, the inner biases are the reason
        # for every a (decided through the skip (1/a) I, a = 0.22 gave
        # "1/a is not exact").
        assert "linearization" in r.reason and "bias" in r.reason


# -- InternLM2 ---------------------------------------------------------------------------------
# Names: the remote code modeling_internlm2.py of an InternLM2 checkpoint
# (NanSang2000/S1mpleAgent, an internlm2-chat-7b copy): InternLM2MLP has w1, w3 (hidden ->
# intermediate) and w2 (intermediate -> hidden), all bias=False, and computes
# `self.w2(self.act_fn(self.w1(x)) * self.w3(x))`: w1 is the gate, w3 the up projection.
# InternLM2DecoderLayer: attention_norm, attention.wqkv/wo (bias=config.bias), ffn_norm,
# feed_forward. Tensor names from that repo's model.safetensors.index.json
# (model.layers.{i}.feed_forward.w1.weight, ...); config keys from its config.json.


def internlm2(rng, m=M):
    layers = [gated(rng, m), gated(rng, m)]
    t = {
        "model.tok_embeddings.weight": rng.standard_normal((13, D)),
        "model.norm.weight": np.ones(D),
        "output.weight": rng.standard_normal((13, D)),
    }
    for i, (gate, up, down) in enumerate(layers):
        base = f"model.layers.{i}."
        t[base + "attention_norm.weight"] = np.ones(D)
        t[base + "attention.wqkv.weight"] = rng.standard_normal((3 * D, D))
        t[base + "attention.wo.weight"] = rng.standard_normal((D, D))
        t[base + "ffn_norm.weight"] = np.ones(D)
        t[base + "feed_forward.w1.weight"] = gate
        t[base + "feed_forward.w3.weight"] = up
        t[base + "feed_forward.w2.weight"] = down
    config = {
        "architectures": ["InternLM2ForCausalLM"],
        "bias": False,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "hidden_act": "silu",
        "hidden_size": D,
        "initializer_range": 0.02,
        "intermediate_size": M,
        "max_position_embeddings": 32768,
        "model_type": "internlm2",
        "num_attention_heads": 2,
        "num_hidden_layers": 2,
        "num_key_value_heads": 1,
        "pad_token_id": 2,
        "rms_norm_eps": 1e-05,
        "rope_scaling": {"factor": 2.0, "type": "dynamic"},
        "rope_theta": 1000000,
        "tie_word_embeddings": False,
        "vocab_size": 13,
    }
    return t, config, layers


def test_internlm2_not_absorbable(tmp_path):
    tensors, config, _ = internlm2(np.random.default_rng(13))
    reports = scan(save(tmp_path / "internlm2", tensors, config))
    assert_not_absorbable(
        reports, "internlm2", ["model.layers.0.feed_forward", "model.layers.1.feed_forward"]
    )
    assert {r.form for r in reports} == {"x + f(RMSNorm x)"}


def test_internlm2_w1_is_the_gate(tmp_path):
    tensors, config, layers = internlm2(np.random.default_rng(14))
    info, ckpt = locate(save(tmp_path / "internlm2", tensors, config))
    for block, (gate, up, down) in zip(info._blocks, layers):
        assert block.gate.endswith("feed_forward.w1.weight")
        assert block.up.endswith("feed_forward.w3.weight")
        assert_weights(read_block(info, ckpt, block), gate, up, down)


def test_internlm2_width_must_match_intermediate_size(tmp_path):
    tensors, config, _ = internlm2(np.random.default_rng(15))
    config["intermediate_size"] = M + 1
    with pytest.raises(CheckpointError, match="feed_forward"):
        describe_checkpoint(save(tmp_path / "internlm2", tensors, config))


# -- Qwen (v1) ---------------------------------------------------------------------------------
# Names: the remote code modeling_qwen.py of a Qwen v1 checkpoint (mapengAdam/qianwen-72B, a
# Qwen-72B copy): QWenMLP has w1, w2 (hidden -> intermediate_size // 2, bias=not no_bias) and
# c_proj, and computes `a1 = self.w1(x); a2 = self.w2(x); c_proj(a1 * F.silu(a2))`: w2 is the
# gate, w1 the up projection, the activation is fixed to SiLU; QWenBlock: ln_1, attn, ln_2,
# mlp (pre-norm RMSNorm); QWenModel: wte, h, ln_f. Tensor names and config keys from
# stvlynn/Qwen-7B-Chat-Cantonese's model.safetensors.index.json (transformer.h.{i}.mlp.w1.weight,
# transformer.h.{i}.mlp.w2.weight, transformer.h.{i}.mlp.c_proj.weight,
# transformer.h.{i}.attn.c_attn.weight/.bias) and config.json (hidden_size 4096,
# intermediate_size 22016 = 2 x 11008, no_bias true, no hidden_act). QWenConfig defaults
# (configuration_qwen.py): intermediate_size=22016, no_bias=True.


def qwen(rng, no_bias=True, intermediate_size=2 * M):
    layers = [gated(rng), gated(rng)]
    t = {
        "transformer.wte.weight": rng.standard_normal((13, D)),
        "transformer.ln_f.weight": np.ones(D),
        "lm_head.weight": rng.standard_normal((13, D)),
    }
    for i, (gate, up, down) in enumerate(layers):
        base = f"transformer.h.{i}."
        t[base + "ln_1.weight"] = np.ones(D)
        t[base + "attn.c_attn.weight"] = rng.standard_normal((3 * D, D))
        t[base + "attn.c_attn.bias"] = rng.standard_normal(3 * D)
        t[base + "attn.c_proj.weight"] = rng.standard_normal((D, D))
        t[base + "ln_2.weight"] = np.ones(D)
        t[base + "mlp.w1.weight"] = up
        t[base + "mlp.w2.weight"] = gate
        t[base + "mlp.c_proj.weight"] = down
        if not no_bias:
            t[base + "mlp.w1.bias"] = rng.standard_normal(M)
            t[base + "mlp.w2.bias"] = rng.standard_normal(M)
            t[base + "mlp.c_proj.bias"] = rng.standard_normal(D)
    config = {
        "architectures": ["QWenLMHeadModel"],
        "attn_dropout_prob": 0.0,
        "bf16": False,
        "emb_dropout_prob": 0.0,
        "fp16": True,
        "fp32": False,
        "hidden_size": D,
        "initializer_range": 0.02,
        "intermediate_size": intermediate_size,
        "kv_channels": 2,
        "layer_norm_epsilon": 1e-06,
        "max_position_embeddings": 32768,
        "model_type": "qwen",
        "no_bias": no_bias,
        "num_attention_heads": 2,
        "num_hidden_layers": 2,
        "onnx_safe": None,
        "rotary_emb_base": 10000,
        "rotary_pct": 1.0,
        "scale_attn_weights": True,
        "seq_length": 8192,
        "tie_word_embeddings": False,
        "use_dynamic_ntk": True,
        "use_flash_attn": False,
        "use_logn_attn": True,
        "vocab_size": 13,
    }
    return t, config, layers


def test_qwen_not_absorbable(tmp_path):
    tensors, config, _ = qwen(np.random.default_rng(16))
    reports = scan(save(tmp_path / "qwen", tensors, config))
    # m is intermediate_size // 2 (each of w1, w2), not intermediate_size.
    assert_not_absorbable(reports, "qwen", ["transformer.h.0.mlp", "transformer.h.1.mlp"])
    assert {r.form for r in reports} == {"x + f(RMSNorm x)"}


def test_qwen_w2_is_the_gate(tmp_path):
    tensors, config, layers = qwen(np.random.default_rng(17))
    info, ckpt = locate(save(tmp_path / "qwen", tensors, config))
    assert (info.hidden_act, info.activation, info.m) == ("silu", "swiglu", M)
    for block, (gate, up, down) in zip(info._blocks, layers):
        assert block.gate.endswith("mlp.w2.weight") and block.up.endswith("mlp.w1.weight")
        assert_weights(read_block(info, ckpt, block), gate, up, down)


def test_qwen_biases_undecided(tmp_path):
    tensors, config, _ = qwen(np.random.default_rng(18), no_bias=False)
    reports = scan(save(tmp_path / "qwen", tensors, config))
    assert [r.verdict for r in reports] == ["undecided", "undecided"], [r.result for r in reports]
    for r in reports:
        assert (r.family, r.m, r.activation) == ("qwen", M, "swiglu")
        assert "bias" in r.reason


def test_qwen_intermediate_size(tmp_path):
    rng = np.random.default_rng(19)
    # The width read from a config that gives each projection's width is wrong by 2x.
    tensors, config, _ = qwen(rng, intermediate_size=M)
    with pytest.raises(CheckpointError, match=r"mlp\.w1"):
        describe_checkpoint(save(tmp_path / "half", tensors, config))
    # Absent: QWenConfig's 22016, so each projection must be 11008 wide.
    del config["intermediate_size"]
    with pytest.raises(CheckpointError, match="11008"):
        describe_checkpoint(save(tmp_path / "absent", tensors, config))
    config["intermediate_size"] = "22016"
    with pytest.raises(CheckpointError, match="intermediate_size must be an integer"):
        describe_checkpoint(save(tmp_path / "string", tensors, config))


def test_every_gated_family_is_supported():
    assert {"phi3", "olmo", "olmo2", "stablelm", "granite", "internlm2", "qwen"} <= set(
        supported_model_types()
    )
