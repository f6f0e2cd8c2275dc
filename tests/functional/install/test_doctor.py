"""`autoscaler doctor` against an installation deployed into the moto world (over HTTP) and the Kubernetes API
emulator as a user deploys it (``autoscaler_dev.world.installation``: the stack's resources, access entries the
world serves as EKS does, the rendered manifests applied to an emulator that enforces the RBAC applied to it):
all ok when healthy, and each check naming its fault when that part is broken in turn, through the same APIs a
user (or an accident) would break it with."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from autoscaler.cli import main
from autoscaler.commands.doctor_checks import FAIL, OK, WARN
from autoscaler.crds.generate import CRD_KINDS
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.world.aws_world import AWSWorld
from autoscaler_dev.world.installation import EmbeddedInstallation
from tests.support.aws import CREDENTIALS, REGION

REPOSITORY = Path(__file__).resolve().parents[3]


@pytest.fixture
def installation(aws_world: AWSWorld, kube: KubeEmulator) -> EmbeddedInstallation:
    # The session's moto world holds other tests' resources: the installation names everything after its own cluster.
    return EmbeddedInstallation.deploy(aws_world, kube)


def test_a_healthy_installation_is_all_ok(installation: EmbeddedInstallation) -> None:
    findings = installation.findings()
    assert [f for f in findings if f.status != OK] == []
    checks = {f.check for f in findings}
    assert {"stack", "forwarder", "nodepools", "ec2nodeclasses", "rbac functions", "rbac forwarder"} <= checks
    assert sum(c.startswith("crd ") for c in checks) == len(CRD_KINDS)
    assert sum(c.startswith("access entry ") for c in checks) == 6  # every function but conversion
    assert sum(c.startswith("dead letters ") for c in checks) == 2
    assert sum(c.startswith("event source ") for c in checks) == 2
    assert sum(c.startswith("rules to ") for c in checks) == 2
    assert sum(c.startswith("function ") for c in checks) == 7


def _stale_lease(i: EmbeddedInstallation) -> None:
    i.now += timedelta(minutes=5)


def _missing_output(i: EmbeddedInstallation) -> None:
    del i.outputs["ForwarderRoleArn"]


def _dead_letter(i: EmbeddedInstallation) -> None:
    i.aws.client("sqs").send_message(QueueUrl=i.outputs["InterruptionDeadLetterQueueUrl"], MessageBody="{}")


def _disabled_event_source(i: EmbeddedInstallation) -> None:
    functions = i.aws.client("lambda")
    (mapping,) = functions.list_event_source_mappings(FunctionName=i.outputs["InterruptionFunctionName"])[
        "EventSourceMappings"
    ]
    functions.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)


def _disabled_rule(i: EmbeddedInstallation) -> None:
    events, sqs = i.aws.client("events"), i.aws.client("sqs")
    arn = sqs.get_queue_attributes(QueueUrl=i.outputs["InterruptionQueueUrl"], AttributeNames=["QueueArn"])
    rule = events.list_rule_names_by_target(TargetArn=arn["Attributes"]["QueueArn"])["RuleNames"][0]
    events.disable_rule(Name=rule)


def _wrong_access_entry(i: EmbeddedInstallation) -> None:
    i.aws.client("eks").update_access_entry(
        clusterName=i.outputs["ClusterName"], principalArn=i.outputs["TerminationRoleArn"], kubernetesGroups=["ops"]
    )


def _missing_access_entry(i: EmbeddedInstallation) -> None:
    i.aws.client("eks").delete_access_entry(
        clusterName=i.outputs["ClusterName"], principalArn=i.outputs["ProvisionerRoleArn"]
    )


def _function_errors(i: EmbeddedInstallation) -> None:
    i.aws.client("cloudwatch").put_metric_data(
        Namespace="AWS/Lambda",
        MetricData=[
            {
                "MetricName": "Errors",
                "Dimensions": [{"Name": "FunctionName", "Value": i.outputs["ProvisionerFunctionName"]}],
                "Value": 3,
                "Timestamp": i.now - timedelta(minutes=10),
            }
        ],
    )


def _missing_crd(i: EmbeddedInstallation) -> None:
    i.admin.exchange("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/nodeoverlays.karpenter.sh")


def _old_crd(i: EmbeddedInstallation) -> None:
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/nodepools.karpenter.sh"
    crd = i.admin.exchange("GET", path)[1]
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"]["properties"].pop("weight")
    i.admin.exchange("PUT", path, body=crd)


def _missing_lease(i: EmbeddedInstallation) -> None:
    i.admin.exchange(
        "DELETE", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/serverless-karpenter-forwarder"
    )


def _unbound_functions(i: EmbeddedInstallation) -> None:
    i.admin.exchange("DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/serverless-karpenter")


def _narrowed_forwarder_role(i: EmbeddedInstallation) -> None:
    path = "/apis/rbac.authorization.k8s.io/v1/clusterroles/serverless-karpenter-forwarder"
    role = i.admin.exchange("GET", path)[1]
    role["rules"] = [r for r in role["rules"] if "pods" not in r.get("resources", [])]
    i.admin.exchange("PUT", path, body=role)


def _nodepool_not_ready(i: EmbeddedInstallation) -> None:
    path = "/apis/karpenter.sh/v1/nodepools/general-purpose"
    pool = i.admin.exchange("GET", path)[1]
    ready = {
        "type": "Ready",
        "status": "False",
        "reason": "NodeClassNotReady",
        "message": "EC2NodeClass general-purpose not ready",
        "lastTransitionTime": "2026-12-02T03:00:00Z",
    }
    pool["status"] = {"conditions": [ready]}
    i.admin.exchange("PUT", f"{path}/status", body=pool)


BROKEN: dict[str, tuple[Callable[[EmbeddedInstallation], None], str, str, str]] = {
    # fault: (break it, the check that names it, its status, words of its detail)
    "output missing": (_missing_output, "stack", FAIL, "lacks ForwarderRoleArn"),
    "function errors": (_function_errors, "function doctor-", WARN, "3 errors, 0 throttles"),
    "dead letter": (_dead_letter, "dead letters serverless-karpenter-doctor-", WARN, "1 messages dead-lettered"),
    "event source disabled": (_disabled_event_source, "event source doctor-", FAIL, "Disabled"),
    "rule disabled": (_disabled_rule, "rules to serverless-karpenter-doctor-", FAIL, "disabled:"),
    "access entry missing": (_missing_access_entry, "access entry Provisioner", FAIL, "no access entry"),
    "access entry group": (_wrong_access_entry, "access entry Termination", FAIL, "['ops']"),
    "rbac unbound": (_unbound_functions, "rbac functions", FAIL, "denied: get nodepools"),
    "rbac narrowed": (_narrowed_forwarder_role, "rbac forwarder", FAIL, "denied: get pods, list pods"),
    "crd missing": (_missing_crd, "crd nodeoverlays.karpenter.sh", FAIL, "not installed"),
    "crd outdated": (_old_crd, "crd nodepools.karpenter.sh", WARN, "this version's is"),
    "lease stale": (_stale_lease, "forwarder", FAIL, "last renewed"),
    "lease missing": (_missing_lease, "forwarder", FAIL, "no forwarder ever led"),
    "nodepool not ready": (_nodepool_not_ready, "nodepools", WARN, "general-purpose (NodeClassNotReady: EC2NodeClass"),
}


@pytest.mark.parametrize("fault", list(BROKEN))
def test_each_broken_part_is_named(installation: EmbeddedInstallation, fault: str) -> None:
    breaks, check, status, words = BROKEN[fault]
    assert [f for f in installation.findings() if f.status != OK] == []  # healthy before
    breaks(installation)
    findings = installation.findings()
    (finding,) = [f for f in findings if f.status != OK]  # the fault is named once, nothing else is blamed
    assert (finding.check.startswith(check), finding.status) == (True, status), finding
    assert words in finding.detail
    assert finding.action  # and what to do


def test_the_command_reads_a_live_installation_prints_each_check_and_fails_on_a_failure(
    installation: EmbeddedInstallation,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for key, value in {
        "AWS_ENDPOINT_URL": installation.aws.endpoint,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": CREDENTIALS["aws_access_key_id"],
        "AWS_SECRET_ACCESS_KEY": CREDENTIALS["aws_secret_access_key"],
    }.items():
        monkeypatch.setenv(key, value)
    outputs = tmp_path / "outputs.json"
    outputs.write_text(
        json.dumps({f"serverless-karpenter-{installation.outputs['ClusterName']}": installation.outputs})
    )
    config = installation.kube.write_kubeconfig(tmp_path / "kubeconfig")
    _missing_lease(installation)
    assert main(["doctor", "--stack-outputs", str(outputs), "--kubeconfig", str(config)]) == 1
    out = capsys.readouterr().out
    assert "FAIL  forwarder" in out and "-> kubectl -n kube-system get pods" in out
    assert "ok    crd nodepools.karpenter.sh" in out and "ok    access entry Provisioner" in out
    assert out.strip().splitlines()[-1].endswith("1 failures")


def test_doctor_embedded_installs_into_a_world_of_its_own_and_is_all_ok() -> None:
    # A process of its own: the command starts a moto world, whose reset would wipe this session's shared one.
    environment = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    done = subprocess.run(
        [sys.executable, "-m", "autoscaler.cli", "doctor", "--embedded", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env=environment,
        cwd=REPOSITORY,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    findings = json.loads(done.stdout)
    assert len(findings) >= 25 and {f["status"] for f in findings} == {OK}
