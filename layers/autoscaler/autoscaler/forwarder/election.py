"""Lease-based leader election for the forwarder's replicas (only the holder sends events).

We do not use the ``kubernetes`` package's leaderelection module: it blocks in ``run()`` with no way to
stop, works only with the process-wide default client, and never releases the lease on shutdown.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from autoscaler.forwarder.lease import Observation, claimed_spec, may_take, released_spec
from autoscaler.kube.objects import Body
from autoscaler.kube.port import ClusterError, ConflictError, NotFoundError
from autoscaler.kube.resources import KINDS
from autoscaler.kube.rest import KubeRest

logger = logging.getLogger(__name__)
LEASE = KINDS["Lease"]


class LeaseElector:
    def __init__(
        self,
        rest: KubeRest,
        namespace: str,
        name: str,
        identity: str,
        *,
        lease_duration: int = 15,
        renew_deadline: float = 10.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.rest, self.namespace, self.name, self.identity = rest, namespace, name, identity
        self.lease_duration, self.renew_deadline, self.clock = lease_duration, renew_deadline, clock
        self._observed = Observation()
        self._renewed_at = float("-inf")

    @property
    def leading(self) -> bool:
        """True while our last successful renewal is within the renew deadline."""
        return self.clock() - self._renewed_at < self.renew_deadline

    def try_acquire_or_renew(self) -> bool:
        now = self.clock()
        try:
            lease = self.rest.get(LEASE, self.name, self.namespace)
        except NotFoundError:
            return self._create(now)
        except ClusterError as error:
            logger.warning("cannot read lease %s/%s: %s", self.namespace, self.name, error)
            return self.leading
        self._observed.update(lease, now)
        if not may_take(lease, self._observed, self.identity, now):
            return False
        body = {**lease, "spec": claimed_spec(lease, self.identity, self.lease_duration, now)}
        try:
            self.rest.replace(LEASE, body)  # carries the resourceVersion we read: a racing candidate gets 409
        except ConflictError:
            return False
        except ClusterError as error:
            logger.warning("cannot renew lease %s/%s: %s", self.namespace, self.name, error)
            return self.leading
        if self._observed.holder != self.identity:
            logger.info("%s now holds lease %s/%s", self.identity, self.namespace, self.name)
        self._observed.holder, self._renewed_at = self.identity, now
        return True

    def _create(self, now: float) -> bool:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": claimed_spec(None, self.identity, self.lease_duration, now),
        }
        try:
            self.rest.create(LEASE, body, self.namespace)
        except ClusterError as error:  # another candidate created it first (409), or the API is unreachable
            logger.info("could not create lease %s/%s: %s", self.namespace, self.name, error)
            return False
        self._renewed_at = now
        logger.info("%s created and holds lease %s/%s", self.identity, self.namespace, self.name)
        return True

    def release(self) -> None:
        """Hand the lease back (clean shutdown) so that the other replica need not wait for it to expire."""
        if not self.leading:
            return
        self._renewed_at = float("-inf")
        try:
            lease = self.rest.get(LEASE, self.name, self.namespace)
            if Body(lease).spec.get("holderIdentity") == self.identity:
                self.rest.replace(LEASE, {**lease, "spec": released_spec(lease, self.clock())})
        except ClusterError as error:
            logger.info("could not release lease %s/%s: %s", self.namespace, self.name, error)
