"""AL2023 user data: MIME with the user's parts, then a ``node.eks.aws/v1alpha1`` NodeConfig. Pure.

nodeadm merges every NodeConfig it finds, later ones winning, so ours comes last. User data that is
not MIME is wrapped: a YAML mapping as a NodeConfig part, anything else as a shell script.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import yaml

from autoscaler.providers.aws.userdata import mime
from autoscaler.providers.aws.userdata.options import BootstrapOptions, UserDataError, is_mime, node_labels_flag


def node_config(options: BootstrapOptions) -> dict[str, Any]:
    cluster = options.cluster
    if not cluster.service_cidr:
        raise UserDataError(
            "AL2023 needs the cluster's service CIDR for its NodeConfig, and it is not known yet",
            missing="service_cidr",
        )
    cluster_spec: dict[str, Any] = {
        "apiServerEndpoint": cluster.endpoint,
        "cidr": cluster.service_cidr,
        "name": cluster.name,
    }
    if cluster.ca_bundle:
        try:
            base64.b64decode(cluster.ca_bundle, validate=True)
        except binascii.Error as error:
            raise UserDataError(f"the cluster CA bundle is not valid base64: {error}") from error
        cluster_spec["certificateAuthority"] = cluster.ca_bundle
    kubelet_config = options.kubelet.to_dict()
    kubelet_config["registerWithTaints"] = [t.to_dict() for t in options.taints]
    kubelet: dict[str, Any] = {"config": kubelet_config}
    labels_flag = node_labels_flag(options.labels)
    if labels_flag:
        kubelet["flags"] = [labels_flag]
    spec: dict[str, Any] = {"cluster": cluster_spec, "kubelet": kubelet}
    if options.raid0:
        spec["instance"] = {"localStorage": {"strategy": "RAID0"}}
    return {"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig", "spec": spec}


def _user_parts(custom: str | None) -> list[mime.Part]:
    if not custom:
        return []
    if is_mime(custom):
        return mime.parse(custom)
    try:
        is_config = isinstance(yaml.safe_load(custom), dict)
    except yaml.YAMLError:
        is_config = False
    return [mime.Part.of(mime.NODE_CONFIG if is_config else mime.SHELL_SCRIPT, custom)]


def render(options: BootstrapOptions) -> str:
    generated = "# Karpenter Generated NodeConfig\n" + yaml.safe_dump(node_config(options), sort_keys=True)
    return mime.serialize([*_user_parts(options.custom_user_data), mime.Part.of(mime.NODE_CONFIG, generated)])
