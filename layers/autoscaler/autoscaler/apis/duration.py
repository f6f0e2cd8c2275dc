"""Go ``time.Duration`` text ("720h", "1h30m", "90s") and Karpenter's nillable "Never"."""

from __future__ import annotations

import re
from datetime import timedelta

NEVER = "Never"

_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")


class DurationError(ValueError):
    """The text is not a Go duration."""


def parse_duration(text: str) -> timedelta:
    """Parse Go duration text as ``time.ParseDuration`` does (without the sign)."""
    if text == "0":
        return timedelta(0)
    position, seconds = 0, 0.0
    while position < len(text):
        match = _PART.match(text, position)
        if not match or match.group(1) in ("", "."):
            raise DurationError(f'time: invalid duration "{text}"')
        seconds += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    if not text:
        raise DurationError('time: invalid duration ""')
    return timedelta(seconds=seconds)


def parse_nillable(text: str) -> timedelta | None:
    """Karpenter's NillableDuration: ``"Never"`` is None, anything else a Go duration."""
    return None if text == NEVER else parse_duration(text)


def format_duration(value: timedelta) -> str:
    """Go's canonical text for whole seconds: 90 s -> ``"1m30s"``, 0 -> ``"0s"``."""
    total = int(value.total_seconds())
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    return (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes or hours else "") + f"{seconds}s"
