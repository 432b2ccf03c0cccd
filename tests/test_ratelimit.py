"""The token buckets behind every rate limit, on a clock the test controls."""

from __future__ import annotations

from agentsvc.ratelimit import TokenBuckets


def test_a_full_bucket_serves_its_capacity_at_once_then_refills_one_per_interval():
    buckets = TokenBuckets()
    now = 1000.0
    # 100 a minute: all 100 at once, then one every 0.6 s.
    assert all(buckets._take("k", 100, now) >= 0 for _ in range(100))
    refused = buckets._take("k", 100, now)
    assert refused < 0 and abs(-refused - 0.6) < 1e-6  # seconds to wait
    assert buckets._take("k", 100, now + 0.59) < 0
    assert buckets._take("k", 100, now + 0.61) >= 0
    assert buckets._take("k", 100, now + 0.62) < 0
    # A minute later it is full again.
    assert all(buckets._take("k", 100, now + 61) >= 0 for _ in range(100))


def test_keys_are_separate_and_decisions_carry_the_headers_figures():
    buckets = TokenBuckets()
    first = buckets.take("a", 3)
    assert (first.allowed, first.limit, first.remaining, first.retry_after) == (True, 3, 2, 0)
    buckets.take("a", 3)
    buckets.take("a", 3)
    refused = buckets.take("a", 3)
    assert (refused.allowed, refused.remaining, refused.retry_after) == (False, 0, 20)
    assert refused.headers()["Retry-After"] == "20"
    assert buckets.take("b", 3).allowed
    assert buckets.retry_after("a", 3) == 20


def test_a_flood_of_new_keys_keeps_the_table_bounded():
    buckets = TokenBuckets(max_keys=1000)
    for n in range(5000):
        buckets._take(f"session-{n}", 10, 1000.0)
    assert len(buckets._full_at) <= 1000
    # Buckets that are full again are dropped first.
    buckets = TokenBuckets(max_keys=10)
    for n in range(10):
        buckets._take(f"old-{n}", 10, 1000.0)
    buckets._take("new", 10, 2000.0)
    assert list(buckets._full_at) == ["new"]
