"""`autoscaler manifests`: the cluster side of one installation rendered from the stack's outputs (an outputs file
as `cdk deploy --outputs-file` writes it, or DescribeStacks against moto), applied to the emulator with kubectl."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler.cli import main
from autoscaler.commands.installation import TRACKED_MANIFESTS
from autoscaler_dev.kube_emulator.emulator import KubeEmulator

KUBECTL = shutil.which("kubectl")
OUTPUTS = {
    "EventBusName": "serverless-karpenter-demo",
    "ClusterName": "demo",
    "Region": "eu-west-1",
    "ForwarderImageUri": "111122223333.dkr.ecr.eu-west-1.amazonaws.com/cdk-hnb659fds-container-assets:0a1b2c",
    "ForwarderRoleArn": "arn:aws:iam::111122223333:role/serverless-karpenter-demo-Forwarder",
    "ForwarderNamespace": "kube-system",
    "ForwarderServiceAccount": "serverless-karpenter-forwarder",
    "ConversionWebhookUrl": "https://abcdef.lambda-url.eu-west-1.on.aws/",
}


@pytest.fixture
def outputs_file(tmp_path: Path) -> Path:
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({"serverless-karpenter-demo": OUTPUTS}))
    return path


def render(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, Any]]:
    assert main(["manifests", *args]) == 0
    return [doc for doc in yaml.safe_load_all(capsys.readouterr().out) if doc]


def by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [obj for obj in objects if obj["kind"] == kind]


def forwarder_container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (deployment,) = by_kind(objects, "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return dict(container)


def env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_the_forwarder_carries_the_stacks_image_bus_cluster_and_region(
    outputs_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = render(capsys, "--stack-outputs", str(outputs_file))
    container = forwarder_container(objects)
    assert container["image"] == OUTPUTS["ForwarderImageUri"]
    variables = env(container)
    assert variables["EVENT_BUS_NAME"] == "serverless-karpenter-demo"
    assert variables["CLUSTER_NAME"] == "demo"
    assert variables["AWS_REGION"] == "eu-west-1"
    assert variables["POD_NAME"] == {"fieldRef": {"fieldPath": "metadata.name"}}  # the tracked rest is kept
    # Pod Identity (the default) needs no annotation: the stack's association names the service account.
    (account,) = by_kind(objects, "ServiceAccount")
    assert "annotations" not in account["metadata"]


def test_crds_are_v1_only_by_default_and_rbac_is_the_tracked_file(
    outputs_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = render(capsys, "--stack-outputs", str(outputs_file))
    crds = by_kind(objects, "CustomResourceDefinition")
    assert len(crds) == 5
    assert {v["name"] for crd in crds for v in crd["spec"]["versions"]} <= {"v1", "v1alpha1", "v1beta1"}
    assert all("conversion" not in crd["spec"] for crd in crds)
    assert {"karpenter.sh/v1"} <= {f"{c['spec']['group']}/{v['name']}" for c in crds for v in c["spec"]["versions"]}
    tracked = [d for d in yaml.safe_load_all((TRACKED_MANIFESTS / "rbac.yaml").read_text()) if d]
    rbac = [
        o
        for o in objects
        if o["apiVersion"].startswith("rbac.")
        and o["metadata"]["name"].startswith("serverless-karpenter")
        and "forwarder" not in o["metadata"]["name"]
    ]
    assert rbac == tracked


def test_serve_v1beta1_points_the_conversion_at_the_stacks_url_and_ca(
    outputs_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_bytes(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    objects = render(capsys, "--stack-outputs", str(outputs_file), "--serve-v1beta1", "--ca-bundle", str(ca))
    converted = {
        c["metadata"]["name"]: c for c in by_kind(objects, "CustomResourceDefinition") if "conversion" in c["spec"]
    }
    assert set(converted) == {"nodepools.karpenter.sh", "nodeclaims.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws"}
    for crd in converted.values():
        assert [v["name"] for v in crd["spec"]["versions"]] == ["v1", "v1beta1"]
        client = crd["spec"]["conversion"]["webhook"]["clientConfig"]
        assert client["url"] == OUTPUTS["ConversionWebhookUrl"]
        assert client["caBundle"] == "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="


def test_irsa_annotates_the_service_account_with_the_stacks_role(
    outputs_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (account,) = by_kind(render(capsys, "--stack-outputs", str(outputs_file), "--identity", "irsa"), "ServiceAccount")
    assert account["metadata"]["annotations"] == {"eks.amazonaws.com/role-arn": OUTPUTS["ForwarderRoleArn"]}


def test_a_moved_forwarder_gets_its_namespace_and_service_account_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "flat.json"  # a flat object of outputs is read too
    path.write_text(json.dumps({**OUTPUTS, "ForwarderNamespace": "karpenter", "ForwarderServiceAccount": "fwd"}))
    objects = render(capsys, "--stack-outputs", str(path))
    forwarder = [
        o for o in objects if "forwarder" in o["metadata"]["name"] or o["kind"] in ("ServiceAccount", "Namespace")
    ]
    assert by_kind(objects, "Namespace") == [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "karpenter"}}
    ]
    for obj in forwarder:
        if obj["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
            assert obj["metadata"]["namespace"] == "karpenter", obj["kind"]
        for subject in obj.get("subjects", []):
            assert (subject["namespace"], subject["name"]) == ("karpenter", "fwd")
    (deployment,) = by_kind(objects, "Deployment")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "fwd"


def test_from_stack_reads_describe_stacks(aws_env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    cloudformation = aws_env.client("cloudformation")
    template = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {key: {"Value": value} for key, value in OUTPUTS.items()},
    }
    cloudformation.create_stack(StackName="serverless-karpenter-demo", TemplateBody=json.dumps(template))
    objects = render(capsys, "--from-stack", "serverless-karpenter-demo")
    assert env(forwarder_container(objects))["EVENT_BUS_NAME"] == "serverless-karpenter-demo"


def test_missing_outputs_and_stacks_are_named(aws_env: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["manifests", "--from-stack", "serverless-karpenter-nope"]) == 1
    assert "stack serverless-karpenter-nope" in capsys.readouterr().err
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"serverless-karpenter-demo": {"EventBusName": "b"}}))
    assert main(["manifests", "--stack-outputs", str(old)]) == 1
    assert "has no output ForwarderImageUri: deploy this version of the stack first" in capsys.readouterr().err
    assert main(["manifests", "--stack-outputs", str(tmp_path / "none.json")]) == 1
    assert 'the path "' in capsys.readouterr().err


def test_out_writes_a_kustomization_of_the_files(outputs_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "install"
    assert main(["manifests", "--stack-outputs", str(outputs_file), "--out", str(out)]) == 0
    kustomization = yaml.safe_load((out / "kustomization.yaml").read_text())
    assert kustomization["resources"] == ["crds.yaml", "rbac.yaml", "forwarder.yaml"]
    assert all((out / name).is_file() for name in kustomization["resources"])


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed on this machine")
def test_the_output_applies_to_the_emulator_with_kubectl(
    kube: KubeEmulator, outputs_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["manifests", "--stack-outputs", str(outputs_file)]) == 0
    rendered = capsys.readouterr().out
    config = kube.write_kubeconfig(tmp_path / "kubeconfig")

    def kubectl(*args: str, stdin: str | None = None) -> str:
        command = [str(KUBECTL), "--kubeconfig", str(config), "--cache-dir", str(tmp_path / "cache"), *args]
        result = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 0, result.stderr
        return result.stdout

    applied = kubectl("apply", "-f", "-", stdin=rendered)  # kubectl's default validation: strict, from OpenAPI
    assert "clusterrolebinding.rbac.authorization.k8s.io/serverless-karpenter created" in applied
    assert "deployment.apps/serverless-karpenter-forwarder created" in applied
    deployment = json.loads(
        kubectl("get", "deployment", "-n", "kube-system", "serverless-karpenter-forwarder", "-o", "json")
    )
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert env(container)["EVENT_BUS_NAME"] == "serverless-karpenter-demo"
    assert env(container)["CLUSTER_NAME"] == "demo"
    assert container["image"] == OUTPUTS["ForwarderImageUri"]
