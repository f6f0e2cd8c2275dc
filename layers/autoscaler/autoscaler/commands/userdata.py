"""``autoscaler userdata -f NODECLASS.yaml [-f NODEPOOL.yaml] --cluster-name N --endpoint URL --ca B64``:
print the user data and launch template data a node of the class would boot with. Offline: the AMI,
security groups and instance type are not resolved (placeholders show where they go)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.apis.validation import InvalidObjectError, parse
from autoscaler.commands.manifest_args import add_manifest_arguments, manifest_documents

if TYPE_CHECKING:  # the providers are imported when the command runs, so that `autoscaler --help` stays fast
    from autoscaler.providers.aws.launchconfig import LaunchConfig
    from autoscaler.providers.aws.userdata import ClusterInfo

DEFAULT_MAX_PODS = 110
# What is only known at launch, or only to a cluster: shown where it goes.
IMAGE_PLACEHOLDER = "<AMI resolved per instance type at launch>"
SECURITY_GROUPS_PLACEHOLDER = "<security groups from status>"
NODEPOOL_PLACEHOLDER = "<nodepool>"


# ClusterInfo's fields -> the flags that set them, to name the flag when a family needs a field not given.
CLUSTER_FLAGS = {"name": "--cluster-name", "endpoint": "--endpoint", "ca_bundle": "--ca", "service_cidr": "--cidr"}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("userdata", help="print the user data and launch template a node class boots with")
    add_manifest_arguments(parser, "EC2NodeClass / NodePool YAML", required=True)
    parser.add_argument("--nodeclass", help="which EC2NodeClass, when the files hold several")
    parser.add_argument("--cluster-name", required=True)
    parser.add_argument("--endpoint", required=True, help="the API server URL")
    parser.add_argument("--ca", default=None, help="the cluster CA bundle, base64")
    parser.add_argument("--cidr", default=None, help="the service CIDR (AL2023 needs it; kube-dns is its .10)")
    parser.add_argument("--max-pods", type=int, default=None, help="pods per node (default: the class's, else 110)")
    parser.add_argument("--capacity-type", choices=(wk.CAPACITY_TYPE_ON_DEMAND, wk.CAPACITY_TYPE_SPOT))
    parser.add_argument("--region", default=os.environ.get("AWS_REGION", "us-east-1"))
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    parser.set_defaults(run=run)


def _load(args: argparse.Namespace) -> tuple[EC2NodeClass, NodePool | None]:
    classes, pools = [], []
    for document in manifest_documents(args):
        if document.error:
            raise SystemExit(f"{document.origin}: {document.error}")
        try:
            obj = parse(document.body)
        except InvalidObjectError as error:
            raise SystemExit(f"{document.origin}: {error}") from error
        if isinstance(obj, EC2NodeClass):
            classes.append(obj)
        elif isinstance(obj, NodePool):
            pools.append(obj)
    candidates = [c for c in classes if args.nodeclass in (None, c.name)]
    if len(candidates) != 1:
        names = ", ".join(c.name for c in classes) or "none"
        raise SystemExit(f"expected exactly one EC2NodeClass (use --nodeclass NAME); found: {names}")
    nodeclass = candidates[0]
    pool = next((p for p in pools if p.spec.template.spec.node_class_ref.name == nodeclass.name), None)
    return nodeclass, pool


def template_nodeclaim(nodeclass: EC2NodeClass, pool: NodePool | None) -> NodeClaim:
    """The NodeClaim a NodePool would create, as far as a launch reads it: labels and taints (which user data
    carries) and the v1beta1 kubelet annotation. Without a NodePool, its name is a placeholder."""
    if pool is None:
        ref = {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": nodeclass.name}
        metadata = {"name": "example", "labels": {wk.LABEL_NODEPOOL: NODEPOOL_PLACEHOLDER}}
        return NodeClaim.model_validate({"metadata": metadata, "spec": {"requirements": [], "nodeClassRef": ref}})
    template = pool.spec.template
    labels = {**((template.metadata.labels if template.metadata else None) or {}), wk.LABEL_NODEPOOL: pool.name}
    kubelet = (pool.metadata.annotations or {}).get(wk.ANNOTATION_KUBELET_COMPATIBILITY)
    annotations = {wk.ANNOTATION_KUBELET_COMPATIBILITY: kubelet} if kubelet else {}
    metadata = {"name": f"{pool.name}-example", "labels": labels, "annotations": annotations}
    return NodeClaim.model_validate({"metadata": metadata, "spec": template.spec.to_dict()})


def preview(
    nodeclass: EC2NodeClass,
    pool: NodePool | None,
    cluster: ClusterInfo,
    *,
    max_pods: int | None = None,
    capacity_type: str = wk.CAPACITY_TYPE_ON_DEMAND,
    region: str,
) -> LaunchConfig:
    """The launch configuration the launcher computes for ``pool``'s NodeClaims of ``nodeclass``, with what is
    only known at launch (the AMI, an unresolved class's security groups) as placeholders. ``max_pods`` stands
    for the instance type's pod capacity. Raises UserDataError."""
    from autoscaler.providers.aws.instanceprofiles import instance_profile_name
    from autoscaler.providers.aws.launchconfig import nodeclaim_launch_config

    groups = nodeclass.status.security_groups if nodeclass.status else None
    return nodeclaim_launch_config(
        template_nodeclaim(nodeclass, pool),
        nodeclass,
        cluster,
        capacity_type=capacity_type,
        image_id=IMAGE_PLACEHOLDER,
        pods=max_pods or DEFAULT_MAX_PODS,
        instance_profile=nodeclass.spec.instance_profile or instance_profile_name(cluster.name, region, nodeclass.name),
        security_group_ids=[g.id for g in groups] if groups else [SECURITY_GROUPS_PLACEHOLDER],
    )


def render(args: argparse.Namespace) -> dict[str, Any]:
    from autoscaler.providers.aws.launchconfig import launch_template_data
    from autoscaler.providers.aws.userdata import ClusterInfo

    nodeclass, pool = _load(args)
    cluster = ClusterInfo(args.cluster_name, args.endpoint, args.ca, args.cidr)
    capacity_type = args.capacity_type or wk.CAPACITY_TYPE_ON_DEMAND
    config = preview(nodeclass, pool, cluster, max_pods=args.max_pods, capacity_type=capacity_type, region=args.region)
    data = launch_template_data(config)
    data.pop("UserData")
    return {
        "family": nodeclass.spec.resolved_ami_family,
        "userData": config.user_data,
        "launchTemplateName": config.name,
        "launchTemplateData": data,
    }


def run(args: argparse.Namespace) -> int:
    from autoscaler.providers.aws.nodeclaims import KubeletCompatibilityError
    from autoscaler.providers.aws.userdata import UserDataError

    try:
        result = render(args)
    except (UserDataError, KubeletCompatibilityError) as error:
        flag = CLUSTER_FLAGS.get(getattr(error, "missing", ""))
        print(f"error: {error}" + (f": pass {flag}" if flag else ""), file=sys.stderr)
        return 1
    if args.output == "json":
        print(json.dumps(result, indent=2))
        return 0
    print(f"# {result['family']} user data (launch template {result['launchTemplateName']})")
    print(result["userData"])
    print("# launch template data (UserData above, base64-encoded in the template)")
    print(json.dumps(result["launchTemplateData"], indent=2))
    return 0
