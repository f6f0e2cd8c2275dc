"""ARC zonal shift served by the moto world, which has no such service: the operator's StartZonalShift and
CancelZonalShift, ListZonalShifts, and the GetManagedResource the functions read (``providers/aws/zonalshift.py``).

A managed resource is an EKS cluster that exists in moto (by ARN); shifts name the zone they move traffic away
from by zone ID, as ARC does, and expire after ``expiresIn`` (``30m``, ``2h``; at most 3 days) on the world's
clock. ARC's errors: an unknown resource or shift is ``ResourceNotFoundException``; a zone ID the region lacks,
a malformed expiry or a missing field is ``ValidationException`` (with its reason); a second active shift on a
resource is ``ConflictException`` (``ZonalShiftAlreadyExists`` for the same zone, else
``SimultaneousZonalShiftsConflict``), cancelling one that is not active ``ConflictException``
(``ZonalShiftStatusNotActive``). :meth:`ZonalShiftService.autoshift` starts what AWS itself starts during a zonal
impairment (``shiftType`` ZONAL_AUTOSHIFT, no operator call). Served for every moto server this process starts
(:func:`install`), with each server's shifts in the :class:`ZonalShiftService` :func:`register` gives it.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, unquote

from moto.backends import get_backend
from moto.ec2.models.availability_zones_and_regions import RegionsAndZonesBackend
from moto.moto_server.werkzeug_app import DomainDispatcherApplication

from autoscaler.clock import utc_now

SIGNING_SCOPE = "/arc-zonal-shift/aws4_request"
_EXPIRES_IN = re.compile(r"^([1-9][0-9]*)(m|h)$")
MAX_EXPIRY = timedelta(days=3)


class ArcError(Exception):
    def __init__(self, status: int, code: str, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.status, self.code, self.reason = status, code, reason

    def body(self) -> dict[str, str]:
        return {"message": str(self), **({"reason": self.reason} if self.reason else {})}


@dataclass
class Shift:
    id: str
    resource: str
    away_from: str  # a zone ID
    start: datetime
    expiry: datetime
    comment: str
    shift_type: str = "ZONAL_SHIFT"
    cancelled: bool = False

    def status(self, now: datetime) -> str:
        return "CANCELED" if self.cancelled else "EXPIRED" if self.expiry <= now else "ACTIVE"

    def view(self, now: datetime) -> dict[str, Any]:
        return {
            "zonalShiftId": self.id,
            "resourceIdentifier": self.resource,
            "awayFrom": self.away_from,
            "startTime": self.start.timestamp(),
            "expiryTime": self.expiry.timestamp(),
            "status": self.status(now),
            "comment": self.comment,
            "shiftType": self.shift_type,
        }


@dataclass
class ZonalShiftService:
    """One moto server's shifts. ``clock`` is the world's (a scenario sets its virtual clock)."""

    clock: Callable[[], datetime] = utc_now
    shifts: dict[str, Shift] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    # --- what the operator and AWS do --------------------------------------------------------------------
    def start(self, resource: str, away_from: str, expires_in: str, comment: str, kind: str = "ZONAL_SHIFT") -> Shift:
        with self.lock:
            now = self.clock()
            _resource(resource)
            if away_from not in _zone_ids(resource.split(":")[3]):
                raise ArcError(400, "ValidationException", f"{away_from} is not a zone ID of the region", "InvalidAz")
            lasts = _duration(expires_in)  # the input is validated before any conflict, as ARC does
            active = [s for s in self._active(now) if s.resource == resource]
            if active:
                same = active[0].away_from == away_from
                reason = "ZonalShiftAlreadyExists" if same else "SimultaneousZonalShiftsConflict"
                raise ArcError(409, "ConflictException", f"an active zonal shift exists for {resource}", reason)
            shift = Shift(uuid.uuid4().hex, resource, away_from, now, now + lasts, comment, kind)
            self.shifts[shift.id] = shift
            return shift

    def autoshift(self, resource: str, away_from: str, expires_in: str = "3h") -> Shift:
        return self.start(resource, away_from, expires_in, "zonal autoshift", kind="ZONAL_AUTOSHIFT")

    def cancel(self, shift_id: str) -> Shift:
        with self.lock:
            shift = self.shifts.get(shift_id)
            if shift is None:
                raise ArcError(404, "ResourceNotFoundException", f"no zonal shift {shift_id}")
            if shift.status(self.clock()) != "ACTIVE":
                raise ArcError(
                    409, "ConflictException", f"zonal shift {shift_id} is not active", "ZonalShiftStatusNotActive"
                )
            shift.cancelled = True
            return shift

    def active(self, resource: str) -> list[Shift]:
        with self.lock:
            return [s for s in self._active(self.clock()) if s.resource == resource]

    def _active(self, now: datetime) -> Iterable[Shift]:
        return (s for s in self.shifts.values() if s.status(now) == "ACTIVE")

    # --- the API -----------------------------------------------------------------------------------------
    def answer(self, method: str, path: str, query: dict[str, list[str]], body: dict[str, Any]) -> tuple[int, Any]:
        now = self.clock()
        # One segment after the collection: an ARN's own slashes (cluster/<name>) belong to it.
        parts = [unquote(p) for p in path.strip("/").split("/", 1)]
        if method == "GET" and len(parts) == 2 and parts[0] == "managedresources":
            name = _resource(parts[1])
            shifts = self.active(parts[1])
            in_resource = [{**s.view(now), "appliedStatus": "APPLIED"} for s in shifts]
            for item in in_resource:
                item.pop("status")
            autoshifts = [
                {"appliedStatus": "APPLIED", "awayFrom": s.away_from, "startTime": s.start.timestamp()}
                for s in shifts
                if s.shift_type == "ZONAL_AUTOSHIFT"
            ]
            return 200, {
                "arn": parts[1],
                "name": name,
                "appliedWeights": {},
                "zonalShifts": in_resource,
                "autoshifts": autoshifts,
                "zonalAutoshiftStatus": "DISABLED",
            }
        if parts == ["zonalshifts"] and method == "POST":
            missing = [k for k in ("resourceIdentifier", "awayFrom", "expiresIn", "comment") if k not in body]
            if missing:
                raise ArcError(400, "ValidationException", f"missing {', '.join(missing)}", "MissingValue")
            shift = self.start(body["resourceIdentifier"], body["awayFrom"], body["expiresIn"], body["comment"])
            view = shift.view(now)
            view.pop("shiftType")
            return 201, view
        if parts == ["zonalshifts"] and method == "GET":
            resource, status = query.get("resourceIdentifier", [None])[0], query.get("status", [None])[0]
            with self.lock:
                items = [s.view(now) for s in self.shifts.values()]
            items = [i for i in items if resource in (None, i["resourceIdentifier"]) and status in (None, i["status"])]
            return 200, {"items": items}
        if len(parts) == 2 and parts[0] == "zonalshifts" and method == "DELETE":
            view = self.cancel(parts[1]).view(now)
            view.pop("shiftType")
            return 200, view
        raise ArcError(400, "ValidationException", f"{method} {path} is not an ARC zonal shift operation")


def _resource(arn: str) -> str:
    """The cluster's name; ResourceNotFoundException unless ``arn`` is an EKS cluster moto has."""
    match = re.match(r"^arn:aws[a-z-]*:eks:([a-z0-9-]+):(\d{12}):cluster/(.+)$", arn)
    if match is None:
        raise ArcError(400, "ValidationException", f"{arn} is not a resource ARN", "InvalidResourceIdentifier")
    region, account, name = match.groups()
    clusters = get_backend("eks")[account][region].clusters
    if name not in clusters:
        raise ArcError(404, "ResourceNotFoundException", f"resource {arn} is not a managed resource")
    return name


def _zone_ids(region: str) -> set[str]:
    return {z.zone_id for z in RegionsAndZonesBackend.zones.get(region, [])}


def _duration(text: str) -> timedelta:
    match = _EXPIRES_IN.match(text or "")
    duration = None
    if match:
        amount = int(match.group(1))
        duration = timedelta(minutes=amount) if match.group(2) == "m" else timedelta(hours=amount)
    if duration is None or duration > MAX_EXPIRY:
        raise ArcError(
            400, "ValidationException", f"expiresIn {text!r}: 1m to 3 days, as 30m or 2h", "InvalidExpiresIn"
        )
    return duration


_services: dict[str, ZonalShiftService] = {}  # the moto server's host:port -> its shifts
_installed = threading.Lock()


def register(netloc: str, service: ZonalShiftService) -> None:
    install()
    _services[netloc] = service


def unregister(netloc: str) -> None:
    _services.pop(netloc, None)


def install() -> None:
    """Route ARC's requests (signed for ``arc-zonal-shift``) on every moto server to its service (idempotent)."""
    with _installed:
        if getattr(DomainDispatcherApplication, "_arc_zonal_shift", False):
            return
        original = DomainDispatcherApplication.get_application

        def get_application(self: DomainDispatcherApplication, environ: dict[str, Any]) -> Any:
            if SIGNING_SCOPE in environ.get("HTTP_AUTHORIZATION", ""):
                service = _services.get(environ.get("HTTP_HOST", ""))
                if service is not None:
                    return lambda env, start_response: _serve(service, env, start_response)
            return original(self, environ)

        DomainDispatcherApplication.get_application = get_application  # type: ignore[method-assign]
        DomainDispatcherApplication._arc_zonal_shift = True  # type: ignore[attr-defined]


def _serve(service: ZonalShiftService, environ: dict[str, Any], start_response: Any) -> list[bytes]:
    length = int(environ.get("CONTENT_LENGTH") or 0)
    raw = environ["wsgi.input"].read(length) if length else b""
    headers = [("Content-Type", "application/json")]
    try:
        body = json.loads(raw) if raw else {}
        status, answer = service.answer(
            environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), parse_qs(environ.get("QUERY_STRING", "")), body
        )
    except ArcError as error:
        status, answer = error.status, error.body()
        headers.append(("x-amzn-ErrorType", error.code))
    start_response(f"{status} {'OK' if status < 400 else 'Error'}", headers)
    return [json.dumps(answer).encode()]
