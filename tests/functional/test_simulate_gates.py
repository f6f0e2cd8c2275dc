"""``autoscaler simulate``'s switches of the AWS call gate: all on by default (the default template synthesized
once, before any scenario runs), each off on its own, another template."""

from __future__ import annotations

from pathlib import Path

import pytest

from autoscaler.cli import build_parser
from autoscaler_dev.commands.simulate import gate_settings
from autoscaler_dev.world.gates import GateSettings, default_template

SCENARIO = str(Path(__file__).resolve().parents[2] / "events" / "scenarios" / "spread.yaml")


def test_every_gate_is_on_by_default_and_each_can_be_switched_off() -> None:
    default = gate_settings(build_parser().parse_args(["simulate", SCENARIO]))
    assert default == GateSettings(iam_template=default_template())  # synthesized once, before any scenario runs
    assert default.iam_template is not None and default.iam_template.parent.name == "iam"
    args = build_parser().parse_args(["simulate", SCENARIO, "--iam-template", "t.json", "--no-latency"])
    assert gate_settings(args) == GateSettings(iam_template=Path("t.json"), latency=False)
    args = build_parser().parse_args(["simulate", SCENARIO, "--no-iam", "--no-throttling", "--no-latency"])
    assert gate_settings(args) == GateSettings.off()


def test_a_missing_template_is_refused_before_anything_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["simulate", SCENARIO, "--iam-template", str(tmp_path / "none.json")])
    assert args.run(args) == 2
    assert "--iam-template" in capsys.readouterr().err
