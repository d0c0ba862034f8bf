"""The warnings skipsearch emits, one category each.

Every warning the package emits is a :class:`SkipsearchWarning`, so a
pipeline can filter all of them at once, or one kind by its subclass::

    import warnings
    import skipsearch

    warnings.simplefilter("error", skipsearch.SkipsearchWarning)   # all of them
    warnings.simplefilter("ignore", skipsearch.PrecisionWarning)   # just this kind

All derive from :class:`UserWarning`, so existing filters on ``UserWarning``
keep working. On the command line, a warning turned into an error
(``python -W error``, ``PYTHONWARNINGS=error``) ends ``skipsearch scan``
with exit code 2 and the warning's message on one line.
"""

from __future__ import annotations

__all__ = [
    "AutomaticLayoutWarning",
    "CheckpointSeriesWarning",
    "PrecisionWarning",
    "SkipsearchWarning",
    "UnindexedShardWarning",
]


class SkipsearchWarning(UserWarning):
    """Base class of every warning skipsearch emits.

    Filter on it to silence, or turn into errors, all of skipsearch's
    warnings at once (``warnings.simplefilter("error", SkipsearchWarning)``).
    It derives from :class:`UserWarning`.

    See Also
    --------
    PrecisionWarning, UnindexedShardWarning, CheckpointSeriesWarning
    """


class PrecisionWarning(SkipsearchWarning):
    """Weights were widened or dequantized, so the default tolerance no
    longer follows their stored precision.

    Emitted by :func:`skipsearch.from_torch` when a module holds bfloat16
    or float8 weights (widened to float32) or FP8 weights with a
    scale (dequantized to float64): ``find_absorbing_subset``'s default
    tolerance then follows the wider dtype. The message names the
    ``tol=`` that matches the stored precision. The checkpoint scan needs
    no such warning: it applies the stored dtype's tolerance itself.

    See Also
    --------
    SkipsearchWarning
    """


class UnindexedShardWarning(SkipsearchWarning):
    """A sharded checkpoint's folder holds ``.safetensors`` files that its
    index does not name; they are ignored.

    Emitted when a checkpoint is opened (by :func:`skipsearch.scan`,
    :func:`skipsearch.scan.describe_checkpoint` and
    :class:`skipsearch.io.checkpoints.Checkpoint`): the index's
    ``weight_map`` is authoritative, so a stale or stray shard beside it is
    never read. The message lists the ignored files.

    See Also
    --------
    SkipsearchWarning
    """


class CheckpointSeriesWarning(SkipsearchWarning):
    """A directory given to the scan is a checkpoint itself and also holds
    step-named checkpoints (``checkpoint-500/``, ...), as a ``Trainer``
    output folder with its final model does.

    Emitted by :func:`skipsearch.scan` (and ``skipsearch scan``): the
    directory is scanned as the one checkpoint it is, not as a checkpoint
    series; the message names the step-named subdirectories and says how
    to scan them as a series.

    Also emitted when a checkpoint series holds step-named subdirectories
    without a checkpoint in them (an interrupted save): they are left out
    of the series, and the message names them.

    See Also
    --------
    SkipsearchWarning
    """


class AutomaticLayoutWarning(SkipsearchWarning):
    """A checkpoint's ``model_type`` is not in the registry, and the scan
    found its FFN blocks by the automatic layout.

    Emitted by :func:`skipsearch.scan` (and ``skipsearch scan``) once per
    checkpoint: the message gives the mapping chosen (the key patterns of
    ``W_up``, ``W_down`` and ``W_gate``, the registry family they come from,
    and the config key the activation was read from), so that a reader can
    check it; ``--up/--down`` (a :class:`skipsearch.Layout`) overrides it.

    See Also
    --------
    SkipsearchWarning
    """
