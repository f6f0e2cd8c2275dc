"""The scenario's actions, carried out on the embedded world when their time comes (see ``scenario``)."""

from __future__ import annotations

import copy
import json
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from autoscaler.apis.duration import parse_duration
from autoscaler.apis.v1 import labels as wk
from autoscaler.events import FORWARDER_SOURCE
from autoscaler.kube.resources import KINDS
from autoscaler_dev import checkout
from autoscaler_dev.world.node_health import report_condition
from autoscaler_dev.world.scenario import Action, ScenarioError

if TYPE_CHECKING:
    from autoscaler_dev.world.runner import World

GARBAGE_CLUSTER_EVENT = {"Source": FORWARDER_SOURCE, "DetailType": "Pod Unschedulable", "Detail": "{}"}


def merge(base: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON merge patch (RFC 7386): mappings merge, None deletes, anything else replaces."""
    merged = dict(copy.deepcopy(base))
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


class ScenarioActions:
    def __init__(self, sim: World, actions: Sequence[Action]) -> None:
        self.sim = sim
        self.pending = sorted(actions, key=lambda a: a.at)
        self.releases = 0
        self.failed: list[str] = []  # actions the world could not apply when due (e.g. fewer Ready nodes than asked)

    def next_at(self) -> float | None:
        return self.pending[0].at if self.pending else None

    def due_now(self, now: float) -> bool:
        return bool(self.pending) and self.pending[0].at <= now

    def apply_due(self, now: float) -> None:
        while self.due_now(now):
            action = self.pending.pop(0)
            try:
                getattr(self, "_" + action.kind.replace("-", "_"))(**action.args)
            except TypeError as error:
                raise ScenarioError(f"action {action.kind} at {action.at:.0f}s: {error}") from error
            except ScenarioError as error:  # the world is not as the action needs it (faults slowed it): the run
                self.failed.append(f"{action.kind} at {action.at:.0f}s: {error}")  # goes on, and fails its checks
                self.sim.timeline.note(now, "action-failed", action.kind, str(error))

    def checks(self) -> dict[str, bool]:
        """A check per action the world could not apply, so that such a run fails visibly without ending."""
        return {f"applied {failure}": False for failure in self.failed}

    # --- one method per action kind ------------------------------------------------------------------
    def _scale(self, replicas: int, workload: str = "", nodepool: str = "") -> None:
        if bool(workload) == bool(nodepool):
            raise ScenarioError("scale: name one workload or one nodepool")
        if nodepool:
            return self._scale_nodepool(nodepool, int(replicas))
        if workload not in self.sim.actors.workloads:
            raise ScenarioError(f"scale: no workload named {workload!r}")
        self.sim.actors.scale(workload, int(replicas))
        return None

    def _scale_nodepool(self, name: str, replicas: int) -> None:
        """``kubectl scale nodepool NAME --replicas N``: a merge patch of the NodePool's scale subresource over
        HTTP, as the admin (the world's kubeconfig), so the API's admission of the NodePool answers it."""
        request = urllib.request.Request(
            f"{self.sim.kube.url}/apis/{wk.API_VERSION}/nodepools/{name}/scale?fieldManager=kubectl-scale",
            data=json.dumps({"spec": {"replicas": replicas}}).encode(),
            headers={"Content-Type": "application/merge-patch+json"},
            method="PATCH",
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                response.read()
        except urllib.error.HTTPError as error:
            detail = json.loads(error.read() or b"{}").get("message", error.reason)
            raise ScenarioError(f"scale nodepool {name}: {error.code} {detail}") from error
        self.sim.timeline.note(self.sim.clock.elapsed, "scaled", f"NodePool/{name}", f"replicas {replicas}")

    def _interrupt_spot(self, fraction: float = 0.3) -> None:
        self.sim.actors.interrupt_spot(float(fraction))

    def _publish_ami(self) -> None:
        self.releases += 1
        self.sim.aws.seed_eks_amis(created=self.sim.clock(), release=f"r{self.releases}")
        self.sim.timeline.note(self.sim.clock.elapsed, "published", "EKS AMIs", f"release r{self.releases}")

    def _leak_instance(
        self, instanceType: str = "m5.large", nodePool: str = "default", nodeClass: str = "default"
    ) -> None:
        self.sim.actors.leak_instance(instanceType, nodePool, nodeClass)

    def _send_malformed(self) -> None:
        """The malformed interruption samples onto the interruption queue, and a cluster event with no detail onto
        the bus: each must end in a dead-letter queue or be skipped and counted, disturbing nothing else."""
        sqs = self.sim.aws.client("sqs")
        sent = 0
        for sample in sorted((checkout.events_dir() / "interruption").glob("malformed-*.json")):
            for record in json.loads(sample.read_text()).get("Records", []):
                sqs.send_message(QueueUrl=self.sim.stack.interruption.url, MessageBody=record["body"])
                sent += 1
        self.sim.aws.client("events").put_events(
            Entries=[{**GARBAGE_CLUSTER_EVENT, "EventBusName": self.sim.stack.bus}]
        )
        self.sim.actors.malformed_sent += sent  # the cluster event is skipped and counted, not dead-lettered
        self.sim.timeline.note(self.sim.clock.elapsed, "malformed", "queues", f"{sent} messages and 1 cluster event")

    def _patch(self, kind: str, name: str, namespace: str = "", **change: Any) -> None:
        body = change.pop("merge", None)
        if not isinstance(body, Mapping) or change:
            raise ScenarioError(f"patch {kind}/{name}: give the change as a 'merge' mapping only, got {sorted(change)}")
        api_version = KINDS[kind].api_version if kind in KINDS else wk.API_VERSION
        current = self.sim.kube.get(api_version, kind, name, namespace or "default")
        if current is None:
            raise ScenarioError(f"patch: {kind} {name} does not exist")
        self.sim.kube.apply(merge(current, body))
        self.sim.timeline.note(self.sim.clock.elapsed, "edited", f"{kind}/{name}", json.dumps(body)[:200])

    def _forwarder(self, up: bool = True) -> None:
        self.sim.forwarder_down = not up
        self.sim.timeline.note(self.sim.clock.elapsed, "forwarder", "up" if up else "down")

    def _node_condition(  # the scenario's field names
        self, nodes: int = 1, type: str = "Ready", status: str = "False", nodePool: str | None = None
    ) -> None:
        report_condition(self.sim.actors, int(nodes), str(type), str(status), nodePool)

    def _zonal_shift(self, zone: str, expiresIn: str = "1h", autoshift: bool = False) -> None:
        """An operator's StartZonalShift (through ARC's API), or an autoshift AWS starts, away from ``zone``."""
        aws = self.sim.aws
        if autoshift:
            aws.zonal_shifts.autoshift(aws.cluster_arn, aws.zone_id(zone), expiresIn)
        else:
            aws.client("arc-zonal-shift").start_zonal_shift(
                resourceIdentifier=aws.cluster_arn, awayFrom=aws.zone_id(zone), expiresIn=expiresIn, comment="scenario"
            )
        self.sim.timeline.note(self.sim.clock.elapsed, "zonal shift", zone, "autoshift" if autoshift else expiresIn)

    def _zonal_shift_cancel(self, zone: str) -> None:
        aws = self.sim.aws
        shifts = [s for s in aws.zonal_shifts.active(aws.cluster_arn) if s.away_from == aws.zone_id(zone)]
        if not shifts:
            raise ScenarioError(f"zonal-shift-cancel: no active shift away from {zone}")
        for shift in shifts:  # an autoshift ends when AWS ends it: the world's own call, not an operator's
            aws.zonal_shifts.cancel(shift.id)
        self.sim.timeline.note(self.sim.clock.elapsed, "zonal shift ended", zone)

    def _tagged_reservations(self, tags: Mapping[str, str]) -> list[str]:
        """The active reservations carrying every one of ``tags``, as DescribeCapacityReservations filters them."""
        filters = [{"Name": "state", "Values": ["active"]}] + [
            {"Name": f"tag:{k}", "Values": [v]} for k, v in tags.items()
        ]
        found = self.sim.aws.client("ec2").describe_capacity_reservations(Filters=filters)["CapacityReservations"]
        if not found:
            raise ScenarioError(f"no active capacity reservation is tagged {dict(tags)}")
        return [str(r["CapacityReservationId"]) for r in found]

    def _end_reservation(self, tags: Mapping[str, str]) -> None:
        for rid in self._tagged_reservations(tags):
            self.sim.aws.client("ec2").cancel_capacity_reservation(CapacityReservationId=rid)
            self.sim.timeline.note(self.sim.clock.elapsed, "reservation cancelled", rid, "instances run on-demand")

    def _interrupt_reservation(self, tags: Mapping[str, str]) -> None:
        self.sim.actors.interrupt_reservations(frozenset(self._tagged_reservations(tags)))

    def _kube_outage(self, **spec: Any) -> None:  # ``for`` is the scenario's word, and Python's
        if set(spec) != {"for"}:
            raise ScenarioError(f"kube-outage takes only 'for' (a duration), got {sorted(spec)}")
        seconds = parse_duration(str(spec["for"])).total_seconds()
        self.sim.functions.faults.kube.outage(seconds)
        self.sim.kube.drop_watches()  # an API server going away ends every watch with it
        self.sim.timeline.note(self.sim.clock.elapsed, "kube outage", "API server", f"for {seconds:.0f}s")
