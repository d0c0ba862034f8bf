"""Instance families for the subset-sum benchmarks (fixed seeds)."""

from __future__ import annotations

import numpy as np


def market_split(k: int, seed: int, planted: bool = False):
    """Cornuejols-Dawande market split: k rows, n = 10 (k - 1) columns,
    a_ij uniform in [0, 100), b_i = floor(sum_j a_ij / 2); or b = A s0 for a
    random 0/1 vector s0 when ``planted``."""
    rng = np.random.default_rng([k, seed, int(planted)])
    n = 10 * (k - 1)
    A = rng.integers(0, 100, size=(k, n))
    if planted:
        b = A @ rng.integers(0, 2, size=n)
    else:
        b = A.sum(axis=1) // 2
    return A, b


def absorption_int(d: int, m: int, seed: int, planted: bool):
    """ReLU absorption with identity skip and integer weights in [-3, 3],
    flattened to subset sum: columns vec(v_i u_i^T), target vec(-I)."""
    rng = np.random.default_rng([d, m, seed, int(planted)])
    W_up = rng.integers(-3, 4, size=(m, d))
    W_down = rng.integers(-3, 4, size=(d, m))
    if planted:
        # d neurons carry W_up = I, W_down = -I: a flip set exists.
        S = rng.choice(m, size=d, replace=False)
        W_up[S] = np.eye(d, dtype=int)
        W_down[:, S] = -np.eye(d, dtype=int)
    A = np.einsum("pi,iq->pqi", W_down, W_up).reshape(d * d, m)
    b = -np.eye(d, dtype=int).reshape(-1)
    return A, b, W_up, W_down


def absorption_split(d: int, m: int, seed: int):
    """A planted float absorption instance where every neuron is split into
    2 to 4 parallel copies sharing its output column."""
    rng = np.random.default_rng([d, m, seed, 7])
    W_up = rng.standard_normal((m, d))
    W_down = rng.standard_normal((d, m))
    S = rng.choice(m, size=d, replace=False)
    W_down[:, S] = -np.linalg.inv(W_up[S])  # these d neurons alone sum to -I
    ups, downs = [], []
    for i in range(m):
        parts = int(rng.integers(2, 5))
        w = rng.dirichlet(np.ones(parts))
        for p in range(parts):
            ups.append(W_up[i])
            downs.append(W_down[:, i] * w[p])
    W_up, W_down = np.array(ups), np.array(downs).T
    A = np.einsum("pi,iq->pqi", W_down, W_up).reshape(d * d, -1)
    b = -np.eye(d).reshape(-1)
    return A, b, W_up, W_down
