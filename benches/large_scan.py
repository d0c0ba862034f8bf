"""End to end on a 7B shape: ``skipsearch scan`` of a 32-layer bf16 checkpoint.

What it measures: a GPT-NeoX checkpoint (Pythia-6.9B's FFN shape, d = 4096,
m = 16384, 32 layers, bf16) with the family's real tensor names
(``gpt_neox.layers.{i}.mlp.dense_h_to_4h.weight`` ``[m, d]``,
``dense_4h_to_h.weight`` ``[d, m]`` and their biases, as in transformers'
``modeling_gpt_neox.py``), generated from a fixed seed into one shard per
layer with a ``model.safetensors.index.json`` (about 8 GiB; written to a
temporary folder, never committed), then

- ``read``: every FFN tensor read and widened, nothing decided (the floor
  of any scan);
- ``skipsearch scan DIR --no-progress`` in each mode: ``--no-distance``
  (the certificates only), the default (the exact distance where its
  estimated time fits ``--distance-budget``, 30 s per block, else the
  bound) and ``--distance`` (the exact distance of every layer),

each in a process of its own, with its wall time, time per block and peak
resident memory (``ru_maxrss`` from ``os.wait4``). The CPU, its kernel
(``skipsearch``'s ``stats.kernel``) and the core count head the output.

Usage::

    python benches/large_scan.py                          # all modes, 32 layers
    python benches/large_scan.py --layers 4 --modes read,exact
    python benches/large_scan.py --d 2048 --m 8192 --layers 8 --json out.json

The weights are random (``W_up ~ N(0, 1/d)``, ``W_down ~ N(0, 1/m)``), so
every block is not absorbable and decided by a certificate; real
checkpoints take the same path at this width.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from machine import cpu

MODES = ("read", "no-distance", "default", "exact")
_FLAGS = {"no-distance": ["--no-distance"], "default": [], "exact": ["--distance"]}


def _bf16_bytes(x: np.ndarray) -> bytes:
    """float32 -> bfloat16 (round to nearest even), little-endian bytes."""
    bits = x.astype(np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype("<u2").tobytes()


def _write_shard(path: Path, tensors: dict[str, tuple[tuple[int, ...], bytes]]) -> None:
    """A safetensors file of bf16 tensors (the format's header by hand:
    numpy has no bfloat16 for ``safetensors.numpy.save_file``)."""
    header: dict[str, object] = {}
    offset = 0
    for name, (shape, data) in tensors.items():
        header[name] = {
            "dtype": "BF16",
            "shape": list(shape),
            "data_offsets": [offset, offset + len(data)],
        }
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, data in tensors.values():
            f.write(data)


def write_checkpoint(folder: Path, d: int, m: int, layers: int) -> int:
    """Write the checkpoint; return the bytes of its FFN weights."""
    rng = np.random.default_rng(0)
    weight_map: dict[str, str] = {}
    total = 0
    for i in range(layers):
        base = f"gpt_neox.layers.{i}.mlp."
        tensors = {
            base + "dense_h_to_4h.weight": (
                (m, d),
                _bf16_bytes(rng.standard_normal((m, d), dtype=np.float32) / np.sqrt(d)),
            ),
            base + "dense_h_to_4h.bias": ((m,), _bf16_bytes(np.zeros(m, np.float32))),
            base + "dense_4h_to_h.weight": (
                (d, m),
                _bf16_bytes(rng.standard_normal((d, m), dtype=np.float32) / np.sqrt(m)),
            ),
            base + "dense_4h_to_h.bias": ((d,), _bf16_bytes(np.zeros(d, np.float32))),
        }
        shard = f"model-{i + 1:05d}-of-{layers:05d}.safetensors"
        _write_shard(folder / shard, tensors)
        weight_map.update(dict.fromkeys(tensors, shard))
        total += sum(len(b) for _, b in tensors.values())
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map})
    )
    # configuration_gpt_neox.py's keys (Pythia-6.9B: 4096, 16384, 32 layers).
    config = {
        "model_type": "gpt_neox",
        "architectures": ["GPTNeoXForCausalLM"],
        "hidden_size": d,
        "intermediate_size": m,
        "num_hidden_layers": layers,
        "num_attention_heads": 32,
        "hidden_act": "gelu",
        "use_parallel_residual": True,
    }
    (folder / "config.json").write_text(json.dumps(config))
    return total


_READ = """
import sys, time
from skipsearch.io.checkpoints import open_checkpoint
import numpy as np
start = time.perf_counter()
ckpt = open_checkpoint(sys.argv[1])
n = 0
for key in ckpt.keys():
    if key.endswith(".weight"):
        np.asarray(ckpt.get(key), dtype=np.float32)
        n += 1
print(f"read {n} tensors in {time.perf_counter() - start:.1f} s")
"""


def _run(cmd: list[str]) -> tuple[float, int, str]:
    """Wall seconds, peak RSS (bytes) and output of ``cmd`` in a process of its own."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out}")
    return seconds, usage.ru_maxrss * 1024, out


def _machine() -> str:
    import skipsearch

    rng = np.random.default_rng(0)
    r = skipsearch.find_absorbing_subset(
        rng.standard_normal((8, 4)), rng.standard_normal((4, 8)), activation="gelu"
    )
    return f"{cpu()}, {os.cpu_count()} cores, kernel {r.stats.kernel}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=4096)
    parser.add_argument("--m", type=int, default=16384)
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--dir", type=Path, help="write (or reuse) the checkpoint here")
    args = parser.parse_args()
    modes = args.modes.split(",")
    unknown = set(modes) - set(MODES)
    if unknown:
        parser.error(f"unknown modes {sorted(unknown)}; choose from {', '.join(MODES)}")
    print(f"machine: {_machine()}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.dir or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        if not (folder / "config.json").exists():
            t = time.perf_counter()
            # In a process of its own: the modes' processes are forked from
            # this one, and Linux counts the RSS a child inherits at fork in
            # its ru_maxrss, so the writer's buffers would inflate every peak.
            with concurrent.futures.ProcessPoolExecutor(
                1, mp_context=multiprocessing.get_context("spawn")
            ) as pool:
                size = pool.submit(write_checkpoint, folder, args.d, args.m, args.layers).result()
            print(
                f"wrote {args.layers} layers of {args.d} x {args.m} bf16 "
                f"({size / 2**30:.1f} GiB) in {time.perf_counter() - t:.0f} s"
            )
        rows = []
        for mode in modes:
            if mode == "read":
                cmd = [sys.executable, "-c", _READ, str(folder)]
            else:
                cmd = [sys.executable, "-m", "skipsearch", "scan", str(folder), "--no-progress"]
                cmd += _FLAGS[mode]
            seconds, peak, out = _run(cmd)
            row = {
                "mode": mode,
                "seconds": seconds,
                "per_block": seconds / args.layers,
                "peak_gib": peak / 2**30,
                "summary": next(
                    (line for line in out.splitlines() if "FFN block" in line or "read " in line),
                    "",
                ),
            }
            rows.append(row)
            print(
                f"{mode:12s} {seconds:8.1f} s  {row['per_block']:6.2f} s/block  "
                f"peak {row['peak_gib']:.2f} GiB  | {row['summary']}",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps({"machine": _machine(), "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
