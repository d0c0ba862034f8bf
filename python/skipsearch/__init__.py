"""skipsearch: can a residual MLP block ``x -> A x + f(x)`` be rewritten as a
skip-free MLP of the same width?

Start with :func:`find_absorbing_subset`; :mod:`skipsearch.baseline` is its
pure-numpy twin; :func:`scan` (and ``skipsearch scan``) decides every FFN
block of real checkpoints, and :func:`from_torch` reads a PyTorch module.
The mathematics follows Mijoski & Karbevski 2026, arXiv:2604.23705.
"""

import logging as _logging
from importlib import import_module as _import_module

from skipsearch._core_abi import CORE_ABI as _CORE_ABI

_REBUILD = (
    "rebuild it from the source tree: `pip install .` (or `maturin develop` for an "
    "editable install)"
)

try:
    _core = _import_module("skipsearch._core")
except ImportError as _error:
    if isinstance(_error, ModuleNotFoundError) and _error.name == "skipsearch._core":
        # No compiled core beside these files: a source checkout on sys.path
        # that was never built, or an install that lost its extension module.
        raise ImportError(
            f"skipsearch's compiled core (skipsearch._core) is not in {__path__[0]}: "
            "skipsearch was imported from a source checkout that has not been built (or an "
            "install lost its extension module). Build it from the source tree with "
            "`pip install .`, then import the installed package (not the checkout's python/ "
            "folder), or with `maturin develop` for an editable install.",
            name="skipsearch._core",
        ) from _error
    raise ImportError(
        f"skipsearch's compiled core (skipsearch._core) failed to load ({_error}); if it was "
        f"built for another Python or platform, {_REBUILD}.",
        name="skipsearch._core",
    ) from _error

if getattr(_core, "__abi__", None) != _CORE_ABI:
    _found = getattr(_core, "__abi__", None)
    _found = "no interface revision" if _found is None else f"interface revision {_found!r}"
    raise ImportError(
        f"skipsearch's compiled core ({getattr(_core, '__file__', 'skipsearch._core')}) is stale: "
        f"it has {_found}, while the Python files beside it need revision {_CORE_ABI}, so it "
        f"was built from other sources; {_REBUILD}.",
        name="skipsearch._core",
    )

from skipsearch import baseline
from skipsearch._core import __version__
from skipsearch._engine.distributed import SearchProgress
from skipsearch._engine.state import CheckpointMismatch
from skipsearch._scan.frames import (
    ScanReports,
    document_to_pandas,
    document_to_polars,
    reports_to_pandas,
    reports_to_polars,
)
from skipsearch._types import (
    Argument,
    Backend,
    BlockReportDict,
    BracketStatus,
    DistanceKind,
    GenericityCheck,
    Norm,
    RankDecision,
    Status,
    SubsetSumStatus,
    Verdict,
)
from skipsearch._warnings import (
    AutomaticLayoutWarning,
    CheckpointSeriesWarning,
    PrecisionWarning,
    SkipsearchWarning,
    UnindexedShardWarning,
)
from skipsearch.absorption import MLPBlock, decide_stack, find_absorbing_subset
from skipsearch.activations import (
    ACTIVATIONS,
    Activation,
    get_activation,
    known_activations,
    leaky_relu,
    scaled_activation,
)
from skipsearch.checks import check_certificate
from skipsearch.construction import (
    SkipFreeBlock,
    build_skip_free_block,
    max_abs_difference,
    relative_output_error,
    residual_block_output,
)
from skipsearch.hyper_connections import (
    HyperConnectionResult,
    decide_hyper_connection,
    hyper_connection_output,
)
from skipsearch.io.layouts import Layout
from skipsearch.options import DistanceMode, SearchOptions
from skipsearch.result import AbsorptionResult, GenericityChecks, SearchStats, StackResult
from skipsearch.scan import BlockReport, LayerReport, scan, scan_checkpoint
from skipsearch.subset_sum import SubsetSumResult, subset_sum
from skipsearch.torch_adapter import from_hyper_connection, from_torch, load_state_dict

__all__ = [
    "ACTIVATIONS",
    "AbsorptionResult",
    "Activation",
    "Argument",
    "AutomaticLayoutWarning",
    "Backend",
    "BlockReport",
    "BlockReportDict",
    "BracketStatus",
    "CheckpointMismatch",
    "CheckpointSeriesWarning",
    "DistanceKind",
    "DistanceMode",
    "GenericityCheck",
    "GenericityChecks",
    "HyperConnectionResult",
    "LayerReport",
    "Layout",
    "MLPBlock",
    "Norm",
    "PrecisionWarning",
    "RankDecision",
    "ScanReports",
    "SearchOptions",
    "SearchProgress",
    "SearchStats",
    "SkipFreeBlock",
    "SkipsearchWarning",
    "StackResult",
    "Status",
    "SubsetSumResult",
    "SubsetSumStatus",
    "UnindexedShardWarning",
    "Verdict",
    "__version__",
    "baseline",
    "build_skip_free_block",
    "check_certificate",
    "decide_hyper_connection",
    "decide_stack",
    "document_to_pandas",
    "document_to_polars",
    "find_absorbing_subset",
    "from_hyper_connection",
    "from_torch",
    "get_activation",
    "hyper_connection_output",
    "known_activations",
    "leaky_relu",
    "load_state_dict",
    "max_abs_difference",
    "relative_output_error",
    "reports_to_pandas",
    "reports_to_polars",
    "residual_block_output",
    "scaled_activation",
    "scan",
    "scan_checkpoint",
    "subset_sum",
]

# Diagnostics go to the "skipsearch" logger (child loggers "skipsearch.scan",
# ...); a library prints nothing unless the application configures logging.
_logging.getLogger(__name__).addHandler(_logging.NullHandler())
