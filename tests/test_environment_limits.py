"""Hostile environments: a nested memory cgroup, RAYON_NUM_THREADS beyond the
thread cap, no home directory.

The cgroup reader takes a root directory, so each case builds a fake
``/proc/self/cgroup``, ``/proc/self/mountinfo`` and ``/sys/fs/cgroup`` tree
in ``tmp_path`` (no root, no real cgroups needed).
"""

from __future__ import annotations

import os
import warnings

import pytest
from skipsearch._memory import cgroup_memory_available, memory_cgroups
from skipsearch._validation import _available_memory, check_threads

MiB = 1 << 20
GiB = 1 << 30
V1_NO_LIMIT = 9223372036854771712  # what cgroup v1 writes for "no limit" (4 KiB pages)

V2_MOUNTINFO = (
    "25 30 0:22 / /proc rw,nosuid,nodev,noexec,relatime shared:13 - proc proc rw\n"
    "31 23 0:27 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n"
)
V1_MOUNTINFO = (
    "31 23 0:28 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:10 - cgroup cgroup rw,cpu,cpuacct\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,nosuid,nodev shared:13 - cgroup cgroup rw,memory\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,nosuid shared:19 - cgroup2 cgroup2 rw\n"
)


def fake(root, cgroup, mountinfo, files, meminfo=None):
    """A fake /proc/self and cgroup tree under ``root``; ``files`` maps paths
    (absolute, as on the real system) to their contents."""
    (root / "proc" / "self").mkdir(parents=True)
    (root / "proc" / "self" / "cgroup").write_text(cgroup)
    (root / "proc" / "self" / "mountinfo").write_text(mountinfo)
    if meminfo is not None:
        (root / "proc" / "meminfo").write_text(
            f"MemTotal: 99999999 kB\nMemAvailable: {meminfo} kB\n"
        )
    for path, text in files.items():
        p = root / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return str(root)


def test_nested_v2_cgroup_limit_is_the_groups_own(tmp_path):
    # systemd-run -p MemoryMax=512M: the root has no limit, the job's scope has.
    job = "/sys/fs/cgroup/user.slice/user-1000.slice/run-u7.scope"
    root = fake(
        tmp_path,
        "0::/user.slice/user-1000.slice/run-u7.scope\n",
        V2_MOUNTINFO,
        {
            "/sys/fs/cgroup/user.slice/memory.max": "max\n",
            "/sys/fs/cgroup/user.slice/memory.current": f"{3 * GiB}\n",
            "/sys/fs/cgroup/user.slice/user-1000.slice/memory.max": f"{8 * GiB}\n",
            "/sys/fs/cgroup/user.slice/user-1000.slice/memory.current": f"{2 * GiB}\n",
            f"{job}/memory.max": f"{512 * MiB}\n",
            f"{job}/memory.high": "max\n",
            f"{job}/memory.current": f"{100 * MiB}\n",
            # 40 MiB of it is inactive page cache, which the kernel reclaims first.
            f"{job}/memory.stat": f"anon {60 * MiB}\nfile {40 * MiB}\ninactive_file {40 * MiB}\n",
        },
        meminfo=12 * GiB // 1024,
    )
    assert cgroup_memory_available(root) == 512 * MiB - 60 * MiB
    found = _available_memory(root)
    assert 12 * GiB in found and 452 * MiB in found
    assert min(found) == 452 * MiB


def test_an_ancestor_and_memory_high_bound_the_group(tmp_path):
    files = {
        # The parent (a Slurm job) has 1 GiB, nearly used by sibling steps.
        "/sys/fs/cgroup/job_7/memory.max": f"{GiB}\n",
        "/sys/fs/cgroup/job_7/memory.current": f"{900 * MiB}\n",
        "/sys/fs/cgroup/job_7/step_0/memory.max": "max\n",
        "/sys/fs/cgroup/job_7/step_0/memory.current": f"{10 * MiB}\n",
    }
    root = fake(tmp_path / "a", "0::/job_7/step_0\n", V2_MOUNTINFO, files)
    assert cgroup_memory_available(root) == 124 * MiB
    # memory.high below memory.max is where the group is throttled: it counts.
    files["/sys/fs/cgroup/job_7/step_0/memory.high"] = f"{50 * MiB}\n"
    root = fake(tmp_path / "b", "0::/job_7/step_0\n", V2_MOUNTINFO, files)
    assert cgroup_memory_available(root) == 40 * MiB


def test_nested_v1_memory_controller(tmp_path):
    job = "/sys/fs/cgroup/memory/slurm/uid_1000/job_42"
    root = fake(
        tmp_path,
        "12:pids:/slurm/uid_1000/job_42\n"
        "4:memory:/slurm/uid_1000/job_42\n"
        "3:cpu,cpuacct:/slurm/uid_1000/job_42\n"
        "0::/\n",
        V1_MOUNTINFO,
        {
            "/sys/fs/cgroup/memory/memory.limit_in_bytes": f"{V1_NO_LIMIT}\n",
            "/sys/fs/cgroup/memory/memory.usage_in_bytes": f"{40 * GiB}\n",
            "/sys/fs/cgroup/memory/slurm/memory.limit_in_bytes": f"{V1_NO_LIMIT}\n",
            "/sys/fs/cgroup/memory/slurm/uid_1000/memory.limit_in_bytes": f"{64 * GiB}\n",
            "/sys/fs/cgroup/memory/slurm/uid_1000/memory.usage_in_bytes": f"{10 * GiB}\n",
            f"{job}/memory.limit_in_bytes": f"{512 * MiB}\n",
            f"{job}/memory.usage_in_bytes": f"{300 * MiB}\n",
            f"{job}/memory.stat": f"cache {200 * MiB}\ntotal_inactive_file {100 * MiB}\n",
        },
    )
    mounts = memory_cgroups(root)
    assert [(m.version, m.mount_point, m.group) for m in mounts] == [
        (1, "/sys/fs/cgroup/memory", "/slurm/uid_1000/job_42"),
        (2, "/sys/fs/cgroup/unified", "/"),
    ]
    assert cgroup_memory_available(root) == 512 * MiB - 200 * MiB


def test_a_namespaced_group_reads_the_mounts_own_group(tmp_path):
    # Inside a container's cgroup namespace the mount's top is the container's
    # group; a /.. path (a group outside the namespace) must not climb out.
    root = fake(
        tmp_path,
        "0::/../../escape\n",
        V2_MOUNTINFO,
        {
            "/sys/fs/cgroup/memory.max": f"{256 * MiB}\n",
            "/sys/fs/cgroup/memory.current": f"{56 * MiB}\n",
            "/escape/memory.max": "1\n",
        },
    )
    assert cgroup_memory_available(root) == 200 * MiB


def test_mount_point_escapes_and_a_subtree_root(tmp_path):
    # A hierarchy mounted at a path with a space, rooted at the job's group
    # (a container without a cgroup namespace: the mount shows a subtree).
    mountinfo = "40 31 0:38 /docker/abc /sys/fs/my\\040cgroup rw - cgroup2 cgroup2 rw\n"
    root = fake(
        tmp_path,
        "0::/docker/abc/inner\n",
        mountinfo,
        {
            "/sys/fs/my cgroup/memory.max": f"{GiB}\n",
            "/sys/fs/my cgroup/memory.current": f"{24 * MiB}\n",
            "/sys/fs/my cgroup/inner/memory.max": f"{2 * GiB}\n",
            "/sys/fs/my cgroup/inner/memory.current": f"{24 * MiB}\n",
        },
    )
    assert cgroup_memory_available(root) == GiB - 24 * MiB


def test_no_limit_and_unreadable_files_are_no_limit(tmp_path):
    root = fake(
        tmp_path / "a",
        "0::/a/b\n",
        V2_MOUNTINFO,
        {
            "/sys/fs/cgroup/a/memory.max": "max\n",
            "/sys/fs/cgroup/a/b/memory.max": "garbage\n",
            "/sys/fs/cgroup/a/b/memory.current": "12\n",
        },
    )
    assert cgroup_memory_available(root) is None
    assert cgroup_memory_available(str(tmp_path / "nothing here")) is None
    # Junk in /proc/self/cgroup and mountinfo is ignored, not an error.
    root = fake(tmp_path / "b", "junk\n::\n", "1 2 3\n - \n", {})
    assert memory_cgroups(root) == []
    assert cgroup_memory_available(root) is None


# -- RAYON_NUM_THREADS ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["RAYON_NUM_THREADS", "RAYON_RS_NUM_CPUS"])
def test_rayon_num_threads_beyond_the_cap_is_not_obeyed(monkeypatch, name):
    monkeypatch.delenv("RAYON_NUM_THREADS", raising=False)
    monkeypatch.delenv("RAYON_RS_NUM_CPUS", raising=False)
    monkeypatch.setenv(name, "5000")
    with pytest.warns(UserWarning, match=rf"{name}=5000 .* at most 1024") as record:
        threads = check_threads(None)
    assert record[0].category.__module__ == "skipsearch._warnings"
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert threads == min(cpus, 1024)


@pytest.mark.parametrize("value", ["1024", "3", "0", "", "junk", "-4", "1e9"])
def test_rayon_num_threads_within_the_cap_or_ignored_by_rayon_is_left_to_it(monkeypatch, value):
    monkeypatch.setenv("RAYON_NUM_THREADS", value)
    monkeypatch.delenv("RAYON_RS_NUM_CPUS", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_threads(None) is None
    # An explicit count is never overridden.
    assert check_threads(7) == 7


# -- no home directory ----------------------------------------------------------------------------


def no_home(monkeypatch):
    """HOME unset and a user id with no passwd entry (docker run --user 12345)."""
    pwd = pytest.importorskip("pwd")
    for name in ("HOME", "HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)

    def missing(uid):
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.setattr(pwd, "getpwuid", missing)
    assert os.path.expanduser("~") == "~"


def test_no_home_directory_asks_for_hf_home(tmp_path, monkeypatch, capsys):
    import skipsearch
    from skipsearch import cli

    no_home(monkeypatch)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"no home directory .* set HF_HOME .*HF_HUB_CACHE"):
        skipsearch.scan("org/name")
    code = cli.main(["scan", "org/name", "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("skipsearch: error: cannot find the Hugging")
    assert "HF_HOME" in err and "internal error" not in err
    # A variable that itself starts with ~ is named.
    monkeypatch.setenv("HF_HOME", "~/hf")
    with pytest.raises(FileNotFoundError, match=r"HF_HOME='~/hf' starts with ~"):
        skipsearch.scan("org/name")
    # A checkpoint path with ~ says what is wrong, not a bug.
    with pytest.raises(FileNotFoundError, match=r"cannot expand ~ in the checkpoint path '~/m'"):
        skipsearch.scan("~/m")
    # With the cache named, the usual answer: not in the cache, nothing downloaded.
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(FileNotFoundError, match="never downloads"):
        skipsearch.scan("org/name")
