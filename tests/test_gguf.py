"""GGUF checkpoints (llama.cpp): the reader, the gguf families and the scan.

Files are written with the gguf package's own writer (gguf.GGUFWriter) and
quantized with gguf.quants.quantize; tensor names and metadata keys are
those of gguf.constants (TENSOR_NAMES, MODEL_TENSORS, Keys.LLM), and each
architecture's activation is that of its graph in llama.cpp
(ggml-org/llama.cpp src/models/<arch>.cpp, build_ffn in src/llama-graph.cpp).
"""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
import skipsearch
from skipsearch.io.checkpoints import (
    FLOAT_DTYPES,
    NARROW_TOL,
    CheckpointError,
    open_checkpoint,
    stored_tolerance,
)
from skipsearch.scan import describe_checkpoint

gguf = pytest.importorskip("gguf")
Q = gguf.GGMLQuantizationType


def planted(rng, d, m):
    """W_up (m, d), W_down (d, m) with W_down[:, :d] = -inv(W_up[:d]): the flip set {0..d-1}
    absorbs the skip for c = 1 (GELU and its tanh form)."""
    up = rng.standard_normal((m, d))
    down = rng.standard_normal((d, m))
    down[:, :d] = -np.linalg.inv(up[:d])
    return up, down


def write(path, arch, tensors, meta=None, qtypes=None):
    """A GGUF file of ``arch`` with ``tensors`` (F32 unless ``qtypes`` names a type)."""
    w = gguf.GGUFWriter(str(path), arch)
    for key, value in (meta or {}).items():
        if isinstance(value, bool):
            w.add_bool(key, value)
        elif isinstance(value, int):
            w.add_uint32(key, value)
        elif isinstance(value, float):
            w.add_float32(key, value)
        else:
            w.add_string(key, value)
    for name, array in tensors.items():
        array = np.ascontiguousarray(array, dtype=np.float32)
        qtype = (qtypes or {}).get(name)
        if qtype is None:
            w.add_tensor(name, array)
        else:
            w.add_tensor(name, gguf.quants.quantize(array, qtype), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def sizes(arch, d, m, layers, **more):
    return {
        f"{arch}.embedding_length": d,
        f"{arch}.feed_forward_length": m,
        f"{arch}.block_count": layers,
        **{f"{arch}.{k}": v for k, v in more.items()},
    }


def gpt2_file(path, rng, d=4, m=8):
    """GPT-2 in GGUF (llama.cpp src/models/gpt2.cpp: ffn_up/ffn_down with biases,
    LLM_FFN_GELU, LLM_FFN_SEQ): layer 0 planted, layer 1 random."""
    t = {
        "token_embd.weight": rng.standard_normal((11, d)),
        "position_embd.weight": rng.standard_normal((7, d)),
        "output_norm.weight": np.ones(d),
    }
    for i, (up, down) in enumerate(
        [planted(rng, d, m), (rng.standard_normal((m, d)), rng.standard_normal((d, m)))]
    ):
        t[f"blk.{i}.attn_norm.weight"] = np.ones(d)
        t[f"blk.{i}.attn_qkv.weight"] = rng.standard_normal((3 * d, d))
        t[f"blk.{i}.ffn_norm.weight"] = np.ones(d)
        t[f"blk.{i}.ffn_up.weight"] = up
        t[f"blk.{i}.ffn_up.bias"] = np.zeros(m)
        t[f"blk.{i}.ffn_down.weight"] = down
        t[f"blk.{i}.ffn_down.bias"] = rng.standard_normal(d) * 0.1
    return write(path, "gpt2", t, sizes("gpt2", d, m, 2))


def test_gpt2_gguf_planted_block_is_absorbable(tmp_path):
    rng = np.random.default_rng(0)
    path = gpt2_file(tmp_path / "tiny-gpt2.F32.gguf", rng)
    reports = skipsearch.scan(path)
    assert [(r.block, r.verdict) for r in reports] == [
        ("blk.0", "absorbable"),
        ("blk.1", "not_absorbable"),
    ]
    assert {(r.d, r.m, r.activation, r.family, r.kind) for r in reports} == {
        (4, 8, "gelu_tanh", "gguf-gpt2", "mlp")
    }
    assert {r.model for r in reports} == {"tiny-gpt2.F32"}
    assert list(reports[0].result.subset) == [0, 1, 2, 3]
    # float32 storage: the float32 default tolerance, sqrt(eps).
    assert reports[0].result.tolerance == pytest.approx(math.sqrt(np.finfo(np.float32).eps))
    info = describe_checkpoint(path)
    assert (info.model_type, info.dtype, info.num_layers) == ("gguf-gpt2", "F32", 2)


def test_gguf_config_is_the_metadata(tmp_path):
    rng = np.random.default_rng(1)
    path = gpt2_file(tmp_path / "m.gguf", rng)
    ckpt = open_checkpoint(path)
    assert type(ckpt).__name__ == "GGUFCheckpoint"
    assert ckpt.config["model_type"] == "gguf-gpt2"
    assert ckpt.config["general.architecture"] == "gpt2"
    assert (
        ckpt.config["gpt2.embedding_length"],
        ckpt.config["gpt2.feed_forward_length"],
        ckpt.config["gpt2.block_count"],
    ) == (4, 8, 2)
    assert ckpt.config_path == path.resolve() and ckpt.files == [path.resolve()]
    # A directory holding one GGUF file is that checkpoint.
    assert open_checkpoint(tmp_path).keys() == ckpt.keys()


def q4_k_blocks(rng, rows, cols):
    """Raw Q4_K data (gguf.quants cannot quantize to it): per block of 256 values, f16
    d and dmin, 12 bytes of 6-bit scales and mins, 128 bytes of 4-bit codes."""
    blocks = rng.integers(0, 256, size=(rows, cols // 256, 144), dtype=np.uint8)
    blocks[:, :, 0:2] = np.frombuffer(np.float16(0.01).tobytes(), np.uint8)
    blocks[:, :, 2:4] = np.frombuffer(np.float16(0.002).tobytes(), np.uint8)
    return blocks.reshape(rows, -1)


def llama_file(path, rng, d, m, qtype, layers=2):
    """Llama in GGUF (llama.cpp src/models/llama.cpp: ffn_gate/ffn_up/ffn_down,
    LLM_FFN_SILU, LLM_FFN_PAR), the projections stored as ``qtype``; returns the path and
    the dequantized values gguf itself gives for each projection."""
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(layers)
    w.add_embedding_length(d)
    w.add_feed_forward_length(m)
    w.add_tensor("token_embd.weight", rng.standard_normal((16, d)).astype(np.float32))
    values = {}
    for i in range(layers):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(d, np.float32))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(d, np.float32))
        for name, (rows, cols) in (("ffn_gate", (m, d)), ("ffn_up", (m, d)), ("ffn_down", (d, m))):
            key = f"blk.{i}.{name}.weight"
            if qtype == Q.Q4_K:
                data = q4_k_blocks(rng, rows, cols)
            else:
                data = gguf.quants.quantize(
                    rng.standard_normal((rows, cols)).astype(np.float32), qtype
                )
            w.add_tensor(key, data, raw_dtype=qtype)
            values[key] = gguf.quants.dequantize(data, qtype)
            assert values[key].shape == (rows, cols)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path, values


@pytest.mark.parametrize("qtype", [Q.Q8_0, Q.Q4_0, Q.Q4_K], ids=lambda q: q.name)
def test_llama_gguf_quantized_is_read_dequantized(tmp_path, qtype):
    rng = np.random.default_rng(2)
    d, m = (256, 512) if qtype == Q.Q4_K else (32, 64)  # whole blocks per row
    path, values = llama_file(tmp_path / "llama.gguf", rng, d, m, qtype)
    ckpt = open_checkpoint(path)
    for key in ("blk.0.ffn_up.weight", "blk.0.ffn_gate.weight", "blk.1.ffn_down.weight"):
        assert ckpt.dtype(key) == qtype.name
        # numpy's (out, in), row-major, dequantized by gguf itself.
        got = ckpt.get(key)
        assert got.shape == values[key].shape == ckpt.shape(key)
        assert got.dtype == np.float32 and np.array_equal(got, values[key])
    reports = skipsearch.scan(path)
    assert [(r.block, r.kind, r.d, r.m, r.activation) for r in reports] == [
        ("blk.0", "mlp", d, m, "swiglu"),
        ("blk.1", "mlp", d, m, "swiglu"),
    ]
    assert {r.verdict for r in reports} == {"not_absorbable"}
    assert {r.family for r in reports} == {"gguf-llama"}


def test_gguf_quantized_planted_block_keeps_its_verdict(tmp_path):
    """A planted GPT-2 block stored as Q8_0: the dequantized weights are the planted ones
    to within Q8_0's rounding, which the Q8_0 tolerance (2**-3.5) accepts."""
    rng = np.random.default_rng(9)
    d, m = 32, 64
    w_up, w_down = planted(rng, d, m)
    # A well-conditioned W_up[:d] (orthogonal), so that W_down[:, :d] = -W_up[:d]^T is
    # of the same scale as the rest and Q8_0's rounding stays small against the skip.
    w_up[:d] = np.linalg.qr(rng.standard_normal((d, d)))[0]
    w_down[:, :d] = -w_up[:d].T
    t = {}
    for i, (up, down) in enumerate(
        [(w_up, w_down), (rng.standard_normal((m, d)), rng.standard_normal((d, m)))]
    ):
        t[f"blk.{i}.ffn_up.weight"] = up
        t[f"blk.{i}.ffn_down.weight"] = down
    q = {k: Q.Q8_0 for k in t}
    path = write(tmp_path / "g.gguf", "gpt2", t, sizes("gpt2", d, m, 2), q)
    reports = skipsearch.scan(path)
    assert [(r.block, r.verdict) for r in reports] == [
        ("blk.0", "absorbable"),
        ("blk.1", "not_absorbable"),
    ]
    assert list(reports[0].result.subset) == list(range(d))
    assert {r.result.tolerance for r in reports} == {2.0**-3.5}


def test_gguf_tolerances_follow_the_code_bits():
    assert NARROW_TOL["Q8_0"] == 2.0**-3.5
    assert NARROW_TOL["Q6_K"] == 2.0**-2.5
    assert NARROW_TOL["Q4_K"] == NARROW_TOL["IQ4_XS"] == 2.0**-1.5
    assert NARROW_TOL["Q2_K"] == NARROW_TOL["MXFP4"] == 2.0**-0.5
    assert stored_tolerance({"F32", "Q8_0", "Q4_K"}) == 2.0**-1.5
    # Every block-quantized type gguf dequantizes is a weight dtype with a tolerance.
    for name in ("Q4_0", "Q5_K", "IQ2_XXS", "IQ3_S", "TQ2_0", "MXFP4"):
        assert name in FLOAT_DTYPES and name in NARROW_TOL
    assert "I32" not in FLOAT_DTYPES


def test_qwen2moe_gguf_experts_and_shared_expert(tmp_path):
    """qwen2moe (llama.cpp src/models/qwen2moe.cpp): 3-D ffn_{gate,up,down}_exps
    {n_embd, n_ff_exp, n_expert} (numpy (E, out, in)) and a shared expert ffn_*_shexp."""
    rng = np.random.default_rng(3)
    d, m_exp, m_sh, experts = 4, 6, 10, 3
    t = {"token_embd.weight": rng.standard_normal((9, d))}
    for i in range(2):
        t[f"blk.{i}.ffn_norm.weight"] = np.ones(d)
        t[f"blk.{i}.ffn_gate_inp.weight"] = rng.standard_normal((experts, d))
        t[f"blk.{i}.ffn_gate_exps.weight"] = rng.standard_normal((experts, m_exp, d))
        t[f"blk.{i}.ffn_up_exps.weight"] = rng.standard_normal((experts, m_exp, d))
        t[f"blk.{i}.ffn_down_exps.weight"] = rng.standard_normal((experts, d, m_exp))
        t[f"blk.{i}.ffn_gate_inp_shexp.weight"] = rng.standard_normal(d)
        t[f"blk.{i}.ffn_gate_shexp.weight"] = rng.standard_normal((m_sh, d))
        t[f"blk.{i}.ffn_up_shexp.weight"] = rng.standard_normal((m_sh, d))
        t[f"blk.{i}.ffn_down_shexp.weight"] = rng.standard_normal((d, m_sh))
    meta = sizes(
        "qwen2moe",
        d,
        m_exp * 2,
        2,
        expert_count=experts,
        expert_used_count=2,
        expert_feed_forward_length=m_exp,
        expert_shared_feed_forward_length=m_sh,
    )
    path = write(tmp_path / "moe.gguf", "qwen2moe", t, meta)
    ckpt = open_checkpoint(path)
    assert ckpt.shape("blk.0.ffn_up_exps.weight") == (experts, m_exp, d)
    assert np.array_equal(
        ckpt.get("blk.1.ffn_down_exps.weight", index=2),
        t["blk.1.ffn_down_exps.weight"][2].astype(np.float32),
    )
    reports = skipsearch.scan(path)
    rows = sorted((r.layer, r.kind, r.expert, r.m) for r in reports)
    assert rows == sorted(
        [(i, "expert", e, m_exp) for i in range(2) for e in range(experts)]
        + [(i, "shared_expert", None, m_sh) for i in range(2)]
    )
    assert {(r.d, r.activation, r.verdict) for r in reports} == {(d, "swiglu", "not_absorbable")}
    assert all("sigmoid" in r.note for r in reports if r.kind == "shared_expert")


def granite_tensors(rng, d, m, layers=2, bias=False):
    """Dense granite layers (llama.cpp src/models/granite.cpp: ffn_gate, ffn_up
    {n_embd, n_ff}, ffn_down {n_ff, n_embd}, optional biases)."""
    t = {"token_embd.weight": rng.standard_normal((9, d)), "output_norm.weight": np.ones(d)}
    for i in range(layers):
        t[f"blk.{i}.attn_norm.weight"] = np.ones(d)
        t[f"blk.{i}.ffn_norm.weight"] = np.ones(d)
        for name, shape in (("gate", (m, d)), ("up", (m, d)), ("down", (d, m))):
            t[f"blk.{i}.ffn_{name}.weight"] = rng.standard_normal(shape)
            if bias:
                t[f"blk.{i}.ffn_{name}.bias"] = rng.standard_normal(shape[0])
    return t


@pytest.mark.parametrize("bias", [False, True])
def test_granite_gguf_residual_scale(tmp_path, bias):
    """granite's graph multiplies the FFN's output by granite.residual_scale
    (a float32 in the file) before the residual add: x + a f(x), decided with
    the activation a swiglu."""
    rng = np.random.default_rng(6)
    d, m = 4, 6
    meta = {**sizes("granite", d, m, 2), "granite.residual_scale": 0.22}
    path = write(tmp_path / "granite.gguf", "granite", granite_tensors(rng, d, m, bias=bias), meta)
    info = describe_checkpoint(path)
    a = float(np.float32(0.22))
    assert [p.scale for p in info.parts] == [a]
    reports = skipsearch.scan(path)
    assert [(r.block, r.family, r.activation) for r in reports] == [
        ("blk.0", "gguf-granite", "swiglu"),
        ("blk.1", "gguf-granite", "swiglu"),
    ]
    for r in reports:
        assert r.form.startswith("x + 0.22 * f(N(x))")
        # The exact float32 multiplier, so a report alone gives the decision.
        assert r.form.endswith(f"(granite.residual_scale = {a!r})")
        assert r.result.activation == f"{a!r}*swiglu"
        if bias:  # inner biases: no theorem for the class
            assert (r.verdict, r.result.argument) == ("undecided", "none")
            assert "bias" in r.reason
        else:
            assert (r.verdict, r.result.argument) == ("not_absorbable", "linearization")
    # Without the key, or with 0 (llama.cpp: `if (hparams.f_residual_scale)`),
    # the graph does not scale.
    for value in (None, 0.0):
        if value is None:
            del meta["granite.residual_scale"]
        else:
            meta["granite.residual_scale"] = value
        path = write(tmp_path / "plain.gguf", "granite", granite_tensors(rng, d, m), meta)
        assert [p.scale for p in describe_checkpoint(path).parts] == [None]


def test_granitemoe_gguf_experts_shared_expert_and_scale(tmp_path):
    """granitemoe (llama.cpp src/models/granite.cpp): ffn_*_exps {n_embd, n_ff,
    n_expert} and, with expert_shared_feed_forward_length, ffn_*_shexp; the
    sum is multiplied by granitemoe.residual_scale."""
    rng = np.random.default_rng(7)
    d, m, m_sh, experts = 4, 6, 10, 3
    t = moe_tensors(rng, (0, 1), d, m, experts, shared=m_sh)
    meta = sizes(
        "granitemoe",
        d,
        m,
        2,
        expert_count=experts,
        expert_used_count=2,
        expert_shared_feed_forward_length=m_sh,
        residual_scale=0.25,
    )
    reports = skipsearch.scan(write(tmp_path / "moe.gguf", "granitemoe", t, meta))
    rows = sorted((r.layer, r.kind, r.expert, r.m) for r in reports)
    assert rows == sorted(
        [(i, "expert", e, m) for i in range(2) for e in range(experts)]
        + [(i, "shared_expert", None, m_sh) for i in range(2)]
    )
    for r in reports:
        assert (r.d, r.activation, r.verdict) == (d, "swiglu", "not_absorbable")
        assert "0.25 * f(" in r.form and "(granitemoe.residual_scale = 0.25)" in r.form
        assert r.result.activation == "0.25*swiglu"
    # Granite MoE without a shared expert: the routed experts alone.
    for i in range(2):
        for name in ("gate", "up", "down"):
            del t[f"blk.{i}.ffn_{name}_shexp.weight"]
    del meta["granitemoe.expert_shared_feed_forward_length"]
    reports = skipsearch.scan(write(tmp_path / "routed.gguf", "granitemoe", t, meta))
    assert {r.kind for r in reports} == {"expert"} and len(reports) == 2 * experts


def test_phi3_gguf_fused_gate_up(tmp_path):
    """phi3 (llama.cpp src/models/phi3.cpp): one ffn_up {n_embd, 2 n_ff}, LLM_FFN_SWIGLU:
    SiLU of the first half times the second."""
    rng = np.random.default_rng(4)
    d, m = 4, 6
    t = {}
    for i in range(2):
        t[f"blk.{i}.ffn_norm.weight"] = np.ones(d)
        t[f"blk.{i}.ffn_up.weight"] = rng.standard_normal((2 * m, d))
        t[f"blk.{i}.ffn_down.weight"] = rng.standard_normal((d, m))
    path = write(tmp_path / "phi3.gguf", "phi3", t, sizes("phi3", d, m, 2))
    reports = skipsearch.scan(path)
    assert [(r.block, r.d, r.m, r.activation, r.verdict) for r in reports] == [
        ("blk.0", d, m, "swiglu", "not_absorbable"),
        ("blk.1", d, m, "swiglu", "not_absorbable"),
    ]


def test_gguf_family_names_are_the_gguf_constants():
    """Every tensor a gguf family reads is one of its architecture's GGUF tensors."""
    from gguf.constants import MODEL_ARCH_NAMES, MODEL_TENSORS, TENSOR_NAMES
    from skipsearch.io._families.gguf import FAMILIES, FFN_TENSORS

    for member, pattern in FFN_TENSORS.items():
        assert TENSOR_NAMES[getattr(gguf.MODEL_TENSOR, member)] + ".weight" == pattern.replace(
            "{i}", "{bid}"
        )
    by_name = {name: arch for arch, name in MODEL_ARCH_NAMES.items()}
    assert set(FAMILIES) >= {
        f"gguf-{a}"
        for a in (
            "llama",
            "qwen2",
            "qwen3",
            "gemma",
            "phi3",
            "gpt2",
            "falcon",
            "bloom",
            "starcoder",
            "gptneox",
            "mpt",
            "qwen2moe",
            "qwen3moe",
            "granite",
            "granitemoe",
            "gemma2",
            "gemma3",
            "olmo2",
            "exaone4",
            "internlm2",
            "exaone",
            "smollm3",
            "seed_oss",
            "command-r",
            "stablelm",
            "phi2",
            "starcoder2",
            "nemotron",
            "deepseek2",
            "olmoe",
            "mistral3",
            "gpt-oss",
            "minicpm",
        )
    }
    for model_type, family in FAMILIES.items():
        if model_type.removeprefix("gguf-") not in by_name:
            # An architecture newer than the gguf package installed (deepseek4
            # is in llama.cpp's gguf-py constants.py at 00395eb2, with these
            # names; see test_deepseek4_gguf_is_undecided).
            continue
        arch = by_name[model_type.removeprefix("gguf-")]
        names = {TENSOR_NAMES[t] for t in MODEL_TENSORS[arch]}
        for part in family.parts:
            for pattern in (part.up, part.down, part.gate):
                if pattern is not None:
                    assert pattern.replace("{i}", "{bid}").removesuffix(".weight") in names


def test_gguf_without_the_package_names_the_extra(tmp_path, monkeypatch):
    path = gpt2_file(tmp_path / "m.gguf", np.random.default_rng(5))
    monkeypatch.setitem(sys.modules, "gguf", None)  # import gguf -> ImportError
    with pytest.raises(ImportError, match=r"skipsearch\[gguf\]") as info:
        skipsearch.scan(path)
    # Every extra's error gives the source-checkout form too.
    assert 'from a clone: pip install ".[gguf]"' in str(info.value)


def test_renamed_and_unknown_files_say_what_they_look_like(tmp_path):
    path = gpt2_file(tmp_path / "m.gguf", np.random.default_rng(6))
    renamed = tmp_path / "weights.dat"
    renamed.write_bytes(path.read_bytes())
    with pytest.raises(CheckpointError, match=r"a GGUF file without the .gguf suffix"):
        open_checkpoint(renamed)
    as_bin = tmp_path / "pytorch_model.bin"
    as_bin.write_bytes(path.read_bytes())
    with pytest.raises(CheckpointError, match=r"\.bin suffix .* those of a GGUF file"):
        open_checkpoint(as_bin)
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"\x00\x01not a model at all")
    with pytest.raises(CheckpointError, match="not a safetensors, GGUF or PyTorch file"):
        open_checkpoint(junk)


def test_a_gguf_folder_with_several_files_names_them(tmp_path):
    rng = np.random.default_rng(7)
    gpt2_file(tmp_path / "m-Q8_0.gguf", rng)
    gpt2_file(tmp_path / "m-F32.gguf", rng)
    with pytest.raises(CheckpointError, match=r"2 GGUF files .*m-F32.gguf, m-Q8_0.gguf"):
        skipsearch.scan(tmp_path)


def test_gguf_output_scales_are_refused(tmp_path):
    """llama.cpp multiplies a projection's output by <weight>.scale when present
    (build_ffn's up_s/down_s); reading the weight alone would decide another block."""
    rng = np.random.default_rng(8)
    d, m = 4, 8
    t = {}
    for i in range(2):
        t[f"blk.{i}.ffn_up.weight"] = rng.standard_normal((m, d))
        t[f"blk.{i}.ffn_down.weight"] = rng.standard_normal((d, m))
    t["blk.1.ffn_down.scale"] = np.ones(1)
    path = write(tmp_path / "s.gguf", "gpt2", t, sizes("gpt2", d, m, 2))
    with pytest.raises(CheckpointError, match=r"blk.1.ffn_down.scale rescales"):
        skipsearch.scan(path)


# -- More llama.cpp architectures ------------------------------------------------------------
# Each from its graph in llama.cpp (src/models/<arch>.cpp at 0c1e57098, the copy bundled in
# llama-cpp-python 0.3.36): the FFN tensors it creates, build_ffn's activation and gate, and
# the norms around the block. Tensor names are checked against gguf.constants above.

DENSE_GATED = [
    # arch, registry activation of the gated block, form fragment
    ("gemma2", "geglu", "N2 = post_ffw_norm"),
    ("gemma3", "geglu", "N2 = post_ffw_norm"),
    ("olmo2", "swiglu", "no norm before f"),
    ("exaone4", "swiglu", "no norm before f"),
    ("internlm2", "swiglu", "x + f(N(x))"),
    ("exaone", "swiglu", "x + f(N(x))"),
    ("smollm3", "swiglu", "x + f(N(x))"),
    ("seed_oss", "swiglu", "x + f(N(x))"),
    ("command-r", "swiglu", "parallel attention and FFN, one LayerNorm"),
    ("stablelm", "swiglu", "StableLM 2 12B"),
    ("mistral3", "swiglu", "x + f(N(x))"),
]


@pytest.mark.parametrize(("arch", "activation", "form"), DENSE_GATED)
def test_dense_gated_gguf_architectures(tmp_path, arch, activation, form):
    rng = np.random.default_rng(11)
    d, m = 4, 6
    t = granite_tensors(rng, d, m)
    for i in range(2):
        t[f"blk.{i}.post_ffw_norm.weight"] = np.ones(d)
    reports = skipsearch.scan(write(tmp_path / f"{arch}.gguf", arch, t, sizes(arch, d, m, 2)))
    assert [(r.block, r.family, r.kind, r.d, r.m, r.activation) for r in reports] == [
        (f"blk.{i}", f"gguf-{arch}", "mlp", d, m, activation) for i in range(2)
    ]
    for r in reports:
        assert (r.verdict, r.result.argument) == ("not_absorbable", "linearization")
        assert form in r.form
    if "post_ffw_norm" in reports[0].form:
        assert "FFN alone" in reports[0].note or "MLP alone" in reports[0].note


@pytest.mark.parametrize("arch", ["phi2", "starcoder2"])
def test_gelu_gguf_architectures_with_biases(tmp_path, arch):
    """phi2 and starcoder2: ffn_up/ffn_down with biases, LLM_FFN_GELU, LLM_FFN_SEQ (tanh
    GELU, flip constant 1); layer 0 planted, layer 1 random."""
    rng = np.random.default_rng(12)
    d, m = 4, 8
    t = {}
    for i, (up, down) in enumerate(
        [planted(rng, d, m), (rng.standard_normal((m, d)), rng.standard_normal((d, m)))]
    ):
        t[f"blk.{i}.ffn_up.weight"], t[f"blk.{i}.ffn_down.weight"] = up, down
        t[f"blk.{i}.ffn_up.bias"] = rng.standard_normal(m)
        t[f"blk.{i}.ffn_down.bias"] = rng.standard_normal(d)
    reports = skipsearch.scan(write(tmp_path / f"{arch}.gguf", arch, t, sizes(arch, d, m, 2)))
    assert [(r.activation, r.verdict) for r in reports] == [
        ("gelu_tanh", "absorbable"),
        ("gelu_tanh", "not_absorbable"),
    ]
    assert reports[0].result.subset.tolist() == list(range(d))
    assert ("parallel" in reports[0].form) == (arch == "phi2")


@pytest.mark.parametrize("bias", [False, True])
def test_nemotron_gguf_squared_relu(tmp_path, bias):
    """nemotron: ffn_up/ffn_down (optional biases), LLM_FFN_RELU_SQR: degree 2."""
    rng = np.random.default_rng(13)
    d, m = 4, 6
    t = {}
    for i in range(2):
        t[f"blk.{i}.ffn_up.weight"] = rng.standard_normal((m, d))
        t[f"blk.{i}.ffn_down.weight"] = rng.standard_normal((d, m))
        if bias:
            t[f"blk.{i}.ffn_up.bias"] = rng.standard_normal(m)
    reports = skipsearch.scan(write(tmp_path / "n.gguf", "nemotron", t, sizes("nemotron", d, m, 2)))
    want = ("undecided", "none") if bias else ("not_absorbable", "degree")
    assert [(r.activation, r.verdict, r.result.argument) for r in reports] == [("relu2", *want)] * 2


def moe_tensors(rng, layers, d, m, experts, shared=None, bias=False):
    t = {}
    for i in layers:
        t[f"blk.{i}.ffn_gate_inp.weight"] = rng.standard_normal((experts, d))
        for name, shape in (("gate", (m, d)), ("up", (m, d)), ("down", (d, m))):
            t[f"blk.{i}.ffn_{name}_exps.weight"] = rng.standard_normal((experts, *shape))
            if bias:
                t[f"blk.{i}.ffn_{name}_exps.bias"] = rng.standard_normal((experts, shape[0]))
            if shared:
                t[f"blk.{i}.ffn_{name}_shexp.weight"] = rng.standard_normal(
                    (shared, d) if name != "down" else (d, shared)
                )
    return t


def test_deepseek2_gguf_leading_dense_layers_routed_and_shared_experts(tmp_path):
    """deepseek2: dense SwiGLU in the first leading_dense_block_count layers; then
    routed experts (expert_feed_forward_length) and one shared expert of
    expert_feed_forward_length * expert_shared_count."""
    rng = np.random.default_rng(14)
    d, m, m_exp, experts, n_shared = 4, 10, 3, 4, 2
    t = granite_tensors(rng, d, m, layers=1)
    t.update(moe_tensors(rng, (1, 2), d, m_exp, experts, shared=m_exp * n_shared))
    meta = sizes(
        "deepseek2",
        d,
        m,
        3,
        leading_dense_block_count=1,
        expert_count=experts,
        expert_used_count=2,
        expert_feed_forward_length=m_exp,
        expert_shared_count=n_shared,
    )
    reports = skipsearch.scan(write(tmp_path / "ds.gguf", "deepseek2", t, meta))
    rows = sorted((r.layer, r.kind, -1 if r.expert is None else r.expert, r.m) for r in reports)
    assert rows == sorted(
        [(0, "mlp", -1, m)]
        + [(i, "expert", e, m_exp) for i in (1, 2) for e in range(experts)]
        + [(i, "shared_expert", -1, m_exp * n_shared) for i in (1, 2)]
    )
    assert {(r.activation, r.verdict) for r in reports} == {("swiglu", "not_absorbable")}


def test_deepseek4_gguf_is_undecided(tmp_path):
    """deepseek4 (llama.cpp src/models/deepseek4.cpp and conversion/deepseek.py at
    00395eb2 / 01a723dc: ffn_gate_exps, ffn_up_exps, ffn_down_exps stacked from w1,
    w3, w2; ffn_*_shexp n_ff_exp * n_expert_shared wide; blk.N.hc_ffn_fn and
    the other hyper-connection tensors; hyper_connection.count): every block
    reported once, undecided for the hyper-connection and the clamp."""
    rng = np.random.default_rng(46)
    d, m_exp, experts, streams = 4, 3, 4, 4
    mix = (2 + streams) * streams
    t = moe_tensors(rng, (0, 1), d, m_exp, experts, shared=m_exp)
    for i in (0, 1):
        for hc in ("hc_attn", "hc_ffn"):
            t[f"blk.{i}.{hc}_fn.weight"] = rng.standard_normal((mix, streams * d))
            t[f"blk.{i}.{hc}_base.weight"] = rng.standard_normal(mix)
            t[f"blk.{i}.{hc}_scale.weight"] = rng.standard_normal(3)
    t["output_hc_fn.weight"] = rng.standard_normal((streams, streams * d))
    meta = {
        "deepseek4.embedding_length": d,
        "deepseek4.block_count": 2,
        "deepseek4.expert_count": experts,
        "deepseek4.expert_used_count": 2,
        "deepseek4.expert_feed_forward_length": m_exp,
        "deepseek4.expert_shared_count": 1,
        "deepseek4.hyper_connection.count": streams,
        "deepseek4.swiglu_clamp_exp": 10.0,
    }
    reports = skipsearch.scan(write(tmp_path / "v4.gguf", "deepseek4", t, meta))
    rows = sorted((r.layer, r.kind, -1 if r.expert is None else r.expert, r.m) for r in reports)
    assert rows == sorted(
        [(i, "expert", e, m_exp) for i in (0, 1) for e in range(experts)]
        + [(i, "shared_expert", -1, m_exp) for i in (0, 1)]
    )
    for r in reports:
        assert r.verdict == "undecided"
        assert "hyper-connection" in r.reason and "section 4.6" in r.reason
        assert "hyper_connection.count" in r.form
    # The mixing figures, from blk.N.hc_ffn_*, against the published forward.
    from tests.test_hyper_connections import check_mixing

    hc = {
        i: tuple(t[f"blk.{i}.hc_ffn_{p}.weight"] for p in ("fn", "base", "scale")) for i in (0, 1)
    }
    check_mixing(reports, hc, rng, n=streams)


def test_olmoe_and_mistral3_gguf_experts(tmp_path):
    """olmoe and mistral3 (MoE files): routed SwiGLU experts of feed_forward_length."""
    rng = np.random.default_rng(15)
    d, m, experts = 4, 5, 3
    for arch in ("olmoe", "mistral3"):
        meta = sizes(arch, d, m, 2, expert_count=experts, expert_used_count=2)
        t = moe_tensors(rng, (0, 1), d, m, experts)
        reports = skipsearch.scan(write(tmp_path / f"{arch}.gguf", arch, t, meta))
        assert sorted((r.layer, r.kind, r.expert, r.m) for r in reports) == [
            (i, "expert", e, m) for i in range(2) for e in range(experts)
        ]
        assert {(r.activation, r.verdict) for r in reports} == {("swiglu", "not_absorbable")}


def test_gpt_oss_gguf_experts_are_undecided(tmp_path):
    """gpt-oss (src/models/openai-moe.cpp): experts with biases and ggml_swiglu_oai."""
    rng = np.random.default_rng(16)
    d, m, experts = 4, 5, 3
    meta = {
        "gpt-oss.embedding_length": d,
        "gpt-oss.block_count": 2,
        "gpt-oss.expert_feed_forward_length": m,
        "gpt-oss.expert_count": experts,
        "gpt-oss.expert_used_count": 2,
    }
    t = moe_tensors(rng, (0, 1), d, m, experts, bias=True)
    reports = skipsearch.scan(write(tmp_path / "oss.gguf", "gpt-oss", t, meta))
    assert len(reports) == 2 * experts
    for r in reports:
        assert (r.kind, r.m, r.verdict, r.result.argument) == ("expert", m, "undecided", "none")
        assert "clamp" in r.reason


def test_minicpm_gguf_residual_scale_and_its_default(tmp_path):
    """minicpm (src/models/minicpm.cpp, granite's graph): the FFN's output times
    minicpm.residual_scale, by default 1.4f / sqrtf(n_layer) in float32."""
    rng = np.random.default_rng(17)
    d, m, layers = 4, 6, 3
    t = granite_tensors(rng, d, m, layers=layers)
    a = float(np.float32(1.4) / np.sqrt(np.float32(layers)))
    assert a == float(np.float32(1.4 / np.sqrt(3.0)))  # the float32 expression, exactly
    reports = skipsearch.scan(write(tmp_path / "a.gguf", "minicpm", t, sizes("minicpm", d, m, 3)))
    assert len(reports) == layers
    for r in reports:
        assert (r.activation, r.verdict, r.result.argument) == (
            "swiglu",
            "not_absorbable",
            "linearization",
        )
        assert r.result.activation == f"{a!r}*swiglu"
        assert "llama.cpp's default 1.4f / sqrtf(3)" in r.form
    # The default needs n_layer = block_count - nextn_predict_layers >= 1.
    for extra in ({"minicpm.nextn_predict_layers": 3}, {"minicpm.nextn_predict_layers": "1"}):
        meta = {**sizes("minicpm", d, m, 3), **extra}
        with pytest.raises(
            CheckpointError, match=r"llama\.cpp's default 1\.4 / sqrt\(n_layer\) needs"
        ):
            skipsearch.scan(write(tmp_path / "bad.gguf", "minicpm", t, meta))
    meta = {**sizes("minicpm", d, m, 4), "minicpm.nextn_predict_layers": 1}
    t4 = granite_tensors(rng, d, m, layers=4)
    reports = skipsearch.scan(write(tmp_path / "nextn.gguf", "minicpm", t4, meta))
    assert {r.result.activation for r in reports} == {f"{a!r}*swiglu"}  # n_layer = 3 again
    meta = {**sizes("minicpm", d, m, 3), "minicpm.residual_scale": 0.5}
    reports = skipsearch.scan(write(tmp_path / "b.gguf", "minicpm", t, meta))
    assert {r.result.activation for r in reports} == {"0.5*swiglu"}
    # The MoE form: routed SwiGLU experts of feed_forward_length.
    experts = 2
    meta = {**sizes("minicpm", d, m, 2, expert_count=experts, expert_used_count=1)}
    t = moe_tensors(rng, (0, 1), d, m, experts)
    reports = skipsearch.scan(write(tmp_path / "c.gguf", "minicpm", t, meta))
    assert sorted((r.layer, r.kind, r.expert) for r in reports) == [
        (i, "expert", e) for i in range(2) for e in range(experts)
    ]
    assert {r.result.activation for r in reports} == {
        f"{float(np.float32(1.4) / np.sqrt(np.float32(2)))!r}*swiglu"
    }


def test_gguf_layer_rules_follow_llama_cpp(tmp_path):
    """llama.cpp picks dense or expert tensors by expert_count (mistral3,
    minicpm), reads deepseek2's leading_dense_block_count and
    feed_forward_length as optional, and granitemoe's shared expert only
    when expert_shared_feed_forward_length > 0."""
    rng = np.random.default_rng(18)
    d, m, experts = 4, 5, 2
    both = {**granite_tensors(rng, d, m), **moe_tensors(rng, (0, 1), d, m, experts)}
    meta = sizes("mistral3", d, m, 2, expert_count=experts, expert_used_count=1)
    with pytest.raises(CheckpointError, match="mlp blocks in layer"):
        skipsearch.scan(write(tmp_path / "both.gguf", "mistral3", both, meta))
    meta = sizes("mistral3", d, m, 2)
    with pytest.raises(CheckpointError, match="expert blocks in layer"):
        skipsearch.scan(write(tmp_path / "both2.gguf", "mistral3", both, meta))
    # deepseek2: a bad leading_dense_block_count is named; MoE layers only
    # need no feed_forward_length.
    moe = moe_tensors(rng, (0, 1), d, m, experts, shared=m)
    meta = {
        "deepseek2.embedding_length": d,
        "deepseek2.block_count": 2,
        "deepseek2.expert_count": experts,
        "deepseek2.expert_feed_forward_length": m,
        "deepseek2.expert_shared_count": 1,
    }
    reports = skipsearch.scan(write(tmp_path / "ds.gguf", "deepseek2", moe, meta))
    assert sorted({r.kind for r in reports}) == ["expert", "shared_expert"]
    meta["deepseek2.leading_dense_block_count"] = "1"
    with pytest.raises(CheckpointError, match="leading_dense_block_count must be a non-negative"):
        skipsearch.scan(write(tmp_path / "ds2.gguf", "deepseek2", moe, meta))
    # granitemoe: expert_shared_feed_forward_length 0 is no shared expert.
    routed = moe_tensors(rng, (0, 1), d, m, experts)
    meta = sizes("granitemoe", d, m, 2, expert_count=experts, expert_shared_feed_forward_length=0)
    reports = skipsearch.scan(write(tmp_path / "gm.gguf", "granitemoe", routed, meta))
    assert {r.kind for r in reports} == {"expert"}
    # Sizes from GGUF metadata are named as such in errors.
    bad = dict(routed)
    bad["blk.1.ffn_up_exps.weight"] = rng.standard_normal((experts, m + 1, d))
    with pytest.raises(CheckpointError, match=r"metadata: granitemoe\.embedding_length"):
        skipsearch.scan(write(tmp_path / "shape.gguf", "granitemoe", bad, meta))
