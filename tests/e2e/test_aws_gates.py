"""The embedded world's IAM enforcement can fail a run: a copy of the synthesized stack whose provisioner role
lacks ``ec2:CreateFleet`` leaves a (bounded slice of the) scale-out's pods pending, with the denial counted, as an
invariant violation, and in the provisioner's log."""

from __future__ import annotations

import json
from pathlib import Path

from autoscaler_dev.world.gates import GateSettings
from autoscaler_dev.world.runner import Simulation
from autoscaler_dev.world.scenario import Scenario
from tests.support.iam_gates import synthesized, without_action
from tests.support.scenarios import SCENARIOS, reduced


def test_a_provisioner_without_create_fleet_leaves_the_pods_pending(tmp_path: Path) -> None:
    stack = synthesized()
    path = tmp_path / "no-create-fleet.json"
    path.write_text(json.dumps(without_action(stack, "provisioner", "ec2:CreateFleet")))
    scenario = reduced(Scenario.load(SCENARIOS / "scale-out.yaml"), 50).model_copy(update={"duration": 240.0})
    log_path = tmp_path / "functions.log"
    with log_path.open("w") as log:
        timeline = Simulation(scenario, log=log, gates=GateSettings(iam_template=path)).run()
    summary = timeline.summary
    assert summary["iam_denied"] > 0
    first = summary["iam_denials"][0]
    assert (first["function"], first["action"]) == ("provisioner", "ec2:CreateFleet")
    assert first["missing"].startswith("no statement allows ec2:CreateFleet")
    assert summary["invariants"]["iam_call_denied"] == summary["iam_denied"]
    assert summary["pods_total"] == 20 and summary["pods_running"] == 0 and summary["pods_pending"] == 20
    provisioner = [line for line in log_path.read_text().splitlines() if '"service":"provisioner"' in line]
    assert any("UnauthorizedOperation" in line and "ec2:CreateFleet" in line for line in provisioner)
