"""The wall clock and Kubernetes' times read back from text. Pure: everything may import it.

Controllers and adapters take their clock as a parameter (``clock: Callable[[], datetime] = utc_now``) so
that tests and the embedded world fix the time; :func:`utc_now` is that parameter's one default.

Kubernetes writes times as RFC 3339 in UTC (``2026-11-30T04:05:06Z``, MicroTime with microseconds). What
comes back is read into an aware UTC datetime: an offset is converted, and a value without one (only a
hand-written annotation can lack it) is taken as UTC, so that it compares with :func:`utc_now`. Two entry
points, because callers differ on unreadable input: :func:`parse_time` reads it as "unknown" (None), which
suits decisions that lean towards waiting; :func:`parse_time_strict` raises :class:`InvalidTimeError`, for
callers that must not act on a time they cannot read (a termination deadline).
"""

from __future__ import annotations

from datetime import UTC, datetime


class InvalidTimeError(ValueError):
    """The text is not an RFC 3339 time."""


def utc_now() -> datetime:
    return datetime.now(UTC)


def as_utc(moment: datetime) -> datetime:
    """``moment`` in UTC; a naive one is taken to be UTC already."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def parse_time_strict(text: str) -> datetime:
    """An RFC 3339 time as an aware UTC datetime; :class:`InvalidTimeError` when ``text`` is not one."""
    try:
        return as_utc(datetime.fromisoformat(text))
    except (TypeError, ValueError) as error:
        raise InvalidTimeError(f"malformed RFC 3339 time {text!r}") from error


def parse_time(value: object) -> datetime | None:
    """An RFC 3339 time as an aware UTC datetime, or None when ``value`` is absent, empty or unreadable.
    ``value`` is typically a field of an object as the API server serves it, hence ``object``: a datetime
    is taken as it is (in UTC), anything that is not text reads as None."""
    if isinstance(value, datetime):
        return as_utc(value)
    if not value or not isinstance(value, str):
        return None
    try:
        return parse_time_strict(value)
    except InvalidTimeError:
        return None
