"""Bad input and broken installs: masked values,
quantized checkpoints, a stale compiled core, a source tree without one."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest
import skipsearch
from skipsearch import baseline, find_absorbing_subset

# -- masked values ---------------------------------------------------------------------------


def _masked_row(mask):
    return np.ma.masked_array([1.0, 2.0], mask=mask)


def _object_rows(first):
    rows = np.empty(2, dtype=object)
    rows[0], rows[1] = first, np.array([3.0, 4.0])
    return rows


MASKED = {
    "masked array": np.ma.masked_array([[1.0, 2.0], [3.0, 4.0]], mask=[[0, 0], [1, 0]]),
    "list of masked arrays": [_masked_row([0, 1]), _masked_row([0, 0])],
    "tuple of masked arrays": (_masked_row([0, 0]), _masked_row([1, 0])),
    "np.ma.masked in a nested list": [[1.0, 2.0], [np.ma.masked, 4.0]],
    "object array of rows": _object_rows(_masked_row([0, 1])),
    "list in an object array": _object_rows([1.0, np.ma.masked]),
}
# Where the first masked value sits, as the message reports it.
WHERE = {
    "masked array": "(1, 0)",
    "list of masked arrays": "(0, 1)",
    "tuple of masked arrays": "(1, 0)",
    "np.ma.masked in a nested list": "(1, 0)",
    "object array of rows": "(0, 1)",
    "list in an object array": "(0, 1)",
}


@pytest.mark.parametrize("kind", sorted(MASKED))
@pytest.mark.parametrize("argument", ["W_up", "W_down", "skip"])
def test_masked_values_are_refused_everywhere(kind, argument):
    value = MASKED[kind]
    kwargs = dict(W_up=np.eye(2), W_down=-np.eye(2), skip=np.eye(2))
    kwargs[argument] = value
    where = re.escape(f"(first at index {WHERE[kind]})")
    with pytest.raises(TypeError, match=rf"{argument} has masked entries {where}"):
        find_absorbing_subset(**kwargs)
    with pytest.raises(TypeError, match=rf"{argument} has masked entries"):
        baseline.find_absorbing_subset(**kwargs)


def test_masked_biases_gate_and_certificate_are_refused():
    eye = np.eye(2)
    row = [_masked_row([0, 1])][0]
    with pytest.raises(TypeError, match="b_up has masked entries"):
        find_absorbing_subset(eye, -eye, b_up=row)
    with pytest.raises(TypeError, match="b_down has masked entries"):
        find_absorbing_subset(eye, -eye, b_down=[1.0, np.ma.masked])
    with pytest.raises(TypeError, match="W_gate has masked entries"):
        find_absorbing_subset(
            eye, -eye, W_gate=MASKED["list of masked arrays"], activation="swiglu"
        )
    with pytest.raises(TypeError, match="certificate has masked entries"):
        skipsearch.check_certificate(MASKED["list of masked arrays"], eye, -eye)
    with pytest.raises(TypeError, match="W_up has masked entries"):
        skipsearch.check_certificate(eye, MASKED["list of masked arrays"], -eye)


def test_masked_scalar_skip_is_refused():
    with pytest.raises(TypeError, match="skip has masked entries"):
        find_absorbing_subset(np.eye(2), -np.eye(2), skip=np.ma.masked)


def test_masked_subset_sum_inputs_are_refused():
    A = [np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 0, 1])]
    with pytest.raises(TypeError, match=r"A has masked entries \(first at index \(0, 2\)\)"):
        skipsearch.subset_sum(A, [3.0])
    with pytest.raises(TypeError, match="b has masked entries"):
        skipsearch.subset_sum([[1.0, 2.0, 3.0]], np.ma.masked_array([3.0], mask=[1]))


def test_masked_construction_inputs_are_refused():
    eye = np.eye(2)
    with pytest.raises(TypeError, match="subset has masked entries"):
        skipsearch.build_skip_free_block(eye, -eye, np.ma.masked_array([0, 1], mask=[0, 1]))
    block = skipsearch.build_skip_free_block(eye, -eye, [0, 1])
    with pytest.raises(TypeError, match="x has masked entries"):
        block([_masked_row([1, 0])])
    with pytest.raises(TypeError, match="x has masked entries"):
        skipsearch.residual_block_output([_masked_row([1, 0])], eye, -eye)


def test_unmasked_masked_arrays_and_plain_lists_still_work():
    eye = np.eye(2)
    rows = [np.ma.masked_array([-1.0, 0.0], mask=[0, 0]), np.ma.masked_array([0.0, -1.0])]
    r = find_absorbing_subset([[1.0, 0.0], [0.0, 1.0]], rows)
    assert (r.verdict, r.subset.tolist()) == ("absorbable", [0, 1])
    saved = [row.copy() for row in rows]
    for row, before in zip(rows, saved):  # never modified
        np.testing.assert_array_equal(row, before)
    assert find_absorbing_subset(eye, -eye, b_up=[0.5, -0.5]).verdict == "absorbable"


def test_from_torch_refuses_masked_weights():
    from skipsearch.torch_adapter import from_torch

    def linear(W):
        mod = type("Linear", (), {})()
        mod.weight, mod.bias = W, None
        mod.out_features, mod.in_features = np.shape(W)
        return mod

    relu = type("ReLU", (), {})()
    seq = [linear(np.ma.masked_array(np.eye(2), mask=[[0, 1], [0, 0]])), relu, linear(-np.eye(2))]
    with pytest.raises(TypeError, match=r"\[0\]\.weight has masked entries"):
        from_torch(seq)


# -- stale or missing compiled core ----------------------------------------------------------


def test_core_abi_matches_the_built_core():
    from skipsearch import _core
    from skipsearch._core_abi import CORE_ABI

    assert isinstance(CORE_ABI, int) and _core.__abi__ == CORE_ABI
    # The Rust source states the same revision.
    source = Path(__file__).resolve().parents[1] / "rust" / "python.rs"
    if source.exists():
        assert f"const CORE_ABI: u32 = {CORE_ABI};" in source.read_text()


@pytest.fixture
def reload_with_core(monkeypatch):
    """Re-run skipsearch/__init__.py with ``fake`` as skipsearch._core; the
    real core and the package namespace are restored afterwards."""
    import importlib

    def reload(fake):
        monkeypatch.setitem(sys.modules, "skipsearch._core", fake)
        importlib.reload(skipsearch)

    yield reload
    monkeypatch.undo()
    importlib.reload(skipsearch)
    assert skipsearch._core.__abi__ == skipsearch._core_abi.CORE_ABI


@pytest.mark.parametrize(
    "abi, found",
    [
        (1, "interface revision 1"),
        (99, "interface revision 99"),
        ("2", "interface revision '2'"),
        (None, "no interface revision"),
    ],
)
def test_stale_core_is_refused_at_import(reload_with_core, abi, found):
    fake = types.ModuleType("skipsearch._core")
    fake.__version__ = skipsearch.__version__
    if abi is not None:
        fake.__abi__ = abi
    with pytest.raises(ImportError, match=r"compiled core .* is stale") as info:
        reload_with_core(fake)
    message = str(info.value)
    expected = skipsearch._core_abi.CORE_ABI
    assert f"it has {found}, while the Python files beside it need revision {expected}" in message
    assert "`pip install .`" in message and "`maturin develop`" in message
    assert info.value.name == "skipsearch._core"


def test_current_core_imports(reload_with_core):
    from skipsearch import _core

    reload_with_core(_core)
    assert skipsearch.find_absorbing_subset(np.eye(2), -np.eye(2)).verdict == "absorbable"


def _source_copy(tmp_path, core_bytes=None):
    """python/skipsearch copied to tmp_path without its compiled core (or with
    ``core_bytes`` as a broken one)."""
    import importlib.machinery

    package = Path(skipsearch.__file__).resolve().parent
    target = tmp_path / "src" / "skipsearch"
    shutil.copytree(package, target, ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    assert not [p for p in target.iterdir() if p.name.startswith("_core.") and p.suffix != ".pyi"]
    if core_bytes is not None:
        (target / ("_core" + importlib.machinery.EXTENSION_SUFFIXES[0])).write_bytes(core_bytes)
    return target.parent


def _import_from(src):
    code = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(src)!r})
        try:
            import skipsearch
        except ImportError as e:
            print(type(e).__name__, e.name)
            print(e)
            sys.exit(3)
        print("imported", skipsearch.__file__)
        """
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_source_tree_without_a_built_core_says_what_to_do(tmp_path):
    src = _source_copy(tmp_path)
    run = _import_from(src)
    assert run.returncode == 3, (run.stdout, run.stderr)
    kind, message = run.stdout.split("\n", 1)
    assert kind == "ImportError skipsearch._core"
    assert f"compiled core (skipsearch._core) is not in {src / 'skipsearch'}" in message
    assert "source checkout that has not been built" in message
    assert "`pip install .`" in message and "`maturin develop`" in message
    assert "No module named" not in message


def test_broken_core_file_says_how_to_rebuild(tmp_path):
    src = _source_copy(tmp_path, core_bytes=b"not a shared object")
    run = _import_from(src)
    assert run.returncode == 3, (run.stdout, run.stderr)
    message = run.stdout.split("\n", 1)[1]
    assert "compiled core (skipsearch._core) failed to load" in message
    assert "`pip install .`" in message and "`maturin develop`" in message


@pytest.mark.parametrize("argument", ["skip", "tol", "time_limit", "node_limit"])
def test_integers_beyond_float64_are_value_errors(argument):
    # float(10**400) overflows: the error still names the argument.
    eye = np.eye(2)
    with pytest.raises(ValueError, match=argument):
        find_absorbing_subset(eye, -eye, **{argument: 10**400})


@pytest.mark.parametrize("argument", ["time_limit", "node_limit"])
def test_subset_sum_limits_beyond_float64_are_value_errors(argument):
    with pytest.raises(ValueError, match=argument):
        skipsearch.subset_sum(np.array([[1, 2]]), np.array([3]), **{argument: 10**400})


@pytest.mark.parametrize("activation", [5, ["relu"], 1.0])
def test_scan_activation_of_the_wrong_type(tmp_path, activation):
    with pytest.raises(TypeError, match="activation must be None, an activation name"):
        skipsearch.scan(tmp_path, activation=activation, progress=False)


def test_offending_pairs_count_all_pairs_not_the_stored_ones():
    # 50 proportional rows: 1225 pairs, of which only the first 1000 are stored.
    r = find_absorbing_subset(np.arange(1.0, 51.0)[:, None], np.ones((1, 50)))
    assert r.genericity is not None and r.genericity.offending_pair_count == 1225
    assert "1225 proportional row pair(s)" in r.reason
    assert "... 1217 more]" in r.reason


@pytest.mark.parametrize(
    "x, error, message",
    [
        ([["1", "2"]], TypeError, "x has dtype <U1"),
        (np.array([[1 + 5j, 2]]), TypeError, "x has complex dtype"),
        (np.array([[True, False]]), TypeError, "x has dtype bool"),
        (None, TypeError, "x is required"),
        (np.ones((2, 2, 2)), ValueError, "x must be 2-D"),
        ([[1.0, 2.0], [3.0]], ValueError, "x is not a rectangular numeric array"),
        (np.ones(3), ValueError, r"x has shape \(3,\)"),
        ([[np.nan, 1.0]], ValueError, "x contains NaN or Inf"),
    ],
)
def test_built_block_validates_its_input(x, error, message):
    block = skipsearch.build_skip_free_block(np.eye(2), -np.eye(2), [0, 1])
    with pytest.raises(error, match=message):
        block(x)


def test_built_block_takes_one_input_or_rows():
    rng = np.random.default_rng(5)
    W_up, W_down = rng.standard_normal((4, 2)), rng.standard_normal((2, 4))
    block = skipsearch.build_skip_free_block(W_up, W_down, [1, 3])
    X = rng.standard_normal((3, 2))
    rows = block(X)
    assert rows.shape == (3, 2)
    np.testing.assert_allclose(block(X[1]), rows[1], rtol=1e-14, atol=1e-15)
    np.testing.assert_array_equal(block(X.tolist()), rows)
