"""Launch templates as data: what goes into one, its name, and the tags of what it launches. Pure.

One launch template exists per distinct launch configuration (AMI, user data, volumes, network,
metadata options, tags, ...); its name is ``karpenter.k8s.aws/<hash of the configuration>``, so a
changed configuration gets a new template and an unchanged one is found again by name.
``nodeclaim_launch_config`` is the one place a NodeClaim's configuration is computed: the launcher and
the ``autoscaler userdata`` preview both call it, so what is previewed is what is launched.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from autoscaler.apis.quantity import parse_quantity
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import (
    BlockDeviceMapping,
    ConnectionTracking,
    CPUOptions,
    EC2NodeClass,
    MetadataOptions,
    NetworkInterface,
)
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.cloudprovider.types import Reservation
from autoscaler.providers.aws import families, launchshape, userdata
from autoscaler.providers.aws.nodeclaims import boot_labels, boot_taints, effective_kubelet, kubelet_for
from autoscaler.providers.aws.reserved import reservation_labels

NAME_PREFIX = f"{wk.AWS_GROUP}/"


class TagCollisionError(ValueError):
    """A class tag whose key is one of the ownership keys but for its letter case: allowed by Karpenter's CEL (EC2
    keys are case-sensitive), yet IAM matches condition keys case-insensitively, so such a tag would make the roles'
    ABAC conditions read the user's value instead of ours (or another cluster's roles see their own key)."""


_OWNERSHIP_KEYS = frozenset(k.lower() for k in wk.RESTRICTED_TAG_KEYS)


def _collides(key: str) -> bool:
    folded = key.lower()  # as IAM compares condition keys (and autoscaler_dev.iam.policy)
    return folded in _OWNERSHIP_KEYS or folded.startswith(wk.TAG_CLUSTER_PREFIX.removesuffix("/"))


def launch_tags(
    cluster_name: str, nodepool: str, nodeclass: str, class_tags: Mapping[str, str] | None
) -> dict[str, str]:
    """Tags of every instance, volume and network interface we launch: the class's tags, then ours (which
    the class may not override). Deliberately no ``karpenter.sh/managed-by``. Raises TagCollisionError for a class
    tag that is an ownership key in another letter case (validation refuses the exact ones; if one gets here, the
    cluster prefix under any name is refused too, and ours override the rest)."""
    ours = {
        f"{wk.TAG_CLUSTER_PREFIX}{cluster_name}": "owned",
        wk.TAG_NODEPOOL: nodepool,
        wk.TAG_CLUSTER_NAME: cluster_name,
        wk.TAG_NODECLASS: nodeclass,
    }
    collisions = sorted(k for k in class_tags or {} if _collides(k) and k not in ours)
    if collisions:
        raise TagCollisionError(f"tags {collisions} are restricted tag keys, up to letter case")
    return {
        **(class_tags or {}),
        **ours,
    }


def nodeclaim_launch_tags(nodeclaim: NodeClaim, nodeclass: EC2NodeClass, cluster_name: str) -> dict[str, str]:
    """The launch tags of ``nodeclaim``'s instances (its NodePool from its ``karpenter.sh/nodepool`` label)."""
    nodepool = (nodeclaim.metadata.labels or {}).get(wk.LABEL_NODEPOOL, "")
    return launch_tags(cluster_name, nodepool, nodeclass.name, nodeclass.spec.tags)


def tag_list(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": key, "Value": tags[key]} for key in sorted(tags)]


@dataclass(frozen=True)
class LaunchConfig:
    """Everything a launch template fixes. Instance type, subnet and AMI vary per CreateFleet override."""

    cluster_name: str
    nodeclass_name: str
    image_id: str
    user_data: str
    instance_profile: str
    security_group_ids: tuple[str, ...]
    block_device_mappings: tuple[BlockDeviceMapping, ...]
    metadata_options: MetadataOptions
    detailed_monitoring: bool
    associate_public_ip_address: bool | None
    tags: tuple[tuple[str, str], ...]
    capacity_type: str
    efa_count: int = 0
    network_interfaces: tuple[NetworkInterface, ...] | None = None
    ip_prefix_count: int | None = None
    connection_tracking: ConnectionTracking | None = None
    cpu_options: CPUOptions | None = None
    placement_group_id: str | None = None
    ipv6: bool = False  # an IPv6 cluster
    reservation: Reservation | None = None  # a reserved launch: the capacity reservation it targets
    # The ReservedCapacity gate off (Karpenter's LaunchModeOpen): nothing is said about reservations, so EC2 may put
    # an on-demand launch into any open reservation that matches it.
    open_reservations: bool = False

    @property
    def name(self) -> str:
        """A digest of exactly what EC2 receives, so that any difference (an explicit ``false`` included)
        makes a different template."""
        sent = {"data": launch_template_data(self), "tags": launch_template_tags(self)}
        digest = hashlib.sha256(json.dumps(sent, sort_keys=True).encode()).digest()
        return NAME_PREFIX + str(int.from_bytes(digest[:8], "big"))


def volume_size_gib(size: str) -> int:
    """A volume size quantity in whole GiB, rounded up (EC2 takes GiB)."""
    return math.ceil(parse_quantity(size) / 2**30)


def _block_device_mappings(config: LaunchConfig) -> list[dict[str, Any]]:
    mappings = []
    for mapping in config.block_device_mappings:
        ebs = mapping.ebs
        entry: dict[str, Any] = {"DeviceName": mapping.device_name}
        if ebs is not None:
            fields = {
                "DeleteOnTermination": ebs.delete_on_termination,
                "Encrypted": ebs.encrypted,
                "VolumeType": ebs.volume_type,
                "Iops": ebs.iops,
                "Throughput": ebs.throughput,
                "KmsKeyId": ebs.kms_key_id,
                "SnapshotId": ebs.snapshot_id,
                "VolumeInitializationRate": ebs.volume_initialization_rate,
                "VolumeSize": volume_size_gib(ebs.volume_size) if ebs.volume_size else None,
            }
            entry["Ebs"] = {k: v for k, v in fields.items() if v is not None}
        mappings.append(entry)
    return mappings


def _network_interfaces(config: LaunchConfig) -> list[dict[str, Any]]:
    """The public IP follows ``spec.associatePublicIPAddress`` alone and is never sent when that is unset."""
    return launchshape.network_interfaces(
        configured=config.network_interfaces,
        efa_count=config.efa_count,
        groups=list(config.security_group_ids),
        public_ip=config.associate_public_ip_address,
        ip_prefix_count=config.ip_prefix_count,
        tracking=launchshape.connection_tracking(config.connection_tracking),
        ipv6=config.ipv6,
    )


def _reservation_options(config: LaunchConfig) -> dict[str, Any]:
    """Karpenter's targeted launch mode (the ReservedCapacity gate on). A reserved launch goes into its reservation
    only: a full one must fail the launch (and mark it unavailable), not spill to on-demand. Any other launch says
    ``none``, so that an open reservation the NodePool did not ask for never absorbs an on-demand node (which would
    then take the reservation's capacity from the pools that do select it)."""
    if config.reservation is None:
        return (
            {}
            if config.open_reservations
            else {"CapacityReservationSpecification": {"CapacityReservationPreference": "none"}}
        )
    options: dict[str, Any] = {
        "CapacityReservationSpecification": {
            "CapacityReservationPreference": "capacity-reservations-only",
            "CapacityReservationTarget": {"CapacityReservationId": config.reservation.id},
        }
    }
    if config.reservation.type == "capacity-block":
        options["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
    elif config.reservation.interruptible:  # EC2 may reclaim it, with a warning (the interruption function's)
        options["InstanceMarketOptions"] = {"MarketType": "interruptible-capacity-reservation"}
    return options


def launch_template_data(config: LaunchConfig) -> dict[str, Any]:
    """The CreateLaunchTemplate ``LaunchTemplateData`` for ``config``."""
    options = config.metadata_options
    tags = tag_list(dict(config.tags))
    data: dict[str, Any] = {
        "ImageId": config.image_id,
        "UserData": base64.b64encode(config.user_data.encode()).decode(),
        "IamInstanceProfile": {"Name": config.instance_profile},
        "Monitoring": {"Enabled": config.detailed_monitoring},
        "MetadataOptions": {
            "HttpEndpoint": options.http_endpoint,
            "HttpProtocolIpv6": options.http_protocol_ipv6,
            "HttpPutResponseHopLimit": options.http_put_response_hop_limit,
            "HttpTokens": options.http_tokens,
        },
        "TagSpecifications": [{"ResourceType": "network-interface", "Tags": tags}]
        + ([{"ResourceType": "spot-instances-request", "Tags": tags}] if config.capacity_type == "spot" else []),
    }
    if config.placement_group_id:  # EC2 picks the partition of a partition group
        data["Placement"] = {"GroupId": config.placement_group_id}
    data.update(_reservation_options(config))
    cpu = launchshape.cpu_options(config.cpu_options)
    if cpu:
        data["CpuOptions"] = cpu
    block_devices = _block_device_mappings(config)
    if block_devices:
        data["BlockDeviceMappings"] = block_devices
    interfaces = _network_interfaces(config)
    if interfaces:
        data["NetworkInterfaces"] = interfaces  # security groups travel inside the interfaces then
    else:
        data["SecurityGroupIds"] = list(config.security_group_ids)
    return data


def launch_template_tags(config: LaunchConfig) -> dict[str, str]:
    """Tags of the launch template itself: the launch tags plus the cluster marker garbage collection keys on."""
    return {
        **dict(config.tags),
        wk.TAG_LAUNCH_TEMPLATE_CLUSTER: config.cluster_name,
        wk.TAG_NODECLASS: config.nodeclass_name,
    }


def nodeclaim_launch_config(
    nodeclaim: NodeClaim,
    nodeclass: EC2NodeClass,
    cluster: userdata.ClusterInfo,
    *,
    capacity_type: str,
    image_id: str,
    pods: int,
    instance_profile: str,
    security_group_ids: Iterable[str],
    efa_count: int = 0,
    placement_group_id: str | None = None,
    reservation: Reservation | None = None,
    open_reservations: bool = False,
) -> LaunchConfig:
    """The launch template ``nodeclaim`` boots from on instance types of ``image_id`` with room for ``pods``
    pods and ``efa_count`` EFA interfaces, in the placement group ``placement_group_id``: the family's user data
    with the claim's labels and taints and the kubelet settings that apply (maxPods defaulted to ``pods``), the
    class's volumes, network and metadata options, the launch tags. Raises UserDataError when the class's
    userData cannot be merged, TagCollisionError (``launch_tags``), and KubeletCompatibilityError when the claim's
    v1beta1 kubelet annotation is not a kubelet configuration."""
    spec = nodeclass.spec
    family = spec.resolved_ami_family
    kubelet = kubelet_for(nodeclass, nodeclaim.metadata.annotations)
    options = userdata.BootstrapOptions(
        cluster=cluster,
        kubelet=effective_kubelet(kubelet, pods, cluster.dns_ip),
        taints=boot_taints(nodeclaim),
        labels={**boot_labels(nodeclaim, capacity_type), **(reservation_labels(reservation) if reservation else {})},
        custom_user_data=spec.user_data,
        instance_store_policy=spec.instance_store_policy,
    )
    tags = nodeclaim_launch_tags(nodeclaim, nodeclass, cluster.name)
    return LaunchConfig(
        cluster_name=cluster.name,
        nodeclass_name=nodeclass.name,
        image_id=image_id,
        user_data=userdata.render(family, options),
        instance_profile=instance_profile,
        security_group_ids=tuple(sorted(security_group_ids)),
        block_device_mappings=tuple(spec.block_device_mappings or families.traits(family).default_block_devices),
        metadata_options=spec.metadata_options,
        detailed_monitoring=bool(spec.detailed_monitoring),
        associate_public_ip_address=spec.associate_public_ip_address,
        tags=tuple(sorted(tags.items())),
        capacity_type=capacity_type,
        efa_count=efa_count,
        network_interfaces=tuple(spec.network_interfaces) if spec.network_interfaces else None,
        ip_prefix_count=spec.ip_prefix_count,
        connection_tracking=spec.connection_tracking,
        cpu_options=spec.cpu_options,
        placement_group_id=placement_group_id,
        ipv6=cluster.ipv6,
        reservation=reservation,
        open_reservations=open_reservations,
    )
