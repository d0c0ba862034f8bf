"""``skipsearch solve FILE ...``: the exact subset-sum engine on instance
files from the command line, under the contract of ``skipsearch scan``
(one error line, documented exit codes, whole output, Ctrl-C), and the
instance readers behind it (``skipsearch._engine.instances``).

Solutions are checked here against ``A x = b`` with the instance parsed
independently of the package's reader. The tests marked ``new_engine``
need ``subset_sum``'s ``executor``, ``checkpoint`` and ``progress``
keywords and are skipped until the engine has them; the others hand the
CLI's keywords to a wrapper of the engine and check what arrives.
"""

from __future__ import annotations

import errno
import importlib
import inspect
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import Executor
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import skipsearch as engine
from skipsearch import cli
from skipsearch._engine.instances import (
    InstanceError,
    format_solution,
    read_instance,
    read_solution,
)

TIMEOUT = 120
#: The module (``skipsearch.scan`` is also the function's name on the package).
SCAN = importlib.import_module("skipsearch.scan")
DATA = Path(__file__).resolve().parents[1] / "benches" / "data" / "qoblib_marketsplit"
MS06 = DATA / "ms_06_050_001.dat"
MS07 = DATA / "ms_07_050_001.dat"
#: ms_06_050_001's right-hand side, as the file has it.
MS06_B = [616, 685, 662, 614, 635, 645]

#: The first lines of a QOBLIB solution file (``ZIB-AOPT/QOBLIB`` at
#: de698d4, ``01-marketsplit/instances/instance_gen_set/ms_08_050_000.opt.sol``).
QOBLIB_SOL_HEAD = (
    "# Solution for ./../instances/ms_08_050_000\n# Objective value = 0\nx#1 1\nx#2 0\n"
)
#: How QOBLIB's checker finds a variable's value (``check_marketsplit.rs``).
QOBLIB_SOL_LINE = re.compile(r"x#(\d+)\s+([01])")

_PARAMETERS = inspect.signature(engine.subset_sum).parameters
new_engine = pytest.mark.skipif(
    not {"executor", "checkpoint", "progress"} <= set(_PARAMETERS),
    reason="subset_sum has no executor/checkpoint/progress keywords yet",
)


def independent_read(path: Path) -> tuple[list[list[int]], list[int]]:
    """A QOBLIB ``.dat`` file read without the package: its rows and right-hand side."""
    rows = [
        [int(x) for x in line.split()]
        for line in path.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    k, n = rows[0]
    return [r[:n] for r in rows[1 : 1 + k]], [r[n] for r in rows[1 : 1 + k]]


def satisfies(path: Path, x: list[int]) -> bool:
    rows, rhs = independent_read(path)
    return all(sum(a * v for a, v in zip(row, x)) == b for row, b in zip(rows, rhs))


def _env() -> dict:
    env = dict(os.environ)
    for name in ("PYTHONWARNINGS", "PYTHONIOENCODING", "TQDM_DISABLE"):
        env.pop(name, None)
    return env


def run_cli(*argv: str, timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "skipsearch", "solve", *argv],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def in_process(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(["solve", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str, *words: str, kind: str = "error") -> str:
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"skipsearch: {kind}: "), err
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def table_rows(out: str) -> list[list[str]]:
    """The rows of the table, split into cells (no cell holds a space here)."""
    lines = out.splitlines()
    assert lines[0].split() == ["instance", "size", "status", "seconds", "nodes", "solution"]
    return [line.split() for line in lines[1:-1]]


def write_json(path: Path, A, b) -> Path:
    path.write_text(json.dumps({"A": A, "b": b}))
    return path


# An infeasible 3 x 12 instance: b is reached by no subset (every one of
# the 4096 is tried in the test).
INFEASIBLE_A = [
    [3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41],
    [2, 9, 4, 8, 6, 1, 12, 7, 5, 10, 3, 11],
    [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
]
INFEASIBLE_B = [100, 40, 4]


# -- solving ---------------------------------------------------------------------------------


def test_solves_a_qoblib_instance():
    proc = run_cli(str(MS06))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    (row,) = table_rows(proc.stdout)
    assert row[:3] == [str(MS06), "6x50", "feasible"]
    x = [int(c) for c in row[5]]
    assert len(x) == 50 and set(x) <= {0, 1}
    assert satisfies(MS06, x)
    assert proc.stdout.splitlines()[-1].startswith("1 instance: 1 feasible (")


def test_infeasible_json_instance(tmp_path):
    A, b = np.array(INFEASIBLE_A), np.array(INFEASIBLE_B)
    subsets = (np.arange(4096)[:, None] >> np.arange(12)) & 1
    assert not np.any(np.all(subsets @ A.T == b, axis=1))  # infeasible indeed
    path = write_json(tmp_path / "none.json", INFEASIBLE_A, INFEASIBLE_B)
    proc = run_cli(str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    (rec,) = [json.loads(line) for line in proc.stdout.splitlines()]
    assert (rec["status"], rec["solution"], rec["checked"], rec["k"], rec["n"]) == (
        "infeasible",
        None,
        None,
        3,
        12,
    )


def test_json_records(tmp_path):
    infeasible = write_json(tmp_path / "none.json", INFEASIBLE_A, INFEASIBLE_B)
    proc = run_cli(str(MS06), str(infeasible), "--json")
    assert proc.returncode == 0, proc.stderr
    first, second = [json.loads(line) for line in proc.stdout.splitlines()]
    assert set(first) == {
        "instance",
        "name",
        "k",
        "n",
        "status",
        "solution",
        "checked",
        "solution_file",
        "nodes",
        "seconds",
        "method",
        "exact",
        "seed",
    }
    assert (first["instance"], first["name"], first["k"], first["n"]) == (
        str(MS06),
        "ms_06_050_001",
        6,
        50,
    )
    assert first["status"] == "feasible" and first["checked"] is True and first["exact"] is True
    assert first["seed"] == 20_260_423  # the engine's fixed default
    assert satisfies(MS06, first["solution"])
    assert first["solution_file"] is None
    assert isinstance(first["nodes"], int) and first["nodes"] >= 0
    assert 0 < first["seconds"] < 60
    assert first["method"][0].startswith("feasibility jump") and "presolve" in first["method"]
    assert (second["instance"], second["status"]) == (str(infeasible), "infeasible")


def test_solution_file_in_qoblib_format(tmp_path):
    out = tmp_path / "solutions" / "new"  # created
    proc = run_cli(str(MS06), str(MS07), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = table_rows(proc.stdout)
    assert [r[5] for r in rows] == [
        str(out / "ms_06_050_001.opt.sol"),
        str(out / "ms_07_050_001.opt.sol"),
    ]
    assert sorted(os.listdir(out)) == ["ms_06_050_001.opt.sol", "ms_07_050_001.opt.sol"]
    for instance in (MS06, MS07):
        text = (out / f"{instance.stem}.opt.sol").read_text()
        lines = text.splitlines()
        assert lines[:2] == [f"# Solution for {instance.stem}", "# Objective value = 0"]
        assert qoblib_layout(text) and qoblib_layout(QOBLIB_SOL_HEAD)
        n = len(independent_read(instance)[0][0])
        assert lines[2:] == [f"x#{j} {v}" for j, v in QOBLIB_SOL_LINE.findall(text)]
        parsed = dict(QOBLIB_SOL_LINE.findall(text))
        assert sorted(int(j) for j in parsed) == list(range(1, n + 1))
        x = [int(parsed[str(j)]) for j in range(1, n + 1)]
        assert satisfies(instance, x)
        assert read_solution(out / f"{instance.stem}.opt.sol", n).tolist() == x


def qoblib_layout(text: str) -> bool:
    """Whether ``text`` is laid out as QOBLIB's solution files: the two
    comment lines, then one ``x#j v`` a line."""
    lines = text.splitlines()
    return (
        lines[0].startswith("# Solution for ")
        and lines[1] == "# Objective value = 0"
        and all(re.fullmatch(r"x#[1-9][0-9]* [01]", line) for line in lines[2:])
        and text.endswith("\n")
    )


def test_json_record_names_the_solution_file(capsys, tmp_path):
    code, out, _ = in_process(capsys, str(MS06), "--json", "-o", str(tmp_path))
    assert code == 0
    rec = json.loads(out)
    assert rec["solution_file"] == str(tmp_path / "ms_06_050_001.opt.sol")
    assert read_solution(rec["solution_file"], 50).tolist() == rec["solution"]


def test_format_solution_matches_qoblib_layout():
    text = format_solution("ms_08_050_000", [1, 0])
    assert text == "# Solution for ms_08_050_000\n# Objective value = 0\nx#1 1\nx#2 0\n"
    assert text.splitlines()[1:] == QOBLIB_SOL_HEAD.splitlines()[1:]


def test_limits_leave_an_instance_unsettled_with_exit_0(capsys):
    code, out, err = in_process(capsys, str(DATA / "ms_08_050_001.dat"), "--node-limit", "1000")
    assert (code, err) == (0, "")
    (row,) = table_rows(out)
    assert row[2:3] + row[5:] == ["node_limit", "-"]
    assert out.splitlines()[-1].startswith("1 instance: 1 node_limit (")


# -- bad input -------------------------------------------------------------------------------

BAD_DAT = {
    "empty.dat": ("", "the file is empty"),
    "comments.dat": ("# nothing\n\n# more\n", "no data"),
    "header.dat": ("2 3 4\n1 2 3 4\n", "line 1: expected the counts 'k n'"),
    "fewrows.dat": (
        "# c\n3 2\n1 2 3\n4 5 6\n",
        "2 rows after the counts 'k n' (line 2), expected 3",
    ),
    "manyrows.dat": ("1 2\n1 2 3\n4 5 6\n", "line 3: a row beyond the 1"),
    "fewentries.dat": ("2 3\n1 2 3 4\n1 2\n", "line 3: row 2 has 2 numbers, expected 4"),
    "manyentries.dat": ("1 3\n1 2 3 4 5\n", "row 1 has 5 numbers, expected 4"),
    "norhs.dat": ("2 3\n1 2 3 6\n1 2 3\n", "line 3: row 2 has its 3 coefficients but no right-"),
    "float.dat": ("1 3\n1 2.5 3 4\n", "line 2 (row 1), entry 2: expected an integer, got '2.5'"),
    "word.dat": ("1 3\n1 x 3 4\n", "entry 2: expected an integer, got 'x'"),
    # A trailing comment is named, not counted among the numbers.
    "trailing.dat": ("1 3\n1 2 3 3 # c\n", "entry 5: expected an integer, got '#'"),
    "int64.dat": ("1 2\n9223372036854775808 1 1\n", "entry 1: 9223372036854775808 does not fit"),
    "bound.dat": ("1 2\n2305843009213693952 2305843009213693952 0\n", "below 2**62"),
    "zero.dat": ("0 3\n", "the counts 'k n' must be positive"),
    "suffix.txt": ("1 1\n1 1\n", "suffix '.txt'; expected an instance file ending in .dat"),
}

BAD_JSON = {
    "syntax.json": ('{"A": [[1, 2]], ', "not valid JSON"),
    "list.json": ("[[1, 2]]", "expected a JSON object"),
    "noA.json": ('{"b": [1]}', 'no "A" (the k x n coefficients)'),
    "nob.json": ('{"A": [[1, 2]]}', 'no "b" (the right-hand side)'),
    "text.json": ('{"A": [[1, "2"]], "b": [1]}', '"A" row 1, entry 2: expected an integer'),
    "frac.json": ('{"A": [[1, 2.5]], "b": [1]}', "expected an integer, got 2.5"),
    "bool.json": ('{"A": [[1, 2]], "b": [true]}', '"b", entry 1: expected an integer, got true'),
    "ragged.json": ('{"A": [[1, 2], [3]], "b": [1, 1]}', '"A" row 2 has 1 entry, row 1 has 2'),
    "shortb.json": ('{"A": [[1, 2], [3, 4]], "b": [1]}', '"b" has 1 entry, "A" has 2 rows'),
    "flat.json": ('{"A": [1, 2], "b": [1]}', '"A" row 1 must be a list of integers'),
    "huge.json": ('{"A": [[1, 99999999999999999999]], "b": [1]}', "does not fit in int64"),
    "twice.json": ('{"A": [[1, 2]], "A": [[3, 4]], "b": [3]}', "the key 'A' is given twice"),
}


def _bad_npz(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    cases = {
        "noB.npz": ({"A": np.ones((2, 3), dtype=np.int64)}, "no array 'b' in the archive"),
        "float.npz": (
            {"A": np.ones((2, 3)), "b": np.ones(2, dtype=np.int64)},
            "array 'A' must hold integers, got dtype float64",
        ),
        "shape.npz": (
            {"A": np.ones((2, 3), dtype=np.int64), "b": np.ones((2, 1), dtype=np.int64)},
            "array 'b' must have shape (k,), got (2, 1)",
        ),
        "rows.npz": (
            {"A": np.ones((2, 3), dtype=np.int64), "b": np.ones(3, dtype=np.int64)},
            "array 'b' has 3 entries, 'A' has 2 rows",
        ),
        "uint.npz": (
            {"A": np.array([[2**63, 1]], dtype=np.uint64), "b": np.ones(1, dtype=np.int64)},
            "row 1, entry 1: 9223372036854775808 does not fit in int64",
        ),
        "strings.npz": (
            {"A": np.array([["a", "b"]]), "b": np.ones(1, dtype=np.int64)},
            "array 'A' must hold integers",
        ),
    }
    out = {}
    for name, (arrays, message) in cases.items():
        np.savez(tmp_path / name, **arrays)
        out[name] = (tmp_path / name, message)
    (tmp_path / "garbage.npz").write_bytes(b"not a zip file at all")
    out["garbage.npz"] = (tmp_path / "garbage.npz", "not an .npz archive")
    np.save(tmp_path / "single.npy", np.ones(3))
    (tmp_path / "single.npy").rename(tmp_path / "single.npz")
    out["single.npz"] = (tmp_path / "single.npz", "a single .npy array, not an .npz archive")
    return out


def _bad_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    cases = {}
    for name, (text, message) in {**BAD_DAT, **BAD_JSON}.items():
        (tmp_path / name).write_text(text)
        cases[name] = (tmp_path / name, message)
    cases.update(_bad_npz(tmp_path))
    cases["missing.dat"] = (tmp_path / "missing.dat", "no such file")
    (tmp_path / "folder.dat").mkdir()
    cases["folder.dat"] = (tmp_path / "folder.dat", "is a directory, not an instance file")
    return cases


CASES = [*BAD_DAT, *BAD_JSON, "noB.npz", "float.npz", "shape.npz", "rows.npz", "uint.npz"]
CASES += ["strings.npz", "garbage.npz", "single.npz", "missing.dat", "folder.dat"]


@pytest.mark.parametrize("case", CASES)
def test_bad_instance_is_one_line_and_exit_2(tmp_path, capsys, case):
    path, message = _bad_files(tmp_path)[case]
    with pytest.raises(InstanceError, match=re.escape(message)):
        read_instance(path)
    # A good instance first: nothing is solved when any file is bad.
    code, out, err = in_process(capsys, str(MS06), str(path))
    assert (code, out) == (cli.EXIT_USAGE, "")
    line = one_error_line(err, message)
    assert line.startswith(f"skipsearch: error: {path}: ")


@pytest.mark.parametrize("case", ["norhs.dat", "garbage.npz", "ragged.json"])
def test_bad_instance_in_a_fresh_interpreter(tmp_path, case):
    path, message = _bad_files(tmp_path)[case]
    proc = run_cli(str(path))
    assert (proc.returncode, proc.stdout) == (2, "")
    one_error_line(proc.stderr, str(path), message)


def test_readers_agree_on_a_qoblib_instance(tmp_path):
    A, b = read_instance(MS06)
    rows, rhs = independent_read(MS06)
    assert A.dtype == np.int64 and b.dtype == np.int64
    assert A.tolist() == rows and b.tolist() == rhs == MS06_B
    np.savez(tmp_path / "ms.npz", A=A.astype(np.int32), b=b)
    write_json(tmp_path / "ms.json", rows, rhs)
    commas = tmp_path / "commas.dat"  # QOBLIB's checker takes commas as separators
    commas.write_text(
        "# c\n6,50\n" + "\n".join(", ".join(map(str, r + [c])) for r, c in zip(rows, rhs))
    )
    for other in ("ms.npz", "ms.json", "commas.dat"):
        A2, b2 = read_instance(tmp_path / other)
        assert A2.dtype == np.int64 and A2.tolist() == rows and b2.tolist() == rhs


def test_terminal_controls_in_a_path_are_escaped(tmp_path, capsys):
    path = tmp_path / "evil\x1b[31m\u202e.dat"
    path.write_text("1 2\n1 2\n")
    code, _, err = in_process(capsys, str(path))
    assert code == cli.EXIT_USAGE
    line = one_error_line(err, "\\x1b[31m\\u202e.dat", "row 1 has its 2 coefficients")
    assert "\x1b" not in line and "\u202e" not in line


# -- options ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (("--connect-timeout", "3"), ("--connect-timeout applies to --scheduler",)),
        (("--checkpoint-interval", "3"), ("--checkpoint-interval applies to --checkpoint",)),
        (("--time-limit", "-1"), ("argument --time-limit", "'none'")),
        (("--node-limit", "x"), ("argument --node-limit", "got 'x'")),
        (("--connect-timeout", "0", "--scheduler", "tcp://h:1"), ("positive number",)),
        (("--threads", "0"), ("argument --threads",)),
        (("--seed", "-1"), ("argument --seed", "got '-1'")),
        (("--seed", "1_000"), ("argument --seed", "decimal digits")),
        (("--seed", "9" * 5000), ("argument --seed", "999...'")),
        (("-o", str(MS06)), ("--output", "not a folder")),
    ],
)
def test_option_errors(capsys, argv, words):
    code, out, err = in_process(capsys, str(MS06), *argv)
    assert (code, out) == (cli.EXIT_USAGE, "")
    one_error_line(err, *words)


def test_two_instances_of_one_name_cannot_share_an_output_folder(tmp_path, capsys):
    copy = tmp_path / "other" / MS06.name
    copy.parent.mkdir()
    copy.write_bytes(MS06.read_bytes())
    code, _, err = in_process(capsys, str(MS06), str(copy), "-o", str(tmp_path / "out"))
    assert code == cli.EXIT_USAGE
    one_error_line(err, str(MS06), str(copy), "ms_06_050_001.opt.sol")
    assert not (tmp_path / "out").exists()


def test_scheduler_that_does_not_answer():
    pytest.importorskip("distributed")
    start = time.monotonic()
    proc = run_cli(str(MS06), "--scheduler", "tcp://127.0.0.1:1", "--connect-timeout", "2")
    elapsed = time.monotonic() - start
    assert (proc.returncode, proc.stdout) == (2, "")
    assert one_error_line(proc.stderr) == (
        "skipsearch: error: scheduler tcp://127.0.0.1:1 did not answer within 2 s"
    )
    assert elapsed < 8, elapsed  # the 2 s, and the interpreter's start


def test_scheduler_address_that_is_none(capsys):
    pytest.importorskip("distributed")
    code, _, err = in_process(capsys, str(MS06), "--scheduler", "nonsense")
    assert code == cli.EXIT_USAGE
    one_error_line(err, "--scheduler nonsense: not a scheduler address", "missing port")


def test_scheduler_without_dask_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "distributed", None)
    code, out, err = in_process(capsys, str(MS06), "--scheduler", "tcp://127.0.0.1:8786")
    assert (code, out) == (cli.EXIT_MISSING, "")
    one_error_line(err, "--scheduler needs dask.distributed", "pip install 'skipsearch[dask]'")


# -- what reaches the engine -----------------------------------------------------------------


def fake_engine(monkeypatch, calls: list, *, interrupt_at=None, progress_records=(), wrong=False):
    """Wrap ``subset_sum``: record each call's keywords, hand each progress
    record to ``progress``, press Ctrl-C at call ``interrupt_at``, or spoil
    the solution; the keywords the engine may not have yet are dropped
    before the real engine runs."""
    real = engine.subset_sum

    def wrapped(A, b, **kwargs):
        calls.append(dict(kwargs))
        if interrupt_at is not None and len(calls) == interrupt_at + 1:
            raise KeyboardInterrupt
        for record in progress_records if "progress" in kwargs else ():
            kwargs["progress"](record)
        for name in ("executor", "checkpoint", "checkpoint_interval", "progress"):
            kwargs.pop(name, None)
        result = real(A, b, **kwargs)
        if wrong and result.solution is not None:
            spoiled = result.solution.copy()
            spoiled[0] ^= 1
            object.__setattr__(result, "solution", spoiled)
        return result

    monkeypatch.setattr(engine, "subset_sum", wrapped)


def test_only_the_options_given_reach_the_engine(monkeypatch, capsys):
    calls: list = []
    fake_engine(monkeypatch, calls)
    assert in_process(capsys, str(MS06), "--no-progress")[0] == 0
    assert in_process(capsys, str(MS06), "--time-limit", "none")[0] == 0
    argv = ("--time-limit", "30", "--node-limit", "10000000", "--threads", "1", "--seed", "7")
    assert in_process(capsys, str(MS06), *argv)[0] == 0
    assert calls == [
        {},
        {},
        {"time_limit": 30.0, "node_limit": 10_000_000, "threads": 1, "seed": 7},
    ]


def test_checkpoint_files(monkeypatch, capsys, tmp_path):
    calls: list = []
    fake_engine(monkeypatch, calls)
    state = tmp_path / "one.state"
    assert in_process(capsys, str(MS06), "--checkpoint", str(state))[0] == 0
    folder = tmp_path / "states"  # created
    argv = ("--checkpoint", str(folder), "--checkpoint-interval", "5")
    assert in_process(capsys, str(MS06), str(MS07), *argv)[0] == 0
    assert [(c["checkpoint"], c["checkpoint_interval"]) for c in calls] == [
        (str(state), 60.0),
        (str(folder / "ms_06_050_001.ckpt"), 5.0),
        (str(folder / "ms_07_050_001.ckpt"), 5.0),
    ]
    assert folder.is_dir()


def test_checkpoint_of_another_instance_is_an_input_error(monkeypatch, capsys, tmp_path):
    def mismatch(A, b, **kwargs):
        raise ValueError("the state file holds another instance (k x n 7 x 60, not 6 x 50)")

    monkeypatch.setattr(engine, "subset_sum", mismatch)
    code, _, err = in_process(capsys, str(MS06), "--checkpoint", str(tmp_path / "s"))
    assert code == cli.EXIT_USAGE
    one_error_line(err, f"{MS06}: the state file holds another instance")


def test_progress_line(monkeypatch, capsys):
    calls: list = []
    record = SimpleNamespace(
        seconds=12.5, nodes=25_000_000, bases=3, subtrees_done=17, subtrees_known=64
    )
    fake_engine(monkeypatch, calls, progress_records=[record])
    monkeypatch.setattr(SCAN, "_show_progress", lambda progress: progress is None)
    code, out, err = in_process(capsys, str(MS06))
    assert code == 0 and table_rows(out)[0][2] == "feasible"
    assert "[1/1] ms_06_050_001: 00:12, 25.0M nodes (2.00M nodes/s), 3 bases, subtrees 17/64" in err
    assert in_process(capsys, str(MS06), "--no-progress")[0] == 0
    assert "progress" in calls[0] and "progress" not in calls[1]


def test_ctrl_c_keeps_the_rows_solved(monkeypatch, capsys, tmp_path):
    fake_engine(monkeypatch, [], interrupt_at=1)
    code, out, err = in_process(capsys, str(MS06), str(MS07), "--checkpoint", str(tmp_path))
    assert code == cli.EXIT_INTERRUPTED
    assert err.strip().splitlines() == ["skipsearch: interrupted"]
    (row,) = table_rows(out)
    assert row[:3] == [str(MS06), "6x50", "feasible"]
    assert out.splitlines()[-1].startswith(
        "incomplete: the run was interrupted (Ctrl-C) after 1 of 2 instances: 1 feasible ("
    )
    assert out.splitlines()[-1].endswith(
        "the instances not shown were not solved; the same command resumes from the "
        "--checkpoint state"
    )


def test_ctrl_c_with_json_keeps_whole_records(monkeypatch, capsys):
    fake_engine(monkeypatch, [], interrupt_at=1)
    code, out, _ = in_process(capsys, str(MS06), str(MS07), "--json")
    assert code == cli.EXIT_INTERRUPTED
    (rec,) = [json.loads(line) for line in out.splitlines()]
    assert rec["status"] == "feasible"


def test_a_wrong_solution_is_a_bug_and_never_written(monkeypatch, capsys, tmp_path):
    fake_engine(monkeypatch, [], wrong=True)
    code, out, err = in_process(capsys, str(MS06), "-o", str(tmp_path))
    assert (code, out) == (cli.EXIT_BUG, "")
    one_error_line(
        err, "WrongSolutionError", str(MS06), "fails row", "not written", kind="internal error"
    )
    assert os.listdir(tmp_path) == []


def test_a_solution_file_that_cannot_be_written_is_exit_1(monkeypatch, capsys, tmp_path):
    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cli, "write_all", full)
    code, _, err = in_process(capsys, str(MS06), "-o", str(tmp_path))
    assert code == cli.EXIT_NO_OUTPUT
    one_error_line(err, "cannot write the solution to", "ms_06_050_001.opt.sol", "No space left")
    assert os.listdir(tmp_path) == []  # nor its temporary file


def test_executor_from_a_local_cluster(monkeypatch, capsys):
    distributed = pytest.importorskip("distributed")
    calls: list = []
    fake_engine(monkeypatch, calls)
    real = engine.subset_sum

    def runs_on_the_cluster(A, b, **kwargs):
        assert kwargs["executor"].submit(pow, 2, 10).result(timeout=30) == 1024
        return real(A, b, **kwargs)

    monkeypatch.setattr(engine, "subset_sum", runs_on_the_cluster)
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        code, out, err = in_process(capsys, str(MS06), "--scheduler", cluster.scheduler_address)
        assert (code, err) == (0, "")
        (executor,) = [c["executor"] for c in calls]
        assert isinstance(executor, Executor)
    assert table_rows(out)[0][2] == "feasible"


# -- with the engine's new keywords ----------------------------------------------------------


@new_engine
def test_checkpoint_resumes_with_the_engine(tmp_path):
    state = tmp_path / "ms07.state"
    for _ in range(2):  # the second run starts from the state the first left
        proc = run_cli(str(MS07), "--checkpoint", str(state), "--json")
        assert proc.returncode == 0, proc.stderr
        (rec,) = [json.loads(line) for line in proc.stdout.splitlines()]
        assert rec["status"] == "feasible" and satisfies(MS07, rec["solution"])


@new_engine
def test_solves_on_a_local_cluster_with_the_engine(capsys):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        code, out, err = in_process(
            capsys, str(MS07), "--scheduler", cluster.scheduler_address, "--json"
        )
    assert code == 0, err
    (rec,) = [json.loads(line) for line in out.splitlines()]
    assert rec["status"] == "feasible" and satisfies(MS07, rec["solution"])


@new_engine
def test_progress_is_accepted_by_the_engine(monkeypatch, capsys):
    monkeypatch.setattr(SCAN, "_show_progress", lambda progress: progress is None)
    code, out, _ = in_process(capsys, str(MS07))
    assert code == 0 and table_rows(out)[0][2] == "feasible"


@pytest.mark.parametrize(
    "name", ["ms_13_050_000", "ms_13_050_001", "ms_13_050_002", "ms_13_050_003"]
)
def test_the_shipped_solution_of_an_open_instance_solves_it(name):
    # These had no solver's solution in QOBLIB v1.1.0; the ones skipsearch
    # found (README, "Open QOBLIB instances") are checked here in exact
    # integers, as QOBLIB's checker would read them.
    A, b = read_instance(DATA / f"{name}.dat")
    x = read_solution(DATA / "solutions" / f"{name}.opt.sol", A.shape[1])
    assert A.shape == (13, 120) and set(x.tolist()) == {0, 1}
    assert [int(v) for v in A.astype(object) @ x.astype(object)] == [int(v) for v in b]
