"""Structured log fields never clash with a LogRecord's own attributes: ``logging`` raises KeyError for such an
``extra`` key, but only when the level is enabled, so a clash hides in tests and breaks an INFO-logging function."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "layers" / "autoscaler" / "autoscaler"
RESERVED = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


def _extra_keys() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in CORE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            for keyword in node.keywords:
                if keyword.arg == "extra" and isinstance(keyword.value, ast.Dict):
                    keys = {k.value for k in keyword.value.keys if isinstance(k, ast.Constant)}
                    found.setdefault(str(path.relative_to(CORE)), set()).update(map(str, keys))
    return found


def test_no_extra_field_of_the_core_s_log_calls_is_a_log_record_attribute() -> None:
    found = _extra_keys()
    assert "controllers/garbage_collection/controller.py" in found  # the scan sees the decision logs
    clashes = {path: keys & RESERVED for path, keys in found.items() if keys & RESERVED}
    assert not clashes, clashes


def test_the_scan_would_see_a_clash() -> None:
    assert "name" in RESERVED and "message" in RESERVED and "decision" not in RESERVED
