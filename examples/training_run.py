"""How far from absorbable, over training: a toy run scanned checkpoint by checkpoint.

This trains a small residual ReLU MLP, ``h -> h + W_down relu(W_up h + b_up) + b_down``
three times over (d = 16, m = 64), with plain numpy (Adam, hand-written
gradients) on a toy regression: fit a skip-free ReLU network (a "teacher"
with no skip at all). Every ``--every`` steps it saves a checkpoint the way
a training script does, ``checkpoint-<step>/`` with ``model.safetensors``
and ``config.json``, in the generic layout skipsearch reads with key
patterns (``blocks.{i}.up.weight``, ``blocks.{i}.down.weight``, biases
beside them). Then it scans the directory as a checkpoint series, prints a
table of each layer's distance by step, and draws the plot that
``skipsearch scan <dir> --plot`` draws.

Run it from a clone, with the plot extra (matplotlib) installed::

    python examples/training_run.py                    # writes training_run/ and training_run.png
    python examples/training_run.py --out /tmp/run --plot /tmp/run.png --steps 3000

The same scan from the command line::

    skipsearch scan training_run --up 'blocks.{i}.up.weight' --down 'blocks.{i}.down.weight' \\
        --bracket --time-limit 0.2 --plot training_run.png

(``--time-limit`` bounds each block's search, the bracket's branch and bound
included: the whole run, training and scan, takes about 15 seconds.)

The distance is the relative residual ``||I + W_down[:, S] W_up[S, :]||_F / ||I||_F``
of the best flip set ``S`` (the bracket, where computed) or the relaxation
distance: how far each block is from being a skip-free MLP of the same width.
The bracket and the series are skipsearch's own additions, not results of
Mijoski & Karbevski (2026, arXiv:2604.23705); their theorem is what makes a
distance of 0 the only way a generic ReLU or GELU block absorbs its skip.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import skipsearch
from safetensors.numpy import save_file
from skipsearch.plot import plot_training_series

D, M, LAYERS = 16, 64, 3

#: The tensor names of layer i, and the generic layout that finds them.
LAYOUT = skipsearch.Layout(up="blocks.{i}.up.weight", down="blocks.{i}.down.weight")


def init_params(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """He-initialised up projections, small down projections (each block
    starts close to the identity), zero biases."""
    params: dict[str, np.ndarray] = {}
    for i in range(LAYERS):
        params[f"blocks.{i}.up.weight"] = rng.normal(0.0, np.sqrt(2.0 / D), (M, D))
        params[f"blocks.{i}.up.bias"] = np.zeros(M)
        params[f"blocks.{i}.down.weight"] = rng.normal(0.0, 0.1 / np.sqrt(M), (D, M))
        params[f"blocks.{i}.down.bias"] = np.zeros(D)
    return params


def forward(
    params: dict[str, np.ndarray], x: np.ndarray
) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """The stack's output on the rows of x, and what backprop needs."""
    h, cache = x, []
    for i in range(LAYERS):
        z = h @ params[f"blocks.{i}.up.weight"].T + params[f"blocks.{i}.up.bias"]
        a = np.maximum(z, 0.0)
        cache.append((h, z, a))
        h = h + a @ params[f"blocks.{i}.down.weight"].T + params[f"blocks.{i}.down.bias"]
    return h, cache


def gradients(
    params: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray
) -> tuple[float, dict[str, np.ndarray]]:
    """Mean squared error and its gradient with respect to every tensor."""
    out, cache = forward(params, x)
    n = len(x)
    loss = float(np.mean(np.sum((out - y) ** 2, axis=1)))
    g = 2.0 * (out - y) / n
    grads: dict[str, np.ndarray] = {}
    for i in reversed(range(LAYERS)):
        h, z, a = cache[i]
        grads[f"blocks.{i}.down.weight"] = g.T @ a
        grads[f"blocks.{i}.down.bias"] = g.sum(axis=0)
        dz = (g @ params[f"blocks.{i}.down.weight"]) * (z > 0)
        grads[f"blocks.{i}.up.weight"] = dz.T @ h
        grads[f"blocks.{i}.up.bias"] = dz.sum(axis=0)
        g = g + dz @ params[f"blocks.{i}.up.weight"]
    return loss, grads


def save_checkpoint(folder: Path, params: dict[str, np.ndarray], step: int) -> None:
    """``folder/checkpoint-<step>/``: float32 safetensors and a config.json."""
    target = folder / f"checkpoint-{step}"
    target.mkdir(parents=True)
    save_file(
        {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in params.items()},
        str(target / "model.safetensors"),
    )
    config = {
        "model_type": "toy_residual_mlp",
        "hidden_act": "relu",
        "hidden_size": D,
        "intermediate_size": M,
        "num_hidden_layers": LAYERS,
    }
    (target / "config.json").write_text(json.dumps(config, indent=2) + "\n")


def train(folder: Path, steps: int, every: int, seed: int) -> list[tuple[int, float]]:
    """Train with Adam on minibatches, saving a checkpoint every ``every``
    steps (and at step 0); return (step, loss on held-out data) at each."""
    rng = np.random.default_rng(seed)
    # The teacher: a skip-free ReLU MLP of the same sizes, scaled to give
    # outputs of about the inputs' size.
    U = rng.normal(0.0, 1.0 / np.sqrt(D), (M, D))
    V = rng.normal(0.0, 2.0 / np.sqrt(M), (D, M))

    def teacher(x: np.ndarray) -> np.ndarray:
        return np.maximum(x @ U.T, 0.0) @ V.T

    x_test = rng.normal(size=(1024, D))
    y_test = teacher(x_test)
    params = init_params(rng)
    moment = {k: np.zeros_like(v) for k, v in params.items()}
    second = {k: np.zeros_like(v) for k, v in params.items()}
    lr, beta1, beta2, eps = 3e-3, 0.9, 0.999, 1e-8
    history = []
    for step in range(steps + 1):
        if step % every == 0:
            save_checkpoint(folder, params, step)
            test_loss = float(np.mean(np.sum((forward(params, x_test)[0] - y_test) ** 2, axis=1)))
            history.append((step, test_loss))
        if step == steps:
            break
        x = rng.normal(size=(256, D))
        _, grads = gradients(params, x, teacher(x))
        t = step + 1
        for k, grad in grads.items():
            moment[k] = beta1 * moment[k] + (1 - beta1) * grad
            second[k] = beta2 * second[k] + (1 - beta2) * grad**2
            m_hat = moment[k] / (1 - beta1**t)
            v_hat = second[k] / (1 - beta2**t)
            params[k] -= lr * m_hat / (np.sqrt(v_hat) + eps)
    return history


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("training_run"), help="checkpoint folder")
    parser.add_argument("--plot", type=Path, default=Path("training_run.png"), help="image file")
    parser.add_argument("--steps", type=int, default=2000, help="training steps (default 2000)")
    parser.add_argument("--every", type=int, default=100, help="steps between checkpoints")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.out.exists():
        if not all(p.name.startswith("checkpoint-") for p in args.out.iterdir()):
            parser.error(f"{args.out} exists and holds more than checkpoints; choose another --out")
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)

    start = time.perf_counter()
    history = train(args.out, args.steps, args.every, args.seed)
    trained = time.perf_counter() - start
    print(f"trained {args.steps} steps in {trained:.1f} s; held-out loss by step:")
    print("  " + ", ".join(f"{step}: {loss:.3f}" for step, loss in history))

    # The series: every checkpoint-<step>/ of the folder, in step order.
    # bracket=True: the best flip set's residual and its proven lower bound
    # for every block; time_limit bounds each block's search (the bracket's
    # branch and bound included), so the scan stays quick.
    start = time.perf_counter()
    reports = skipsearch.scan(args.out, layout=LAYOUT, bracket=True, time_limit=0.2, progress=False)
    scanned = time.perf_counter() - start
    steps = sorted({r.step for r in reports if r.step is not None})
    print(f"scanned {len(reports)} blocks of {len(steps)} checkpoints in {scanned:.1f} s")
    print("distance from absorbable (bracket [lower, upper] where computed) by step:")
    print("  step  " + "  ".join(f"{'layer ' + str(i):>16}" for i in range(LAYERS)))
    for step in steps:
        cells = []
        for r in sorted((r for r in reports if r.step == step), key=lambda r: r.layer):
            if r.distance_bracket is not None:
                low, up = r.distance_bracket
                cells.append(f"[{low:.3f}, {up:.3f}]")
            elif r.distance is not None:
                cells.append(f"{r.distance:.3f}")
            else:
                cells.append("-")
        print(f"  {step:>4}  " + "  ".join(f"{c:>16}" for c in cells))
    verdicts = sorted({r.verdict for r in reports})
    print(f"verdicts: {', '.join(verdicts)}")

    try:
        plot_training_series(reports, args.plot)
    except ImportError as e:
        print(f"no plot: {e}", file=sys.stderr)
        return 0
    print(f"plot: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
