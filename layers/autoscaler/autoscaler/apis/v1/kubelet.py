"""Kubelet settings of an EC2NodeClass (moved here from the NodePool in Karpenter v1)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from autoscaler.apis.duration import DurationError, parse_duration
from autoscaler.apis.quantity import QUANTITY_PATTERN
from autoscaler.apis.rules import INT32, ApiModel, Rule

RESERVED_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pid")
EVICTION_SIGNALS = (
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
)
# A percentage (0-100 with up to two decimals), empty, or a quantity.
EVICTION_VALUE_PATTERN = r"^((\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%||" + QUANTITY_PATTERN[1:-1] + r")$"


def _keys_in(field: str, allowed: tuple[str, ...]) -> Rule:
    quoted = ",".join(f"'{k}'" for k in allowed)
    if allowed is RESERVED_RESOURCES:
        cel = "self.all(x, " + " || ".join(f"x=='{k}'" for k in allowed) + ")"
    else:
        cel = f"self.all(x, x in [{quoted}])"
    return Rule(f"valid keys for {field} are [{quoted}]", cel, lambda d: all(k in allowed for k in d))


def _not_negative(field: str) -> Rule:
    return Rule(
        f"{field} value cannot be a negative resource quantity",
        "self.all(x, !self[x].startsWith('-'))",
        lambda d: all(not v.startswith("-") for v in d.values()),
    )


def _all_durations(values: dict[str, str]) -> bool:
    try:
        for value in values.values():
            parse_duration(value)
    except DurationError:
        return False
    return True


_GO_DURATIONS = Rule("evictionSoftGracePeriod values must be durations such as 1m30s", None, _all_durations)
ReservedQuantity = Annotated[str, Field(pattern=QUANTITY_PATTERN)]
EvictionValue = Annotated[str, Field(pattern=EVICTION_VALUE_PATTERN)]
Percent = Annotated[int, Field(ge=0, le=100), INT32]


class KubeletConfiguration(ApiModel):
    """A subset of the kubelet's configuration that Karpenter passes to every node of the class."""

    __rules__ = (
        Rule(
            "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
            "has(self.imageGCHighThresholdPercent) && has(self.imageGCLowThresholdPercent) ? "
            " self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent  : true",
            lambda k: k.image_gc_high is None or k.image_gc_low is None or k.image_gc_high > k.image_gc_low,
        ),
        Rule(
            "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod",
            "has(self.evictionSoft) ? self.evictionSoft.all(e, (e in self.evictionSoftGracePeriod)):true",
            lambda k: all(key in (k.eviction_soft_grace_period or {}) for key in k.eviction_soft or {}),
        ),
        Rule(
            "evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft",
            "has(self.evictionSoftGracePeriod) ? self.evictionSoftGracePeriod.all(e, (e in self.evictionSoft)):true",
            lambda k: all(key in (k.eviction_soft or {}) for key in k.eviction_soft_grace_period or {}),
        ),
    )

    cluster_dns: list[str] | None = Field(default=None, alias="clusterDNS")
    max_pods: Annotated[int, Field(ge=0), INT32] | None = Field(default=None, alias="maxPods")
    pods_per_core: Annotated[int, Field(ge=0), INT32] | None = Field(default=None, alias="podsPerCore")
    system_reserved: (
        Annotated[
            dict[str, ReservedQuantity],
            _keys_in("systemReserved", RESERVED_RESOURCES),
            _not_negative("systemReserved"),
        ]
        | None
    ) = Field(default=None, alias="systemReserved")
    kube_reserved: (
        Annotated[
            dict[str, ReservedQuantity],
            _keys_in("kubeReserved", RESERVED_RESOURCES),
            _not_negative("kubeReserved"),
        ]
        | None
    ) = Field(default=None, alias="kubeReserved")
    eviction_hard: Annotated[dict[str, EvictionValue], _keys_in("evictionHard", EVICTION_SIGNALS)] | None = Field(
        default=None, alias="evictionHard"
    )
    eviction_soft: Annotated[dict[str, EvictionValue], _keys_in("evictionSoft", EVICTION_SIGNALS)] | None = Field(
        default=None, alias="evictionSoft"
    )
    eviction_soft_grace_period: (
        Annotated[dict[str, str], _keys_in("evictionSoftGracePeriod", EVICTION_SIGNALS), _GO_DURATIONS] | None
    ) = Field(default=None, alias="evictionSoftGracePeriod")
    eviction_max_pod_grace_period: Annotated[int, INT32] | None = Field(default=None, alias="evictionMaxPodGracePeriod")
    image_gc_high: Percent | None = Field(default=None, alias="imageGCHighThresholdPercent")
    image_gc_low: Percent | None = Field(default=None, alias="imageGCLowThresholdPercent")
    cpu_cfs_quota: bool | None = Field(default=None, alias="cpuCFSQuota")
