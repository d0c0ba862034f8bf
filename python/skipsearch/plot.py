"""Plot the relaxation distance per layer of scanned models (matplotlib).

matplotlib is an optional dependency: ``pip install "skipsearch[plot]"``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Union, cast

if TYPE_CHECKING:  # pragma: no cover
    from skipsearch._scan.report import BlockReport

__all__ = ["check_plot_path", "plot_relaxation_distances", "require_matplotlib"]

_MARKERS = {"absorbable": "*", "not_absorbable": "o", "undecided": "X"}


def require_matplotlib() -> Any:
    """Import matplotlib with the non-interactive Agg backend.

    Raises
    ------
    ImportError
        matplotlib is not installed; the message gives the install command.
    """
    try:
        import matplotlib
    except ImportError:
        raise ImportError(
            'plotting needs matplotlib: pip install "skipsearch[plot]" (or pip install matplotlib)'
        ) from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def check_plot_path(path: Union[str, os.PathLike[str]]) -> str:
    """Check where a plot will be written, before any work is done.

    Returns
    -------
    str
        The path, unchanged.

    Raises
    ------
    ImportError
        matplotlib is not installed.
    ValueError
        The path is empty, is a directory, lies in a folder that does not
        exist, or has no image suffix matplotlib can write (``.png``,
        ``.svg``, ``.pdf``, ...).
    """
    require_matplotlib()
    from matplotlib.backend_bases import FigureCanvasBase

    text = os.fspath(path)
    if not text:
        raise ValueError("the plot path is empty; give a file name such as distances.png")
    if os.path.isdir(text):
        raise ValueError(
            f"the plot path {text!r} is a directory; give a file name such as distances.png"
        )
    folder = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(folder):
        raise ValueError(f"the folder of the plot path {text!r} does not exist: {folder}")
    suffix = os.path.splitext(text)[1].lstrip(".").lower()
    formats = FigureCanvasBase.get_supported_filetypes()
    if suffix not in formats:
        raise ValueError(
            f"the plot path {text!r} needs an image suffix matplotlib can write: "
            + ", ".join("." + f for f in sorted(formats))
        )
    return text


def plot_relaxation_distances(
    reports: Sequence[BlockReport], path: Union[str, os.PathLike[str]]
) -> None:
    """Draw the relaxation distance of each block against its position in the
    model (the layer; T5's decoder blocks follow its encoder blocks), one
    line per model, and save it as an image.

    The relaxation distance ``||Y||_F / ||A||_F`` (A = I) is how close any
    real weighting of the neurons comes to absorbing the skip: 0 means the
    relaxation reaches it, and a distance above the tolerance is a
    certificate that no flip set exists (Mijoski & Karbevski 2026,
    arXiv:2604.23705). Markers give the verdict: a circle for not
    absorbable, a star for absorbable, a cross for undecided; a hollow
    marker is a proven lower bound, shown where the exact distance was not
    computed (``distance=False``, or beyond the memory budget). Blocks with
    no distance (gated blocks, decided without a search) are listed in the
    legend instead.

    Parameters
    ----------
    reports : sequence of BlockReport
        From :func:`skipsearch.scan`; blocks are grouped by ``model``.
    path : str or os.PathLike
        The image file; the format follows its suffix (``.png``, ``.svg``, ...).

    Raises
    ------
    ImportError
        matplotlib is not installed.
    ValueError
        ``reports`` is empty, or ``path`` fails :func:`check_plot_path`.
    """
    plt = require_matplotlib()
    path = check_plot_path(path)
    reports = list(reports)
    if not reports:
        raise ValueError("reports is empty: nothing to plot")
    models: dict[tuple[str, str], list[BlockReport]] = {}
    for r in reports:
        models.setdefault((r.model, r.path), []).append(r)
    names = [m for m, _ in models]
    label_of = {
        key: (key[0] if names.count(key[0]) == 1 else f"{key[0]} ({key[1]})") for key in models
    }
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=120)
    top = 0.0
    for key, rows in models.items():
        # x is the block's position in the model (its layer, except where a
        # model has several stacks, such as T5's encoder then decoder).
        positions = {id(r): p for p, r in enumerate(rows)}
        with_distance = [r for r in rows if r.distance is not None]
        label = label_of[key]
        if not with_distance:
            verdicts = sorted({r.verdict.replace("_", " ") for r in rows})
            ax.plot(
                [],
                [],
                " ",
                label=f"{label}: {', '.join(verdicts)} ({rows[0].activation}, no relaxation)",
            )
            continue
        xs = [positions[id(r)] for r in with_distance]
        ys = [cast(float, r.distance) for r in with_distance]  # not None, as filtered
        top = max(top, max(ys))
        (line,) = ax.plot(xs, ys, "-", linewidth=1.5, label=f"{label} ({rows[0].activation})")
        for verdict, marker in _MARKERS.items():
            for kind, face in (("exact", line.get_color()), ("bound", "none")):
                pts = [
                    (x, y)
                    for x, y, r in zip(xs, ys, with_distance)
                    if r.verdict == verdict and r.distance_kind == kind
                ]
                if pts:
                    ax.plot(
                        *zip(*pts),
                        marker,
                        color=line.get_color(),
                        markerfacecolor=face,
                        markersize=9 if marker == "*" else 6,
                    )
    for verdict, marker in _MARKERS.items():
        if any(r.verdict == verdict and r.distance is not None for r in reports):
            ax.plot([], [], marker, color="0.3", label=verdict.replace("_", " "))
    if any(r.distance_kind == "bound" for r in reports):
        ax.plot(
            [],
            [],
            "o",
            color="0.3",
            markerfacecolor="none",
            label="lower bound (exact not computed)",
        )
    ax.set_xlabel("FFN block, in layer order")
    ax.set_ylabel("relaxation distance  ||Y||_F / ||I||_F")
    ax.set_ylim(0.0, max(1.0, top * 1.1))
    ax.set_xlim(-0.5, max(len(rows) for rows in models.values()) - 0.5)
    ax.set_title("How close the FFN blocks come to absorbing their skip (0 = reached)")
    ax.grid(True, alpha=0.3)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
