"""Load a Lambda function's handler module from ``functions/<name>/handler.py``, as the runtime imports it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

FUNCTIONS = Path(__file__).resolve().parents[2] / "functions"


def load_handler(function: str) -> ModuleType:
    """A fresh module each call (module-level state such as cached controllers starts empty)."""
    spec = importlib.util.spec_from_file_location(f"{function}_handler_under_test", FUNCTIONS / function / "handler.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the models' annotations through it
    spec.loader.exec_module(module)
    return module
