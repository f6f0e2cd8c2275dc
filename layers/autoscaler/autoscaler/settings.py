"""Settings every function reads from its environment (the CDK stack sets them). Pure."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

# The state table's schema, shared by the stack that creates it and every function that uses it. The names
# are Powertools idempotency's defaults, so idempotency records, unavailable offerings and leases share it.
STATE_TABLE_KEY = "id"  # string partition key
STATE_TABLE_TTL = "expiration"  # epoch seconds; DynamoDB's TTL attribute
# The provisioner's record of when its last completed pass started (docs/provisioning.md, "the FIFO skip
# rule"). It outlives the provisioning queue's retention (1 h): no message can be older than that.
LAST_PASS_ID = "provisioner#last-pass"
LAST_PASS_TTL_SECONDS = 2 * 3600

# Leases in the state table, one item per lease: id = LEASE_PREFIX + name, the holder, and `expiration`.
LEASE_PREFIX = "lease#"
# Garbage collection runs every 2 minutes and two passes must never overlap (one could terminate an instance
# the other is still judging). The lease outlives the function's 60 s timeout, so a pass never loses it while
# it runs, and expires before the next scheduled pass, so a pass that died holding it costs one period at most.
GARBAGE_COLLECTION_LEASE = "garbage_collection"
GARBAGE_COLLECTION_LEASE_SECONDS = 90
# A provisioning pass holds its lease for as long as its invocation can run (controllers.batch_skip), at most
# the longest a Lambda invocation runs.
PROVISIONER_LEASE = "provisioner"
PROVISIONER_LEASE_MAX_SECONDS = 900
# The disruption function runs every 5 minutes for up to 4: two overlapping passes could each spend the same budget.
DISRUPTION_LEASE = "disruption"
DISRUPTION_LEASE_SECONDS = 270


class SettingsError(ValueError):
    """A required setting is missing or malformed."""


@dataclass(frozen=True)
class FeatureGates:
    """Karpenter v1.14.1's feature gates (its ``--feature-gates`` / ``FEATURE_GATES``), with its defaults.

    A field a gate governs is accepted while the gate is off and ignored, with a warning event on the object
    (``autoscaler.apis.feature_gates``). Of the behaviours, spot-to-spot consolidation, CapacityBuffers and node
    repair are implemented so far.
    """

    node_repair: bool = False
    reserved_capacity: bool = True
    spot_to_spot_consolidation: bool = False
    node_overlay: bool = False
    static_capacity: bool = False
    capacity_buffer: bool = False

    @staticmethod
    def gate_name(attribute: str) -> str:
        """``static_capacity`` -> ``StaticCapacity``."""
        return "".join(part.capitalize() for part in attribute.split("_"))

    @classmethod
    def parse(cls, text: str) -> FeatureGates:
        """``Name=true,Other=false`` as Karpenter's flag takes it: gates not named keep their defaults, and names
        Karpenter does not know are ignored, as Karpenter ignores them."""
        known = {cls.gate_name(f.name): f.name for f in fields(cls)}
        values: dict[str, bool] = {}
        for item in text.split(","):
            name, _, value = item.strip().partition("=")
            if not name:
                continue
            if value.strip().lower() not in ("true", "false"):
                raise SettingsError(f"FEATURE_GATES: {item.strip()!r} must be Name=true or Name=false")
            if name.strip() in known:
                values[known[name.strip()]] = value.strip().lower() == "true"
        return cls(**values)

    def enabled(self, gate: str) -> bool:
        """Whether the gate named as Karpenter names it (``StaticCapacity``) is on."""
        return bool(getattr(self, next(f.name for f in fields(self) if self.gate_name(f.name) == gate)))

    def to_flag(self) -> str:
        """Every gate, as the ``FEATURE_GATES`` value Karpenter's Helm chart would pass."""
        return ",".join(f"{self.gate_name(f.name)}={str(getattr(self, f.name)).lower()}" for f in fields(self))


@dataclass(frozen=True)
class Settings:
    """Karpenter's controller settings, for Lambda.

    CLUSTER_NAME                the EKS cluster (required)
    AWS_REGION                  the region (Lambda sets it)
    CLUSTER_ENDPOINT            the API server URL; looked up with eks:DescribeCluster when empty
    STATE_TABLE_NAME            DynamoDB table: unavailable offerings, idempotency records, leases
    INTERRUPTION_QUEUE_URL      SQS queue of EC2 / AWS Health events
    INTERRUPTION_DLQ_URL        its dead-letter queue: malformed messages are sent there with their reason
    INTERRUPTION_MAX_RECEIVES   its redrive maxReceiveCount: a message still failing on that receive is sent there
                                with its failure as reason (0: left to the redrive, without a reason)
    EVENT_BUS_NAME              the custom EventBridge bus of cluster events
    VM_MEMORY_OVERHEAD_PERCENT  memory the hypervisor keeps, as a fraction (default 0.075)
    RESERVED_ENIS               ENIs kept out of the max-pods computation (default 0)
    ISOLATED_VPC                "true" when the Pricing API is unreachable: use the shipped price table
    FEATURE_GATES               Karpenter's, e.g. "StaticCapacity=true,SpotToSpotConsolidation=true" (FeatureGates)
    INSTANCE_TYPES              comma-separated EC2 instance types (wildcards such as ``m5.*``) the catalogue is
                                limited to; empty (the default): every type. For accounts allowed only some
                                types, and for tests and local runs (a full catalogue takes moto seconds)
    ENABLE_ZONAL_SHIFT          "true": avoid zones an ARC zonal shift or autoshift moves the cluster away from
                                (Karpenter's ``--enable-zonal-shift`` / ENABLE_ZONAL_SHIFT; default false)
    """

    cluster_name: str
    region: str
    cluster_endpoint: str = ""
    state_table_name: str = ""
    interruption_queue_url: str = ""
    interruption_dlq_url: str = ""
    interruption_max_receives: int = 0
    event_bus_name: str = ""
    vm_memory_overhead_percent: float = 0.075
    reserved_enis: int = 0
    isolated_vpc: bool = False
    feature_gates: FeatureGates = field(default_factory=FeatureGates)
    instance_types: tuple[str, ...] = ()
    enable_zonal_shift: bool = False

    @property
    def spot_to_spot_consolidation(self) -> bool:
        return self.feature_gates.spot_to_spot_consolidation

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        cluster_name = env.get("CLUSTER_NAME", "")
        if not cluster_name:
            raise SettingsError("CLUSTER_NAME is required: the name of the EKS cluster to manage")
        try:
            overhead = float(env.get("VM_MEMORY_OVERHEAD_PERCENT", "0.075"))
            reserved_enis = int(env.get("RESERVED_ENIS", "0"))
        except ValueError as error:
            raise SettingsError(f"malformed numeric setting: {error}") from error
        if not 0 <= overhead < 1:
            raise SettingsError(f"VM_MEMORY_OVERHEAD_PERCENT must be a fraction in [0, 1), got {overhead}")
        return cls(
            cluster_name=cluster_name,
            region=env.get("AWS_REGION", env.get("AWS_DEFAULT_REGION", "")),
            cluster_endpoint=env.get("CLUSTER_ENDPOINT", ""),
            state_table_name=env.get("STATE_TABLE_NAME", ""),
            interruption_queue_url=env.get("INTERRUPTION_QUEUE_URL", ""),
            interruption_dlq_url=env.get("INTERRUPTION_DLQ_URL", ""),
            interruption_max_receives=int(env.get("INTERRUPTION_MAX_RECEIVES") or 0),
            event_bus_name=env.get("EVENT_BUS_NAME", ""),
            vm_memory_overhead_percent=overhead,
            reserved_enis=reserved_enis,
            isolated_vpc=env.get("ISOLATED_VPC", "false").lower() == "true",
            feature_gates=FeatureGates.parse(env.get("FEATURE_GATES", "")),
            instance_types=tuple(t.strip() for t in env.get("INSTANCE_TYPES", "").split(",") if t.strip()),
            enable_zonal_shift=env.get("ENABLE_ZONAL_SHIFT", "false").lower() == "true",
        )
