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
