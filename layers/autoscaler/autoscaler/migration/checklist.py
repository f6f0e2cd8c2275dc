"""The pre-upgrade checklist of Karpenter's v1 migration, evaluated over manifests, IAM policies and Helm values.

Each item is a question from Karpenter's v1 upgrade guide with a finding per object that needs a decision;
an item whose input was not given is skipped, not passed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.migration import advice, helm, iam
from autoscaler.migration.inventory import Inventory, KarpenterObject

Status = Literal["ok", "attention", "skipped"]


@dataclass(frozen=True)
class Finding:
    subject: str  # EC2NodeClass/default, policy.json statement AllowScoped, ...
    origin: str  # where it was read: file#document
    message: str


@dataclass(frozen=True)
class Item:
    id: str
    title: str
    findings: tuple[Finding, ...] = ()
    skipped: str | None = None

    @property
    def status(self) -> Status:
        if self.skipped is not None:
            return "skipped"
        return "attention" if self.findings else "ok"


@dataclass(frozen=True)
class Source:
    """A parsed input file (a policy or Helm values), or why it could not be read."""

    origin: str
    content: Any = None
    error: str | None = None


@dataclass(frozen=True)
class Inputs:
    inventory: Inventory
    policies: list[Source] | None = None
    helm_values: Source | None = None


def _nodeclasses(inputs: Inputs) -> list[tuple[KarpenterObject, EC2NodeClass]]:
    return [(o, o.v1) for o in inputs.inventory.of_kind("EC2NodeClass") if isinstance(o.v1, EC2NodeClass)]


def _converts(inputs: Inputs) -> list[Finding]:
    findings = [Finding(o.subject, o.origin, o.error) for o in inputs.inventory.objects if o.error is not None]
    findings += [Finding("(unreadable)", d.origin, d.error or "not a YAML object") for d in inputs.inventory.unreadable]
    return findings


def _ami_auto_upgrade(inputs: Inputs) -> list[Finding]:
    findings = []
    for obj, nodeclass in _nodeclasses(inputs):
        alias = advice.latest_alias(nodeclass)
        if alias is None:
            continue
        was = "had no amiSelectorTerms, so its AMIs upgraded automatically; as v1 it " if obj.converted else ""
        findings.append(Finding(obj.subject, obj.origin, f"{was}follows {alias}: {advice.pin_advice(alias)}"))
    return findings


HOP_LIMIT_DEFAULTED = (
    "relies on v1beta1's default httpPutResponseHopLimit 2 (pods off the host network reach IMDS). The converted "
    "object keeps 2, but this manifest applied as v1 gets 1. Write the limit explicitly: 2 if such pods need "
    "IMDS, else 1."
)
PUBLIC_IP_INFERRED = (
    "does not set associatePublicIPAddress: Karpenter v1beta1 turned public IPs off when every selected subnet "
    "was private; v1 leaves it to each subnet's setting. Set associatePublicIPAddress: false for private "
    "subnets (or true) explicitly."
)


def _hop_limit(inputs: Inputs) -> list[Finding]:
    return [
        Finding(obj.subject, obj.origin, HOP_LIMIT_DEFAULTED)
        for obj, _ in _nodeclasses(inputs)
        if obj.converted and "httpPutResponseHopLimit" not in ((obj.raw.get("spec") or {}).get("metadataOptions") or {})
    ]


def _public_ip(inputs: Inputs) -> list[Finding]:
    return [
        Finding(obj.subject, obj.origin, PUBLIC_IP_INFERRED)
        for obj, nodeclass in _nodeclasses(inputs)
        if obj.converted and nodeclass.spec.associate_public_ip_address is None
    ]


def _ubuntu(inputs: Inputs) -> list[Finding]:
    findings = []
    for obj, nodeclass in _nodeclasses(inputs):
        warning = advice.ubuntu_warning(nodeclass)
        if warning is not None:
            findings.append(Finding(obj.subject, obj.origin, warning))
    return findings


def _custom_family_taint(inputs: Inputs) -> list[Finding]:
    return [
        Finding(
            obj.subject,
            obj.origin,
            (
                f"amiFamily Custom: v1 nodes must register with the {wk.TAINT_UNREGISTERED}:NoExecute taint, which "
                "your userData must add (e.g. kubelet --register-with-taints); it does not mention it."
            ),
        )
        for obj, nodeclass in _nodeclasses(inputs)
        if nodeclass.spec.ami_family == "Custom" and wk.TAINT_UNREGISTERED not in (nodeclass.spec.user_data or "")
    ]


def _kubelet(inputs: Inputs) -> list[Finding]:
    by_class: dict[str, dict[str, list[KarpenterObject]]] = {}
    for obj in inputs.inventory.of_kind("NodePool"):
        nodepool = obj.v1
        if not isinstance(nodepool, NodePool):
            continue
        settings = (nodepool.metadata.annotations or {}).get(wk.ANNOTATION_KUBELET_COMPATIBILITY)
        if settings is not None:
            by_settings = by_class.setdefault(nodepool.spec.template.spec.node_class_ref.name, {})
            by_settings.setdefault(json.dumps(json.loads(settings), sort_keys=True), []).append(obj)
    findings = []
    for nodeclass, by_settings in sorted(by_class.items()):
        pools = [o for objs in by_settings.values() for o in objs]
        names = ", ".join(o.subject for o in pools)
        if len(by_settings) > 1:
            message = (
                f"{names} share EC2NodeClass/{nodeclass} with different kubelet settings: give each set of "
                "settings its own EC2NodeClass (their nodes are replaced when the pools move)"
            )
        else:
            message = (
                f"move the kubelet settings of {names} to EC2NodeClass/{nodeclass}.spec.kubelet, then remove "
                f"the {wk.ANNOTATION_KUBELET_COMPATIBILITY} annotation (no node is replaced)"
            )
        findings.append(Finding(f"EC2NodeClass/{nodeclass}", pools[0].origin, message))
    return findings


def _do_not_disrupt(inputs: Inputs) -> list[Finding]:
    findings = []
    for document in inputs.inventory.others:
        body = document.body
        for warning in advice.workload_warnings(body):
            name = (body.get("metadata") or {}).get("name", "")
            findings.append(Finding(f"{body.get('kind')}/{name}", document.origin, warning))
    return findings


def _iam(inputs: Inputs) -> list[Finding]:
    findings = []
    replacement = f"aws:ResourceTag/{wk.TAG_CLUSTER_NAME} (your cluster's name) or {wk.TAG_CLUSTER_ARN}"
    for source in inputs.policies or []:
        if source.error is not None:
            findings.append(Finding("IAM policy", source.origin, source.error))
            continue
        for condition in iam.managed_by_conditions(source.content):
            message = (
                f"condition {condition.operator} {condition.key} relies on {iam.MANAGED_BY}, which v1 no longer "
                f"tags: key it on {replacement} instead"
            )
            findings.append(Finding(f"statement {condition.statement}", source.origin, message))
    return findings


def _helm(check: Callable[[Mapping[str, Any]], list[str]]) -> Callable[[Inputs], list[Finding]]:
    def run(inputs: Inputs) -> list[Finding]:
        source = inputs.helm_values
        assert source is not None
        if source.error is not None:
            return [Finding("Helm values", source.origin, source.error)]
        values = source.content if isinstance(source.content, Mapping) else {}
        return [Finding("Helm values", source.origin, message) for message in check(values)]

    return run


def _unless(given: Callable[[Inputs], object], reason: str) -> Callable[[Inputs], str | None]:
    return lambda inputs: None if given(inputs) else f"not checked: {reason}"


def _manifests_given(_: Inputs) -> str | None:
    return None  # -f is required: manifest checks always run


_WORKLOADS = _unless(lambda i: i.inventory.others, "pass pods, workloads or nodes with -f")
_POLICIES = _unless(lambda i: i.policies, "pass --iam-policy FILE")
_HELM = _unless(lambda i: i.helm_values, "pass --helm-values FILE")

# (id, title, check, why it is skipped: None when its input was given)
CHECKS: tuple[tuple[str, str, Callable[[Inputs], list[Finding]], Callable[[Inputs], str | None]], ...] = (
    (
        "converts",
        "Every NodePool, NodeClaim and EC2NodeClass converts to a valid v1 object",
        _converts,
        _manifests_given,
    ),
    (
        "ami-auto-upgrade",
        "Classes that relied on AMI auto-upgrade without amiSelectorTerms",
        _ami_auto_upgrade,
        _manifests_given,
    ),
    (
        "imds-hop-limit",
        "Workloads that need IMDS from pods off the host network (hop limit)",
        _hop_limit,
        _manifests_given,
    ),
    (
        "public-ip",
        "Classes that relied on private-subnet detection instead of associatePublicIPAddress",
        _public_ip,
        _manifests_given,
    ),
    ("ubuntu", "Ubuntu classes (the Ubuntu AMI family was removed)", _ubuntu, _manifests_given),
    (
        "custom-ami-taint",
        "Custom AMI families register nodes with the unregistered taint",
        _custom_family_taint,
        _manifests_given,
    ),
    ("kubelet", "Kubelet settings move from NodePools to EC2NodeClasses", _kubelet, _manifests_given),
    ("do-not-disrupt", "Pods and nodes annotated do-not-evict / do-not-consolidate", _do_not_disrupt, _WORKLOADS),
    ("iam-managed-by", f"IAM conditions keyed on {iam.MANAGED_BY}", _iam, _POLICIES),
    (
        "topology-spread",
        "Topology spread with ScheduleAnyway where v1 uses DoNotSchedule",
        _helm(helm.spread_findings),
        _HELM,
    ),
    ("drift-gate", "Drift turned off by feature gate (always on in v1)", _helm(helm.drift_gate_findings), _HELM),
    (
        "feature-gates",
        "Feature gates set in the Helm values, as this stack's -c featureGates",
        _helm(helm.feature_gate_findings),
        _HELM,
    ),
)


def checklist(inputs: Inputs) -> list[Item]:
    items = []
    for item_id, title, check, skipped in CHECKS:
        reason = skipped(inputs)
        items.append(Item(item_id, title, skipped=reason) if reason else Item(item_id, title, tuple(check(inputs))))
    return items
