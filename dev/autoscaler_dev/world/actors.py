"""Everyone in the embedded world who is not the autoscaler: EC2, the kubelets, the kube-scheduler, the workload
controllers and Kubernetes' garbage collectors, each as small as the autoscaler's behaviour needs.

- **EC2**: an instance the autoscaler launched boots in ``boot_seconds`` of virtual time; it gets the security
  groups of its launch template (moto's CreateFleet drops them); state changes to shutting-down or terminated are
  sent to the default event bus as EC2 sends them, and spot interruptions are scripted (a warning, then the
  instance reclaimed two minutes later).
- **kubelet**: a booted instance whose NodeClaim has launched registers its Node (``kubelet.join``); a Node whose
  instance is gone turns NotReady, its pods go, and the Node is deleted (the cloud node lifecycle controller).
- **kube-scheduler**: pending pods are bound to Ready nodes where the scheduling core's predicates place them
  (taints, affinity, topology spread, resources: the same simulation the provisioner runs, with no NodePool);
  pods it cannot place are marked ``PodScheduled=False, Unschedulable``, which is what the provisioner acts on.
- **controller manager** (``controllers``): Deployments, ReplicaSets, StatefulSets, DaemonSets and Jobs keep their
  pods, claims are bound, budgets get their status; the scenario's workloads are API objects like kubectl's.

Each actor acts as the identity it has in a cluster (``kube_access``), checked by the world's gate without HTTP
(``ActingAs``): the kubelets as ``system:node:<name>`` (the Node authorizer), the scheduler as
``system:kube-scheduler``, Kubernetes' garbage collectors and the cloud node lifecycle controller with their
service accounts. A refused write is counted and skipped, as the component would log it and retry. The world's
own bookkeeping (what has booted, which claims are nominated where, what the scenario watches) reads directly.
"""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from moto.backends import get_backend

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import timestamp
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodeclaim import INITIALIZED, NodeClaim
from autoscaler.kube.objects import Body, Node, Pod
from autoscaler_dev.kube_emulator import authentication as authn
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.kube_emulator.enforcement import ActingAs, forbidden_skipped
from autoscaler_dev.world import ec2_reservations, kubelet
from autoscaler_dev.world.aws_world import ACCOUNT, CLUSTER, REGION, AWSWorld
from autoscaler_dev.world.controllers import ControllerManager
from autoscaler_dev.world.embedded import EmbeddedCluster
from autoscaler_dev.world.kube_access import CLOUD_NODE_LIFECYCLE, GARBAGE_COLLECTOR, POD_GC, SCHEDULER
from autoscaler_dev.world.kube_scheduler import KubeScheduler, pending
from autoscaler_dev.world.timeline import Timeline
from autoscaler_dev.world.workloads import Workload

NOTICE_SECONDS = 120  # a spot or interruptible reservation warning comes this long before EC2 reclaims
GONE = ("shutting-down", "terminated")
KubeObject = dict[str, Any]


@dataclass
class Instance:
    id: str
    first_seen: float
    state: str


@dataclass
class Actors:
    aws: AWSWorld
    kube: KubeEmulator
    now: Callable[[], datetime]
    elapsed: Callable[[], float]  # virtual seconds since the scenario started
    timeline: Timeline
    boot_seconds: float = 60.0
    seed: int = 0
    workloads: dict[str, Workload] = field(default_factory=dict)
    instances: dict[str, Instance] = field(default_factory=dict)
    reclaim_at: dict[str, float] = field(default_factory=dict)  # spot instances EC2 takes back, and when
    interrupted: list[str] = field(default_factory=list)
    warned_at: dict[str, float] = field(default_factory=dict)  # interrupted instance with a Node -> warning time
    cordoned_at: dict[str, float] = field(default_factory=dict)  # instance -> when its Node was first cordoned
    malformed_sent: int = 0  # bad messages the scenario put on the stack's queues and bus
    satisfied: set[str] = field(default_factory=set)  # EC2NodeClass uids the world was shaped for
    reported: dict[str, str] = field(default_factory=dict)  # node -> the condition a scenario made it report
    healthy_then: set[str] = field(default_factory=set)  # Ready nodes left healthy by those actions

    def __post_init__(self) -> None:
        self.kube.store.admission.append(self._note_cordon)
        self.controllers = ControllerManager(self.kube, self.now)
        self.scheduler = KubeScheduler(self.kube, ActingAs.of(self.kube, SCHEDULER), self.kubelet, self.now)
        self.pod_gc = ActingAs.of(self.kube, POD_GC)
        self.garbage_collector = ActingAs.of(self.kube, GARBAGE_COLLECTOR)
        self.node_lifecycle = ActingAs.of(self.kube, CLOUD_NODE_LIFECYCLE)

    def kubelet(self, node: str) -> ActingAs:
        """The kubelet of ``node``, with that node's credentials."""
        return ActingAs.of(self.kube, authn.node(node))

    def _note_cordon(self, operation: str, resource: Any, old: KubeObject | None, new: KubeObject) -> KubeObject:
        """An admission step that only watches: the moment a Node becomes unschedulable (cordoned, or tainted
        disrupted), to the virtual second, whichever step of the run wrote it."""
        if resource.kind == "Node" and _cordoned(new) and not (old and _cordoned(old)):
            instance_id = Node(new).provider_id.rsplit("/", 1)[-1]
            self.cordoned_at.setdefault(instance_id, self.elapsed())
        return new

    def max_cordon_seconds(self) -> float | None:
        """The longest time from a spot interruption warning to its Node cordoned (infinite when one never was);
        None when no interrupted instance had a Node."""
        if not self.warned_at:
            return None
        waits = [self.cordoned_at.get(i, float("inf")) - t for i, t in self.warned_at.items()]
        return round(max(waits), 1)

    # --- the scenario's hands -----------------------------------------------------------------------
    def add_workload(self, manifest: Mapping[str, Any]) -> Workload:
        """Create the workload in the API; its controller creates the pods."""
        workload = Workload.create(self.kube, manifest)
        self.workloads[workload.name] = workload
        return workload

    def scale(self, name: str, replicas: int) -> None:
        self.workloads[name].scale(self.kube, replicas)
        self.timeline.note(self.elapsed(), "scaled", name, f"to {replicas} replicas")

    def interrupt_spot(self, fraction: float) -> list[str]:
        """Spot interruption warnings for ``fraction`` of the running spot instances (rounded up, seeded)."""
        spot = sorted(i.id for i in self._backend_instances() if i.lifecycle == "spot" and i._state.name == "running")
        count = min(len(spot), max(1, round(fraction * len(spot)))) if spot else 0
        chosen = random.Random(self.seed).sample(spot, count)
        self._warn(chosen, "EC2 Spot Instance Interruption Warning", "spot interruption warning")
        return chosen

    def interrupt_reservations(self, reservation_ids: frozenset[str]) -> list[str]:
        """The owners of interruptible reservations reclaim them: EC2 warns for each running instance in one of
        ``reservation_ids`` that is interruptible, and terminates it two minutes later."""
        held = ec2_reservations.store(self._backend())
        interruptible = {rid for rid in reservation_ids if rid in held and held[rid].interruptible}
        for rid in interruptible:  # reclaimed whole: no room is left for a relaunch
            held[rid].total = 0
        chosen = sorted(
            i.id
            for i in self._backend_instances()
            if getattr(i, "capacity_reservation_id", None) in interruptible and i._state.name == "running"
        )
        self._warn(chosen, "EC2 Capacity Reservation Instance Interruption Warning", "reservation interruption")
        return chosen

    def _warn(self, instance_ids: Sequence[str], detail_type: str, note: str) -> None:
        """EC2's two-minute warning for each instance, which it then takes back."""
        with_nodes = {Node(n).provider_id.rsplit("/", 1)[-1] for n in self.kube.list("v1", "Node")}
        for instance_id in instance_ids:
            if instance_id in with_nodes:
                self.warned_at[instance_id] = self.elapsed()
            self._ec2_event(detail_type, {"instance-id": instance_id, "instance-action": "terminate"}, instance_id)
            self.reclaim_at[instance_id] = self.elapsed() + NOTICE_SECONDS
            self.interrupted.append(instance_id)
            self.timeline.note(self.elapsed(), "interrupted", instance_id, note)

    def leak_instance(self, instance_type: str, nodepool: str, nodeclass: str) -> str:
        """An instance with this cluster's launch tags and no NodeClaim: what a crash between launch and record
        leaves behind."""
        ec2 = self.aws.client("ec2")
        image = next(iter(self.aws.images.values()))
        tags = {
            f"{wk.TAG_CLUSTER_PREFIX}{CLUSTER}": "owned",
            wk.TAG_CLUSTER_NAME: CLUSTER,
            wk.TAG_NODEPOOL: nodepool,
            wk.TAG_NODECLASS: nodeclass,
        }
        reservation = ec2.run_instances(
            ImageId=image,
            InstanceType=instance_type,
            MinCount=1,
            MaxCount=1,
            SubnetId=next(iter(self.aws.subnets.values())),
            TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}],
        )
        instance_id = str(reservation["Instances"][0]["InstanceId"])
        self.timeline.note(self.elapsed(), "leaked", instance_id, f"{instance_type} launched with no NodeClaim")
        return instance_id

    # --- one step of everyone -----------------------------------------------------------------------
    def step(self) -> None:
        self.kube.events.expire()  # the API server's event TTL
        self._satisfy_nodeclasses()
        self._ec2()
        claims = self._nodeclaims()
        self._kubelets(claims)
        self.controllers.step()
        self.scheduler.step()

    def busy(self) -> bool:
        """Whether something is on its way (booting instances, pending pods, spot reclaims, NodeClaims not yet
        initialized): then time must move in small steps."""
        if self.reclaim_at:
            return True
        if any(pending(p) for p in self.kube.list("v1", "Pod")):
            return True
        for claim in self.kube.list(wk.API_VERSION, "NodeClaim"):
            view = Body(claim)
            if not view.condition_is(INITIALIZED) or view.deleting:
                return True
        return any(Node(n).deleting for n in self.kube.list("v1", "Node"))

    def _satisfy_nodeclasses(self) -> None:
        """Give the world what each new EC2NodeClass selects (``EmbeddedCluster.satisfy``), be it a scenario's or
        one applied with kubectl, as an account set up for it would have."""
        for raw in self.kube.list("karpenter.k8s.aws/v1", "EC2NodeClass"):
            uid = str(raw["metadata"]["uid"])
            if uid in self.satisfied:
                continue
            self.satisfied.add(uid)
            with contextlib.suppress(ValueError):  # one admission let through but our model refuses: left unresolved
                EmbeddedCluster(self.aws, self.kube).satisfy(EC2NodeClass.model_validate(raw))

    # --- EC2 ---------------------------------------------------------------------------------------
    def _backend(self) -> Any:
        return get_backend("ec2")[ACCOUNT][REGION]

    def _backend_instances(self) -> list[Any]:
        return [i for r in self._backend().reservations.values() for i in r.instances]

    def _ec2(self) -> None:
        now = self.elapsed()
        for ended in ec2_reservations.expire(self._backend(), self.now()):
            self.timeline.note(now, "reservation ended", ended.id, "its instances run on-demand now")
        for instance_id, when in list(self.reclaim_at.items()):
            if now >= when:
                del self.reclaim_at[instance_id]
                known = self.instances.get(instance_id)
                if known is None or known.state not in GONE:  # the autoscaler may have terminated it already
                    self.aws.client("ec2").terminate_instances(InstanceIds=[instance_id])
                    self.timeline.note(now, "reclaimed", instance_id, "EC2 took the instance back")
        for instance in self._backend_instances():
            known = self.instances.get(instance.id)
            state = instance._state.name
            if known is None:
                self.instances[instance.id] = Instance(instance.id, now, state)
                self._apply_template_groups(instance)
                continue
            if state != known.state:
                known.state = state
                if state in GONE:
                    self._ec2_event(
                        "EC2 Instance State-change Notification",
                        {"instance-id": instance.id, "state": state},
                        instance.id,
                    )

    def _apply_template_groups(self, instance: Any) -> None:
        """EC2 gives a fleet's instance the security groups of its launch template; moto's CreateFleet gives the
        VPC's default group instead (which drift would rightly report)."""
        backend = self._backend()
        fleet_id = getattr(instance, "_fleet_id", None) or getattr(instance, "_spot_fleet_id", None)
        fleet = backend.fleets.get(fleet_id or "")
        if fleet is None:
            return
        for config in fleet.launch_template_configs:
            spec = config.get("LaunchTemplateSpecification") or {}
            template = (
                backend.launch_templates.get(spec["LaunchTemplateId"])
                if spec.get("LaunchTemplateId")
                else backend.get_launch_template_by_name(spec.get("LaunchTemplateName", ""))
            )
            data = template.latest_version().data if template is not None else {}
            groups = [g for nic in data.get("NetworkInterfaces") or () for g in nic.get("Groups") or ()]
            groups += list(data.get("SecurityGroupIds") or ())
            if groups:
                instance.security_groups = [backend.get_security_group_from_id(g) for g in dict.fromkeys(groups)]
                return

    def _ec2_event(self, detail_type: str, detail: Mapping[str, Any], instance_id: str) -> None:
        arn = f"arn:aws:ec2:{REGION}:{ACCOUNT}:instance/{instance_id}"
        entry = {
            "Source": "aws.ec2",
            "DetailType": detail_type,
            "Detail": json.dumps(detail),
            "Resources": [arn],
            "Time": self.now(),
        }
        self.aws.client("events").put_events(Entries=[entry])

    # --- kubelets and Kubernetes' garbage collection -------------------------------------------------------
    def _nodeclaims(self) -> list[NodeClaim]:
        claims = []
        for raw in self.kube.list(wk.API_VERSION, "NodeClaim"):
            try:
                claims.append(NodeClaim.model_validate(raw))
            except ValueError:
                continue
        return claims

    def _kubelets(self, claims: list[NodeClaim]) -> None:
        now = self.elapsed()
        nodes = {Node(n).provider_id: n for n in self.kube.list("v1", "Node")}
        for claim in claims:
            provider_id = claim.status.provider_id if claim.status else None
            instance = self.instances.get(str(provider_id).rsplit("/", 1)[-1]) if provider_id else None
            if instance is None or instance.state != "running" or provider_id in nodes:
                continue
            if now - instance.first_seen >= self.boot_seconds and not claim.metadata.deletion_timestamp:
                body = kubelet.node_for(
                    claim, REGION, startup_taints=False, public_ip=self._public_ip(claim), now=timestamp(self.now())
                )
                with forbidden_skipped():  # the instance registers itself, with its own node's credentials
                    node = self.kubelet(body["metadata"]["name"]).create(body)
                    self.timeline.note(now, "joined", Node(node).name, f"{claim.name} ({instance.id})")
        for provider_id, node in nodes.items():
            instance = self.instances.get(provider_id.rsplit("/", 1)[-1])
            if instance is not None and instance.state in GONE:
                self._node_gone(node)
        live = {Node(n).name: n for n in self.kube.list("v1", "Node")}
        for pod in list(self.kube.list("v1", "Pod")):
            view = Pod(pod)
            if view.deleting and view.node_name in live:
                self._force_delete(pod, self.kubelet(view.node_name))  # the kubelet finished it
            elif view.deleting or (view.node_name and view.node_name not in live):
                self._force_delete(pod, self.pod_gc)  # never scheduled, or its node is gone
            elif view.node_name and view.phase == "Pending" and Node(live[view.node_name]).ready:
                with forbidden_skipped():  # placed by its controller (a DaemonSet's)
                    kubelet.start(self.kubelet(view.node_name), pod, timestamp(self.now()))

    def _public_ip(self, claim: NodeClaim) -> bool:
        """Whether the claim's EC2NodeClass associates a public IP (the world's subnets do not by default)."""
        nodeclass = self.kube.get("karpenter.k8s.aws/v1", "EC2NodeClass", claim.spec.node_class_ref.name, "")
        return bool(((nodeclass or {}).get("spec") or {}).get("associatePublicIPAddress"))

    def _node_gone(self, node: KubeObject) -> None:
        view = Node(node)
        name = view.name
        for pod in list(self.kube.list("v1", "Pod")):
            if Pod(pod).node_name == name:
                self._force_delete(pod, self.pod_gc)
        if not view.deleting:
            with forbidden_skipped():
                self.node_lifecycle.delete("v1", "Node", name, "")
                self.timeline.note(self.elapsed(), "node-gone", name, "its instance terminated")

    def _force_delete(self, pod: KubeObject, deleter: ActingAs) -> None:
        """Remove ``pod`` for good: its finalizers dropped (the garbage collector stands in for their owners, which
        the world does not play), then deleted by ``deleter`` unless that already finished it."""
        metadata = pod["metadata"]
        name, namespace = metadata["name"], metadata.get("namespace") or "default"
        with forbidden_skipped():
            if metadata.get("finalizers"):
                stripped = {k: v for k, v in metadata.items() if k != "resourceVersion"}
                self.garbage_collector.replace(pod, {**pod, "metadata": {**stripped, "finalizers": []}})
                if self.kube.get("v1", "Pod", name, namespace) is None:
                    return
            deleter.delete("v1", "Pod", name, namespace)


def _cordoned(node: Mapping[str, Any]) -> bool:
    view = Node(node)
    return view.unschedulable or any(t.get("key") == wk.TAINT_DISRUPTED for t in view.taints)
