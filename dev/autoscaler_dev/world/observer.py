"""What a run measures: samples of the cluster every 30 virtual seconds, the invariants watched while it runs,
and the summary it ends with (keys in docs/simulation.md).

Prices are the autoscaler's own (``providers.aws.pricing``, the shipped on-demand table and spot prices; a reserved
instance at Karpenter's reserved price, ``reserved_cost``), so the cost a summary shows is the cost the provisioner
optimised. The lower bound prices every pod's CPU and memory at
the cheapest rate any instance type offers for each, as if capacity came in any shape: no real fleet beats it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from autoscaler import metrics as m
from autoscaler.apis.resources import parse_resources
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import INITIALIZED
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.clock import parse_time
from autoscaler.controllers.disruption.pdb import DisruptionBudgets
from autoscaler.controllers.orchestration.budgets import allowed_disruptions
from autoscaler.controllers.orchestration.record import DISRUPTION_REASON
from autoscaler.kube.objects import Body, Node, Pod
from autoscaler.kube.port import ClusterError
from autoscaler.providers.aws.pricing import Pricing
from autoscaler.scheduling.pods import PodParser
from autoscaler_dev.world import costbound, reserved_cost
from autoscaler_dev.world.actors import GONE
from autoscaler_dev.world.aws_world import CLUSTER, REGION
from autoscaler_dev.world.cost_options import CostOptions, paid_options
from autoscaler_dev.world.decision_log import DecisionLog
from autoscaler_dev.world.headroom import headroom, headroom_figures
from autoscaler_dev.world.launch_latency import LaunchLatency, nearest_rank
from autoscaler_dev.world.lifecycle import NodeLifecycles, apply_terminations
from autoscaler_dev.world.node_health import repair_summary
from autoscaler_dev.world.scenario import Scenario
from autoscaler_dev.world.spread import zone_skews
from autoscaler_dev.world.timeline import Sample

if TYPE_CHECKING:
    from autoscaler_dev.world.runner import World

GIB = 2**30
KubeObject = dict[str, Any]


def _running(pod: KubeObject) -> bool:
    view = Pod(pod)
    return view.phase == "Running" and not view.deleting


def pending_percentiles(seconds: list[float]) -> dict[str, float | None]:
    """p50, p90, p99 (nearest rank) and the longest of the pods' pending times; None when no pod was scheduled."""
    return {
        "pod_pending_p50_s": nearest_rank(seconds, 0.5),
        "pod_pending_p90_s": nearest_rank(seconds, 0.9),
        "pod_pending_p99_s": nearest_rank(seconds, 0.99),
        "pod_pending_max_s": max(seconds, default=None),
    }


def events_by_reason(events: Iterable[Mapping[str, Any]], kind: str) -> dict[str, int]:
    """How many of ``events`` regard an object of ``kind``, by reason (as in ``nodepool_events.<reason>``)."""
    reasons = Counter(str(e.get("reason")) for e in events if (e.get("regarding") or {}).get("kind") == kind)
    return dict(sorted(reasons.items()))


class Observer:
    def __init__(self, sim: World, scenario: Scenario | None = None) -> None:
        self.sim, self.scenario = sim, scenario
        clients = sim.aws.clients()
        self.pricing = Pricing(clients, REGION, True, sim.clock)
        self.parser = PodParser()
        self.budget_violations = 0
        self.pdb_violations = 0
        self.peak_nodes = 0
        self.peak_by_pool: dict[str, int] = {}  # NodePool -> most of its nodes at one sample
        self.peak_by_capacity_type: dict[str, int] = {}  # capacity type -> most nodes of it at one sample
        self.all_running_at: float | None = None
        self._deleted_seen = 0
        self._requests: dict[str, dict[str, int]] = {}
        self._scheduled: set[str] = set()  # pods whose pending time is recorded
        self._options_by_version: tuple[tuple[str, ...], CostOptions] | None = None  # by NodePool versions
        self.lifecycles = NodeLifecycles(sim.timeline.nodes, sim.clock.start)
        self.latency = LaunchLatency(lambda at: (at - sim.clock.start).total_seconds())
        decisions = DecisionLog(sim.timeline, sim.clock.start, lambda: sim.clock.elapsed, sim.actors.warned_at)
        sim.functions.readers.append(decisions.read)

    def step(self) -> None:
        """Every step of the run: the NodeClaims' and Nodes' steps for the per-node timeline."""
        sim = self.sim
        claims = sim.kube.list(wk.API_VERSION, "NodeClaim")
        self.lifecycles.observe(claims, sim.kube.list("v1", "Node"), round(sim.clock.elapsed, 1))
        self.latency.observe_claims(claims)

    # --- while it runs -----------------------------------------------------------------------------
    def sample(self) -> Sample:
        sim = self.sim
        pods = sim.kube.list("v1", "Pod")
        nodes = [n for n in sim.kube.list("v1", "Node") if wk.LABEL_NODEPOOL in Node(n).labels]
        claims = sim.kube.list(wk.API_VERSION, "NodeClaim")
        running = [p for p in pods if _running(p)]
        pending = [p for p in pods if not Pod(p).node_name]
        capacity = Counter(Node(n).labels.get(wk.LABEL_CAPACITY_TYPE, "") for n in nodes)
        self._record_pending(pods, nodes)
        self.latency.observe_pods(pods)
        cpu, memory = self._utilization(running, nodes)
        sample = Sample(
            t=round(sim.clock.elapsed, 1),
            pods_total=len(pods),
            pods_running=len(running),
            pods_pending=len(pending),
            nodes=len(nodes),
            nodes_spot=capacity[wk.CAPACITY_TYPE_SPOT],
            nodes_on_demand=capacity[wk.CAPACITY_TYPE_ON_DEMAND],
            nodeclaims=len(claims),
            cost_per_hour=round(self.cost(), 4),
            cpu_utilization=round(cpu, 4),
            memory_utilization=round(memory, 4),
            cost_lower_bound=None if self.scenario is None else round(self.lower_bound(self.scenario), 4),
            nodes_by_type=dict(Counter(Node(n).labels.get(wk.LABEL_INSTANCE_TYPE, "") for n in nodes)),
            nodes_by_zone=dict(Counter(Node(n).labels.get(wk.LABEL_ZONE, "") for n in nodes)),
            headroom=headroom(sim.kube, pods, nodes),
        )
        sim.timeline.samples.append(sample)
        self.peak_nodes = max(self.peak_nodes, len(nodes))
        for pool, count in Counter(Node(n).labels[wk.LABEL_NODEPOOL] for n in nodes).items():
            self.peak_by_pool[pool] = max(self.peak_by_pool.get(pool, 0), count)
        for kind, count in capacity.items():
            self.peak_by_capacity_type[kind] = max(self.peak_by_capacity_type.get(kind, 0), count)
        if pods and not pending and len(running) == len(pods):
            self.all_running_at = self.all_running_at if self.all_running_at is not None else sample.t
        else:
            self.all_running_at = None
        self._watch_budgets(claims)
        self._watch_pdbs(pods)
        return sample

    def _record_pending(self, pods: list[KubeObject], nodes: list[KubeObject]) -> None:
        """Each pod's wait, once it is scheduled: its PodScheduled condition's time less its creation time; and
        whether its node was Ready before it was created (it started without waiting for a launch)."""
        ready_since = {}
        for node in map(Node, nodes):
            ready = node.condition("Ready")
            if ready and ready.get("status") == "True":
                ready_since[node.name] = parse_time(ready.get("lastTransitionTime"))
        for pod in pods:
            view = Pod(pod)
            uid = str(view.uid)
            if not view.node_name or uid in self._scheduled:
                continue
            self._scheduled.add(uid)
            scheduled = next((c for c in view.conditions if c.get("type") == "PodScheduled"), None)
            bound_at = parse_time(scheduled.get("lastTransitionTime")) if scheduled else None
            if bound_at is not None and view.created_at is not None:
                self.sim.timeline.pending_seconds.append(max(0.0, (bound_at - view.created_at).total_seconds()))
            since = ready_since.get(view.node_name)
            if since is not None and view.created_at is not None and since <= view.created_at:
                self.sim.timeline.started_without_launch += 1

    def _pod_requests(self, pod: KubeObject) -> dict[str, int]:
        uid = str(Pod(pod).uid)
        if uid not in self._requests:
            try:
                self._requests[uid] = dict(self.parser.parse(pod).requests)
            except ValueError:
                self._requests[uid] = {}
        return self._requests[uid]

    def _utilization(self, running: list[KubeObject], nodes: list[KubeObject]) -> tuple[float, float]:
        names = {Node(n).name for n in nodes}
        used = Counter[str]()
        for pod in running:
            if Pod(pod).node_name in names:
                used.update(self._pod_requests(pod))
        allocatable = Counter[str]()
        for node in nodes:
            allocatable.update(parse_resources(Node(node).status.get("allocatable")))
        return (
            used["cpu"] / allocatable["cpu"] if allocatable["cpu"] else 0.0,
            used["memory"] / allocatable["memory"] if allocatable["memory"] else 0.0,
        )

    def live_instances(self) -> list[Any]:
        """This cluster's live instances (the world also holds another cluster's, which must be left alone)."""
        return [
            i
            for i in self.sim.actors._backend_instances()
            if i._state.name not in GONE
            and any(t["key"] == wk.TAG_CLUSTER_NAME and t["value"] == CLUSTER for t in i.get_tags())
        ]

    def price(self, instance: Any) -> float:
        return reserved_cost.instance_price(self.pricing, instance)

    def cost(self) -> float:
        return sum(self.price(i) for i in self.live_instances())

    def _watch_budgets(self, claims: list[KubeObject]) -> None:
        """Voluntary disruptions in flight (NodeClaims marked with a DisruptionReason) never above the smallest
        active budget of their NodePool for that reason."""
        pools = {p.name: p for p in self._nodepools()}
        marked: Counter[tuple[str, str]] = Counter()
        total: Counter[str] = Counter()
        for raw in claims:
            claim = Body(raw)
            pool = claim.labels.get(wk.LABEL_NODEPOOL, "")
            if claim.condition_is(INITIALIZED):
                total[pool] += 1
            mark = claim.condition(DISRUPTION_REASON)
            if mark and mark.get("status") == "True":
                marked[(pool, str(mark.get("reason")))] += 1
        for (pool, reason), count in marked.items():
            if pool in pools:
                limit = allowed_disruptions(pools[pool], reason, total[pool], 0, self.sim.clock()).limit
                if limit is not None and count > limit:
                    self.budget_violations += 1
                    self.sim.timeline.note(
                        self.sim.clock.elapsed, "violation", pool, f"{count} {reason} > budget {limit}"
                    )

    def _watch_pdbs(self, pods: list[KubeObject]) -> None:
        """Pods the autoscaler deleted directly instead of evicting (only at a terminationGracePeriod deadline) are
        checked against the PodDisruptionBudgets as they stood, the pod still counted: evictions are the API
        server's to refuse, and the emulator's Eviction API does."""
        deleted = self.sim.kube.api.deleted_pods[self._deleted_seen :]
        self._deleted_seen += len(deleted)
        if not deleted:
            return
        pdbs = self.sim.kube.list("policy/v1", "PodDisruptionBudget")
        for pod in deleted:
            if DisruptionBudgets(pdbs, [*pods, pod]).blocking(pod):
                self.pdb_violations += 1
                name = f"{pod['metadata'].get('namespace')}/{pod['metadata'].get('name')}"
                self.sim.timeline.note(self.sim.clock.elapsed, "violation", name, "deleted through its PDB")

    def _nodepools(self) -> list[NodePool]:
        pools = []
        for raw in self.sim.kube.list(wk.API_VERSION, "NodePool"):
            try:
                pools.append(NodePool.model_validate(raw))
            except ValueError:
                continue
        return pools

    # --- at the end --------------------------------------------------------------------------------
    def finish(self, scenario: Scenario) -> dict[str, Any]:
        sim, last = self.sim, self.sim.timeline.samples[-1]
        tally = sim.functions.metrics
        claims = {
            str(Body(c).status.get("providerID") or "").rsplit("/", 1)[-1]
            for c in sim.kube.list(wk.API_VERSION, "NodeClaim")
        }
        owned = [
            i
            for i in self.live_instances()
            if any(t["key"] == wk.TAG_CLUSTER_NAME and t["value"] == CLUSTER for t in i.get_tags())
        ]
        labels = [n["metadata"].get("labels") or {} for n in sim.kube.list("v1", "Node")]
        events = sim.kube.list("events.k8s.io/v1", "Event")
        nodes = Counter(f"{lb.get(wk.LABEL_INSTANCE_TYPE)}/{lb.get(wk.LABEL_CAPACITY_TYPE)}" for lb in labels)
        zones = Counter(str(lb.get(wk.LABEL_ZONE, "")) for lb in labels if wk.LABEL_NODEPOOL in lb)
        summary = {
            "scenario": scenario.name,
            "simulated_seconds": round(sim.clock.elapsed),
            "pods_total": last.pods_total,
            "pods_running": last.pods_running,
            "pods_pending": last.pods_pending,
            "all_running_at_s": self.all_running_at,
            **pending_percentiles(sim.timeline.pending_seconds),
            **self.latency.summary(sim.aws.market.launched_at, sim.functions.spans.get("provisioner", [])),
            **headroom_figures(sim.timeline),
            "nodes": last.nodes,
            "nodes_peak": self.peak_nodes,
            "nodes_by_type": dict(sorted(nodes.items())),
            "nodes_by_nodepool": dict(
                sorted(Counter(lb[wk.LABEL_NODEPOOL] for lb in labels if wk.LABEL_NODEPOOL in lb).items())
            ),
            "nodes_peak_by_nodepool": dict(sorted(self.peak_by_pool.items())),
            "nodes_by_capacity_type": dict(
                sorted(Counter(lb.get(wk.LABEL_CAPACITY_TYPE, "") for lb in labels if wk.LABEL_NODEPOOL in lb).items())
            ),
            "nodes_peak_by_capacity_type": dict(sorted(self.peak_by_capacity_type.items())),
            # NodeClaims deleted because their launch found no capacity (the pods then wait for another pass)
            "launch_capacity_errors": sum(
                1 for e in sim.kube.list("events.k8s.io/v1", "Event") if e.get("reason") == "InsufficientCapacityError"
            ),
            "cost_per_hour": round(last.cost_per_hour, 4),
            "cost_lower_bound": round(self.lower_bound(scenario), 4),
            "reservations_cost_per_hour": round(
                reserved_cost.reservations_cost(self.pricing, reserved_cost.active_reservations()), 4
            ),
            "cpu_utilization": last.cpu_utilization,
            "memory_utilization": last.memory_utilization,
            "zones": len(zones),
            "nodes_by_zone": dict(sorted(zones.items())),
            "max_zone_skew": self.max_zone_skew(),
            "interrupted": len(sim.actors.interrupted),
            "interruptions_handled": int(tally.total(m.INTERRUPTION_ACTIONS_PERFORMED, action="CordonAndDrain")),
            "spot_interruptions_handled": int(  # the warnings alone: a state change follows our own terminations too
                tally.total(m.INTERRUPTION_ACTIONS_PERFORMED, action="CordonAndDrain", message_type="spot_interrupted")
            ),
            "max_cordon_seconds": sim.actors.max_cordon_seconds(),
            "drifted_replaced": int(tally.total(m.NODECLAIMS_DISRUPTED, reason="drifted")),
            "consolidated": int(
                tally.total(m.NODECLAIMS_DISRUPTED, reason="empty")
                + tally.total(m.NODECLAIMS_DISRUPTED, reason="underutilized")
            ),
            "leaked_collected": int(tally.total(m.GC_LEAKED_INSTANCES)),
            "leaked_at_end": sum(1 for i in owned if i.id not in claims),
            "images_in_use": len({i.image_id for i in owned}),
            "malformed_sent": sim.actors.malformed_sent,
            "skipped_events": int(tally.total(m.SKIPPED_EVENTS)),
            "dead_lettered": self.dead_lettered(),
            "budget_violations": self.budget_violations,
            "pdb_violations": self.pdb_violations,
            "function_errors": len(sim.functions.errors),
            "function_errors_in_kube_outage": len(sim.functions.outage_errors),
            "invocations": dict(sorted(sim.functions.invocations.items())),
            "repaired": int(tally.total(m.NODECLAIMS_DISRUPTED, reason="unhealthy")),
            **repair_summary(sim.actors, events),
            "nodepool_events": events_by_reason(events, "NodePool"),
            "zonal_shift_read_errors": int(tally.total(m.ZONAL_SHIFT_READ_ERRORS)),
        }
        sim.timeline.summary = summary
        apply_terminations(sim.timeline.nodes, sim.timeline.decisions)
        return summary

    def max_zone_skew(self) -> int | None:
        """The largest zonal skew of running pods among workloads with a zonal topology spread constraint
        (``spread``); None when no workload spreads by zone."""
        skews = [s.skew for s in zone_skews(self.sim)]
        return max(skews) if skews else None

    def lower_bound(self, scenario: Scenario) -> float:
        """What the running and pending pods' requests cost at least on the instance types and capacity types the
        NodePools may launch (``costbound``), at the prices the provisioner saw."""
        pods = [p for p in self.sim.kube.list("v1", "Pod") if _running(p) or not Pod(p).node_name]
        cpu = sum(self._pod_requests(p).get("cpu", 0) for p in pods)
        memory = sum(self._pod_requests(p).get("memory", 0) for p in pods)
        options, offered = self._options(scenario)
        free_cpu, free_memory = reserved_cost.free_capacity(
            offered, reserved_cost.active_reservations(), self.sim.clock()
        )
        bound = costbound.lower_bound(max(0.0, cpu - free_cpu), max(0.0, memory - free_memory), options)
        return bound if math.isfinite(bound) else 0.0

    def _options(self, scenario: Scenario) -> CostOptions:
        """The options the NodePools allow, computed again only when a NodePool changed."""
        versions = tuple(
            sorted(f"{Body(p).name}@{Body(p).resource_version}" for p in self.sim.kube.list(wk.API_VERSION, "NodePool"))
        )
        if self._options_by_version is None or self._options_by_version[0] != versions:
            try:
                self._options_by_version = (versions, paid_options(self.sim, scenario, self._nodepools()))
            except ClusterError:  # the world's own read met an injected fault: the last options, else none yet
                if self._options_by_version is None:
                    return [], {}
        return self._options_by_version[1]

    def dead_lettered(self) -> int:
        sqs = self.sim.aws.client("sqs")
        total = 0
        for queue in (self.sim.stack.interruption, self.sim.stack.provisioning):
            attributes = sqs.get_queue_attributes(
                QueueUrl=queue.dead_letters_url, AttributeNames=["ApproximateNumberOfMessages"]
            )
            total += int(attributes["Attributes"]["ApproximateNumberOfMessages"])
        return total
