"""PyTorch checkpoints (pytorch_model.bin, single or sharded), read through
torch.load(..., weights_only=True); the tests that write them need torch."""

from __future__ import annotations

import json
import sys
import zipfile

import numpy as np
import pytest
import skipsearch
from skipsearch.io.checkpoints import CheckpointError, TorchCheckpoint, open_checkpoint

from tests.test_families import bert_like, save


def verdicts(reports):
    return [(r.block, r.d, r.m, r.activation, r.verdict) for r in reports]


def torch_bin(directory, tensors, config, shards=1, dtype=None):
    """``tensors`` saved with torch.save as pytorch_model.bin, or as ``shards`` files with
    pytorch_model.bin.index.json (the names transformers' save_pretrained writes)."""
    torch = pytest.importorskip("torch")
    directory.mkdir(parents=True)
    state = {k: torch.tensor(np.asarray(v, dtype=np.float32)) for k, v in tensors.items()}
    if dtype is not None:
        state = {k: v.to(dtype) for k, v in state.items()}
    if shards == 1:
        torch.save(state, directory / "pytorch_model.bin")
    else:
        keys = sorted(state)
        weight_map = {}
        for s in range(shards):
            name = f"pytorch_model-{s + 1:05d}-of-{shards:05d}.bin"
            part = keys[s::shards]
            torch.save({k: state[k] for k in part}, directory / name)
            weight_map.update({k: name for k in part})
        (directory / "pytorch_model.bin.index.json").write_text(
            json.dumps({"metadata": {}, "weight_map": weight_map})
        )
    (directory / "config.json").write_text(json.dumps(config))
    return directory


@pytest.mark.parametrize("shards", [1, 2])
def test_pytorch_bin_scans_as_its_safetensors_copy(tmp_path, shards):
    tensors, config = bert_like(np.random.default_rng(0))
    plain = save(tmp_path / "st", tensors, config)
    path = torch_bin(tmp_path / "pt", tensors, config, shards=shards)
    ckpt = open_checkpoint(path)
    assert isinstance(ckpt, TorchCheckpoint) and len(ckpt.files) == shards
    key = "bert.encoder.layer.0.intermediate.dense.weight"
    assert ckpt.dtype(key) == "F32" and ckpt.shape(key) == tensors[key].shape
    assert np.array_equal(ckpt.get(key), tensors[key].astype(np.float32))
    got = skipsearch.scan(path)
    assert verdicts(got) == verdicts(skipsearch.scan(plain))
    assert [r.verdict for r in got] == ["absorbable", "not_absorbable"]
    assert {r.model for r in got} == {"pt"}


def test_pytorch_bin_file_and_bfloat16(tmp_path):
    torch = pytest.importorskip("torch")
    tensors, config = bert_like(np.random.default_rng(1))
    path = torch_bin(tmp_path / "pt", tensors, config, dtype=torch.bfloat16)
    ckpt = open_checkpoint(path / "pytorch_model.bin")
    key = "bert.encoder.layer.1.output.dense.weight"
    assert ckpt.dtype(key) == "BF16"
    want = torch.tensor(tensors[key], dtype=torch.float32).to(torch.bfloat16).float().numpy()
    assert np.array_equal(ckpt.get(key), want)
    # One slice along the first axis, as for a 3-D expert tensor.
    assert np.array_equal(ckpt.get(key, index=2), want[2])


def test_safetensors_wins_over_pytorch_bin_in_one_folder(tmp_path):
    pytest.importorskip("torch")
    tensors, config = bert_like(np.random.default_rng(2))
    path = torch_bin(tmp_path / "both", tensors, config)
    save(path, tensors, config)
    assert type(open_checkpoint(path)).__name__ == "Checkpoint"


def torch_like_zip(path):
    """A zip holding archive/data.pkl: what torch.save writes (no torch needed)."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
        z.writestr("archive/version", b"3\n")
    return path


def test_without_torch_the_error_names_the_extra(tmp_path, monkeypatch):
    folder = tmp_path / "m"
    folder.mkdir()
    torch_like_zip(folder / "pytorch_model.bin")
    (folder / "config.json").write_text(json.dumps(bert_like(np.random.default_rng(3))[1]))
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    with pytest.raises(ImportError) as e:
        skipsearch.scan(folder)
    message = str(e.value)
    assert 'pip install "skipsearch[torch]"' in message and "safetensors" in message


def test_renamed_torch_and_zip_files_are_named(tmp_path):
    renamed = torch_like_zip(tmp_path / "model.safetensors")
    with pytest.raises(CheckpointError, match=r"\.safetensors suffix .* a PyTorch"):
        open_checkpoint(renamed)
    other = tmp_path / "weights.zip"
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("readme.txt", "hello")
    with pytest.raises(CheckpointError, match="a zip archive that is not a PyTorch checkpoint"):
        open_checkpoint(other)
    pickled = tmp_path / "weights.ckpt"
    pickled.write_bytes(b"\x80\x04K\x01.")
    with pytest.raises(CheckpointError, match=r"a PyTorch \(torch.save\) file without the \.bin"):
        open_checkpoint(pickled)


def fake_torch(version, with_26_api=True):
    """A stand-in ``torch`` module: its ``load`` records that it was reached."""
    import types

    calls = []

    def load(*args, **kwargs):
        calls.append(args)
        raise RuntimeError("fake torch.load reached")

    serialization = types.SimpleNamespace()
    if with_26_api:
        serialization.get_unsafe_globals_in_checkpoint = lambda f: []
    module = types.SimpleNamespace(
        __version__=version, load=load, serialization=serialization, Tensor=object
    )
    return module, calls


def bin_folder(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    torch_like_zip(folder / "pytorch_model.bin")
    (folder / "config.json").write_text(json.dumps(bert_like(np.random.default_rng(3))[1]))
    return folder


@pytest.mark.parametrize(
    ("version", "cve"),
    [
        ("2.5.1", "CVE-2025-32434"),
        ("2.0.0+cu118", "CVE-2025-32434"),
        ("1.13.1", "CVE-2025-32434"),
        ("2.6.0+cpu", "CVE-2026-24747"),
        ("2.9.1", "CVE-2026-24747"),
        ("2.10.0a0+git1234", "CVE-2026-24747"),  # a build from before the 2.10 release
        ("garbage", "CVE-2025-32434, CVE-2026-24747"),
    ],
)
def test_torch_with_a_bypassable_weights_only_is_refused(tmp_path, monkeypatch, version, cve):
    folder = bin_folder(tmp_path)
    torch, calls = fake_torch(version)
    monkeypatch.setitem(sys.modules, "torch", torch)
    with pytest.raises(ImportError) as e:
        skipsearch.scan(folder)
    message = str(e.value)
    assert cve in message and 'pip install "torch>=2.10"' in message
    assert str(folder / "pytorch_model.bin") in message and "safetensors" in message
    assert calls == []  # torch.load never saw the file


def test_a_version_string_without_the_fixs_api_is_refused(tmp_path, monkeypatch):
    folder = bin_folder(tmp_path)
    torch, calls = fake_torch("2.10.0", with_26_api=False)
    monkeypatch.setitem(sys.modules, "torch", torch)
    with pytest.raises(ImportError, match=r"lacks torch.serialization.get_unsafe_globals_in"):
        skipsearch.scan(folder)
    assert calls == []


def test_a_fixed_torch_goes_on_to_load(tmp_path, monkeypatch, capsys):
    folder = bin_folder(tmp_path)
    torch, calls = fake_torch("2.10.0+cu128")
    monkeypatch.setitem(sys.modules, "torch", torch)
    with pytest.raises(CheckpointError, match=r"fake torch\.load reached"):
        skipsearch.scan(folder)
    assert calls
    # On the command line an old torch is a missing component: exit 3, one line.
    from skipsearch import cli

    monkeypatch.setitem(sys.modules, "torch", fake_torch("2.5.1")[0])
    code = cli.main(["scan", str(folder), "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 3 and out == "" and err.count("\n") == 1 and "CVE-2025-32434" in err
