"""Names and tags a user controls cannot move what the functions create into another cluster, or out of the ABAC
conditions: properties over adversarial NodePool and NodeClaim names, EC2NodeClass names and ``spec.tags``.

- Validation rejects exactly the tag keys Karpenter v1.14.1's CEL rejects (pkg/apis/v1/ec2nodeclass.go: the empty
  key, ``eks:eks-cluster-name``, any key starting ``kubernetes.io/cluster``, ``karpenter.sh/nodepool``,
  ``karpenter.sh/nodeclaim``, ``karpenter.k8s.aws/ec2nodeclass``), and the generated CRD carries those rules.
- For a class that validates, every request the pure builders make (CreateFleet, CreateLaunchTemplate and its
  template data, CreateInstanceProfile) carries this cluster's tags with the code's values, whatever the names,
  and the synthesized provisioner role allows the launch; the same request for another cluster's name does not.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import ValidationError

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass, MetadataOptions
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.crds import generate
from autoscaler.providers.aws import families
from autoscaler.providers.aws.fleetrequest import fleet_request
from autoscaler.providers.aws.instanceprofiles import InstanceProfiles
from autoscaler.providers.aws.launchconfig import (
    LaunchConfig,
    TagCollisionError,
    launch_template_data,
    launch_template_tags,
    nodeclaim_launch_tags,
)
from autoscaler.providers.aws.selection import Override
from autoscaler.providers.aws.userdata import ClusterInfo
from tests.fuzz.budget import fuzz
from tests.security.cases import LAUNCH_TEMPLATE, launch
from tests.security.conftest import CLUSTER, Account, Call, call, request_tags
from tests.support import kube

OTHER = "other"
# Karpenter v1.14.1's CEL on spec.tags, as its messages name them.
UPSTREAM_MESSAGES = {
    "empty tag keys aren't supported",
    *(
        f"tag contains a restricted tag matching {key}"
        for key in (
            "eks:eks-cluster-name",
            "kubernetes.io/cluster/",
            "karpenter.sh/nodepool",
            "karpenter.sh/nodeclaim",
            "karpenter.k8s.aws/ec2nodeclass",
        )
    ),
}
OURS = {
    f"{wk.TAG_CLUSTER_PREFIX}{CLUSTER}": "owned",
    wk.TAG_CLUSTER_NAME: CLUSTER,
}

# Keys and values aimed at the ownership tags: near misses, other clusters', case and space variants.
ADVERSARIAL_KEYS = st.sampled_from(
    [
        "",
        wk.TAG_CLUSTER_NAME,
        f"{wk.TAG_CLUSTER_PREFIX}{OTHER}",
        f"{wk.TAG_CLUSTER_PREFIX}{CLUSTER}",
        "kubernetes.io/cluster",
        "kubernetes.io/clusters",
        wk.TAG_NODEPOOL,
        wk.TAG_NODECLAIM,
        wk.TAG_NODECLASS,
        wk.TAG_LAUNCH_TEMPLATE_CLUSTER,
        wk.TAG_CLUSTER_ARN,
        wk.TAG_REGION,
        "Name",
        "EKS:eks-cluster-name",
        " eks:eks-cluster-name",
        "Kubernetes.io/cluster/other",
        "aws:cloudformation:stack-name",
        "team",
    ]
) | st.text(max_size=24)
ADVERSARIAL_VALUES = st.sampled_from(["owned", "shared", CLUSTER, OTHER, "", "*", "default"]) | st.text(max_size=24)
CLASS_TAGS = st.dictionaries(ADVERSARIAL_KEYS, ADVERSARIAL_VALUES, max_size=6)
# What reaches the tag values: names as a user may write them, and as a NodeClaim's label could say anything.
NAMES = st.from_regex(r"\A[a-z0-9]([-a-z0-9.]{0,30}[a-z0-9])?\Z") | st.sampled_from(
    [OTHER, CLUSTER, "owned", "*", "kubernetes.io/cluster/other", "default"]
)
LABEL_VALUES = NAMES | st.text(max_size=40)


KARPENTER_KEYS = (
    "eks:eks-cluster-name",
    "karpenter.sh/nodepool",
    "karpenter.sh/nodeclaim",
    "karpenter.k8s.aws/ec2nodeclass",
)


def restricted(key: str) -> bool:
    """Karpenter's CEL, literally: ``k == ''``, ``k.startsWith('kubernetes.io/cluster')``, the four exact keys."""
    return key == "" or key.startswith("kubernetes.io/cluster") or key in KARPENTER_KEYS


def collides(key: str) -> bool:
    """A key IAM would read as one of the ownership keys (it matches condition keys case-insensitively)."""
    folded = key.lower()
    return folded.startswith("kubernetes.io/cluster") or folded in KARPENTER_KEYS


def nodeclass(name: str, tags: dict[str, str]) -> dict[str, Any]:
    body = kube.nodeclass(name)
    body["spec"]["tags"] = tags
    return body


def nodeclaim(name: str, nodepool: str, nodeclass_name: str) -> NodeClaim:
    return NodeClaim.model_validate(kube.nodeclaim(name, nodepool, nodeclass=nodeclass_name))


def config(nodeclass_name: str, tags: dict[str, str]) -> LaunchConfig:
    return LaunchConfig(
        cluster_name=CLUSTER,
        nodeclass_name=nodeclass_name,
        image_id="ami-1",
        user_data="",
        instance_profile=f"{CLUSTER}_1",
        security_group_ids=("sg-1",),
        block_device_mappings=families.traits("AL2023").default_block_devices,
        metadata_options=MetadataOptions(),
        detailed_monitoring=False,
        associate_public_ip_address=None,
        tags=tuple(sorted(tags.items())),
        capacity_type=wk.CAPACITY_TYPE_SPOT,
    )


@fuzz(200)
@given(CLASS_TAGS)
@example({"kubernetes.io/cluster": "x"})
@example({"Kubernetes.io/cluster/other": "owned"})  # accepted, as by Karpenter: CEL's startsWith is case-sensitive
def test_validation_rejects_exactly_the_restricted_tag_keys(tags: dict[str, str]) -> None:
    rejected = sorted(k for k in tags if restricted(k))
    try:
        EC2NodeClass.model_validate(nodeclass("default", tags))
    except ValidationError as error:
        messages = {e["msg"] for e in error.errors()}
        assert rejected, messages
        assert messages <= UPSTREAM_MESSAGES, messages
        return
    assert not rejected


def test_the_crd_carries_karpenters_tag_rules() -> None:
    (kind,) = [c for c in generate.CRD_KINDS if c.kind == "EC2NodeClass"]
    crd = generate.crd_manifest(kind)
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["tags"]
    assert {rule["message"] for rule in schema["x-kubernetes-validations"]} == UPSTREAM_MESSAGES


def valid_class(name: str, tags: dict[str, str]) -> EC2NodeClass | None:
    try:
        return EC2NodeClass.model_validate(nodeclass(name, tags))
    except ValidationError:
        return None


@fuzz(150)
@given(NAMES, LABEL_VALUES, NAMES, CLASS_TAGS)
def test_every_request_built_carries_this_clusters_tags(
    account: Account, claim_name: str, nodepool: str, class_name: str, tags: dict[str, str]
) -> None:
    parsed = valid_class(class_name, tags)
    if parsed is None:
        return  # the API server refuses it: nothing is launched from it
    claim = nodeclaim(claim_name, nodepool, class_name)
    if any(collides(k) for k in tags):
        with pytest.raises(TagCollisionError):  # the launch fails with TagValidationFailed
            nodeclaim_launch_tags(claim, parsed, CLUSTER)
        return
    launched = nodeclaim_launch_tags(claim, parsed, CLUSTER)
    wanted = {**OURS, wk.TAG_NODEPOOL: nodepool, wk.TAG_NODECLASS: class_name}
    assert wanted.items() <= launched.items()
    assert {k: v for k, v in launched.items() if k not in wanted} == tags  # the user's, none of them dropped
    fleet = fleet_request(
        [("karpenter.k8s.aws/1", [Override("m5.large", "subnet-1", "us-west-2a", "ami-1")])],
        capacity_type=wk.CAPACITY_TYPE_SPOT,
        count=1,
        tags=launched,
        token="t",
    )
    template = config(class_name, launched)
    sent = [
        *(spec["Tags"] for spec in fleet["TagSpecifications"]),
        *(spec["Tags"] for spec in launch_template_data(template)["TagSpecifications"]),
        [{"Key": k, "Value": v} for k, v in launch_template_tags(template).items()],
    ]
    for tag_list in sent:
        as_map = {t["Key"]: t["Value"] for t in tag_list}
        assert len(as_map) == len(tag_list)  # no key twice, so EC2 cannot pick the user's copy
        assert wanted.items() <= as_map.items()
    assert launch_template_tags(template)[wk.TAG_LAUNCH_TEMPLATE_CLUSTER] == CLUSTER
    profile = InstanceProfiles(None, "us-west-2", CLUSTER).tags(ClusterInfo(CLUSTER, "https://x"), parsed)  # type: ignore[arg-type]
    assert {**OURS, wk.TAG_NODECLASS: class_name}.items() <= profile.items()
    # IAM: the provisioner may launch with these tags; naming another cluster in them, it may not.
    assert account.allowed("provisioner", launch("ec2:CreateFleet", launched))
    assert account.allowed("provisioner", launch_template_call(launch_template_tags(template)))
    theirs = {**launched, wk.TAG_CLUSTER_NAME: OTHER}
    assert not account.allowed("provisioner", launch("ec2:CreateFleet", theirs))


def launch_template_call(tags: dict[str, str]) -> Call:
    return call("ec2:CreateLaunchTemplate", LAUNCH_TEMPLATE, context=request_tags(tags))
