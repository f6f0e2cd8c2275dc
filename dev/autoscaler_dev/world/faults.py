"""Faults a scenario injects into the embedded world, at given rates, from a seed (so a failing run repeats).

    faults:
      seed: 7
      ec2_throttle: 0.05        # EC2 requests answered 503 RequestLimitExceeded (the SDK's retries absorb most)
      fleet_capacity: 0.2       # CreateFleet requests answered InsufficientInstanceCapacity for every override
      fleet_partial: 0.2        # CreateFleet for several instances launches only some, with errors for the rest
      kube_errors: 0.02         # Kubernetes API requests answered 429, 500 or 503 (or 409 on writes)
      kube_page: 20             # the API server returns at most 20 items a page, so small worlds' lists paginate
      continue_expired: 0.2     # a list's next page answered 410 Gone (Expired): the client must list again
      kill: 0.05                # invocations that die at a random API call (Lambda timeout, lost sandbox)
      duplicates: 0.1           # SQS messages delivered again after they were handled
      reorder: true             # standard (not FIFO) queues deliver each batch in a random order
      event_duplicates: 0.05    # EventBridge delivers a forwarder event twice
      clock_skew: 2             # each function's clock off the world's by up to ±2 s (its own, drawn once)
      event_late: 0.1          # EventBridge delivers a forwarder event 5 to 60 s late (after later ones)
      visibility_expiry: 0.05   # an SQS batch handed to a second invocation while the first still works on it
      table_errors: 0.05        # state table (DynamoDB) requests answered ProvisionedThroughputExceeded or 500/503
      profile_delay: 20         # for 20 s after an instance profile is created, CreateFleet rejects it (IAM's
                                # eventual consistency): InvalidParameterValue "Invalid IAM Instance Profile name"

EC2 faults are injected in moto's server, in front of every client the functions build; Kubernetes faults in the
emulator's request path and store (``kube_faults``, with the ``kube-outage`` action's outages); kills in the HTTP
layer under both SDKs; duplicates in the event source mapping's part.
Every injected fault is counted by kind.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode

from pydantic import BaseModel, ConfigDict, Field

from autoscaler_dev.harness import InvocationDied
from autoscaler_dev.kube_emulator.server import KubeApi
from autoscaler_dev.world.kube_faults import KubeFaults


class FaultRates(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seed: int = 0
    ec2_throttle: float = Field(default=0.0, ge=0, le=1)
    fleet_capacity: float = Field(default=0.0, ge=0, le=1)
    fleet_partial: float = Field(default=0.0, ge=0, le=1)
    reorder: bool = False
    event_duplicates: float = Field(default=0.0, ge=0, le=1)
    kube_errors: float = Field(default=0.0, ge=0, le=1)
    kube_page: int = Field(default=0, ge=0)
    continue_expired: float = Field(default=0.0, ge=0, le=1)
    kill: float = Field(default=0.0, ge=0, le=1)
    duplicates: float = Field(default=0.0, ge=0, le=1)
    profile_delay: float = Field(default=0.0, ge=0)
    table_errors: float = Field(default=0.0, ge=0, le=1)
    visibility_expiry: float = Field(default=0.0, ge=0, le=1)
    event_late: float = Field(default=0.0, ge=0, le=1)
    clock_skew: float = Field(default=0.0, ge=0)


_THROTTLED = (
    b"<?xml version='1.0' encoding='UTF-8'?><Response><Errors><Error><Code>RequestLimitExceeded</Code>"
    b"<Message>Request limit exceeded.</Message></Error></Errors><RequestID>%s</RequestID></Response>"
)
_TABLE_ERRORS = (
    ("400 Bad Request", "ProvisionedThroughputExceededException"),
    ("500 Internal Server Error", "InternalServerError"),
    ("503 Service Unavailable", "ServiceUnavailable"),
)
_SERVICE = re.compile(r"Credential=[^/]+/[^/]+/[^/]+/([^/]+)/")


class Faults:
    def __init__(self, rates: FaultRates) -> None:
        self.rates = rates
        self.random = random.Random(rates.seed)
        self.injected: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.kube = KubeFaults(self)
        self.now: Callable[[], float] = lambda: 0.0  # the world's virtual seconds (the runner sets its clock)
        self.profile_created_at = float("-inf")  # when the newest instance profile was created
        self.on_capacity_refused: Callable[[], None] = lambda: None  # the invariants excuse what EC2 refused

    def chance(self, rate: float, kind: str) -> bool:
        with self.lock:
            hit = rate > 0 and self.random.random() < rate
            if hit and kind:
                self.injected[kind] += 1
            return hit

    # --- EC2, in moto's server ------------------------------------------------------------------------
    def wrap_moto(self, server: Any) -> None:
        """Put the EC2 and DynamoDB faults in front of moto's WSGI application."""
        wsgi = server._server
        app = wsgi.app

        def faulty(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
            service = _SERVICE.search(environ.get("HTTP_AUTHORIZATION", ""))
            if service is not None and service.group(1) == "dynamodb":
                return self._table(app, environ, start_response)
            if service is None or service.group(1) not in ("ec2", "iam"):
                return app(environ, start_response)
            size = int(environ.get("CONTENT_LENGTH") or 0)
            body = environ["wsgi.input"].read(size) if size else b""
            environ["wsgi.input"] = io.BytesIO(body)
            form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
            if service.group(1) == "iam":
                if form.get("Action") == "CreateInstanceProfile":
                    self.profile_created_at = self.now()
                return app(environ, start_response)
            if self.chance(self.rates.ec2_throttle, "ec2_throttle"):
                start_response("503 Service Unavailable", [("Content-Type", "text/xml")])
                return [_THROTTLED % uuid.uuid4().hex.encode()]
            if form.get("Action") == "CreateFleet" and self._profile_propagating():
                start_response("200 OK", [("Content-Type", "text/xml")])
                return [_fleet_error(form, *_PROFILE_NOT_READY)]
            if form.get("Action") == "CreateFleet" and self.chance(self.rates.fleet_capacity, "fleet_capacity"):
                self.on_capacity_refused()
                start_response("200 OK", [("Content-Type", "text/xml")])
                return [_fleet_error(form)]
            wanted = int(form.get("TargetCapacitySpecification.TotalTargetCapacity") or 1)
            if (
                form.get("Action") == "CreateFleet"
                and wanted > 1
                and self.chance(self.rates.fleet_partial, "fleet_partial")
            ):
                self.on_capacity_refused()
                return self._partial_fleet(app, environ, start_response, form, wanted)
            return app(environ, start_response)

        wsgi.app = faulty

    def _partial_fleet(
        self,
        app: Callable[..., Any],
        environ: dict[str, Any],
        start_response: Callable[..., Any],
        form: dict[str, str],
        wanted: int,
    ) -> Any:
        """Launch only some of the instances asked for; the answer lists capacity errors for the rest, as EC2's
        CreateFleet (type instant) does when a pool runs dry part way."""
        launched = self.random.randint(1, wanted - 1)
        form = {**form, "TargetCapacitySpecification.TotalTargetCapacity": str(launched)}
        body = urlencode(form).encode()
        environ["wsgi.input"], environ["CONTENT_LENGTH"] = io.BytesIO(body), str(len(body))
        captured: dict[str, Any] = {}

        def capture(status: str, headers: list[tuple[str, str]], *rest: Any) -> Any:
            captured.update(status=status, headers=headers)
            return lambda _: None

        answer = b"".join(app(environ, capture)).decode()
        errors = _fleet_error(form).decode()
        items = errors[errors.index("<errorSet>") + len("<errorSet>") : errors.index("</errorSet>")]
        answer = re.sub(r"<errorSet\s*/>|<errorSet>\s*</errorSet>", "<errorSet></errorSet>", answer, count=1)
        if "<errorSet>" not in answer:
            answer = answer.replace("</CreateFleetResponse>", "<errorSet></errorSet></CreateFleetResponse>")
        answer = answer.replace("<errorSet>", "<errorSet>" + items, 1)
        payload = answer.encode()
        headers = [(k, v) for k, v in captured.get("headers", []) if k.lower() != "content-length"]
        start_response(captured.get("status", "200 OK"), [*headers, ("Content-Length", str(len(payload)))])
        return [payload]

    def _table(self, app: Callable[..., Any], environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        """The state table throttling (400 ProvisionedThroughputExceededException) or unavailable (500
        InternalServerError, 503 ServiceUnavailable): botocore retries all three, then the caller sees them."""
        if not self.chance(self.rates.table_errors, ""):
            return app(environ, start_response)
        with self.lock:
            status, error = self.random.choice(_TABLE_ERRORS)
            self.injected["table_throttle" if status.startswith("400") else "table_unavailable"] += 1
        payload = json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{error}", "message": error}).encode()
        start_response(status, [("Content-Type", "application/x-amz-json-1.0"), ("Content-Length", str(len(payload)))])
        return [payload]

    def _profile_propagating(self) -> bool:
        """Whether a CreateFleet now meets an instance profile IAM has not yet made visible to EC2 (any fleet
        right after any profile's creation: the world's nodeclasses are few)."""
        if self.now() - self.profile_created_at >= self.rates.profile_delay:
            return False
        with self.lock:
            self.injected["profile_not_ready"] += 1
        return True

    # --- Kubernetes, in the emulator ------------------------------------------------------------------
    def wrap_kube(self, api: KubeApi) -> None:
        self.kube.wrap(api)

    # --- invocations ----------------------------------------------------------------------------------
    @contextlib.contextmanager
    def invocation(self) -> Iterator[None]:
        """While the handler runs: maybe die at its n-th HTTP request (urllib3 carries boto3's and the
        kubernetes client's requests alike)."""
        if not self.chance(self.rates.kill, ""):
            yield
            return
        import urllib3.connectionpool

        pool = urllib3.connectionpool.HTTPConnectionPool
        original = pool.urlopen
        countdown = [self.random.randint(1, 30)]

        def urlopen(this: Any, *args: Any, **kwargs: Any) -> Any:
            with self.lock:  # the handler's own worker threads count too
                countdown[0] -= 1
                dies = countdown[0] == 0
            if dies:
                self.injected["kill"] += 1
                raise InvocationDied("the invocation was cut short here")
            return original(this, *args, **kwargs)

        pool.urlopen = urlopen  # type: ignore[method-assign,assignment]
        try:
            yield
        finally:
            pool.urlopen = original  # type: ignore[method-assign]

    def duplicate(self) -> bool:
        return self.chance(self.rates.duplicates, "duplicates")

    def visibility_expired(self) -> bool:
        return self.chance(self.rates.visibility_expiry, "visibility_expiry")

    def clock_skew(self, function: str) -> float:
        """Seconds ``function``'s clock is off the world's, drawn when its container starts."""
        if not self.rates.clock_skew:
            return 0.0
        with self.lock:
            self.injected["clock_skew"] += 1
            return self.random.uniform(-self.rates.clock_skew, self.rates.clock_skew)

    def event_delay(self) -> float:
        """How late EventBridge delivers the next forwarder event, in seconds (0: on time)."""
        if not self.chance(self.rates.event_late, "event_late"):
            return 0.0
        with self.lock:
            return self.random.uniform(5.0, 60.0)

    def duplicate_event(self) -> bool:
        return self.chance(self.rates.event_duplicates, "event_duplicates")

    def reordered(self, messages: list[Any], fifo: bool) -> list[Any]:
        """A standard queue's batch in any order (FIFO queues keep theirs)."""
        if not self.rates.reorder or fifo or len(messages) < 2:
            return messages
        shuffled = list(messages)
        with self.lock:
            self.random.shuffle(shuffled)
        if shuffled != messages:
            self.injected["reorder"] += 1
        return shuffled


_CAPACITY = (
    "InsufficientInstanceCapacity",
    "We currently do not have sufficient capacity in the Availability Zone you requested.",
)
_PROFILE_NOT_READY = ("InvalidParameterValue", "Invalid IAM Instance Profile name")


def _fleet_error(form: dict[str, str], code: str = _CAPACITY[0], message: str = _CAPACITY[1]) -> bytes:
    """A CreateFleet answer that launched nothing: ``code`` for every override of every launch template asked for."""
    lifecycle = "spot" if form.get("TargetCapacitySpecification.DefaultTargetCapacityType") == "spot" else "on-demand"
    items = []
    config = 1
    while f"LaunchTemplateConfigs.{config}.LaunchTemplateSpecification.LaunchTemplateName" in form:
        template = form[f"LaunchTemplateConfigs.{config}.LaunchTemplateSpecification.LaunchTemplateName"]
        index = 1
        while f"LaunchTemplateConfigs.{config}.Overrides.{index}.InstanceType" in form:
            prefix = f"LaunchTemplateConfigs.{config}.Overrides.{index}."
            items.append(
                f"<item><errorCode>{code}</errorCode><errorMessage>{message}</errorMessage>"
                "<launchTemplateAndOverrides><launchTemplateSpecification>"
                f"<launchTemplateName>{template}</launchTemplateName><version>$Latest</version>"
                "</launchTemplateSpecification><overrides>"
                f"<instanceType>{form[prefix + 'InstanceType']}</instanceType>"
                f"<availabilityZone>{form.get(prefix + 'AvailabilityZone', '')}</availabilityZone>"
                f"<subnetId>{form.get(prefix + 'SubnetId', '')}</subnetId></overrides></launchTemplateAndOverrides>"
                f"<lifecycle>{lifecycle}</lifecycle></item>"
            )
            index += 1
        config += 1
    return (
        "<?xml version='1.0' encoding='UTF-8'?><CreateFleetResponse xmlns='http://ec2.amazonaws.com/doc/2016-11-15/'>"
        f"<requestId>{uuid.uuid4()}</requestId><fleetId>fleet-{uuid.uuid4()}</fleetId>"
        f"<errorSet>{''.join(items)}</errorSet><fleetInstanceSet/></CreateFleetResponse>"
    ).encode()
