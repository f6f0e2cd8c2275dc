"""Where the checkout's files are: ``functions/`` (the handlers, as the stack packages them) and ``events/``.

The dev package is installed editable from a checkout, so its own location names the checkout: the nearest
directory above it that holds ``pyproject.toml`` and ``functions/``. ``AUTOSCALER_FUNCTIONS_DIR`` names the
handlers' directory explicitly (the events are then looked for beside it).
"""

from __future__ import annotations

import os
from pathlib import Path

FUNCTIONS_DIR_VARIABLE = "AUTOSCALER_FUNCTIONS_DIR"


class CheckoutNotFoundError(FileNotFoundError):
    """The dev package is not inside a checkout of the repository, and no directory was named."""


def root(start: Path | None = None) -> Path:
    """The checkout that holds ``start`` (default: this package)."""
    here = (start or Path(__file__)).resolve()
    for directory in here.parents:
        if (directory / "pyproject.toml").is_file() and (directory / "functions").is_dir():
            return directory
    raise CheckoutNotFoundError(
        f"no checkout of the repository (pyproject.toml beside functions/) above {here}: install the dev package "
        f"editable from a checkout (pip install -e '.[dev]') or set {FUNCTIONS_DIR_VARIABLE}"
    )


def functions_dir() -> Path:
    """The directory of the functions' handlers (``functions/<name>/handler.py``)."""
    configured = os.environ.get(FUNCTIONS_DIR_VARIABLE)
    return Path(configured) if configured else root() / "functions"


def events_dir() -> Path:
    """The sample events and scenarios (``events/``), beside the functions."""
    return functions_dir().parent / "events"
