"""Models in the Hugging Face cache, named by repo id, found offline.

The cache trees are built as huggingface_hub lays them out
(``models--ORG--NAME/{blobs,refs,snapshots}``; a snapshot's files are
relative links into ``blobs/``, ``refs/<branch>`` holds the commit hash).
"""

from __future__ import annotations

import builtins
import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import skipsearch
from skipsearch.io.checkpoints import CheckpointError, open_checkpoint
from skipsearch.scan import describe_checkpoint

from tests.test_families import bert_like, save

COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER = "fedcba9876543210fedcba9876543210fedcba98"


def sharded(directory: Path, tensors: dict, config: dict) -> Path:
    """A plain sharded checkpoint: two shards and model.safetensors.index.json."""
    from safetensors.numpy import save_file

    directory.mkdir(parents=True)
    keys = sorted(tensors)
    shards = {
        "model-00001-of-00002.safetensors": keys[::2],
        "model-00002-of-00002.safetensors": keys[1::2],
    }
    weight_map = {}
    for name, part in shards.items():
        save_file(
            {k: np.ascontiguousarray(tensors[k], dtype=np.float32) for k in part},
            str(directory / name),
        )
        weight_map.update({k: name for k in part})
    (directory / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    (directory / "config.json").write_text(json.dumps(config))
    return directory


def cache_copy(
    cache: Path, repo_id: str, source: Path, commit: str = COMMIT, ref: str = "main"
) -> Path:
    """Put the files of ``source`` in ``cache`` as huggingface_hub does: each a blob
    named by its hash, linked relatively from snapshots/<commit>/; refs/<ref> = commit."""
    import hashlib

    repo = cache / ("models--" + repo_id.replace("/", "--"))
    blobs, snapshot = repo / "blobs", repo / "snapshots" / commit
    blobs.mkdir(parents=True, exist_ok=True)
    snapshot.mkdir(parents=True)
    for f in sorted(source.iterdir()):
        digest = hashlib.sha256(f.read_bytes()).hexdigest()
        shutil.copy(f, blobs / digest)
        (snapshot / f.name).symlink_to(os.path.join("..", "..", "blobs", digest))
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / ref).write_text(commit)
    return snapshot


def without_hub(monkeypatch):
    """Make ``import huggingface_hub`` fail for the rest of the test."""
    real_import = builtins.__import__

    def no_hub(name, *args, **kwargs):
        if name == "huggingface_hub" or name.startswith("huggingface_hub."):
            raise ImportError("No module named 'huggingface_hub'")
        return real_import(name, *args, **kwargs)

    for name in [n for n in sys.modules if n.startswith("huggingface_hub")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(builtins, "__import__", no_hub)


@pytest.fixture
def model(tmp_path):
    tensors, config = bert_like(np.random.default_rng(0))
    return tensors, config


def verdicts(reports):
    return [
        (
            r.block,
            r.d,
            r.m,
            r.verdict,
            None if r.result.subset is None else tuple(np.asarray(r.result.subset).tolist()),
        )
        for r in reports
    ]


def test_scan_by_repo_id_in_the_cache_sharded(tmp_path, model, monkeypatch):
    plain = sharded(tmp_path / "plain", *model)
    cache = tmp_path / "hub"
    snapshot = cache_copy(cache, "acme/tiny-bert", plain)
    assert all(p.is_symlink() for p in snapshot.iterdir())
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.chdir(tmp_path)  # "acme/tiny-bert" is no path here
    want = skipsearch.scan(plain)
    got = skipsearch.scan("acme/tiny-bert")
    assert verdicts(got) == verdicts(want)
    assert [r.verdict for r in got] == ["absorbable", "not_absorbable"]
    assert {r.model for r in got} == {"acme/tiny-bert"}
    assert {r.model for r in want} == {"plain"}
    # The snapshot path given directly is named by its repo id too.
    assert {r.model for r in skipsearch.scan(snapshot)} == {"acme/tiny-bert"}
    if importlib.util.find_spec("huggingface_hub") is not None:
        from skipsearch._scan import hub

        # huggingface_hub's own cache lookup found it (no network call).
        assert hub._through_hub("acme/tiny-bert", None, cache) == snapshot
    info = describe_checkpoint("acme/tiny-bert")
    assert info.name == "acme/tiny-bert" and len(info.files) == 2
    assert all(f.parent.name == "blobs" for f in info.files)


def test_scan_by_repo_id_single_file_and_revision(tmp_path, monkeypatch):
    rng = np.random.default_rng(1)
    first = save(tmp_path / "first", *bert_like(rng))
    second = save(tmp_path / "second", *bert_like(rng, hidden_act="relu"))
    cache = tmp_path / "hub"
    cache_copy(cache, "acme/tiny-bert", first, COMMIT, "main")
    cache_copy(cache, "acme/tiny-bert", second, OTHER, "v2")
    # HF_HOME/hub is the cache when HF_HUB_CACHE is not set.
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    home = tmp_path / "home"
    home.mkdir()
    (home / "hub").symlink_to(cache)
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    assert {r.activation for r in skipsearch.scan("acme/tiny-bert")} == {"gelu"}
    assert {r.activation for r in skipsearch.scan("acme/tiny-bert", revision="v2")} == {"relu"}
    assert {r.activation for r in skipsearch.scan("acme/tiny-bert", revision=OTHER)} == {"relu"}
    with pytest.raises(
        FileNotFoundError,
        match=rf"not its revision .v3. \(it has ref main -> {COMMIT}, ref v2 -> {OTHER}, ",
    ):
        skipsearch.scan("acme/tiny-bert", revision="v3")
    # A ref whose snapshot is gone (a deleted snapshot folder) says so.
    shutil.rmtree(cache / "models--acme--tiny-bert" / "snapshots" / OTHER)
    with pytest.raises(FileNotFoundError, match=r"ref v2 -> \w+ \(snapshot missing\)"):
        skipsearch.scan("acme/tiny-bert", revision="v2")
    with pytest.raises(ValueError, match="applies to Hugging Face repo ids"):
        skipsearch.scan(first, revision="v2")


def test_cli_scans_a_repo_id_with_a_revision(tmp_path, monkeypatch, capsys):
    from skipsearch import cli

    rng = np.random.default_rng(2)
    cache = tmp_path / "hub"
    cache_copy(cache, "acme/m", save(tmp_path / "a", *bert_like(rng)), COMMIT, "main")
    cache_copy(
        cache, "acme/m", save(tmp_path / "b", *bert_like(rng, hidden_act="relu")), OTHER, "v2"
    )
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.chdir(tmp_path)
    code = cli.main(["scan", "acme/m", "--revision", "v2", "--json", "--no-progress"])
    out, _ = capsys.readouterr()
    assert code == 0
    document = json.loads(out)
    blocks = document["blocks"] if isinstance(document, dict) else document
    assert {b["model"] for b in blocks} == {"acme/m"}
    assert {b["activation"] for b in blocks} == {"relu"}


def test_a_repo_id_not_in_the_cache_says_nothing_is_downloaded(tmp_path, monkeypatch):
    cache = tmp_path / "empty-cache"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as e:
        skipsearch.scan("acme/absent")
    message = str(e.value)
    assert str(cache) in message and "never downloads" in message
    assert "hf download acme/absent" in message
    # An existing path always wins over a repo id.
    local = save(tmp_path / "acme" / "absent", *bert_like(np.random.default_rng(3)))
    assert local.is_dir()
    assert {r.model for r in skipsearch.scan("acme/absent")} == {"absent"}


def test_a_dangling_link_is_an_incomplete_download(tmp_path, model, monkeypatch):
    plain = sharded(tmp_path / "plain", *model)
    cache = tmp_path / "hub"
    snapshot = cache_copy(cache, "acme/cut", plain)
    shard = snapshot / "model-00002-of-00002.safetensors"
    os.remove(shard.resolve())  # the blob never finished downloading
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as e:
        skipsearch.scan("acme/cut")
    message = str(e.value)
    assert "model-00002-of-00002.safetensors" in message
    assert "download is incomplete" in message and "hf download acme/cut" in message


def test_without_huggingface_hub_the_cache_layout_is_read(tmp_path, model, monkeypatch):
    plain = sharded(tmp_path / "plain", *model)
    cache = tmp_path / "hub"
    cache_copy(cache, "acme/tiny-bert", plain)
    cache_copy(
        cache,
        "acme/tiny-bert",
        save(tmp_path / "relu", *bert_like(np.random.default_rng(4), hidden_act="relu")),
        OTHER,
        "v2",
    )
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.chdir(tmp_path)
    without_hub(monkeypatch)
    from skipsearch._scan import hub

    with pytest.raises(ImportError):
        import huggingface_hub  # noqa: F401
    assert hub._through_hub("acme/tiny-bert", None, cache) is None  # the plain reader decides
    got = skipsearch.scan("acme/tiny-bert")
    assert verdicts(got) == verdicts(skipsearch.scan(plain))
    assert {r.model for r in got} == {"acme/tiny-bert"}
    assert {r.activation for r in skipsearch.scan("acme/tiny-bert", revision="v2")} == {"relu"}
    assert {r.activation for r in skipsearch.scan("acme/tiny-bert", revision=OTHER)} == {"relu"}


def test_looks_like_repo_id():
    from skipsearch._scan.hub import looks_like_repo_id

    assert looks_like_repo_id("openai-community/gpt2")
    assert looks_like_repo_id("sentence-transformers/all-MiniLM-L6-v2")
    for name in ("gpt2", "./m", "a/b/c", "/abs/path", "a/..", "a--b/c", "../x", "a/b.", "m.gguf"):
        assert not looks_like_repo_id(name)


def test_shards_may_link_anywhere_but_must_be_named_in_their_folder(tmp_path, model):
    """A shard is a plain file name in the index's folder; the file by that name may be a
    link to anywhere (the cache's blobs/), but the name may not climb out of the folder."""
    plain = sharded(tmp_path / "plain", *model)
    linked = tmp_path / "linked"
    linked.mkdir()
    store = tmp_path / "store"
    store.mkdir()
    for f in plain.iterdir():
        shutil.move(str(f), store / f.name)
        (linked / f.name).symlink_to(store / f.name)
    ckpt = open_checkpoint(linked)
    assert {f.parent for f in ckpt.files} == {store}
    index = json.loads((store / "model.safetensors.index.json").read_text())
    index["weight_map"] = {k: "sub/" + v for k, v in index["weight_map"].items()}
    (linked / "model.safetensors.index.json").unlink()
    (linked / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(CheckpointError, match="outside its folder: sub/model-00001"):
        open_checkpoint(linked)


def test_a_gguf_repo_in_the_cache(tmp_path, monkeypatch):
    """A GGUF repo has no config.json: its snapshot holds the .gguf file alone."""
    pytest.importorskip("gguf")
    from tests.test_gguf import gpt2_file

    source = tmp_path / "src"
    source.mkdir()
    gpt2_file(source / "tiny.F32.gguf", np.random.default_rng(5))
    cache = tmp_path / "hub"
    cache_copy(cache, "acme/tiny-GGUF", source)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.chdir(tmp_path)
    reports = skipsearch.scan("acme/tiny-GGUF")
    assert [(r.model, r.block, r.verdict) for r in reports] == [
        ("acme/tiny-GGUF", "blk.0", "absorbable"),
        ("acme/tiny-GGUF", "blk.1", "not_absorbable"),
    ]
    # The blob is gone (an interrupted download): the link names the file.
    blob = (cache / "models--acme--tiny-GGUF" / "snapshots" / COMMIT / "tiny.F32.gguf").resolve()
    os.remove(blob)
    with pytest.raises(FileNotFoundError, match=r"tiny.F32.gguf .*download is incomplete"):
        skipsearch.scan("acme/tiny-GGUF")


def test_a_bare_repo_id_is_read_from_the_cache_or_suggested(tmp_path, monkeypatch):
    # gpt2, bert-base-uncased, t5-small: canonical ids that from_pretrained
    # caches as models--gpt2 (issue 47).
    rng = np.random.default_rng(4)
    cache = tmp_path / "hub"
    cache_copy(cache, "gpt2", save(tmp_path / "a", *bert_like(rng)), COMMIT, "main")
    cache_copy(cache, "gpt2", save(tmp_path / "b", *bert_like(rng, hidden_act="relu")), OTHER, "v2")
    cache_copy(cache, "acme/tiny-bert", save(tmp_path / "c", *bert_like(rng)), COMMIT, "main")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.chdir(tmp_path)
    assert {r.activation for r in skipsearch.scan("gpt2")} == {"gelu"}
    assert {r.activation for r in skipsearch.scan("gpt2", revision="v2")} == {"relu"}
    # Neither a path nor a cached model: the cached org/name ids it may mean.
    with pytest.raises(FileNotFoundError) as e:
        skipsearch.scan("tiny-bert")
    message = str(e.value)
    assert "checkpoint path does not exist: tiny-bert" in message and str(cache) in message
    assert "did you mean the repo id 'acme/tiny-bert'?" in message
    with pytest.raises(FileNotFoundError) as e:
        skipsearch.scan("nothing-like-it")
    assert "did you mean" not in str(e.value)
    # A local folder of that name wins over the cache.
    save(tmp_path / "gpt2", *bert_like(rng, hidden_act="relu"))
    assert {r.activation for r in skipsearch.scan("gpt2")} == {"relu"}
