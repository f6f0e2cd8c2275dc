"""``autoscaler simulate``'s Kubernetes enforcement options: unreadable ``--rbac`` manifests and a rate that is
not positive are refused in one line, before any world starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from autoscaler.cli import main

SPREAD = str(Path(__file__).parents[3] / "events" / "scenarios" / "spread.yaml")


def test_rbac_manifests_that_cannot_be_read_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "rbac.yaml"
    broken.write_text("kind: [unclosed\n")
    assert main(["simulate", SPREAD, "--rbac", str(broken)]) == 2
    assert f"error: --rbac {broken}" in capsys.readouterr().err
    assert main(["simulate", SPREAD, "--rbac", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml" in capsys.readouterr().err


def test_a_rate_that_is_not_positive_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", SPREAD, "--kube-rate", "0"]) == 2
    assert "--kube-rate must be a positive number" in capsys.readouterr().err
