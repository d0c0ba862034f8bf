"""The automatic layout: FFN blocks of a ``model_type`` the registry lacks.

Most new architectures reuse the tensor names of an older one (LLaMA's
``mlp.up_proj``/``gate_proj``/``down_proj``, GPT-2's ``mlp.c_fc``/``c_proj``,
BERT's ``intermediate.dense``/``output.dense``, ...). The automatic layout
tries every dense FFN pattern of the registry's families
(:data:`skipsearch.io.layouts.FAMILIES`) on the checkpoint's tensor names and
keeps those whose tensors have an FFN's shapes: ``W_up`` ``(m, d)`` into
``W_down`` ``(d, m)`` within one layer prefix (``(in, out)`` for a transposed
layout), ``W_gate`` like ``W_up`` when the pattern has one. The activation
comes from the usual config keys (``hidden_act``, ``hidden_activation``,
``activation_function``, ``activation``) or the user's ``activation``.

The mapping is used only when it is unambiguous: exactly one set of
patterns matches (a gated pattern wins over the same names without the
gate when the gate tensors exist), every match has an FFN's shapes, no
block's module holds another matrix of ``W_up``'s shape that the mapping
leaves out (a gate under another name), the config's model width confirms
the storage order (the shapes alone fit ``(out, in)`` and ``(in, out)``
alike), and the activation is known. Otherwise the scan refuses and lists what it found, so
the user can give the mapping (``--up/--down``, a :class:`Layout`). The
mapping chosen is reported with an :class:`AutomaticLayoutWarning` and in
every row's note. Stacked 3-D experts and fused gate/up tensors are never
guessed: their layouts differ between families in ways shapes cannot tell.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Optional, Union

from skipsearch._warnings import AutomaticLayoutWarning
from skipsearch.activations import Activation
from skipsearch.io.checkpoints import Checkpoint, CheckpointError
from skipsearch.io.layouts import FAMILIES, Layout, Part, config_activation

__all__ = [
    "ACTIVATION_KEYS",
    "LAYER_KEYS",
    "WIDTH_KEYS",
    "automatic_parts",
    "candidate_patterns",
]

#: Config keys the activation is read from, in this order.
ACTIVATION_KEYS = ("hidden_act", "hidden_activation", "activation_function", "activation")

#: Config keys of the model width, which confirms the storage order.
WIDTH_KEYS = ("hidden_size", "n_embd", "n_embed", "d_model", "dim", "embed_dim")

#: Config keys the layer count is read from (checked when present).
LAYER_KEYS = ("num_hidden_layers", "n_layer", "n_layers", "num_layers")

#: One candidate mapping: (up, down, gate, transpose) patterns.
Candidate = tuple[str, str, Optional[str], bool]


def candidate_patterns() -> list[tuple[Candidate, list[str]]]:
    """Every dense FFN pattern set of the registry's families, with the
    model types that use it: the names the automatic layout tries."""
    found: dict[Candidate, list[str]] = {}
    for model_type, family in sorted(FAMILIES.items()):
        try:
            parts = family.resolve_parts({})
        except CheckpointError:  # a family that needs its config to choose (T5)
            parts = ()
        for part in parts:
            if part.experts or part.fused is not None or "{e}" in part.up:
                continue
            key = (part.up, part.down, part.gate, part.transpose)
            found.setdefault(key, []).append(model_type)
    return sorted(
        found.items(), key=lambda item: (item[0][0], item[0][1], item[0][2] or "", item[0][3])
    )


Blocks = frozenset[tuple[str, str, Optional[str]]]


def _matches(ckpt: Checkpoint, keys: list[str], candidate: Candidate) -> Optional[Blocks]:
    """The ``(up, down, gate)`` keys of every block ``candidate`` matches,
    all with an FFN's shapes; None when a match lacks its ``down`` (or
    ``gate``) tensor or has other shapes, or when nothing matches."""
    up, down, gate, transpose = candidate
    layout = Layout(up=up, down=down, gate=gate, transpose=transpose)
    regex = layout.regex(up)
    out = []
    for key in keys:
        match = regex.match(key)
        if match is None:
            continue
        down_key = Layout.fill(down, match)
        gate_key = None if gate is None else Layout.fill(gate, match)
        if down_key not in ckpt or (gate_key is not None and gate_key not in ckpt):
            return None
        shapes = [ckpt.shape(k) for k in (key, down_key) + ((gate_key,) if gate_key else ())]
        if any(len(s) != 2 for s in shapes):
            return None
        (m, d) = shapes[0][::-1] if transpose else shapes[0]
        expected = [(m, d), (d, m)] + ([(m, d)] if gate_key else [])
        if transpose:
            expected = [e[::-1] for e in expected]
        if [tuple(s) for s in shapes] != expected:
            return None
        out.append((key, down_key, gate_key))
    return frozenset(out) or None


def _check_no_gate_beside(
    ckpt: Checkpoint, keys: list[str], found: Blocks, refuse: str, override: str
) -> None:
    """Refuse a mapping without a gate when a block's module holds another
    matrix of ``W_up``'s shape (a gate the names did not say, or a second
    projection): reading the block without it would decide a different
    block, and a gated one would come out absorbable."""
    if any(gate is not None for _, _, gate in found):
        return
    for up, down, _ in sorted(found):
        # Dotted tensor names, compared character by character on purpose.
        common = os.path.commonprefix([up, down])  # noqa: RUF071
        module = common[: common.rfind(".") + 1]
        shape = ckpt.shape(up)
        others = [
            k
            for k in keys
            if k.startswith(module) and k not in (up, down) and ckpt.shape(k) == shape
        ]
        if others:
            raise CheckpointError(
                f"{refuse}; the automatic layout found FFN blocks named like {up!r} and {down!r}, "
                f"but their module also holds {', '.join(repr(k) for k in others[:3])} with "
                f"W_up's shape {shape} (a gate?), which the mapping would leave out; {override}"
            )


def _check_orientation(
    ckpt: Checkpoint,
    config: dict[str, Any],
    found: Blocks,
    transpose: bool,
    types: list[str],
    refuse: str,
    where: str,
) -> str:
    """The config key of the model width that confirms the mapping's storage
    order (``(out, in)``, or ``(in, out)`` when ``transpose``): the shapes
    alone fit either, so a config width must match ``W_up``'s input side and
    not its output side. Returns that key."""
    up = sorted(found)[0][0]
    rows, cols = ckpt.shape(up)
    m, d = (cols, rows) if transpose else (rows, cols)
    flip = "--up/--down with" + (" no --transpose" if transpose else " --transpose")
    key = next((k for k in WIDTH_KEYS if config.get(k) is not None), None)
    if m == d or key is None:
        why = (
            f"W_up {up} is square, {rows} x {cols}"
            if m == d
            else f"{where} has none of {', '.join(WIDTH_KEYS)}"
        )
        raise CheckpointError(
            f"{refuse}; the automatic layout found FFN blocks named as in {', '.join(types)}, but "
            f"{why}, so nothing confirms whether the weights are stored (out, in) or (in, out); "
            f"give the mapping with --up/--down (and --transpose for (in, out))"
        )
    if config[key] != d:
        raise CheckpointError(
            f"{refuse}; the automatic layout found FFN blocks named as in {', '.join(types)}, "
            f"stored {'(in, out)' if transpose else '(out, in)'} there, but W_up {up} of shape "
            f"{(rows, cols)} then has model width {d}, not {key}={config[key]!r}: the weights are "
            f"stored the other way round; give the mapping with {flip}"
        )
    return key


def _fits_width(
    ckpt: Checkpoint, config: dict[str, Any], found: Blocks, transpose: bool
) -> Optional[bool]:
    """Whether the config's model width confirms a mapping's storage order
    (``W_up``'s input side is the width, its output side is not); None when
    nothing can tell (no width in the config, or a square ``W_up``)."""
    key = next((k for k in WIDTH_KEYS if config.get(k) is not None), None)
    rows, cols = ckpt.shape(sorted(found)[0][0])
    m, d = (cols, rows) if transpose else (rows, cols)
    if key is None or m == d:
        return None
    return bool(config[key] == d)


def _one_mapping(
    ckpt: Checkpoint, keys: list[str], refuse: str, override: str, config: dict[str, Any]
) -> tuple[Candidate, list[str], Blocks]:
    """The one mapping of the registry's names that finds FFN blocks in the
    checkpoint, with the families that use it and the blocks it finds.

    Raises
    ------
    CheckpointError
        No mapping finds blocks, or several do (the candidates are listed).
    """
    # Pattern sets that find the same blocks are one mapping (BERT's and
    # DeBERTa's names, say); its families are listed together.
    by_blocks: dict[tuple[Blocks, bool], tuple[Candidate, list[str]]] = {}
    candidates = candidate_patterns()
    for candidate, types in candidates:
        found = _matches(ckpt, keys, candidate)
        if found is not None:
            first, known = by_blocks.get((found, candidate[3]), (candidate, []))
            by_blocks[(found, candidate[3])] = (first, known + types)
    # A gated mapping and the same (up, down) pairs without the gate: the
    # gate wins (its tensors exist, so the block is gated).
    gated_pairs = {
        frozenset((u, d) for u, d, _ in found)
        for (found, _), (candidate, _) in by_blocks.items()
        if candidate[2] is not None
    }
    hits = [
        (candidate, types, found)
        for (found, _), (candidate, types) in by_blocks.items()
        if candidate[2] is not None or frozenset((u, d) for u, d, _ in found) not in gated_pairs
    ]
    if not hits:
        raise CheckpointError(
            f"{refuse}, and the automatic layout found no FFN blocks under the names of the "
            f"registry's families (tried {len(candidates)} pattern sets on "
            f"{len(keys)} tensors); {override}"
        )
    if len(hits) > 1:
        # The config's width settles a storage order the shapes cannot
        # (gpt2's Conv1D (in, out) against gpt_bigcode's (out, in)).
        fitting = [h for h in hits if _fits_width(ckpt, config, h[2], h[0][3])]
        if len(fitting) == 1:
            return fitting[0]
        listed = "; ".join(
            f"up={c[0]!r}, down={c[1]!r}"
            + (f", gate={c[2]!r}" if c[2] else "")
            + (", stored (in, out)" if c[3] else ", stored (out, in)")
            + f" ({', '.join(t)}: {len(f)} block{'' if len(f) == 1 else 's'})"
            for c, t, f in hits
        )
        names = {(c[0], c[1], c[2]) for c, _, _ in hits}
        order = (
            ": they name the same tensors and differ only in the storage order, which the "
            f"config's width ({' or '.join(WIDTH_KEYS)}) does not settle; --transpose says the "
            "weights are stored (in, out)"
            if len(names) == 1
            else ""
        )
        raise CheckpointError(
            f"{refuse}, and the automatic layout is ambiguous: {len(hits)} mappings match "
            f"({listed}){order}; {override}"
        )
    return hits[0]


def automatic_parts(
    config: dict[str, Any],
    model_type: str,
    activation: Union[str, Activation, None],
    where: str,
    ckpt: Checkpoint,
    supported: tuple[str, ...],
) -> tuple[str, list[tuple[Part, dict[str, Any]]]]:
    """The automatic layout's one part for a checkpoint of an unknown
    ``model_type``, and what the config gives for it.

    Raises
    ------
    CheckpointError
        No pattern matches, several do (the candidates are listed), or the
        activation is neither given nor in the config.
    """
    keys = ckpt.keys()
    refuse = (
        f"model_type {model_type!r} in {where} is not supported by a registry family (supported: "
        f"{', '.join(supported)})"
    )
    override = (
        "give the mapping with --up/--down/--activation (and --gate, and --transpose for weights "
        "stored (in, out)), or a Layout"
    )
    (up, down, gate, transpose), types, found = _one_mapping(ckpt, keys, refuse, override, config)
    gated = gate is not None
    _check_no_gate_beside(ckpt, keys, found, refuse, override)
    width_key = _check_orientation(ckpt, config, found, transpose, types, refuse, where)
    if activation is not None:
        from skipsearch._scan.locate import _chosen_activation

        act = _chosen_activation(activation, gated, "the activation argument (--activation)")
        hidden_act: Any = activation if isinstance(activation, str) else activation.name
        act_from = "the activation argument"
    else:
        act_key = next((k for k in ACTIVATION_KEYS if config.get(k) is not None), None)
        if act_key is None:
            raise CheckpointError(
                f"{refuse}; the automatic layout found {len(found)} FFN block(s) (up={up!r}, "
                f"down={down!r}{f', gate={gate!r}' if gate else ''}, as in "
                f"{', '.join(types)}) but {where} has none of {', '.join(ACTIVATION_KEYS)}, so "
                "the activation is unknown; pass it with --activation (activation=...)"
            )
        hidden_act = config[act_key]
        act = config_activation(hidden_act, gated=gated, where=f"{where} ({act_key})")
        act_from = act_key
    mapping = (
        f"up={up!r}, down={down!r}"
        + (f", gate={gate!r}" if gate else "")
        + (", stored (in, out)" if transpose else "")
        + f", the names of {', '.join(types)}; activation {hidden_act!r} from {act_from}"
    )
    warnings.warn(
        f"model_type {model_type!r} in {where} is not in the registry; the automatic layout "
        f"found {len(found)} FFN block(s): {mapping}; check it, or give the mapping with "
        "--up/--down (a Layout)",
        AutomaticLayoutWarning,
        stacklevel=5,
    )
    layer_key = next((k for k in LAYER_KEYS if config.get(k) is not None), None)
    part = Part(
        kind="mlp",
        up=up,
        down=down,
        gate=gate,
        transpose=transpose,
        activation_keys=(),
        d_keys=(width_key,),
        m_keys=(),
        layer_keys=(layer_key,) if layer_key else (),
        norm=None,
        note=f"automatic layout ({mapping})",
    )
    spec = part.resolve(config, where, read_activation=False)
    spec.update(activation=act, hidden_act=hidden_act, sizes="the tensors")
    return "auto", [(part, spec)]
