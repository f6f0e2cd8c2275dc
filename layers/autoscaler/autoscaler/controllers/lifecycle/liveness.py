"""Liveness: a NodeClaim whose node has not registered 15 minutes after its ``Registered`` condition was
first set (at launch) is deleted, with an event; the termination flow then terminates its instance."""

from __future__ import annotations

import logging
from datetime import timedelta

from autoscaler.apis.v1.nodeclaim import REGISTERED
from autoscaler.clock import parse_time_strict
from autoscaler.controllers.lifecycle.work import ClaimWork
from autoscaler.kube.port import Cluster, Event

log = logging.getLogger(__name__)
REGISTRATION_TTL = timedelta(minutes=15)
LIVENESS = "liveness"


class Liveness:
    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster

    def run(self, work: ClaimWork) -> bool:
        """True when the NodeClaim was deleted for not registering in time."""
        registered = work.condition(REGISTERED)
        if work.deleted or registered is None or registered.status == "True":
            return False
        waited = work.now - parse_time_strict(registered.last_transition_time)
        if waited < REGISTRATION_TTL:
            return False
        message = (
            f"NodeClaim {work.name} did not register a node within {REGISTRATION_TTL} of launch "
            f"({registered.reason}); deleting it so that its instance is terminated"
        )
        self._cluster.record_event(Event(work.ref, "RegistrationTimeout", message, "Warning"))
        log.warning("deleting nodeclaim %s: not registered after %s", work.name, waited)
        self._cluster.delete(work.ref)
        work.deleted = True
        return True
