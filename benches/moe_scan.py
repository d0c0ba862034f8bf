"""Scan time and peak memory of a mixture-of-experts checkpoint.

What it measures: ``skipsearch.scan`` on a Mixtral-shaped checkpoint in
transformers v5's fused form (``mlp.experts.gate_up_proj`` ``[E, 2m, d]``,
``mlp.experts.down_proj`` ``[E, d, m]``), float16, written once to a
temporary folder: the wall time of the scan (every expert of every layer
read, split into gate and up, widened and decided), and the process's peak
resident memory after it, against the size the weights have once widened
to float32. The scan reads one expert's slice of a stacked tensor at a
time, so the peak stays near one expert's share, not the file's.

Usage::

    python benches/moe_scan.py                       # d=2048, m=7168, 8 experts, 2 layers
    python benches/moe_scan.py --d 4096 --m 14336 --layers 1

The machine matters: say what ``lscpu`` names, and how many other jobs ran.
The peak is the whole process's (``ru_maxrss``), so run it alone.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file


def write_checkpoint(folder: Path, d: int, m: int, experts: int, layers: int) -> int:
    """The checkpoint's files; returns the bytes of its weights."""
    rng = np.random.default_rng(0)
    tensors = {}
    for i in range(layers):
        base = f"model.layers.{i}.mlp."
        tensors[base + "experts.gate_up_proj"] = (
            rng.standard_normal((experts, 2 * m, d), dtype=np.float32) * 0.02
        ).astype(np.float16)
        tensors[base + "experts.down_proj"] = (
            rng.standard_normal((experts, d, m), dtype=np.float32) * 0.02
        ).astype(np.float16)
        tensors[base + "gate.weight"] = rng.standard_normal((experts, d)).astype(np.float16)
    save_file(tensors, str(folder / "model.safetensors"))
    config = {
        "model_type": "mixtral",
        "hidden_size": d,
        "intermediate_size": m,
        "num_hidden_layers": layers,
        "num_local_experts": experts,
        "hidden_act": "silu",
    }
    (folder / "config.json").write_text(json.dumps(config))
    return sum(t.nbytes for t in tensors.values())


#: Run in a fresh process, so that its peak memory is the scan's alone.
_CHILD = """
import json, resource, sys, time
import skipsearch
start = time.perf_counter()
reports = skipsearch.scan(sys.argv[1], progress=False)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"blocks": len(reports), "verdicts": sorted({r.verdict for r in reports}),
                  "seconds": seconds, "peak_kib": peak}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=2048)
    parser.add_argument("--m", type=int, default=7168)
    parser.add_argument("--experts", type=int, default=8)
    parser.add_argument("--layers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        # Written by a process of its own too: Linux keeps a process's peak
        # memory across fork and exec, so a parent that had held the weights
        # would lend its peak to the scan's process.
        written = subprocess.run(
            [sys.executable, __file__, "--write", tmp, str(args.d), str(args.m)]
            + [str(args.experts), str(args.layers)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        stored = int(written.strip().splitlines()[-1])
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, str(folder)], check=True, capture_output=True, text=True
        ).stdout
    got = json.loads(out.strip().splitlines()[-1])
    one_expert = 3 * args.d * args.m * 4  # gate, up and down of one expert, as float32
    print(
        f"{got['blocks']} expert blocks ({', '.join(got['verdicts'])}) in {got['seconds']:.2f} s; "
        f"weights {stored / 2**20:.0f} MiB stored (F16), {2 * stored / 2**20:.0f} MiB as "
        f"float32; one expert {one_expert / 2**20:.0f} MiB as float32; peak RSS of the scan "
        f"{got['peak_kib'] / 2**10:.0f} MiB"
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--write"]:
        folder, *sizes = sys.argv[2:]
        print(write_checkpoint(Path(folder), *map(int, sizes)))
    else:
        main()
