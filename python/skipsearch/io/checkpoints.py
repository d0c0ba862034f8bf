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
E5M2) is decoded exactly to float32.

:func:`open_checkpoint` opens any checkpoint the scan reads, choosing the
reader by what the files are (their first bytes, not only their names):
safetensors (:class:`Checkpoint`), PyTorch ``pytorch_model.bin`` single or
sharded (:class:`TorchCheckpoint`, through ``torch.load(...,
weights_only=True)``, the ``torch`` extra) and GGUF (llama.cpp;
:class:`skipsearch.io.gguf.GGUFCheckpoint`, the ``gguf`` extra). A
file renamed to another format's suffix, or of no known format, is refused
with what it looks like.

A checkpoint in the Hugging Face cache (``.../models--ORG--NAME/snapshots/
<commit>``, whose files are relative links into ``blobs/``) is named
``ORG/NAME``; a link whose target is missing (an interrupted download) is
refused with a hint to download it again.
"""

from __future__ import annotations

import json
import os
import re
import struct
import sys
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
import numpy.typing as npt

from skipsearch._extras import install_hint
from skipsearch._warnings import UnindexedShardWarning

__all__ = [
    "CONFIG_NAME",
    "FLOAT_DTYPES",
    "GGUF_DTYPES",
    "INDEX_NAME",
    "NARROW_TOL",
    "TORCH_INDEX_NAME",
    "TORCH_WEIGHTS_NAME",
    "WEIGHTS_NAME",
    "Checkpoint",
    "CheckpointChangedError",
    "CheckpointError",
    "TorchCheckpoint",
    "hub_name",
    "open_checkpoint",
    "read_safetensors",
    "stored_tolerance",
]

WEIGHTS_NAME = "model.safetensors"
INDEX_NAME = "model.safetensors.index.json"
TORCH_WEIGHTS_NAME = "pytorch_model.bin"
TORCH_INDEX_NAME = "pytorch_model.bin.index.json"
CONFIG_NAME = "config.json"

#: Relative precision ``eps`` of each GGUF (ggml) block-quantized type, from
#: the bits of its codes: a ``b``-bit code of a block scaled to its largest
#: magnitude (``Q8_0``: codes -127..127 times a per-32 scale; ``Q4_K``:
#: 4-bit codes with a scale and a minimum per 32 in blocks of 256) rounds a
#: weight to ``2**-(b-1)`` of that magnitude. The IQ types' lattice codes
#: count by their bits per weight (``IQ2_*`` 2, ``IQ3_*`` 3, ``IQ4_*`` 4);
#: ``MXFP4`` and ``NVFP4`` store E2M1 (one mantissa bit, ``2**-1``); the
#: ternary (``TQ1_0``, ``TQ2_0``) and 1-bit types (``IQ1_S``, ``IQ1_M``,
#: ``Q1_0``) keep only a sign and zero per weight (``eps`` 1).
_GGUF_EPS = {
    "Q8_0": 2.0**-7,
    "Q8_1": 2.0**-7,
    "Q8_K": 2.0**-7,
    "Q6_K": 2.0**-5,
    "Q5_0": 2.0**-4,
    "Q5_1": 2.0**-4,
    "Q5_K": 2.0**-4,
    "Q4_0": 2.0**-3,
    "Q4_1": 2.0**-3,
    "Q4_K": 2.0**-3,
    "IQ4_NL": 2.0**-3,
    "IQ4_XS": 2.0**-3,
    "Q3_K": 2.0**-2,
    "IQ3_XXS": 2.0**-2,
    "IQ3_S": 2.0**-2,
    "Q2_K": 2.0**-1,
    "IQ2_XXS": 2.0**-1,
    "IQ2_XS": 2.0**-1,
    "IQ2_S": 2.0**-1,
    "MXFP4": 2.0**-1,
    "NVFP4": 2.0**-1,
    "TQ1_0": 1.0,
    "TQ2_0": 1.0,
    "IQ1_S": 1.0,
    "IQ1_M": 1.0,
    "Q1_0": 1.0,
}
#: The GGUF types read as real weights (dequantized to float32 with the
#: ``gguf`` package): the float types and every block-quantized one.
GGUF_DTYPES = ("F16", "BF16", "F32", "F64", *_GGUF_EPS)
#: Stored dtypes that hold real weights: safetensors' floats and the GGUF
#: types (``F16``, ``BF16``, ``F32``, ``F64`` are named alike in both).
FLOAT_DTYPES = ("F8_E4M3", "F8_E5M2", "F16", "BF16", "F32", "F64", *_GGUF_EPS)
#: sqrt(eps) of each stored dtype that is read widened to float32: the
#: default tolerance for such weights (float32's own would be too strict).
#: The GGUF block-quantized types follow the same rule with the ``eps`` of
#: their codes (``Q8_0``: 2**-3.5, ``Q6_K``: 2**-2.5, ``Q5_*``: 2**-2,
#: ``Q4_*``/``IQ4_*``: 2**-1.5, ``Q3_K``/``IQ3_*``: 2**-1, ``Q2_K``/``IQ2_*``/FP4:
#: 2**-0.5, ternary and 1-bit: 1).
NARROW_TOL = {
    "F8_E4M3": 2.0**-1.5,
    "F8_E5M2": 2.0**-1.0,
    "BF16": 2.0**-3.5,
    "F16": 2.0**-5.0,
    **{name: eps**0.5 for name, eps in _GGUF_EPS.items()},
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


class StoredFile:
    """One weights file whose identity was recorded when its header was read.

    Subclasses (one per format) fill :attr:`path` and :attr:`_identity`
    and give the tensors' names, shapes, stored dtypes and values; this base
    checks that the file is still the one whose header was read.
    """

    path: Path
    _identity: _Identity

    def keys(self) -> list[str]:
        raise NotImplementedError

    def shape(self, key: str) -> tuple[int, ...]:
        raise NotImplementedError

    def dtype(self, key: str) -> str:
        raise NotImplementedError

    def get(self, key: str, index: Optional[int] = None) -> np.ndarray:
        raise NotImplementedError

    def check_unchanged(self) -> None:
        """Raise :class:`CheckpointChangedError` unless the file at
        :attr:`path` is still the one whose header was read, unchanged."""
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            raise self._changed("was deleted or renamed after its header was read") from None
        self._check(now, "after its header was read")

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

    def _read_range(self, begin: int, size: int, what: str) -> np.ndarray:
        """``size`` bytes from offset ``begin`` as a new flat uint8 array, read
        from a descriptor checked, before and after the read, to be the file
        whose header was read, unchanged (``what`` names the tensor)."""
        out = np.empty(size, dtype=np.uint8)
        try:
            # Opened apart so that only open() maps FileNotFoundError; the
            # with block below closes it.
            fh = open(self.path, "rb", buffering=0)  # noqa: SIM115
        except FileNotFoundError:
            raise self._changed("was deleted or renamed after its header was read") from None
        with fh:
            self._check(os.fstat(fh.fileno()), "after its header was read")
            fh.seek(begin)
            view = out.data  # a writable memoryview of the new array
            done = 0
            while done < size:
                n = fh.readinto(view[done:])
                if not n:
                    raise self._changed(
                        f"ended after {begin + done} bytes while {what} was read (truncated)"
                    )
                done += n
            # A write during the read would leave a mix of two versions.
            self._check(os.fstat(fh.fileno()), f"while {what} was read")
        return out


class ListedFile(StoredFile):
    """A :class:`StoredFile` whose names, shapes and stored dtypes were
    listed when it was opened: :attr:`_entries` maps each name to a tuple
    that begins ``(shape, dtype name)``."""

    _entries: dict[str, tuple[Any, ...]]

    def keys(self) -> list[str]:
        return sorted(self._entries)

    def shape(self, key: str) -> tuple[int, ...]:
        return tuple(self._entries[key][0])

    def dtype(self, key: str) -> str:
        return str(self._entries[key][1])


class _File(StoredFile):
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

    def get(self, key: str, index: Optional[int] = None) -> np.ndarray:
        dtype = self.dtype(key)
        if dtype not in _STORED and dtype not in ("BF16", *_FLOAT8_TABLES):
            raise CheckpointError(
                f"{self.path}: tensor {key!r} has dtype {dtype}, which numpy cannot hold and "
                "skipsearch does not widen (it widens F16, BF16, F8_E4M3, F8_E5M2 and F8_E8M0)"
            )
        shape = self.shape(key)
        if index is not None:
            if not shape or not 0 <= index < shape[0]:
                raise CheckpointError(
                    f"{self.path}: tensor {key!r} of shape {shape} has no index {index} on its "
                    "first axis"
                )
            shape = shape[1:]
        raw = self._read(key, index)
        if dtype == "BF16":
            # numpy has no bfloat16: shift the raw bits into the top half of
            # a float32, which is exactly the value bfloat16 encodes.
            bits = raw.view("<u2").astype(np.uint32)
            bits <<= 16
            array = bits.view(np.float32)
        elif dtype in _FLOAT8_TABLES:
            array = _float8(raw, dtype)
        elif dtype == "F16":
            array = raw.view(_STORED[dtype]).astype(np.float32)
        else:
            stored = _STORED[dtype]
            array = raw.view(stored)
            if not stored.isnative:
                array = array.astype(stored.newbyteorder("="))
        del raw
        return array.reshape(shape)

    def _read(self, key: str, index: Optional[int] = None) -> np.ndarray:
        """The stored bytes of ``key`` (of its ``index``-th slice along the
        first axis, when given) as a new flat uint8 array, read from a
        descriptor checked, before and after the read, to be the file whose
        header was read, unchanged."""
        begin, end = self._entries[key]["data_offsets"]
        if index is not None:
            rows = self.shape(key)[0]
            step = (end - begin) // rows
            begin, end = begin + index * step, begin + (index + 1) * step
        return self._read_range(self._data_start + begin, end - begin, f"tensor {key!r}")


def _parse_header(fh: Any) -> tuple[int, dict[str, Any]]:
    """The offset of the data section and the parsed JSON header of the
    safetensors file open as ``fh``."""
    (n,) = struct.unpack("<Q", fh.read(8))
    try:
        header = json.loads(fh.read(n))
    except RecursionError:
        raise ValueError("the header is nested too deeply to parse") from None
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


def _e8m0_table() -> np.ndarray:
    """The float32 value of each E8M0 code (the OCP microscaling scale:
    ``2^(e - 127)``, 0xff NaN), exactly: DeepSeek-V4's block scales. Codes
    0 and 1 are 2^-127 and 2^-126, below float32's normal range but held
    exactly as subnormals."""
    exponent = np.arange(256, dtype=np.float64) - 127
    value = np.exp2(exponent)
    value[255] = np.nan
    return value.astype(np.float32)


_FLOAT8_TABLES = {
    **{dtype: _float8_table(dtype) for dtype in ("F8_E4M3", "F8_E5M2")},
    "F8_E8M0": _e8m0_table(),
}


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


def _dangling(path: Path) -> bool:
    """Whether ``path`` is a link whose target is missing (not a link loop,
    which resolving reports)."""
    if not path.is_symlink():
        return False
    try:
        path.resolve(strict=True)
    except FileNotFoundError:
        return True
    except (OSError, RuntimeError):
        return False
    return False


def _hub_repo(folder: Path) -> Optional[str]:
    """The repo id ``ORG/NAME`` of a Hugging Face cache snapshot folder
    (``.../models--ORG--NAME/snapshots/<revision>``), else None."""
    snapshots, repo = folder.parent, folder.parent.parent
    if snapshots.name != "snapshots" or not repo.name.startswith("models--"):
        return None
    parts = repo.name[len("models--") :].split("--")
    if not all(parts):
        return None
    return "/".join(parts)


def hub_name(path: PathLike) -> Optional[str]:
    """The repo id (``"ORG/NAME"``) of a checkpoint in the Hugging Face cache.

    Parameters
    ----------
    path : str or os.PathLike
        A checkpoint directory or file.

    Returns
    -------
    str or None
        ``ORG/NAME`` when the directory (or the file's directory) is
        ``.../models--ORG--NAME/snapshots/<revision>``, as given or with
        its links resolved; else None.
    """
    try:
        p = expand_user(path)
    except FileNotFoundError:
        return None
    folder = p if p.is_dir() else p.parent
    found = _hub_repo(Path(os.path.abspath(folder)))
    if found is None:
        try:
            found = _hub_repo(folder.resolve())
        except (OSError, RuntimeError):
            return None
    return found


def _incomplete(path: Path, what: str) -> FileNotFoundError:
    """The error for a link whose target is missing."""
    target = os.readlink(path)
    repo = hub_name(path.parent)
    again = f" (hf download {repo})" if repo else ""
    return FileNotFoundError(
        f"{path} ({what}) is a link to {target}, which is missing: the download is incomplete "
        f"(interrupted?); download the checkpoint again{again}"
    )


def _missing_hint(folder: Path) -> str:
    """A hint for files missing from a Hugging Face cache snapshot."""
    repo = hub_name(folder)
    if repo is None:
        return ""
    return (
        f"; {folder} is a snapshot of {repo} in the Hugging Face cache, so its download is "
        f"probably incomplete: download it again (hf download {repo})"
    )


class Checkpoint:
    """A checkpoint on disk: its ``config.json`` and its tensors.

    Use :func:`open_checkpoint` to open a checkpoint of any format; this
    class reads safetensors ones.

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
    source : pathlib.Path
        What errors name as the checkpoint: the weights file (or index)
        when one was given, else the directory.
    name : str
        A short name for reports: the repo id (``ORG/NAME``) of a snapshot in
        the Hugging Face cache, else the directory's name.
    config : dict
        The parsed ``config.json``.
    config_path : pathlib.Path or None
    files : list of pathlib.Path
        The weights files read (one, or the shards of the index).

    Raises
    ------
    FileNotFoundError
        The path, ``config.json``, the weights or a shard named by the index
        is missing (all missing shards are listed), or is a link whose
        target is missing (an interrupted download).
    CheckpointError
        Invalid JSON, a file that is not safetensors, an index whose
        ``weight_map`` names tensors its shard does not hold, or a shard
        that is not a plain file name in the index's folder.

    Warns
    -----
    skipsearch.UnindexedShardWarning
        The folder of a sharded checkpoint holds ``.safetensors`` files that
        the index does not name; they are ignored (the message lists them).
    """

    #: The suffix of this format's weights files (shards not named by an
    #: index are looked for by it).
    _suffix = ".safetensors"

    def __init__(self, path: PathLike, config_required: bool = True):
        try:
            self._open_checkpoint(path, config_required)
        except RuntimeError as e:  # pathlib's "Symlink loop from ..."
            raise CheckpointError(
                f"cannot resolve the checkpoint path {os.fspath(path)!r}: {e}"
            ) from None

    def _open_checkpoint(self, path: PathLike, config_required: bool) -> None:
        p = _existing(path)
        root, target = self._weights(p)
        if _dangling(target):
            raise _incomplete(target, "the weights")
        self._load(root, target, config_required)
        self.source = self.root if p.is_dir() else p.resolve()

    def _weights(self, p: Path) -> tuple[Path, Path]:
        """The checkpoint's directory and its weights file (or index)."""
        if p.is_dir():
            index = p / INDEX_NAME
            single = p / WEIGHTS_NAME
            for q in (single, index):
                if _dangling(q):
                    raise _incomplete(q, "the weights")
            if single.is_file():
                return p, single
            if index.is_file():
                return p, index
            # One weights file under another name is unambiguous.
            others = sorted(q for q in p.glob("*.safetensors") if q.is_file())
            if len(others) != 1:
                found = f"{len(others)} .safetensors files" if others else "no .safetensors file"
                raise FileNotFoundError(
                    f"no {WEIGHTS_NAME} or {INDEX_NAME} in {p}, and {found}: pass a "
                    "checkpoint directory (safetensors, pytorch_model.bin or GGUF), or the "
                    "weights file itself" + _missing_hint(p)
                )
            return p, others[0]
        if not (p.suffix == ".safetensors" or p.name.endswith(".safetensors.index.json")):
            raise CheckpointError(
                f"{p} is not a .safetensors file or a .safetensors.index.json index; pass a "
                "checkpoint directory, or the .safetensors file itself"
            )
        return p.parent, p

    def _load(self, root: Path, target: Path, config_required: bool) -> None:
        """Read ``config.json`` beside ``target`` and the weights' headers."""
        self.root = root.resolve()
        config = root / CONFIG_NAME
        if _dangling(config):
            raise _incomplete(config, CONFIG_NAME)
        self.config_path: Optional[Path] = config.resolve()
        if self.config_path.is_file():
            self.config = _read_json(self.config_path, "config.json")
        elif config_required:
            raise FileNotFoundError(
                f"no {CONFIG_NAME} beside {target}: the scan reads the model type, the "
                "activation and the sizes from it (a model without one can be scanned with "
                "the generic mapping: a Layout, or --up/--down/--activation)" + _missing_hint(root)
            )
        else:
            self.config_path, self.config = None, {}
        self.name = hub_name(root) or self.root.name
        self._files: dict[Path, StoredFile] = {}
        if target.name.endswith(".json"):
            self._key_file = self._read_index(target)
        else:
            f = self._open(target.resolve())
            self._key_file = {key: f.path for key in f.keys()}
        self.files = sorted(set(self._key_file.values()))

    def _new_file(self, path: Path) -> StoredFile:
        """The reader of one weights file of this format."""
        return _File(path)

    def _open(self, path: Path) -> StoredFile:
        if path not in self._files:
            self._files[path] = self._new_file(path)
        return self._files[path]

    def _read_index(self, index_path: Path) -> dict[str, Path]:
        index = _read_json(index_path.resolve(), "index")
        weight_map = index.get("weight_map")
        if not isinstance(weight_map, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()
        ):
            raise CheckpointError(
                f"{index_path} must hold a 'weight_map' object mapping tensor names to shard files"
            )
        # The folder the index is in, as given: in the Hugging Face cache the
        # index and its shards are links into blobs/, wherever they point.
        folder = index_path.parent
        shards = sorted(set(weight_map.values()))
        # A shard is named by its file name in the folder; where a link by
        # that name points is the folder's business (the cache's blobs/).
        outside = [
            s
            for s in shards
            if not s or "/" in s or "\\" in s or ".." in s or s in (".",) or Path(s).name != s
        ]
        if outside:
            raise CheckpointError(
                f"{index_path} names shard(s) outside its folder: {', '.join(outside)}; a shard must "
                "be a file name in the checkpoint folder"
            )
        for s in shards:
            if _dangling(folder / s):
                raise _incomplete(folder / s, f"a shard named by {index_path.name}")
        missing = [s for s in shards if not (folder / s).is_file()]
        if missing:
            raise FileNotFoundError(
                f"{index_path} names {len(missing)} shard(s) that are missing from {folder}: "
                + ", ".join(missing)
                + _missing_hint(folder)
            )
        unindexed = sorted(
            q.name for q in folder.glob("*" + self._suffix) if q.name not in set(shards)
        )
        if unindexed:
            warnings.warn(
                f"{folder}: ignoring {len(unindexed)} {self._suffix} file(s) not named in "
                f"{index_path.name}: " + ", ".join(unindexed),
                UnindexedShardWarning,
                stacklevel=4,
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
        """The stored dtype of ``key`` (``"F32"``, ``"BF16"``, ``"Q8_0"``, ...)."""
        return self._file(key).dtype(key)

    def get(self, key: str, index: Optional[int] = None) -> np.ndarray:
        """Tensor ``key`` as a new numpy array; F16 and BF16 become float32.

        With ``index``, only its ``index``-th slice along the first axis is
        read (one expert of a 3-D expert tensor).

        Raises
        ------
        CheckpointChangedError
            The file holding ``key`` was saved again, replaced, truncated or
            deleted after its header was read.
        """
        return self._file(key).get(key, index)

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

    def _file(self, key: str) -> StoredFile:
        try:
            path = self._key_file[key]
        except KeyError:
            raise CheckpointError(f"{self.source} has no tensor named {key!r}") from None
        return self._open(path)


def expand_user(path: PathLike) -> Path:
    """``path`` with a leading ``~`` expanded to the home directory.

    Raises
    ------
    FileNotFoundError
        ``path`` starts with ``~`` and there is no home directory to expand
        it to (``HOME`` unset and a user id with no passwd entry, as under
        ``docker run --user``).
    """
    name = os.fspath(path)
    expanded = os.path.expanduser(name)
    if expanded.startswith("~"):
        raise FileNotFoundError(
            f"cannot expand ~ in the checkpoint path {name!r}: there is no home directory (HOME "
            "is not set and this user id has no passwd entry); give the path without ~"
        )
    return Path(expanded)


def _existing(path: PathLike) -> Path:
    """``path`` (``~`` expanded), which must exist.

    Raises
    ------
    FileNotFoundError
        It does not exist, or is a link whose target is missing.
    CheckpointError
        Its links form a loop.
    """
    p = expand_user(path)
    if _dangling(p):
        raise _incomplete(p, "the checkpoint path")
    if not p.exists():
        if p.is_symlink():
            # exists() is False for a link that leads back to itself.
            raise CheckpointError(
                f"cannot resolve the checkpoint path {os.fspath(path)!r}: its symbolic links "
                "form a loop"
            )
        raise FileNotFoundError(f"checkpoint path does not exist: {p}")
    return p


# -- PyTorch checkpoints ---------------------------------------------------------------------------

#: The stored dtype names of torch dtypes, as safetensors names them.
_TORCH_DTYPES = {
    "float64": "F64",
    "float32": "F32",
    "float16": "F16",
    "bfloat16": "BF16",
    "float8_e4m3fn": "F8_E4M3",
    "float8_e5m2": "F8_E5M2",
    "int64": "I64",
    "int32": "I32",
    "int16": "I16",
    "int8": "I8",
    "uint8": "U8",
    "bool": "BOOL",
}


#: How to convert a PyTorch checkpoint that cannot be read here.
_CONVERT = (
    "convert the checkpoint to safetensors (e.g. load it with transformers and save it with "
    "save_pretrained(..., safe_serialization=True))"
)

#: The oldest torch release whose ``torch.load(weights_only=True)`` has no
#: known way to run code from a crafted file.
SAFE_TORCH = (2, 10)

#: Releases below which ``weights_only=True`` is known to be unsafe, and why.
_TORCH_ADVISORIES = (
    (
        (2, 6),
        "CVE-2025-32434: torch.load(weights_only=True) up to 2.5.1 runs code from a crafted "
        "file (GHSA-53q9-r3pm-6pq6)",
    ),
    (
        (2, 10),
        "CVE-2026-24747: torch.load(weights_only=True) up to 2.9.1 lets a crafted file corrupt "
        "memory and run code (GHSA-63cw-57p8-fm3p)",
    ),
)


def _torch_release(version: str) -> Optional[tuple[int, int, int, int]]:
    """``(major, minor, patch, final)`` of a torch version string such as
    ``2.6.0+cu124``; ``final`` is 0 for a pre-release or development build
    (``2.10.0a0+git...``), which may predate its release's fixes. None
    when the string is not a version."""
    match = re.match(r"([0-9]+)\.([0-9]+)(?:\.([0-9]+))?([^+]*)", version)
    if match is None:
        return None
    major, minor, patch, rest = match.groups()
    pre = bool(re.search(r"(a|b|rc|c|dev|alpha|beta|pre)", rest))
    return int(major), int(minor), int(patch or 0), 0 if pre else 1


def check_torch_load_safe(torch: Any, path: PathLike) -> None:
    """Refuse to load ``path`` with a torch whose ``weights_only=True``
    loading is known to be bypassable.

    The version string is checked against the advisories, and so is a
    feature the 2.6 fix came with (``torch.serialization.
    get_unsafe_globals_in_checkpoint``): a build that reports a newer
    version but lacks it is refused too.

    Parameters
    ----------
    torch : module
        The imported ``torch``.
    path : str or os.PathLike
        The checkpoint (for the message).

    Raises
    ------
    ImportError
        torch is older than :data:`SAFE_TORCH` (or cannot tell its version,
        or lacks the 2.6 fix's API); the message names the advisory and
        the upgrade.
    """
    version = str(getattr(torch, "__version__", ""))
    release = _torch_release(version)
    serialization = getattr(torch, "serialization", None)
    has_26_api = callable(getattr(serialization, "get_unsafe_globals_in_checkpoint", None))
    reason: Optional[str] = None
    if release is None:
        reason = f"its version ({version!r}) cannot be read, so it may predate the fixes of " + (
            ", ".join(cve.split(":")[0] for _, cve in _TORCH_ADVISORIES)
        )
    else:
        for fixed, cve in _TORCH_ADVISORIES:
            if release < (*fixed, 0, 1):
                reason = cve
                break
        if reason is None and not has_26_api:
            reason = (
                f"{_TORCH_ADVISORIES[0][1]}; this torch reports {version} but lacks "
                "torch.serialization.get_unsafe_globals_in_checkpoint, which came with the fix"
            )
    if reason is None:
        return
    need = ".".join(map(str, SAFE_TORCH))
    python = f" (torch {need} needs Python 3.10 or later)" if sys.version_info < (3, 10) else ""
    raise ImportError(
        f"{path} is a PyTorch checkpoint, and torch {version or '(unknown version)'} cannot load "
        f"it safely: {reason}. skipsearch reads .bin/.pt files only where weights_only=True "
        f'keeps code out: upgrade torch: pip install "torch>={need}"{python}, or {_CONVERT}'
    )


def _import_torch(path: Path) -> Any:
    """The ``torch`` module, or an ImportError naming the extra (torch is
    missing) or the advisory and the upgrade (:func:`check_torch_load_safe`)."""
    try:
        import torch  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        raise ImportError(
            f"{path} is a PyTorch checkpoint, read through torch.load(..., weights_only=True), "
            f"but torch is not installed: install the torch extra ({install_hint('torch')}), or "
            f"{_CONVERT}"
        ) from None
    check_torch_load_safe(torch, path)
    return torch


class _TorchFile(ListedFile):
    """One PyTorch state-dict file (``pytorch_model.bin``), read with
    ``torch.load(..., weights_only=True, mmap=True, map_location="cpu")``.

    Nothing is unpickled but tensors and plain containers (``weights_only``).
    The file is loaded (memory-mapped) to list its tensors and again for
    each tensor read, from a descriptor checked, before and after, to be the
    file whose names were read, unchanged; no mapping is kept between reads.
    """

    def __init__(self, path: Path):
        self.path = path
        self._torch = _import_torch(path)
        with open(path, "rb") as fh:
            self._identity = _identity(os.fstat(fh.fileno()))
        state = self._load("while its tensors were listed")
        self._entries = {
            key: (tuple(int(n) for n in t.shape), self._dtype_name(t.dtype))
            for key, t in state.items()
        }
        del state

    def _load(self, when: str) -> dict[str, Any]:
        """The file's state dict (memory-mapped tensors), checked unchanged."""
        torch = self._torch
        try:
            fh = open(self.path, "rb")  # noqa: SIM115 - closed by the with block below
        except FileNotFoundError:
            raise self._changed("was deleted or renamed after its header was read") from None
        with fh:
            self._check(os.fstat(fh.fileno()), when)
            try:
                try:
                    # torch maps only a file named by its path.
                    state = torch.load(
                        str(self.path), weights_only=True, mmap=True, map_location="cpu"
                    )
                except (RuntimeError, ValueError, TypeError) as e:
                    if "mmap" not in str(e):
                        raise
                    # The legacy (pre-zip) format cannot be mapped, nor can torch
                    # before 2.1 map at all: read it whole.
                    state = torch.load(fh, weights_only=True, map_location="cpu")
            except CheckpointChangedError:
                raise
            except Exception as e:
                raise CheckpointError(
                    f"{self.path} is not a readable PyTorch state dict (torch.load with "
                    f"weights_only=True refused it): {e}"
                ) from e
            # The file torch read by its path is the one open here, unchanged.
            self._check(os.fstat(fh.fileno()), when)
            self._check(os.stat(self.path), when)
        if isinstance(state, dict) and "state_dict" in state and len(state) <= 4:
            inner = state["state_dict"]
            if isinstance(inner, dict):
                state = inner
        if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
            raise CheckpointError(
                f"{self.path} holds a {type(state).__name__}, not a state dict of named tensors"
            )
        return {k: v for k, v in state.items() if isinstance(v, torch.Tensor)}

    def _dtype_name(self, dtype: Any) -> str:
        name = str(dtype).replace("torch.", "")
        return _TORCH_DTYPES.get(name, name)

    def get(self, key: str, index: Optional[int] = None) -> np.ndarray:
        shape = self.shape(key)
        if index is not None and (not shape or not 0 <= index < shape[0]):
            raise CheckpointError(
                f"{self.path}: tensor {key!r} of shape {shape} has no index {index} on its first "
                "axis"
            )
        state = self._load(f"while tensor {key!r} was read")
        tensor = state.get(key)
        if tensor is None:
            raise self._changed(f"no longer holds tensor {key!r}")
        if index is not None:
            tensor = tensor[index]
        if self.dtype(key) in ("F16", "BF16", "F8_E4M3", "F8_E5M2"):
            tensor = tensor.float()  # exact: every such value is a float32
        elif self.dtype(key) not in _STORED:
            raise CheckpointError(
                f"{self.path}: tensor {key!r} has dtype {self.dtype(key)}, which skipsearch does "
                "not read"
            )
        array = np.array(tensor.detach().contiguous().numpy(), copy=True)
        del tensor, state
        self.check_unchanged()
        return array


class TorchCheckpoint(Checkpoint):
    """A PyTorch checkpoint: ``config.json`` with ``pytorch_model.bin`` or a
    sharded set described by ``pytorch_model.bin.index.json``.

    Read through ``torch.load(..., weights_only=True, mmap=True,
    map_location="cpu")`` (the ``torch`` extra); the interface is
    :class:`Checkpoint`'s.

    Parameters
    ----------
    path : str or os.PathLike
        A directory holding ``pytorch_model.bin`` or
        ``pytorch_model.bin.index.json`` with its shards, or such a file
        (``.bin``, ``.pt``, ``.pth``, or the index) with ``config.json``
        beside it.
    config_required : bool
        As for :class:`Checkpoint`.

    Raises
    ------
    ImportError
        torch is not installed (the message names the extra and the
        conversion to safetensors).
    """

    _suffix = ".bin"

    def _weights(self, p: Path) -> tuple[Path, Path]:
        if p.is_dir():
            for q in (p / TORCH_WEIGHTS_NAME, p / TORCH_INDEX_NAME):
                if _dangling(q):
                    raise _incomplete(q, "the weights")
                if q.is_file():
                    return p, q
            raise FileNotFoundError(f"no {TORCH_WEIGHTS_NAME} or {TORCH_INDEX_NAME} in {p}")
        return p.parent, p

    def _new_file(self, path: Path) -> StoredFile:
        return _TorchFile(path)


# -- which format ----------------------------------------------------------------------------------

_TORCH_SUFFIXES = (".bin", ".pt", ".pth")


def _sniff(path: Path) -> str:
    """What a file's first bytes say it is: ``"safetensors"``, ``"gguf"``,
    ``"torch"`` (a torch zip archive or pickle), ``"zip"`` (another zip
    archive), ``"json"`` or ``"unknown"``."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(9)
            size = os.fstat(fh.fileno()).st_size
    except OSError as e:
        raise CheckpointError(f"cannot read {path}: {e}") from e
    if head[:4] == b"GGUF":
        return "gguf"
    if head[:4] == b"PK\x03\x04":
        import zipfile

        try:
            with zipfile.ZipFile(path) as z:
                names = z.namelist()
        except (zipfile.BadZipFile, OSError):
            return "zip"
        return "torch" if any(n.endswith("data.pkl") for n in names) else "zip"
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return "torch"  # a pickle (torch's legacy format)
    if len(head) == 9 and head[8:9] == b"{":
        (n,) = struct.unpack("<Q", head[:8])
        if 8 + n <= size:
            return "safetensors"
    if head.lstrip()[:1] == b"{":
        return "json"
    return "unknown"


_LOOKS = {
    "safetensors": "a safetensors file",
    "gguf": "a GGUF file",
    "torch": "a PyTorch (torch.save) file",
    "zip": "a zip archive that is not a PyTorch checkpoint",
    "json": "a JSON file",
    "unknown": "not a safetensors, GGUF or PyTorch file",
}

_SUFFIXES = {"safetensors": ".safetensors", "gguf": ".gguf", "torch": ".bin"}


def checkpoint_format(path: PathLike) -> str:
    """The format of the checkpoint at ``path``: ``"safetensors"``,
    ``"torch"`` or ``"gguf"``, from its files' first bytes and names.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist, or is a link whose target is missing.
    CheckpointError
        A file whose first bytes are another format's than its suffix
        says (a GGUF file without the ``.gguf`` suffix, ...) or of no
        known format; a directory with several GGUF files.
    """
    p = _existing(path)
    if p.is_dir():
        if any((p / n).is_file() or _dangling(p / n) for n in (WEIGHTS_NAME, INDEX_NAME)) or any(
            q.is_file() for q in p.glob("*.safetensors")
        ):
            return "safetensors"
        if any(
            (p / n).is_file() or _dangling(p / n) for n in (TORCH_WEIGHTS_NAME, TORCH_INDEX_NAME)
        ):
            return "torch"
        ggufs = sorted(q.name for q in p.glob("*.gguf") if q.is_file() or _dangling(q))
        if len(ggufs) == 1:
            return "gguf"
        if ggufs:
            raise CheckpointError(
                f"{p} holds {len(ggufs)} GGUF files ({', '.join(ggufs[:6])}"
                f"{' ...' if len(ggufs) > 6 else ''}): pass the one to scan (a GGUF file is a "
                "whole model; split files must be merged first: llama-gguf-split --merge)"
            )
        return "safetensors"  # its reader says what is missing
    name = p.name
    if name.endswith(".index.json"):
        if name.endswith(".safetensors.index.json"):
            return "safetensors"
        if name.endswith(".bin.index.json"):
            return "torch"
        raise CheckpointError(
            f"{p} is an index of neither safetensors (.safetensors.index.json) nor PyTorch "
            "(.bin.index.json) shards"
        )
    kind = _sniff(p)
    suffix = p.suffix.lower()
    expected = {".safetensors": "safetensors", ".gguf": "gguf"}.get(
        suffix, "torch" if suffix in _TORCH_SUFFIXES else None
    )
    if kind == expected:
        return kind
    looks = _LOOKS[kind]
    if kind in _SUFFIXES:
        if expected is None:
            raise CheckpointError(
                f"{p} is {looks} without the {_SUFFIXES[kind]} suffix: rename it to end in "
                f"{_SUFFIXES[kind]} (skipsearch reads a file by its format and its suffix alike)"
            )
        raise CheckpointError(
            f"{p} has the {suffix} suffix of {_LOOKS[expected]}, but its first bytes are those "
            f"of {looks}: it was renamed; give it the {_SUFFIXES[kind]} suffix"
        )
    if expected is not None:
        readable = {"safetensors": "safetensors", "gguf": "GGUF", "torch": "PyTorch"}[expected]
        raise CheckpointError(
            f"{p} is not a readable {readable} file: by its first bytes it is {looks}; "
            "skipsearch reads safetensors (.safetensors), GGUF (.gguf) and PyTorch "
            "(pytorch_model.bin, .pt, .pth) checkpoints"
        )
    raise CheckpointError(
        f"{p} cannot be read: it is {looks}; skipsearch reads safetensors (.safetensors), "
        "GGUF (.gguf) and PyTorch (pytorch_model.bin, .pt, .pth) checkpoints"
    )


def open_checkpoint(path: PathLike, config_required: bool = True) -> Checkpoint:
    """Open a checkpoint of any format the scan reads.

    Parameters
    ----------
    path : str or os.PathLike
        A checkpoint directory (safetensors, ``pytorch_model.bin`` single
        or sharded, or one ``.gguf`` file), or a weights file (``.safetensors``,
        ``.gguf``, ``.bin``/``.pt``/``.pth``, or an index ``.json``).
    config_required : bool
        Whether a missing ``config.json`` is an error (default). A GGUF file
        carries its own configuration.

    Returns
    -------
    Checkpoint
        A :class:`Checkpoint` (safetensors), :class:`TorchCheckpoint` or
        :class:`skipsearch.io.gguf.GGUFCheckpoint`; all have the
        same interface.

    Raises
    ------
    FileNotFoundError
        The path or its files are missing, or a link's target is missing
        (an interrupted download).
    CheckpointError
        A renamed file or one of no known format (the message says what it
        looks like), or a file its reader refuses.
    ImportError
        The reader's optional dependency is missing: ``torch`` (extra
        ``torch``) or ``gguf`` (extra ``gguf``).
    """
    try:
        fmt = checkpoint_format(path)
    except RuntimeError as e:  # pathlib's "Symlink loop from ..."
        raise CheckpointError(
            f"cannot resolve the checkpoint path {os.fspath(path)!r}: {e}"
        ) from None
    if fmt == "gguf":
        from skipsearch.io.gguf import GGUFCheckpoint

        return GGUFCheckpoint(path, config_required=config_required)
    if fmt == "torch":
        return TorchCheckpoint(path, config_required=config_required)
    return Checkpoint(path, config_required=config_required)


def _read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            value = json.load(fh)
    except ValueError as e:
        # JSONDecodeError, UnicodeDecodeError, and an integer beyond Python's
        # digit limit for str-to-int conversion (4300 by default).
        raise CheckpointError(f"{path} ({what}) is not valid JSON: {e}") from e
    except RecursionError as e:
        raise CheckpointError(f"{path} ({what}) is nested too deeply to parse") from e
    if not isinstance(value, dict):
        raise CheckpointError(
            f"{path} ({what}) must hold a JSON object, got {type(value).__name__}"
        )
    return value
