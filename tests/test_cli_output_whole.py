"""Every format of ``skipsearch scan`` arrives whole, or the scan exits 1
with one line on stderr (issue 43, items 2 and 10).

CPython's text streams drop what a short or refused write leaves (issue
#85393): a non-blocking pipe (asyncio, libuv and uvloop parents set
O_NONBLOCK) cut a 124 KB ``--json`` document at 65,536 bytes with exit 0,
and with ``PYTHONUNBUFFERED=1`` a disk that fills up cut the report short,
again with exit 0. The pipe here is shrunk to one page (Linux) so that a
small checkpoint overflows it; ``RLIMIT_FSIZE`` stands in for a disk that
fills up part-way through a write (the interpreter ignores SIGXFSZ, so the
write is short, then fails with EFBIG), and ``/dev/full`` for one that is
full from the start.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file
from skipsearch import cli

TIMEOUT = 120
LAYERS = 80
FORMATS = ["table", "--json", "--jsonl", "--csv", "--markdown"]

#: fcntl's F_SETPIPE_SZ (Linux; the fcntl module names it from Python 3.10).
F_SETPIPE_SZ = 1031


def many_layers(directory: Path, layers: int = LAYERS, seed: int = 0) -> Path:
    """A BERT-like checkpoint of ``layers`` generic 4 x 6 ReLU blocks (each
    decided in milliseconds): 80 of them make about 130 KB of ``--json``."""
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    tensors = {}
    for i in range(layers):
        base = f"bert.encoder.layer.{i}."
        tensors[base + "intermediate.dense.weight"] = rng.standard_normal((6, 4)).astype(np.float32)
        tensors[base + "output.dense.weight"] = rng.standard_normal((4, 6)).astype(np.float32)
    save_file(tensors, str(directory / "model.safetensors"))
    config = {
        "model_type": "bert",
        "hidden_act": "relu",
        "hidden_size": 4,
        "intermediate_size": 6,
        "num_hidden_layers": layers,
    }
    (directory / "config.json").write_text(json.dumps(config))
    return directory


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return many_layers(tmp_path_factory.mktemp("whole") / "tiny-bert")


def _env(**extra: str) -> dict:
    env = dict(os.environ)
    for name in ("PYTHONWARNINGS", "PYTHONIOENCODING", "TQDM_DISABLE", "PYTHONUNBUFFERED"):
        env.pop(name, None)
    env.update(extra)
    return env


def _cmd(ckpt: Path, fmt: str) -> list:
    flags = [] if fmt == "table" else [fmt]
    return [sys.executable, "-m", "skipsearch", "scan", str(ckpt), "--no-progress", *flags]


def check_whole(fmt: str, out: bytes, layers: int = LAYERS) -> None:
    """``out`` is the whole report of a scan of ``layers`` blocks."""
    text = out.decode("utf-8")
    names = [f"bert.encoder.layer.{i}" for i in range(layers)]
    if fmt == "--json":
        doc = json.loads(text)
        assert doc["complete"] is True
        assert [b["block"] for b in doc["blocks"]] == names
    elif fmt == "--jsonl":
        *rows, summary = [json.loads(line) for line in text.splitlines()]
        assert [r["block"] for r in rows] == names
        assert summary["complete"] is True
        assert sum(summary["summary"].values()) == layers
    elif fmt == "--csv":
        rows = list(csv.DictReader(io.StringIO(text)))
        assert [r["block"] for r in rows] == names
    elif fmt == "--markdown":
        rows = [line.split(" | ")[1] for line in text.splitlines() if line.startswith("| tiny")]
        assert rows == names
        assert text.rstrip("\n").splitlines()[-1].startswith("- time limit: ")
    else:
        rows = [line.split()[0] for line in text.splitlines() if line.startswith("bert.")]
        assert rows == names
        assert f"{layers} of {layers} FFN blocks not absorbable" in text.splitlines()[-1]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_SETPIPE_SZ is Linux's")
@pytest.mark.parametrize("fmt", FORMATS)
def test_non_blocking_pipe_gets_every_byte(ckpt, fmt):
    import fcntl

    read_end, write_end = os.pipe()
    try:
        fcntl.fcntl(write_end, F_SETPIPE_SZ, 4096)
        os.set_blocking(write_end, False)  # as an asyncio or libuv parent leaves it
        proc = subprocess.Popen(
            _cmd(ckpt, fmt), stdout=write_end, stderr=subprocess.PIPE, env=_env()
        )
    finally:
        os.close(write_end)
    try:
        # A slow reader: the pipe is full, and the writer gets EAGAIN, long
        # before anyone reads (the output is several times the pipe).
        time.sleep(0.5)
        chunks = []
        while True:
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        err = proc.stderr.read()
        assert proc.wait(timeout=TIMEOUT) == 0, err
    finally:
        os.close(read_end)
        proc.stderr.close()
        if proc.poll() is None:
            proc.kill()
    out = b"".join(chunks)
    assert len(out) > 2 * 4096 and err == b""
    check_whole(fmt, out)


def _one_error_line(proc: subprocess.CompletedProcess, *words: str) -> None:
    err = proc.stderr.decode("utf-8", "replace")
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("skipsearch: error: cannot write the report to stdout"), err
    for word in words:
        assert word in lines[0], err


def _limit_file_size() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
@pytest.mark.parametrize("unbuffered", ["", "1"], ids=["buffered", "PYTHONUNBUFFERED"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_disk_that_fills_up_is_a_failure(ckpt, tmp_path, fmt, unbuffered):
    env = _env(PYTHONUNBUFFERED=unbuffered) if unbuffered else _env()
    target = tmp_path / "report.out"
    with open(target, "wb") as out:
        proc = subprocess.run(
            _cmd(ckpt, fmt),
            stdout=out,
            stderr=subprocess.PIPE,
            env=env,
            timeout=TIMEOUT,
            preexec_fn=_limit_file_size,
        )
    assert proc.returncode == cli.EXIT_NO_OUTPUT, proc.stderr
    _one_error_line(proc, "File too large")
    assert target.stat().st_size == 4096  # what fitted, and the exit code says it is not all


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("unbuffered", ["", "1"], ids=["buffered", "PYTHONUNBUFFERED"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_full_disk_is_a_failure(ckpt, fmt, unbuffered):
    env = _env(PYTHONUNBUFFERED=unbuffered) if unbuffered else _env()
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            _cmd(ckpt, fmt), stdout=full, stderr=subprocess.PIPE, env=env, timeout=TIMEOUT
        )
    assert proc.returncode == cli.EXIT_NO_OUTPUT, proc.stderr
    _one_error_line(proc, "No space left")


def test_write_all_resumes_short_writes(monkeypatch):
    # os.write may take fewer bytes than given, or none (EAGAIN): every
    # byte still goes out, in order.
    written = bytearray()
    calls = []

    def short_write(fd, data):
        calls.append(len(data))
        if len(calls) % 3 == 0:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        n = min(len(data), 7)
        written.extend(bytes(data[:n]))
        return n

    monkeypatch.setattr(cli.os, "write", short_write)
    monkeypatch.setattr(cli, "_wait_writable", lambda fd: None)
    data = bytes(range(256)) * 3
    cli.write_all(1, data)
    assert bytes(written) == data and len(calls) > len(data) // 7


def test_write_all_gives_up_on_an_output_that_takes_nothing(monkeypatch):
    monkeypatch.setattr(cli.os, "write", lambda fd, data: 0)
    monkeypatch.setattr(cli, "_wait_writable", lambda fd: None)
    with pytest.raises(OSError, match="takes no more bytes"):
        cli.write_all(1, b"report")
