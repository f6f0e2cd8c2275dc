"""EC2NodeClass (karpenter.k8s.aws/v1beta1) as Karpenter v0.37 served it: a required amiFamily (Ubuntu
included), optional amiSelectorTerms without aliases, IMDS hop limit 2 by default, no kubelet."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from autoscaler.apis.rules import INT64, ApiModel, Rule, has
from autoscaler.apis.v1 import ec2nodeclass as v1
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.common import KubeObject
from autoscaler.apis.v1.selector_terms import at_least_one_field, exclusive_fields, mixing_message

AMIFamily = Literal["AL2", "AL2023", "Bottlerocket", "Ubuntu", "Custom", "Windows2019", "Windows2022"]
MANAGED_BY_TAG = "karpenter.sh/managed-by"


class AMISelectorTerm(ApiModel):
    tags: v1.SelectorTags | None = None
    id: Annotated[str, Field(pattern=r"ami-[0-9a-z]+")] | None = None
    name: str | None = None
    owner: str | None = None


# AMI term exclusivity is checked per term (CEL ``exists``), as in v1.
AMITerms = Annotated[
    list[AMISelectorTerm],
    Field(max_length=30),
    at_least_one_field(("tags", "id", "name")),
    exclusive_fields("id", ("tags", "name", "owner"), mixing_message("id", "amiSelectorTerms")),
]


class MetadataOptions(v1.MetadataOptions):
    """v1beta1 let pods off the host network reach IMDS by default (hop limit 2); v1 defaults to 1."""

    http_put_response_hop_limit: Annotated[int, Field(ge=1, le=64), INT64] = Field(
        default=2, alias="httpPutResponseHopLimit"
    )


EC2Tags = Annotated[
    dict[str, str],
    Rule("empty tag keys aren't supported", "self.all(k, k != '')", lambda t: all(k for k in t)),
    *(
        Rule(f"tag contains a restricted tag matching {shown}", cel, check)
        for shown, cel, check in (
            (
                "kubernetes.io/cluster/",
                "self.all(k, !k.startsWith('kubernetes.io/cluster') )",
                lambda t: not any(k.startswith("kubernetes.io/cluster") for k in t),
            ),
            (wk.TAG_NODEPOOL, f"self.all(k, k != '{wk.TAG_NODEPOOL}')", lambda t: wk.TAG_NODEPOOL not in t),
            (MANAGED_BY_TAG, f"self.all(k, k !='{MANAGED_BY_TAG}')", lambda t: MANAGED_BY_TAG not in t),
            (wk.TAG_NODECLAIM, f"self.all(k, k !='{wk.TAG_NODECLAIM}')", lambda t: wk.TAG_NODECLAIM not in t),
            (wk.TAG_NODECLASS, f"self.all(k, k !='{wk.TAG_NODECLASS}')", lambda t: wk.TAG_NODECLASS not in t),
        )
    ),
]


class EC2NodeClassSpec(ApiModel):
    __rules__ = (
        Rule(
            "amiSelectorTerms is required when amiFamily == 'Custom'",
            "self.amiFamily == 'Custom' ? self.amiSelectorTerms.size() != 0 : true",
            lambda s: s.ami_family != "Custom" or bool(s.ami_selector_terms),
        ),
        Rule(
            "must specify exactly one of ['role', 'instanceProfile']",
            "(has(self.role) && !has(self.instanceProfile)) || (!has(self.role) && has(self.instanceProfile))",
            lambda s: has(s.role) != has(s.instance_profile),
        ),
    )

    subnet_selector_terms: v1.SubnetTerms = Field(alias="subnetSelectorTerms")
    security_group_selector_terms: v1.SecurityGroupTerms = Field(alias="securityGroupSelectorTerms")
    associate_public_ip_address: bool | None = Field(default=None, alias="associatePublicIPAddress")
    ami_selector_terms: AMITerms | None = Field(default=None, alias="amiSelectorTerms")
    ami_family: AMIFamily = Field(alias="amiFamily")
    user_data: str | None = Field(default=None, alias="userData")
    role: Annotated[str, Rule("role cannot be empty", "self != ''", bool)] | None = None
    instance_profile: Annotated[str, Rule("instanceProfile cannot be empty", "self != ''", bool)] | None = Field(
        default=None, alias="instanceProfile"
    )
    tags: EC2Tags | None = None
    block_device_mappings: (
        Annotated[
            list[v1.BlockDeviceMapping],
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


class EC2NodeClass(KubeObject):
    """karpenter.k8s.aws/v1beta1 EC2NodeClass."""

    api_version: Literal["karpenter.k8s.aws/v1beta1"] = Field(default="karpenter.k8s.aws/v1beta1", alias="apiVersion")
    kind: Literal["EC2NodeClass"] = "EC2NodeClass"
    spec: EC2NodeClassSpec
    status: v1.EC2NodeClassStatus | None = None
