"""`-c forwarder=none`: no forwarder identity or image; a Step Functions Express loop puts the provisioner's sweep
on its FIFO queue every few seconds, restarted by a five-minute schedule; its role may only send to that queue."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.constructs.fast_sweep import EXECUTION_SECONDS, iterations
from tests.infra.conftest import Synthesized, synthesize


@pytest.fixture(scope="module")
def zero(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synthesized]:
    yield synthesize(tmp_path_factory.mktemp("zero-in-cluster"), {"clusterName": "demo", "forwarder": "none"})


def _definition(synthesized: Synthesized) -> str:
    """The state machine's definition, its tokens (queue URL, account, region) rendered as JSON in place."""
    (machine,) = synthesized.of_type("AWS::StepFunctions::StateMachine").values()
    parts = machine["Properties"]["DefinitionString"]["Fn::Join"][1]
    return "".join(part if isinstance(part, str) else json.dumps(part) for part in parts)


def _loop_schedules(synthesized: Synthesized) -> list[dict[str, Any]]:
    machine = synthesized.ref(synthesized.stack.fast_sweep.machine)
    return [
        rule["Properties"]
        for rule in synthesized.of_type("AWS::Events::Rule").values()
        if any(target["Arn"] == machine for target in rule["Properties"].get("Targets", []))
    ]


def test_nothing_of_the_forwarder_is_created(zero: Synthesized, synth: Synthesized) -> None:
    assert zero.stack.access.forwarder_role is None
    assert zero.of_type("AWS::EKS::PodIdentityAssociation") == {}
    assert not {"ForwarderRoleArn", "ForwarderImageUri"} & set(zero.template["Outputs"])
    assets = json.loads((Path(zero.outdir) / f"{zero.stack.artifact_id}.assets.json").read_text())
    assert assets.get("dockerImages", {}) == {}
    assert synth.of_type("AWS::StepFunctions::StateMachine") == {}  # the forwarder stays the default


def test_an_express_loop_sweeps_every_ten_seconds_restarted_every_five_minutes(zero: Synthesized) -> None:
    (machine,) = zero.of_type("AWS::StepFunctions::StateMachine").values()
    assert machine["Properties"]["StateMachineType"] == "EXPRESS"
    text = _definition(zero)
    assert '"Seconds":10' in text
    assert f'"NumericGreaterThanEquals":{iterations(10)}' in text
    assert '"MessageGroupId":"provisioning"' in text
    assert '"detail-type":"Scheduled Event"' in text and '"source":"aws.events"' in text
    assert iterations(10) * 10 <= EXECUTION_SECONDS
    (schedule,) = _loop_schedules(zero)
    assert (schedule["ScheduleExpression"], schedule["State"]) == ("rate(5 minutes)", "ENABLED")


def test_the_loop_may_only_send_to_the_provisioning_queue(zero: Synthesized) -> None:
    role = zero.stack.fast_sweep.machine.role
    statements = zero.policy_statements(role)
    sends = [s for s in statements if "sqs:SendMessage" in json.dumps(s["Action"])]
    assert [s["Resource"] for s in sends] == [zero.arn(zero.stack.cluster_events.provisioning_queue)]
    services = {
        a.split(":")[0] for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert services <= {"sqs", "xray", "logs"}


def test_paused_controllers_pause_the_loop_too(tmp_path: Path) -> None:
    paused = synthesize(tmp_path, {"clusterName": "demo", "forwarder": "none", "controllersEnabled": "false"})
    (schedule,) = _loop_schedules(paused)
    assert schedule["State"] == "DISABLED"
