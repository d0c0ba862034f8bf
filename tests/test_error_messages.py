"""Errors name what the caller passed and what to do about it."""

from __future__ import annotations

import numpy as np
import pytest
import skipsearch
from safetensors.numpy import save_file
from skipsearch.io.checkpoints import CheckpointError


def test_an_absorbable_result_has_no_certificate_to_check():
    r = skipsearch.find_absorbing_subset(np.eye(2), -np.eye(2))
    assert r.verdict == "absorbable" and r.certificate is None
    with pytest.raises(TypeError, match="an absorbable result has no certificate"):
        skipsearch.check_certificate(r.certificate, np.eye(2), -np.eye(2))


def test_weights_that_do_not_fit_the_block_are_named():
    r = skipsearch.find_absorbing_subset(np.eye(2), -np.eye(2))
    with pytest.raises(ValueError, match=r"^W_up has shape \(3, 2\), but block's W_up"):
        skipsearch.max_abs_difference(r.block, np.ones((3, 2)), np.ones((2, 3)))


def test_a_layout_pattern_of_the_wrong_type_is_a_type_error():
    with pytest.raises(TypeError, match="Layout up must be a key pattern string, got int"):
        skipsearch.Layout(up=5, down="blocks.{i}.down.weight")
    with pytest.raises(ValueError, match="non-empty"):
        skipsearch.Layout(up="", down="blocks.{i}.down.weight")


def test_a_layout_that_matches_nothing_shows_the_tensor_names(tmp_path):
    save_file(
        {"blocks.0.up.weight": np.ones((4, 2)), "blocks.0.down.weight": np.ones((2, 4))},
        str(tmp_path / "model.safetensors"),
    )
    layout = skipsearch.Layout(up="{i}.up.weight", down="{i}.down.weight", activation="relu")
    with pytest.raises(
        CheckpointError, match=r"'blocks.0.down.weight', 'blocks.0.up.weight'.*'\*'"
    ):
        skipsearch.scan(tmp_path, layout=layout, progress=False)
