"""Type stub of the compiled Rust core (``rust/python/``).

Checked against the built module by ``python -m mypy.stubtest skipsearch``.
Every array argument must already have the stated dtype (the bindings do not
convert); the Python layer coerces before calling.
"""

import threading
from collections.abc import Sequence
from typing import Literal, Optional, TypedDict, Union, final

import numpy as np
import numpy.typing as npt
from typing_extensions import Required

__all__ = [  # noqa: RUF022 - the module's own order, which tests/test_typing.py compares
    "__version__",
    "__abi__",
    "GramMatrix",
    "KernelTree",
    "search_flip_set",
    "genericity_checks",
    "enumerate_bounded",
    "root_prefixes",
    "search_subtrees",
    "estimate_nodes",
    "schroeppel_shamir",
    "meet_in_the_middle",
    "feasibility_jump",
    "lll_reduce",
    "flip_set_bracket",
    "erf",
    "enter_float_env",
    "restore_float_env",
]

__version__: str
#: Interface revision; must equal ``skipsearch._core_abi.CORE_ABI``.
__abi__: int

#: Why a search stopped early (``rust/limits.rs``, ``Stop::as_str``). The
#: bindings raise ``KeyboardInterrupt`` rather than return ``"interrupted"``.
_Stop = Literal["time_limit", "node_limit", "interrupted", "memory_limit"]

class _Enumeration(TypedDict):
    solutions: npt.NDArray[np.int64]
    stop: Optional[_Stop]
    nodes: int
    seconds: float

class _ListSearch(TypedDict):
    solution: Optional[npt.NDArray[np.uint8]]
    stop: Optional[_Stop]
    nodes: int
    memory_bytes: int
    seconds: float

class _WindowSearch(_ListSearch):
    unresolved: bool

class _Jump(TypedDict):
    solution: Optional[npt.NDArray[np.uint8]]
    moves: int

#: The stages the absorption core records in its method trace, in the order
#: they run (``rust/absorption/mod.rs``, ``Step::as_str``).
_CoreStep = Literal[
    "zero skip",
    "certificate Y = A",
    "conjugate gradients",
    "relaxation",
    "gram conjugate gradients",
    "gram certificate",
    "certificate",
    "refinement",
    "null space",
    "rigorous windows",
    "branch and bound",
    "meet in the middle",
    "exhaustive verification",
    "verification",
]
#: The pure-numpy baseline's own steps (``skipsearch.baseline``).
_BaselineStep = Literal["relaxation (lstsq)", "certificate", "enumeration"]

#: What a search established.
_SearchFinding = Literal["subset", "no_subset", "stopped", "inconclusive"]

#: Which complete argument proved "no flip set": a certificate, the
#: relaxation's fixed neuron, the branch and bound, the meet in the middle,
#: the baseline's enumeration, or the exact integer engine.
_SearchEvidence = Literal[
    "certificate",
    "relaxation",
    "branch_and_bound",
    "meet_in_the_middle",
    "enumeration",
    "exact_integer",
]

#: Why a search for a flip set stopped short of a finding (the core's
#: limits, and the exact integer engine's ``"incomplete"``).
_SearchStop = Literal["time_limit", "node_limit", "memory_limit", "incomplete"]

#: Why float64 could not settle the block.
_SearchNumerics = Literal["overflow", "ill_conditioned", "unresolved"]

class _Genericity(TypedDict):
    check: Literal["non_proportional", "distinct_up_to_sign", "none"]
    dead: npt.NDArray[np.int64]
    pairs: npt.NDArray[np.int64]
    pair_count: int

class _RankDecision(TypedDict):
    last_pivot: float
    next_pivot: Optional[float]
    cutoff: float

class _FlipSetSearch(TypedDict, total=False):
    """The record of one search for a flip set, the same whichever of its
    three producers made it: ``search_flip_set`` (the Rust core), the exact
    integer route of ``skipsearch.absorption`` and ``skipsearch.baseline``.
    Its one consumer, ``skipsearch.absorption._from_search``, turns it into
    an ``AbsorptionResult``; the reason prose comes from tables keyed by
    ``finding`` with ``evidence``, ``stop`` or ``numerics``.

    A producer sets the keys below ``seconds`` only where they apply:
    ``evidence`` (and ``conflict`` or ``proof``) with ``"no_subset"``,
    ``stop`` (and ``detail``) with ``"stopped"``, ``numerics`` with
    ``"inconclusive"``; the baseline leaves out the core's diagnostics.
    """

    finding: Required[_SearchFinding]
    subset: Required[Optional[npt.NDArray[np.int64]]]
    method: Required[list[Union[_CoreStep, _BaselineStep]]]
    nodes: Required[int]
    seconds: Required[float]
    #: The integer route's subset-sum steps (``SubsetSumResult.method``).
    exact_integer: tuple[str, ...]
    evidence: _SearchEvidence
    #: relaxation: (neuron, its relaxed value); branch_and_bound: the component.
    conflict: Union[tuple[int, float], int]
    #: exact_integer: the subset-sum step that proved it.
    proof: str
    stop: _SearchStop
    detail: str
    numerics: _SearchNumerics
    residual: Optional[float]
    residual_lower: Optional[float]
    residual_exact: bool
    relaxation_distance: Optional[float]
    distance_bound: Optional[float]
    rounding_bound: Optional[float]
    certificate: Optional[npt.NDArray[np.float64]]
    genericity: Optional[_Genericity]
    rank: Optional[int]
    rank_decision: Optional[_RankDecision]
    components: list[int]
    candidates: int
    krylov_steps: int
    gram_cg_steps: int
    timings: list[tuple[str, float]]
    relaxation_precision: Optional[Literal["float32", "float64"]]
    exact_estimate: Optional[float]
    #: Neurons no flip set within tol can contain (a norm bound), and that
    #: bound; every certificate bound covers the flip sets avoiding them.
    excluded: Optional[npt.NDArray[np.int64]]
    exclusion_bound: Optional[float]
    kernel: str
    gram: Optional[GramMatrix]

@final
class GramMatrix:
    """The lower triangle of a block's Gram matrix, kept by
    ``search_flip_set(..., keep_gram=True)`` for ``flip_set_bracket``;
    opaque, with the fingerprint of the weights it was built from."""

    @property
    def nbytes(self) -> int:
        """Bytes held (0 once a bracket has taken it)."""

def genericity_checks(
    w_up: npt.NDArray[np.float64],
    w_down: npt.NDArray[np.float64],
    b_up: Optional[npt.NDArray[np.float64]],
    check: str,
    tol: float,
    threads: Optional[int] = None,
) -> _Genericity:
    """The genericity checks of ``search_flip_set`` alone: dead neurons
    (``W_up[i] = 0`` or ``W_down[:, i] = 0``) and the rows of ``[W_up |
    b_up]`` that fail ``check`` (``"non_proportional"``,
    ``"distinct_up_to_sign"`` or ``"none"``) at ``tol``, on the rows
    balanced by a power of two as the search reads them.
    ``skipsearch.hyper_connections`` needs them where the mixing alone
    proves that no flip set exists.
    """

def search_flip_set(
    w_up: npt.NDArray[np.float64],
    w_down: npt.NDArray[np.float64],
    skip: npt.NDArray[np.float64],
    b_up: Optional[npt.NDArray[np.float64]],
    flip_constant: float,
    tol: float,
    check: str,
    time_limit: Optional[float] = None,
    node_limit: Optional[int] = None,
    threads: Optional[int] = None,
    flip_constant_lo: float = 0.0,
    distance: Optional[bool] = None,
    memory_limit: Optional[int] = None,
    keep_gram: bool = False,
    exact_seconds: Optional[float] = None,
    keep_certificate: bool = True,
) -> _FlipSetSearch:
    """Search for a flip set ``S`` with ``c W_down[:, S] W_up[S, :] = -A``.

    ``flip_constant_lo`` is the rounding error of ``flip_constant`` (the
    exact ``c`` is their sum), at most one ulp of it. ``check`` is
    ``"none"``, ``"non_proportional"`` or ``"distinct_up_to_sign"``.
    ``distance``: None (exact when the Gram path fits ``memory_limit``
    bytes), True (always exact) or False (certificates first).
    ``exact_seconds``: with ``distance=None``, the exact path runs only
    when its estimated seconds (returned as ``exact_estimate``) are within
    it; None means no budget. Raises ``ValueError`` for a negative or NaN
    budget. ``keep_certificate=False``: the exact path may bound the
    relaxation's residual from the Gram matrix without forming it (method
    ``"gram certificate"``), and ``certificate`` is then None unless
    ``Y = A`` proves more.

    Returns the record :class:`_FlipSetSearch`: ``finding`` (``"subset"``,
    ``"no_subset"``, ``"stopped"``, ``"inconclusive"``), ``subset``,
    ``evidence`` (``"certificate"``, ``"relaxation"``, ``"branch_and_bound"``,
    ``"meet_in_the_middle"``),
    ``conflict``, ``stop`` (``"time_limit"``, ``"node_limit"``,
    ``"memory_limit"``), ``numerics`` (``"overflow"``,
    ``"ill_conditioned"``, ``"unresolved"``), ``residual`` and
    ``residual_lower`` (a rigorous bracket on the subset's relative
    residual), ``residual_exact``, ``relaxation_distance``,
    ``distance_bound`` and ``rounding_bound`` (the best certificate's proven
    bound and its rounding allowance), ``certificate``, ``genericity``,
    ``rank``, ``rank_decision`` (``last_pivot``, ``next_pivot``, ``cutoff``),
    ``components``, ``candidates``, ``krylov_steps``, ``gram_cg_steps``, ``nodes``, ``method``
    (the stages, :data:`_CoreStep`),
    ``timings`` (``(step, seconds since the start)`` pairs of the exact
    path), ``relaxation_precision`` (``"float32"``, ``"float64"`` or
    None), ``kernel`` (the gemm crate's SIMD kernels on this CPU), ``gram``
    (with ``keep_gram``: a :class:`GramMatrix` when the decision ended with
    its Gram matrix intact, else None) and ``seconds``. Raises ``ValueError`` on bad shapes or options,
    ``MemoryError`` when ``distance=True`` and the Gram path needs more
    than ``memory_limit``, and ``KeyboardInterrupt`` on Ctrl-C.
    """

def enumerate_bounded(
    basis: npt.NDArray[np.int64],
    bounds: npt.NDArray[np.int64],
    radius_sq: float,
    max_solutions: int = 1,
    time_limit: Optional[float] = None,
    node_limit: Optional[int] = None,
    threads: Optional[int] = None,
    lds_nodes: int = 0,
    stop_event: Optional[threading.Event] = None,
    lds_free_width: int = 0,
) -> _Enumeration:
    """All vectors ``y`` (up to sign, at most ``max_solutions``) of the
    lattice spanned by the rows of ``basis`` with squared norm at most
    ``radius_sq`` and each entry ``y_j`` in ``{-bounds[j], -bounds[j] + 2,
    ..., bounds[j]}`` (all bounds 1: the +-1 vectors). Returns ``solutions``
    (array, one per row), ``stop`` (None when the search was complete),
    ``nodes`` and ``seconds``. ``max_solutions`` must be at least 1 and
    ``threads`` from 1 to 1024 (ValueError otherwise); a ``radius_sq``
    beyond ``sum(bounds**2)``, which no admissible vector exceeds, is cut
    to it.

    With ``lds_nodes > 0``, limited-discrepancy passes (discrepancy 0, 1,
    ...) run first until they have spent ``lds_nodes`` nodes (checked
    between passes), then the depth-first search; a pass that passes over
    no value is complete on its own. With ``lds_free_width > 0`` the passes
    spend no discrepancy on the top levels of the tree, down to the
    deepest depth that holds at most that many nodes (still complete: each
    leaf spends its positions on the levels below). ``stop_event`` (a
    ``threading.Event``) stops the search, as ``"interrupted"``, once it
    is set.
    """

class _Subtrees(TypedDict):
    solutions: npt.NDArray[np.int64]
    pending: list[list[int]]
    finished: int
    listed: int
    stop: Optional[str]
    nodes: int
    seconds: float

def root_prefixes(
    basis: npt.NDArray[np.int64], bounds: npt.NDArray[np.int64], radius_sq: float
) -> tuple[list[list[int]], int]:
    """The depth-first tree of ``enumerate_bounded`` cut into subtrees: their
    prefixes (the coefficients of the top levels, top first) in search
    order, whose subtrees together are the whole tree, and the nodes
    visited to list them."""

def search_subtrees(
    basis: npt.NDArray[np.int64],
    bounds: npt.NDArray[np.int64],
    radius_sq: float,
    prefixes: list[list[int]],
    max_solutions: int = 1,
    time_limit: Optional[float] = None,
    node_limit: Optional[int] = None,
    threads: Optional[int] = None,
    stop_event: Optional[threading.Event] = None,
) -> _Subtrees:
    """Search the subtrees below ``prefixes`` depth first, in parallel, until
    ``max_solutions`` vectors are found, all are exhausted, or a limit stops
    it. ``pending`` lists the prefixes still to search: each given one not
    finished, or for one a limit cut, the part of its subtree not searched.
    No solution and no pending prefix: every given subtree is exhausted.
    ``listed`` counts the values the cuts listed rather than searched.
    ValueError for a prefix longer than the basis has rows."""

@final
class KernelTree:
    """The enumeration tree of one reduced kernel basis (the rows of
    ``basis``), with the same bounds and radius as ``enumerate_bounded``,
    cut at its top levels into prefixes. Its depth-first search runs in
    pieces: each ``depth_first`` call goes on with the prefixes not yet
    searched to their end. Raises ``ValueError`` on bad shapes, bounds,
    radius or a dependent basis."""

    def __new__(
        cls,
        basis: npt.NDArray[np.int64],
        bounds: npt.NDArray[np.int64],
        radius_sq: float,
    ) -> KernelTree: ...
    @property
    def searched_fraction(self) -> float:
        """Share of the prefixes searched to their end (1.0: the whole tree)."""

    def depth_first(
        self,
        max_solutions: int = 1,
        time_limit: Optional[float] = None,
        node_limit: Optional[int] = None,
        threads: Optional[int] = None,
        stop_event: Optional[threading.Event] = None,
    ) -> _Enumeration:
        """Go on with the depth-first search until ``max_solutions``
        vectors are in hand, the tree is exhausted (``stop`` None: with no
        solution, a proof that there is none), or a limit of this call
        stops it. ``nodes`` and ``seconds`` are this call's."""

def estimate_nodes(
    basis: npt.NDArray[np.int64],
    bounds: npt.NDArray[np.int64],
    radius_sq: float,
    dives: int = 4096,
) -> float:
    """Knuth's estimate of the node count of ``enumerate_bounded``'s
    depth-first tree: the mean of ``dives`` random dives from a fixed seed.
    Raises ``ValueError`` on bad shapes, bounds or radius."""

def schroeppel_shamir(
    a: npt.NDArray[np.int64],
    b: npt.NDArray[np.int64],
    time_limit: Optional[float] = None,
    node_limit: Optional[int] = None,
    threads: Optional[int] = None,
) -> _ListSearch:
    """``x`` in ``{0,1}^n`` with ``a @ x == b`` exactly (``a`` of shape
    ``(k, n)``, ``n <= 52``), by Schroeppel-Shamir's four lists in
    ``2^(n/2)`` time and ``2^(n/4)`` memory. Returns ``solution`` (uint8
    array, or None), ``stop`` (None when the search was complete, so a None
    solution proves infeasibility), ``nodes`` (subset and pair sums formed),
    ``memory_bytes`` and ``seconds``.
    """

def feasibility_jump(
    a: npt.NDArray[np.int64],
    b: npt.NDArray[np.int64],
    max_moves: int,
    time_limit: Optional[float] = None,
) -> _Jump:
    """Look for ``x`` in ``{0,1}^n`` with ``a @ x == b`` exactly (``a`` of
    shape ``(k, n)``) by feasibility jump, a weighted local search from
    zero, flipping at most ``max_moves`` variables. Returns ``solution``
    (uint8 array, or None: nothing is proved then) and ``moves``.
    """

def lll_reduce(
    basis: list[list[int]],
    delta: float = 0.99,
    time_limit: Optional[float] = None,
    certify: bool = True,
    deep: int = 0,
) -> tuple[Optional[list[list[int]]], Optional[str]]:
    """LLL-reduce the rows of ``basis`` (linearly independent, of equal
    length, entries within 128 bits, else OverflowError) with Lovasz
    parameter ``delta`` in ``(0.25, 1)``: Householder-based floating-point
    LLL on an exact integer basis, used when the ``lattice`` extra (fpylll)
    is absent. Returns the reduced rows, which span the same lattice, and
    None; or None and why there are none (``"time_limit"``, dependent rows,
    an entry past 128 bits, or floats not enough: double, then
    double-double; Ctrl-C raises KeyboardInterrupt). With ``certify``, rows
    are returned only when a fresh double-precision QR with its rounding
    bound shows them reduced (``delta - 0.05``, size reduction to 0.56).
    ``deep`` (``>= 0``, else ValueError) adds deep insertions below that
    position, for the first ``8 d^2`` swaps.
    """

def meet_in_the_middle(
    a: npt.NDArray[np.float64],
    b: npt.NDArray[np.float64],
    radius: float,
    time_limit: Optional[float] = None,
    node_limit: Optional[int] = None,
    threads: Optional[int] = None,
    tol: Optional[float] = None,
) -> _WindowSearch:
    """``x`` in ``{0,1}^n`` with ``||a @ x - b||_2 <= radius`` (float ``a``
    of shape ``(k, n)``, ``n <= 44``), by meeting in the middle on a
    projection with a rigorous window. A subset is dropped only when its
    residual provably exceeds ``radius``, so a returned ``solution`` may lie
    just outside it by rounding (verify it). Returns ``solution`` (uint8
    array, or None), ``stop`` (None when the search was complete, so a None
    solution proves that none exists unless ``unresolved``), ``unresolved``,
    ``nodes``, ``memory_bytes`` and ``seconds``. With ``tol``, every subset
    in the window is verified rigorously against ``||a @ x - b|| <= tol
    ||b||`` and the search goes on past those provably outside;
    ``unresolved`` says some subset sat on that bound to rounding.
    """

class _BracketDict(TypedDict):
    best_subset: npt.NDArray[np.int64]
    lower: float
    upper: float
    optimal: bool
    nodes: int
    seconds: float

def flip_set_bracket(
    w_up: npt.NDArray[np.float64],
    w_down: npt.NDArray[np.float64],
    skip: npt.NDArray[np.float64],
    flip_constant: float,
    known_lower: float = 0.0,
    start: Optional[Sequence[int]] = None,
    time_limit: Optional[float] = None,
    node_limit: Optional[int] = None,
    threads: Optional[int] = None,
    flip_constant_lo: float = 0.0,
    search_time_limit: Optional[float] = None,
    start_residual: Optional[float] = None,
    gram: Optional[GramMatrix] = None,
) -> _BracketDict:
    """The bracket ``(lower, upper)`` on the least relative residual
    ``||A + c W_down[:, S] W_up[S, :]||_F / ||A||_F`` over all flip sets, and
    the best flip set found (``rust/absorption/bracket.rs``).

    ``lower`` bounds every flip set's residual, ``upper`` that of
    ``best_subset`` (both proven; each candidate's residual is bracketed on
    the weights, with exact sums where the a-priori bound is coarse).
    ``known_lower`` is a bound already proven; ``start`` a flip set (indices
    below ``m``, in any order) to start the local search from, and
    ``start_residual`` a proven upper bound on its relative residual (the
    decision's verified one; needs ``start``). A ``start`` is reported
    unless another flip set is proven strictly better, and then
    ``upper <= start_residual``. ``time_limit`` bounds the whole bracket
    (what is proved by then is returned); ``search_time_limit`` and
    ``node_limit`` the branch and bound (blocks of up to 64 neurons) as
    well. ``optimal`` says that it completed and that the bracket is narrow,
    ``upper - lower <= 1e-3 upper + 1e-12``. ``flip_constant_lo`` is the
    flip constant's rounding error, as in ``search_flip_set``. A zero
    ``skip`` gives the trivial bracket. Raises ``ValueError`` for a
    ``start`` index out of range, or a negative, NaN or start-less
    ``start_residual``. ``gram``, from ``search_flip_set(..., keep_gram=True)``
    on the same weights, is taken (it holds nothing afterwards) and used
    instead of building the Gram matrix again; a ``gram`` of other weights
    or flip constant is ignored (its fingerprint does not match).
    """

def erf(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The error function, elementwise, as a new float64 array of the shape
    of ``x`` (any shape; from the ``libm`` crate, under one ulp)."""

def enter_float_env() -> Optional[int]:
    """Put the calling thread into IEEE round-to-nearest with subnormal
    numbers kept (on x86_64 MXCSR, on aarch64 FPCR; all exceptions masked)
    and return the previous control state for :func:`restore_float_env`
    (``None`` where no register is written). Raises ``RuntimeError`` when
    the environment cannot be made standard (checked by arithmetic)."""

def restore_float_env(saved: Optional[int]) -> None:
    """Restore a state returned by :func:`enter_float_env` on the same
    thread."""
