"""Find a model named by its Hugging Face repo id in the local cache, offline.

``skipsearch scan org/name`` scans the snapshot of ``org/name`` that the
Hugging Face cache already holds: ``<cache>/models--org--name/snapshots/
<commit>/``, whose files are relative links into ``blobs/``. The revision
(a branch, a tag or a commit hash; ``main`` by default) is looked up in
``refs/``. Nothing is ever downloaded and no network call is made: a model
that is not in the cache is an error that says how to download it.

The cache directory is the one ``huggingface_hub`` uses: ``HF_HUB_CACHE``
(or the older ``HUGGINGFACE_HUB_CACHE``), else ``HF_HOME/hub``, else
``$XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub``;
read when a repo id is resolved, so a changed environment applies. When
``huggingface_hub`` is installed (the ``hub`` extra) its own cache lookup
(:func:`huggingface_hub.try_to_load_from_cache`) resolves the revision;
without it a small reader of the same layout does.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional, Union

__all__ = [
    "cache_dir",
    "check_snapshot",
    "looks_like_repo_id",
    "resolve_name",
    "resolve_path",
    "resolve_repo_id",
    "snapshot_folder",
]

PathLike = Union[str, "os.PathLike[str]"]

#: ``org/name`` as the Hub spells repo ids: letters, digits, ``-``, ``_``
#: and ``.``, neither part starting with ``-`` or ``.``, no ``--`` or ``..``.
_REPO_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9_][A-Za-z0-9_.-]{0,95}")
_COMMIT = re.compile(r"[0-9a-f]{40}")

#: Files a model snapshot holds, tried in order to find it through
#: ``huggingface_hub``.
_MARKERS = (
    "config.json",
    "model.safetensors.index.json",
    "model.safetensors",
    "pytorch_model.bin.index.json",
    "pytorch_model.bin",
)


def looks_like_repo_id(name: str) -> bool:
    """Whether ``name`` has the form of a Hub repo id, ``org/name``.

    >>> looks_like_repo_id("openai-community/gpt2"), looks_like_repo_id("./m"), looks_like_repo_id("a/b/c")
    (True, False, False)
    """
    if not _REPO_ID.fullmatch(name):
        return False
    return "--" not in name and ".." not in name and not name.endswith((".", "-"))


#: What to set when the cache's folder cannot be found (no home directory).
_SET_CACHE = (
    "set HF_HOME (the cache is then HF_HOME/hub) or HF_HUB_CACHE to the Hugging Face cache "
    "folder, or pass a local checkpoint path"
)


def _expand(value: str, variable: str) -> Path:
    """``value`` with a leading ``~`` expanded; FileNotFoundError when there
    is no home directory to expand it to (HOME unset and a user id with no
    passwd entry, as under ``docker run --user``)."""
    expanded = os.path.expanduser(value)
    if expanded.startswith("~"):
        raise FileNotFoundError(
            f"cannot find the Hugging Face cache: {variable} starts with ~, and there is no home "
            f"directory (HOME is not set and user id {_uid()} has no passwd entry); {_SET_CACHE}"
        )
    return Path(expanded)


def _uid() -> str:
    getuid = getattr(os, "getuid", None)
    return str(getuid()) if getuid is not None else "?"


def cache_dir() -> Path:
    """The Hugging Face hub cache directory, from the environment as it is now.

    Raises
    ------
    FileNotFoundError
        No variable names the cache and there is no home directory (HOME
        unset, a user id with no passwd entry); the message says to set
        ``HF_HOME`` or ``HF_HUB_CACHE``.
    """
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        value = os.environ.get(var)
        if value:
            return _expand(value, f"{var}={value!r}")
    home = os.environ.get("HF_HOME")
    if home:
        return _expand(home, f"HF_HOME={home!r}") / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return _expand(xdg, f"XDG_CACHE_HOME={xdg!r}") / "huggingface" / "hub"
    return (
        _expand("~/.cache", "its default folder, ~/.cache/huggingface/hub,") / "huggingface" / "hub"
    )


def _repo_folder(repo_id: str) -> str:
    try:
        from huggingface_hub.file_download import (  # type: ignore[import-not-found, unused-ignore]
            repo_folder_name,
        )
    except ImportError:
        return "models--" + repo_id.replace("/", "--")
    return str(repo_folder_name(repo_id=repo_id, repo_type="model"))


def _through_hub(repo_id: str, revision: Optional[str], cache: Path) -> Optional[Path]:
    """The snapshot folder as ``huggingface_hub``'s cache lookup finds it
    (no network call), or None (not installed, or no marker file cached)."""
    try:
        from huggingface_hub import (  # type: ignore[import-not-found, unused-ignore]
            try_to_load_from_cache,
        )
    except ImportError:
        return None
    for name in _MARKERS:
        try:
            found = try_to_load_from_cache(
                repo_id, name, cache_dir=str(cache), revision=revision, repo_type="model"
            )
        except Exception:  # an id or revision the library refuses: the plain reader decides
            return None
        if isinstance(found, str):
            return Path(found).parent
    return None


def _plain(repo: Path, revision: str) -> Optional[Path]:
    """The snapshot folder of ``revision`` in the plain cache layout:
    ``refs/<revision>`` holds a commit hash, ``snapshots/<hash>/`` its files."""
    ref = repo / "refs" / revision
    commit: Optional[str] = None
    if ref.is_file():
        commit = ref.read_text(encoding="utf-8").strip()
    elif _COMMIT.fullmatch(revision):
        commit = revision
    if commit is None or not _COMMIT.fullmatch(commit):
        return None
    snapshot = repo / "snapshots" / commit
    return snapshot if snapshot.is_dir() else None


def _cached_revisions(repo: Path) -> list[str]:
    """What the cache holds of a repo, in words: each ref with the commit it
    names (and whether that snapshot is there), then each snapshot."""
    names: list[str] = []
    refs = repo / "refs"
    snapshots = repo / "snapshots"
    if refs.is_dir():
        for p in sorted(q for q in refs.rglob("*") if q.is_file()):
            try:
                commit = p.read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError):
                commit = ""
            there = bool(commit) and (snapshots / commit).is_dir()
            names.append(
                f"ref {p.relative_to(refs)} -> {commit or '?'}"
                + ("" if there else " (snapshot missing)")
            )
    if snapshots.is_dir():
        names += sorted(f"snapshot {p.name}" for p in snapshots.iterdir() if p.is_dir())
    return names


#: Entries of a snapshot folder checked at most (a model's snapshot holds
#: tens of files; a folder with more is not one the Hub wrote).
_MAX_SNAPSHOT_ENTRIES = 100_000


def _tampered(what: str, repo_id: str) -> Exception:
    from skipsearch.io.checkpoints import CheckpointError

    return CheckpointError(
        f"{what}: the Hugging Face cache links a snapshot's files only into its repo's blobs/ "
        f"folder, so this cache was altered (or is not one the Hub wrote); nothing is read from "
        f"it: download the model again (hf download {repo_id}) or pass a checkpoint path"
    )


def check_snapshot(snapshot: Path, repo: Optional[Path] = None) -> None:
    """Refuse a cache snapshot with a link that leads outside its repo's
    ``blobs/``.

    The Hub's cache keeps each file once in ``<repo>/blobs/`` and links it
    from ``<repo>/snapshots/<commit>/`` (relative links, one per file, in
    subfolders too); files that are not links (a cache written without
    symbolic links, on Windows) are read as they are.

    Parameters
    ----------
    snapshot : pathlib.Path
        The snapshot folder, ``<repo>/snapshots/<commit>``.
    repo : pathlib.Path, optional
        The repo folder it must belong to (``<cache>/models--org--name``);
        default: the snapshot's grandparent.

    Raises
    ------
    CheckpointError
        The snapshot is not a folder of ``<repo>/snapshots`` (a link, or a
        ref that climbs out), or one of its links resolves outside
        ``<repo>/blobs`` (the message names the link and where it leads).
    """
    repo = snapshot.parent.parent if repo is None else repo
    repo_id = "/".join(repo.name[len("models--") :].split("--")) or repo.name
    if (
        os.path.normpath(snapshot.parent) != os.path.normpath(repo / "snapshots")
        or snapshot.name in ("", ".", "..")
        or snapshot.is_symlink()
    ):
        raise _tampered(f"{snapshot} is not a snapshot folder of {repo / 'snapshots'}", repo_id)
    blobs = os.path.realpath(repo / "blobs")
    folders, seen = [os.fspath(snapshot)], 0
    while folders:
        folder = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue  # unreadable: reading its files will say so
        for entry in entries:
            seen += 1
            if seen > _MAX_SNAPSHOT_ENTRIES:
                raise _tampered(
                    f"{snapshot} holds more than {_MAX_SNAPSHOT_ENTRIES} entries", repo_id
                )
            if entry.is_symlink():
                target = os.path.realpath(entry.path)
                try:
                    inside = os.path.commonpath([target, blobs]) == blobs and target != blobs
                except ValueError:  # another drive
                    inside = False
                if not inside:
                    try:
                        link = os.readlink(entry.path)
                    except OSError:
                        link = "?"
                    raise _tampered(
                        f"{entry.path} is a link to {link}, which leads to {target}, outside "
                        f"{repo / 'blobs'}",
                        repo_id,
                    )
            elif entry.is_dir(follow_symlinks=False):
                folders.append(entry.path)


def snapshot_folder(path: PathLike) -> Optional[Path]:
    """The cache snapshot folder that ``path`` is or holds a file of
    (``.../models--org--name/snapshots/<commit>``, as given or with its
    links resolved), else None."""
    p = Path(os.path.abspath(os.fspath(path)))
    candidates = [p, p.parent]
    try:
        real = Path(os.path.realpath(p))
        candidates += [real, real.parent]
    except (OSError, ValueError):
        pass
    for folder in candidates:
        if folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("models--"):
            return folder
    return None


def resolve_repo_id(repo_id: str, revision: Optional[str] = None) -> Path:
    """The snapshot folder of ``repo_id`` in the local Hugging Face cache.

    Parameters
    ----------
    repo_id : str
        ``org/name``.
    revision : str, optional
        A branch, tag or commit hash. Default: ``main``.

    Returns
    -------
    pathlib.Path
        ``<cache>/models--org--name/snapshots/<commit>``.

    Raises
    ------
    FileNotFoundError
        The cache holds no such model or revision; the message names the
        cache directory and the command that downloads it (skipsearch never
        downloads). Also when the cache cannot be found: no variable names
        it and there is no home directory (the message says to set
        ``HF_HOME`` or ``HF_HUB_CACHE``).
    CheckpointError
        The snapshot's links lead outside the repo's ``blobs/`` (a tampered
        cache; :func:`check_snapshot`).
    ValueError
        ``revision`` is empty or climbs out of the cache (``..``).
    """
    if revision is not None and (
        not isinstance(revision, str) or not revision or ".." in revision.split("/")
    ):
        raise ValueError(f"revision must be a branch, tag or commit hash, got {revision!r}")
    cache = cache_dir()
    repo = cache / _repo_folder(repo_id)
    rev = revision or "main"
    download = f"hf download {repo_id}" + (f" --revision {revision}" if revision else "")
    never = (
        "skipsearch never downloads (it makes no network call); download the model first "
        f"({download}), or pass a local checkpoint path"
    )
    if not repo.is_dir():
        raise FileNotFoundError(
            f"{repo_id!r} is not an existing path, so it was looked up as a Hugging Face repo id "
            f"in the local cache {cache}, which does not hold it; {never}"
        )
    snapshot = _through_hub(repo_id, revision, cache) or _plain(repo, rev)
    if snapshot is None:
        cached = _cached_revisions(repo)
        held = f"it has {', '.join(cached)}" if cached else "it has no snapshot"
        raise FileNotFoundError(
            f"the Hugging Face cache {cache} holds {repo_id} but not its revision {rev!r} "
            f"({held}); {never}"
        )
    check_snapshot(snapshot, repo)
    return snapshot


#: A repo id without its organisation, as the Hub keeps canonical models.
_BARE_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,95}")


def _looks_like_bare_id(name: str) -> bool:
    return bool(_BARE_ID.fullmatch(name)) and "--" not in name and not name.endswith((".", "-"))


def _cache_or_none() -> Optional[Path]:
    try:
        return cache_dir()
    except FileNotFoundError:
        return None


def _did_you_mean(name: str, cache: Optional[Path]) -> str:
    """``; did you mean the repo id org/name?`` for the cached repos whose
    name (after the organisation) is ``name``, up to three; else ``""``."""
    if cache is None or not cache.is_dir():
        return ""
    try:
        folders = sorted(
            f.name for f in cache.iterdir() if f.name.startswith("models--") and f.is_dir()
        )
    except OSError:
        return ""
    ids = [
        f.removeprefix("models--").replace("--", "/")
        for f in folders
        if f.lower().endswith("--" + name.lower())
    ]
    if not ids:
        return ""
    return "; did you mean the repo id " + " or ".join(repr(i) for i in ids[:3]) + "?"


def resolve_name(name: str, revision: Optional[str] = None) -> Optional[Path]:
    """The cached snapshot that ``name`` stands for, or None when ``name``
    is a path (an existing one, or one that is no repo id).

    ``org/name`` that is not an existing path is a repo id
    (:func:`resolve_repo_id`); so is a bare name (``gpt2``,
    ``bert-base-uncased``, ``t5-small``: canonical ids that ``from_pretrained``
    caches under exactly that name) that the cache holds.

    Raises
    ------
    FileNotFoundError
        As for :func:`resolve_repo_id`; or a bare name that is neither a
        path nor in the cache (the message suggests the cached ``org/name``
        ids that end in it).
    """
    if os.path.lexists(name):
        return None
    if looks_like_repo_id(name):
        return resolve_repo_id(name, revision)
    if not _looks_like_bare_id(name):
        return None
    cache = _cache_or_none()
    if cache is not None and (cache / _repo_folder(name)).is_dir():
        return resolve_repo_id(name, revision)
    raise FileNotFoundError(
        f"checkpoint path does not exist: {name} (nor is it a model the Hugging Face cache"
        f"{'' if cache is None else ' ' + str(cache)} holds){_did_you_mean(name, cache)}"
    )


def resolve_path(path: PathLike, revision: Optional[str] = None) -> PathLike:
    """``path`` itself, or the cached snapshot of the repo id it names.

    A string that is not an existing path and has the form ``org/name`` is
    resolved with :func:`resolve_repo_id`, and so is a bare name
    (``gpt2``, ``bert-base-uncased``) that the cache holds; any other path
    is returned as it is.

    Raises
    ------
    FileNotFoundError
        As for :func:`resolve_repo_id`; or a bare name that is neither a
        path nor in the cache (the message suggests the cached ``org/name``
        ids that end in it).
    ValueError
        ``revision`` is given but ``path`` is not a repo id.
    """
    name = os.fspath(path)
    snapshot = resolve_name(name, revision) if isinstance(name, str) else None
    if snapshot is not None:
        return snapshot
    if revision is not None:
        raise ValueError(
            f"revision {revision!r} applies to Hugging Face repo ids (org/name) found in the local "
            f"cache, and {name!r} is not one"
        )
    return path
