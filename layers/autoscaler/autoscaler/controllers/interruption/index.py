"""Which of this cluster's NodeClaims and Nodes an EC2 instance id stands for.

The index is built from one list of NodeClaims and one list of Nodes (Karpenter keys both by the
instance id in their provider id). Building it is the only read an interruption batch needs, so it is
built at most once per batch and, within a warm Lambda container, reused by the following batches: an
instance's NodeClaim never changes (instance ids are never reused), and every write made from a stale
entry is guarded (the NodeClaim delete by its uid, the cordon by the Node's resourceVersion), so
staleness can cost a redundant write or event, never a wrong one. :class:`IndexPolicy` says when to
rebuild.

NodeClaims are indexed as the API server lists them and parsed into the model only when a message names
their instance: parsing (validation and the API's rules) is most of what reading 15,000 NodeClaims costs, and
a batch names a few of them.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Final

from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.validation import InvalidObjectError, parse
from autoscaler.controllers.state.nodes import DISRUPTED_TAINT
from autoscaler.kube.objects import Node
from autoscaler.kube.port import KubeObject

log = logging.getLogger(__name__)

# aws:///us-west-2a/i-0123456789abcdef0 (the zone may be empty on some clusters)
_PROVIDER_ID = re.compile(r"^aws:///(?P<zone>[^/]*)/(?P<instance_id>i-[0-9a-f]+)$")


def instance_id_of(provider_id: str | None) -> str | None:
    """The EC2 instance id of an AWS provider id, or None for anything else."""
    match = _PROVIDER_ID.match(provider_id or "")
    return match.group("instance_id") if match else None


def is_cordoned(node: KubeObject) -> bool:
    """Unschedulable and carrying Karpenter's disrupted:NoSchedule taint."""
    view = Node(node)
    return view.unschedulable and view.has_taint(DISRUPTED_TAINT["key"], DISRUPTED_TAINT["effect"])


@dataclass(frozen=True)
class IndexedInstance:
    """One of our instances: its NodeClaim, its Node once registered, and whether it is already going."""

    instance_id: str
    nodeclaim: NodeClaim
    node: KubeObject | None
    deleting: bool

    @property
    def labels(self) -> Mapping[str, str]:
        return self.nodeclaim.metadata.labels or {}

    @property
    def node_name(self) -> str | None:
        return (Node(self.node).name or None) if self.node is not None else None

    @property
    def node_uid(self) -> str | None:
        return Node(self.node).uid if self.node is not None else None

    @property
    def cordoned(self) -> bool:
        return self.node is not None and is_cordoned(self.node)


class ClusterIndex:
    """Instance id -> our NodeClaim (and Node), as of ``built_at``, kept current with our own writes.

    ``nodeclaims`` are the listed objects (JSON); each is parsed on its first look-up, and one that does not
    validate is skipped, with a warning, as the Cluster adapter skips it."""

    def __init__(
        self,
        nodeclaims: Iterable[KubeObject],
        nodes: Iterable[KubeObject],
        built_at: datetime,
        build_time: timedelta = timedelta(0),
    ) -> None:
        self.built_at = built_at
        self.build_time = build_time  # what listing the cluster took: rebuilds are paced by it
        nodes_by_instance: dict[str, KubeObject] = {}
        for node in nodes:
            instance_id = instance_id_of(Node(node).provider_id)
            if instance_id:
                nodes_by_instance[instance_id] = node
        self._listed: dict[str, tuple[KubeObject, KubeObject | None]] = {}
        for nodeclaim in nodeclaims:
            instance_id = instance_id_of((nodeclaim.get("status") or {}).get("providerID"))
            if instance_id:
                self._listed[instance_id] = (nodeclaim, nodes_by_instance.get(instance_id))
        self._entries: dict[str, IndexedInstance | None] = {}  # parsed so far (None: does not validate)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._listed)

    def get(self, instance_id: str) -> IndexedInstance | None:
        if instance_id in self._entries:
            return self._entries[instance_id]
        listed = self._listed.get(instance_id)
        if listed is None:
            return None
        with self._lock:
            if instance_id not in self._entries:
                self._entries[instance_id] = _parsed(instance_id, *listed)
            return self._entries[instance_id]

    def age(self, now: datetime) -> timedelta:
        return now - self.built_at

    # --- our own writes, so that a reused index does not redo them -------------------------------
    def record_node(self, instance_id: str, node: KubeObject | None) -> None:
        self._update(instance_id, node=node)

    def record_deleting(self, instance_id: str) -> None:
        self._update(instance_id, deleting=True)

    def record_nodeclaim(self, instance_id: str, nodeclaim: NodeClaim) -> None:
        self._update(instance_id, nodeclaim=nodeclaim)

    def _update(self, instance_id: str, **changes: Any) -> None:
        with self._lock:
            entry = self._entries.get(instance_id)  # written only after a look-up: parsed
            if entry is not None:
                self._entries[instance_id] = replace(entry, **changes)


def _parsed(instance_id: str, nodeclaim: KubeObject, node: KubeObject | None) -> IndexedInstance | None:
    try:
        model = parse(nodeclaim)
    except InvalidObjectError as error:
        log.warning("skipping invalid NodeClaim: %s", error)
        return None
    if not isinstance(model, NodeClaim):
        return None
    return IndexedInstance(instance_id, model, node, deleting=model.metadata.deletion_timestamp is not None)


@dataclass(frozen=True)
class IndexPolicy:
    """When a batch rebuilds the index instead of reusing the last one.

    An instance the index does not know (another cluster's, or one whose NodeClaim learnt its provider id
    since) or one without a Node yet forces a rebuild, but not sooner than ``min_rebuild_interval`` after the
    last one, nor sooner than ``rebuild_cost_factor`` times what that one took: a stream of other clusters'
    events then costs a large cluster at most a tenth of the function's time in lists. Otherwise the index
    is rebuilt once it is ``max_age`` old, to refresh what others changed (zero: for every batch)."""

    max_age: timedelta = timedelta(minutes=5)
    min_rebuild_interval: timedelta = timedelta(seconds=5)
    rebuild_cost_factor: float = 10.0

    def needs_rebuild(self, index: ClusterIndex | None, instance_ids: Iterable[str], now: datetime) -> bool:
        if index is None:
            return True
        age = index.age(now)
        if age >= self.max_age:
            return True
        if age < max(self.min_rebuild_interval, index.build_time * self.rebuild_cost_factor):
            return False
        for instance_id in instance_ids:
            entry = index.get(instance_id)
            if entry is None or (entry.node is None and not entry.deleting):
                return True
        return False


FRESH_PER_BATCH: Final = IndexPolicy(max_age=timedelta(0), min_rebuild_interval=timedelta(0), rebuild_cost_factor=0)
