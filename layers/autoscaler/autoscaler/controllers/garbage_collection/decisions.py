"""What garbage collection removes, decided from one reading of the cloud and the cluster. Pure.

Every rule leans towards keeping: an object we cannot read still counts as existing, a time we cannot read
means "too young", and anything that still refers to a resource keeps it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from autoscaler.apis.v1.conditions import get_condition
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodeclaim import LAUNCHED, NodeClaim
from autoscaler.apis.validation import InvalidObjectError, parse
from autoscaler.clock import parse_time
from autoscaler.cloudprovider.owned import OwnedInstanceProfile, OwnedLaunchTemplate
from autoscaler.kube.objects import Body, Node

# Karpenter's: an instance this young may belong to a launch whose NodeClaim is being recorded right now.
GRACE = timedelta(seconds=30)

KubeObject = Mapping[str, Any]
Item = TypeVar("Item")


@dataclass(frozen=True)
class Decision(Generic[Item]):
    """Something to remove, and why (the words go into the log line and the event)."""

    item: Item
    reason: str


def _age(now: datetime, since: datetime | None) -> timedelta | None:
    return None if since is None else now - since


def _older_than(now: datetime, since: datetime | None, grace: timedelta) -> bool:
    age = _age(now, since)
    return age is not None and age > grace


def _parsed(objects: Iterable[KubeObject], api_version: str, kind: str) -> list[Any]:
    models = []
    for obj in objects:
        try:
            models.append(parse({"apiVersion": api_version, "kind": kind, **obj}))
        except InvalidObjectError:
            continue  # still counted by name and references: see ClusterView
    return models


@dataclass(frozen=True)
class ClusterView:
    """What the cluster holds, read once per pass. Names and references come from every object, including
    those our models reject; only readable objects can be acted on."""

    nodeclaims: tuple[NodeClaim, ...] = ()
    nodeclaim_names: frozenset[str] = frozenset()
    provider_ids: frozenset[str] = frozenset()  # of every NodeClaim, readable or not
    launching: frozenset[str] = frozenset()  # NodeClaims with no providerID yet: their launch is being recorded
    nodeclaim_classes: frozenset[str] = frozenset()  # nodeClassRef names of every NodeClaim
    nodeclass_names: frozenset[str] = frozenset()  # every EC2NodeClass, readable or not
    nodeclasses: Mapping[str, EC2NodeClass] = field(default_factory=dict)  # the readable ones
    nodes: Mapping[str, KubeObject] = field(default_factory=dict)  # by name

    @classmethod
    def read(
        cls, nodeclaims: Sequence[KubeObject], nodeclasses: Sequence[KubeObject], nodes: Sequence[KubeObject]
    ) -> ClusterView:
        claims = [Body(c) for c in nodeclaims]
        return cls(
            nodeclaims=tuple(_parsed(nodeclaims, "karpenter.sh/v1", "NodeClaim")),
            nodeclaim_names=frozenset(c.name for c in claims if c.name),
            provider_ids=frozenset(pid for c in claims if (pid := str(c.status.get("providerID") or ""))),
            launching=frozenset(c.name for c in claims if c.name and not c.status.get("providerID")),
            nodeclaim_classes=frozenset(
                name for c in claims if (name := str((c.spec.get("nodeClassRef") or {}).get("name")))
            ),
            nodeclass_names=frozenset(name for c in nodeclasses if (name := Body(c).name)),
            nodeclasses={c.name: c for c in _parsed(nodeclasses, "karpenter.k8s.aws/v1", "EC2NodeClass")},
            nodes={Node(n).name: n for n in nodes},
        )

    def node_of(self, provider_id: str, node_name: str | None = None) -> KubeObject | None:
        """The Node registered for an instance: by ``spec.providerID``, else by name."""
        for node in self.nodes.values():
            if Node(node).provider_id == provider_id:
                return node
        return self.nodes.get(node_name) if node_name else None


def leaked_instances(
    instances: Sequence[NodeClaim], view: ClusterView, now: datetime, grace: timedelta = GRACE
) -> list[Decision[NodeClaim]]:
    """Instances (as the cloud provider lists them) that nothing in the cluster accounts for: not shutting down,
    no NodeClaim's providerID names them, their ``karpenter.sh/nodeclaim`` tag (set at launch) names no NodeClaim
    whose launch is still being recorded (that one the provisioner adopts), launched more than ``grace`` ago. An
    instance tagged for a NodeClaim that already records another one is a second launch for it (an invocation cut
    off after CreateFleet, its retry launching again): it is leaked like any other."""
    leaked = []
    for instance in instances:
        provider_id = (instance.status.provider_id if instance.status else None) or ""
        if not provider_id or instance.metadata.deletion_timestamp or provider_id in view.provider_ids:
            continue
        if instance.name and instance.name in view.launching:
            continue
        launched = instance.created_at
        if not _older_than(now, launched, grace):
            continue
        age = int((now - launched).total_seconds()) if launched else 0
        leaked.append(Decision(instance, f"launched {age}s ago and no NodeClaim refers to it"))
    return leaked


def launched_at(nodeclaim: NodeClaim) -> datetime | None:
    """When the NodeClaim's instance was launched: its Launched condition's transition, else its creation."""
    launched = get_condition(nodeclaim.status.conditions if nodeclaim.status else None, LAUNCHED)
    if launched is not None and launched.status == "True":
        return parse_time(launched.last_transition_time)
    return nodeclaim.created_at


def nodeclaims_missing_instances(
    view: ClusterView, live_provider_ids: frozenset[str], now: datetime, grace: timedelta = GRACE
) -> list[NodeClaim]:
    """Candidates only (the caller asks the cloud about each): NodeClaims not being deleted whose providerID is
    set and absent from the cloud's list of live instances, launched more than ``grace`` ago."""
    candidates = []
    for nodeclaim in view.nodeclaims:
        provider_id = (nodeclaim.status.provider_id if nodeclaim.status else None) or ""
        if not provider_id or nodeclaim.metadata.deletion_timestamp or provider_id in live_provider_ids:
            continue
        if _older_than(now, launched_at(nodeclaim), grace):
            candidates.append(nodeclaim)
    return candidates


def ready_node_keeps(nodeclaim: NodeClaim, view: ClusterView) -> KubeObject | None:
    """The NodeClaim's Node when it is Ready: its kubelet still reports, so the instance is not gone whatever the
    cloud says (as Kubernetes' node lifecycle controller reasons)."""
    status = nodeclaim.status
    node = view.node_of((status.provider_id if status else None) or "", status.node_name if status else None)
    return node if node is not None and Node(node).ready else None


def stale_launch_templates(
    templates: Sequence[OwnedLaunchTemplate], view: ClusterView, now: datetime, grace: timedelta = GRACE
) -> list[Decision[OwnedLaunchTemplate]]:
    """Templates no current EC2NodeClass / AMI combination uses: their class is gone or being deleted, or their
    AMI is no longer among the class's resolved AMIs. Kept: templates younger than ``grace``, those of a class we
    cannot read, and those whose AMI we could not read while their class stands."""
    stale = []
    for template in templates:
        if not _older_than(now, template.created_at, grace):
            continue
        if template.nodeclass not in view.nodeclass_names:
            stale.append(Decision(template, f"its EC2NodeClass {template.nodeclass} is gone"))
            continue
        nodeclass = view.nodeclasses.get(template.nodeclass)
        if nodeclass is None:
            continue
        if nodeclass.metadata.deletion_timestamp:
            stale.append(Decision(template, f"its EC2NodeClass {template.nodeclass} is being deleted"))
            continue
        if template.image_id is None:
            continue
        current = {a.id for a in (nodeclass.status.amis or [])} if nodeclass.status else set()
        if template.image_id not in current:
            reason = f"AMI {template.image_id} is no longer among EC2NodeClass {template.nodeclass}'s AMIs"
            stale.append(Decision(template, reason))
    return stale


def orphaned_instance_profiles(
    profiles: Sequence[OwnedInstanceProfile],
    view: ClusterView,
    live_instance_classes: frozenset[str],
    now: datetime,
    grace: timedelta = GRACE,
) -> list[Decision[OwnedInstanceProfile]]:
    """Profiles whose EC2NodeClass is gone. Kept while anything may still use one: a NodeClaim of that class, a
    live instance launched from it (removing its profile would cut its credentials), or a class whose status
    names the profile; and for ``grace`` after its creation."""
    in_use = {c.status.instance_profile for c in view.nodeclasses.values() if c.status and c.status.instance_profile}
    orphaned = []
    for profile in profiles:
        if profile.nodeclass in view.nodeclass_names or profile.name in in_use:
            continue
        if profile.nodeclass in view.nodeclaim_classes or profile.nodeclass in live_instance_classes:
            continue
        if _older_than(now, profile.created_at, grace):
            orphaned.append(Decision(profile, f"its EC2NodeClass {profile.nodeclass} is gone"))
    return orphaned
