"""The search's options, validated once: :class:`SearchOptions`.

Every entry point (``find_absorbing_subset``, its baseline twin,
``decide_stack``, ``scan`` and the CLI) takes the same options, as keyword
arguments or as one ``options=SearchOptions(...)``; inside, one frozen
object travels through every layer instead of seven loose arguments.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np

from skipsearch._types import DistanceMode
from skipsearch._validation import (
    DISTANCE_BUDGET,
    check_distance_budget,
    check_flag,
    check_limit,
    check_memory_limit,
    check_threads,
    check_tol,
)

__all__ = ["DistanceMode", "SearchOptions"]


_DISTANCE_ALIASES: dict[Any, DistanceMode] = {None: "auto", True: "exact", False: "bound"}


@dataclass(frozen=True)
class SearchOptions:
    """Options of one decision (or of every block of a stack or a scan).

    Parameters
    ----------
    tol : float, optional
        Relative tolerance of the flip condition, in (0, 1). Default: the
        square root of the machine epsilon of the coarsest input dtype.
    time_limit : float, optional
        Seconds for the whole call (a limit is a status, not an error).
    node_limit : int, optional
        Branch-and-bound or enumeration nodes.
    threads : int, optional
        Worker threads (default: one per core).
    distance : {"auto", "exact", "bound"}, or None, True, False
        ``"auto"``: the exact least-squares distance when its estimated time
        fits ``distance_budget``, else the verdict from the cheap
        certificates first; ``"exact"``: always; ``"bound"``: the verdict
        and the best proven lower bound only. ``None``, ``True`` and
        ``False`` are kept as aliases of the three.
    distance_budget : float or None, default 30.0
        Seconds the exact path may be expected to take with ``"auto"``.
    memory_limit : float, optional
        Bytes the search's main arrays may take (default: a share of the
        available memory).
    bracket : bool, optional
        Compute the distance bracket and the best flip set (None: when cheap).
    keep_certificate : bool, default True
        Hand back the certificate ``Y`` (False lets the exact path bound it
        from the Gram matrix without forming it).

    Raises
    ------
    ValueError
        An option out of range (each message names the option).
    TypeError
        An option of the wrong type.
    """

    tol: Optional[float] = None
    time_limit: Optional[float] = None
    node_limit: Optional[int] = None
    threads: Optional[int] = None
    distance: Union[DistanceMode, bool, None] = "auto"
    distance_budget: Optional[float] = DISTANCE_BUDGET
    memory_limit: Optional[float] = None
    bracket: Optional[bool] = None
    keep_certificate: bool = True

    def __post_init__(self) -> None:
        checked = {
            "tol": check_tol(self.tol),
            "time_limit": check_limit("time_limit", self.time_limit, integer=False),
            "node_limit": check_limit("node_limit", self.node_limit, integer=True),
            "threads": check_threads(self.threads),
            "distance": _check_distance_mode(self.distance),
            "distance_budget": check_distance_budget(self.distance_budget),
            # None stays None: the default is the available memory where
            # the search runs (a scan's executor may ship it elsewhere).
            "memory_limit": (
                None if self.memory_limit is None else check_memory_limit(self.memory_limit)
            ),
            "bracket": _check_bracket(self.bracket),
            "keep_certificate": check_flag("keep_certificate", self.keep_certificate),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @property
    def memory_bytes(self) -> int:
        """``memory_limit``, or the default for this machine now."""
        return check_memory_limit(self.memory_limit)

    @property
    def exact_distance(self) -> Optional[bool]:
        """``distance`` as the core reads it: None, True or False."""
        return {"auto": None, "exact": True, "bound": False}[str(self.distance)]

    def replace(self, **changes: Any) -> SearchOptions:
        """A copy with ``changes``, validated again."""
        return dataclasses.replace(self, **changes)


def _check_distance_mode(distance: Any) -> DistanceMode:
    if isinstance(distance, (bool, np.bool_)) or distance is None:
        return _DISTANCE_ALIASES[None if distance is None else bool(distance)]
    if isinstance(distance, str) and distance in ("auto", "exact", "bound"):
        return distance  # type: ignore[return-value]
    raise TypeError(
        'distance must be True, False or None, or one of "auto", "exact" and "bound"; '
        f"got {distance!r}"
    )


def _check_bracket(bracket: Any) -> Optional[bool]:
    if bracket is None or isinstance(bracket, (bool, np.bool_)):
        return None if bracket is None else bool(bracket)
    raise TypeError(f"bracket must be True, False or None, got {bracket!r}")


#: The keyword arguments the entry points take besides ``options``.
OPTION_NAMES = tuple(f.name for f in dataclasses.fields(SearchOptions))


def merged(
    options: Optional[SearchOptions],
    aliases: Optional[dict[str, str]] = None,
    **keywords: Any,
) -> SearchOptions:
    """``options``, or an entry point's keyword arguments, as one validated
    :class:`SearchOptions`. A keyword at its default (``distance=None`` is
    ``"auto"``) counts as not given; giving both ``options`` and another
    value is refused, since one would silently win over the other.
    ``aliases`` maps a field to the name the entry point's caller used for
    it (``scan``'s ``keep_certificates``), for the message.

    Raises
    ------
    TypeError
        ``options`` is not a SearchOptions, or it comes with keywords.
    """
    loose = SearchOptions(**keywords)
    if options is None:
        return loose
    if not isinstance(options, SearchOptions):
        raise TypeError(f"options must be a skipsearch.SearchOptions, got {type(options).__name__}")
    default = SearchOptions()
    names = aliases or {}
    given = [
        names.get(name, name) for name in keywords if getattr(loose, name) != getattr(default, name)
    ]
    if given:
        raise TypeError(
            f"pass either options=SearchOptions(...) or {', '.join(sorted(given))}, not both"
        )
    return options
