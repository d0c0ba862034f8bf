"""The CPU a benchmark ran on, for the line that heads its figures.

A cloud VM often reports only a brand (``AMD EPYC``) as its model name, and
the same brand covers CPUs a generation apart, with other vector units; the
family and model numbers and the widest vector extension say which one ran.
"""

from __future__ import annotations

import platform
from pathlib import Path


def cpu() -> str:
    """``model name (family F, model M, AVX-512)`` from ``/proc/cpuinfo``,
    or what ``platform`` knows elsewhere."""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            name, _, value = line.partition(":")
            name = name.strip()
            if not name:
                break  # the first processor's block ends here
            fields.setdefault(name, value.strip())
    except OSError:
        return platform.processor() or platform.machine()
    flags = set(fields.get("flags", "").split())
    vector = next(
        (label for flag, label in (("avx512f", "AVX-512"), ("avx2", "AVX2")) if flag in flags),
        "no AVX2",
    )
    model = fields.get("model name") or platform.processor() or platform.machine()
    return f"{model} (family {fields.get('cpu family', '?')}, model {fields.get('model', '?')}, {vector})"
