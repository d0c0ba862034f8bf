"""A checkpoint file that changes while it is scanned: saved again (a live
training run writing into the scanned folder), replaced, truncated or
deleted after the headers were read. The scan must stop with an error
naming the file and the block, never report a verdict from bytes its header
does not describe.

The checkpoint is the tiny BERT of tests/test_scan.py: layer 0 generic
(not absorbable), layer 1 planted absorbable with flip set {0, 1, 2, 3}.
Saving it again with layer 1's W_down doubled keeps every name, shape and
dtype, so the header's offsets stay valid while the values change: layer 1
is then not absorbable, which an unguarded reader would report as the
verdict of the checkpoint it located.
"""

from __future__ import annotations

import importlib
import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save, save_file
from skipsearch import cli
from skipsearch.io.checkpoints import Checkpoint, CheckpointChangedError, CheckpointError

from tests.test_scan import _config, _tensors, write_checkpoint

# The package exports the function scan, which hides the module name.
scan_module = importlib.import_module("skipsearch.scan")

LAYER0, LAYER1 = "bert.encoder.layer.0", "bert.encoder.layer.1"


def _backdate(path: Path) -> None:
    """Give the file a modification time 10 s in the past, as a checkpoint
    saved earlier has, so that saving it again within the file system's
    timestamp resolution of the first write cannot hide the change."""
    past = time.time_ns() - 10**10
    os.utime(path, ns=(past, past))


@pytest.fixture
def ckpt(tmp_path: Path) -> Path:
    path = write_checkpoint(tmp_path / "tiny-bert")
    _backdate(path / "model.safetensors")
    return path


def _trained_on() -> dict:
    """The checkpoint's tensors a little later in training: layer 1's
    W_down doubled, so that W_down[:, S] W_up[S, :] = -2 I for S = {0, 1, 2, 3}."""
    tensors = _tensors()
    tensors[f"{LAYER1}.output.dense.weight"] *= 2
    return tensors


def _header(data: bytes) -> bytes:
    """The header of a safetensors file: its length and its JSON."""
    return data[: 8 + int.from_bytes(data[:8], "little")]


def _write_in_place(path: Path, data: bytes) -> None:
    """Overwrite the file's bytes in place (same inode)."""
    with open(path, "r+b") as fh:
        fh.write(data)
        fh.truncate()


def _save_again(path: Path) -> None:
    """Save the checkpoint again in place: same names, shapes, dtypes and
    offsets, other values."""
    data = save(_trained_on())
    assert len(data) == path.stat().st_size  # the header is the same
    _write_in_place(path, data)


def _replace(path: Path) -> None:
    """Replace the file by another one (written beside it, then renamed over
    it, as safetensors' save_file does)."""
    tmp = path.with_name(path.name + ".tmp")
    save_file(_trained_on(), str(tmp))
    os.replace(tmp, path)


def _truncate(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


CHANGES = {
    "saved again": (_save_again, "written again"),
    "replaced": (_replace, "replaced by another file"),
    "truncated": (_truncate, "truncated"),
    "deleted": (os.remove, "deleted"),
}


def _change_before(monkeypatch, block_name: str, change) -> list:
    """Apply ``change`` to the checkpoint's file just before the scan reads
    block ``block_name``: after every checkpoint was located."""
    read_block = scan_module.read_block
    seen: list = []

    def hooked(info, ckpt, block):
        seen.append(block.name)
        if block.name == block_name:
            for path in info.files:
                change(path)
        return read_block(info, ckpt, block)

    monkeypatch.setattr(scan_module, "read_block", hooked)
    return seen


def test_unchanged_checkpoint_is_decided(ckpt):
    reports = scan_module.scan(ckpt, progress=False)
    assert [(r.block, r.verdict) for r in reports] == [
        (LAYER0, "not_absorbable"),
        (LAYER1, "absorbable"),
    ]
    assert reports[1].result.subset.tolist() == [0, 1, 2, 3]


def test_the_changed_values_would_change_the_verdict(tmp_path):
    # The checkpoint as saved again: its layer 1 is not absorbable, which is
    # what an unguarded scan of the first checkpoint would have reported.
    again = write_checkpoint(tmp_path / "again")
    save_file(_trained_on(), str(again / "model.safetensors"))
    assert _header(save(_trained_on())) == _header(save(_tensors()))  # same names and offsets
    reports = scan_module.scan(again, progress=False)
    assert [r.verdict for r in reports] == ["not_absorbable", "not_absorbable"]


@pytest.mark.parametrize("kind", list(CHANGES))
@pytest.mark.parametrize("block", [LAYER0, LAYER1])
def test_change_between_locate_and_read_stops_the_scan(ckpt, monkeypatch, kind, block):
    change, words = CHANGES[kind]
    weights = (ckpt / "model.safetensors").resolve()
    seen = _change_before(monkeypatch, block, change)
    with pytest.raises(CheckpointChangedError) as info:
        scan_module.scan(ckpt, progress=False)
    e = info.value
    assert isinstance(e, CheckpointError) and isinstance(e, ValueError)
    assert e.path == weights and e.block == block
    message = str(e)
    assert message.startswith(f"{block} of tiny-bert (")
    assert str(weights) in message and words in message
    assert "mmap length" not in message
    assert seen[-1] == block  # stopped at that block: nothing after it was read


@pytest.mark.parametrize("kind", list(CHANGES))
def test_checkpoint_get_refuses_a_changed_file(ckpt, kind):
    change, words = CHANGES[kind]
    reader = Checkpoint(ckpt)
    key = f"{LAYER1}.intermediate.dense.weight"
    first = reader.get(key)
    np.testing.assert_array_equal(first, _tensors()[key])
    change(ckpt / "model.safetensors")
    with pytest.raises(CheckpointChangedError, match=words) as info:
        reader.get(key)
    assert info.value.path == (ckpt / "model.safetensors").resolve()
    with pytest.raises(CheckpointChangedError, match=words):
        reader.check_unchanged()


def test_cli_stops_with_its_own_exit_code(ckpt, monkeypatch, capsys):
    _change_before(monkeypatch, LAYER1, _save_again)
    code = cli.main(["scan", str(ckpt), "--no-progress", "--json"])
    out, err = capsys.readouterr()
    assert code == cli.EXIT_CHANGED == 4
    assert out == ""  # no report, not even of the block decided before
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert lines[0].startswith(f"skipsearch: error: {LAYER1} of tiny-bert")
    assert str((ckpt / "model.safetensors").resolve()) in lines[0]
    assert "written again" in lines[0]


def _two_shards(directory: Path) -> tuple[Path, Path]:
    """The tiny BERT in two shards: layer 0's W_up alone in the first, every
    other tensor in the second."""
    directory.mkdir(parents=True)
    tensors = _tensors()
    alone = f"{LAYER0}.intermediate.dense.weight"
    first, second = directory / "model-1.safetensors", directory / "model-2.safetensors"
    save_file({alone: tensors[alone]}, str(first))
    save_file({k: v for k, v in tensors.items() if k != alone}, str(second))
    weight_map = {k: (first if k == alone else second).name for k in tensors}
    (directory / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    (directory / "config.json").write_text(json.dumps(_config()))
    for path in (first, second):
        _backdate(path)
    return first, second


def test_shard_saved_again_while_its_block_is_read(tmp_path, monkeypatch):
    # Layer 0's W_up is read from the first shard, which is then saved again
    # before the block's other tensors are read from the second: each read
    # on its own sees an unchanged file, but the block would mix two
    # versions of the weights. The check once the block is read stops it.
    first, _ = _two_shards(tmp_path / "sharded")
    alone = f"{LAYER0}.intermediate.dense.weight"
    get = Checkpoint.get
    reads: list = []

    def hooked(self, key):
        array = get(self, key)
        reads.append(key)
        if key == alone:
            _write_in_place(first, save({alone: -array}))
        return array

    monkeypatch.setattr(Checkpoint, "get", hooked)
    with pytest.raises(CheckpointChangedError, match="written again") as info:
        scan_module.scan(tmp_path / "sharded", progress=False)
    assert info.value.path == first.resolve() and info.value.block == LAYER0
    assert reads[0] == alone and len(reads) > 1  # the other tensors were read fine
    assert all(k.startswith(LAYER0) for k in reads)


def test_changed_while_located_is_caught_at_the_first_read(ckpt, monkeypatch):
    # A file saved again between the header read and safe_open's validation
    # is refused there, before any block is read.
    import safetensors

    real = safetensors.safe_open

    def saving_first(path, *args, **kwargs):
        _save_again(Path(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(safetensors, "safe_open", saving_first)
    with pytest.raises(CheckpointChangedError, match="while its header was read"):
        scan_module.scan(ckpt, progress=False)


@pytest.mark.parametrize("when", ["before the scan", "after the scan"])
def test_cli_header_describes_the_checkpoint_decided(ckpt, monkeypatch, capsys, when):
    # The command line describes each checkpoint (its header lines, the JSON
    # "models") from what it located before the blocks are decided: a file
    # saved again between the two, or after the scan's last read, would pair
    # the description of one version with the verdicts of another.
    scan = scan_module._decide_located

    def changing(*args, **kwargs):
        if when == "before the scan":
            _save_again(ckpt / "model.safetensors")
        reports = scan(*args, **kwargs)
        if when == "after the scan":
            _save_again(ckpt / "model.safetensors")
        return reports

    monkeypatch.setattr(scan_module, "_decide_located", changing)
    code = cli.main(["scan", str(ckpt), "--no-progress"])
    out, err = capsys.readouterr()
    assert code == cli.EXIT_CHANGED
    if when == "before the scan":
        assert out == ""
    else:
        # The rows are printed as their blocks are decided: a change found
        # after the last read marks them as the part before the stop.
        assert out.splitlines()[-1].startswith(
            "incomplete: the scan was stopped: a checkpoint file changed while it was scanned "
            "(on stderr) after 2 of 2 FFN blocks"
        )
    lines = err.strip().splitlines()
    # Before the scan, the first read of a block catches it (and names the
    # block); after it, the final check (the checkpoint alone).
    assert len(lines) == 1 and lines[0].startswith("skipsearch: error: ")
    assert "tiny-bert (" in lines[0]
    assert "written again" in lines[0]
