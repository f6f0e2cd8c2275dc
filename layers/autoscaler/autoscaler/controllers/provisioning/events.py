"""The pod events of provisioning, throttled as Karpenter throttles them.

``Nominated`` (a pod will run on a new or in-flight NodeClaim, or on a node) shares one token bucket of 5 per
second with a burst of 10, so a burst of thousands of pods does not become thousands of API writes;
``FailedScheduling`` (no NodePool can run the pod, and why) is sent once per pod per 5 minutes. The state
lives as long as the controller (a warm Lambda container keeps it across passes).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from autoscaler.kube.port import Event, ObjectRef
from autoscaler.scheduling import PodRef

NOMINATION_RATE = 5.0  # events per second
NOMINATION_BURST = 10
FAILURE_DEDUPE_SECONDS = 300.0


def pod_ref(pod: PodRef) -> ObjectRef:
    return ObjectRef("Pod", pod.name, pod.namespace, uid=pod.uid)


def nominated(pod: PodRef, *, nodeclaim: str | None = None, node: str | None = None) -> Event:
    targets = [f"nodeclaim/{nodeclaim}"] if nodeclaim else []
    targets += [f"node/{node}"] if node else []
    return Event(pod_ref(pod), "Nominated", f"Pod should schedule on: {', '.join(targets)}")


def failed_scheduling(pod: PodRef, reason: str) -> Event:
    return Event(pod_ref(pod), "FailedScheduling", f"Failed to schedule pod, {reason}", "Warning")


class EventThrottle:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._tokens = float(NOMINATION_BURST)
        self._refilled = clock()
        self._failures: dict[str, float] = {}

    def nomination(self) -> bool:
        """Whether one more Nominated event may go out now."""
        now = self._clock()
        self._tokens = min(NOMINATION_BURST, self._tokens + (now - self._refilled) * NOMINATION_RATE)
        self._refilled = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True

    def failure(self, pod_uid: str) -> bool:
        """Whether a FailedScheduling event for this pod may go out now."""
        now = self._clock()
        if now - self._failures.get(pod_uid, float("-inf")) < FAILURE_DEDUPE_SECONDS:
            return False
        if len(self._failures) > 50_000:  # forget what has expired, now and then
            self._failures = {k: t for k, t in self._failures.items() if now - t < FAILURE_DEDUPE_SECONDS}
        self._failures[pod_uid] = now
        return True
