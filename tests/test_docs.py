"""The docstring examples and the README's API example run as written."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest
import skipsearch
from skipsearch import absorption, baseline, hyper_connections

# The package exports the function subset_sum, which hides the module name.
subset_sum_module = importlib.import_module("skipsearch.subset_sum")

README = Path(__file__).resolve().parents[1] / "README.md"
#: The manual's page on scanning, which lists the families.
SCANNING = README.parent / "docs" / "scanning.md"


@pytest.mark.parametrize("module", [absorption, baseline, hyper_connections, subset_sum_module])
def test_docstring_examples(module):
    failures, tried = doctest.testmod(module, raise_on_error=False)
    assert tried > 0 and failures == 0


def test_readme_api_example_is_the_smoke_test_of_the_wheel():
    # .ci/smoke.py runs the README's "One API call" on an installed wheel
    # (its doctest output compared); tests/test_manual.py runs every page.
    import runpy

    smoke = runpy.run_path(str(README.parents[0] / ".ci" / "smoke.py"))
    failures, tried = smoke["run_readme_example"](README.read_text(encoding="utf-8"))
    assert tried >= 8 and failures == 0
    assert skipsearch.__version__ == "0.1.0"


def test_readme_lists_every_family():
    # The supported-families table names every model_type of the registry
    # (GGUF architectures as gguf-<arch>, listed in their own paragraph).
    from skipsearch.io.layouts import FAMILIES

    text = SCANNING.read_text()
    table = text[text.index("## Supported families") : text.index("## Where models live")]
    missing = [t for t in FAMILIES if not t.startswith("gguf-") and f"`{t}`" not in table]
    assert missing == []
    where = text[text.index("## Where models live") :]
    arches = [t.removeprefix("gguf-") for t in FAMILIES if t.startswith("gguf-")]
    assert [a for a in arches if f"`{a}`" not in where[: where.index("**PyTorch")]] == []
