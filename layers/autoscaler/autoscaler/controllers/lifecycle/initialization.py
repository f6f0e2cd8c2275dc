"""Initialization: a registered NodeClaim's node is ready for pods.

``Initialized=True`` (and the node label ``karpenter.sh/initialized=true``) once the Node is Ready, its
startup taints and the taints every new node starts with are gone, and every extended resource the
NodeClaim requested is allocatable on it. Until then the condition says which of these it waits for.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from autoscaler.apis.quantity import QuantityError, parse_quantity
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import INITIALIZED, REGISTERED
from autoscaler.controllers.lifecycle.registration import taint_key
from autoscaler.controllers.lifecycle.work import ClaimWork
from autoscaler.kube.objects import Node
from autoscaler.kube.port import Cluster, KubeObject

log = logging.getLogger(__name__)

# Taints a node carries while it starts (Karpenter's KnownEphemeralTaints), matched by key and effect.
EPHEMERAL_TAINTS = (
    {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
    {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true", "effect": "NoSchedule"},
    {"key": wk.TAINT_UNREGISTERED, "effect": "NoExecute"},
)


def format_taint(taint: Mapping[str, Any]) -> str:
    value = taint.get("value")
    return f"{taint.get('key')}={value}:{taint.get('effect')}" if value else f"{taint.get('key')}:{taint.get('effect')}"


def _nonzero(quantity: Any) -> bool:
    try:
        return parse_quantity(quantity) != 0 if quantity is not None else False
    except (QuantityError, ValueError, ArithmeticError):
        return False


def waiting_for(node: KubeObject, work: ClaimWork) -> tuple[str, str] | None:
    """Why the node is not initialized yet (reason, message), or None when it is."""
    view = Node(node)
    if not view.ready:
        return "NodeNotReady", "Node status is NotReady"
    taints = view.taints
    startup = {taint_key(t.to_dict()) for t in work.claim.spec.startup_taints or []}
    for taint in taints:
        if taint_key(taint) in startup:
            return "StartupTaintsExist", f"StartupTaint {format_taint(taint)!r} still exists"
    ephemeral = {taint_key(t) for t in EPHEMERAL_TAINTS}
    for taint in taints:
        if taint_key(taint) in ephemeral:
            return "KnownEphemeralTaintsExist", f"KnownEphemeralTaint {format_taint(taint)!r} still exists"
    allocatable = view.allocatable
    requests = work.claim.spec.resources.requests if work.claim.spec.resources else None
    for name, quantity in (requests or {}).items():
        if _nonzero(quantity) and not _nonzero(allocatable.get(name)):
            return "ResourceNotRegistered", f"Resource {name!r} was requested but not registered"
    return None


class Initialization:
    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster

    def run(self, work: ClaimWork, nodes_by_name: Mapping[str, KubeObject]) -> bool:
        """One NodeClaim's step; True when it initialized in this pass."""
        if work.deleted or work.is_true(INITIALIZED) or not work.is_true(REGISTERED):
            return False
        node = nodes_by_name.get(work.status.node_name or "")
        if node is None:
            work.set(INITIALIZED, "Unknown", "NodeNotFound", "Node not registered with cluster")
            return False
        waiting = waiting_for(node, work)
        if waiting is not None:
            work.set(INITIALIZED, "Unknown", *waiting)
            return False
        view = Node(node)
        if view.labels.get(wk.LABEL_INITIALIZED) != "true":
            self._cluster.patch_metadata(view.ref, labels={wk.LABEL_INITIALIZED: "true"})
        work.set(INITIALIZED, "True", INITIALIZED)
        log.info("initialized nodeclaim %s (node %s)", work.name, view.name)
        return True
