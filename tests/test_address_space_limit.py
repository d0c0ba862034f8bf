"""Under an address-space limit a call raises MemoryError or gives a verdict, never aborts.

The dense kernels of faer and the gemm crate allocate their working space
(two copies of the L3 cache per thread, for one) infallibly: an allocation
failure there used to abort the process with SIGABRT ("memory allocation of
67108864 bytes failed"). Each case runs in a subprocess under ``ulimit -v``
at several limits above what importing skipsearch takes.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

BASH = shutil.which("bash")

CHILD = r"""
import sys
import numpy as np
import skipsearch
rng = np.random.default_rng(1)
m, d, threads = (int(x) for x in sys.argv[1:4])
try:
    r = skipsearch.find_absorbing_subset(
        rng.normal(size=(m, d)), rng.normal(size=(d, m)), threads=threads
    )
    print("verdict", r.verdict)
except MemoryError:
    print("MemoryError")
"""

FOOTPRINT = r"""
import numpy as np, skipsearch
for line in open("/proc/self/status"):
    if line.startswith("VmSize:"):
        print(int(line.split()[1]))
"""


def _limit_available() -> bool:
    if BASH is None or not sys.platform.startswith("linux"):
        return False
    probe = subprocess.run([BASH, "-c", "ulimit -v 4000000"], capture_output=True)
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(not _limit_available(), reason="needs bash and ulimit -v")


def _run_limited(kib: int, *args: str) -> subprocess.CompletedProcess:
    script = f'ulimit -v {kib}; exec "{sys.executable}" -c "$0" "$@"'
    return subprocess.run(
        [BASH, "-c", script, CHILD, *args], capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def footprint_kib() -> int:
    out = subprocess.run([sys.executable, "-c", FOOTPRINT], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.strip())


@pytest.mark.parametrize("m, d, threads", [(256, 24, 2), (512, 64, 1)])
@pytest.mark.parametrize("extra_mib", [60, 150, 290, 450, 600])
def test_a_tight_address_space_gives_memory_error_or_a_verdict(
    footprint_kib, m, d, threads, extra_mib
) -> None:
    out = _run_limited(footprint_kib + extra_mib * 1024, str(m), str(d), str(threads))
    assert out.returncode >= 0, f"killed by signal {-out.returncode}: {out.stderr[-500:]}"
    assert "memory allocation of" not in out.stderr, out.stderr[-500:]
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0:
        # Below what the worker threads' stacks need: the pool's own error.
        assert "could not start worker threads" in out.stderr, out.stderr[-500:]
        return
    assert lines and lines[-1] in ("MemoryError", "verdict not_absorbable"), (
        out.stdout,
        out.stderr[-500:],
    )


def _largest_cache_kib() -> int:
    """The largest cache sysfs lists for cpu0 (at least 32 MiB), in KiB."""
    best = 32 << 10
    for index in range(8):
        try:
            with open(f"/sys/devices/system/cpu/cpu0/cache/index{index}/size") as f:
                size = f.read().strip()
        except OSError:
            continue
        digits = size.rstrip("KMG")
        if digits.isdigit():
            best = max(best, int(digits) * {"K": 1, "M": 1 << 10, "G": 1 << 20}.get(size[-1], 0))
    return best


def test_enough_address_space_gives_the_verdict(footprint_kib) -> None:
    # The dense kernels' buffers are reserved per worker and for the caller,
    # a few times the L3 cache each: 480 MiB of L3 on one Xeon here, where a
    # fixed 2 GiB was not enough for two workers.
    scratch_kib = 3 * (3 * _largest_cache_kib() + 4096)
    out = _run_limited(footprint_kib + 2048 * 1024 + scratch_kib, "256", "24", "2")
    assert out.returncode == 0, out.stderr[-500:]
    assert out.stdout.strip().splitlines()[-1] == "verdict not_absorbable"
