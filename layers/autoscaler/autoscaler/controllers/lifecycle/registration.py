"""Registration: the Node that joined with the NodeClaim's provider ID becomes the NodeClaim's node.

The Node gets the NodeClaim's labels and annotations, its taints and startup taints (merged by key and
effect), the finalizer ``karpenter.sh/termination``, an owner reference to the NodeClaim and the label
``karpenter.sh/registered=true``; the ``karpenter.sh/unregistered`` taint the kubelet registered with is
removed. Then the NodeClaim is ``Registered=True`` with ``status.nodeName``. Every write compares first, so
a repeated step writes nothing. Once registered, the instance is tagged ``Name`` (the node) and
``karpenter.sh/nodeclaim`` and the NodeClaim annotated ``karpenter.k8s.aws/tagged: "true"``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import LAUNCHED, REGISTERED
from autoscaler.cloudprovider.errors import CloudProviderError
from autoscaler.controllers.lifecycle.cloud import LifecycleCloud
from autoscaler.controllers.lifecycle.work import ClaimWork
from autoscaler.kube.objects import Node
from autoscaler.kube.port import Cluster, Event, KubeObject

log = logging.getLogger(__name__)
UNREGISTERED_TAINT = {"key": wk.TAINT_UNREGISTERED, "effect": "NoExecute"}
# Ours, about scheduling the NodeClaim: meaningless on the Node (and possibly kilobytes long).
NODECLAIM_ONLY_ANNOTATIONS = frozenset({wk.ANNOTATION_NOMINATED_PODS})


def taint_key(taint: Mapping[str, Any]) -> tuple[str, str]:
    """Taints are unique by key and effect (as the API server and Karpenter match them)."""
    return str(taint.get("key")), str(taint.get("effect"))


def nodes_by_provider_id(nodes: Sequence[KubeObject]) -> dict[str, list[KubeObject]]:
    found: dict[str, list[KubeObject]] = {}
    for node in nodes:
        view = Node(node)
        if view.provider_id and not view.deleting:
            found.setdefault(view.provider_id, []).append(node)
    return found


def merged_taints(node: KubeObject, work: ClaimWork) -> list[dict[str, Any]]:
    """The node's taints plus the NodeClaim's taints and startup taints it lacks, without the unregistered taint."""
    taints = [dict(t) for t in Node(node).taints]
    present = {taint_key(t) for t in taints}
    spec = work.claim.spec
    for taint in [*(spec.taints or []), *(spec.startup_taints or [])]:
        wanted = taint.to_dict()
        if taint_key(wanted) not in present:
            taints.append(wanted)
            present.add(taint_key(wanted))
    return [t for t in taints if taint_key(t) != taint_key(UNREGISTERED_TAINT)]


class Tagging(Enum):
    NOT_NEEDED = "NotNeeded"
    TAGGED = "Tagged"
    FAILED = "Failed"


class Registration:
    def __init__(self, cluster: Cluster, cloud: LifecycleCloud) -> None:
        self._cluster, self._cloud = cluster, cloud

    def run(self, work: ClaimWork, nodes: Mapping[str, list[KubeObject]]) -> KubeObject | None:
        """One NodeClaim's step: the node as synced when it registered in this pass, else None."""
        if work.deleted or work.is_true(REGISTERED) or not work.is_true(LAUNCHED):
            return None
        matches = nodes.get(work.status.provider_id or "", [])
        if not matches:
            work.set(REGISTERED, "Unknown", "NodeNotFound", "Node not registered with cluster")
            return None
        if len(matches) > 1:
            work.set(REGISTERED, "False", "MultipleNodesFound", "Invariant violated, matched multiple nodes")
            return None
        node = matches[0]
        view = Node(node)
        has_unregistered = any(taint_key(t) == taint_key(UNREGISTERED_TAINT) for t in view.taints)
        if wk.LABEL_REGISTERED not in view.labels and not has_unregistered:
            message = (
                f"Missing {wk.TAINT_UNREGISTERED} taint which prevents registration related race conditions on "
                "Karpenter-managed nodes"
            )
            self._cluster.record_event(Event(work.ref, "UnregisteredTaintMissing", message, "Warning"))
        synced = self._sync_node(work, node)
        work.update_status(node_name=view.name)
        work.set(REGISTERED, "True", REGISTERED)
        log.info("registered nodeclaim %s as node %s", work.name, view.name)
        return synced

    def _sync_node(self, work: ClaimWork, node: KubeObject) -> KubeObject:
        """Write what the node lacks; return the node as it now is (initialization reads it in the same pass)."""
        view = Node(node)
        wanted_labels = {**work.labels, wk.LABEL_REGISTERED: "true"}
        current_labels = view.labels
        labels = {k: v for k, v in wanted_labels.items() if current_labels.get(k) != v}
        current_annotations = view.annotations
        annotations = {
            k: v
            for k, v in (work.claim.metadata.annotations or {}).items()
            if current_annotations.get(k) != v and k not in NODECLAIM_ONLY_ANNOTATIONS
        }
        owners = list(view.owner_references)
        owner_references = None
        if not any(o.get("kind") == "NodeClaim" and o.get("uid") == work.claim.metadata.uid for o in owners):
            owner_references = [
                *owners,
                {
                    "apiVersion": wk.API_VERSION,
                    "kind": "NodeClaim",
                    "name": work.name,
                    "uid": work.claim.metadata.uid,
                    "blockOwnerDeletion": True,
                },
            ]
        finalizers = [] if wk.FINALIZER_TERMINATION in view.finalizers else [wk.FINALIZER_TERMINATION]
        if labels or annotations or owner_references is not None or finalizers:
            self._cluster.patch_metadata(
                view.ref,
                labels=labels or None,
                annotations=annotations or None,
                add_finalizers=finalizers,
                owner_references=owner_references,
            )
        taints = merged_taints(node, work)
        if taints != [dict(t) for t in view.taints]:
            self._cluster.set_node_taints(view.name, taints)
        synced_metadata = {
            **view.metadata,
            "labels": {**current_labels, **labels},
            "annotations": {**current_annotations, **annotations},
            "finalizers": [*view.finalizers, *finalizers],
            "ownerReferences": owner_references if owner_references is not None else owners,
        }
        return {**node, "metadata": synced_metadata, "spec": {**view.spec, "taints": taints}}

    def tag(self, work: ClaimWork) -> Tagging:
        """Tag a registered NodeClaim's instance once. A refusal (throttling, or IAM's for an instance this cluster
        does not own) is logged and retried by the next pass."""
        annotations = work.claim.metadata.annotations or {}
        if work.deleted or not work.is_true(REGISTERED) or annotations.get(wk.ANNOTATION_INSTANCE_TAGGED) == "true":
            return Tagging.NOT_NEEDED
        try:
            self._cloud.tag_registered(work.claim, work.status.node_name or work.name)
        except CloudProviderError as error:
            log.warning("tagging the instance of nodeclaim %s failed (next pass retries): %s", work.name, error)
            return Tagging.FAILED
        work.update_metadata(annotations={**annotations, wk.ANNOTATION_INSTANCE_TAGGED: "true"})
        return Tagging.TAGGED
