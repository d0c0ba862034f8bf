"""The manual's generated pages: ``docs/cli.md`` from the parser and
``docs/output.md`` from the JSON Schema. They are committed, so that the
pages read as they are on GitHub too, and ``tests/test_manual.py`` fails
when they went stale; ``SKIPSEARCH_DOCS_WRITE=1 python -m pytest
tests/test_manual.py`` writes them again."""

from __future__ import annotations

import os
from typing import Any

#: The terminal width the help text is laid out for (argparse reads COLUMNS).
COLUMNS = "100"

CLI_HEAD = """# Command line

`skipsearch` has two commands: `scan` decides the FFN blocks of
checkpoints, `solve` runs the exact subset-sum engine on instance files.
This page is what `skipsearch --help`, `skipsearch scan --help` and
`skipsearch solve --help` print (laid out for 100 columns); a test
regenerates it from the parser and fails when it differs.
"""

OUTPUT_HEAD = """# Output schema

`skipsearch scan --json` prints one document; `--jsonl` one record per
line; `--csv` one row per block with the block keys below as columns (lists
space-separated, `hc_res`'s rows by `;`); `ScanReports.to_pandas()` and
`to_polars()` give the same columns. The JSON Schema shipped in the package
(`skipsearch.scan.report_schema()`) validates the document; the tables
below are generated from it, and a test fails when they differ.

```python
>>> import skipsearch
>>> list(skipsearch.BlockReportDict.__annotations__)[:6]
['model', 'step', 'family', 'block', 'layer', 'kind']

```
"""


def _help(command: Any) -> str:
    from skipsearch.cli import parser

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = COLUMNS
    try:
        return str(parser(command).format_help()).rstrip()
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous


def cli_page() -> str:
    parts = [CLI_HEAD, "```text", _help(None), "```", ""]
    for command in ("scan", "solve"):
        parts += [f"## skipsearch {command}", "", "```text", _help(command), "```", ""]
    return "\n".join(parts)


def _kind(spec: dict[str, Any], defs: dict[str, Any]) -> str:
    if "$ref" in spec:
        return _kind(defs[spec["$ref"].rsplit("/", 1)[-1]], defs)
    if "enum" in spec:
        return " or ".join("null" if v is None else f"`{v}`" for v in spec["enum"])
    if "const" in spec:
        return f"`{spec['const']}`"
    if "anyOf" in spec or "oneOf" in spec:
        return " or ".join(_kind(s, defs) for s in spec.get("anyOf", spec.get("oneOf", [])))
    t = spec.get("type", "")
    kinds = t if isinstance(t, list) else [t]
    if "array" in kinds and "items" in spec:
        item = _kind(spec["items"], defs)
        kinds = [f"array of {item}" if k == "array" else k for k in kinds]
    return " or ".join(str(k) for k in kinds)


def _table(properties: dict[str, Any], defs: dict[str, Any]) -> list[str]:
    rows = ["| key | type | meaning |", "|---|---|---|"]
    for name, spec in properties.items():
        words = " ".join(spec.get("description", "").split()).replace("|", "\\|")
        words = words.replace("[", "\\[")
        rows.append(f"| `{name}` | {_kind(spec, defs)} | {words} |")
    return rows


def output_page() -> str:
    from skipsearch.scan import SCHEMA_VERSION, report_schema

    schema = report_schema()
    defs = schema["$defs"]
    lines = [OUTPUT_HEAD, f"## The document (schema version {SCHEMA_VERSION})", ""]
    lines += _table(schema["properties"], defs)
    lines += ["", "## `models`: one entry per checkpoint", ""]
    lines += _table(defs["model"]["properties"], defs)
    lines += ["", "## `blocks`: one entry per FFN block", ""]
    lines += _table(defs["block"]["properties"], defs)
    lines += [
        "",
        "`summary` counts the blocks of each verdict: "
        '`{"absorbable": ..., "not_absorbable": ..., "undecided": ...}`.',
        "",
    ]
    return "\n".join(lines)


PAGES = {"cli.md": cli_page, "output.md": output_page}
