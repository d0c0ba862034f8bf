"""Market-split instances beyond QOBLIB's, for measurements on instances no
solver was tuned on, written as QOBLIB ``.dat`` files.

    python benches/market_split_generators.py --write /tmp/ms --k 5 6 7 --seeds 0 1 2
    python benches/market_split_generators.py --write /tmp/ms --family wide long --k 6
    python benches/market_split.py --data /tmp/ms --time-limit 60

Families (``--family``, all by default):

``cd``
    Cornuéjols & Dawande's construction (IPCO 1998, LNCS 1412, pp. 284-293,
    doi:10.1007/3-540-69346-7_22, Section 2): ``k`` rows, ``n = 10 (k - 1)``
    columns, ``a_ij`` uniform in ``[0, D - 1]`` with ``D = 100`` ("uniformly in
    the range [0, 99]"), ``b_i = floor(sum_j a_ij / 2)``. Most of these have no
    solution, so none is promised (``expected: unknown``).
``wide``, ``long``
    Planted instances built against lattice methods and solvediophant: a
    random ``x0`` with ``floor(n / 2)`` ones and ``b = A x0``, so each is
    feasible. ``wide`` keeps ``n = 10 (k - 1)`` and widens the coefficients
    to ``D = 1000``: QOBLIB's published times grow with ``D`` at fixed ``k``
    (solvediophant on ms_10: 5-9 s at D = 50, 443-2597 s at D = 100,
    1491-33712 s at D = 200; see ``data/qoblib_marketsplit/published.csv``),
    and at ``D = 1000`` the expected number of other solutions is below
    ``1e-5`` for k >= 4, so the planted one is, with high probability, the
    only one (the many solutions of the ``D = 50`` sets, 45 found on
    ms_06_050_001, are gone). ``long`` takes ``n = 15 (k - 1)`` columns, a
    larger lattice and a larger meet-in-the-middle, with ``D`` chosen so that
    the expected number of solutions besides ``x0`` is about 1 (``D`` = 502
    at k = 4, 924 at k = 6, 1378 at k = 10); Cornuéjols & Dawande's
    ``n = 10 (k - 1)`` at ``D = 100`` gives 0.01 to 0.07 by the same
    estimate. Neither kind has been run against solvediophant here: that
    they are harder for it is the reason they were built, not a result.
``parity``, ``interval``
    Infeasible by construction, with the certificate in the file.
    ``parity``: multipliers ``lam`` (all 1 for ``p = 2``) make every column of
    ``lam^T A`` divisible by a prime ``p`` while ``lam^T b`` is not, so no
    integer ``x`` solves ``A x = b``; each row alone has gcd 1 and
    ``0 <= b_i <= sum_j a_ij``. Lattice methods see it at once (the
    equations have no integer solution); row-wise bounds, dynamic programming
    and meet in the middle do not. ``interval``: rows 1 and 2 are drawn
    independently and ``b_1 - b_2`` exceeds ``sum_j max(a_1j - a_2j, 0)``,
    the largest value ``(a_1 - a_2) x`` takes on ``[0, 1]^n``, so even the LP
    relaxation is empty; each row alone is within its bounds. LP-based
    solvers see it at once; a lattice enumeration has to exhaust its tree.

The expected number of solutions is the local-limit estimate
``2^n prod_i phi(b_i; mu_i, sigma_i^2)`` with ``mu_i = sum_j a_ij / 2`` and
``sigma_i^2 = sum_j a_ij^2 / 4`` (the row sums of a uniform random 0/1
vector, rows taken independent), in the spirit of the estimates of
Aardal, Bixby, Hurkens, Lenstra & Smeltink, "Market split and basis
reduction: towards a solution of the Cornuéjols-Dawande instances",
INFORMS J. Computing 12(3), 2000, whose lattice method solvediophant
(Wassermann) and skipsearch follow. It is written into each file as a
comment, with the family, its parameters and its source.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

FAMILIES = ("cd", "wide", "long", "parity", "interval")
#: Seeds of the generators' random streams, one per family.
_STREAM = {name: i for i, name in enumerate(FAMILIES)}


@dataclass
class Generated:
    """A generated instance ``A x = b``.

    Attributes
    ----------
    name : str
        File stem, ``{family}_{k:02d}_{n:03d}_{D:04d}_{seed:03d}``.
    A : ndarray of int64, shape (k, n)
    b : ndarray of int64, shape (k,)
    expected : str
        ``'feasible'``, ``'infeasible'`` or ``'unknown'``.
    solution : ndarray of int64, shape (n,), or None
        The planted solution of a feasible family.
    notes : list of str
        Comment lines for the file: family, parameters, source, certificate.
    certificate : dict
        An infeasible family's proof: ``{'lam': ndarray, 'p': int}`` for
        ``'parity'``, ``{'top': int}`` for ``'interval'``; empty otherwise.
    """

    name: str
    A: np.ndarray
    b: np.ndarray
    expected: str
    solution: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)
    certificate: dict = field(default_factory=dict)


def _check_size(k: int, n: int, D: int) -> None:
    if k < 1:
        raise ValueError(f"k: expected at least 1 row, got {k}")
    if n < 2:
        raise ValueError(f"n: expected at least 2 columns, got {n}")
    if D < 2:
        raise ValueError(f"D: expected a coefficient range of at least 2, got {D}")


def _rng(family: str, k: int, n: int, D: int, seed: int) -> np.random.Generator:
    if seed < 0:
        raise ValueError(f"seed: expected a non-negative integer, got {seed}")
    return np.random.default_rng([_STREAM[family], k, n, D, seed])


def _name(family: str, k: int, n: int, D: int, seed: int) -> str:
    return f"{family}_{k:02d}_{n:03d}_{D:04d}_{seed:03d}"


def expected_solutions(A: np.ndarray, b: np.ndarray) -> float:
    """Local-limit estimate of the number of ``x`` in ``{0,1}^n`` with
    ``A x = b``: ``2^n prod_i phi(b_i; mu_i, sigma_i^2)``, ``mu_i`` and
    ``sigma_i^2`` the mean and variance of row ``i``'s sum over uniform
    random ``x``, rows taken independent. ``A`` has shape (k, n)."""
    A = np.asarray(A, dtype=np.float64)
    mu = A.sum(axis=1) / 2
    var = (A**2).sum(axis=1) / 4
    if np.any(var == 0):
        return math.nan
    log2 = A.shape[1] + float(
        np.sum(-0.5 * np.log2(2 * np.pi * var) - (b - mu) ** 2 / (2 * var) / np.log(2))
    )
    return 2.0**log2


def threshold_range(k: int, n: int) -> int:
    """The coefficient range ``D`` at which ``k`` uniform rows in
    ``[0, D - 1]`` leave about one solution of ``n`` columns near the half
    sums: ``2^n = (D sqrt(pi n / 6))^k`` (row variance ``n D^2 / 12``)."""
    return max(2, round(2.0 ** (n / k) / math.sqrt(math.pi * n / 6)))


def cornuejols_dawande(k: int, seed: int, n: int | None = None, D: int = 100) -> Generated:
    """Cornuéjols & Dawande (1998): ``a_ij`` uniform in ``[0, D - 1]``,
    ``b_i = floor(sum_j a_ij / 2)``, ``n = 10 (k - 1)`` by default."""
    n = 10 * (k - 1) if n is None else n
    _check_size(k, n, D)
    A = _rng("cd", k, n, D, seed).integers(0, D, size=(k, n), dtype=np.int64)
    b = A.sum(axis=1) // 2
    notes = [
        f"family: cd (k={k}, n={n}, D={D}, seed={seed})",
        "source: Cornuejols & Dawande, IPCO 1998, doi:10.1007/3-540-69346-7_22: "
        "a_ij uniform in [0, D-1], b_i = floor(sum_j a_ij / 2)",
    ]
    return Generated(_name("cd", k, n, D, seed), A, b, "unknown", None, notes)


def _planted(family: str, k: int, n: int, D: int, seed: int) -> Generated:
    _check_size(k, n, D)
    rng = _rng(family, k, n, D, seed)
    A = rng.integers(0, D, size=(k, n), dtype=np.int64)
    x0 = np.zeros(n, dtype=np.int64)
    x0[rng.choice(n, size=n // 2, replace=False)] = 1
    notes = [
        f"family: {family} (k={k}, n={n}, D={D}, seed={seed})",
        f"planted: x0 with {n // 2} ones, b = A x0; a_ij uniform in [0, {D - 1}]",
    ]
    return Generated(_name(family, k, n, D, seed), A, A @ x0, "feasible", x0, notes)


def adversarial(
    k: int, seed: int, kind: str = "wide", n: int | None = None, D: int | None = None
) -> Generated:
    """A planted instance meant to be hard for lattice methods.

    Parameters
    ----------
    k : int
        Rows.
    seed : int
        Seed (non-negative).
    kind : {'wide', 'long'}, default 'wide'
        ``'wide'``: ``n = 10 (k - 1)``, ``D = 1000``. ``'long'``:
        ``n = 15 (k - 1)`` and ``D = threshold_range(k, n)``.
    n, D : int, optional
        Override the kind's columns and coefficient range.

    Raises
    ------
    ValueError
        For another ``kind`` or sizes out of range.
    """
    if kind == "wide":
        n = 10 * (k - 1) if n is None else n
        D = 1000 if D is None else D
    elif kind == "long":
        n = 15 * (k - 1) if n is None else n
        D = threshold_range(k, n) if D is None else D
    else:
        raise ValueError(f"kind: expected 'wide' or 'long', got {kind!r}")
    g = _planted(kind, k, n, D, seed)
    g.notes.append(
        "source: built against lattice enumeration (benches/market_split_generators.py); "
        "QOBLIB's published times grow with D at fixed k"
    )
    return g


def _parity(k: int, n: int, D: int, p: int, rng: np.random.Generator) -> tuple:
    """Rows whose ``lam``-combination is divisible by ``p`` column by column,
    and ``b`` whose combination is not."""
    lam = rng.integers(1, p, size=k) if p > 2 else np.ones(k, dtype=np.int64)
    A = rng.integers(0, D, size=(k, n), dtype=np.int64)
    # Last row: a_kj = -lam_k^{-1} sum_{i<k} lam_i a_ij (mod p), uniform among
    # the values in [0, D - 1] with that residue.
    residue = (-pow(int(lam[-1]), -1, p) * (lam[:-1] @ A[:-1])) % p
    A[-1] = residue + p * rng.integers(0, (D - 1 - residue) // p + 1)
    b = A.sum(axis=1) // 2
    if (lam @ b) % p == 0:
        b[-1] += 1 if b[-1] < A[-1].sum() else -1
    return A, b, lam


def infeasible(
    k: int, seed: int, kind: str = "parity", n: int | None = None, D: int = 100, p: int = 2
) -> Generated:
    """An instance with no solution, by construction, certificate included.

    Parameters
    ----------
    k : int
        Rows (at least 2).
    seed : int
        Seed (non-negative).
    kind : {'parity', 'interval'}, default 'parity'
        See the module's docstring.
    n : int, optional
        Columns, ``10 (k - 1)`` by default.
    D : int, default 100
        Coefficients in ``[0, D - 1]``; at least ``p`` for ``'parity'``.
    p : int, default 2
        The prime of ``'parity'``.

    Raises
    ------
    ValueError
        For another ``kind``, ``k < 2``, a ``p`` that is no prime below ``D``.
    """
    if kind not in ("parity", "interval"):
        raise ValueError(f"kind: expected 'parity' or 'interval', got {kind!r}")
    if k < 2:
        raise ValueError(f"k: infeasible families need at least 2 rows, got {k}")
    n = 10 * (k - 1) if n is None else n
    _check_size(k, n, D)
    rng = _rng(kind, k, n, D, seed)
    if kind == "parity":
        if p < 2 or p >= D or any(p % q == 0 for q in range(2, math.isqrt(p) + 1)):
            raise ValueError(f"p: expected a prime below D = {D}, got {p}")
        for _ in range(1000):
            A, b, lam = _parity(k, n, D, p, rng)
            if all(math.gcd(*map(int, row)) == 1 for row in A):
                break
        else:
            raise ValueError(f"D, n: no rows of gcd 1 in 1000 draws (D = {D}, n = {n})")
        certificate = {"lam": lam, "p": p}
        cert = f"certificate: lam = {lam.tolist()}, p = {p}: lam^T A = 0 mod p, lam^T b != 0 mod p"
    else:
        A = rng.integers(0, D, size=(k, n), dtype=np.int64)
        b = A.sum(axis=1) // 2
        top = int(np.maximum(A[0] - A[1], 0).sum())
        # b_1 - b_2 = top + 1, both as near their half sums as the gap allows.
        b[1] = min(max(0, (int(b[0]) + int(b[1]) - top - 1) // 2), int(A[1].sum()))
        b[0] = b[1] + top + 1
        certificate = {"top": top}
        cert = f"certificate: (a_1 - a_2) x <= {top} < b_1 - b_2 = {top + 1} on [0, 1]^n"
    notes = [
        f"family: {kind} (k={k}, n={n}, D={D}, seed={seed}"
        + (f", p={p})" if kind == "parity" else ")"),
        "source: infeasible by construction (benches/market_split_generators.py)",
        cert,
    ]
    return Generated(_name(kind, k, n, D, seed), A, b, "infeasible", None, notes, certificate)


def generate(
    family: str, k: int, seed: int, n: int | None = None, D: int | None = None
) -> Generated:
    """The instance of ``family`` (one of ``FAMILIES``) with ``k`` rows and
    ``seed``; ``n`` and ``D`` override the family's defaults."""
    if family == "cd":
        return cornuejols_dawande(k, seed, n, 100 if D is None else D)
    if family in ("wide", "long"):
        return adversarial(k, seed, family, n, D)
    if family in ("parity", "interval"):
        return infeasible(k, seed, family, n, 100 if D is None else D)
    raise ValueError(f"family: expected one of {FAMILIES}, got {family!r}")


def dat_text(g: Generated) -> str:
    """``g`` as a QOBLIB ``.dat`` file: ``#`` comments, ``k n``, then each
    row of ``A`` followed by its entry of ``b``."""
    k, n = g.A.shape
    lines = [
        "# generated by skipsearch's benches/market_split_generators.py",
        *(f"# {note}" for note in g.notes),
    ]
    lines.append(f"# expected: {g.expected}")
    if g.expected == "infeasible":
        lines.append("# expected solutions: 0, by the certificate")
    else:
        estimate = expected_solutions(g.A, g.b)
        lines.append(f"# expected solutions (local-limit estimate): {estimate:.3g}")
    lines.append(f"{k} {n}")
    lines += [" ".join(map(str, [*row.tolist(), int(rhs)])) for row, rhs in zip(g.A, g.b)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    parser.add_argument("--k", nargs="+", type=int, default=[5, 6, 7], help="rows")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--n", type=int, help="columns (default: the family's)")
    parser.add_argument("--D", type=int, help="coefficient range [0, D-1] (default: the family's)")
    parser.add_argument("--write", type=Path, metavar="DIR", help="write the .dat files here")
    args = parser.parse_args(argv)
    if args.write is not None:
        args.write.mkdir(parents=True, exist_ok=True)
    for family in args.family:
        for k in args.k:
            for seed in args.seeds:
                try:
                    g = generate(family, k, seed, args.n, args.D)
                except ValueError as e:
                    parser.error(str(e))
                estimate = 0.0 if g.expected == "infeasible" else expected_solutions(g.A, g.b)
                where = ""
                if args.write is not None:
                    path = args.write / f"{g.name}.dat"
                    path.write_text(dat_text(g))
                    where = f" -> {path}"
                print(f"{g.name}: {g.expected}, ~{estimate:.3g} solutions expected{where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
