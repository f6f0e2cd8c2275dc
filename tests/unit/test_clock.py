"""The one clock and the one reader of Kubernetes times: lenient and strict, always aware UTC."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from autoscaler.clock import InvalidTimeError, parse_time, parse_time_strict, utc_now

MOMENT = datetime(2026, 11, 30, 4, 5, 6, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-30T04:05:06Z", MOMENT),
        ("2026-11-30T04:05:06.250000Z", MOMENT + timedelta(microseconds=250000)),  # a MicroTime
        ("2026-11-30T06:05:06+02:00", MOMENT),  # an offset is converted
        ("2026-11-30T04:05:06", MOMENT),  # no offset (a hand-written annotation): taken as UTC
    ],
)
def test_times_read_as_aware_utc(text: str, expected: datetime) -> None:
    for parsed in (parse_time(text), parse_time_strict(text)):
        assert parsed == expected
        assert parsed is not None and parsed.utcoffset() == timedelta(0)


def test_the_lenient_reader_takes_unreadable_input_as_unknown() -> None:
    for value in (None, "", "tomorrow", 1764475506, {"time": "2026-11-30T04:05:06Z"}):
        assert parse_time(value) is None
    assert parse_time(MOMENT.astimezone(timezone(timedelta(hours=-5)))) == MOMENT  # a datetime stays itself


def test_the_strict_reader_names_what_it_could_not_read() -> None:
    with pytest.raises(InvalidTimeError, match=r"malformed RFC 3339 time 'tomorrow'"):
        parse_time_strict("tomorrow")
    with pytest.raises(ValueError, match="''"):  # a ValueError, as the callers' handlers expect
        parse_time_strict("")


def test_utc_now_is_aware_utc() -> None:
    before = datetime.now(UTC)
    now = utc_now()
    assert now.utcoffset() == timedelta(0) and before <= now <= datetime.now(UTC)
