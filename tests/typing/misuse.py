"""Misuses of skipsearch's public API that ``mypy --strict`` must reject.

Each line marked ``# E: <code>`` must get exactly that error from mypy, and
no other line any error (``tests/test_typing.py``). The misuses sit in
functions that nothing calls, so importing this file does nothing.
"""

from __future__ import annotations

import numpy as np
import skipsearch
from skipsearch import BlockReport, Status


def results() -> None:
    eye = np.eye(2)
    r = skipsearch.find_absorbing_subset(eye, -eye)
    if r.verdict == "absorbabel":  # E: comparison-overlap
        pass
    print(r.verdicts)  # E: attr-defined
    print(r.subset.tolist())  # E: union-attr
    r.verdict = "undecided"  # E: misc
    s = skipsearch.subset_sum(np.array([[3, 5]]), np.array([8]))
    if s.status == "solved":  # E: comparison-overlap
        pass
    status: Status = "done"  # E: assignment
    print(status)


def arguments() -> None:
    eye = np.eye(2)
    skipsearch.find_absorbing_subset(eye, -eye, tol="1e-6")  # E: arg-type
    skipsearch.find_absorbing_subset(eye, -eye, activation=3)  # E: arg-type
    skipsearch.find_absorbing_subset(None, -eye)  # E: arg-type
    skipsearch.find_absorbing_subset(eye, -eye, "gelu")  # E: call-arg|misc


def reports(rows: list[BlockReport]) -> None:
    for report in rows:
        print(report.to_dict()["verdit"])  # E: typeddict-item
        if report.verdict == "not absorbable":  # E: comparison-overlap
            pass
