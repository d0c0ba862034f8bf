"""Input checks and coercion at the boundary (arrays, skip, options)."""

from __future__ import annotations

import contextlib
import math
import numbers
import os
import re
import warnings
from collections.abc import Iterable
from decimal import Decimal
from fractions import Fraction
from typing import Any, Literal, Optional, overload

import numpy as np
import numpy.typing as npt

from skipsearch._memory import cgroup_memory_available
from skipsearch._types import FloatArray

#: numpy's warning for ragged nested sequences (moved to numpy.exceptions in 1.25).
RaggedWarning: type[Warning] = getattr(
    getattr(np, "exceptions", np), "VisibleDeprecationWarning", DeprecationWarning
)

SHAPE_HINT = "torch.nn.Linear convention: W_up is (m, d_in), W_down is (d_out, m)"


def _eps(dtype: np.dtype[Any]) -> float:
    """Machine epsilon of the precision the weights came in."""
    if dtype.kind == "f":
        try:
            return float(np.finfo(dtype).eps)
        except (TypeError, ValueError):  # pragma: no cover - exotic float types
            return float(np.finfo(np.float16).eps)
    if dtype.kind == "V" and "bfloat16" in str(dtype):  # ml_dtypes.bfloat16
        return 2.0**-7
    return float(np.finfo(np.float64).eps)


_NESTED = (np.ndarray, list, tuple)


def _masked_at(value: Any, index: tuple[int, ...] = ()) -> Optional[tuple[int, ...]]:
    """The index of the first masked value anywhere in ``value`` (a masked
    array, ``np.ma.masked``, or such things inside lists, tuples and object
    arrays, at any depth), or None. Plain numeric arrays hold none and are
    not walked."""
    if np.ma.isMaskedArray(value):
        mask = np.ma.getmaskarray(value)
        if mask.any():
            return index + tuple(int(i) for i in np.argwhere(mask)[0])
        if value.dtype != object:
            return None
        value = np.ma.getdata(value)
    items: Iterable[tuple[tuple[int, ...], Any]]
    if isinstance(value, np.ndarray):
        if value.dtype != object:
            return None
        items = zip(np.ndindex(value.shape), value.flat)
    elif isinstance(value, (list, tuple)):
        # A list of plain numbers is not walked: its item types are
        # collected in C. (np.ma.masked is an ndarray.)
        if not any(issubclass(t, _NESTED) for t in set(map(type, value))):
            return None
        items = (((i,), item) for i, item in enumerate(value))
    else:
        return None
    for i, item in items:
        if isinstance(item, _NESTED):
            found = _masked_at(item, index + i)
            if found is not None:
                return found
    return None


def reject_masked(name: str, value: Any) -> None:
    """Raise ``TypeError`` when ``value`` holds a masked value anywhere.

    ``np.asarray`` drops masks (of masked arrays inside a list) or turns
    masked values into NaN or into their hidden data, so masked inputs are
    refused before any conversion rather than decided on values the caller
    masked out.
    """
    where = _masked_at(value)
    if where is not None:
        at = f" (first at index {where})" if where else ""
        raise TypeError(
            f"{name} has masked entries{at}; skipsearch needs plain numbers: fill them "
            "(np.ma.filled(x, value)) or drop them first"
        )


def _check_wide_floats(name: str, arr: npt.NDArray[Any], out: FloatArray) -> None:
    """Refuse a long-double (or wider) array whose values float64 cannot
    hold: widening them would decide a block the caller did not pass."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        back = out.astype(arr.dtype)
        changed = np.isfinite(arr) & (back != arr)
    if changed.any():
        i = tuple(int(k) for k in np.argwhere(changed)[0])
        to = float(out[i])
        what = (
            "beyond float64's range"
            if not math.isfinite(to)
            else ("rounds to 0.0" if to == 0.0 else f"would be rounded to {to!r}")
        )
        raise ValueError(
            f"{name} has {arr.dtype} entry {arr[i]!r} at index {i}, which float64 cannot hold "
            f"exactly ({what}); rescale the block, or pass {name}.astype(np.float64) if "
            "rounding is intended"
        )


def _check_listed_integers(name: str, value: Any, out: FloatArray) -> None:
    """Refuse a list mixing floats with integers float64 cannot hold
    (``np.asarray([0.5, 2**53 + 1])`` rounds the integer silently)."""
    try:
        objs = np.asarray(value, dtype=object)
    except (ValueError, TypeError):  # pragma: no cover - converted once already
        return
    if objs.shape != out.shape:  # pragma: no cover - nested arrays inside the list
        return

    def rounded(v: Any, f: Any) -> bool:
        # Python compares a Python int with a Python float exactly.
        integral = isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))
        return bool(integral and int(v) != float(f))

    changed = np.frompyfunc(rounded, 2, 1)(objs, out).astype(bool)
    if changed.any():
        i = tuple(int(k) for k in np.argwhere(changed)[0])
        raise ValueError(
            f"{name} has integer entry {objs[i]} at index {i}, which float64 cannot hold "
            "exactly (integers must stay within 2**53 or be exact float64 values); rescale "
            "the block or pass floats if rounding is intended"
        )


def _all_finite(a: FloatArray) -> bool:
    """Whether every entry of ``a`` is finite, without a boolean array of
    its size: a finite sum proves it (NaN and Inf propagate); a sum that
    overflows from finite entries alone is settled entry by entry."""
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.sum(a)):
            return True
    return bool(np.isfinite(a).all())


def as_float_array(
    name: str, value: Any, ndim: int, expected: str, exact_integers: bool = True
) -> tuple[FloatArray, float]:
    """Return ``value`` as a C-contiguous float64 array, and its epsilon.

    An input that is already C-contiguous float64 is not copied: a read-only
    view of it comes back (weights of real models are the largest buffers
    here); anything else is converted into a fresh array.

    Integer, bool-free real and reduced-precision float inputs are widened;
    complex and non-numeric inputs, and masked values anywhere (a masked
    array, or masked arrays inside lists, tuples or object arrays), raise
    ``TypeError``; wrong dimensionality, NaN or Inf raise ``ValueError``, and
    so (with ``exact_integers``, the default) do integers that float64
    cannot hold exactly. Whatever ``exact_integers``, long-double (or wider)
    values that change in float64, and integers that numpy rounded because a
    list mixed them with floats, raise ``ValueError``. The caller's array is
    never modified.
    """
    if value is None:
        raise TypeError(f"{name} is required, got None")
    reject_masked(name, value)
    try:
        with warnings.catch_warnings():
            # numpy < 1.24 turns ragged nested lists into an object array,
            # with this warning where later versions raise ValueError.
            warnings.simplefilter("error", RaggedWarning)
            arr = np.asarray(value)
    except (ValueError, TypeError, RaggedWarning) as e:
        raise ValueError(f"{name} is not a rectangular numeric array {expected}: {e}") from None
    if arr.dtype == object and arr.size and all(map(_exact_scalar, arr.flat)):
        # Fractions, Decimals, Python ints beyond int64 (numpy keeps them as
        # objects): each must be a float64 value exactly, or the caller
        # hears which entry is not, as for a scalar skip.
        arr = np.array(
            [exact_float(f"{name}[{', '.join(map(str, i))}]", v) for i, v in np.ndenumerate(arr)],
            dtype=np.float64,
        ).reshape(arr.shape)
    kind = arr.dtype.kind
    if kind == "c":
        raise TypeError(f"{name} has complex dtype {arr.dtype}; skipsearch needs real weights")
    bf16 = kind == "V" and "bfloat16" in str(arr.dtype)
    if kind not in "fiu" and not bf16:
        raise TypeError(
            f"{name} has dtype {arr.dtype}; expected a real float or integer array {expected}"
        )
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D with shape {expected}, got shape {arr.shape}")
    eps = _eps(arr.dtype)
    out: FloatArray
    if arr.dtype == np.float64 and arr.flags.c_contiguous and isinstance(arr, np.ndarray):
        out = arr.view(np.ndarray)
        out.flags.writeable = False
    else:
        with np.errstate(over="ignore", under="ignore"):
            out = np.array(arr, dtype=np.float64, order="C", copy=True)
    if kind == "f" and arr.dtype.itemsize > 8:
        _check_wide_floats(name, arr, out)
    if kind == "f" and isinstance(value, (list, tuple)):
        _check_listed_integers(name, value, out)
    if not _all_finite(out):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(out))[0])
        raise ValueError(f"{name} contains NaN or Inf (first at index {bad})")
    if kind in "iu" and exact_integers:
        # Integers beyond 2^53 may not survive the widening to float64; a
        # verdict on rounded weights would not be about the user's block.
        big = np.abs(out) >= 2.0**53
        if big.any():
            idx = np.argwhere(big)
            for row in idx:
                i = tuple(int(k) for k in row)
                if int(out[i]) != int(arr[i]):
                    raise ValueError(
                        f"{name} has integer entry {int(arr[i])} at index {i}, which float64 "
                        "cannot hold exactly (integers must stay within 2**53 or be exact "
                        "float64 values); rescale the block or pass floats if rounding is "
                        "intended"
                    )
    return out, eps


def _exact_scalar(value: Any) -> bool:
    """Whether ``value`` is a real scalar with an exact rational value
    (a number, :class:`~fractions.Fraction` or :class:`~decimal.Decimal`;
    not a bool)."""
    return isinstance(value, (numbers.Real, Decimal)) and not isinstance(value, (bool, np.bool_))


def _exact_value(value: Any) -> Optional[Fraction]:
    """The exact rational value of a real scalar, or None when it has none
    that can be read (NaN, Inf, or a type without ``as_integer_ratio``
    that :class:`fractions.Fraction` does not take)."""
    if isinstance(value, np.ndarray):
        value = value[()]
    try:
        if isinstance(value, numbers.Integral):
            return Fraction(int(value))
        ratio = getattr(value, "as_integer_ratio", None)
        if ratio is not None:
            n, d = ratio()
            return Fraction(int(n), int(d))
        return Fraction(value)
    except (TypeError, ValueError, OverflowError, ArithmeticError):
        return None


def exact_float(name: str, value: Any) -> float:
    """``value`` (a real scalar) as the float64 equal to it.

    Python and numpy integers beyond ``2**53``, :class:`~fractions.Fraction`
    and :class:`~decimal.Decimal` values, and ``np.longdouble`` scalars that
    float64 cannot hold exactly (among them nonzero values that round to 0
    and finite values beyond its range) raise ``ValueError`` naming ``name``:
    a verdict on the rounded value would not be about the caller's block.
    """
    try:
        with np.errstate(over="ignore", under="ignore"):
            out = float(value)
    except OverflowError:
        raise ValueError(
            f"{name}={value!r} lies beyond float64's range; rescale the block"
        ) from None
    except ValueError:  # Decimal("sNaN"): "cannot convert signaling NaN to float"
        if isinstance(value, Decimal) and value.is_nan():
            raise ValueError(f"{name} must be finite, got {value!r}") from None
        raise
    exact = _exact_value(value)
    if not math.isfinite(out):
        if exact is not None:
            raise ValueError(f"{name}={value!r} lies beyond float64's range; rescale the block")
        raise ValueError(f"{name} must be finite, got {value!r}")
    if exact is not None and Fraction(out) != exact:
        what = "rounds to 0.0" if out == 0.0 else f"would be rounded to {out!r}"
        raise ValueError(
            f"{name}={value!r} is not a float64 value: float64 cannot hold it exactly (it "
            f"{what}); pass a value float64 holds, rescale the block, or pass float({name}) "
            "if rounding is intended"
        )
    return out


def resolve_skip(skip: Any, d_out: int, d_in: int) -> tuple[FloatArray, float]:
    """The skip matrix ``A`` of shape ``(d_out, d_in)`` and its epsilon."""
    reject_masked("skip", skip)
    eps = float(np.finfo(np.float64).eps)
    if (
        skip is None
        or _exact_scalar(skip)
        or (isinstance(skip, np.ndarray) and skip.ndim == 0 and skip.dtype.kind in "fiu")
    ):
        alpha = 1.0 if skip is None else exact_float("skip", skip)
        # A numpy scalar or 0-d array carries its precision as an array does
        # (a float16 alpha is float16 data); a Python number is float64.
        if isinstance(skip, (np.generic, np.ndarray)):
            eps = max(eps, _eps(skip.dtype))
        what = "skip=None (the identity)" if skip is None else f"skip={alpha:g} (alpha * I)"
        if d_in != d_out:
            raise ValueError(
                f"{what} needs d_in == d_out, but W_up has d_in={d_in} and W_down has "
                f"d_out={d_out}; pass skip as a ({d_out}, {d_in}) matrix"
            )
        return alpha * np.eye(d_out), eps
    if isinstance(skip, (bool, np.bool_)):
        raise TypeError("skip must be None, a real number or a (d_out, d_in) array, got a bool")
    a, eps = as_float_array("skip", skip, 2, f"(d_out, d_in) = ({d_out}, {d_in})")
    if a.shape != (d_out, d_in):
        raise ValueError(
            f"skip has shape {a.shape}, expected (d_out, d_in) = ({d_out}, {d_in}) "
            "to match W_up and W_down"
        )
    return a, eps


def _is_real(value: object) -> bool:
    # A predicate rather than isinstance in place: isinstance would narrow
    # the value to numbers.Real, whose stubs lack comparisons with int.
    return isinstance(value, numbers.Real)


def _is_integral(value: object) -> bool:
    return isinstance(value, numbers.Integral)


def check_tol(tol: Any) -> Optional[float]:
    if tol is None:
        return None
    if isinstance(tol, bool) or not _is_real(tol):
        raise TypeError(f"tol must be a real number in (0, 1) or None, got {type(tol).__name__}")
    try:
        value = float(tol)
    except OverflowError:
        raise ValueError(f"tol must lie in (0, 1), got {tol!r}") from None
    if not (0.0 < value < 1.0):
        raise ValueError(f"tol must lie in (0, 1), got {value!r}")
    exact = _exact_value(tol)
    if exact is not None and Fraction(value) > exact:
        # A tolerance float64 cannot hold is rounded down, never up: "within
        # tol" must hold for the caller's tol.
        value = math.nextafter(value, 0.0)
    return value


@overload
def check_limit(name: str, value: Any, integer: Literal[True]) -> Optional[int]: ...
@overload
def check_limit(name: str, value: Any, integer: Literal[False]) -> Optional[float]: ...
def check_limit(name: str, value: Any, integer: bool) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, bool) or not _is_real(value):
        raise TypeError(f"{name} must be a non-negative number or None, got {type(value).__name__}")
    if integer and not _is_integral(value):
        raise TypeError(f"{name} must be an integer or None, got {value!r}")
    try:
        finite = math.isfinite(float(value))
    except OverflowError:  # an int beyond float64
        finite = False
    if not finite or value < 0:
        kind = "integer" if integer else "number"
        raise ValueError(f"{name} must be a finite non-negative {kind}, got {value!r}")
    if integer and value > 2**63 - 1:
        raise ValueError(f"{name} must be below 2**63, got {value!r}")
    return int(value) if integer else float(value)


#: The most worker threads a call may ask for (the core refuses more: a pool
#: of thousands of threads takes tens of seconds to start).
MAX_THREADS = 1024

_RAYON_COUNT = re.compile(r"\+?[0-9]+", re.ASCII)


def _rayon_variable() -> Optional[tuple[str, int]]:
    """The variable and count the core's default pool would obey, as rayon
    reads them: ``RAYON_NUM_THREADS`` when it is a whole number (0: the CPU
    count), else the older ``RAYON_RS_NUM_CPUS`` when it is one above 0;
    None when neither sets a count."""
    for name in ("RAYON_NUM_THREADS", "RAYON_RS_NUM_CPUS"):
        value = os.environ.get(name)
        if value is None or not _RAYON_COUNT.fullmatch(value) or int(value) >= 2**64:
            continue  # rayon ignores what it cannot parse and reads the next
        count = int(value)
        return (name, count) if count else None  # 0: the CPU count
    return None


def _cpu_count() -> int:
    """Logical CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        with contextlib.suppress(OSError):
            return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def default_threads() -> Optional[int]:
    """The thread count to pass for ``threads=None``.

    None (the core's default pool: one thread per logical CPU, or
    ``RAYON_NUM_THREADS``) unless the environment asks the pool for more
    than :data:`MAX_THREADS` threads, the cap on an explicit ``threads``:
    then that variable is not obeyed, a :class:`SkipsearchWarning` names
    it, and the count is the CPUs this process may run on (at most
    :data:`MAX_THREADS`), what rayon takes when no variable is set.
    """
    found = _rayon_variable()
    if found is None or found[1] <= MAX_THREADS:
        return None
    from skipsearch._warnings import SkipsearchWarning

    name, count = found
    cpus = min(_cpu_count(), MAX_THREADS)
    warnings.warn(
        f"{name}={count} is not obeyed: skipsearch runs at most {MAX_THREADS} worker threads "
        f"(as for threads=), so the default pool gets one per CPU, {cpus}; set {name} to "
        f"{MAX_THREADS} or less, or pass threads=",
        SkipsearchWarning,
        stacklevel=3,
    )
    return cpus


def check_threads(threads: Any) -> Optional[int]:
    """``threads``: a whole number from 1 to :data:`MAX_THREADS`, or None
    for the default (:func:`default_threads`)."""
    if threads is None:
        return default_threads()
    if isinstance(threads, bool) or not _is_integral(threads):
        raise TypeError(f"threads must be a positive integer or None, got {threads!r}")
    if not 1 <= threads <= MAX_THREADS:
        raise ValueError(f"threads must be between 1 and {MAX_THREADS}, got {threads}")
    return int(threads)


#: Default of ``find_absorbing_subset``'s and the scan's ``distance_budget``:
#: seconds the exact path may be expected to take per block when
#: ``distance`` is None (about a 3000 x 12000 block on two cores of 2024).
DISTANCE_BUDGET = 30.0


def check_distance_budget(budget: Any) -> Optional[float]:
    """``distance_budget`` must be None or a non-negative number of seconds."""
    if budget is None:
        return None
    if isinstance(budget, (bool, np.bool_)) or not isinstance(budget, numbers.Real):
        raise TypeError(f"distance_budget must be a number of seconds or None, got {budget!r}")
    number: Any = budget  # numbers.Real declares no comparison with int
    try:
        value = float(number)
    except OverflowError:  # an integer beyond float64: no budget at all, or negative
        value = math.inf if number > 0 else -math.inf
    if math.isnan(value) or value < 0:
        raise ValueError(
            f"distance_budget must be a non-negative number of seconds, got {budget!r}"
        )
    return value


def check_distance(distance: Any) -> Optional[bool]:
    """``distance`` must be ``None``, ``True`` or ``False``."""
    if distance is None or isinstance(distance, (bool, np.bool_)):
        return None if distance is None else bool(distance)
    raise TypeError(f"distance must be True, False or None, got {distance!r}")


def check_flag(name: str, value: Any) -> bool:
    """A boolean option such as ``keep_certificate``: True or False only."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be True or False, got {value!r}")


def _available_memory(root: str = "/") -> list[int]:
    """Bytes this process could still allocate, by each limit that can be
    read (``root`` stands for ``/`` in the /proc and cgroup files read)."""
    found: list[int] = []
    try:
        with open(os.path.join(root, "proc/meminfo"), encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    # The process's own control groups (a container, a Slurm job, a systemd
    # unit) and every group above them: the least limit less usage.
    cgroup = cgroup_memory_available(root)
    if cgroup is not None:
        found.append(cgroup)
    # `ulimit -v`: the address space left under the soft limit.
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            with open("/proc/self/statm", encoding="ascii") as f:
                used = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            found.append(max(0, soft - used))
    except (ImportError, OSError, ValueError, AttributeError):
        pass
    if not found:
        with contextlib.suppress(AttributeError, ValueError, OSError):
            found.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    return found


def default_memory_limit() -> int:
    """Half the memory available now: the least of ``MemAvailable``, a
    container's cgroup limit less its usage, and the address space left
    under ``ulimit -v``; else half the physical memory; else 4 GiB."""
    found = _available_memory()
    return min(found) // 2 if found else 4 << 30


def check_memory_limit(memory_limit: Any) -> int:
    """``memory_limit`` in bytes: a positive real number (rounded down to
    whole bytes, at most ``2**127``), or ``None`` for the default."""
    if memory_limit is None:
        return default_memory_limit()
    if isinstance(memory_limit, (bool, np.bool_)) or not _is_real(memory_limit):
        raise TypeError(
            f"memory_limit must be a number of bytes (e.g. 8e9) or None, got {memory_limit!r}"
        )
    if not memory_limit >= 1:
        raise ValueError(f"memory_limit must be at least 1 byte, got {memory_limit!r}")
    if memory_limit == math.inf:
        return 2**127
    return min(int(memory_limit), 2**127)


class Weights:
    """Validated float64 copies of one block's arrays."""

    def __init__(
        self,
        W_up: npt.ArrayLike,
        W_down: npt.ArrayLike,
        b_up: Optional[npt.ArrayLike],
        b_down: Optional[npt.ArrayLike],
        W_gate: Optional[npt.ArrayLike],
        skip: Optional[npt.ArrayLike],
    ) -> None:
        self.W_up, e_up = as_float_array("W_up", W_up, 2, "(m, d_in)")
        m, d_in = self.W_up.shape
        self.W_down, e_down = as_float_array("W_down", W_down, 2, f"(d_out, {m})")
        d_out = self.W_down.shape[0]
        if self.W_down.shape[1] != m:
            raise ValueError(
                f"W_down has shape {self.W_down.shape} but W_up has shape {self.W_up.shape}: "
                f"W_down must be (d_out, m) with m = {m} ({SHAPE_HINT})"
            )
        if d_in == 0 or d_out == 0:
            raise ValueError(
                f"W_up has shape {self.W_up.shape} and W_down {self.W_down.shape}: "
                "d_in and d_out must be at least 1"
            )
        # The flip condition c W_down[:, S] W_up[S, :] = -A involves W_up,
        # W_down and the skip only: their precision sets the default
        # tolerance. The biases and W_gate never enter it, so a float16 b_down
        # must not loosen it.
        flip_eps = [e_up, e_down]
        self.b_up: Optional[FloatArray] = None
        self.b_down: Optional[FloatArray] = None
        self.W_gate: Optional[FloatArray] = None
        if b_up is not None:
            self.b_up, _ = as_float_array("b_up", b_up, 1, f"({m},)")
            if self.b_up.shape != (m,):
                raise ValueError(f"b_up has shape {self.b_up.shape}, expected ({m},)")
        if b_down is not None:
            self.b_down, _ = as_float_array("b_down", b_down, 1, f"({d_out},)")
            if self.b_down.shape != (d_out,):
                raise ValueError(f"b_down has shape {self.b_down.shape}, expected ({d_out},)")
        if W_gate is not None:
            self.W_gate, _ = as_float_array("W_gate", W_gate, 2, f"({m}, {d_in})")
            if self.W_gate.shape != (m, d_in):
                raise ValueError(
                    f"W_gate has shape {self.W_gate.shape}, expected ({m}, {d_in}) like W_up"
                )
        self.A, e = resolve_skip(skip, d_out, d_in)
        flip_eps.append(e)
        self.m, self.d_in, self.d_out = m, d_in, d_out
        #: epsilon of the coarsest of W_up, W_down and the skip (the data of
        #: the flip condition)
        self.eps = max(flip_eps)

    def default_tol(self) -> float:
        """``sqrt(eps)`` of the coarsest precision among ``W_up``, ``W_down``
        and the skip: 1.5e-8 for float64, 3.5e-4 for float32, 3.1e-2 for
        float16. The biases and ``W_gate`` do not enter the flip condition and
        do not count."""
        return math.sqrt(self.eps)

    @property
    def has_inner_bias(self) -> bool:
        """Whether the block's form has inner biases: ``b_up`` was given,
        even all zeros.

        The comparison class of the absorption question then includes
        skip-free blocks with inner biases, so the arguments that need a
        block without them (degree, linearization) do not apply. ``b_up=None``
        is a block without inner biases."""
        return self.b_up is not None
