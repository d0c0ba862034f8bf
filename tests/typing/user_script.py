"""Typed use of skipsearch's public API, as a user would write it.

``tests/test_typing.py`` runs ``mypy --strict`` on this file, which must
pass, and also runs it, so that what the types promise holds at run time.
Not a test module itself (pytest collects only ``test_*.py``).
"""

from __future__ import annotations

from collections import Counter
from typing import Optional

import numpy as np
import numpy.typing as npt
import skipsearch
from skipsearch import (
    AbsorptionResult,
    Argument,
    BlockReport,
    BlockReportDict,
    Status,
    SubsetSumResult,
    SubsetSumStatus,
    Verdict,
)


def decide(W_up: npt.ArrayLike, W_down: npt.ArrayLike) -> AbsorptionResult:
    return skipsearch.find_absorbing_subset(W_up, W_down, activation="relu", tol=1e-8)


def flip_set(r: AbsorptionResult) -> Optional[list[int]]:
    if r.verdict == "absorbable" and r.subset is not None:
        return [int(i) for i in r.subset]
    return None


def summary(reports: list[BlockReport]) -> Counter[Verdict]:
    counts: Counter[Verdict] = Counter()
    for report in reports:
        counts[report.verdict] += 1
        row: BlockReportDict = report.to_dict()
        layer: int = row["layer"]
        verdict: Verdict = row["verdict"]
        distance: Optional[float] = row["distance"]
        assert layer >= 0 and verdict in ("absorbable", "not_absorbable", "undecided")
        assert distance is None or distance >= 0.0
        if "status" in row:
            status: Status = row["status"]
            print(report.block, verdict, status, row.get("subset"))
    return counts


def scan_reports(path: str) -> Counter[Verdict]:
    """Not run by the test (it needs a checkpoint); only type-checked."""
    reports: list[BlockReport] = skipsearch.scan(path, tol=1e-3, distance=False)
    bounded: list[BlockReport] = skipsearch.scan(path, distance="bound")
    return summary(reports + bounded)


def main() -> None:
    eye: npt.NDArray[np.float64] = np.eye(2)
    r = decide([[1.0, 0.0], [0.0, 1.0]], -eye)
    assert r.verdict == "absorbable" and r.status == "complete"
    verdict: Verdict = r.verdict
    argument: Argument = r.argument
    assert (verdict, argument) == ("absorbable", "flip_construction")
    assert flip_set(r) == [0, 1]
    if r.block is not None:
        out: npt.NDArray[np.float64] = r.block(np.ones((3, 2)))
        assert out.shape == (3, 2)
        assert skipsearch.max_abs_difference(r.block, eye, -eye) < 1e-12

    rng = np.random.default_rng(0)
    W_up, W_down = rng.normal(size=(32, 8)), rng.normal(size=(8, 32))
    g = skipsearch.find_absorbing_subset(W_up, W_down, activation="gelu")
    assert g.verdict != "absorbable"
    if g.verdict == "not_absorbable" and g.certificate is not None:
        bound: float = skipsearch.check_certificate(g.certificate, W_up, W_down, activation="gelu")
        assert bound > 0.0
    if g.argument in ("certificate", "relaxation", "branch_and_bound"):
        print("decided by", g.argument, g.stats.method)

    s: SubsetSumResult = skipsearch.subset_sum(np.array([[3, 5, 7, 9]]), [12])
    status: SubsetSumStatus = s.status
    assert status == "feasible" and s.solution is not None
    assert int(np.array([3, 5, 7, 9]) @ s.solution) == 12

    stack = skipsearch.decide_stack(
        [skipsearch.MLPBlock(np.eye(2), -np.eye(2)), {"W_up": np.eye(2), "W_down": -np.eye(2)}]
    )
    assert stack.verdict == "absorbable" and all(b.verdict == "absorbable" for b in stack.blocks)

    # What the functions accept at run time, their annotations accept too:
    # a memory limit written as a float, and the distance modes by name.
    bounded = skipsearch.find_absorbing_subset(W_up, W_down, memory_limit=8e9, distance="bound")
    assert bounded.verdict == g.verdict
    assert skipsearch.SearchOptions(memory_limit=8e9, distance="exact").memory_limit == 8e9

    hc = skipsearch.decide_hyper_connection(W_up[:, :2], W_down[:2], np.eye(2), [1.0, 1.0], [1, 1])
    hc_verdict: Verdict = hc.verdict
    assert hc_verdict in ("not_absorbable", "undecided")


if __name__ == "__main__":
    main()
