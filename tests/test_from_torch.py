"""from_torch and load_state_dict: duck-typed fake modules (no torch needed),
then the same checks on real torch modules when torch is installed."""

from __future__ import annotations

import dataclasses
import json
import struct
import subprocess
import sys
import types

import numpy as np
import pytest
import skipsearch
from skipsearch import find_absorbing_subset, get_activation
from skipsearch.torch_adapter import BF16_TOL, from_torch, load_state_dict

# --------------------------------------------------------------------------
# Fake torch: tensors backed by numpy, modules named like torch's classes.
# --------------------------------------------------------------------------


class FakeTensor:
    """detach/cpu/float/numpy like a torch tensor; numpy() shares memory,
    as torch's does, and bfloat16 refuses numpy() as torch's does."""

    def __init__(self, array, dtype=None):
        self.array = np.asarray(array)
        self.dtype = dtype or f"torch.{self.array.dtype}"
        self.calls = []

    def detach(self):
        self.calls.append("detach")
        return self

    def cpu(self):
        self.calls.append("cpu")
        return self

    def float(self):
        return FakeTensor(self.array.astype(np.float32))

    def numpy(self):
        if self.dtype == "torch.bfloat16":
            raise TypeError("Got unsupported ScalarType BFloat16")
        return self.array


class Module:
    pass


class Linear(Module):
    def __init__(self, W, b=None):
        W = np.asarray(W)
        self.weight = FakeTensor(W)
        self.bias = None if b is None else FakeTensor(b)
        self.out_features, self.in_features = W.shape


class Conv1D(Module):
    """transformers' Conv1D: weight stored as (in, out)."""

    def __init__(self, W_in_out, b):
        self.weight = FakeTensor(W_in_out)
        self.bias = FakeTensor(b)
        self.nx, self.nf = np.shape(W_in_out)


class Sequential(Module):
    def __init__(self, *mods):
        self._mods = list(mods)

    def __iter__(self):
        return iter(self._mods)


def _act(name, **attrs):
    cls = type(name, (Module,), {})
    obj = cls()
    for k, v in attrs.items():
        setattr(obj, k, v)
    return obj


def ReLU():
    return _act("ReLU")


def GELU(approximate="none"):
    return _act("GELU", approximate=approximate)


def Dropout(p=0.1):
    return _act("Dropout", p=p)


def _linear_pair(rng, d_in, m, d_out, bias=True):
    W_up, W_down = rng.standard_normal((m, d_in)), rng.standard_normal((d_out, m))
    b_up = rng.standard_normal(m) if bias else None
    b_down = rng.standard_normal(d_out) if bias else None
    return W_up, b_up, W_down, b_down


def _planted(rng, bias=True):
    """d = 3, m = 5 ReLU block with W_down[:, :3] = -inv(W_up[:3]): flipping
    {0, 1, 2} gives W_down[:, S] W_up[S] = -I, so the identity skip absorbs."""
    W_up, b_up, W_down, b_down = _linear_pair(rng, 3, 5, 3, bias)
    W_down[:, :3] = -np.linalg.inv(W_up[:3])
    return W_up, b_up, W_down, b_down


# --------------------------------------------------------------------------
# Sequential
# --------------------------------------------------------------------------


def test_sequential_extracts_copies_and_leaves_module_alone(rng):
    W_up, b_up, W_down, b_down = _linear_pair(rng, 4, 6, 4)
    saved = [a.copy() for a in (W_up, b_up, W_down, b_down)]
    up, down = Linear(W_up, b_up), Linear(W_down, b_down)
    block = from_torch(Sequential(up, ReLU(), down))
    assert isinstance(block, skipsearch.MLPBlock)
    assert block.activation == "relu"
    assert block.W_gate is None and block.skip is None
    for got, want in zip((block.W_up, block.b_up, block.W_down, block.b_down), saved):
        np.testing.assert_array_equal(got, want)
        assert got.dtype == np.float64
    # Copies: no memory shared with the module's tensors, and the module is unchanged.
    for got, src in ((block.W_up, up.weight), (block.W_down, down.weight), (block.b_up, up.bias)):
        assert not np.shares_memory(got, src.array)
        got[...] = 0.0
    for orig, want in zip((W_up, b_up, W_down, b_down), saved):
        np.testing.assert_array_equal(orig, want)
    assert up.weight.calls[:2] == ["detach", "cpu"]


def test_sequential_without_biases_gives_none(rng):
    W_up, _, W_down, _ = _linear_pair(rng, 3, 4, 2, bias=False)
    block = from_torch(Sequential(Linear(W_up), GELU(), Linear(W_down)))
    assert block.b_up is None and block.b_down is None
    assert block.activation == "gelu"
    assert block.W_up.shape == (4, 3) and block.W_down.shape == (2, 4)


def test_dropout_and_identity_are_ignored_anywhere(rng):
    W_up, b_up, W_down, b_down = _linear_pair(rng, 3, 5, 3)
    seq = Sequential(
        Dropout(),
        Linear(W_up, b_up),
        Dropout(),
        _act("Identity"),
        GELU("tanh"),
        _act("AlphaDropout"),
        Linear(W_down, b_down),
        Dropout(),
    )
    block = from_torch(seq)
    assert block.activation == "gelu_tanh"
    np.testing.assert_array_equal(block.W_down, W_down)


def test_nested_sequential_and_list_are_flattened(rng):
    W_up, b_up, W_down, b_down = _linear_pair(rng, 3, 5, 3)
    nested = Sequential(Sequential(Linear(W_up, b_up), ReLU()), Linear(W_down, b_down))
    assert from_torch(nested).activation == "relu"
    as_list = [Linear(W_up, b_up), _act("SiLU"), Linear(W_down, b_down)]
    assert from_torch(as_list).activation == "silu"


@pytest.mark.parametrize(
    "module, name",
    [
        (ReLU(), "relu"),
        (GELU("none"), "gelu"),
        (GELU("tanh"), "gelu_tanh"),
        (_act("SiLU"), "silu"),
        (_act("LeakyReLU", negative_slope=0.2), "leaky_relu(0.2)"),
        (_act("LeakyReLU", negative_slope=0.123456789), "leaky_relu(0.123456789)"),
        (_act("PReLU", weight=FakeTensor(np.array([0.25], dtype=np.float32))), "leaky_relu(0.25)"),
        (_act("Tanh"), "tanh"),
        (_act("Sigmoid"), "sigmoid"),
        (_act("ELU", alpha=1.0), "elu"),
        (_act("Softplus", beta=1.0, threshold=20.0), "softplus"),
        (_act("Softplus", beta=1, threshold=5), "softplus"),
        (_act("Hardswish"), "hardswish"),
        (_act("Mish"), "mish"),
        (_act("ReLU6", min_val=0.0, max_val=6.0), "relu6"),
        (_act("Hardtanh", min_val=-1.0, max_val=1.0), "hardtanh"),
        # transformers.activations
        (_act("GELUActivation"), "gelu"),
        (_act("NewGELUActivation"), "gelu_tanh"),
        (_act("GELUTanh"), "gelu_tanh"),
        (_act("PytorchGELUTanh"), "gelu_tanh"),
        (_act("FastGELUActivation"), "gelu_tanh"),
        (_act("AccurateGELUActivation"), "gelu_tanh"),
        (_act("QuickGELUActivation"), "quick_gelu"),
        (_act("SiLUActivation"), "silu"),
        (_act("MishActivation"), "mish"),
        (_act("ReLUSquaredActivation"), "relu2"),
    ],
    ids=lambda x: x if isinstance(x, str) else type(x).__name__,
)
def test_activation_modules_map_to_registry_names(rng, module, name):
    W_up, b_up, W_down, b_down = _linear_pair(rng, 2, 3, 2)
    block = from_torch(Sequential(Linear(W_up, b_up), module, Linear(W_down, b_down)))
    assert block.activation == name
    assert get_activation(block.activation).name.startswith(name.split("(")[0])


def test_leaky_relu_slope_survives_exactly(rng):
    W_up, _, W_down, _ = _linear_pair(rng, 2, 3, 2, bias=False)
    mod = _act("LeakyReLU", negative_slope=0.123456789)
    block = from_torch(Sequential(Linear(W_up), mod, Linear(W_down)))
    assert get_activation(block.activation).flip_constant == 1.123456789


@pytest.mark.parametrize(
    "module, match",
    [
        (GELU("sigmoid"), r"GELU\(approximate='sigmoid'\)"),
        (_act("ELU", alpha=2.0), r"ELU\(alpha=2.0\).*alpha = 1"),
        (_act("Softplus", beta=2.0, threshold=20.0), r"Softplus\(beta=2.0\).*beta = 1"),
        (_act("Hardtanh", min_val=-2.0, max_val=2.0), r"Hardtanh\(min_val=-2.0, max_val=2.0\)"),
        (_act("LeakyReLU", negative_slope=1.0), r"LeakyReLU\(negative_slope=1.0\)"),
        (_act("PReLU", weight=FakeTensor(np.ones(4) * 0.25)), r"PReLU.*num_parameters=1"),
        (_act("Swoosh"), r"unsupported activation module Swoosh"),
        (_act("ClippedGELUActivation", min=-10, max=10), r"ClippedGELUActivation"),
    ],
    ids=lambda x: x if isinstance(x, str) else type(x).__name__,
)
def test_unsupported_activation_modules(rng, module, match):
    W_up, b_up, W_down, b_down = _linear_pair(rng, 2, 3, 2)
    seq = Sequential(Linear(W_up, b_up), module, Linear(W_down, b_down))
    with pytest.raises(ValueError, match=match) as info:
        from_torch(seq)
    assert "Sequential[1]" in str(info.value)
    assert "activation=" in str(info.value) and "ReLU" in str(info.value)


def test_identity_activation_is_refused_for_ungated(rng):
    W_up, _, W_down, _ = _linear_pair(rng, 2, 3, 2, bias=False)
    with pytest.raises(ValueError, match="LinearActivation is the identity, so the block is lin"):
        from_torch(Sequential(Linear(W_up), _act("LinearActivation"), Linear(W_down)))


def test_activation_override(rng):
    W_up, b_up, W_down, b_down = _linear_pair(rng, 2, 3, 2)
    seq = Sequential(Linear(W_up, b_up), _act("Swoosh"), Linear(W_down, b_down))
    assert from_torch(seq, activation="silu").activation == "silu"
    assert from_torch(seq, activation="leaky_relu(0.3)").activation == "leaky_relu(0.3)"
    act = skipsearch.leaky_relu(0.3)
    assert from_torch(seq, activation=act).activation is act
    # The override wins over a detected activation too.
    relu_seq = Sequential(Linear(W_up), ReLU(), Linear(W_down))
    assert from_torch(relu_seq, activation="gelu").activation == "gelu"
    with pytest.raises(ValueError, match="has no gate projection but activation='swiglu' is gated"):
        from_torch(seq, activation="swiglu")
    with pytest.raises(ValueError, match="unknown activation 'swoosh'"):
        from_torch(seq, activation="swoosh")
    with pytest.raises(TypeError, match="activation must be a registry name"):
        from_torch(seq, activation=3)


# --------------------------------------------------------------------------
# Verdicts
# --------------------------------------------------------------------------


def test_planted_relu_sequential_is_absorbable(rng):
    W_up, b_up, W_down, b_down = _planted(rng)
    block = from_torch(Sequential(Linear(W_up, b_up), ReLU(), Dropout(), Linear(W_down, b_down)))
    r = find_absorbing_subset(**dataclasses.asdict(block))
    assert r.verdict == "absorbable"
    assert r.subset.tolist() == [0, 1, 2]
    assert r.residual < 1e-12
    r2 = find_absorbing_subset(
        block.W_up,
        block.W_down,
        activation=block.activation,
        b_up=block.b_up,
        b_down=block.b_down,
        W_gate=block.W_gate,
    )
    assert r2.verdict == "absorbable" and r2.subset.tolist() == [0, 1, 2]
    # The built skip-free block reproduces x + f(x).
    x = rng.standard_normal((7, 3))
    want = x + np.maximum(x @ W_up.T + b_up, 0) @ W_down.T + b_down
    np.testing.assert_allclose(r.block(x), want, atol=1e-10)


def test_random_relu_sequential_is_not_absorbable(rng):
    W_up, b_up, W_down, b_down = _linear_pair(rng, 4, 8, 4)
    block = from_torch(Sequential(Linear(W_up, b_up), ReLU(), Linear(W_down, b_down)))
    assert find_absorbing_subset(**dataclasses.asdict(block)).verdict == "not_absorbable"


# --------------------------------------------------------------------------
# Hugging Face layouts (duck-typed, transformers is never imported)
# --------------------------------------------------------------------------


def _mod(name, **attrs):
    return _act(name, **attrs)


def _llama(rng, d=4, m=6, act=None, gate_bias=None):
    W_gate, W_up, W_down = (
        rng.standard_normal((m, d)),
        rng.standard_normal((m, d)),
        rng.standard_normal((d, m)),
    )
    mlp = _mod(
        "LlamaMLP",
        gate_proj=Linear(W_gate, gate_bias),
        up_proj=Linear(W_up),
        down_proj=Linear(W_down),
        act_fn=act if act is not None else _act("SiLU"),
    )
    return mlp, W_gate, W_up, W_down


def test_llama_mlp_is_gated_swiglu_and_not_absorbable(rng):
    mlp, W_gate, W_up, W_down = _llama(rng)
    block = from_torch(mlp)
    assert block.activation == "swiglu"
    np.testing.assert_array_equal(block.W_gate, W_gate)
    np.testing.assert_array_equal(block.W_up, W_up)
    np.testing.assert_array_equal(block.W_down, W_down)
    assert block.b_up is None and block.b_down is None
    r = find_absorbing_subset(**dataclasses.asdict(block))
    assert r.verdict == "not_absorbable"
    assert r.argument == "linearization"


@pytest.mark.parametrize(
    "act, name",
    [
        (_act("SiLUActivation"), "swiglu"),
        (GELU("none"), "geglu"),
        (GELU("tanh"), "geglu"),
        (_act("PytorchGELUTanh"), "geglu"),  # Gemma
        (_act("GELUTanh"), "geglu"),
        (ReLU(), "reglu"),
        (_act("Sigmoid"), "glu"),
        (_act("Identity"), "bilinear"),
    ],
    ids=lambda x: x if isinstance(x, str) else type(x).__name__,
)
def test_gated_activation_mapping(rng, act, name):
    mlp, *_ = _llama(rng, act=act)
    assert from_torch(mlp).activation == name


def test_gated_unsupported_gate_and_override(rng):
    mlp, *_ = _llama(rng, act=_act("Tanh"))
    with pytest.raises(ValueError, match=r"LlamaMLP\.act_fn: the gate activation Tanh .*'tanh'"):
        from_torch(mlp)
    assert from_torch(mlp, activation="geglu").activation == "geglu"
    with pytest.raises(ValueError, match=r"is a gated block .* activation='relu' is not gated"):
        from_torch(mlp, activation="relu")


def test_gate_bias(rng):
    mlp, *_ = _llama(rng, gate_bias=np.zeros(6))
    block = from_torch(mlp)
    assert block.activation == "swiglu"
    # A zero gate bias leaves f unchanged but gives the layer inner biases,
    # which MLPBlock carries as b_gate: the linearization argument does not apply.
    assert block.b_up is None
    np.testing.assert_array_equal(block.b_gate, np.zeros(6))
    r = find_absorbing_subset(**dataclasses.asdict(block))
    assert (r.verdict, r.argument) == ("undecided", "none")
    assert "inner biases" in r.reason and "b_gate" in r.reason
    # A zero up bias: the same.
    mlp, *_ = _llama(rng)
    mlp.up_proj.bias = FakeTensor(np.zeros(6))
    r = find_absorbing_subset(**dataclasses.asdict(from_torch(mlp)))
    assert (r.verdict, r.argument) == ("undecided", "none")
    # A nonzero gate bias is carried as it is.
    mlp, *_ = _llama(rng, gate_bias=np.full(6, 0.5))
    block = from_torch(mlp)
    np.testing.assert_array_equal(block.b_gate, np.full(6, 0.5))
    r = find_absorbing_subset(**dataclasses.asdict(block))
    assert (r.verdict, r.argument) == ("undecided", "none") and "b_gate" in r.reason


def test_gpt2_mlp_conv1d_is_transposed(rng):
    d, m = 4, 16
    fc_w, fc_b = rng.standard_normal((d, m)), rng.standard_normal(m)  # (in, out)
    proj_w, proj_b = rng.standard_normal((m, d)), rng.standard_normal(d)
    mlp = _mod(
        "GPT2MLP",
        c_fc=Conv1D(fc_w, fc_b),
        c_proj=Conv1D(proj_w, proj_b),
        act=_act("NewGELUActivation"),
        dropout=Dropout(),
    )
    block = from_torch(mlp)
    assert block.activation == "gelu_tanh"
    np.testing.assert_array_equal(block.W_up, fc_w.T)
    np.testing.assert_array_equal(block.W_down, proj_w.T)
    np.testing.assert_array_equal(block.b_up, fc_b)
    np.testing.assert_array_equal(block.b_down, proj_b)
    assert block.W_up.shape == (m, d) and block.W_up.flags.c_contiguous
    assert not np.shares_memory(block.W_up, fc_w)


def test_gpt2_block_descends_into_mlp(rng):
    d, m = 3, 6
    fc_w, proj_w = rng.standard_normal((d, m)), rng.standard_normal((m, d))
    mlp = _mod(
        "GPT2MLP",
        c_fc=Conv1D(fc_w, np.zeros(m)),
        c_proj=Conv1D(proj_w, np.zeros(d)),
        act=_act("GELUActivation"),
    )
    layer = _mod("GPT2Block", ln_1=_act("LayerNorm"), attn=_act("GPT2Attention"), mlp=mlp)
    block = from_torch(layer)
    assert block.activation == "gelu"
    np.testing.assert_array_equal(block.W_up, fc_w.T)


@pytest.mark.parametrize(
    "cls, up, down, act_attr, act, name",
    [
        ("GPTNeoXMLP", "dense_h_to_4h", "dense_4h_to_h", "act", _act("GELUActivation"), "gelu"),
        ("BloomMLP", "dense_h_to_4h", "dense_4h_to_h", "gelu_impl", _act("BloomGelu"), "gelu_tanh"),
        ("GPTJMLP", "fc_in", "fc_out", "act", _act("NewGELUActivation"), "gelu_tanh"),
        ("T5DenseActDense", "wi", "wo", "act", ReLU(), "relu"),
        ("OPTDecoderLayer", "fc1", "fc2", "activation_fn", ReLU(), "relu"),
        ("CLIPMLP", "fc1", "fc2", "activation_fn", _act("QuickGELUActivation"), "quick_gelu"),
    ],
)
def test_ungated_hf_layouts(rng, cls, up, down, act_attr, act, name):
    W_up, b_up, W_down, b_down = _linear_pair(rng, 4, 10, 4, bias=cls != "T5DenseActDense")
    mod = _mod(cls, **{up: Linear(W_up, b_up), down: Linear(W_down, b_down), act_attr: act})
    mod.self_attn = _act("OPTAttention")  # unrelated attributes do not matter
    block = from_torch(mod)
    assert block.activation == name
    assert block.W_gate is None
    np.testing.assert_array_equal(block.W_up, W_up)
    np.testing.assert_array_equal(block.W_down, W_down)
    if b_up is None:
        assert block.b_up is None and block.b_down is None
    else:
        np.testing.assert_array_equal(block.b_up, b_up)
        np.testing.assert_array_equal(block.b_down, b_down)


def test_t5_gated_and_t5_layer_ff(rng):
    d, m = 4, 8
    wi_0, wi_1, wo = (
        rng.standard_normal((m, d)),
        rng.standard_normal((m, d)),
        rng.standard_normal((d, m)),
    )
    dense = _mod(
        "T5DenseGatedActDense",
        wi_0=Linear(wi_0),
        wi_1=Linear(wi_1),
        wo=Linear(wo),
        act=_act("NewGELUActivation"),
        dropout=Dropout(),
    )
    block = from_torch(dense)
    assert block.activation == "geglu"
    np.testing.assert_array_equal(block.W_gate, wi_0)
    np.testing.assert_array_equal(block.W_up, wi_1)
    np.testing.assert_array_equal(block.W_down, wo)
    layer_ff = _mod("T5LayerFF", DenseReluDense=dense, layer_norm=_act("T5LayerNorm"))
    np.testing.assert_array_equal(from_torch(layer_ff).W_gate, wi_0)
    r = find_absorbing_subset(**dataclasses.asdict(block))
    assert r.verdict == "not_absorbable" and r.argument == "linearization"


def test_mixtral_expert(rng):
    d, m = 3, 5
    w1, w3 = rng.standard_normal((m, d)), rng.standard_normal((m, d))
    w2 = rng.standard_normal((d, m))
    expert = _mod(
        "MixtralBlockSparseTop2MLP",
        w1=Linear(w1),
        w2=Linear(w2),
        w3=Linear(w3),
        act_fn=_act("SiLU"),
    )
    block = from_torch(expert)
    assert block.activation == "swiglu"
    np.testing.assert_array_equal(block.W_gate, w1)
    np.testing.assert_array_equal(block.W_up, w3)
    np.testing.assert_array_equal(block.W_down, w2)


def test_bert_layer(rng):
    W_up, b_up, W_down, b_down = _linear_pair(rng, 4, 12, 4)
    layer = _mod(
        "BertLayer",
        attention=_act("BertAttention"),
        intermediate=_mod(
            "BertIntermediate", dense=Linear(W_up, b_up), intermediate_act_fn=_act("GELUActivation")
        ),
        output=_mod("BertOutput", dense=Linear(W_down, b_down), LayerNorm=_act("LayerNorm")),
    )
    block = from_torch(layer)
    assert block.activation == "gelu"
    np.testing.assert_array_equal(block.W_up, W_up)
    np.testing.assert_array_equal(block.b_up, b_up)
    np.testing.assert_array_equal(block.W_down, W_down)
    np.testing.assert_array_equal(block.b_down, b_down)


def test_layout_without_activation_attribute(rng):
    W_up, b_up, W_down, b_down = _linear_pair(rng, 2, 3, 2)
    mod = _mod("OPTDecoderLayer", fc1=Linear(W_up, b_up), fc2=Linear(W_down, b_down))
    with pytest.raises(ValueError, match="has fc1 and fc2 but no activation attribute"):
        from_torch(mod)
    assert from_torch(mod, activation="relu").activation == "relu"


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


def test_wrong_number_of_linear_layers(rng):
    W = rng.standard_normal((3, 3))
    with pytest.raises(ValueError, match=r"expected exactly 2 Linear layers .* found 3"):
        from_torch(Sequential(Linear(W), ReLU(), Linear(W), ReLU(), Linear(W)))
    with pytest.raises(ValueError, match=r"expected exactly 2 Linear layers .* found 1"):
        from_torch(Sequential(Linear(W), ReLU()))


def test_shapes_that_do_not_chain(rng):
    up, down = rng.standard_normal((5, 3)), rng.standard_normal((3, 4))
    match = r"do not chain.*\(5, 3\).*\(3, 4\).*expected \(d_out, 5\)"
    with pytest.raises(ValueError, match=match):
        from_torch(Sequential(Linear(up), ReLU(), Linear(down)))
    mlp, *_ = _llama(rng)
    mlp.gate_proj = Linear(rng.standard_normal((7, 4)))
    match = r"gate_proj weight has shape \(7, 4\) but up_proj .*\(6, 4\)"
    with pytest.raises(ValueError, match=match):
        from_torch(mlp)


def test_bad_sequential_structure(rng):
    W_up, W_down = rng.standard_normal((5, 3)), rng.standard_normal((3, 5))
    with pytest.raises(ValueError, match=r"found 0 \(the block is linear\)"):
        from_torch(Sequential(Linear(W_up), Linear(W_down)))
    with pytest.raises(ValueError, match=r"found 2 \(Sequential\[1\] ReLU, Sequential\[2\] GELU\)"):
        from_torch(Sequential(Linear(W_up), ReLU(), GELU(), Linear(W_down)))
    with pytest.raises(ValueError, match=r"Sequential\[3\]: ReLU lies outside the two Linear"):
        from_torch(Sequential(Linear(W_up), ReLU(), Linear(W_down), ReLU()))
    with pytest.raises(ValueError, match=r"Sequential\[0\]: LayerNorm lies outside"):
        from_torch(Sequential(_act("LayerNorm"), Linear(W_up), ReLU(), Linear(W_down)))


def test_unknown_layouts_list_the_supported_ones(rng):
    match = r"unrecognised module Foo\. Supported layouts: .*gate_proj"
    with pytest.raises(ValueError, match=match):
        from_torch(_mod("Foo", weight=1))
    with pytest.raises(ValueError, match="A single Linear layer is not an MLP block"):
        from_torch(Linear(rng.standard_normal((3, 3))))
    with pytest.raises(TypeError, match="needs a module, got None"):
        from_torch(None)
    with pytest.raises(ValueError, match="unrecognised module int"):
        from_torch(3)


def test_bad_weights(rng):
    up = _mod("Linear", weight=FakeTensor(np.ones((2, 3, 4))), in_features=4, out_features=3)
    with pytest.raises(ValueError, match=r"Sequential\[0\]: expected a 2-D weight .*\(2, 3, 4\)"):
        from_torch(Sequential(up, ReLU(), Linear(np.ones((3, 3)))))
    bad_bias = Linear(np.ones((3, 3)), np.ones(4))
    with pytest.raises(ValueError, match=r"bias has shape \(4,\), expected \(3,\)"):
        from_torch(Sequential(bad_bias, ReLU(), Linear(np.ones((3, 3)))))
    strings = _mod("Linear", weight=np.array([["a", "b"]]), in_features=2, out_features=1)
    with pytest.raises(TypeError, match="expected a real numeric tensor"):
        from_torch(Sequential(strings, ReLU(), Linear(np.ones((2, 1)))))
    mlp, *_ = _llama(rng)
    mlp.up_proj = _act("Parameter")
    with pytest.raises(TypeError, match=r"LlamaMLP\.up_proj: expected a Linear-like module"):
        from_torch(mlp)


# --------------------------------------------------------------------------
# dtypes and plain numpy weights
# --------------------------------------------------------------------------


def test_bfloat16_is_widened_with_a_warning(rng):
    W_up, _, W_down, _ = _linear_pair(rng, 3, 4, 3, bias=False)
    W_up32 = W_up.astype(np.float32)
    up = Linear(W_up32)
    up.weight = FakeTensor(W_up32, dtype="torch.bfloat16")
    with pytest.warns(
        skipsearch.PrecisionWarning, match=r"bfloat16 weights were widened to float32.*tol=0.0884"
    ):
        block = from_torch(Sequential(up, ReLU(), Linear(W_down)))
    assert block.W_up.dtype == np.float32
    np.testing.assert_array_equal(block.W_up, W_up32)
    assert pytest.approx(np.sqrt(2.0**-7)) == BF16_TOL


def test_float16_and_float32_keep_their_dtype(rng):
    W_up, _, W_down, _ = _linear_pair(rng, 3, 4, 3, bias=False)
    block = from_torch(
        Sequential(Linear(W_up.astype(np.float16)), ReLU(), Linear(W_down.astype(np.float32)))
    )
    assert block.W_up.dtype == np.float16 and block.W_down.dtype == np.float32
    np.testing.assert_array_equal(block.W_up, W_up.astype(np.float16))


def test_plain_numpy_weights_are_copied(rng):
    W_up, b_up, W_down, b_down = _linear_pair(rng, 3, 4, 3)
    up = _mod("Linear", weight=W_up, bias=b_up, in_features=3, out_features=4)
    down = _mod("Linear", weight=W_down, bias=b_down, in_features=4, out_features=3)
    saved = W_up.copy()
    block = from_torch(Sequential(up, ReLU(), down))
    np.testing.assert_array_equal(block.W_up, W_up)
    assert not np.shares_memory(block.W_up, W_up)
    block.W_up[...] = 7.0
    np.testing.assert_array_equal(W_up, saved)


def test_importing_the_adapter_does_not_import_torch():
    code = (
        "import sys, skipsearch.torch_adapter\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "assert 'transformers' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --------------------------------------------------------------------------
# load_state_dict
# --------------------------------------------------------------------------


def test_load_safetensors(tmp_path, rng):
    from safetensors.numpy import save_file

    tensors = {
        "mlp.up.weight": rng.standard_normal((4, 3)).astype(np.float32),
        "mlp.down.weight": rng.standard_normal((3, 4)),
        "mask": np.array([True, False]),
    }
    path = tmp_path / "model.safetensors"
    save_file(tensors, str(path))
    sd = load_state_dict(path)
    assert set(sd) == set(tensors)
    for k, v in tensors.items():
        assert sd[k].dtype == v.dtype
        np.testing.assert_array_equal(sd[k], v)


def _write_safetensors(path, entries):
    """entries: name -> (dtype string, shape, raw bytes)."""
    header, offset, blobs = {}, 0, []
    for name, (dtype, shape, raw) in entries.items():
        header[name] = {
            "dtype": dtype,
            "shape": list(shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        offset += len(raw)
        blobs.append(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def test_load_safetensors_widens_bfloat16_and_float8(tmp_path):
    values = np.array([[1.0, -2.5], [0.15625, 3.0e-3]], dtype=np.float32)
    bf16 = (values.view(np.uint32) >> 16).astype("<u2")  # exact: these values fit bf16
    expected_bf16 = (bf16.astype(np.uint32) << 16).view(np.float32)
    # E4M3FN bytes: 0x38 = 1.0, 0xC4 = -3.0, 0x7E = 448, 0x01 = 2^-9 (subnormal), 0x7F = NaN
    e4m3 = np.array([0x38, 0xC4, 0x7E, 0x01, 0x7F], dtype=np.uint8)
    # E5M2 bytes: 0x3C = 1.0, 0xC2 = -3.0, 0x7C = inf, 0x01 = 2^-16
    e5m2 = np.array([0x3C, 0xC2, 0x7C, 0x01], dtype=np.uint8)
    plain = np.arange(3, dtype=np.float32)
    path = tmp_path / "wide.safetensors"
    _write_safetensors(
        path,
        {
            "bf": ("BF16", (2, 2), bf16.tobytes()),
            "f8a": ("F8_E4M3", (5,), e4m3.tobytes()),
            "f8b": ("F8_E5M2", (4,), e5m2.tobytes()),
            "plain": ("F32", (3,), plain.tobytes()),
        },
    )
    sd = load_state_dict(str(path))
    assert sd["bf"].dtype == np.float32
    np.testing.assert_array_equal(sd["bf"], expected_bf16)
    np.testing.assert_array_equal(sd["bf"][0], [1.0, -2.5])
    np.testing.assert_array_equal(sd["f8a"], [1.0, -3.0, 448.0, 2.0**-9, np.nan])
    np.testing.assert_array_equal(sd["f8b"], [1.0, -3.0, np.inf, 2.0**-16])
    np.testing.assert_array_equal(sd["plain"], plain)


def test_load_safetensors_widens_e8m0_and_refuses_dtypes_it_cannot_widen(tmp_path):
    import safetensors

    known = tuple(int(p) for p in safetensors.__version__.split(".")[:3]) >= (0, 6, 1)
    # E8M0 (DeepSeek-V4's block scales) is 2^(e - 127), exactly, 0xff NaN.
    path = tmp_path / "e8m0.safetensors"
    _write_safetensors(path, {"scale": ("F8_E8M0", (4,), bytes([0, 127, 130, 255]))})
    if known:
        got = load_state_dict(path)["scale"]
        np.testing.assert_array_equal(got, [2.0**-127, 1.0, 8.0, np.nan])
    path = tmp_path / "f4.safetensors"
    _write_safetensors(path, {"codes": ("F4", (4,), bytes(2))})
    if known:
        message = "'codes' has dtype F4, which numpy cannot hold"
    else:  # F4 is newer than this safetensors: the refusal names it all the same
        message = "it holds dtypes F4.*upgrade it: pip install -U safetensors"
    with pytest.raises(ValueError, match=message):
        load_state_dict(path)


def test_load_state_dict_errors(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="no checkpoint file"):
        load_state_dict(tmp_path / "missing.safetensors")
    other = tmp_path / "model.npz"
    other.write_bytes(b"x")
    with pytest.raises(ValueError, match=r"unsupported checkpoint suffix '\.npz'"):
        load_state_dict(other)
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(b"\x00" * 4)
    with pytest.raises(ValueError, match="is not a readable safetensors file"):
        load_state_dict(broken)
    pt = tmp_path / "model.pt"
    pt.write_bytes(b"not read")
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    with pytest.raises(ImportError, match=r"torch is not installed.*safetensors"):
        load_state_dict(pt)


def test_load_torch_checkpoint_uses_weights_only(tmp_path, monkeypatch):
    calls = []
    up = np.arange(6.0).reshape(2, 3)

    def load(path, **kwargs):
        calls.append((path, kwargs))
        return {
            "state_dict": {"up.weight": FakeTensor(up), "half": FakeTensor(up, "torch.bfloat16")},
            "epoch": 3,
            "name": "run",
            "plain": up,
        }

    def fixed(**kw):
        """A torch with the weights_only fixes (>= 2.10 and the 2.6 API)."""
        api = types.SimpleNamespace(get_unsafe_globals_in_checkpoint=lambda f: [])
        return types.SimpleNamespace(__version__="2.10.0", serialization=api, **kw)

    monkeypatch.setitem(sys.modules, "torch", fixed(load=load))
    path = tmp_path / "ckpt.bin"
    path.write_bytes(b"x")
    sd = load_state_dict(path)
    assert calls == [(str(path), {"map_location": "cpu", "weights_only": True})]
    assert sorted(sd) == ["plain", "state_dict.half", "state_dict.up.weight"]
    np.testing.assert_array_equal(sd["state_dict.up.weight"], up)
    assert sd["state_dict.half"].dtype == np.float32
    assert not np.shares_memory(sd["plain"], up)

    import pickle

    def refuse(path, **kwargs):
        raise pickle.UnpicklingError("Weights only load failed")

    monkeypatch.setitem(sys.modules, "torch", fixed(load=refuse))
    with pytest.raises(ValueError, match=r"torch.load\(weights_only=True\) refuses"):
        load_state_dict(path)

    def old(path, map_location=None):
        return {}

    def old_load(path, **kwargs):
        return old(path, **kwargs)

    # A torch whose weights_only loading is bypassable never sees the file.
    seen = []
    for version in ("1.12", "2.5.1", "2.9.1"):
        stale = types.SimpleNamespace(load=lambda p, **k: seen.append(p), __version__=version)
        monkeypatch.setitem(sys.modules, "torch", stale)
        with pytest.raises(ImportError, match=r"CVE-20"):
            load_state_dict(path)
    assert seen == []
    monkeypatch.setitem(sys.modules, "torch", fixed(load=old_load))
    with pytest.raises(ImportError, match=r"needs torch >= 1.13"):
        load_state_dict(path)
    monkeypatch.setitem(sys.modules, "torch", fixed(load=lambda p, **k: [1, 2]))
    with pytest.raises(ValueError, match="holds a list, expected a dictionary of tensors"):
        load_state_dict(path)


# --------------------------------------------------------------------------
# Real torch, when installed
# --------------------------------------------------------------------------


def test_real_torch_modules(tmp_path, rng):
    torch = pytest.importorskip("torch")
    nn = torch.nn

    W_up, b_up, W_down, b_down = _planted(rng)
    seq = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Dropout(0.1), nn.Linear(5, 3)).double()
    with torch.no_grad():
        seq[0].weight.copy_(torch.from_numpy(W_up))
        seq[0].bias.copy_(torch.from_numpy(b_up))
        seq[3].weight.copy_(torch.from_numpy(W_down))
        seq[3].bias.copy_(torch.from_numpy(b_down))
    before = {k: v.clone() for k, v in seq.state_dict().items()}
    block = from_torch(seq)
    assert block.activation == "relu"
    np.testing.assert_array_equal(block.W_up, W_up)
    np.testing.assert_array_equal(block.b_down, b_down)
    assert not np.shares_memory(block.W_up, seq[0].weight.detach().numpy())
    block.W_up[...] = 0.0
    for k, v in seq.state_dict().items():
        assert torch.equal(v, before[k]), k
    block = from_torch(seq)
    r = find_absorbing_subset(**dataclasses.asdict(block))
    assert r.verdict == "absorbable" and r.subset.tolist() == [0, 1, 2]
    # The block computes what the module computes.
    x = rng.standard_normal((6, 3))
    with torch.no_grad():
        y = seq.eval()(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(y, np.maximum(x @ W_up.T + b_up, 0) @ W_down.T + b_down, atol=1e-12)

    # Activation modules.
    for module, name in [
        (nn.GELU(), "gelu"),
        (nn.GELU(approximate="tanh"), "gelu_tanh"),
        (nn.SiLU(), "silu"),
        (nn.LeakyReLU(0.2), "leaky_relu(0.2)"),
        (nn.PReLU(init=0.25), "leaky_relu(0.25)"),
        (nn.Tanh(), "tanh"),
        (nn.Sigmoid(), "sigmoid"),
        (nn.ELU(), "elu"),
        (nn.Softplus(), "softplus"),
        (nn.Hardswish(), "hardswish"),
        (nn.Mish(), "mish"),
        (nn.ReLU6(), "relu6"),
        (nn.Hardtanh(), "hardtanh"),
    ]:
        got = from_torch(nn.Sequential(nn.Linear(3, 4), module, nn.Linear(4, 3))).activation
        assert got == name, (module, got)
    with pytest.raises(ValueError, match=r"ELU\(alpha=2.0\)"):
        from_torch(nn.Sequential(nn.Linear(3, 4), nn.ELU(alpha=2.0), nn.Linear(4, 3)))
    with pytest.raises(ValueError, match="found 0"):
        from_torch(nn.Sequential(nn.Linear(3, 4), nn.Identity(), nn.Linear(4, 3)))

    # A LLaMA-style gated MLP.
    class LlamaMLP(nn.Module):
        def __init__(self, d, m):
            super().__init__()
            self.gate_proj = nn.Linear(d, m, bias=False)
            self.up_proj = nn.Linear(d, m, bias=False)
            self.down_proj = nn.Linear(m, d, bias=False)
            self.act_fn = nn.SiLU()

    mlp = LlamaMLP(4, 6)
    block = from_torch(mlp)
    assert block.activation == "swiglu" and block.b_up is None and block.b_down is None
    np.testing.assert_array_equal(block.W_gate, mlp.gate_proj.weight.detach().numpy())
    r = find_absorbing_subset(**dataclasses.asdict(block))
    assert r.verdict == "not_absorbable" and r.argument == "linearization"

    # bfloat16 on a module: widened exactly, with the tolerance warning.
    mlp_bf16 = LlamaMLP(4, 6).to(torch.bfloat16)
    with pytest.warns(skipsearch.PrecisionWarning, match="bfloat16"):
        block = from_torch(mlp_bf16)
    assert block.W_up.dtype == np.float32
    np.testing.assert_array_equal(block.W_up, mlp_bf16.up_proj.weight.detach().float().numpy())

    # load_state_dict on torch.save output (weights_only) and on a pickled object.
    path = tmp_path / "seq.pt"
    torch.save(seq.state_dict(), path)
    sd = load_state_dict(path)
    np.testing.assert_array_equal(sd["0.weight"], W_up)
    np.testing.assert_array_equal(sd["3.bias"], b_down)
    evil = tmp_path / "evil.pt"
    torch.save({"obj": _Pickled()}, evil)
    with pytest.raises(ValueError, match="weights_only=True"):
        load_state_dict(evil)
    # safetensors written by torch, bf16 included, match torch's float() exactly.
    from safetensors.torch import save_file

    st = tmp_path / "bf.safetensors"
    save_file({"w": mlp_bf16.up_proj.weight.detach().contiguous()}, str(st))
    np.testing.assert_array_equal(
        load_state_dict(st)["w"], mlp_bf16.up_proj.weight.float().detach().numpy()
    )
    if hasattr(torch, "float8_e4m3fn"):
        f8 = torch.linspace(-400, 400, 97).to(torch.float8_e4m3fn)
        f8b = torch.linspace(-5e4, 5e4, 97).to(torch.float8_e5m2)
        st8 = tmp_path / "f8.safetensors"
        save_file({"a": f8, "b": f8b}, str(st8))
        sd8 = load_state_dict(st8)
        np.testing.assert_array_equal(sd8["a"], f8.float().numpy())
        np.testing.assert_array_equal(sd8["b"], f8b.float().numpy())


class _Pickled:
    """Not a tensor: torch.load(weights_only=True) must refuse it."""


def test_activation_settings_that_are_not_numbers_are_named():
    rng = np.random.default_rng(0)
    cases = [
        ("LeakyReLU", "negative_slope", "abc"),
        ("LeakyReLU", "negative_slope", None),
        ("LeakyReLU", "negative_slope", float("nan")),
        ("ELU", "alpha", [1.0]),
        ("Hardtanh", "min_val", "low"),
    ]
    for name, attribute, value in cases:
        act = _act(name, **{attribute: value})
        seq = Sequential(Linear(rng.normal(size=(3, 2))), act, Linear(rng.normal(size=(2, 3))))
        with pytest.raises(ValueError, match=f"{name}.{attribute} must be"):
            skipsearch.from_torch(seq)
