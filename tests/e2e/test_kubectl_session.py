"""A person's kubectl session against ``autoscaler simulate --serve``: the machine's real kubectl, its defaults
(strict validation, protobuf evictions), asserting what it prints at each step as against a cluster.

The world is the CLI's own (a subprocess, stopped with SIGTERM as a person's Ctrl-C would), so the summary at the
end is checked too. Skipped with a message where kubectl is not installed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from tests.support import manifests

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(
    KUBECTL is None, reason="kubectl is not installed on this machine (it ships with CI's image)"
)

SCENARIO = {
    "name": "kubectl-session",
    "description": "an empty cluster for a person with kubectl",
    "duration": "1m",
    "boot": "20s",
    "tick": "5s",
    "instanceTypes": ["m5.large", "m5.xlarge", "c5.xlarge"],
}
NODECLASS = manifests.nodeclass()
NODEPOOL = manifests.nodepool(
    requirements=[{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}],
    disruption={"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30m"},
)


def deployment(replicas: int) -> dict:  # type: ignore[type-arg]
    container = {"name": "inflate", "image": "public.ecr.aws/eks-distro/kubernetes/pause:3.7"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "inflate", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "inflate"}},
            "template": {
                "metadata": {"labels": {"app": "inflate"}},
                "spec": {"containers": [{**container, "resources": {"requests": {"cpu": "1"}}}]},
            },
        },
    }


Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def session(tmp_path: Path) -> Iterator[tuple[Kubectl, subprocess.Popen[str], Path]]:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(yaml.safe_dump(SCENARIO))
    kubeconfig = tmp_path / "kubeconfig"
    autoscaler = Path(sys.executable).with_name("autoscaler")
    command = [str(autoscaler), "simulate", str(scenario), "--serve", "--kubeconfig", str(kubeconfig), "--speed", "60"]
    out, err = (tmp_path / "stdout").open("w"), (tmp_path / "stderr").open("w")
    world = subprocess.Popen(command, stdout=out, stderr=err, text=True, cwd=tmp_path, env={**os.environ})

    def kubectl(*args: str, timeout: float = 30, check: bool = True) -> subprocess.CompletedProcess[str]:
        base = [str(KUBECTL), "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "cache")]
        result = subprocess.run([*base, *args], capture_output=True, text=True, timeout=timeout, check=False)
        if check:
            assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
        return result

    try:
        deadline = time.monotonic() + 60
        while not kubeconfig.exists():
            assert world.poll() is None, (tmp_path / "stderr").read_text()
            assert time.monotonic() < deadline, "the world did not write its kubeconfig within 60 s"
            time.sleep(0.2)
        yield kubectl, world, tmp_path
    finally:
        if world.poll() is None:
            world.kill()
            world.wait()
        out.close()
        err.close()


def _until(what: str, check: Callable[[], bool], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"{what} did not happen within {seconds:.0f} s"
        time.sleep(0.5)


def _rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.strip().splitlines()]


def test_a_kubectl_session_behaves_as_against_a_cluster(session: tuple[Kubectl, subprocess.Popen[str], Path]) -> None:
    kubectl, world, tmp_path = session
    inflate_file = tmp_path / "inflate.yaml"
    inflate_file.write_text(yaml.safe_dump_all([NODECLASS, NODEPOOL, deployment(2)]))

    # apply with default (strict) validation: the OpenAPI v3 documents say the server validates fields
    applied = kubectl("apply", "-f", str(inflate_file)).stdout
    assert "ec2nodeclass.karpenter.k8s.aws/default created" in applied
    assert "nodepool.karpenter.sh/default created" in applied
    assert "deployment.apps/inflate created" in applied
    typo = tmp_path / "typo.yaml"
    typo.write_text(yaml.safe_dump({**NODEPOOL, "spec": {**NODEPOOL["spec"], "disruptoin": {}}}))
    refused = kubectl("apply", "-f", str(typo), check=False)
    assert refused.returncode != 0 and 'unknown field "spec.disruptoin"' in refused.stderr

    # the Deployment's pods: created by its ReplicaSet, placed on a node Karpenter launched, Ready as a kubelet says
    _until(
        "two inflate pods", lambda: len(kubectl("get", "pods", "-l", "app=inflate", "-o", "name").stdout.split()) == 2
    )
    kubectl("wait", "pods", "-l", "app=inflate", "--for=condition=Ready", "--timeout=60s", timeout=70)
    pods = _rows(kubectl("get", "pods", "-o", "wide").stdout)
    assert pods[0][:3] == ["NAME", "READY", "STATUS"] and "IP" in pods[0] and "NODE" in pods[0]
    assert all(row[1:3] == ["1/1", "Running"] and row[5].startswith("10.") for row in pods[1:]), pods
    nodes = _rows(kubectl("get", "nodes", "-o", "wide").stdout)
    assert nodes[0][:2] == ["NAME", "STATUS"] and "INTERNAL-IP" in nodes[0] and "CONTAINER-RUNTIME" in nodes[0]
    assert nodes[1][1] == "Ready" and nodes[1][5].startswith("10."), nodes

    # scale, then wait for the rollout as a person would
    assert "deployment.apps/inflate scaled" in kubectl("scale", "deploy/inflate", "--replicas=3").stdout
    rollout = kubectl("rollout", "status", "deploy/inflate", "--timeout=60s", timeout=70).stdout
    assert 'deployment "inflate" successfully rolled out' in rollout
    assert _rows(kubectl("get", "deploy", "inflate").stdout)[1][1] == "3/3"

    # server-side apply: a field another manager set to something else conflicts unless forced
    ops, ci = tmp_path / "ops.yaml", tmp_path / "ci.yaml"
    ops.write_text(yaml.safe_dump(deployment(2)))
    ci.write_text(yaml.safe_dump(deployment(4)))
    unforced = kubectl("apply", "--server-side", "--field-manager=ops", "-f", str(ops), check=False)
    assert unforced.returncode != 0 and 'conflict with "kubectl": .spec.replicas' in unforced.stderr  # kubectl scale's
    kubectl("apply", "--server-side", "--field-manager=ops", "--force-conflicts", "-f", str(ops))
    other = kubectl("apply", "--server-side", "--field-manager=ci", "-f", str(ci), check=False)
    assert other.returncode != 0 and 'conflict with "ops": .spec.replicas' in other.stderr
    managers = kubectl("get", "deploy", "inflate", "-o", "jsonpath={.metadata.managedFields[*].manager}").stdout
    assert "ops" in managers.split() and "ci" not in managers.split()
    kubectl("rollout", "status", "deploy/inflate", "--timeout=60s", timeout=70)
    _until(
        "two inflate pods again",
        lambda: len(kubectl("get", "pods", "-l", "app=inflate", "-o", "name").stdout.split()) == 2,
    )

    # the autoscaler's events (events.k8s.io) through v1: get events, a field selector, describe
    pod = kubectl("get", "pods", "-l", "app=inflate", "-o", "jsonpath={.items[0].metadata.name}").stdout
    assert "Nominated" in kubectl("get", "events", "-A").stdout
    selected = kubectl("get", "events", "--field-selector", f"involvedObject.name={pod}").stdout
    assert pod in selected and "Nominated" in selected
    described = kubectl("describe", "pod", pod).stdout
    assert "Events:" in described and "Events:  <none>" not in described and "Nominated" in described

    explained = kubectl("explain", "nodepool.spec.disruption.budgets").stdout
    assert "FIELD: budgets" in explained and "nodes" in explained and "schedule" in explained

    # drain: evictions (sent as protobuf) honour a budget (429, retried until the timeout), then go through
    node = kubectl("get", "pod", pod, "-o", "jsonpath={.spec.nodeName}").stdout
    budget = tmp_path / "pdb.yaml"
    pdb_body = {"minAvailable": 2, "selector": {"matchLabels": {"app": "inflate"}}}
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "inflate"}, "spec": pdb_body}
    budget.write_text(yaml.safe_dump(pdb))
    kubectl("apply", "-f", str(budget))
    _until(
        "the budget's status",
        lambda: kubectl("get", "pdb", "inflate", "-o", "jsonpath={.status.disruptionsAllowed}").stdout == "0",
    )
    blocked = kubectl(
        "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=5s", check=False, timeout=30
    )
    assert blocked.returncode != 0 and "would violate the pod's disruption budget" in blocked.stderr
    kubectl("delete", "pdb", "inflate")
    drained = kubectl("drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=60s", timeout=70)
    assert f"node/{node} drained" in drained.stdout and f"evicting pod default/{pod}" in drained.stderr + drained.stdout
    assert "SchedulingDisabled" in kubectl("get", "node", node).stdout
    on_node = kubectl("get", "pods", "-A", "--field-selector", f"spec.nodeName={node}", "-o", "name").stdout
    assert "inflate" not in on_node

    # delete the Deployment while watching it: the watch prints it, its ReplicaSet's pods go
    watch = subprocess.Popen(
        [str(KUBECTL), "--kubeconfig", str(tmp_path / "kubeconfig"), "get", "deploy", "-w"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(1.5)
    assert 'deployment.apps "inflate" deleted' in kubectl("delete", "deploy", "inflate").stdout
    time.sleep(1.5)
    watch.send_signal(signal.SIGINT)
    watched, _ = watch.communicate(timeout=10)
    assert watched.splitlines()[0].split()[:2] == ["NAME", "READY"] and "inflate" in watched
    _until("the Deployment's pods gone", lambda: not kubectl("get", "pods", "-l", "app=inflate", "-o", "name").stdout)

    # SIGTERM ends the world as a finished run: the summary is printed
    world.send_signal(signal.SIGTERM)
    assert world.wait(timeout=60) in (0, 1)
    summary = (tmp_path / "stdout").read_text()
    assert "kubectl-session" in summary and "nodes" in summary
    assert "\r" not in (tmp_path / "stderr").read_text()  # progress as lines, stderr not being a terminal
