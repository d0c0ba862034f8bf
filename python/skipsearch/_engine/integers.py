"""The input of :func:`skipsearch.subset_sum` as exact int64, where it is
integer data, and the refusal of integers beyond int64."""

from __future__ import annotations

import numbers
from typing import Optional

import numpy as np
import numpy.typing as npt

from skipsearch._types import FloatArray, IntArray

#: Integer data must keep every row sum of ``|A|`` plus ``|b|`` below this,
#: so that exact int64 arithmetic cannot overflow.
_INT_BOUND = 2.0**62


def _reject_beyond_int64(name: str, raw: npt.ArrayLike) -> None:
    """Raise ``ValueError`` naming ``name`` when ``raw`` holds integers that
    int64 cannot (numpy keeps Python integers of 2**63 or more as objects,
    or as uint64), rather than a dtype error or a float64 one."""
    if isinstance(raw, np.ndarray) and raw.dtype.kind not in "uO":
        return
    try:
        arr = np.asarray(raw)
        if (
            not isinstance(raw, np.ndarray)
            and arr.dtype.kind == "f"
            and arr.size
            and float(np.max(np.abs(arr))) >= 2.0**63
        ):
            # numpy widened a list holding such an integer to float64,
            # rounding it: look at the Python integers themselves.
            arr = np.asarray(raw, dtype=object)
    except (ValueError, TypeError):
        return  # as_float_array reports it
    if arr.dtype.kind == "O":
        values = arr.reshape(-1).tolist()
        big = any(
            isinstance(v, numbers.Integral)
            and not isinstance(v, bool)
            and not -(2**63) <= int(v) < 2**63
            for v in values
        )
    else:
        big = arr.dtype.kind == "u" and arr.size > 0 and int(arr.max()) >= 2**63
    if big:
        raise ValueError(
            f"{name} has integers of magnitude 2**63 or more; skipsearch works in int64 "
            "(every row sum of |A| plus |b| below 2**62)"
        )


def _as_integers(name: str, raw: npt.ArrayLike, widened: FloatArray) -> Optional[IntArray]:
    """``raw`` as exact int64 when it holds integers (integer dtype, or
    integral float values), else None. ``widened`` is its float64 copy."""
    arr = np.asarray(raw)
    if arr.dtype.kind in "iu":
        if arr.dtype.kind == "u" and arr.size and int(arr.max()) >= 2**63:
            raise ValueError(f"{name} has integers of 2**63 or more; skipsearch works in int64")
        return arr.astype(np.int64)
    if np.all(widened == np.round(widened)):
        if widened.size and np.max(np.abs(widened)) >= _INT_BOUND:
            # Float data this large: every float64 of 2**53 or more is an
            # integer, so these are floats at heart; the float path takes them.
            return None
        return widened.astype(np.int64)
    return None
