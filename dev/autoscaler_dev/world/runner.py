"""A scenario run: the embedded world, the real handlers fed the events they would get, on a virtual clock.

Each step of virtual time: the scenario's actions that are due; the other actors (EC2, kubelets, the
kube-scheduler, workload controllers: ``actors``); the forwarder, whose bus events reach the provisioning queue and
the termination and nodeclass functions through the stack's rules; the interruption queue; and the schedules. Time
moves in ``tick`` steps while anything is on its way, and jumps to the next schedule or action when nothing is.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import IO, Any

from moto.moto_api._internal.models import moto_api_backend

from autoscaler import routing, runtime
from autoscaler.controllers.disruption.verification import check_placements
from autoscaler.events import WATCHED_KINDS
from autoscaler.forwarder.changes import BusEvent, ChangeTracker
from autoscaler.forwarder.publisher import EventBridgePublisher
from autoscaler.kube.resources import KINDS
from autoscaler.settings import FeatureGates, Settings
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.kube_emulator.errors import ApiError
from autoscaler_dev.scheduling_validator.consolidation import check_consolidation
from autoscaler_dev.world.actions import ScenarioActions
from autoscaler_dev.world.actors import Actors
from autoscaler_dev.world.aws_world import CLUSTER, AWSWorld
from autoscaler_dev.world.clock import Pacer, VirtualClock
from autoscaler_dev.world.embedded import EmbeddedCluster
from autoscaler_dev.world.faults import Faults
from autoscaler_dev.world.functions import Containers, Functions
from autoscaler_dev.world.gates import GateSettings, WorldGates
from autoscaler_dev.world.invariants import Invariants
from autoscaler_dev.world.kube_access import FORWARDER, FUNCTIONS, KubeAccess, KubeEnforcement
from autoscaler_dev.world.kube_scheduler import pending
from autoscaler_dev.world.observer import Observer
from autoscaler_dev.world.progress import Progress
from autoscaler_dev.world.scenario import Scenario, check
from autoscaler_dev.world.stack import StackResources
from autoscaler_dev.world.timeline import Timeline

SAMPLE_SECONDS = 30.0
FORWARD_CHUNK = 50  # cluster events published between two deliveries of the provisioning queue
# A cluster change reaches the provisioner this long after it happened, as in an account: the forwarder sends an
# object's first change at its next flush (every quarter of its 1 s window; later changes within the window are
# coalesced), PutEvents and EventBridge's delivery to SQS take about half a second, and the event source mapping's
# poll a few hundred milliseconds.
DELIVERY_SECONDS = 0.25 + 0.5 + 0.3


def scheduled_event(function: str, now: datetime) -> dict[str, Any]:
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": "us-west-2",
        "resources": [f"arn:aws:events:us-west-2:123456789012:rule/{function}-schedule"],
        "detail": {},
    }


@dataclass
class World:
    """Everything a run holds: moto, the emulator, the stack's resources, the handlers and the other actors."""

    aws: AWSWorld
    kube: KubeEmulator
    stack: StackResources
    functions: Functions
    clock: VirtualClock
    actors: Actors
    timeline: Timeline
    forwarder: dict[str, ChangeTracker] = field(default_factory=dict)
    forwarder_down: bool = False
    late_events: list[tuple[float, BusEvent]] = field(default_factory=list)  # (due, event) EventBridge holds
    access: KubeAccess | None = None
    gates: WorldGates | None = None

    @property
    def embedded(self) -> EmbeddedCluster:
        return EmbeddedCluster(self.aws, self.kube)


@contextlib.contextmanager
def world(
    scenario: Scenario,
    log: IO[str] | None = None,
    kube_enforcement: KubeEnforcement | None = None,
    port: int = 0,
    gates: GateSettings | None = None,
) -> Iterator[World]:
    """Start moto and the emulator (authenticating and authorizing callers unless ``kube_enforcement`` is off; on
    ``port``, 0 for a free one), create the stack's resources, point the handlers at both (environment, and a
    runtime per function over the virtual clock whose AWS calls go through the AWS call gate: ``gates`` says what
    it enforces, by default IAM, EC2 rate limits and latency) and apply the scenario's manifests."""
    clock = VirtualClock()
    aws = AWSWorld.start(scenario.seed, scenario.capacity)
    for held in scenario.reservations:
        end = clock.start + timedelta(seconds=held.ends_in) if held.ends_in is not None else None
        aws.reserve(
            held.instance_type, held.zone, held.count, match_criteria=held.match_criteria, tags=held.tags,
            kind=held.kind, end=end, interruptible=held.interruptible,
        )  # fmt: skip
    saved = dict(os.environ)
    access: KubeAccess | None = None
    try:
        with KubeEmulator(clock=clock, port=port) as kube:
            access = KubeAccess.install(kube, kube_enforcement or KubeEnforcement(), clock)
            stack = StackResources.create(aws)
            os.environ.update(stack.environment(aws, kube.url))
            for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST"):
                os.environ.pop(name, None)
            if access.gate is not None:  # the functions' credentials: their access entry's group
                os.environ["KUBECONFIG"] = str(access.kubeconfig(FUNCTIONS))
            # The scenario's catalogue (a full one takes moto seconds to describe), as the functional tests do.
            settings = replace(Settings.from_env(), instance_types=tuple(scenario.instance_types))
            if scenario.feature_gates:  # the scenario's gates over the environment's
                wanted = f"{os.environ.get('FEATURE_GATES', '')},{scenario.feature_gates}"
                settings = replace(settings, feature_gates=FeatureGates.parse(wanted))
            if scenario.enable_zonal_shift:
                settings = replace(settings, enable_zonal_shift=True)
            aws.zonal_shifts.clock = clock  # shifts start and expire in virtual time
            aws.market.clock = lambda: clock.elapsed  # CreateFleet calls dated in virtual time (launch latency)
            enforced = WorldGates(
                gates or GateSettings(), aws, stack, now=lambda: clock.elapsed, advance_to=clock.jump,
                seed=scenario.seed, kube_url=kube.url,
            )  # fmt: skip
            timeline = Timeline(scenario.name)
            actors = Actors(aws, kube, clock, lambda: clock.elapsed, timeline, scenario.boot, scenario.seed)
            faults = Faults(scenario.faults)
            faults.now = lambda: clock.elapsed  # outages and propagation delays last in virtual time
            faults.wrap_moto(aws.server)
            faults.wrap_kube(kube.api)
            functions = Functions(
                log,
                faults=faults,
                clock=lambda: clock.elapsed,
                containers=Containers(
                    settings,
                    clock,
                    aws.endpoint,
                    enforced.session,
                    # Every consolidation command is checked by the dev validator too before it starts.
                    placement_checks=(check_placements, check_consolidation),
                    skew=faults.clock_skew,
                ),
            )
            sim = World(aws, kube, stack, functions, clock, actors, timeline, access=access, gates=enforced)
            sim.forwarder = {kind: ChangeTracker(kind, CLUSTER, clock) for kind in WATCHED_KINDS}
            sim.embedded.apply(scenario.manifests)
            for workload in scenario.workloads:
                actors.add_workload(workload)
            yield sim
    finally:
        runtime.install(None)
        if access is not None:
            access.close()
        os.environ.clear()
        os.environ.update(saved)
        aws.stop()
        # moto's backends are global to the process and outlive its server: the next world starts empty.
        moto_api_backend.reset()


class Simulation:
    """``speed`` caps virtual time at that many seconds per wall second (to watch a run live). ``serve``: the world
    runs at ``speed`` (10 by default) past the scenario's duration until ``stop`` is set (the command sets it on
    SIGINT or SIGTERM), for a person with kubectl; ``port`` is the emulator's (0: a free one)."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        log: IO[str] | None = None,
        progress: Callable[[Progress], None] | None = None,
        schedule_minutes: dict[str, int] | None = None,
        speed: float | None = None,
        kube_enforcement: KubeEnforcement | None = None,
        port: int = 0,
        sweep_seconds: float | None = None,
        gates: GateSettings | None = None,
    ) -> None:
        self.scenario = scenario
        self.kube_enforcement = kube_enforcement
        self.port = port
        self.gates = gates
        self.log, self.progress, self.speed = log, progress, speed
        self.periods = {k: v * 60.0 for k, v in (schedule_minutes or dict(routing.DEFAULT_SCHEDULE_MINUTES)).items()}
        if sweep_seconds is not None:  # the stack's -c forwarder=none loop (infra/constructs/fast_sweep.py)
            self.periods["provisioner"] = sweep_seconds

    def run(
        self,
        *,
        on_start: Callable[[World], None] | None = None,
        after: Callable[[World], None] | None = None,
        serve: bool = False,
        stop: threading.Event | None = None,
    ) -> Timeline:
        """Run the scenario; ``on_start`` sees the world once it is up, ``after`` once the scenario's duration is over
        (with ``serve``, the world then goes on until ``stop``); the summary is made at the end."""
        stop = stop or threading.Event()
        with world(self.scenario, self.log, self.kube_enforcement, self.port, self.gates) as sim:
            if on_start is not None:
                on_start(sim)
            due = {name: 0.0 if name == "nodeclass" else period for name, period in self.periods.items()}
            observer = Observer(sim, self.scenario)
            state = _Run(sim, ScenarioActions(sim, self.scenario.actions), due, observer, Invariants(sim))
            pacer = Pacer((self.speed or 10.0) if serve else self.speed, sim.clock, stop)
            while not stop.is_set() and (sim.clock.elapsed <= self.scenario.duration or self._settling(sim)):
                self._one(state, pacer)
            if after is not None:
                after(sim)
            while serve and not stop.is_set():
                self._one(state, pacer)
            self._finish(state)
            return sim.timeline

    def _finish(self, state: _Run) -> None:
        sim = state.sim
        state.observer.sample()
        self._report_progress(sim, state, done=True)
        state.observer.finish(self.scenario)
        gates = sim.gates
        sim.timeline.summary.update(gates.summary() if gates else {})
        sim.timeline.summary["invariants"] = {**state.invariants.finish(), **(gates.invariants() if gates else {})}
        sim.timeline.summary["invariant_violations"] = sum(sim.timeline.summary["invariants"].values())
        sim.timeline.summary.update(state.invariants.decisions.figures())  # churn and savings
        sim.timeline.summary["faults_injected"] = dict(sorted(sim.functions.faults.injected.items()))
        sim.timeline.summary["invocations_died"] = sum(sim.functions.deaths.values())
        if sim.access is not None:
            sim.timeline.summary.update(sim.access.summary())
        sim.timeline.checks = {
            f"{key} {expected}": check(expected, key, sim.timeline.summary)
            for key, expected in self.scenario.expect.items()
        } | state.actions.checks()

    def _settling(self, sim: World) -> bool:
        """Past the duration, a run goes on while a pod is pending, for at most ``settle`` (what faults delay)."""
        within = sim.clock.elapsed <= self.scenario.duration + self.scenario.settle
        return within and any(pending(pod) for pod in sim.kube.list("v1", "Pod"))

    def _one(self, state: _Run, pacer: Pacer) -> None:
        sim = state.sim
        self.step(sim, state.actions, state.due)
        state.observer.step()
        if sim.clock.elapsed >= state.next_sample:
            state.observer.sample()
            state.invariants.check()
            state.next_sample += SAMPLE_SECONDS
            self._report_progress(sim, state)
        self._advance(sim, state.actions, state.due, state.next_sample)
        pacer.wait()

    def step(self, sim: World, actions: ScenarioActions, due: dict[str, float]) -> None:
        actions.apply_due(sim.clock.elapsed)
        sim.actors.step()
        sqs = sim.aws.client("sqs")
        # Interruptions first: their warning is the one deadline, and in an account that function does not wait
        # for the others' calls (which take virtual time here, their latency included).
        sim.functions.drain("interruption", sim.stack.interruption, sqs)
        if not sim.forwarder_down and not sim.functions.faults.kube.down:  # its watches are cut in an outage;
            self._forward(sim)  # once the API is back, it relists and diffs against what it last saw
        for event in sim.functions.events_from(sim.stack.nodeclass_inbox, sqs):
            sim.functions.invoke("nodeclass", event)
        deleting = sim.functions.events_from(sim.stack.termination_inbox, sqs)
        if deleting:  # one sweep covers every terminating NodeClaim: Lambda's invocations would overlap anyway
            sim.functions.invoke("termination", deleting[0])
        for name, when in sorted(due.items(), key=lambda item: item[1]):
            if sim.clock.elapsed >= when:
                self._scheduled(sim, name)
                due[name] = when + self.periods[name]
        sim.functions.drain("provisioner", sim.stack.provisioning, sqs)
        sim.functions.drain("interruption", sim.stack.interruption, sqs)

    def _forward(self, sim: World) -> None:
        """The forwarder's changes since the last step, published a few batches at a time with the provisioner
        consuming in between, as the two run side by side (moto's SQS slows down with every queued message)."""
        events = []
        reader = sim.access.acting_as(FORWARDER) if sim.access is not None else sim.kube
        for kind, tracker in sim.forwarder.items():
            try:  # the forwarder's own credentials: a kind it may not watch is a denial, and no events
                objects = reader.list(KINDS[kind].api_version, kind)
            except ApiError:
                continue
            events += tracker.resync(objects, initial=False)
        publisher = EventBridgePublisher(sim.aws.client("events"), sim.stack.bus)
        sqs = sim.aws.client("sqs")
        events += [e for e in events if sim.functions.faults.duplicate_event()]  # EventBridge delivers at least once
        now, faults = sim.clock.elapsed, sim.functions.faults
        delays = [faults.event_delay() for _ in events]
        sim.late_events += [(now + d, e) for d, e in zip(delays, events, strict=True) if d]
        arrived = [e for t, e in sim.late_events if t <= now]  # late, so after events that happened since
        sim.late_events = [(t, e) for t, e in sim.late_events if t > now]
        events = [e for d, e in zip(delays, events, strict=True) if not d] + arrived
        if events:
            sim.clock.jump(sim.clock.elapsed + DELIVERY_SECONDS)
        for start in range(0, len(events), FORWARD_CHUNK):
            publisher.publish(events[start : start + FORWARD_CHUNK])
            sim.functions.drain("provisioner", sim.stack.provisioning, sqs)

    def _scheduled(self, sim: World, name: str) -> None:
        event = scheduled_event(name, sim.clock())
        if name == "provisioner":  # the sweep goes through the FIFO queue, as the stack's rule sends it
            sim.aws.client("sqs").send_message(
                QueueUrl=sim.stack.provisioning.url,
                MessageBody=json.dumps(event),
                MessageGroupId=routing.PROVISIONING_GROUP,
            )
        else:
            sim.functions.invoke(name, event)

    def _advance(self, sim: World, actions: ScenarioActions, due: dict[str, float], next_sample: float) -> None:
        now = sim.clock.elapsed
        if sim.actors.busy() or actions.due_now(now):
            sim.clock.jump(now + self.scenario.tick)
            return
        late = min((t for t, _ in sim.late_events), default=None)  # a late event is delivered when it is due
        redelivered = sim.functions.visibility.next_due()  # a message whose visibility timeout ends
        upcoming = [*due.values(), actions.next_at(), next_sample, late, redelivered, self.scenario.duration + 1]
        sim.clock.jump(max(now + self.scenario.tick, min(t for t in upcoming if t is not None)))

    def _report_progress(self, sim: World, state: _Run, *, done: bool = False) -> None:
        if self.progress is None or not sim.timeline.samples:
            return
        s = sim.timeline.samples[-1]
        happenings = tuple(sim.timeline.happenings[state.reported :])
        state.reported = len(sim.timeline.happenings)
        self.progress(
            Progress(
                self.scenario.name,
                s.t,
                self.scenario.duration,
                s.pods_running,
                s.pods_total,
                s.pods_pending,
                s.nodes,
                s.nodes_spot,
                s.cost_per_hour,
                happenings,
                done,
            )
        )


@dataclass
class _Run:
    """One run's moving parts."""

    sim: World
    actions: ScenarioActions
    due: dict[str, float]  # function -> when its schedule fires next (virtual seconds)
    observer: Observer
    invariants: Invariants
    next_sample: float = 0.0
    reported: int = 0  # happenings already handed to ``progress``
