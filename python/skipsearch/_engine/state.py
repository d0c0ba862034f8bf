"""The state file of a resumable search: what it records, how it is
written (atomically, with a checksum) and checked when read back.

One JSON document per file. Its header names the format, the skipsearch
version, the instance (a SHA-256 of ``A`` and ``b``) and the search's
settings; a file whose header differs is refused (:class:`CheckpointMismatch`)
rather than resumed, since its subtrees would name another tree. Each
lattice component searched keeps its own record (:class:`ComponentState`),
keyed by a digest of the component's equations: the digest of the basis
whose tree the subtrees belong to, the subtrees still pending, how many
ended, the restarts done, and the nodes and seconds spent. The file is
written to a temporary file in the same folder, flushed to disk, then
renamed over the old one, so a crash at any point leaves the old state or
the new, never a mix; a checksum over the body catches a file damaged
after it was written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

import numpy as np
import numpy.typing as npt

from skipsearch._core import __version__

#: The format of the state file; a file of another format is refused.
FORMAT = "skipsearch-subset-sum-state/1"


class CheckpointMismatch(ValueError):
    """A state file that belongs to another instance, another skipsearch
    version or other search settings, or that is damaged; the message names
    the difference and the file."""


def digest(*arrays: npt.ArrayLike) -> str:
    """SHA-256 of the arrays' shapes and int64 contents, as hex."""
    h = hashlib.sha256()
    for a in arrays:
        arr = np.ascontiguousarray(np.asarray(a, dtype=np.int64))
        h.update(repr(arr.shape).encode())
        h.update(arr.tobytes())
    return h.hexdigest()


@dataclass
class ComponentState:
    """The search of one lattice component so far.

    Attributes
    ----------
    basis : str
        Digest of the reduced basis whose depth-first tree ``pending``
        cuts; on resume the basis is reduced again and must match it.
    pending : list of list of int
        Prefixes of the subtrees not yet searched to their end (those a
        task was searching when the state was written included). Empty
        with ``finished > 0`` and no solution: the tree is exhausted.
    finished : int
        Subtrees searched to their end.
    restarts : list of int
        Indices of the limited-discrepancy restarts that ran to their cap.
    nodes : int
        Nodes searched so far, over every run.
    seconds : float
        Wall time of every run so far, in seconds.
    solution : list of int or None
        The kernel vector of the component's solution, once found (decoded
        and checked ``A x = b`` again when read back).
    infeasible : bool
        Whether the search proved that there is none.
    """

    basis: str
    pending: list[list[int]]
    finished: int = 0
    restarts: list[int] = field(default_factory=list)
    nodes: int = 0
    seconds: float = 0.0
    solution: Optional[list[int]] = None
    infeasible: bool = False


@dataclass
class SearchState:
    """The whole state file: its header and one record per component."""

    instance: str
    settings: dict[str, Any]
    components: dict[str, ComponentState] = field(default_factory=dict)
    format: str = FORMAT
    version: str = __version__


def _checksum(body: dict[str, Any]) -> str:
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def save(path: str, state: SearchState) -> None:
    """Write ``state`` to ``path`` atomically: a temporary file in the same
    folder, flushed and synced, then renamed over ``path``."""
    body = asdict(state)
    document = {"body": body, "sha256": _checksum(body)}
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".skipsearch-state-", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(document, f, separators=(",", ":"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    try:
        dir_fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - a folder that cannot be opened
        return
    try:
        os.fsync(dir_fd)
    except OSError:  # pragma: no cover - file systems without directory sync
        pass
    finally:
        os.close(dir_fd)


def load(path: str, instance: str, settings: dict[str, Any]) -> Optional[SearchState]:
    """The state in ``path``, or None when there is no file there.

    Raises
    ------
    CheckpointMismatch
        The file is not a state file, is damaged (its checksum fails), or
        was written for another instance, skipsearch version or settings.
    """
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise CheckpointMismatch(f"checkpoint {path!r} is a directory, not a state file") from None
    try:
        # Bytes that are not UTF-8 raise UnicodeDecodeError, a ValueError.
        document = json.loads(raw.decode("utf-8"))
        body = document["body"]
        ok = document["sha256"] == _checksum(body)
    except (ValueError, KeyError, TypeError):
        raise CheckpointMismatch(
            f"checkpoint {path!r} is not a skipsearch state file (unreadable JSON)"
        ) from None
    if not ok:
        raise CheckpointMismatch(f"checkpoint {path!r} is damaged: its checksum does not match")
    _check_header(path, body, instance, settings)
    try:
        components = {
            key: ComponentState(**record) for key, record in body.get("components", {}).items()
        }
    except TypeError:
        raise CheckpointMismatch(
            f"checkpoint {path!r} has component records of another shape; start a new state file"
        ) from None
    return SearchState(
        instance=instance, settings=settings, components=components, version=body["version"]
    )


def _check_header(path: str, body: dict[str, Any], instance: str, settings: dict[str, Any]) -> None:
    """Raise :class:`CheckpointMismatch` naming the first header field of
    ``body`` that differs from this search's."""
    if body.get("format") != FORMAT:
        raise CheckpointMismatch(
            f"checkpoint {path!r} has format {body.get('format')!r}, expected {FORMAT!r}"
        )
    if body.get("version") != __version__:
        raise CheckpointMismatch(
            f"checkpoint {path!r} was written by skipsearch {body.get('version')}, this is "
            f"{__version__}: start a new state file"
        )
    if body.get("instance") != instance:
        raise CheckpointMismatch(
            f"checkpoint {path!r} belongs to another instance (A and b differ): give a new path "
            "or the instance it was written for"
        )
    theirs = body.get("settings", {})
    for name in sorted(set(theirs) | set(settings)):
        if theirs.get(name) != settings.get(name):
            raise CheckpointMismatch(
                f"checkpoint {path!r} was written with {name}={theirs.get(name)!r}, this search "
                f"has {name}={settings.get(name)!r}"
            )
