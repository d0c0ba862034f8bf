"""Exact linear algebra on integer matrices: the rank over the rationals
(modular, then fraction-free) and leading principal minors."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from skipsearch._types import IntArray

#: Primes for the rank of ``[A | b]`` (products stay below 2^62).
_RANK_PRIMES = (2_147_483_647, 2_147_483_629, 2_147_483_587)


def _rank(M: npt.ArrayLike) -> int:
    """The rank over the rationals of an integer matrix: its rank modulo
    three primes below 2^31 (a rank modulo p is never above the rational
    one, and equals it unless p divides every maximal nonzero minor), and
    when that is not full, the rational rank by fraction-free elimination
    in Python integers (entries near 2^52 can make all three primes divide
    every minor), for matrices small enough to afford it."""
    M = np.asarray(M, dtype=np.int64)
    rank = _modular_rank(M)
    rows, cols = M.shape
    if rank < min(rows, cols) and rows * rows * cols <= _EXACT_RANK_WORK:
        return _exact_rank(M)
    return rank


#: Most ``rows^2 cols`` integer operations the exact rank may take (a few
#: seconds at worst in Python integers); beyond it the modular rank stands,
#: a lower bound whose only cost is an "incomplete" where the lattice could
#: not isolate its kernel.
_EXACT_RANK_WORK = 20_000_000


def _exact_rank(M: IntArray) -> int:
    """The rank over the rationals by Bareiss's fraction-free elimination:
    every division is exact, and the entries stay minors of ``M``."""
    R = [[int(v) for v in row] for row in M]
    rows, cols = M.shape
    rank, previous = 0, 1
    for c in range(cols):
        pivot = next((r for r in range(rank, rows) if R[r][c]), None)
        if pivot is None:
            continue
        R[rank], R[pivot] = R[pivot], R[rank]
        top = R[rank]
        for r in range(rank + 1, rows):
            row, lead = R[r], R[r][c]
            R[r] = [(top[c] * row[j] - lead * top[j]) // previous for j in range(cols)]
        previous = top[c]
        rank += 1
        if rank == rows:
            break
    return rank


def _modular_rank(M: IntArray) -> int:
    """The largest rank of ``M`` modulo the three primes of _RANK_PRIMES;
    the first prime alone when it gives ``min(rows, cols)``, which no rank
    can exceed."""
    best = 0
    for p in _RANK_PRIMES:
        if best == min(M.shape):
            break
        R = np.mod(np.asarray(M, dtype=np.int64), p)
        rank = 0
        rows, cols = R.shape
        for c in range(cols):
            pivot = next((r for r in range(rank, rows) if R[r, c]), None)
            if pivot is None:
                continue
            R[[rank, pivot]] = R[[pivot, rank]]
            inv = pow(int(R[rank, c]), p - 2, p)
            R[rank] = R[rank] * inv % p
            others = np.arange(rows) != rank
            R[others] = (R[others] - np.outer(R[others, c], R[rank])) % p
            rank += 1
            if rank == rows:
                break
        best = max(best, rank)
    return best


def _leading_minors(G: list[list[int]]) -> list[int]:
    """``D_0 = 1, D_1, ..., D_d``: the leading principal minors of a
    positive definite integer matrix, by Bareiss's fraction-free
    elimination (every division exact)."""
    M = [list(r) for r in G]
    d = len(M)
    minors, prev = [1], 1
    for k in range(d):
        pivot = M[k][k]
        if pivot <= 0:
            raise ValueError("the Gram matrix is not positive definite")
        minors.append(pivot)
        for i in range(k + 1, d):
            for j in range(k + 1, d):
                M[i][j] = (M[i][j] * pivot - M[i][k] * M[k][j]) // prev
        prev = pivot
    return minors
