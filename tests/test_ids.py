"""Ids and timestamps (agentsvc/ids.py): ids stay 120 random bits in URL-safe base64, never
repeat (also across a fork), and timestamps keep their exact format."""

from __future__ import annotations

import os
import random
import threading
from datetime import UTC, datetime, timedelta, timezone

from agentsvc.ids import iso, new_id, parse_iso


def test_ids_are_prefixed_url_safe_and_distinct_across_threads():
    found: list[str] = []

    def make() -> None:
        found.extend(new_id("message") for _ in range(5000))

    threads = [threading.Thread(target=make) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(found)) == len(found) == 20_000
    for found_id in found[:100]:
        prefix, _, token = found_id.partition("_")
        assert prefix == "msg" and len(token) == 20
        assert set(token) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def test_a_forked_child_never_repeats_its_parents_ids():
    new_id("agent")  # the parent has a page of randomness in hand
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.write(write, " ".join(new_id("agent") for _ in range(10)).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = set(os.read(read, 10_000).decode().split())
    os.close(read)
    os.close(write)
    parent = {new_id("agent") for _ in range(10)}
    assert len(child) == 10 and not child & parent


def test_timestamps_are_utc_with_milliseconds_and_z():
    rng = random.Random(7)
    for _ in range(2000):
        moment = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=rng.uniform(-1e9, 1e9))
        elsewhere = moment.astimezone(timezone(timedelta(hours=5, minutes=30)))
        expected = moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
        assert iso(moment) == iso(elsewhere) == expected
        assert abs(parse_iso(iso(moment)) - moment) < timedelta(milliseconds=1)
    assert iso(datetime(2026, 11, 26, 9, 5, 7, 999_999, tzinfo=UTC)) == "2026-11-26T09:05:07.999Z"
