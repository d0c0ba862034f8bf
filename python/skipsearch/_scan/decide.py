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

import numpy as np
import numpy.typing as npt

from skipsearch._validation import as_float_array
from skipsearch.absorption import MLPBlock, find_absorbing_subset, undecided_form
from skipsearch.activations import FLIP_LINEAR, Activation, get_activation, scaled_activation
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
    f(x)``, decided as the block ``x + f_a(x)`` whose activation is ``a
    act`` (:func:`~skipsearch.scaled_activation`) and whose ``b_down`` is
    ``a b_down`` rounded to float64 (``b_down`` never enters the verdict; a
    flip set's skip-free block then has its ``b_down'`` within one ulp of
    the model's rather than half). ``undecided`` is a reason why no theorem covers the
    block's form (gpt-oss's clamped gated experts): the block's arrays are
    validated as the decision validates them, and it is reported undecided
    with that reason.
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
    #: A static hyper-connection around the block: ``(H_res, H_pre,
    #: H_post)``, decided by :func:`skipsearch.decide_hyper_connection`
    #: where only its class theorems apply (see :func:`decide_block`).
    mixing: Optional[tuple[npt.ArrayLike, npt.ArrayLike, npt.ArrayLike]] = None

    def __post_init__(self) -> None:
        if self.scale is not None and (
            isinstance(self.scale, bool)
            or not isinstance(self.scale, (int, float))
            or not math.isfinite(self.scale)
            or self.scale == 0
        ):
            raise ValueError(f"scale must be a finite nonzero number or None, got {self.scale!r}")
        if self.undecided is not None and not (isinstance(self.undecided, str) and self.undecided):
            raise ValueError(
                f"undecided must be a non-empty reason or None, got {self.undecided!r}"
            )


def decide_block(job: BlockJob) -> tuple[AbsorptionResult, float]:
    """Decide the block ``x -> x + f(x)`` (``x + a f(x)`` with a residual
    multiplier); return the result and the seconds it took.

    A gate bias tensor in the checkpoint, even all zeros, goes to the
    decision as ``b_gate`` (the block's form then has inner biases, and the
    linearization and degree arguments do not apply). The multiplier ``a``
    goes into the activation, so every verdict is about the model's block
    as it is, and a flip set's block is that block's skip-free form (it
    evaluates ``a act``). Where ``a c`` is no double-double (see
    :func:`~skipsearch.scaled_activation`) the block is undecided, with
    that reason.
    """
    start = time.perf_counter()
    activation, b_down, undecided = job.activation, job.b_down, job.undecided
    if job.scale is not None and undecided is None:
        # An unknown activation or a bad b_down is the caller's error, raised
        # here as the decision would raise it; only what a does is a reason.
        act = get_activation(activation)
        why = f"the model computes x + a f(x) with a = {job.scale!r}, decided as the block "
        try:
            activation = scaled_activation(act, job.scale)
        except ValueError as e:
            undecided = f"{why}with activation a act, but {e}"
        if b_down is not None:
            try:
                shape = np.shape(job.W_down)
            except ValueError:  # ragged: the decision names W_down
                shape = ()
            d_out = f"({shape[0]},)" if len(shape) == 2 else "(d_out,)"
            bias, _ = as_float_array("b_down", b_down, 1, d_out)
            with np.errstate(over="ignore"):
                scaled = job.scale * bias
            if np.all(np.isfinite(scaled)):
                b_down = scaled
            elif act.kind == FLIP_LINEAR and undecided is None:
                undecided = f"{why}with output bias a b_down, which overflows float64"
            # Other classes build no block: their verdicts never read b_down,
            # which is validated as the model has it.
    block = MLPBlock(
        job.W_up,
        job.W_down,
        activation=activation,
        b_up=job.b_up,
        b_down=b_down,
        W_gate=job.W_gate,
        b_gate=job.b_gate,
    )
    if undecided is None and job.mixing is not None:
        result = _static_hyper_connection(block, job.mixing, job.options)
    elif undecided is not None:
        result = undecided_form(block, undecided, job.options)
    else:
        result = find_absorbing_subset(**block.arguments(), options=job.options)
    return result, time.perf_counter() - start


def _static_hyper_connection(
    block: MLPBlock,
    mixing: tuple[npt.ArrayLike, npt.ArrayLike, npt.ArrayLike],
    options: SearchOptions,
) -> AbsorptionResult:
    """A block inside a hyper-connection whose token-dependent part is zero:
    the class theorems (degree, linearization, boundedness), which need
    only ``H_res != 0`` (docs/theory.md section 4.6), through
    :func:`skipsearch.decide_hyper_connection`. A flip-linear block is
    undecided: its verdict would rest on the exact values of the mixing,
    which the scan computes in float64 from the stored logits while the
    model computes them in its own precision."""
    from skipsearch.hyper_connections import decide_hyper_connection

    act = get_activation(block.activation)
    if act.kind == FLIP_LINEAR:
        return undecided_form(
            block,
            "this layer's hyper-connection has no token-dependent part (every scale times its "
            "projection is 0), so the block is a static hyper-connection (docs/theory.md section "
            "4.6); for a flip-linear activation its verdict rests on the exact mixing, which the "
            "model computes in its own precision: decide it with "
            "skipsearch.decide_hyper_connection(W_up, W_down, H_res, H_pre, H_post), with "
            "hc_res, hc_pre and hc_post from --json",
            options,
        )
    H_res, H_pre, H_post = mixing
    r = decide_hyper_connection(
        **{k: v for k, v in block.arguments().items() if k != "skip"},
        H_res=H_res,
        H_pre=H_pre,
        H_post=H_post,
        options=options,
    )
    assert r.stream_result is not None  # a class theorem's result
    reason = (
        "this layer's hyper-connection has no token-dependent part in this checkpoint (every "
        "scale times its projection is 0), so the block is a static hyper-connection: "
        f"{r.reason}"
    )
    return dataclasses.replace(r.stream_result, reason=reason)
