"""Read GGUF checkpoints (llama.cpp's format) with the ``gguf`` package.

A GGUF file holds a whole model: its metadata (architecture, sizes) and its
tensors, each stored as a float type (``F32``, ``F16``, ``BF16``) or a
block-quantized one (``Q8_0``, ``Q4_K``, the ``IQ`` types, ``MXFP4``, ...).
:class:`GGUFCheckpoint` presents it through the interface of
:class:`skipsearch.io.checkpoints.Checkpoint`:

- ``config`` is synthesized from the metadata: ``model_type`` is
  ``"gguf-<general.architecture>"`` and every ``<arch>.*`` key is kept
  as GGUF names it (``"llama.embedding_length"``,
  ``"llama.feed_forward_length"``, ``"llama.block_count"``,
  ``"llama.expert_count"``, ...), with the scalar ``general.*`` keys;
- tensor names stay GGUF's own (``blk.{i}.ffn_up.weight``,
  ``blk.{i}.ffn_up_exps.weight``, ...), whose families are in
  :mod:`skipsearch.io._families.gguf`;
- shapes are numpy's (row-major): GGUF lists dimensions fastest first, so a
  2-D weight of ggml shape ``{in, out}`` is ``(out, in)`` here, as
  ``torch.nn.Linear`` stores it, and a 3-D expert tensor ``{in, out, E}``
  is ``(E, out, in)``;
- ``dtype`` is the GGML type name (``"Q4_K"``); its default tolerance is in
  :data:`skipsearch.io.checkpoints.NARROW_TOL`;
- ``get`` reads the tensor's bytes (one expert's with ``index``) from a
  descriptor checked, before and after, to be the file whose header was
  read, and dequantizes them with the package's own
  :func:`gguf.quants.dequantize` to float32: the values llama.cpp computes
  with.

The header is parsed here, with plain bounded reads (never a memory map, so
a file truncated or rewritten meanwhile is an error, not a SIGBUS): every
length and count is checked against the bytes left in the file and against
caps (keys, tensor names and dimensions, nesting) before anything is
allocated for it, and every tensor's bytes must lie inside the file. The
``gguf`` package (its type names, block sizes and dequantization) is used
for the tensors only. Metadata strings the scan does not use are decoded
with replacement characters when they are not UTF-8; ``general.architecture``
and tensor names must be UTF-8.
"""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np

from skipsearch._extras import install_hint
from skipsearch.io.checkpoints import (
    GGUF_DTYPES,
    Checkpoint,
    CheckpointError,
    ListedFile,
    _dangling,
    _existing,
    _identity,
    _incomplete,
    hub_name,
)

__all__ = ["GGUF_MODEL_TYPE_PREFIX", "GGUFCheckpoint", "import_gguf"]

#: ``model_type`` of a GGUF checkpoint: this prefix and its architecture.
GGUF_MODEL_TYPE_PREFIX = "gguf-"

PathLike = Union[str, "os.PathLike[str]"]


#: Numeric metadata arrays longer than this (vocabularies, merges) are left
#: out of the synthesized config.
_MAX_ARRAY = 4096

_INTS = {"I8": "<i1", "I16": "<i2", "I32": "<i4", "I64": "<i8"}


def import_gguf() -> Any:
    """The ``gguf`` module, or an ImportError naming the extra."""
    try:
        import gguf  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError:
        raise ImportError(
            "reading GGUF checkpoints needs the gguf package (llama.cpp's reader): install the "
            f"gguf extra: {install_hint('gguf', 'gguf')}"
        ) from None
    return gguf


#: GGUF metadata value types (``gguf.constants.GGUFValueType``, ``enum
#: gguf_type`` in ggml's gguf.h): code -> (name, struct format of a scalar).
_VALUE_TYPES: dict[int, tuple[str, str]] = {
    0: ("UINT8", "<B"),
    1: ("INT8", "<b"),
    2: ("UINT16", "<H"),
    3: ("INT16", "<h"),
    4: ("UINT32", "<I"),
    5: ("INT32", "<i"),
    6: ("FLOAT32", "<f"),
    7: ("BOOL", "<?"),
    8: ("STRING", ""),
    9: ("ARRAY", ""),
    10: ("UINT64", "<Q"),
    11: ("INT64", "<q"),
    12: ("FLOAT64", "<d"),
}
_STRING, _ARRAY, _UINT32 = 8, 9, 4

#: The GGUF versions read (2 and 3 share one layout; 1 had 32-bit counts).
_VERSIONS = (2, 3)
#: Caps on what a header may claim, far above any real model's (tens of
#: keys, a few thousand tensors, names under 64 bytes, 4 dimensions), so
#: that a crafted count cannot make the reader allocate or loop without end.
_MAX_KEYS = 1 << 16
_MAX_TENSORS = 1 << 18
_MAX_NAME = 1 << 16
_MAX_DIMS = 8
_MAX_NESTING = 8
#: Array elements walked one by one (strings, nested arrays) in the whole
#: header: a vocabulary of 256k tokens and its merges are far below it.
_MAX_ELEMENTS = 1 << 24
#: Metadata strings longer than this are skipped, not kept.
_MAX_KEPT_STRING = 1 << 16
#: The GGUF default alignment of the tensor data (``general.alignment``).
_ALIGNMENT = 32
#: Bytes buffered per read while the header is walked.
_BUFFER = 1 << 20


class _Skipped:
    """A metadata value read past and not kept."""


_SKIPPED = _Skipped()


class _HeaderReader:
    """Walks a GGUF header with plain bounded reads from an open file."""

    def __init__(self, fh: Any, size: int, path: Path, check: Any):
        self.fh, self.size, self.path, self.check = fh, size, path, check
        self.pos = 0
        self.walked = 0

    def bad(self, what: str) -> CheckpointError:
        return CheckpointError(f"not a readable GGUF file: {self.path}: {what}")

    def left(self) -> int:
        return self.size - self.pos

    def read(self, n: int, what: str) -> bytes:
        if n > self.left():
            raise self.bad(
                f"{what} claims {n} bytes at offset {self.pos}, and the file has {self.left()} "
                "left (truncated, or not a GGUF file)"
            )
        data: bytes = self.fh.read(n)
        if len(data) != n:
            self.check("while its header was read")  # it shrank under us: changed
            raise self.bad(f"{what} ends early at offset {self.pos + len(data)}")
        self.pos += n
        return data

    def skip(self, n: int, what: str) -> None:
        if n > self.left():
            raise self.bad(
                f"{what} claims {n} bytes at offset {self.pos}, and the file has {self.left()} "
                "left (truncated, or not a GGUF file)"
            )
        self.fh.seek(n, os.SEEK_CUR)
        self.pos += n

    def scalar(self, fmt: str, what: str) -> Any:
        return struct.unpack(fmt, self.read(struct.calcsize(fmt), what))[0]

    def string(self, what: str, cap: Optional[int] = None) -> bytes:
        n = self.scalar("<Q", f"the length of {what}")
        if cap is not None and n > cap:
            raise self.bad(f"{what} claims {n} bytes, more than {cap}")
        return self.read(n, what)

    def count(self, n: int, each: int, cap: int, what: str) -> None:
        """Refuse ``n`` items of at least ``each`` bytes beyond ``cap`` or
        beyond the bytes left."""
        if n > cap or n * each > self.left():
            raise self.bad(
                f"{what} claims {n} entries of at least {each} bytes each, with "
                f"{self.left()} bytes left in the file (at most {cap} are read)"
            )

    def value(self, vtype: int, what: str, keep: bool, depth: int = 0) -> Any:
        """The value of type ``vtype`` (kept: plain Python; else read past)."""
        if vtype not in _VALUE_TYPES:
            raise self.bad(f"{what} has value type {vtype}, which GGUF does not define")
        if vtype == _STRING:
            n = self.scalar("<Q", f"the length of {what}")
            if keep and n <= _MAX_KEPT_STRING:
                return self.read(n, what)
            self.skip(n, what)
            return _SKIPPED
        if vtype != _ARRAY:
            fmt = _VALUE_TYPES[vtype][1]
            return self.scalar(fmt, what)
        if depth >= _MAX_NESTING:
            raise self.bad(f"{what} nests arrays more than {_MAX_NESTING} deep")
        itype = self.scalar("<I", f"the element type of {what}")
        n = self.scalar("<Q", f"the length of {what}")
        if itype not in _VALUE_TYPES:
            raise self.bad(f"{what} is an array of value type {itype}, which GGUF does not define")
        if itype not in (_STRING, _ARRAY):
            fmt = _VALUE_TYPES[itype][1]
            width = struct.calcsize(fmt)
            self.count(n, width, 1 << 62, what)
            if keep and n <= _MAX_ARRAY:
                raw = self.read(n * width, what)
                return [bool(v) if itype == 7 else v for (v,) in struct.iter_unpack(fmt, raw)]
            self.skip(n * width, what)
            return _SKIPPED
        # Strings (8 bytes of length each at least) or arrays (12 bytes).
        self.count(n, 8 if itype == _STRING else 12, _MAX_ELEMENTS, what)
        self.walked += n
        if self.walked > _MAX_ELEMENTS:
            raise self.bad(f"its arrays hold more than {_MAX_ELEMENTS} strings and arrays in all")
        for i in range(n):
            if itype == _STRING:
                self.skip(self.scalar("<Q", f"the length of {what}[{i}]"), f"{what}[{i}]")
            else:
                self.value(_ARRAY, f"{what}[{i}]", keep=False, depth=depth + 1)
        return _SKIPPED


def _decode(raw: bytes, what: str, reader: _HeaderReader, strict: bool) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        if strict:
            raise reader.bad(
                f"{what} is not valid UTF-8 ({e.reason} at byte {e.start}), and the scan reads it"
            ) from None
        return raw.decode("utf-8", errors="replace")


#: name -> (numpy shape, GGML type name, first byte in the file, bytes)
_Entries = dict[str, tuple[tuple[int, ...], str, int, int]]


def _read_header(
    fh: Any, size: int, path: Path, check: Any, gguf: Any
) -> tuple[dict[str, Any], _Entries]:
    """The metadata (kept keys, plain Python values) and the tensors of a
    GGUF file, read from ``fh`` (at its start; ``size`` bytes long)."""
    r = _HeaderReader(fh, size, path, check)
    if size < 4 or r.read(4, "the magic number") != b"GGUF":
        raise r.bad("it does not begin with the GGUF magic number")
    version = r.scalar("<I", "the version")
    if version & 0xFFFF == 0 and version:
        raise CheckpointError(
            f"{path} is a GGUF file of the other byte order (big-endian); skipsearch reads "
            "little-endian GGUF files"
        )
    if version not in _VERSIONS:
        raise r.bad(f"GGUF version {version}; versions {_VERSIONS} are read")
    n_tensors = r.scalar("<Q", "the tensor count")
    n_keys = r.scalar("<Q", "the metadata key count")
    metadata, alignment = _read_metadata(r, n_keys)
    return metadata, _read_tensors(r, n_tensors, alignment, gguf)


def _read_metadata(r: _HeaderReader, n_keys: int) -> tuple[dict[str, Any], int]:
    """The kept metadata and the data alignment."""
    r.count(n_keys, 13, _MAX_KEYS, "the metadata")
    raw_values: dict[str, Any] = {}
    seen: set[bytes] = set()
    alignment = _ALIGNMENT
    for k in range(n_keys):
        raw_key = r.string(f"metadata key #{k}", cap=_MAX_NAME)
        if raw_key in seen:
            raise r.bad(f"metadata key {raw_key!r} appears twice")
        seen.add(raw_key)
        try:
            key: Optional[str] = raw_key.decode("utf-8")
        except UnicodeDecodeError:
            key = None  # no key the scan reads: its value is read past
        what = f"metadata key {key!r}" if key is not None else f"metadata key #{k}"
        vtype = r.scalar("<I", f"the value type of {what}")
        if key == "general.architecture" and vtype != _STRING:
            # An array or a number here is no architecture, not a missing one.
            found = _VALUE_TYPES[vtype][0] if vtype in _VALUE_TYPES else f"value type {vtype}"
            raise r.bad(
                f"metadata key 'general.architecture' must be a STRING (the model's "
                f"architecture), got {found}"
            )
        keep = key is not None and not key.startswith("tokenizer.")
        value = r.value(vtype, what, keep)
        if key == "general.alignment":
            if vtype != _UINT32 or not value or value & (value - 1):
                raise r.bad(f"general.alignment must be a power of two (UINT32), got {value!r}")
            alignment = value
        if key is not None and value is not _SKIPPED:
            raw_values[key] = value
    metadata: dict[str, Any] = {}
    for key, value in raw_values.items():
        if isinstance(value, bytes):
            # Strings the scan does not read keep their readable part.
            value = _decode(value, f"metadata key {key!r}", r, key == "general.architecture")
        metadata[key] = value
    return metadata, alignment


def _read_tensors(r: _HeaderReader, n_tensors: int, alignment: int, gguf: Any) -> _Entries:
    """The tensor infos, each checked to lie inside the file."""
    r.count(n_tensors, 24, _MAX_TENSORS, "the tensor list")
    infos: list[tuple[str, tuple[int, ...], str, int, int]] = []
    for t in range(n_tensors):
        raw = r.string(f"the name of tensor #{t}", cap=_MAX_NAME)
        name = _decode(raw, f"the name of tensor #{t} ({raw!r})", r, True)
        n_dims = r.scalar("<I", f"the dimension count of tensor {name!r}")
        if n_dims > _MAX_DIMS:
            raise r.bad(f"tensor {name!r} claims {n_dims} dimensions (at most {_MAX_DIMS})")
        dims = struct.unpack(f"<{n_dims}Q", r.read(8 * n_dims, f"the dimensions of {name!r}"))
        code = r.scalar("<I", f"the type of tensor {name!r}")
        offset = r.scalar("<Q", f"the offset of tensor {name!r}")
        try:
            qtype = gguf.GGMLQuantizationType(code)
            block, type_size = gguf.GGML_QUANT_SIZES[qtype]
        except (ValueError, KeyError):
            raise r.bad(
                f"tensor {name!r} has GGML type {code}, which this gguf release does not know "
                "(a newer type? pip install -U gguf)"
            ) from None
        elements = 1
        for n in dims:
            elements *= n
        if any(n >= 1 << 63 for n in dims) or elements >= 1 << 62:
            raise r.bad(f"tensor {name!r} claims dimensions {list(dims)}: too many elements")
        if dims and dims[0] % block:
            raise r.bad(
                f"tensor {name!r} of type {qtype.name} has rows of {dims[0]} values, not a "
                f"multiple of its block of {block}"
            )
        shape = tuple(reversed(dims))
        infos.append((name, shape, qtype.name, offset, elements // block * type_size))
    start = -(-r.pos // alignment) * alignment
    entries: _Entries = {}
    for name, shape, dtype, offset, n_bytes in infos:
        if name in entries:
            raise r.bad(f"tensor {name!r} appears twice")
        if offset % alignment:
            raise r.bad(f"tensor {name!r} has offset {offset}, not a multiple of {alignment}")
        begin = start + offset
        if begin + n_bytes > r.size:
            raise r.bad(
                f"tensor {name!r} claims bytes {begin} to {begin + n_bytes}, beyond the end of "
                f"the file ({r.size} bytes): it is truncated (an interrupted download or copy?)"
            )
        entries[name] = (shape, dtype, begin, n_bytes)
    return entries


class _GGUFFile(ListedFile):
    """One GGUF file: metadata and tensor descriptions from its header, and
    tensors read and dequantized one at a time."""

    def __init__(self, path: Path):
        gguf = import_gguf()
        self.path = path
        self._gguf = gguf
        try:
            fh = open(path, "rb", buffering=_BUFFER)  # noqa: SIM115 - closed by the with below
        except OSError as e:
            raise CheckpointError(f"not a readable GGUF file: {path}: {e}") from e
        with fh:
            st = os.fstat(fh.fileno())
            self._identity = _identity(st)

            def check(when: str) -> None:
                self._check(os.fstat(fh.fileno()), when)

            try:
                metadata, entries = _read_header(fh, st.st_size, path, check, gguf)
            except OSError as e:
                raise CheckpointError(f"not a readable GGUF file: {path}: {e}") from e
            check("while its header was read")
        # Tokenizer keys are read past (vocabularies); the rest is kept.
        self.metadata: dict[str, Any] = metadata
        # name -> (numpy shape, type name, first byte in the file, bytes)
        self._entries: _Entries = entries

    def get(self, key: str, index: Optional[int] = None) -> np.ndarray:
        shape, dtype, begin, size = self._entries[key]
        gguf = self._gguf
        if index is not None:
            if len(shape) < 2 or not 0 <= index < shape[0]:
                raise CheckpointError(
                    f"{self.path}: tensor {key!r} of shape {shape} has no index {index} on its "
                    "first axis"
                )
            step = size // shape[0]
            begin, size, shape = begin + index * step, step, shape[1:]
        raw = self._read_range(begin, size, f"tensor {key!r}")
        qtype = gguf.GGMLQuantizationType[dtype]
        if dtype == "F64":
            array = raw.view("<f8").astype(np.float64)
        elif dtype in GGUF_DTYPES:
            rows = int(np.prod(shape[:-1], dtype=np.int64)) if len(shape) > 1 else 1
            try:
                array = gguf.quants.dequantize(raw.reshape(rows, -1), qtype)
            except NotImplementedError as e:
                raise CheckpointError(
                    f"{self.path}: tensor {key!r} is stored as {dtype}, which this gguf release "
                    f"cannot dequantize ({e}); upgrade it: pip install -U gguf"
                ) from e
            array = np.asarray(array, dtype=np.float32)
        elif dtype in _INTS:
            array = raw.view(_INTS[dtype])
        else:
            raise CheckpointError(
                f"{self.path}: tensor {key!r} has GGUF type {dtype}, which skipsearch does not read"
            )
        del raw
        return np.ascontiguousarray(array).reshape(shape)


class GGUFCheckpoint(Checkpoint):
    """A GGUF checkpoint (llama.cpp), with the interface of
    :class:`~skipsearch.io.checkpoints.Checkpoint`.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.gguf`` file, or a directory holding exactly one.
    config_required : bool
        Ignored: a GGUF file carries its configuration (its metadata).

    Attributes
    ----------
    config : dict
        ``model_type`` (``"gguf-<architecture>"``), the ``<arch>.*`` metadata
        keys and the scalar ``general.*`` ones.
    config_path : pathlib.Path
        The GGUF file (where the configuration was read).
    name : str
        The repo id of a Hugging Face cache snapshot, else the file's name
        without ``.gguf``.

    Raises
    ------
    ImportError
        The ``gguf`` package is missing (the message names the extra).
    CheckpointError
        The file is not a readable GGUF file (``"not a readable GGUF file:
        <file>: <what>"``: a count or length beyond the bytes left or the
        caps, an unknown value or tensor type, a tensor whose bytes lie
        beyond the end of the file, an architecture or tensor name that is
        not UTF-8), has no ``general.architecture`` or is big-endian.
    CheckpointChangedError
        The file changed (was cut, rewritten or replaced) while its header
        was read.
    """

    _suffix = ".gguf"

    def _open_checkpoint(self, path: PathLike, config_required: bool) -> None:
        p = _existing(path)
        if p.is_dir():
            found = sorted(q for q in p.glob("*.gguf") if q.is_file() or _dangling(q))
            if len(found) != 1:
                raise CheckpointError(
                    f"{p} holds {len(found)} GGUF files; pass the .gguf file to scan"
                )
            p = found[0]
        if _dangling(p):
            raise _incomplete(p, "the GGUF file")
        f = _GGUFFile(p.resolve())
        arch = f.metadata.get("general.architecture")
        if not isinstance(arch, str) or not arch:
            raise CheckpointError(
                f"{p} has no general.architecture in its metadata: the scan reads the model's "
                "architecture, and with it the FFN layout, from it"
            )
        config: dict[str, Any] = {"model_type": GGUF_MODEL_TYPE_PREFIX + arch}
        for key, value in f.metadata.items():
            if key.startswith(arch + ".") or (
                key.startswith("general.") and not isinstance(value, list)
            ):
                config[key] = value
        self.root = p.parent.resolve()
        self.source = p.resolve()
        self.config_path = f.path
        self.config = config
        self.name = hub_name(p.parent) or re.sub(r"\.gguf$", "", p.name)
        self._files = {f.path: f}
        self._key_file = {key: f.path for key in f.keys()}
        self.files = [f.path]
        self._refuse_scales(f)

    def _refuse_scales(self, f: _GGUFFile) -> None:
        """Refuse FFN weights that llama.cpp rescales after the product: a
        ``<weight>.scale`` tensor (per-tensor output scales) or MPT's
        activation scales (``blk.{i}.ffn.act.scales``), which the scan's
        reading of ``W_up``, ``W_gate`` and ``W_down`` alone would miss."""
        keys = set(f.keys())
        for key in sorted(keys):
            match = re.fullmatch(r"(blk\.[0-9]+\.ffn_[a-z_]+)\.scale", key)
            if match and match.group(1) + ".weight" in keys:
                raise CheckpointError(
                    f"{f.path}: {key} rescales the output of {match.group(1)}.weight, which "
                    "skipsearch does not fold into the weight; it decides only blocks whose "
                    "weights alone define them"
                )
            if re.fullmatch(r"blk\.[0-9]+\.ffn\.act\.scales", key):
                raise CheckpointError(
                    f"{f.path}: {key} divides the FFN's activations by per-neuron scales (MPT's "
                    "AWQ activation scales), which skipsearch does not fold into W_down"
                )
