"""How to install an optional extra, said the same way by every error that
needs one."""

from __future__ import annotations

from typing import Optional

__all__ = ["install_hint"]


def install_hint(extra: str, package: Optional[str] = None) -> str:
    """``pip install "skipsearch[extra]"``, the form for a source checkout,
    and the bare ``package`` when it alone is enough."""
    hint = f'pip install "skipsearch[{extra}]" (from a clone: pip install ".[{extra}]")'
    return hint if package is None else f"{hint}, or pip install {package}"
