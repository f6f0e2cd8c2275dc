from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from autoscaler.apis.duration import DurationError, format_duration, parse_duration, parse_nillable
from autoscaler.apis.quantity import QuantityError, format_bytes, format_milli, milli, parse_quantity, units


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("100m", Decimal("0.1")),
        ("1", Decimal(1)),
        ("1.5", Decimal("1.5")),
        ("1Ki", Decimal(1024)),
        ("1Gi", Decimal(2**30)),
        ("1G", Decimal(10**9)),
        ("2e3", Decimal(2000)),
        ("1E-2", Decimal("0.01")),
        ("500u", Decimal("0.0005")),
        (".5", Decimal("0.5")),
        (3, Decimal(3)),
        ("+1k", Decimal(1000)),
    ],
)
def test_parse_quantity(text: str | int, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "1.2.3", "1Gb", "one", "1 Gi", "--1"])
def test_parse_quantity_rejects(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_quantity_units_round_up() -> None:
    assert milli("1.5") == 1500
    assert milli("0.0001") == 1  # a request below a millicore still needs one
    assert units("1.5Ki") == 1536
    assert units("100m") == 1
    assert format_milli(2000) == "2" and format_milli(1500) == "1500m"
    assert format_bytes(2**30) == "1Gi" and format_bytes(1000) == "1000" and format_bytes(3 * 2**20) == "3Mi"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("720h", 720 * 3600), ("1h30m", 5400), ("90s", 90), ("0s", 0), ("0", 0), ("1.5h", 5400), ("500ms", 0.5)],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "1d", "h", "10", "1h 30m", "-1h"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(DurationError):
        parse_duration(text)


def test_never_and_formatting() -> None:
    assert parse_nillable("Never") is None
    assert parse_nillable("5m") == timedelta(minutes=5)
    assert format_duration(timedelta(seconds=5400)) == "1h30m0s"
    assert format_duration(timedelta(0)) == "0s"
