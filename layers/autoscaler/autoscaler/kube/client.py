"""The Cluster port over the official ``kubernetes`` client (see ``connect`` for EKS, kubeconfig, in-cluster)."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from autoscaler.apis.autoscaling import CapacityBuffer
from autoscaler.apis.rules import ApiModel
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.apis.v1alpha1 import NodeOverlay
from autoscaler.apis.validation import InvalidObjectError, parse
from autoscaler.clock import utc_now
from autoscaler.kube.objects import Body, Node, Pod
from autoscaler.kube.port import (
    ConflictError,
    Event,
    EvictionOutcome,
    KarpenterObject,
    KubeObject,
    NotFoundError,
    ObjectRef,
    RejectedError,
)
from autoscaler.kube.resources import KINDS, is_pending_unschedulable, is_terminal, kind_of
from autoscaler.kube.rest import KubeRest

logger = logging.getLogger(__name__)
Model = TypeVar("Model", NodePool, NodeClaim, EC2NodeClass, CapacityBuffer, NodeOverlay)

REPORTING_CONTROLLER = "karpenter.sh/serverless-karpenter"
EVENT_DEDUPE_SECONDS = 120.0  # identical events within this window are sent once, as Karpenter's recorder does
CONFLICT_ATTEMPTS = 5


def _is_budget_refusal(status: int, body: KubeObject) -> bool:
    """429 from the eviction subresource because of a PodDisruptionBudget (not API throttling), or the 500 an
    API server answers when several budgets select the pod: both mean "not now"."""
    if status == 429:
        causes = (body.get("details") or {}).get("causes") or ()
        return any(c.get("reason") == "DisruptionBudget" for c in causes) or "disruption budget" in str(
            body.get("message")
        )
    return status == 500 and "more than one PodDisruptionBudget" in str(body.get("message"))


class KubernetesCluster:
    """Implements :class:`autoscaler.kube.port.Cluster`."""

    def __init__(
        self,
        rest: KubeRest,
        *,
        clock: Callable[[], float] = time.monotonic,
        instance: str = "",
        now: Callable[[], datetime] = utc_now,
    ) -> None:
        """``clock`` times the event dedupe window; ``now`` dates the events (the runtime's clock)."""
        self.rest = rest
        self.clock = clock
        self.now = now
        self.instance = instance or f"serverless-karpenter-{uuid.uuid4().hex[:8]}"
        self._recent_events: dict[tuple[str, ...], float] = {}
        self._events_pruned_at = float("-inf")
        self._events_lock = threading.Lock()

    # --- Karpenter's kinds -----------------------------------------------------------------------
    def _models(self, model: type[Model]) -> list[Model]:
        items, _ = self.rest.list(KINDS[model.__name__])
        return [m for m in (self._parse(model, item) for item in items) if m is not None]

    def _model(self, model: type[Model], name: str) -> Model | None:
        try:
            return self._parse(model, self.rest.get(KINDS[model.__name__], name))
        except NotFoundError:
            return None

    @staticmethod
    def _parse(model: type[Model], body: KubeObject) -> Model | None:
        try:
            parsed: ApiModel = parse(body)
        except InvalidObjectError as error:
            logger.warning("skipping invalid %s: %s", model.__name__, error)
            return None
        return parsed if isinstance(parsed, model) else None

    def nodepools(self) -> list[NodePool]:
        return self._models(NodePool)

    def nodeclasses(self) -> list[EC2NodeClass]:
        return self._models(EC2NodeClass)

    def nodeclaims(self) -> list[NodeClaim]:
        return self._models(NodeClaim)

    def nodepool(self, name: str) -> NodePool | None:
        return self._model(NodePool, name)

    def nodeclass(self, name: str) -> EC2NodeClass | None:
        return self._model(EC2NodeClass, name)

    def nodeclaim(self, name: str) -> NodeClaim | None:
        return self._model(NodeClaim, name)

    def create_nodeclaim(self, nodeclaim: NodeClaim) -> NodeClaim:
        created = self._parse(NodeClaim, self.rest.create(KINDS["NodeClaim"], nodeclaim.to_dict()))
        if created is None:
            raise RejectedError("the API server returned a NodeClaim that does not validate")
        return created

    def write_status(self, obj: KarpenterObject) -> KarpenterObject:
        stored = self._parse(type(obj), self.rest.replace(KINDS[type(obj).__name__], obj.to_dict(), "status"))
        if stored is None:
            raise RejectedError(f"the API server returned a {type(obj).__name__} that does not validate")
        return stored

    # --- Core kinds ------------------------------------------------------------------------------
    def get(self, ref: ObjectRef) -> KubeObject | None:
        try:
            return self.rest.get(kind_of(ref.kind), ref.name, ref.namespace)
        except NotFoundError:
            return None

    def _list(self, kind: str, field_selector: str = "") -> list[KubeObject]:
        """A list narrowed by a field selector when the server indexes the field (a 400 says it does not: then
        the caller's own filter, which always runs, does all the work)."""
        if field_selector:
            try:
                return self.rest.list(KINDS[kind], field_selector=field_selector)[0]
            except RejectedError as error:
                logger.info("field selector %r refused (%s); filtering %s client-side", field_selector, error, kind)
        return self.rest.list(KINDS[kind])[0]

    def pending_pods(self) -> list[KubeObject]:
        return [p for p in self._list("Pod", "status.phase=Pending,spec.nodeName=") if is_pending_unschedulable(p)]

    def pods(self, node_name: str | None = None) -> list[KubeObject]:
        if node_name is not None:
            return [p for p in self._list("Pod", f"spec.nodeName={node_name}") if Pod(p).node_name == node_name]
        selector = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
        return [p for p in self._list("Pod", selector) if Pod(p).node_name and not is_terminal(p)]

    def nodes(self) -> list[KubeObject]:
        return self._list("Node")

    def list_raw(self, kind: str) -> list[KubeObject]:
        return self.rest.list(kind_of(kind))[0]

    def daemonsets(self) -> list[KubeObject]:
        return self._list("DaemonSet")

    def pod_disruption_budgets(self) -> list[KubeObject]:
        return self._list("PodDisruptionBudget")

    def persistent_volume_claims(self) -> list[KubeObject]:
        return self._list("PersistentVolumeClaim")

    def persistent_volumes(self) -> list[KubeObject]:
        return self._list("PersistentVolume")

    def volume_attachments(self) -> list[KubeObject]:
        return self._list("VolumeAttachment")

    # --- Writes ----------------------------------------------------------------------------------
    def _read_modify_write(self, ref: ObjectRef, change: Callable[[KubeObject], KubeObject | None]) -> None:
        """Re-read, compute a merge patch (None: nothing to do) and send it guarded by the resourceVersion read;
        a 409 starts over with a fresh read."""
        kind = kind_of(ref.kind)
        for _ in range(CONFLICT_ATTEMPTS):
            current = self.rest.get(kind, ref.name, ref.namespace)
            patch = change(current)
            if patch is None:
                return
            metadata = {**patch.get("metadata", {}), "resourceVersion": current["metadata"]["resourceVersion"]}
            try:
                self.rest.patch(kind, ref.name, {**patch, "metadata": metadata}, ref.namespace)
                return
            except ConflictError:
                logger.debug("conflict on %s/%s; re-reading", ref.kind, ref.name)
        raise ConflictError(f"{ref.kind}/{ref.name} kept changing through {CONFLICT_ATTEMPTS} attempts")

    def patch_metadata(
        self,
        ref: ObjectRef,
        *,
        labels: Mapping[str, str | None] | None = None,
        annotations: Mapping[str, str | None] | None = None,
        add_finalizers: Sequence[str] = (),
        remove_finalizers: Sequence[str] = (),
        owner_references: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        maps: dict[str, Any] = {k: dict(v) for k, v in (("labels", labels), ("annotations", annotations)) if v}
        if not add_finalizers and not remove_finalizers and owner_references is None:
            if maps:  # a merge patch of maps cannot conflict: no read needed
                self.rest.patch(kind_of(ref.kind), ref.name, {"metadata": maps}, ref.namespace)
            return

        def change(current: KubeObject) -> KubeObject | None:
            view = Body(current)
            before = list(view.finalizers)
            after = [f for f in before if f not in remove_finalizers]
            after += [f for f in add_finalizers if f not in after]
            patch: dict[str, Any] = dict(maps)
            if after != before:
                patch["finalizers"] = after
            if owner_references is not None and list(owner_references) != list(view.owner_references):
                patch["ownerReferences"] = [dict(o) for o in owner_references]
            return {"metadata": patch} if patch else None

        self._read_modify_write(ref, change)

    def set_node_taints(self, node_name: str, taints: Sequence[Mapping[str, Any]]) -> None:
        wanted = [dict(t) for t in taints]

        def change(node: KubeObject) -> KubeObject | None:
            if list(Node(node).taints) == wanted:
                return None
            return {"spec": {"taints": wanted or None}}

        self._read_modify_write(ObjectRef("Node", node_name), change)

    def cordon(self, node: KubeObject, taint: Mapping[str, Any]) -> KubeObject | None:
        name = node["metadata"]["name"]
        current = node
        for _ in range(CONFLICT_ATTEMPTS):
            view = Node(current)
            taints = [dict(t) for t in view.taints]
            tainted = view.has_taint(taint["key"], taint["effect"])
            if tainted and view.unschedulable:
                return current
            patch: dict[str, Any] = {
                "spec": {"unschedulable": True, "taints": taints if tainted else [*taints, dict(taint)]}
            }
            version = view.resource_version
            if version:  # the taint list is replaced whole: only over the version it was computed from
                patch["metadata"] = {"resourceVersion": version}
            try:
                return self.rest.patch(KINDS["Node"], name, patch)
            except NotFoundError:
                return None
            except ConflictError:
                logger.debug("conflict cordoning node %s; re-reading", name)
            try:
                current = self.rest.get(KINDS["Node"], name)
            except NotFoundError:
                return None
        raise ConflictError(f"Node/{name} kept changing through {CONFLICT_ATTEMPTS} attempts")

    def set_node_unschedulable(self, node_name: str, unschedulable: bool) -> None:
        self.rest.patch(KINDS["Node"], node_name, {"spec": {"unschedulable": True if unschedulable else None}})

    def evict(self, namespace: str, name: str) -> EvictionOutcome:
        eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}
        path = KINDS["Pod"].path(namespace, name, "eviction")
        accept = lambda status, body: status == 404 or _is_budget_refusal(status, body)  # noqa: E731
        status, body = self.rest.exchange("POST", path, body=eviction, accept=accept)
        if status == 404:
            return EvictionOutcome.GONE
        if status >= 400:
            logger.info("eviction of %s/%s blocked: %s", namespace, name, body.get("message"))
            return EvictionOutcome.BLOCKED
        return EvictionOutcome.EVICTED

    def delete(self, ref: ObjectRef, *, grace_period_seconds: int | None = None) -> bool:
        options: dict[str, Any] = {"propagationPolicy": "Background"}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if ref.uid:
            options["preconditions"] = {"uid": ref.uid}  # never delete a namesake created since we looked
        try:
            self.rest.delete(kind_of(ref.kind), ref.name, ref.namespace, options, answer=False)
        except NotFoundError:
            return False
        except ConflictError:  # the uid precondition failed: ours is gone, a namesake stands in its place
            return False
        return True

    def record_event(self, event: Event) -> None:
        self.record_events([event])

    def record_events(self, events: Sequence[Event]) -> None:
        """Each event once per dedupe window; the rest created together (pipelined where the transport allows),
        their answers unread."""
        by_namespace: dict[str, list[tuple[Event, KubeObject]]] = {}
        for event in events:
            if not self._first_within_window(event):
                continue
            namespace, body = self._event_body(event)
            by_namespace.setdefault(namespace, []).append((event, body))
        for namespace, found in by_namespace.items():
            failures = self.rest.create_all(KINDS["Event"], [body for _, body in found], namespace)
            for (event, _), error in zip(found, failures, strict=True):
                if error is not None:
                    regarding = event.regarding
                    logger.warning(
                        "could not record event %s on %s/%s: %s", event.reason, regarding.kind, regarding.name, error
                    )

    def _first_within_window(self, event: Event) -> bool:
        regarding = event.regarding
        key = (regarding.kind, regarding.namespace or "", regarding.name, event.reason, event.message)
        with self._events_lock:  # callers record events from several threads
            now = self.clock()
            if now - self._recent_events.get(key, float("-inf")) < EVENT_DEDUPE_SECONDS:
                return False
            if now - self._events_pruned_at >= EVENT_DEDUPE_SECONDS / 4:  # prune now and then, not per event
                self._recent_events = {k: t for k, t in self._recent_events.items() if now - t < EVENT_DEDUPE_SECONDS}
                self._events_pruned_at = now
            self._recent_events[key] = now
            return True

    def _event_body(self, event: Event) -> tuple[str, KubeObject]:
        regarding = event.regarding
        api_version = KINDS[regarding.kind].api_version if regarding.kind in KINDS else "v1"
        target = {"apiVersion": api_version, "kind": regarding.kind, "name": regarding.name}
        if regarding.namespace:
            target["namespace"] = regarding.namespace
        if regarding.uid:
            target["uid"] = regarding.uid
        namespace = regarding.namespace or "default"
        return (
            namespace,
            {
                "apiVersion": "events.k8s.io/v1",
                "kind": "Event",
                "metadata": {"generateName": f"{regarding.name}.", "namespace": namespace},
                "eventTime": self.now().astimezone(UTC).isoformat(timespec="microseconds")[:-6] + "Z",  # a MicroTime
                "reportingController": REPORTING_CONTROLLER,
                "reportingInstance": self.instance,
                "action": event.action or event.reason,
                "reason": event.reason,
                "note": event.message[:1024],
                "type": event.type,
                "regarding": target,
            },
        )
