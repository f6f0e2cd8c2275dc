"""`autoscaler doctor` against an installation in moto (over HTTP) and the Kubernetes API emulator: all ok when
healthy, and each check naming its fault when that part is broken in turn.

moto has no EKS access entries: DescribeAccessEntry is answered from the test's table of entries through
botocore's before-call hook (the EKS API's answer, not the doctor's logic). The emulator does not answer
SubjectAccessReview yet (RBAC lands in it on another branch): the RBAC checks then say so as a warning, and are
ok once it does."""

from __future__ import annotations

import io
import json
import uuid
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import unquote

import pytest
from botocore.awsrequest import AWSResponse

from autoscaler import clock, routing
from autoscaler.cli import main
from autoscaler.commands.doctor import ApiReader
from autoscaler.commands.doctor_checks import FAIL, OK, WARN, Context, Finding, run_checks
from autoscaler.commands.stack_outputs import StackOutputs
from autoscaler.crds.generate import CRD_KINDS, crd_manifest
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from tests.support.kube import rest_for

CLUSTER = "demo"


@dataclass
class Installation:
    outputs: dict[str, str]
    session: Any
    reader: ApiReader
    access_entries: dict[str, list[str]]
    now: datetime

    def client(self, service: str) -> Any:
        return self.session.client(service)

    def findings(self) -> list[Finding]:
        return run_checks(
            Context(StackOutputs("test outputs", self.outputs), self.session, self.reader, lambda: self.now)
        )


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", "def handler(event, context):\n    return None\n")
    return buffer.getvalue()


def _queue(sqs: Any, name: str) -> tuple[str, str]:
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    return url, sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]


def _answer_access_entries(session: Any, entries: dict[str, list[str]]) -> None:
    def answer(params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        # The request as serialized: /clusters/<name>/access-entries/<principal ARN, URL-encoded>
        _, _, cluster, _, principal = params["url_path"].split("/", 4)
        params = {"clusterName": cluster, "principalArn": unquote(principal)}
        groups = entries.get(params["principalArn"])
        if groups is None:
            error = {"Error": {"Code": "ResourceNotFoundException", "Message": "no access entry"}}
            return AWSResponse("", 404, {}, None), {**error, "ResponseMetadata": {"HTTPStatusCode": 404}}
        entry = {
            "clusterName": params["clusterName"],
            "principalArn": params["principalArn"],
            "kubernetesGroups": groups,
        }
        return AWSResponse("", 200, {}, None), {"accessEntry": entry}

    session.events.register("before-call.eks.DescribeAccessEntry", answer)


@pytest.fixture
def installation(aws_env: Any, kube: KubeEmulator) -> Iterator[Installation]:
    suffix = uuid.uuid4().hex[:12]  # moto's backend lives for the session: names of this test's own (an id() repeats)
    import boto3

    session = boto3.Session()
    sqs, events, functions, iam = (session.client(s) for s in ("sqs", "events", "lambda", "iam"))
    interruption, interruption_arn = _queue(sqs, f"interruption-{suffix}")
    interruption_dlq, _ = _queue(sqs, f"interruption-dlq-{suffix}")
    provisioning, provisioning_arn = _queue(sqs, f"provisioning-{suffix}")
    provisioning_dlq, _ = _queue(sqs, f"provisioning-dlq-{suffix}")
    bus = f"serverless-karpenter-{CLUSTER}-{suffix}"
    events.create_event_bus(Name=bus)
    for name, (source, detail_type) in routing.INTERRUPTION_RULES.items():
        rule = f"{name}-{suffix}"
        events.put_rule(Name=rule, EventPattern=json.dumps({"source": [source], "detail-type": [detail_type]}))
        events.put_targets(Rule=rule, Targets=[{"Id": "queue", "Arn": interruption_arn}])
    events.put_rule(Name=f"pods-{suffix}", EventBusName=bus, EventPattern=json.dumps({"source": ["x"]}))
    events.put_targets(Rule=f"pods-{suffix}", EventBusName=bus, Targets=[{"Id": "queue", "Arn": provisioning_arn}])
    outputs = {
        "ClusterName": CLUSTER,
        "EventBusName": bus,
        "InterruptionQueueUrl": interruption,
        "InterruptionDeadLetterQueueUrl": interruption_dlq,
        "ProvisioningQueueUrl": provisioning,
        "ProvisioningDeadLetterQueueUrl": provisioning_dlq,
        "ForwarderRoleArn": "arn:aws:iam::123456789012:role/forwarder",
    }
    entries: dict[str, list[str]] = {}
    for name, queue_arn in (("Provisioner", provisioning_arn), ("Interruption", interruption_arn), ("Termination", "")):
        role = iam.create_role(RoleName=f"{name}-{suffix}", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        function = f"{name}-{suffix}"
        functions.create_function(
            FunctionName=function, Runtime="python3.13", Role=role, Handler="handler.handler", Code={"ZipFile": _zip()}
        )
        if queue_arn:
            functions.create_event_source_mapping(FunctionName=function, EventSourceArn=queue_arn, Enabled=True)
        outputs[f"{name}FunctionName"] = function
        outputs[f"{name}RoleArn"] = role
        entries[role] = ["serverless-karpenter"]
    _answer_access_entries(session, entries)

    rest = rest_for(kube)
    now = clock.utc_now()
    for kind in CRD_KINDS:
        rest.exchange("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body=crd_manifest(kind))
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "serverless-karpenter-forwarder", "namespace": "kube-system"},
        "spec": {"holderIdentity": "forwarder-a", "renewTime": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")},
    }
    rest.exchange("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", body=lease)
    for path, body in (
        ("/apis/karpenter.sh/v1/nodepools", _nodepool()),
        ("/apis/karpenter.k8s.aws/v1/ec2nodeclasses", _nodeclass()),
    ):
        created = rest.exchange("POST", path, body=body)[1]
        created["status"] = {"conditions": [_condition("True", "Ready")]}
        rest.exchange("PUT", f"{path}/{created['metadata']['name']}/status", body=created)
    yield Installation(outputs, session, ApiReader(rest), entries, now + timedelta(seconds=5))


def _condition(status: str, reason: str, message: str = "") -> dict[str, str]:
    return {
        "type": "Ready",
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2026-12-02T03:00:00Z",
    }


def _nodepool() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {
            "template": {
                "spec": {
                    "requirements": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}],
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                }
            }
        },
    }


def _nodeclass() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "role": "KarpenterNodeRole-demo",
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        },
    }


def _by_status(findings: list[Finding]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {OK: [], WARN: [], FAIL: []}
    for finding in findings:
        grouped[finding.status].append(finding.check)
    return grouped


def _unanswered_rbac(finding: Finding) -> bool:
    return finding.check.startswith("rbac ") and "did not answer SubjectAccessReview" in finding.detail


def test_a_healthy_installation_is_all_ok(installation: Installation) -> None:
    findings = installation.findings()
    not_ok = [f for f in findings if f.status != OK and not _unanswered_rbac(f)]
    assert not_ok == []
    checks = {f.check for f in findings}
    assert {"stack", "forwarder", "nodepools", "ec2nodeclasses"} <= checks
    assert sum(c.startswith("crd ") for c in checks) == len(CRD_KINDS)
    assert sum(c.startswith("access entry ") for c in checks) == 3
    assert sum(c.startswith("dead letters ") for c in checks) == 2
    assert sum(c.startswith("event source ") for c in checks) == 2
    assert sum(c.startswith("rules to ") for c in checks) == 2
    assert sum(c.startswith("function ") for c in checks) == 3
    assert sum(c.startswith("rbac ") for c in checks) == 2


def _rest(installation: Installation) -> Any:
    return installation.reader.rest


def _stale_lease(i: Installation) -> None:
    i.now += timedelta(minutes=5)


def _missing_output(i: Installation) -> None:
    del i.outputs["ForwarderRoleArn"]


def _dead_letter(i: Installation) -> None:
    i.client("sqs").send_message(QueueUrl=i.outputs["InterruptionDeadLetterQueueUrl"], MessageBody="{}")


def _disabled_event_source(i: Installation) -> None:
    functions = i.client("lambda")
    (mapping,) = functions.list_event_source_mappings(FunctionName=i.outputs["InterruptionFunctionName"])[
        "EventSourceMappings"
    ]
    functions.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)


def _disabled_rule(i: Installation) -> None:
    events = i.client("events")
    sqs = i.client("sqs")
    arn = sqs.get_queue_attributes(QueueUrl=i.outputs["InterruptionQueueUrl"], AttributeNames=["QueueArn"])
    rule = events.list_rule_names_by_target(TargetArn=arn["Attributes"]["QueueArn"])["RuleNames"][0]
    events.disable_rule(Name=rule)


def _wrong_access_entry(i: Installation) -> None:
    i.access_entries[i.outputs["TerminationRoleArn"]] = ["system:masters-not"]


def _missing_access_entry(i: Installation) -> None:
    del i.access_entries[i.outputs["ProvisionerRoleArn"]]


def _function_errors(i: Installation) -> None:
    i.client("cloudwatch").put_metric_data(
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


def _missing_crd(i: Installation) -> None:
    _rest(i).exchange("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/nodeoverlays.karpenter.sh")


def _old_crd(i: Installation) -> None:
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/nodepools.karpenter.sh"
    crd = _rest(i).exchange("GET", path)[1]
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"]["properties"].pop("weight")
    _rest(i).exchange("PUT", path, body=crd)


def _missing_lease(i: Installation) -> None:
    _rest(i).exchange(
        "DELETE", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/serverless-karpenter-forwarder"
    )


def _nodepool_not_ready(i: Installation) -> None:
    path = "/apis/karpenter.sh/v1/nodepools/default"
    pool = _rest(i).exchange("GET", path)[1]
    pool["status"] = {"conditions": [_condition("False", "NodeClassNotReady", "EC2NodeClass default not ready")]}
    _rest(i).exchange("PUT", f"{path}/status", body=pool)


BROKEN: dict[str, tuple[Callable[[Installation], None], str, str, str]] = {
    # fault: (break it, the check that names it, its status, words of its detail)
    "output missing": (_missing_output, "stack", FAIL, "lacks ForwarderRoleArn"),
    "function errors": (_function_errors, "function Provisioner", WARN, "3 errors, 0 throttles"),
    "dead letter": (_dead_letter, "dead letters interruption-dlq", WARN, "1 messages dead-lettered"),
    "event source disabled": (_disabled_event_source, "event source Interruption", FAIL, "Disabled"),
    "rule disabled": (_disabled_rule, "rules to interruption-", FAIL, "disabled:"),
    "access entry missing": (_missing_access_entry, "access entry Provisioner", FAIL, "no access entry"),
    "access entry group": (_wrong_access_entry, "access entry Termination", FAIL, "system:masters-not"),
    "crd missing": (_missing_crd, "crd nodeoverlays.karpenter.sh", FAIL, "not installed"),
    "crd outdated": (_old_crd, "crd nodepools.karpenter.sh", WARN, "this version's is"),
    "lease stale": (_stale_lease, "forwarder", FAIL, "last renewed"),
    "lease missing": (_missing_lease, "forwarder", FAIL, "no forwarder ever led"),
    "nodepool not ready": (_nodepool_not_ready, "nodepools", WARN, "default (NodeClassNotReady: EC2NodeClass"),
}


@pytest.mark.parametrize("fault", list(BROKEN))
def test_each_broken_part_is_named(installation: Installation, fault: str) -> None:
    breaks, check, status, words = BROKEN[fault]
    breaks(installation)
    findings = installation.findings()
    named = [f for f in findings if f.check.startswith(check)]
    assert [f.status for f in named if f.status != OK] == [status], named
    (finding,) = [f for f in named if f.status != OK]
    assert words in finding.detail
    assert finding.action  # and what to do
    others = [f for f in findings if f.status != OK and f is not finding and not _unanswered_rbac(f)]
    assert others == []  # the fault is named once, nothing else is blamed


def test_the_command_prints_each_check_and_fails_on_a_failure(
    installation: Installation, kube: KubeEmulator, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"serverless-karpenter-demo": installation.outputs}))
    config = kube.write_kubeconfig(tmp_path / "kubeconfig")
    _missing_lease(installation)
    # The command's own session has no access-entry answers: those checks say they cannot read (warn).
    assert main(["doctor", "--stack-outputs", str(outputs), "--kubeconfig", str(config)]) == 1
    out = capsys.readouterr().out
    assert "FAIL  forwarder" in out and "-> kubectl -n kube-system get pods" in out
    assert "ok    crd nodepools.karpenter.sh" in out
    assert out.strip().splitlines()[-1].endswith("1 failures")
