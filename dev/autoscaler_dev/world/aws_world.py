"""The embedded AWS world: moto over HTTP with what an EKS account has (tests, ``autoscaler plan --embedded``,
benchmarks). Development only: moto is a dev dependency, never in the Lambda layers.

``AWSWorld.start()`` runs moto's ThreadedMotoServer on 127.0.0.1 (a free port) and builds, through the
ordinary APIs: a VPC with one subnet in each of three zones (tagged ``karpenter.sh/discovery=<cluster>``),
a tagged security group, a node role, an EKS cluster, and placement groups ``world-cluster``, ``world-spread`` and
``world-partition`` (three partitions; moto has none, ``ec2_placement`` serves them). Where moto has gaps it
seeds moto's own in-process backend (the server runs in this process): the EKS-optimized AMI SSM parameters under
``/aws/service`` (the API refuses writes there) and the AMIs they point to, with chosen creation dates.

EC2's allocation is modelled in moto's server (``ec2_fleet``, ``ec2_market``): CreateFleet of type instant fills
its target over pools (instance type x zone x capacity type) by its allocation strategy, with finite capacity when
``capacity`` says so (unlimited by default; scenarios set finite pools), reports InsufficientInstanceCapacity per
override, launches into each override's subnet, and honours ClientToken; spot prices differ by family and zone
(``seed``), in DescribeSpotPriceHistory as in the fleet's choices. Fault injection uses botocore's event hooks on a
client (``with world.fleet_capacity(...)``, ``with world.throttle(...)``).

Known moto gap: instances that CreateFleet launches do not take the launch template's security groups, network
interfaces or metadata options, so tests assert on the launch template data (DescribeLaunchTemplateVersions) and
build instances for drift tests with RunInstances; the simulation's EC2 actor gives fleet instances their
template's groups. Also filled here: events delivered to targets carry their ``account``.

In tests use the ``aws_world`` fixture (session-scoped: the server and the account are shared, tests must not
assume a clean account; create what you need with unique names) from ``tests.support.aws_fixtures``.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

os.environ.setdefault("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")  # 1300 sample AMIs slow every describe

import logging

import boto3
from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders
from moto.backends import get_backend
from moto.ec2.models.amis import Ami
from moto.moto_api._internal.models import moto_api_backend
from moto.server import ThreadedMotoServer
from moto.ssm.models import Parameter

from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.clock import utc_now
from autoscaler.providers.aws.clients import AWSClients
from autoscaler.settings import Settings
from autoscaler_dev.world import arc_zonal_shift, ec2_fleet, ec2_placement, ec2_reservations, ec2_tags, eks_access
from autoscaler_dev.world.arc_zonal_shift import ZonalShiftService
from autoscaler_dev.world.ec2_fleet import Market
from autoscaler_dev.world.ec2_market import CapacitySettings

ACCOUNT = "123456789012"
PLACEMENT_GROUPS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("world-cluster", "cluster", {}),
    ("world-spread", "spread", {}),
    ("world-partition", "partition", {"PartitionCount": 3}),
)
REGION = "us-west-2"
ZONES = ("us-west-2a", "us-west-2b", "us-west-2c")
CLUSTER = "world"
NODE_ROLE = "KarpenterNodeRole-world"
KUBERNETES_VERSION = "1.30"
# A handful of types keep DescribeInstanceTypes fast: general purpose x86 and arm64, a GPU and a Neuron type.
INSTANCE_TYPES = ("m5.large", "m5.xlarge", "m5.2xlarge", "c6g.large", "c6g.xlarge", "g4dn.xlarge", "inf1.xlarge")
DISCOVERY = {"karpenter.sh/discovery": CLUSTER}
CA_BUNDLE = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nd29ybGQ=\n-----END CERTIFICATE-----\n").decode()
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": REGION}


@dataclass
class AWSWorld:
    endpoint: str
    server: ThreadedMotoServer
    subnets: dict[str, str] = field(default_factory=dict)  # zone -> subnet id
    security_group: str = ""
    role: str = NODE_ROLE
    images: dict[str, str] = field(default_factory=dict)  # "al2023/x86_64/standard" -> ami id
    market: Market = field(default_factory=lambda: Market(ZONES))
    zonal_shifts: ZonalShiftService = field(default_factory=ZonalShiftService)  # ARC, which moto lacks
    _statuses: dict[str, Any] = field(default_factory=dict)

    # --- lifecycle ----------------------------------------------------------------------------------
    @classmethod
    def start(cls, seed: int = 0, capacity: CapacitySettings | None = None) -> AWSWorld:
        """``seed`` fixes the spot prices and pool sizes; ``capacity`` what the pools hold (unlimited: None)."""
        for key, value in CREDENTIALS.items():
            os.environ.setdefault(key, value)
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise
        _events_carry_their_account()
        eks_access.install()
        ec2_placement.install()
        ec2_reservations.install()
        ec2_tags.install()
        # moto's backends are global to the process and outlive a server: a world that an earlier one (a test that
        # did not reset) left behind would make this one's fixed names (the node role, the cluster) collide.
        moto_api_backend.reset()
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        world = cls(endpoint=f"http://{host}:{port}", server=server)
        world.market = Market(ZONES, seed, capacity or CapacitySettings())
        ec2_fleet.register(world.endpoint, world.market)
        arc_zonal_shift.register(f"{host}:{port}", world.zonal_shifts)
        world._build()
        return world

    def stop(self) -> None:
        ec2_fleet.unregister(self.endpoint)
        arc_zonal_shift.unregister(self.endpoint.removeprefix("http://"))
        self.server.stop()

    def client(self, service: Any) -> Any:
        return boto3.client(service, region_name=REGION, endpoint_url=self.endpoint)

    def clients(self) -> AWSClients:
        """Fresh clients (hooks registered on one set do not leak into another)."""
        return AWSClients(REGION, endpoint_url=self.endpoint)

    def settings(self, **overrides: Any) -> Settings:
        """Settings for this world. moto has no Pricing API, so prices come from the shipped table
        (``isolated_vpc``) unless a test says otherwise."""
        return Settings(cluster_name=CLUSTER, region=REGION, **{"isolated_vpc": True, **overrides})

    def _build(self) -> None:
        ec2 = self.client("ec2")
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        for index, zone in enumerate(ZONES):
            subnet = ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{index * 32}.0/{20 + index}", AvailabilityZone=zone)
            self.subnets[zone] = subnet["Subnet"]["SubnetId"]
            self.tag(self.subnets[zone], {**DISCOVERY, "Name": f"private-{zone}"})
        group = ec2.create_security_group(GroupName=f"{CLUSTER}-nodes", Description="nodes", VpcId=vpc)
        self.security_group = group["GroupId"]
        self.tag(self.security_group, DISCOVERY)
        # One placement group of each strategy, for classes that select one by name (ec2_placement).
        for name, strategy, extra in PLACEMENT_GROUPS:
            ec2.create_placement_group(GroupName=name, Strategy=strategy, **extra)
        iam = self.client("iam")
        iam.create_role(RoleName=self.role, AssumeRolePolicyDocument="{}")
        role_arn = iam.get_role(RoleName=self.role)["Role"]["Arn"]
        self.client("eks").create_cluster(
            name=CLUSTER,
            version=KUBERNETES_VERSION,
            roleArn=role_arn,
            resourcesVpcConfig={"subnetIds": list(self.subnets.values()), "securityGroupIds": [self.security_group]},
        )
        # moto's CA is random text; nodes (and AL2023's NodeConfig) need base64 of a PEM.
        eks = get_backend("eks")[ACCOUNT][REGION].clusters[CLUSTER]
        eks.certificate_authority = {"data": CA_BUNDLE}
        self.seed_eks_amis()

    @property
    def cluster_arn(self) -> str:
        return str(get_backend("eks")[ACCOUNT][REGION].clusters[CLUSTER].arn)

    def zone_id(self, zone: str) -> str:
        """The zone ID behind a zone name (as DescribeAvailabilityZones and the subnets give it)."""
        found = self.client("ec2").describe_availability_zones(ZoneNames=[zone])["AvailabilityZones"]
        return str(found[0]["ZoneId"])

    # --- moto's gaps, filled in its backend ----------------------------------------------------------
    def seed_parameter(self, name: str, value: str) -> None:
        """Write an SSM parameter, including the public ``/aws/service/...`` ones the API refuses."""
        backend = get_backend("ssm")[ACCOUNT][REGION]
        backend._parameters[name].append(
            Parameter(ACCOUNT, name, value, "String", None, None, None, utc_now(), 1, "aws:ec2:image")  # type: ignore[abstract]
        )

    def add_image(self, name: str, architecture: str = "x86_64", created: datetime | None = None, **tags: str) -> str:
        """Register an AMI with a chosen creation date (DescribeImages sorts are by it)."""
        backend = get_backend("ec2")[ACCOUNT][REGION]
        image_id = "ami-" + hashlib.sha256(f"{name}/{architecture}".encode()).hexdigest()[:17]
        backend.amis[image_id] = Ami(
            backend,
            image_id,
            name=name,
            owner_id=ACCOUNT,
            architecture=architecture,
            creation_date=created or datetime(2026, 1, 1, tzinfo=UTC),
            root_device_name="/dev/xvda",
            region_name=REGION,
            tags=dict(tags) or None,
        )
        return image_id

    def seed_eks_amis(
        self, version: str = KUBERNETES_VERSION, created: datetime | None = None, release: str = ""
    ) -> None:
        """The recommended EKS AMIs of every family, as SSM parameters pointing at registered images. Called again
        with another ``release``, it publishes a new version of each (what an ``@latest`` alias then resolves)."""
        k8s = version
        base = f"/aws/service/eks/optimized-ami/{k8s}"
        paths = {
            "al2/x86_64/standard": (f"{base}/amazon-linux-2/recommended/image_id", "x86_64"),
            "al2/arm64/standard": (f"{base}/amazon-linux-2-arm64/recommended/image_id", "arm64"),
            "al2/x86_64/gpu": (f"{base}/amazon-linux-2-gpu/recommended/image_id", "x86_64"),
            "bottlerocket/x86_64/standard": (
                f"/aws/service/bottlerocket/aws-k8s-{k8s}/x86_64/latest/image_id",
                "x86_64",
            ),
            "bottlerocket/arm64/standard": (f"/aws/service/bottlerocket/aws-k8s-{k8s}/arm64/latest/image_id", "arm64"),
            "windows2022/x86_64/standard": (
                f"/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-{k8s}/image_id",
                "x86_64",
            ),
        }
        for arch, variants in {"x86_64": ("standard", "nvidia", "neuron"), "arm64": ("standard",)}.items():
            for variant in variants:
                path = f"{base}/amazon-linux-2023/{arch}/{variant}/recommended/image_id"
                paths[f"al2023/{arch}/{variant}"] = (path, arch)
        for key, (path, arch) in paths.items():
            image = self.add_image(f"eks-{key.replace('/', '-')}-{k8s}{release and '-' + release}", arch, created)
            self.images[key] = image
            self.seed_parameter(path, image)

    # --- conveniences --------------------------------------------------------------------------------
    def tag(self, resource: str, tags: dict[str, str]) -> None:
        self.client("ec2").create_tags(Resources=[resource], Tags=[{"Key": k, "Value": v} for k, v in tags.items()])

    def reserve(self, instance_type: str, zone: str, count: int, **fields: Any) -> str:
        """A capacity reservation (``kind="capacity-block"`` for a block, ``end=`` its end) in this account, as
        EC2 reports it; its id."""
        backend = get_backend("ec2")[ACCOUNT][REGION]
        return ec2_reservations.add(backend, instance_type=instance_type, zone=zone, total=count, **fields).id

    def nodeclass(self, name: str, ready: bool = True, **spec: Any) -> EC2NodeClass:
        """An EC2NodeClass selecting this world's subnets and group (AL2023 by alias unless ``spec`` says
        otherwise), with a Ready status resolved from this world when ``ready``."""
        body = {
            "role": self.role,
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": DISCOVERY}],
            "securityGroupSelectorTerms": [{"tags": DISCOVERY}],
            **spec,
        }
        nodeclass = EC2NodeClass.model_validate({"metadata": {"name": name, "uid": f"uid-{name}"}, "spec": body})
        if not ready:
            return nodeclass
        return nodeclass.model_copy(update={"status": self.ready_status(nodeclass)})

    def ready_status(self, nodeclass: EC2NodeClass) -> Any:
        """The status the nodeclass controller computes for ``nodeclass`` here (memoized per spec and name:
        the world's network and EKS AMIs do not change under tests)."""
        from autoscaler.controllers.nodeclass import NodeClassController
        from autoscaler.runtime import aws_adapters

        key = json.dumps([nodeclass.name, nodeclass.spec.to_dict()], sort_keys=True)
        if key not in self._statuses:
            resolver = aws_adapters(self.settings(), clients=self.clients()).resolver
            controller = NodeClassController(None, resolver)  # type: ignore[arg-type]  # no Kubernetes needed
            status, errors = controller.resolve_status(nodeclass)
            assert not errors, errors
            self._statuses[key] = status
        return self._statuses[key]

    # --- fault injection and EC2 behaviour moto lacks ------------------------------------------------
    @contextmanager
    def throttle(self, clients: AWSClients, service: str, operation: str, times: int) -> Iterator[list[int]]:
        """The next ``times`` HTTP calls of ``operation`` answer 503 RequestLimitExceeded (before retries,
        so botocore's retry policy is exercised). Yields a list counting the throttled calls."""
        client = getattr(clients, service)
        throttled: list[int] = []

        def send(request: Any, **_: Any) -> AWSResponse | None:
            if len(throttled) >= times:
                return None
            throttled.append(1)
            body = (
                b"<Response><Errors><Error><Code>RequestLimitExceeded</Code><Message>Request limit exceeded."
                b"</Message></Error></Errors><RequestID>throttled</RequestID></Response>"
            )
            return _response(request.url, 503, body)

        event = f"before-send.{client.meta.service_model.endpoint_prefix}.{operation}"
        _events(client).register(event, send)
        try:
            yield throttled
        finally:
            _events(client).unregister(event, send)

    @contextmanager
    def fleet_capacity(self, clients: AWSClients, exhausted: Callable[[dict[str, Any]], bool]) -> Iterator[None]:
        """Capacity errors for chosen overrides, whatever the pools hold: overrides for which ``exhausted(override)``
        holds fail with InsufficientInstanceCapacity and the fleet falls through to the others. When every override
        is exhausted, nothing launches."""
        client = clients.ec2
        call: dict[str, Any] = {"errors": [], "remaining": 0}

        def params(params: dict[str, Any], **_: Any) -> None:
            lifecycle = params.get("TargetCapacitySpecification", {}).get("DefaultTargetCapacityType", "on-demand")
            call["errors"], configs = [], []
            for config in params.get("LaunchTemplateConfigs", []):
                overrides = config.get("Overrides", [])
                call["errors"] += [
                    _capacity_error(config["LaunchTemplateSpecification"], o, lifecycle)
                    for o in overrides
                    if exhausted(o)
                ]
                kept = [o for o in overrides if not exhausted(o)]
                if kept:
                    configs.append({**config, "Overrides": kept})
            params["LaunchTemplateConfigs"] = configs
            call["remaining"] = len(configs)

        def before(**_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
            if call["remaining"]:
                return None
            answer = {"FleetId": "fleet-exhausted", "Errors": list(call["errors"]), "Instances": []}
            return _response(self.endpoint, 200), answer

        def after(parsed: dict[str, Any], **_: Any) -> None:
            parsed["Errors"] = [*parsed.get("Errors", []), *call["errors"]]

        hooks = {"provide-client-params": params, "before-call": before, "after-call": after}
        for event, hook in hooks.items():
            _events(client).register(f"{event}.ec2.CreateFleet", hook)
        try:
            yield
        finally:
            for event, hook in hooks.items():
                _events(client).unregister(f"{event}.ec2.CreateFleet", hook)

    @staticmethod
    def fleet_behaves_like_ec2(clients: AWSClients) -> list[dict[str, Any]]:
        """The CreateFleet answers EC2 served through ``clients`` that launched anew: a repeated ClientToken is
        answered by the world's EC2 with the first call's answer (``ec2_fleet``) and is not listed again."""
        served: list[dict[str, Any]] = []
        fleets: set[str] = set()

        def after(parsed: dict[str, Any], **_: Any) -> None:
            if parsed.get("FleetId") not in fleets:
                fleets.add(str(parsed.get("FleetId")))
                served.append(parsed)

        _events(clients.ec2).register("after-call.ec2.CreateFleet", after)
        return served


def _capacity_error(template: dict[str, Any], override: dict[str, Any], lifecycle: str) -> dict[str, Any]:
    return {
        "LaunchTemplateAndOverrides": {"LaunchTemplateSpecification": template, "Overrides": override},
        "Lifecycle": lifecycle,
        "ErrorCode": "InsufficientInstanceCapacity",
        "ErrorMessage": "We currently do not have sufficient capacity in the Availability Zone you requested.",
    }


def _events(client: Any) -> Any:
    """A client's event hooks (typed loosely: our hooks may answer for the call, which botocore allows)."""
    return client.meta.events


def _response(url: str, status: int, body: bytes = b"") -> AWSResponse:
    return AWSResponse(url, status, HTTPHeaders(), _Raw(body))


class _Raw:
    """The minimal raw-body object AWSResponse reads."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body

    def read(self, *_: Any) -> bytes:
        return self._body


def _events_carry_their_account() -> None:
    """moto's EventBridge leaves ``account`` out of the events it delivers to targets (its default input template
    lacks it); EventBridge always sends it, and parsers (Powertools' EventBridgeModel) require it. The default
    template is also filled by JSONPath per field and event, which dominates PutEvents: without an input
    transformer the event is passed as EventBridge passes it, fields copied."""
    from moto.events.utils import EventTemplateParser

    if getattr(EventTemplateParser, "_whole_events", False):
        return
    original = EventTemplateParser.parse
    fields = ("version", "id", "detail-type", "source", "account", "time", "region", "resources", "detail")

    def parse(input_template: str, input_paths_map: dict[str, Any], event: Any) -> Any:
        if input_template or input_paths_map:
            return original(input_template, input_paths_map, event)
        return {key: copy.deepcopy(event[key]) for key in fields if key in event}

    EventTemplateParser.parse = staticmethod(parse)  # type: ignore[method-assign]
    EventTemplateParser._whole_events = True  # type: ignore[attr-defined]
