"""The command line's contract: every failure is one line on stderr with a
documented exit code and no traceback, and a finished scan is never lost to
an output stream that cannot encode it.

Each case runs ``python -m skipsearch scan`` (or the CLI's ``main`` in a
fresh interpreter, with the decision patched to fail as the core fails) in
a subprocess on a tiny checkpoint: layer 0 generic (not absorbable), layer 1
planted absorbable with flip set {0, 1, 2, 3}.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from skipsearch import cli

from tests.test_scan import write_checkpoint
from tests.test_scan_streaming import write_sharded

TIMEOUT = 120

# The exit codes the manual (docs/scanning.md) and `skipsearch scan --help` document.
DOCUMENTED = {
    0: "success",
    1: "the report could not be written",
    2: "usage or input error",
    3: "an optional component is not installed",
    4: "a checkpoint file changed while it was scanned",
    5: "out of memory, or the worker threads could not be started",  # or the float env
    70: "an unexpected error: a bug in skipsearch",
    130: "interrupted",
}


def _env(**extra: str) -> dict:
    env = dict(os.environ)
    for name in ("PYTHONWARNINGS", "PYTHONIOENCODING", "TQDM_DISABLE"):
        env.pop(name, None)
    env["OPENBLAS_NUM_THREADS"] = "1"  # no BLAS threads to fail under a limit
    env.update(extra)
    return env


def _run(args: list, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    options = dict(stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT)
    options.update(kwargs)
    return subprocess.run(args, env=_env() if env is None else env, **options)


def _scan_cmd(*argv: str, python_flags: tuple = ()) -> list:
    return [sys.executable, *python_flags, "-m", "skipsearch", "scan", *argv, "--no-progress"]


def _one_error_line(proc: subprocess.CompletedProcess, *words: str, kind: str = "error") -> str:
    err = proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"skipsearch: {kind}: "), err
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


@pytest.fixture
def ckpt(tmp_path: Path) -> Path:
    return write_checkpoint(tmp_path / "tiny-bert")


def _check_table(text: str) -> None:
    rows = [line.split() for line in text.splitlines() if line.startswith("bert.encoder.layer.")]
    assert [(r[0], r[6]) for r in rows] == [
        ("bert.encoder.layer.0", "not_absorbable"),
        ("bert.encoder.layer.1", "absorbable"),
    ], text
    assert "2 FFN blocks: 1 absorbable, 1 not absorbable" in text


# -- the documented codes ---------------------------------------------------------------------


def test_every_exit_code_is_documented():
    codes = {
        cli.EXIT_OK,
        cli.EXIT_NO_OUTPUT,
        cli.EXIT_USAGE,
        cli.EXIT_MISSING,
        cli.EXIT_CHANGED,
        cli.EXIT_RESOURCES,
        cli.EXIT_BUG,
        cli.EXIT_INTERRUPTED,
    }
    assert codes == set(DOCUMENTED)
    page = Path(__file__).resolve().parents[1] / "docs" / "scanning.md"
    section = page.read_text(encoding="utf-8")
    section = section[: section.index("\n## ", 1)]
    epilog = " ".join(cli.EPILOG.split())
    for code, words in DOCUMENTED.items():
        assert f"\n  {code} " in cli.EPILOG, code
        assert words in epilog, words
        assert f"| {code} |" in section, code


# -- warnings turned into errors ----------------------------------------------------------------


@pytest.fixture
def stray_shard(tmp_path: Path) -> Path:
    """A sharded checkpoint whose folder holds a .safetensors file its index does not name."""
    path, names, _ = write_sharded(tmp_path / "sharded", "F32")
    shutil.copy(path / names[0], path / "stray.safetensors")
    return path


@pytest.mark.parametrize("how", ["-W error", "PYTHONWARNINGS=error"])
def test_unindexed_shard_warning_as_error(stray_shard, how):
    if how == "-W error":
        proc = _run(_scan_cmd(str(stray_shard), python_flags=("-W", "error")))
    else:
        proc = _run(_scan_cmd(str(stray_shard)), env=_env(PYTHONWARNINGS="error"))
    assert proc.returncode == cli.EXIT_USAGE
    assert proc.stdout == b""
    _one_error_line(proc, "UnindexedShardWarning", "stray.safetensors", "turned into an error")


def test_unindexed_shard_warning_is_one_line_otherwise(stray_shard):
    proc = _run(_scan_cmd(str(stray_shard), "--json"))
    assert proc.returncode == 0
    assert len(json.loads(proc.stdout)["blocks"]) == 4
    _one_error_line(proc, "stray.safetensors", kind="warning")


def test_checkpoint_series_warning_as_error(tmp_path):
    trainer = write_checkpoint(tmp_path / "trainer")
    write_checkpoint(trainer / "checkpoint-500")
    proc = _run(_scan_cmd(str(trainer)), env=_env(PYTHONWARNINGS="error"))
    assert proc.returncode == cli.EXIT_USAGE
    assert proc.stdout == b""
    _one_error_line(proc, "CheckpointSeriesWarning", "checkpoint-500")


# -- failures of the machine and of the code, as the core raises them -----------------------


def _patched_main(ckpt: Path, raise_: str, *argv: str) -> subprocess.CompletedProcess:
    """Run the CLI's main in a fresh interpreter whose block decision raises
    ``raise_`` (a Python expression)."""
    script = textwrap.dedent(
        f"""
        import sys
        from skipsearch._scan import decide
        from skipsearch import cli

        def fail(*args, **kwargs):
            raise {raise_}

        decide.find_absorbing_subset = fail
        sys.exit(cli.main({["scan", str(ckpt), "--no-progress", *argv]!r}))
        """
    )
    return _run([sys.executable, "-c", script])


# What the core raises when its pool cannot start (rust/error.rs, ThreadPool).
THREADS = "RuntimeError({!r})".format(
    "could not start worker threads: Resource temporarily unavailable (os error 11)"
)


@pytest.mark.parametrize("fmt", [(), ("--json",), ("--csv",), ("--markdown",)])
def test_worker_threads_that_cannot_start(ckpt, fmt):
    proc = _patched_main(ckpt, THREADS, *fmt)
    assert proc.returncode == cli.EXIT_RESOURCES
    assert proc.stdout == b""
    _one_error_line(proc, "could not start worker threads", "ulimit -u", "--threads")


def test_python_threads_that_cannot_start(ckpt):
    proc = _patched_main(ckpt, 'RuntimeError("can\'t start new thread")')
    assert proc.returncode == cli.EXIT_RESOURCES
    _one_error_line(proc, "can't start new thread")


def test_floating_point_environment_that_cannot_be_set(ckpt):
    # What the core raises (rust/error.rs, FloatEnvironment): an environment
    # problem, named as such, not reported as a bug.
    message = (
        "the floating-point environment is not the IEEE default and could not be set "
        "(flush-to-zero is on); every bound skipsearch proves assumes round-to-nearest"
    )
    proc = _patched_main(ckpt, f"RuntimeError({message!r})")
    assert proc.returncode == cli.EXIT_RESOURCES
    line = _one_error_line(proc, "floating-point environment", "flush-to-zero")
    assert "bug" not in line


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or shutil.which("prlimit") is None,
    reason="needs prlimit (util-linux)",
)
def test_worker_threads_that_cannot_start_for_real(ckpt):
    # 256 workers of 16 MB stacks each need 4 GB of address space; the
    # interpreter with numpy needs about 150 MB. Under a 1 GB limit the core
    # cannot start its pool (a limit that binds root too, unlike ulimit -u).
    limit = str(1 << 30)
    proc = _run(["prlimit", f"--as={limit}", *_scan_cmd(str(ckpt), "--threads", "256")])
    assert proc.returncode == cli.EXIT_RESOURCES, proc.stderr
    assert proc.stdout == b""
    _one_error_line(proc, "could not start worker threads")


@pytest.mark.parametrize(
    "raise_,words",
    [
        ("MemoryError()", ["out of memory"]),
        (
            'MemoryError("Unable to allocate 4.00 GiB for an array with shape (32768, 32768)")',
            ["out of memory", "Unable to allocate 4.00 GiB"],
        ),
    ],
)
def test_memory_error(ckpt, raise_, words):
    proc = _patched_main(ckpt, raise_, "--json")
    assert proc.returncode == cli.EXIT_RESOURCES
    assert proc.stdout == b""
    _one_error_line(proc, *words)


@pytest.mark.parametrize(
    "raise_,words",
    [
        ('ZeroDivisionError("division by zero")', ["ZeroDivisionError: division by zero"]),
        ("AssertionError()", ["AssertionError"]),
        ('RuntimeError("skipsearch core failed unexpectedly (a bug)")', ["RuntimeError"]),
        ('KeyError("W_up")', ["KeyError: 'W_up'"]),
    ],
)
def test_unexpected_exception_is_a_reported_bug(ckpt, raise_, words):
    proc = _patched_main(ckpt, raise_)
    assert proc.returncode == cli.EXIT_BUG
    assert proc.stdout == b""
    line = _one_error_line(proc, *words, "a bug in skipsearch", "-vv", kind="internal error")
    assert "report it" in line


def test_unexpected_exception_traceback_with_vv(ckpt):
    proc = _patched_main(ckpt, 'ZeroDivisionError("division by zero")', "-vv")
    assert proc.returncode == cli.EXIT_BUG
    err = proc.stderr.decode()
    assert "Traceback" in err and "ZeroDivisionError" in err
    assert err.strip().splitlines()[-1].startswith("skipsearch: internal error: ZeroDivisionError")


# -- no stdout ----------------------------------------------------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="closes the descriptor with a POSIX shell")
@pytest.mark.parametrize("fmt", [(), ("--json",), ("--csv",), ("--markdown",)])
def test_closed_stdout(ckpt, fmt):
    # `>&-`: the interpreter starts without descriptor 1, so sys.stdout is None.
    proc = _run(["sh", "-c", 'exec "$@" >&-', "sh", *_scan_cmd(str(ckpt), *fmt)], stdout=None)
    assert proc.returncode == cli.EXIT_NO_OUTPUT
    _one_error_line(proc, "no output stream", "stdout")


@pytest.mark.parametrize("fmt", [(), ("--json",)])
def test_missing_stdout_in_process(ckpt, fmt, monkeypatch, capsys):
    # pythonw: sys.stdout is None.
    monkeypatch.setattr(sys, "stdout", None)
    code = cli.main(["scan", str(ckpt), "--no-progress", *fmt])
    monkeypatch.undo()
    _, err = capsys.readouterr()
    assert code == cli.EXIT_NO_OUTPUT
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("skipsearch: error: there is no output stream")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_stdout_that_fails_to_write(ckpt):
    with open("/dev/full", "wb") as full:
        proc = _run(_scan_cmd(str(ckpt)), stdout=full)
    assert proc.returncode == cli.EXIT_NO_OUTPUT
    _one_error_line(proc, "cannot write the report to stdout", "No space left")


# -- stdout that cannot encode a name -----------------------------------------------------------


NAME = "mod\u00e8le-\u00fc"  # modèle-ü
WIDE = "\u6a21\u578b-\u00fc"  # 模型-ü: not in cp1252 but for the ü


@pytest.mark.parametrize("encoding", ["ascii", "cp1252"])
def test_table_with_unencodable_model_name(tmp_path, encoding):
    path = write_checkpoint(tmp_path / WIDE)
    proc = _run(_scan_cmd(str(path)), env=_env(PYTHONIOENCODING=encoding))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == b""
    out = proc.stdout.decode(encoding)
    _check_table(out)
    shown = "\\u6a21\\u578b-" + ("\\xfc" if encoding == "ascii" else "\u00fc")
    assert f"model: {shown} (bert, 2 FFN blocks" in out
    assert str(tmp_path / "x")[:-1].encode(encoding, "backslashreplace").decode(encoding) in out


def test_every_format_with_an_ascii_stdout(tmp_path):
    path = write_checkpoint(tmp_path / NAME)
    escaped = "mod\\xe8le-\\xfc"
    env = _env(PYTHONIOENCODING="ascii")
    table = _run(_scan_cmd(str(path)), env=env)
    assert table.returncode == 0 and table.stderr == b""
    _check_table(table.stdout.decode("ascii"))
    assert f"model: {escaped} (bert" in table.stdout.decode("ascii")

    csv_ = _run(_scan_cmd(str(path), "--csv"), env=env)
    assert csv_.returncode == 0 and csv_.stderr == b""
    rows = csv_.stdout.decode("ascii").splitlines()
    assert len(rows) == 3 and rows[0].startswith("model,step,family,block")
    assert [r.split(",")[0] for r in rows[1:]] == [escaped, escaped]
    assert [r.split(",")[9] for r in rows[1:]] == ["not_absorbable", "absorbable"]

    md = _run(_scan_cmd(str(path), "--markdown"), env=env)
    assert md.returncode == 0 and md.stderr == b""
    lines = [x for x in md.stdout.decode("ascii").splitlines() if x.startswith(f"| {escaped} |")]
    assert len(lines) == 2 and "| absorbable |" in lines[1] and "| 0 1 2 3 |" in lines[1]

    doc = _run(_scan_cmd(str(path), "--json"), env=env)
    assert doc.returncode == 0 and doc.stderr == b""
    blocks = json.loads(doc.stdout)["blocks"]  # JSON escapes on its own: nothing is lost
    assert [(b["model"], b["verdict"]) for b in blocks] == [
        (NAME, "not_absorbable"),
        (NAME, "absorbable"),
    ]


def test_bound_mark_still_downgraded(tmp_path):
    # The distance bound keeps its readable ASCII spelling, not an escape.
    path = write_checkpoint(tmp_path / NAME)
    proc = _run(_scan_cmd(str(path), "--no-distance"), env=_env(PYTHONIOENCODING="ascii"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode("ascii")
    assert ">= 0." in out and "\\u2265" not in out


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (("--tol", "nan"), ("--tol", "skipsearch scan --help")),
        (("--threads", "0"), ("--threads",)),
        (("--bogus",), ("unrecognized arguments: --bogus",)),
        (("--json", "--csv"), ("not allowed with",)),
    ],
)
def test_usage_errors_are_one_line(ckpt, argv, words):
    proc = _run(_scan_cmd(str(ckpt), *argv))
    assert proc.returncode == 2
    _one_error_line(proc, *words)
    assert proc.stdout == b""
