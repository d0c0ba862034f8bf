"""Benchmark instances shared by the pytest-benchmark modules and compare.py.

Two families:

* **Degenerate search instances** (``d = 2``, small integer weights). With
  ``d_out * d_in = 4 < m`` the Gram matrix of the relaxation is singular, the
  relaxation reaches the target exactly (distance ~1e-16), so neither the
  certificate nor a forced neuron can end the question: the baseline has to
  enumerate subsets and the Rust core has to search (null-space branch and
  bound; the exact integer engine for the infeasible ones).

  - ``planted``: a flip set ``S`` that contains the last neurons is planted
    by construction, so ``W_down[:, S] @ W_up[S, :] == -I`` exactly in
    integers. The baseline counts subsets in binary order (neuron ``i`` is
    bit ``i``), so it passes at least ``2^(m-1)`` subsets before any set
    containing neuron ``m - 1``; the seeds below are chosen so that no
    accidental flip set appears earlier (the benchmark module asserts it).
  - ``infeasible``: every entry of ``W_down`` is even (``+-2``), so every
    0/1 combination ``W_down[:, S] @ W_up[S, :]`` has even entries and can
    never equal ``-I``, while real weights reach ``-I`` exactly. Both
    backends must exhaust the search: the baseline enumerates all ``2^m``
    subsets.

  ``W_up`` rows are pairwise non-proportional integer vectors from
  ``[-4, 4]^2`` and no ``W_down`` column is zero, so the ReLU genericity
  check passes and the infeasible verdict is ``not_absorbable`` (not
  ``undecided``).

* **Relaxation block** (``d = 384``, ``m = 1536``): Gaussian float64 weights
  scaled by ``1/sqrt(d)``, identity skip. Such weights are generic, so the
  Rust core stops after the relaxation and its certificate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: Widths of the search benchmarks.
WIDTHS = (12, 16, 20)

#: Fixed seeds per (kind, m).
SEEDS = {
    ("planted", 12): 0,
    ("planted", 16): 0,
    ("planted", 20): 0,
    ("infeasible", 12): 0,
    ("infeasible", 16): 0,
    ("infeasible", 20): 0,
}

#: Activation of the search instances.
SEARCH_ACTIVATION = "relu"


@dataclass(frozen=True)
class Instance:
    kind: str
    m: int
    W_up: np.ndarray
    W_down: np.ndarray
    expected: str
    planted: tuple = ()

    @property
    def name(self) -> str:
        return f"{self.kind}-m{self.m}"


def _directions(radius: int) -> np.ndarray:
    """Primitive integer vectors in [-radius, radius]^2, one per line through 0."""
    out = []
    for a in range(0, radius + 1):
        for b in range(-radius, radius + 1):
            if (a == 0 and b <= 0) or math.gcd(a, abs(b)) != 1:
                continue
            out.append((a, b))
    return np.array(out, dtype=np.int64)


def _w_up(rng: np.random.Generator, m: int) -> np.ndarray:
    dirs = _directions(4)
    rows = dirs[rng.choice(len(dirs), size=m, replace=False)]
    signs = rng.choice(np.array([-1, 1]), size=(m, 1))
    return rows * signs


def planted(m: int, seed: int | None = None) -> Instance:
    """A d = 2 instance with a flip set planted on the last neurons."""
    seed = SEEDS[("planted", m)] if seed is None else seed
    rng = np.random.default_rng([m, seed, 1])
    while True:
        W_up = _w_up(rng, m)
        W_down = rng.integers(-3, 4, size=(2, m))
        W_down[:, np.flatnonzero(~W_down.any(axis=0))] = 1
        k = int(rng.integers(3, max(4, m // 2)))
        S = np.arange(m - k, m)
        # The last two neurons of S absorb the remainder; their W_up rows
        # must be unimodular for integer W_down.
        a, b = S[-2], S[-1]
        U = W_up[[a, b]]
        det = int(round(np.linalg.det(U)))
        if abs(det) != 1:
            continue
        rest = S[:-2]
        M = -np.eye(2, dtype=np.int64) - W_down[:, rest] @ W_up[rest]
        V = M @ np.round(np.linalg.inv(U)).astype(np.int64)  # columns v_a, v_b
        if np.abs(V).max() > 3 or not V[:, 0].any() or not V[:, 1].any():
            continue
        W_down[:, [a, b]] = V
        assert (W_down[:, S] @ W_up[S] == -np.eye(2)).all()
        return Instance(
            "planted",
            m,
            W_up.astype(np.float64),
            W_down.astype(np.float64),
            "absorbable",
            tuple(int(i) for i in S),
        )


def infeasible(m: int, seed: int | None = None) -> Instance:
    """A d = 2 instance whose relaxation is exact but which has no flip set."""
    seed = SEEDS[("infeasible", m)] if seed is None else seed
    rng = np.random.default_rng([m, seed, 2])
    W_up = _w_up(rng, m)
    W_down = 2 * rng.choice(np.array([-1, 1]), size=(2, m))
    return Instance(
        "infeasible",
        m,
        W_up.astype(np.float64),
        W_down.astype(np.float64),
        "not_absorbable",
    )


def search_instances() -> list[Instance]:
    return [f(m) for m in WIDTHS for f in (planted, infeasible)]


# ---------------------------------------------------------------- relaxation

RELAX_D = 384
RELAX_M = 1536
RELAX_SEED = 0
RELAX_ACTIVATION = "gelu"


def relaxation_block(d: int = RELAX_D, m: int = RELAX_M, seed: int = RELAX_SEED):
    """Gaussian float64 ``(W_up, W_down)`` scaled by ``1/sqrt(d)``."""
    rng = np.random.default_rng(seed)
    W_up = rng.standard_normal((m, d)) / math.sqrt(d)
    W_down = rng.standard_normal((d, m)) / math.sqrt(d)
    return W_up, W_down


def numpy_relaxation(
    W_up: np.ndarray, W_down: np.ndarray, A: np.ndarray | None = None, c: float = 1.0
) -> float:
    """Relaxation distance ``||Y||_F / ||A||_F`` by the Gram normal equations.

    Minimises ``||c W_down diag(s) W_up + A||_F`` over real ``s``:
    ``G = c^2 (W_down^T W_down) * (W_up W_up^T)``, ``h_i = -c v_i^T A u_i``,
    ``s = G^{-1} h`` (Cholesky), ``Y = -A - c W_down diag(s) W_up``.
    """
    from scipy.linalg import cho_factor, cho_solve

    if A is None:
        A = np.eye(W_down.shape[0], W_up.shape[1])
    G = (c * c) * (W_down.T @ W_down) * (W_up @ W_up.T)
    h = -c * np.einsum("pi,pq,iq->i", W_down, A, W_up, optimize=True)
    s = cho_solve(cho_factor(G), h)
    Y = -A - c * (W_down * s) @ W_up
    return float(np.linalg.norm(Y) / np.linalg.norm(A))
