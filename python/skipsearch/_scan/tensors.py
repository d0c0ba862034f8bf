"""Read one FFN block's tensors, and recognise blocks with the same weights.

Each tensor is read on its own (:meth:`skipsearch.io.checkpoints.Checkpoint.get`
reads only its bytes), widened to float32 (float16, bfloat16, float8) or
dequantized with its FP8 scale (float64), and transposed for layouts stored
``(in, out)``. Nothing but the current block is held: the scan drops a
block's tensors before it reads the next one, and compares a possible twin
(tied layers) one tensor at a time. A file that changes after its header
was read (a checkpoint saved again while it is scanned) stops the read with
:class:`~skipsearch.io.checkpoints.CheckpointChangedError`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from typing import Any, Optional

import numpy as np
import numpy.typing as npt

from skipsearch._scan.locate import BlockKeys, CheckpointInfo
from skipsearch.io.checkpoints import Checkpoint, CheckpointError, stored_tolerance
from skipsearch.io.quantization import dequantize

__all__ = [
    "ROLES",
    "block_keys",
    "block_tolerance",
    "fingerprint",
    "read_block",
    "read_tensors",
    "same_weights",
]

#: The tensors of a block, in the order of the decision's arguments.
ROLES = ("W_up", "W_down", "W_gate", "b_up", "b_down", "b_gate")

_KEYS = {
    "W_up": ("up", "up_scale"),
    "W_down": ("down", "down_scale"),
    "W_gate": ("gate", "gate_scale"),
    "b_up": ("b_up", None),
    "b_down": ("b_down", None),
    "b_gate": ("b_gate", None),
}


def _split(array: npt.NDArray[Any], fused: str, m: int) -> tuple[Any, Any]:
    """``(gate, up)`` from a fused gate/up array (its first axis is the
    output axis; see :data:`skipsearch.io.layouts.FUSED_LAYOUTS`)."""
    if fused == "gate_up":
        gate, up = array[:m], array[m:]
    elif fused == "up_gate":
        up, gate = array[:m], array[m:]
    else:  # interleaved: gate rows at even positions, up rows at odd ones
        gate, up = array[0::2], array[1::2]
    return np.ascontiguousarray(gate), np.ascontiguousarray(up)


def _read(
    info: CheckpointInfo, ckpt: Checkpoint, block: BlockKeys, key: str, scale: Optional[str]
) -> npt.NDArray[Any]:
    """One stored tensor of the block (one expert's slice of a 3-D one),
    dequantized with its scale and put in ``torch.nn.Linear`` layout."""
    stacked = block.expert is not None and len(ckpt.shape(block.up)) == 3
    index = block.expert if stacked and len(ckpt.shape(key)) >= 2 else None
    array = ckpt.get(key) if index is None else ckpt.get(key, index)
    if scale is not None:
        scale_index = index if index is not None and len(ckpt.shape(scale)) == 3 else None
        quant_block = None if info._quant is None else info._quant.block
        scale_array = ckpt.get(scale) if scale_index is None else ckpt.get(scale, scale_index)
        array = dequantize(array, scale_array, quant_block, scale, CheckpointError)
    if block.transpose and array.ndim == 2:
        array = np.ascontiguousarray(array.T)
    return array


def read_tensors(
    info: CheckpointInfo, ckpt: Checkpoint, block: BlockKeys
) -> Iterator[tuple[str, Optional[npt.NDArray[Any]]]]:
    """The tensors of ``block`` as ``(role, array)`` pairs in :data:`ROLES`
    order, each a new float array read when the pair is asked for: weights
    in ``torch.nn.Linear`` layout (``W_up`` of shape ``(m, d)``), FP8 weights
    dequantized with their scales, None for a tensor the block has none of.
    A fused gate/up tensor (and its bias) is read once and split: its up
    half comes with ``W_up``, and its gate half is kept for ``W_gate``."""
    gate_half: dict[str, Optional[npt.NDArray[Any]]] = {}
    for role in ROLES:
        if block.fused is not None and role in ("W_up", "b_up"):
            key, scale = (block.up, block.up_scale) if role == "W_up" else (block.b_up, None)
            gate_role = "W_gate" if role == "W_up" else "b_gate"
            if key is None:
                gate_half[gate_role] = None
                yield role, None
                continue
            gate, up = _split(_read(info, ckpt, block, key, scale), block.fused, block.m)
            gate_half[gate_role] = gate
            del gate
            yield role, up
        elif block.fused is not None and role in ("W_gate", "b_gate"):
            yield role, gate_half.pop(role)
        else:
            key_field, scale_field = _KEYS[role]
            key = getattr(block, key_field)
            scale = None if scale_field is None else getattr(block, scale_field)
            yield role, None if key is None else _read(info, ckpt, block, key, scale)


def block_keys(block: BlockKeys) -> tuple[str, ...]:
    """Every tensor name the block's tensors are read from, scales included."""
    keys = (
        block.up,
        block.down,
        block.gate,
        block.b_up,
        block.b_down,
        block.b_gate,
        block.up_scale,
        block.down_scale,
        block.gate_scale,
    )
    return tuple(k for k in keys if k is not None)


def read_block(
    info: CheckpointInfo, ckpt: Checkpoint, block: BlockKeys
) -> dict[str, Optional[npt.NDArray[Any]]]:
    """The block's tensors by role (:data:`ROLES`), read one at a time.

    Each read checks its file before and after (see
    :meth:`skipsearch.io.checkpoints.Checkpoint.get`), and once all are read
    every file they came from is checked again, so that a block never mixes
    tensors from before and after a checkpoint was saved again.

    Raises
    ------
    CheckpointChangedError
        A file of the block changed after its header was read.
    """
    tensors = dict(read_tensors(info, ckpt, block))
    ckpt.check_unchanged(block_keys(block))
    return tensors


def block_tolerance(ckpt: Checkpoint, block: BlockKeys) -> Optional[float]:
    """The default tolerance of ``block``: that of the stored dtypes of the
    flip condition's data, ``W_up`` and ``W_down`` (the skip is the
    identity; a float16 bias or gate must not loosen it). None: float32's
    or float64's own."""
    return stored_tolerance({ckpt.dtype(block.up), ckpt.dtype(block.down)})


def fingerprint(tensors: Mapping[str, Optional[npt.NDArray[Any]]]) -> str:
    """A cheap key for spotting tied blocks: shapes and about 4096 sampled
    entries per tensor. Equal keys are confirmed by :func:`same_weights`,
    so hashing every weight of a large model is never needed."""
    h = hashlib.blake2b(digest_size=16)
    for a in tensors.values():
        if a is None:
            h.update(b"-")
        else:
            flat = a.reshape(-1)
            h.update(str(a.shape).encode())
            h.update(np.ascontiguousarray(flat[:: max(1, flat.size // 4096)]).tobytes())
    return h.hexdigest()


def same_weights(
    tensors: Mapping[str, Optional[npt.NDArray[Any]]],
    info: CheckpointInfo,
    ckpt: Checkpoint,
    other: BlockKeys,
) -> bool:
    """Whether block ``other`` holds exactly ``tensors``; its tensors are
    read and compared one at a time, stopping at the first difference."""
    for role, theirs in read_tensors(info, ckpt, other):
        mine = tensors[role]
        if (mine is None) != (theirs is None) or (
            mine is not None and theirs is not None and not np.array_equal(mine, theirs)
        ):
            return False
        del theirs
    return True
