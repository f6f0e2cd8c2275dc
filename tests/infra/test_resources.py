"""The state table, cluster access (access entries, Pod Identity, RBAC), monitoring and outputs."""

from __future__ import annotations

import json
from typing import Any

import yaml

from autoscaler import metrics
from infra.constructs.cluster_access import KUBERNETES_GROUP
from tests.infra.conftest import REPO_ROOT, Synthesized

RBAC = REPO_ROOT / "infra" / "manifests" / "rbac.yaml"


def test_state_table(synth: Synthesized) -> None:
    table = synth.props(synth.stack.table)
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expiration", "Enabled": True}
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert table["SSESpecification"] == {"SSEEnabled": True}


def test_access_entries(synth: Synthesized) -> None:
    entries = [entry["Properties"] for entry in synth.of_type("AWS::EKS::AccessEntry").values()]
    nodes = [entry for entry in entries if entry["Type"] == "EC2_LINUX"]
    assert nodes == [
        {"ClusterName": "demo", "PrincipalArn": synth.arn(synth.stack.node_role.role), "Type": "EC2_LINUX"}
    ]
    standard = {json.dumps(entry["PrincipalArn"]): entry for entry in entries if entry["Type"] == "STANDARD"}
    kubernetes_functions = [f for f in synth.stack.functions.values() if f.name != "conversion"]
    assert set(standard) == {json.dumps(synth.arn(f.role)) for f in kubernetes_functions}
    for entry in standard.values():
        assert entry["KubernetesGroups"] == [KUBERNETES_GROUP]
        assert entry["ClusterName"] == "demo"
        assert "AccessPolicies" not in entry  # permissions come from RBAC, not EKS access policies


def test_an_existing_node_role_gets_no_new_access_entry(variant: Synthesized) -> None:
    entries = [entry["Properties"] for entry in variant.of_type("AWS::EKS::AccessEntry").values()]
    assert [entry["Type"] for entry in entries] == ["STANDARD"] * 6


def test_forwarder_pod_identity(synth: Synthesized) -> None:
    (association,) = [a["Properties"] for a in synth.of_type("AWS::EKS::PodIdentityAssociation").values()]
    assert association == {
        "ClusterName": "demo",
        "Namespace": "kube-system",
        "ServiceAccount": "serverless-karpenter-forwarder",
        "RoleArn": synth.arn(synth.stack.access.forwarder_role),
    }


def test_pod_identity_names_the_forwarders_service_account(synth: Synthesized) -> None:
    manifest = yaml.safe_load((REPO_ROOT / "infra" / "manifests" / "forwarder" / "serviceaccount.yaml").read_text())
    (association,) = [a["Properties"] for a in synth.of_type("AWS::EKS::PodIdentityAssociation").values()]
    assert (association["Namespace"], association["ServiceAccount"]) == (
        manifest["metadata"]["namespace"],
        manifest["metadata"]["name"],
    )


def _rbac() -> list[dict[str, Any]]:
    return [document for document in yaml.safe_load_all(RBAC.read_text()) if document]


def test_rbac_binds_the_access_entry_group_to_least_privilege_roles() -> None:
    documents = _rbac()
    roles = {(d["kind"], d["metadata"]["name"]): d for d in documents if d["kind"] in ("ClusterRole", "Role")}
    bindings = [d for d in documents if d["kind"] in ("ClusterRoleBinding", "RoleBinding")]
    assert len(roles) == 3
    assert len(bindings) == 3
    for binding in bindings:
        assert binding["subjects"] == [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": KUBERNETES_GROUP}
        ]
        assert (binding["roleRef"]["kind"], binding["roleRef"]["name"]) in roles
        if binding["kind"] == "RoleBinding":
            assert (
                binding["metadata"]["namespace"] == roles[("Role", binding["roleRef"]["name"])]["metadata"]["namespace"]
            )
    for role in roles.values():
        for rule in role["rules"]:
            assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"]
            assert "watch" not in rule["verbs"]  # functions reconcile and exit
            assert not {"secrets", "configmaps"} & set(rule["resources"])
            assert not ({"escalate", "bind", "impersonate"} & set(rule["verbs"]))


def test_rbac_grants_what_karpenter_controllers_write() -> None:
    granted = {
        (group, resource, verb)
        for document in _rbac()
        if document["kind"] == "ClusterRole"
        for rule in document["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    needed = {
        ("karpenter.sh", "nodeclaims", "create"),
        ("karpenter.sh", "nodeclaims", "delete"),
        ("karpenter.sh", "nodeclaims/status", "patch"),
        ("karpenter.sh", "nodepools/status", "patch"),
        ("karpenter.k8s.aws", "ec2nodeclasses/status", "patch"),
        ("", "nodes", "delete"),
        ("", "pods/eviction", "create"),
        ("", "events", "create"),
        ("events.k8s.io", "events", "create"),  # the Cluster adapter records events.k8s.io/v1 Events
        ("", "pods", "list"),
        ("policy", "poddisruptionbudgets", "list"),
    }
    assert needed <= granted


def test_alarms_on_dead_letters_and_function_errors(synth: Synthesized) -> None:
    topic = synth.ref(synth.stack.monitoring.topic)
    alarms = [alarm["Properties"] for alarm in synth.of_type("AWS::CloudWatch::Alarm").values()]
    assert len(alarms) == 2 + 7 + 1
    for alarm in alarms:
        assert alarm["AlarmActions"] == [topic]
        assert alarm["Threshold"] == 0
        assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
    dead_letter_names = {
        json.dumps(alarm["Dimensions"][0]["Value"])
        for alarm in alarms
        if alarm["MetricName"] == "ApproximateNumberOfMessagesVisible"
    }
    assert dead_letter_names == {
        json.dumps({"Fn::GetAtt": [synth.logical_id(q), "QueueName"]})
        for q in (synth.stack.interruption.dead_letters, synth.stack.cluster_events.provisioning_dead_letters)
    }
    errors = {json.dumps(alarm["Dimensions"][0]["Value"]) for alarm in alarms if alarm["MetricName"] == "Errors"}
    assert errors == {json.dumps(synth.ref(f.function)) for f in synth.stack.functions.values()}
    (failed_passes,) = [a for a in alarms if a["MetricName"] == metrics.PROVISIONER_FAILED_PASSES]
    assert failed_passes["Namespace"] == metrics.NAMESPACE
    assert failed_passes["Dimensions"] == [{"Name": metrics.SERVICE_DIMENSION, "Value": "provisioner"}]
    assert synth.of_type("AWS::SNS::Subscription") == {}


def test_alarm_email_subscribes(variant: Synthesized) -> None:
    (subscription,) = [s["Properties"] for s in variant.of_type("AWS::SNS::Subscription").values()]
    assert subscription["Protocol"] == "email"
    assert subscription["Endpoint"] == "oncall@example.com"


def test_dashboard_shows_queues_errors_durations_nodeclaims_and_interruption_latency(synth: Synthesized) -> None:
    (dashboard,) = [d["Properties"] for d in synth.of_type("AWS::CloudWatch::Dashboard").values()]
    body = json.dumps(dashboard["DashboardBody"])
    for title in (
        "Queue depth",
        "Dead-letter queue depth",
        "Function errors",
        "Function duration (p99)",
        "NodeClaims launched / terminated",
        "Interruption message queue to action (s)",
    ):
        assert title in body
    for metric, service in (
        (metrics.NODECLAIMS_LAUNCHED, "provisioner"),
        (metrics.NODECLAIMS_TERMINATED, "termination"),
        (metrics.INTERRUPTION_MESSAGE_QUEUE_DURATION, "interruption"),
    ):  # each function's whole series: the dimension service alone
        assert f'\\"{metrics.NAMESPACE}\\",\\"{metric}\\",\\"service\\",\\"{service}\\"' in body
    for queue in (synth.stack.interruption.queue, synth.stack.cluster_events.provisioning_queue):
        assert synth.logical_id(queue) in body
    for function in synth.stack.functions.values():
        assert synth.logical_id(function.function) in body


def test_outputs(synth: Synthesized) -> None:
    outputs = synth.template["Outputs"]
    expected = {
        "InterruptionQueueName",
        "InterruptionQueueUrl",
        "InterruptionDeadLetterQueueUrl",
        "ProvisioningQueueName",
        "ProvisioningQueueUrl",
        "ProvisioningDeadLetterQueueUrl",
        "EventBusName",
        "StateTableName",
        "ConversionWebhookUrl",
        "NodeRoleArn",
        "ForwarderRoleArn",
        "ForwarderImageUri",
        "ClusterName",
        "Region",
        "ForwarderNamespace",
        "ForwarderServiceAccount",
        "AlarmTopicArn",
    }
    functions = ("Provisioner", "Interruption", "Disruption", "Termination", "GarbageCollection", "Nodeclass")
    for name in (*functions, "Conversion"):
        expected |= {f"{name}FunctionName", f"{name}RoleArn"}
    assert set(outputs) == expected
    assert outputs["ConversionWebhookUrl"]["Value"] == {
        "Fn::GetAtt": [synth.logical_id(synth.stack.conversion_url), "FunctionUrl"]
    }


def test_conversion_url_is_public_and_the_function_has_no_aws_access(synth: Synthesized) -> None:
    (url,) = [u["Properties"] for u in synth.of_type("AWS::Lambda::Url").values()]
    assert url["AuthType"] == "NONE"  # the API server cannot sign requests; the function holds no AWS access
    conversion = synth.stack.functions["conversion"]
    services = {
        action.split(":")[0]
        for statement in synth.policy_statements(conversion.role)
        for action in ([statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"])
    }
    assert services == {"logs", "xray"}
    # A small reservation keeps a flood of webhook calls from starving the other functions.
    assert synth.props(conversion.function)["ReservedConcurrentExecutions"] == 5


def test_conversion_reservation_can_be_turned_off(variant: Synthesized) -> None:
    functions = variant.of_type("AWS::Lambda::Function").values()
    assert not any("ReservedConcurrentExecutions" in function["Properties"] for function in functions)
