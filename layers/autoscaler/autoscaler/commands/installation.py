"""The cluster side of one installation, rendered from the tracked manifests and the stack's outputs: the CRDs
(generated from the models), the functions' RBAC and the forwarder. Nothing here edits a tracked file.

The forwarder's files are read in the order its ``kustomization.yaml`` lists them; what differs per installation
(image, bus, cluster, region, namespace, service account, the identity it runs as) is set on the parsed objects.
"""

from __future__ import annotations

import base64
import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

import autoscaler
from autoscaler.commands.stack_outputs import StackOutputs
from autoscaler.crds.conversion import with_conversion
from autoscaler.crds.generate import CRD_KINDS, crd_manifest

# The repository's infra/manifests (the package is installed editable from layers/autoscaler/autoscaler).
TRACKED_MANIFESTS = Path(autoscaler.__file__).resolve().parents[3] / "infra" / "manifests"
IDENTITIES = ("pod-identity", "irsa")
IRSA_ANNOTATION = "eks.amazonaws.com/role-arn"
FORWARDER_CONTAINER = "forwarder"
DEFAULT_SERVICE_ACCOUNT = "serverless-karpenter-forwarder"


class RenderError(ValueError):
    """A tracked manifest is missing or not what the renderer expects."""


@dataclass(frozen=True)
class Installation:
    """What one installation's manifests need, read from the stack's outputs."""

    image: str
    bus: str
    cluster: str
    region: str
    namespace: str
    service_account: str
    role_arn: str
    conversion_url: str

    @classmethod
    def from_outputs(cls, outputs: StackOutputs, *, image: str | None = None) -> Installation:
        return cls(
            image=image or outputs["ForwarderImageUri"],
            bus=outputs["EventBusName"],
            cluster=outputs["ClusterName"],
            region=outputs["Region"],
            namespace=outputs.get("ForwarderNamespace", "kube-system"),
            service_account=outputs.get("ForwarderServiceAccount", DEFAULT_SERVICE_ACCOUNT),
            role_arn=outputs["ForwarderRoleArn"],
            conversion_url=outputs.get("ConversionWebhookUrl"),
        )


def crds(*, serve_v1beta1: bool = False, conversion_url: str = "", ca_bundle: bytes | None = None) -> list[Any]:
    """The CRDs, v1 only; ``serve_v1beta1`` adds v1beta1, converted by the webhook at ``conversion_url``."""
    manifests = []
    for crd in CRD_KINDS:
        manifest = crd_manifest(crd)
        if serve_v1beta1 and crd.converted:
            manifest = with_conversion(manifest, crd, conversion_url)
            if ca_bundle:
                client = manifest["spec"]["conversion"]["webhook"]["clientConfig"]
                client["caBundle"] = base64.b64encode(ca_bundle).decode()
        manifests.append(manifest)
    return manifests


def functions_rbac(tracked: Path = TRACKED_MANIFESTS) -> list[Any]:
    """``rbac.yaml`` as tracked: the group it binds is the one the stack's access entries map the functions to."""
    return load_manifests(tracked / "rbac.yaml")


def forwarder(
    installation: Installation, *, identity: str = "pod-identity", tracked: Path = TRACKED_MANIFESTS
) -> list[Any]:
    """The forwarder's objects for this installation; ``irsa`` annotates its service account with the role."""
    if identity not in IDENTITIES:
        raise RenderError(f"identity must be one of {', '.join(IDENTITIES)}, got {identity!r}")
    folder = tracked / "forwarder"
    kustomization = load_manifests(folder / "kustomization.yaml")[0]
    objects = [
        copy.deepcopy(obj) for name in kustomization.get("resources", []) for obj in load_manifests(folder / name)
    ]
    if installation.namespace != "kube-system":
        objects.insert(0, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": installation.namespace}})
    for obj in objects:
        _place(obj, installation)
        if obj["kind"] == "ServiceAccount" and identity == "irsa":
            obj["metadata"].setdefault("annotations", {})[IRSA_ANNOTATION] = installation.role_arn
        if obj["kind"] == "Deployment":
            _configure(obj, installation)
    return objects


def _place(obj: dict[str, Any], installation: Installation) -> None:
    """Namespace and service account name as the stack's Pod Identity association (or IRSA trust) names them."""
    metadata = obj["metadata"]
    if obj["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
        metadata["namespace"] = installation.namespace
    if obj["kind"] == "ServiceAccount":
        metadata["name"] = installation.service_account
    for subject in obj.get("subjects", []):
        if subject.get("kind") == "ServiceAccount":
            subject.update(name=installation.service_account, namespace=installation.namespace)


def _configure(deployment: dict[str, Any], installation: Installation) -> None:
    pod = deployment["spec"]["template"]["spec"]
    pod["serviceAccountName"] = installation.service_account
    containers = [c for c in pod["containers"] if c["name"] == FORWARDER_CONTAINER]
    if not containers:
        raise RenderError(f"the forwarder's Deployment has no container named {FORWARDER_CONTAINER!r}")
    container = containers[0]
    container["image"] = installation.image
    values = {
        "EVENT_BUS_NAME": installation.bus,
        "CLUSTER_NAME": installation.cluster,
        "AWS_REGION": installation.region,
    }
    env = [e for e in container.get("env", []) if e["name"] not in values]
    container["env"] = [{"name": name, "value": value} for name, value in values.items()] + env


def load_manifests(path: Path) -> list[Any]:
    if not path.is_file():
        raise RenderError(f'the path "{path}" does not exist (--manifests names the tracked infra/manifests folder)')
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
