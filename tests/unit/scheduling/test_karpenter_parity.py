"""Where the scheduler agreed with Karpenter last (issue 27): DaemonSet overhead from the pods that run, volume
binding, namespace selectors over the pods of the pass, and self-affine pods that must start a domain of their own."""

from __future__ import annotations

from typing import Any

from tests.unit.scheduling.builders import (
    HOSTNAME,
    ZONE,
    claim_of,
    error_of,
    node,
    pod,
    snapshot,
    solve,
    zone_of,
)

DEDICATED = {"key": "dedicated", "value": "system", "effect": "NoSchedule"}


def daemonset(cpu: str, memory: str, **template_spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "kube-system", "uid": "ds-agent"},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {
                    "containers": [{"name": "agent", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
                    **template_spec,
                },
            }
        },
    }


def agent_pod(name: str, cpu: str, memory: str, created: str, *, deleting: bool = False) -> dict[str, Any]:
    """A pod of the agent DaemonSet as the cluster holds it: mutated by admission, pinned to its node."""
    body = pod(name, cpu=cpu, memory=memory, namespace="kube-system", labels={"app": "agent"}, node_name="system-1")
    body["metadata"]["creationTimestamp"] = created
    body["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "ds-agent", "controller": True}
    ]
    body["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}]
            }
        }
    }
    if deleting:
        body["metadata"]["deletionTimestamp"] = "2026-01-02T00:00:00Z"
    return body


def cluster_with_agents(*agents: dict[str, Any], **template_spec: Any) -> Any:
    # The agents run on a node no pending pod may use, so every pending pod needs a new node.
    system = node("system-1", cpu="8", memory="32Gi", taints=[DEDICATED])
    return snapshot(nodes=[system], bound_pods=list(agents), daemonsets=[daemonset("4", "4Gi", **template_spec)])


def app(cpu: str) -> dict[str, Any]:
    return pod("app", cpu=cpu, memory="2Gi", nodeSelector={"kubernetes.io/arch": "amd64"})


def cheapest_type(result: Any, name: str) -> str:
    return str(claim_of(result, name).instance_types[0].name)


# --- DaemonSet overhead ---------------------------------------------------------------------------------


def test_daemonset_overhead_comes_from_its_newest_pod_not_its_template() -> None:
    # Template 4 cpu / 4Gi; admission trimmed the pods, the newest to 1 cpu / 1Gi: 2 + 1 cpu fit a c5.xlarge,
    # where the template (or the older pod) would need an 8-cpu type.
    older = agent_pod("agent-old", "3", "3Gi", "2026-01-01T00:00:00Z")
    newest = agent_pod("agent-new", "1", "1Gi", "2026-01-01T01:00:00Z")
    result = solve(cluster_with_agents(older, newest), [app("2")])
    assert cheapest_type(result, "app") == "c5.xlarge"
    assert claim_of(result, "app").requests["cpu"] == 3000  # the pod and the agent as it runs


def test_a_daemonset_pod_being_deleted_does_not_stand_for_its_daemonset() -> None:
    live = agent_pod("agent-live", "1", "1Gi", "2026-01-01T00:00:00Z")
    leaving = agent_pod("agent-leaving", "3", "3Gi", "2026-01-01T01:00:00Z", deleting=True)
    result = solve(cluster_with_agents(live, leaving), [app("2")])
    assert cheapest_type(result, "app") == "c5.xlarge"


def test_a_daemonset_pod_keeps_its_templates_node_affinity_not_the_pin_to_its_node() -> None:
    # The pods only run on arm64 (the template says so); the pod's own affinity names its node only.
    arm_only = {"nodeSelector": {"kubernetes.io/arch": "arm64"}}
    newest = agent_pod("agent-new", "1", "1Gi", "2026-01-01T01:00:00Z")
    newest["spec"]["nodeSelector"] = {"kubernetes.io/arch": "arm64"}
    result = solve(cluster_with_agents(newest, **arm_only), [app("3")])
    assert cheapest_type(result, "app") == "c5.xlarge"  # amd64: no agent there, 3 cpu fit
    assert claim_of(result, "app").requests["cpu"] == 3000


# --- volumes --------------------------------------------------------------------------------------------


def claim(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": spec}


def storage_class(name: str, zones: list[str], **fields: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, **fields.pop("metadata", {})},
        "provisioner": "ebs.csi.aws.com",
        "allowedTopologies": [{"matchLabelExpressions": [{"key": ZONE, "values": zones}]}],
        **fields,
    }


def mounting(name: str, claim_name: str) -> dict[str, Any]:
    return pod(name, volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}])


def test_an_unbound_claim_of_no_storage_class_waits_until_it_is_bound() -> None:
    # storageClassName "" binds only to an existing volume: no new node can make the pod run until then.
    static = claim("static", storageClassName="")
    result = solve(snapshot(persistent_volume_claims=[static], storage_classes=[]), [mounting("user", "static")])
    assert not result.new_nodeclaims
    assert "persistentvolumeclaim default/static is not bound and names no storage class" in error_of(result, "user")


def test_a_claim_naming_no_class_gets_the_default_class_or_waits_when_there_is_none() -> None:
    unnamed = claim("unnamed")
    default = storage_class(
        "gp3", ["zone-c"], metadata={"annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}
    )
    with_default = solve(
        snapshot(persistent_volume_claims=[unnamed], storage_classes=[default, storage_class("io2", ["zone-a"])]),
        [mounting("user", "unnamed")],
    )
    assert zone_of(with_default, "user") == "zone-c"
    without = solve(snapshot(persistent_volume_claims=[unnamed], storage_classes=[]), [mounting("user", "unnamed")])
    assert "names no storage class" in error_of(without, "user")


def test_an_immediate_storage_class_constrains_the_new_node_to_its_allowed_zones() -> None:
    # volumeBindingMode unset is Immediate; an unbound claim of it is provisioned in an allowed zone.
    claims = [claim("unset", storageClassName="unset"), claim("immediate", storageClassName="immediate")]
    classes = [
        storage_class("unset", ["zone-b"]),
        storage_class("immediate", ["zone-c"], volumeBindingMode="Immediate"),
    ]
    cluster = snapshot(persistent_volume_claims=claims, storage_classes=classes)
    result = solve(cluster, [mounting("a", "unset"), mounting("b", "immediate")])
    assert zone_of(result, "a") == "zone-b"
    assert zone_of(result, "b") == "zone-c"


def test_an_ephemeral_volume_of_an_immediate_class_constrains_the_zone_too() -> None:
    template = {"spec": {"storageClassName": "immediate", "accessModes": ["ReadWriteOnce"]}}
    scratch = pod("scratch", volumes=[{"name": "tmp", "ephemeral": {"volumeClaimTemplate": template}}])
    classes = [storage_class("immediate", ["zone-b"], volumeBindingMode="Immediate")]
    result = solve(snapshot(storage_classes=classes), [scratch])
    assert zone_of(result, "scratch") == "zone-b"


# --- namespace selectors ----------------------------------------------------------------------------------


def test_an_empty_namespace_selector_finds_a_pending_pod_of_any_namespace() -> None:
    # Nothing runs yet and no Namespace labels are known: the target is only among the pods of the pass.
    target = pod("db", namespace="team-b", labels={"app": "db"}, cpu="2")
    term = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": HOSTNAME, "namespaceSelector": {}}
    client = pod(
        "client",
        namespace="team-a",
        affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    )
    result = solve(snapshot(), [target, client])
    assert claim_of(result, "client", "team-a").hostname == claim_of(result, "db", "team-b").hostname


# --- self-affinity ----------------------------------------------------------------------------------------


def test_self_affine_pods_pinned_to_different_zones_each_start_their_own() -> None:
    labels = {"app": "cache"}
    term = {"labelSelector": {"matchLabels": labels}, "topologyKey": ZONE}
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    first = pod("cache-b", labels=labels, affinity=affinity, nodeSelector={ZONE: "zone-b"})
    second = pod("cache-c", labels=labels, affinity=affinity, nodeSelector={ZONE: "zone-c"})
    free = pod("cache-any", labels=labels, affinity=affinity, cpu="100m")
    result = solve(snapshot(), [first, second, free])
    assert zone_of(result, "cache-b") == "zone-b"
    assert zone_of(result, "cache-c") == "zone-c"
    assert zone_of(result, "cache-any") in {"zone-b", "zone-c"}  # joins a started domain, starts none
    assert len(result.new_nodeclaims) == 2
