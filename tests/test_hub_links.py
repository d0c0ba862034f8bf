"""A tampered Hugging Face cache: snapshot links that leave the repo's blobs/.

The Hub's cache links ``snapshots/<commit>/<file>`` only into the same
repo's ``blobs/``. A link that resolves anywhere else (an absolute path, a
relative one that climbs out, another repo's blobs, a snapshot folder that
is itself a link) is refused, naming the link, whether the model is named
by its repo id (with huggingface_hub's lookup or the plain reader) or its
snapshot folder is given as a path.
"""

from __future__ import annotations

import os
import shutil
import sys

import numpy as np
import pytest
import skipsearch
from skipsearch.io.checkpoints import CheckpointError

from tests.test_families import bert_like, save
from tests.test_hf_cache import COMMIT, cache_copy, without_hub

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="the cache's links need symbolic links"
)


@pytest.fixture
def cached(tmp_path, monkeypatch):
    """A one-file bert checkpoint in a cache; returns (cache, snapshot, plain copy)."""
    plain = save(tmp_path / "plain", *bert_like(np.random.default_rng(0)))
    cache = tmp_path / "hub"
    snapshot = cache_copy(cache, "acme/tiny-bert", plain)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.chdir(tmp_path)
    return cache, snapshot, plain


def relink(link, target):
    link.unlink()
    link.symlink_to(target)


@pytest.mark.parametrize("lookup", ["huggingface_hub", "plain reader"])
def test_a_link_out_of_the_cache_is_refused(cached, tmp_path, monkeypatch, lookup):
    cache, snapshot, plain = cached
    if lookup == "plain reader":
        without_hub(monkeypatch)
    elif importlib_missing("huggingface_hub"):
        pytest.skip("huggingface_hub is not installed")
    # The weights now come from outside the cache: a valid file, so only the
    # link's destination is wrong.
    outside = tmp_path / "elsewhere" / "model.safetensors"
    outside.parent.mkdir()
    shutil.copy(plain / "model.safetensors", outside)
    link = snapshot / "model.safetensors"
    relink(link, outside)
    with pytest.raises(CheckpointError) as e:
        skipsearch.scan("acme/tiny-bert")
    message = str(e.value)
    assert f"{link} is a link to {outside}, which leads to {outside}" in message
    assert "blobs" in message and "hf download acme/tiny-bert" in message
    # The snapshot folder given as a path is refused the same way.
    with pytest.raises(CheckpointError, match="is a link to"):
        skipsearch.scan(snapshot)
    with pytest.raises(CheckpointError, match="is a link to"):
        skipsearch.scan(link)


def importlib_missing(name):
    import importlib.util

    return importlib.util.find_spec(name) is None


def test_relative_climbs_and_other_repos_blobs_are_refused(cached, tmp_path):
    cache, snapshot, plain = cached
    # A second repo in the same cache, whose blob is a valid checkpoint too.
    other = cache_copy(cache, "acme/other", plain)
    other_blob = (other / "model.safetensors").resolve()
    link = snapshot / "model.safetensors"
    relink(link, os.path.join("..", "..", "..", "models--acme--other", "blobs", other_blob.name))
    assert link.resolve() == other_blob
    with pytest.raises(CheckpointError, match=r"models--acme--other/blobs/\w+, outside .*blobs"):
        skipsearch.scan("acme/tiny-bert")
    # A link that climbs out of the cache with ../ and one to the blobs folder itself.
    relink(link, os.path.join("..", "..", "..", "..", "plain", "model.safetensors"))
    with pytest.raises(CheckpointError, match=r"is a link to \.\./\.\./\.\./\.\./plain"):
        skipsearch.scan("acme/tiny-bert")
    relink(link, os.path.join("..", "..", "blobs"))
    with pytest.raises(CheckpointError, match="outside"):
        skipsearch.scan("acme/tiny-bert")


def test_a_link_in_a_subfolder_and_an_unread_file_are_checked_too(cached, tmp_path):
    cache, snapshot, plain = cached
    # Subfolders (sentence-transformers' 1_Pooling/) hold links into blobs/ as well.
    blob = (snapshot / "config.json").resolve()
    (snapshot / "1_Pooling").mkdir()
    (snapshot / "1_Pooling" / "config.json").symlink_to(
        os.path.join("..", "..", "..", "blobs", blob.name)
    )
    assert [r.verdict for r in skipsearch.scan("acme/tiny-bert")] == [
        "absorbable",
        "not_absorbable",
    ]
    # A file the scan never opens still marks the cache as tampered.
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the scan")
    (snapshot / "1_Pooling" / "README.md").symlink_to(secret)
    with pytest.raises(CheckpointError, match=r"1_Pooling/README.md is a link to"):
        skipsearch.scan("acme/tiny-bert")


def test_a_snapshot_folder_that_is_a_link_is_refused(cached, tmp_path):
    cache, snapshot, plain = cached
    moved = tmp_path / "moved-snapshot"
    shutil.copytree(plain, moved)
    shutil.rmtree(snapshot)
    snapshot.symlink_to(moved, target_is_directory=True)
    with pytest.raises(CheckpointError, match=rf"{snapshot} is not a snapshot folder"):
        skipsearch.scan("acme/tiny-bert")


def test_a_ref_or_lookup_that_climbs_out_is_not_followed(cached, tmp_path, monkeypatch):
    cache, snapshot, plain = cached
    evil = tmp_path / "evil"
    shutil.copytree(plain, evil)
    ref = cache / "models--acme--tiny-bert" / "refs" / "main"
    ref.write_text(os.path.relpath(evil, snapshot.parent))
    # Neither lookup follows a ref that is not a commit hash.
    with pytest.raises(FileNotFoundError, match=r"not its revision 'main' \(it has ref main -> "):
        skipsearch.scan("acme/tiny-bert")
    assert [r.verdict for r in skipsearch.scan("acme/tiny-bert", revision=COMMIT)] == [
        "absorbable",
        "not_absorbable",
    ]
    # A lookup (huggingface_hub's, of another release) that yields a folder
    # outside the repo's snapshots/ is refused, not read.
    from skipsearch._scan import hub

    climbed = snapshot.parent / ".." / ".." / ".." / "evil"
    assert climbed.resolve() == evil.resolve()
    monkeypatch.setattr(hub, "_through_hub", lambda repo_id, revision, cache: climbed)
    with pytest.raises(CheckpointError, match=r"evil is not a snapshot folder of .*snapshots"):
        skipsearch.scan("acme/tiny-bert")


def test_cli_exit_code_for_a_tampered_cache(cached, tmp_path, capsys):
    from skipsearch import cli

    cache, snapshot, plain = cached
    outside = tmp_path / "x.json"
    shutil.copy(plain / "config.json", outside)
    relink(snapshot / "config.json", outside)
    code = cli.main(["scan", "acme/tiny-bert", "--no-progress"])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.count("\n") == 1 and "config.json is a link to" in err
