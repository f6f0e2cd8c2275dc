"""The Cluster port: every read and write the controllers make on Kubernetes.

Karpenter's own kinds travel as our v1 models; core kinds (Pod, Node, DaemonSet, PodDisruptionBudget,
PersistentVolume(Claim), VolumeAttachment) travel as their JSON dicts exactly as the API server
serves them (camelCase), so that the pure core can read any field without a model of all of
Kubernetes. Implementations: the kubernetes-client adapter (EKS, kubeconfig, in-cluster).

Every method either succeeds or raises a :class:`ClusterError` subtype after its own retries:
429 / 5xx / timeouts are retried with backoff, then :class:`TransientClusterError`; optimistic
concurrency conflicts (409) are retried by re-reading, then :class:`ConflictError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal, Protocol, TypeVar

from autoscaler.apis.autoscaling import CapacityBuffer
from autoscaler.apis.objectref import ObjectRef as ObjectRef  # noqa: PLC0414 (an explicit re-export, for mypy)
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.apis.v1alpha1 import NodeOverlay

KubeObject = dict[str, Any]
KarpenterObject = TypeVar("KarpenterObject", NodePool, NodeClaim, EC2NodeClass, CapacityBuffer, NodeOverlay)


class ClusterError(Exception):
    """Base of the errors the Cluster port raises."""


class NotFoundError(ClusterError):
    """The object does not exist (404)."""


class ConflictError(ClusterError):
    """The object kept changing under us (409) through every retry."""


class TransientClusterError(ClusterError):
    """Throttling (429), server errors (5xx) or timeouts that outlasted the retries: try again later."""


class ForbiddenError(ClusterError):
    """RBAC denies the request (403), or the credentials are refused (401): a deployment problem, not a
    transient one."""


class RejectedError(ClusterError):
    """The API server refused the request as malformed or invalid (400, 415, 422): retrying cannot help."""


class EvictionOutcome(Enum):
    EVICTED = "Evicted"  # the API server accepted the eviction (201)
    BLOCKED = "Blocked"  # a PodDisruptionBudget forbids it now (429): try again on a later step
    GONE = "Gone"  # the pod no longer exists (404)


@dataclass(frozen=True)
class Event:
    """A Kubernetes Event (events.k8s.io/v1) about an object, with Karpenter's reasons
    (``Nominated``, ``FailedScheduling``, ``SpotInterrupted``, ``DisruptionBlocked``, ...)."""

    regarding: ObjectRef
    reason: str
    message: str
    type: Literal["Normal", "Warning"] = "Normal"
    action: str = ""


class Cluster(Protocol):
    # --- Karpenter's kinds, as models ------------------------------------------------------------
    def nodepools(self) -> list[NodePool]:
        """Every NodePool (objects that fail validation are skipped and logged, never raised)."""
        ...

    def nodeclasses(self) -> list[EC2NodeClass]:
        """Every EC2NodeClass (invalid ones skipped and logged)."""
        ...

    def nodeclaims(self) -> list[NodeClaim]:
        """Every NodeClaim, including those being deleted (``metadata.deletionTimestamp`` set)."""
        ...

    def nodepool(self, name: str) -> NodePool | None:
        """One NodePool by name; None when it does not exist or is invalid (logged)."""
        ...

    def nodeclass(self, name: str) -> EC2NodeClass | None:
        """One EC2NodeClass by name; None when it does not exist or is invalid (logged)."""
        ...

    def nodeclaim(self, name: str) -> NodeClaim | None:
        """One NodeClaim by name; None when it does not exist or is invalid (logged)."""
        ...

    def create_nodeclaim(self, nodeclaim: NodeClaim) -> NodeClaim:
        """Create it (``metadata.generateName`` is honoured) and return it as stored (uid, resourceVersion)."""
        ...

    def write_status(self, obj: KarpenterObject) -> KarpenterObject:
        """Replace ``obj``'s status through the status subresource and return the object as stored.
        Uses ``obj.metadata.resourceVersion`` for optimistic concurrency; raises ConflictError on 409."""
        ...

    # --- Core kinds, as JSON dicts ---------------------------------------------------------------
    def get(self, ref: ObjectRef) -> KubeObject | None:
        """One object of any kind the port knows (Pod, Node, DaemonSet, ...) as JSON; None when it does not exist."""
        ...

    def pending_pods(self) -> list[KubeObject]:
        """Pods the scheduler gave up on: phase Pending, unbound, condition PodScheduled=False with reason
        Unschedulable, not owned by a DaemonSet, not static (mirror) pods, not being deleted."""
        ...

    def pods(self, node_name: str | None = None) -> list[KubeObject]:
        """Pods bound to ``node_name``, or every bound, non-terminal pod when it is None."""
        ...

    def nodes(self) -> list[KubeObject]: ...

    def list_raw(self, kind: str) -> list[KubeObject]:
        """Every object of ``kind`` as JSON, whether or not it validates against our models. For decisions that
        must not miss an object because we cannot parse it (garbage collection: an instance a NodeClaim we
        reject still refers to is not leaked)."""
        ...

    def daemonsets(self) -> list[KubeObject]: ...

    def pod_disruption_budgets(self) -> list[KubeObject]: ...

    def persistent_volume_claims(self) -> list[KubeObject]: ...

    def persistent_volumes(self) -> list[KubeObject]: ...

    def volume_attachments(self) -> list[KubeObject]: ...

    # --- Writes on any kind ----------------------------------------------------------------------
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
        """Merge labels and annotations (a None value removes the key), add or remove finalizers, and set
        owner references. Finalizer changes read-modify-write with resourceVersion and retry on 409."""
        ...

    def set_node_taints(self, node_name: str, taints: Sequence[Mapping[str, Any]]) -> None:
        """Replace the node's ``spec.taints`` (read-modify-write with resourceVersion, retried on 409)."""
        ...

    def set_node_unschedulable(self, node_name: str, unschedulable: bool) -> None:
        """Cordon or uncordon the node."""
        ...

    def cordon(self, node: KubeObject, taint: Mapping[str, Any]) -> KubeObject | None:
        """Make the node unschedulable and add ``taint`` (unless a taint with its key and effect is there) in
        one write. ``node`` is the Node as last read: the patch is built on its taints and guarded by its
        resourceVersion, so an unchanged node costs one request; on 409 the adapter re-reads and retries.
        Returns the Node as stored, or None when it no longer exists."""
        ...

    def evict(self, namespace: str, name: str) -> EvictionOutcome:
        """Evict a pod through the policy/v1 Eviction subresource; a PDB refusal is BLOCKED, not an error."""
        ...

    def delete(self, ref: ObjectRef, *, grace_period_seconds: int | None = None) -> bool:
        """Delete the object; False when it was already gone. Deleting sets deletionTimestamp first when
        finalizers remain."""
        ...

    def record_event(self, event: Event) -> None:
        """Publish an event. Failures are logged and swallowed: an event is never worth failing a step."""
        ...

    def record_events(self, events: Sequence[Event]) -> None:
        """Publish several events together (one round trip where the API allows), as ``record_event`` does each."""
        ...
