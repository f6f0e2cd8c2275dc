"""EC2NodeClass (karpenter.k8s.aws/v1): how nodes are launched on EC2 — AMIs, network, storage, kubelet."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from autoscaler.apis.rules import INT32, INT64, ApiModel, Rule, has
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.common import KubeObject
from autoscaler.apis.v1.ec2nodeclass_status import (
    AMIRequirement,
    AMIStatus,
    CapacityReservationStatus,
    EC2NodeClassStatus,
    SecurityGroupStatus,
    SubnetStatus,
)
from autoscaler.apis.v1.kubelet import KubeletConfiguration
from autoscaler.apis.v1.selector_terms import (
    ALIAS_FAMILIES,
    UBUNTU_REMOVED,
    AMIFamily,
    AMISelectorTerm,
    AMITerms,
    CapacityReservationSelectorTerm,
    CapacityReservationTerms,
    PlacementGroupSelector,
    SecurityGroupSelectorTerm,
    SecurityGroupTerms,
    SelectorTags,
    SubnetSelectorTerm,
    SubnetTerms,
    alias_family,
    at_least_one_field,
    exclusive_fields,
)

VOLUME_SIZE_PATTERN = (
    r"^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|"
    r"[6][0-3][0-9]{3}|64000)G|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$"
)


class BlockDevice(ApiModel):
    """An EBS volume."""

    __rules__ = (
        Rule(
            "snapshotID or volumeSize must be defined",
            "has(self.snapshotID) || has(self.volumeSize)",
            lambda b: has(b.snapshot_id) or has(b.volume_size),
        ),
        Rule(
            "snapshotID must be set when volumeInitializationRate is set",
            "!has(self.volumeInitializationRate) || (has(self.snapshotID) && self.snapshotID != '')",
            lambda b: b.volume_initialization_rate is None or bool(b.snapshot_id),
        ),
    )

    delete_on_termination: bool | None = Field(default=None, alias="deleteOnTermination")
    encrypted: bool | None = None
    iops: Annotated[int, INT64] | None = None
    kms_key_id: str | None = Field(default=None, alias="kmsKeyID")
    snapshot_id: str | None = Field(default=None, alias="snapshotID")
    throughput: Annotated[int, INT64] | None = None
    # MiB/s at which a volume from a snapshot is initialized (EBS Provisioned Rate for Volume Initialization).
    volume_initialization_rate: Annotated[int, Field(ge=100, le=300), INT32] | None = Field(
        default=None, alias="volumeInitializationRate"
    )
    volume_size: Annotated[str, Field(pattern=VOLUME_SIZE_PATTERN)] | None = Field(default=None, alias="volumeSize")
    volume_type: Literal["standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"] | None = Field(
        default=None, alias="volumeType"
    )


class BlockDeviceMapping(ApiModel):
    device_name: str | None = Field(default=None, alias="deviceName")
    ebs: BlockDevice | None = None
    root_volume: bool | None = Field(default=None, alias="rootVolume")


class MetadataOptions(ApiModel):
    """IMDS settings. v1 defaults the hop limit to 1: pods off the host network cannot reach IMDS."""

    http_endpoint: Literal["enabled", "disabled"] = Field(default="enabled", alias="httpEndpoint")
    http_protocol_ipv6: Literal["enabled", "disabled"] = Field(default="disabled", alias="httpProtocolIPv6")
    http_put_response_hop_limit: Annotated[int, Field(ge=1, le=64), INT64] = Field(
        default=1, alias="httpPutResponseHopLimit"
    )
    http_tokens: Literal["required", "optional"] = Field(default="required", alias="httpTokens")


class NetworkInterface(ApiModel):
    """One network interface of the instances: which card and device slot, and whether it is an EFA-only one."""

    network_card_index: Annotated[int, Field(ge=0), INT32] = Field(alias="networkCardIndex")
    device_index: Annotated[int, Field(ge=0), INT32] = Field(alias="deviceIndex")
    interface_type: Literal["interface", "efa-only"] = Field(alias="interfaceType")


def _distinct_slots(interfaces: list[NetworkInterface]) -> bool:
    slots = [(i.network_card_index, i.device_index) for i in interfaces]
    efa_cards = [i.network_card_index for i in interfaces if i.interface_type == "efa-only"]
    return len(slots) == len(set(slots)) and len(efa_cards) == len(set(efa_cards))


NetworkInterfaces = Annotated[
    list[NetworkInterface],
    Field(max_length=150),
    Rule(
        "networkInterfaces must include a primary interface with interfaceType='interface'",
        "self.size() == 0 || self.exists(x, x.deviceIndex == 0 && x.networkCardIndex == 0 && "
        "x.interfaceType == 'interface')",
        lambda nics: (
            not nics
            or any(n.device_index == 0 and n.network_card_index == 0 and n.interface_type == "interface" for n in nics)
        ),
    ),
    Rule(
        "networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, and can have at most one "
        "efa device per network card",
        "self.all(x, self.filter(y, x.networkCardIndex == y.networkCardIndex && x.deviceIndex == y.deviceIndex)"
        ".size() == 1 && (x.interfaceType != 'efa-only' || self.filter(y, x.networkCardIndex == y.networkCardIndex "
        "&& y.interfaceType == 'efa-only').size() == 1))",
        _distinct_slots,
    ),
]


class ConnectionTracking(ApiModel):
    """Idle connection tracking timeouts (seconds) of the interfaces Karpenter launches."""

    __rules__ = (
        Rule(
            "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set",
            "has(self.tcpEstablishedTimeout) || has(self.udpStreamTimeout) || has(self.udpTimeout)",
            lambda c: any(v is not None for v in (c.tcp_established_timeout, c.udp_stream_timeout, c.udp_timeout)),
        ),
    )

    tcp_established_timeout: Annotated[int, Field(ge=60, le=432000), INT32] | None = Field(
        default=None, alias="tcpEstablishedTimeout"
    )
    udp_stream_timeout: Annotated[int, Field(ge=60, le=180), INT32] | None = Field(
        default=None, alias="udpStreamTimeout"
    )
    udp_timeout: Annotated[int, Field(ge=30, le=60), INT32] | None = Field(default=None, alias="udpTimeout")


class CPUOptions(ApiModel):
    nested_virtualization: Literal["enabled", "disabled"] | None = Field(default=None, alias="nestedVirtualization")


def _restricted_tag(message_key: str, cel: str, check: Any) -> Rule:
    return Rule(f"tag contains a restricted tag matching {message_key}", cel, check)


EC2Tags = Annotated[
    dict[str, str],
    Rule("empty tag keys aren't supported", "self.all(k, k != '')", lambda t: all(k for k in t)),
    _restricted_tag(
        wk.TAG_CLUSTER_NAME,
        f"self.all(k, k !='{wk.TAG_CLUSTER_NAME}')",
        lambda t: wk.TAG_CLUSTER_NAME not in t,
    ),
    _restricted_tag(
        "kubernetes.io/cluster/",
        "self.all(k, !k.startsWith('kubernetes.io/cluster') )",
        lambda t: not any(k.startswith("kubernetes.io/cluster") for k in t),
    ),
    _restricted_tag(wk.TAG_NODEPOOL, f"self.all(k, k != '{wk.TAG_NODEPOOL}')", lambda t: wk.TAG_NODEPOOL not in t),
    _restricted_tag(wk.TAG_NODECLAIM, f"self.all(k, k !='{wk.TAG_NODECLAIM}')", lambda t: wk.TAG_NODECLAIM not in t),
    _restricted_tag(wk.TAG_NODECLASS, f"self.all(k, k !='{wk.TAG_NODECLASS}')", lambda t: wk.TAG_NODECLASS not in t),
]


def _alias_family_rule(family_of_alias: str, ami_family: str) -> Rule:
    article = "an" if ami_family.startswith("AL") else "a"
    return Rule(
        f"if set, amiFamily must be '{ami_family}' or 'Custom' when using {article} {ami_family} alias",
        f"!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && "
        f"x.alias.find('^[^@]+') == '{family_of_alias}') ? (self.amiFamily == 'Custom' || "
        f"self.amiFamily == '{ami_family}') : true)",
        lambda s: (
            s.ami_family is None
            or not any(t.alias and alias_family(t.alias) == family_of_alias for t in s.ami_selector_terms)
            or s.ami_family in ("Custom", ami_family)
        ),
    )


class EC2NodeClassSpec(ApiModel):
    __rules__ = (
        Rule(
            "must specify exactly one of ['role', 'instanceProfile']",
            "(has(self.role) && !has(self.instanceProfile)) || (!has(self.role) && has(self.instanceProfile))",
            lambda s: has(s.role) != has(s.instance_profile),
        ),
        *(_alias_family_rule(alias, family) for alias, family in ALIAS_FAMILIES.items()),
        Rule(
            "must specify amiFamily if amiSelectorTerms does not contain an alias",
            "self.amiSelectorTerms.exists(x, has(x.alias)) ? true : has(self.amiFamily)",
            lambda s: any(has(t.alias) for t in s.ami_selector_terms) or has(s.ami_family),
        ),
    )

    subnet_selector_terms: SubnetTerms = Field(alias="subnetSelectorTerms")
    security_group_selector_terms: SecurityGroupTerms = Field(alias="securityGroupSelectorTerms")
    capacity_reservation_selector_terms: CapacityReservationTerms | None = Field(
        default=None, alias="capacityReservationSelectorTerms"
    )
    placement_group_selector: PlacementGroupSelector | None = Field(default=None, alias="placementGroupSelector")
    associate_public_ip_address: bool | None = Field(default=None, alias="associatePublicIPAddress")
    ip_prefix_count: Annotated[int, Field(ge=0), INT32] | None = Field(default=None, alias="ipPrefixCount")
    ami_selector_terms: AMITerms = Field(alias="amiSelectorTerms")
    ami_family: AMIFamily | None = Field(default=None, alias="amiFamily")
    user_data: str | None = Field(default=None, alias="userData")
    role: Annotated[str, Rule("role cannot be empty", "self != ''", bool)] | None = None
    instance_profile: Annotated[str, Rule("instanceProfile cannot be empty", "self != ''", bool)] | None = Field(
        default=None, alias="instanceProfile"
    )
    tags: EC2Tags | None = None
    kubelet: KubeletConfiguration | None = None
    block_device_mappings: (
        Annotated[
            list[BlockDeviceMapping],
            Field(max_length=50),
            Rule(
                "must have only one blockDeviceMappings with rootVolume",
                "self.filter(x, has(x.rootVolume)?x.rootVolume==true:false).size() <= 1",
                lambda bdms: sum(1 for b in bdms if b.root_volume) <= 1,
            ),
        ]
        | None
    ) = Field(default=None, alias="blockDeviceMappings")
    instance_store_policy: Literal["RAID0"] | None = Field(default=None, alias="instanceStorePolicy")
    network_interfaces: NetworkInterfaces | None = Field(default=None, alias="networkInterfaces")
    detailed_monitoring: bool | None = Field(default=None, alias="detailedMonitoring")
    metadata_options: MetadataOptions = Field(
        default_factory=MetadataOptions,
        alias="metadataOptions",
        json_schema_extra={"default": MetadataOptions().to_dict()},
    )
    connection_tracking: ConnectionTracking | None = Field(default=None, alias="connectionTracking")
    context: str | None = None
    cpu_options: CPUOptions | None = Field(default=None, alias="cpuOptions")

    @field_validator("ami_family", mode="before")
    @classmethod
    def _no_ubuntu(cls, value: Any) -> Any:
        if isinstance(value, str) and value.lower() == "ubuntu":
            raise PydanticCustomError("removed", UBUNTU_REMOVED, {"rule": "enum"})
        return value

    @property
    def alias(self) -> str | None:
        """The ``family@version`` alias, when the class selects AMIs by one."""
        return next((t.alias for t in self.ami_selector_terms if t.alias), None)

    @property
    def resolved_ami_family(self) -> AMIFamily:
        """amiFamily as Karpenter resolves it: the explicit field, else the alias's family."""
        if self.ami_family is not None:
            return self.ami_family
        alias = self.alias
        return ALIAS_FAMILIES[alias_family(alias)] if alias else "Custom"


class EC2NodeClass(KubeObject):
    """karpenter.k8s.aws/v1 EC2NodeClass."""

    api_version: Literal["karpenter.k8s.aws/v1"] = Field(default="karpenter.k8s.aws/v1", alias="apiVersion")
    kind: Literal["EC2NodeClass"] = "EC2NodeClass"
    spec: EC2NodeClassSpec
    status: EC2NodeClassStatus | None = None


__all__ = [
    "ALIAS_FAMILIES",
    "UBUNTU_REMOVED",
    "AMIFamily",
    "AMIRequirement",
    "AMISelectorTerm",
    "AMIStatus",
    "CapacityReservationSelectorTerm",
    "CapacityReservationStatus",
    "EC2NodeClass",
    "EC2NodeClassSpec",
    "EC2NodeClassStatus",
    "SecurityGroupSelectorTerm",
    "SecurityGroupStatus",
    "SecurityGroupTerms",
    "SelectorTags",
    "SubnetSelectorTerm",
    "SubnetStatus",
    "SubnetTerms",
    "at_least_one_field",
    "exclusive_fields",
]
