"""Crash safety: form submissions and trigger events survive repeated SIGKILLs of the server.

Runs the soak of scripts/soak_crash.py small: a real `agentsvc serve` subprocess killed
twice with SIGKILL (and restarted on the same database) during 100 form submissions to a
flaky loopback receiver, while trigger events flow.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# It measures the machine (timings, memory, recovery): it runs alone (tests/conftest.py).
pytestmark = pytest.mark.needs_the_machine

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import soak_crash  # noqa: E402

from tests.support.warm import popen  # noqa: E402


async def test_sigkills_lose_no_accepted_submission_or_event():
    report, violations = await soak_crash.soak(
        submissions=100,
        seconds=5.0,
        concurrency=8,
        kill_gap=(1.0, 2.0),
        max_kills=2,
        min_kills=2,
        drain_timeout=30.0,
        seed=7,
        spawn=popen,  # each restart forked with the package loaded (support/warm.py)
    )
    assert violations == [], report
    assert report["kills (SIGKILL)"] == 2
    assert report["submissions accepted"] == 100
    assert report["distinct webhook-ids delivered"] >= 100
    assert report["receiver answered 500"] > 0  # the retries were exercised
    assert report["trigger events counted (stats)"] >= report["trigger events accepted (202)"] > 0
