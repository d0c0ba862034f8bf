"""The checkpoint scan streams: one block in memory at a
time, each tensor read through a memory map of its own bytes, narrow dtypes
widened block by block, sharded checkpoints read tensor by tensor."""

from __future__ import annotations

import json
import re
import struct
import sys
import weakref
from pathlib import Path

import numpy as np
import pytest
from skipsearch._scan import decide as decide_module
from skipsearch.io.checkpoints import Checkpoint, _float8
from skipsearch.scan import describe_checkpoint, scan

D, M, LAYERS = 4, 6, 4
PREFIX = "bert.encoder.layer."
E4M3 = _float8(np.arange(256, dtype=np.uint8), "F8_E4M3")


def _raw(dtype: str, values) -> tuple:
    """(safetensors dtype, little-endian bytes, shape) of ``values``: F32
    and F64 as given, BF16 truncated from float32, F8_E4M3 from codes."""
    values = np.asarray(values)
    if dtype == "BF16":
        data = (np.ascontiguousarray(values, dtype=np.float32).view(np.uint32) >> 16).astype("<u2")
    elif dtype == "F8_E4M3":
        data = np.ascontiguousarray(values, dtype=np.uint8)
    else:
        data = np.ascontiguousarray(values, dtype={"F32": "<f4", "F64": "<f8"}[dtype])
    return dtype, data.tobytes(), list(values.shape)


def write_safetensors(path: Path, tensors: dict) -> None:
    """tensors: name -> (dtype, bytes, shape), as from :func:`_raw`."""
    header, blobs, offset = {}, [], 0
    for name, (dtype, blob, shape) in tensors.items():
        header[name] = {
            "dtype": dtype,
            "shape": shape,
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def model_tensors(dtype: str, seed: int = 0) -> dict:
    """A BERT-like model of LAYERS generic FFN blocks, with attention and
    embedding tensors the scan must never read. F8_E4M3 weights carry a
    per-output-channel weight_scale."""
    rng = np.random.default_rng(seed)
    moderate = np.flatnonzero((np.abs(E4M3) >= 0.25) & (np.abs(E4M3) <= 4)).astype(np.uint8)
    tensors = {"bert.embeddings.word_embeddings.weight": _raw("F32", rng.standard_normal((10, D)))}
    for i in range(LAYERS):
        base = f"{PREFIX}{i}."
        tensors[base + "attention.output.dense.weight"] = _raw("F32", rng.standard_normal((D, D)))
        for name, shape in (("intermediate.dense", (M, D)), ("output.dense", (D, M))):
            if dtype == "F8_E4M3":
                tensors[f"{base}{name}.weight"] = _raw(dtype, rng.choice(moderate, size=shape))
                scale = rng.choice([0.25, 0.5, 2.0], size=(shape[0], 1))
                tensors[f"{base}{name}.weight_scale"] = _raw("F32", scale)
            else:
                tensors[f"{base}{name}.weight"] = _raw(dtype, rng.standard_normal(shape))
            tensors[f"{base}{name}.bias"] = _raw("F32", rng.standard_normal(shape[0]))
    return tensors


def config(dtype: str) -> dict:
    out = {
        "model_type": "bert",
        "hidden_act": "gelu",
        "hidden_size": D,
        "intermediate_size": M,
        "num_hidden_layers": LAYERS,
    }
    if dtype == "F8_E4M3":
        out["quantization_config"] = {"quant_method": "fbgemm_fp8"}
    return out


def write_single(directory: Path, dtype: str) -> Path:
    directory.mkdir(parents=True)
    write_safetensors(directory / "model.safetensors", model_tensors(dtype))
    (directory / "config.json").write_text(json.dumps(config(dtype)))
    return directory


def write_sharded(directory: Path, dtype: str, shards: int = 3) -> tuple:
    """The same model in ``shards`` files, assigned round robin so that every
    block's up and down projections lie in different shards."""
    directory.mkdir(parents=True)
    tensors = model_tensors(dtype)
    names = [f"model-{k + 1:05d}-of-{shards:05d}.safetensors" for k in range(shards)]
    weight_map = {key: names[j % shards] for j, key in enumerate(tensors)}
    for name in names:
        write_safetensors(
            directory / name, {k: v for k, v in tensors.items() if weight_map[k] == name}
        )
    index = {"metadata": {}, "weight_map": weight_map}
    (directory / "model.safetensors.index.json").write_text(json.dumps(index))
    (directory / "config.json").write_text(json.dumps(config(dtype)))
    return directory, names, weight_map


def _layer(key: str) -> int:
    return int(re.search(r"\.layer\.(\d+)\.", key).group(1))


class Residency:
    """Watches every array the checkpoint reader hands out (by weak
    reference) and every decision: which layers' tensors are alive when a
    tensor is read and when a block is decided."""

    def __init__(self, monkeypatch):
        self.live: list = []  # (layer, weakref to the array read)
        self.events: list = []  # ("read", layer, key) or ("decide", layer, None)
        self.keys: list = []
        read, decide = Checkpoint.get, decide_module.find_absorbing_subset

        def watched_read(ckpt, key):
            layer = _layer(key)
            alive = self.alive()
            assert alive <= {layer}, f"{key} is read while layers {sorted(alive)} are in memory"
            array = read(ckpt, key)
            self.live.append((layer, weakref.ref(array)))
            self.events.append(("read", layer, key))
            self.keys.append(key)
            return array

        def watched_decide(*args, **kwargs):
            alive = self.alive()
            assert len(alive) == 1, f"a block is decided while layers {sorted(alive)} are in memory"
            self.events.append(("decide", alive.pop(), None))
            return decide(*args, **kwargs)

        monkeypatch.setattr(Checkpoint, "get", watched_read)
        monkeypatch.setattr(decide_module, "find_absorbing_subset", watched_decide)

    def alive(self) -> set:
        return {layer for layer, ref in self.live if ref() is not None}

    def check_order(self, layers: int) -> None:
        """Each block is read, then decided, before the next block's first
        tensor is read."""
        assert [e[1] for e in self.events if e[0] == "decide"] == list(range(layers))
        in_order = sorted(self.events, key=lambda e: (e[1], e[0] == "decide"))
        assert [e[:2] for e in self.events] == [e[:2] for e in in_order]


FFN = re.compile(r"\.layer\.\d+\.(intermediate|output)\.dense\.(weight|bias|weight_scale)$")


@pytest.mark.parametrize("dtype", ["F32", "BF16", "F8_E4M3"])
def test_one_block_in_memory_at_a_time(tmp_path, monkeypatch, dtype):
    path = write_single(tmp_path / "m", dtype)
    want = scan(path, progress=False)
    watch = Residency(monkeypatch)
    got = scan(path, progress=False)
    watch.check_order(LAYERS)
    # Only the FFN tensors are read, each once: no attention or embedding
    # tensor, no whole-file load, no second copy of a block.
    assert all(FFN.search(k) for k in watch.keys), watch.keys
    assert len(watch.keys) == len(set(watch.keys)) == (6 if dtype == "F8_E4M3" else 4) * LAYERS
    assert not watch.alive()  # nothing is kept once the scan returns
    assert [r.to_dict() | {"seconds": 0} for r in got] == [
        r.to_dict() | {"seconds": 0} for r in want
    ]
    if dtype != "F32":
        tol = {"BF16": 2.0**-3.5, "F8_E4M3": 2.0**-1.5}[dtype]
        assert all(r.result.tolerance == pytest.approx(tol) for r in got)


def test_sharded_checkpoint_streams_tensor_by_tensor(tmp_path, monkeypatch):
    single = write_single(tmp_path / "single", "BF16")
    path, names, weight_map = write_sharded(tmp_path / "sharded", "BF16")
    info = describe_checkpoint(path)
    assert [p.name for p in info.files] == names and info.num_layers == LAYERS
    want = scan(single, progress=False)
    watch = Residency(monkeypatch)
    got = scan(path, progress=False)
    watch.check_order(LAYERS)
    # Every block spans shards, and each is read one tensor at a time.
    for i in range(LAYERS):
        mine = [k for k in watch.keys if _layer(k) == i]
        assert len({weight_map[k] for k in mine}) > 1
    assert all(FFN.search(k) for k in watch.keys)
    assert len(watch.keys) == len(set(watch.keys)) == 4 * LAYERS

    def key(r):
        return {k: v for k, v in r.to_dict().items() if k not in ("seconds", "path", "model")}

    assert [key(r) for r in got] == [key(r) for r in want]


def test_tied_blocks_are_compared_one_tensor_at_a_time(tmp_path, monkeypatch):
    tensors = model_tensors("F32")
    for name in ("intermediate.dense", "output.dense"):  # layer 3 ties layer 1
        for leaf in ("weight", "bias"):
            tensors[f"{PREFIX}3.{name}.{leaf}"] = tensors[f"{PREFIX}1.{name}.{leaf}"]
    path = tmp_path / "tied"
    path.mkdir()
    write_safetensors(path / "model.safetensors", tensors)
    (path / "config.json").write_text(json.dumps(config("F32")))
    peak = []
    read = Checkpoint.get

    def counted(ckpt, key):
        array = read(ckpt, key)
        live.append(weakref.ref(array))
        peak.append(sum(r() is not None for r in live))
        return array

    live: list = []
    monkeypatch.setattr(Checkpoint, "get", counted)
    reports = scan(path, progress=False)
    assert [r.layer for r in reports] == [0, 1, 2]
    assert reports[1].shared_with == (f"{PREFIX}3",)
    # The twin's four tensors are read one at a time beside the block's own
    # four: never more than five arrays at once.
    assert max(peak) <= 5


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_nothing_stays_mapped_between_reads(tmp_path):
    path = write_single(tmp_path / "m", "BF16")
    ckpt = Checkpoint(path)
    weights = str((path / "model.safetensors").resolve())
    array = ckpt.get(f"{PREFIX}0.intermediate.dense.weight")
    assert array.dtype == np.float32 and array.shape == (M, D)
    assert type(array) is np.ndarray  # a copy, not a view of the map
    with open("/proc/self/maps") as fh:
        assert weights not in fh.read()
