"""Plot what a scan found (matplotlib): the distance from absorbable per
layer of each model, with the bracket of the best flip set as a band
(:func:`plot_relaxation_distances`), or, for a checkpoint series, each
layer's distance against the training step (:func:`plot_training_series`);
and, for a hyper-connection model (DeepSeek-V4), the figures of its mixing
by layer (:func:`plot_hyper_connections`); :func:`plot_scan` chooses.

matplotlib is an optional dependency: ``pip install "skipsearch[plot]"``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union, cast

from skipsearch._extras import install_hint

if TYPE_CHECKING:  # pragma: no cover
    from skipsearch._scan.report import BlockReport

__all__ = [
    "check_plot_path",
    "plot_hyper_connections",
    "plot_relaxation_distances",
    "plot_scan",
    "plot_training_series",
    "require_matplotlib",
]

_MARKERS = {"absorbable": "*", "not_absorbable": "o", "undecided": "X"}

_Y_LABEL = "distance from absorbable (relative to ||I||_F)"
_BAND_LABEL = "bracket: proven lower bound to the best flip set found (line)"
_RELAXATION_LABEL = "relaxation distance, where a bracket is drawn"


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
            f"plotting needs matplotlib: {install_hint('plot', 'matplotlib')}"
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


def _point(report: BlockReport) -> Optional[float]:
    """Where a block is drawn: the residual of its best flip set found (the
    bracket's upper end) when it has a bracket, else its distance (the
    relaxation distance, or the proven lower bound); None for neither."""
    bracket = report.distance_bracket
    return bracket[1] if bracket is not None else report.distance


def _hollow(report: BlockReport) -> bool:
    """Whether its point is only a proven lower bound (no bracket, and the
    exact relaxation distance was not computed)."""
    return report.distance_bracket is None and report.distance_kind == "bound"


def _draw(
    ax: Any,
    xs: Sequence[float],
    rows: Sequence[BlockReport],
    colour: Any,
    style: Any,
    label: str,
) -> tuple[float, float]:
    """One line: the rows' points joined, the bracket as a shaded band and a
    bar at each point that has one, the relaxation distance dotted beneath
    where a bracket is drawn, and the verdict markers, in ``colour`` (None:
    the next of the axes' cycle) and the line ``style``. Returns the lowest
    and highest values drawn."""
    import numpy as np

    x = np.asarray(xs, dtype=float)
    y = np.array([np.nan if _point(r) is None else _point(r) for r in rows], dtype=float)
    lower = np.array(
        [np.nan if r.distance_bracket is None else r.distance_bracket[0] for r in rows]
    )
    banded = ~np.isnan(lower)
    shown = ~np.isnan(y)
    (line,) = ax.plot(x[shown], y[shown], color=colour, linestyle=style, linewidth=1.6, label=label)
    colour = line.get_color()
    if banded.any():
        ax.fill_between(x, lower, y, where=banded, color=colour, alpha=0.2, linewidth=0)
        ax.vlines(x[banded], lower[banded], y[banded], color=colour, alpha=0.6, linewidth=2.5)
        relaxed = [
            (xi, r.relaxation_distance)
            for xi, r in zip(xs, rows)
            if r.distance_bracket is not None and r.relaxation_distance is not None
        ]
        if relaxed:
            ax.plot(*zip(*relaxed), ":", color=colour, linewidth=1.1, alpha=0.8)
    for verdict, marker in _MARKERS.items():
        for hollow, face in ((False, colour), (True, "none")):
            pts = [
                (xi, yi)
                for xi, yi, r in zip(x, y, rows)
                if r.verdict == verdict and _hollow(r) == hollow and not np.isnan(yi)
            ]
            if pts:
                ax.plot(
                    *zip(*pts),
                    marker,
                    color=colour,
                    markerfacecolor=face,
                    markersize=9 if marker == "*" else 6,
                    linestyle="none",
                )
    values = [*y[shown], *lower[banded]]
    values += [r.relaxation_distance for r in rows if r.relaxation_distance is not None]
    values += [0.0] if not values else []
    return float(min(values)), float(max(values))


def _legend_proxies(ax: Any, reports: Sequence[BlockReport]) -> None:
    """Grey legend entries for the verdict markers, the hollow bound marker,
    the band and the dotted relaxation distance, for those that appear."""
    for verdict, marker in _MARKERS.items():
        if any(r.verdict == verdict and _point(r) is not None for r in reports):
            ax.plot([], [], marker, color="0.3", label=verdict.replace("_", " "))
    if any(_hollow(r) for r in reports):
        ax.plot(
            [],
            [],
            "o",
            color="0.3",
            markerfacecolor="none",
            label="lower bound (exact distance not computed)",
        )
    if any(r.distance_bracket is not None for r in reports):
        ax.fill_between([], [], [], color="0.3", alpha=0.3, linewidth=0, label=_BAND_LABEL)
        if any(
            r.distance_bracket is not None and r.relaxation_distance is not None for r in reports
        ):
            ax.plot([], [], ":", color="0.3", label=_RELAXATION_LABEL)


def _legend_below(ax: Any, entries: int) -> None:
    ax.legend(
        fontsize=8,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16),
        ncol=2 if entries > 3 else 1,
        frameon=False,
    )


def plot_relaxation_distances(
    reports: Sequence[BlockReport], path: Union[str, os.PathLike[str]]
) -> None:
    """Draw how far each block is from absorbing its skip against its
    position in the model (the layer; T5's decoder blocks follow its encoder
    blocks), one line per model, and save it as an image.

    A block with a bracket (``bracket=True``, this project's addition, not
    the paper's) is drawn at the relative residual of its best flip set
    found, with a shaded band and a bar down to the proven lower bound over
    all flip sets (they meet where the bracket is the proven optimum), and
    its relaxation distance dotted beneath. A block without one is drawn at
    its relaxation distance ``||Y||_F / ||A||_F`` (A = I): how close any
    real weighting of the neurons comes to absorbing the skip, 0 when the
    relaxation reaches it; above the tolerance it certifies that no flip
    set exists (the flip condition is Mijoski & Karbevski 2026,
    arXiv:2604.23705). Markers give the verdict: a circle for not
    absorbable, a star for absorbable, a cross for undecided; a hollow
    marker is a proven lower bound, shown where the exact distance was not
    computed (``distance=False``, or beyond the memory budget). Blocks with
    neither a distance nor a bracket (gated blocks, decided without a
    search) are listed in the legend instead.

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
    fig, ax = plt.subplots(figsize=(8, 5.2), dpi=120)
    top = 0.0
    for key, rows in models.items():
        # x is the block's position in the model (its layer, except where a
        # model has several stacks, such as T5's encoder then decoder).
        positions = {id(r): p for p, r in enumerate(rows)}
        drawn = [r for r in rows if _point(r) is not None]
        if not drawn:
            verdicts = sorted({r.verdict.replace("_", " ") for r in rows})
            ax.plot(
                [],
                [],
                " ",
                label=f"{label_of[key]}: {', '.join(verdicts)} ({rows[0].activation}, no "
                "relaxation)",
            )
            continue
        label = f"{label_of[key]} ({rows[0].activation})"
        xs = [positions[id(r)] for r in drawn]
        top = max(top, _draw(ax, xs, drawn, None, "-", label)[1])
    _legend_proxies(ax, reports)
    ax.set_xlabel("FFN block, in layer order")
    ax.set_ylabel(_Y_LABEL)
    ax.set_ylim(0.0, max(1.0, top) * 1.05)
    ax.set_xlim(-0.5, max(len(rows) for rows in models.values()) - 0.5)
    ax.set_title("How close the FFN blocks come to absorbing their skip (0 = reached)")
    ax.grid(True, alpha=0.3)
    ax.xaxis.get_major_locator().set_params(integer=True)
    _legend_below(ax, len(ax.get_legend_handles_labels()[1]))
    fig.tight_layout()
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)


def _series_of(report: BlockReport) -> Path:
    """The directory of the checkpoint series a report's checkpoint belongs
    to: the parent of its checkpoint directory."""
    p = Path(report.path)
    checkpoint = p.parent if p.suffix == ".safetensors" else p
    return checkpoint.parent


def _log_steps(steps: Sequence[int]) -> bool:
    """Whether a log axis shows the steps better: at least four positive
    steps spanning two decades or more, spaced geometrically (each, in the
    median, at least 1.5 times the one before), as early checkpoints often
    are."""
    import numpy as np

    positive = sorted(s for s in set(steps) if s > 0)
    if len(positive) < 4 or positive[-1] < 100 * positive[0]:
        return False
    ratios = np.array(positive[1:], dtype=float) / np.array(positive[:-1], dtype=float)
    return bool(np.median(ratios) >= 1.5)


def plot_training_series(
    reports: Sequence[BlockReport], path: Union[str, os.PathLike[str]]
) -> None:
    """Draw how far each layer is from absorbing its skip against the
    training step of a checkpoint series, one line per layer, and save it
    as an image.

    Each point is drawn as in :func:`plot_relaxation_distances`: with a
    bracket, at the best flip set's relative residual with a shaded band
    down to the proven lower bound (and the relaxation distance dotted
    beneath); without one, at the relaxation distance (hollow: a proven
    lower bound). Markers give the verdict at each step. The step axis is
    logarithmic (``symlog`` when step 0 is in the series) when the steps
    are spaced geometrically over two decades or more, linear otherwise.
    Several series (checkpoints from different directories) get one line
    style each. Reports without a step are not drawn; the legend counts
    them. The bracket and the series are this project's additions, not
    results of Mijoski & Karbevski (2026, arXiv:2604.23705).

    Parameters
    ----------
    reports : sequence of BlockReport
        From :func:`skipsearch.scan` of a checkpoint series (a directory of
        ``checkpoint-<step>`` folders, or the like).
    path : str or os.PathLike
        The image file; the format follows its suffix (``.png``, ``.svg``, ...).

    Raises
    ------
    ImportError
        matplotlib is not installed.
    ValueError
        ``reports`` is empty or no report has a step, or ``path`` fails
        :func:`check_plot_path`.
    """
    plt = require_matplotlib()
    path = check_plot_path(path)
    reports = list(reports)
    if not reports:
        raise ValueError("reports is empty: nothing to plot")
    stepped = [r for r in reports if r.step is not None]
    if not stepped:
        raise ValueError(
            "no report has a training step: scan a checkpoint series (a directory of "
            "checkpoint-<step>, step<step> or global_step<step> folders), or plot the layers "
            "with plot_relaxation_distances"
        )
    lines: dict[tuple[Path, str], list[BlockReport]] = {}
    for r in stepped:
        lines.setdefault((_series_of(r), r.block), []).append(r)
    series = list(dict.fromkeys(s for s, _ in lines))
    blocks = list(dict.fromkeys(b for _, b in lines))
    layer_of = {r.block: r.layer for r in stepped}
    unique_layers = len(set(layer_of.values())) == len(blocks)
    cmap = plt.get_cmap("tab10" if len(blocks) <= 10 else "viridis")
    colours = {
        b: cmap(k if len(blocks) <= 10 else 0.9 * k / max(len(blocks) - 1, 1))
        for k, b in enumerate(blocks)
    }
    styles = ("-", "--", "-.", (0, (1, 1)))
    fig, ax = plt.subplots(figsize=(8, 5.2), dpi=120)
    bottom, top = 1.0, 0.0
    for (where, block), rows in lines.items():
        rows = sorted(rows, key=lambda r: cast(int, r.step))
        name = f"layer {layer_of[block]}" if unique_layers else block
        label = name if len(series) == 1 else f"{where.name}: {name}"
        drawn = [r for r in rows if _point(r) is not None]
        if not drawn:
            ax.plot([], [], " ", label=f"{label}: {rows[0].verdict.replace('_', ' ')}, no distance")
            continue
        style = styles[series.index(where) % len(styles)]
        xs = [cast(int, r.step) for r in drawn]
        low, high = _draw(ax, xs, drawn, colours[block], style, label)
        bottom, top = min(bottom, low), max(top, high)
    _legend_proxies(ax, stepped)
    left_out = len(reports) - len(stepped)
    if left_out:
        ax.plot([], [], " ", label=f"{left_out} block(s) without a step, not drawn")
    steps = [cast(int, r.step) for r in stepped]
    scale = ""
    if _log_steps(steps):
        if min(steps) <= 0:
            ax.set_xscale("symlog", linthresh=min(s for s in steps if s > 0))
            scale = " (log scale; linear below the first step)"
        else:
            ax.set_xscale("log")
            scale = " (log scale)"
    ax.set_xlabel("training step" + scale)
    ax.set_ylabel(_Y_LABEL)
    # From 0 (absorbable) when the values come anywhere near it; otherwise
    # from just below the lowest, so that the course over training shows.
    floor = 0.0 if bottom < 0.4 * top else max(0.0, math.floor(bottom * 10.0) / 10.0 - 0.05)
    ax.set_ylim(floor, max(1.0, top) + 0.05 * (max(1.0, top) - floor))
    title = "How close each FFN block comes to absorbing its skip, over training"
    if len(series) == 1:
        title += (
            f"\n{series[0].name}: {len(set(steps))} checkpoints, steps {min(steps)} to {max(steps)}"
        )
    ax.set_title(title, fontsize=11)
    ax.grid(True, alpha=0.3)
    _legend_below(ax, len(ax.get_legend_handles_labels()[1]))
    fig.tight_layout()
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)


def plot_hyper_connections(
    reports: Sequence[BlockReport], path: Union[str, os.PathLike[str]]
) -> None:
    """Draw the mixing of a hyper-connection model around each layer's FFN,
    by layer, and save it as an image: the smallest singular value of the
    static ``H_res`` (its rank written beside each point), the largest
    logit the token-dependent part can add (log scale; the static point is
    the block only where it is 0), and the static ``H_pre`` and ``H_post``
    of each stream. The figures are :attr:`BlockReport.mixing`
    (``skipsearch._scan.mixing``); the blocks' verdicts do not rest on them
    (docs/theory.md section 4.6).

    Parameters
    ----------
    reports : sequence of BlockReport
        From :func:`skipsearch.scan`; one point per model and layer among
        the reports with mixing figures.
    path : str or os.PathLike
        The image file; the format follows its suffix.

    Raises
    ------
    ImportError
        matplotlib is not installed.
    ValueError
        No report has mixing figures, or ``path`` fails
        :func:`check_plot_path`.
    """
    plt = require_matplotlib()
    path = check_plot_path(path)
    layers: dict[str, dict[int, Any]] = {}
    for r in reports:
        if r.mixing is not None:
            layers.setdefault(r.model, {})[r.layer] = r.mixing
    if not layers:
        raise ValueError("no report has hyper-connection mixing figures: nothing to plot")
    fig, (top, middle, bottom) = plt.subplots(3, 1, figsize=(8, 8.5), dpi=120, sharex=True)
    for model, by_layer in layers.items():
        xs = sorted(by_layer)
        figures = [by_layer[x] for x in xs]
        line = top.plot(xs, [f.res_min_singular for f in figures], "o-", label=model)[0]
        for x, f in zip(xs, figures):
            top.annotate(
                f"rank {f.res_rank}",
                (x, f.res_min_singular),
                fontsize=7,
                xytext=(3, 3),
                textcoords="offset points",
            )
        middle.plot(xs, [max(f.dynamic, 1e-300) for f in figures], "o-", color=line.get_color())
        for k in range(figures[0].streams):
            bottom.plot(
                xs,
                [f.pre[k] for f in figures],
                "-",
                color=line.get_color(),
                alpha=0.4 + 0.6 * k / max(1, figures[0].streams - 1),
            )
            bottom.plot(
                xs,
                [f.post[k] for f in figures],
                "--",
                color=line.get_color(),
                alpha=0.4 + 0.6 * k / max(1, figures[0].streams - 1),
            )
    top.set_ylabel("smallest singular value\nof the static H_res")
    top.set_title("The hyper-connection around each FFN, at its static point")
    middle.set_yscale("log")
    middle.set_ylabel("largest dynamic logit\n|scale| ||fn||_2 sqrt(nC)")
    bottom.plot([], [], "k-", label="H_pre (one line per stream)")
    bottom.plot([], [], "k--", label="H_post")
    bottom.set_ylabel("static read-in\nand write-out")
    bottom.set_xlabel("layer")
    for ax in (top, middle, bottom):
        ax.grid(True, alpha=0.3)
    top.legend(fontsize=8)
    bottom.legend(fontsize=8)
    bottom.xaxis.get_major_locator().set_params(integer=True)
    fig.tight_layout()
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)


def plot_scan(reports: Sequence[BlockReport], path: Union[str, os.PathLike[str]]) -> None:
    """The plot ``skipsearch scan --plot`` draws: :func:`plot_training_series`
    when the reports span two or more training steps (a checkpoint series),
    :func:`plot_hyper_connections` when they carry a hyper-connection's
    mixing figures and no distance to draw, else
    :func:`plot_relaxation_distances`.

    Raises
    ------
    ImportError, ValueError
        As the plot chosen.
    """
    reports = list(reports)
    steps: set[Optional[int]] = {r.step for r in reports} - {None}
    if len(steps) >= 2:
        plot_training_series(reports, path)
    elif any(r.mixing is not None for r in reports) and all(_point(r) is None for r in reports):
        plot_hyper_connections(reports, path)
    else:
        plot_relaxation_distances(reports, path)
