"""The scan's record of one decided block: :class:`BlockReport`; and the
JSON document of a whole scan (:func:`scan_document`), with its schema
(:func:`report_schema`)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any, Optional

from skipsearch._scan.locate import BlockKeys, CheckpointInfo, PartInfo
from skipsearch._scan.mixing import MixingFigures
from skipsearch._types import BlockReportDict, BracketStatus, DistanceKind, Norm, Verdict
from skipsearch.io.layouts import HYPER_CONNECTION_SCOPE, NORM_SCOPES, norm_scope
from skipsearch.result import VERDICTS, AbsorptionResult

__all__ = [
    "SCHEMA_RESOURCE",
    "SCHEMA_VERSION",
    "BlockReport",
    "LayerReport",
    "block_report",
    "printable",
    "report_schema",
    "scan_document",
]

#: The version of the document :func:`scan_document` builds (and
#: ``skipsearch scan --json`` prints) as its ``schema_version``. Keys may be
#: added under one version; anything a consumer could trip on (a key removed,
#: renamed or retyped, a new null, a new verdict, status or argument) raises it.
#: Version 2 added ``step`` (blocks and models) and the bracket keys
#: ``bracket_lower``, ``bracket_upper``, ``bracket_status`` and
#: ``best_subset_size`` (blocks). Version 3 added each block's ``kind``,
#: ``stack``, ``expert``, ``form`` and ``note``, and each model's ``parts``;
#: a model's ``d``, ``m`` and ``activation`` are its first part's.
#: Version 4 added ``complete`` and ``stopped``: a scan stopped early (Ctrl-C,
#: memory) still writes its document, with the blocks decided by then, and a
#: consumer of version 3 would read it as a whole scan.
SCHEMA_VERSION = 4

#: The JSON Schema (draft 2020-12) of that document, inside the package.
SCHEMA_RESOURCE = "schema/scan-report.schema.json"


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
    result : AbsorptionResult
        The full result (flip set, certificate, built block, statistics);
        left out of ``repr`` and comparisons, and of :meth:`to_dict` but for
        the fields it names.
    shared_with : tuple of str
        Other blocks with the same weights (tied layers), decided once here.
    path : str
        The checkpoint path.
    distance_bound : float or None
        A proven lower bound on every flip set's relative residual, from the
        certificate that decided (see :attr:`AbsorptionResult.distance_bound`).
    step : int or None
        The training step of the checkpoint, read from its directory's name
        (``checkpoint-2000``, ``step1000``, ``global_step500``, ``step_1000``);
        None when the name carries none.
    kind : str
        What the block is: ``"mlp"`` (a dense FFN), ``"expert"`` (one routed
        expert of a mixture-of-experts layer), ``"shared_expert"``, ...
    stack : str or None
        The stack or tower it belongs to (``"encoder"``, ``"decoder"``,
        ``"vision"``, ``"text"``); None for a model's only stack.
    expert : int or None
        The expert's index within its layer, for experts.
    form : str
        What the model computes around this FFN (``"x + f(x)"``, ``"x +
        attn(LN x) + f(LN x)"`` for parallel attention, ``"x + sum_e p_e(x)
        f_e(x)"`` for routed experts, ...): the verdict is on ``x + f(x)``
        for this block's own ``f`` (times the residual multiplier, when the
        form has one).
    note : str or None
        What else the verdict's reader must know: a layer shared by every
        layer of the stack, a norm inside the residual branch, routing.
    mixing : MixingFigures or None
        For a hyper-connection model (DeepSeek-V4), the figures of the
        mixing around this layer's FFN at its static point
        (:mod:`skipsearch._scan.mixing`): ``to_dict`` gives them as
        ``hc_streams``, ``hc_res_min_singular``, ``hc_res_rank``,
        ``hc_dynamic``, ``hc_pre``, ``hc_post`` and ``hc_res``. None
        otherwise.

    Notes
    -----
    The bracket of the result, when it has one, is in
    :attr:`distance_bracket`, :attr:`bracket_status` and
    :attr:`best_subset_size`.
    """

    model: str
    family: str
    block: str
    layer: int
    d: int
    m: int
    activation: str
    norm: Optional[Norm]
    scope: str
    verdict: Verdict
    relaxation_distance: Optional[float]
    seconds: float
    reason: str
    result: AbsorptionResult = field(repr=False, compare=False)
    shared_with: tuple[str, ...] = ()
    path: str = ""
    distance_bound: Optional[float] = None
    step: Optional[int] = None
    kind: str = "mlp"
    stack: Optional[str] = None
    expert: Optional[int] = None
    form: str = "x + f(x)"
    note: Optional[str] = None
    mixing: Optional[MixingFigures] = None

    @property
    def distance_bracket(self) -> Optional[tuple[float, float]]:
        """``(lower, upper)`` around the least relative residual
        ``||I + c W_down[:, S] W_up[S, :]||_F / ||I||_F`` over all flip sets
        (:attr:`AbsorptionResult.distance_bracket`), or None when the block
        has no bracket (not asked for, not flip-linear, or beyond its size)."""
        bracket = self.result.distance_bracket
        if bracket is None:
            return None
        lower, upper = finite(bracket[0]), finite(bracket[1])
        if lower is None or upper is None:
            return None
        return lower, upper

    @property
    def bracket_status(self) -> Optional[BracketStatus]:
        """``"optimal"`` when the bracket is the proven optimum,
        ``"bounds"`` when its search stopped early, None without a bracket
        (``result.stats.bracket``)."""
        if self.distance_bracket is None:
            return None
        status: Optional[BracketStatus] = getattr(self.result.stats, "bracket", None)
        return status

    @property
    def best_subset_size(self) -> Optional[int]:
        """How many neurons the best flip set found flips (``len(result.best_subset)``),
        or None without a bracket."""
        best = self.result.best_subset
        if best is None or self.distance_bracket is None:
            return None
        return len(best)

    @property
    def distance_kind(self) -> Optional[DistanceKind]:
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

    def to_dict(self) -> BlockReportDict:
        """A JSON-ready dict: the fields above except ``result``, the shown
        ``distance`` with its ``distance_kind``, plus the argument, status,
        tolerance, residual, rounding allowance of the distance bound, flip
        set and genericity check taken from the result, and the bracket
        (``bracket_lower``, ``bracket_upper``, ``bracket_status``,
        ``best_subset_size``; all None without one), and the mixing figures of
        a hyper-connection (``hc_*``; None without one). Plain Python values;
        non-finite floats become ``None``."""
        r = self.result
        bracket = self.distance_bracket
        mix = self.mixing
        out: BlockReportDict = {
            "model": self.model,
            "step": self.step,
            "family": self.family,
            "block": self.block,
            "layer": self.layer,
            "kind": self.kind,
            "stack": self.stack,
            "expert": self.expert,
            "form": self.form,
            "note": self.note,
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
            "argument": r.argument,
            "status": r.status,
            "tolerance": finite(r.tolerance),
            "residual": finite(r.residual),
            "rounding_bound": finite(r.rounding_bound),
            "subset": None if r.subset is None else [int(i) for i in r.subset],
            "genericity_passed": None if r.genericity is None else bool(r.genericity.passed),
            "bracket_lower": None if bracket is None else bracket[0],
            "bracket_upper": None if bracket is None else bracket[1],
            "bracket_status": self.bracket_status,
            "best_subset_size": self.best_subset_size,
            "hc_streams": None if mix is None else mix.streams,
            "hc_res_min_singular": None if mix is None else finite(mix.res_min_singular),
            "hc_res_rank": None if mix is None else mix.res_rank,
            "hc_dynamic": None if mix is None else finite(mix.dynamic),
            "hc_pre": None if mix is None else [float(v) for v in mix.pre],
            "hc_post": None if mix is None else [float(v) for v in mix.post],
            "hc_res": None if mix is None else [[float(v) for v in row] for row in mix.res],
        }
        return out


#: The scan's first record type, kept as a name for :class:`BlockReport`.
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
    part = info.parts[block.part]
    return BlockReport(
        model=info.name,
        family=info.family,
        block=block.name,
        layer=block.layer,
        d=block.d,
        m=block.m,
        # A residual multiplier a is decided with the activation a act
        # (result.activation "0.22*swiglu"); the row names the model's own,
        # and its form shows a.
        activation=result.activation if part.scale is None else part.activation,
        norm=part.norm,
        scope=part_scope(part),
        verdict=result.verdict,
        relaxation_distance=finite(result.relaxation_distance),
        seconds=seconds,
        reason=result.reason,
        path=str(info.path),
        result=result,
        distance_bound=finite(result.distance_bound),
        step=info.step,
        kind=part.kind,
        stack=part.stack,
        expert=block.expert,
        form=part.form,
        note=part.note,
        mixing=info.mixing.get(block.layer),
    )


def part_scope(part: PartInfo) -> str:
    """What the verdicts on ``part``'s blocks concern: the LayerNorm
    placement, and the residual multiplier when the model scales ``f``."""
    scope = HYPER_CONNECTION_SCOPE if part.hyper_connection else norm_scope(part.norm, part.form)
    if part.scale is None:
        return scope
    return f"{scope}; the model scales f by its residual multiplier a = {part.scale!r}"


def checkpoint_scope(info: CheckpointInfo) -> str:
    """:func:`part_scope` for a whole checkpoint: its parts' scope when they
    share one, else the LayerNorm placement and where to look."""
    scopes = {part_scope(p) for p in info.parts}
    if len(scopes) == 1:
        return scopes.pop()
    scope = NORM_SCOPES[info.norm]
    if any(p.scale is not None for p in info.parts):
        scope += "; residual multipliers differ by kind of block (see each part's form)"
    return scope


def scan_document(
    models: Sequence[CheckpointInfo],
    reports: Sequence[BlockReport],
    *,
    stopped: Optional[str] = None,
) -> dict[str, Any]:
    """The JSON document of a scan, as ``skipsearch scan --json`` prints it.

    Parameters
    ----------
    models : sequence of CheckpointInfo
        The checkpoints scanned (:func:`skipsearch.scan.describe_checkpoint`).
    reports : sequence of BlockReport
        What :func:`skipsearch.scan` returned for them.
    stopped : str, optional
        Why the scan stopped before every block was decided (``reports``
        then holds the blocks decided by then). Default None: a whole scan.

    Returns
    -------
    dict
        ``schema_version`` (:data:`SCHEMA_VERSION`), ``skipsearch_version``,
        ``source``, ``complete`` (``stopped`` is None), ``stopped``,
        ``summary`` (blocks per verdict), ``models`` and ``blocks``
        (:meth:`BlockReport.to_dict` of each report): plain Python values,
        valid under :func:`report_schema`.
    """
    from skipsearch import __version__
    from skipsearch.absorption import PAPER

    return {
        "schema_version": SCHEMA_VERSION,
        "skipsearch_version": __version__,
        "source": PAPER,
        "complete": stopped is None,
        "stopped": stopped,
        "summary": {v: sum(r.verdict == v for r in reports) for v in VERDICTS},
        "models": [
            {
                "name": info.name,
                "step": info.step,
                "path": str(info.path),
                "config": None if info.config_path is None else str(info.config_path),
                "model_type": info.model_type,
                "family": info.family,
                "hidden_act": info.hidden_act,
                "activation": info.activation,
                "d": info.d,
                "m": info.m,
                "norm": info.norm,
                "dtype": info.dtype,
                "scope": checkpoint_scope(info),
                "parts": [
                    {
                        "kind": p.kind,
                        "stack": p.stack,
                        "hidden_act": p.hidden_act,
                        "activation": p.activation,
                        "d": p.d,
                        "m": p.m,
                        "blocks": p.blocks,
                        "norm": p.norm,
                        "form": p.form,
                        "note": p.note,
                    }
                    for p in info.parts
                ],
            }
            for info in models
        ],
        "blocks": [r.to_dict() for r in reports],
    }


def report_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of :func:`scan_document`'s document,
    read from the package (:data:`SCHEMA_RESOURCE`).

    Returns
    -------
    dict
        The parsed schema; validate with, e.g.,
        ``jsonschema.validate(document, report_schema())``.
    """
    resource = files("skipsearch")
    for part in SCHEMA_RESOURCE.split("/"):
        resource = resource.joinpath(part)
    schema: dict[str, Any] = json.loads(resource.read_text(encoding="utf-8"))
    return schema


#: Characters a terminal or a renderer acts on instead of showing, or that
#: hide in what it shows: C0 and C1 controls (ESC, BEL, CR, LF, ...), DEL,
#: the bidirectional overrides, embeddings and isolates, the directional
#: marks, the line and paragraph separators, the invisible zero-width
#: characters (space, non-joiner, joiner, word joiner, byte-order mark),
#: and lone surrogates: the bytes of a path that are not UTF-8, which
#: Python reads as U+DC80 to U+DCFF and writes back as the raw bytes (0x9b
#: is the 8-bit CSI; the rest would make the output invalid UTF-8).
_UNPRINTABLE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060\u2066-\u2069"
    "\ufeff\ud800-\udfff]"
)

_SHORT_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    short = _SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on written as an
    escape: ``\\t``, ``\\n``, ``\\r``, ``\\x1b`` for the other C0 and C1
    controls and DEL, ``\\u202e`` for the bidirectional controls, the
    line and paragraph separators and the invisible zero-width characters
    (``\\u200b``, ``\\ufeff``, ...), ``\\udc9b`` for a lone surrogate (a
    byte of a path that is not UTF-8, as ``--json`` writes it). Names and
    paths read from a checkpoint (tensor names, ``config.json``, directory
    names) pass through it before any human-readable output, so that a
    crafted name cannot redraw what the user reads (CVE-2021-25743,
    CVE-2021-42574 for the kind), nor hide in it.

    Parameters
    ----------
    text : str
        Any text.

    Returns
    -------
    str
        The text on one line, unchanged when it holds none of those characters.
    """
    return _UNPRINTABLE.sub(_escape, text)
