"""Read tensors from safetensors checkpoints, single-file or sharded.

A checkpoint is a directory holding ``config.json`` and either
``model.safetensors`` or a sharded set described by
``model.safetensors.index.json``, or a single ``.safetensors`` file with
``config.json`` beside it. In a sharded checkpoint the index's
``weight_map`` is authoritative: every shard it names must exist, and
``.safetensors`` files it does not name are ignored with a warning.

Tensors are read one at a time, each as its own byte range read from the
file into a new array, so reading a block of a multi-GB (or sharded)
checkpoint never loads the rest of it and nothing stays open or mapped
between reads. Each file's identity (device, inode, size, modification and
status-change times) is recorded when its header is read, and every read
checks, on the descriptor it reads from, before and after the read, that
the file is still that one, unchanged: a checkpoint saved again, replaced,
truncated or deleted while it is read raises
:class:`CheckpointChangedError` naming the file, never hands out bytes the
header does not describe. They are returned as new numpy arrays: float16 is widened to float32,
bfloat16 is widened to float32 from its raw 16 bits (the upper half of the
float32 bit pattern; bfloat16 is never read as float16), and float8 (E4M3FN,
E5M2) is decoded exactly to float32. Nothing is
unpickled: ``pytorch_model.bin`` checkpoints are refused with a hint to
convert them.
"""

from __future__ import annotations

import json
import os
import struct
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
import numpy.typing as npt

from skipsearch._warnings import UnindexedShardWarning

__all__ = [
    "Checkpoint",
    "CheckpointChangedError",
    "CheckpointError",
    "CONFIG_NAME",
    "INDEX_NAME",
    "NARROW_TOL",
    "WEIGHTS_NAME",
    "read_safetensors",
    "stored_tolerance",
]

WEIGHTS_NAME = "model.safetensors"
INDEX_NAME = "model.safetensors.index.json"
CONFIG_NAME = "config.json"
FLOAT_DTYPES = ("F8_E4M3", "F8_E5M2", "F16", "BF16", "F32", "F64")
#: sqrt(eps) of each stored dtype that is read widened to float32: the
#: default tolerance for such weights (float32's own would be too strict).
NARROW_TOL = {
    "F8_E4M3": 2.0**-1.5,
    "F8_E5M2": 2.0**-1.0,
    "BF16": 2.0**-3.5,
    "F16": 2.0**-5.0,
}

PathLike = Union[str, "os.PathLike[str]"]


def stored_tolerance(dtypes: Iterable[str]) -> Optional[float]:
    """The default tolerance for weights stored in ``dtypes`` (safetensors
    names) and read widened: ``sqrt(eps)`` of the coarsest of them, or None
    when none is narrower than float32 (the widened dtype's own then
    applies)."""
    return max((NARROW_TOL[t] for t in dtypes if t in NARROW_TOL), default=None)


class CheckpointError(ValueError):
    """The checkpoint cannot be scanned: unreadable or inconsistent files, an
    unsupported architecture or activation, or tensors of the wrong shape."""


class CheckpointChangedError(CheckpointError):
    """A checkpoint file changed after its header was read: saved again (a
    training run writing into the scanned folder), replaced by another file,
    truncated or deleted.

    Its bytes no longer match the header the reader located the tensors
    with, so nothing is read from it: no verdict is given from a changed
    file. Scan the checkpoint again once it is no longer being written.

    Attributes
    ----------
    path : pathlib.Path
        The file that changed.
    block : str or None
        The FFN block being read when the change was seen (set by the scan).
    """

    def __init__(self, message: str, path: Path, block: Optional[str] = None):
        super().__init__(message)
        self.path = path
        self.block = block

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.path, self.block))


#: What identifies a file's contents as its header read saw them: device,
#: inode, size, modification and status-change times (ns). Saving a file
#: again changes its times (and usually its size), replacing it changes its
#: inode, truncating it its size.
_Identity = tuple[int, int, int, int, int]


def _identity(st: os.stat_result) -> _Identity:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


#: The numpy dtype (little-endian, as stored) of each safetensors dtype that
#: numpy holds as it is; BF16, F8_E4M3 and F8_E5M2 are widened instead.
_STORED = {
    "BOOL": np.dtype("?"),
    "U8": np.dtype("u1"),
    "I8": np.dtype("i1"),
    "U16": np.dtype("<u2"),
    "I16": np.dtype("<i2"),
    "U32": np.dtype("<u4"),
    "I32": np.dtype("<i4"),
    "U64": np.dtype("<u8"),
    "I64": np.dtype("<i8"),
    "F16": np.dtype("<f2"),
    "F32": np.dtype("<f4"),
    "F64": np.dtype("<f8"),
    "C64": np.dtype("<c8"),
}

#: Elements decoded per step when float8 codes are looked up (the lookup
#: indexes with a temporary of 8 bytes per element).
_FLOAT8_CHUNK = 1 << 20


def _newer_dtypes_hint(path: Path) -> str:
    """When a header parses but safetensors refused it, name its dtypes: an
    older safetensors release refuses dtypes added after it (F8_E8M0 came
    in 0.6.1)."""
    try:
        _, header = _read_header(path)
        dtypes = sorted(
            {str(v["dtype"]) for k, v in header.items() if k != "__metadata__"} - set(_STORED)
        )
    except Exception:  # the header is broken for us too: the error says enough
        return ""
    if not dtypes:
        return ""
    import safetensors

    version = getattr(safetensors, "__version__", "unknown")
    return (
        f" (it holds dtypes {', '.join(dtypes)}; if this safetensors release, {version}, "
        "predates one of them, upgrade it: pip install -U safetensors)"
    )


class _File:
    """One safetensors file: names, shapes and dtypes from its header, and
    tensors read one at a time.

    The header is parsed here, from a descriptor whose identity (device,
    inode, size, modification and status-change times) is recorded, and
    validated by ``safetensors.safe_open``, which must see the same file.
    :meth:`get` opens the file, checks on that descriptor that it is still
    the file whose header was read, unchanged, reads only the tensor's byte
    range into a new array, checks again, and closes it: nothing stays open
    or mapped between reads, and a file saved again, replaced, truncated or
    deleted meanwhile raises :class:`CheckpointChangedError` instead of
    giving bytes that the header does not describe.
    """

    def __init__(self, path: Path):
        from safetensors import SafetensorError, safe_open

        self.path = path
        try:
            with open(path, "rb") as fh:
                self._identity = _identity(os.fstat(fh.fileno()))
                with safe_open(str(path), framework="numpy"):
                    pass  # opening validates the header: offsets, sizes, dtypes
                # The file safe_open validated is the one open here, unchanged.
                self._check(os.stat(path), "while its header was read")
                self._data_start, header = _parse_header(fh)
        except CheckpointChangedError:
            raise
        except (SafetensorError, OSError, ValueError) as e:
            raise CheckpointError(
                f"{path} is not a readable safetensors file: {e}{_newer_dtypes_hint(path)}"
            ) from e
        header.pop("__metadata__", None)
        self._entries: dict[str, Any] = header

    def keys(self) -> list[str]:
        return sorted(self._entries)

    def shape(self, key: str) -> tuple[int, ...]:
        return tuple(self._entries[key]["shape"])

    def dtype(self, key: str) -> str:
        return str(self._entries[key]["dtype"])

    def get(self, key: str) -> np.ndarray:
        dtype = self.dtype(key)
        if dtype not in _STORED and dtype not in ("BF16", "F8_E4M3", "F8_E5M2"):
            raise CheckpointError(
                f"{self.path}: tensor {key!r} has dtype {dtype}, which numpy cannot hold and "
                "skipsearch does not widen (it widens F16, BF16, F8_E4M3 and F8_E5M2)"
            )
        raw = self._read(key)
        if dtype == "BF16":
            # numpy has no bfloat16: shift the raw bits into the top half of
            # a float32, which is exactly the value bfloat16 encodes.
            bits = raw.view("<u2").astype(np.uint32)
            bits <<= 16
            array = bits.view(np.float32)
        elif dtype in ("F8_E4M3", "F8_E5M2"):
            array = _float8(raw, dtype)
        elif dtype == "F16":
            array = raw.view(_STORED[dtype]).astype(np.float32)
        else:
            stored = _STORED[dtype]
            array = raw.view(stored)
            if not stored.isnative:
                array = array.astype(stored.newbyteorder("="))
        del raw
        return array.reshape(self.shape(key))

    def check_unchanged(self) -> None:
        """Raise :class:`CheckpointChangedError` unless the file at
        :attr:`path` is still the one whose header was read, unchanged."""
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            raise self._changed("was deleted or renamed after its header was read") from None
        self._check(now, "after its header was read")

    def _read(self, key: str) -> np.ndarray:
        """The stored bytes of ``key`` as a new flat uint8 array, read from a
        descriptor checked, before and after the read, to be the file whose
        header was read, unchanged."""
        begin, end = self._entries[key]["data_offsets"]
        size = end - begin
        out = np.empty(size, dtype=np.uint8)
        try:
            fh = open(self.path, "rb", buffering=0)
        except FileNotFoundError:
            raise self._changed("was deleted or renamed after its header was read") from None
        with fh:
            self._check(os.fstat(fh.fileno()), "after its header was read")
            fh.seek(self._data_start + begin)
            view = out.data  # a writable memoryview of the new array
            done = 0
            while done < size:
                n = fh.readinto(view[done:])
                if not n:
                    raise self._changed(
                        f"ended after {self._data_start + begin + done} bytes while tensor "
                        f"{key!r} was read (truncated)"
                    )
                done += n
            # A write during the read would leave a mix of two versions.
            self._check(os.fstat(fh.fileno()), f"while tensor {key!r} was read")
        return out

    def _check(self, st: os.stat_result, when: str) -> None:
        """Raise :class:`CheckpointChangedError` unless ``st`` shows the file
        whose header was read, unchanged."""
        if _identity(st) == self._identity:
            return
        dev, ino, size = self._identity[:3]
        if (st.st_dev, st.st_ino) != (dev, ino):
            what = "was replaced by another file (a different inode)"
        elif st.st_size < size:
            what = f"was truncated ({size} bytes when its header was read, {st.st_size} now)"
        elif st.st_size != size:
            what = f"changed size ({size} bytes when its header was read, {st.st_size} now)"
        else:
            what = "was written again (its modification or status-change time changed)"
        raise self._changed(f"{what} {when}")

    def _changed(self, what: str) -> CheckpointChangedError:
        return CheckpointChangedError(
            f"{self.path} {what}: the checkpoint is being saved again (a training run writing "
            "into it?), so nothing more is read from it and no verdict is given from its changed "
            "bytes; scan it again once it is no longer written",
            self.path,
        )


def _parse_header(fh: Any) -> tuple[int, dict[str, Any]]:
    """The offset of the data section and the parsed JSON header of the
    safetensors file open as ``fh``."""
    (n,) = struct.unpack("<Q", fh.read(8))
    header = json.loads(fh.read(n))
    if not isinstance(header, dict):
        raise ValueError("the header is not a JSON object")
    return 8 + n, header


def _read_header(path: Path) -> tuple[int, dict[str, Any]]:
    """The offset of the data section and the parsed JSON header."""
    with open(path, "rb") as fh:
        return _parse_header(fh)


def read_safetensors(path: PathLike) -> dict[str, npt.NDArray[Any]]:
    """Every tensor of one safetensors file as a new numpy array, widened as
    :meth:`Checkpoint.get` does.

    Raises
    ------
    CheckpointError
        The file is not safetensors, or holds a dtype numpy cannot hold
        and skipsearch does not widen.
    """
    f = _File(Path(os.fspath(path)))
    return {key: f.get(key) for key in f.keys()}


def _float8_table(dtype: str) -> np.ndarray:
    """The float32 value of each of the 256 float8 codes, decoded exactly
    (E4M3FN: no infinities, 0x7f/0xff are NaN; E5M2: IEEE-like)."""
    raw = np.arange(256, dtype=np.uint8)
    mbits, bias = (3, 7) if dtype == "F8_E4M3" else (2, 15)
    ebits = 7 - mbits
    sign = np.where(raw & 0x80, -1.0, 1.0)
    exp = ((raw >> mbits) & ((1 << ebits) - 1)).astype(np.int32)
    man = (raw & ((1 << mbits) - 1)).astype(np.float64)
    normal = exp > 0
    value = np.where(
        normal,
        (1.0 + man / (1 << mbits)) * np.exp2(exp - bias),
        man / (1 << mbits) * np.exp2(1 - bias),
    )
    top = (1 << ebits) - 1
    if dtype == "F8_E4M3":
        value = np.where((exp == top) & (man == (1 << mbits) - 1), np.nan, value)
    else:
        value = np.where((exp == top) & (man == 0), np.inf, value)
        value = np.where((exp == top) & (man != 0), np.nan, value)
    return (sign * value).astype(np.float32)


_FLOAT8_TABLES = {dtype: _float8_table(dtype) for dtype in ("F8_E4M3", "F8_E5M2")}


def _float8(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Decode float8 codes (uint8) exactly to a new float32 array of the same
    shape, a chunk at a time."""
    raw = np.asarray(raw, dtype=np.uint8)
    out = np.empty(raw.shape, dtype=np.float32)
    flat_raw, flat_out = raw.reshape(-1), out.reshape(-1)
    table = _FLOAT8_TABLES[dtype]
    for i in range(0, flat_raw.size, _FLOAT8_CHUNK):
        np.take(table, flat_raw[i : i + _FLOAT8_CHUNK], out=flat_out[i : i + _FLOAT8_CHUNK])
    return out


class Checkpoint:
    """A checkpoint on disk: its ``config.json`` and its tensors.

    Parameters
    ----------
    path : str or os.PathLike
        A directory holding ``config.json`` and ``model.safetensors`` or
        ``model.safetensors.index.json`` with its shards; or a
        ``.safetensors`` file (or an index ``.json``) with ``config.json``
        beside it.
    config_required : bool
        Whether a missing ``config.json`` is an error (default); otherwise
        ``config`` is empty and ``config_path`` None.

    Attributes
    ----------
    root : pathlib.Path
        The directory of the checkpoint.
    config : dict
        The parsed ``config.json``.
    config_path : pathlib.Path or None
    files : list of pathlib.Path
        The safetensors files read (one, or the shards of the index).

    Raises
    ------
    FileNotFoundError
        The path, ``config.json``, the weights or a shard named by the index
        is missing (all missing shards are listed).
    CheckpointError
        Invalid JSON, a file that is not safetensors, an index whose
        ``weight_map`` names tensors its shard does not hold.

    Warns
    -----
    skipsearch.UnindexedShardWarning
        The folder of a sharded checkpoint holds ``.safetensors`` files that
        the index does not name; they are ignored (the message lists them).
    """

    def __init__(self, path: PathLike, config_required: bool = True):
        try:
            self._open_checkpoint(path, config_required)
        except RuntimeError as e:  # pathlib's "Symlink loop from ..."
            raise CheckpointError(
                f"cannot resolve the checkpoint path {os.fspath(path)!r}: {e}"
            ) from None

    def _open_checkpoint(self, path: PathLike, config_required: bool) -> None:
        p = Path(os.fspath(path)).expanduser()
        if not p.exists():
            raise FileNotFoundError(f"checkpoint path does not exist: {p}")
        if p.is_dir():
            root = p
            index = p / INDEX_NAME
            single = p / WEIGHTS_NAME
            if single.is_file():
                target = single
            elif index.is_file():
                target = index
            elif (p / "pytorch_model.bin").is_file():
                raise FileNotFoundError(
                    f"no {WEIGHTS_NAME} in {p}, only pytorch_model.bin: skipsearch never unpickles "
                    "checkpoints; convert it to safetensors first (or load it with "
                    "torch.load(..., weights_only=True) and use skipsearch.from_torch)"
                )
            else:
                # One weights file under another name is unambiguous.
                others = sorted(q for q in p.glob("*.safetensors") if q.is_file())
                if len(others) != 1:
                    found = (
                        f"{len(others)} .safetensors files" if others else "no .safetensors file"
                    )
                    raise FileNotFoundError(
                        f"no {WEIGHTS_NAME} or {INDEX_NAME} in {p}, and {found}: pass a "
                        "checkpoint directory, or the .safetensors file itself"
                    )
                target = others[0]
        else:
            root = p.parent
            target = p
            if not (p.suffix == ".safetensors" or p.name.endswith(".safetensors.index.json")):
                raise CheckpointError(
                    f"{p} is not a .safetensors file or a .safetensors.index.json index; pass a "
                    "checkpoint directory, or the .safetensors file itself"
                )
        self.root = root.resolve()
        self.config_path: Optional[Path] = (root / CONFIG_NAME).resolve()
        if self.config_path.is_file():
            self.config = _read_json(self.config_path, "config.json")
        elif config_required:
            raise FileNotFoundError(
                f"no {CONFIG_NAME} beside {target}: the scan reads the model type, the "
                "activation and the sizes from it (a model without one can be scanned with "
                "the generic mapping: a Layout, or --up/--down/--activation)"
            )
        else:
            self.config_path, self.config = None, {}
        self.name = self.root.name
        self._files: dict[Path, _File] = {}
        if target.name.endswith(".json"):
            self._key_file = self._read_index(target.resolve())
        else:
            f = self._open(target.resolve())
            self._key_file = {key: f.path for key in f.keys()}
        self.files = sorted(set(self._key_file.values()))

    def _open(self, path: Path) -> _File:
        if path not in self._files:
            self._files[path] = _File(path)
        return self._files[path]

    def _read_index(self, index_path: Path) -> dict[str, Path]:
        index = _read_json(index_path, "index")
        weight_map = index.get("weight_map")
        if not isinstance(weight_map, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()
        ):
            raise CheckpointError(
                f"{index_path} must hold a 'weight_map' object mapping tensor names to shard files"
            )
        folder = index_path.parent
        shards = sorted(set(weight_map.values()))
        outside = [s for s in shards if (folder / s).resolve().parent != folder.resolve()]
        if outside:
            raise CheckpointError(
                f"{index_path} names shard(s) outside its folder: {', '.join(outside)}; a shard must "
                "be a file name in the checkpoint folder"
            )
        missing = [s for s in shards if not (folder / s).is_file()]
        if missing:
            raise FileNotFoundError(
                f"{index_path} names {len(missing)} shard(s) that are missing from {folder}: "
                + ", ".join(missing)
            )
        unindexed = sorted(
            q.name for q in folder.glob("*.safetensors") if q.name not in set(shards)
        )
        if unindexed:
            warnings.warn(
                f"{folder}: ignoring {len(unindexed)} .safetensors file(s) not named in "
                f"{index_path.name}: " + ", ".join(unindexed),
                UnindexedShardWarning,
                stacklevel=3,
            )
        key_file = {key: (folder / shard).resolve() for key, shard in weight_map.items()}
        for shard in shards:
            f = self._open((folder / shard).resolve())
            held = set(f.keys())
            absent = [k for k, s in weight_map.items() if s == shard and k not in held]
            if absent:
                raise CheckpointError(
                    f"{index_path.name} maps {len(absent)} tensor(s) to {shard}, which does not hold "
                    f"them: {', '.join(absent[:5])}{' ...' if len(absent) > 5 else ''}"
                )
        return key_file

    def keys(self) -> list[str]:
        """Every tensor name, in sorted order."""
        return sorted(self._key_file)

    def __contains__(self, key: str) -> bool:
        return key in self._key_file

    def shape(self, key: str) -> tuple[int, ...]:
        """The shape of tensor ``key``, from the header (nothing is read)."""
        return self._file(key).shape(key)

    def dtype(self, key: str) -> str:
        """The safetensors dtype of ``key`` (``"F32"``, ``"BF16"``, ...)."""
        return self._file(key).dtype(key)

    def get(self, key: str) -> np.ndarray:
        """Tensor ``key`` as a new numpy array; F16 and BF16 become float32.

        Raises
        ------
        CheckpointChangedError
            The file holding ``key`` was saved again, replaced, truncated or
            deleted after its header was read.
        """
        return self._file(key).get(key)

    def check_unchanged(self, keys: Optional[Iterable[Optional[str]]] = None) -> None:
        """Check that the files holding ``keys`` (default: every file) are
        still those whose headers were read, unchanged.

        Raises
        ------
        CheckpointChangedError
            One of them was saved again, replaced, truncated or deleted.
        """
        if keys is None:
            paths = set(self._key_file.values())
        else:
            paths = {self._key_file[k] for k in keys if k is not None and k in self._key_file}
        for path in sorted(paths):
            self._open(path).check_unchanged()

    def _file(self, key: str) -> _File:
        try:
            path = self._key_file[key]
        except KeyError:
            raise CheckpointError(f"{self.root} has no tensor named {key!r}") from None
        return self._open(path)


def _read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            value = json.load(fh)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{path} is not valid JSON: {e}") from e
    if not isinstance(value, dict):
        raise CheckpointError(
            f"{path} ({what}) must hold a JSON object, got {type(value).__name__}"
        )
    return value
