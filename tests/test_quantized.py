"""Quantized checkpoints and modules: FP8 weights are
dequantized with their scales, as each format defines them, and every other
quantized format is refused by name. Never decided on codes.

The checkpoints are written byte by byte (numpy has no float8, and
safetensors.numpy cannot write F8_E4M3), with FP8 codes chosen so that the
block is absorbable only once the scales are applied."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
import skipsearch
from skipsearch import find_absorbing_subset
from skipsearch.io.checkpoints import NARROW_TOL, CheckpointError, _float8
from skipsearch.io.quantization import config_quantization, dequantize, scale_layout
from skipsearch.scan import describe_checkpoint, scan

D, M = 4, 6
E4M3 = _float8(np.arange(256, dtype=np.uint8), "F8_E4M3").astype(np.float64)
TOL = NARROW_TOL["F8_E4M3"]


def e4m3_bytes(values) -> bytes:
    """FP8 E4M3FN codes of values that float8 represents exactly."""
    values = np.asarray(values, dtype=np.float64)
    codes = np.empty(values.shape, dtype=np.uint8)
    for index, v in np.ndenumerate(values):
        hits = np.flatnonzero(v == E4M3)
        assert hits.size, f"{v} is not an E4M3 value"
        codes[index] = hits[0]  # +0 before -0
    return codes.tobytes()


def write_safetensors(path, tensors: dict) -> None:
    """tensors: name -> ndarray (F32, F64, I8) or ("F8_E4M3", values) or
    ("F8_E8M0", powers of two)."""
    header, blobs, offset = {}, [], 0
    for name, value in tensors.items():
        if isinstance(value, tuple):
            dtype, array = value
            if dtype == "F8_E8M0":
                exponent = np.log2(np.asarray(array, dtype=np.float64)) + 127
                assert np.all(exponent == np.round(exponent)) and np.all(exponent >= 0)
                raw = exponent.astype(np.uint8).tobytes()
            else:
                raw = e4m3_bytes(array)
            shape = np.shape(array)
        else:
            array = np.ascontiguousarray(value)
            dtype = {"float32": "F32", "float64": "F64", "int8": "I8", "int32": "I32"}[
                str(array.dtype)
            ]
            raw, shape = array.astype(array.dtype.newbyteorder("<")).tobytes(), array.shape
        header[name] = {
            "dtype": dtype,
            "shape": list(shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def random_codes(rng, shape):
    """Random finite E4M3 values of moderate size (|v| in [0.25, 16])."""
    finite = E4M3[(np.abs(E4M3) >= 0.25) & (np.abs(E4M3) <= 16)]
    return rng.choice(finite, size=shape)


def expand(scale, shape, block):
    """Reference block-wise broadcast, entry by entry."""
    out = np.empty(shape)
    for i in range(shape[0]):
        for j in range(shape[1]):
            out[i, j] = scale[i // block[0], j // block[1]]
    return out


def planted_layers(rng, scheme):
    """Two BERT FFN layers as (codes, scale) pairs per projection, with the
    dequantized weights: layer 0 random, layer 1 with flip set S = {0, 1, 2, 3}
    exactly after dequantization (W_down[:, S] W_up[S] = -I), but not on the
    codes alone (their product is -8 I).

    scheme: "block" (2 x 2 blocks), "channel" or "tensor"."""
    layers = []
    for planted in (False, True):
        up, down = random_codes(rng, (M, D)), random_codes(rng, (D, M))
        if scheme == "block":
            s_up = rng.choice([0.5, 0.25, 2.0, 0.125], size=(M // 2, D // 2))
            s_down = rng.choice([0.5, 0.25, 2.0, 0.125], size=(D // 2, M // 2))
        elif scheme == "channel":
            s_up = rng.choice([0.5, 0.25, 2.0], size=(M, 1))
            s_down = rng.choice([0.5, 0.25, 2.0], size=(D, 1))
        else:
            s_up, s_down = np.array(0.25), np.array([0.5])
        if planted:
            up[:D] = 2.0 * np.eye(D)  # codes 2 I
            down[:, :D] = -4.0 * np.eye(D)  # codes -4 I
            if scheme == "block":
                s_up[:2, :] = 0.25  # rows 0-3 of W_up: 0.5 I
                s_down[:, :2] = 0.5  # cols 0-3 of W_down: -2 I
            elif scheme == "channel":
                s_up[:D] = 0.25
                s_down[:] = 0.5
        layers.append(
            dict(
                up=up,
                down=down,
                s_up=s_up.astype(np.float32),
                s_down=s_down.astype(np.float32),
                W_up=reference(up, s_up, scheme),
                W_down=reference(down, s_down, scheme),
            )
        )
    return layers


def reference(codes, scale, scheme):
    """The dequantized weight, computed entry by entry in float64."""
    if scheme == "block":
        return codes * expand(scale, codes.shape, (2, 2))
    if scheme == "channel":
        return codes * scale.reshape(-1, 1)
    return codes * float(scale.reshape(-1)[0])


def write_fp8_bert(directory, layers, scale_name, quantization_config=None, extra=None):
    directory.mkdir(parents=True, exist_ok=True)
    tensors = {}
    for i, layer in enumerate(layers):
        base = f"bert.encoder.layer.{i}."
        tensors[base + "intermediate.dense.weight"] = ("F8_E4M3", layer["up"])
        tensors[base + "output.dense.weight"] = ("F8_E4M3", layer["down"])
        if scale_name is not None:
            tensors[base + "intermediate.dense." + scale_name] = layer["s_up"]
            tensors[base + "output.dense." + scale_name] = layer["s_down"]
    tensors.update(extra or {})
    write_safetensors(directory / "model.safetensors", tensors)
    config = dict(
        model_type="bert",
        hidden_act="relu",
        hidden_size=D,
        intermediate_size=M,
        num_hidden_layers=len(layers),
    )
    if quantization_config is not None:
        config["quantization_config"] = quantization_config
    (directory / "config.json").write_text(json.dumps(config))
    return directory


DEEPSEEK = {
    "quant_method": "fp8",
    "fmt": "e4m3",
    "activation_scheme": "dynamic",
    "weight_block_size": [2, 2],
}


def compressed_tensors(strategy):
    return {
        "quant_method": "compressed-tensors",
        "format": "float-quantized",
        "config_groups": {
            "group_0": {
                "targets": ["Linear"],
                "weights": {
                    "num_bits": 8,
                    "type": "float",
                    "strategy": strategy,
                    "symmetric": True,
                },
            }
        },
    }


@pytest.mark.parametrize(
    "scheme, scale_name, config, described",
    [
        ("block", "weight_scale_inv", DEEPSEEK, "F8_E4M3 x weight_scale_inv, blocks of 2 x 2"),
        (
            "channel",
            "weight_scale",
            compressed_tensors("channel"),
            "F8_E4M3 x weight_scale, per output channel",
        ),
        (
            "tensor",
            "weight_scale",
            compressed_tensors("tensor"),
            "F8_E4M3 x weight_scale, per tensor",
        ),
        (
            "channel",
            "weight_scale",
            {"quant_method": "fbgemm_fp8"},
            "F8_E4M3 x weight_scale, per output channel",
        ),
        # The scales alone, with no quantization_config, are applied too.
        ("tensor", "weight_scale", None, "F8_E4M3 x weight_scale, per tensor"),
    ],
    ids=["deepseek-block", "ct-channel", "ct-tensor", "fbgemm", "no-config"],
)
def test_fp8_scales_are_applied(tmp_path, scheme, scale_name, config, described):
    rng = np.random.default_rng(5)
    layers = planted_layers(rng, scheme)
    path = write_fp8_bert(tmp_path / "fp8", layers, scale_name, config)
    info = describe_checkpoint(path)
    assert (info.dtype, info.quantization) == ("F8_E4M3", described)
    reports = scan(path, progress=False)
    generic, planted = reports
    # Layer 1: absorbable by S = {0, 1, 2, 3} once dequantized ...
    assert planted.verdict == "absorbable", planted.result
    assert planted.result.subset.tolist() == [0, 1, 2, 3]
    assert planted.result.tolerance == pytest.approx(TOL)
    # ... which its codes are not: W_down[:, S] W_up[S] = -8 I there.
    on_codes = find_absorbing_subset(layers[1]["up"], layers[1]["down"], tol=TOL)
    assert on_codes.verdict != "absorbable"
    # Layer 0: the verdict is exactly that of the dequantized float64 weights.
    want = find_absorbing_subset(layers[0]["W_up"], layers[0]["W_down"], tol=TOL)
    assert (generic.verdict, generic.reason) == (want.verdict, want.reason)
    assert generic.relaxation_distance == want.relaxation_distance
    np.testing.assert_array_equal(planted.result.block.W_down, layers[1]["W_down"])


def test_deepseek_default_block_is_128(tmp_path):
    """Weights wider than 128 with (ceil(out/128), ceil(in/128)) scales and
    no weight_block_size: blocks of 128 x 128."""
    rng = np.random.default_rng(11)
    d, m = 16, 200  # m <= d^2: the Gram matrix has full rank, no branch and bound
    up, down = random_codes(rng, (m, d)), random_codes(rng, (d, m))
    s_up = np.array([[0.5], [2.0]], dtype=np.float32)  # (ceil(200/128), ceil(16/128))
    s_down = np.array([[0.25, 4.0]], dtype=np.float32)  # (1, 2)
    directory = tmp_path / "ds"
    directory.mkdir()
    write_safetensors(
        directory / "model.safetensors",
        {
            "model.layers.0.mlp.fc1.weight": ("F8_E4M3", up),
            "model.layers.0.mlp.fc1.weight_scale_inv": s_up,
            "model.layers.0.mlp.fc2.weight": ("F8_E4M3", down),
            "model.layers.0.mlp.fc2.weight_scale_inv": s_down,
        },
    )
    (directory / "config.json").write_text(
        json.dumps({"quantization_config": {"quant_method": "fp8"}})
    )
    layout = skipsearch.Layout(
        up="model.layers.{i}.mlp.fc1.weight",
        down="model.layers.{i}.mlp.fc2.weight",
        activation="relu",
    )
    (report,) = scan(directory, layout=layout, progress=False, time_limit=60)
    W_up = up * np.where(np.arange(m)[:, None] < 128, 0.5, 2.0)
    W_down = down * np.where(np.arange(m)[None, :] < 128, 0.25, 4.0)
    want = find_absorbing_subset(W_up, W_down, tol=TOL, time_limit=60)
    assert report.verdict == want.verdict and report.relaxation_distance == want.relaxation_distance
    assert describe_checkpoint(directory, layout=layout).quantization == (
        "F8_E4M3 x weight_scale_inv, blocks of 128 x 128"
    )


# -- refusals --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "config, named",
    [
        ({"quant_method": "gptq", "bits": 4, "group_size": 128}, "GPTQ 4-bit"),
        ({"quant_method": "awq", "bits": 4, "version": "gemm"}, "AWQ 4-bit"),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "bitsandbytes 4-bit"),
        ({"quant_method": "bitsandbytes", "load_in_8bit": True}, "bitsandbytes 8-bit"),
        ({"quant_method": "mxfp4"}, "MXFP4"),
        ({"quant_method": "someday"}, "'someday'"),
        ({"load_in_4bit": True}, "no quant_method"),
    ],
)
def test_other_quantization_methods_are_refused(tmp_path, config, named):
    rng = np.random.default_rng(0)
    path = write_fp8_bert(tmp_path / "q", planted_layers(rng, "tensor"), "weight_scale", config)
    with pytest.raises(CheckpointError, match=named):
        scan(path, progress=False)


def test_compressed_tensors_integer_formats_are_refused(tmp_path):
    config = compressed_tensors("group")
    config["format"] = "pack-quantized"
    config["config_groups"]["group_0"]["weights"].update(num_bits=4, type="int")
    rng = np.random.default_rng(0)
    path = write_fp8_bert(tmp_path / "ct", planted_layers(rng, "tensor"), "weight_scale", config)
    with pytest.raises(
        CheckpointError, match=r"compressed-tensors, config group 'group_0': 4-bit int"
    ):
        scan(path, progress=False)


@pytest.mark.parametrize(
    "keys, named",
    [
        # GPTQ/AWQ: no .weight at all, packed int32 qweight beside qzeros and scales
        (
            {
                "qweight": np.zeros((1, 6), np.int32),
                "qzeros": np.zeros((1, 1), np.int32),
                "scales": np.ones((1, 6), np.float32),
            },
            "GPTQ/AWQ",
        ),
        ({"weight.absmax": np.ones(3, np.float32)}, "bitsandbytes"),
        ({"SCB": np.ones(6, np.float32)}, "bitsandbytes"),
        ({"weight_packed": np.zeros((6, 1), np.int32)}, "compressed-tensors packed"),
    ],
)
def test_quantized_tensor_names_are_refused_without_a_config(tmp_path, keys, named):
    rng = np.random.default_rng(0)
    extra = {f"bert.encoder.layer.0.intermediate.dense.{k}": v for k, v in keys.items()}
    path = write_fp8_bert(
        tmp_path / "q", planted_layers(rng, "tensor"), "weight_scale", extra=extra
    )
    with pytest.raises(CheckpointError, match=named):
        scan(path, progress=False)


def test_fp8_codes_without_scale_are_refused_when_the_config_says_quantized(tmp_path):
    rng = np.random.default_rng(0)
    path = write_fp8_bert(tmp_path / "q", planted_layers(rng, "block"), None, DEEPSEEK)
    with pytest.raises(
        CheckpointError,
        match=r"declares quantization \(fp8\).*has no weight_scale_inv "
        r"or weight_scale.*never decides on codes",
    ):
        scan(path, progress=False)


def test_scale_that_does_not_fit_is_refused(tmp_path):
    rng = np.random.default_rng(0)
    layers = planted_layers(rng, "tensor")
    layers[0]["s_up"] = np.ones(
        (2, 2), np.float32
    )  # neither tensor, channel nor 128-blocks of (6, 4)
    path = write_fp8_bert(tmp_path / "q", layers, "weight_scale_inv", {"quant_method": "fp8"})
    with pytest.raises(
        CheckpointError, match=r"scale of shape \(2, 2\) does not fit the weight of shape \(6, 4\)"
    ):
        scan(path, progress=False)


def test_integer_weight_with_scale_is_refused(tmp_path):
    rng = np.random.default_rng(0)
    path = write_fp8_bert(tmp_path / "q", planted_layers(rng, "tensor"), "weight_scale")
    raw = json.loads((path / "config.json").read_text())
    tensors = {
        "bert.encoder.layer.0.intermediate.dense.weight": np.ones((M, D), np.int8),
        "bert.encoder.layer.0.intermediate.dense.weight_scale": np.ones((M, 1), np.float32),
        "bert.encoder.layer.0.output.dense.weight": np.ones((D, M), np.float32),
    }
    write_safetensors(path / "model.safetensors", tensors)
    (path / "config.json").write_text(json.dumps({**raw, "num_hidden_layers": 1}))
    with pytest.raises(
        CheckpointError, match=r"intermediate.dense.weight is stored as I8 with .*weight_scale"
    ):
        scan(path, progress=False)


def test_nonzero_zero_point_is_refused(tmp_path):
    rng = np.random.default_rng(0)
    extra = {"bert.encoder.layer.0.output.dense.weight_zero_point": np.ones((D, 1), np.float32)}
    path = write_fp8_bert(
        tmp_path / "q", planted_layers(rng, "channel"), "weight_scale", extra=extra
    )
    with pytest.raises(CheckpointError, match=r"nonzero .*weight_zero_point"):
        scan(path, progress=False)


# -- the helpers -----------------------------------------------------------------------------


def test_dequantize_layouts():
    rng = np.random.default_rng(2)
    q = rng.standard_normal((300, 200)).astype(np.float32)
    blocks = rng.uniform(0.5, 2.0, size=(3, 2)).astype(np.float32)
    np.testing.assert_array_equal(
        dequantize(q, blocks, None, "w"), q * expand(blocks, q.shape, (128, 128))
    )
    np.testing.assert_array_equal(dequantize(q, np.float32(0.5), None, "w"), q * 0.5)
    channel = rng.uniform(0.5, 2.0, size=(300, 1)).astype(np.float32)
    np.testing.assert_array_equal(dequantize(q, channel, None, "w"), q.astype(np.float64) * channel)
    np.testing.assert_array_equal(
        dequantize(q, channel[:, 0], None, "w"), q.astype(np.float64) * channel
    )
    small = rng.uniform(0.5, 2.0, size=(10, 7)).astype(np.float32)
    np.testing.assert_array_equal(
        dequantize(q, small, (32, 32), "w"), q * expand(small, q.shape, (32, 32))
    )
    assert dequantize(q, blocks, None, "w").dtype == np.float64
    assert scale_layout((300, 200), (3, 2), None, "w") == ("block", (128, 128))
    with pytest.raises(ValueError, match=r"w: scale of shape \(3, 3\) does not fit"):
        dequantize(q, np.ones((3, 3)), None, "w")
    with pytest.raises(ValueError, match="NaN or Inf"):
        dequantize(q, np.full((3, 2), np.inf), None, "w")


def test_config_quantization():
    assert config_quantization({}, "c") is None
    assert config_quantization({"quantization_config": DEEPSEEK}, "c").block == (2, 2)
    assert config_quantization({"quantization_config": {"quant_method": "fp8"}}, "c").block is None
    block = compressed_tensors("block")
    block["config_groups"]["group_0"]["weights"]["block_structure"] = [64, 32]
    assert config_quantization({"quantization_config": block}, "c").block == (64, 32)
    with pytest.raises(ValueError, match="c: the checkpoint is quantized with GPTQ"):
        config_quantization({"quantization_config": {"quant_method": "gptq"}}, "c")


# -- from_torch ------------------------------------------------------------------------------


class FakeTensor:
    def __init__(self, array, dtype=None):
        self.array = np.asarray(array)
        self.dtype = dtype or f"torch.{self.array.dtype}"

    def detach(self):
        return self

    def cpu(self):
        return self

    def float(self):
        return FakeTensor(self.array.astype(np.float32))

    def numpy(self):
        if "float8" in self.dtype or "bfloat16" in self.dtype:
            raise TypeError(f"Got unsupported ScalarType {self.dtype}")
        return self.array


def _module(cls, **attrs):
    obj = type(cls, (), {})()
    for k, v in attrs.items():
        setattr(obj, k, v)
    return obj


def _fp8_linear(codes, scale, scale_name, block_size=None):
    attrs = {
        "weight": FakeTensor(codes.astype(np.float32), "torch.float8_e4m3fn"),
        "bias": None,
        scale_name: FakeTensor(scale),
    }
    if block_size is not None:
        attrs["block_size"] = block_size
    out, inp = codes.shape
    return _module("FP8Linear", in_features=inp, out_features=out, **attrs)


@pytest.mark.parametrize(
    "scheme, scale_name, block_size",
    [
        ("block", "weight_scale_inv", (2, 2)),
        ("channel", "weight_scale", None),
        ("tensor", "weight_scale", None),
    ],
)
def test_from_torch_dequantizes_fp8(scheme, scale_name, block_size):
    from skipsearch.torch_adapter import from_torch

    layer = planted_layers(np.random.default_rng(8), scheme)[1]
    seq = [
        _fp8_linear(layer["up"], layer["s_up"], scale_name, block_size),
        _module("ReLU"),
        _fp8_linear(layer["down"], layer["s_down"], scale_name, block_size),
    ]
    with pytest.warns(
        skipsearch.PrecisionWarning,
        match=r"float8_e4m3fn weights were dequantized with their scales to "
        r"float64.*tol=0\.354",
    ):
        block = from_torch(seq)
    np.testing.assert_array_equal(block.W_up, layer["W_up"])
    np.testing.assert_array_equal(block.W_down, layer["W_down"])
    r = find_absorbing_subset(block.W_up, block.W_down, activation=block.activation, tol=TOL)
    assert (r.verdict, r.subset.tolist()) == ("absorbable", [0, 1, 2, 3])


def test_from_torch_infers_128_blocks():
    from skipsearch._torch.tensors import Widened as _Widened
    from skipsearch._torch.tensors import read_linear as _linear

    codes = random_codes(np.random.default_rng(1), (130, 4))
    scale = np.array([[0.5], [2.0]], dtype=np.float32)
    W, _ = _linear(_fp8_linear(codes, scale, "weight_scale_inv"), "fc", _Widened())
    np.testing.assert_array_equal(W, codes * np.where(np.arange(130)[:, None] < 128, 0.5, 2.0))


@pytest.mark.parametrize(
    "layer, named",
    [
        (
            _module(
                "QuantLinear",
                qweight=FakeTensor(np.zeros((1, 4), np.int32)),
                qzeros=None,
                scales=None,
            ),
            "GPTQ",
        ),
        (_module("WQLinear_GEMM", qweight=FakeTensor(np.zeros((1, 4), np.int32))), "AWQ"),
        (
            _module(
                "Linear4bit",
                weight=FakeTensor(np.zeros((8, 1), np.uint8)),
                in_features=4,
                out_features=4,
            ),
            "bitsandbytes",
        ),
        (
            _module(
                "Linear",
                weight=_module("Params4bit", quant_state=object()),
                in_features=4,
                out_features=4,
            ),
            "bitsandbytes",
        ),
        (
            _module("CompressedLinear", weight_packed=FakeTensor(np.zeros((4, 1), np.int32))),
            "compressed-tensors packed",
        ),
        (
            _module(
                "Linear",
                weight=FakeTensor(np.ones((4, 4), np.int8)),
                weight_scale=FakeTensor(np.ones((4, 1))),
                in_features=4,
                out_features=4,
            ),
            "weight_scale beside a int8 weight",
        ),
        (
            _module(
                "Linear",
                weight=FakeTensor(np.ones((4, 4), np.float32), "torch.bfloat16"),
                weight_scale=FakeTensor(np.ones((4, 1))),
                in_features=4,
                out_features=4,
            ),
            "weight_scale beside a bfloat16 weight",
        ),
        (
            _module(
                "Linear",
                weight=FakeTensor(np.ones((4, 4)), "torch.float8_e4m3fn"),
                weight_scale=FakeTensor(np.ones((4, 1))),
                weight_zero_point=FakeTensor(np.ones((4, 1))),
                in_features=4,
                out_features=4,
            ),
            "nonzero weight_zero_point",
        ),
        (
            _module(
                "Linear", weight=_module("AffineQuantizedTensor"), in_features=4, out_features=4
            ),
            "torchao",
        ),
    ],
)
def test_from_torch_refuses_other_quantized_layers(layer, named):
    from skipsearch.torch_adapter import from_torch

    plain = _module(
        "Linear", weight=FakeTensor(np.eye(4)), bias=None, in_features=4, out_features=4
    )
    with pytest.raises(ValueError, match=named):
        from_torch([layer, _module("ReLU"), plain])


def test_from_torch_fp8_without_scale_is_widened_as_before():
    from skipsearch.torch_adapter import from_torch

    codes = random_codes(np.random.default_rng(3), (4, 4))
    up = _module(
        "Linear",
        weight=FakeTensor(codes.astype(np.float32), "torch.float8_e4m3fn"),
        bias=None,
        in_features=4,
        out_features=4,
    )
    down = _module(
        "Linear",
        weight=FakeTensor(np.eye(4)),
        bias=FakeTensor(np.zeros(4, np.float32), "torch.bfloat16"),
        in_features=4,
        out_features=4,
    )
    with pytest.warns(
        skipsearch.PrecisionWarning,
        match=r"float8_e4m3fn weights were widened to float32.*tol=0\.354",
    ) as record:
        block = from_torch([up, _module("ReLU"), down])
    # The bfloat16 bias is not in the flip condition and is not mentioned.
    assert all("bfloat16" not in str(w.message) for w in record)
    np.testing.assert_array_equal(block.W_up, codes)
