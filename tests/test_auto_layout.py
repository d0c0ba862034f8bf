"""The automatic layout for a ``model_type`` the registry lacks
(:mod:`skipsearch._scan.auto`): it finds FFN blocks under the registry's
own tensor names when the shapes agree, says which mapping it chose, and
refuses when nothing, or more than one mapping, fits."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import skipsearch
from skipsearch import AutomaticLayoutWarning, cli
from skipsearch._scan.auto import candidate_patterns
from skipsearch.io.checkpoints import CheckpointError

from tests.test_families import D, M, generic, planted, save


def neox_like(rng, model_type="my_neox", hidden_act="gelu", layers=2):
    """GPT-NeoX names (``dense_h_to_4h``/``dense_4h_to_h``) under a new model type;
    layer 0 planted absorbable."""
    t = {"gpt_neox.embed_in.weight": rng.standard_normal((13, D))}
    blocks = [planted(rng)] + [generic(rng) for _ in range(layers - 1)]
    for i, (up, down) in enumerate(blocks):
        base = f"gpt_neox.layers.{i}."
        t[base + "input_layernorm.weight"] = np.ones(D)
        t[base + "attention.dense.weight"] = rng.standard_normal((D, D))
        t[base + "mlp.dense_h_to_4h.weight"] = up
        t[base + "mlp.dense_4h_to_h.weight"] = down
    config = {"model_type": model_type, "hidden_size": D, "num_hidden_layers": layers}
    if hidden_act is not None:
        config["hidden_act"] = hidden_act
    return t, config


def llama_like(rng, model_type="my_llama"):
    t = {"model.embed_tokens.weight": rng.standard_normal((13, D))}
    for i in range(2):
        base = f"model.layers.{i}.mlp."
        t[base + "gate_proj.weight"] = rng.standard_normal((M, D))
        t[base + "up_proj.weight"] = rng.standard_normal((M, D))
        t[base + "down_proj.weight"] = rng.standard_normal((D, M))
    return t, {
        "model_type": model_type,
        "hidden_act": "silu",
        "hidden_size": D,
        "num_hidden_layers": 2,
    }


def test_non_gated_blocks_found_and_decided(tmp_path):
    path = save(tmp_path / "neox", *neox_like(np.random.default_rng(1)))
    with pytest.warns(AutomaticLayoutWarning, match="dense_h_to_4h") as caught:
        reports = skipsearch.scan(path)
    message = str(caught[0].message)
    assert "'my_neox'" in message and "gpt_neox" in message and "hidden_act" in message
    assert [r.block for r in reports] == ["gpt_neox.layers.0.mlp", "gpt_neox.layers.1.mlp"]
    assert [r.verdict for r in reports] == ["absorbable", "not_absorbable"]
    assert reports[0].result.subset.tolist() == list(range(D))
    for r in reports:
        assert (r.family, r.d, r.m, r.activation) == ("auto", D, M, "gelu")
        assert r.note is not None and r.note.startswith("automatic layout")


def test_gated_names_win_over_the_same_names_without_a_gate(tmp_path):
    path = save(tmp_path / "llama", *llama_like(np.random.default_rng(2)))
    with pytest.warns(AutomaticLayoutWarning, match="gate_proj"):
        reports = skipsearch.scan(path)
    assert [(r.verdict, r.activation, r.result.argument) for r in reports] == [
        ("not_absorbable", "swiglu", "linearization")
    ] * 2


def test_layer_count_is_checked(tmp_path):
    tensors, config = neox_like(np.random.default_rng(3))
    path = save(tmp_path / "neox", tensors, {**config, "num_hidden_layers": 3})
    with pytest.warns(AutomaticLayoutWarning), pytest.raises(CheckpointError, match="=3"):
        skipsearch.scan(path)


def test_no_activation_is_refused(tmp_path):
    path = save(tmp_path / "neox", *neox_like(np.random.default_rng(4), hidden_act=None))
    with pytest.raises(CheckpointError, match=r"activation is unknown.*--activation"):
        skipsearch.scan(path)
    # ... and given, it is used.
    with pytest.warns(AutomaticLayoutWarning, match="the activation argument"):
        reports = skipsearch.scan(path, activation="relu")
    assert [r.activation for r in reports] == ["relu", "relu"]


def test_unknown_activation_is_refused(tmp_path):
    path = save(tmp_path / "neox", *neox_like(np.random.default_rng(5), hidden_act="snake"))
    with pytest.raises(CheckpointError, match="snake"):
        skipsearch.scan(path)


def test_square_transposable_names_are_ambiguous(tmp_path):
    # GPT-2 stores c_fc (in, out), GPTBigCode (out, in): with d == m the
    # shapes cannot tell them apart, so the automatic layout refuses and
    # lists both mappings.
    rng = np.random.default_rng(6)
    t = {}
    for i in range(2):
        t[f"transformer.h.{i}.mlp.c_fc.weight"] = rng.standard_normal((D, D))
        t[f"transformer.h.{i}.mlp.c_proj.weight"] = rng.standard_normal((D, D))
    path = save(tmp_path / "sq", t, {"model_type": "my_gpt", "activation_function": "gelu"})
    with pytest.raises(CheckpointError, match="ambiguous: 2 mappings") as info:
        skipsearch.scan(path)
    assert "gpt2" in str(info.value) and "gpt_bigcode" in str(info.value)
    assert "differ only in the storage order" in str(info.value)
    assert "--transpose says the weights are stored (in, out)" in str(info.value)


def test_the_config_width_settles_the_storage_order_of_the_same_names(tmp_path):
    # GPT-2's names, stored (in, out) as its Conv1D stores them, under an
    # unknown model type: the shapes fit gpt2's transposed reading and
    # gpt_bigcode's plain one alike, and n_embd picks the first (issue 47).
    rng = np.random.default_rng(8)
    t = {}
    for i in range(2):
        up, down = planted(rng)  # (M, D) and (D, M)
        t[f"transformer.h.{i}.mlp.c_fc.weight"] = np.ascontiguousarray(up.T)
        t[f"transformer.h.{i}.mlp.c_proj.weight"] = np.ascontiguousarray(down.T)
    config = {"model_type": "my_gpt", "activation_function": "relu", "n_embd": D, "n_layer": 2}
    with pytest.warns(UserWarning, match="automatic"):
        reports = skipsearch.scan(save(tmp_path / "gpt", t, config))
    assert [(r.d, r.m) for r in reports] == [(D, M), (D, M)]
    assert [r.verdict for r in reports] == ["absorbable", "absorbable"]
    # Without the width nothing settles it: the error names the difference.
    del config["n_embd"]
    with pytest.raises(CheckpointError, match="differ only in the storage order"):
        skipsearch.scan(save(tmp_path / "gpt-no-width", t, config))


def test_two_kinds_of_block_are_ambiguous(tmp_path):
    # A vision tower's fc1/fc2 beside a gated language model: two mappings.
    rng = np.random.default_rng(7)
    t, config = llama_like(rng)
    for i in range(2):
        base = f"visual.blocks.{i}.mlp."
        t[base + "fc1.weight"] = rng.standard_normal((M + 1, D))
        t[base + "fc2.weight"] = rng.standard_normal((D, M + 1))
    with pytest.raises(CheckpointError, match="ambiguous") as info:
        skipsearch.scan(save(tmp_path / "vl", t, config))
    assert "visual.blocks" in str(info.value) and "gate_proj" in str(info.value)


def test_wrong_shapes_are_not_an_ffn(tmp_path):
    # The names match, but W_down is not (d, m): no mapping, a clear error.
    rng = np.random.default_rng(8)
    t = {
        "gpt_neox.layers.0.mlp.dense_h_to_4h.weight": rng.standard_normal((M, D)),
        "gpt_neox.layers.0.mlp.dense_4h_to_h.weight": rng.standard_normal((D + 1, M)),
    }
    path = save(tmp_path / "bad", t, {"model_type": "my_neox", "hidden_act": "gelu"})
    with pytest.raises(CheckpointError, match="found no FFN blocks"):
        skipsearch.scan(path)


def test_user_layout_overrides_the_automatic_one(tmp_path, capsys):
    path = save(tmp_path / "neox", *neox_like(np.random.default_rng(9)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", AutomaticLayoutWarning)
        code = cli.main(
            [
                "scan",
                str(path),
                "--up",
                "*layers.{i}.mlp.dense_h_to_4h.weight",
                "--down",
                "*layers.{i}.mlp.dense_4h_to_h.weight",
                "--activation",
                "relu",
                "--no-progress",
                "--json",
            ]
        )
    out = capsys.readouterr().out
    assert code == 0
    assert '"family": "generic"' in out and '"activation": "relu"' in out


def test_candidates_cover_the_registry_names():
    patterns = {c[0] for c, _ in candidate_patterns()}
    assert "*layers.{i}.mlp.up_proj.weight" in patterns
    assert "*h.{i}.mlp.c_fc.weight" in patterns
    # Stacked experts and fused gate/up tensors are never guessed.
    assert not any("gate_up_proj" in p or "{e}" in p for p in patterns)


def test_a_pattern_without_its_prefix_star_is_explained(tmp_path):
    # The usual slip: --up without the leading '*' finds nothing; the error
    # names the closest tensors and the pattern that would match them.
    path = save(tmp_path / "llama", *llama_like(np.random.default_rng(10)))
    layout = skipsearch.Layout(
        up="layers.{i}.mlp.up_proj.weight", down="layers.{i}.mlp.down_proj.weight"
    )
    with pytest.raises(CheckpointError) as info:
        skipsearch.scan(path, layout=layout, activation="silu")
    message = str(info.value)
    assert "closest names in the checkpoint: 'model.layers.0.mlp.up_proj.weight'" in message
    assert "the pattern '*layers.{i}.mlp.up_proj.weight' would match 2 tensor(s)" in message
    # A typo in a starred pattern still gets the closest names.
    layout = skipsearch.Layout(
        up="*layers.{i}.mlp.upproj.weight", down="*layers.{i}.mlp.down_proj.weight"
    )
    with pytest.raises(CheckpointError, match=r"closest names.*mlp.up_proj.weight"):
        skipsearch.scan(path, layout=layout, activation="silu")


def test_a_gate_the_names_leave_out_is_refused(tmp_path):
    # MPT's names blocks.{i}.ffn.up_proj/down_proj match, but the module also
    # holds a gate_proj of W_up's shape: reading the block without it would
    # decide an ungated block (an absorbable one, here) instead of the gated
    # one, which the linearization argument proves not absorbable.
    rng = np.random.default_rng(11)
    W_up, W_down = planted(rng)
    t = {
        "transformer.blocks.0.ffn.up_proj.weight": W_up,
        "transformer.blocks.0.ffn.gate_proj.weight": rng.standard_normal((M, D)),
        "transformer.blocks.0.ffn.down_proj.weight": W_down,
    }
    config = {"model_type": "my_gated", "hidden_act": "silu", "hidden_size": D}
    with pytest.raises(CheckpointError, match=r"gate_proj.weight.*a gate\?"):
        skipsearch.scan(save(tmp_path / "g", t, config))


def test_weights_stored_the_other_way_round_are_refused(tmp_path):
    # StarCoder2's names c_fc/c_proj, but stored (in, out) as GPT-2's Conv1D:
    # read (out, in), the block would be the transposed one (d and m
    # swapped). The config's hidden_size says which side is the model width.
    rng = np.random.default_rng(12)
    W_up, W_down = planted(rng)
    t = {
        "model.layers.0.mlp.c_fc.weight": np.ascontiguousarray(W_up.T),
        "model.layers.0.mlp.c_proj.weight": np.ascontiguousarray(W_down.T),
    }
    config = {"model_type": "my_conv1d", "hidden_act": "relu", "hidden_size": D}
    with pytest.raises(CheckpointError, match=f"model width {M}, not hidden_size={D}.*--transpose"):
        skipsearch.scan(save(tmp_path / "c", t, config))
    # Stated, the mapping decides the right block: the planted flip set.
    layout = skipsearch.Layout(
        up="*layers.{i}.mlp.c_fc.weight", down="*layers.{i}.mlp.c_proj.weight", transpose=True
    )
    [report] = skipsearch.scan(save(tmp_path / "c2", t, config), layout=layout)
    assert (report.verdict, report.d, report.m) == ("absorbable", D, M)


def test_without_a_model_width_the_orientation_is_not_guessed(tmp_path):
    tensors, config = neox_like(np.random.default_rng(13))
    del config["hidden_size"]
    with pytest.raises(CheckpointError, match=r"none of hidden_size.*\(out, in\) or \(in, out\)"):
        skipsearch.scan(save(tmp_path / "n", tensors, config))
