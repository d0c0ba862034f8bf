"""A scan as one table: :class:`ScanReports`, the list :func:`skipsearch.scan`
returns, and the conversions of reports or of a ``skipsearch scan --json``
document to a pandas or polars DataFrame.

Each row is one block, with the keys of :meth:`BlockReport.to_dict` (the
blocks of the JSON document) as columns, in the same order, so that the
scan of a model zoo or of a checkpoint series is one table to filter, group
and plot. Columns are typed from :class:`skipsearch.BlockReportDict`, not
from the values, so that every scan gives the same dtypes (and frames
concatenate): integers stay integers (``Int64`` in pandas where the key can
be null, such as ``step``), floats are float64, a missing value (JSON
``null``, Python None) is null (NaN in pandas' float columns), and the flip
set and the tied blocks are lists. pandas and polars are imported only when
a conversion runs (extras ``skipsearch[pandas]`` and ``skipsearch[polars]``).
"""

from __future__ import annotations

import json
import os
import sys
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, SupportsIndex, Union, overload

from skipsearch._extras import install_hint
from skipsearch._scan.report import BlockReport
from skipsearch._types import BlockReportDict

if TYPE_CHECKING:  # pragma: no cover
    # Optional extras: pandas ships no types of its own (pandas-stubs does).
    import pandas  # type: ignore[import-untyped,import-not-found,unused-ignore]
    import polars  # type: ignore[import-not-found,unused-ignore]

__all__ = [
    "ScanReports",
    "document_rows",
    "document_to_pandas",
    "document_to_polars",
    "reports_to_pandas",
    "reports_to_polars",
]

#: What a column holds: its values' type, and whether it can be null.
_Kind = Literal["str", "int", "float", "bool", "list[int]", "list[str]", "list[float]", "any"]

#: A scan's ``--json`` document, or the path of a file that holds one.
Document = Union[Mapping[str, Any], str, "os.PathLike[str]"]


def _kind(hint: Any) -> tuple[_Kind, bool]:
    """The column kind of one ``BlockReportDict`` annotation, and whether
    None is allowed."""
    nullable = False
    origin = typing.get_origin(hint)
    if origin is Union or (sys.version_info >= (3, 10) and origin is types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(hint))
        if len(args) != 1:
            return "any", nullable
        hint = args[0]
        origin = typing.get_origin(hint)
    if origin is Literal:
        values = typing.get_args(hint)
        if all(isinstance(v, str) for v in values):
            return "str", nullable
        return "any", nullable
    if origin is list:
        (item,) = typing.get_args(hint) or (Any,)
        if item is int:
            return "list[int]", nullable
        if item is str:
            return "list[str]", nullable
        if item is float:
            return "list[float]", nullable
        return "any", nullable
    simple: dict[Any, _Kind] = {str: "str", int: "int", float: "float", bool: "bool"}
    return simple.get(hint, "any"), nullable


def _schema() -> dict[str, tuple[_Kind, bool]]:
    """Every key of ``BlockReportDict``, in its order, with its column kind."""
    hints = typing.get_type_hints(BlockReportDict)
    return {key: _kind(hint) for key, hint in hints.items()}


def _columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The column order: the rows' keys in their order (those of the first
    row, then any other row's new keys), or the schema's keys without rows."""
    if not rows:
        return list(_schema())
    names = dict.fromkeys(rows[0])
    for row in rows[1:]:
        names.update(dict.fromkeys(row))
    return list(names)


def _check_rows(rows: Any) -> list[Mapping[str, Any]]:
    if isinstance(rows, (str, bytes, Mapping)) or not isinstance(rows, Iterable):
        raise TypeError(f"expected a sequence of BlockReport, got {type(rows).__name__}")
    out: list[Mapping[str, Any]] = []
    for i, r in enumerate(rows):
        if isinstance(r, BlockReport):
            out.append(r.to_dict())
        elif isinstance(r, Mapping):
            out.append(r)
        else:
            raise TypeError(
                f"expected a sequence of BlockReport (or of their to_dict() rows), got "
                f"{type(r).__name__} at index {i}"
            )
    return out


def _missing(extra: str, error: ImportError) -> ImportError:
    return ImportError(
        f"{extra} is not installed; install it with: {install_hint(extra, extra)} ({error})"
    )


def _import_pandas() -> Any:
    try:
        import pandas
    except ImportError as e:
        raise _missing("pandas", e) from e
    return pandas


def _import_polars() -> Any:
    try:
        import polars
    except ImportError as e:
        raise _missing("polars", e) from e
    return polars


def _rows_to_pandas(rows: Sequence[Mapping[str, Any]]) -> pandas.DataFrame:
    pd = _import_pandas()
    schema = _schema()
    # pandas' own string dtype: "str" from pandas 3 on (NaN for missing),
    # object (None for missing) before; the same whatever the values.
    text = pd.Series(["a"]).dtype
    data: dict[str, Any] = {}
    for name in _columns(rows):
        values = [row.get(name) for row in rows]
        kind, nullable = schema.get(name, ("any", True))
        if kind == "int":
            dtype = "Int64" if nullable else "int64"
            # A row without the key (an older document) makes it null.
            if any(v is None for v in values):
                dtype = "Int64"
            data[name] = pd.Series(values, dtype=dtype)
        elif kind == "float":
            data[name] = pd.Series(values, dtype="float64")  # None is NaN
        elif kind == "bool":
            data[name] = pd.Series(values, dtype="boolean")
        elif kind in ("list[int]", "list[str]", "list[float]"):
            # One Python list per cell (None where there is none).
            data[name] = pd.Series([None if v is None else list(v) for v in values], dtype=object)
        elif kind == "str":
            data[name] = pd.Series(values, dtype=text)
        else:
            data[name] = pd.Series(values, dtype=object)
    frame: pandas.DataFrame = pd.DataFrame(data)
    return frame


def _rows_to_polars(rows: Sequence[Mapping[str, Any]]) -> polars.DataFrame:
    pl = _import_polars()
    schema = _schema()
    types_: dict[_Kind, Any] = {
        "str": pl.String,
        "int": pl.Int64,
        "float": pl.Float64,
        "bool": pl.Boolean,
        "list[int]": pl.List(pl.Int64),
        "list[str]": pl.List(pl.String),
        "list[float]": pl.List(pl.Float64),
    }
    columns = _columns(rows)
    frame_schema: dict[str, Any] = {}
    for name in columns:
        kind, _ = schema.get(name, ("any", True))
        if kind in types_:
            frame_schema[name] = types_[kind]
    data = {name: [row.get(name) for row in rows] for name in columns}
    frame: polars.DataFrame = pl.DataFrame(
        {name: pl.Series(name, data[name], dtype=frame_schema.get(name)) for name in columns}
    )
    return frame


def reports_to_pandas(reports: Iterable[Any]) -> pandas.DataFrame:
    """A pandas DataFrame of a scan's reports, one row per block.

    Parameters
    ----------
    reports : sequence of BlockReport
        What :func:`skipsearch.scan` returned (any sequence of reports, or of
        their :meth:`~BlockReport.to_dict` rows: several scans' lists
        concatenated make one frame).

    Returns
    -------
    pandas.DataFrame
        The columns of :meth:`BlockReport.to_dict`, in its order: ``int64``
        for ``layer``, ``d`` and ``m``, nullable ``Int64`` for ``step`` and
        the other integers that can be null, ``float64`` (NaN for null) for
        the distances, the bound, the bracket, the tolerance and the seconds,
        nullable ``boolean`` for ``genericity_passed``, strings for the rest
        but for ``subset``, ``shared_with``, ``hc_pre`` and ``hc_post``, which
        hold a list per cell.

    Raises
    ------
    ImportError
        pandas is not installed (``pip install "skipsearch[pandas]"``).
    TypeError
        ``reports`` is not a sequence of reports.
    """
    return _rows_to_pandas(_check_rows(reports))


def reports_to_polars(reports: Iterable[Any]) -> polars.DataFrame:
    """A polars DataFrame of a scan's reports, one row per block.

    Parameters
    ----------
    reports : sequence of BlockReport
        What :func:`skipsearch.scan` returned (any sequence of reports, or of
        their :meth:`~BlockReport.to_dict` rows).

    Returns
    -------
    polars.DataFrame
        The columns of :meth:`BlockReport.to_dict`, in its order: ``Int64``
        for the integers, ``Float64`` for the floats, ``Boolean`` for
        ``genericity_passed``, ``String`` for the words and names, and
        ``List(Int64)`` (``subset``), ``List(String)`` (``shared_with``) and
        ``List(Float64)`` (``hc_pre``, ``hc_post``);
        None is null in each.

    Raises
    ------
    ImportError
        polars is not installed (``pip install "skipsearch[polars]"``).
    TypeError
        ``reports`` is not a sequence of reports.
    """
    return _rows_to_polars(_check_rows(reports))


def document_rows(document: Document) -> list[dict[str, Any]]:
    """The block rows of a ``skipsearch scan --json`` document.

    Parameters
    ----------
    document : dict, str or path
        The document as :func:`json.load` parsed it, or the path of the
        file that holds it (``skipsearch scan ... --json > scan.json``).

    Returns
    -------
    list of dict
        ``document["blocks"]``: one dict per block, the keys of
        :meth:`BlockReport.to_dict`.

    Raises
    ------
    ValueError
        The document has no ``blocks`` list (it is not a scan's document).
    OSError
        The file cannot be read.
    """
    if isinstance(document, (str, os.PathLike)):
        with Path(document).open(encoding="utf-8") as f:
            document = json.load(f)
    if not isinstance(document, Mapping):
        raise ValueError(
            f"expected the JSON document of skipsearch scan --json (an object with a 'blocks' "
            f"list), got {type(document).__name__}"
        )
    blocks = document.get("blocks")
    if not isinstance(blocks, list) or not all(isinstance(b, Mapping) for b in blocks):
        raise ValueError(
            "not a document of skipsearch scan --json: it has no 'blocks' list of objects"
        )
    return [dict(b) for b in blocks]


def document_to_pandas(document: Document) -> pandas.DataFrame:
    """A pandas DataFrame of a ``skipsearch scan --json`` document, one row
    per block, typed as :func:`reports_to_pandas` types a scan's reports
    (``pandas.read_json`` cannot read the document: the rows are under
    ``"blocks"``, beside the summary and the models).

    Parameters
    ----------
    document : dict, str or path
        The parsed document, or the path of its file.

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    ImportError
        pandas is not installed (``pip install "skipsearch[pandas]"``).
    ValueError
        Not a scan's document.
    """
    return _rows_to_pandas(document_rows(document))


def document_to_polars(document: Document) -> polars.DataFrame:
    """A polars DataFrame of a ``skipsearch scan --json`` document, one row
    per block, typed as :func:`reports_to_polars` types a scan's reports.

    Parameters
    ----------
    document : dict, str or path
        The parsed document, or the path of its file.

    Returns
    -------
    polars.DataFrame

    Raises
    ------
    ImportError
        polars is not installed (``pip install "skipsearch[polars]"``).
    ValueError
        Not a scan's document.
    """
    return _rows_to_polars(document_rows(document))


class ScanReports(list[BlockReport]):
    """The reports of a scan: a plain list of :class:`BlockReport` (it
    compares equal to a list of the same reports, and pickles), with the
    conversions to one table.

    Slicing it or adding another list of reports keeps the type, so
    ``(scan(a) + scan(b)).to_pandas()`` is one frame of both.
    """

    __slots__ = ()

    @overload
    def __getitem__(self, index: SupportsIndex) -> BlockReport: ...

    @overload
    def __getitem__(self, index: slice) -> ScanReports: ...

    def __getitem__(self, index: Union[SupportsIndex, slice]) -> Union[BlockReport, ScanReports]:
        if isinstance(index, slice):
            return ScanReports(super().__getitem__(index))
        return super().__getitem__(index)

    def __add__(self, other: Iterable[BlockReport]) -> ScanReports:  # type: ignore[override]
        return ScanReports([*self, *other])

    def copy(self) -> ScanReports:
        """A shallow copy, still a :class:`ScanReports`."""
        return ScanReports(self)

    def to_dicts(self) -> list[BlockReportDict]:
        """:meth:`BlockReport.to_dict` of every report, in order: the
        ``blocks`` of the ``--json`` document."""
        return [r.to_dict() for r in self]

    def to_pandas(self) -> pandas.DataFrame:
        """One pandas row per block (:func:`reports_to_pandas`)."""
        return reports_to_pandas(self)

    def to_polars(self) -> polars.DataFrame:
        """One polars row per block (:func:`reports_to_polars`)."""
        return reports_to_polars(self)
