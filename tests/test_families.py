"""skipsearch.scan on tiny synthetic checkpoints of every supported model family.

Each test writes a checkpoint with the family's real tensor names (and a few
unrelated tensors: embeddings, LayerNorms, attention) and its own config.json
keys, with d != m and two layers, and checks the verdicts docs/theory.md
§2-§4 predict: gated blocks (SwiGLU, GeGLU) are not absorbable by the
linearization argument, generic ReLU/GELU blocks are not absorbable with a
positive relaxation distance, and a planted flip set is found.
"""

from __future__ import annotations

import json
import re
import shutil
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import skipsearch
from safetensors.numpy import save_file
from skipsearch.io.checkpoints import Checkpoint, CheckpointError
from skipsearch.io.layouts import norm_scope
from skipsearch.scan import SUPPORTED_MODEL_TYPES, describe_checkpoint

from tests.conftest import write_bf16_safetensors
from tests.family_builders import biased_pair

D, M = 4, 7


# -- writing checkpoints ---------------------------------------------------------------------


def save(directory, tensors: dict, config: dict, name: str = "model.safetensors"):
    directory.mkdir(parents=True, exist_ok=True)
    save_file(
        {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in tensors.items()},
        str(directory / name),
    )
    (directory / "config.json").write_text(json.dumps(config))
    return directory


def bf16_exact(a) -> np.ndarray:
    """``a`` as float32 with the low 16 bits cleared: exactly representable in bfloat16."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
    return bits.view(np.float32)


def save_bf16(directory, tensors: dict, config: dict):
    """A BF16 checkpoint; every value must be exact in bfloat16."""
    directory.mkdir(parents=True, exist_ok=True)
    for key, value in tensors.items():
        value = np.ascontiguousarray(value, dtype=np.float32)
        assert np.array_equal(bf16_exact(value), value), f"{key} is not exact in bfloat16"
    write_bf16_safetensors(directory / "model.safetensors", tensors)
    (directory / "config.json").write_text(json.dumps(config))
    return directory


def planted(rng, d=D, m=M):
    """(W_up (m, d), W_down (d, m)) with W_down[:, :d] W_up[:d, :] = -I_d (c = 1): the flip
    set S = {0..d-1} absorbs the skip; the other neurons are random, so S is the only one."""
    W_up = rng.standard_normal((m, d))
    W_down = rng.standard_normal((d, m))
    W_down[:, :d] = -np.linalg.inv(W_up[:d])
    return W_up, W_down


def generic(rng, d=D, m=M):
    return rng.standard_normal((m, d)), rng.standard_normal((d, m))


# One builder per family: (tensors, config) with the family's names and keys.


def bert_like(rng, *, model_type="bert", prefix="bert.", layers=None, hidden_act="gelu"):
    """BERT/RoBERTa/ELECTRA/ViT: intermediate.dense (m, d) and output.dense (d, m), with biases."""
    layers = layers or [planted(rng), generic(rng)]
    t = {
        f"{prefix}embeddings.word_embeddings.weight": rng.standard_normal((11, D)),
        f"{prefix}embeddings.LayerNorm.weight": np.ones(D),
    }
    for i, (up, down) in enumerate(layers):
        base = f"{prefix}encoder.layer.{i}."
        t[base + "attention.self.query.weight"] = rng.standard_normal((D, D))
        t[base + "attention.output.dense.weight"] = rng.standard_normal((D, D))
        t[base + "attention.output.LayerNorm.weight"] = np.ones(D)
        biased_pair(rng, t, base + "intermediate.dense", base + "output.dense", up, down)
        t[base + "output.LayerNorm.weight"] = np.ones(D)
    config = {
        "model_type": model_type,
        "hidden_act": hidden_act,
        "hidden_size": D,
        "intermediate_size": M,
        "num_hidden_layers": len(layers),
        "num_attention_heads": 2,
    }
    return t, config


def gpt2(rng, *, layers=None, transposed=True, n_inner=M, activation_function="gelu_new"):
    """GPT-2: Conv1D weights stored (in, out): c_fc (d, m), c_proj (m, d)."""
    layers = layers or [planted(rng), generic(rng)]
    t = {
        "transformer.wte.weight": rng.standard_normal((13, D)),
        "transformer.wpe.weight": rng.standard_normal((8, D)),
        "transformer.ln_f.weight": np.ones(D),
    }
    for i, (up, down) in enumerate(layers):
        base = f"transformer.h.{i}."
        t[base + "ln_1.weight"] = np.ones(D)
        t[base + "attn.c_attn.weight"] = rng.standard_normal((D, 3 * D))
        t[base + "attn.c_proj.weight"] = rng.standard_normal((D, D))
        biased_pair(rng, t, base + "mlp.c_fc", base + "mlp.c_proj", up, down, transposed=transposed)
    config = {
        "model_type": "gpt2",
        "activation_function": activation_function,
        "n_embd": D,
        "n_inner": n_inner,
        "n_layer": len(layers),
        "n_head": 2,
    }
    return t, config


def gpt_neox(rng):
    t = {"gpt_neox.embed_in.weight": rng.standard_normal((13, D))}
    for i, (up, down) in enumerate([generic(rng), generic(rng)]):
        base = f"gpt_neox.layers.{i}."
        t[base + "input_layernorm.weight"] = np.ones(D)
        t[base + "attention.dense.weight"] = rng.standard_normal((D, D))
        biased_pair(rng, t, base + "mlp.dense_h_to_4h", base + "mlp.dense_4h_to_h", up, down)
    config = {
        "model_type": "gpt_neox",
        "hidden_act": "gelu",
        "hidden_size": D,
        "intermediate_size": M,
        "num_hidden_layers": 2,
    }
    return t, config


def opt(rng, *, do_layer_norm_before=True, activation_function="relu"):
    t = {
        "model.decoder.embed_tokens.weight": rng.standard_normal((13, D)),
        "model.decoder.final_layer_norm.weight": np.ones(D),
    }
    for i, (up, down) in enumerate([generic(rng), generic(rng)]):
        base = f"model.decoder.layers.{i}."
        t[base + "self_attn.out_proj.weight"] = rng.standard_normal((D, D))
        t[base + "self_attn_layer_norm.weight"] = np.ones(D)
        biased_pair(rng, t, base + "fc1", base + "fc2", up, down)
        t[base + "final_layer_norm.weight"] = np.ones(D)
    config = {
        "model_type": "opt",
        "activation_function": activation_function,
        "hidden_size": D,
        "ffn_dim": M,
        "num_hidden_layers": 2,
        "do_layer_norm_before": do_layer_norm_before,
    }
    return t, config


def llama(rng, *, model_type="llama", tied=False, **act):
    """LLaMA/Mistral/Qwen/Gemma: gate_proj, up_proj (m, d), down_proj (d, m), no biases."""
    t = {"model.embed_tokens.weight": rng.standard_normal((13, D)), "model.norm.weight": np.ones(D)}
    first = None
    for i in range(2):
        gate, up, down = (rng.standard_normal(s) for s in ((M, D), (M, D), (D, M)))
        if tied:
            first = first or (gate, up, down)
            gate, up, down = first
        base = f"model.layers.{i}."
        t[base + "input_layernorm.weight"] = np.ones(D)
        t[base + "self_attn.o_proj.weight"] = rng.standard_normal((D, D))
        t[base + "mlp.gate_proj.weight"] = gate
        t[base + "mlp.up_proj.weight"] = up
        t[base + "mlp.down_proj.weight"] = down
        t[base + "post_attention_layernorm.weight"] = np.ones(D)
    config = {
        "model_type": model_type,
        "hidden_size": D,
        "intermediate_size": M,
        "num_hidden_layers": 2,
        **(act or {"hidden_act": "silu"}),
    }
    return t, config


def t5(rng, *, gated, model_type="t5"):
    """T5: encoder FFN at layer.1, decoder FFN at layer.2; v1.1 gated: wi_0 = gate, wi_1 = up."""
    t = {
        "shared.weight": rng.standard_normal((13, D)),
        "encoder.final_layer_norm.weight": np.ones(D),
    }
    for stack, sub in (("encoder", 1), ("decoder", 2)):
        for i in range(2):
            base = f"{stack}.block.{i}.layer.{sub}."
            t[f"{stack}.block.{i}.layer.0.SelfAttention.o.weight"] = rng.standard_normal((D, D))
            t[base + "layer_norm.weight"] = np.ones(D)
            if gated:
                t[base + "DenseReluDense.wi_0.weight"] = rng.standard_normal((M, D))
                t[base + "DenseReluDense.wi_1.weight"] = rng.standard_normal((M, D))
            else:
                t[base + "DenseReluDense.wi.weight"] = rng.standard_normal((M, D))
            t[base + "DenseReluDense.wo.weight"] = rng.standard_normal((D, M))
    config = {
        "model_type": model_type,
        "d_model": D,
        "d_ff": M,
        "num_layers": 2,
        "num_decoder_layers": 2,
        "feed_forward_proj": "gated-gelu" if gated else "relu",
    }
    return t, config


def scan(path, **kwargs):
    return skipsearch.scan(path, progress=False, **kwargs)


def summary(reports):
    """What must not depend on how the scan ran (file layout, executor)."""
    return [
        (
            r.family,
            r.block,
            r.layer,
            r.d,
            r.m,
            r.activation,
            r.norm,
            r.verdict,
            r.relaxation_distance,
            None if r.result.subset is None else r.result.subset.tolist(),
            r.shared_with,
        )
        for r in reports
    ]


# -- gated families: not absorbable by the linearization argument ----------------------------


@pytest.mark.parametrize("model_type", ["llama", "mistral", "qwen2", "qwen3"])
def test_llama_swiglu_not_absorbable(tmp_path, model_type):
    path = save(tmp_path / model_type, *llama(np.random.default_rng(0), model_type=model_type))
    reports = scan(path)
    assert [r.block for r in reports] == ["model.layers.0.mlp", "model.layers.1.mlp"]
    for r in reports:
        assert (r.family, r.activation, r.d, r.m, r.norm) == ("llama", "swiglu", D, M, "pre")
        assert r.verdict == "not_absorbable", r.result
        assert r.result.argument == "linearization"
        assert "linearization" in r.reason
        assert r.relaxation_distance is None
        assert r.scope == norm_scope("pre", r.form)
        # One wording for the norm in the scope and the form (issue 47).
        assert "RMSNorm" in r.form and "pre-norm" in r.scope and "f(RMSNorm(x))" in r.scope
        assert "LN" not in r.scope.replace("RMSNorm", "")


@pytest.mark.parametrize(
    "biases, verdict",
    [
        ({}, "not_absorbable"),
        # LLaMA's mlp_bias=True: an inner bias tensor, even all zeros, means the
        # block's form has inner biases, so the comparison class includes biased
        # skip-free blocks and the linearization argument (docs/theory.md §4:
        # "no biases") does not apply ...
        ({"gate_proj": 0.0, "up_proj": 0.0, "down_proj": 0.0}, "undecided"),
        ({"gate_proj": 0.0}, "undecided"),
        ({"up_proj": 0.0}, "undecided"),
        ({"gate_proj": 1.0}, "undecided"),
        ({"up_proj": 1.0}, "undecided"),
        # ... while the output bias b_down is outside the argument's hypothesis.
        ({"down_proj": 0.0}, "not_absorbable"),
        ({"down_proj": 1.0}, "not_absorbable"),
    ],
)
def test_llama_mlp_bias(tmp_path, biases, verdict):
    rng = np.random.default_rng(21)
    tensors, config = llama(rng, mlp_bias=True, hidden_act="silu")
    for i in range(2):
        for proj, scale in biases.items():
            size = D if proj == "down_proj" else M
            tensors[f"model.layers.{i}.mlp.{proj}.bias"] = scale * rng.standard_normal(size)
    reports = scan(save(tmp_path / "llama", tensors, config))
    assert [r.verdict for r in reports] == [verdict] * 2, [r.result for r in reports]
    for r in reports:
        assert r.activation == "swiglu"
        if verdict == "undecided":
            assert r.result.argument == "none"
            assert "linearization" in r.reason and "bias" in r.reason
        else:
            assert r.result.argument == "linearization"


@pytest.mark.parametrize("model_type", ["gemma", "gemma2", "gemma3_text"])
def test_gemma_geglu_not_absorbable(tmp_path, model_type):
    # hidden_activation takes precedence over a conflicting hidden_act.
    act = {"hidden_act": "silu", "hidden_activation": "gelu_pytorch_tanh"}
    path = save(
        tmp_path / model_type, *llama(np.random.default_rng(1), model_type=model_type, **act)
    )
    info = describe_checkpoint(path)
    assert (info.family, info.hidden_act, info.activation) == (
        "gemma",
        "gelu_pytorch_tanh",
        "geglu",
    )
    reports = scan(path)
    assert len(reports) == 2
    for r in reports:
        assert (r.family, r.activation, r.verdict) == ("gemma", "geglu", "not_absorbable"), r.result
        assert r.result.argument == "linearization"


def test_gemma_falls_back_to_hidden_act(tmp_path):
    # Gemma 1 configs carry hidden_activation: null next to hidden_act.
    act = {"hidden_act": "gelu", "hidden_activation": None}
    path = save(tmp_path / "gemma", *llama(np.random.default_rng(1), model_type="gemma", **act))
    assert describe_checkpoint(path).activation == "geglu"
    # LLaMA does not read hidden_activation at all.
    act = {"hidden_act": "silu", "hidden_activation": "gelu"}
    path = save(tmp_path / "llama", *llama(np.random.default_rng(1), **act))
    assert describe_checkpoint(path).activation == "swiglu"


@pytest.mark.parametrize("model_type", ["t5", "mt5", "umt5"])
def test_t5_gated_gelu_not_absorbable(tmp_path, model_type):
    path = save(
        tmp_path / model_type, *t5(np.random.default_rng(2), gated=True, model_type=model_type)
    )
    reports = scan(path)
    assert sorted(r.block for r in reports) == [
        "decoder.block.0.layer.2.DenseReluDense",
        "decoder.block.1.layer.2.DenseReluDense",
        "encoder.block.0.layer.1.DenseReluDense",
        "encoder.block.1.layer.1.DenseReluDense",
    ]
    for r in reports:
        assert (r.family, r.activation, r.d, r.m, r.norm) == ("t5", "geglu", D, M, "pre")
        assert r.verdict == "not_absorbable", r.result
        assert r.result.argument == "linearization"


def test_t5_gate_is_wi_0(tmp_path):
    """v1.1 computes wo(gelu(wi_0 x) * wi_1 x): wi_0 is the gate, wi_1 the up projection."""
    tensors, config = t5(np.random.default_rng(3), gated=True)
    path = save(tmp_path / "t5", tensors, config)
    info = describe_checkpoint(path)
    blocks = {b.name: b for b in info._blocks}
    b = blocks["encoder.block.0.layer.1.DenseReluDense"]
    assert (
        b.gate.endswith("wi_0.weight")
        and b.up.endswith("wi_1.weight")
        and b.down.endswith("wo.weight")
    )
    assert b.gate.startswith("encoder.block.0.layer.1.")


def test_t5_relu_not_absorbable(tmp_path):
    path = save(tmp_path / "t5", *t5(np.random.default_rng(4), gated=False))
    reports = scan(path)
    assert len(reports) == 4
    assert {r.block.split(".")[0] for r in reports} == {"encoder", "decoder"}
    for r in reports:
        assert (r.activation, r.verdict) == ("relu", "not_absorbable"), r.result
        assert r.relaxation_distance > 0.01


# -- ungated families --------------------------------------------------------------------------


@pytest.mark.parametrize("before, norm", [(True, "pre"), (False, "post")])
def test_opt_relu_not_absorbable(tmp_path, before, norm):
    path = save(tmp_path / "opt", *opt(np.random.default_rng(5), do_layer_norm_before=before))
    reports = scan(path)
    assert [r.block for r in reports] == ["model.decoder.layers.0", "model.decoder.layers.1"]
    for r in reports:
        assert (r.family, r.activation, r.d, r.m, r.norm) == ("opt", "relu", D, M, norm)
        assert r.scope == norm_scope(norm, r.form)
        assert r.verdict == "not_absorbable", r.result
        assert r.relaxation_distance > 0.01
        assert r.result.genericity.passed


def test_gpt2_planted_absorbable(tmp_path):
    rng = np.random.default_rng(6)
    layers = [planted(rng), generic(rng)]
    path = save(tmp_path / "gpt2", *gpt2(rng, layers=layers))
    ckpt = Checkpoint(path)
    assert ckpt.shape("transformer.h.0.mlp.c_fc.weight") == (D, M)  # stored (in, out)
    reports = scan(path)
    assert [r.block for r in reports] == ["transformer.h.0.mlp", "transformer.h.1.mlp"]
    absorbed, rest = reports
    assert (absorbed.family, absorbed.activation, absorbed.d, absorbed.m) == (
        "gpt2",
        "gelu_tanh",
        D,
        M,
    )
    assert absorbed.norm == "pre"
    assert absorbed.verdict == "absorbable", absorbed.result
    assert absorbed.result.subset.tolist() == list(range(D))
    # The flip set is checked against the weights as read (transposed back to (m, d)).
    W_up, W_down = layers[0]
    S = list(range(D))
    assert np.allclose(W_down[:, S] @ W_up[S, :], -np.eye(D))
    assert rest.verdict == "not_absorbable", rest.result
    assert rest.relaxation_distance > 0.01


def test_gpt2_untransposed_is_a_shape_error(tmp_path):
    rng = np.random.default_rng(6)
    path = save(
        tmp_path / "gpt2", *gpt2(rng, layers=[planted(rng), generic(rng)], transposed=False)
    )
    with pytest.raises(
        CheckpointError, match=re.escape(f"has shape ({M}, {D}), expected ({D}, {M})")
    ):
        scan(path)


def test_gpt2_square_is_ambiguous(tmp_path):
    rng = np.random.default_rng(7)
    layers = [generic(rng, m=D), generic(rng, m=D)]
    path = save(tmp_path / "gpt2", *gpt2(rng, layers=layers, n_inner=D))
    with pytest.raises(CheckpointError, match="cannot confirm the orientation") as info:
        scan(path)
    assert "Layout" in str(info.value) and "transpose" in str(info.value)
    # An explicit Layout settles the orientation.
    layout = skipsearch.Layout(
        up="*h.{i}.mlp.c_fc.weight",
        down="*h.{i}.mlp.c_proj.weight",
        activation="gelu_new",
        transpose=True,
    )
    assert [r.m for r in scan(path, layout=layout)] == [D, D]


def test_gpt2_n_inner_null_means_4d(tmp_path):
    rng = np.random.default_rng(8)
    layers = [generic(rng, m=4 * D), generic(rng, m=4 * D)]
    path = save(tmp_path / "gpt2", *gpt2(rng, layers=layers, n_inner=None))
    assert [(r.d, r.m) for r in scan(path)] == [(D, 4 * D)] * 2


def test_gpt_neox_pre_ln(tmp_path):
    reports = scan(save(tmp_path / "pythia", *gpt_neox(np.random.default_rng(9))))
    assert [r.block for r in reports] == ["gpt_neox.layers.0.mlp", "gpt_neox.layers.1.mlp"]
    for r in reports:
        assert (r.family, r.activation, r.norm) == ("gpt_neox", "gelu", "pre")
        assert r.scope == norm_scope("pre", r.form)
        assert "pre-LN" in r.scope and "x + f(LN(x))" in r.scope
        assert r.verdict == "not_absorbable", r.result


def test_vit_pre_ln(tmp_path):
    rng = np.random.default_rng(10)
    reports = scan(save(tmp_path / "vit", *bert_like(rng, model_type="vit", prefix="vit.")))
    assert [r.block for r in reports] == ["vit.encoder.layer.0", "vit.encoder.layer.1"]
    assert [r.verdict for r in reports] == ["absorbable", "not_absorbable"]
    for r in reports:
        assert (r.family, r.activation, r.norm) == ("vit", "gelu", "pre")
        assert r.scope == norm_scope("pre", r.form) and "pre-LN" in r.scope


@pytest.mark.parametrize(
    "model_type, prefix",
    [
        ("bert", "bert."),
        ("roberta", "roberta."),
        ("xlm-roberta", "roberta."),
        ("electra", "electra."),
    ],
)
def test_bert_post_ln(tmp_path, model_type, prefix):
    rng = np.random.default_rng(11)
    reports = scan(
        save(tmp_path / model_type, *bert_like(rng, model_type=model_type, prefix=prefix))
    )
    assert [r.block for r in reports] == [f"{prefix}encoder.layer.0", f"{prefix}encoder.layer.1"]
    planted_report, generic_report = reports
    assert planted_report.verdict == "absorbable", planted_report.result
    assert planted_report.result.subset.tolist() == list(range(D))
    assert generic_report.verdict == "not_absorbable", generic_report.result
    for r in reports:
        assert (r.family, r.activation, r.norm) == ("bert", "gelu", "post")
        assert r.scope == norm_scope("post", r.form)
        assert "post-LN" in r.scope and "x + f(x)" in r.scope


# -- bfloat16 -----------------------------------------------------------------------------------


def test_bf16_read_exactly(tmp_path):
    rng = np.random.default_rng(12)
    # A planted block exact in bfloat16: W_up[:d] diagonal with powers of two, so
    # -inv(W_up[:d]) is exact too.
    diag = np.array([2.0, -0.5, 1.0, 4.0])
    W_up = bf16_exact(np.vstack([np.diag(diag), rng.standard_normal((M - D, D))]))
    W_down = bf16_exact(np.hstack([-np.diag(1 / diag), rng.standard_normal((D, M - D))]))
    layers = [(W_up, W_down), tuple(bf16_exact(a) for a in generic(rng))]
    tensors, config = gpt2(rng, layers=layers)
    tensors = {k: bf16_exact(v) for k, v in tensors.items()}
    path = save_bf16(tmp_path / "gpt2-bf16", tensors, config)

    ckpt = Checkpoint(path)
    for key, value in tensors.items():
        assert ckpt.dtype(key) == "BF16"
        got = ckpt.get(key)
        assert got.dtype == np.float32 and got.shape == value.shape
        assert np.array_equal(got, value), key
    # The same 16 bits read as float16 give other numbers: a bf16-as-f16 reader fails above.
    key = "transformer.h.1.mlp.c_fc.weight"
    as_f16 = (
        (tensors[key].view(np.uint32) >> 16).astype(np.uint16).view(np.float16).astype(np.float32)
    )
    assert not np.array_equal(as_f16, tensors[key])

    reports = scan(path)
    f32 = scan(save(tmp_path / "gpt2-f32", tensors, config))
    assert [r.verdict for r in reports] == ["absorbable", "not_absorbable"]
    assert reports[0].result.subset.tolist() == list(range(D))
    assert reports[0].result.tolerance == pytest.approx(2.0**-3.5)  # sqrt(eps) of bfloat16
    assert [r.verdict for r in reports] == [r.verdict for r in f32]
    assert reports[1].relaxation_distance == pytest.approx(f32[1].relaxation_distance, rel=1e-6)


# -- sharded checkpoints --------------------------------------------------------------------------


def write_sharded(directory, tensors: dict, config: dict):
    """Two shards; layer 0's up projection in the first, its down projection in the second."""
    directory.mkdir(parents=True, exist_ok=True)
    names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    weight_map = {}
    for j, key in enumerate(sorted(tensors)):
        weight_map[key] = (
            names[0] if ("layer.0." in key and "intermediate" in key) or j % 2 else names[1]
        )
    assert len(set(weight_map.values())) == 2
    for name in names:
        part = {k: v for k, v in tensors.items() if weight_map[k] == name}
        part = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in part.items()}
        save_file(part, str(directory / name))
    total = sum(np.asarray(v).size * 4 for v in tensors.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (directory / "model.safetensors.index.json").write_text(json.dumps(index))
    (directory / "config.json").write_text(json.dumps(config))
    return directory, names


@pytest.fixture
def bert_tensors():
    return bert_like(np.random.default_rng(13))


def test_sharded_equals_single_file(tmp_path, bert_tensors):
    single = scan(save(tmp_path / "single", *bert_tensors))
    path, names = write_sharded(tmp_path / "sharded", *bert_tensors)
    sharded = scan(path)
    assert summary(sharded) == summary(single)
    assert [r.verdict for r in sharded] == ["absorbable", "not_absorbable"]
    info = describe_checkpoint(path)
    assert [p.name for p in info.files] == names
    assert info.path == path.resolve()


def test_sharded_missing_shard(tmp_path, bert_tensors):
    path, names = write_sharded(tmp_path / "sharded", *bert_tensors)
    (path / names[1]).unlink()
    with pytest.raises(FileNotFoundError, match=re.escape(names[1])) as info:
        scan(path)
    assert names[0] not in str(info.value).split("missing")[-1]


def test_sharded_unindexed_file_warns(tmp_path, bert_tensors):
    path, names = write_sharded(tmp_path / "sharded", *bert_tensors)
    shutil.copy(path / names[0], path / "model-stale.safetensors")
    with pytest.warns(skipsearch.UnindexedShardWarning, match=re.escape("model-stale.safetensors")):
        reports = scan(path)
    assert [r.verdict for r in reports] == ["absorbable", "not_absorbable"]


# -- generic mapping and errors ---------------------------------------------------------------------


def _custom(rng):
    t = {"backbone.stem.weight": rng.standard_normal((D, 3))}
    for i, (up, down) in enumerate([planted(rng), generic(rng)]):
        t[f"backbone.blocks.{i}.norm.weight"] = np.ones(D)
        t[f"backbone.blocks.{i}.ffn.w_in.weight"] = up
        t[f"backbone.blocks.{i}.ffn.w_out.weight"] = down
    return t, {"model_type": "my_mixer", "width": D}


def test_generic_layout(tmp_path):
    path = save(tmp_path / "mixer", *_custom(np.random.default_rng(14)))
    layout = skipsearch.Layout(
        up="*blocks.{i}.ffn.w_in.weight",
        down="*blocks.{i}.ffn.w_out.weight",
        activation="relu",
        norm="post",
    )
    reports = scan(path, layout=layout)
    assert [r.block for r in reports] == ["backbone.blocks.0.ffn", "backbone.blocks.1.ffn"]
    assert [r.verdict for r in reports] == ["absorbable", "not_absorbable"]
    assert reports[0].result.subset.tolist() == list(range(D))
    for r in reports:
        assert (r.family, r.activation, r.d, r.m, r.norm) == ("generic", "relu", D, M, "post")
        assert r.scope == norm_scope("post", r.form)
        # The form agrees with the scope: the LayerNorm after the sum.
        assert r.form.startswith("LN(x + f(x))")


def test_generic_layout_overrides_a_family(tmp_path):
    # A LLaMA checkpoint scanned through a user layout: same gated verdicts.
    path = save(tmp_path / "llama", *llama(np.random.default_rng(15)))
    layout = skipsearch.Layout(
        up="*layers.{i}.mlp.up_proj.weight",
        gate="*layers.{i}.mlp.gate_proj.weight",
        down="*layers.{i}.mlp.down_proj.weight",
        activation="swiglu",
    )
    reports = scan(path, layout=layout)
    assert [(r.family, r.activation, r.verdict, r.norm) for r in reports] == [
        ("generic", "swiglu", "not_absorbable", None)
    ] * 2
    assert reports[0].scope == norm_scope(None, reports[0].form)
    assert reports[0].form == "x + f(x)"


def test_unknown_model_type_lists_supported(tmp_path):
    path = save(tmp_path / "mixer", *_custom(np.random.default_rng(14)))
    with pytest.raises(CheckpointError, match=r"'my_mixer'.*not supported") as info:
        scan(path)
    message = str(info.value)
    for model_type in SUPPORTED_MODEL_TYPES:
        assert model_type in message
    assert "Layout" in message


def test_unknown_activation_lists_known(tmp_path):
    path = save(tmp_path / "opt", *opt(np.random.default_rng(16), activation_function="swoosh"))
    with pytest.raises(CheckpointError, match="unknown activation 'swoosh'") as info:
        scan(path)
    assert re.search(r"; it came from \S*opt/config\.json$", str(info.value)), str(info.value)
    for name in ("relu", "gelu", "gelu_new", "gelu_pytorch_tanh", "silu", "swiglu", "geglu"):
        assert re.search(rf"\b{name}\b", str(info.value)), name

    path = save(tmp_path / "mixer", *_custom(np.random.default_rng(14)))
    layout = skipsearch.Layout(
        up="*blocks.{i}.ffn.w_in.weight", down="*blocks.{i}.ffn.w_out.weight", activation="swoosh"
    )
    with pytest.raises(CheckpointError, match=r"unknown activation 'swoosh'.*relu"):
        scan(path, layout=layout)
    with pytest.raises(
        CheckpointError, match=r"it came from the activation argument \(--activation\)$"
    ):
        scan(path, layout=layout, activation="swoosh")


def test_gate_without_gated_entry(tmp_path):
    path = save(tmp_path / "llama", *llama(np.random.default_rng(17), hidden_act="tanh"))
    with pytest.raises(CheckpointError, match=r"no gated entry.*swiglu"):
        scan(path)


# -- tied blocks ------------------------------------------------------------------------------------


def test_tied_blocks_reported_once(tmp_path):
    rng = np.random.default_rng(18)
    up, down = generic(rng)
    tensors, config = bert_like(rng, layers=[(up, down), (up, down)])
    for name in ("intermediate.dense.bias", "output.dense.bias"):
        tensors[f"bert.encoder.layer.1.{name}"] = tensors[f"bert.encoder.layer.0.{name}"]
    reports = scan(save(tmp_path / "tied", tensors, config))
    assert len(reports) == 1
    assert reports[0].block == "bert.encoder.layer.0"
    assert reports[0].shared_with == ("bert.encoder.layer.1",)
    assert reports[0].to_dict()["shared_with"] == ["bert.encoder.layer.1"]


def test_tied_gated_blocks_reported_once(tmp_path):
    reports = scan(save(tmp_path / "tied", *llama(np.random.default_rng(19), tied=True)))
    assert [(r.block, r.shared_with) for r in reports] == [
        ("model.layers.0.mlp", ("model.layers.1.mlp",))
    ]


def test_different_biases_are_not_tied(tmp_path):
    rng = np.random.default_rng(18)
    up, down = generic(rng)
    reports = scan(save(tmp_path / "untied", *bert_like(rng, layers=[(up, down), (up, down)])))
    assert [(r.block, r.shared_with) for r in reports] == [
        ("bert.encoder.layer.0", ()),
        ("bert.encoder.layer.1", ()),
    ]


# -- executors --------------------------------------------------------------------------------------


@pytest.fixture
def many(tmp_path):
    """Checkpoints of several families: absorbable, not absorbable, gated and tied blocks."""
    rng = np.random.default_rng(20)
    return [
        save(tmp_path / "bert", *bert_like(rng)),
        save(tmp_path / "gpt2", *gpt2(rng)),
        save(tmp_path / "llama", *llama(rng, tied=True)),
        save(tmp_path / "opt", *opt(rng)),
        save(tmp_path / "t5", *t5(rng, gated=True)),
    ]


def test_thread_pool_executor_matches_inline(many):
    inline = scan(many)
    assert len(inline) == 2 + 2 + 1 + 2 + 4
    assert {r.verdict for r in inline} == {"absorbable", "not_absorbable"}
    with ThreadPoolExecutor(2) as pool:
        pooled = scan(many, executor=pool, max_pending=2)
    assert summary(pooled) == summary(inline)
    assert [r.model for r in pooled] == [r.model for r in inline]


def test_dask_executor_matches_inline(many):
    pytest.importorskip("distributed")
    from dask.distributed import Client, LocalCluster

    inline = scan(many)
    with (
        LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        distributed = scan(many, executor=client.get_executor())
    assert summary(distributed) == summary(inline)


# -- bad input: each gets a clear error that names what was expected -----------------------


@pytest.mark.parametrize(
    "kwargs,error,words",
    [
        (
            dict(up="a.{i}.up", down="a.0.down"),
            ValueError,
            "down pattern 'a.0.down' must contain {i}",
        ),
        (dict(up="a.{i}.x.{i}", down="a.{i}.down"), ValueError, "exactly once; it has it 2 times"),
        (dict(up="a.{i}.up", down="a.{i}.up"), ValueError, "must differ"),
        (dict(up="a.{i}.up", down="*a.{i}.down"), ValueError, "more '*'"),
        (dict(up="a.{i}.up", down="a.{i}.down", activation=5), TypeError, "registry name"),
        (dict(up="a.{i}.up", down="a.{i}.down", transpose="no"), TypeError, "True or False"),
        (dict(up="a.{i}.up", down="a.{i}.down", norm="middle"), ValueError, "'pre', 'post'"),
    ],
)
def test_bad_layouts(kwargs, error, words):
    with pytest.raises(error, match=re.escape(words)):
        skipsearch.Layout(**kwargs)


def test_bad_scan_arguments(tmp_path):
    path = save(tmp_path / "m", *bert_like(np.random.default_rng(0)))
    with pytest.raises(TypeError, match="not bytes"):
        skipsearch.scan(bytes(path))
    with pytest.raises(ValueError, match="empty path"):
        skipsearch.scan([""])
    with pytest.raises(TypeError, match="Executor instance"):
        skipsearch.scan(path, executor=ThreadPoolExecutor)
    with pytest.raises(TypeError, match="progress must be True, False or None"):
        skipsearch.scan(path, progress="no")
    # The same checkpoint twice, directly and through a link, is scanned once.
    (tmp_path / "link").symlink_to(path)
    reports = skipsearch.scan([path, path, tmp_path / "link"])
    assert len(reports) == 2 and all(r.shared_with == () for r in reports)


def test_bad_configs_are_checkpoint_errors(tmp_path):
    rng = np.random.default_rng(0)
    tensors, config = bert_like(rng)
    path = save(tmp_path / "list", tensors, {**config, "model_type": ["bert"]})
    with pytest.raises(CheckpointError, match=r"model_type .* must be a string"):
        skipsearch.scan(path)
    path = save(tmp_path / "opt", *opt(rng, do_layer_norm_before="false"))
    with pytest.raises(CheckpointError, match="do_layer_norm_before must be true or false"):
        skipsearch.scan(path)
    path = save(tmp_path / "layers", tensors, {**config, "num_hidden_layers": "2"})
    with pytest.raises(CheckpointError, match="num_hidden_layers must be a positive integer"):
        skipsearch.scan(path)
    loop = tmp_path / "loop"
    loop.mkdir()
    shutil.copy(tmp_path / "list" / "model.safetensors", loop)
    (loop / "config.json").symlink_to(loop / "config.json")
    with pytest.raises((CheckpointError, FileNotFoundError)):
        skipsearch.scan(loop)


def test_shards_must_stay_in_their_folder(tmp_path):
    tensors, config = bert_like(np.random.default_rng(0))
    path = save(tmp_path / "m", tensors, config, name="model-00001-of-00001.safetensors")
    outside = tmp_path / "outside.safetensors"
    shutil.copy(path / "model-00001-of-00001.safetensors", outside)
    index = {"weight_map": {k: "../outside.safetensors" for k in tensors}}
    (path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(CheckpointError, match=r"outside its folder: ../outside.safetensors"):
        skipsearch.scan(path)


@pytest.mark.parametrize(
    "plot,words",
    [
        ("", "empty"),
        (".", "is a directory"),
        ("no/such/folder/p.png", "does not exist"),
        ("p.xyz", "needs an image suffix"),
    ],
)
def test_cli_checks_the_plot_path_before_scanning(tmp_path, capsys, monkeypatch, plot, words):
    pytest.importorskip("matplotlib")
    from skipsearch import cli

    path = save(tmp_path / "m", *bert_like(np.random.default_rng(0)))
    monkeypatch.chdir(tmp_path)
    code = cli.main(["scan", str(path), "--no-progress", "--plot", plot])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("skipsearch: error: ") and words in err


def test_activation_override_and_no_config_with_a_layout(tmp_path, capsys):
    from skipsearch import cli

    rng = np.random.default_rng(0)
    tensors, config = bert_like(rng, hidden_act="gelu_10")  # not a registry name
    path = save(tmp_path / "m", tensors, config)
    with pytest.raises(CheckpointError, match="gelu_10"):
        skipsearch.scan(path)
    reports = skipsearch.scan(path, activation="relu")
    assert [r.activation for r in reports] == ["relu", "relu"]
    assert [r.verdict for r in reports] == ["absorbable", "not_absorbable"]
    code = cli.main(["scan", str(path), "--activation", "relu", "--no-progress", "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and [b["activation"] for b in json.loads(out)["blocks"]] == ["relu", "relu"]
    # A gated family takes the gate's activation and maps it to the gated entry.
    path = save(tmp_path / "llama", *llama(rng))
    assert {r.activation for r in skipsearch.scan(path, activation="gelu")} == {"geglu"}
    # With a layout and an activation, config.json is optional.
    (tmp_path / "m" / "config.json").unlink()
    layout = skipsearch.Layout(
        up="*layer.{i}.intermediate.dense.weight",
        down="*layer.{i}.output.dense.weight",
        activation="relu",
    )
    reports = skipsearch.scan(tmp_path / "m", layout=layout)
    assert [r.verdict for r in reports] == ["absorbable", "not_absorbable"]
    assert describe_checkpoint(tmp_path / "m", layout=layout).config_path is None
    with pytest.raises(FileNotFoundError, match="--up/--down/--activation"):
        skipsearch.scan(tmp_path / "m")
    # One weights file under another name is read; two are ambiguous.
    (tmp_path / "m" / "model.safetensors").rename(tmp_path / "m" / "weights.safetensors")
    reports = skipsearch.scan(tmp_path / "m", layout=layout)
    assert [r.verdict for r in reports] == ["absorbable", "not_absorbable"]
    shutil.copy(tmp_path / "m" / "weights.safetensors", tmp_path / "m" / "copy.safetensors")
    with pytest.raises(FileNotFoundError, match=r"and 2 .safetensors files: pass"):
        skipsearch.scan(tmp_path / "m", layout=layout)


def test_cli_messages_name_the_cli_options(tmp_path, capsys):
    from skipsearch import cli

    # Names no registry family uses: the automatic layout finds nothing.
    path = save(tmp_path / "m", *_custom(np.random.default_rng(0)))
    assert cli.main(["scan", str(path), "--no-progress"]) == 2
    assert "--up/--down/--activation" in capsys.readouterr().err
    assert cli.main(["scan", str(path), "--gate", "x.{i}.g", "--no-progress"]) == 2
    assert "needs both --up and --down" in capsys.readouterr().err


def test_cli_warnings_are_one_line(tmp_path, capsys):
    from skipsearch import cli

    tensors, config = bert_like(np.random.default_rng(0))
    path = save(tmp_path / "m", tensors, config, name="model-00001-of-00001.safetensors")
    index = {"weight_map": {k: "model-00001-of-00001.safetensors" for k in tensors}}
    (path / "model.safetensors.index.json").write_text(json.dumps(index))
    shutil.copy(path / "model-00001-of-00001.safetensors", path / "stale.safetensors")
    assert cli.main(["scan", str(path), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("skipsearch: warning: ") and "stale.safetensors" in err
    assert len(err.strip().splitlines()) == 1


def test_tied_blocks_are_confirmed_entry_by_entry(tmp_path):
    # Large tensors are fingerprinted from a sample of entries; two blocks
    # that differ only in an unsampled entry must still be two reports.
    rng = np.random.default_rng(0)
    d, m = 2, 4100  # 8200 entries per projection: every second one is sampled
    up, gate, down = (
        rng.standard_normal((m, d)),
        rng.standard_normal((m, d)),
        rng.standard_normal((d, m)),
    )
    other = up.copy()
    other.reshape(-1)[1] += 1.0
    tensors = {}
    for i, u in enumerate([up, other, up]):
        tensors[f"blocks.{i}.w_up.weight"] = u
        tensors[f"blocks.{i}.w_gate.weight"] = gate
        tensors[f"blocks.{i}.w_down.weight"] = down
    path = save(tmp_path / "m", tensors, {})
    layout = skipsearch.Layout(
        up="blocks.{i}.w_up.weight",
        down="blocks.{i}.w_down.weight",
        gate="blocks.{i}.w_gate.weight",
        activation="swiglu",
    )
    reports = skipsearch.scan(path, layout=layout)
    assert [r.block for r in reports] == ["blocks.0", "blocks.1"]
    assert reports[0].shared_with == ("blocks.2",) and reports[1].shared_with == ()
