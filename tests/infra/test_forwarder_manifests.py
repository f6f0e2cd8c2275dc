"""The forwarder's manifests: zonal spread on its own labels, least-privilege RBAC, a hardened pod."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from autoscaler.events import WATCHED_KINDS
from autoscaler.kube.resources import KINDS

DIRECTORY = Path(__file__).parents[2] / "infra" / "manifests" / "forwarder"


def documents() -> dict[str, list[dict[str, Any]]]:
    by_kind: dict[str, list[dict[str, Any]]] = {}
    listed = yaml.safe_load((DIRECTORY / "kustomization.yaml").read_text())["resources"]
    for name in listed:
        for document in yaml.safe_load_all((DIRECTORY / name).read_text()):
            by_kind.setdefault(document["kind"], []).append(document)
    return by_kind


def test_deployment_spreads_two_replicas_across_zones_strictly() -> None:
    deployment = documents()["Deployment"][0]
    template = deployment["spec"]["template"]
    assert deployment["spec"]["replicas"] == 2
    [constraint] = template["spec"]["topologySpreadConstraints"]
    assert constraint["maxSkew"] == 1 and constraint["topologyKey"] == "topology.kubernetes.io/zone"
    assert constraint["whenUnsatisfiable"] == "DoNotSchedule"
    own = template["metadata"]["labels"]
    assert constraint["labelSelector"]["matchLabels"].items() <= own.items()
    assert deployment["spec"]["selector"]["matchLabels"].items() <= own.items()
    pdb = documents()["PodDisruptionBudget"][0]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= own.items()


def test_pod_runs_non_root_read_only_with_bounded_resources() -> None:
    pod = documents()["Deployment"][0]["spec"]["template"]["spec"]
    assert (
        pod["securityContext"]["runAsNonRoot"] is True and pod["serviceAccountName"] == "serverless-karpenter-forwarder"
    )
    [container] = pod["containers"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]
    assert container["args"][:2] == ["forwarder", "--bus"]


def test_rbac_reads_the_watched_kinds_and_writes_only_its_lease() -> None:
    by_kind = documents()
    [cluster_role], [role] = by_kind["ClusterRole"], by_kind["Role"]
    readable = {(g, r) for rule in cluster_role["rules"] for g in rule["apiGroups"] for r in rule["resources"]}
    assert readable == {(KINDS[k].group, KINDS[k].plural) for k in WATCHED_KINDS}
    assert all(rule["verbs"] == ["get", "list", "watch"] for rule in cluster_role["rules"])
    assert {r for rule in role["rules"] for r in rule["resources"]} == {"leases"}
    assert {v for rule in role["rules"] for v in rule["verbs"]} == {"create", "get", "update"}
