"""The presolve of integer data: the feasibility jump's budget, variables
fixed by row bounds, row gcds, and the split into independent components."""

from __future__ import annotations

import time
from typing import Optional

import numpy as np
import numpy.typing as npt

from skipsearch._types import IntArray

#: Feasibility jump: moves per column, and a cap on its work (row-column
#: updates, about 10 ms).
_JUMP_MOVES_PER_COLUMN = 20
_JUMP_WORK = 4_000_000


def _jump_moves(k: int, n: int) -> int:
    """The feasibility-jump budget: ``_JUMP_MOVES_PER_COLUMN`` moves per
    column, at most ``_JUMP_WORK`` row-column updates in all."""
    return min(_JUMP_MOVES_PER_COLUMN * n, _JUMP_WORK // max(1, k * n))


def _presolve(
    A: IntArray, b: IntArray, deadline: Optional[float] = None
) -> tuple[npt.NDArray[np.int8], Optional[str]]:
    """Fix variables by row bounds until nothing changes (or the deadline, a
    ``perf_counter`` time, passes: the fixings are optional). Returns
    ``fixed`` (-1 free, 0 or 1 fixed) and ``None``, or the reason for
    infeasibility."""
    k, n = A.shape
    fixed = np.full(n, -1, dtype=np.int8)
    pos, neg = np.maximum(A, 0), np.minimum(A, 0)
    while True:
        free = fixed < 0
        r = b - A[:, fixed == 1].sum(axis=1)
        lo = neg[:, free].sum(axis=1)
        hi = pos[:, free].sum(axis=1)
        if np.any(r < lo) or np.any(r > hi):
            return fixed, "row bounds"
        # With x_j = 1 a row ranges over [lo + pos_ij, hi + neg_ij]; with
        # x_j = 0 over [lo - neg_ij, hi - pos_ij].
        lo_c, hi_c, r_c = lo[:, None], hi[:, None], r[:, None]
        P, N = pos[:, free], neg[:, free]
        one_bad = np.any((lo_c + P > r_c) | (hi_c + N < r_c), axis=0)
        zero_bad = np.any((lo_c - N > r_c) | (hi_c - P < r_c), axis=0)
        if np.any(one_bad & zero_bad):
            return fixed, "row bounds fix a variable both ways"
        if not (np.any(one_bad) or np.any(zero_bad)):
            break
        idx = np.flatnonzero(free)
        fixed[idx[one_bad]] = 0
        fixed[idx[zero_bad]] = 1
        if deadline is not None and time.perf_counter() >= deadline:
            break
    free = fixed < 0
    r = b - A[:, fixed == 1].sum(axis=1)
    for i in range(k):
        g = int(np.gcd.reduce(np.abs(A[i, free]))) if np.any(free) else 0
        if (g == 0 and r[i] != 0) or (g > 0 and r[i] % g != 0):
            return fixed, "row gcd"
    return fixed, None


def _components(A: IntArray) -> list[tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]]:
    """Independent blocks of ``A``: (rows, columns) index arrays of the
    connected components of its row-column graph; zero columns and zero
    rows (whose right-hand side the presolve has checked) are left out."""
    nonzero = A != 0
    rows_left = np.any(nonzero, axis=1)
    cols_left = np.any(nonzero, axis=0)
    out = []
    while rows_left.any():
        # Grow from the first row left: its columns, their rows, ... until
        # nothing is added (one or two rounds for a dense matrix).
        rows = np.zeros_like(rows_left)
        rows[np.argmax(rows_left)] = True
        while True:
            cols = np.any(nonzero[rows], axis=0)
            grown = np.any(nonzero[:, cols], axis=1)
            if np.array_equal(grown, rows):
                break
            rows = grown
        out.append((np.flatnonzero(rows), np.flatnonzero(cols)))
        rows_left &= ~rows
        cols_left &= ~cols
    return out
