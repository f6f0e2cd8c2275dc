"""A matrix run the world itself fails becomes a row that says so, and the matrix goes on (one crashed run used
to end a 162-run matrix at its 102nd row)."""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler_dev.world.runner import Simulation
from bench import reliability


def test_a_run_that_fails_is_a_row_with_its_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: Simulation, **kwargs: Any) -> Any:
        raise RuntimeError("the world broke")

    monkeypatch.setattr(Simulation, "run", broken)
    row = reliability.run(("leak", 1, "heavy", 1.0, ""))
    assert (row["scenario"], row["seed"], row["level"]) == ("leak", 1, "heavy")
    assert row["error"].splitlines()[-1] == "RuntimeError: the world broke"
    assert "the run failed: RuntimeError: the world broke" in reliability.table_line(row)
