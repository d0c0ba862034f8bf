"""Locate a checkpoint's FFN blocks, without reading a weight.

:func:`locate` opens a checkpoint (:class:`skipsearch.io.checkpoints.Checkpoint`),
chooses its layout and activation (the family of its ``model_type``, or a
user :class:`~skipsearch.Layout`), finds the tensor names of every FFN
block, and checks shapes, dtypes and quantization against the config from
the safetensors headers alone. Everything that can be wrong with a
checkpoint, except NaN/Inf in its weights, is found here, before any block
is decided. The identity of every file is recorded as its header is read,
so that a file changed afterwards is refused when a block is read
(:class:`~skipsearch.io.checkpoints.CheckpointChangedError`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union, cast

import numpy as np

from skipsearch._scan import hub
from skipsearch._scan.mixing import MixingFigures, ffn_mixing
from skipsearch._types import Norm
from skipsearch._warnings import CheckpointSeriesWarning
from skipsearch.activations import Activation, get_activation
from skipsearch.io.checkpoints import (
    CONFIG_NAME,
    FLOAT_DTYPES,
    Checkpoint,
    CheckpointError,
    expand_user,
    open_checkpoint,
)
from skipsearch.io.hyper_connections import hyper_connection_reason
from skipsearch.io.layouts import (
    FAMILIES,
    NORM_FORMS,
    Layout,
    Part,
    config_activation,
    supported_model_types,
)
from skipsearch.io.quantization import (
    SCALE_NAMES,
    Quantization,
    config_quantization,
    refuse_other_formats,
    scale_layout,
)

__all__ = [
    "STEP_NAME",
    "SUPPORTED_MODEL_TYPES",
    "BlockKeys",
    "CheckpointInfo",
    "PartInfo",
    "checkpoint_step",
    "expand_paths",
    "locate",
]

#: ``model_type`` values (from ``config.json``) whose FFN layout the scan knows.
SUPPORTED_MODEL_TYPES = tuple(supported_model_types())

PathLike = Union[str, "os.PathLike[str]"]

_FP8 = ("F8_E4M3", "F8_E5M2")

#: safetensors dtypes of integer tensors: a projection stored so holds
#: codes (packed low-bit values), never weights skipsearch can decide.
_INTEGER = ("BOOL", "I8", "U8", "I16", "U16", "I32", "U32", "I64", "U64")
#: The dtypes an FP8 weight's scale may have: plain floats, never a GGUF code.
_SCALE_DTYPES = ("F8_E4M3", "F8_E5M2", "F8_E8M0", "F16", "BF16", "F32", "F64")


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
    d: int = 0
    m: int = 0
    part: int = 0
    expert: Optional[int] = None
    fused: Optional[str] = None
    transpose: bool = False


@dataclass(frozen=True)
class PartInfo:
    """One kind of FFN block of a checkpoint, as located.

    Attributes
    ----------
    kind : str
        ``"mlp"``, ``"expert"``, ``"shared_expert"``, ...
    stack : str or None
        The stack or tower (``"encoder"``, ``"decoder"``, ``"vision"``,
        ``"text"``), None for a model's only stack.
    hidden_act, activation : str
        The activation as the config gives it, and its registry name.
    d, m : int
        Model width and hidden width of these blocks.
    blocks : int
        How many blocks of this kind were found.
    norm : {"pre", "post"} or None
        LayerNorm placement.
    form : str
        What the model computes around these blocks.
    note : str or None
        What else the verdict's reader must know.
    scale : float or None
        The residual multiplier ``a`` of ``x + a f(x)``, when not 1.
    undecided : str or None
        Why no theorem covers these blocks' form, when none does.
    """

    kind: str
    stack: Optional[str]
    hidden_act: str
    activation: str
    d: int
    m: int
    blocks: int
    norm: Optional[Norm]
    form: str
    note: Optional[str]
    scale: Optional[float] = None
    undecided: Optional[str] = None
    _act: Optional[Activation] = field(default=None, repr=False, compare=False)
    #: Whether the residual around these blocks is a hyper-connection.
    hyper_connection: bool = False

    @property
    def job_activation(self) -> Union[str, Activation]:
        """The activation as the decision receives it: registry activations
        by name (any executor ships a string), a hand-made one as itself."""
        return self.activation if self._act is None else self._act


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
        Its ``config.json`` (None for a generic layout without one; the
        ``.gguf`` file itself for GGUF, whose metadata is its config).
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
        Model width and hidden width of the first kind of block: ``W_up``
        is ``(m, d)`` once read (other kinds: :attr:`parts`).
    num_layers : int
        Number of FFN blocks found, of every kind.
    norm : {"pre", "post"} or None
        LayerNorm placement.
    dtype : str
        The stored dtypes of ``W_up`` and ``W_down``, which set the default
        tolerance: one (``"F32"``, ``"BF16"``, ``"Q8_0"``, ...), or several,
        comma-separated, when they differ (``"F16, F32"``).
    blocks : tuple of str
        The block names, e.g. ``"bert.encoder.layer.0"``.
    quantization : str or None
        How quantized FFN weights are dequantized, e.g. ``"F8_E4M3 x
        weight_scale_inv, blocks of 128 x 128"``; None when they are not
        quantized. Other quantized formats are refused (see
        :mod:`skipsearch.io.quantization`).
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
    parts: tuple[PartInfo, ...] = ()
    _blocks: tuple[BlockKeys, ...] = field(default=(), repr=False, compare=False)
    _quant: Optional[Quantization] = field(default=None, repr=False, compare=False)
    #: The FFN-site mixing of a hyper-connection, by layer (empty otherwise).
    mixing: dict[int, MixingFigures] = field(default_factory=dict, repr=False, compare=False)
    #: Why the residual is a hyper-connection (its markers), or None.
    hyper_connection: Optional[str] = field(default=None, repr=False, compare=False)


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
    """Whether a directory holds a checkpoint of its own: ``config.json``, a
    ``.safetensors`` or ``.gguf`` file, or PyTorch weights (a generic layout
    needs no config, a GGUF file carries its own)."""
    if (path / CONFIG_NAME).is_file() or (path / "pytorch_model.bin").is_file():
        return True
    if (path / "pytorch_model.bin.index.json").is_file():
        return True
    return any(q.is_file() for pattern in ("*.safetensors", "*.gguf") for q in path.glob(pattern))


def _checkpoint_children(path: Path) -> tuple[list[Path], list[str]]:
    """The subdirectories of ``path`` that hold checkpoints, by name, and the
    names of the step-named ones that hold none (an interrupted save)."""
    try:
        dirs = sorted(c for c in path.iterdir() if c.is_dir())
    except OSError:
        return [], []
    held = {c: _is_checkpoint_dir(c) for c in dirs}
    empty = [c.name for c in dirs if not held[c] and checkpoint_step(c.name) is not None]
    return [c for c in dirs if held[c]], empty


def _short_list(names: list[str], limit: int = 4) -> str:
    more = f", ... ({len(names)} in all)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _warn_empty_steps(path: Path, children: list[Path], empty: list[str]) -> None:
    """Warn about the step-named subdirectories ``empty`` of a series (its
    checkpoints are ``children``) that hold no checkpoint: they are left out."""
    if empty and any(checkpoint_step(c.name) is not None for c in children):
        warnings.warn(
            f"{path}: step-named subdirectories without a checkpoint (no config.json or "
            f"weights) are left out of the series: {_short_list(empty)}",
            CheckpointSeriesWarning,
            stacklevel=4,
        )


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


def expand_paths(
    paths: Union[PathLike, Iterable[PathLike]], revision: Optional[str] = None
) -> list[Path]:
    """The checkpoints named by ``paths`` (a path or a sequence of paths).

    A directory that holds no checkpoint itself (no ``config.json``, no
    ``.safetensors`` file) but whose subdirectories do stands for all of
    them: by step when every subdirectory's name carries a training step
    (:data:`STEP_NAME`: a checkpoint series), else by name. A checkpoint
    named twice (or through a link) is listed once.

    A string that is not an existing path and has the form ``org/name``
    is a Hugging Face repo id: it stands for its snapshot in the local
    cache (of ``revision``: a branch, tag or commit; default ``main``),
    found offline by :func:`skipsearch._scan.hub.resolve_repo_id`; so is a
    bare name the cache holds (``gpt2``: :func:`skipsearch._scan.hub.resolve_name`).

    Raises
    ------
    CheckpointError
        A directory mixes step-named checkpoints with others, or holds two
        of the same step.
    FileNotFoundError
        A repo id (or its revision) is not in the local Hugging Face cache;
        nothing is downloaded.
    ValueError
        ``revision`` is given but no path is a repo id.

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
    hub_ids = 0
    for p in paths:
        if not isinstance(p, (str, os.PathLike)) or isinstance(os.fspath(p), bytes):
            raise TypeError(f"paths must hold str or os.PathLike values, got {type(p).__name__}")
        if os.fspath(p) == "":
            raise ValueError("paths holds an empty path; give a checkpoint directory or file")
        name = os.fspath(p)
        # Not a path: a Hugging Face repo id (org/name, or a bare canonical
        # id), found in the local cache (whose snapshot links are checked
        # there).
        found = hub.resolve_name(name, revision)
        if found is not None:
            q = found
            hub_ids += 1
        else:
            q = expand_user(name)
            snapshot = hub.snapshot_folder(q)
            if snapshot is not None:
                # A snapshot of the cache given as a path: its links too
                # must stay in the repo's blobs/.
                hub.check_snapshot(snapshot)
        if q.is_dir():
            children, empty = _checkpoint_children(q)
            if not _is_checkpoint_dir(q):
                if children:
                    out.extend(_series_order(q, children))
                    _warn_empty_steps(q, children, empty)
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
    if revision is not None and not hub_ids:
        raise ValueError(
            f"revision {revision!r} applies to Hugging Face repo ids (org/name) found in the local "
            "cache, and no path given is one"
        )
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
    ckpt = open_checkpoint(path, config_required=layout is None)
    if names and ckpt.root in names:
        ckpt.name = names[ckpt.root]
    where = str(ckpt.config_path or ckpt.root)
    config = ckpt.config
    # Quantized weights are codes: refuse every format that cannot be
    # dequantized exactly, before the layout is even looked for (GPTQ and
    # AWQ checkpoints have no .weight tensors to find).
    quant = config_quantization(config, where, CheckpointError)
    refuse_other_formats(ckpt.keys(), str(ckpt.source), CheckpointError)
    family, parts = _resolve(config, layout, activation, where, ckpt)
    blocks = _find_blocks(ckpt, [p for p, _ in parts], where)
    if not blocks:
        raise CheckpointError(_nothing_found(ckpt, [p for p, _ in parts]))
    _refuse_integer_codes(ckpt, blocks, config)
    # The sizes of each part found: (d, m, where they came from).
    sized: dict[int, tuple[int, int, str]] = {}
    for index, (part, spec) in enumerate(parts):
        mine = [b for b in blocks if b.part == index]
        if mine:
            sized[index] = _sizes(ckpt, mine[0], part, spec, where)
        elif not part.optional:
            raise CheckpointError(
                f"{ckpt.source}: no {_what(part)} blocks found, expected tensors named like "
                f"{part.up!r} and {part.down!r} beside the "
                f"{', '.join(sorted({_what(parts[b.part][0]) for b in blocks}))} blocks found"
            )
    blocks = [_with(b, d=sized[b.part][0], m=sized[b.part][1]) for b in blocks]
    # Whatever located the blocks, a hyper-connection residual leaves no
    # theorem for them (see skipsearch.io.hyper_connections).
    mixed = hyper_connection_reason(config, [*ckpt.keys(), *_sibling_keys(ckpt)])
    _check_layers(ckpt, blocks, parts, where)
    schemes: set[Optional[str]] = set()
    for b in blocks:
        schemes |= _check_block(ckpt, b, sized[b.part][2], quant, where)
    part_infos = []
    for index, (d, m, _) in sized.items():
        part, spec = parts[index]
        act = spec["activation"]
        part_infos.append(
            PartInfo(
                kind=part.kind,
                stack=part.stack,
                hidden_act=str(spec["hidden_act"]),
                activation=act.name,
                d=d,
                m=m,
                blocks=sum(b.part == index for b in blocks),
                norm=spec["norm"],
                form=_form(spec),
                note=_note(spec),
                scale=spec["scale"],
                undecided=part.undecided or mixed,
                hyper_connection=mixed is not None,
                _act=None if _is_registered(act) else act,
            )
        )
    # Number the parts found 0, 1, ... as info.parts lists them.
    renumber = {old: new for new, old in enumerate(sized)}
    blocks = [_with(b, part=renumber[b.part]) for b in blocks]
    first = part_infos[0]
    single = len(ckpt.files) == 1
    info = CheckpointInfo(
        path=ckpt.files[0] if single else ckpt.root,
        config_path=ckpt.config_path,
        files=tuple(ckpt.files),
        name=ckpt.name,
        model_type=config.get("model_type"),
        family=family,
        hidden_act=first.hidden_act,
        activation=first.activation,
        d=first.d,
        m=first.m,
        num_layers=len(blocks),
        norm=first.norm,
        dtype=", ".join(sorted({ckpt.dtype(k) for b in blocks for k in (b.up, b.down)})),
        blocks=tuple(b.name for b in blocks),
        quantization="; ".join(sorted(s for s in schemes if s is not None)) or None,
        step=_step_of(path, ckpt),
        parts=tuple(part_infos),
        _blocks=tuple(blocks),
        _quant=quant,
        mixing={} if mixed is None else ffn_mixing(ckpt, config, {b.layer for b in blocks}),
        hyper_connection=mixed,
    )
    return info, ckpt


def _with(block: BlockKeys, **changes: Any) -> BlockKeys:
    return dataclasses.replace(block, **changes)


def _what(part: Part) -> str:
    """A part's kind and stack in words: ``"vision mlp"``."""
    return f"{part.stack} {part.kind}" if part.stack else part.kind


def _form(spec: dict[str, Any]) -> str:
    form = str(spec["form"])
    if spec["scale"] is not None:
        form = form.replace("f(", f"{spec['scale']:g} * f(", 1) if "f(" in form else form
        # The exact multiplier (a float32 from GGUF is no short decimal).
        form += f" ({spec['scale_key']} = {spec['scale']!r})"
    return form


def _note(spec: dict[str, Any]) -> Optional[str]:
    notes = [n for n in (spec["note"],) if n]
    if spec["repeat"] is not None and not notes:
        notes.append(
            f"one FFN block shared by every layer: the model applies it {spec['repeat']} times"
        )
    return "; ".join(notes) or None


def _nothing_found(ckpt: Checkpoint, parts: list[Part]) -> str:
    """The error for a checkpoint in which no part matches: what was looked
    for (every kind of block), what the checkpoint holds, and the names
    closest to the patterns."""
    found = sorted(ckpt.keys())
    part = parts[0]
    sample = ", ".join(repr(n) for n in found[:4]) + (", ..." if len(found) > 4 else "")
    others = ""
    if len(parts) > 1:
        listed = [f"{_what(p)}: {p.up!r}" for p in parts[1:5]]
        more = f", ... ({len(parts)} kinds in all)" if len(parts) > 5 else ""
        others = f", or the other kinds of block ({'; '.join(listed)}{more})"
    message = (
        f"no FFN blocks found in {ckpt.source}: expected tensors named like {part.up!r} "
        f"and {part.down!r}{others} ({{i}} is the layer index"
        + (", * any run of characters)" if "*" in part.up else ")")
        + f"; the checkpoint has {len(found)} tensor(s): {sample or 'none'}"
    )
    return message + _closest_hint(found, part)


def _closest_hint(keys: list[str], part: Part) -> str:
    """Tensor names that look like the up pattern, and the pattern that
    would match them (the usual slip: no leading ``*`` for a prefix)."""
    import difflib

    probe = part.up.replace("{i}", "0").replace("{e}", "0").replace("*", "")
    close = difflib.get_close_matches(probe, keys, n=3, cutoff=0.4)
    tail = probe.lstrip(".")
    suffix = [k for k in keys if k.endswith(tail) or tail.split(".", 1)[-1] in k]
    candidates = list(dict.fromkeys(close + suffix[:2]))[:3]
    hint = ""
    if candidates:
        hint = f"; closest names in the checkpoint: {', '.join(repr(k) for k in candidates)}"
    if not part.up.startswith("*"):
        matches = [k for k in keys if Layout.regex_of("*" + part.up).match(k)]
        if matches:
            hint += (
                f"; the pattern {'*' + part.up!r} would match {len(matches)} tensor(s) (e.g. "
                f"{matches[0]!r}): patterns match whole tensor names, so start one with '*' to "
                "allow a prefix"
            )
        else:
            hint += "; patterns match whole tensor names, so start one with '*' to allow a prefix"
    return hint


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
    ckpt: Checkpoint,
) -> tuple[str, list[tuple[Part, dict[str, Any]]]]:
    """The family name and, for each of its parts, the part and what the
    config gives for it (activation, sizes, norm, form, ...); a generic
    layout is one part whose sizes come from its first ``W_up``."""
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
                source = (
                    f"{where} has neither hidden_act nor activation_function"
                    if ckpt.config_path is not None
                    else f"there is no config.json beside {where} to read it from"
                )
                raise CheckpointError(
                    f"no activation given, and {source}: name it (Layout(..., "
                    "activation=<name>), or --activation on the command line)"
                )
            act = config_activation(hidden_act, gated=layout.gate is not None, where=where)
        part = Part(
            kind="mlp",
            up=layout.up,
            down=layout.down,
            gate=layout.gate,
            transpose=layout.transpose,
            activation_keys=(),
            d_keys=(),
            m_keys=(),
            layer_keys=(),
            norm=layout.norm,
            # The form says where the LayerNorm sits when the layout does.
            form=NORM_FORMS[layout.norm] if layout.norm else "x + f(x)",
        )
        spec = part.resolve({}, where, read_activation=False)
        spec.update(activation=act, hidden_act=hidden_act, sizes="the layout")
        return "generic", [(part, spec)]
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
        # The automatic layout of a model_type the registry lacks (imported
        # here: skipsearch._scan.auto imports this module).
        from skipsearch._scan.auto import automatic_parts

        return automatic_parts(config, model_type, activation, where, ckpt, SUPPORTED_MODEL_TYPES)
    out = []
    for part in fam.resolve_parts(config):
        spec = part.resolve(config, where, read_activation=activation is None)
        if activation is not None:
            spec["hidden_act"] = activation if isinstance(activation, str) else activation.name
            spec["activation"] = _chosen_activation(activation, part.gated, override)
        source = "metadata" if fam.name.startswith("gguf-") else "config.json"
        spec["sizes"] = f"{source}: {spec['sizes']}" if spec["sizes"] else "the tensors"
        out.append((part, spec))
    return fam.name, out


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


def _find_blocks(ckpt: Checkpoint, parts: list[Part], where: str) -> list[BlockKeys]:
    """Every block of every part: encoder blocks before decoder blocks (T5),
    stacks in the order the family lists them, then by layer, part and
    expert."""
    stacks: dict[Optional[str], int] = {}
    for part in parts:
        stacks.setdefault(part.stack, len(stacks))
    keys = ckpt.keys()
    blocks: list[tuple[tuple[Any, ...], BlockKeys]] = []
    claimed: dict[str, int] = {}
    for index, part in enumerate(parts):
        layout = part.layout()
        up_re = layout.regex(part.up)
        for key in keys:
            match = up_re.match(key)
            if match is None:
                continue
            if key in claimed:
                raise CheckpointError(
                    f"{ckpt.source}: tensor {key} matches two kinds of block "
                    f"({_what(parts[claimed[key]])} and {_what(part)}); the family's patterns "
                    "overlap"
                )
            claimed[key] = index
            down = Layout.fill(part.down, match)
            gate = None if part.gate is None else Layout.fill(part.gate, match)
            for role, name in (("down", down), ("gate", gate)):
                if name is not None and name not in ckpt:
                    raise CheckpointError(
                        f"{ckpt.source} has {key} but no {name} (the {role} projection)"
                    )
            # The module path shared by the projections: "h.0.mlp" for
            # "h.0.mlp.c_fc.weight" and "h.0.mlp.c_proj.weight".
            common = os.path.commonprefix(  # noqa: RUF071 - dotted names, not paths
                [k for k in (key, down, gate) if k is not None]
            )
            name = common[: common.rfind(".")] if "." in common else common
            stars = tuple(
                ("decoder" in v, v)
                for k, v in sorted(match.groupdict().items())
                if k.startswith("s")
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
                part=index,
                fused=part.fused,
                transpose=part.transpose,
                expert=int(match["expert"]) if match.groupdict().get("expert") else None,
            )
            order = (stacks[part.stack], stars, block.layer, index)
            if part.experts:
                shape = ckpt.shape(key)
                if len(shape) != 3:
                    raise CheckpointError(
                        f"{ckpt.source}: {key} has shape {shape}; expected a 3-D tensor of "
                        "stacked experts [experts, out, in]"
                    )
                for e in range(shape[0]):
                    blocks.append(((*order, e), _with(block, name=f"{name}.{e}", expert=e)))
            else:
                blocks.append(((*order, block.expert or 0), block))
    blocks.sort(key=lambda item: item[0])
    return [b for _, b in blocks]


def _beside(ckpt: Checkpoint, key: Optional[str], name: str) -> Optional[str]:
    """``<module>.<name>`` for ``key = <module>.weight``, when the checkpoint has it."""
    if key is None or not key.endswith("weight"):
        return None
    other = key[: -len("weight")] + name
    return other if other in ckpt else None


def _bias(ckpt: Checkpoint, key: Optional[str]) -> Optional[str]:
    """The bias of a projection: ``<module>.bias`` beside ``<module>.weight``,
    or ``<name>_bias`` beside a bare parameter ``<name>`` (gpt-oss's
    stacked experts)."""
    if key is None:
        return None
    if key.endswith(".weight"):
        return _beside(ckpt, key, "bias")
    other = key + "_bias"
    return other if other in ckpt else None


def _scale(ckpt: Checkpoint, key: Optional[str]) -> Optional[str]:
    """The scale tensor of a quantized projection: ``weight_scale_inv`` or
    ``weight_scale`` beside ``<module>.weight``, or, for a float8 weight
    only, ``<module>.scale`` (DeepSeek-V4's release: its ``Linear`` keeps
    ``weight`` and ``scale``, E8M0 blocks of 128 x 128, which vLLM's loader
    renames to ``weight_scale_inv``). A ``.scale`` beside a weight of
    another dtype is left alone: it need not be a quantization scale."""
    found = next((k for k in (_beside(ckpt, key, n) for n in SCALE_NAMES) if k), None)
    fp8 = key is not None and key in ckpt and ckpt.dtype(key) in _FP8
    other = _beside(ckpt, key, "scale") if fp8 and str(key).endswith(".weight") else None
    if found is not None and other is not None:
        raise CheckpointError(
            f"{key} has two scales beside it, {found} and {other}: which one its codes are "
            "scaled by is not known, so skipsearch decides neither"
        )
    return found or other


# -- checks from the headers -----------------------------------------------------------------------


def _stored(ckpt: Checkpoint, key: str, block: BlockKeys) -> tuple[int, ...]:
    """The shape of one expert's slice (or of the whole tensor), as stored."""
    shape = ckpt.shape(key)
    if block.expert is not None and _stacked(ckpt, block):
        return shape[1:]
    return shape


def _stacked(ckpt: Checkpoint, block: BlockKeys) -> bool:
    """Whether the block is one slice of 3-D expert tensors."""
    return block.expert is not None and len(ckpt.shape(block.up)) == 3


def _sizes(
    ckpt: Checkpoint, first: BlockKeys, part: Part, spec: dict[str, Any], where: str
) -> tuple[int, int, str]:
    """``d``, ``m`` of a part and where they came from, checked against the
    orientation of a transposed layout."""
    d, m, sizes = spec["d"], spec["m"], spec["sizes"]
    shape = _stored(ckpt, first.up, first)
    if len(shape) != 2:
        raise CheckpointError(
            f"{ckpt.source}: {first.up} has shape {ckpt.shape(first.up)}; expected a matrix"
        )
    out, inp = shape[::-1] if part.transpose else shape
    if part.fused is not None:
        out //= 2
    if d is None or m is None:
        found = f"d={inp}, m={out} from {first.up}"
        sizes = found if d is None and m is None else f"{sizes}, {found}"
        d = inp if d is None else d
        m = out if m is None else m
    if part.transpose and d == m and spec["d"] is not None and spec["m"] is not None:
        raise CheckpointError(
            f"{where}: the {_what(part)} weights are stored transposed (in, out), but the hidden "
            f"width equals the model width ({d}), so the shapes cannot confirm the orientation; "
            "scan it with the generic mapping, which states the orientation (a Layout with "
            "transpose=..., or --up/--down with or without --transpose on the command line)"
        )
    if d < 1 or m < 1:
        raise CheckpointError(
            f"{where}: the FFN blocks have {sizes}; a block needs d >= 1 and m >= 1 (a "
            "zero-width FFN is no block to decide)"
        )
    return d, m, sizes


def _check_layers(
    ckpt: Checkpoint,
    blocks: list[BlockKeys],
    parts: list[tuple[Part, dict[str, Any]]],
    where: str,
) -> None:
    """Per stack, the layers found must be exactly those the config counts;
    per layer, the experts those it counts."""
    stacks: dict[Optional[str], list[int]] = {}
    for index, (part, _) in enumerate(parts):
        stacks.setdefault(part.stack, []).append(index)
    for stack, members in stacks.items():
        counted = [(parts[i][1]["layers"], parts[i][1]["layer_key"]) for i in members]
        counted = [(n, k) for n, k in counted if n is not None]
        if not counted:
            continue
        layers, key = counted[0]
        mine = [b for b in blocks if b.part in members and not parts[b.part][0].repeat_keys]
        if not any(b.part in members for b in blocks):
            continue  # a stack the checkpoint lacks (optional parts only: checked before)
        found = sorted({b.layer for b in mine})
        # Compared without listing range(layers): a config may name any
        # count, 10**30 included.
        if len(found) != layers or (found and (found[0], found[-1]) != (0, layers - 1)):
            names = [b.name for b in mine]
            held = (
                f"{len(found)} layer(s) with FFN blocks"
                if len(names) != len(found)
                else (f"{len(mine)} FFN block(s)")
            )
            raise CheckpointError(
                f"{where} has {key}={layers}"
                + (f" for the {stack} stack" if stack else "")
                + f" but {ckpt.source} holds {held} "
                f"({', '.join(names[:6])}{' ...' if len(names) > 6 else ''})"
            )
    for part, spec in parts:
        expected = spec.get("layer_set")
        if expected is None:
            continue
        found = sorted(
            {
                b.layer
                for b in blocks
                if (parts[b.part][0].kind, parts[b.part][0].stack) == (part.kind, part.stack)
            }
        )
        if found != sorted(expected):
            raise CheckpointError(
                f"{where} puts the {_what(part)} blocks in layer(s) {_layer_list(sorted(expected))}, "
                f"but {ckpt.source} holds them in layer(s) {_layer_list(found)}"
            )
    for part, spec in parts:
        if spec["experts"] is None:
            continue
        # Experts of one kind in one layer, whichever form names them: a
        # layer holding both the per-expert and the stacked form counts both.
        per_layer: dict[int, int] = {}
        for b in blocks:
            other = parts[b.part][0]
            if (other.kind, other.stack) == (part.kind, part.stack):
                per_layer[b.layer] = per_layer.get(b.layer, 0) + 1
        wrong = {layer: n for layer, n in per_layer.items() if n != spec["experts"]}
        if wrong:
            layer, n = sorted(wrong.items())[0]
            raise CheckpointError(
                f"{where} gives {spec['experts_key']}={spec['experts']} experts per layer, but "
                f"layer {layer} of "
                f"{ckpt.source} holds {n} {_what(part)} block(s)"
            )


def _layer_list(layers: list[int]) -> str:
    """Layer indices (sorted) in words: ``"0-3, 5"``, ``"none"``."""
    runs: list[tuple[int, int]] = []
    for i in layers:
        if runs and i == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs) or "none"


def _check_block(
    ckpt: Checkpoint,
    b: BlockKeys,
    sizes: str,
    quant: Optional[Quantization],
    where: str,
) -> set[Optional[str]]:
    """Check one block's shapes, dtypes and quantization; return how its
    projections are dequantized (None for plain weights)."""
    schemes: set[Optional[str]] = set()
    for key, scale in ((b.up, b.up_scale), (b.down, b.down_scale), (b.gate, b.gate_scale)):
        if key is not None:
            schemes.add(_check_quantized(ckpt, key, scale, quant, where))
    d, m = b.d, b.m
    width = 2 * m if b.fused is not None else m

    def expect(shape: tuple[int, int]) -> tuple[int, ...]:
        return shape[::-1] if b.transpose else shape

    # Stacked experts: every tensor of the block holds the same experts.
    experts = ckpt.shape(b.up)[0] if _stacked(ckpt, b) else None
    for key, shape in ((b.up, expect((width, d))), (b.down, expect((d, m)))):
        _check_tensor(ckpt, key, shape, sizes, experts)
    if b.gate is not None:
        _check_tensor(ckpt, b.gate, expect((m, d)), sizes, experts)
    for key, size in ((b.b_up, width), (b.b_down, d), (b.b_gate, m)):
        if key is not None:
            _check_tensor(ckpt, key, (size,), sizes, experts)
    return schemes


def _sibling_keys(ckpt: Checkpoint) -> list[str]:
    """The tensor names of the index beside a single shard that was passed
    alone: the shard may hold only FFN weights while the hyper-connection
    that mixes its residual sits in another shard. Nothing when there is no
    such index or it cannot be read (the scan of the shard goes on)."""
    if len(ckpt.files) != 1 or not str(ckpt.files[0]).endswith(".safetensors"):
        return []
    index = Path(ckpt.files[0]).parent / "model.safetensors.index.json"
    try:
        weight_map = json.loads(index.read_text(encoding="utf-8")).get("weight_map")
    except (OSError, ValueError, AttributeError):
        return []
    return [str(k) for k in weight_map] if isinstance(weight_map, dict) else []


def _refuse_integer_codes(ckpt: Checkpoint, blocks: list[Any], config: dict[str, Any]) -> None:
    """Refuse a projection stored as integers, naming it, before its shape
    is read as if it were the matrix (DeepSeek-V4's release packs two FP4
    values per int8 byte: ``[out, in / 2]``, ``expert_dtype`` ``"fp4"``)."""
    for b in blocks:
        for key, scale in ((b.up, b.up_scale), (b.down, b.down_scale), (b.gate, b.gate_scale)):
            # With a scale of a known name beside it, _check_quantized names both.
            if key is None or scale is not None or ckpt.dtype(key) not in _INTEGER:
                continue
            fp4 = config.get("expert_dtype")
            hint = (
                f" (config.json expert_dtype = {fp4!r}: FP4 values packed two to a byte, with "
                "E8M0 scales)"
                if isinstance(fp4, str) and fp4.lower() == "fp4"
                else ""
            )
            raise CheckpointError(
                f"{ckpt.source}: {key} has dtype {ckpt.dtype(key)}; expected a float dtype"
                f"{hint}: integer codes, which skipsearch cannot dequantize; it decides real "
                "weights and FP8 ones with their scales: convert the checkpoint to bf16 or "
                "float32 first"
            )


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
            f"{ckpt.source}: {key} is stored as {dtype} with {scale} beside it: skipsearch "
            "dequantizes only float8 (F8_E4M3, F8_E5M2) weights with their scales, not "
            "integer-quantized ones or a scale beside a weight of another dtype; dequantize the "
            "checkpoint first"
        )
    scale_dtype = ckpt.dtype(scale)
    if scale_dtype not in _SCALE_DTYPES:
        raise CheckpointError(
            f"{ckpt.source}: {scale} has dtype {scale_dtype}; expected a float scale "
            f"({', '.join(_SCALE_DTYPES)})"
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


def _check_tensor(
    ckpt: Checkpoint,
    key: str,
    expected: tuple[int, ...],
    sizes: str,
    experts: Optional[int] = None,
) -> None:
    """Check a tensor's shape (with ``experts`` stacked first, when given)
    and dtype from its header."""
    shape = ckpt.shape(key)
    if experts is not None:
        expected = (experts, *expected)
        sizes = f"{sizes}, {experts} experts stacked first"
    if shape != tuple(expected):
        raise CheckpointError(
            f"{ckpt.source}: {key} has shape {shape}, expected {tuple(expected)} ({sizes})"
        )
    dtype = ckpt.dtype(key)
    if dtype not in FLOAT_DTYPES:
        raise CheckpointError(
            f"{ckpt.source}: {key} has dtype {dtype}; expected a float dtype "
            f"({', '.join(FLOAT_DTYPES)})"
        )
