"""The activation registry: each entry states its class and verdict rule.

An activation is *flip-linear with constant c* when ``act(z) - act(-z) = c z``
for every real ``z``. For those, flipping a neuron set ``S`` absorbs the skip
exactly iff ``c W_down[:, S] W_up[S, :] = -A`` (Mijoski & Karbevski 2026,
arXiv:2604.23705, the flip construction). Whether the *absence* of such an
``S`` proves that no same-width skip-free block exists depends on the
activation:

``genericity_checked``
    ReLU and LeakyReLU: necessary whenever every neuron is alive and the rows
    ``(u_i, b_i)`` are pairwise non-proportional (the kink-hyperplane argument,
    our extension of the paper's theorem; see docs/verdicts.md).
``generic_weights``
    GELU: necessary for generic weights (Mijoski & Karbevski 2026, main
    theorem); the neurons must be alive and pairwise distinct up to sign.
``sufficient_only``
    SiLU, quick_gelu, softplus, hardswish: the condition is only known to be
    sufficient, so "no flip set" leaves the question undecided.

Other classes are decided without a search (Mijoski & Karbevski 2026 for the
first two, ours for the third): gated activations with ``gate(0) = 0`` that
are differentiable at 0 (linearization argument), homogeneous activations of
degree ``k != 1`` (degree argument), and bounded activations (boundedness
argument). Everything else is undecided.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Optional, Union, cast

import numpy as np
import numpy.typing as npt

from skipsearch._core import erf as _core_erf

__all__ = [
    "ACTIVATIONS",
    "ALIASES",
    "GATED_ENTRIES",
    "Activation",
    "get_activation",
    "known_activations",
    "leaky_relu",
    "scaled_activation",
]

#: Activation classes.
FLIP_LINEAR = "flip_linear"
HOMOGENEOUS = "homogeneous"
GATED = "gated"
BOUNDED = "bounded"
OTHER = "other"


@dataclass(frozen=True)
class Activation:
    """One activation function and what skipsearch knows about it.

    Attributes
    ----------
    name : str
        Registry name (``"relu"``, ``"leaky_relu(0.2)"``, ...).
    kind : str
        ``"flip_linear"``, ``"homogeneous"``, ``"gated"``, ``"bounded"`` or
        ``"other"``.
    function : callable
        Elementwise numpy implementation. For gated activations this is the
        gate, and the block computes ``W_down @ (gate(W_gate x) * (W_up x))``.
    flip_constant : float or None
        ``c`` with ``act(z) - act(-z) = c z``, for flip-linear activations,
        rounded to float64.
    flip_constant_lo : float
        The rounding error of ``flip_constant``: the exact constant is
        ``flip_constant + flip_constant_lo`` (nonzero for LeakyReLU slopes
        whose ``1 + slope`` is not a float64). The rigorous checks use both.
    degree : int or None
        Degree ``k`` of positive homogeneity (``act(t z) = t^k act(z)`` for
        ``t > 0``; for gated activations, of the whole block
        ``gate(W_gate x) * (W_up x)``), an integer ``!= 1``: the degree
        argument needs ``k != 1``, and the depth theorem of
        :func:`skipsearch.decide_stack` ``k >= 2``.
    gate_at_zero : float or None
        ``gate(0)`` for gated activations.
    gate_differentiable : bool
        Whether the gate is differentiable at 0.
    necessity : str or None
        For flip-linear activations, when "no flip set" proves "not
        absorbable": ``"genericity_checked"``, ``"generic_weights"`` or
        ``"sufficient_only"``.
    genericity : str
        The row test reported with the verdict: ``"non_proportional"``,
        ``"distinct_up_to_sign"`` or ``"none"``.
    rule : str
        The verdict rule, in one sentence.

    Notes
    -----
    Two activations are equal when every field but ``function`` is equal
    (``function`` is left out of comparisons, the hash and the repr).
    Every registry activation and ``leaky_relu(a)`` pickles (its function is
    a module-level function or class) and compares equal to the original
    after ``pickle`` or ``cloudpickle``; a hand-made activation pickles
    when its ``function`` does (a module-level function with ``pickle``, a
    lambda or closure with ``cloudpickle``).

    Fields that contradict each other are refused with a ``ValueError``
    naming them when the activation is used (:func:`get_activation`, and so
    every function that takes one): ``degree`` must be an integer other
    than 1, required for ``"homogeneous"`` and allowed for ``"gated"``
    only (and a gated degree ``k >= 2`` needs ``gate(0) = 0``);
    ``flip_constant``, ``necessity`` and ``genericity`` belong to
    ``"flip_linear"`` only, and a necessity claim needs its row test
    (``"genericity_checked"`` needs ``"non_proportional"``,
    ``"generic_weights"`` ``"distinct_up_to_sign"`` or stronger);
    ``gate_at_zero`` and ``gate_differentiable`` belong to ``"gated"`` only.
    A hand-made activation's ``function`` must keep those claims at a few
    sample points (the flip identity, the degree, ``gate(0)``, matching
    one-sided derivatives of a differentiable gate, boundedness), else a
    ``ValueError`` says which claim it breaks.
    """

    name: str
    kind: str
    function: Callable[[np.ndarray], np.ndarray] = field(repr=False, compare=False)
    flip_constant: Optional[float] = None
    flip_constant_lo: float = field(default=0.0, repr=False)
    degree: Optional[int] = None
    gate_at_zero: Optional[float] = None
    gate_differentiable: bool = False
    necessity: Optional[str] = None
    genericity: str = "none"
    rule: str = ""

    @property
    def gated(self) -> bool:
        """Whether the block has a gate projection ``W_gate``."""
        return self.kind == GATED

    def __call__(self, z: np.ndarray) -> np.ndarray:
        return self.function(np.asarray(z, dtype=np.float64))


def erf(z: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """The error function, elementwise (from the Rust core's ``libm``, under one ulp)."""
    return _core_erf(np.asarray(z, dtype=np.float64, order="C"))


def expit(z: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """The logistic function ``1 / (1 + exp(-z))``, elementwise, without overflow.

    ``exp`` only ever sees ``-|z|``, so both tails keep their relative accuracy.
    """
    x = np.asarray(z, dtype=np.float64)
    e = np.exp(-np.abs(x))
    out: npt.NDArray[np.float64] = np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    return out


def _relu(z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return np.maximum(z, 0.0)


def _gelu(z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return 0.5 * z * (1.0 + erf(z / math.sqrt(2.0)))


def _gelu_tanh(z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return 0.5 * z * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z**3)))


def _silu(z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return z * expit(z)


def _quick_gelu(z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return z * expit(1.702 * z)


def _softplus(z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return np.logaddexp(0.0, z)


def _hardswish(z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return z * np.clip(z + 3.0, 0.0, 6.0) / 6.0


def _relu2(z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return np.maximum(z, 0.0) ** 2


def _hardtanh(z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return np.clip(z, -1.0, 1.0)


def _relu6(z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return np.clip(z, 0.0, 6.0)


def _elu(z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return np.where(z > 0, z, np.expm1(np.minimum(z, 0.0)))


def _mish(z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return z * np.tanh(np.logaddexp(0.0, z))


def _identity(z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return z


_RULE_RELU = (
    "absorbable iff some flip set S satisfies c W_down[:, S] W_up[S, :] = -A when all "
    "neurons are alive and the rows (u_i, b_i) are pairwise non-proportional; "
    "otherwise a missing S leaves it undecided"
)
_RULE_GELU = (
    "a flip set S proves absorbable; no S proves not absorbable for generic weights "
    "(alive neurons, rows (u_i, b_i) distinct up to sign)"
)
_RULE_SUFFICIENT = "a flip set S proves absorbable; no S leaves it undecided"


def _flip(
    name: str,
    fn: Callable[[np.ndarray], np.ndarray],
    *,
    necessity: str,
    genericity: str,
    rule: str,
    c: float = 1.0,
    c_lo: float = 0.0,
) -> Activation:
    return Activation(
        name=name,
        kind=FLIP_LINEAR,
        function=fn,
        flip_constant=c,
        flip_constant_lo=c_lo,
        necessity=necessity,
        genericity=genericity,
        rule=rule,
    )


def _exact(x: float) -> str:
    """The shortest decimal that reads back as exactly ``x`` (``repr``),
    without a trailing ``.0``: ``0.2``, ``0.999999999``, ``1e-05``, ``2``."""
    text = repr(float(x))
    return text[:-2] if text.endswith(".0") else text


@dataclass(frozen=True)
class _LeakyReLU:
    """LeakyReLU's function: a module-level class rather than a closure, so
    that the activation (and every result and block holding it) pickles."""

    slope: float

    def __call__(self, z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        out: npt.NDArray[np.float64] = np.where(z >= 0, z, self.slope * z)
        return out


def leaky_relu(negative_slope: float = 0.01) -> Activation:
    """LeakyReLU with the given negative slope; flip constant ``1 + slope``.

    Parameters
    ----------
    negative_slope : float, default 0.01
        Slope for ``z < 0``. Must be finite and not ``1`` (the identity) or
        ``-1`` (``|z|``, whose odd part is zero).

    Returns
    -------
    Activation
        Named ``"leaky_relu(<slope>)"`` with the shortest decimal that reads
        back as exactly the slope, so that ``get_activation(act.name)``
        returns the same activation.

    Raises
    ------
    ValueError
        If the slope is not finite or equals ``1`` or ``-1``.
    """
    if isinstance(negative_slope, (bool, np.bool_)) or not isinstance(
        negative_slope, (int, float, np.integer, np.floating)
    ):
        raise TypeError(
            f"negative_slope must be a real number, got {type(negative_slope).__name__}"
        )
    slope = float(negative_slope) + 0.0  # -0.0 -> 0.0: one name per function
    if not math.isfinite(slope) or slope in (1.0, -1.0):
        raise ValueError(
            "negative_slope must be finite and differ from 1 (identity) and -1 (abs), "
            f"got {negative_slope!r}"
        )
    # 1 + slope exactly, as a float64 and its rounding error (Knuth's TwoSum).
    c = 1.0 + slope
    c_lo = (1.0 - (c - (c - 1.0))) + (slope - (c - 1.0))
    return _flip(
        f"leaky_relu({_exact(slope)})",
        _LeakyReLU(slope),
        necessity="genericity_checked",
        genericity="non_proportional",
        rule=_RULE_RELU,
        c=c,
        c_lo=c_lo,
    )


@dataclass(frozen=True)
class _Scaled:
    """``factor * activation``: a module-level class holding the activation
    it scales, so that a scaled activation pickles whenever that one does,
    and is checked through it (:func:`_checked`)."""

    factor: float
    activation: Activation

    def __call__(self, z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        inner = np.asarray(self.activation.function(z), dtype=np.float64)
        with np.errstate(over="ignore", under="ignore"):
            out: npt.NDArray[np.float64] = self.factor * inner
        return out


def _exact_factor(factor: object) -> float:
    """``factor`` as a float64, refused (naming it) unless it is a finite
    nonzero real number that float64 holds exactly."""
    if isinstance(factor, (bool, np.bool_)) or not isinstance(
        factor, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"factor must be a real number, got {type(factor).__name__}")
    try:
        a = float(factor)
    except OverflowError:
        a = math.inf
    text = repr(factor)
    if len(text) > 40:
        text = f"{text[:20]}... ({len(text)} characters)"
    if not math.isfinite(a) or a == 0.0:
        raise ValueError(f"factor must be finite and nonzero in float64, got {text}")
    if isinstance(factor, (int, np.integer)) and int(factor) != a:
        raise ValueError(f"factor {text} is not a float64 (it would round to {a!r})")
    if isinstance(factor, np.floating) and np.finfo(factor.dtype).nmant > 52 and factor != a:
        raise ValueError(f"factor {text} is not a float64 (it would round to {a!r})")
    return a


def _scaled_flip_constant(act: Activation, factor: Fraction, where: str) -> tuple[float, float]:
    """``factor * (flip_constant + flip_constant_lo)`` as a float64 and its
    rounding error, both exact; ``ValueError`` when no such pair holds it."""
    exact = factor * (Fraction(cast(float, act.flip_constant)) + Fraction(act.flip_constant_lo))
    try:
        hi = float(exact)  # correctly rounded
    except OverflowError:
        hi = math.inf
    lo = float(exact - Fraction(hi)) if math.isfinite(hi) else math.nan
    if not (
        math.isfinite(hi) and hi != 0.0 and hi + lo == hi and Fraction(hi) + Fraction(lo) == exact
    ):
        value = f"about {hi!r}" if math.isfinite(hi) else "beyond float64's range"
        raise ValueError(
            f"{where}: its flip constant a c ({value}) is not the sum of a float64 and its "
            "rounding error, so the flip condition could not be checked exactly"
        )
    return hi, lo


def scaled_activation(activation: Union[str, Activation], factor: float) -> Activation:
    """The activation ``factor * act``, for blocks that compute ``A x + a f(x)``.

    A residual multiplier ``a`` (Granite's ``residual_multiplier``) makes a
    block compute ``A x + a W_down act(W_up x + b_up) + a b_down``. Its
    ``a`` folds into the activation: that is ``A x + W_down (a act)(W_up x +
    b_up) + a b_down``, and the skip-free blocks of the same width with
    ``a act`` are exactly those with ``act`` (scale ``W_down`` by ``a``), so
    every theorem that applies to ``act`` applies unchanged: the class, the
    degree, ``gate(0) = 0`` and the genericity hypotheses are those of
    ``act``, and the flip constant is ``a c`` (docs/theory.md §2.3). Pass
    the result as ``activation=`` with ``b_down`` multiplied by ``a``; the
    skip-free block built from a flip set keeps ``W_down`` and evaluates
    ``a act``, so it is exact in its weights like any other.

    Parameters
    ----------
    activation : str or Activation
        The block's activation (for a gated block, its gated entry such as
        ``"swiglu"``; the gate is scaled, which scales the whole product).
    factor : float
        ``a``, finite and nonzero.

    Returns
    -------
    Activation
        Named ``"<a>*<name>"`` (``"0.22*swiglu"``), with the shortest
        decimal that reads back as exactly ``a``. Its flip constant is
        ``a c`` exactly, as ``flip_constant + flip_constant_lo``.

    Raises
    ------
    TypeError
        If ``factor`` is not a real number.
    ValueError
        If ``factor`` is not finite or is zero in float64, or is an integer
        or long double that float64 does not hold exactly; if ``a c`` is not
        the sum of
        a float64 and its rounding error (a LeakyReLU slope whose ``1 +
        slope`` is not a float64 times an ``a`` that is no power of two, or
        ``|a c|`` near the ends of float64's range); or if a gate's nonzero
        ``gate(0)`` times ``a`` underflows to zero.
    """
    return _scale(get_activation(activation), _exact_factor(factor))


def _scale(act: Activation, a: float) -> Activation:
    """``a act`` for a checked ``act`` and an exact float64 ``a`` (see
    :func:`scaled_activation`)."""
    name = f"{_exact(a)}*{act.name}"
    where = f"scaled_activation({act.name!r}, {a!r})"
    c_hi: Optional[float] = None
    c_lo = 0.0
    if act.kind == FLIP_LINEAR:
        c_hi, c_lo = _scaled_flip_constant(act, Fraction(a), where)
    gate_at_zero = act.gate_at_zero
    if gate_at_zero is not None and gate_at_zero != 0.0:
        gate_at_zero = a * gate_at_zero
        if gate_at_zero == 0.0 or not math.isfinite(gate_at_zero):
            raise ValueError(
                f"{where}: gate(0) = {act.gate_at_zero!r} times {a!r} is not a nonzero float64"
            )
    return Activation(
        name=name,
        kind=act.kind,
        function=_Scaled(a, act),
        flip_constant=c_hi,
        flip_constant_lo=c_lo,
        degree=act.degree,
        gate_at_zero=gate_at_zero,
        gate_differentiable=act.gate_differentiable,
        necessity=act.necessity,
        genericity=act.genericity,
        rule=act.rule,
    )


_GELU = _flip(
    "gelu", _gelu, necessity="generic_weights", genericity="distinct_up_to_sign", rule=_RULE_GELU
)
_GELU_TANH = _flip(
    "gelu_tanh",
    _gelu_tanh,
    necessity="generic_weights",
    genericity="distinct_up_to_sign",
    rule=_RULE_GELU,
)

_BOUNDED_RULE = "not absorbable whenever A != 0: a skip-free block is bounded, A x + f(x) is not"
_GATED_LIN_RULE = (
    "not absorbable without inner biases: the skip-free block has zero Jacobian at 0, "
    "A x + f(x) has Jacobian A"
)
_DEGREE_RULE = (
    "not absorbable without inner biases: the skip-free block is {k}-homogeneous, "
    "A x + f(x) has a degree-1 part"
)

#: Every registered activation, by canonical name.
ACTIVATIONS: dict[str, Activation] = {
    a.name: a
    for a in [
        _flip(
            "relu",
            _relu,
            necessity="genericity_checked",
            genericity="non_proportional",
            rule=_RULE_RELU,
        ),
        leaky_relu(0.01),
        _GELU,
        _GELU_TANH,
        _flip(
            "quick_gelu",
            _quick_gelu,
            necessity="sufficient_only",
            genericity="none",
            rule=_RULE_SUFFICIENT,
        ),
        _flip("silu", _silu, necessity="sufficient_only", genericity="none", rule=_RULE_SUFFICIENT),
        _flip(
            "softplus",
            _softplus,
            necessity="sufficient_only",
            genericity="none",
            rule=_RULE_SUFFICIENT,
        ),
        _flip(
            "hardswish",
            _hardswish,
            necessity="sufficient_only",
            genericity="none",
            rule=_RULE_SUFFICIENT,
        ),
        Activation("relu2", HOMOGENEOUS, _relu2, degree=2, rule=_DEGREE_RULE.format(k=2)),
        Activation("tanh", BOUNDED, np.tanh, rule=_BOUNDED_RULE),
        Activation("sigmoid", BOUNDED, expit, rule=_BOUNDED_RULE),
        Activation("hardtanh", BOUNDED, _hardtanh, rule=_BOUNDED_RULE),
        Activation("relu6", BOUNDED, _relu6, rule=_BOUNDED_RULE),
        Activation("elu", OTHER, _elu, rule="undecided: no theorem covers it"),
        Activation("mish", OTHER, _mish, rule="undecided: no theorem covers it"),
        Activation(
            "swiglu",
            GATED,
            _silu,
            gate_at_zero=0.0,
            gate_differentiable=True,
            rule=_GATED_LIN_RULE,
        ),
        Activation(
            "geglu",
            GATED,
            _gelu,
            gate_at_zero=0.0,
            gate_differentiable=True,
            rule=_GATED_LIN_RULE,
        ),
        Activation(
            "reglu", GATED, _relu, degree=2, gate_at_zero=0.0, rule=_DEGREE_RULE.format(k=2)
        ),
        Activation(
            "bilinear",
            GATED,
            _identity,
            degree=2,
            gate_at_zero=0.0,
            gate_differentiable=True,
            rule=_DEGREE_RULE.format(k=2),
        ),
        Activation(
            "glu",
            GATED,
            expit,
            gate_at_zero=0.5,
            gate_differentiable=True,
            rule="undecided: the sigmoid gate has gate(0) = 1/2, so no theorem applies",
        ),
    ]
}
ACTIVATIONS["leaky_relu"] = ACTIVATIONS.pop("leaky_relu(0.01)")

#: Other names in common use (Hugging Face ``hidden_act`` values among them).
ALIASES: dict[str, str] = {
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "swish": "silu",
    "relu_squared": "relu2",
    "squared_relu": "relu2",
    "gelu_python": "gelu",
}


#: The gated registry entry of a block whose gate applies the given activation
#: (a registry name, or "identity" for a bilinear block). The registry's
#: "geglu" gate is the exact GELU; a tanh-approximated GELU gate (Gemma) maps
#: to it too, since the verdict for gated blocks (the linearization argument)
#: only uses gate(0) = 0 and differentiability at 0, which both gates share.
GATED_ENTRIES = {
    "relu": "reglu",
    "gelu": "geglu",
    "gelu_tanh": "geglu",
    "silu": "swiglu",
    "sigmoid": "glu",
    "identity": "bilinear",
}


def known_activations() -> list[str]:
    """All accepted activation names, aliases included, sorted."""
    return sorted([*ACTIVATIONS, *ALIASES])


_KINDS = (FLIP_LINEAR, HOMOGENEOUS, GATED, BOUNDED, OTHER)
_NECESSITY = (None, "genericity_checked", "generic_weights", "sufficient_only")
_GENERICITY = ("none", "non_proportional", "distinct_up_to_sign")


def _checked(act: Activation) -> Activation:
    """Reject a hand-made Activation whose fields contradict each other."""
    where = f"Activation {act.name!r}"
    if act.kind not in _KINDS:
        raise ValueError(f"{where}: kind must be one of {_KINDS}, got {act.kind!r}")
    if act.necessity not in _NECESSITY or act.genericity not in _GENERICITY:
        raise ValueError(
            f"{where}: necessity must be one of {_NECESSITY} and genericity one of "
            f"{_GENERICITY}, got {act.necessity!r} and {act.genericity!r}"
        )
    if act.kind == FLIP_LINEAR:
        c = act.flip_constant
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not math.isfinite(c) or c == 0:
            raise ValueError(
                f"{where}: a flip-linear activation needs a finite nonzero flip_constant"
            )
        _check_flip_fields(act, where, float(c))
    else:
        _check_not_flip_linear(act, where)
    _check_degree(act, where)
    _check_gate(act, where)
    if not callable(act.function):
        raise TypeError(f"{where}: function must be callable")
    if not (is_registry(act) or _is_scaling(act)):
        _check_function(act, where)
    return act


def _is_scaling(act: Activation) -> bool:
    """Whether ``act`` is exactly what :func:`scaled_activation` makes of the
    activation its function scales: then that one (at the bottom of a chain
    of scalings) is checked instead of sampling ``a act``, whose values may
    overflow where the claims still hold."""
    chain = []
    inner = act
    while isinstance(inner.function, _Scaled):
        chain.append(inner)
        inner = inner.function.activation
    if not chain:
        return False
    _checked(inner)
    for outer in reversed(chain):
        scaling = cast(_Scaled, outer.function)
        try:
            expected = _scale(scaling.activation, scaling.factor)
        except (TypeError, ValueError):
            return False
        if expected != outer:
            return False
    return True


def is_registry(act: Activation) -> bool:
    """Whether ``act`` is a registry activation or ``leaky_relu(a)``: every
    field and the function itself the registry's (the test suite checks
    those functions against their fields). A hand-made activation that
    borrows a registry name or function with other fields is not."""
    entry = ACTIVATIONS.get(act.name)
    if entry is None and isinstance(act.function, _LeakyReLU):
        try:
            entry = leaky_relu(act.function.slope)
        except (TypeError, ValueError):
            return False
    if entry is None:
        return False
    return entry is act or (entry == act and entry.function == act.function)


#: Dyadic sample points: exact in float64, and so are their doubles.
_SAMPLES = np.array([-3.0, -1.5, -0.75, -0.25, 0.25, 0.75, 1.5, 3.0])


def _check_function(act: Activation, where: str) -> None:
    """A hand-made activation's ``function`` must agree with what its fields
    claim, at a few sample points: the verdict rests on the claims, so a
    claim the function visibly breaks (``gate_at_zero=0`` for ``cos``) would
    give a wrong answer. Sampling catches contradictions, not every false
    claim: the claims stay the caller's responsibility."""

    def value(z: np.ndarray) -> np.ndarray:
        try:
            out = np.asarray(act.function(np.array(z, dtype=np.float64)), dtype=np.float64)
        except Exception as e:  # a function that cannot take an array
            raise ValueError(
                f"{where}: function failed on a float64 array: {type(e).__name__}: {e}"
            ) from None
        if out.shape != np.shape(z):
            raise ValueError(
                f"{where}: function must be elementwise (same shape out as in), got shape "
                f"{out.shape} for input shape {np.shape(z)}"
            )
        return out

    def agree(lhs: np.ndarray, rhs: np.ndarray, claim: str) -> None:
        scale = np.abs(lhs) + np.abs(rhs)
        if not (np.all(np.isfinite(lhs)) and np.all(np.abs(lhs - rhs) <= 1e-9 * scale + 1e-300)):
            i = int(np.argmax(~np.isfinite(lhs) | (np.abs(lhs - rhs) > 1e-9 * scale)))
            raise ValueError(
                f"{where}: function contradicts {claim} at z = {float(_SAMPLES[i])!r} "
                f"({float(lhs[i])!r} against {float(rhs[i])!r})"
            )

    z = _SAMPLES
    if act.kind == FLIP_LINEAR:
        c = float(act.flip_constant or 0.0)  # checked finite and nonzero above
        agree(value(z) - value(-z), c * z, f"flip_constant={act.flip_constant!r}")
    elif act.kind == HOMOGENEOUS and act.degree is not None:
        agree(value(2 * z), 2.0**act.degree * value(z), f"degree={act.degree!r}")
    elif act.kind == GATED:
        g0 = float(value(np.zeros(1))[0])
        claimed = act.gate_at_zero
        if claimed is not None and not (
            g0 == claimed or abs(g0 - claimed) <= 1e-12 * max(abs(claimed), abs(g0))
        ):
            raise ValueError(f"{where}: function(0) = {g0!r} contradicts gate_at_zero={claimed!r}")
        if act.degree is not None and act.degree >= 2:
            agree(value(2 * z), 2.0 ** (act.degree - 1) * value(z), f"degree={act.degree!r}")
        if act.gate_differentiable:
            for h in (2.0**-14, 2.0**-20):
                right = (float(value(np.array([h]))[0]) - g0) / h
                left = (g0 - float(value(np.array([-h]))[0])) / h
                if not abs(right - left) <= 1e-3 * (1.0 + abs(right) + abs(left)):
                    raise ValueError(
                        f"{where}: function contradicts gate_differentiable=True: its "
                        f"difference quotients at 0 are {left!r} from the left and {right!r} "
                        "from the right"
                    )
    elif act.kind == BOUNDED:
        near = float(np.max(np.abs(value(z))))
        far = float(np.max(np.abs(value(np.array([-1e12, -1e6, 1e6, 1e12])))))
        if not far <= 1e6 * (1.0 + near):
            raise ValueError(
                f"{where}: function contradicts kind='bounded': |function| reaches {far!r} "
                "at |z| <= 1e12"
            )


#: The row test each necessity claim needs: the kink-hyperplane argument
#: needs pairwise non-proportional rows, the generic-weights theorem rows
#: distinct up to sign (which non-proportional rows are too).
_NEEDED_GENERICITY = {
    "genericity_checked": ("non_proportional",),
    "generic_weights": ("distinct_up_to_sign", "non_proportional"),
}


def _check_flip_fields(act: Activation, where: str, c: float) -> None:
    """The fields of a flip-linear activation: no degree (``act(z) - act(-z)
    = c z`` with ``c != 0`` and ``k``-homogeneity force ``k = 1``), no gate,
    a rounding error below half an ulp of ``c``, and a necessity claim only
    with the row test its argument needs."""
    lo = act.flip_constant_lo
    if (
        isinstance(lo, bool)
        or not isinstance(lo, (int, float))
        or not math.isfinite(lo)
        or c + lo != c
    ):
        raise ValueError(
            f"{where}: flip_constant_lo must be the rounding error of flip_constant (a finite "
            f"float below half an ulp of {c!r}), got {lo!r}"
        )
    if act.degree is not None:
        raise ValueError(
            f"{where}: a flip-linear activation has no degree (act(z) - act(-z) = c z with c != 0 "
            f"holds for a k-homogeneous act only if k = 1), got degree={act.degree!r}"
        )
    needed = _NEEDED_GENERICITY.get(act.necessity or "")
    if needed is not None and act.genericity not in needed:
        raise ValueError(
            f"{where}: necessity={act.necessity!r} rests on the row test "
            f"genericity={needed[0]!r}, got genericity={act.genericity!r}: without that test "
            '"no flip set" would be reported as a proof it is not'
        )


def _check_not_flip_linear(act: Activation, where: str) -> None:
    """A class other than flip-linear carries no flip constant, necessity
    claim or row test (they concern the flip condition only)."""
    if act.flip_constant is not None or act.flip_constant_lo != 0.0:
        raise ValueError(
            f"{where}: flip_constant is only for flip-linear activations, but kind is "
            f"{act.kind!r} (a homogeneous activation of degree k != 1 or a bounded one has "
            "act(z) - act(-z) = c z only with c = 0)"
        )
    if act.necessity is not None or act.genericity != "none":
        raise ValueError(
            f"{where}: necessity and genericity concern the flip condition of flip-linear "
            f"activations, but kind is {act.kind!r}"
        )


def _check_degree(act: Activation, where: str) -> None:
    """``degree``: an integer other than 1, for homogeneous (where it is
    required) and gated activations only."""
    k = act.degree
    if k is None:
        if act.kind == HOMOGENEOUS:
            raise ValueError(
                f"{where}: a homogeneous activation needs its degree (an integer k != 1)"
            )
        return
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise ValueError(f"{where}: degree must be an integer k != 1 or None, got {k!r}")
    if k == 1:
        raise ValueError(
            f"{where}: degree=1 is not a degree the degree argument can use (it needs k != 1: "
            "a 1-homogeneous activation such as relu may well absorb a skip, x - relu(x) = "
            "-relu(-x)); give a flip-linear activation with its flip_constant instead"
        )
    if act.kind not in (HOMOGENEOUS, GATED):
        raise ValueError(
            f"{where}: degree is only for homogeneous and gated activations, but kind is "
            f"{act.kind!r}, got degree={k!r}"
        )
    if act.kind == GATED and k >= 2 and act.gate_at_zero not in (None, 0.0):
        raise ValueError(
            f"{where}: a gated block of degree {k} has a gate homogeneous of degree {k - 1} >= 1, "
            f"so gate(0) = 0, but gate_at_zero={act.gate_at_zero!r}"
        )


def _check_gate(act: Activation, where: str) -> None:
    """``gate_at_zero`` and ``gate_differentiable``: gated activations only."""
    g = act.gate_at_zero
    if act.kind != GATED:
        if g is not None or act.gate_differentiable:
            raise ValueError(
                f"{where}: gate_at_zero and gate_differentiable are only for gated activations, "
                f"but kind is {act.kind!r}"
            )
        return
    if g is not None and (
        isinstance(g, (bool, np.bool_))
        or not isinstance(g, (int, float, np.integer, np.floating))
        or not math.isfinite(g)
    ):
        raise ValueError(f"{where}: gate_at_zero must be a finite number or None, got {g!r}")
    if not isinstance(act.gate_differentiable, (bool, np.bool_)):
        raise ValueError(
            f"{where}: gate_differentiable must be True or False, got {act.gate_differentiable!r}"
        )


#: A factor in a scaled name: a plain decimal, as ``repr`` writes floats.
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?")
#: Factors a scaled name may carry ("0.5*2*relu" has two).
_MAX_FACTORS = 16


def _parse_scaled(activation: str, key: str) -> Activation:
    """``"<a>*...*<name>"``: the factors are applied right to left, so the
    name of every scaled activation reads back as it."""
    *factors, base = key.split("*")
    where = f"activation {activation!r}"
    if len(factors) > _MAX_FACTORS:
        raise ValueError(f"{where}: at most {_MAX_FACTORS} factors, got {len(factors)}")
    values = []
    for text in factors:
        if not _DECIMAL.fullmatch(text):
            raise ValueError(
                f"{where}: each factor must be a decimal number, e.g. '0.22*swiglu', got {text!r}"
            )
        value = float(text)
        if value == 0.0 and any(ch in "123456789" for ch in text.split("e")[0]):
            raise ValueError(f"{where}: the factor {text} rounds to 0 in float64")
        values.append(value)
    try:
        act = get_activation(base) if base else None
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None
    if act is None:
        raise ValueError(f"{where}: a scaled name ends with an activation, e.g. '0.22*swiglu'")
    for value in reversed(values):
        try:
            act = _scale(act, _exact_factor(value))
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
    return act


def get_activation(activation: Union[str, Activation]) -> Activation:
    """Resolve a registry name or pass an :class:`Activation` through.

    Parameters
    ----------
    activation : str or Activation
        A name from :func:`known_activations` (case-insensitive; plain
        ``"leaky_relu"`` has slope 0.01), ``"leaky_relu(<slope>)"``,
        ``"<a>*<name>"`` for :func:`scaled_activation` (``"0.22*swiglu"``),
        or an activation object such as ``leaky_relu(0.2)``.

    Returns
    -------
    Activation

    Raises
    ------
    ValueError
        For an unknown name; the message lists the known ones.
    TypeError
        For anything that is neither a string nor an :class:`Activation`.
    """
    if isinstance(activation, Activation):
        return _checked(activation)
    if not isinstance(activation, str):
        raise TypeError(
            "activation must be a registry name or a skipsearch.Activation, "
            f"got {type(activation).__name__}"
        )
    key = activation.strip().lower().replace(" ", "")
    key = ALIASES.get(key, key)
    if key in ACTIVATIONS:
        return ACTIVATIONS[key]
    parametrised = re.fullmatch(r"leaky_relu\((.*)\)", key)
    if parametrised:
        try:
            slope = float(parametrised.group(1))
        except ValueError:
            raise ValueError(
                f"activation {activation!r}: the slope must be a number, e.g. 'leaky_relu(0.2)'"
            ) from None
        return leaky_relu(slope)
    if "*" in key:
        return _parse_scaled(activation, key)
    raise ValueError(
        f"unknown activation {activation!r}; known activations: "
        f"{', '.join(known_activations())}, 'leaky_relu(<slope>)', or '<a>*<name>' for a "
        "times one of them"
    )
