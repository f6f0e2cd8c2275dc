"""On-Demand Capacity Reservations and Capacity Blocks, served by the moto world, which has none.

CreateCapacityReservation, DescribeCapacityReservations (by id or by the filters Karpenter uses: state, owner-id,
instance-match-criteria, instance-type, availability-zone, tag:<key>, tag-key) and CancelCapacityReservation, with
EC2's answers: an unknown id is ``InvalidCapacityReservationId.NotFound``; a reservation's available count is its
total less the live instances launched into it (targeted, or matched to an open one: :func:`match_open`); one that
ends (cancelled, or past its end date: :func:`expire`) leaves its instances running as on-demand ones
(:func:`release`). Capacity blocks are bought, not created (PurchaseCapacityBlock from an offering): the world adds
them with :func:`add` directly. Reservations live on moto's EC2 backend, so
resetting moto forgets them with everything else.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from moto.core.responses import ActionResult
from moto.ec2.exceptions import EC2ClientError
from moto.ec2.responses import EC2Response

LIVE = ("pending", "running", "stopping")
_ids = itertools.count(0x10000)
_installed = threading.Lock()


@dataclass
class Reservation:
    id: str
    instance_type: str
    zone: str
    total: int
    owner: str
    match_criteria: str = "open"  # or "targeted"
    kind: str = "default"  # or "capacity-block"
    end: datetime | None = None
    tags: dict[str, str] = field(default_factory=dict)
    state: str = "active"
    interruptible: bool = False
    platform: str = "Linux/UNIX"

    def instances(self, backend: Any, *, live: bool = True) -> list[Any]:
        """The instances launched into this reservation (the world's CreateFleet records which): the live ones, or
        all of them."""
        return [
            i
            for r in backend.reservations.values()
            for i in r.instances
            if getattr(i, "capacity_reservation_id", None) == self.id and (not live or i.state in LIVE)
        ]

    def used(self, backend: Any) -> int:
        return len(self.instances(backend))

    def describe(self, backend: Any) -> dict[str, Any]:
        found: dict[str, Any] = {
            "CapacityReservationId": self.id,
            "CapacityReservationArn": f"arn:aws:ec2:{backend.region_name}:{self.owner}:capacity-reservation/{self.id}",
            "OwnerId": self.owner,
            "InstanceType": self.instance_type,
            "InstancePlatform": self.platform,
            "AvailabilityZone": self.zone,
            "Tenancy": "default",
            "TotalInstanceCount": self.total,
            "AvailableInstanceCount": max(0, self.total - self.used(backend)),
            "InstanceMatchCriteria": self.match_criteria,
            "State": self.state,
            "EndDateType": "limited" if self.end else "unlimited",
            "ReservationType": self.kind,
            "Interruptible": self.interruptible,
            "Tags": [{"Key": k, "Value": v} for k, v in sorted(self.tags.items())],
        }
        if self.end:
            found["EndDate"] = self.end
        return found


def store(backend: Any) -> dict[str, Reservation]:
    if not hasattr(backend, "capacity_reservations"):
        backend.capacity_reservations = {}
    return backend.capacity_reservations  # type: ignore[no-any-return]


def add(backend: Any, **fields: Any) -> Reservation:
    """A new reservation (or capacity block: ``kind="capacity-block"``) in ``backend``'s account."""
    reservation = Reservation(id=f"cr-{next(_ids):017x}", owner=backend.account_id, **fields)
    store(backend)[reservation.id] = reservation
    return reservation


def install() -> None:
    """Serve capacity reservations on every moto server of this process from now on (idempotent)."""
    with _installed:
        if "describe_capacity_reservations" in vars(EC2Response):
            return
        EC2Response.create_capacity_reservation = _create  # type: ignore[attr-defined]
        EC2Response.describe_capacity_reservations = _describe  # type: ignore[attr-defined]
        EC2Response.cancel_capacity_reservation = _cancel  # type: ignore[attr-defined]


def _create(self: EC2Response) -> ActionResult:
    self.error_on_dryrun()
    end = self._get_param("EndDate")
    reservation = add(
        self.ec2_backend,
        instance_type=self._get_param("InstanceType"),
        zone=self._get_param("AvailabilityZone"),
        total=int(self._get_param("InstanceCount")),
        match_criteria=self._get_param("InstanceMatchCriteria") or "open",
        platform=self._get_param("InstancePlatform") or "Linux/UNIX",
        end=datetime.fromisoformat(end).astimezone(UTC) if isinstance(end, str) else end,
        tags=self._parse_tag_specification("capacity-reservation").get("capacity-reservation", {}),
    )
    return ActionResult({"CapacityReservation": reservation.describe(self.ec2_backend)})


def _matches(reservation: Reservation, filters: dict[str, list[str]]) -> bool:
    fields = {
        "state": reservation.state,
        "owner-id": reservation.owner,
        "instance-match-criteria": reservation.match_criteria,
        "instance-type": reservation.instance_type,
        "availability-zone": reservation.zone,
    }
    for name, values in filters.items():
        if name in fields:
            ok = fields[name] in values
        elif name == "tag-key":
            ok = any(k in values for k in reservation.tags)
        elif name.startswith("tag:"):
            ok = reservation.tags.get(name[4:]) in values
        else:
            raise EC2ClientError("InvalidParameterValue", f"The filter '{name}' is invalid")
        if not ok:
            return False
    return True


def _describe(self: EC2Response) -> ActionResult:
    backend, ids = self.ec2_backend, list(self._get_param("CapacityReservationIds", []))
    reservations = store(backend)
    missing = [i for i in ids if i not in reservations]
    if missing:
        raise EC2ClientError(
            "InvalidCapacityReservationId.NotFound",
            f"The capacity reservation ID '{missing[0]}' does not exist",
        )
    chosen = [reservations[i] for i in ids] if ids else list(reservations.values())
    filters = self._filters_from_querystring()
    found = [r.describe(backend) for r in chosen if _matches(r, filters)]  # type: ignore[arg-type]
    return ActionResult({"CapacityReservations": found})


def _cancel(self: EC2Response) -> ActionResult:
    reservation_id = self._get_param("CapacityReservationId")
    reservation = store(self.ec2_backend).get(reservation_id)
    if reservation is None:
        raise EC2ClientError(
            "InvalidCapacityReservationId.NotFound", f"The capacity reservation ID '{reservation_id}' does not exist"
        )
    release(self.ec2_backend, reservation, "cancelled")
    return ActionResult({"Return": True})


RESERVATION_FULL = "ReservationCapacityExceeded"  # CreateFleet's error for a targeted reservation with no room
ONLY, OPEN = "capacity-reservations-only", "open"  # CapacityReservationPreference values (and "none")


def _preference(backend: Any, spec: Any) -> dict[str, Any]:
    """The ``CapacityReservationSpecification`` of a fleet launch spec's template (empty without one)."""
    template_spec = spec.launch_template_spec or {}
    if not template_spec.get("LaunchTemplateId"):
        return {}
    data = backend.get_launch_template(template_spec["LaunchTemplateId"]).get_version(template_spec.get("Version"))
    return data.data.get("CapacityReservationSpecification") or {}


def target_of(backend: Any, spec: Any) -> Reservation | None:
    """The reservation a fleet launch spec's template targets (``capacity-reservations-only``), if any. A target
    that does not exist, or is not active, is a reservation with no room (EC2 launches nothing there either)."""
    wanted = _preference(backend, spec)
    if wanted.get("CapacityReservationPreference") != ONLY:
        return None
    rid = (wanted.get("CapacityReservationTarget") or {}).get("CapacityReservationId", "")
    found = store(backend).get(rid)
    return found or Reservation(id=rid, instance_type="", zone="", total=0, owner="", state="cancelled")


def room(backend: Any, reservation: Reservation, instance_type: str, zone: str) -> int:
    """How many more instances of ``instance_type`` in ``zone`` the reservation takes."""
    if reservation.state != "active" or (reservation.instance_type, reservation.zone) != (instance_type, zone):
        return 0
    return max(0, reservation.total - reservation.used(backend))


def record(instances: list[Any], reservation: Reservation, preference: str = ONLY) -> None:
    """Mark instances as launched into ``reservation`` (what ``used`` counts and DescribeInstances shows): targeted
    at it (``capacity-reservations-only``), or matched by EC2 to an open one (``open``)."""
    for instance in instances:
        instance.capacity_reservation_id = reservation.id
        instance.capacity_reservation_specification = {"CapacityReservationPreference": preference} | (
            {"CapacityReservationTarget": {"CapacityReservationId": reservation.id}} if preference == ONLY else {}
        )


def match_open(backend: Any, spec: Any, instances: list[Any]) -> None:
    """EC2's open matching: on-demand instances whose template does not opt out (preference ``none``) run in an active
    open reservation of their instance type and zone while it has room, and are billed from it. Each instance shows
    the preference it launched with, as DescribeInstances does."""
    preference = _preference(backend, spec).get("CapacityReservationPreference", OPEN)
    for instance in instances:
        instance.capacity_reservation_specification = {"CapacityReservationPreference": preference}
    if not instances or preference != OPEN:
        return
    first = instances[0]
    kind, zone = first.instance_type, first.placement.zone
    for reservation in sorted(store(backend).values(), key=lambda r: r.id):
        if reservation.match_criteria != OPEN or reservation.kind != "default":
            continue
        taken = instances[: room(backend, reservation, kind, zone)]
        record(taken, reservation, OPEN)
        instances = instances[len(taken) :]


def release(backend: Any, reservation: Reservation, state: str) -> None:
    """The reservation ends (``cancelled``, ``expired``): EC2 keeps its instances running as plain on-demand ones,
    no longer in any reservation (DescribeInstances shows no reservation id)."""
    reservation.state = state
    for instance in reservation.instances(backend, live=False):
        instance.capacity_reservation_id = None
        instance.capacity_reservation_specification = {"CapacityReservationPreference": OPEN}


def expire(backend: Any, now: datetime) -> list[Reservation]:
    """Reservations whose end date has passed become ``expired``: a default one's instances run on-demand
    (:func:`release`); a capacity block's are terminated, as EC2 reclaims them (from 30 minutes before its end,
    which the world shortens to the end itself)."""
    ended = [r for r in store(backend).values() if r.state == "active" and r.end is not None and r.end <= now]
    for reservation in ended:
        live = [i.id for i in reservation.instances(backend)]
        if reservation.kind == "capacity-block" and live:
            backend.terminate_instances(live)
        release(backend, reservation, "expired")
    return ended
