"""The docstring examples and the README's API example run as written."""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path

import pytest
import skipsearch
from skipsearch import absorption, baseline

# The package exports the function subset_sum, which hides the module name.
subset_sum_module = importlib.import_module("skipsearch.subset_sum")

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.parametrize("module", [absorption, baseline, subset_sum_module])
def test_docstring_examples(module):
    failures, tried = doctest.testmod(module, raise_on_error=False)
    assert tried > 0 and failures == 0


def test_readme_api_example(capsys):
    text = README.read_text()
    code = re.search(r"## API\n\n```python\n(.*?)```", text, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "absorbable [0 1]"
    assert float(lines[1]) < 1e-12
    verdict, distance = lines[2].split()
    assert verdict == "not_absorbable"
    assert float(lines[3]) == pytest.approx(float(distance), rel=1e-9)
    assert skipsearch.__version__ == "0.1.0"


def test_readme_lists_every_family():
    # The supported-families table names every model_type of the registry
    # (GGUF architectures as gguf-<arch>, listed in their own paragraph).
    from skipsearch.io.layouts import FAMILIES

    text = README.read_text()
    table = text[text.index("### Supported families") : text.index("### Where models live")]
    missing = [t for t in FAMILIES if not t.startswith("gguf-") and f"`{t}`" not in table]
    assert missing == []
    where = text[text.index("### Where models live") :]
    arches = [t.removeprefix("gguf-") for t in FAMILIES if t.startswith("gguf-")]
    assert [a for a in arches if f"`{a}`" not in where[: where.index("**PyTorch")]] == []
