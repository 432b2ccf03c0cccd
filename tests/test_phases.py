"""The suite's phases (TEST_PHASE, tests/conftest.py): a comma list selects every phase it
names, and a name that is not a phase stops pytest at start-up with the phases spelled out."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def collect(phase: str, *paths: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TEST_PHASE": phase}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", *paths],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def collected(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in result.stdout.splitlines() if "::" in line]


def test_a_phase_list_selects_each_phase_it_names():
    # tests/test_db.py measures the machine: its tests are the alone phase's, none parallel.
    alone = collected(collect("alone", "tests/test_db.py"))
    assert alone
    assert collected(collect("parallel", "tests/test_db.py")) == []
    assert collected(collect("parallel,alone", "tests/test_db.py")) == alone


def test_an_unknown_phase_is_refused_in_words():
    for phase in ("parallel,browsers", "alone;rm -rf /" + "x" * 10_000):
        result = collect(phase, "tests/test_phases.py")
        assert result.returncode == 4, (phase[:40], result.stdout[-300:], result.stderr[-300:])
        assert "TEST_PHASE must name phases among parallel, browser," in result.stderr
        assert "Traceback" not in result.stderr
