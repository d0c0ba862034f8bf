"""Transcribe QOBLIB's published market-split run times into
``benches/data/qoblib_marketsplit/published.csv`` (run once per QOBLIB
commit; the bench reads the CSV, not QOBLIB).

    python benches/qoblib_published.py --qoblib /path/to/QOBLIB [--commit REV]

``--qoblib`` is a clone of https://github.com/ZIB-AOPT/QOBLIB (a bare one
will do: files are read with ``git show REV:PATH``). Three submissions in
``01-marketsplit/submissions/`` carry times:

* ``20250715_Lattice_Wassermann/results.csv``: solvediophant (BKZ-40 and
  lattice enumeration), ``Total Runtime`` in whole seconds, Intel Xeon
  E-2288G; A. Wassermann, "Search for combinatorial objects using lattice
  algorithms - revisited", IWOCA 2021, LNCS 12757, doi:10.1007/978-3-030-79987-8.
  Its ms_12_100_003 row has no time (no successful run) and is left out.
* ``20250715_SchroeppelShamir_Kempke/results.csv``: the GPU variant of
  Schroeppel-Shamir's algorithm, ``Runtime`` in seconds, one NVIDIA H200;
  N.-C. Kempke, T. Koch, arXiv:2507.05045.
* ``20241224_Gurobi_Schicker/<instance>/<instance>_summary.csv``: Gurobi
  11.0.0 on the binary linear model, ``Total Runtime`` (wall seconds; its
  ``CPU Runtime`` is Gurobi's work measure, not seconds), AMD EPYC 7542;
  QOBLIB paper, arXiv:2504.03832.

The data are QOBLIB's, under CC BY 4.0.
"""

from __future__ import annotations

import argparse
import csv
import io
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

OUT = Path(__file__).resolve().parent / "data" / "qoblib_marketsplit" / "published.csv"
SUBMISSIONS = "01-marketsplit/submissions"
COLUMNS = ("instance", "solver", "seconds", "hardware", "source")

WASSERMANN = f"{SUBMISSIONS}/20250715_Lattice_Wassermann/results.csv"
KEMPKE = f"{SUBMISSIONS}/20250715_SchroeppelShamir_Kempke/results.csv"
GUROBI = f"{SUBMISSIONS}/20241224_Gurobi_Schicker"

SOLVEDIOPHANT = "solvediophant"
GPU_SS = "Schroeppel-Shamir (GPU)"
GUROBI_NAME = "Gurobi"


def git_show(repo: Path, rev: str, path: str) -> str:
    """Text of ``path`` at ``rev`` in the QOBLIB clone ``repo``."""
    return subprocess.run(
        ["git", "-C", str(repo), "show", f"{rev}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def git_ls(repo: Path, rev: str, folder: str) -> list[str]:
    """Paths of the files under ``folder`` at ``rev``."""
    out = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", rev, folder],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return out.split()


def wassermann(repo: Path, rev: str, short: str) -> Iterator[dict[str, str]]:
    """solvediophant's rows; its header names ``Date`` twice, so columns are
    read by position from the header's first ``Total Runtime``."""
    rows = list(csv.reader(io.StringIO(git_show(repo, rev, WASSERMANN))))
    column = rows[0].index("Total Runtime")
    source = (
        f"QOBLIB@{short}:{WASSERMANN} (Total Runtime, whole seconds); "
        "Wassermann, IWOCA 2021, doi:10.1007/978-3-030-79987-8"
    )
    for row in rows[1:]:
        if not row or not row[column].strip():
            continue
        yield {
            "instance": row[0].strip().removesuffix(".dat"),
            "solver": SOLVEDIOPHANT,
            "seconds": row[column].strip(),
            "hardware": "Intel Xeon E-2288G @ 3.70GHz",
            "source": source,
        }


def kempke(repo: Path, rev: str, short: str) -> Iterator[dict[str, str]]:
    """GPU Schroeppel-Shamir's rows (``Instance;Runtime``)."""
    reader = csv.DictReader(io.StringIO(git_show(repo, rev, KEMPKE)), delimiter=";")
    source = f"QOBLIB@{short}:{KEMPKE} (Runtime, seconds); Kempke & Koch, arXiv:2507.05045"
    for row in reader:
        yield {
            "instance": row["Instance"].strip(),
            "solver": GPU_SS,
            "seconds": row["Runtime"].strip(),
            "hardware": "NVIDIA H200",
            "source": source,
        }


def gurobi(repo: Path, rev: str, short: str) -> Iterator[dict[str, str]]:
    """Gurobi's rows, one summary CSV per instance; only successful runs."""
    for path in git_ls(repo, rev, GUROBI):
        if not path.endswith("_summary.csv"):
            continue
        for row in csv.DictReader(io.StringIO(git_show(repo, rev, path))):
            if row["# Successful Runs"].strip() != "1":
                continue
            yield {
                "instance": row["Problem"].strip(),
                "solver": GUROBI_NAME,
                "seconds": row["Total Runtime"].strip(),
                "hardware": row["Hardware Specifications"].split(",")[0].strip(),
                "source": f"QOBLIB@{short}:{path} (Total Runtime); QOBLIB paper, arXiv:2504.03832",
            }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--qoblib", required=True, type=Path, help="clone of ZIB-AOPT/QOBLIB")
    parser.add_argument("--commit", default="HEAD", help="QOBLIB revision (default HEAD)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"output CSV (default {OUT})")
    args = parser.parse_args(argv)
    short = subprocess.run(
        ["git", "-C", str(args.qoblib), "rev-parse", "--short=7", args.commit],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    rows = [
        *wassermann(args.qoblib, args.commit, short),
        *gurobi(args.qoblib, args.commit, short),
        *kempke(args.qoblib, args.commit, short),
    ]
    rows.sort(key=lambda r: (r["instance"], r["solver"]))
    with args.out.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    counts = {s: sum(r["solver"] == s for r in rows) for s in (SOLVEDIOPHANT, GUROBI_NAME, GPU_SS)}
    print(f"{len(rows)} rows from QOBLIB@{short} to {args.out}: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
