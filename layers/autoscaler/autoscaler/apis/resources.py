"""Resource amounts in canonical integer units, the currency of scheduling and capacity.

``cpu`` is counted in millicores; every other resource (memory, ephemeral-storage, pods, GPUs, ...)
in whole units (bytes, counts). Integers keep arithmetic exact and fast in the scheduling loop.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from autoscaler.apis.quantity import format_bytes, format_milli, milli, units

Resources = dict[str, int]

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"
_BYTE_RESOURCES = (MEMORY, EPHEMERAL_STORAGE)


def parse_resources(quantities: Mapping[str, str | int | float] | None) -> Resources:
    """``{"cpu": "1500m", "memory": "1Gi"}`` -> ``{"cpu": 1500, "memory": 1073741824}``."""
    if not quantities:
        return {}
    return {name: milli(value) if name == CPU else units(value) for name, value in quantities.items()}


def format_resources(amounts: Mapping[str, int]) -> dict[str, str]:
    """The inverse of :func:`parse_resources`, in the shortest exact Kubernetes quantity text."""
    formatted = {}
    for name, value in amounts.items():
        if name == CPU:
            formatted[name] = format_milli(value)
        elif name in _BYTE_RESOURCES or name.startswith("hugepages-"):
            formatted[name] = format_bytes(value)
        else:
            formatted[name] = str(value)
    return formatted


def add(*amounts: Mapping[str, int]) -> Resources:
    total: Resources = {}
    for amount in amounts:
        for name, value in amount.items():
            total[name] = total.get(name, 0) + value
    return total


def subtract(amount: Mapping[str, int], minus: Mapping[str, int]) -> Resources:
    """``amount - minus`` per resource (resources only in ``minus`` appear negative)."""
    result = dict(amount)
    for name, value in minus.items():
        result[name] = result.get(name, 0) - value
    return result


def fits(request: Mapping[str, int], available: Mapping[str, int]) -> bool:
    """True when every requested resource is available in at least the requested amount."""
    return all(value <= available.get(name, 0) for name, value in request.items() if value > 0)


def maximum(amounts: Iterable[Mapping[str, int]]) -> Resources:
    """The per-resource maximum (how init containers combine)."""
    result: Resources = {}
    for amount in amounts:
        for name, value in amount.items():
            result[name] = max(result.get(name, 0), value)
    return result
