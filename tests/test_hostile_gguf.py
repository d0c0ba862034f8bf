"""Hostile GGUF files: lengths and counts that claim more than the file holds,
a file cut or rewritten while its header is read, undecodable metadata.

The header is walked with plain bounded reads: every count and length is
checked against the bytes left before anything is allocated for it, so a
102-byte file claiming 2**63 array elements is "not a readable GGUF file"
(CheckpointError, exit 2) at once and in bounded memory. The cases that
made the old reader allocate without end run in a child process under an
address-space limit, so that they fail instead of taking the machine.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import skipsearch
from skipsearch.io.checkpoints import CheckpointChangedError, CheckpointError, open_checkpoint

gguf = pytest.importorskip("gguf")

from tests.test_gguf import gpt2_file, write

STRING, ARRAY, UINT8, UINT32, F32 = 8, 9, 0, 4, 0


def s(text):
    data = text if isinstance(text, bytes) else text.encode()
    return struct.pack("<Q", len(data)) + data


def header(kvs=b"", n_kv=0, tensors=b"", n_tensors=0, version=3):
    return b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv) + kvs + tensors


def kv(key, vtype, payload):
    return s(key) + struct.pack("<I", vtype) + payload


def arch():
    return kv("general.architecture", STRING, s("gpt2"))


def tensor(name, dims, ggml_type=F32, offset=0):
    return s(name) + struct.pack(f"<I{len(dims)}QIQ", len(dims), *dims, ggml_type, offset)


def nested(depth):
    """An array of one array of one array ... ``depth`` levels."""
    body = struct.pack("<IQ", UINT8, 0)
    for _ in range(depth):
        body = struct.pack("<IQ", ARRAY, 1) + body
    return body


#: name -> (file bytes, what the error must say)
HOSTILE = {
    "array of 2**63 uint32": (
        header(arch() + kv("general.x", ARRAY, struct.pack("<IQ", UINT32, 1 << 63)), 2),
        "claims 9223372036854775808 entries",
    ),
    "array of 2**40 uint8 under tokenizer.": (
        header(arch() + kv("tokenizer.ggml.x", ARRAY, struct.pack("<IQ", UINT8, 1 << 40)), 2),
        "claims 1099511627776 entries",
    ),
    "array of 2**40 strings": (
        header(arch() + kv("tokenizer.ggml.tokens", ARRAY, struct.pack("<IQ", STRING, 1 << 40)), 2),
        "claims 1099511627776 entries",
    ),
    "array of 2**40 empty strings that are there": (
        header(
            arch() + kv("general.y", ARRAY, struct.pack("<IQ", STRING, 1 << 40)) + b"\0" * 64, 2
        ),
        "claims 1099511627776 entries",
    ),
    "string of 2**63 bytes": (
        header(arch() + kv("general.name", STRING, struct.pack("<Q", 1 << 63)), 2),
        "claims 9223372036854775808 bytes",
    ),
    "key of 2**62 bytes": (
        header(struct.pack("<Q", 1 << 62) + b"general", 1),
        "claims 4611686018427387904 bytes, more than 65536",
    ),
    "2**63 keys": (header(arch(), 1 << 63), "the metadata claims 9223372036854775808 entries"),
    "2**63 tensors": (header(arch(), 1, n_tensors=1 << 63), "the tensor list claims"),
    "arrays nested 100 deep": (
        header(arch() + kv("general.z", ARRAY, nested(100)), 2),
        "nests arrays more than 8 deep",
    ),
    "unknown value type": (header(arch() + kv("general.q", 13, b"\0" * 8), 2), "value type 13"),
    "2**32-1 dimensions": (
        header(arch(), 1, s("t") + struct.pack("<I", 2**32 - 1) + b"\0" * 32, 1),
        "claims 4294967295 dimensions",
    ),
    "dimensions overflowing int64": (
        header(arch(), 1, tensor("t", [1 << 32, 1 << 32]), 1),
        "too many elements",
    ),
    "tensor beyond the end": (
        header(arch(), 1, tensor("blk.0.ffn_up.weight", [4, 8]), 1),
        "beyond the end of the file",
    ),
    "unknown tensor type": (
        header(arch(), 1, tensor("t", [4], ggml_type=9999), 1),
        "GGML type 9999",
    ),
    "quantized rows not whole blocks": (
        header(arch(), 1, tensor("t", [33], ggml_type=8), 1),  # Q8_0: blocks of 32
        "not a multiple of its block of 32",
    ),
    "version 1": (header(arch(), 1, version=1), "GGUF version 1"),
    "bad alignment": (
        header(arch() + kv("general.alignment", UINT32, struct.pack("<I", 48)), 2),
        "general.alignment must be a power of two",
    ),
    "duplicate key": (header(arch() + arch(), 2), "appears twice"),
}

CHILD = textwrap.dedent(
    """
    import json, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    from skipsearch.io.checkpoints import CheckpointError, open_checkpoint
    from skipsearch import cli
    out = {}
    for path in sys.argv[2:]:
        try:
            open_checkpoint(path)
            out[path] = ["opened", ""]
        except CheckpointError as e:
            out[path] = ["CheckpointError", str(e)]
        except BaseException as e:
            out[path] = [type(e).__name__, str(e)[:300]]
    out["cli"] = cli.main(["scan", sys.argv[2], "--no-progress"])
    with open(sys.argv[1], "w") as f:
        json.dump(out, f)
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS as Linux applies it")
def test_hostile_headers_are_refused_in_bounded_memory(tmp_path):
    paths = {}
    for i, (name, (data, _)) in enumerate(HOSTILE.items()):
        paths[name] = tmp_path / f"hostile-{i}.gguf"
        paths[name].write_bytes(data)
    assert len(HOSTILE["array of 2**63 uint32"][0]) < 110  # the 102-byte kind
    result = tmp_path / "result.json"
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "RAYON_NUM_THREADS": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), env.get("PYTHONPATH")]))
    first = str(paths["array of 2**63 uint32"])
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(result), *map(str, paths.values())],
        capture_output=True,
        text=True,
        timeout=300,  # a safety net for the old reader, which looped without end
        env=env,
        check=False,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    out = json.loads(result.read_text())
    for name, (_, says) in HOSTILE.items():
        kind, message = out[str(paths[name])]
        assert kind == "CheckpointError", (name, kind, message)
        assert says in message, (name, message)
        if name not in ("version 1",):
            assert message.startswith(f"not a readable GGUF file: {paths[name]}: "), message
    # On the command line: exit 2 with one line.
    assert out["cli"] == 2
    assert child.stderr.count("\n") == 1
    assert child.stderr.startswith(f"skipsearch: error: not a readable GGUF file: {first}: ")


def test_every_cut_of_a_real_file_is_an_error_not_a_crash(tmp_path):
    path = gpt2_file(tmp_path / "m.gguf", np.random.default_rng(0))
    data = path.read_bytes()
    cut = tmp_path / "cut.gguf"
    # Up to the last tensor byte (what follows is the writer's padding).
    reader = gguf.GGUFReader(path)
    last = max(t.data_offset + t.n_bytes for t in reader.tensors)
    del reader
    assert last > len(data) - 32
    ends = sorted({*range(4, 700, 7), *range(last - 64, last, 5)})
    for end in ends:
        cut.write_bytes(data[:end])
        with pytest.raises(CheckpointError, match=r"not a readable GGUF file: .*cut\.gguf: "):
            open_checkpoint(cut)


def test_the_header_and_tensors_are_read_without_a_memory_map(tmp_path, monkeypatch):
    import mmap

    path = gpt2_file(tmp_path / "m.gguf", np.random.default_rng(1))
    want = [r.verdict for r in skipsearch.scan(path)]

    def refuse(*args, **kwargs):
        raise AssertionError("a memory map: SIGBUS if the file shrinks meanwhile")

    monkeypatch.setattr(np, "memmap", refuse)
    monkeypatch.setattr(mmap, "mmap", refuse)
    assert [r.verdict for r in skipsearch.scan(path)] == want == ["absorbable", "not_absorbable"]


def test_a_file_cut_while_its_header_is_read_is_a_changed_file(tmp_path, monkeypatch):
    from skipsearch.io import gguf as reader

    path = gpt2_file(tmp_path / "m.gguf", np.random.default_rng(2))
    real = reader._read_header

    def cut_first(fh, size, p, check, module):
        os.truncate(p, 100)  # a download restarted, a copy overwriting it
        return real(fh, size, p, check, module)

    monkeypatch.setattr(reader, "_read_header", cut_first)
    with pytest.raises(CheckpointChangedError, match=r"was truncated .* while its header was read"):
        open_checkpoint(path)
    from skipsearch import cli

    path = gpt2_file(tmp_path / "n.gguf", np.random.default_rng(2))
    assert cli.main(["scan", str(path), "--no-progress"]) == 4


def test_a_tensor_cut_after_the_header_is_a_changed_file(tmp_path):
    path = gpt2_file(tmp_path / "m.gguf", np.random.default_rng(3))
    ckpt = open_checkpoint(path)
    os.truncate(path, os.path.getsize(path) - 16)
    with pytest.raises(CheckpointChangedError, match="truncated"):
        ckpt.get("blk.1.ffn_down.bias")


def patched(tmp_path, name, old, new, **meta):
    """A gpt2 GGUF file with the first ``old`` after the metadata key area
    replaced by ``new`` (same length)."""
    rng = np.random.default_rng(4)
    t = {
        "blk.0.ffn_up.weight": rng.standard_normal((8, 4)),
        "blk.0.ffn_down.weight": rng.standard_normal((4, 8)),
    }
    path = write(
        tmp_path / name,
        "gpt2",
        t,
        {
            "gpt2.embedding_length": 4,
            "gpt2.feed_forward_length": 8,
            "gpt2.block_count": 1,
            **meta,
        },
    )
    data = path.read_bytes()
    assert len(old) == len(new) and data.count(old) >= 1
    path.write_bytes(data.replace(old, new, 1))
    return path


def test_undecodable_metadata_the_scan_does_not_use_is_replaced(tmp_path):
    path = patched(
        tmp_path, "name.gguf", b"Tiny-Model", b"Tiny\xff\xfeModl", **{"general.name": "Tiny-Model"}
    )
    ckpt = open_checkpoint(path)
    assert ckpt.config["general.name"] == "Tiny\ufffd\ufffdModl"
    reports = skipsearch.scan(path)
    assert [(r.block, r.d, r.m) for r in reports] == [("blk.0", 4, 8)]
    # A key that is not UTF-8 is no key the scan reads: it is left out.
    path = patched(
        tmp_path, "key.gguf", b"general.zzz", b"general.\xff\xff\xff", **{"general.zzz": "v"}
    )
    assert not any(k.startswith("general.\ufffd") for k in open_checkpoint(path).config)


def test_undecodable_architecture_or_tensor_name_names_the_key(tmp_path):
    path = patched(tmp_path, "arch.gguf", s("gpt2"), s(b"gp\xc3t"))
    with pytest.raises(CheckpointError) as e:
        open_checkpoint(path)
    assert str(e.value).startswith(f"not a readable GGUF file: {path}: ")
    assert "metadata key 'general.architecture' is not valid UTF-8" in str(e.value)
    path = patched(tmp_path, "tensor.gguf", b"blk.0.ffn_up.weight", b"blk.0.ffn_up.weig\x80t")
    with pytest.raises(CheckpointError, match=r"the name of tensor #\d+ .* is not valid UTF-8"):
        skipsearch.scan(path)


def test_value_type_codes_are_gguf_own():
    from skipsearch.io.gguf import _VALUE_TYPES

    assert {code: name for code, (name, _) in _VALUE_TYPES.items()} == {
        int(t): t.name for t in gguf.GGUFValueType
    }


@pytest.mark.parametrize(
    ("payload", "found"),
    [
        (kv("general.architecture", ARRAY, struct.pack("<IQ", STRING, 1) + s("gpt2")), "ARRAY"),
        (kv("general.architecture", UINT32, struct.pack("<I", 2)), "UINT32"),
    ],
    ids=["array", "uint32"],
)
def test_architecture_of_another_type_names_the_key_and_type(tmp_path, payload, found):
    # An architecture stored as an array (["gpt2"]) was reported as no
    # architecture at all.
    path = tmp_path / "arch.gguf"
    path.write_bytes(header(payload, 1))
    with pytest.raises(CheckpointError) as e:
        open_checkpoint(path)
    assert str(e.value) == (
        f"not a readable GGUF file: {path}: metadata key 'general.architecture' must be a "
        f"STRING (the model's architecture), got {found}"
    )
