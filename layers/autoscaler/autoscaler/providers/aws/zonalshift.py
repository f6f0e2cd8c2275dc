"""Zonal shifts and autoshifts of the EKS cluster, from ARC (``arc-zonal-shift:GetManagedResource`` on the
cluster's ARN), cached briefly: the ``ZonalShifts`` port (``cloudprovider.zonalshift``).

GetManagedResource lists every shift on the resource: operator shifts, practice runs, FIS experiments and
autoshifts alike, each with ``awayFrom`` (a zone ID), ``expiryTime`` and ``appliedStatus``. A zone counts as
shifted away while a shift on it is APPLIED and not expired, as Karpenter counts it. The answer is kept for
``ttl`` (30 s: Karpenter's controller re-reads ARC every 30 s) and its expiry times are checked on every ask.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from autoscaler.clock import utc_now
from autoscaler.cloudprovider.errors import CloudProviderError
from autoscaler.cloudprovider.zonalshift import ZonalShiftReadError
from autoscaler.providers.aws.clients import error_code, error_message

if TYPE_CHECKING:
    from autoscaler.providers.aws.clients import AWSClients

log = logging.getLogger(__name__)
ZONAL_SHIFT_TTL = timedelta(seconds=30)
APPLIED = "APPLIED"


class ArcZonalShifts:
    """``cluster_arn`` is asked on first use (it comes from eks:DescribeCluster, cached by ``ClusterDescriber``)."""

    def __init__(
        self,
        clients: AWSClients,
        cluster_arn: Callable[[], str],
        clock: Callable[[], datetime] = utc_now,
        ttl: timedelta = ZONAL_SHIFT_TTL,
    ) -> None:
        self._clients, self._cluster_arn, self._clock, self._ttl = clients, cluster_arn, clock, ttl
        self._shifts: dict[str, datetime] = {}  # zone ID -> when its latest applied shift expires
        self._read_at: datetime | None = None
        self._errors = 0
        self._lock = threading.Lock()  # CreateFleet batching asks from threads

    def shifted_away(self) -> frozenset[str]:
        with self._lock:
            now = self._clock()
            if self._read_at is None or now - self._read_at >= self._ttl:
                self._refresh(now)
            return frozenset(zone for zone, expiry in self._shifts.items() if expiry > now)

    def read_errors(self) -> int:
        with self._lock:
            errors, self._errors = self._errors, 0
            return errors

    def _refresh(self, now: datetime) -> None:
        # A failed read is retried on the next ask after ``ttl``, not on every one: a denied or throttled ARC
        # must not cost a call per launch. The last good answer stands meanwhile (Karpenter keeps its map).
        self._read_at = now
        try:
            self._shifts = applied_shifts(self._read())
        except ZonalShiftReadError as error:
            self._errors += 1
            log.warning("zonal shifts unknown, treated as none shifted beyond the last read: %s", error)

    def _read(self) -> Mapping[str, Any]:
        try:
            arn = self._cluster_arn()
            if not arn:
                raise ZonalShiftReadError("the cluster's ARN is unknown (eks:DescribeCluster gave none)")
            answer: Mapping[str, Any] = self._clients.arc_zonal_shift.get_managed_resource(resourceIdentifier=arn)
            return answer
        except ClientError as error:
            raise ZonalShiftReadError(f"GetManagedResource: {error_code(error)}: {error_message(error)}") from error
        except (BotoCoreError, CloudProviderError) as error:
            raise ZonalShiftReadError(f"GetManagedResource: {error}") from error


def applied_shifts(resource: Mapping[str, Any]) -> dict[str, datetime]:
    """Zone ID -> the latest expiry among the resource's APPLIED shifts away from it."""
    found: dict[str, datetime] = {}
    for shift in resource.get("zonalShifts", []):
        if shift.get("appliedStatus") != APPLIED:
            continue
        zone, expiry = shift["awayFrom"], shift["expiryTime"]
        found[zone] = max(found.get(zone, expiry), expiry)
    return found
