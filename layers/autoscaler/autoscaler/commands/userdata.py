"""``autoscaler userdata -f NODECLASS.yaml [-f NODEPOOL.yaml] --cluster-name N --endpoint URL --ca B64``:
print the user data and launch template data a node of the class would boot with. Offline: the AMI,
security groups and instance type are not resolved (placeholders show where they go)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.apis.validation import InvalidObjectError, parse
from autoscaler.manifests import load_documents

DEFAULT_MAX_PODS = 110


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("userdata", help="print the user data and launch template a node class boots with")
    parser.add_argument("-f", "--filename", action="append", required=True, help="EC2NodeClass / NodePool YAML")
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


def _load(files: list[str], wanted: str | None) -> tuple[EC2NodeClass, NodePool | None]:
    classes, pools = [], []
    for document in load_documents(files):
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
    candidates = [c for c in classes if wanted in (None, c.name)]
    if len(candidates) != 1:
        names = ", ".join(c.name for c in classes) or "none"
        raise SystemExit(f"expected exactly one EC2NodeClass (use --nodeclass NAME); found: {names}")
    nodeclass = candidates[0]
    pool = next((p for p in pools if p.spec.template.spec.node_class_ref.name == nodeclass.name), None)
    return nodeclass, pool


def template_nodeclaim(nodeclass: EC2NodeClass, pool: NodePool | None) -> NodeClaim:
    """The NodeClaim a NodePool would create (labels and taints are what user data carries)."""
    if pool is None:
        ref = {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": nodeclass.name}
        return NodeClaim.model_validate(
            {"metadata": {"name": "example"}, "spec": {"requirements": [], "nodeClassRef": ref}}
        )
    template = pool.spec.template
    labels = {**((template.metadata.labels if template.metadata else None) or {}), wk.LABEL_NODEPOOL: pool.name}
    spec = template.spec.to_dict()
    return NodeClaim.model_validate({"metadata": {"name": f"{pool.name}-example", "labels": labels}, "spec": spec})


def render(args: argparse.Namespace) -> dict[str, Any]:
    from autoscaler.providers.aws import families, userdata
    from autoscaler.providers.aws.instanceprofiles import instance_profile_name
    from autoscaler.providers.aws.launchconfig import LaunchConfig, launch_tags, launch_template_data
    from autoscaler.providers.aws.nodeclaims import boot_labels, boot_taints, effective_kubelet, kubelet_for

    nodeclass, pool = _load(args.filename, args.nodeclass)
    claim = template_nodeclaim(nodeclass, pool)
    cluster = userdata.ClusterInfo(args.cluster_name, args.endpoint, args.ca, args.cidr)
    kubelet = kubelet_for(nodeclass, pool.metadata.annotations if pool else None)
    max_pods = args.max_pods or (kubelet.max_pods if kubelet and kubelet.max_pods else DEFAULT_MAX_PODS)
    capacity_type = args.capacity_type or wk.CAPACITY_TYPE_ON_DEMAND
    family = nodeclass.spec.resolved_ami_family
    options = userdata.BootstrapOptions(
        cluster=cluster,
        kubelet=effective_kubelet(kubelet, max_pods, cluster.dns_ip),
        taints=boot_taints(claim),
        labels=boot_labels(claim, capacity_type),
        custom_user_data=nodeclass.spec.user_data,
        instance_store_policy=nodeclass.spec.instance_store_policy,
    )
    text = userdata.render(family, options)
    groups = nodeclass.status.security_groups if nodeclass.status else None
    tags = launch_tags(cluster.name, pool.name if pool else "<nodepool>", nodeclass.name, nodeclass.spec.tags)
    config = LaunchConfig(
        cluster_name=cluster.name,
        nodeclass_name=nodeclass.name,
        image_id="<AMI resolved per instance type at launch>",
        user_data=text,
        instance_profile=nodeclass.spec.instance_profile
        or instance_profile_name(cluster.name, args.region, nodeclass.name),
        security_group_ids=tuple(g.id for g in groups) if groups else ("<security groups from status>",),
        block_device_mappings=tuple(
            nodeclass.spec.block_device_mappings or families.traits(family).default_block_devices
        ),
        metadata_options=nodeclass.spec.metadata_options,
        detailed_monitoring=bool(nodeclass.spec.detailed_monitoring),
        associate_public_ip_address=nodeclass.spec.associate_public_ip_address,
        tags=tuple(sorted(tags.items())),
        capacity_type=capacity_type,
    )
    data = launch_template_data(config)
    data.pop("UserData")
    return {"family": family, "userData": text, "launchTemplateName": config.name, "launchTemplateData": data}


def run(args: argparse.Namespace) -> int:
    from autoscaler.providers.aws.userdata import UserDataError

    try:
        result = render(args)
    except UserDataError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.output == "json":
        print(json.dumps(result, indent=2))
        return 0
    print(f"# {result['family']} user data (launch template {result['launchTemplateName']})")
    print(result["userData"])
    print("# launch template data (UserData above, base64-encoded in the template)")
    print(json.dumps(result["launchTemplateData"], indent=2))
    return 0
