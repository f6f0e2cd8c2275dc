"""The warm container's TTL cache: entries expire after their TTL, and expired ones are swept at a store once a
TTL has passed, so keys nobody asks for again (an unavailable-offerings set that changed) do not accumulate."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from autoscaler.providers.aws.cache import TTLCache

START = datetime(2026, 12, 4, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


def test_an_entry_expires_after_its_ttl() -> None:
    clock = Clock()
    cache: TTLCache[str] = TTLCache(timedelta(seconds=30), clock)
    cache.put("a", "first")
    clock.now += timedelta(seconds=29)
    assert cache.get("a") == "first"
    clock.now += timedelta(seconds=1)
    assert cache.get("a") is None
    assert cache.get_or_load("a", lambda: "again") == "again"


def test_keys_never_asked_for_again_are_swept_and_longer_ttls_kept() -> None:
    clock = Clock()
    cache: TTLCache[int] = TTLCache(timedelta(seconds=30), clock)
    cache.put("kept", 0, ttl=timedelta(hours=1))
    for second in range(0, 3600, 10):  # a new key every 10 s, as a changing unavailable-offerings set makes
        clock.now = START + timedelta(seconds=second)
        cache.put(("types", second), second)
    assert len(cache) <= 1 + 6  # the kept one, and what two TTLs stored (360 keys without the sweep)
    assert cache.get("kept") == 0
