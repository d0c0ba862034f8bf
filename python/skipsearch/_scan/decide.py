"""Decide one FFN block: :func:`decide_block` of a :class:`BlockJob`, the
job the scan runs here or ships to an executor.

Both are module-level and the job holds plain values (arrays, an activation
name, numbers, the options), so process pools and ``dask.distributed`` can
pickle them.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Optional, Union

import numpy.typing as npt

from skipsearch.absorption import find_absorbing_subset
from skipsearch.activations import Activation
from skipsearch.options import SearchOptions
from skipsearch.result import AbsorptionResult

__all__ = ["BlockJob", "decide_block"]


@dataclass(frozen=True)
class BlockJob:
    """One block's decision as the scan hands it over, here or to an
    executor: arrays, an activation (a registry name travels as a string),
    numbers and the validated :class:`SearchOptions`, so process pools and
    ``dask.distributed`` can pickle it.

    ``scale`` is a residual multiplier ``a``: the model computes ``x + a
    f(x)``, which equals ``a ((1/a) x + f(x))``, so it is absorbable exactly
    when the block with skip ``(1/a) I`` is (a skip-free block divided by
    ``a`` is one of the same width). ``undecided`` is a reason why no
    theorem covers the block's form (gpt-oss's clamped gated experts): the
    block is still run through the decision, for the checks on its weights,
    and reported undecided with that reason.
    """

    W_up: npt.ArrayLike
    W_down: npt.ArrayLike
    activation: Union[str, Activation]
    b_up: Optional[npt.ArrayLike]
    b_down: Optional[npt.ArrayLike]
    W_gate: Optional[npt.ArrayLike]
    b_gate: Optional[npt.ArrayLike]
    options: SearchOptions
    scale: Optional[float] = None
    undecided: Optional[str] = None


def decide_block(job: BlockJob) -> tuple[AbsorptionResult, float]:
    """Decide the block ``x -> x + f(x)``; return the result and the seconds
    it took.

    A gate bias tensor in the checkpoint, even all zeros, goes to the
    decision as ``b_gate`` (the block's form then has inner biases, and the
    linearization and degree arguments do not apply). When ``1/a`` (see
    :class:`BlockJob`) is not exact in float64, only the arguments that need
    the skip to be nonzero (the gated and degree arguments) stand; any other
    verdict is undecided.
    """
    scale, undecided, b_gate = job.scale, job.undecided, job.b_gate
    start = time.perf_counter()
    skip: Optional[float] = None
    exact_skip = True
    if scale is not None:
        # A power of two has an exact reciprocal unless it overflows.
        exact_skip = math.frexp(abs(scale))[0] == 0.5
        skip = 1.0 / scale if abs(scale) >= 2.0**-1022 else math.inf
        if not math.isfinite(skip):
            # |a| < 2^-1022: 1/a is no float64. Only the arguments that need
            # a nonzero skip can stand, and any nonzero skip of a's sign
            # serves them.
            skip, exact_skip = math.copysign(1.0, scale), False
    result = find_absorbing_subset(
        job.W_up,
        job.W_down,
        activation=job.activation,
        b_up=job.b_up,
        b_down=job.b_down,
        W_gate=job.W_gate,
        b_gate=b_gate,
        skip=skip,
        options=job.options,
    )
    if undecided is not None:
        result = dataclasses.replace(
            result, verdict="undecided", argument="none", reason=f"Undecided: {undecided}"
        )
    elif (
        not exact_skip
        and result.verdict != "undecided"
        and result.argument not in ("linearization", "degree", "boundedness")
    ):
        result = dataclasses.replace(
            result,
            verdict="undecided",
            argument="none",
            reason=(
                f"Undecided: the model computes x + a f(x) with a = {scale!r}, decided as the "
                f"block with skip (1/a) I, and 1/a is not exact in float64, so a verdict resting "
                "on the tolerance would be about a rounded skip."
            ),
        )
    elif scale is not None and result.verdict == "absorbable":
        result = dataclasses.replace(
            result,
            reason=(
                f"{result.reason} The model computes x + a f(x) with a = {scale!r}; this is "
                "the block (1/a) x + f(x) times a, so the model's skip-free block is a times the "
                "one built (W_down and b_down scaled by a)."
            ),
        )
    return result, time.perf_counter() - start
