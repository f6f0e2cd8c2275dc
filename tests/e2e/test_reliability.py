"""A bounded slice of the reliability matrix (bench/reliability.py runs every scenario, seed and level): one
scenario under heavy faults converges with every invariant at 0, and its row names each invariant."""

from __future__ import annotations

from pathlib import Path

from moto.moto_api._internal.models import moto_api_backend

from autoscaler_dev.world.invariants import NAMES
from bench import reliability


def test_a_heavy_run_converges_and_its_row_names_every_invariant(tmp_path: Path) -> None:
    try:
        row = reliability.run(("leak", 1, "heavy", 1.0, str(tmp_path)))
    finally:
        moto_api_backend.reset()
    assert set(NAMES) | set(reliability.ENFORCEMENT) <= set(row["invariants"])
    assert row["faults"], "heavy injects faults"
    violated = {k: v for k, v in row["invariants"].items() if v}
    assert not violated and row["violations"] == 0
    assert row["unmet"] == []  # leak's own expectations hold under heavy faults too
    assert (row["unscheduled"], row["leaked"], row["lost"]) == (0, 0, 0)
    assert row["converge_s"] is not None
    # --logs keeps what a failed row is read from: the logs, the happenings and the end state
    state = (tmp_path / "leak-1-heavy.state").read_text().splitlines()
    assert any(line.startswith("node ") and "ready=True" in line for line in state)
    assert any(line.startswith("nodeclaim ") for line in state)
    assert not [line for line in state if line.startswith("pending ")]
    assert (tmp_path / "leak-1-heavy.log").stat().st_size and (tmp_path / "leak-1-heavy.happenings").exists()
