"""Helpers shared by the family tests (tests/test_families*.py): filler
tensors and checks that do not depend on any one family's names."""

from __future__ import annotations

import numpy as np


def small(rng, n):
    """A bias of length ``n``, small beside the weights."""
    return rng.standard_normal(n) * 0.1


def assert_weights(block: dict, gate, up, down) -> None:
    """The tensors the scan read for a gated block (``read_block``) are the planted
    (W_gate, W_up, W_down), exactly, as float32."""
    np.testing.assert_array_equal(block["W_gate"], np.asarray(gate, dtype=np.float32))
    np.testing.assert_array_equal(block["W_up"], np.asarray(up, dtype=np.float32))
    np.testing.assert_array_equal(block["W_down"], np.asarray(down, dtype=np.float32))


def biased_pair(rng, t: dict, up_name: str, down_name: str, up, down, transposed=False):
    """An ungated block's two linear maps with small biases: ``up_name``.weight
    (m, d) and .bias (m), then ``down_name``.weight (d, m) and .bias (d), the biases
    drawn from ``rng`` in that order. ``transposed``: the weights stored (in, out),
    as GPT-2's Conv1D does."""
    t[up_name + ".weight"] = up.T if transposed else up
    t[up_name + ".bias"] = small(rng, up.shape[0])
    t[down_name + ".weight"] = down.T if transposed else down
    t[down_name + ".bias"] = small(rng, down.shape[0])
