"""Decide skip absorption for one block or a stack of blocks.

The activation's class decides which argument applies (see
:mod:`skipsearch.activations`). Flip-linear activations go to the search for
a flip set, done by the Rust core (or by :mod:`skipsearch.baseline`, which
enumerates subsets with numpy and shares everything else in this module).
"""

from __future__ import annotations

import dataclasses
import functools
import numbers
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Literal, Optional, TypedDict, Union, cast

import numpy as np
import numpy.typing as npt

from skipsearch import _core
from skipsearch._depth import _nonsingular, depth_class_problem, skip_product_nonzero
from skipsearch._float_env import in_standard_float_env
from skipsearch._types import Argument, Backend, FloatArray, RankDecision, UInt8Array
from skipsearch._validation import (
    DISTANCE_BUDGET,
    Weights,
    as_float_array,
)
from skipsearch.activations import (
    BOUNDED,
    FLIP_LINEAR,
    GATED,
    HOMOGENEOUS,
    Activation,
    get_activation,
)
from skipsearch.construction import SkipFreeBlock, build_skip_free_block
from skipsearch.options import DistanceMode, SearchOptions, merged

if TYPE_CHECKING:
    from skipsearch._core import _FlipSetSearch, _Genericity, _SearchStop
from skipsearch.result import (
    AbsorptionResult,
    FieldEquality,
    GenericityChecks,
    SearchStats,
    StackResult,
)
from skipsearch.result import _short as _short_list

__all__ = ["MLPBlock", "decide_stack", "find_absorbing_subset"]

PAPER = "Mijoski & Karbevski 2026, arXiv:2604.23705"


#: Branch-and-bound nodes the float search may spend on an integer-valued
#: block before the exact integer engine takes over.
_FLOAT_NODES_BEFORE_EXACT = 100_000
#: Largest d_out * d_in for which integer blocks go to the lattice engine.
_EXACT_MAX_EQUATIONS = 256


def _max_abs(x: npt.ArrayLike) -> float:
    return float(np.max(np.abs(x), initial=0.0))


def _is_integral(x: FloatArray) -> bool:
    # No cap on the entries themselves: the product bound in _rust_search
    # keeps every entry and row sum of the integer system below 2^53.
    return bool(np.all(x == np.round(x)))


def _rust_search(
    w: Weights,
    flip: tuple[float, float],
    tol: float,
    check: str,
    options: SearchOptions,
    *,
    keep_gram: bool = False,
) -> _FlipSetSearch:
    """The Rust decision of one flip-linear block (``options.time_limit`` is
    what is left of the call's), and the exact integer engine for an
    integer-valued block that the relaxation leaves open."""
    W_up, W_down, A, b_up = w.W_up, w.W_down, w.A, w.b_up
    time_limit, node_limit, threads = options.time_limit, options.node_limit, options.threads
    c, c_lo = flip
    integral = (
        c_lo == 0.0
        and float(c).is_integer()
        and A.size <= _EXACT_MAX_EQUATIONS
        and all(_is_integral(x) for x in (W_up, W_down, A))
        # Every entry of c W_down[:, S] W_up[S] + A exact in float64 and
        # int64: the integer system is then the block's own.
        and _max_abs(c) * _max_abs(W_down) * _max_abs(W_up) * W_up.shape[0] + _max_abs(A) < 2.0**53
        # A nonzero integer residual E has ||E||_F >= 1: only below that
        # are the flip sets within tol exactly the integer solutions.
        and tol * float(np.linalg.norm(A)) < 1.0
    )
    search = functools.partial(
        _core.search_flip_set,
        W_up,
        W_down,
        A,
        b_up,
        c,
        tol,
        check,
        time_limit,
        threads=threads,
        flip_constant_lo=c_lo,
        distance=options.exact_distance,
        memory_limit=None if options.memory_limit is None else int(options.memory_limit),
        keep_gram=keep_gram,
        exact_seconds=options.distance_budget,
        keep_certificate=options.keep_certificate,
    )
    if not integral:
        return search(node_limit=node_limit)
    # Integer-valued block: the float pipeline first (a certificate or an
    # easy flip set ends it), then the exact integer engine for what the
    # relaxation leaves open.
    cap = (
        _FLOAT_NODES_BEFORE_EXACT
        if node_limit is None
        else min(node_limit, _FLOAT_NODES_BEFORE_EXACT)
    )
    start = time.perf_counter()
    raw = search(node_limit=cap)
    open_ended = (
        raw["finding"] == "inconclusive"
        or (raw["finding"] == "stopped" and raw["stop"] == "node_limit" and cap != node_limit)
        or (raw["finding"] == "no_subset" and raw["evidence"] != "certificate")
    )
    if not open_ended:
        return raw
    from skipsearch._engine.distributed import EngineOptions
    from skipsearch._engine.portfolio import _RESTART_SEED
    from skipsearch.subset_sum import _integer

    columns = (c * np.einsum("pi,iq->pqi", W_down, W_up)).reshape(A.size, -1)
    left = None if time_limit is None else max(0.0, time_limit - (time.perf_counter() - start))
    exact = _integer(
        np.rint(columns).astype(np.int64),
        np.rint(-A).astype(np.int64).reshape(-1),
        time.perf_counter(),
        left,
        node_limit,
        EngineOptions(threads=threads, seed=_RESTART_SEED, cluster=None),
    )
    raw = raw.copy()
    raw["exact_integer"] = exact.method
    raw["nodes"] = int(raw["nodes"]) + exact.nodes
    # Wall time of both stages (their own clocks miss the hand-over).
    raw["seconds"] = time.perf_counter() - start
    raw.pop("numerics", None)
    if exact.status == "feasible":
        subset = np.flatnonzero(cast(UInt8Array, exact.solution)).astype(np.int64)
        # Every entry of E is an integer below 2^53 by the size bound above,
        # so float64 computes it exactly; checked all the same.
        E = c * W_down[:, subset] @ W_up[subset] + A
        if np.any(E):
            raw.update({"finding": "inconclusive", "subset": None, "numerics": "unresolved"})
        else:
            raw.update({"finding": "subset", "subset": subset, "residual": 0.0})
            raw["residual_lower"] = 0.0
    elif exact.status == "infeasible":
        raw.update({"finding": "no_subset", "subset": None, "evidence": "exact_integer"})
        raw["proof"] = exact.method[-1]
    else:
        raw.update({"finding": "stopped", "subset": None, "detail": exact.method[-1]})
        raw["stop"] = cast("_SearchStop", exact.status)
    return raw


def _rank_words(rank: Optional[int], decision: Optional[RankDecision]) -> str:
    """The rank decision in words, for an undecided reason."""
    if rank is None or not decision:
        return ""
    pivot = decision["next_pivot"]
    nxt = "none (full rank)" if pivot is None else f"{pivot:.3g}"
    return (
        f" (Gram rank {rank}: last pivot {decision['last_pivot']:.3g}, next {nxt}, "
        f"cut-off {decision['cutoff']:.3g} on the unit-diagonal scaled Gram matrix)"
    )


def _exact_proof(step: str) -> str:
    """The exact integer engine's final step, with its source."""
    if step.startswith("presolve"):
        return step
    if step.startswith("Schroeppel-Shamir"):
        return "a complete Schroeppel-Shamir search; Schroeppel & Shamir 1981"
    return "a complete lattice enumeration; Aardal, Hurkens & Lenstra 2000"


@in_standard_float_env
def find_absorbing_subset(  # noqa: PLR0913 - the public API keeps its keywords (SearchOptions bundles them)
    W_up: npt.ArrayLike,
    W_down: npt.ArrayLike,
    *,
    activation: Union[str, Activation] = "relu",
    b_up: Optional[npt.ArrayLike] = None,
    b_down: Optional[npt.ArrayLike] = None,
    W_gate: Optional[npt.ArrayLike] = None,
    skip: Optional[npt.ArrayLike] = None,
    tol: Optional[float] = None,
    time_limit: Optional[float] = None,
    node_limit: Optional[int] = None,
    threads: Optional[int] = None,
    distance: Union[DistanceMode, bool, None] = None,
    memory_limit: Optional[float] = None,
    bracket: Optional[bool] = None,
    distance_budget: Optional[float] = DISTANCE_BUDGET,
    keep_certificate: bool = True,
    options: Optional[SearchOptions] = None,
    b_gate: Optional[npt.ArrayLike] = None,
) -> AbsorptionResult:
    """Decide whether ``x -> A x + f(x)`` is a skip-free MLP of the same width.

    The block is ``f(x) = W_down act(W_up x + b_up) + b_down`` or, for gated
    activations, ``f(x) = W_down (gate(W_gate x) * (W_up x + b_up)) + b_down``.
    The question is whether a block ``g`` of the same kind (same activation
    and form, same width ``m``, inner biases only if ``f`` has them) with no
    skip satisfies ``g(x) = A x + f(x)`` for every ``x``.
    For flip-linear activations (ReLU, GELU, ...) the search looks for a flip
    set ``S`` with ``c W_down[:, S] W_up[S, :] = -A``: a least-squares
    relaxation through the ``m x m`` Gram matrix, a certificate of
    impossibility, a null-space split into independent components and an
    exact branch and bound, all in Rust with the interpreter released.

    Parameters
    ----------
    W_up : array_like, shape (m, d_in)
        Up projection (``torch.nn.Linear`` weight convention).
    W_down : array_like, shape (d_out, m)
        Down projection.
    activation : str or Activation, default "relu"
        A name from :func:`skipsearch.known_activations`,
        ``"leaky_relu(<slope>)"``, or an activation object such as
        ``skipsearch.leaky_relu(0.2)``; plain ``"leaky_relu"`` has slope 0.01.
    b_up : array_like, shape (m,), optional
        Inner bias. Passing it, even all zeros, says the block's form has
        inner biases: the same-width skip-free blocks it is compared with may
        then have them too, so the degree and linearization arguments, which
        need a block without inner biases, do not apply and those verdicts
        become undecided. ``None`` (the default) is a block without inner
        biases. Flip-linear verdicts hold with or without it; it enters the
        genericity check (two neurons are parallel when their rows of
        ``[W_up | b_up]`` are) and so the exact rescaling of ``W_up``, which
        follows the larger of the two: a ``b_up`` some 2^500 larger than
        ``W_up`` leaves the block undecided (status ``"overflow"``).
    b_down : array_like, shape (d_out,), optional
        Output bias; it never affects the verdict.
    W_gate : array_like, shape (m, d_in), optional
        Gate projection; required exactly for gated activations.
    b_gate : array_like, shape (m,), optional
        Gate bias of a gated block, whose gate then reads
        ``gate(W_gate x + b_gate)``. Like ``b_up``, passing it (even all
        zeros) gives the block's form inner biases, so the degree and
        linearization arguments do not apply and those verdicts become
        undecided; no other part of the decision uses it. Only with
        ``W_gate``.
    skip : None, float or array_like of shape (d_out, d_in), default None
        The skip map ``A``: ``None`` is the identity (needs ``d_in ==
        d_out``), a float ``alpha`` is ``alpha * I``.
    tol : float, optional
        Relative Frobenius tolerance on ``||c W_down[:, S] W_up[S, :] + A||_F
        / ||A||_F``. Default: ``sqrt(eps)`` of the coarsest dtype among the
        data of that condition, ``W_up``, ``W_down`` and ``skip`` (1.5e-8 for
        float64, 3.5e-4 for float32, 3.1e-2 for float16); integer inputs, a
        Python number and ``None`` as skip count as float64, a numpy scalar
        skip as its dtype (``np.float32(1.0)`` is float32 data). The dtypes of ``b_up``,
        ``b_down`` and ``W_gate`` do not count: they are not in the condition.
    time_limit : float, optional
        Seconds before the search stops with status ``"time_limit"``.
    node_limit : int, optional
        Branch-and-bound nodes before it stops with status ``"node_limit"``.
    threads : int, optional
        Worker threads (default: one per core). The result does not depend
        on it.
    distance : bool or None, default None
        How much of the relaxation to compute. ``True``: always the exact
        path for the least-squares distance ``relaxation_distance`` (the
        ``m x m`` Gram path, ``O(m^2 d + m^3)`` time, about ``16 m^2`` bytes
        at most); the distance is reported where its certificate confirms
        it, ``None`` where float64 cannot (see ``relaxation_distance``).
        ``False``: stop at the first certificate that proves a bound above
        ``tol`` (``Y = A`` at ``O(m d)`` for an identity skip, then up to 12
        Jacobi-preconditioned conjugate-gradient steps at ``O(m d^2)`` each,
        never forming the Gram matrix) and report that bound in
        ``distance_bound``, leaving ``relaxation_distance`` ``None``; the
        Gram path runs only if none proves. ``None``: exact when the Gram
        path fits ``memory_limit`` and its estimated time fits both
        ``distance_budget`` and what is left of ``time_limit``, else as
        ``False``.
    distance_budget : float or None, default 30.0
        Seconds the exact path may be expected to take when ``distance`` is
        None, estimated from the shape and a float64 GEMM rate measured
        once per process on this CPU (``stats.exact_seconds_estimate``);
        above it the certificates come first, as with ``distance=False``,
        and ``distance=True`` gives the exact distance. None: no budget.
        Which path runs may depend on the machine; the verdict never does.
    memory_limit : float, optional
        Bytes the exact Gram path may take (estimated as ``16 m^2``: the Gram
        matrix factored in place, and as much again for the complete search
        of a degenerate block). Default: half the memory available when the
        call starts (the least of ``MemAvailable``, a cgroup limit less its
        usage and the address space left under ``ulimit -v`` on Linux;
        physical memory elsewhere).
        When the path does not fit, ``distance=None`` and ``False`` rely on
        the certificates, and say ``"undecided"`` with status
        ``"memory_limit"`` if none proves; ``distance=True`` raises
        ``MemoryError`` before allocating.
    bracket : bool or None, default None
        Also fill ``best_subset`` and ``distance_bracket = (lower, upper)``,
        proven bounds on the least relative residual ``||A + c W_down[:, S]
        W_up[S, :]||_F / ||A||_F`` over all flip sets, for flip-linear blocks
        (``rust/absorption/bracket.rs``: a box relaxation bounds it from
        below, a local search from above, and a branch and bound proves the
        optimum on blocks of up to 64 neurons; ``stats.bracket`` says
        ``"optimal"`` when it completed and ``upper - lower <= 1e-3 upper +
        1e-12``). ``None`` (auto) computes it when
        the Gram matrix fits ``memory_limit`` and either the decision built
        it already or ``m <= 2048``, within the larger of 1.5 times the
        decision's own time and 0.05 s, and within what is left of
        ``time_limit`` (what is proved by then is kept,
        ``stats.bracket == "bounds"``); ``True`` always computes it, within
        what is left of ``time_limit``, or without a limit but 10 s for the
        branch and bound; ``False`` skips it. A zero skip gives ``(0.0,
        0.0)`` with the empty set. The bracket is this project's addition,
        not the paper's.

    keep_certificate : bool, default True
        Hand back the certificate ``Y`` (shape ``(d_out, d_in)``) that
        proves impossibility, for :func:`skipsearch.check_certificate`.
        ``False`` lets the exact path bound the relaxation's residual from
        the Gram matrix it already built, without forming ``Y`` (``O(m^2)``
        instead of two ``O(m d_out d_in)`` passes, a fifth of the time at
        ``4096 x 16384``; ``stats.method`` then shows ``"gram
        certificate"``, docs/rigour.md, "The certificate without Y"). The verdict is
        the same, and ``relaxation_distance`` and ``distance_bound`` agree
        to 1e-6 of their value (the Gram certificate must confirm the
        distance that closely, else ``Y`` is formed); ``certificate`` is
        None (or ``A`` itself, when ``Y = A`` proves more).

    Returns
    -------
    AbsorptionResult
        ``verdict`` is ``"absorbable"`` (with ``subset`` and the built
        ``block``), ``"not_absorbable"`` (with the argument in ``reason`` and,
        when the relaxation proves it, ``certificate``) or ``"undecided"``.
        A limit hit gives ``"undecided"`` with ``status`` naming the limit.

    Raises
    ------
    ValueError
        Wrong shapes (both shapes are named), NaN or Inf, an identity or
        scalar skip with ``d_in != d_out``, ``W_gate`` missing for a gated
        activation or given for an ungated one, ``b_gate`` without
        ``W_gate``, an unknown activation, or options out of range.
    MemoryError
        ``distance=True`` and the Gram path needs more than ``memory_limit``.
    TypeError
        Complex or non-numeric arrays, or options of the wrong type.
    KeyboardInterrupt
        On Ctrl-C; the search stops within a fraction of a second.

    References
    ----------
    Mijoski & Karbevski 2026, arXiv:2604.23705: the flip construction, the
    theorem that the flip condition is necessary for ReLU and GELU blocks
    with generic weights, the linearization argument (gated activations) and
    the degree argument (homogeneous activations). The kink-hyperplane
    genericity check (ReLU, LeakyReLU), the boundedness argument and the Gram
    relaxation with its certificate are this project's extensions; the
    manual (docs/verdicts.md) states them.

    Examples
    --------
    >>> import numpy as np, skipsearch
    >>> r = skipsearch.find_absorbing_subset(np.eye(2), -np.eye(2))
    >>> r.verdict, r.subset.tolist()
    ('absorbable', [0, 1])
    >>> rng = np.random.default_rng(0)
    >>> skipsearch.find_absorbing_subset(rng.normal(size=(8, 4)), rng.normal(size=(4, 8))).verdict
    'not_absorbable'
    """
    opts = merged(
        options,
        tol=tol,
        time_limit=time_limit,
        node_limit=node_limit,
        threads=threads,
        distance=distance,
        distance_budget=distance_budget,
        memory_limit=memory_limit,
        bracket=bracket,
        keep_certificate=keep_certificate,
    )
    # The default memory budget is this machine's, taken once per call.
    opts = opts.replace(memory_limit=opts.memory_bytes)
    finish = None
    if opts.bracket is not False:
        finish = functools.partial(
            _with_bracket, auto=opts.bracket is None, memory_limit=opts.memory_bytes
        )
    return _decide(
        MLPBlock(W_up, W_down, activation, b_up, b_down, W_gate, skip, b_gate),
        options=opts,
        # The bracket reuses the decision's Gram matrix when it is left.
        search=functools.partial(_rust_search, keep_gram=finish is not None),
        backend="rust",
        finish=finish,
    )


#: The search of a flip-linear block: ``(weights, (c, c_lo), tol,
#: genericity check, options) -> raw record``, ``options.time_limit`` being
#: what is left of the call's (the Rust core, or the baseline's enumeration).
_Search = Callable[[Weights, tuple[float, float], float, str, SearchOptions], "_FlipSetSearch"]

#: What completes a flip-linear result: ``(result, weights, activation,
#: options, gram) -> result``, with ``options.time_limit`` what remains of
#: the call's after the decision (None without a limit) and ``gram`` the
#: Gram matrix the decision kept (``_core.GramMatrix``) or None.
_Finish = Callable[[AbsorptionResult, Weights, Activation, SearchOptions, Any], AbsorptionResult]

#: Widest block the automatic bracket takes on when the decision did not
#: build the Gram matrix itself (the bracket builds it: ``O(m^2 d)``).
BRACKET_AUTO_NEURONS = 2048
#: The branch and bound's time when ``bracket=True`` and no ``time_limit``.
BRACKET_SECONDS = 10.0


def _with_bracket(
    result: AbsorptionResult,
    w: Weights,
    act: Activation,
    options: SearchOptions,
    gram: Any = None,
    *,
    auto: bool,
    memory_limit: int,
) -> AbsorptionResult:
    """``result`` with ``best_subset`` and ``distance_bracket`` (see
    ``find_absorbing_subset``'s ``bracket``), within ``options.time_limit``,
    what the decision left of the call's."""
    seconds_left, threads = options.time_limit, options.threads
    m = w.W_up.shape[0]
    c = act.flip_constant
    if c is None or result.status != "complete":
        return result
    if not np.any(w.A):
        stats = dataclasses.replace(result.stats, bracket="optimal")
        return dataclasses.replace(
            result,
            best_subset=np.zeros(0, dtype=np.int64),
            distance_bracket=(0.0, 0.0),
            stats=stats,
        )
    if 8 * m * m > memory_limit:
        return result
    if auto and result.stats.relaxation_precision is None and m > BRACKET_AUTO_NEURONS:
        return result
    if result.verdict == "absorbable":
        lower = 0.0
    else:
        lower = max(result.distance_bound or 0.0, result.relaxation_distance or 0.0)
    search: Optional[float] = None
    left = seconds_left
    if auto:
        # The whole bracket within about 1.5 times the decision's own time,
        # and within what is left of time_limit.
        budget = max(1.5 * result.stats.seconds, 0.05)
        seconds: Optional[float] = budget if left is None else min(budget, left)
    elif left is not None:
        seconds = left
    else:
        seconds, search = None, BRACKET_SECONDS
    start = None if result.subset is None else result.subset.tolist()
    # The decision's flip set and its verified residual: the bracket keeps
    # them unless it proves another flip set strictly better.
    start_residual = result.residual if start else None
    found = _core.flip_set_bracket(
        w.W_up,
        w.W_down,
        w.A,
        c,
        lower,
        start,
        time_limit=seconds,
        threads=threads,
        flip_constant_lo=act.flip_constant_lo,
        search_time_limit=search,
        start_residual=start_residual,
        gram=gram,
    )
    best_subset = found["best_subset"]
    best_subset.flags.writeable = False
    stats = dataclasses.replace(
        result.stats,
        bracket="optimal" if found["optimal"] else "bounds",
        bracket_nodes=found["nodes"],
        bracket_seconds=found["seconds"],
    )
    return dataclasses.replace(
        result,
        best_subset=best_subset,
        distance_bracket=(found["lower"], found["upper"]),
        stats=stats,
    )


class _Common(TypedDict):
    """The fields every result of one block shares."""

    activation: str
    activation_class: str
    flip_constant: Optional[float]
    stats: SearchStats


class _SearchFields(_Common, total=False):
    """The fields of a result after a search."""

    residual: Optional[float]
    relaxation_distance: Optional[float]
    distance_bound: Optional[float]
    rounding_bound: Optional[float]
    certificate: Optional[FloatArray]
    tolerance: Optional[float]
    genericity: Optional[GenericityChecks]
    excluded_neurons: Optional[npt.NDArray[np.int64]]


def _decide(
    block: MLPBlock,
    options: SearchOptions,
    search: _Search,
    backend: Backend,
    finish: Optional[_Finish] = None,
) -> AbsorptionResult:
    """The decision; ``finish``, when given, completes a flip-linear block's
    result (the bracket) from the validated weights, the activation and the
    options, with what is left of ``options.time_limit``."""
    act = get_activation(block.activation)
    time_limit = options.time_limit
    # The limit covers the whole call: validation and the skip's expansion
    # (np.eye at d = 4000 takes a sizeable part of a second) come out of it.
    started = time.perf_counter()

    def seconds_left() -> Optional[float]:
        if time_limit is None:
            return None
        return max(0.0, time_limit - (time.perf_counter() - started))

    w, b_gate, tol, common = _validated(block, act, options.tol, backend)
    if not np.any(w.A):
        result = _zero_skip(act, w, tol, common)
        if finish is None or act.kind != FLIP_LINEAR:
            return result
        return finish(result, w, act, options.replace(time_limit=seconds_left()), None)
    if act.kind != FLIP_LINEAR:
        return _class_theorem(act, w, common, tol, b_gate)
    raw = search(
        w,
        # A flip-linear activation has its constant.
        (float(cast(float, act.flip_constant)), float(act.flip_constant_lo)),
        tol,
        act.genericity,
        options.replace(time_limit=seconds_left()),
    )
    gram = raw.pop("gram", None)
    # The seconds span what the time limit covers, validation included, so
    # a search stopped by the limit never reports less time than it.
    raw["seconds"] = time.perf_counter() - started
    result = _from_search(raw, act, w, tol, common, backend)
    if finish is None:
        return result
    return finish(result, w, act, options.replace(time_limit=seconds_left()), gram)


def _validated(
    block: MLPBlock, act: Activation, tol: Optional[float], backend: Backend
) -> tuple[Weights, Optional[FloatArray], float, _Common]:
    """The block's arrays validated for ``act`` (a gate exactly for a gated
    activation), its gate bias, the tolerance (``tol`` or the default of
    the weights' precision) and the fields every result shares."""
    if act.gated and block.W_gate is None:
        raise ValueError(
            f"activation {act.name!r} is gated: pass W_gate with the shape of W_up, (m, d_in)"
        )
    if not act.gated and block.W_gate is not None:
        raise ValueError(f"W_gate was given but activation {act.name!r} is not gated")
    w = Weights(block.W_up, block.W_down, block.b_up, block.b_down, block.W_gate, block.skip)
    b_gate = _gate_bias(block.b_gate, w)
    common = _Common(
        activation=act.name,
        activation_class=act.kind,
        flip_constant=act.flip_constant,
        stats=SearchStats(backend=backend),
    )
    return w, b_gate, w.default_tol() if tol is None else tol, common


def undecided_form(block: MLPBlock, why: str, options: SearchOptions) -> AbsorptionResult:
    """The result for a block whose form no theorem covers (gpt-oss's
    clamped experts): its arrays are validated as :func:`find_absorbing_subset`
    validates them (same errors), no search runs, and the verdict is
    ``"undecided"`` with ``why`` as the reason."""
    act = get_activation(block.activation)
    _, _, tol, common = _validated(block, act, options.tol, "rust")
    return AbsorptionResult(
        verdict="undecided", reason=f"Undecided: {why}.", argument="none", tolerance=tol, **common
    )


def _zero_skip(act: Activation, w: Weights, tol: float, common: _Common) -> AbsorptionResult:
    """A zero skip: already skip-free, with the empty flip set."""
    built = None
    if act.kind == FLIP_LINEAR:
        built = build_skip_free_block(
            w.W_up, w.W_down, [], activation=act, b_up=w.b_up, b_down=w.b_down
        )
    return AbsorptionResult(
        verdict="absorbable",
        reason="The skip A is zero, so the block is already skip-free (empty flip set).",
        argument="zero_skip",
        subset=np.zeros(0, dtype=np.int64),
        residual=0.0,
        tolerance=tol,
        block=built,
        **common,
    )


def _proved_invertible(skip: FloatArray) -> bool:
    """Whether the skip is proved invertible: square, and diagonal with no
    zero on the diagonal (the identity and scalar skips, in O(d^2)), or
    else proved nonsingular with a rigorous bound on an approximate
    inverse (``_depth._nonsingular``, O(d^3))."""
    d_out, d_in = skip.shape
    if d_out != d_in:
        return False
    diagonal = np.diagonal(skip)
    if np.count_nonzero(skip) == np.count_nonzero(diagonal):
        return bool(np.all(diagonal != 0))
    return _nonsingular(skip)


def _inner_bias(b_up: object, b_gate: object) -> Optional[Literal["b_up", "b_gate"]]:
    """Which inner bias a block has, ``b_up`` first: any given, even all
    zeros, gives the block's form inner biases, which the degree,
    linearization and depth arguments exclude. None for neither."""
    if b_up is not None:
        return "b_up"
    return None if b_gate is None else "b_gate"


def _gate_bias(b_gate: Optional[npt.ArrayLike], w: Weights) -> Optional[FloatArray]:
    """The gate bias as a validated float64 array of shape ``(m,)``; it
    belongs to a gated block only."""
    if b_gate is None:
        return None
    if w.W_gate is None:
        raise ValueError("b_gate was given but the block has no W_gate: a gate bias needs a gate")
    m = w.W_up.shape[0]
    out, _ = as_float_array("b_gate", b_gate, 1, f"({m},)")
    if out.shape != (m,):
        raise ValueError(f"b_gate has shape {out.shape}, expected ({m},)")
    return out


def _class_theorem(
    act: Activation, w: Weights, common: _Common, tol: float, b_gate: Optional[FloatArray]
) -> AbsorptionResult:
    """The verdict of an activation that is not flip-linear: a theorem of its
    class (degree, linearization, boundedness) when one applies to the
    block, else "undecided" with the reason none does."""
    # The degree argument needs k != 1 (x - relu(x) = -relu(-x) is skip-free);
    # get_activation refuses degree 1, and this branch never relies on it.
    if act.kind in (GATED, HOMOGENEOUS) and act.degree is not None and act.degree != 1:
        return _no_search(
            act,
            (w, b_gate),
            common,
            tol,
            "degree",
            f"the skip-free block is {act.degree}-homogeneous while A x + f(x) has a nonzero "
            f"degree-1 part, so no skip-free block of this kind matches ({PAPER}, the degree "
            "argument)",
        )
    if act.kind == GATED and act.gate_at_zero == 0.0 and act.gate_differentiable:
        return _no_search(
            act,
            (w, b_gate),
            common,
            tol,
            "linearization",
            f"the skip-free gated block has Jacobian 0 at x = 0 while A x + f(x) has Jacobian "
            f"A != 0 ({PAPER}, the linearization argument)",
        )
    if act.kind == BOUNDED:
        return AbsorptionResult(
            verdict="not_absorbable",
            reason=(
                f"Not absorbable: {act.name} is bounded, so every skip-free block is bounded, "
                "while A x + f(x) with A != 0 is not (the boundedness argument, this "
                "project's extension)."
            ),
            argument="boundedness",
            tolerance=tol,
            **common,
        )
    if not act.gated:
        why = f"{act.name} is neither flip-linear, homogeneous, gated nor bounded"
    elif act.gate_at_zero != 0.0:
        why = (
            f"the gate of {act.name} has gate(0) = {act.gate_at_zero!r}, not 0, so neither "
            "the linearization nor the degree argument applies"
        )
    else:
        why = (
            f"the gate of {act.name} is not differentiable at 0, so the linearization "
            "argument does not apply, and no degree is given for the degree argument"
        )
    return AbsorptionResult(
        verdict="undecided",
        reason=f"Undecided: {why}, and no theorem covers this class.",
        argument="none",
        tolerance=tol,
        **common,
    )


def _no_search(
    act: Activation,
    weights: tuple[Weights, Optional[FloatArray]],
    common: _Common,
    tol: float,
    argument: Literal["degree", "linearization"],
    why: str,
) -> AbsorptionResult:
    """The degree and linearization verdicts; both need a block without inner
    biases (``b_up=None`` and, for a gated block, ``b_gate=None``)."""
    w, b_gate = weights
    bias = _inner_bias(w.b_up, b_gate)
    if bias == "b_up":
        zeros = " (all zeros, which still counts)" if not np.any(w.b_up) else ""
        return AbsorptionResult(
            verdict="undecided",
            reason=(
                f"Undecided: the {argument} argument ({PAPER}) needs a block without inner "
                f"biases, but b_up was given{zeros}, so the block's form has inner biases and "
                "the same-width skip-free blocks it is compared with may have them too; no "
                "theorem covers that class (pass b_up=None for a block without inner biases)."
            ),
            argument="none",
            tolerance=tol,
            **common,
        )
    if bias == "b_gate":
        zeros = " (all zeros, which still counts)" if not np.any(b_gate) else ""
        return AbsorptionResult(
            verdict="undecided",
            reason=(
                f"Undecided: the {argument} argument ({PAPER}) needs a block without inner "
                f"biases, but the block has a gate bias b_gate{zeros}, so its form has inner "
                "biases and the same-width skip-free blocks it is compared with may have them "
                "too; no theorem covers that class."
            ),
            argument="none",
            tolerance=tol,
            **common,
        )
    return AbsorptionResult(
        verdict="not_absorbable",
        reason=f"Not absorbable: {why}; the block has no inner biases (b_up=None).",
        argument=argument,
        tolerance=tol,
        **common,
    )


def _genericity(raw: Optional[_Genericity]) -> Optional[GenericityChecks]:
    if raw is None:
        return None
    dead = np.asarray(raw["dead"], dtype=np.int64)
    pairs = np.asarray(raw["pairs"], dtype=np.int64).reshape(-1, 2)
    count = int(raw["pair_count"])
    return GenericityChecks(
        check=raw["check"],
        passed=len(dead) == 0 and count == 0,
        dead_neurons=dead,
        offending_pairs=pairs,
        offending_pair_count=count,
    )


def _from_search(
    raw: _FlipSetSearch, act: Activation, w: Weights, tol: float, common: _Common, backend: Backend
) -> AbsorptionResult:
    """The result of a search record (the Rust core's, the baseline's or the
    exact integer route's: the same keys): the record's fields, then the
    verdict and the reason its finding gives (one builder per finding)."""
    genericity = _genericity(raw.get("genericity"))
    fields: _SearchFields = {
        "residual": raw.get("residual"),
        "relaxation_distance": raw.get("relaxation_distance"),
        "distance_bound": raw.get("distance_bound"),
        "rounding_bound": raw.get("rounding_bound"),
        "tolerance": tol,
        "genericity": genericity,
        "activation": common["activation"],
        "activation_class": common["activation_class"],
        "flip_constant": common["flip_constant"],
        "stats": _search_stats(raw, backend),
    }
    if raw.get("excluded") is not None:
        fields["excluded_neurons"] = np.asarray(raw["excluded"], dtype=np.int64)
    finding = raw["finding"]
    if finding == "subset":
        return _absorbable(raw, act, w, fields)
    if finding == "stopped":
        why = _stop_reason(raw, genericity)
        return AbsorptionResult(
            verdict="undecided",
            reason=f"Undecided: {why}.",
            argument="none",
            status=raw["stop"],
            **fields,
        )
    if finding == "inconclusive":
        why = _NUMERICS_REASONS[raw["numerics"]](raw, tol)
        return AbsorptionResult(
            verdict="undecided",
            reason=f"Undecided: {why}.",
            argument="none",
            status=raw["numerics"],
            **fields,
        )
    argument, no_set = _EVIDENCE[raw["evidence"]]
    if raw.get("certificate") is not None:
        fields["certificate"] = np.asarray(raw["certificate"])
    return _no_flip_set(act, genericity, argument, no_set(raw), fields, w.A)


def _search_stats(raw: _FlipSetSearch, backend: Backend) -> SearchStats:
    return SearchStats(
        method=(
            *raw["method"],
            *(
                (f"exact integer ({' -> '.join(raw['exact_integer'])})",)
                if "exact_integer" in raw
                else ()
            ),
        ),
        nodes=int(raw["nodes"]),
        seconds=float(raw["seconds"]),
        gram_rank=raw.get("rank"),
        components=tuple(raw.get("components") or ()),
        backend=backend,
        rank_decision=raw.get("rank_decision"),
        candidates=int(raw.get("candidates") or 0),
        krylov_steps=int(raw.get("krylov_steps") or 0),
        gram_cg_steps=int(raw.get("gram_cg_steps") or 0),
        timings=tuple((str(k), float(t)) for k, t in raw.get("timings") or ()),
        relaxation_precision=raw.get("relaxation_precision"),
        kernel=raw.get("kernel"),
        exact_seconds_estimate=raw.get("exact_estimate"),
    )


def _absorbable(
    raw: _FlipSetSearch, act: Activation, w: Weights, fields: _SearchFields
) -> AbsorptionResult:
    """A verified flip set: the verdict and the block it builds."""
    subset = np.asarray(raw["subset"], dtype=np.int64)
    # The block's b_down is the float64 nearest b_down + c W_down[:, S]
    # b_up[S], the rest exact: when that bias overflows float64 the verdict
    # stands but no block is given.
    block: Optional[SkipFreeBlock] = None
    built = "which builds a skip-free block of the same width"
    try:
        block = build_skip_free_block(
            w.W_up, w.W_down, subset, activation=act, b_up=w.b_up, b_down=w.b_down
        )
    except ValueError as e:
        built = f"so a skip-free block of the same width exists, but none is returned: {e}"
    return AbsorptionResult(
        verdict="absorbable",
        reason=(
            f"Absorbable: flipping the {len(subset)} neuron(s) of S gives "
            f"c W_down[:, S] W_up[S, :] = -A to relative residual at most "
            f"{raw['residual']:.2e} (a rigorous bound), {built} ({PAPER}, the flip "
            "construction)."
        ),
        argument="flip_construction",
        subset=subset,
        block=block,
        **fields,
    )


def _stop_reason(raw: _FlipSetSearch, genericity: Optional[GenericityChecks]) -> str:
    """Why a search that stopped early leaves the block undecided."""
    stop = raw["stop"]
    if stop == "memory_limit":
        why = (
            "no cheap certificate (Y = A, then conjugate-gradient steps) proves a bound "
            f"above the tolerance (best proven: {raw.get('distance_bound') or 0.0:.3g}), and "
            "the exact Gram path needs more than memory_limit allows (raise memory_limit, "
            "or run where 16 m^2 bytes fit)"
        )
    elif stop == "incomplete":
        why = (
            "the exact integer engine could not complete its search "
            f"({raw.get('detail', 'no complete method applies')})"
        )
    else:
        why = f"the search stopped at its {stop.replace('_', ' ')}"
    if genericity is not None and not genericity.passed:
        # Finishing the search could only prove absorbable then.
        why += (
            f"; the genericity check failed ({genericity.describe()}), so a finished "
            "search that found no flip set would leave the verdict undecided too"
        )
    return why


#: Why float64 could not settle the block, by the record's ``numerics``.
_NUMERICS_REASONS: dict[str, Callable[[_FlipSetSearch, float], str]] = {
    "overflow": lambda raw, tol: (
        "products of the weights overflow float64 even at the best exact rescaling of "
        "the block by powers of two: the skip and W_down @ W_up differ in scale by "
        "more than float64 can hold, or they are too large together, or b_up (which "
        "W_up is rescaled with, for the genericity check) is far larger than W_up, or "
        "entries near float64's smallest (subnormal) values keep a matrix from being "
        "scaled down exactly (rescale the block)"
    ),
    "ill_conditioned": lambda raw, tol: (
        "no certificate proves impossibility once its rounding is accounted for, and "
        "the complete search's rigorous windows on the relaxed values are too wide "
        "(or the block too large) to list every candidate flip set"
        + _rank_words(raw.get("rank"), raw.get("rank_decision"))
    ),
    "unresolved": lambda raw, tol: (
        "a candidate flip set's residual could not be placed on either side of the "
        f"tolerance {tol:.2e}, even with exact sums"
    ),
}


def _certificate_words(raw: _FlipSetSearch) -> str:
    unformed = "gram certificate" in raw["method"] and raw.get("certificate") is None
    excluded = raw.get("excluded")
    avoiding = (
        ""
        if excluded is None
        else (
            f" (over the flip sets that avoid neurons {_short_list(excluded.tolist())}, each of "
            "whose terms alone outweighs the skip and every smaller term: a flip set "
            "containing one has relative residual at least "
            f"{raw.get('exclusion_bound') or 0.0:.3g}, by the triangle inequality)"
        )
    )
    return (
        f"a certificate Y{' (bounded from the Gram matrix, not formed)' if unformed else ''} "
        "proves that every flip set has relative residual at least "
        f"{raw['distance_bound']:.3g} > tol (its interval bound, with the rounding of its "
        f"own evaluation, {raw['rounding_bound']:.2g}, subtracted){avoiding}"
    )


def _relaxation_words(raw: _FlipSetSearch) -> str:
    neuron, value = cast("tuple[int, float]", raw["conflict"])
    return (
        f"the relaxation's rigorous window forces neuron {neuron} near weight {value:.9g}, "
        "neither 0 nor 1, so no flip set exists"
    )


#: What proved that no flip set exists, by the record's ``evidence``: the
#: result's ``argument`` and the words of its reason.
_EVIDENCE: dict[str, tuple[Argument, Callable[[_FlipSetSearch], str]]] = {
    "certificate": ("certificate", _certificate_words),
    "relaxation": ("relaxation", _relaxation_words),
    "exact_integer": (
        "exact_integer",
        lambda raw: (
            "the exact integer subset-sum engine proves no flip set exists "
            f"({_exact_proof(raw['proof'])})"
        ),
    ),
    "enumeration": ("enumeration", lambda raw: "enumerating all 2^m subsets found no flip set"),
    "meet_in_the_middle": (
        "branch_and_bound",
        lambda raw: (
            "a complete meet in the middle on the flattened flip condition, every subset in "
            "its window verified with rigorous bounds, found no flip set"
        ),
    ),
    "branch_and_bound": (
        "branch_and_bound",
        lambda raw: (
            "a complete branch and bound under rigorous windows on the relaxed values, with "
            "every candidate verified with rigorous bounds, found no flip set"
        ),
    ),
}


def _no_flip_set(
    act: Activation,
    genericity: Optional[GenericityChecks],
    argument: Argument,
    no_set: str,
    fields: _SearchFields,
    skip: FloatArray,
) -> AbsorptionResult:
    """No flip set exists: "not absorbable" when the activation's theorem
    makes the condition necessary and its hypotheses were checked on the
    weights and the skip (docs/theory.md §3, §4.4), else undecided, saying
    which failed."""
    if act.necessity not in ("genericity_checked", "generic_weights"):
        return AbsorptionResult(
            verdict="undecided",
            reason=(
                f"Undecided: {no_set}, but for {act.name} the flip condition is only known to "
                f"be sufficient ({PAPER})."
            ),
            argument="none",
            **fields,
        )
    # The core runs the genericity checks before any search.
    assert genericity is not None
    if not genericity.passed:
        return AbsorptionResult(
            verdict="undecided",
            reason=(
                f"Undecided: {no_set}, but the genericity check failed "
                f"({genericity.describe()}), so the condition is not known to be necessary."
            ),
            argument="none",
            **fields,
        )
    if act.necessity == "generic_weights" and not _proved_invertible(skip):
        # MK26's theorem is stated for the identity skip, and carries over
        # to invertible skips (docs/theory.md §4.4) only.
        shape = "rectangular" if skip.shape[0] != skip.shape[1] else "not proved invertible"
        return AbsorptionResult(
            verdict="undecided",
            reason=(
                f"Undecided: {no_set}, but the theorem that makes the condition necessary for "
                f"{act.name} ({PAPER}, main theorem for GELU) is stated for an identity skip "
                f"and carries over to invertible ones only, and this skip is {shape}."
            ),
            argument="none",
            **fields,
        )
    if act.necessity == "genericity_checked":
        source = (
            "all neurons are alive with pairwise non-proportional rows (u_i, b_i), so the "
            "condition is necessary (kink-hyperplane argument, this project's extension of "
            f"{PAPER})"
        )
    else:
        source = (
            "the neurons are alive and pairwise distinct up to sign, and for generic weights the "
            f"condition is necessary ({PAPER}, main theorem for GELU)"
        )
    return AbsorptionResult(
        verdict="not_absorbable",
        reason=f"Not absorbable: {no_set}, and {source}.",
        argument=argument,
        **fields,
    )


@dataclass(frozen=True, eq=False)
class MLPBlock(FieldEquality):
    """One residual block of a stack, with the arguments of
    :func:`find_absorbing_subset`.

    Two blocks are equal when every field is: numpy arrays by dtype, shape
    and values, anything else (lists, names, activations) by ``==``. A block
    pickles when its fields do (numpy arrays, registry activations and
    ``leaky_relu(a)`` always).
    """

    _HASH_FIELDS = ()

    W_up: npt.ArrayLike
    W_down: npt.ArrayLike
    activation: Union[str, Activation] = "relu"
    b_up: Optional[npt.ArrayLike] = None
    b_down: Optional[npt.ArrayLike] = None
    W_gate: Optional[npt.ArrayLike] = None
    skip: Optional[npt.ArrayLike] = None
    b_gate: Optional[npt.ArrayLike] = None

    def arguments(self) -> dict[str, Any]:
        """The block as keyword arguments of :func:`find_absorbing_subset`."""
        return {name: getattr(self, name) for name in _BLOCK_KEYS}


_BLOCK_KEYS = {"W_up", "W_down", "activation", "b_up", "b_down", "W_gate", "skip", "b_gate"}


def _widths(W_up: Any, W_down: Any) -> Optional[tuple[int, int]]:
    """``(d_in, d_out)`` of a block from its arrays' shapes, or None when
    they are not 2-D arrays (validation then names the problem)."""
    try:
        up, down = np.shape(W_up), np.shape(W_down)
    except Exception:  # ragged or exotic input: find_absorbing_subset says what is wrong
        return None
    if len(up) != 2 or len(down) != 2:
        return None
    return int(up[1]), int(down[0])


def _check_widths(widths: Sequence[Optional[tuple[int, int]]]) -> None:
    """Raise ``ValueError`` where block ``k``'s output width is not block
    ``k + 1``'s input width."""
    for k in range(len(widths) - 1):
        here, there = widths[k], widths[k + 1]
        if here is not None and there is not None and here[1] != there[0]:
            raise ValueError(
                f"blocks[{k}] and blocks[{k + 1}] do not compose: blocks[{k}] maps width "
                f"{here[0]} to {here[1]} (W_down has {here[1]} rows), but blocks[{k + 1}] takes "
                f"width {there[0]} (W_up has {there[0]} columns)"
            )


def _stack_skip(skip: Any) -> Union[float, FloatArray]:
    """The skip of a validated block: a float for ``None`` (1.0) or a
    scalar, else its float64 matrix."""
    if skip is None:
        return 1.0
    if (isinstance(skip, numbers.Real) and not isinstance(skip, (bool, np.bool_))) or (
        isinstance(skip, np.ndarray) and skip.ndim == 0
    ):
        return float(skip)
    return as_float_array("skip", skip, 2, "(d_out, d_in)")[0]


def _depth_hypotheses(blocks: Sequence[dict[str, Any]]) -> tuple[bool, str]:
    """Whether the depth theorem proves the stack not absorbable: True
    with the proof's words, or False with the hypothesis that failed."""
    last = len(blocks) - 1
    for k, kw in enumerate(blocks):
        act = get_activation(kw.get("activation", "relu"))
        problem = depth_class_problem(act, first=k == 0)
        if problem is not None:
            return False, f"blocks[{k}]: {problem}"
    for k, kw in enumerate(blocks):
        bias = _inner_bias(kw.get("b_up"), kw.get("b_gate"))
        if bias is not None:
            return False, (
                f"blocks[{k}] has inner biases ({bias} was given), so its skip-free rivals "
                "may have them too and need not have Jacobian 0 at 0"
            )
    for k, kw in enumerate(blocks[:last]):
        b_down = kw.get("b_down")
        if b_down is not None and np.any(as_float_array("b_down", b_down, 1, "(d_out,)")[0]):
            return False, (
                f"blocks[{k}] has a nonzero b_down and is not the last block: it moves the "
                "point where the later blocks are evaluated away from 0, so the stack's Jacobian "
                "at 0 is the chain-rule product of their Jacobians there, not the product of "
                "the skips, and skipsearch does not bound that product rigorously"
            )
    nonzero, how = skip_product_nonzero([_stack_skip(kw.get("skip")) for kw in blocks])
    if nonzero is None:
        return False, f"the product A_L ... A_1 of the skips could not be proved nonzero ({how})"
    if not nonzero:
        return False, (
            f"the product A_L ... A_1 of the skips is zero ({how}), so the stack's Jacobian at 0 "
            "is 0, like a skip-free stack's"
        )
    return True, (
        "every block is gated with gate(0) = 0 or homogeneous of degree k >= 2, without inner "
        "biases and with no nonzero b_down before the last block, so a skip-free stack of these "
        "kinds has Jacobian 0 at 0 while the residual stack's is the product A_L ... A_1 of the "
        f"skips, proved nonzero: {how}"
    )


@in_standard_float_env
def decide_stack(
    blocks: Sequence[Union[MLPBlock, Mapping[str, Any]]],
    *,
    tol: Optional[float] = None,
    time_limit: Optional[float] = None,
    node_limit: Optional[int] = None,
    threads: Optional[int] = None,
    options: Optional[SearchOptions] = None,
) -> StackResult:
    """Decide absorption for a composition of residual blocks.

    The stack is ``x -> r_L(... r_1(x))`` with ``r_k(x) = A_k x + f_k(x)``;
    the question is whether it equals ``L`` skip-free blocks of the same
    kinds and widths, composed.

    Parameters
    ----------
    blocks : sequence of MLPBlock or mapping
        The blocks in order, ``blocks[0]`` applied first; a mapping uses the
        keyword names of :func:`find_absorbing_subset` (``W_up``,
        ``W_down``, ``activation``, ``b_up``, ``b_down``, ``W_gate``,
        ``skip``, ``b_gate``). Block ``k``'s output width (rows of ``W_down``) must be
        block ``k + 1``'s input width (columns of ``W_up``).
    tol, time_limit, node_limit, threads
        As for :func:`find_absorbing_subset`, applied to each block.
    options : SearchOptions, optional
        All the search's options at once, applied to each block (instead of
        the four above).

    Returns
    -------
    StackResult
        ``absorbable`` when every block is (compose the absorbed blocks).
        ``not_absorbable`` by the depth theorem (Mijoski & Karbevski 2026)
        when its hypotheses are checked on the input: every block is gated
        with ``gate(0) = 0`` and a gate differentiable at 0 (after the
        first block a registry gate, known to be locally Lipschitz) or
        homogeneous (or gated) of degree ``k >= 2``; no block has inner
        biases (``b_up=None``); no block before the last has a nonzero
        ``b_down`` (it would move the point where the later blocks'
        Jacobians are taken, and skipsearch does not bound that chain-rule
        product: such stacks are undecided); and the product ``A_L ... A_1``
        of the skips is proved nonzero: scalar and identity skips exactly,
        matrices by a float64 product with a rigorous rounding bound on
        every entry (Higham 2002, ch. 3), or square ones each proved
        nonsingular (an approximate inverse ``R`` with ``||R A - I||_inf <
        1/2``), else exactly in integers when at most 250,000
        multiply-adds (:mod:`skipsearch._depth`). Otherwise ``undecided``, with the reason
        naming the hypothesis that failed; deep ReLU/GELU stacks are an open
        problem.

    Raises
    ------
    ValueError, TypeError
        As :func:`find_absorbing_subset`, naming the block index; an empty
        stack, an unknown mapping key, or consecutive blocks whose widths
        do not compose (naming both blocks and their widths).
    """
    if isinstance(blocks, (MLPBlock, Mapping)) or not isinstance(blocks, Sequence):
        raise TypeError("blocks must be a sequence (list or tuple) of MLPBlock or mappings")
    if len(blocks) == 0:
        raise ValueError("blocks must hold at least one block")
    opts = merged(options, tol=tol, time_limit=time_limit, node_limit=node_limit, threads=threads)
    parsed: list[dict[str, Any]] = []
    for k, blk in enumerate(blocks):
        kwargs: dict[str, Any]
        if isinstance(blk, MLPBlock):
            kwargs = blk.arguments()
        elif isinstance(blk, Mapping):
            unknown = set(blk) - _BLOCK_KEYS
            if unknown:
                raise ValueError(
                    f"blocks[{k}] has unknown key(s) {sorted(unknown)}; "
                    f"expected some of {sorted(_BLOCK_KEYS)}"
                )
            kwargs = dict(blk)
        else:
            raise TypeError(
                f"blocks[{k}] must be an MLPBlock or a mapping, got {type(blk).__name__}"
            )
        for key in ("W_up", "W_down"):
            if key not in kwargs:
                raise ValueError(f"blocks[{k}] needs {key}")
        parsed.append(kwargs)
    # Before any decision: the widths must compose.
    _check_widths([_widths(kw["W_up"], kw["W_down"]) for kw in parsed])
    results: list[AbsorptionResult] = []
    for k, kwargs in enumerate(parsed):
        rest = {name: v for name, v in kwargs.items() if name not in ("W_up", "W_down")}
        try:
            results.append(
                find_absorbing_subset(kwargs["W_up"], kwargs["W_down"], options=opts, **rest)
            )
        except (ValueError, TypeError) as e:
            raise type(e)(f"blocks[{k}]: {e}") from None
    # Validated now: every shape is a 2-D array's.
    _check_widths([_widths(kw["W_up"], kw["W_down"]) for kw in parsed])
    decided = tuple(results)
    if all(r.verdict == "absorbable" for r in decided):
        return StackResult(
            "absorbable",
            "Every block is absorbable; composing the skip-free blocks gives the stack "
            "(flip construction per block).",
            decided,
        )
    proved, why = _depth_hypotheses(parsed)
    if proved:
        return StackResult(
            "not_absorbable",
            f"Not absorbable by the depth theorem ({PAPER}): {why}.",
            decided,
        )
    return StackResult(
        "undecided",
        f"Undecided: the depth theorem ({PAPER}) does not apply: {why}; per-block absorption is "
        "only sufficient for a stack, and deep ReLU/GELU stacks are an open problem.",
        decided,
    )
