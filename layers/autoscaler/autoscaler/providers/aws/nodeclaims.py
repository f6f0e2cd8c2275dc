"""NodeClaims as the provider reads and writes them: the kubelet settings that apply, the labels and
taints a node boots with, and the NodeClaim view of a launched instance. Pure."""

from __future__ import annotations

import json
from collections.abc import Mapping

from pydantic import ValidationError

from autoscaler.apis.resources import format_resources
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.common import ObjectMeta, Taint
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.kubelet import KubeletConfiguration
from autoscaler.apis.v1.nodeclaim import NodeClaim, NodeClaimSpec, NodeClaimStatus
from autoscaler.cloudprovider.types import InstanceType, Reservation
from autoscaler.providers.aws.ec2instance import Instance
from autoscaler.providers.aws.reserved import reservation_labels

UNREGISTERED = Taint(key=wk.TAINT_UNREGISTERED, effect="NoExecute")
# The kubelet refuses to register with labels in these domains (NodeRestriction admission).
_KUBELET_FORBIDDEN_DOMAINS = ("node-restriction.kubernetes.io", "kops.k8s.io")


class KubeletCompatibilityError(ValueError):
    """The v1beta1 kubelet compatibility annotation does not hold a valid kubelet configuration."""


def kubelet_for(nodeclass: EC2NodeClass, annotations: Mapping[str, str] | None) -> KubeletConfiguration | None:
    """The kubelet settings that apply: a v1beta1 NodePool's (carried over by conversion in the
    ``compatibility.karpenter.sh/v1beta1-kubelet-conversion`` annotation) win over the class's."""
    raw = (annotations or {}).get(wk.ANNOTATION_KUBELET_COMPATIBILITY)
    if not raw:
        return nodeclass.spec.kubelet
    try:
        return KubeletConfiguration.model_validate(json.loads(raw))
    except (ValueError, ValidationError) as error:
        message = f"{wk.ANNOTATION_KUBELET_COMPATIBILITY} is not a kubelet configuration: {error}"
        raise KubeletCompatibilityError(message) from error


def boot_taints(nodeclaim: NodeClaim) -> tuple[Taint, ...]:
    """Taints and startup taints, plus karpenter.sh/unregistered:NoExecute until Karpenter registers the node."""
    taints = [*(nodeclaim.spec.taints or []), *(nodeclaim.spec.startup_taints or [])]
    if not any(t.key == UNREGISTERED.key and t.effect == UNREGISTERED.effect for t in taints):
        taints.append(UNREGISTERED)
    return tuple(taints)


def boot_labels(nodeclaim: NodeClaim, capacity_type: str) -> dict[str, str]:
    labels = {**(nodeclaim.metadata.labels or {}), wk.LABEL_CAPACITY_TYPE: capacity_type}
    return {k: v for k, v in labels.items() if not wk.label_domain(k).endswith(_KUBELET_FORBIDDEN_DOMAINS)}


def effective_kubelet(kubelet: KubeletConfiguration | None, max_pods: int, dns_ip: str | None) -> KubeletConfiguration:
    """The class's kubelet settings with maxPods (the instance type's pod capacity) and clusterDNS filled."""
    settings = kubelet.model_copy() if kubelet else KubeletConfiguration()
    if settings.max_pods is None:
        settings = settings.model_copy(update={"max_pods": max_pods})
    if not settings.cluster_dns and dns_ip:
        settings = settings.model_copy(update={"cluster_dns": [dns_ip]})
    return settings


def instance_labels(instance: Instance, instance_type: InstanceType | None, zone_id: str | None) -> dict[str, str]:
    labels = dict(instance_type.labels) if instance_type else {wk.LABEL_INSTANCE_TYPE: instance.instance_type}
    labels.update({wk.LABEL_ZONE: instance.zone, wk.LABEL_CAPACITY_TYPE: instance.capacity_type})
    if zone_id:
        labels[wk.LABEL_ZONE_ID] = zone_id
    if instance.placement_group_id:
        labels[wk.LABEL_PLACEMENT_GROUP_ID] = instance.placement_group_id
    if instance.partition:
        labels[wk.LABEL_PLACEMENT_GROUP_PARTITION] = str(instance.partition)
    if wk.TAG_NODEPOOL in instance.tags:
        labels[wk.LABEL_NODEPOOL] = instance.tags[wk.TAG_NODEPOOL]
    if instance.capacity_reservation_id:
        labels.update(reservation_labels(_reservation_of(instance, instance_type)))
    return labels


def _reservation_of(instance: Instance, instance_type: InstanceType | None) -> Reservation:
    """The reservation as the instance type's reserved offering describes it (the instance only names its id);
    a default, uninterruptible one once the class no longer selects it."""
    for offering in instance_type.offerings if instance_type else ():
        if offering.reservation is not None and offering.reservation.id == instance.capacity_reservation_id:
            return offering.reservation
    return Reservation(instance.capacity_reservation_id, "default")


def launched(
    nodeclaim: NodeClaim, instance: Instance, instance_type: InstanceType | None, zone_id: str | None
) -> NodeClaim:
    """``nodeclaim`` as launched on ``instance``: provider ID, image, capacity, allocatable, labels."""
    status = (nodeclaim.status or NodeClaimStatus()).model_copy(
        update={
            "provider_id": instance.provider_id,
            "image_id": instance.image_id,
            "capacity": format_resources(instance_type.capacity) if instance_type else None,
            "allocatable": format_resources(instance_type.allocatable) if instance_type else None,
        }
    )
    labels = {**(nodeclaim.metadata.labels or {}), **instance_labels(instance, instance_type, zone_id)}
    metadata = nodeclaim.metadata.model_copy(update={"labels": labels})
    return nodeclaim.model_copy(update={"metadata": metadata, "status": status})


def from_instance(instance: Instance, instance_type: InstanceType | None, zone_id: str | None) -> NodeClaim:
    """A NodeClaim describing a live instance (for get/list: garbage collection compares these)."""
    nodeclass = instance.tags.get(wk.TAG_NODECLASS, "")
    spec = NodeClaimSpec.model_validate(
        {"requirements": [], "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": nodeclass}}
    )
    claim = NodeClaim(
        metadata=ObjectMeta(
            name=instance.tags.get(wk.TAG_NODECLAIM),
            creation_timestamp=instance.launch_time.strftime("%Y-%m-%dT%H:%M:%SZ") if instance.launch_time else None,
        ),
        spec=spec,
    )
    return launched(claim, instance, instance_type, zone_id)


def stamp_hash(claim: NodeClaim, nodeclass: EC2NodeClass) -> NodeClaim:
    """``claim`` with its class's drift hash copied on, as Karpenter stamps it at launch."""
    keys = (wk.ANNOTATION_NODECLASS_HASH, wk.ANNOTATION_NODECLASS_HASH_VERSION)
    class_annotations = nodeclass.metadata.annotations or {}
    stamped = {k: class_annotations[k] for k in keys if k in class_annotations}
    if not stamped:
        return claim
    annotations = {**(claim.metadata.annotations or {}), **stamped}
    return claim.model_copy(update={"metadata": claim.metadata.model_copy(update={"annotations": annotations})})


def zone_id(nodeclass: EC2NodeClass | None, zone: str) -> str | None:
    """The ID of ``zone`` among the class's resolved subnets, if it has one there."""
    subnets = nodeclass.status.subnets if nodeclass and nodeclass.status and nodeclass.status.subnets else []
    return next((s.zone_id for s in subnets if s.zone == zone), None)
