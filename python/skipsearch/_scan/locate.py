"""Locate a checkpoint's FFN blocks, without reading a weight.

:func:`locate` opens a checkpoint (:class:`skipsearch.checkpoints.Checkpoint`),
chooses its layout and activation (the family of its ``model_type``, or a
user :class:`~skipsearch.Layout`), finds the tensor names of every FFN
block, and checks shapes, dtypes and quantization against the config from
the safetensors headers alone. Everything that can be wrong with a
checkpoint, except NaN/Inf in its weights, is found here, before any block
is decided. The identity of every file is recorded as its header is read,
so that a file changed afterwards is refused when a block is read
(:class:`~skipsearch.checkpoints.CheckpointChangedError`).
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union, cast

import numpy as np

from skipsearch._types import Norm
from skipsearch._warnings import CheckpointSeriesWarning
from skipsearch.activations import Activation, get_activation
from skipsearch.checkpoints import CONFIG_NAME, FLOAT_DTYPES, Checkpoint, CheckpointError
from skipsearch.layouts import FAMILIES, Layout, config_activation, supported_model_types
from skipsearch.quantization import (
    SCALE_NAMES,
    Quantization,
    config_quantization,
    refuse_other_formats,
    scale_layout,
)

__all__ = [
    "BlockKeys",
    "CheckpointInfo",
    "STEP_NAME",
    "SUPPORTED_MODEL_TYPES",
    "checkpoint_step",
    "expand_paths",
    "locate",
]

#: ``model_type`` values (from ``config.json``) whose FFN layout the scan knows.
SUPPORTED_MODEL_TYPES = tuple(supported_model_types())

PathLike = Union[str, "os.PathLike[str]"]

_FP8 = ("F8_E4M3", "F8_E5M2")


@dataclass(frozen=True)
class BlockKeys:
    """The tensor names of one FFN block (None: the block has no such tensor).

    ``up_scale``, ``down_scale`` and ``gate_scale`` name the FP8 scale stored
    beside a projection weight, which the reader applies.
    """

    name: str
    layer: int
    up: str
    down: str
    gate: Optional[str]
    b_up: Optional[str]
    b_down: Optional[str]
    b_gate: Optional[str] = None
    up_scale: Optional[str] = None
    down_scale: Optional[str] = None
    gate_scale: Optional[str] = None


@dataclass(frozen=True)
class CheckpointInfo:
    """What the scan will read from one checkpoint, found from ``config.json``
    and the tensor names; no weight is loaded.

    Attributes
    ----------
    path : pathlib.Path
        The checkpoint: its ``.safetensors`` file, or its directory when it
        is sharded.
    config_path : pathlib.Path or None
        Its ``config.json`` (None for a generic layout without one).
    files : tuple of pathlib.Path
        The safetensors files that hold its tensors.
    name : str
        A short name for reports: the checkpoint's directory name.
    model_type : str or None
        ``model_type`` from ``config.json``.
    family : str
        The family whose layout is used, or ``"generic"`` for a user layout.
    hidden_act : str
        The activation name as the config (or the layout) gives it.
    activation : str
        Its registry name; gated blocks get the gated entry (``"swiglu"``).
    d, m : int
        Model width and hidden width: ``W_up`` is ``(m, d)`` once read.
    num_layers : int
        Number of FFN blocks found.
    norm : {"pre", "post"} or None
        LayerNorm placement.
    dtype : str
        The safetensors dtype of the first ``W_up`` (``"F32"``, ``"BF16"``, ...).
    blocks : tuple of str
        The block names, e.g. ``"bert.encoder.layer.0"``.
    quantization : str or None
        How quantized FFN weights are dequantized, e.g. ``"F8_E4M3 x
        weight_scale_inv, blocks of 128 x 128"``; None when they are not
        quantized. Other quantized formats are refused (see
        :mod:`skipsearch.quantization`).
    step : int or None
        The training step its directory's name carries (``checkpoint-2000``,
        ``step1000``, ``global_step500``, ``step_1000``; any case), else None.
    """

    path: Path
    config_path: Optional[Path]
    files: tuple[Path, ...]
    name: str
    model_type: Optional[str]
    family: str
    hidden_act: str
    activation: str
    d: int
    m: int
    num_layers: int
    norm: Optional[Norm]
    dtype: str
    blocks: tuple[str, ...]
    quantization: Optional[str] = None
    step: Optional[int] = None
    _blocks: tuple[BlockKeys, ...] = field(default=(), repr=False, compare=False)
    _act: Optional[Activation] = field(default=None, repr=False, compare=False)
    _transpose: bool = field(default=False, repr=False, compare=False)
    _quant: Optional[Quantization] = field(default=None, repr=False, compare=False)


# -- paths -----------------------------------------------------------------------------------------

#: Checkpoint directory names that carry a training step: ``checkpoint-2000``
#: (Hugging Face ``Trainer``), ``step1000`` (Pythia's revisions),
#: ``global_step500`` (DeepSpeed), ``step_1000``; any case, the whole name.
STEP_NAME = re.compile(r"(?:checkpoint|global[-_]?step|step)[-_]?([0-9]+)", re.IGNORECASE)

#: The names :data:`STEP_NAME` accepts, in words, for error messages.
STEP_NAMES = "checkpoint-<step>, step<step>, step_<step>, step-<step> or global_step<step>"


def checkpoint_step(name: str) -> Optional[int]:
    """The training step a checkpoint directory's name carries, or None.

    >>> checkpoint_step("checkpoint-2000"), checkpoint_step("Global_Step500"), checkpoint_step("a")
    (2000, 500, None)
    """
    match = STEP_NAME.fullmatch(name)
    return None if match is None else int(match.group(1))


def _is_checkpoint_dir(path: Path) -> bool:
    """Whether a directory holds a checkpoint of its own: ``config.json`` or
    a ``.safetensors`` file (a generic layout needs no config)."""
    if (path / CONFIG_NAME).is_file():
        return True
    return any(q.is_file() for q in path.glob("*.safetensors"))


def _checkpoint_children(path: Path) -> list[Path]:
    """The subdirectories of ``path`` that hold checkpoints, by name."""
    try:
        children = sorted(c for c in path.iterdir() if c.is_dir())
    except OSError:
        return []
    return [c for c in children if _is_checkpoint_dir(c)]


def _short_list(names: list[str], limit: int = 4) -> str:
    more = f", ... ({len(names)} in all)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _series_order(path: Path, children: list[Path]) -> list[Path]:
    """The checkpoints of a directory in scan order: by step when every name
    carries one (a checkpoint series), else by name.

    Raises
    ------
    CheckpointError
        Some names carry a step and others do not, or two carry the same step.
    """
    steps = {c: checkpoint_step(c.name) for c in children}
    stepped = [c for c in children if steps[c] is not None]
    if not stepped:
        return children
    plain = [c.name for c in children if steps[c] is None]
    if plain:
        raise CheckpointError(
            f"{path} mixes checkpoints whose names carry a training step "
            f"({_short_list([c.name for c in stepped])}) with others whose names do not "
            f"({_short_list(plain)}): a checkpoint series needs every checkpoint directory in it "
            f"named {STEP_NAMES}; rename or move the others, or pass the checkpoints as separate "
            "paths"
        )
    by_step: dict[int, list[str]] = {}
    for c in stepped:
        by_step.setdefault(cast(int, steps[c]), []).append(c.name)
    twins = [names for names in by_step.values() if len(names) > 1]
    if twins:
        raise CheckpointError(
            f"{path} holds several checkpoints of the same training step: "
            + "; ".join(" and ".join(names) for names in twins)
            + "; keep one checkpoint per step in a series"
        )
    return sorted(stepped, key=lambda c: cast(int, steps[c]))


def expand_paths(paths: Union[PathLike, Iterable[PathLike]]) -> list[Path]:
    """The checkpoints named by ``paths`` (a path or a sequence of paths).

    A directory that holds no checkpoint itself (no ``config.json``, no
    ``.safetensors`` file) but whose subdirectories do stands for all of
    them: by step when every subdirectory's name carries a training step
    (:data:`STEP_NAME`: a checkpoint series), else by name. A checkpoint
    named twice (or through a link) is listed once.

    Raises
    ------
    CheckpointError
        A directory mixes step-named checkpoints with others, or holds two
        of the same step.

    Warns
    -----
    skipsearch.CheckpointSeriesWarning
        A directory is a checkpoint itself and also holds step-named
        checkpoints (a ``Trainer`` output folder with its final model): it
        is scanned as the one checkpoint, and the message says how to scan
        the series.
    """
    if isinstance(paths, bytes):
        raise TypeError("paths must be str or os.PathLike, not bytes; decode the path first")
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    else:
        try:
            paths = list(paths)
        except TypeError:
            raise TypeError(
                f"paths must be a path or a sequence of paths, got {type(paths).__name__}"
            ) from None
    if not paths:
        raise ValueError("paths is empty: give at least one checkpoint path")
    out: list[Path] = []
    for p in paths:
        if not isinstance(p, (str, os.PathLike)) or isinstance(os.fspath(p), bytes):
            raise TypeError(f"paths must hold str or os.PathLike values, got {type(p).__name__}")
        if os.fspath(p) == "":
            raise ValueError("paths holds an empty path; give a checkpoint directory or file")
        q = Path(os.fspath(p)).expanduser()
        if q.is_dir():
            children = _checkpoint_children(q)
            if not _is_checkpoint_dir(q):
                if children:
                    out.extend(_series_order(q, children))
                    continue
            else:
                stepped = [c.name for c in children if checkpoint_step(c.name) is not None]
                if stepped:
                    warnings.warn(
                        f"{q} is a checkpoint itself, so it is scanned as one checkpoint, not "
                        f"as the series of its step-named subdirectories "
                        f"({_short_list(stepped)}); to scan the series, pass those "
                        f"subdirectories (e.g. {q / stepped[0]} ...) or move them to a "
                        "directory of their own",
                        CheckpointSeriesWarning,
                        stacklevel=3,
                    )
        out.append(q)
    seen: set[Path] = set()
    unique: list[Path] = []
    for q in out:
        try:
            key = q.resolve()
        except (OSError, RuntimeError):
            key = q
        if key not in seen:
            seen.add(key)
            unique.append(q)
    return unique


# -- one checkpoint --------------------------------------------------------------------------------


def locate(
    path: PathLike,
    layout: Optional[Layout] = None,
    activation: Union[str, Activation, None] = None,
    names: Optional[dict[Path, str]] = None,
) -> tuple[CheckpointInfo, Checkpoint]:
    """Open one checkpoint and find its blocks; no weight is read.

    Parameters
    ----------
    path : str or os.PathLike
        A checkpoint directory or file.
    layout, activation : optional
        As for :func:`skipsearch.scan`.
    names : dict, optional
        Report names by resolved checkpoint directory (the default
        checkpoint's), instead of the directory name.

    Returns
    -------
    (CheckpointInfo, Checkpoint)
    """
    ckpt = Checkpoint(path, config_required=layout is None)
    if names and ckpt.root in names:
        ckpt.name = names[ckpt.root]
    where = str(ckpt.config_path or ckpt.root)
    config = ckpt.config
    # Quantized weights are codes: refuse every format that cannot be
    # dequantized exactly, before the layout is even looked for (GPTQ and
    # AWQ checkpoints have no .weight tensors to find).
    quant = config_quantization(config, where, CheckpointError)
    refuse_other_formats(ckpt.keys(), str(ckpt.root), CheckpointError)
    spec = _resolve(config, layout, activation, where)
    layout = spec["layout"]
    blocks = _find_blocks(ckpt, layout)
    if not blocks:
        found = sorted(ckpt.keys())
        sample = ", ".join(repr(n) for n in found[:4]) + (", ..." if len(found) > 4 else "")
        hint = (
            "; patterns match whole tensor names, so start one with '*' to allow a prefix"
            if "*" not in layout.up
            else ""
        )
        raise CheckpointError(
            f"no FFN blocks found in {ckpt.root}: expected tensors named like {layout.up!r} "
            f"and {layout.down!r} ({{i}} is the layer index"
            + (", * any run of characters)" if "*" in layout.up else ")")
            + f"; the checkpoint has {len(found)} tensor(s): {sample or 'none'}{hint}"
        )
    d, m, sizes = _sizes(ckpt, blocks, spec, where)
    schemes = {_check_block(ckpt, b, layout.transpose, d, m, sizes, quant, where) for b in blocks}
    single = len(ckpt.files) == 1
    act = spec["activation"]
    info = CheckpointInfo(
        path=ckpt.files[0] if single else ckpt.root,
        config_path=ckpt.config_path,
        files=tuple(ckpt.files),
        name=ckpt.name,
        model_type=config.get("model_type"),
        family=spec["family"],
        hidden_act=str(spec["hidden_act"]),
        activation=act.name,
        d=d,
        m=m,
        num_layers=len(blocks),
        norm=spec["norm"],
        dtype=ckpt.dtype(blocks[0].up),
        blocks=tuple(b.name for b in blocks),
        quantization="; ".join(sorted(s for s in set().union(*schemes) if s is not None)) or None,
        step=_step_of(path, ckpt),
        _blocks=tuple(blocks),
        _act=None if _is_registered(act) else act,
        _transpose=layout.transpose,
        _quant=quant,
    )
    return info, ckpt


def _step_of(path: PathLike, ckpt: Checkpoint) -> Optional[int]:
    """The step the checkpoint directory's name carries: the name as given
    (a series listed through links keeps its names), else as resolved."""
    given = Path(os.path.abspath(os.path.expanduser(os.fspath(path))))
    folder = given if given.is_dir() else given.parent
    step = checkpoint_step(folder.name)
    return checkpoint_step(ckpt.root.name) if step is None else step


def _resolve(
    config: dict[str, Any],
    layout: Optional[Layout],
    activation: Union[str, Activation, None],
    where: str,
) -> dict[str, Any]:
    """Layout, activation, family, norm and the sizes the config gives (None
    for a generic layout, whose sizes come from the first ``W_up``)."""
    override = "the activation argument (--activation)"
    if layout is not None:
        given = activation if activation is not None else layout.activation
        hidden_act: Any  # a name, or whatever config.json holds (checked below)
        if given is not None:
            hidden_act = given if isinstance(given, str) else given.name
            act = _chosen_activation(given, layout.gate is not None, override)
        else:
            hidden_act = config.get("hidden_act") or config.get("activation_function")
            if hidden_act is None:
                raise CheckpointError(
                    f"no activation given and {where} has neither hidden_act nor "
                    "activation_function: name it (Layout(..., activation=<name>), or "
                    "--activation on the command line)"
                )
            act = config_activation(hidden_act, gated=layout.gate is not None, where=where)
        return dict(
            layout=layout,
            activation=act,
            hidden_act=hidden_act,
            family="generic",
            norm=layout.norm,
            d=None,
            m=None,
            layers=None,
            layer_key=None,
            sizes="the layout",
        )
    model_type = config.get("model_type")
    if model_type is None:
        raise CheckpointError(
            f"{where} has no model_type; supported: {', '.join(SUPPORTED_MODEL_TYPES)}; any "
            "other model needs the generic mapping (a Layout, or --up/--down on the command line)"
        )
    if not isinstance(model_type, str):
        raise CheckpointError(f"model_type in {where} must be a string, got {model_type!r}")
    fam = FAMILIES.get(model_type)
    if fam is None:
        raise CheckpointError(
            f"model_type {model_type!r} in {where} is not supported; supported: "
            f"{', '.join(SUPPORTED_MODEL_TYPES)}; any other model needs the generic mapping of "
            "key patterns and activation (a Layout, or --up/--down/--activation on the command line)"
        )
    spec = fam.resolve(config, where, read_activation=activation is None)
    if activation is not None:
        spec["hidden_act"] = activation if isinstance(activation, str) else activation.name
        spec["activation"] = _chosen_activation(
            activation, spec["layout"].gate is not None, override
        )
    spec.update(family=fam.name, sizes=f"config.json: {spec['sizes']}")
    return spec


def _chosen_activation(activation: object, gated: bool, where: str) -> Activation:
    """A user-given activation (name or object) for a block with or without a gate."""
    if isinstance(activation, str):
        return config_activation(activation, gated=gated, where=where)
    if not isinstance(activation, Activation):
        raise TypeError(
            f"activation must be a registry name or a skipsearch.Activation, got {activation!r}"
        )
    if activation.gated != gated:
        raise CheckpointError(
            f"{where}: activation {activation.name!r} is {'' if activation.gated else 'not '}gated, but "
            f"the block has {'a' if gated else 'no'} gate projection"
        )
    return activation


def _is_registered(act: Activation) -> bool:
    try:
        return get_activation(act.name) == act
    except (ValueError, TypeError):
        return False


def _find_blocks(ckpt: Checkpoint, layout: Layout) -> list[BlockKeys]:
    """Every block whose ``up`` key matches the layout, encoder blocks before
    decoder blocks (T5), then by layer."""
    up_re = layout.regex(layout.up)
    blocks: list[tuple[tuple[tuple[tuple[bool, str], ...], int], BlockKeys]] = []
    for key in ckpt.keys():
        match = up_re.match(key)
        if match is None:
            continue
        down = Layout.fill(layout.down, match)
        gate = None if layout.gate is None else Layout.fill(layout.gate, match)
        for role, name in (("down", down), ("gate", gate)):
            if name is not None and name not in ckpt:
                raise CheckpointError(
                    f"{ckpt.root} has {key} but no {name} (the {role} projection)"
                )
        # The module path shared by the projections: "h.0.mlp" for
        # "h.0.mlp.c_fc.weight" and "h.0.mlp.c_proj.weight".
        common = os.path.commonprefix([k for k in (key, down, gate) if k is not None])
        name = common[: common.rfind(".")] if "." in common else common
        stars = tuple(
            ("decoder" in v, v) for k, v in sorted(match.groupdict().items()) if k.startswith("s")
        )
        block = BlockKeys(
            name=name,
            layer=int(match["layer"]),
            up=key,
            down=down,
            gate=gate,
            b_up=_bias(ckpt, key),
            b_down=_bias(ckpt, down),
            b_gate=_bias(ckpt, gate),
            up_scale=_scale(ckpt, key),
            down_scale=_scale(ckpt, down),
            gate_scale=_scale(ckpt, gate),
        )
        blocks.append(((stars, block.layer), block))
    blocks.sort(key=lambda item: item[0])
    return [b for _, b in blocks]


def _beside(ckpt: Checkpoint, key: Optional[str], name: str) -> Optional[str]:
    """``<module>.<name>`` for ``key = <module>.weight``, when the checkpoint has it."""
    if key is None or not key.endswith("weight"):
        return None
    other = key[: -len("weight")] + name
    return other if other in ckpt else None


def _bias(ckpt: Checkpoint, key: Optional[str]) -> Optional[str]:
    return _beside(ckpt, key, "bias") if key is not None and key.endswith(".weight") else None


def _scale(ckpt: Checkpoint, key: Optional[str]) -> Optional[str]:
    return next((k for k in (_beside(ckpt, key, n) for n in SCALE_NAMES) if k), None)


# -- checks from the headers -----------------------------------------------------------------------


def _sizes(
    ckpt: Checkpoint, blocks: list[BlockKeys], spec: dict[str, Any], where: str
) -> tuple[int, int, str]:
    """``d``, ``m`` and where they came from, checked against the layer count
    and the orientation of a transposed layout."""
    d, m, sizes = spec["d"], spec["m"], spec["sizes"]
    transpose = spec["layout"].transpose
    if d is None:
        first = ckpt.shape(blocks[0].up)
        if len(first) != 2:
            raise CheckpointError(f"{blocks[0].up} has shape {first}; expected a matrix")
        m, d = first[::-1] if transpose else first
        sizes = f"d={d}, m={m} from {blocks[0].up}"
    elif transpose and d == m:
        raise CheckpointError(
            f"{where}: the {spec['family']} weights are stored transposed (in, out), but the hidden "
            f"width equals the model width ({d}), so the shapes cannot confirm the orientation; "
            "scan it with the generic mapping, which states the orientation (a Layout with "
            "transpose=..., or --up/--down with or without --transpose on the command line)"
        )
    if d < 1 or m < 1:
        raise CheckpointError(
            f"{where}: the FFN blocks have {sizes}; a block needs d >= 1 and m >= 1 (a "
            "zero-width FFN is no block to decide)"
        )
    layers = spec["layers"]
    if layers is not None and len(blocks) != layers:
        raise CheckpointError(
            f"{where} has {spec['layer_key']}={layers} but {ckpt.root} holds {len(blocks)} FFN block(s) "
            f"({', '.join(b.name for b in blocks[:6])}{' ...' if len(blocks) > 6 else ''})"
        )
    return d, m, sizes


def _check_block(
    ckpt: Checkpoint,
    b: BlockKeys,
    transpose: bool,
    d: int,
    m: int,
    sizes: str,
    quant: Optional[Quantization],
    where: str,
) -> frozenset[Optional[str]]:
    """Check one block's shapes, dtypes and quantization; return how its
    projections are dequantized (None for plain weights)."""
    schemes: set[Optional[str]] = set()
    for key, scale in ((b.up, b.up_scale), (b.down, b.down_scale), (b.gate, b.gate_scale)):
        if key is not None:
            schemes.add(_check_quantized(ckpt, key, scale, quant, where))

    def expect(shape: tuple[int, int]) -> tuple[int, ...]:
        return shape[::-1] if transpose else shape

    _check_tensor(ckpt, b.up, expect((m, d)), sizes)
    _check_tensor(ckpt, b.down, expect((d, m)), sizes)
    if b.gate is not None:
        _check_tensor(ckpt, b.gate, expect((m, d)), sizes)
    for key, size in ((b.b_up, m), (b.b_down, d), (b.b_gate, m)):
        if key is not None:
            _check_tensor(ckpt, key, (size,), sizes)
    return frozenset(schemes)


def _check_quantized(
    ckpt: Checkpoint, key: str, scale: Optional[str], quant: Optional[Quantization], where: str
) -> Optional[str]:
    """Check that a projection weight is either plain or FP8 with a scale
    skipsearch applies exactly; return how it is dequantized (None: plain)."""
    dtype = ckpt.dtype(key)
    zero_point = _beside(ckpt, key, "weight_zero_point")
    if zero_point is not None and np.any(ckpt.get(zero_point) != 0):
        raise CheckpointError(
            f"{key} has a nonzero {zero_point} (asymmetric quantization), which skipsearch does "
            "not dequantize; it decides only real weights: dequantize the checkpoint first"
        )
    if scale is None:
        if quant is not None and dtype in _FP8:
            raise CheckpointError(
                f"{where} declares quantization ({quant.method}) but {key} ({dtype}) has no "
                f"{' or '.join(SCALE_NAMES)} beside it, so its values are codes whose scale is "
                "unknown; skipsearch never decides on codes"
            )
        return None
    if dtype not in _FP8:
        raise CheckpointError(
            f"{key} is stored as {dtype} with {scale} beside it: skipsearch dequantizes only "
            "float8 (F8_E4M3, F8_E5M2) weights with their scales, not integer-quantized ones or "
            "a scale beside a weight of another dtype; dequantize the checkpoint first"
        )
    scale_dtype = ckpt.dtype(scale)
    if scale_dtype not in FLOAT_DTYPES:
        raise CheckpointError(
            f"{scale} has dtype {scale_dtype}; expected a float scale ({', '.join(FLOAT_DTYPES)})"
        )
    kind, block = scale_layout(
        ckpt.shape(key),
        ckpt.shape(scale),
        None if quant is None else quant.block,
        f"{scale}",
        CheckpointError,
    )
    how = {"tensor": "per tensor", "channel": "per output channel"}.get(kind)
    if how is None:
        assert block is not None  # block-wise scales have a block size
        how = f"blocks of {block[0]} x {block[1]}"
    return f"{dtype} x {scale.rsplit('.', 1)[-1]}, {how}"


def _check_tensor(ckpt: Checkpoint, key: str, expected: tuple[int, ...], sizes: str) -> None:
    shape = ckpt.shape(key)
    if shape != tuple(expected):
        raise CheckpointError(f"{key} has shape {shape}, expected {tuple(expected)} ({sizes})")
    dtype = ckpt.dtype(key)
    if dtype not in FLOAT_DTYPES:
        raise CheckpointError(
            f"{key} has dtype {dtype}; expected a float dtype ({', '.join(FLOAT_DTYPES)})"
        )
