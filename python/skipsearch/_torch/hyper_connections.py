"""The hyper-connection modules of lucidrains' ``hyper-connections`` package,
read as the arguments of :func:`skipsearch.decide_hyper_connection`.

Names from the package's source (lucidrains/hyper-connections at 47751035,
``hyper_connections/hyper_connections.py`` and
``manifold_constrained_hyper_connections.py``): ``static_alpha`` of shape
``(n, 1 + n)`` holds the read-in (column 0) and the residual mixing (the
rest, ``mix_h[t] = sum_s alpha[s, t] X_s``), ``static_beta`` of shape
``(n,)`` the write-out, and the token-dependent part is ``act(norm(X) @
dynamic_alpha_fn) * dynamic_alpha_scale`` (mHC: ``pre_branch_scale`` and
``residual_scale``) and ``norm(X) @ dynamic_beta_fn * dynamic_beta_scale``
(mHC: ``h_post_scale``). ``HyperConnections`` adds them as they are; mHC
passes the read-in through a sigmoid, the write-out through ``2 sigmoid``
and the mixing through its ``residual_mix_constraint_fn`` (Sinkhorn).
"""

from __future__ import annotations

import inspect
import operator
from typing import Any, Optional, Union

import numpy as np

from skipsearch._torch.tensors import Widened, get_attribute, to_numpy
from skipsearch.activations import Activation

#: The token-dependent parameters this reader knows (lucidrains' names).
_DYNAMIC_NAMES = frozenset(
    {"dynamic_alpha_fn", "dynamic_alpha_scale", "dynamic_beta_fn", "dynamic_beta_scale"}
)

#: Class names, plain and manifold-constrained.
PLAIN = ("HyperConnections",)
CONSTRAINED = ("ManifoldConstrainedHyperConnections", "mHC")


def _array(module: Any, name: str, where: str, widened: Widened) -> np.ndarray:
    value = get_attribute(module, name)
    if value is None:
        raise TypeError(f"{where}: has no {name}; expected lucidrains' hyper-connection parameters")
    out = to_numpy(value, f"{where}.{name}", widened)
    assert out is not None
    return out.astype(np.float64)


def _optional(module: Any, name: str, where: str, widened: Widened) -> Optional[np.ndarray]:
    value = get_attribute(module, name)
    return None if value is None else _array(module, name, where, widened)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-x)), dtype=np.float64)


def read_hyper_connection(
    module: Any, branch: Any, activation: Optional[Union[str, Activation]], widened: Widened
) -> dict[str, Any]:
    """The keyword arguments of ``decide_hyper_connection`` for ``module``,
    its FFN read from ``branch`` (the module's own ``.branch`` when None)."""
    from skipsearch.torch_adapter import from_torch  # the MLP's own reader

    kind = type(module).__name__
    where = kind
    if kind not in PLAIN + CONSTRAINED:
        raise ValueError(
            f"{kind} is not a lucidrains hyper-connection module; expected one of "
            f"{', '.join(PLAIN + CONSTRAINED)}"
        )
    for name, want in (("num_fracs", 1), ("num_input_views", 1)):
        got = getattr(module, name, want)
        if got != want:
            raise ValueError(f"{where}.{name} is {got!r}; only {name} = {want} is supported")
    if not getattr(module, "add_branch_out_to_residual", True):
        raise ValueError(
            f"{where}.add_branch_out_to_residual is False: the branch's output replaces the "
            "streams, so the block has no residual to absorb"
        )
    if getattr(module, "has_dynamic_alpha_proposals", False):
        raise ValueError(f"{where} averages several dynamic alpha proposals, not supported")
    depth = getattr(module, "depth_residual_fn", None)
    plain = (
        depth is None
        or depth is operator.add
        or (inspect.isfunction(depth) and depth.__name__ == "add")
    )
    if not plain:
        raise ValueError(
            f"{where}.depth_residual_fn is {getattr(depth, '__name__', type(depth).__name__)!r}; "
            "only the plain sum (add) is supported (a gated "
            "residual such as lucidrains' GatedResidual is no hyper-connection of this form)"
        )
    unknown = sorted(
        name for name in dir(module) if name.startswith("dynamic") and name not in _DYNAMIC_NAMES
    )
    if unknown:
        raise ValueError(
            f"{where} has a token-dependent part this reader does not know ({', '.join(unknown)}); "
            f"it reads {', '.join(sorted(_DYNAMIC_NAMES))} (and mHC's pre_branch_scale, "
            "residual_scale and h_post_scale)"
        )
    transform = getattr(module, "residual_transform", None)
    if transform is not None and type(transform).__name__ != "Identity":
        raise ValueError(
            f"{where}.residual_transform is {type(transform).__name__}; only Identity is supported"
        )
    ffn = branch if branch is not None else getattr(module, "branch", None)
    if ffn is None:
        raise ValueError(f"{where} wraps no branch (.branch is None): pass the FFN as branch=...")
    mlp = from_torch(ffn, activation=activation)
    alpha = _array(module, "static_alpha", where, widened)
    beta = _array(module, "static_beta", where, widened).reshape(-1)
    n = alpha.shape[0]
    if alpha.shape != (n, n + 1) or beta.shape != (n,):
        raise ValueError(
            f"{where}.static_alpha has shape {alpha.shape} and static_beta {beta.shape}; "
            "expected (n, n + 1) and (n,)"
        )
    pre, res, post = alpha[:, 0], alpha[:, 1:], beta
    alpha_fn = _optional(module, "dynamic_alpha_fn", where, widened)
    beta_fn = _optional(module, "dynamic_beta_fn", where, widened)
    if kind in PLAIN:
        scales = ("dynamic_alpha_scale", "dynamic_beta_scale")
        alpha_scale = _optional(module, scales[0], where, widened)
        beta_scale = _optional(module, scales[1], where, widened)
    else:
        parts = [
            _optional(module, s, where, widened) for s in ("pre_branch_scale", "residual_scale")
        ]
        # A missing scale counts as 1 (see below).
        alpha_scale = (
            np.ones(1)
            if any(p is None for p in parts)
            else np.concatenate([p.reshape(-1) for p in parts if p is not None])
        )
        beta_scale = _optional(module, "h_post_scale", where, widened)
        constraint = getattr(module, "residual_mix_constraint_fn", None)
        if constraint is None:
            raise ValueError(f"{where} has no residual_mix_constraint_fn to apply to the mixing")
        # The module's own constraint (Sinkhorn), on its own parameter.
        raw = get_attribute(module, "static_alpha")
        mixed = to_numpy(constraint(raw[..., 1:]), f"{where}.residual_mix_constraint_fn", widened)
        assert mixed is not None
        pre, res, post = _sigmoid(pre), mixed.astype(np.float64), 2.0 * _sigmoid(post)
    # A projection whose scale is missing (or empty) counts as scaled by 1:
    # a nonzero projection then makes the mixing token-dependent.
    dynamic = [
        (fn, np.ones(1) if scale is None or scale.size == 0 else scale)
        for fn, scale in ((alpha_fn, alpha_scale), (beta_fn, beta_scale))
        if fn is not None
    ]
    return dict(
        W_up=mlp.W_up,
        W_down=mlp.W_down,
        H_res=res,
        H_pre=pre,
        H_post=post,
        activation=mlp.activation,
        b_up=mlp.b_up,
        b_down=mlp.b_down,
        W_gate=mlp.W_gate,
        b_gate=mlp.b_gate,
        dynamic=dynamic,
    )
