"""skipsearch: can a residual MLP block ``x -> A x + f(x)`` be rewritten as a
skip-free MLP of the same width?

Start with :func:`find_absorbing_subset`; :mod:`skipsearch.baseline` is its
pure-numpy twin; :func:`scan` (and ``skipsearch scan``) decides every FFN
block of real checkpoints, and :func:`from_torch` reads a PyTorch module.
The mathematics follows Mijoski & Karbevski 2026, arXiv:2604.23705.
"""

from skipsearch._core import __version__
from skipsearch.absorption import MLPBlock, decide_stack, find_absorbing_subset
from skipsearch.activations import (
    ACTIVATIONS,
    Activation,
    get_activation,
    known_activations,
    leaky_relu,
)
from skipsearch.checks import check_certificate
from skipsearch.construction import (
    SkipFreeBlock,
    build_skip_free_block,
    max_abs_difference,
    residual_block_output,
)
from skipsearch.result import AbsorptionResult, GenericityChecks, SearchStats, StackResult
from skipsearch.layouts import Layout
from skipsearch.scan import BlockReport, LayerReport, scan, scan_checkpoint
from skipsearch.subset_sum import SubsetSumResult, subset_sum
from skipsearch.torch_adapter import from_torch, load_state_dict

__all__ = [
    "__version__",
    "ACTIVATIONS",
    "AbsorptionResult",
    "Activation",
    "BlockReport",
    "GenericityChecks",
    "LayerReport",
    "Layout",
    "MLPBlock",
    "SearchStats",
    "SkipFreeBlock",
    "StackResult",
    "SubsetSumResult",
    "build_skip_free_block",
    "check_certificate",
    "decide_stack",
    "find_absorbing_subset",
    "from_torch",
    "get_activation",
    "known_activations",
    "leaky_relu",
    "load_state_dict",
    "max_abs_difference",
    "residual_block_output",
    "scan",
    "scan_checkpoint",
    "subset_sum",
]
