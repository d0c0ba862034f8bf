"""Nodes per second of the distributed search on a dask LocalCluster against
the threads-only search, side by side in one run, on one instance.

    python benches/cluster_rate.py benches/data/qoblib_marketsplit/ms_10_100_003.dat \
        --workers 2 --seconds 30

Both runs get the same time limit; an instance that neither solves within
it (QOBLIB's ms_10_100_003 on 2 cores) measures the steady rate. Prints
one line per run (nodes, seconds, nodes/s, status) and the ratio.
"""

from __future__ import annotations

import argparse
import platform
import time

import skipsearch
from skipsearch._engine.instances import read_instance


def cpu_name() -> str:
    """The CPU's model name, family and model, from /proc/cpuinfo."""
    info: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                info[key.strip()] = value.strip()
    except OSError:
        return platform.processor()
    return ", ".join(f"{k} {info[k]}" for k in ("model name", "cpu family", "model") if k in info)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("instance")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    A, b = read_instance(args.instance)
    print(f"CPU: {cpu_name()}; instance {args.instance}; {args.seconds:g} s each")
    rates = {}
    t = time.perf_counter()
    r = skipsearch.subset_sum(A, b, threads=args.workers, time_limit=args.seconds)
    wall = time.perf_counter() - t
    rates["threads"] = r.nodes / wall
    print(
        f"threads={args.workers}: {r.status}, {r.nodes} nodes in {wall:.1f} s, "
        f"{rates['threads']:.3g} nodes/s"
    )
    with (
        LocalCluster(
            n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        client.submit(sum, [1]).result()  # workers up before the clock starts
        t = time.perf_counter()
        r = skipsearch.subset_sum(A, b, executor=client.get_executor(), time_limit=args.seconds)
        wall = time.perf_counter() - t
    rates["dask"] = r.nodes / wall
    print(
        f"dask LocalCluster {args.workers} x 1 thread: {r.status}, {r.nodes} nodes in "
        f"{wall:.1f} s, {rates['dask']:.3g} nodes/s"
    )
    print(f"ratio dask / threads: {rates['dask'] / rates['threads']:.3f}")


if __name__ == "__main__":
    main()
