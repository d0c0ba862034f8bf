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

The header is parsed once by :class:`gguf.GGUFReader`, whose memory map is
dropped afterwards: nothing stays open or mapped between reads.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np

from skipsearch._extras import install_hint
from skipsearch.io.checkpoints import (
    GGUF_DTYPES,
    Checkpoint,
    CheckpointChangedError,
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


def _value(field: Any, gguf: Any) -> Any:
    """A metadata field's value as plain Python, or None to leave it out."""
    types = field.types
    if not types:
        return None
    if types[0] == gguf.GGUFValueType.ARRAY:
        if len(types) < 2 or types[-1] in (gguf.GGUFValueType.STRING, gguf.GGUFValueType.ARRAY):
            return None
        if len(field.data) > _MAX_ARRAY:
            return None
        return [v for v in field.contents()]
    value = field.contents()
    if isinstance(value, (bool, int, float, str)):
        return value
    return None


class _GGUFFile(ListedFile):
    """One GGUF file: metadata and tensor descriptions from its header, and
    tensors read and dequantized one at a time."""

    def __init__(self, path: Path):
        gguf = import_gguf()
        self.path = path
        self._gguf = gguf
        try:
            with open(path, "rb") as fh:
                self._identity = _identity(os.fstat(fh.fileno()))
                reader = gguf.GGUFReader(path)
                self._check(os.fstat(fh.fileno()), "while its header was read")
        except CheckpointChangedError:
            raise
        except (OSError, ValueError, KeyError, IndexError) as e:
            raise CheckpointError(
                f"{path} is not a readable GGUF file: it is truncated (an interrupted download or "
                f"copy?) or corrupt; the gguf package's reader said: {e}"
            ) from e
        if reader.byte_order != "I":
            raise CheckpointError(
                f"{path} is a GGUF file of the other byte order (big-endian); skipsearch reads "
                "little-endian GGUF files"
            )
        self.metadata: dict[str, Any] = {}
        for name, field in reader.fields.items():
            if name.startswith("GGUF.") or name.startswith("tokenizer."):
                continue
            value = _value(field, gguf)
            if value is not None:
                self.metadata[name] = value
        # name -> (numpy shape, type name, first byte in the file, bytes)
        self._entries: dict[str, tuple[tuple[int, ...], str, int, int]] = {}
        for t in reader.tensors:
            shape = tuple(int(n) for n in reversed(t.shape.tolist()))
            self._entries[t.name] = (
                shape,
                t.tensor_type.name,
                int(t.data_offset),
                int(t.n_bytes),
            )
        del reader  # drops the memory map

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
        The file is not a readable GGUF file, has no ``general.architecture``
        or is big-endian.
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
