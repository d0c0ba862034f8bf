"""The scan's record of one decided block: :class:`BlockReport`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

from skipsearch._scan.locate import BlockKeys, CheckpointInfo
from skipsearch.layouts import NORM_SCOPES
from skipsearch.result import AbsorptionResult

__all__ = ["BlockReport", "LayerReport", "block_report"]


@dataclass(frozen=True)
class BlockReport:
    """The verdict on one FFN block.

    Attributes
    ----------
    model : str
        The checkpoint's name (its directory).
    family : str
        Model family (``"bert"``, ``"gpt2"``, ``"llama"``, ...) or ``"generic"``.
    block : str
        The block's module name, e.g. ``"transformer.h.3.mlp"``.
    layer : int
        Its layer index.
    d, m : int
        Model width and hidden width; ``W_up`` has shape ``(m, d)``.
    activation : str
        Registry name of the activation (gated blocks: ``"swiglu"``, ...).
    norm : {"pre", "post"} or None
        Where the model's LayerNorm sits.
    scope : str
        What was analysed: the FFN sub-layer with its residual, and for a
        pre-LN model that the verdict concerns the FFN as a function of its
        own input.
    verdict : str
        ``"absorbable"``, ``"not_absorbable"`` or ``"undecided"``.
    relaxation_distance : float or None
        The exact least-squares distance ``||Y||_F / ||A||_F`` with ``A =
        I_d``, as far as the relaxation's own certificate proves it: no flip
        set (indeed no real weighting of the neurons) comes relatively
        closer to ``-I``. ``None`` when it was not computed (``distance=False``,
        or a Gram matrix beyond the memory budget), when no search ran
        (gated blocks) or did not get that far, or when float64 cannot
        resolve it (see :attr:`AbsorptionResult.relaxation_distance`).
    seconds : float
        Wall time spent on the block: reading its tensors and deciding it
        (on the executor, when one is given; time waiting in its queue is
        not counted).
    reason : str
        One sentence naming the argument and its source.
    shared_with : tuple of str
        Other blocks with the same weights (tied layers), decided once here.
    path : str
        The checkpoint path.
    result : AbsorptionResult
        The full result (flip set, certificate, built block, statistics);
        left out of ``repr``, comparisons and :meth:`to_dict`.
    distance_bound : float or None
        A proven lower bound on every flip set's relative residual, from the
        certificate that decided (see :attr:`AbsorptionResult.distance_bound`).
    """

    model: str
    family: str
    block: str
    layer: int
    d: int
    m: int
    activation: str
    norm: Optional[str]
    scope: str
    verdict: str
    relaxation_distance: Optional[float]
    seconds: float
    reason: str
    shared_with: tuple = ()
    path: str = ""
    result: Optional[AbsorptionResult] = field(default=None, repr=False, compare=False)
    distance_bound: Optional[float] = None

    @property
    def distance_kind(self) -> Optional[str]:
        """Which distance the report shows: ``"exact"`` (the relaxation
        distance), ``"bound"`` (only the proven lower bound is known) or
        None (neither)."""
        if self.relaxation_distance is not None:
            return "exact"
        if self.distance_bound is not None:
            return "bound"
        return None

    @property
    def distance(self) -> Optional[float]:
        """The distance the report shows: ``relaxation_distance`` when it is
        known, else ``distance_bound`` (see :attr:`distance_kind`)."""
        if self.relaxation_distance is not None:
            return self.relaxation_distance
        return self.distance_bound

    def to_dict(self) -> dict:
        """A JSON-ready dict: the fields above except ``result``, the shown
        ``distance`` with its ``distance_kind``, plus the argument, status,
        tolerance, residual, rounding allowance of the distance bound, flip
        set and genericity check taken from the result (plain Python values;
        non-finite floats become ``None``)."""
        r = self.result
        out = {
            "model": self.model,
            "family": self.family,
            "block": self.block,
            "layer": self.layer,
            "d": self.d,
            "m": self.m,
            "activation": self.activation,
            "norm": self.norm,
            "scope": self.scope,
            "verdict": self.verdict,
            "relaxation_distance": finite(self.relaxation_distance),
            "distance": finite(self.distance),
            "distance_kind": self.distance_kind,
            "seconds": finite(self.seconds),
            "reason": self.reason,
            "shared_with": list(self.shared_with),
            "path": self.path,
            "distance_bound": finite(self.distance_bound),
        }
        if r is not None:
            out.update(
                argument=r.argument,
                status=r.status,
                tolerance=finite(r.tolerance),
                residual=finite(r.residual),
                rounding_bound=finite(r.rounding_bound),
                subset=None if r.subset is None else [int(i) for i in r.subset],
                genericity_passed=None if r.genericity is None else bool(r.genericity.passed),
            )
        return out


#: The record type of issue 2's scan, kept as a name for :class:`BlockReport`.
LayerReport = BlockReport


def finite(x: Optional[float]) -> Optional[float]:
    """``x`` as a float, or None when it is None, NaN or infinite."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def block_report(
    info: CheckpointInfo, block: BlockKeys, result: AbsorptionResult, seconds: float
) -> BlockReport:
    """The report row of ``block`` of checkpoint ``info``, decided as ``result``."""
    return BlockReport(
        model=info.name,
        family=info.family,
        block=block.name,
        layer=block.layer,
        d=info.d,
        m=info.m,
        activation=result.activation,
        norm=info.norm,
        scope=NORM_SCOPES[info.norm],
        verdict=result.verdict,
        relaxation_distance=finite(result.relaxation_distance),
        seconds=seconds,
        reason=result.reason,
        path=str(info.path),
        result=result,
        distance_bound=finite(result.distance_bound),
    )
