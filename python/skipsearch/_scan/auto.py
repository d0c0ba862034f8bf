"""The automatic layout: FFN blocks of a ``model_type`` the registry lacks.

Placeholder: refuses, listing the supported types.
"""

from __future__ import annotations

from typing import Any, Union

from skipsearch.activations import Activation
from skipsearch.checkpoints import Checkpoint, CheckpointError
from skipsearch.layouts import Part

__all__ = ["automatic_parts"]


def automatic_parts(
    config: dict[str, Any],
    model_type: str,
    activation: Union[str, Activation, None],
    where: str,
    ckpt: Checkpoint,
    supported: tuple[str, ...],
) -> tuple[str, list[tuple[Part, dict[str, Any]]]]:
    raise CheckpointError(
        f"model_type {model_type!r} in {where} is not supported; supported: "
        f"{', '.join(supported)}; any other model needs the generic mapping of "
        "key patterns and activation (a Layout, or --up/--down/--activation on the command line)"
    )
