"""Invariants checked throughout a run, each by name with a count of violations (0 is the only good count).

- ``instance_without_nodeclaim``: an instance of this cluster's with no NodeClaim for longer than two garbage
  collection periods plus its grace (what a crash between launch and record may leave, and GC must clean; one
  pass may fail, as a killed or throttled invocation does), not counting the time the API server was down (a
  pass reads the NodeClaims before it terminates anything);
- ``two_instances_for_one_nodeclaim``: two live instances tagged with the same NodeClaim;
- ``pod_pending_too_long``: a pod pending for longer than ``PENDING_BOUND``, not counting the time after each
  refusal of its NodeClaim's capacity (or a replica's of its workload) that the refused offerings are unavailable
  (``world/pending.py``);
- ``foreign_resource_touched``: an instance or launch template of another cluster, or untagged, that the world
  planted at the start, terminated or deleted;
- ``interruption_not_acted_on``: an interrupted instance whose NodeClaim was never deleted by the time EC2
  reclaimed it (checked at the end);
- ``malformed_without_reason``: a message on the interruption dead-letter queue without its reason attribute;
- ``kube_request_forbidden``: a Kubernetes request RBAC refused (once per caller, verb and resource; the
  summary's ``rbac_denied`` counts every one).
- ``zone_skew_above_max_skew``: a workload whose DoNotSchedule zonal spread its running pods exceed at the end
  (over the zones Karpenter's nodes are in; checked at the end, when every zone's nodes have joined). A workload
  that was scaled down is left out: the scheduler keeps ``maxSkew`` only when it places pods, and the ReplicaSet
  controller removes pods without regard to zones, so the skew a scale-down leaves is not the autoscaler's.

Budgets and PDBs are the observer's (``budget_violations``, ``pdb_violations``); the decision-quality invariants
(``launched_unused``, ``consolidation_without_saving``, ``displaced_pod_unplaced``, ``replaced_too_soon``) are
``decisions``'.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.controllers.state.inflight import nominated_in
from autoscaler.kube.objects import Body, Pod
from autoscaler_dev.world import decisions
from autoscaler_dev.world.actors import GONE
from autoscaler_dev.world.aws_world import CLUSTER
from autoscaler_dev.world.pending import PendingClocks
from autoscaler_dev.world.spread import zone_skews

if TYPE_CHECKING:
    from autoscaler_dev.world.runner import World

GC_PERIOD_SECONDS = 2 * 120 + 30 + 60  # two scheduled passes, the leak grace, and a step of slack
PENDING_BOUND = 15 * 60
FOREIGN_CLUSTER = "someone-else"
NAMES = (
    "instance_without_nodeclaim",
    "two_instances_for_one_nodeclaim",
    "pod_pending_too_long",
    "foreign_resource_touched",
    "interruption_not_acted_on",
    "malformed_without_reason",
    "kube_request_forbidden",
    "zone_skew_above_max_skew",
    *decisions.NAMES,
)


class Invariants:
    def __init__(self, sim: World) -> None:
        self.sim = sim
        self.violations: Counter[str] = Counter(dict.fromkeys(NAMES, 0))
        self._orphaned_since: dict[str, float] = {}  # instance -> when first seen orphaned, on the up-time clock
        self._down_seconds, self._checked_at = 0.0, 0.0  # API server down-time so far, as the checks saw it
        self._pending = PendingClocks()
        self._reported: set[tuple[str, str]] = set()
        self._deleted_claims: set[str] = set()  # instance ids whose NodeClaim was seen being deleted
        self.foreign = self._plant_foreign()
        if sim.access is not None and sim.access.gate is not None:
            sim.access.gate.on_denied = lambda d: self._violation(
                "kube_request_forbidden", f"{d.user} {d.verb} {d.resource}", d.message
            )
        self.decisions = decisions.DecisionQuality(sim)
        sim.functions.faults.on_capacity_refused = self._capacity_refused

    def _capacity_refused(self) -> None:
        """EC2 is refusing a CreateFleet: the pods of every NodeClaim waiting for its launch wait on EC2, and so do
        their pending replicas (which replica a plan nominates is arbitrary, and a zonal spread holds the others
        back until the refused zone has capacity); the plans those NodeClaims are part of are cut short."""
        waiting: set[str] = set()
        claims: set[str] = set()
        for claim in map(Body, self.sim.kube.list(wk.API_VERSION, "NodeClaim")):
            if not claim.status.get("providerID") and not claim.deleting:
                waiting.update(nominated_in(claim.annotations))
                claims.add(claim.name)
        self._pending.refused(self.sim.clock.elapsed, waiting | self._replicas(waiting))
        self.decisions.plan_cut(claims)

    def _replicas(self, pods: set[str]) -> set[str]:
        """The pending pods (UIDs) that share a controller with any of ``pods``."""
        pending = [pod for pod in map(Pod, self.sim.kube.list("v1", "Pod")) if not pod.node_name]
        owners = {
            str(pod.uid): {str(o.get("uid")) for o in pod.owner_references if o.get("controller")} for pod in pending
        }
        refused: set[str] = set()
        for uid in pods & owners.keys():
            refused |= owners[uid]
        return {uid for uid, theirs in owners.items() if theirs & refused}

    def _plant_foreign(self) -> dict[str, str]:
        """An instance and a launch template of another cluster, and an untagged instance: never ours to touch."""
        aws = self.sim.aws
        ec2 = aws.client("ec2")
        tags = {
            f"{wk.TAG_CLUSTER_PREFIX}{FOREIGN_CLUSTER}": "owned",
            wk.TAG_NODEPOOL: "default",
            wk.TAG_NODECLASS: "default",
        }
        spec = [{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]
        image, subnet = next(iter(aws.images.values())), next(iter(aws.subnets.values()))
        run = {"ImageId": image, "InstanceType": "m5.large", "MinCount": 1, "MaxCount": 1, "SubnetId": subnet}
        theirs = ec2.run_instances(**run, TagSpecifications=spec)["Instances"][0]["InstanceId"]
        untagged = ec2.run_instances(**run)["Instances"][0]["InstanceId"]
        template = ec2.create_launch_template(
            LaunchTemplateName=f"karpenter.k8s.aws/{FOREIGN_CLUSTER}",
            LaunchTemplateData={"ImageId": image},
            TagSpecifications=[
                {"ResourceType": "launch-template", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}
            ],
        )["LaunchTemplate"]["LaunchTemplateId"]
        return {"instance": theirs, "untagged": untagged, "template": template}

    def _violation(self, name: str, subject: str, text: str) -> None:
        if (name, subject) in self._reported:
            return
        self._reported.add((name, subject))
        self.violations[name] += 1
        self.sim.timeline.note(self.sim.clock.elapsed, "violation", subject, f"{name}: {text}")

    def check(self) -> None:
        now = self.sim.clock.elapsed
        if self.sim.functions.faults.kube.down:
            self._down_seconds += now - self._checked_at
        self._checked_at = now
        up = now - self._down_seconds  # what garbage collection could use
        instances = [i for i in self.sim.actors._backend_instances() if i._state.name not in GONE]
        claims = [Body(c) for c in self.sim.kube.list(wk.API_VERSION, "NodeClaim")]
        claimed = {_instance_id(c) for c in claims}
        by_claim: Counter[str] = Counter()
        for instance in instances:
            tags = {t["key"]: t["value"] for t in instance.get_tags()}
            if tags.get(wk.TAG_CLUSTER_NAME) != CLUSTER:
                continue
            if tags.get(wk.TAG_NODECLAIM):
                by_claim[tags[wk.TAG_NODECLAIM]] += 1
            if instance.id in claimed:
                self._orphaned_since.pop(instance.id, None)
                continue
            since = self._orphaned_since.setdefault(instance.id, up)
            if up - since > GC_PERIOD_SECONDS:
                self._violation("instance_without_nodeclaim", instance.id, f"no NodeClaim for {up - since:.0f}s up")
        for name, count in by_claim.items():
            if count > 1:
                self._violation("two_instances_for_one_nodeclaim", name, f"{count} live instances")
        for claim in claims:
            if claim.deleting:
                self._deleted_claims.add(_instance_id(claim))
        waited = self._check_pending(now)
        self._check_foreign()
        self.decisions.check(self._violation, waited)

    def _check_pending(self, now: float) -> dict[str, float]:
        """Judge every pending pod's wait, less EC2's refusals, and return those waits by pod UID."""
        pending = {
            str(pod.uid) for pod in map(Pod, self.sim.kube.list("v1", "Pod")) if not pod.node_name and not pod.deleting
        }
        waits = self._pending.observe(now, pending)
        for uid, waited in waits.items():
            if waited > PENDING_BOUND:
                self._violation("pod_pending_too_long", uid, f"pending for {waited:.0f}s beyond EC2's refusals")
        return waits

    def _check_foreign(self) -> None:
        live = {i.id for i in self.sim.actors._backend_instances() if i._state.name not in GONE}
        for key in ("instance", "untagged"):
            if self.foreign[key] not in live:
                self._violation("foreign_resource_touched", self.foreign[key], "terminated")
        if self.foreign["template"] not in self.sim.actors._backend().launch_templates:
            self._violation("foreign_resource_touched", self.foreign["template"], "deleted")

    def finish(self) -> dict[str, int]:
        standing = {
            _instance_id(claim)
            for claim in map(Body, self.sim.kube.list(wk.API_VERSION, "NodeClaim"))
            if not claim.deleting
        }
        for instance_id in self.sim.actors.interrupted:
            if instance_id in standing and instance_id not in self._deleted_claims:
                self._violation("interruption_not_acted_on", instance_id, "its NodeClaim was never deleted")
        for spread in zone_skews(self.sim):
            if spread.hard and not spread.scaled_down and spread.skew > spread.max_skew:
                text = f"zonal skew {spread.skew} above maxSkew {spread.max_skew}"
                self._violation("zone_skew_above_max_skew", spread.workload, text)
        sqs = self.sim.aws.client("sqs")
        while True:
            received = sqs.receive_message(
                QueueUrl=self.sim.stack.interruption.dead_letters_url,
                MaxNumberOfMessages=10,
                MessageAttributeNames=["All"],
                VisibilityTimeout=600,  # read once, leave them there (the summary counts them)
            ).get("Messages", [])
            if not received:
                break
            for message in received:
                if not _reason(message):
                    self._violation("malformed_without_reason", message["MessageId"], message["Body"][:80])
        return dict(self.violations)


def _reason(message: dict[str, Any]) -> str:
    attributes = message.get("MessageAttributes") or {}
    return str(next((a.get("StringValue") for k, a in attributes.items() if "reason" in k.lower()), "") or "")


def _instance_id(claim: Body) -> str:
    """The instance ID at the end of a NodeClaim's provider ID ("" before it launches)."""
    return str(claim.status.get("providerID") or "").rsplit("/", 1)[-1]
