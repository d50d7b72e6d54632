"""Timing helper shared by the benchmark scripts."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_us(function: Callable[[], object], rounds: int, number: int) -> float:
    """Median over ``rounds`` of the mean microseconds per call of ``number`` calls."""
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(number):
            function()
        samples.append((time.perf_counter() - start) / number * 1e6)
    return statistics.median(samples)
