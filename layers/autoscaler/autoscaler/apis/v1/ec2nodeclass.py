"""EC2NodeClass (karpenter.k8s.aws/v1): how nodes are launched on EC2 — AMIs, network, storage, kubelet."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from autoscaler.apis.rules import INT64, ApiModel, LenientModel, Rule, has
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.common import Condition, KubeObject
from autoscaler.apis.v1.kubelet import KubeletConfiguration

AMIFamily = Literal["AL2", "AL2023", "Bottlerocket", "Custom", "Windows2019", "Windows2022", "Windows2025"]
# Alias family (as written in `alias: family@version`) -> amiFamily.
ALIAS_FAMILIES: dict[str, AMIFamily] = {
    "al2": "AL2",
    "al2023": "AL2023",
    "bottlerocket": "Bottlerocket",
    "windows2019": "Windows2019",
    "windows2022": "Windows2022",
    "windows2025": "Windows2025",
}
WINDOWS_ALIASES = ("windows2019", "windows2022", "windows2025")
UBUNTU_REMOVED = (
    "the Ubuntu AMI family was removed in Karpenter v1: pin your Ubuntu EKS AMI in amiSelectorTerms "
    "(by id, or by name and owner) with amiFamily: AL2, whose bootstrap script works on Ubuntu, or use "
    "amiFamily: Custom with your own userData"
)

Tags = Annotated[dict[str, str], Field(max_length=20)]
_NON_EMPTY_TAGS = Rule(
    "empty tag keys or values aren't supported",
    "self.all(k, k != '' && self[k] != '')",
    lambda tags: all(k and v for k, v in tags.items()),
)
SelectorTags = Annotated[Tags, _NON_EMPTY_TAGS]


def _alias_family(alias: str) -> str:
    return alias.split("@", 1)[0]


_alias_families = ",".join(f"'{f}'" for f in ALIAS_FAMILIES)
_windows = ",".join(f"'{f}'" for f in WINDOWS_ALIASES)
Alias = Annotated[
    str,
    Field(max_length=30),
    Rule(UBUNTU_REMOVED, None, lambda a: _alias_family(a).lower() != "ubuntu"),
    Rule(
        "'alias' is improperly formatted, must match the format 'family@version'",
        "self.matches('^[a-zA-Z0-9]+@.+$')",
        lambda a: bool(re.match(r"^[a-zA-Z0-9]+@.+$", a)),
    ),
    Rule(
        "family is not supported, must be one of the following: " + ", ".join(f"'{f}'" for f in ALIAS_FAMILIES),
        f"self.split('@')[0] in [{_alias_families}]",
        lambda a: _alias_family(a) in ALIAS_FAMILIES,
    ),
    Rule(
        "windows families may only specify version 'latest'",
        f"self.split('@')[0] in [{_windows}] ? self.split('@')[1] == 'latest' : true",
        lambda a: _alias_family(a) not in WINDOWS_ALIASES or a.split("@", 1)[1] == "latest",
    ),
]


class SubnetSelectorTerm(ApiModel):
    tags: SelectorTags | None = None
    id: Annotated[str, Field(pattern=r"subnet-[0-9a-z]+")] | None = None


class SecurityGroupSelectorTerm(ApiModel):
    tags: SelectorTags | None = None
    id: Annotated[str, Field(pattern=r"sg-[0-9a-z]+")] | None = None
    name: str | None = None


class AMISelectorTerm(ApiModel):
    alias: Alias | None = None
    tags: SelectorTags | None = None
    id: Annotated[str, Field(pattern=r"ami-[0-9a-z]+")] | None = None
    name: str | None = None
    owner: str | None = None


def exclusive_fields(field: str, others: tuple[str, ...], where: str) -> Rule:
    """``field`` may not share a term with any of ``others`` (checked per term)."""
    cel_others = " || ".join(f"has(x.{o})" for o in others)
    return Rule(
        f"'{field}' is mutually exclusive, cannot be set with a combination of other fields in {where}",
        f"!self.exists(x, has(x.{field}) && ({cel_others}))",
        lambda terms: not any(has(getattr(t, field)) and any(has(getattr(t, o)) for o in others) for t in terms),
    )


def at_least_one_field(fields: tuple[str, ...]) -> Rule:
    names = ", ".join(f"'{f}'" for f in fields)
    return Rule(
        f"expected at least one, got none, [{names}]",
        "self.all(x, " + " || ".join(f"has(x.{f})" for f in fields) + ")",
        lambda terms: all(any(has(getattr(t, f)) for f in fields) for t in terms),
    )


def _not_empty(field: str) -> Rule:
    return Rule(f"{field} cannot be empty", "self.size() != 0", lambda terms: len(terms) != 0)


SubnetTerms = Annotated[
    list[SubnetSelectorTerm],
    Field(max_length=30),
    _not_empty("subnetSelectorTerms"),
    at_least_one_field(("tags", "id")),
    exclusive_fields("id", ("tags",), "a subnet selector term"),
]
SecurityGroupTerms = Annotated[
    list[SecurityGroupSelectorTerm],
    Field(max_length=30),
    _not_empty("securityGroupSelectorTerms"),
    at_least_one_field(("tags", "id", "name")),
    exclusive_fields("id", ("tags", "name"), "a security group selector term"),
    exclusive_fields("name", ("tags", "id"), "a security group selector term"),
]
AMITerms = Annotated[
    list[AMISelectorTerm],
    Field(min_length=1, max_length=30),
    at_least_one_field(("tags", "id", "name", "alias")),
    exclusive_fields("id", ("alias", "tags", "name", "owner"), "amiSelectorTerms"),
    exclusive_fields("alias", ("id", "tags", "name", "owner"), "amiSelectorTerms"),
    Rule(
        "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms",
        "!(self.exists(x, has(x.alias)) && self.size() != 1)",
        lambda terms: not (any(has(t.alias) for t in terms) and len(terms) != 1),
    ),
]

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
    )

    delete_on_termination: bool | None = Field(default=None, alias="deleteOnTermination")
    encrypted: bool | None = None
    iops: Annotated[int, INT64] | None = None
    kms_key_id: str | None = Field(default=None, alias="kmsKeyID")
    snapshot_id: str | None = Field(default=None, alias="snapshotID")
    throughput: Annotated[int, INT64] | None = None
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


def _alias_family_rule(alias_family: str, ami_family: str) -> Rule:
    return Rule(
        f"if set, amiFamily must be '{ami_family}' or 'Custom' when using an {ami_family} alias",
        f"!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && "
        f"x.alias.find('^[^@]+') == '{alias_family}') ? (self.amiFamily == 'Custom' || "
        f"self.amiFamily == '{ami_family}') : true)",
        lambda s: (
            s.ami_family is None
            or not any(t.alias and _alias_family(t.alias) == alias_family for t in s.ami_selector_terms)
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
    associate_public_ip_address: bool | None = Field(default=None, alias="associatePublicIPAddress")
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
    detailed_monitoring: bool | None = Field(default=None, alias="detailedMonitoring")
    metadata_options: MetadataOptions = Field(
        default_factory=MetadataOptions,
        alias="metadataOptions",
        json_schema_extra={"default": MetadataOptions().to_dict()},
    )
    context: str | None = None

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
        return ALIAS_FAMILIES[_alias_family(alias)] if alias else "Custom"


class SubnetStatus(LenientModel):
    id: str
    zone: str
    zone_id: str | None = Field(default=None, alias="zoneID")


class SecurityGroupStatus(LenientModel):
    id: str
    name: str | None = None


class AMIRequirement(LenientModel):
    key: str
    operator: str
    values: list[str] | None = None


class AMIStatus(LenientModel):
    id: str
    name: str | None = None
    requirements: list[AMIRequirement]


class EC2NodeClassStatus(LenientModel):
    subnets: list[SubnetStatus] | None = None
    security_groups: list[SecurityGroupStatus] | None = Field(default=None, alias="securityGroups")
    amis: list[AMIStatus] | None = None
    instance_profile: str | None = Field(default=None, alias="instanceProfile")
    conditions: list[Condition] | None = None


class EC2NodeClass(KubeObject):
    """karpenter.k8s.aws/v1 EC2NodeClass."""

    api_version: Literal["karpenter.k8s.aws/v1"] = Field(default="karpenter.k8s.aws/v1", alias="apiVersion")
    kind: Literal["EC2NodeClass"] = "EC2NodeClass"
    spec: EC2NodeClassSpec
    status: EC2NodeClassStatus | None = None
