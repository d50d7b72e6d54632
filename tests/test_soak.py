"""A scaled-down soak (benchmarks/soak.py): 500 mixed calls leave nothing behind."""

from __future__ import annotations

import sys
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from soak import KINDS, snapshot, soak


def test_500_mixed_calls_leak_no_descriptor_or_process() -> None:
    trio.run(soak, 12, 4)  # warm up: imports and caches open their files first
    before = snapshot()
    _, outcomes = trio.run(soak, 500, 32)
    after = snapshot()
    assert sum(outcomes.values()) == 500
    assert set(outcomes) == set(KINDS)
    assert after.fds == before.fds
    assert after.zombies == before.zombies == 0
    assert after.rss_kib - before.rss_kib < 32 * 1024  # bounded: 10,000 calls add about 2 MiB
