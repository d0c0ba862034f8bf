"""The distributed and resumable search's options, checked once."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Optional, Union

from skipsearch._engine import state as state_file
from skipsearch._engine.distributed import ClusterOptions, SearchProgress
from skipsearch._engine.tasks import InlineExecutor
from skipsearch._types import IntArray


def check_cluster_options(  # noqa: PLR0913 - subset_sum's options, checked in one place
    executor: Optional[Executor],
    checkpoint: Optional[Union[str, os.PathLike[str]]],
    interval: float,
    progress: Optional[Callable[[SearchProgress], None]],
    threads: Optional[int],
    A: Optional[IntArray],
    b: Optional[IntArray],
    seed: int,
) -> Optional[ClusterOptions]:
    """The options record of ``subset_sum``'s distributed and resumable
    search, or None when neither ``executor`` nor ``checkpoint`` is given.
    ``A`` and ``b`` are the integer data (None for float data), ``seed``
    the restarts' seed, checked.

    Raises
    ------
    TypeError
        ``executor`` is not a ``concurrent.futures.Executor``, ``progress``
        not callable, ``checkpoint`` not a path.
    ValueError
        ``checkpoint_interval`` not a positive finite number; ``executor``
        or ``checkpoint`` with float data.
    FileNotFoundError
        The folder of ``checkpoint`` does not exist.
    skipsearch.CheckpointMismatch
        ``checkpoint`` exists and belongs to another search, or is damaged.
    """
    if executor is not None and not isinstance(executor, Executor):
        raise TypeError(
            "executor must be a concurrent.futures.Executor (e.g. ProcessPoolExecutor(), or "
            f"client.get_executor() of dask.distributed), got {type(executor).__name__}"
        )
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be callable, got {type(progress).__name__}")
    if isinstance(interval, bool) or not isinstance(interval, (int, float)):
        raise TypeError(f"checkpoint_interval must be a number of seconds, got {interval!r}")
    if not (math.isfinite(interval) and interval > 0):
        raise ValueError(f"checkpoint_interval must be positive and finite, got {interval!r}")
    path = None
    if checkpoint is not None:
        if not isinstance(checkpoint, (str, os.PathLike)):
            raise TypeError(f"checkpoint must be a path, got {type(checkpoint).__name__}")
        path = os.fspath(checkpoint)
        if isinstance(path, bytes):  # pragma: no cover - os.PathLike[bytes]
            path = os.fsdecode(path)
        folder = os.path.dirname(os.path.abspath(path)) or "."
        if not os.path.isdir(folder):
            raise FileNotFoundError(f"checkpoint's folder {folder!r} does not exist")
        if os.path.isdir(path):
            raise ValueError(f"checkpoint {path!r} is a directory; give a file path")
    if executor is None and path is None:
        return None
    if A is None or b is None:
        raise ValueError(
            "executor and checkpoint apply to integer data only (A and b hold non-integers)"
        )
    inline = executor is None
    options = ClusterOptions(
        executor=InlineExecutor() if executor is None else executor,
        checkpoint=path,
        interval=float(interval),
        progress=progress,
        instance=state_file.digest(A, b),
        unit_threads=threads if threads is not None or inline else 1,
    )
    if path is not None:
        # A file of another instance or settings is refused before any work.
        state_file.load(path, options.instance, options.settings(seed))
    return options
