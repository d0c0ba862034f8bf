"""How much memory the process's control groups still allow (Linux).

A container, a Slurm job (``--mem``) or a ``systemd-run -p MemoryMax=``
unit limits memory through a control group that is usually nested well
below the root of the cgroup file system: the root's ``memory.max`` says
nothing about it. The kernel kills the process (SIGKILL, no message) once
the group, or any group above it, reaches its limit. So this module finds
the process's own group in every memory hierarchy (``/proc/self/cgroup``),
where that hierarchy is mounted (``/proc/self/mountinfo``), and takes the
least room left over the group and each ancestor up to the mount's root:

- cgroup v2 (the unified hierarchy): ``memory.max`` and, where set,
  ``memory.high`` (above which the group is throttled and reclaimed
  hard), less ``memory.current``;
- cgroup v1 (the ``memory`` controller): ``memory.limit_in_bytes`` less
  ``memory.usage_in_bytes``.

Usage counts the page cache, most of which the kernel reclaims before it
kills anything (a checkpoint that was just read sits there); so, as
``MemAvailable`` and the kubelet's working set do, the inactive file pages
of ``memory.stat`` (``inactive_file``, v1 ``total_inactive_file``) are not
counted as used. ``max`` and the huge values v1 writes for "no limit" are
no limit.

Every path is read under a root directory (``/`` by default), so that a
test can build a fake ``/proc`` and ``/sys/fs/cgroup`` in a temporary
folder. Nothing here raises: a file that is missing or unreadable is no
limit.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple, Optional

__all__ = ["CgroupMount", "cgroup_memory_available", "memory_cgroups"]

#: Limits at or above this many bytes mean no limit (v1 writes
#: ``PAGE_COUNTER_MAX`` pages, about 2**63 bytes; v2 writes ``max``).
_NO_LIMIT = 1 << 60

#: The most bytes read from one file: /proc and cgroup files are small, and
#: a fake or odd one must not take memory without bound.
_MAX_FILE = 1 << 22

#: A bound on the group's depth below its mount (the kernel allows far
#: fewer levels in practice; this only stops a hostile path from looping).
_MAX_DEPTH = 256


class CgroupMount(NamedTuple):
    """One memory hierarchy the process belongs to.

    Attributes
    ----------
    version : int
        1 (the v1 ``memory`` controller) or 2 (the unified hierarchy).
    mount_point : str
        Where the hierarchy is mounted, as ``mountinfo`` names it.
    mount_root : str
        The group mounted there (``/`` unless a container sees a subtree).
    group : str
        The process's group, from ``/proc/self/cgroup``.
    """

    version: int
    mount_point: str
    mount_root: str
    group: str


def _read_text(path: str) -> Optional[str]:
    try:
        with open(path, "rb") as f:
            data = f.read(_MAX_FILE)
    except OSError:
        return None
    return data.decode("utf-8", errors="replace")


def _unescape(field: str) -> str:
    r"""A mountinfo path field: the kernel writes space, tab, newline and
    backslash as octal escapes (``\040``)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _under(root: str, path: str) -> str:
    """``path`` (absolute, as the kernel writes it) inside ``root``."""
    return os.path.join(root, path.lstrip("/"))


def memory_cgroups(root: str = "/") -> list[CgroupMount]:
    """The memory hierarchies of the process, from ``/proc/self/cgroup`` and
    ``/proc/self/mountinfo`` under ``root``.

    Parameters
    ----------
    root : str, default "/"
        The directory that stands for ``/`` (a test's fake tree).

    Returns
    -------
    list of CgroupMount
        One per hierarchy that is both listed for the process and mounted:
        the v1 ``memory`` controller, the v2 unified hierarchy, or both
        (a hybrid set-up). Empty where neither can be read.
    """
    cgroup = _read_text(_under(root, "/proc/self/cgroup"))
    mountinfo = _read_text(_under(root, "/proc/self/mountinfo"))
    if cgroup is None or mountinfo is None:
        return []
    groups: dict[int, str] = {}
    for line in cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, path = parts
        if hierarchy == "0" and controllers == "":
            groups.setdefault(2, path)
        elif "memory" in controllers.split(","):
            groups.setdefault(1, path)
    found: list[CgroupMount] = []
    for version, group in sorted(groups.items()):
        best: Optional[CgroupMount] = None
        for line in mountinfo.splitlines():
            fields = line.split()
            # id, parent, dev, root, mount point, options, [optional...], -,
            # fstype, source, super options
            if "-" not in fields[6:]:
                continue
            dash = fields.index("-", 6)
            if len(fields) < dash + 2:
                continue
            fstype = fields[dash + 1]
            options = fields[dash + 3] if len(fields) > dash + 3 else ""
            if version == 2 and fstype != "cgroup2":
                continue
            if version == 1 and (fstype != "cgroup" or "memory" not in options.split(",")):
                continue
            mount = CgroupMount(version, _unescape(fields[4]), _unescape(fields[3]), group)
            # Of several mounts of the hierarchy, one whose root holds the
            # group (the usual case has just one, rooted at /).
            if best is None or (
                _relative(mount.mount_root, group) is not None
                and _relative(best.mount_root, group) is None
            ):
                best = mount
        if best is not None:
            found.append(best)
    return found


def _relative(mount_root: str, group: str) -> Optional[list[str]]:
    """The parts of ``group`` below ``mount_root``, or None when the group
    is not inside it (a container's cgroup namespace shows ancestors
    outside it as ``/..`` paths)."""
    if not group.startswith("/"):
        return None
    g = [p for p in group.split("/") if p not in ("", ".")]
    r = [p for p in mount_root.split("/") if p not in ("", ".")]
    if ".." in g or ".." in r or g[: len(r)] != r or len(g) - len(r) > _MAX_DEPTH:
        return None
    return g[len(r) :]


def _read_bytes_value(path: str) -> Optional[int]:
    """A cgroup file's byte count; None when absent, unreadable, ``max``
    or no limit."""
    text = _read_text(path)
    if text is None:
        return None
    text = text.strip()
    if not text.isdigit():
        return None
    return int(text)


def _inactive_file(folder: str, version: int) -> int:
    """Inactive page-cache bytes of the group (``memory.stat``), 0 when
    unreadable."""
    text = _read_text(os.path.join(folder, "memory.stat"))
    if text is None:
        return 0
    key = "inactive_file" if version == 2 else "total_inactive_file"
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key and parts[1].isdigit():
            return int(parts[1])
    return 0


def _room(folder: str, version: int) -> Optional[int]:
    """Bytes the group at ``folder`` may still take, or None (no limit)."""
    if version == 2:
        names: tuple[str, ...] = ("memory.max", "memory.high")
        usage_name = "memory.current"
    else:
        names = ("memory.limit_in_bytes",)
        usage_name = "memory.usage_in_bytes"
    limits = [
        v for v in (_read_bytes_value(os.path.join(folder, n)) for n in names) if v is not None
    ]
    limits = [v for v in limits if v < _NO_LIMIT]
    if not limits:
        return None
    usage = _read_bytes_value(os.path.join(folder, usage_name)) or 0
    used = max(0, usage - _inactive_file(folder, version))
    return max(0, min(limits) - used)


def cgroup_memory_available(root: str = "/") -> Optional[int]:
    """The least room left (limit less usage) over the process's memory
    control groups and every ancestor up to each hierarchy's mount.

    Parameters
    ----------
    root : str, default "/"
        The directory that stands for ``/``: ``/proc/self/cgroup``,
        ``/proc/self/mountinfo`` and the mounted hierarchies are read under
        it (tests build a fake tree in a temporary folder).

    Returns
    -------
    int or None
        Bytes, or None when no group on the way sets a limit (or none can
        be read: not Linux, no cgroup file system).
    """
    rooms: list[int] = []
    for mount in memory_cgroups(root):
        top = _under(root, mount.mount_point)
        parts = _relative(mount.mount_root, mount.group)
        # A group outside the mount's root (a namespace's /.. path) is
        # seen only through the mount's own top group.
        folders = [top]
        for i in range(len(parts or [])):
            folders.append(os.path.join(top, *(parts or [])[: i + 1]))
        for folder in folders:
            room = _room(folder, mount.version)
            if room is not None:
                rooms.append(room)
    return min(rooms) if rooms else None
