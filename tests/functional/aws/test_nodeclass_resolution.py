"""EC2NodeClass resolution against moto: subnets, security groups, AMIs (SSM aliases and terms),
instance profiles, and the nodeclass controller end to end."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler.apis.conversion import UBUNTU_INCOMPATIBLE_MESSAGE, UBUNTU_INCOMPATIBLE_REASON, convert
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import get_condition
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.cloudprovider.nodeclass import NothingMatchedError, ResolutionRefusedError
from autoscaler.controllers.nodeclass import FINALIZED, NodeClassController
from autoscaler.providers.aws.provider import AWSCloudProvider
from autoscaler_dev.world.aws_world import CLUSTER, DISCOVERY, KUBERNETES_VERSION, REGION, ZONES, AWSWorld
from tests.functional.aws.helpers import claim, profile_names, provider
from tests.support.memory_cluster import MemoryCluster


@pytest.fixture
def cloud(aws_world: AWSWorld) -> AWSCloudProvider:
    return provider(aws_world)


def requirement_sets(amis: list[Any]) -> dict[str, list[tuple[str, str, tuple[str, ...]]]]:
    return {a.id: sorted((r.key, r.operator, tuple(r.values or ())) for r in a.requirements) for a in amis}


def test_subnets_by_tags_wildcard_and_id(aws_world: AWSWorld, cloud: AWSCloudProvider) -> None:
    by_tags = cloud.aws.resolver.subnets(aws_world.nodeclass("t", ready=False))
    assert {s.zone for s in by_tags} == set(ZONES)
    assert all(s.zone_id and s.zone_id.startswith("usw2-az") for s in by_tags)
    free = [
        aws_world.client("ec2").describe_subnets(SubnetIds=[s.id])["Subnets"][0]["AvailableIpAddressCount"]
        for s in by_tags
    ]
    assert free == sorted(free, reverse=True)  # most free addresses first

    wildcard = aws_world.nodeclass("w", ready=False, subnetSelectorTerms=[{"tags": {"karpenter.sh/discovery": "*"}}])
    assert {s.id for s in cloud.aws.resolver.subnets(wildcard)} >= {s.id for s in by_tags}
    one = aws_world.subnets["us-west-2b"]
    by_id = aws_world.nodeclass(
        "i", ready=False, subnetSelectorTerms=[{"id": one}, {"tags": {"Name": "private-us-west-2c"}}]
    )
    assert {s.id for s in cloud.aws.resolver.subnets(by_id)} == {one, aws_world.subnets["us-west-2c"]}

    none = aws_world.nodeclass("n", ready=False, subnetSelectorTerms=[{"tags": {"karpenter.sh/discovery": "nope"}}])
    with pytest.raises(NothingMatchedError, match=r'no subnet matched subnetSelectorTerms .*"nope"'):
        cloud.aws.resolver.subnets(none)


def test_security_groups_by_tags_name_and_id(aws_world: AWSWorld, cloud: AWSCloudProvider) -> None:
    sg = aws_world.security_group
    for terms in ([{"tags": DISCOVERY}], [{"name": f"{CLUSTER}-nodes"}], [{"id": sg}]):
        nodeclass = aws_world.nodeclass("g", ready=False, securityGroupSelectorTerms=terms)
        assert [g.id for g in cloud.aws.resolver.security_groups(nodeclass)] == [sg]
    missing = aws_world.nodeclass("g", ready=False, securityGroupSelectorTerms=[{"name": "absent"}])
    with pytest.raises(NothingMatchedError, match="no security group matched"):
        cloud.aws.resolver.security_groups(missing)


def test_al2023_alias_resolves_every_variant_through_ssm(aws_world: AWSWorld, cloud: AWSCloudProvider) -> None:
    amis = cloud.aws.resolver.amis(aws_world.nodeclass("a", ready=False))
    sets = requirement_sets(amis)
    assert sets[aws_world.images["al2023/x86_64/nvidia"]] == [
        ("karpenter.k8s.aws/instance-gpu-count", "Exists", ()),
        (wk.LABEL_ARCH, "In", ("amd64",)),
    ]
    assert (wk.LABEL_ARCH, "In", ("arm64",)) in sets[aws_world.images["al2023/arm64/standard"]]
    assert ("karpenter.k8s.aws/instance-accelerator-count", "Exists", ()) in sets[
        aws_world.images["al2023/x86_64/neuron"]
    ]


def test_al2_gpu_ami_serves_nvidia_and_neuron(aws_world: AWSWorld, cloud: AWSCloudProvider) -> None:
    amis = cloud.aws.resolver.amis(aws_world.nodeclass("a", ready=False, amiSelectorTerms=[{"alias": "al2@latest"}]))
    gpu = [a for a in amis if a.id == aws_world.images["al2/x86_64/gpu"]]
    assert len(gpu) == 2  # one entry per requirement set
    assert {a.id for a in amis} == {
        aws_world.images[k] for k in ("al2/x86_64/standard", "al2/arm64/standard", "al2/x86_64/gpu")
    }


# Parameters ``seed_eks_amis`` leaves out. Seeded by the test itself (same image id and value on every call) so
# that each case sees the same account whichever tests ran before in the shared session world.
_WINDOWS = "/aws/service/ami-windows-latest/Windows_Server-{year}-English-Core-EKS_Optimized-" + KUBERNETES_VERSION
_EXTRA_ALIAS_PARAMETERS = {
    "windows2019/x86_64/standard": (_WINDOWS.format(year=2019) + "/image_id", "x86_64"),
    **{
        f"bottlerocket/{arch}/nvidia": (
            f"/aws/service/bottlerocket/aws-k8s-{KUBERNETES_VERSION}-nvidia/{arch}/latest/image_id",
            arch,
        )
        for arch in ("x86_64", "arm64")
    },
}
_GPU = ("karpenter.k8s.aws/instance-gpu-count", "Exists", ())
_ACCELERATOR = ("karpenter.k8s.aws/instance-accelerator-count", "Exists", ())
_NO_GPU = ("karpenter.k8s.aws/instance-gpu-count", "DoesNotExist", ())


def _seed_extra_alias_amis(world: AWSWorld) -> dict[str, str]:
    images = {}
    for key, (path, arch) in _EXTRA_ALIAS_PARAMETERS.items():
        images[key] = world.add_image(f"eks-{key.replace('/', '-')}-{KUBERNETES_VERSION}", arch)
        world.seed_parameter(path, images[key])
    return {**world.images, **images}


@pytest.mark.parametrize(
    ("alias", "expected"),
    [
        # Bottlerocket's -nvidia parameters serve GPU and Neuron types: one entry per requirement set.
        (
            "bottlerocket@latest",
            {
                "bottlerocket/x86_64/standard": [_NO_GPU],
                "bottlerocket/arm64/standard": [_NO_GPU],
                "bottlerocket/x86_64/nvidia": [_GPU, _ACCELERATOR],
                "bottlerocket/arm64/nvidia": [_GPU, _ACCELERATOR],
            },
        ),
        ("windows2019@latest", {"windows2019/x86_64/standard": [(wk.LABEL_WINDOWS_BUILD, "In", ("10.0.17763",))]}),
        ("windows2022@latest", {"windows2022/x86_64/standard": [(wk.LABEL_WINDOWS_BUILD, "In", ("10.0.20348",))]}),
    ],
)
def test_other_family_aliases(
    aws_world: AWSWorld,
    cloud: AWSCloudProvider,
    alias: str,
    expected: dict[str, list[tuple[str, str, tuple[str, ...]]]],
) -> None:
    images = _seed_extra_alias_amis(aws_world)
    amis = cloud.aws.resolver.amis(aws_world.nodeclass("a", ready=False, amiSelectorTerms=[{"alias": alias}]))
    assert {a.id for a in amis} == {images[k] for k in expected}
    for key, markers in expected.items():
        # One status entry per requirement set the image serves; each set carries one of the markers.
        served = [
            {(r.key, r.operator, tuple(r.values or ())) for r in a.requirements} for a in amis if a.id == images[key]
        ]
        assert len(served) == len(markers), (key, served)
        for marker in markers:
            assert any(marker in s for s in served), (key, marker, served)
    if alias.startswith("windows"):
        assert all((wk.LABEL_OS, "In", ("windows",)) in s for s in requirement_sets(amis).values())


def test_a_pinned_alias_reads_the_versioned_parameter(aws_world: AWSWorld, cloud: AWSCloudProvider) -> None:
    pinned = aws_world.add_image("al2023-pinned", "x86_64")
    path = (
        f"/aws/service/eks/optimized-ami/{KUBERNETES_VERSION}/amazon-linux-2023/x86_64/standard/"
        f"amazon-eks-node-al2023-x86_64-standard-{KUBERNETES_VERSION}-v20240807/image_id"
    )
    aws_world.seed_parameter(path, pinned)
    nodeclass = aws_world.nodeclass("p", ready=False, amiSelectorTerms=[{"alias": "al2023@v20240807"}])
    assert [a.id for a in cloud.aws.resolver.amis(nodeclass)] == [pinned]
    unknown = aws_world.nodeclass("u", ready=False, amiSelectorTerms=[{"alias": "al2023@v19990101"}])
    with pytest.raises(NothingMatchedError, match='alias "al2023@v19990101"'):
        cloud.aws.resolver.amis(unknown)


def test_terms_pick_the_newest_image_per_requirement_set(aws_world: AWSWorld, cloud: AWSCloudProvider) -> None:
    older = aws_world.add_image("golden-1", "x86_64", datetime(2026, 1, 1, tzinfo=UTC), image="golden")
    newer = aws_world.add_image("golden-2", "x86_64", datetime(2026, 3, 1, tzinfo=UTC), image="golden")
    arm = aws_world.add_image("golden-arm", "arm64", datetime(2025, 1, 1, tzinfo=UTC), image="golden")
    by_tags = aws_world.nodeclass(
        "t", ready=False, amiFamily="AL2023", amiSelectorTerms=[{"tags": {"image": "golden"}}]
    )
    assert [a.id for a in cloud.aws.resolver.amis(by_tags)] == [newer, arm]  # newest first; older lost to newer
    by_name = aws_world.nodeclass(
        "n", ready=False, amiFamily="AL2023", amiSelectorTerms=[{"name": "golden-1", "owner": "self"}]
    )
    assert [a.id for a in cloud.aws.resolver.amis(by_name)] == [older]
    by_id = aws_world.nodeclass("i", ready=False, amiFamily="Custom", amiSelectorTerms=[{"id": older}, {"id": arm}])
    assert {a.id for a in cloud.aws.resolver.amis(by_id)} == {older, arm}


def test_instance_profile_is_created_tagged_swapped_and_deleted(aws_world: AWSWorld, cloud: AWSCloudProvider) -> None:
    iam = aws_world.client("iam")
    iam.create_role(RoleName="OtherRole", AssumeRolePolicyDocument="{}")
    nodeclass = aws_world.nodeclass("profiled", ready=False)
    name = cloud.aws.resolver.instance_profile(nodeclass)
    assert name.startswith(f"{CLUSTER}_") and cloud.aws.resolver.instance_profile(nodeclass) == name  # idempotent
    profile = iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
    assert [r["RoleName"] for r in profile["Roles"]] == [aws_world.role]
    tags = {t["Key"]: t["Value"] for t in profile.get("Tags", [])}
    arn = aws_world.client("eks").describe_cluster(name=CLUSTER)["cluster"]["arn"]
    assert tags == {
        f"kubernetes.io/cluster/{CLUSTER}": "owned",
        wk.TAG_CLUSTER_NAME: CLUSTER,
        wk.TAG_CLUSTER_ARN: arn,
        wk.TAG_NODECLASS: "profiled",
        wk.TAG_REGION: REGION,
    }
    swapped = nodeclass.model_copy(update={"spec": nodeclass.spec.model_copy(update={"role": "OtherRole"})})
    assert cloud.aws.resolver.instance_profile(swapped) == name
    roles = iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]["Roles"]
    assert [r["RoleName"] for r in roles] == ["OtherRole"]
    named = aws_world.nodeclass("named", ready=False, role=None, instanceProfile="Preexisting")
    assert cloud.aws.resolver.instance_profile(named) == "Preexisting"

    cloud.aws.resolver.cleanup(swapped)
    cloud.aws.resolver.cleanup(swapped)  # already gone: still fine
    assert name not in profile_names(aws_world)


def test_controller_end_to_end_resolves_then_finalizes(aws_world: AWSWorld) -> None:
    nodeclass = aws_world.nodeclass("lifecycle", ready=False)
    cluster = MemoryCluster(nodeclass)
    cloud = provider(aws_world, nodeclass)
    controller = NodeClassController(cluster, cloud.aws.resolver)
    assert controller.reconcile_all()[0].ready == "True"
    stored = cluster.nodeclass("lifecycle")
    assert get_condition(stored.status.conditions, "Ready").status == "True"  # type: ignore[union-attr]
    assert {s.zone for s in stored.status.subnets} == set(ZONES)

    launcher = provider(aws_world, stored)
    launcher.create(claim("on-lifecycle", "lifecycle", (wk.LABEL_ARCH, "In", ["amd64"])))
    ec2 = aws_world.client("ec2")
    owned = [{"Name": f"tag:{wk.TAG_NODECLASS}", "Values": ["lifecycle"]}]
    assert ec2.describe_launch_templates(Filters=owned)["LaunchTemplates"]

    cluster.delete(_ref(stored))
    outcome = controller.reconcile_all()[0]
    assert outcome.action == FINALIZED
    assert ec2.describe_launch_templates(Filters=owned)["LaunchTemplates"] == []
    assert stored.status.instance_profile not in profile_names(aws_world)
    assert "lifecycle" not in cluster.names("EC2NodeClass")


UBUNTU_EXAMPLE = Path(__file__).parents[3] / "events" / "v1beta1" / "ubuntu-kubelet.yaml"


def _converted_example_classes(world: AWSWorld) -> list[EC2NodeClass]:
    """The example's v1beta1 Ubuntu classes through the conversion webhook's code, pointed at this world."""
    classes = []
    for document in yaml.safe_load_all(UBUNTU_EXAMPLE.read_text()):
        if document["kind"] != "EC2NodeClass":
            continue
        document["spec"].update(
            role=world.role, subnetSelectorTerms=[{"tags": DISCOVERY}], securityGroupSelectorTerms=[{"tags": DISCOVERY}]
        )
        classes.append(EC2NodeClass.model_validate(convert(document, "karpenter.k8s.aws/v1")))
    return classes


def test_a_converted_ubuntu_class_reports_how_to_pin_its_ami(aws_world: AWSWorld) -> None:
    classes = _converted_example_classes(aws_world)
    assert {c.name for c in classes} == {"ubuntu-pinned", "ubuntu-discovered"}
    cluster = MemoryCluster(*classes)
    outcomes = {o.name: o for o in NodeClassController(cluster, provider(aws_world).aws.resolver).reconcile_all()}
    assert {o.ready for o in outcomes.values()} == {"False"}

    statuses = {name: getattr(cluster.nodeclass(name), "status", None) for name in outcomes}
    discovered, pinned_status = statuses["ubuntu-discovered"], statuses["ubuntu-pinned"]
    assert discovered is not None and pinned_status is not None
    amis = get_condition(discovered.conditions, "AMIsReady")
    assert amis is not None and (amis.status, amis.reason) == ("False", UBUNTU_INCOMPATIBLE_REASON)
    assert amis.message == UBUNTU_INCOMPATIBLE_MESSAGE and discovered.amis is None
    assert get_condition(discovered.conditions, "SubnetsReady").status == "True"  # type: ignore[union-attr]
    # The pinned class's own terms are looked up (moto holds no Canonical image): the generic message.
    pinned = get_condition(pinned_status.conditions, "AMIsReady")
    assert pinned is not None and pinned.status == "False" and "no AMI matched" in (pinned.message or "")
    assert "ubuntu-jammy-22.04" in (pinned.message or "") and pinned.message != UBUNTU_INCOMPATIBLE_MESSAGE


def _ref(obj: Any) -> Any:
    from autoscaler.kube.port import ObjectRef

    return ObjectRef(obj.kind, obj.name)


def test_ssm_parameter_terms_resolve_skip_and_follow_the_value(aws_world: AWSWorld, cloud: AWSCloudProvider) -> None:
    first = aws_world.add_image("ssm-golden-1", "x86_64")
    second = aws_world.add_image("ssm-golden-2", "x86_64")
    ssm = aws_world.client("ssm")
    ssm.put_parameter(Name="/team/node-ami", Value=first, Type="String")
    ssm.put_parameter(Name="/team/not-an-ami", Value="hello", Type="String")
    terms = [
        {"ssmParameter": "/team/node-ami"},
        {"ssmParameter": "/team/missing"},
        {"ssmParameter": "/team/not-an-ami"},
    ]
    nodeclass = aws_world.nodeclass("s", ready=False, amiFamily="AL2023", amiSelectorTerms=terms)
    assert [a.id for a in cloud.aws.resolver.amis(nodeclass)] == [first]  # missing / non-AMI values skipped
    ssm.put_parameter(Name="/team/node-ami", Value=second, Type="String", Overwrite=True)
    assert [a.id for a in provider(aws_world).aws.resolver.amis(nodeclass)] == [second]  # a fresh read follows
    only_bad = aws_world.nodeclass("b", ready=False, amiFamily="AL2023", amiSelectorTerms=terms[1:])
    with pytest.raises(NothingMatchedError):
        cloud.aws.resolver.amis(only_bad)


def test_windows2025_needs_kubernetes_1_35(aws_world: AWSWorld, cloud: AWSCloudProvider) -> None:
    nodeclass = aws_world.nodeclass("w25", ready=False, amiSelectorTerms=[{"alias": "windows2025@latest"}])
    with pytest.raises(ResolutionRefusedError, match=r"requires EKS version 1\.35"):
        cloud.aws.resolver.amis(nodeclass)  # the world's cluster runs 1.30
