"""Runs every conformance vector in spec_tests/vectors as one pytest case."""

from __future__ import annotations

from pathlib import Path

import pytest

from command_handle.conformance import Vector, load_vectors, run_vector

VECTORS = load_vectors(Path(__file__).parent / "vectors")


@pytest.mark.parametrize("vector", VECTORS, ids=[f"{v.suite}:{v.id}" for v in VECTORS])
def test_vector(vector: Vector) -> None:
    result = run_vector(vector)
    assert result.passed, result.detail


def test_every_suite_has_vectors() -> None:
    suites = {v.suite for v in VECTORS}
    assert "tool-form" in suites
    ids = [(v.suite, v.id) for v in VECTORS]
    assert len(ids) == len(set(ids)), "vector ids must be unique within a suite"
