"""The distributed and resumable search (``executor=``, ``checkpoint=``):
the same answers as the threads-only search, infeasibility only once every
subtree has ended, and resumption after a kill."""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import skipsearch
from skipsearch._engine import distributed, state
from skipsearch._engine.instances import read_instance

pytest.importorskip("fpylll")

DATA = Path(__file__).resolve().parents[1] / "benches" / "data" / "qoblib_marketsplit"


def cornuejols_dawande(k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Cornuejols & Dawande's market split: entries in [0, 99], b half the row sums."""
    rng = np.random.default_rng(seed)
    A = rng.integers(0, 100, (k, 10 * (k - 1)))
    return A, A.sum(axis=1) // 2


#: Market splits that reach the portfolio (BKZ-20 and a tree estimate):
#: (k, seed, status without executor or checkpoint).
PORTFOLIO = [(6, 2, "infeasible"), (6, 6, "infeasible"), (6, 4, "feasible"), (6, 11, "feasible")]


@pytest.fixture
def small_units(monkeypatch: pytest.MonkeyPatch) -> None:
    """Units of a few thousand nodes, so that every search is cut into
    many pieces that hand back their subtrees."""
    monkeypatch.setattr(distributed, "SUBTREE_UNIT", 5_000)
    monkeypatch.setattr(distributed, "SUBTREE_PREFIXES", 8)


def check(A: np.ndarray, b: np.ndarray, r: skipsearch.SubsetSumResult, status: str) -> None:
    assert r.status == status, r.method
    if status == "feasible":
        assert r.solution is not None
        assert np.array_equal(A @ r.solution.astype(np.int64), b)
    else:
        assert r.solution is None


@pytest.mark.parametrize(("k", "seed", "status"), PORTFOLIO)
def test_resumable_search_gives_the_plain_answer(
    k: int, seed: int, status: str, tmp_path: Path, small_units: None
) -> None:
    A, b = cornuejols_dawande(k, seed)
    assert skipsearch.subset_sum(A, b, threads=2).status == status
    path = tmp_path / "state.json"
    reports: list[skipsearch.SearchProgress] = []
    r = skipsearch.subset_sum(
        A, b, threads=2, checkpoint=path, checkpoint_interval=0.01, progress=reports.append
    )
    check(A, b, r, status)
    assert any(step.startswith("units on this thread") for step in r.method), r.method
    record = next(iter(json.loads(path.read_text())["body"]["components"].values()))
    if status == "infeasible":
        # Every subtree ended: none pending, many searched in pieces.
        assert r.method[-1] == "depth-first enumeration ran to its end: infeasible"
        assert record["infeasible"] and record["pending"] == [] and record["finished"] > 100
    else:
        assert record["solution"] is not None
    # The finished state answers again at once, with the same verdict.
    again = skipsearch.subset_sum(A, b, threads=2, checkpoint=path)
    check(A, b, again, status)
    assert any(step.startswith("resumed") for step in again.method)


def test_a_search_stopped_by_a_limit_resumes_to_the_same_proof(
    tmp_path: Path, small_units: None
) -> None:
    A, b = cornuejols_dawande(6, 6)
    path = tmp_path / "state.json"
    stops = []
    for limit in (300_000, 600_000, 900_000):
        r = skipsearch.subset_sum(A, b, threads=1, checkpoint=path, node_limit=limit)
        stops.append(r.status)
        if r.status != "node_limit":
            break
    assert stops[0] == "node_limit"
    body = json.loads(path.read_text())["body"]
    record = next(iter(body["components"].values()))
    assert record["pending"] or record["infeasible"]
    done = skipsearch.subset_sum(A, b, threads=1, checkpoint=path)
    check(A, b, done, "infeasible")
    assert any(step.startswith("resumed from") for step in done.method)


def test_a_process_pool_gives_the_same_answers(small_units: None) -> None:
    with cf.ProcessPoolExecutor(2) as pool:
        for k, seed, status in PORTFOLIO:
            A, b = cornuejols_dawande(k, seed)
            r = skipsearch.subset_sum(A, b, executor=pool)
            check(A, b, r, status)
            assert any("executor of 2 slots" in step for step in r.method), r.method


class FlakyExecutor(cf.ThreadPoolExecutor):
    """Loses every third unit, as a worker that dies would."""

    def __init__(self) -> None:
        super().__init__(1)
        self.calls = 0

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def, override]
        self.calls += 1
        if self.calls % 3 == 0:
            future: cf.Future[object] = cf.Future()
            future.set_exception(OSError("worker lost"))
            return future
        return super().submit(fn, *args, **kwargs)


def test_units_lost_with_their_worker_are_run_again(small_units: None) -> None:
    A, b = cornuejols_dawande(6, 2)
    with FlakyExecutor() as pool:
        r = skipsearch.subset_sum(A, b, executor=pool)
    check(A, b, r, "infeasible")
    assert pool.calls > 30


def test_a_dask_cluster_gives_the_same_answers() -> None:
    distributed_pkg = pytest.importorskip("distributed")
    with (
        distributed_pkg.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed_pkg.Client(cluster) as client,
    ):
        executor = client.get_executor()
        for k, seed, status in PORTFOLIO[:3]:
            A, b = cornuejols_dawande(k, seed)
            check(A, b, skipsearch.subset_sum(A, b, executor=executor), status)
        A, b = read_instance(DATA / "ms_08_050_000.dat")
        check(A, b, skipsearch.subset_sum(A, b, executor=executor), "feasible")


KILLED = textwrap.dedent(
    """
    import sys, numpy as np, skipsearch
    from skipsearch._engine import distributed
    distributed.SUBTREE_UNIT = 1 << 16
    rng = np.random.default_rng(7)
    A = rng.integers(0, 100, (7, 60)); b = A.sum(axis=1) // 2
    print("started", flush=True)
    skipsearch.subset_sum(A, b, threads=1, checkpoint=sys.argv[1], checkpoint_interval=0.05)
    """
)


@pytest.mark.parametrize("delay", [0.6, 1.3])
def test_a_search_killed_at_random_resumes_to_the_same_proof(tmp_path: Path, delay: float) -> None:
    path = tmp_path / "state.json"
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "started"
    deadline = time.monotonic() + 60
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    body = json.loads(path.read_text())["body"]
    record = next(iter(body["components"].values()))
    assert not record["infeasible"] and record["pending"], "killed before it was cut"
    A, b = cornuejols_dawande(7, 7)
    r = skipsearch.subset_sum(A, b, threads=1, checkpoint=path)
    check(A, b, r, "infeasible")
    assert any(step.startswith("resumed from") for step in r.method)
    assert skipsearch.subset_sum(A, b, threads=2).status == "infeasible"


def test_a_state_file_of_another_instance_or_damaged_is_refused(tmp_path: Path) -> None:
    A, b = cornuejols_dawande(6, 2)
    path = tmp_path / "state.json"
    skipsearch.subset_sum(A, b, checkpoint=path, node_limit=600_000)
    assert path.exists()
    A2, b2 = cornuejols_dawande(6, 6)
    with pytest.raises(skipsearch.CheckpointMismatch, match="another instance"):
        skipsearch.subset_sum(A2, b2, checkpoint=path)
    document = json.loads(path.read_text())
    document["body"]["settings"]["restart_unit"] = 1
    document["sha256"] = state._checksum(document["body"])
    path.write_text(json.dumps(document))
    with pytest.raises(skipsearch.CheckpointMismatch, match="restart_unit"):
        skipsearch.subset_sum(A, b, checkpoint=path)
    document["body"]["settings"]["restart_unit"] = distributed._RESTART_UNIT
    # A file written before the restarts freed their top levels.
    del document["body"]["settings"]["restart_free_width"]
    document["sha256"] = state._checksum(document["body"])
    path.write_text(json.dumps(document))
    with pytest.raises(skipsearch.CheckpointMismatch, match="restart_free_width"):
        skipsearch.subset_sum(A, b, checkpoint=path)
    document["body"]["settings"]["restart_free_width"] = distributed._LDS_FREE_WIDTH
    document["body"]["components"] = {}
    path.write_text(json.dumps(document))  # the checksum no longer matches
    with pytest.raises(skipsearch.CheckpointMismatch, match="damaged"):
        skipsearch.subset_sum(A, b, checkpoint=path)
    path.write_text("{not json")
    with pytest.raises(skipsearch.CheckpointMismatch, match="not a skipsearch state"):
        skipsearch.subset_sum(A, b, checkpoint=path)
    path.write_bytes(b"\xff\xfe{}")  # not UTF-8 at all
    with pytest.raises(skipsearch.CheckpointMismatch, match="not a skipsearch state"):
        skipsearch.subset_sum(A, b, checkpoint=path)


def test_bad_options_are_named() -> None:
    A, b = cornuejols_dawande(6, 2)
    with pytest.raises(TypeError, match="executor"):
        skipsearch.subset_sum(A, b, executor="dask")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="checkpoint_interval"):
        skipsearch.subset_sum(A, b, checkpoint="x.json", checkpoint_interval=0)
    with pytest.raises(FileNotFoundError, match="folder"):
        skipsearch.subset_sum(A, b, checkpoint="/no/such/folder/state.json")
    with pytest.raises(ValueError, match="integer data only"):
        skipsearch.subset_sum([[1.5, 2.0]], [1.5], checkpoint="x.json")
    with pytest.raises(TypeError, match="progress"):
        skipsearch.subset_sum(A, b, checkpoint="x.json", progress=3)  # type: ignore[arg-type]


def test_a_dask_worker_killed_mid_unit_leaves_the_proof_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    distributed_pkg = pytest.importorskip("distributed")
    monkeypatch.setattr(distributed, "SUBTREE_UNIT", 1 << 18)
    A, b = cornuejols_dawande(7, 7)
    with (
        distributed_pkg.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed_pkg.Client(cluster) as client,
    ):
        pids = client.run(os.getpid)
        with cf.ThreadPoolExecutor(1) as runner:
            future = runner.submit(skipsearch.subset_sum, A, b, executor=client.get_executor())
            time.sleep(1.0)
            assert not future.done(), "ended before a worker could be killed"
            os.kill(next(iter(pids.values())), signal.SIGKILL)
            r = future.result(timeout=300)
    check(A, b, r, "infeasible")
    assert r.method[-1] == "depth-first enumeration ran to its end: infeasible"


class FailingSubtrees(cf.Executor):
    """Runs units inline, but every subtree unit is lost (a worker killed
    each time it takes one), until ``fail`` is cleared."""

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def, override]
        future: cf.Future[object] = cf.Future()
        if fn.__name__ == "subtree_unit":
            future.set_exception(OSError("worker lost"))
        else:
            future.set_result(fn(*args, **kwargs))
        return future


def interrupt(progress: skipsearch.SearchProgress) -> None:
    raise KeyboardInterrupt


def slowly(fn, *args):  # type: ignore[no-untyped-def]
    time.sleep(1.0)  # a unit that takes a while on a cluster
    return fn(*args)


class SlowPool(cf.ThreadPoolExecutor):
    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def, override]
        return super().submit(slowly, fn, *args)


@pytest.mark.parametrize("seed", [4, 11])
def test_a_run_that_fails_or_is_interrupted_is_never_recorded_infeasible(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Feasible instances: a resume must still find the solution, so no
    # subtree may be lost by a failed unit, an exception or Ctrl-C.
    monkeypatch.setattr(distributed, "SUBTREE_UNIT", 20_000)
    monkeypatch.setattr(distributed, "SUBTREE_PREFIXES", 10**6)
    A, b = cornuejols_dawande(6, seed)
    path = tmp_path / "failed.json"
    with pytest.raises(RuntimeError, match="failed 4 times"):
        skipsearch.subset_sum(A, b, executor=FailingSubtrees(), checkpoint=path)
    record = next(iter(json.loads(path.read_text())["body"]["components"].values()))
    assert not record["infeasible"] and record["pending"]
    check(A, b, skipsearch.subset_sum(A, b, checkpoint=path), "feasible")
    path = tmp_path / "interrupted.json"
    with SlowPool(1) as pool, pytest.raises(KeyboardInterrupt):
        skipsearch.subset_sum(A, b, executor=pool, checkpoint=path, progress=interrupt)
    record = next(iter(json.loads(path.read_text())["body"]["components"].values()))
    assert not record["infeasible"] and record["pending"]
    check(A, b, skipsearch.subset_sum(A, b, checkpoint=path), "feasible")


def test_a_stored_solution_that_does_not_solve_the_instance_is_refused(tmp_path: Path) -> None:
    A, b = cornuejols_dawande(6, 11)
    path = tmp_path / "state.json"
    check(A, b, skipsearch.subset_sum(A, b, checkpoint=path), "feasible")
    body = json.loads(path.read_text())["body"]
    for record in body["components"].values():
        record["solution"] = [0] * len(record["solution"])
    path.write_text(json.dumps({"body": body, "sha256": state._checksum(body)}))
    with pytest.raises(skipsearch.CheckpointMismatch, match="does not solve"):
        skipsearch.subset_sum(A, b, checkpoint=path)


def test_the_seed_changes_the_restarts_not_the_verdict() -> None:
    # ms_08_100_002 is solved after BKZ-30 on re-randomised bases: their
    # seed changes the nodes to the solution (1.09e8 against 1.15e8 here),
    # never its check.
    A, b = read_instance(DATA / "ms_08_100_002.dat")
    runs = {seed: skipsearch.subset_sum(A, b, threads=1, seed=seed) for seed in (1, 2)}
    for r in runs.values():
        check(A, b, r, "feasible")
    assert len({r.nodes for r in runs.values()}) > 1, [r.method for r in runs.values()]
    # One thread: a seed repeats its run node for node.
    assert skipsearch.subset_sum(A, b, threads=1, seed=2).nodes == runs[2].nodes
    for bad in (-1, 2**63, 1.5, True, "3"):
        with pytest.raises(ValueError, match="seed"):
            skipsearch.subset_sum(A, b, seed=bad)  # type: ignore[arg-type]


def test_a_state_file_resumes_with_its_own_seed_only(tmp_path: Path) -> None:
    # The seed is one of the state file's settings: a numpy integer seed is
    # written as a plain one, the same seed resumes, another is refused.
    A, b = cornuejols_dawande(6, 2)
    path = tmp_path / "state.json"
    skipsearch.subset_sum(A, b, checkpoint=path, node_limit=600_000, seed=np.int64(5))
    assert json.loads(path.read_text())["body"]["settings"]["restart_seed"] == 5
    r = skipsearch.subset_sum(A, b, threads=1, checkpoint=path, seed=5)
    check(A, b, r, "infeasible")
    assert any(step.startswith("resumed from") for step in r.method)
    for other in (6, None):
        with pytest.raises(skipsearch.CheckpointMismatch, match="restart_seed=5, this search"):
            skipsearch.subset_sum(A, b, checkpoint=path, seed=other)


def test_without_the_lattice_extra_a_resumable_search_still_restarts(
    tmp_path: Path, without_lattice: None
) -> None:
    # The threads-only portfolio re-randomises its bases with the core's LLL
    # when fpylll is missing; the resumable search must too, not fall back
    # to the depth-first subtrees alone (a new user's --checkpoint run of
    # ms_09_100_002 ran 0 restart bases and ran out of time).
    A, b = read_instance(DATA / "ms_09_100_002.dat")
    r = skipsearch.subset_sum(A, b, threads=2, checkpoint=tmp_path / "s", node_limit=200_000_000)
    assert r.status in ("feasible", "node_limit"), r.method
    units = next(step for step in r.method if step.startswith("units on this thread"))
    bases = int(units.split("limited discrepancy on ")[1].split(" bases")[0])
    assert bases >= 2, r.method
    assert "LLL (kernel lattice)" in r.method and not any(s.startswith("BKZ") for s in r.method)
    if r.status == "feasible":
        check(A, b, r, "feasible")
