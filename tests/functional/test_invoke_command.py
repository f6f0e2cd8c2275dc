"""``autoscaler invoke``: one handler, one sample event, in the embedded world or with no world at all."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from autoscaler import cli, routing
from autoscaler_dev.commands import invoke
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.world.aws_world import DISCOVERY, AWSWorld
from autoscaler_dev.world.embedded import EmbeddedCluster
from autoscaler_dev.world.stack import StackResources

ROOT = Path(__file__).parents[2]
EVENTS = ROOT / "events"
COMMAND = (sys.executable, "-m", "autoscaler.cli")
GENERAL_PURPOSE = "events/manifests/general-purpose.yaml"


@pytest.fixture
def session_world(aws_world: AWSWorld, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``--embedded`` on the session's moto world (moto's backend is one per process): a fresh emulator and stack
    resources of their own; the discovery tags a manifest's EC2NodeClass gives the world are put back after."""

    @contextlib.contextmanager
    def start() -> Iterator[invoke.EmbeddedWorld]:
        with KubeEmulator() as kube:
            stack = StackResources.create(aws_world, cluster=f"invoke-{uuid.uuid4().hex[:8]}")
            environment = stack.environment(aws_world, kube.url)  # the world's EKS cluster, this stack's queues
            yield invoke.EmbeddedWorld(EmbeddedCluster(aws_world, kube), stack, environment)

    monkeypatch.setattr(invoke, "start_world", start)
    yield
    for subnet in aws_world.subnets.values():
        aws_world.tag(subnet, DISCOVERY)
    aws_world.tag(aws_world.security_group, DISCOVERY)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    code = cli.main(["invoke", *args])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out else None, captured.err


def test_the_command_knows_the_seven_functions() -> None:
    """The one list (``routing.FUNCTIONS``) the command, the embedded world and the stack read: every handler."""
    assert invoke.FUNCTIONS == routing.FUNCTIONS and len(routing.FUNCTIONS) == 7
    handlers = {path.parent.name for path in (ROOT / "functions").glob("*/handler.py")}
    assert handlers == set(routing.FUNCTIONS)


def test_conversion_answers_the_review_without_a_world(capsys: pytest.CaptureFixture[str]) -> None:
    code, response, _ = run(capsys, "conversion", str(EVENTS / "conversion-review.json"))
    assert code == 0
    assert response["statusCode"] == 200
    review = json.loads(response["body"])
    assert review["kind"] == "ConversionReview"
    assert review["response"]["result"]["status"] == "Success"
    assert [o["apiVersion"] for o in review["response"]["convertedObjects"]] == ["karpenter.sh/v1"]


@pytest.mark.usefixtures("session_world")
def test_a_malformed_interruption_message_is_dead_lettered(capsys: pytest.CaptureFixture[str]) -> None:
    saved = dict(os.environ)
    event = EVENTS / "interruption" / "malformed-not-json.json"
    code, answer, err = run(capsys, "interruption", str(event), "--embedded", "-o", "json")
    assert code == 0
    assert answer["function"] == "interruption"
    assert answer["error"] is None
    assert answer["result"] == {"batchItemFailures": []}  # not retried: it could never be handled
    body = json.loads(event.read_text())["Records"][0]["body"]
    [(queue, bodies)] = answer["deadLetters"].items()
    assert queue.endswith("-interruption-dlq")
    assert bodies == [body]
    assert f"note: 1 message(s) on {queue}" in err
    assert dict(os.environ) == saved  # the embedded environment was only the call's


@pytest.mark.usefixtures("session_world")
def test_the_nodeclass_pass_resolves_the_applied_class(capsys: pytest.CaptureFixture[str]) -> None:
    manifests = EVENTS / "manifests" / "general-purpose.yaml"
    code, answer, _ = run(capsys, "nodeclass", str(EVENTS / "scheduled-event.json"), "--embedded", "-f", str(manifests))
    assert code == 0
    assert answer == {
        "trigger": "Scheduled Event",
        "outcomes": [
            {"name": "general-purpose", "action": "Reconciled", "ready": "True", "message": "", "deprecated_amis": []}
        ],
    }


PENDING_POD = """
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec: {containers: [{name: app, image: pause, resources: {requests: {cpu: "1", memory: 2Gi}}}]}
status:
  phase: Pending
  conditions: [{type: PodScheduled, status: "False", reason: Unschedulable}]
"""


@pytest.mark.usefixtures("session_world")
def test_the_provisioner_launches_for_a_class_the_world_reconciled_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pod = tmp_path / "pod.yaml"
    pod.write_text(PENDING_POD)
    manifests = EVENTS / "manifests" / "general-purpose.yaml"
    code, answer, _ = run(
        capsys, "provisioner", str(EVENTS / "scheduled-event.json"), "--embedded", "-f", str(manifests), "-f", str(pod)
    )
    assert code == 0
    assert answer["pass"]["nodepools_not_ready"] == {}  # not NodeClassReadinessUnknown: the class was resolved
    assert answer["pass"]["nodeclaims_created"] == 1 and answer["pass"]["launched"] == 1


def test_a_handler_that_raises_exits_1(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("CLUSTER_NAME", raising=False)  # real endpoints, as the environment says: none
    code, answer, err = run(capsys, "garbage_collection", str(EVENTS / "scheduled-event.json"), "-o", "json")
    assert code == 1
    assert answer["result"] is None
    assert answer["error"].startswith("SettingsError: CLUSTER_NAME is required")
    assert "error: garbage_collection raised SettingsError" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["karpenter", "events/scheduled-event.json"], "unknown function 'karpenter': one of provisioner,"),
        (["disruption", "README.md"], "README.md is not JSON"),
        (["disruption", "missing.json"], "cannot read event missing.json"),
        (
            ["disruption", "events/scheduled-event.json", "-f", "events/manifests/spot.yaml"],
            "-f manifests need --embedded",
        ),
    ],
)
def test_usage_errors_exit_2(
    args: list[str], message: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    code, answer, err = run(capsys, *args)
    assert code == 2
    assert answer is None
    assert f"autoscaler invoke: error: {message}" in err


def test_the_embedded_world_of_its_own() -> None:
    """The real ``--embedded`` start (moto's backend is one per process, so in a process of its own): the stack's
    queues, the manifests applied, the function's logs on stderr and only its answer on stdout."""
    done = subprocess.run(
        [
            *COMMAND,
            "invoke",
            "nodeclass",
            "events/scheduled-event.json",
            "--embedded",
            "-f",
            GENERAL_PURPOSE,
            "-o",
            "json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["result"]["outcomes"][0]["name"] == "general-purpose"
    assert answer["deadLetters"] == {}
    logs = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    assert any(log.get("message") == "nodeclass pass" and log.get("service") == "nodeclass" for log in logs)
