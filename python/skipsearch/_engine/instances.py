"""Files of exact 0/1 subset-sum instances, ``A s = b`` with ``s`` in
``{0, 1}^n``, and of their solutions.

:func:`read_instance` reads three formats, chosen by the file's suffix:

``.dat``
    QOBLIB's market-split format (``ZIB-AOPT/QOBLIB``, commit ``de698d4``:
    ``01-marketsplit/instances/README.md`` and the checker
    ``01-marketsplit/check/src/bin/check_marketsplit.rs``). Blank lines, and
    lines whose first field starts with ``#``, are skipped; the first other
    line holds the counts ``k n``; each of the next ``k`` lines holds ``n + 1``
    integers: a row of ``A``, then its entry of ``b``. Fields are separated by
    whitespace or commas, as the checker allows.
``.npz``
    A numpy archive with integer arrays ``A``, shape (k, n), and ``b``, shape
    (k,): ``np.savez(path, A=A, b=b)``. Other arrays are ignored; pickled
    objects are never loaded.
``.json``
    An object ``{"A": [[...], ...], "b": [...]}`` of integers; other keys are
    ignored.

In every format each entry is an integer (``3.0``, ``1e3`` and ``true`` are
not), and each row keeps the sum of ``|A_ij|`` and ``|b_i|`` below 2**62, the
bound of the exact int64 arithmetic of :func:`skipsearch.subset_sum`.
Anything else raises :class:`InstanceError`, one line naming the file and
what is wrong in it.

:func:`format_solution` writes a solution as QOBLIB's solution files are
written (``01-marketsplit/instances/instance_gen_set/*.opt.sol`` at the same
commit): ``# Solution for NAME``, ``# Objective value = 0``, then one line
``x#j v`` per variable, ``j`` from 1 to ``n``. :func:`read_solution` reads it
back, as QOBLIB's checker reads that format.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import stat
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable, Union

import numpy as np

from skipsearch._types import IntArray, UInt8Array

__all__ = [
    "ENGINE_BOUND",
    "SUFFIXES",
    "InstanceError",
    "format_solution",
    "read_instance",
    "read_solution",
]

PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]

#: The suffixes :func:`read_instance` reads, in the order its messages name them.
SUFFIXES = (".dat", ".npz", ".json")

#: Every row's sum of ``|A_ij|`` and ``|b_i|`` must stay below this: the
#: bound of :func:`skipsearch.subset_sum`'s exact int64 arithmetic
#: (``_INT_BOUND`` there).
ENGINE_BOUND = 2**62

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
#: An integer as a ``.dat`` field: ASCII digits with an optional sign (no
#: ``1_000``, no other scripts' digits, which ``int`` would take).
_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
#: Digits beyond which a field cannot be an int64 (not converted: Python
#: refuses strings of over 4300 digits).
_MAX_DIGITS = 20
#: How a zip file (an .npz archive) and an .npy array begin.
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
_NPY_MAGIC = b"\x93NUMPY"
#: A variable's line in a solution file, as QOBLIB's checker matches it.
_SOLUTION_LINE = re.compile(r"x#(\d+)\s+([01])", re.ASCII)


class InstanceError(ValueError):
    """An instance (or solution) file that cannot be read. The message is
    one line: the file, where in it, and what is wrong."""


def read_instance(path: PathLike) -> tuple[IntArray, IntArray]:
    """Read an exact subset-sum instance ``A s = b`` from a file.

    Parameters
    ----------
    path : str, bytes or os.PathLike
        A ``.dat`` (QOBLIB), ``.npz`` or ``.json`` file; the formats are
        described at the top of this module.

    Returns
    -------
    A : ndarray of int64, shape (k, n)
        The coefficients, ``k >= 1`` rows and ``n >= 1`` columns.
    b : ndarray of int64, shape (k,)
        The right-hand side.

    Raises
    ------
    InstanceError
        A ``ValueError``: the file is missing, a directory, unreadable or
        empty; its suffix is none of the three; the counts do not match the
        rows (too few or too many rows, or entries in a row); a right-hand
        side is missing; an entry is not an integer, does not fit in int64,
        or makes its row's sum of ``|A|`` and ``|b|`` reach 2**62; an
        ``.npz`` or ``.json`` file is malformed (not an archive or not JSON,
        ``A`` or ``b`` missing, wrong shapes, non-integer dtypes).
    TypeError
        ``path`` is not a path.
    """
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    p = Path(os.fsdecode(path))
    _check_file(p)
    suffix = p.suffix.lower()
    if suffix not in SUFFIXES:
        found = f"suffix {p.suffix!r}" if p.suffix else "no suffix"
        raise InstanceError(
            f"{p}: {found}; expected an instance file ending in .dat (QOBLIB), .npz or .json"
        )
    data = _read_bytes(p)
    if suffix == ".npz":
        rows, rhs = _parse_npz(p, data)
        return _to_arrays(p, rows, rhs, lambda i: f"row {i + 1}")
    text = _decode(p, data)
    if suffix == ".json":
        rows, rhs = _parse_json(p, text)
        return _to_arrays(p, rows, rhs, lambda i: f"row {i + 1}")
    rows, rhs, lines = _parse_dat(p, text)
    return _to_arrays(p, rows, rhs, lambda i: f"line {lines[i]} (row {i + 1})")


def _check_file(p: Path) -> None:
    """Raise :class:`InstanceError` when ``p`` does not exist or is a
    directory (before its suffix is looked at)."""
    try:
        is_dir = stat.S_ISDIR(os.stat(p).st_mode)
    except FileNotFoundError:
        raise InstanceError(f"{p}: no such file") from None
    except OSError:
        return  # opening it says why
    if is_dir:
        raise InstanceError(f"{p}: is a directory, not an instance file")


def _count(n: int, noun: str) -> str:
    """``"1 row"``, ``"2 rows"``, ``"3 entries"``."""
    if n == 1:
        return f"1 {noun}"
    return f"{n} {noun[:-1]}ies" if noun.endswith("y") else f"{n} {noun}s"


def _read_bytes(p: Path) -> bytes:
    """The bytes of ``p``, or an :class:`InstanceError` saying why not."""
    try:
        with open(p, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise InstanceError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise InstanceError(f"{p}: is a directory, not an instance file") from None
    except PermissionError:
        raise InstanceError(f"{p}: cannot read it: permission denied") from None
    except OSError as e:
        raise InstanceError(f"{p}: cannot read it: {e.strerror or e}") from None
    if not data:
        raise InstanceError(f"{p}: the file is empty")
    return data


def _decode(p: Path, data: bytes) -> str:
    """``data`` as UTF-8 text (a byte-order mark is dropped)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InstanceError(
            f"{p}: not a text file: byte 0x{data[e.start]:02x} at offset {e.start} is not UTF-8"
        ) from None


def _short(text: str, limit: int = 24) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _field_int(p: Path, field: str, where: str) -> int:
    """A ``.dat`` field as an integer (one beyond int64 stays a Python int,
    or is refused here when it has too many digits to be converted)."""
    if not _INTEGER.fullmatch(field):
        raise InstanceError(f"{p}: {where}: expected an integer, got {_short(field)!r}")
    if len(field.lstrip("+-")) > _MAX_DIGITS:
        raise InstanceError(f"{p}: {where}: {_short(field)} does not fit in int64")
    return int(field)


def _records(text: str) -> list[tuple[int, list[str]]]:
    """The lines of a ``.dat`` file that hold data: (line number, fields),
    without blank lines and comments, commas read as spaces."""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.replace(",", " ").split()
        if fields and not fields[0].startswith("#"):
            out.append((number, fields))
    return out


def _dat_counts(p: Path, records: list[tuple[int, list[str]]]) -> tuple[int, int]:
    """``k`` and ``n`` from the first data line of a ``.dat`` file."""
    if not records:
        raise InstanceError(
            f"{p}: no data, only comments and blank lines; expected the counts 'k n', then k rows"
        )
    number, fields = records[0]
    where = f"line {number}"
    if len(fields) != 2:
        raise InstanceError(
            f"{p}: {where}: expected the counts 'k n' (rows, columns), got {len(fields)} fields"
        )
    k, n = (_field_int(p, f, f"{where}: the counts 'k n'") for f in fields)
    if k < 1 or n < 1:
        raise InstanceError(f"{p}: {where}: the counts 'k n' must be positive, got {k} {n}")
    return k, n


def _parse_dat(p: Path, text: str) -> tuple[list[list[int]], list[int], list[int]]:
    """Rows of ``A``, entries of ``b`` and the line of each row, from QOBLIB's
    ``.dat`` format."""
    records = _records(text)
    k, n = _dat_counts(p, records)
    rows: list[list[int]] = []
    rhs: list[int] = []
    lines: list[int] = []
    for i, (number, fields) in enumerate(records[1:]):
        where = f"line {number}"
        if i >= k:
            raise InstanceError(f"{p}: {where}: a row beyond the {k} that 'k n' declares")
        # Each field read first, so that a word among them (a trailing
        # comment, say) is named rather than counted as a number.
        values = [
            _field_int(p, f, f"{where} (row {i + 1}), entry {j + 1}") for j, f in enumerate(fields)
        ]
        if len(fields) == n:
            raise InstanceError(
                f"{p}: {where}: row {i + 1} has its {n} coefficients but no right-hand side"
            )
        if len(fields) != n + 1:
            raise InstanceError(
                f"{p}: {where}: row {i + 1} has {len(fields)} numbers, expected {n + 1} "
                f"({n} coefficients, then the right-hand side)"
            )
        rows.append(values[:n])
        rhs.append(values[n])
        lines.append(number)
    if len(rows) < k:
        raise InstanceError(
            f"{p}: {_count(len(rows), 'row')} after the counts 'k n' (line {records[0][0]}), "
            f"expected {k}"
        )
    return rows, rhs, lines


def _json_kind(value: Any) -> str:
    """How a JSON value is named in messages."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return _short(json.dumps(value))
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def _json_ints(p: Path, values: Any, what: str) -> list[int]:
    """The integers of the JSON list ``values`` (``what`` names it)."""
    if not isinstance(values, list):
        raise InstanceError(f"{p}: {what} must be a list of integers, got {_json_kind(values)}")
    for j, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, int):
            raise InstanceError(
                f"{p}: {what}, entry {j + 1}: expected an integer, got {_json_kind(v)}"
            )
    return values


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's members, refusing a key given twice (``json`` would
    keep the last silently)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} is given twice")
        out[key] = value
    return out


def _parse_json(p: Path, text: str) -> tuple[list[list[int]], list[int]]:
    """Rows of ``A`` and entries of ``b`` from ``{"A": [[...]], "b": [...]}``."""
    try:
        doc = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as e:
        raise InstanceError(
            f"{p}: not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})"
        ) from None
    except RecursionError:
        raise InstanceError(f"{p}: not valid JSON here: nested too deeply") from None
    except ValueError as e:  # an integer of over 4300 digits
        raise InstanceError(f"{p}: not valid JSON here: {e}") from None
    if not isinstance(doc, dict):
        raise InstanceError(
            f'{p}: expected a JSON object {{"A": [[...]], "b": [...]}}, got {_json_kind(doc)}'
        )
    for key, what in (("A", "the k x n coefficients"), ("b", "the right-hand side")):
        if key not in doc:
            raise InstanceError(f'{p}: no "{key}" ({what}) in the JSON object')
    A = doc["A"]
    if not isinstance(A, list) or not A:
        got = "an empty list" if A == [] else _json_kind(A)
        raise InstanceError(f'{p}: "A" must be a non-empty list of rows, got {got}')
    rows = [_json_ints(p, row, f'"A" row {i + 1}') for i, row in enumerate(A)]
    n = len(rows[0])
    if n == 0:
        raise InstanceError(f'{p}: "A" row 1 is empty: each row needs at least one coefficient')
    for i, row in enumerate(rows):
        if len(row) != n:
            raise InstanceError(
                f'{p}: "A" row {i + 1} has {_count(len(row), "entry")}, row 1 has {n}'
            )
    rhs = _json_ints(p, doc["b"], '"b"')
    if len(rhs) != len(rows):
        raise InstanceError(
            f'{p}: "b" has {_count(len(rhs), "entry")}, "A" has {_count(len(rows), "row")}'
        )
    return rows, rhs


def _npz_array(p: Path, archive: Any, name: str, ndim: int) -> Any:
    """The integer array ``name`` of an open ``.npz`` archive, of ``ndim``
    dimensions."""
    if name not in archive.files:
        found = ", ".join(archive.files) or "none"
        raise InstanceError(f"{p}: no array {name!r} in the archive (arrays: {found})")
    try:
        arr = archive[name]
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, RuntimeError) as e:
        raise InstanceError(f"{p}: array {name!r} cannot be read: {e}") from None
    if arr.dtype.kind not in "iu":
        raise InstanceError(
            f"{p}: array {name!r} must hold integers, got dtype {arr.dtype} "
            "(convert whole numbers with .astype(np.int64))"
        )
    if arr.ndim != ndim:
        shape = "(k, n)" if ndim == 2 else "(k,)"
        raise InstanceError(f"{p}: array {name!r} must have shape {shape}, got {arr.shape}")
    return arr


def _parse_npz(p: Path, data: bytes) -> tuple[list[list[int]], list[int]]:
    """Rows of ``A`` and entries of ``b`` from a numpy archive."""
    if data.startswith(_NPY_MAGIC):
        raise InstanceError(f"{p}: a single .npy array, not an .npz archive with A and b")
    if not data.startswith(_ZIP_MAGIC):
        raise InstanceError(
            f"{p}: not an .npz archive (a zip file of .npy arrays, as np.savez writes it)"
        )
    try:
        archive = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
        raise InstanceError(f"{p}: not a valid .npz archive: {e}") from None
    if not hasattr(archive, "files"):
        raise InstanceError(f"{p}: not an .npz archive of arrays A and b")
    with archive:
        A = _npz_array(p, archive, "A", 2)
        b = _npz_array(p, archive, "b", 1)
    if A.shape[0] < 1 or A.shape[1] < 1:
        raise InstanceError(f"{p}: array 'A' must have at least one row and column, got {A.shape}")
    if b.shape[0] != A.shape[0]:
        raise InstanceError(
            f"{p}: array 'b' has {_count(b.shape[0], 'entry')}, 'A' has {_count(A.shape[0], 'row')}"
        )
    return A.tolist(), b.tolist()


def _to_arrays(
    p: Path, rows: Sequence[Sequence[int]], rhs: Sequence[int], where: Callable[[int], str]
) -> tuple[IntArray, IntArray]:
    """``A`` and ``b`` as int64 arrays, once every entry is seen to fit
    int64 and every row's sum of ``|A|`` and ``|b|`` to stay below
    :data:`ENGINE_BOUND` (``where(i)`` names row ``i`` in messages)."""
    for i, (row, b_i) in enumerate(zip(rows, rhs)):
        for j, a in enumerate(row):
            if not _INT64_MIN <= a <= _INT64_MAX:
                raise InstanceError(
                    f"{p}: {where(i)}, entry {j + 1}: {_short(str(a))} does not fit in int64"
                )
        if not _INT64_MIN <= b_i <= _INT64_MAX:
            raise InstanceError(
                f"{p}: {where(i)}: the right-hand side {_short(str(b_i))} does not fit in int64"
            )
        total = abs(b_i) + sum(abs(a) for a in row)
        if total >= ENGINE_BOUND:
            raise InstanceError(
                f"{p}: {where(i)}: the sum of |A| and |b| over the row is about "
                f"2**{math.log2(total):.1f}; exact arithmetic needs it below 2**62 (divide the "
                "row by a common factor)"
            )
    return np.array(rows, dtype=np.int64), np.array(rhs, dtype=np.int64)


def format_solution(name: str, solution: Sequence[int] | UInt8Array) -> str:
    """A solution as QOBLIB's solution files are written.

    Parameters
    ----------
    name : str
        The instance's name, for the first comment line (QOBLIB writes its
        path without the suffix); line breaks in it are written as spaces.
    solution : sequence of int or ndarray of uint8, shape (n,)
        ``s`` in ``{0, 1}^n``.

    Returns
    -------
    str
        ``# Solution for NAME``, ``# Objective value = 0``, then ``x#j v``
        for ``j`` from 1 to ``n``, each line ended by ``\\n``: the format of
        ``01-marketsplit/instances/instance_gen_set/*.opt.sol`` in
        ``ZIB-AOPT/QOBLIB`` (commit ``de698d4``), which its checker reads.

    Raises
    ------
    ValueError
        An entry is neither 0 nor 1.
    """
    values = [int(v) for v in solution]
    if any(v not in (0, 1) for v in values):
        raise ValueError("solution entries must be 0 or 1")
    title = " ".join(name.split())
    lines = [f"# Solution for {title}", "# Objective value = 0"]
    lines += [f"x#{j} {v}" for j, v in enumerate(values, start=1)]
    return "\n".join(lines) + "\n"


def read_solution(path: PathLike, n: int) -> UInt8Array:
    """Read a solution in QOBLIB's named-variable format (what
    :func:`format_solution` writes).

    As QOBLIB's checker (``01-marketsplit/check/src/bin/check_marketsplit.rs``)
    reads it: every ``x#j v`` (``v`` 0 or 1) sets variable ``j`` (1-based),
    other lines are ignored, and variables not named are 0. Unlike the
    checker, an index named twice is an error.

    Parameters
    ----------
    path : str, bytes or os.PathLike
        The solution file.
    n : int
        The number of variables.

    Returns
    -------
    ndarray of uint8, shape (n,)

    Raises
    ------
    InstanceError
        The file cannot be read, names no variable, names an index outside
        ``1..n``, or one index twice.
    """
    p = Path(os.fsdecode(path))
    text = _decode(p, _read_bytes(p))
    out = np.zeros(n, dtype=np.uint8)
    seen: set[int] = set()
    for match in _SOLUTION_LINE.finditer(text):
        j = int(match.group(1))
        if not 1 <= j <= n or j in seen:
            why = "named twice" if j in seen else f"outside 1..{n}"
            raise InstanceError(f"{p}: variable x#{_short(match.group(1))} is {why}")
        seen.add(j)
        out[j - 1] = int(match.group(2))
    if not seen:
        raise InstanceError(f"{p}: no variable lines 'x#j v' in the file")
    return out
