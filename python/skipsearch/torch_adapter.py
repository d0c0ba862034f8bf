"""Read an MLP block out of a PyTorch module, without importing torch.

:func:`from_torch` turns an ``nn.Sequential(Linear, activation, Linear)`` or
the MLP of a Hugging Face model into an :class:`~skipsearch.MLPBlock` whose
fields are the arguments of :func:`~skipsearch.find_absorbing_subset`.
:func:`load_state_dict` reads a checkpoint file into numpy arrays without
unpickling arbitrary objects.

Everything here is duck-typed: modules are recognised by their class names
and attribute names, tensors by their ``detach``/``cpu``/``float``/``numpy``
methods. torch is imported only by :func:`load_state_dict`, and only for
``.bin``/``.pt``/``.pth`` files; ``transformers`` is never imported.

:func:`from_torch` runs in three stages (:mod:`skipsearch._torch`): the
module is matched to a layout (:mod:`~skipsearch._torch.modules`), its
layers' tensors are copied, widened and dequantized
(:mod:`~skipsearch._torch.tensors`), and its activation module is named
(:mod:`~skipsearch._torch.activations`).
"""

from __future__ import annotations

import os
import pickle
import warnings
from typing import Any, Optional, Union, cast

import numpy as np

from skipsearch._float_env import in_standard_float_env
from skipsearch._torch.hyper_connections import read_hyper_connection
from skipsearch._torch.modules import dispatch
from skipsearch._torch.tensors import BF16_TOL, Widened, stored_tol, to_numpy
from skipsearch._warnings import PrecisionWarning
from skipsearch.absorption import MLPBlock
from skipsearch.activations import Activation
from skipsearch.io.checkpoints import check_torch_load_safe

__all__ = ["BF16_TOL", "from_hyper_connection", "from_torch", "load_state_dict"]


@in_standard_float_env
def from_torch(module: Any, *, activation: Optional[Union[str, Activation]] = None) -> MLPBlock:
    """Read one MLP block out of a PyTorch module.

    The block is ``f(x) = W_down act(W_up x + b_up) + b_down`` or, gated,
    ``f(x) = W_down (gate(W_gate x) * (W_up x + b_up)) + b_down``; the
    residual block is ``x -> x + f(x)``. The result holds the keyword
    arguments of :func:`~skipsearch.find_absorbing_subset`, so
    ``find_absorbing_subset(**dataclasses.asdict(block))`` decides it.

    Parameters
    ----------
    module : torch.nn.Module or duck-typed equivalent
        One of these layouts, recognised by class and attribute names
        (torch and transformers are never imported):

        * ``nn.Sequential(Linear, activation, Linear)`` (or a list or
          tuple of those modules); Dropout modules
          (any class whose name contains ``Dropout``) and ``nn.Identity``
          are ignored wherever they are, and nested Sequentials are
          flattened.
        * LLaMA, Mistral, Qwen, Gemma MLP: ``gate_proj``, ``up_proj``,
          ``down_proj``, ``act_fn`` (gated).
        * Mixtral expert: ``w1`` (gate), ``w3`` (up), ``w2`` (down),
          ``act_fn`` (gated).
        * T5 ``T5DenseGatedActDense``: ``wi_0`` (gate), ``wi_1`` (up),
          ``wo``, ``act`` (gated); ``T5DenseActDense``: ``wi``, ``wo``,
          ``act``.
        * GPT-2 MLP: ``c_fc``, ``c_proj``, ``act``; a transformers
          ``Conv1D`` stores its weight as ``(in, out)`` and is transposed.
        * GPT-NeoX, Falcon, BLOOM MLP: ``dense_h_to_4h``,
          ``dense_4h_to_h``, ``act`` (BLOOM: ``gelu_impl``).
        * GPT-J MLP: ``fc_in``, ``fc_out``, ``act``.
        * OPT, CLIP, Whisper layer (any module with ``fc1``, ``fc2``,
          ``activation_fn``).
        * BERT, ViT layer: ``intermediate.dense``, ``output.dense``,
          ``intermediate.intermediate_act_fn``.
        * A module whose ``.mlp`` (a transformer decoder layer) or
          ``.DenseReluDense`` (T5 ``T5LayerFF``) is one of the above.

        Weights may be torch tensors of any dtype and device, or numpy
        arrays.
    activation : str or Activation, optional
        Overrides the detected activation: a registry name (see
        :func:`~skipsearch.known_activations`), ``"leaky_relu(<slope>)"``
        or an :class:`~skipsearch.Activation`. It must be gated exactly when
        the layout has a gate projection. With it the activation module
        (which must still be present in a Sequential) is not inspected.

    Returns
    -------
    MLPBlock
        ``W_up`` of shape ``(m, d_in)``, ``W_down`` of shape
        ``(d_out, m)``, ``W_gate`` of shape ``(m, d_in)`` or None,
        ``b_up`` of shape ``(m,)`` or None (None when the layer has
        ``bias=None``; a bias, even all zeros, means the block's form has
        inner biases, which voids the degree and linearization arguments),
        ``b_gate`` of shape ``(m,)`` or None (the gate projection's bias, an
        inner bias in the same way), ``b_down`` of shape ``(d_out,)`` or
        None, the
        ``activation`` as a registry name (or the given Activation object),
        and ``skip=None`` (the identity skip, which needs ``d_in ==
        d_out``; replace it with ``dataclasses.replace`` otherwise). The
        arrays are fresh numpy copies that share no memory with the module,
        which is never modified. float16, float32 and float64 weights keep
        their dtype; bfloat16 and float8 weights are widened to float32. A
        float8 weight with a ``weight_scale_inv`` or ``weight_scale`` beside
        it (Hugging Face ``FP8Linear``, DeepSeek-V3, compressed-tensors,
        FBGEMM FP8) is dequantized as its format defines, per tensor, per
        output channel or in blocks (``block_size``, default 128 x 128), to
        float64 (see :mod:`skipsearch.io.quantization`).

    Raises
    ------
    ValueError
        An unknown layout (the message lists the supported ones); a
        Sequential that is not ``Linear, activation, Linear`` (the message
        names what was found); layers whose shapes do not chain (both shapes
        are named); an unsupported activation module (the message lists the
        supported ones and suggests ``activation=``); an override that is gated for an ungated layout or the reverse; an
        unknown activation name; a quantized layer other than FP8 with its
        scale (GPTQ, AWQ, bitsandbytes, compressed-tensors packed weights,
        torchao or Quanto tensors, torch quantized tensors, nonzero zero
        points, a scale beside an integer or non-float8 weight), named in
        the message; a scale whose shape does not fit its weight.
    TypeError
        ``module`` is None or not a module; a layer without a ``.weight``;
        a weight that cannot be converted to a real numeric numpy array; an
        ``activation`` that is neither a string nor an Activation.

    Warns
    -----
    skipsearch.PrecisionWarning
        A :class:`~skipsearch.SkipsearchWarning` (and so a ``UserWarning``),
        when bfloat16 or float8 ``W_up``/``W_down`` weights were widened to
        float32 (or FP8 ones dequantized to float64): the default tolerance
        of :func:`~skipsearch.find_absorbing_subset` then follows float32
        (float64), while the stored precision calls for ``tol=BF16_TOL``
        (``sqrt(2**-7)``, about 0.088) for bfloat16 and 0.35 for float8
        E4M3; the message gives the value.

    Notes
    -----
    Only the MLP is read. Layer norms before or after it are not part of
    ``f``, and a pre-norm transformer layer computes ``x + f(LN(x))``; the
    verdict concerns ``x + f(x)``.

    Activations map by class name: ``ReLU`` -> ``relu``, ``GELU`` ->
    ``gelu`` (``approximate='tanh'``: ``gelu_tanh``), ``SiLU`` ->
    ``silu``, ``LeakyReLU(s)`` -> ``leaky_relu(s)``, ``Tanh``,
    ``Sigmoid``, ``ELU`` (alpha 1), ``Softplus`` (beta 1; its linear
    threshold is ignored), ``Hardswish``, ``Mish``, ``ReLU6``,
    ``Hardtanh(-1, 1)``, and the transformers classes (``NewGELUActivation``,
    ``GELUTanh``, ``PytorchGELUTanh``, ``FastGELUActivation`` ->
    ``gelu_tanh``; ``QuickGELUActivation`` -> ``quick_gelu``;
    ``ReLUSquaredActivation`` -> ``relu2``). Gates map to gated entries:
    SiLU -> ``swiglu``, GELU -> ``geglu``, ReLU -> ``reglu``, Sigmoid ->
    ``glu``, identity -> ``bilinear``. A tanh-approximated GELU gate
    (Gemma) also maps to ``geglu``, whose gate is the exact GELU: the
    verdict for gated blocks without inner biases (not absorbable, by the
    linearization argument of Mijoski & Karbevski 2026, arXiv:2604.23705)
    uses only ``gate(0) = 0`` and differentiability at 0, which both
    share; function values computed from the block differ by up to about
    1e-3 relative.

    Examples
    --------
    >>> import torch, skipsearch                                  # doctest: +SKIP
    >>> from skipsearch.torch_adapter import from_torch          # doctest: +SKIP
    >>> mlp = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.GELU(),
    ...                           torch.nn.Linear(32, 8))        # doctest: +SKIP
    >>> b = from_torch(mlp)                                       # doctest: +SKIP
    >>> b.activation, b.W_up.shape, b.W_down.shape                # doctest: +SKIP
    ('gelu', (32, 8), (8, 32))
    >>> r = skipsearch.find_absorbing_subset(
    ...     b.W_up, b.W_down, activation=b.activation, b_up=b.b_up, b_down=b.b_down,
    ...     W_gate=b.W_gate)                                     # doctest: +SKIP
    """
    if module is None:
        raise TypeError("from_torch needs a module, got None")
    if activation is not None and not isinstance(activation, (str, Activation)):
        raise TypeError(
            "activation must be a registry name or a skipsearch.Activation, "
            f"got {type(activation).__name__}"
        )
    widened = Widened()
    block = dispatch(module, type(module).__name__, activation, widened)
    for dtypes, what, wide in (
        (widened.dtypes, "widened to float32", "float32"),
        (widened.dequantized, "dequantized with their scales to float64", "float64"),
    ):
        if dtypes:
            coarsest = max(dtypes, key=lambda d: stored_tol([d]))
            warnings.warn(
                f"{type(module).__name__}: {', '.join(sorted(dtypes))} weights were {what}, so "
                f"find_absorbing_subset's default tolerance follows {wide}; pass "
                f"tol={stored_tol(dtypes):.3g} (sqrt of the {coarsest} epsilon) to match the "
                "stored precision",
                PrecisionWarning,
                stacklevel=2,
            )
    return block


@in_standard_float_env
def from_hyper_connection(
    module: Any,
    *,
    branch: Any = None,
    activation: Optional[Union[str, Activation]] = None,
) -> dict[str, Any]:
    """Read a hyper-connection module of lucidrains' ``hyper-connections``
    package and the FFN it wraps.

    Parameters
    ----------
    module : HyperConnections or ManifoldConstrainedHyperConnections
        The module (or a duck-typed equivalent with the same class and
        parameter names): ``static_alpha`` of shape ``(n, 1 + n)``,
        ``static_beta`` of shape ``(n,)``, ``dynamic_alpha_fn``,
        ``dynamic_beta_fn`` and their scales (``dynamic_alpha_scale`` and
        ``dynamic_beta_scale``; mHC: ``pre_branch_scale``, ``residual_scale``
        and ``h_post_scale``), with ``num_fracs = 1``, ``num_input_views =
        1``, the plain sum as ``depth_residual_fn`` and no
        ``residual_transform``.
    branch : module, optional
        The FFN, in any layout :func:`from_torch` reads. Default: the
        module's own ``.branch``.
    activation : str or Activation, optional
        As for :func:`from_torch`.

    Returns
    -------
    dict
        The keyword arguments of
        :func:`skipsearch.decide_hyper_connection`: ``W_up``, ``W_down``,
        ``H_res = static_alpha[:, 1:]``, ``H_pre = static_alpha[:, 0]``,
        ``H_post = static_beta`` (mHC: ``H_res`` through the module's own
        ``residual_mix_constraint_fn``, ``H_pre`` through a sigmoid and
        ``H_post`` through ``2 sigmoid``, as its forward computes them at
        a zero dynamic part, in the module's precision and then float64),
        the FFN's ``activation``, biases and gate, and ``dynamic``, the
        (projection, scale) pairs of the token-dependent part.

    Raises
    ------
    ValueError
        Another class, or an option this reading does not cover (fractions,
        several input views, a custom ``depth_residual_fn`` or
        ``residual_transform``, no branch), named in the message; every
        error of :func:`from_torch` for the branch.
    TypeError
        A missing parameter, or one that is not a real numeric tensor.

    References
    ----------
    Zhu et al. 2024, arXiv:2409.19606 (hyper-connections); Xie et al. 2025,
    arXiv:2512.24880 (mHC); the module and parameter names are those of
    lucidrains/hyper-connections.
    """
    if module is None:
        raise TypeError("from_hyper_connection needs a module, got None")
    return read_hyper_connection(module, branch, activation, Widened())


# --------------------------------------------------------------------------
# Checkpoint files
# --------------------------------------------------------------------------

_TORCH_SUFFIXES = (".bin", ".pt", ".pth")


def load_state_dict(path: Union[str, os.PathLike[str]]) -> dict[str, np.ndarray]:
    """Load a checkpoint's tensors as numpy arrays, never unpickling code.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.safetensors`` file, read with ``safetensors.numpy.load_file``
        (no torch needed), or a ``.bin``, ``.pt`` or ``.pth`` file, read
        only with ``torch.load(path, map_location="cpu",
        weights_only=True)``, which restores tensors and plain containers
        and refuses every other pickled object. Pickles are never loaded
        any other way: a checkpoint that needs full unpickling is refused.

    Returns
    -------
    dict of str to ndarray
        Tensor name to a numpy copy. Nested dictionaries in a
        torch checkpoint (e.g. ``{"state_dict": {...}}``) are flattened with
        dotted keys; entries that are not tensors (numbers, strings, lists)
        are left out. float16, bfloat16 and float8 tensors are widened to
        float32 exactly; other dtypes (bool and integer buffers included) are kept.
        Quantized tensors come back as stored, codes and scales side by
        side (e.g. ``...weight`` and ``...weight_scale_inv``): dequantize
        them before deciding (:func:`skipsearch.io.quantization.dequantize`),
        or use :func:`skipsearch.scan`, which does.
        Weight names follow the checkpoint,
        e.g. ``model.layers.0.mlp.up_proj.weight`` of shape ``(m, d_in)``.

    Raises
    ------
    FileNotFoundError
        The file does not exist.
    ValueError
        An unsupported suffix, an unreadable safetensors file or one with a
        dtype numpy cannot hold other than bfloat16 and float8, a torch
        checkpoint refused by ``weights_only=True`` (it holds objects other
        than tensors and containers), or one whose top level is not a
        dictionary.
    ImportError
        A ``.bin``/``.pt``/``.pth`` file when torch is not installed, or
        torch is too old for ``weights_only`` (before 1.13).

    Examples
    --------
    >>> sd = load_state_dict("model.safetensors")                 # doctest: +SKIP
    >>> up = sd["model.layers.0.mlp.up_proj.weight"]              # doctest: +SKIP
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no checkpoint file at {path!r}")
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".safetensors":
        return _load_safetensors(path)
    if suffix in _TORCH_SUFFIXES:
        return _load_torch(path)
    raise ValueError(
        f"{path!r}: unsupported checkpoint suffix {suffix!r}; expected .safetensors, or "
        f"{', '.join(_TORCH_SUFFIXES)} (loaded with torch.load(weights_only=True))"
    )


def _load_safetensors(path: str) -> dict[str, np.ndarray]:
    from skipsearch.io.checkpoints import CheckpointError, read_safetensors

    try:
        return read_safetensors(path)
    except CheckpointError as e:
        raise ValueError(str(e)) from None


def _load_torch(path: str) -> dict[str, np.ndarray]:
    try:
        # Untyped or absent; pyproject's mypy config ignores it, stubtest (no config) needs this.
        import torch  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        raise ImportError(
            f"{path!r} is a torch checkpoint and torch is not installed; install torch, or "
            "convert the checkpoint to .safetensors"
        ) from None
    # The scan's rule: only a torch whose weights_only loading has no known
    # bypass (CVE-2025-32434, CVE-2026-24747) sees the file.
    check_torch_load_safe(torch, path)
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except TypeError as e:
        if "weights_only" in str(e):
            raise ImportError(
                f"torch {getattr(torch, '__version__', '?')} has no weights_only loading "
                "(needs torch >= 1.13); skipsearch does not unpickle checkpoints otherwise"
            ) from None
        raise
    except pickle.UnpicklingError as e:
        raise ValueError(
            f"{path!r} holds objects other than tensors and containers, which "
            f"torch.load(weights_only=True) refuses; skipsearch never unpickles them: {e}"
        ) from None
    if not isinstance(obj, dict):
        raise ValueError(
            f"{path!r} holds a {type(obj).__name__}, expected a dictionary of tensors "
            "(a state dict)"
        )
    out: dict[str, np.ndarray] = {}
    _flatten_tensors(obj, "", out, path)
    return out


def _flatten_tensors(
    obj: dict[Any, Any], prefix: str, out: dict[str, np.ndarray], path: str
) -> None:
    for key, value in obj.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            _flatten_tensors(value, f"{name}.", out, path)
        elif isinstance(value, np.ndarray) or hasattr(value, "detach"):
            # Not None: value is an array or a tensor.
            out[name] = cast(np.ndarray, to_numpy(value, f"{path}: {name}", numeric=False))
