"""Kubernetes resource quantities ("100m", "1.5Gi", "2e3") as exact decimals.

Kept here, free of the ``kubernetes`` client, because the pure core (validation, scheduling) needs
them and importing the client costs half a second of cold start.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

# The grammar of apimachinery's resource.Quantity, the same expression the CRDs use.
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_QUANTITY = re.compile(QUANTITY_PATTERN)
_NUMBER = re.compile(r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))")

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


def is_quantity(text: str) -> bool:
    return bool(_QUANTITY.match(text))


def parse_quantity(value: str | int | float | Decimal) -> Decimal:
    """Return the exact value of a quantity: ``"100m"`` -> 0.1, ``"1Ki"`` -> 1024."""
    if isinstance(value, bool):
        raise QuantityError(f"quantity must be a number or a string, not {value!r}")
    if isinstance(value, (int, Decimal)):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    text = value.strip()
    if not _QUANTITY.match(text):
        raise QuantityError(f"quantities must match the regular expression '{QUANTITY_PATTERN}': {value!r}")
    number = _NUMBER.match(text)
    assert number is not None  # the full pattern matched, so its number prefix does
    suffix = text[number.end() :]
    try:
        base = Decimal(number.group(0))
    except InvalidOperation as error:  # pragma: no cover - the pattern admits only decimals
        raise QuantityError(str(error)) from error
    if suffix in _BINARY:
        return base * _BINARY[suffix]
    if suffix in _DECIMAL:
        return base * _DECIMAL[suffix]
    return base * Decimal(10) ** int(suffix[1:])  # an exponent such as e3 or E-2


def milli(value: str | int | float | Decimal) -> int:
    """The quantity in thousandths, rounded up as Kubernetes does for CPU: ``"1.5"`` -> 1500."""
    scaled = parse_quantity(value) * 1000
    return int(scaled.to_integral_value(rounding="ROUND_CEILING"))


def units(value: str | int | float | Decimal) -> int:
    """The quantity in whole units, rounded up: bytes of memory, counts of devices."""
    return int(parse_quantity(value).to_integral_value(rounding="ROUND_CEILING"))


def format_milli(millis: int) -> str:
    """Canonical text for a CPU-like amount given in thousandths: 1500 -> ``"1500m"``, 2000 -> ``"2"``."""
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"


def format_bytes(amount: int) -> str:
    """Canonical binary text for a byte count: 1073741824 -> ``"1Gi"``, 1000 -> ``"1000"``."""
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        scale = _BINARY[suffix]
        if amount and amount % scale == 0:
            return f"{amount // scale}{suffix}"
    return str(amount)
