"""Printer columns: evaluate a CRD's ``additionalPrinterColumns`` on objects and lay them out as ``kubectl get``.

Used by ``autoscaler get`` and by the Kubernetes emulator's server-side tables.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from autoscaler.clock import parse_time, utc_now

_FILTER = re.compile(r'\[\?\(@\.([A-Za-z0-9_]+)\s*==\s*"([^"]*)"\)\]')
_EVERY = "[*]"
Token = str | tuple[str, str] | None  # a field, a filter (key, value), or None for every item of a list


def _tokens(json_path: str) -> list[Token]:
    """``.a.b\\.c[?(@.type=="Ready")].status`` -> ["a", "b.c", ("type", "Ready"), "status"]; ``[*]`` -> None."""
    tokens: list[Token] = []
    position, current = 0, ""
    while position < len(json_path):
        char = json_path[position]
        if char == "\\" and position + 1 < len(json_path):
            current += json_path[position + 1]
            position += 2
            continue
        if char == ".":
            if current:
                tokens.append(current)
            current, position = "", position + 1
            continue
        if json_path.startswith(_EVERY, position):
            if current:
                tokens.append(current)
            tokens.append(None)
            current, position = "", position + len(_EVERY)
            continue
        match = _FILTER.match(json_path, position) if char == "[" else None
        if match:
            if current:
                tokens.append(current)
            tokens.append((match.group(1), match.group(2)))
            current, position = "", match.end()
            continue
        current += char
        position += 1
    if current:
        tokens.append(current)
    return tokens


def evaluate(obj: Any, json_path: str) -> Any:
    """The value at a printer column's JSONPath, or None when any step is missing. Where the path matches several
    values (``[*]``, a filter), the first, as the API server's table printer takes it."""
    values: list[Any] = [obj]
    for token in _tokens(json_path):
        step: list[Any] = []
        for value in values:
            if token is None:
                if isinstance(value, Sequence) and not isinstance(value, str):
                    step += list(value)
            elif isinstance(token, tuple):
                key, wanted = token
                if isinstance(value, Sequence) and not isinstance(value, str):
                    step += [v for v in value if isinstance(v, Mapping) and str(v.get(key)) == wanted]
            elif isinstance(value, Mapping) and token in value:
                step.append(value[token])
        values = step
    return values[0] if values else None


def human_duration(age: timedelta) -> str:
    """kubectl's short age: 45s, 3m20s, 25m, 5h10m, 30h, 3d4h, 120d, 3y."""
    seconds = int(age.total_seconds())
    if seconds < 0:
        return "0s"
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 120:
        return f"{seconds}s"
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if hours < 3:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if days < 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    return f"{days // 365}y"


def cell(value: Any, column_type: str, now: datetime) -> str:
    if value is None:
        return "<unknown>" if column_type == "date" else ""
    if column_type == "date":
        created = parse_time(value)
        return human_duration(now - created) if created is not None else str(value)
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def table_rows(
    objects: Sequence[Mapping[str, Any]],
    columns: Sequence[Mapping[str, Any]],
    wide: bool,
    now: datetime | None = None,
) -> tuple[list[str], list[list[str]]]:
    """Headers and cells for ``kubectl get`` (priority > 0 columns only when ``wide``)."""
    now = now or utc_now()
    shown = [c for c in columns if wide or not c.get("priority")]
    headers = ["NAME", *(str(c["name"]).upper() for c in shown)]
    rows = [
        [
            str(evaluate(o, ".metadata.name") or ""),  # kubectl's NAME column is a column like the others
            *(cell(evaluate(o, c["jsonPath"]), c["type"], now) for c in shown),
        ]
        for o in objects
    ]
    return headers, rows


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to the widest cell plus three spaces, as kubectl's tabwriter lays them out."""
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    lines = [
        "   ".join(text.ljust(width) for text, width in zip(row, widths, strict=True)).rstrip()
        for row in [headers, *rows]
    ]
    return "\n".join(lines)
