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

__all__ = ["cache_dir", "looks_like_repo_id", "resolve_path", "resolve_repo_id"]

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


def cache_dir() -> Path:
    """The Hugging Face hub cache directory, from the environment as it is now."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        value = os.environ.get(var)
        if value:
            return Path(value).expanduser()
    home = os.environ.get("HF_HOME")
    if home:
        return Path(home).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path("~/.cache").expanduser()
    return base / "huggingface" / "hub"


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
        downloads).
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
    return snapshot


def resolve_path(path: PathLike, revision: Optional[str] = None) -> PathLike:
    """``path`` itself, or the cached snapshot of the repo id it names.

    A string that is not an existing path and has the form ``org/name`` is
    resolved with :func:`resolve_repo_id`; any other path is returned as
    it is.

    Raises
    ------
    FileNotFoundError
        As for :func:`resolve_repo_id`.
    ValueError
        ``revision`` is given but ``path`` is not a repo id.
    """
    name = os.fspath(path)
    if isinstance(name, str) and not os.path.lexists(name) and looks_like_repo_id(name):
        return resolve_repo_id(name, revision)
    if revision is not None:
        raise ValueError(
            f"revision {revision!r} applies to Hugging Face repo ids (org/name) found in the local "
            f"cache, and {name!r} is not one"
        )
    return path
