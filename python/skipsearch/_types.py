"""Type aliases of the public API, in one place.

The ``Literal`` aliases list exactly the values the code can put in the
result fields of the same names; they are plain strings at run time, so
``r.verdict == "absorbable"`` works as always, and a type checker rejects a
comparison with a misspelt value (``mypy --strict``, ``strict_equality``).
They are exported as ``skipsearch.Verdict``, ``skipsearch.Status``, ...

Everything here must evaluate on Python 3.9: ``Optional``/``Union``, no
``X | Y``.
"""

from __future__ import annotations

from typing import Literal, Optional, TypedDict

import numpy as np
import numpy.typing as npt

__all__ = [
    "Argument",
    "Backend",
    "BlockReportDict",
    "BracketStatus",
    "DistanceKind",
    "FloatArray",
    "GenericityCheck",
    "IntArray",
    "Norm",
    "RankDecision",
    "Status",
    "SubsetSumStatus",
    "UInt8Array",
    "Verdict",
]

#: How much of the distance a decision computes (``SearchOptions.distance``):
#: ``"auto"``, ``"exact"`` or ``"bound"``.
DistanceMode = Literal["auto", "exact", "bound"]

#: float64 arrays, as every array the package returns holds.
FloatArray = npt.NDArray[np.float64]
#: int64 index arrays (flip sets, dead neurons, offending pairs).
IntArray = npt.NDArray[np.int64]
#: 0/1 vectors (subset-sum solutions).
UInt8Array = npt.NDArray[np.uint8]

#: ``AbsorptionResult.verdict``, ``StackResult.verdict``, ``BlockReport.verdict``.
Verdict = Literal["absorbable", "not_absorbable", "undecided"]

#: ``AbsorptionResult.argument``: the argument that decided (``"none"`` for
#: every undecided result).
Argument = Literal[
    "flip_construction",
    "zero_skip",
    "certificate",
    "relaxation",
    "branch_and_bound",
    "exact_integer",
    "enumeration",
    "linearization",
    "degree",
    "boundedness",
    "none",
]

#: ``AbsorptionResult.status``: ``"complete"``, a limit that stopped the
#: search (``"incomplete"``: the exact integer engine's lattice reduction
#: could not isolate the kernel), or why
#: float64 could not settle it.
#: (The core's ``"interrupted"`` never reaches a result: Ctrl-C raises
#: ``KeyboardInterrupt``.)
#: The statuses of a search that ended without settling the question,
#: shared by both result types.
_Unsettled = Literal[
    "time_limit",
    "node_limit",
    "memory_limit",
    "incomplete",
    "ill_conditioned",
    "unresolved",
    "overflow",
]
Status = Literal["complete", _Unsettled]

#: ``SubsetSumResult.status``.
SubsetSumStatus = Literal["feasible", "infeasible", _Unsettled]

#: ``GenericityChecks.check``: the row test run on the neurons.
GenericityCheck = Literal["non_proportional", "distinct_up_to_sign", "none"]

#: ``SearchStats.backend``.
Backend = Literal["rust", "baseline"]

#: ``SearchStats.bracket``: ``"optimal"`` when the search over flip sets
#: completed and the proven ``distance_bracket`` is narrow (``upper - lower
#: <= 1e-3 upper + 1e-12``), so it encloses the least residual that closely;
#: ``"bounds"`` otherwise.
BracketStatus = Literal["optimal", "bounds"]

#: ``Layout.norm``, ``BlockReport.norm``: where the model's LayerNorm sits.
Norm = Literal["pre", "post"]

#: ``BlockReport.distance_kind``: the relaxation distance itself, or only a
#: proven lower bound.
DistanceKind = Literal["exact", "bound"]


class RankDecision(TypedDict):
    """``SearchStats.rank_decision``: how the Gram rank was decided."""

    last_pivot: float
    next_pivot: Optional[float]
    cutoff: float


class BlockReportDict(TypedDict):
    """``BlockReport.to_dict()``: one block of a scan, every key always present
    (the JSON Schema ``skipsearch/schema/scan-report.schema.json`` describes
    the same record)."""

    model: str
    step: Optional[int]
    family: str
    block: str
    layer: int
    kind: str
    stack: Optional[str]
    expert: Optional[int]
    form: str
    note: Optional[str]
    d: int
    m: int
    activation: str
    norm: Optional[Norm]
    scope: str
    verdict: Verdict
    relaxation_distance: Optional[float]
    distance: Optional[float]
    distance_kind: Optional[DistanceKind]
    seconds: Optional[float]
    reason: str
    shared_with: list[str]
    path: str
    distance_bound: Optional[float]
    argument: Argument
    status: Status
    tolerance: Optional[float]
    residual: Optional[float]
    rounding_bound: Optional[float]
    subset: Optional[list[int]]
    genericity_passed: Optional[bool]
    bracket_lower: Optional[float]
    bracket_upper: Optional[float]
    bracket_status: Optional[BracketStatus]
    best_subset_size: Optional[int]
    hc_streams: Optional[int]
    hc_res_min_singular: Optional[float]
    hc_res_rank: Optional[int]
    hc_dynamic: Optional[float]
    hc_pre: Optional[list[float]]
    hc_post: Optional[list[float]]
    hc_res: Optional[list[list[float]]]
