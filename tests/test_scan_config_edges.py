"""The scan on configs and checkpoints at the edges of what the families
read: numbers a float cannot hold, residual multipliers whose reciprocal
overflows, stacked experts whose tensors disagree, and equal weights stored
in different dtypes. Each case is a clear error naming the key, or a verdict
that holds exactly; none is a crash or a verdict borrowed from another block.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import skipsearch
from safetensors.numpy import save_file
from skipsearch import cli
from skipsearch.io.checkpoints import CheckpointError
from skipsearch.scan import describe_checkpoint

D, M = 4, 6
BIG = "1" + "0" * 400  # a JSON integer no float64 holds


def save(directory, tensors, config_text):
    directory.mkdir(parents=True)
    save_file(
        {k: np.ascontiguousarray(v) for k, v in tensors.items()},
        str(directory / "model.safetensors"),
    )
    (directory / "config.json").write_text(config_text)
    return directory


def gated_config(model_type="llama", layers=1, extra=""):
    """The config of a gated block of ``gated``: silu, ``layers`` layers,
    and ``extra`` key-value text appended."""
    tail = f", {extra}" if extra else ""
    return (
        f'{{"model_type": "{model_type}", "hidden_size": {D}, "intermediate_size": {M}, '
        f'"num_hidden_layers": {layers}, "hidden_act": "silu"{tail}}}'
    )


def gated(rng, prefix="model.layers.0.mlp."):
    return {
        prefix + "gate_proj.weight": rng.standard_normal((M, D)).astype(np.float32),
        prefix + "up_proj.weight": rng.standard_normal((M, D)).astype(np.float32),
        prefix + "down_proj.weight": rng.standard_normal((D, M)).astype(np.float32),
    }


def test_tied_blocks_in_different_dtypes_are_decided_apart(tmp_path):
    # Two GPT-2 layers hold the same values, h.0 as F16 and h.1 as F32. The
    # flip set {0..3} leaves a relative residual of exactly 2^-8: within
    # float16's default tolerance (2^-5), outside float32's (~3.5e-4). Each
    # block must be decided at its own dtype's tolerance, not tied to the other.
    rng = np.random.default_rng(15)
    W_up = np.round(rng.standard_normal((M, D)) * 8) / 8
    W_up[:D] = np.eye(D)
    W_down = np.round(rng.standard_normal((D, M)) * 8) / 8
    W_down[:, :D] = -(1 - 2.0**-8) * np.eye(D)
    tensors = {
        "h.0.mlp.c_fc.weight": W_up.T.astype(np.float16),
        "h.0.mlp.c_proj.weight": W_down.T.astype(np.float16),
        "h.1.mlp.c_fc.weight": W_up.T.astype(np.float32),
        "h.1.mlp.c_proj.weight": W_down.T.astype(np.float32),
    }
    config = dict(model_type="gpt2", n_embd=D, n_inner=M, n_layer=2, activation_function="relu")
    reports = skipsearch.scan(save(tmp_path / "m", tensors, json.dumps(config)))
    assert [(r.block, r.verdict, r.shared_with) for r in reports] == [
        ("h.0.mlp", "absorbable", ()),
        ("h.1.mlp", "not_absorbable", ()),
    ]
    assert reports[0].result.tolerance == 2.0**-5
    assert reports[0].result.residual >= 2.0**-8


@pytest.mark.parametrize(
    "model_type,extra,key",
    [
        ("granite", f'"residual_multiplier": {BIG}', "residual_multiplier"),
        ("granite", '"residual_multiplier": NaN', "residual_multiplier"),
        ("granite", '"residual_multiplier": 0', "residual_multiplier"),
    ],
)
def test_residual_multipliers_a_float_cannot_hold_are_named(tmp_path, model_type, extra, key):
    path = save(tmp_path / "m", gated(np.random.default_rng(1)), gated_config(model_type, 1, extra))
    with pytest.raises(CheckpointError, match=f"{key} must be a finite nonzero number"):
        skipsearch.scan(path)


@pytest.mark.parametrize("a", ["5e-324", "-1e-320", "1e-300"])
def test_tiny_residual_multipliers_keep_the_gated_verdict(tmp_path, a):
    # a act underflows nearly everywhere, but the activation a swiglu keeps
    # gate(0) = 0 and the linearization argument: x + a f(x) with a gated f
    # is not absorbable.
    config = (
        f'{{"model_type": "granite", "hidden_size": {D}, "intermediate_size": {M}, '
        f'"num_hidden_layers": 1, "hidden_act": "silu", "residual_multiplier": {a}}}'
    )
    reports = skipsearch.scan(save(tmp_path / "m", gated(np.random.default_rng(2)), config))
    assert [(r.verdict, r.result.argument) for r in reports] == [
        ("not_absorbable", "linearization")
    ]


def test_config_ratios_and_factors_that_are_not_finite_are_named(tmp_path, capsys):
    rng = np.random.default_rng(3)
    mpt = {
        "transformer.blocks.0.ffn.up_proj.weight": rng.standard_normal((8, D)).astype(np.float32),
        "transformer.blocks.0.ffn.down_proj.weight": rng.standard_normal((D, 8)).astype(np.float32),
    }
    vl = {
        "visual.blocks.0.mlp.fc1.weight": rng.standard_normal((8, D)).astype(np.float32),
        "visual.blocks.0.mlp.fc2.weight": rng.standard_normal((D, 8)).astype(np.float32),
        **gated(rng),
    }
    experts = {
        "model.layers.0.mlp.experts.gate_up_proj": rng.standard_normal((2, 2 * M, D)),
        "model.layers.0.mlp.experts.down_proj": rng.standard_normal((2, D, M)),
    }
    cases = [
        (
            "mpt",
            mpt,
            '{"model_type": "mpt", "d_model": 4, "n_layers": 1, "expansion_ratio": Infinity}',
            "expansion_ratio",
        ),
        (
            "mpt_nan",
            mpt,
            '{"model_type": "mpt", "d_model": 4, "n_layers": 1, "expansion_ratio": NaN}',
            "expansion_ratio",
        ),
        (
            "vl",
            vl,
            '{"model_type": "qwen2_vl", "hidden_size": 4, "intermediate_size": 6, "num_hidden_layers": 1, "vision_config": {"embed_dim": 4, "depth": 1, "mlp_ratio": Infinity}}',
            "mlp_ratio",
        ),
        (
            "vl_text",
            vl,
            '{"model_type": "qwen2_vl", "hidden_size": 4, "intermediate_size": 6, "num_hidden_layers": 1, "vision_config": {"embed_dim": 4, "depth": 1, "mlp_ratio": "four"}}',
            "mlp_ratio",
        ),
        (
            "ds",
            experts,
            f'{{"model_type": "deepseek_v3", "hidden_size": 4, "intermediate_size": 8, "moe_intermediate_size": 6, "num_hidden_layers": 1, "n_routed_experts": 2, "routed_scaling_factor": {BIG}}}',
            "routed_scaling_factor",
        ),
        (
            "ds_text",
            experts,
            '{"model_type": "deepseek_v3", "hidden_size": 4, "intermediate_size": 8, "moe_intermediate_size": 6, "num_hidden_layers": 1, "n_routed_experts": 2, "routed_scaling_factor": "x"}',
            "routed_scaling_factor",
        ),
    ]
    for name, tensors, config, key in cases:
        path = save(tmp_path / name, tensors, config)
        # A usage error (exit 2) naming the key, not an internal error (70).
        assert cli.main(["scan", str(path), "--no-progress"]) == 2, name
        err = capsys.readouterr().err
        assert key in err and "must be a finite" in err and "internal error" not in err, (name, err)


@pytest.mark.parametrize("experts_down", [2, 4])
def test_stacked_experts_must_agree_before_any_block_is_decided(tmp_path, experts_down):
    rng = np.random.default_rng(4)
    tensors = {
        "model.layers.0.mlp.experts.gate_up_proj": rng.standard_normal((3, 2 * M, D)),
        "model.layers.0.mlp.experts.down_proj": rng.standard_normal((experts_down, D, M)),
    }
    config = dict(
        model_type="mixtral",
        hidden_size=D,
        intermediate_size=M,
        num_hidden_layers=1,
        num_local_experts=3,
        hidden_act="silu",
    )
    path = save(tmp_path / "m", tensors, json.dumps(config))
    # describe_checkpoint reads no weight: the mismatch is found from the headers.
    with pytest.raises(
        CheckpointError,
        match=rf"down_proj has shape \({experts_down}, 4, 6\), expected \(3, 4, 6\)",
    ):
        describe_checkpoint(path)


def test_the_header_dtype_names_every_stored_dtype(tmp_path):
    # W_up in F32 and W_down in F16: the default tolerance is float16's, and
    # the checkpoint's dtype says both.
    rng = np.random.default_rng(5)
    tensors = {
        "h.0.mlp.c_fc.weight": rng.standard_normal((D, M)).astype(np.float32),
        "h.0.mlp.c_proj.weight": rng.standard_normal((M, D)).astype(np.float16),
    }
    config = dict(model_type="gpt2", n_embd=D, n_inner=M, n_layer=1, activation_function="relu")
    path = save(tmp_path / "m", tensors, json.dumps(config))
    assert describe_checkpoint(path).dtype == "F16, F32"
    [report] = skipsearch.scan(path)
    assert report.result.tolerance == 2.0**-5


def test_a_fused_tensor_is_read_once_per_block(tmp_path, monkeypatch):
    # Phi-3's gate_up_proj holds W_gate and W_up: one read gives both halves.
    from collections import Counter

    from skipsearch.io.checkpoints import Checkpoint

    rng = np.random.default_rng(6)
    tensors = {}
    for i in range(2):
        tensors[f"model.layers.{i}.mlp.gate_up_proj.weight"] = rng.standard_normal((2 * M, D))
        tensors[f"model.layers.{i}.mlp.down_proj.weight"] = rng.standard_normal((D, M))
    config = dict(
        model_type="phi3",
        hidden_size=D,
        intermediate_size=M,
        num_hidden_layers=2,
        hidden_act="silu",
    )
    path = save(tmp_path / "m", tensors, json.dumps(config))
    reads: Counter[str] = Counter()
    original = Checkpoint.get

    def counted(self, key, *args, **kwargs):
        reads[key] += 1
        return original(self, key, *args, **kwargs)

    monkeypatch.setattr(Checkpoint, "get", counted)
    reports = skipsearch.scan(path)
    assert [r.verdict for r in reports] == ["not_absorbable"] * 2
    assert reads == Counter({key: 1 for key in tensors})


@pytest.mark.parametrize("layers", [2**31, 2**63, 10**30])
def test_a_huge_layer_count_is_named_without_listing_it(tmp_path, layers):
    # The config's count is compared with the layers found, never listed: a
    # range of 2**31 layers would take gigabytes, and one beyond ssize_t fails.
    path = save(tmp_path / "m", gated(np.random.default_rng(3)), gated_config(layers=layers))
    with pytest.raises(CheckpointError, match=f"num_hidden_layers={layers} but .* holds 1 FFN"):
        skipsearch.scan(path)


@pytest.mark.parametrize(
    ("config_text", "expected"),
    [
        # Beyond Python's digit limit for str-to-int conversion (4300).
        ('{"model_type": "llama", "hidden_size": ' + "9" * 5000 + "}", "not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ],
    ids=["5000-digit integer", "100000-deep nesting"],
)
def test_configs_json_cannot_parse_name_the_file(tmp_path, config_text, expected):
    directory = save(tmp_path / "m", gated(np.random.default_rng(0)), config_text)
    with pytest.raises(CheckpointError, match=expected) as info:
        describe_checkpoint(directory)
    assert "config.json" in str(info.value)


def test_errors_name_the_weights_file_when_one_is_given(tmp_path):
    # Tensors under names the llama layout does not use: no block is found.
    rng = np.random.default_rng(0)
    folder = save(tmp_path / "ckpt", gated(rng, prefix="model.layers.0.ffn."), gated_config())
    weights = (folder / "model.safetensors").resolve()
    with pytest.raises(CheckpointError, match="no FFN blocks found") as given_file:
        skipsearch.scan(weights)
    assert f"in {weights}:" in str(given_file.value)
    with pytest.raises(CheckpointError, match="no FFN blocks found") as given_folder:
        skipsearch.scan(folder)
    assert f"in {folder.resolve()}:" in str(given_folder.value)


def test_shape_and_dtype_errors_name_the_checkpoint(tmp_path):
    # Several checkpoints in one scan: the error must say which one failed.
    rng = np.random.default_rng(1)
    good = save(tmp_path / "good", gated(rng), gated_config())
    wide = save(
        tmp_path / "wide",
        gated(rng),
        gated_config().replace(f'"hidden_size": {D}', '"hidden_size": 3'),
    )
    ints = {k: v.astype(np.int32) for k, v in gated(rng).items()}
    coded = save(tmp_path / "ints", ints, gated_config())
    with pytest.raises(CheckpointError, match=r"has shape .*expected") as shape:
        skipsearch.scan([good, wide / "model.safetensors"])
    assert str(shape.value).startswith(f"{(wide / 'model.safetensors').resolve()}: ")
    with pytest.raises(CheckpointError, match=r"has dtype I32; expected a float dtype") as dtype:
        skipsearch.scan(coded)
    assert str(dtype.value).startswith(f"{coded.resolve()}: ")


def test_a_link_loop_is_named_as_a_loop_not_a_missing_path(tmp_path, capsys):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(CheckpointError, match=r"'.*loop'.*symbolic links form a loop"):
        skipsearch.scan(loop)
    assert cli.main(["scan", str(loop)]) == 2
    assert "form a loop" in capsys.readouterr().err


@pytest.mark.parametrize(
    "value, error, message",
    [
        (1.5, TypeError, "max_pending must be a positive integer"),
        ("2", TypeError, "max_pending must be a positive integer"),
        (0, ValueError, "max_pending must be a positive integer"),
    ],
)
def test_max_pending_of_the_wrong_type_is_a_type_error(tmp_path, value, error, message):
    folder = save(tmp_path / "ckpt", gated(np.random.default_rng(2)), gated_config())
    with pytest.raises(error, match=message):
        skipsearch.scan(folder, max_pending=value)


def test_a_negative_node_limit_says_an_integer_is_expected():
    with pytest.raises(ValueError, match="node_limit must be a finite non-negative integer"):
        skipsearch.subset_sum(np.ones((1, 3), dtype=np.int64), np.ones(1), node_limit=-1)
