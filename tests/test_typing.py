"""The typed public API.

``mypy --strict``, with the repository's configuration, accepts a typed user
script (``typing/user_script.py``) and rejects each misuse in
``typing/misuse.py`` with the error code marked on its line; the ``Literal``
aliases list the values the code produces and compare as plain strings; and
``_core.pyi`` describes the compiled core's functions exactly.
"""

from __future__ import annotations

import ast
import inspect
import re
import runpy
import subprocess
import sys
from pathlib import Path
from typing import get_args

import numpy as np
import pytest
import skipsearch
from skipsearch import _core, baseline

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = Path(__file__).resolve().parent / "typing"
GOOD, MISUSE = SCRIPTS / "user_script.py", SCRIPTS / "misuse.py"
#: mypy's error lines: ``path:line: error: message  [code]``.
ERROR = re.compile(r"^(?P<path>.+?):(?P<line>\d+): error: .*\[(?P<code>[a-z-]+)\]$")
#: The marker of an expected error in misuse.py.
#: ``code|other``: mypy releases differ on some codes (``misc`` before
#: ``call-arg`` for too many positional arguments, in mypy < 1.20).
MARK = re.compile(r"#\s*E:\s*(?P<code>[a-z-]+(?:\|[a-z-]+)*)\s*$")


@pytest.fixture(scope="module")
def mypy_errors(tmp_path_factory):
    """One ``mypy --strict`` run on both scripts: ``{path: {(line, code)}}``
    and mypy's output."""
    cache = tmp_path_factory.mktemp("mypy_cache")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(cache),
            "--no-color-output",
            "--show-error-codes",
            "--no-pretty",
            str(GOOD),
            str(MISUSE),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = proc.stdout + proc.stderr
    # 0: no errors, 1: type errors; anything else means mypy did not check.
    assert proc.returncode in (0, 1), output
    errors: dict[Path, set[tuple[int, str]]] = {GOOD: set(), MISUSE: set()}
    for line in proc.stdout.splitlines():
        match = ERROR.match(line)
        if match is None:
            continue
        path = (ROOT / match["path"]).resolve()
        errors.setdefault(path, set()).add((int(match["line"]), match["code"]))
    return errors, output


def test_typed_use_passes_strict(mypy_errors):
    errors, output = mypy_errors
    assert errors[GOOD] == set(), output


def test_each_misuse_is_rejected_where_marked(mypy_errors):
    errors, output = mypy_errors
    expected = {
        number: set(match["code"].split("|"))
        for number, line in enumerate(MISUSE.read_text().splitlines(), start=1)
        if (match := MARK.search(line))
    }
    assert len(expected) >= 10
    found = sorted(errors[MISUSE])
    assert {number for number, _ in found} == set(expected), output
    for number, code in found:
        assert code in expected[number], (number, code, output)


def test_user_script_runs():
    """What the script's types promise holds at run time (plain-string
    comparisons included)."""
    runpy.run_path(str(GOOD), run_name="__main__")


def test_literal_aliases():
    assert get_args(skipsearch.Verdict) == skipsearch.result.VERDICTS
    assert set(get_args(skipsearch.Verdict)) == {"absorbable", "not_absorbable", "undecided"}
    assert "complete" in get_args(skipsearch.Status)
    assert "none" in get_args(skipsearch.Argument)
    assert {"feasible", "infeasible"} <= set(get_args(skipsearch.SubsetSumStatus))
    for alias in (
        skipsearch.Verdict,
        skipsearch.Status,
        skipsearch.Argument,
        skipsearch.SubsetSumStatus,
    ):
        values = get_args(alias)
        assert values and all(isinstance(v, str) for v in values)
        assert len(set(values)) == len(values)
    # Every key of a report's dict is always there (a report always carries its result).
    assert skipsearch.BlockReportDict.__optional_keys__ == frozenset()
    assert set(skipsearch.BlockReportDict.__required_keys__) >= {
        "verdict",
        "distance",
        "layer",
        "argument",
        "status",
        "subset",
        "genericity_passed",
    }


@pytest.mark.parametrize(
    "activation, skip, verdict, argument",
    [
        ("relu", None, "absorbable", "flip_construction"),
        ("relu", 0.0, "absorbable", "zero_skip"),
        ("gelu", None, "not_absorbable", None),
        ("relu2", None, "not_absorbable", "degree"),
        ("swiglu", None, "not_absorbable", "linearization"),
        ("tanh", None, "not_absorbable", "boundedness"),
        ("elu", None, "undecided", "none"),
    ],
)
@pytest.mark.parametrize("find", [skipsearch.find_absorbing_subset, baseline.find_absorbing_subset])
def test_produced_values_are_in_the_aliases(find, activation, skip, verdict, argument):
    rng = np.random.default_rng(3)
    if argument == "flip_construction":
        W_up, W_down = np.eye(3), -np.eye(3)
    else:
        W_up, W_down = rng.normal(size=(8, 3)), rng.normal(size=(3, 8))
    gate = rng.normal(size=W_up.shape) if activation == "swiglu" else None
    r = find(W_up, W_down, activation=activation, W_gate=gate, skip=skip)
    assert r.verdict == verdict
    assert argument is None or r.argument == argument
    assert r.verdict in get_args(skipsearch.Verdict)
    assert r.argument in get_args(skipsearch.Argument)
    assert r.status in get_args(skipsearch.Status)
    assert r.stats.backend in get_args(skipsearch.Backend)
    if r.genericity is not None:
        assert r.genericity.check in get_args(skipsearch.GenericityCheck)
    limited = find(W_up, W_down, activation=activation, W_gate=gate, skip=skip, node_limit=0)
    assert limited.status in get_args(skipsearch.Status)


def _stub() -> ast.Module:
    return ast.parse((Path(skipsearch.__file__).parent / "_core.pyi").read_text())


def test_core_stub_names_match_the_module():
    stub = _stub()
    names = {node.name for node in stub.body if isinstance(node, ast.FunctionDef)}
    names |= {
        node.name
        for node in stub.body
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_")
    }
    names |= {
        node.target.id
        for node in stub.body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
    }
    (declared,) = [
        ast.literal_eval(node.value)
        for node in stub.body
        if isinstance(node, ast.Assign) and [t.id for t in node.targets] == ["__all__"]
    ]
    assert declared == _core.__all__
    assert names == set(_core.__all__)


@pytest.mark.parametrize(
    "name",
    [
        n
        for n in _core.__all__
        if callable(getattr(_core, n)) and not isinstance(getattr(_core, n), type)
    ],
)
def test_core_stub_signature_matches(name):
    (node,) = [n for n in _stub().body if isinstance(n, ast.FunctionDef) and n.name == name]
    args = node.args
    assert (
        not args.posonlyargs and not args.kwonlyargs and args.vararg is None and args.kwarg is None
    )
    defaults = [inspect.Parameter.empty] * (len(args.args) - len(args.defaults))
    defaults += [ast.literal_eval(d) for d in args.defaults]
    stub = [(a.arg, default) for a, default in zip(args.args, defaults)]
    params = inspect.signature(getattr(_core, name)).parameters.values()
    assert all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params)
    assert stub == [(p.name, p.default) for p in params]
