"""The floating-point environment every public entry point runs in.

Every rigorous bound skipsearch proves (the certificates' margins, the
residual brackets, the exact sums) assumes IEEE 754 round-to-nearest-even
with subnormal numbers kept. A library loaded into the same process can
change that for the thread that loads it: one built with ``-ffast-math``
sets flush-to-zero and denormals-are-zero, others the rounding mode. Under
such an environment numpy itself reads a subnormal skip as zero, so the
Python-side checks need the standard environment as much as the core does.

:func:`standard_float_env` switches the calling thread to the standard
environment for the duration of a call and restores what it found; the
core checks it took, by arithmetic, and raises ``RuntimeError`` naming the
cause where it cannot be set. The core's worker threads start in the
standard environment themselves. numpy's own BLAS threads are outside
skipsearch's reach: they keep the environment of the thread that started
them, normally the standard one (they start when numpy is imported).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Callable, TypeVar, cast

from skipsearch import _core

__all__ = ["in_standard_float_env", "standard_float_env"]

_F = TypeVar("_F", bound=Callable[..., Any])


@contextmanager
def standard_float_env() -> Iterator[None]:
    """Run the body with round-to-nearest and subnormals kept on this thread.

    Raises
    ------
    RuntimeError
        When the environment cannot be made standard on this platform; no
        verdict is given then.
    """
    saved = _core.enter_float_env()
    try:
        yield
    finally:
        _core.restore_float_env(saved)


def in_standard_float_env(func: _F) -> _F:
    """Decorate a public entry point to run in :func:`standard_float_env`."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with standard_float_env():
            return func(*args, **kwargs)

    return cast(_F, wrapper)
