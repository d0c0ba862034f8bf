"""``skipsearch solve FILE [FILE ...]``: the exact 0/1 subset-sum engine,
:func:`skipsearch.subset_sum`, on instance files.

:func:`add_solve_parser` registers the command with the parser of
:mod:`skipsearch.cli`, and :func:`solve` runs it. The command keeps the
contract of ``skipsearch scan``: every failure is one line on stderr
(``skipsearch: error: ...``) with a documented exit code, the output is
written whole (:func:`skipsearch.cli.write_all`), Ctrl-C never leaves a line
half written (:class:`skipsearch.cli._Interrupts`), and names and paths are
escaped before they reach a terminal.

Every instance is read before the first is solved, so a bad file costs no
search time. Every solution is re-checked, ``A x = b`` in Python's exact
integers, before it is printed or written; one that fails is a bug, reported
as one (exit 70), and never written. Solution files take QOBLIB's format
(``ZIB-AOPT/QOBLIB``, commit ``de698d4``,
``01-marketsplit/instances/instance_gen_set/*.opt.sol``; see
:func:`skipsearch._engine.instances.format_solution`), which QOBLIB's checker
``01-marketsplit/check`` reads.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import logging
import os
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from tqdm import tqdm

from skipsearch import cli
from skipsearch._engine.instances import format_solution, read_instance
from skipsearch._engine.portfolio import _RESTART_SEED
from skipsearch._scan.report import printable
from skipsearch._validation import check_limit

if TYPE_CHECKING:  # pragma: no cover
    from skipsearch._types import IntArray
    from skipsearch.subset_sum import SubsetSumResult

__all__ = ["add_solve_parser", "solve"]

_logger = logging.getLogger("skipsearch")

#: Seconds ``--scheduler`` waits for the scheduler to answer by default.
DEFAULT_CONNECT_TIMEOUT = 10.0
#: Seconds between checkpoint writes by default (``subset_sum``'s default).
DEFAULT_CHECKPOINT_INTERVAL = 60.0
#: The name of an instance's solution file under ``--output``, after its
#: stem, as QOBLIB names its solution files.
SOLUTION_SUFFIX = ".opt.sol"
#: The name of an instance's state file in a ``--checkpoint`` folder.
CHECKPOINT_SUFFIX = ".ckpt"
#: What ``--scheduler`` needs, and how to install it.
DASK_EXTRA = "pip install 'skipsearch[dask]'"

SOLVE_DESCRIPTION = """\
Solve exact 0/1 subset-sum instances, A x = b with x in {0, 1}^n, one after
the other, with skipsearch's exact engine (skipsearch.subset_sum). Each FILE
is QOBLIB's market-split .dat format ('k n', then k rows: n coefficients and
the right-hand side; # starts a comment line), an .npz archive with integer
arrays A (k, n) and b (k,), or a .json object {"A": [[...]], "b": [...]}.
Every file is read before the first is solved.

One row per instance on stdout: its path, k x n, the status (feasible,
infeasible, time_limit, node_limit, incomplete), seconds, nodes, and the
solution as a 0/1 string (QOBLIB's checker takes it as its argument), or,
with --output DIR, the solution file DIR/NAME.opt.sol in QOBLIB's format;
then a line counting the statuses. --json prints one JSON object per
instance instead (JSON Lines). Every solution is re-checked, A x = b in
exact integers, before it is printed or written.
"""

SOLVE_EPILOG = f"""\
exit codes:
  0    every instance was run: solved, proved infeasible, or stopped by
       --time-limit or --node-limit (the status says which)
  1    the output could not be written: stdout closed early (broken pipe,
       silent), no stdout, or writing stdout or a solution file failed
  2    usage or input error: bad option, an instance file that cannot be
       read (the line says which file and where), a --checkpoint of another
       instance, a scheduler that does not answer within --connect-timeout
  3    dask.distributed is not installed, for --scheduler:
       {DASK_EXTRA}
  5    out of memory, or the worker threads could not be started
  70   an unexpected error: a bug in skipsearch (a solution failing the
       A x = b re-check is one, and is never written)
  130  interrupted (Ctrl-C): the rows of the instances solved by then are
       whole; with --checkpoint, the same command resumes
"""


def _seconds_option(name: str) -> Any:
    """An argparse type: a positive number of seconds for ``--name``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a number of seconds, got {text!r}"
            ) from None
        if not 0 < value < float("inf"):
            raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
        return value

    parse.__name__ = name  # argparse names the option's type in its messages
    return parse


def _seed(text: str) -> int:
    """``--seed``: a whole number from 0 to 2**63 - 1."""
    digits = text.isascii() and text.isdigit()
    if not digits or len(text) > 19 or int(text) >= 2**63:
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise argparse.ArgumentTypeError(
            f"expected a whole number from 0 to 2**63 - 1 in decimal digits, got {shown!r}"
        )
    return int(text)


def _node_limit(text: str) -> int:
    """``--node-limit``: a non-negative whole number."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a non-negative whole number, got {text!r}"
        ) from None
    try:
        return int(check_limit("node_limit", value, integer=True) or 0)
    except (TypeError, ValueError) as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_solve_parser(commands: Any) -> None:
    """Register ``solve`` with the sub-parsers ``commands`` of the
    ``skipsearch`` parser (:func:`skipsearch.cli._parser`)."""
    solve = commands.add_parser(
        "solve",
        help="solve exact 0/1 subset-sum instances (QOBLIB .dat, .npz, .json)",
        description=SOLVE_DESCRIPTION,
        epilog=SOLVE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    solve.add_argument("files", nargs="+", metavar="FILE", help="instance files")
    solve.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object per instance (JSON Lines) instead of the table",
    )
    solve.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="write each solution to DIR/NAME.opt.sol, QOBLIB's format (NAME: the file's name "
        "without its suffix; DIR is created); default: no files, the table shows the solution",
    )
    _add_limits(solve)
    _add_resumption(solve)
    solve.add_argument(
        "--no-progress",
        action="store_true",
        help="never show the progress line (default: shown on stderr when it is a terminal, "
        "unless TQDM_DISABLE is set, once an instance runs for a moment)",
    )
    solve.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log to stderr: -v one line per instance with the stages run, -vv also debug "
        "records and the traceback of an internal error",
    )


def _add_limits(solve: argparse.ArgumentParser) -> None:
    """The options that bound or spread the search of each instance."""
    solve.add_argument(
        "--time-limit",
        type=cli._time_limit,
        metavar="S|none",
        help="seconds allowed per instance in this run (a run resumed from --checkpoint "
        "gets the whole limit again); an instance that runs out is time_limit "
        "(default: none, no limit)",
    )
    solve.add_argument(
        "--node-limit",
        type=_node_limit,
        metavar="N",
        help="search nodes allowed per instance, approximately (default: no limit)",
    )
    solve.add_argument(
        "--threads", type=cli._threads, metavar="N", help="worker threads (default: one per core)"
    )
    solve.add_argument(
        "--seed",
        type=_seed,
        metavar="N",
        help="seed of the lattice restarts' random bases (default: a fixed one, so that a run "
        "is repeatable); the time to a solution found by restarts varies with it",
    )
    solve.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the search on a dask.distributed cluster: its scheduler's address, e.g. "
        f"tcp://10.0.0.5:8786 (needs {DASK_EXTRA})",
    )
    solve.add_argument(
        "--connect-timeout",
        type=_seconds_option("connect_timeout"),
        metavar="SECONDS",
        help=f"with --scheduler: seconds to wait for the scheduler to answer (default: "
        f"{DEFAULT_CONNECT_TIMEOUT:g})",
    )


def _add_resumption(solve: argparse.ArgumentParser) -> None:
    """The options that keep the search's state for a later run."""
    solve.add_argument(
        "--checkpoint",
        metavar="PATH",
        help="keep each search's state in a file, and resume from it when it exists: for one "
        "instance, PATH is that file (or a folder, as for several); for several, PATH is a "
        f"folder (created) holding NAME{CHECKPOINT_SUFFIX} per instance",
    )
    solve.add_argument(
        "--checkpoint-interval",
        type=_seconds_option("checkpoint_interval"),
        metavar="SECONDS",
        help=f"with --checkpoint: seconds between writes of the state (default: "
        f"{DEFAULT_CHECKPOINT_INTERVAL:g})",
    )


@dataclass
class _Instance:
    """One instance file as the command solves it."""

    path: str  # as given on the command line
    name: str  # the file's name without its suffix
    A: IntArray
    b: IntArray
    solution_file: Optional[Path] = None
    checkpoint: Optional[Path] = None

    @property
    def shape(self) -> str:
        k, n = self.A.shape
        return f"{k}x{n}"


class _SolutionNotWritten(cli._OutputError):
    """A solution file could not be written (exit 1, as for stdout)."""


class WrongSolutionError(RuntimeError):
    """The engine returned a solution that fails ``A x = b``: a bug."""


def _check_options(args: argparse.Namespace) -> None:
    """Options that only go with another one."""
    if args.connect_timeout is not None and args.scheduler is None:
        raise ValueError("--connect-timeout applies to --scheduler; give a scheduler address")
    if args.checkpoint_interval is not None and args.checkpoint is None:
        raise ValueError("--checkpoint-interval applies to --checkpoint; give a state file")


def _unique_names(paths: Sequence[str], folder: str, suffix: str, option: str) -> None:
    """Raise ``ValueError`` when two instance files would write the same
    file ``folder/NAME{suffix}`` (``option`` names the folder's option)."""
    seen: dict[str, str] = {}
    for p in paths:
        name = Path(p).stem
        if name in seen:
            target = os.path.join(folder, name + suffix)
            raise ValueError(
                f"{seen[name]} and {p} would both write {target} ({option}); solve them in "
                "separate runs, or rename one"
            )
        seen[name] = p


def _folder(option: str, path: str) -> Path:
    """``path`` as a folder for ``option``, created when missing."""
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ValueError(f"{option} {path}: not a folder") from None
    except OSError as e:
        raise ValueError(f"{option} {path}: cannot create the folder: {e.strerror or e}") from None
    return folder


def _checkpoints(args: argparse.Namespace, paths: Sequence[str]) -> list[Optional[Path]]:
    """The state file of each instance under ``--checkpoint``."""
    if args.checkpoint is None:
        return [None] * len(paths)
    given = Path(args.checkpoint)
    if len(paths) == 1 and not given.is_dir():
        if not given.parent.is_dir():
            raise ValueError(
                f"--checkpoint {args.checkpoint}: the folder {given.parent} is missing"
            )
        return [given]
    _unique_names(paths, args.checkpoint, CHECKPOINT_SUFFIX, "--checkpoint")
    folder = _folder("--checkpoint", args.checkpoint)
    return [folder / f"{Path(p).stem}{CHECKPOINT_SUFFIX}" for p in paths]


def _instances(args: argparse.Namespace) -> list[_Instance]:
    """Every instance, read and checked, with the files it will use."""
    paths = [os.fsdecode(p) for p in args.files]
    if args.output is not None:
        _unique_names(paths, args.output, SOLUTION_SUFFIX, "--output")
    read = [read_instance(p) for p in paths]  # every file, before any search
    states = _checkpoints(args, paths)
    out = _folder("--output", args.output) if args.output is not None else None
    return [
        _Instance(
            p,
            Path(p).stem,
            A,
            b,
            None if out is None else out / f"{Path(p).stem}{SOLUTION_SUFFIX}",
            state,
        )
        for p, (A, b), state in zip(paths, read, states)
    ]


def _scheduler_error(address: str, timeout: float, e: Exception) -> ValueError:
    """The one-line error for a scheduler that could not be reached."""
    if isinstance(e, (OSError, asyncio.TimeoutError)):
        return ValueError(f"scheduler {address} did not answer within {timeout:g} s")
    if isinstance(e, ValueError):
        return ValueError(f"--scheduler {address}: not a scheduler address ({e})")
    return ValueError(
        f"scheduler {address} did not answer as a dask scheduler ({type(e).__name__}: {e})"
    )


async def _probe(connect: Any, address: str, timeout: float) -> None:
    """Open and close one connection to ``address``, within ``timeout``."""
    comm = await connect(address, timeout=timeout)
    await comm.close()


@contextlib.contextmanager
def _dask_executor(address: str, timeout: float) -> Iterator[Executor]:
    """An executor on the dask.distributed scheduler at ``address``, closed
    on leaving.

    The address is probed with one connection first: a ``Client`` that
    cannot connect lingers, and its finaliser prints a traceback and waits
    twice the timeout at exit.

    Raises
    ------
    ImportError
        dask.distributed is not installed (the message gives the extra).
    ValueError
        The scheduler did not answer within ``timeout`` seconds, or the
        address is not one.
    """
    try:
        # Any: dask's partial annotations leave these calls untyped.
        distributed: Any = importlib.import_module("distributed")
        connect = importlib.import_module("distributed.comm.core").connect
    except ImportError as e:
        raise ImportError(
            f"--scheduler needs dask.distributed, which cannot be imported ({e}): {DASK_EXTRA}"
        ) from None
    try:
        asyncio.run(_probe(connect, address, timeout))
        client = distributed.Client(address, timeout=timeout, set_as_default=False)
    except Exception as e:
        raise _scheduler_error(address, timeout, e) from None
    try:
        yield client.get_executor()
    finally:
        with contextlib.suppress(Exception):
            client.close(timeout=timeout)


class _ProgressLine:
    """The progress line of one instance on stderr, drawn by tqdm from the
    engine's progress records (``skipsearch.SearchProgress``: seconds,
    nodes, bases, subtrees done and known). It appears with the first
    record, which the engine sends after about half a second, so quick
    instances never show one."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.bar: Optional[tqdm[Any]] = None

    def __call__(self, record: Any) -> None:
        if self.bar is None:
            self.bar = tqdm(
                total=None,
                bar_format="{desc}",
                file=sys.stderr,
                leave=False,
                dynamic_ncols=True,
            )
        self.bar.set_description_str(cli._encodable(self.text(record), sys.stderr))

    def text(self, record: Any) -> str:
        seconds = float(record.seconds)
        nodes = int(record.nodes)
        rate = tqdm.format_sizeof(nodes / seconds, divisor=1000) if seconds > 0 else "-"
        return (
            f"{self.label}: {tqdm.format_interval(seconds)}, "
            f"{tqdm.format_sizeof(nodes, divisor=1000)} nodes ({rate} nodes/s), "
            f"{record.bases} {'basis' if record.bases == 1 else 'bases'}, "
            f"subtrees {record.subtrees_done}/{record.subtrees_known}"
        )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _engine_options(args: argparse.Namespace, executor: Optional[Executor]) -> dict[str, Any]:
    """The keywords of ``subset_sum`` that the options set; those left at
    their defaults are not passed."""
    options: dict[str, Any] = {}
    if args.time_limit not in (None, cli.NO_LIMIT):
        options["time_limit"] = float(args.time_limit)
    if args.node_limit is not None:
        options["node_limit"] = args.node_limit
    if args.threads is not None:
        options["threads"] = args.threads
    if args.seed is not None:
        options["seed"] = args.seed
    if executor is not None:
        options["executor"] = executor
    return options


def _run(
    inst: _Instance, options: dict[str, Any], interval: float, line: Optional[_ProgressLine]
) -> SubsetSumResult:
    """``subset_sum`` on one instance; its ``ValueError`` (a checkpoint of
    another instance, say) names the file."""
    from skipsearch import subset_sum

    options = dict(options)
    if inst.checkpoint is not None:
        options["checkpoint"] = os.fspath(inst.checkpoint)
        options["checkpoint_interval"] = interval
    if line is not None:
        options["progress"] = line
    try:
        return subset_sum(inst.A, inst.b, **options)
    except ValueError as e:
        raise ValueError(f"{inst.path}: {e}") from e
    finally:
        if line is not None:
            line.close()


def checked_solution(inst: _Instance, result: SubsetSumResult) -> Optional[list[int]]:
    """The result's solution as a list of 0 and 1, once ``A x = b`` holds in
    Python's exact integers; None without a solution.

    Raises
    ------
    WrongSolutionError
        The solution has the wrong length, an entry other than 0 and 1, or
        misses a row (a bug in the engine: it is not written).
    """
    if result.solution is None:
        return None
    x = [int(v) for v in result.solution]
    k, n = inst.A.shape
    if len(x) != n or any(v not in (0, 1) for v in x):
        raise WrongSolutionError(f"{inst.path}: the engine's solution is not in {{0, 1}}^{n}")
    for i in range(k):
        lhs = sum(int(a) * v for a, v in zip(inst.A[i].tolist(), x))
        if lhs != int(inst.b[i]):
            raise WrongSolutionError(
                f"{inst.path}: the engine's solution fails row {i + 1} of A x = b ({lhs} against "
                f"{int(inst.b[i])}); it is not written"
            )
    return x


def _write_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole: to a temporary file beside it, then
    renamed over it, so that no reader sees a part of it.

    Raises
    ------
    _SolutionNotWritten
        The file could not be written (a full disk, no permission).
    """
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            cli.write_all(fd, text.encode("utf-8", "surrogateescape"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise _SolutionNotWritten(
            f"cannot write the solution to {path}: {e.strerror or e}"
        ) from None


class _Table:
    """The human-readable output: a header, one aligned row per instance
    as it is solved, then a line counting the statuses."""

    HEAD = ("instance", "size", "status", "seconds", "nodes", "solution")
    RIGHT = (False, True, False, True, True, False)

    def __init__(self, instances: Sequence[_Instance]) -> None:
        self.total = len(instances)
        self.widths = [
            max([len(self.HEAD[0])] + [len(printable(i.path)) for i in instances]),
            max([len(self.HEAD[1])] + [len(i.shape) for i in instances]),
            len("infeasible"),
            7,
            10,
        ]
        self.statuses: Counter[str] = Counter()
        self.seconds = 0.0

    def line(self, cells: Sequence[str]) -> str:
        parts = [
            c.rjust(w) if right else c.ljust(w)
            for c, w, right in zip(cells, self.widths, self.RIGHT)
        ]
        return "  ".join([*parts, *cells[len(parts) :]]).rstrip()

    def row(
        self,
        inst: _Instance,
        result: SubsetSumResult,
        solution: Optional[list[int]],
    ) -> None:
        if not self.statuses:
            cli._emit(self.line(self.HEAD))
        if solution is None:
            shown = "-"
        elif inst.solution_file is not None:
            shown = printable(os.fspath(inst.solution_file))
        else:
            shown = "".join(map(str, solution))
        cells = (printable(inst.path), inst.shape, result.status, f"{result.seconds:.3f}")
        cli._emit(self.line([*cells, str(result.nodes), shown]))
        self.statuses[result.status] += 1
        self.seconds += result.seconds

    def counts(self) -> str:
        """``"2 feasible, 1 time_limit (3.52 s)"``."""
        parts = ", ".join(f"{c} {s}" for s, c in self.statuses.items())
        return f"{parts} ({self.seconds:.2f} s)"

    def finish(self) -> None:
        n = sum(self.statuses.values())
        cli._emit(f"{cli._count(n, 'instance')}: {self.counts()}")

    def stop(self, why: str, resume: bool) -> None:
        done = sum(self.statuses.values())
        again = "; the same command resumes from the --checkpoint state" if resume else ""
        cli._emit(
            f"incomplete: the run was {why} after {done} of {cli._count(self.total, 'instance')}: "
            f"{self.counts()}; the instances not shown were not solved{again}"
        )


class _JsonLines:
    """``--json``: one JSON object per instance, a line each, as it is
    solved (JSON Lines)."""

    def __init__(self, instances: Sequence[_Instance], seed: Optional[int] = None) -> None:
        self.statuses: Counter[str] = Counter()
        self.seed = seed

    def row(
        self,
        inst: _Instance,
        result: SubsetSumResult,
        solution: Optional[list[int]],
    ) -> None:
        line = record(inst, result, solution, self.seed)
        cli._emit(json.dumps(line, allow_nan=False))
        self.statuses[result.status] += 1

    def finish(self) -> None:
        pass

    def stop(self, why: str, resume: bool) -> None:
        pass


def record(
    inst: _Instance,
    result: SubsetSumResult,
    solution: Optional[list[int]],
    seed: Optional[int] = None,
) -> dict[str, Any]:
    """The ``--json`` object of one instance: ``instance`` (the path as
    given), ``name``, ``k``, ``n``, ``status``, ``solution`` (a list of 0
    and 1, or null), ``checked`` (true once the solution satisfied
    ``A x = b`` in exact integers; null without one), ``solution_file``
    (with ``--output``; else null), ``nodes``, ``seconds``, ``method`` (the
    stages run, in order), ``exact`` and ``seed`` (the restarts' seed:
    ``--seed``, else the engine's fixed default)."""
    k, n = inst.A.shape
    written = inst.solution_file if solution is not None else None
    return {
        "instance": inst.path,
        "name": inst.name,
        "k": int(k),
        "n": int(n),
        "status": result.status,
        "solution": solution,
        "checked": True if solution is not None else None,
        "solution_file": None if written is None else os.fspath(written),
        "nodes": int(result.nodes),
        "seconds": float(result.seconds),
        "method": list(result.method),
        "exact": bool(result.exact),
        "seed": _RESTART_SEED if seed is None else seed,
    }


def _solve_all(
    args: argparse.Namespace,
    instances: Sequence[_Instance],
    out: Any,
    executor: Optional[Executor],
) -> None:
    """Solve each instance in turn, writing its solution file and its row."""
    from skipsearch.scan import _show_progress

    options = _engine_options(args, executor)
    interval = args.checkpoint_interval or DEFAULT_CHECKPOINT_INTERVAL
    show = _show_progress(False if args.no_progress else None)
    for index, inst in enumerate(instances, start=1):
        label = printable(f"[{index}/{len(instances)}] {inst.name}")
        result = _run(inst, options, interval, _ProgressLine(label) if show else None)
        solution = checked_solution(inst, result)
        _logger.info(
            "%s: %s in %.3f s, %d nodes (%s)",
            inst.path,
            result.status,
            result.seconds,
            result.nodes,
            " -> ".join(result.method),
        )
        if solution is not None and inst.solution_file is not None:
            _write_file(inst.solution_file, format_solution(printable(inst.name), solution))
        out.row(inst, result, solution)


def solve(args: argparse.Namespace) -> int:
    """Run ``skipsearch solve`` with the parsed ``args``; the exit status
    (0) when every instance was run, else an exception that
    :func:`skipsearch.cli._failure` maps to its code."""
    _check_options(args)
    instances = _instances(args)
    out = _JsonLines(instances, args.seed) if args.json else _Table(instances)
    timeout = args.connect_timeout or DEFAULT_CONNECT_TIMEOUT
    with contextlib.ExitStack() as stack:
        executor = None
        if args.scheduler is not None:
            executor = stack.enter_context(_dask_executor(args.scheduler, timeout))
        try:
            _solve_all(args, instances, out, executor)
        except BaseException as e:
            stop = cli._stop_reason(e)
            if stop is not None and out.statuses and not isinstance(e, cli._CutShort):
                with contextlib.suppress(BrokenPipeError, cli._OutputError):
                    out.stop(stop[0], args.checkpoint is not None)
            raise
    out.finish()
    cli._emit("", end="", flush=True)  # a failing stdout fails here, not at exit
    return cli.EXIT_OK
