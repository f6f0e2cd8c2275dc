"""Capacity reservations an EC2NodeClass selects (Karpenter's capacityreservation provider).

Each selector term is one or two DescribeCapacityReservations queries, always of active reservations only: by id,
or by tags, owner and instance match criteria together. Results are cached per query for a minute (Karpenter's
default TTL), and each answer also refreshes what is known of the reservations' free instances, which launches
count down between refreshes (Karpenter keeps the same availability cache).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from autoscaler.apis.v1.conditions import timestamp
from autoscaler.apis.v1.ec2nodeclass import CapacityReservationSelectorTerm, CapacityReservationStatus
from autoscaler.clock import utc_now
from autoscaler.cloudprovider.nodeclass import ResolutionRefusedError
from autoscaler.providers.aws.cache import TTLCache
from autoscaler.providers.aws.clients import error_code, error_message, transient_errors
from autoscaler.providers.aws.network import tag_filters

if TYPE_CHECKING:
    from autoscaler.providers.aws.clients import AWSClients

RESOLUTION_TTL = timedelta(minutes=1)
# A capacity block is "expiring" this long before its end: Karpenter stops launching into it and EC2 reclaims its
# instances at the end, so nodes are drained ahead of it.
CAPACITY_BLOCK_LEAD = timedelta(minutes=40)
MATCH_CRITERIA = ("open", "targeted")
RESERVATION_TYPES = {None: "default", "": "default", "default": "default", "capacity-block": "capacity-block"}
_NOT_FOUND = ("InvalidCapacityReservationId.NotFound", "InvalidCapacityReservationId.Malformed")


def queries(terms: Sequence[CapacityReservationSelectorTerm]) -> list[dict[str, Any]]:
    """The DescribeCapacityReservations requests for ``terms``: one by id, or one by tags / owner / criteria."""
    active = {"Name": "state", "Values": ["active"]}
    found: list[dict[str, Any]] = []
    for term in terms:
        if term.id:
            found.append({"CapacityReservationIds": [term.id], "Filters": [active]})
        if term.tags or term.instance_match_criteria:
            filters = [active, *tag_filters(term.tags)]
            if term.owner_id:
                filters.append({"Name": "owner-id", "Values": [term.owner_id]})
            if term.instance_match_criteria:
                filters.append({"Name": "instance-match-criteria", "Values": [term.instance_match_criteria]})
            found.append({"Filters": filters, "MaxResults": 1000})
    return found


def status_of(reservation: dict[str, Any], now: datetime) -> CapacityReservationStatus | None:
    """The status entry of an EC2 reservation; None for one Karpenter would not use (an unknown match criteria or
    reservation type, which a later EC2 may add)."""
    criteria = reservation.get("InstanceMatchCriteria")
    kind = RESERVATION_TYPES.get(reservation.get("ReservationType"))
    if criteria not in MATCH_CRITERIA or kind is None:
        return None
    end: datetime | None = reservation.get("EndDate")
    expiring = kind == "capacity-block" and end is not None and now >= end - CAPACITY_BLOCK_LEAD
    return CapacityReservationStatus.model_validate(
        {
            "availabilityZone": reservation["AvailabilityZone"],
            "endTime": timestamp(end.astimezone(UTC)) if end else None,
            "id": reservation["CapacityReservationId"],
            "instanceMatchCriteria": criteria,
            "instanceType": reservation["InstanceType"],
            "interruptible": bool(reservation.get("Interruptible", False)),
            "ownerID": reservation["OwnerId"],
            "reservationType": kind,
            "state": "expiring" if expiring else "active",
        }
    )


class CapacityReservations:
    def __init__(self, clients: AWSClients, clock: Callable[[], datetime] = utc_now) -> None:
        self._clients, self._clock = clients, clock
        self._queries: TTLCache[list[dict[str, Any]]] = TTLCache(RESOLUTION_TTL, clock)
        self._available: dict[str, int] = {}
        self._lock = threading.Lock()

    def _describe(self, query: dict[str, Any]) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        try:
            with transient_errors("describing capacity reservations"):
                paginator = self._clients.ec2.get_paginator("describe_capacity_reservations")
                for page in paginator.paginate(**query):
                    found += [dict(r) for r in page["CapacityReservations"]]
        except ClientError as error:
            if error_code(error) in _NOT_FOUND:
                return []  # a term naming a reservation that is gone matches nothing
            raise ResolutionRefusedError(
                f"EC2 refused DescribeCapacityReservations: {error_code(error)}: {error_message(error)}"
            ) from error
        with self._lock:
            self._available.update({r["CapacityReservationId"]: int(r["AvailableInstanceCount"]) for r in found})
        return found

    def reservations(self, terms: Sequence[CapacityReservationSelectorTerm]) -> list[dict[str, Any]]:
        """Active reservations the terms select, each once, by id; those past their end date are left out."""
        found: dict[str, dict[str, Any]] = {}
        for query in queries(terms):
            key = json.dumps(query, sort_keys=True)
            answer = self._queries.get(key)
            if answer is None:
                answer = self._queries.put(key, self._describe(query))
            for reservation in answer:
                found.setdefault(reservation["CapacityReservationId"], reservation)
        now = self._clock()
        return [r for _, r in sorted(found.items()) if r.get("EndDate") is None or r["EndDate"] > now]

    def statuses(self, terms: Sequence[CapacityReservationSelectorTerm]) -> list[CapacityReservationStatus]:
        now = self._clock()
        found = (status_of(r, now) for r in self.reservations(terms))
        return [s for s in found if s is not None]

    def available(self, reservation_id: str) -> int:
        """Free instances of the reservation as last described, less the launches counted since (0 if unknown)."""
        with self._lock:
            return self._available.get(reservation_id, 0)

    def mark_launched(self, reservation_id: str) -> None:
        with self._lock:
            if self._available.get(reservation_id, 0) > 0:
                self._available[reservation_id] -= 1

    def mark_unavailable(self, reservation_id: str) -> None:
        """EC2 said the reservation is full: nothing more goes there until it is described again."""
        with self._lock:
            if reservation_id in self._available:
                self._available[reservation_id] = 0

    def invalidate(self) -> None:
        self._queries.invalidate()
