"""Provisioning latency: how long a pod that needed a new node waited for it, in virtual seconds, and what
Karpenter's batcher would have made of the same arrivals.

For each pod nominated to a new NodeClaim (the NodeClaim's ``karpenter.sh/nominated-pods``-style annotation,
``inflight.NOMINATED_PODS``): created -> its NodeClaim created -> CreateFleet called for that NodeClaim's instance
(the world's fleet model dates each call). Pods that went to a node already there waited for no launch and are
not counted. Where the time goes, per pod: until the provisioner invocation that created its NodeClaim began
(the forwarder's debounce, EventBridge, the queue, the invocation), that invocation until the NodeClaim existed
(reading the cluster, scheduling), and the NodeClaim until CreateFleet (the launch path).

The reference is Karpenter's batcher over the same pod arrival times: a batch opens with the first pod not yet
taken (not before the previous pass is done), closes after ``IDLE_SECONDS`` without a new pod or ``MAX_SECONDS``
after it opened, and its pass calls CreateFleet after the median time from pass start to CreateFleet measured in
this run; pods arriving during a pass wait for the next batch.

Pods' and NodeClaims' creation times are Kubernetes timestamps, whole seconds truncated: the NodeClaim figures have
a second's resolution, and the launch figures (CreateFleet dated exactly) may overstate a pod's wait by up to a
second, never understate it.

Summary keys: ``pending_to_nodeclaim_p50_s`` / ``_p99_s``, ``pending_to_launch_p50_s`` / ``_p99_s``,
``reference_pending_to_launch_p50_s`` / ``_p99_s``, ``pending_to_pass_p50_s``, ``pass_to_nodeclaim_p50_s``,
``nodeclaim_to_launch_p50_s``, ``launch_latency_pods`` (how many pods were measured).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from autoscaler.controllers.state.inflight import NOMINATED_PODS
from autoscaler.kube.objects import Body, Pod
from autoscaler.kube.port import KubeObject

IDLE_SECONDS = 1.0  # Karpenter's batch idle duration
MAX_SECONDS = 10.0  # and its batch max duration
TIMESTAMP_RESOLUTION = 1.0  # Kubernetes' creationTimestamp: whole seconds, truncated


def nearest_rank(values: Sequence[float], share: float) -> float | None:
    """The nearest-rank percentile of ``values`` (None when empty)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)] if ordered else None


def batcher_launches(
    arrivals: Sequence[float], pass_seconds: float, idle: float = IDLE_SECONDS, longest: float = MAX_SECONDS
) -> list[float]:
    """When Karpenter's provisioner would call CreateFleet for pods arriving at ``arrivals``, one time per arrival
    in the same order (see the module docstring)."""
    order = sorted(range(len(arrivals)), key=lambda i: arrivals[i])
    launches = [0.0] * len(arrivals)
    taken, free_at = 0, -math.inf
    while taken < len(order):
        opened = max(arrivals[order[taken]], free_at)
        closes, last = opened + idle, opened + longest
        end = taken
        while end < len(order) and arrivals[order[end]] < min(closes, last):  # one at the close: the next
            closes = max(closes, arrivals[order[end]] + idle)  # each new pod restarts the idle timer
            end += 1
        launch = min(closes, last) + pass_seconds
        for index in order[taken:end]:
            launches[index] = launch
        taken, free_at = end, launch
    return launches


@dataclass
class _Claim:
    created: float
    pods: list[str]
    instance: str = ""


@dataclass
class LaunchLatency:
    """Fed by the observer from what the cluster shows; ``since`` turns a timestamp into virtual seconds."""

    since: Callable[[datetime], float]
    claims: dict[str, _Claim] = field(default_factory=dict)
    pod_created: dict[str, float] = field(default_factory=dict)

    def observe_claims(self, claims: Iterable[KubeObject]) -> None:
        for claim in map(Body, claims):
            known = self.claims.get(claim.name)
            if known is None:
                pods = [uid for uid in claim.annotations.get(NOMINATED_PODS, "").split(",") if uid]
                created = claim.created_at
                if not pods or created is None:
                    continue
                known = self.claims[claim.name] = _Claim(self.since(created), pods)
            if not known.instance:
                known.instance = str(claim.status.get("providerID") or "").rsplit("/", 1)[-1]

    def observe_pods(self, pods: Iterable[KubeObject]) -> None:
        for view in map(Pod, pods):
            uid = str(view.uid)
            if uid not in self.pod_created and view.created_at is not None:
                self.pod_created[uid] = self.since(view.created_at)

    def summary(self, launched_at: Mapping[str, float], passes: Sequence[tuple[float, float]]) -> dict[str, object]:
        """The figures, from the fleet model's CreateFleet times and the provisioner's invocations (start, end)."""
        starts = sorted(start for start, _ in passes)
        to_claim, to_launch, arrivals, waits, in_pass, launching, pass_to_launch = [], [], [], [], [], [], []
        seen: set[str] = set()
        for claim in sorted(self.claims.values(), key=lambda c: c.created):
            launched = launched_at.get(claim.instance)
            # creationTimestamp has whole seconds: the pass that created the claim began before created + 1 s
            at = bisect.bisect_right(starts, claim.created + TIMESTAMP_RESOLUTION) - 1
            began = starts[at] if at >= 0 else None
            for uid in claim.pods:
                created = self.pod_created.get(uid)
                if created is None or uid in seen or launched is None:
                    continue  # a pod nominated again (its first NodeClaim went away) counts once, by its first
                seen.add(uid)
                to_claim.append(claim.created - created)
                to_launch.append(launched - created)
                arrivals.append(created)
                launching.append(launched - claim.created)
                if began is not None:
                    waits.append(max(0.0, began - created))
                    in_pass.append(max(0.0, claim.created - began))
                    pass_to_launch.append(launched - began)
        typical_pass = nearest_rank(pass_to_launch, 0.5) or 0.0
        batched = batcher_launches(arrivals, typical_pass)
        reference = [launch - arrived for launch, arrived in zip(batched, arrivals, strict=True)]

        def figure(values: Sequence[float], share: float) -> float | None:
            found = nearest_rank(values, share)
            return None if found is None else round(found, 2)

        return {
            "launch_latency_pods": len(to_launch),
            "pending_to_nodeclaim_p50_s": figure(to_claim, 0.5),
            "pending_to_nodeclaim_p99_s": figure(to_claim, 0.99),
            "pending_to_launch_p50_s": figure(to_launch, 0.5),
            "pending_to_launch_p99_s": figure(to_launch, 0.99),
            "reference_pending_to_launch_p50_s": figure(reference, 0.5),
            "reference_pending_to_launch_p99_s": figure(reference, 0.99),
            "pending_to_pass_p50_s": figure(waits, 0.5),
            "pass_to_nodeclaim_p50_s": figure(in_pass, 0.5),
            "nodeclaim_to_launch_p50_s": figure(launching, 0.5),
        }
