"""Result records: frozen dataclasses with readable reprs."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Optional, get_args

import numpy as np

from skipsearch._types import (
    Argument,
    Backend,
    BracketStatus,
    FloatArray,
    GenericityCheck,
    IntArray,
    RankDecision,
    Status,
    Verdict,
)

if TYPE_CHECKING:  # pragma: no cover
    from skipsearch.construction import SkipFreeBlock

#: The three verdicts, in report order.
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)


def same_value(a: Any, b: Any) -> bool:
    """Whether two field values are equal, the way the result records
    compare them.

    numpy arrays are equal when their dtype, shape and values are (``NaN``
    is equal to nothing, as in ``==``); tuples, lists and dicts item by
    item; instances of a dataclass that compares by identity (such as
    :class:`skipsearch.SkipFreeBlock`) field by field; anything else by
    ``==`` (a comparison that does not give a single bool counts as
    unequal).
    """
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a, b))
        )
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same_value, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if (
        dataclasses.is_dataclass(a)
        and not isinstance(a, type)
        and type(a) is type(b)
        and type(a).__eq__ is object.__eq__
    ):
        return all(
            same_value(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
        )
    try:
        equal = a == b
    except Exception:  # an exotic value whose == raises: unequal
        return False
    return bool(equal) if isinstance(equal, (bool, np.bool_)) else False


class FieldEquality:
    """Equality field by field for the records that hold numpy arrays.

    Two records are equal when they have the same type and every field is
    equal by :func:`same_value` (arrays by dtype, shape and values). The
    hash covers only the immutable fields named in ``_HASH_FIELDS``, so
    equal records hash alike while the arrays stay out of the hash.
    """

    _HASH_FIELDS: ClassVar[tuple[str, ...]] = ()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(
            same_value(getattr(self, f.name), getattr(other, f.name))
            for f in dataclasses.fields(self)  # type: ignore[arg-type]
        )

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash((type(self).__qualname__, *(getattr(self, n) for n in self._HASH_FIELDS)))


@dataclass(frozen=True, eq=False)
class GenericityChecks(FieldEquality):
    """The genericity checks run on the neurons.

    Attributes
    ----------
    check : GenericityCheck
        ``"non_proportional"`` (ReLU family), ``"distinct_up_to_sign"``
        (GELU family) or ``"none"`` (dead neurons only).
    passed : bool
        True when no neuron is dead and no pair offends.
    dead_neurons : ndarray of int, shape (k,)
        Neurons with ``W_up[i] = 0`` or ``W_down[:, i] = 0`` exactly (a
        nonzero row or column is alive whatever its size: theory.md §3.2
        needs ``u_i != 0`` and ``v_i != 0``, nothing more).
    offending_pairs : ndarray of int, shape (p, 2)
        The first (at most 1000) pairs ``(i, j)``, ``i < j``, ordered by
        ``j`` then ``i``, whose rows ``(u_i, b_i)`` fail the check.
    offending_pair_count : int
        Number of offending pairs in all.

    Two checks are equal when every field is, the arrays by dtype, shape and
    values; they pickle and compare equal to the original afterwards.
    """

    _HASH_FIELDS = ("check", "passed", "offending_pair_count")

    check: GenericityCheck
    passed: bool
    dead_neurons: IntArray
    offending_pairs: IntArray
    offending_pair_count: int

    def describe(self) -> str:
        """The offending neurons in words, or ``"passed"``."""
        if self.passed:
            return "passed"
        parts: list[str] = []
        if len(self.dead_neurons):
            parts.append(f"dead neurons {_short(self.dead_neurons.tolist())}")
        if self.offending_pair_count:
            what = "proportional" if self.check == "non_proportional" else "equal up to sign"
            pairs = [tuple(p) for p in self.offending_pairs.tolist()]
            parts.append(
                f"{self.offending_pair_count} {what} row pair(s) "
                f"{_short(pairs, total=self.offending_pair_count)}"
            )
        return "; ".join(parts)


@dataclass(frozen=True, eq=False)
class SearchStats(FieldEquality):
    """How the answer was reached.

    Attributes
    ----------
    method : tuple of str
        The stages run, in order (e.g. ``("relaxation", "certificate")``).
    nodes : int
        Branch-and-bound nodes (or subsets, for the baseline) explored.
    seconds : float
        Wall time of the call up to the end of the search, in seconds: the
        span ``time_limit`` covers, input validation included.
    gram_rank : int or None
        Numerical rank of the Gram matrix of the relaxation, from a
        Cholesky factor; ``None`` when no factor ran (the exact path did
        not run, or conjugate gradients settled it: see ``gram_cg_steps``).
    components : tuple of int
        Sizes of the null-space components searched.
    backend : Backend
        ``"rust"`` or ``"baseline"``.
    rank_decision : dict or None
        How ``gram_rank`` was decided (Rust backend): the pivoted Cholesky
        factorisation of the Gram matrix scaled to unit diagonal stops when
        the largest remaining diagonal falls to ``cutoff = m * eps``
        (float32's ``eps`` when ``relaxation_precision`` is ``"float32"``);
        ``last_pivot`` and ``next_pivot`` are the squared pivots on either
        side of the cut (they track ``sigma_r**2`` and ``sigma_{r+1}**2`` of
        the scaled flip-condition system). The float32 factor, used only at
        full rank, does not pivot: its ``last_pivot`` is the smallest
        squared pivot. The rank steers the search only;
        verdicts never depend on it being right.
    candidates : int
        Flip sets verified by the complete search under rigorous windows.
    krylov_steps : int
        Conjugate-gradient steps the cheap certificates took (0 when the
        exact path ran directly, or ``Y = A`` decided).
    gram_cg_steps : int
        Rust backend, exact path: Jacobi-preconditioned conjugate-gradient
        steps on the Gram matrix that solved the relaxation (blocks of 4096
        neurons or more, tried before any factor); 0 when a Cholesky factor
        solved it. The steps only propose the relaxed solution: the float64
        certificate proves what is reported, and when it cannot settle the
        block from them the factor runs as before.
    bracket : BracketStatus or None
        ``"optimal"`` when the search for the best flip set completed and
        the proven bracket is narrow (``upper - lower <= 1e-3 upper +
        1e-12``), so it encloses the optimum that closely; ``"bounds"``
        otherwise (the search stopped at its effort limit, or rounding
        leaves the ends further apart); ``None`` when no bracket was
        computed.
    bracket_nodes : int
        Branch-and-bound nodes of the bracket's search.
    bracket_seconds : float
        Wall time of the bracket, in seconds (not part of ``seconds``).
    timings : tuple of (str, float)
        Rust backend, exact path: the seconds since the search started at
        the end of each costly step (``"float32 gram"``, ``"gram"``,
        ``"factor"``, ``"solve"``,
        each ``"refinement"``, ``"interval bound"``), in order; empty when
        the exact path did not run.
    relaxation_precision : str or None
        Rust backend: ``"float32"`` when the relaxation was solved through
        a float32 Cholesky factor (blocks of 2048 neurons or more whose
        Gram matrix float32 can factor) or by conjugate gradients on a
        float32 Gram matrix (4096 neurons or more, ``Y`` formed, no
        bracket), ``"float64"`` otherwise (a float64 factor, or conjugate
        gradients on the float64 Gram matrix); ``None``
        when the exact path did not run. The certificate, and so every
        bound and distance reported, is float64 either way.
    exact_seconds_estimate : float or None
        With ``distance=None`` and a ``distance_budget``: the exact path's
        estimated seconds that were compared with the budget.
    kernel : str or None
        Rust backend: the SIMD kernels of the dense products on this CPU
        (``"avx512f"``, ``"avx2+fma"``, ``"neon"`` or ``"scalar"``),
        chosen at run time.

    Two records are equal when every field is (``seconds`` too, so two
    runs rarely compare equal; a pickled copy does).
    """

    _HASH_FIELDS = ("method", "nodes", "backend")

    method: tuple[str, ...] = ()
    nodes: int = 0
    seconds: float = 0.0
    gram_rank: Optional[int] = None
    components: tuple[int, ...] = ()
    backend: Backend = "rust"
    rank_decision: Optional[RankDecision] = None
    candidates: int = 0
    krylov_steps: int = 0
    gram_cg_steps: int = 0
    bracket: Optional[BracketStatus] = None
    bracket_nodes: int = 0
    bracket_seconds: float = 0.0
    timings: tuple[tuple[str, float], ...] = ()
    relaxation_precision: Optional[str] = None
    kernel: Optional[str] = None
    exact_seconds_estimate: Optional[float] = None


@dataclass(frozen=True, eq=False, repr=False)
class AbsorptionResult(FieldEquality):
    """The verdict on one residual block ``x -> A x + f(x)``.

    Attributes
    ----------
    verdict : Verdict
        ``"absorbable"``, ``"not_absorbable"`` or ``"undecided"``.
    reason : str
        One sentence naming the argument and its source.
    argument : Argument
        Short name of the argument: ``"flip_construction"``,
        ``"zero_skip"``, ``"certificate"``, ``"relaxation"``,
        ``"branch_and_bound"``, ``"exact_integer"`` (integer weights,
        :func:`skipsearch.subset_sum`), ``"enumeration"`` (baseline),
        ``"linearization"``, ``"degree"``,
        ``"boundedness"`` or ``"none"``.
    activation : str
        Registry name of the activation.
    activation_class : str
        Its class: ``"flip_linear"``, ``"homogeneous"``, ``"gated"``,
        ``"bounded"`` or ``"other"``.
    flip_constant : float or None
        ``c`` in ``act(z) - act(-z) = c z``.
    subset : ndarray of int or None
        The flip set ``S``, sorted, when one was found.
    residual : float or None
        A rigorous upper bound on ``||c W_down[:, S] W_up[S, :] + A||_F /
        ||A||_F`` for ``subset``, evaluated on the original weights: the
        float64 value plus an a-priori bound on its rounding (Higham 2002,
        ch. 3), or exact sums of every entry when that bound is too coarse
        to settle the tolerance. "absorbable" means ``residual <= tolerance``.
        ``None`` unless a flip set is reported, except with
        ``status="unresolved"``: then the bound of the candidate that could
        not be placed on either side of the tolerance.
    relaxation_distance : float or None
        ``||Y||_F / ||A||_F`` at the least-squares solution of the
        relaxation: the distance from ``-A`` to the span of the neurons'
        terms, as far as the relaxation's own certificate ``Y`` proves it: the
        interval bound of ``Y``, reported when it confirms the float64 value
        (they differ by at most twice its rounding allowance, or 1e-6
        relative) or the value is within the tolerance (then it may be 0.0);
        ``None`` when float64 cannot confirm it (an ill-conditioned
        relaxation), no flip search ran, or it was not computed (with
        ``distance=False``, or ``distance=None`` when the Gram path does not
        fit ``memory_limit``, a cheap certificate decides without it). So no
        flip set ever gets relatively closer to ``-A`` than this.
    distance_bound : float or None
        A proven lower bound on ``||A + c W_down[:, S] W_up[S, :]||_F /
        ||A||_F`` over every flip set ``S``, from the best certificate
        checked: the relaxation's ``Y``, ``Y = A``, or the residual after a
        few conjugate-gradient steps (0.0 when none proves anything). With
        ``distance=False`` it is the bound of the certificate that decided. Over the box ``[0, 1]^m`` it can exceed
        ``relaxation_distance``, which ranges over all real weightings. It holds in exact
        arithmetic: the rounding of its own evaluation has been subtracted.
    rounding_bound : float or None
        The rounding allowance subtracted from that bound's margin, in the
        same units (relative to ``||A||_F``).
    certificate : ndarray, shape (d_out, d_in), or None
        ``Y``, the certificate behind ``distance_bound``, when it proves that
        no flip set exists; :func:`skipsearch.check_certificate` re-derives
        the bound from it (equal up to the rounding allowance, since each
        side subtracts its own).
    tolerance : float or None
        Relative tolerance used on the residuals.
    genericity : GenericityChecks or None
        The neuron checks performed and their outcome; ``None`` when no flip
        search ran.
    status : Status
        ``"complete"``, ``"time_limit"``, ``"node_limit"``,
        ``"memory_limit"`` (the exact Gram path does not fit
        ``memory_limit`` and no cheap certificate decided),
        ``"incomplete"`` (integer weights: the exact engine's lattice
        reduction could not isolate the kernel, which the reason then says;
        nothing was proved),
        ``"ill_conditioned"`` (the rigorous windows of the complete search
        are too wide to list the candidate flip sets), ``"unresolved"`` (a
        candidate's residual cannot be placed on either side of the
        tolerance, even with exact sums) or ``"overflow"``.
    stats : SearchStats
        Method path, nodes explored, seconds.
    block : SkipFreeBlock or None
        The skip-free block built from ``subset``, when absorbable.
    best_subset : ndarray of int64 or None
        The best flip set found for flip-linear blocks (see
        ``find_absorbing_subset``'s ``bracket``); its relative residual is at
        most ``distance_bracket[1]``, proven on the weights themselves.
        When the decision reported a flip set (``subset``), that set is kept
        unless another is proven strictly better.
    distance_bracket : tuple of float or None
        ``(lower, upper)``, both proven with rigorous rounding bounds:
        every flip set ``S`` has ``||A + c W_down[:, S] W_up[S, :]||_F /
        ||A||_F >= lower``, and ``best_subset``'s is at most ``upper``
        (exactly 1.0 for the empty set; ``(0.0, 0.0)`` for a zero skip). With ``stats.bracket ==
        "optimal"`` no flip set beats ``best_subset`` by more than
        ``upper - lower``. ``None`` when no bracket was computed (gated or
        homogeneous activations, ``bracket=False``, a limit hit, or the Gram
        matrix too large for the automatic mode). This project's addition,
        not the paper's.
    excluded_neurons : ndarray of int64 or None
        Neurons that no flip set within the tolerance can contain, proved
        before the search by the triangle inequality: each one's term
        ``c W_down[:, i] W_up[i, :]`` alone outweighs the skip and every
        smaller term together (a weight of ``1e36`` among ordinary ones). The
        certificate then bounds the flip sets that avoid them, and
        ``distance_bound`` is the least of its bound and theirs; pass them to
        :func:`skipsearch.check_certificate` as ``excluded``. ``None`` when
        there are none (and from the baseline, which enumerates instead).

    Notes
    -----
    Equality: two results are equal when they have the same type and every
    field is equal; numpy arrays (``subset``, ``certificate``,
    ``best_subset``, the genericity arrays) when their dtype, shape and
    values are, ``block`` field by field (its arrays likewise, its
    activation by :class:`skipsearch.Activation`'s equality), and ``stats``
    field by field, timings included. So a result equals its copy through
    ``pickle``, ``cloudpickle`` or a process pool, while two runs of the
    same block usually differ in ``stats.seconds``: compare ``verdict``,
    ``subset`` and the bounds for that. The hash covers ``verdict``,
    ``reason``, ``argument``, ``activation`` and ``status`` only.
    """

    _HASH_FIELDS = ("verdict", "reason", "argument", "activation", "status")

    verdict: Verdict
    reason: str
    argument: Argument
    activation: str
    activation_class: str
    flip_constant: Optional[float] = None
    subset: Optional[IntArray] = None
    residual: Optional[float] = None
    relaxation_distance: Optional[float] = None
    distance_bound: Optional[float] = None
    rounding_bound: Optional[float] = None
    certificate: Optional[FloatArray] = field(default=None)
    tolerance: Optional[float] = None
    genericity: Optional[GenericityChecks] = None
    status: Status = "complete"
    stats: SearchStats = field(default_factory=SearchStats)
    block: Optional[SkipFreeBlock] = None
    best_subset: Optional[IntArray] = None
    distance_bracket: Optional[tuple[float, float]] = None
    excluded_neurons: Optional[IntArray] = None

    def __repr__(self) -> str:
        rows = [
            ("verdict", self.verdict),
            ("reason", self.reason),
            ("activation", f"{self.activation} ({self.activation_class}, c={self.flip_constant})"),
        ]
        if self.subset is not None:
            rows.append(("subset", f"{_short(self.subset.tolist())} (|S| = {len(self.subset)})"))
        if self.residual is not None:
            rows.append(("residual", f"{self.residual:.3e}"))
        if self.relaxation_distance is not None:
            rows.append(("relaxation_distance", f"{self.relaxation_distance:.6g}"))
        if self.distance_bound is not None:
            rows.append(
                (
                    "distance_bound",
                    f"{self.distance_bound:.6g} (rounding {self.rounding_bound:.2g})",
                )
            )
        if self.certificate is not None:
            rows.append(("certificate", f"Y, shape {self.certificate.shape}"))
        if self.excluded_neurons is not None:
            rows.append(("excluded_neurons", _short(self.excluded_neurons.tolist())))
        if self.distance_bracket is not None and self.best_subset is not None:
            lower, upper = self.distance_bracket
            rows.append(
                (
                    "distance_bracket",
                    f"[{lower:.6g}, {upper:.6g}] ({self.stats.bracket}; best_subset "
                    f"{_short(self.best_subset.tolist())}, |S| = {len(self.best_subset)})",
                )
            )
        if self.tolerance is not None:
            rows.append(("tolerance", f"{self.tolerance:.3g}"))
        if self.genericity is not None:
            rows.append(("genericity", f"{self.genericity.check}: {self.genericity.describe()}"))
        rows.append(("status", self.status))
        s = self.stats
        rows.append(
            (
                "stats",
                f"{' -> '.join(s.method) or '-'}; nodes={s.nodes}; {s.seconds:.3g} s; "
                f"backend={s.backend}",
            )
        )
        width = max(len(k) for k, _ in rows)
        body = "\n".join(f"  {k.rjust(width)}: {v}" for k, v in rows)
        return f"AbsorptionResult(\n{body}\n)"


@dataclass(frozen=True, eq=False, repr=False)
class StackResult(FieldEquality):
    """The verdict on a stack of residual blocks.

    Attributes
    ----------
    verdict : Verdict
        ``"absorbable"`` when every block is (compose the absorbed blocks);
        ``"not_absorbable"`` when the depth theorem's hypotheses are checked
        on the input (Mijoski & Karbevski 2026; see
        :func:`skipsearch.decide_stack`: gated with ``gate(0) = 0`` or
        homogeneous of degree ``k >= 2`` blocks, no inner biases, no nonzero
        ``b_down`` before the last block, and the product ``A_L ... A_1`` of
        the skips proved nonzero); ``"undecided"`` otherwise, with the
        failed hypothesis in ``reason``.
    reason : str
        One sentence naming the argument, or the hypothesis that failed.
    blocks : tuple of AbsorptionResult
        The per-block results, in order.

    Two stack results are equal when their verdicts, reasons and per-block
    results are (see :class:`AbsorptionResult` for the latter).
    """

    _HASH_FIELDS = ("verdict", "reason")

    verdict: Verdict
    reason: str
    blocks: tuple[AbsorptionResult, ...]

    def __repr__(self) -> str:
        lines = [
            f"StackResult(verdict={self.verdict!r},",
            f"  reason={self.reason!r},",
            "  blocks=[",
        ]
        for i, b in enumerate(self.blocks):
            lines.append(f"    {i}: {b.verdict} ({b.activation}, argument={b.argument})")
        lines.append("  ])")
        return "\n".join(lines)


def _short(items: list[Any], limit: int = 8, total: Optional[int] = None) -> str:
    """The first ``limit`` items; ``total`` counts all of them when only
    some were stored."""
    total = len(items) if total is None else total
    if total <= limit and len(items) == total:
        return "[" + ", ".join(map(str, items)) + "]"
    head = ", ".join(map(str, items[:limit]))
    return f"[{head}, ... {total - min(limit, len(items))} more]"
