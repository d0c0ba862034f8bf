"""skipsearch.scan on tiny synthetic mixture-of-experts checkpoints.

Each test writes a checkpoint with the family's real tensor names and its
real config.json keys (values shrunk: d = 4, expert widths 5..10, 3 or 4
experts, 2 layers), with router weights, norms, attention and embeddings
beside the FFN tensors, and checks every block: its kind, expert index,
d, m and verdict. The experts are gated (SwiGLU) without inner biases, so
The linearization argument of docs/theory.md §4.2 decides them not absorbable;
gpt-oss's clamped SwiGLU is outside every theorem and is undecided.

Sources, for every family:

- transformers modeling and configuration files, read in the
  huggingface/transformers repository (commit named where the index gave
  one); ``src/transformers/conversion_mapping.py`` (commit 000c33fd) for
  the fused expert tensors of transformers v5: ``MergeModulelist(dim=0)``
  then ``Concatenate(dim=1)`` of ``[gate, up]`` per expert into
  ``mlp.experts.gate_up_proj`` ``[E, 2m, d]`` and of ``down`` into
  ``mlp.experts.down_proj`` ``[E, d, m]``, for mixtral, qwen2_moe and (as
  copies of qwen2_moe's mapping) qwen3_moe, deepseek_v2, deepseek_v3;
  ``MixtralExperts.forward`` splits it with ``chunk(2, dim=-1)`` as
  (gate, up).
- public checkpoints' config.json and model.safetensors.index.json, cited
  at each builder.
"""

from __future__ import annotations

import numpy as np
import pytest
import skipsearch
from skipsearch._scan.locate import locate
from skipsearch._scan.tensors import read_block
from skipsearch.io.checkpoints import CheckpointError
from skipsearch.scan import describe_checkpoint

from tests.family_builders import assert_weights
from tests.test_families import save, scan

D = 4


def attention(rng, t: dict, base: str) -> None:
    """The unrelated tensors of one decoder layer (LLaMA-style names)."""
    t[base + "input_layernorm.weight"] = np.ones(D)
    t[base + "post_attention_layernorm.weight"] = np.ones(D)
    for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
        t[base + f"self_attn.{proj}.weight"] = rng.standard_normal((D, D))


def embeddings(rng) -> dict:
    return {
        "model.embed_tokens.weight": rng.standard_normal((11, D)),
        "model.norm.weight": np.ones(D),
        "lm_head.weight": rng.standard_normal((11, D)),
    }


def swiglu(rng, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(W_gate (m, d), W_up (m, d), W_down (d, m)), all different."""
    return (
        rng.standard_normal((m, D)),
        rng.standard_normal((m, D)),
        rng.standard_normal((D, m)),
    )


def add_experts(rng, t: dict, base: str, names, experts: int, m: int, fused: bool) -> list:
    """Routed experts under ``base`` (``"model.layers.1.mlp."``), one tensor
    per expert (``names`` = gate, up, down) or transformers v5's fused 3-D
    tensors; returns the planted (gate, up, down) of each expert."""
    planted = [swiglu(rng, m) for _ in range(experts)]
    if fused:
        t[base + "experts.gate_up_proj"] = np.stack([np.concatenate([g, u]) for g, u, _ in planted])
        t[base + "experts.down_proj"] = np.stack([w for _, _, w in planted])
    else:
        gate, up, down = names
        for e, (g, u, w) in enumerate(planted):
            t[base + f"experts.{e}.{gate}.weight"] = g
            t[base + f"experts.{e}.{up}.weight"] = u
            t[base + f"experts.{e}.{down}.weight"] = w
    return planted


def add_mlp(rng, t: dict, base: str, m: int) -> None:
    """A dense SwiGLU MLP under ``base`` (``"model.layers.0.mlp."``)."""
    g, u, w = swiglu(rng, m)
    t[base + "gate_proj.weight"], t[base + "up_proj.weight"], t[base + "down_proj.weight"] = g, u, w


def by_block(reports) -> dict:
    return {(r.layer, r.kind, r.expert): r for r in reports}


def check_expert_rows(rows, *, family: str, m: int, shared: bool = False) -> None:
    for r in rows:
        assert (r.family, r.d, r.m, r.activation) == (family, D, m, "swiglu"), r
        assert r.verdict == "not_absorbable", r.result
        assert r.result.argument == "linearization"
        assert "sum_e p_e(x) f_e(x)" in r.form
        assert ("sigmoid" in r.form) == shared
        assert "x + f_e(x)" in r.note and "not for the layer" in r.note


def scan_two_moe_layers(path) -> list:
    """The reports of a checkpoint of two sparse layers of 3 experts each, checked to be one
    expert row per (layer, expert)."""
    reports = scan(path)
    assert len(reports) == 6
    assert sorted(by_block(reports)) == [(i, "expert", e) for i in range(2) for e in range(3)]
    return reports


def scan_dense_then_sparse(path, dense_m: int) -> dict:
    """The rows (by_block) of a checkpoint of 5 blocks whose layer 0 is a dense
    MLP of width ``dense_m``, checked, and whose layer 1 is sparse."""
    reports = scan(path)
    rows = by_block(reports)
    assert len(reports) == 5
    dense = rows[0, "mlp", None]
    assert (dense.block, dense.d, dense.m) == ("model.layers.0.mlp", D, dense_m)
    assert dense.verdict == "not_absorbable", dense.result
    return rows


def assert_experts(path, layer: int, planted: list) -> list:
    """Every expert of ``layer`` reads back as its planted (gate, up, down); returns the
    tensors read, one dict an expert."""
    blocks = [read(path, layer, e) for e in range(len(planted))]
    for block, weights in zip(blocks, planted):
        assert_weights(block, *weights)
    return blocks


def read(path, layer: int, expert) -> dict:
    """The tensors the scan reads for the block of ``layer`` and ``expert``
    (the first block of the layer when ``expert`` is None)."""
    info, ckpt = locate(path)
    rows = [b for b in info._blocks if b.layer == layer]
    names = [b.name for b in rows]
    assert len(set(names)) == len(names), names
    block = rows[0] if expert is None else rows[expert]
    return read_block(info, ckpt, block)


# -- Mixtral ---------------------------------------------------------------------------------------


def mixtral(rng, *, fused=False, experts=3, m=6, **overrides):
    """Mixtral: block_sparse_moe.experts.{e}.w1 (gate), w3 (up), w2 (down);
    transformers v5: mlp.experts.gate_up_proj / down_proj and mlp.gate.

    Names and keys: huggingface/transformers
    src/transformers/models/mixtral/modeling_mixtral.py (commit 00d4b3d2:
    MixtralBlockSparseTop2MLP w1/w2/w3, act_fn(w1 x) * w3 x; MixtralSparseMoeBlock
    gate + experts; MixtralDecoderLayer block_sparse_moe after
    post_attention_layernorm) and configuration_mixtral.py (commit 008e5743:
    hidden_act "silu", num_local_experts 8, attribute_map num_experts ->
    num_local_experts); the checkpoint tbressers/WizardLM-2-8x22B config.json
    and model.safetensors.index.json (model.layers.0.block_sparse_moe.experts.0.w1.weight,
    ...w2, ...w3, model.layers.0.block_sparse_moe.gate.weight).
    """
    t = embeddings(rng)
    planted = {}
    for i in range(2):
        base = f"model.layers.{i}."
        attention(rng, t, base)
        moe = base + ("mlp." if fused else "block_sparse_moe.")
        t[moe + "gate.weight"] = rng.standard_normal((experts, D))
        planted[i] = add_experts(rng, t, moe, ("w1", "w3", "w2"), experts, m, fused)
    config = {
        "architectures": ["MixtralForCausalLM"],
        "model_type": "mixtral",
        "hidden_act": "silu",
        "hidden_size": D,
        "intermediate_size": m,
        "num_attention_heads": 2,
        "num_experts_per_tok": 2,
        "num_hidden_layers": 2,
        "num_key_value_heads": 1,
        "num_local_experts": experts,
        "rms_norm_eps": 1e-05,
        "router_jitter_noise": 0.0,
        "sliding_window": None,
        "vocab_size": 11,
        **overrides,
    }
    return t, config, planted


@pytest.mark.parametrize("fused", [False, True])
def test_mixtral_experts(tmp_path, fused):
    tensors, config, _ = mixtral(np.random.default_rng(0), fused=fused)
    reports = scan_two_moe_layers(save(tmp_path / "mixtral", tensors, config))
    check_expert_rows(reports, family="mixtral", m=6)
    if not fused:
        assert [r.block for r in reports[:3]] == [
            f"model.layers.0.block_sparse_moe.experts.{e}" for e in range(3)
        ]
    for r in reports:
        assert r.block.startswith(f"model.layers.{r.layer}.")


def test_mixtral_fused_split(tmp_path):
    """gate_up_proj[e] is [W_gate; W_up] (w1 rows, then w3 rows): the scan
    must read the first m rows as the gate."""
    tensors, config, planted = mixtral(np.random.default_rng(1), fused=True)
    path = save(tmp_path / "mixtral", tensors, config)
    for block in assert_experts(path, 1, planted[1]):
        assert block["b_up"] is None and block["b_down"] is None


def test_mixtral_default_activation(tmp_path):
    # MixtralConfig: hidden_act defaults to "silu" when absent or null.
    tensors, config, _ = mixtral(np.random.default_rng(2), hidden_act=None)
    info = describe_checkpoint(save(tmp_path / "mixtral", tensors, config))
    assert (info.family, info.activation) == ("mixtral", "swiglu")


def test_mixtral_expert_count_checked(tmp_path):
    tensors, config, _ = mixtral(np.random.default_rng(3), num_local_experts=4)
    with pytest.raises(CheckpointError, match="gives num_local_experts=4 experts per layer"):
        scan(save(tmp_path / "mixtral", tensors, config))


def test_mixtral_wrong_width(tmp_path):
    tensors, config, _ = mixtral(np.random.default_rng(4))
    tensors["model.layers.1.block_sparse_moe.experts.2.w3.weight"] = np.ones((5, D))
    with pytest.raises(CheckpointError, match="w3"):
        scan(save(tmp_path / "mixtral", tensors, config))


def test_mixtral_both_forms_refused(tmp_path):
    # Experts are counted per layer and kind, whichever form names them.
    tensors, config, _ = mixtral(np.random.default_rng(19))
    fused, _, _ = mixtral(np.random.default_rng(19), fused=True)
    tensors.update({k: v for k, v in fused.items() if ".mlp.experts." in k})
    with pytest.raises(CheckpointError):
        scan(save(tmp_path / "mixtral", tensors, config))


def test_mixtral_without_experts(tmp_path):
    tensors, config, _ = mixtral(np.random.default_rng(5))
    tensors = {k: v for k, v in tensors.items() if ".experts." not in k}
    with pytest.raises(CheckpointError):
        scan(save(tmp_path / "mixtral", tensors, config))


# -- Qwen2-MoE / Qwen3-MoE ------------------------------------------------------------------------


def qwen2_moe(rng, *, fused=False, **overrides):
    """Qwen2-MoE: layer 0 dense (mlp_only_layers), layer 1 sparse with 3
    routed experts (moe_intermediate_size 6) and a shared expert
    (shared_expert_intermediate_size 8) behind shared_expert_gate.

    Names and keys: huggingface/transformers
    src/transformers/models/qwen2_moe/modular_qwen2_moe.py (commit 001f85b3: Qwen2MoeMLP
    gate_proj/up_proj/down_proj; Qwen2MoeSparseMoeBlock gate, experts,
    shared_expert, shared_expert_gate [1, d]; Qwen2MoeDecoderLayer: sparse when
    layer_idx not in mlp_only_layers and (layer_idx + 1) % decoder_sparse_step
    == 0) and huggingface/transformers configuration_qwen2_moe.py (commit
    008e5743: decoder_sparse_step 1, moe_intermediate_size 1408,
    shared_expert_intermediate_size 5632, num_experts 60, mlp_only_layers
    None -> []); base_model_tp_plan / base_model_ep_plan there name
    layers.*.mlp.experts.gate_up_proj, .down_proj and layers.*.mlp.gate; config
    keys as in Qwen/Qwen1.5-MoE-A2.7B's config.json.
    """
    t = embeddings(rng)
    attention(rng, t, "model.layers.0.")
    add_mlp(rng, t, "model.layers.0.mlp.", 10)
    base = "model.layers.1.mlp."
    attention(rng, t, "model.layers.1.")
    t[base + "gate.weight"] = rng.standard_normal((3, D))
    planted = add_experts(rng, t, base, ("gate_proj", "up_proj", "down_proj"), 3, 6, fused)
    add_mlp(rng, t, base + "shared_expert.", 8)
    t[base + "shared_expert_gate.weight"] = rng.standard_normal((1, D))
    config = {
        "architectures": ["Qwen2MoeForCausalLM"],
        "model_type": "qwen2_moe",
        "decoder_sparse_step": 1,
        "hidden_act": "silu",
        "hidden_size": D,
        "intermediate_size": 10,
        "max_window_layers": 2,
        "mlp_only_layers": [0],
        "moe_intermediate_size": 6,
        "norm_topk_prob": False,
        "num_attention_heads": 2,
        "num_experts": 3,
        "num_experts_per_tok": 2,
        "num_hidden_layers": 2,
        "num_key_value_heads": 2,
        "shared_expert_intermediate_size": 8,
        "use_sliding_window": False,
        "vocab_size": 11,
        **overrides,
    }
    return t, config, planted


@pytest.mark.parametrize("fused", [False, True])
def test_qwen2_moe(tmp_path, fused):
    tensors, config, _ = qwen2_moe(np.random.default_rng(6), fused=fused)
    rows = scan_dense_then_sparse(save(tmp_path / "qwen2_moe", tensors, config), 10)
    assert sorted(rows, key=str) == sorted(
        [(0, "mlp", None), (1, "shared_expert", None)] + [(1, "expert", e) for e in range(3)],
        key=str,
    )
    assert rows[0, "mlp", None].form == "x + f(x)"
    check_expert_rows(
        [rows[1, "expert", e] for e in range(3)], family="qwen2_moe", m=6, shared=True
    )
    shared = rows[1, "shared_expert", None]
    assert shared.block == "model.layers.1.mlp.shared_expert"
    assert (shared.d, shared.m, shared.verdict) == (D, 8, "not_absorbable")
    assert "sigmoid" in shared.form and "sum_e p_e(x) f_e(x)" in shared.form
    assert "x + f_s(x)" in shared.note


def test_qwen2_moe_fused_split(tmp_path):
    tensors, config, planted = qwen2_moe(np.random.default_rng(7), fused=True)
    path = save(tmp_path / "qwen2_moe", tensors, config)
    info, ckpt = locate(path)
    experts = [b for b in info._blocks if b.layer == 1 and "shared" not in b.name]
    assert len(experts) == 3
    for e in range(3):
        block = read_block(info, ckpt, experts[e])
        assert_weights(block, *planted[e])


def test_qwen2_moe_wrong_shared_width(tmp_path):
    tensors, config, _ = qwen2_moe(np.random.default_rng(8), shared_expert_intermediate_size=7)
    with pytest.raises(CheckpointError, match="shared_expert"):
        scan(save(tmp_path / "qwen2_moe", tensors, config))


def qwen3_moe(rng, *, fused=False, **overrides):
    """Qwen3-MoE: decoder_sparse_step 2 makes layer 0 dense and layer 1 sparse
    ((layer_idx + 1) % 2 == 0); 4 routed experts, no shared expert.

    Names and keys: huggingface/transformers
    src/transformers/models/qwen3_moe/configuration_qwen3_moe.py (commit
    008e5743: moe_intermediate_size 768, num_experts 128, decoder_sparse_step
    1, mlp_only_layers None -> [], base_model_tp_plan layers.*.mlp.gate_proj /
    up_proj / down_proj and layers.*.mlp.experts.gate_up_proj / down_proj);
    conversion_mapping.py copies qwen2_moe's per-expert names
    (mlp.experts.*.gate_proj.weight, ...) for qwen3_moe.
    """
    t = embeddings(rng)
    attention(rng, t, "model.layers.0.")
    t["model.layers.0.self_attn.q_norm.weight"] = np.ones(2)
    add_mlp(rng, t, "model.layers.0.mlp.", 9)
    attention(rng, t, "model.layers.1.")
    t["model.layers.1.mlp.gate.weight"] = rng.standard_normal((4, D))
    planted = add_experts(
        rng, t, "model.layers.1.mlp.", ("gate_proj", "up_proj", "down_proj"), 4, 5, fused
    )
    config = {
        "architectures": ["Qwen3MoeForCausalLM"],
        "model_type": "qwen3_moe",
        "decoder_sparse_step": 2,
        "head_dim": 2,
        "hidden_act": "silu",
        "hidden_size": D,
        "intermediate_size": 9,
        "mlp_only_layers": [],
        "moe_intermediate_size": 5,
        "norm_topk_prob": True,
        "num_attention_heads": 2,
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "num_hidden_layers": 2,
        "num_key_value_heads": 1,
        "vocab_size": 11,
        **overrides,
    }
    return t, config, planted


@pytest.mark.parametrize("fused", [False, True])
def test_qwen3_moe(tmp_path, fused):
    tensors, config, _ = qwen3_moe(np.random.default_rng(9), fused=fused)
    rows = scan_dense_then_sparse(save(tmp_path / "qwen3_moe", tensors, config), 9)
    check_expert_rows([rows[1, "expert", e] for e in range(4)], family="qwen3_moe", m=5)


def test_qwen3_moe_expert_count_checked(tmp_path):
    tensors, config, _ = qwen3_moe(np.random.default_rng(10), fused=True, num_experts=3)
    with pytest.raises(CheckpointError, match="gives num_experts=3 experts per layer"):
        scan(save(tmp_path / "qwen3_moe", tensors, config))


# -- DeepSeek-V2 / V3 -----------------------------------------------------------------------------


def deepseek(rng, *, model_type="deepseek_v2", fused=False, shared_width=6, **overrides):
    """DeepSeek: the first first_k_dense_replace (1) layers dense, then 3
    routed experts (moe_intermediate_size 3) and shared_experts of width
    moe_intermediate_size * n_shared_experts.

    Names and keys: huggingface/transformers
    src/transformers/models/deepseek_v2/modular_deepseek_v2.py (commit
    000c33fd: DeepseekV2Moe experts, gate, shared_experts =
    DeepseekV2MLP(intermediate_size=moe_intermediate_size * n_shared_experts),
    routed weights times routed_scaling_factor; DeepseekV2DecoderLayer: MoE
    when layer_idx >= first_k_dense_replace) and configuration_deepseek_v2.py
    (commit 008e5743: first_k_dense_replace 0, n_shared_experts 2,
    n_routed_experts 64, moe_intermediate_size 1407, attribute_map num_experts
    -> n_routed_experts); configuration_deepseek_v3.py (commit 001f85b3:
    first_k_dense_replace 3, n_shared_experts 1, n_routed_experts 256,
    routed_scaling_factor 2.5, base_model_tp_plan layers.*.mlp.shared_experts.*
    and layers.*.mlp.experts.gate_up_proj); per-expert names
    model.layers.1.mlp.experts.{e}.gate_proj.weight and
    model.layers.1.mlp.gate.e_score_correction_bias as in DeepSeek-V3's
    model.safetensors.index.json.
    """
    t = embeddings(rng)
    attention(rng, t, "model.layers.0.")
    add_mlp(rng, t, "model.layers.0.mlp.", 10)
    attention(rng, t, "model.layers.1.")
    base = "model.layers.1.mlp."
    t[base + "gate.weight"] = rng.standard_normal((3, D))
    if model_type == "deepseek_v3":
        t[base + "gate.e_score_correction_bias"] = rng.standard_normal(3)
    planted = add_experts(rng, t, base, ("gate_proj", "up_proj", "down_proj"), 3, 3, fused)
    add_mlp(rng, t, base + "shared_experts.", shared_width)
    config = {
        "architectures": ["DeepseekV2ForCausalLM"],
        "model_type": model_type,
        "first_k_dense_replace": 1,
        "hidden_act": "silu",
        "hidden_size": D,
        "intermediate_size": 10,
        "kv_lora_rank": 2,
        "moe_intermediate_size": 3,
        "n_routed_experts": 3,
        "n_shared_experts": 2,
        "norm_topk_prob": False,
        "num_attention_heads": 2,
        "num_experts_per_tok": 2,
        "num_hidden_layers": 2,
        "q_lora_rank": None,
        "routed_scaling_factor": 16.0,
        "topk_method": "greedy",
        "vocab_size": 11,
        **overrides,
    }
    return t, config, planted


@pytest.mark.parametrize("fused", [False, True])
def test_deepseek_v2(tmp_path, fused):
    tensors, config, _ = deepseek(np.random.default_rng(11), fused=fused)
    rows = scan_dense_then_sparse(save(tmp_path / "deepseek_v2", tensors, config), 10)
    experts = [rows[1, "expert", e] for e in range(3)]
    check_expert_rows(experts, family="deepseek_v2", m=3)
    assert all("routed_scaling_factor = 16" in r.form for r in experts)
    shared = rows[1, "shared_expert", None]
    # moe_intermediate_size * n_shared_experts = 3 * 2.
    assert (shared.block, shared.d, shared.m) == ("model.layers.1.mlp.shared_experts", D, 6)
    assert shared.verdict == "not_absorbable"
    assert "x + f_s(x)" in shared.note


def test_deepseek_v3_defaults(tmp_path):
    # DeepseekV3Config: n_shared_experts defaults to 1, so the shared experts
    # are moe_intermediate_size wide.
    tensors, config, _ = deepseek(
        np.random.default_rng(12), model_type="deepseek_v3", fused=True, shared_width=3
    )
    del config["n_shared_experts"], config["routed_scaling_factor"]
    config["architectures"] = ["DeepseekV3ForCausalLM"]
    rows = scan_dense_then_sparse(save(tmp_path / "deepseek_v3", tensors, config), 10)
    assert rows[1, "shared_expert", None].m == 3
    # DeepseekV3Config: routed_scaling_factor defaults to 2.5.
    assert "routed_scaling_factor = 2.5" in rows[1, "expert", 0].form
    check_expert_rows([rows[1, "expert", e] for e in range(3)], family="deepseek_v3", m=3)


def test_deepseek_v2_default_shared_experts(tmp_path):
    # DeepseekV2Config: n_shared_experts defaults to 2: width 6, not 3.
    tensors, config, _ = deepseek(np.random.default_rng(13), shared_width=3)
    del config["n_shared_experts"]
    with pytest.raises(CheckpointError, match=r"shared_experts.up_proj.weight.*expected \(6, 4\)"):
        scan(save(tmp_path / "deepseek_v2", tensors, config))


def test_deepseek_layers_must_be_covered(tmp_path):
    # A layer with neither a dense MLP nor experts.
    tensors, config, _ = deepseek(np.random.default_rng(14))
    tensors = {k: v for k, v in tensors.items() if not k.startswith("model.layers.0.mlp.")}
    with pytest.raises(CheckpointError):
        scan(save(tmp_path / "deepseek_v2", tensors, config))


# -- GraniteMoE ------------------------------------------------------------------------------------


def granitemoe(rng, *, experts=3, m=6, **overrides):
    """GraniteMoE: block_sparse_moe.input_linear.weight [E, 2m, d] (chunk(2,
    dim=-1): gate, then up), output_linear.weight [E, d, m],
    router.layer.weight; x + residual_multiplier * moe(RMSNorm x).

    Names and keys: huggingface/transformers
    src/transformers/models/granitemoe/modular_granitemoe.py (commit 023633dd:
    GraniteMoeMoE input_linear = ParallelExperts(E, d, 2m), output_linear =
    ParallelExperts(E, m, d), activation(chunked[0]) * chunked[1];
    GraniteMoeDecoderLayer hidden = residual + hidden * residual_multiplier)
    and configuration_granitemoe.py (commit 040e1a7e: residual_multiplier 1.0,
    num_local_experts 8, hidden_act "silu"); the checkpoint
    jeremieconte/granite-3.1-1b-a400m-instruct config.json (residual_multiplier
    0.22, num_local_experts 32, intermediate_size 512) and
    model.safetensors.index.json (model.layers.0.block_sparse_moe.input_linear.weight,
    ...output_linear.weight, ...router.layer.weight).
    """
    t = embeddings(rng)
    planted = {}
    for i in range(2):
        base = f"model.layers.{i}."
        attention(rng, t, base)
        moe = base + "block_sparse_moe."
        t[moe + "router.layer.weight"] = rng.standard_normal((experts, D))
        planted[i] = [swiglu(rng, m) for _ in range(experts)]
        t[moe + "input_linear.weight"] = np.stack(
            [np.concatenate([g, u]) for g, u, _ in planted[i]]
        )
        t[moe + "output_linear.weight"] = np.stack([w for _, _, w in planted[i]])
    config = {
        "architectures": ["GraniteMoeForCausalLM"],
        "model_type": "granitemoe",
        "attention_multiplier": 0.015625,
        "embedding_multiplier": 12.0,
        "hidden_act": "silu",
        "hidden_size": D,
        "intermediate_size": m,
        "logits_scaling": 6.0,
        "num_attention_heads": 2,
        "num_experts_per_tok": 2,
        "num_hidden_layers": 2,
        "num_key_value_heads": 1,
        "num_local_experts": experts,
        "residual_multiplier": 0.22,
        "vocab_size": 11,
        **overrides,
    }
    return t, config, planted


def test_granitemoe(tmp_path):
    tensors, config, planted = granitemoe(np.random.default_rng(15))
    path = save(tmp_path / "granitemoe", tensors, config)
    reports = scan_two_moe_layers(path)
    for r in reports:
        assert (r.family, r.d, r.m, r.activation) == ("granitemoe", D, 6, "swiglu")
        assert r.verdict == "not_absorbable", r.result
        assert "sum_e p_e(x) f_e(x)" in r.form and "residual_multiplier = 0.22" in r.form
        assert "x + a f_e(x)" in r.note
    # The first m rows of input_linear[e] are the gate.
    assert len(assert_experts(path, 0, planted[0])) == 3


def test_granitemoe_odd_input_linear(tmp_path):
    tensors, config, _ = granitemoe(np.random.default_rng(16))
    tensors["model.layers.1.block_sparse_moe.input_linear.weight"] = np.ones((3, 11, D))
    with pytest.raises(CheckpointError, match="input_linear"):
        scan(save(tmp_path / "granitemoe", tensors, config))


# -- gpt-oss ---------------------------------------------------------------------------------------


def gpt_oss(rng, *, experts=3, m=6, **overrides):
    """gpt-oss: mlp.experts.gate_up_proj [E, d, 2m] stored (in, out) with gate
    at even and up at odd columns, gate_up_proj_bias [E, 2m], down_proj
    [E, m, d], down_proj_bias [E, d]; router weight and bias.

    Names and keys: huggingface/transformers
    src/transformers/models/gpt_oss/modeling_gpt_oss.py (commit 00d4b3d2:
    GptOssExperts, gate_up[..., ::2] / gate_up[..., 1::2], gate clamped above
    at limit, up clamped to [-limit, limit], (up + 1) * gate * sigmoid(alpha
    gate)) and configuration_gpt_oss.py (commit 02b8f42b: num_local_experts
    128, intermediate_size 2880, swiglu_limit 7.0, attribute_map num_experts
    -> num_local_experts); the checkpoint config EchoCog/gpt-oss-20b
    config.json (num_local_experts 32, swiglu_limit 7.0, hidden_act "silu").
    """
    t = embeddings(rng)
    planted = {}
    for i in range(2):
        base = f"model.layers.{i}."
        attention(rng, t, base)
        t[base + "self_attn.sinks"] = rng.standard_normal(2)
        t[base + "mlp.router.weight"] = rng.standard_normal((experts, D))
        t[base + "mlp.router.bias"] = rng.standard_normal(experts)
        planted[i] = [swiglu(rng, m) for _ in range(experts)]
        gate_up = np.empty((experts, D, 2 * m))
        for e, (g, u, _) in enumerate(planted[i]):
            gate_up[e, :, ::2], gate_up[e, :, 1::2] = g.T, u.T
        t[base + "mlp.experts.gate_up_proj"] = gate_up
        t[base + "mlp.experts.gate_up_proj_bias"] = rng.standard_normal((experts, 2 * m))
        t[base + "mlp.experts.down_proj"] = np.stack([w.T for _, _, w in planted[i]])
        t[base + "mlp.experts.down_proj_bias"] = rng.standard_normal((experts, D))
    config = {
        "architectures": ["GptOssForCausalLM"],
        "model_type": "gpt_oss",
        "attention_bias": True,
        "experts_per_token": 2,
        "head_dim": 2,
        "hidden_act": "silu",
        "hidden_size": D,
        "intermediate_size": m,
        "num_attention_heads": 2,
        "num_experts_per_tok": 2,
        "num_hidden_layers": 2,
        "num_key_value_heads": 1,
        "num_local_experts": experts,
        "sliding_window": 128,
        "swiglu_limit": 7.0,
        "vocab_size": 11,
        **overrides,
    }
    return t, config, planted


def test_gpt_oss_undecided(tmp_path):
    tensors, config, planted = gpt_oss(np.random.default_rng(17))
    path = save(tmp_path / "gpt_oss", tensors, config)
    reports = scan_two_moe_layers(path)
    for r in reports:
        assert (r.family, r.d, r.m) == ("gpt_oss", D, 6)
        assert r.verdict == "undecided"
        assert "clamp" in r.reason and "+ 1" in r.reason
        assert "sum_e p_e(x) f_e(x)" in r.form
        assert "x + f_e(x)" in r.note
    # Interleaved columns: even ones are the gate, odd ones the up projection.
    assert len(assert_experts(path, 1, planted[1])) == 3


def test_gpt_oss_expert_count_checked(tmp_path):
    tensors, config, _ = gpt_oss(np.random.default_rng(18), num_local_experts=4)
    with pytest.raises(CheckpointError, match="gives num_local_experts=4 experts per layer"):
        scan(save(tmp_path / "gpt_oss", tensors, config))


def test_moe_families_registered():
    assert {
        "mixtral",
        "qwen2_moe",
        "qwen3_moe",
        "deepseek_v2",
        "deepseek_v3",
        "granitemoe",
        "gpt_oss",
        "deepseek_v4",
    } <= set(skipsearch.io.layouts.FAMILIES)


# -- which layers are dense and which sparse, by the config --------------------------------------


@pytest.mark.parametrize(
    "overrides,words",
    [
        # Every layer sparse by the config, but layer 0 holds a dense MLP.
        (dict(mlp_only_layers=[]), r"puts the mlp blocks in layer\(s\) none, but .* 0$"),
        # Step 3: no layer of two is sparse, but layer 1 holds experts.
        (dict(decoder_sparse_step=3), r"puts the mlp blocks in layer\(s\) 0-1, but .* 0$"),
    ],
)
def test_qwen2_moe_sparse_layers_follow_the_config(tmp_path, overrides, words):
    tensors, config, _ = qwen2_moe(np.random.default_rng(31), **overrides)
    with pytest.raises(CheckpointError, match=words):
        scan(save(tmp_path / "qwen2_moe", tensors, config))


def test_qwen2_moe_step_that_agrees_is_accepted(tmp_path):
    # decoder_sparse_step=2 with mlp_only_layers=[] makes layer 1 sparse and
    # layer 0 dense, as the checkpoint has them.
    tensors, config, _ = qwen2_moe(
        np.random.default_rng(32), decoder_sparse_step=2, mlp_only_layers=[]
    )
    reports = scan(save(tmp_path / "qwen2_moe", tensors, config))
    assert [(r.layer, r.kind) for r in reports if r.kind != "expert"] == [
        (0, "mlp"),
        (1, "shared_expert"),
    ]


@pytest.mark.parametrize("first", [0, 2])
def test_deepseek_dense_layers_follow_first_k_dense_replace(tmp_path, first):
    tensors, config, _ = deepseek(np.random.default_rng(33), first_k_dense_replace=first)
    with pytest.raises(CheckpointError, match=r"first_k|puts the (mlp|expert) blocks in layer"):
        scan(save(tmp_path / "deepseek", tensors, config))


def test_deepseek_moe_layer_freq(tmp_path):
    # moe_layer_freq=2: only even layers >= first_k_dense_replace are sparse,
    # so layer 1 should be dense.
    tensors, config, _ = deepseek(np.random.default_rng(34), moe_layer_freq=2)
    with pytest.raises(CheckpointError, match=r"puts the mlp blocks in layer\(s\) 0-1, but .* 0$"):
        scan(save(tmp_path / "deepseek", tensors, config))
