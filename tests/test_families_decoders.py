"""skipsearch.scan on tiny checkpoints of the non-gated decoder families.

Each builder writes the family's real tensor names (with a few unrelated
tensors: embeddings, LayerNorms, attention) and the keys of a real
config.json, shrunk to d = 4. Layer 0 holds a planted block (the flip set
{0..d-1} absorbs the skip, c = 1 for every activation here), layer 1 a
generic one (not absorbable).

Sources, family by family (transformers files read in huggingface/transformers):

- falcon: src/transformers/models/falcon/configuration_falcon.py (FalconConfig:
  ``activation="gelu"``, ``ffn_hidden_size`` None -> ``hidden_size * 4``, the
  ``n_embed`` kwarg overrides ``hidden_size``, ``num_ln_in_parallel_attn``,
  ``new_decoder_architecture``, ``parallel_attn``, ``bias``) and
  modeling_falcon.py (FalconMLP ``dense_h_to_4h``/``dense_4h_to_h``;
  FalconDecoderLayer: ``input_layernorm`` shared by attention and MLP when
  ``parallel_attn``, ``ln_attn``/``ln_mlp`` with the new architecture and
  ``num_ln_in_parallel_attn`` None -> 2, ``mlp_output += attention_output``;
  FalconModel: ``word_embeddings``, ``h``, ``ln_f``, base_model_prefix
  ``transformer``). Configs: the Falcon-40B config.json (model_type "falcon",
  ``new_decoder_architecture: true``, ``num_kv_heads: 8``) as copied in a
  tenstorrent model demo, and the remote-code configs with model_type
  "RefinedWebModel" (Falcon-7B: ``n_layer: 32``, ``n_head: 71``,
  ``parallel_attn: true``, ``multi_query: true``) and "RefinedWeb"
  (Falcon-40B: ``n_layer: 60``, ``n_head: 128``, ``n_head_kv: 8``), found with
  find_string '"model_type": "RefinedWeb'.
- bloom: src/transformers/models/bloom/configuration_bloom.py (``n_embed`` /
  ``hidden_size``, ``n_layer``, ``apply_residual_connection_post_layernorm``)
  and modeling_bloom.py (BloomMLP: ``dense_h_to_4h`` (4 * hidden_size),
  BloomGelu (tanh form), ``dense_4h_to_h``, always with biases; BloomBlock: the
  residual is the LayerNorm's output under
  ``apply_residual_connection_post_layernorm``). Config: the bloom-560m keys
  (``"n_embed": 1024, "n_layer": 24, "num_attention_heads": 16``) as copied in
  two public repositories (a Rust BLOOM config test and a model-constraints
  table), found with find_string '"n_embed": 1024,'. The names of
  bigscience's own checkpoints have no ``transformer.`` prefix (BloomModel's
  state dict); BloomForCausalLM's have it: both are tested.
- gptj: src/transformers/models/gptj/configuration_gptj.py (``n_embd``,
  ``n_layer``, ``n_inner`` None -> 4 * n_embd, ``activation_function``
  default ``"gelu_new"``); GPTJMLP ``fc_in``/``fc_out``, GPTJBlock
  ``attn_output + feed_forward_hidden_states + residual`` after one ``ln_1``.
- codegen: src/transformers/models/codegen/configuration_codegen.py (same keys
  and defaults as GPT-J; attribute_map ``hidden_size -> n_embd``,
  ``num_hidden_layers -> n_layer``); CodeGenMLP ``fc_in``/``fc_out``,
  CodeGenBlock parallel like GPT-J, attention ``qkv_proj``/``out_proj``.
- phi: src/transformers/models/phi/configuration_phi.py (``hidden_act``
  default ``"gelu_new"``, ``intermediate_size``, ``num_hidden_layers``) and
  the PhiDecoderLayer forward ``attn_outputs + feed_forward_hidden_states +
  residual`` after one ``input_layernorm`` (PhiMLP ``fc1``/``fc2``; attention
  ``q_proj``/``k_proj``/``v_proj``/``dense``; ``model.final_layernorm``).
  Config: microsoft/phi-2's config.json as copied in several public
  repositories (``"hidden_act": "gelu_new"``, ``"intermediate_size": 10240``,
  ``"partial_rotary_factor": 0.4``), found with find_string
  '"partial_rotary_factor": 0.4,'.
- gpt_bigcode: src/transformers/models/gpt_bigcode/configuration_gpt_bigcode.py
  (``n_embd``, ``n_layer``, ``n_inner`` None -> 4 * n_embd,
  ``activation_function`` default ``"gelu_pytorch_tanh"``); GPTBigCodeMLP's
  ``c_fc``/``c_proj`` are nn.Linear (out, in), not GPT-2's Conv1D. Config: the
  StarCoder keys (``n_embd: 6144``, ``n_inner: 24576``, ``n_layer: 40``,
  ``multi_query: true``) as copied in a config converter, found with
  find_string '"n_inner": 24576,'; it shows no activation_function, so the
  builder uses the class default ``"gelu_pytorch_tanh"``.
- starcoder2: src/transformers/models/starcoder2/configuration_starcoder2.py
  (``hidden_act`` default ``"gelu_pytorch_tanh"``, ``use_bias`` True) and
  Starcoder2MLP (``c_fc``/``c_proj``, ``ACT2FN[config.hidden_act]``); the
  layer is Mistral's sequential pre-LN one. Config: the bigcode/starcoder2-15b
  config.json (``"hidden_act": "gelu_pytorch_tanh"``, ``"mlp_type":
  "default"``, ``"norm_type": "layer_norm"``, ``"use_bias": true``) and the
  starcoder2-3b keys as copied in public repositories, found with find_string
  '"mlp_type": "default"'. Those copies hold no ``activation_function``; the
  builder adds a conflicting one (``"gelu"``) to show that only ``hidden_act``
  is read, as Starcoder2MLP does.
- Aliases: GPT-J, CodeGen and GPTBigCode map ``hidden_size``/``num_hidden_layers``
  to ``n_embd``/``n_layer``, MPT to ``d_model``/``n_layers`` (attribute_map);
  a config.json that spells the alias is read too.
- mpt: src/transformers/models/mpt/configuration_mpt.py (``d_model``,
  ``n_layers``, ``expansion_ratio`` default 4, ``no_bias`` default True,
  attribute_map ``hidden_size -> d_model``) and modeling_mpt.py (MptMLP
  ``up_proj``, ``nn.GELU(approximate="none")``, ``down_proj``, no biases;
  MptBlock ``norm_1``, ``attn``, ``norm_2``, ``ffn``); llm-foundry's MPTMLP
  (``resolve_ffn_hidden_size``: ``ffn_config.ffn_hidden_size``, else
  ``d_model * expansion_ratio``, which must be an integer) and its
  ``ffn_type`` registry (``mptmlp``, ``mptglu``), found with find_string
  'class MPTMLP(nn.Module)'. Names: ``transformer.wte``,
  ``transformer.blocks.{i}.{norm_1,attn.Wqkv,attn.out_proj,norm_2,ffn.up_proj,
  ffn.down_proj}``, ``transformer.norm_f``, as in the GGUF converter's tensor
  map tests, found with find_string '"transformer.blocks.0.ffn.up_proj.weight"'.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from skipsearch.io.checkpoints import CheckpointError
from skipsearch.io.layouts import FAMILIES, NORM_SCOPES
from skipsearch.scan import SUPPORTED_MODEL_TYPES

from tests.family_builders import biased_pair, small
from tests.test_families import generic, planted, save, scan

D, M = 4, 10


def blocks(rng, m=M):
    """Layer 0 planted (absorbable), layer 1 generic."""
    return [planted(rng, m=m), generic(rng, m=m)]


# -- builders: (tensors, config) with each family's real names and keys -----------------------


def falcon(rng, *, m=4 * D, layers=None, two_ln=False, prefix="transformer.", **config):
    """Falcon-7B (one input_layernorm) or, with two_ln, Falcon-40B (ln_attn, ln_mlp); bias false."""
    layers = layers or blocks(rng, m)
    t = {
        f"{prefix}word_embeddings.weight": rng.standard_normal((13, D)),
        f"{prefix}ln_f.weight": np.ones(D),
        f"{prefix}ln_f.bias": np.zeros(D),
        "lm_head.weight": rng.standard_normal((13, D)),
    }
    for i, (up, down) in enumerate(layers):
        base = f"{prefix}h.{i}."
        for ln in ("ln_attn", "ln_mlp") if two_ln else ("input_layernorm",):
            t[base + f"{ln}.weight"] = np.ones(D)
            t[base + f"{ln}.bias"] = np.zeros(D)
        t[base + "self_attention.query_key_value.weight"] = rng.standard_normal((D + 4, D))
        t[base + "self_attention.dense.weight"] = rng.standard_normal((D, D))
        t[base + "mlp.dense_h_to_4h.weight"] = up
        t[base + "mlp.dense_4h_to_h.weight"] = down
    # tiiuae/falcon-7b's config.json (transformers format), shrunk.
    cfg = {
        "alibi": False,
        "apply_residual_connection_post_layernorm": False,
        "architectures": ["FalconForCausalLM"],
        "attention_dropout": 0.0,
        "bias": False,
        "bos_token_id": 11,
        "eos_token_id": 11,
        "hidden_dropout": 0.0,
        "hidden_size": D,
        "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05,
        "model_type": "falcon",
        "multi_query": True,
        "new_decoder_architecture": False,
        "num_attention_heads": 2,
        "num_hidden_layers": len(layers),
        "parallel_attn": True,
        "torch_dtype": "bfloat16",
        "use_cache": True,
        "vocab_size": 13,
    }
    cfg.update(config)
    return t, {k: v for k, v in cfg.items() if v is not _DROP}


_DROP = object()


def bloom(rng, *, prefix="", **config):
    """BLOOM: dense_h_to_4h (4d, d) and dense_4h_to_h (d, 4d), always with biases."""
    t = {
        f"{prefix}word_embeddings.weight": rng.standard_normal((13, D)),
        f"{prefix}word_embeddings_layernorm.weight": np.ones(D),
        f"{prefix}ln_f.weight": np.ones(D),
    }
    for i, (up, down) in enumerate(blocks(rng, 4 * D)):
        base = f"{prefix}h.{i}."
        t[base + "input_layernorm.weight"] = np.ones(D)
        t[base + "input_layernorm.bias"] = np.zeros(D)
        t[base + "self_attention.query_key_value.weight"] = rng.standard_normal((3 * D, D))
        t[base + "self_attention.query_key_value.bias"] = small(rng, 3 * D)
        t[base + "self_attention.dense.weight"] = rng.standard_normal((D, D))
        t[base + "post_attention_layernorm.weight"] = np.ones(D)
        biased_pair(rng, t, base + "mlp.dense_h_to_4h", base + "mlp.dense_4h_to_h", up, down)
    # bigscience/bloom-560m's config.json, shrunk.
    cfg = {
        "apply_residual_connection_post_layernorm": False,
        "architectures": ["BloomForCausalLM"],
        "attention_dropout": 0.0,
        "attention_softmax_in_fp32": True,
        "bias_dropout_fusion": True,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "hidden_dropout": 0.0,
        "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05,
        "masked_softmax_fusion": True,
        "model_type": "bloom",
        "n_embed": D,
        "n_inner": None,
        "n_layer": 2,
        "num_attention_heads": 2,
        "offset_alibi": 100,
        "pad_token_id": 3,
        "pretraining_tp": 1,
        "skip_bias_add": True,
        "skip_bias_add_qkv": False,
        "slow_but_exact": False,
        "unk_token_id": 0,
        "use_cache": True,
        "vocab_size": 13,
    }
    cfg.update(config)
    return t, cfg


def gptj(rng, *, model_type="gptj", m=M, **config):
    """GPT-J / CodeGen: transformer.h.{i}.mlp.fc_in (m, d), fc_out (d, m), with biases."""
    t = {
        "transformer.wte.weight": rng.standard_normal((13, D)),
        "transformer.ln_f.weight": np.ones(D),
        "lm_head.weight": rng.standard_normal((13, D)),
        "lm_head.bias": small(rng, 13),
    }
    for i, (up, down) in enumerate(blocks(rng, m)):
        base = f"transformer.h.{i}."
        t[base + "ln_1.weight"] = np.ones(D)
        t[base + "ln_1.bias"] = np.zeros(D)
        if model_type == "codegen":
            t[base + "attn.qkv_proj.weight"] = rng.standard_normal((3 * D, D))
        else:
            for proj in ("q_proj", "k_proj", "v_proj"):
                t[base + f"attn.{proj}.weight"] = rng.standard_normal((D, D))
        t[base + "attn.out_proj.weight"] = rng.standard_normal((D, D))
        biased_pair(rng, t, base + "mlp.fc_in", base + "mlp.fc_out", up, down)
    # EleutherAI/gpt-j-6b and Salesforce/codegen-350M-mono config.json keys, shrunk.
    cfg = {
        "activation_function": "gelu_new",
        "architectures": ["GPTJForCausalLM" if model_type == "gptj" else "CodeGenForCausalLM"],
        "attn_pdrop": 0.0,
        "bos_token_id": 50256,
        "embd_pdrop": 0.0,
        "eos_token_id": 50256,
        "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05,
        "model_type": model_type,
        "n_ctx": 2048,
        "n_embd": D,
        "n_head": 2,
        "n_inner": m,
        "n_layer": 2,
        "n_positions": 2048,
        "resid_pdrop": 0.0,
        "rotary_dim": 2,
        "tie_word_embeddings": False,
        "vocab_size": 13,
    }
    cfg.update(config)
    return t, {k: v for k, v in cfg.items() if v is not _DROP}


def phi(rng, **config):
    """Phi-1/1.5/2: model.layers.{i}.mlp.fc1 (m, d), fc2 (d, m), with biases."""
    t = {
        "model.embed_tokens.weight": rng.standard_normal((13, D)),
        "model.final_layernorm.weight": np.ones(D),
        "model.final_layernorm.bias": np.zeros(D),
        "lm_head.weight": rng.standard_normal((13, D)),
        "lm_head.bias": small(rng, 13),
    }
    for i, (up, down) in enumerate(blocks(rng)):
        base = f"model.layers.{i}."
        t[base + "input_layernorm.weight"] = np.ones(D)
        t[base + "input_layernorm.bias"] = np.zeros(D)
        for proj in ("q_proj", "k_proj", "v_proj", "dense"):
            t[base + f"self_attn.{proj}.weight"] = rng.standard_normal((D, D))
        biased_pair(rng, t, base + "mlp.fc1", base + "mlp.fc2", up, down)
    # microsoft/phi-2's config.json, shrunk.
    cfg = {
        "architectures": ["PhiForCausalLM"],
        "attention_dropout": 0.0,
        "bos_token_id": 50256,
        "embd_pdrop": 0.0,
        "eos_token_id": 50256,
        "hidden_act": "gelu_new",
        "hidden_size": D,
        "initializer_range": 0.02,
        "intermediate_size": M,
        "layer_norm_eps": 1e-05,
        "max_position_embeddings": 2048,
        "model_type": "phi",
        "num_attention_heads": 2,
        "num_hidden_layers": 2,
        "num_key_value_heads": 2,
        "partial_rotary_factor": 0.4,
        "qk_layernorm": False,
        "resid_pdrop": 0.1,
        "rope_scaling": None,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
        "vocab_size": 13,
    }
    cfg.update(config)
    return t, {k: v for k, v in cfg.items() if v is not _DROP}


def gpt_bigcode(rng, *, transposed=False, **config):
    """StarCoder: GPT-2's names, nn.Linear (out, in) weights: c_fc (m, d), c_proj (d, m)."""
    t = {
        "transformer.wte.weight": rng.standard_normal((13, D)),
        "transformer.wpe.weight": rng.standard_normal((8, D)),
        "transformer.ln_f.weight": np.ones(D),
    }
    for i, (up, down) in enumerate(blocks(rng)):
        base = f"transformer.h.{i}."
        t[base + "ln_1.weight"] = np.ones(D)
        # Multi-query: D queries, one key and one value head of D / 2.
        t[base + "attn.c_attn.weight"] = rng.standard_normal((D + D, D))
        t[base + "attn.c_attn.bias"] = small(rng, D + D)
        t[base + "attn.c_proj.weight"] = rng.standard_normal((D, D))
        t[base + "ln_2.weight"] = np.ones(D)
        biased_pair(rng, t, base + "mlp.c_fc", base + "mlp.c_proj", up, down, transposed=transposed)
    # bigcode/starcoder's config.json, shrunk.
    cfg = {
        "activation_function": "gelu_pytorch_tanh",
        "architectures": ["GPTBigCodeForCausalLM"],
        "attention_softmax_in_fp32": True,
        "attn_pdrop": 0.1,
        "bos_token_id": 0,
        "embd_pdrop": 0.1,
        "eos_token_id": 0,
        "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05,
        "model_type": "gpt_bigcode",
        "multi_query": True,
        "n_embd": D,
        "n_head": 2,
        "n_inner": M,
        "n_layer": 2,
        "n_positions": 8,
        "resid_pdrop": 0.1,
        "scale_attention_softmax_in_fp32": True,
        "scale_attn_weights": True,
        "use_cache": True,
        "vocab_size": 13,
    }
    cfg.update(config)
    return t, {k: v for k, v in cfg.items() if v is not _DROP}


def starcoder2(rng, **config):
    """StarCoder2: model.layers.{i}.mlp.c_fc (m, d), c_proj (d, m), with biases (use_bias)."""
    t = {
        "model.embed_tokens.weight": rng.standard_normal((13, D)),
        "model.norm.weight": np.ones(D),
        "model.norm.bias": np.zeros(D),
    }
    for i, (up, down) in enumerate(blocks(rng)):
        base = f"model.layers.{i}."
        t[base + "input_layernorm.weight"] = np.ones(D)
        t[base + "input_layernorm.bias"] = np.zeros(D)
        for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
            t[base + f"self_attn.{proj}.weight"] = rng.standard_normal((D, D))
        t[base + "post_attention_layernorm.weight"] = np.ones(D)
        biased_pair(rng, t, base + "mlp.c_fc", base + "mlp.c_proj", up, down)
    # bigcode/starcoder2-3b's config.json keys, shrunk, with a conflicting
    # activation_function that the model never reads.
    cfg = {
        "activation_function": "gelu",
        "architectures": ["Starcoder2ForCausalLM"],
        "attention_dropout": 0.1,
        "bos_token_id": 0,
        "embedding_dropout": 0.1,
        "eos_token_id": 0,
        "hidden_act": "gelu_pytorch_tanh",
        "hidden_size": D,
        "initializer_range": 0.018042,
        "intermediate_size": M,
        "layer_norm_epsilon": 1e-05,
        "max_position_embeddings": 16384,
        "mlp_type": "default",
        "model_type": "starcoder2",
        "norm_epsilon": 1e-05,
        "norm_type": "layer_norm",
        "num_attention_heads": 2,
        "num_hidden_layers": 2,
        "num_key_value_heads": 1,
        "residual_dropout": 0.1,
        "rope_theta": 999999.4420358813,
        "sliding_window": 4096,
        "use_bias": True,
        "use_cache": True,
        "vocab_size": 13,
    }
    cfg.update(config)
    return t, {k: v for k, v in cfg.items() if v is not _DROP}


def mpt(rng, *, m=4 * D, **config):
    """MPT: transformer.blocks.{i}.ffn.up_proj (m, d), down_proj (d, m); no_bias."""
    t = {
        "transformer.wte.weight": rng.standard_normal((13, D)),
        "transformer.norm_f.weight": np.ones(D),
    }
    for i, (up, down) in enumerate(blocks(rng, m)):
        base = f"transformer.blocks.{i}."
        t[base + "norm_1.weight"] = np.ones(D)
        t[base + "attn.Wqkv.weight"] = rng.standard_normal((3 * D, D))
        t[base + "attn.out_proj.weight"] = rng.standard_normal((D, D))
        t[base + "norm_2.weight"] = np.ones(D)
        t[base + "ffn.up_proj.weight"] = up
        t[base + "ffn.down_proj.weight"] = down
    # mosaicml/mpt-7b's config.json, shrunk.
    cfg = {
        "architectures": ["MPTForCausalLM"],
        "attn_config": {
            "alibi": True,
            "alibi_bias_max": 8,
            "attn_impl": "torch",
            "attn_pdrop": 0,
            "attn_type": "multihead_attention",
            "attn_uses_sequence_id": False,
            "clip_qkv": None,
            "prefix_lm": False,
            "qk_ln": False,
            "softmax_scale": None,
        },
        "d_model": D,
        "emb_pdrop": 0,
        "embedding_fraction": 1.0,
        "expansion_ratio": 4,
        "init_device": "cpu",
        "learned_pos_emb": True,
        "logit_scale": None,
        "max_seq_len": 2048,
        "model_type": "mpt",
        "n_heads": 2,
        "n_layers": 2,
        "no_bias": True,
        "norm_type": "low_precision_layernorm",
        "resid_pdrop": 0,
        "tokenizer_name": "EleutherAI/gpt-neox-20b",
        "use_cache": False,
        "verbose": 0,
        "vocab_size": 13,
    }
    cfg.update(config)
    return t, {k: v for k, v in cfg.items() if v is not _DROP}


# -- every family: planted block absorbable, generic one not -----------------------------------

PARALLEL = "x + attn(LN x) + f(LN x) (parallel attention, one LayerNorm for both)"
TWO_LN = "x + attn(LN_attn x) + f(LN_mlp x) (parallel attention, a LayerNorm for each branch)"
SEQUENTIAL = "h = x + attn(LN_1 x); h + f(LN_2 h) (pre-LN)"

CASES = {
    # name: (builder, kwargs, family, block prefix, block suffix, activation, m, form)
    "falcon-7b": (falcon, {}, "falcon", "transformer.h.", ".mlp", "gelu", 4 * D, PARALLEL),
    "falcon-40b": (
        falcon,
        {"two_ln": True, "new_decoder_architecture": True, "num_kv_heads": 2},
        "falcon",
        "transformer.h.",
        ".mlp",
        "gelu",
        4 * D,
        TWO_LN,
    ),
    # Falcon2-11B: the new architecture with num_ln_in_parallel_attn 1, an
    # explicit ffn_hidden_size and activation.
    "falcon-11b": (
        falcon,
        {
            "m": M,
            "new_decoder_architecture": True,
            "num_ln_in_parallel_attn": 1,
            "ffn_hidden_size": M,
            "activation": "gelu",
        },
        "falcon",
        "transformer.h.",
        ".mlp",
        "gelu",
        M,
        PARALLEL,
    ),
    "bloom": (bloom, {}, "bloom", "h.", ".mlp", "gelu_tanh", 4 * D, SEQUENTIAL),
    "bloom-causal-lm": (
        bloom,
        {"prefix": "transformer."},
        "bloom",
        "transformer.h.",
        ".mlp",
        "gelu_tanh",
        4 * D,
        SEQUENTIAL,
    ),
    "gptj": (gptj, {}, "gptj", "transformer.h.", ".mlp", "gelu_tanh", M, PARALLEL),
    "codegen": (
        gptj,
        {"model_type": "codegen"},
        "codegen",
        "transformer.h.",
        ".mlp",
        "gelu_tanh",
        M,
        PARALLEL,
    ),
    "phi": (phi, {}, "phi", "model.layers.", ".mlp", "gelu_tanh", M, PARALLEL),
    "gpt_bigcode": (
        gpt_bigcode,
        {},
        "gpt_bigcode",
        "transformer.h.",
        ".mlp",
        "gelu_tanh",
        M,
        SEQUENTIAL,
    ),
    "starcoder2": (
        starcoder2,
        {},
        "starcoder2",
        "model.layers.",
        ".mlp",
        "gelu_tanh",
        M,
        SEQUENTIAL,
    ),
    "mpt": (mpt, {}, "mpt", "transformer.blocks.", ".ffn", "gelu", 4 * D, SEQUENTIAL),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_planted_absorbable_generic_not(tmp_path, case):
    builder, kwargs, family, head, tail, activation, m, form = CASES[case]
    tensors, config = builder(np.random.default_rng(sorted(CASES).index(case)), **kwargs)
    reports = scan(save(tmp_path / case, tensors, config))
    assert [r.block for r in reports] == [f"{head}0{tail}", f"{head}1{tail}"]
    for i, r in enumerate(reports):
        assert (r.family, r.kind, r.stack, r.expert, r.layer) == (family, "mlp", None, None, i)
        assert (r.d, r.m, r.activation, r.norm) == (D, m, activation, "pre")
        assert r.scope == NORM_SCOPES["pre"]
        assert r.form == form
        if form == SEQUENTIAL:
            assert r.note is None
        else:
            assert r.note.startswith("parallel attention") and "y -> y + f(y)" in r.note
    absorbed, rest = reports
    assert absorbed.verdict == "absorbable", absorbed.result
    assert absorbed.result.subset.tolist() == list(range(D))
    assert rest.verdict == "not_absorbable", rest.result
    # A lower bound: with m = 4d the relaxation can come near 0 on random weights.
    assert rest.relaxation_distance >= 0.0


# -- Falcon -------------------------------------------------------------------------------


def test_falcon_two_ln_note_names_ln_mlp(tmp_path):
    rng = np.random.default_rng(30)
    tensors, config = falcon(rng, two_ln=True, new_decoder_architecture=True)
    reports = scan(save(tmp_path / "falcon", tensors, config))
    assert all("ln_mlp(x)" in r.note for r in reports)


def test_falcon_sequential_when_not_parallel(tmp_path):
    # parallel_attn false (the Falcon-RW models): attention then the MLP, each with its LN.
    rng = np.random.default_rng(31)
    tensors, config = falcon(rng, parallel_attn=False)
    for i in range(2):
        tensors[f"transformer.h.{i}.post_attention_layernorm.weight"] = np.ones(D)
    reports = scan(save(tmp_path / "falcon-rw", tensors, config))
    assert [(r.form, r.note) for r in reports] == [(SEQUENTIAL, None)] * 2
    assert [r.verdict for r in reports] == ["absorbable", "not_absorbable"]


@pytest.mark.parametrize(
    "model_type, extra, form",
    [
        # tiiuae/falcon-7b before transformers took it in (remote code modelling_RW.py).
        (
            "RefinedWebModel",
            {"multi_query": True, "n_head": 2, "padded_heads": 1, "parallel_attn": True},
            PARALLEL,
        ),
        # tiiuae/falcon-40b's RW config has no new_decoder_architecture; its code
        # always has ln_attn and ln_mlp.
        ("RefinedWeb", {"n_head": 2, "n_head_kv": 1, "parallel_attn": True}, TWO_LN),
    ],
)
def test_falcon_refinedweb_configs(tmp_path, model_type, extra, form):
    rng = np.random.default_rng(32)
    tensors, config = falcon(
        rng,
        two_ln=form == TWO_LN,
        model_type=model_type,
        num_hidden_layers=_DROP,
        num_attention_heads=_DROP,
        new_decoder_architecture=_DROP,
        n_layer=2,
        **extra,
    )
    reports = scan(save(tmp_path / model_type, tensors, config))
    assert [(r.family, r.form, r.d, r.m) for r in reports] == [("falcon", form, D, 4 * D)] * 2
    assert [r.verdict for r in reports] == ["absorbable", "not_absorbable"]


def test_falcon_ffn_hidden_size_null_means_4d(tmp_path):
    rng = np.random.default_rng(33)
    tensors, config = falcon(rng, ffn_hidden_size=None, activation=None)
    reports = scan(save(tmp_path / "falcon", tensors, config))
    # Null activation: FalconConfig's default, gelu.
    assert [(r.d, r.m, r.activation) for r in reports] == [(D, 4 * D, "gelu")] * 2


def test_falcon_n_embed_overrides_hidden_size(tmp_path):
    rng = np.random.default_rng(34)
    tensors, config = falcon(rng, hidden_size=_DROP, n_embed=D)
    assert [(r.d, r.m) for r in scan(save(tmp_path / "f", tensors, config))] == [(D, 4 * D)] * 2


def test_falcon_ffn_hidden_size_must_match(tmp_path):
    rng = np.random.default_rng(35)
    tensors, config = falcon(rng, ffn_hidden_size=M)  # the tensors have 4 * D rows
    with pytest.raises(CheckpointError, match=re.escape(f"expected ({M}, {D})")):
        scan(save(tmp_path / "falcon", tensors, config))


def test_falcon_bad_flags(tmp_path):
    rng = np.random.default_rng(36)
    tensors, config = falcon(rng, parallel_attn="yes")
    with pytest.raises(CheckpointError, match="parallel_attn must be true or false"):
        scan(save(tmp_path / "a", tensors, config))
    tensors, config = falcon(rng, new_decoder_architecture=True, num_ln_in_parallel_attn=3)
    with pytest.raises(CheckpointError, match="num_ln_in_parallel_attn must be 1 or 2"):
        scan(save(tmp_path / "b", tensors, config))


# -- BLOOM --------------------------------------------------------------------------------


def test_bloom_ignores_n_inner(tmp_path):
    # BloomMLP is always 4 * hidden_size wide; n_inner is never read.
    rng = np.random.default_rng(40)
    tensors, config = bloom(rng, n_inner=M)
    assert [r.m for r in scan(save(tmp_path / "bloom", tensors, config))] == [4 * D] * 2


def test_bloom_no_activation_key(tmp_path):
    # BloomGelu is fixed in the code: a hidden_act in the config is not read.
    rng = np.random.default_rng(41)
    tensors, config = bloom(rng, hidden_act="relu")
    assert [r.activation for r in scan(save(tmp_path / "b", tensors, config))] == ["gelu_tanh"] * 2


def test_bloom_residual_after_layernorm(tmp_path):
    rng = np.random.default_rng(42)
    tensors, config = bloom(rng, apply_residual_connection_post_layernorm=True)
    reports = scan(save(tmp_path / "bloom", tensors, config))
    for r in reports:
        assert r.norm is None and r.scope == NORM_SCOPES[None]
        assert r.form.startswith("y + f(y), y = LN_2 h")
        assert "apply_residual_connection_post_layernorm" in r.note
    assert [r.verdict for r in reports] == ["absorbable", "not_absorbable"]


def test_bloom_needs_a_width(tmp_path):
    rng = np.random.default_rng(43)
    tensors, config = bloom(rng, n_embed=2 * D)  # the tensors are D wide
    with pytest.raises(CheckpointError, match="has shape"):
        scan(save(tmp_path / "bloom", tensors, config))


# -- GPT-J, CodeGen, Phi ----------------------------------------------------------------------


@pytest.mark.parametrize("model_type", ["gptj", "codegen"])
def test_gptj_defaults(tmp_path, model_type):
    # n_inner null -> 4 * n_embd; activation_function absent -> gelu_new.
    rng = np.random.default_rng(50)
    tensors, config = gptj(
        rng, model_type=model_type, m=4 * D, n_inner=None, activation_function=_DROP
    )
    reports = scan(save(tmp_path / model_type, tensors, config))
    assert [(r.d, r.m, r.activation) for r in reports] == [(D, 4 * D, "gelu_tanh")] * 2
    assert [r.verdict for r in reports] == ["absorbable", "not_absorbable"]


def test_phi_default_activation(tmp_path):
    rng = np.random.default_rng(51)
    tensors, config = phi(rng, hidden_act=_DROP)
    assert [r.activation for r in scan(save(tmp_path / "phi", tensors, config))] == [
        "gelu_tanh"
    ] * 2


def test_phi_layer_count_checked(tmp_path):
    rng = np.random.default_rng(52)
    tensors, config = phi(rng, num_hidden_layers=3)
    with pytest.raises(CheckpointError, match="num_hidden_layers"):
        scan(save(tmp_path / "phi", tensors, config))


# -- GPTBigCode, StarCoder2 -------------------------------------------------------------------


def test_gpt_bigcode_defaults(tmp_path):
    rng = np.random.default_rng(60)
    tensors, config = gpt_bigcode(rng, activation_function=_DROP)
    assert [r.activation for r in scan(save(tmp_path / "sc", tensors, config))] == ["gelu_tanh"] * 2


def test_gpt_bigcode_is_not_conv1d(tmp_path):
    rng = np.random.default_rng(61)
    tensors, config = gpt_bigcode(rng, transposed=True)
    with pytest.raises(CheckpointError, match=re.escape(f"has shape ({D}, {M})")):
        scan(save(tmp_path / "sc", tensors, config))


def test_starcoder2_reads_hidden_act_only(tmp_path):
    rng = np.random.default_rng(62)
    tensors, config = starcoder2(rng, activation_function="gelu", hidden_act="relu")
    reports = scan(save(tmp_path / "sc2", tensors, config))
    assert [r.activation for r in reports] == ["relu"] * 2
    assert [r.verdict for r in reports] == ["absorbable", "not_absorbable"]
    tensors, config = starcoder2(rng, hidden_act=_DROP)
    assert [r.activation for r in scan(save(tmp_path / "d", tensors, config))] == ["gelu_tanh"] * 2


# -- MPT ----------------------------------------------------------------------------------


def test_mpt_expansion_ratio(tmp_path):
    rng = np.random.default_rng(70)
    tensors, config = mpt(rng, m=2 * D, expansion_ratio=2)
    assert [r.m for r in scan(save(tmp_path / "a", tensors, config))] == [2 * D] * 2
    # Absent, it is MptConfig's default 4.
    tensors, config = mpt(rng, expansion_ratio=_DROP)
    assert [r.m for r in scan(save(tmp_path / "b", tensors, config))] == [4 * D] * 2


def test_mpt_ffn_hidden_size(tmp_path):
    rng = np.random.default_rng(71)
    ffn = {"ffn_type": "mptmlp", "ffn_hidden_size": M}
    tensors, config = mpt(rng, m=M, ffn_config=ffn)
    reports = scan(save(tmp_path / "mpt", tensors, config))
    assert [(r.m, r.verdict) for r in reports] == [(M, "absorbable"), (M, "not_absorbable")]


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"ffn_config": {"ffn_type": "mptglu"}}, "ffn_type is 'mptglu'"),
        (
            {"ffn_config": {"ffn_type": "mptmlp", "ffn_act_fn": {"name": "silu"}}},
            "ffn_act_fn",
        ),
        ({"expansion_ratio": 2.5, "d_model": 3}, "must be an integer"),
        ({"ffn_config": "mptmlp"}, "ffn_config must be an object"),
    ],
)
def test_mpt_refused_configs(tmp_path, extra, message):
    rng = np.random.default_rng(72)
    tensors, config = mpt(rng, **extra)
    with pytest.raises(CheckpointError, match=message):
        scan(save(tmp_path / "mpt", tensors, config))


def test_families_registered():
    for model_type in (
        "falcon",
        "RefinedWeb",
        "RefinedWebModel",
        "bloom",
        "gptj",
        "codegen",
        "phi",
        "gpt_bigcode",
        "starcoder2",
        "mpt",
    ):
        assert model_type in FAMILIES and model_type in SUPPORTED_MODEL_TYPES


@pytest.mark.parametrize(
    "builder, names",
    [
        (gptj, {"n_embd": "hidden_size", "n_layer": "num_hidden_layers"}),
        (gpt_bigcode, {"n_embd": "hidden_size", "n_layer": "num_hidden_layers"}),
        (mpt, {"d_model": "hidden_size", "n_layers": "num_hidden_layers"}),
    ],
)
def test_attribute_map_aliases(tmp_path, builder, names):
    tensors, config = builder(np.random.default_rng(80))
    for key, alias in names.items():
        config[alias] = config.pop(key)
    reports = scan(save(tmp_path / "alias", tensors, config))
    assert [(r.d, r.verdict) for r in reports] == [(D, "absorbable"), (D, "not_absorbable")]
