"""Convert one NodePool, NodeClaim or EC2NodeClass between v1beta1 and v1, validating both ends.

The object is validated as its own version first (with that version's defaults, as the API server
stores it) and the result as the desired version, so a conversion never hands out an object our
functions or the API server would refuse; either failure names the object and the field. NodeOverlay
(karpenter.sh/v1alpha1) and CapacityBuffer (autoscaling.x-k8s.io/v1beta1) are served at one version each:
asked for that version they are validated and returned as they came, asked for another they fail.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from autoscaler.apis.conversion import ec2nodeclass, nodeclaim, nodepool
from autoscaler.apis.conversion.annotations import CompatibilityAnnotationError
from autoscaler.apis.rules import ApiModel
from autoscaler.apis.v1 import EC2NodeClass, NodeClaim, NodePool
from autoscaler.apis.v1beta1 import EC2NodeClass as EC2NodeClassV1beta1
from autoscaler.apis.v1beta1 import NodeClaim as NodeClaimV1beta1
from autoscaler.apis.v1beta1 import NodePool as NodePoolV1beta1
from autoscaler.apis.validation import KINDS, FieldError, InvalidObjectError, parse

V1BETA1_KINDS: dict[tuple[str, str], type[ApiModel]] = {
    ("karpenter.sh/v1beta1", "NodePool"): NodePoolV1beta1,
    ("karpenter.sh/v1beta1", "NodeClaim"): NodeClaimV1beta1,
    ("karpenter.k8s.aws/v1beta1", "EC2NodeClass"): EC2NodeClassV1beta1,
}
SERVED_KINDS: dict[tuple[str, str], type[ApiModel]] = {**KINDS, **V1BETA1_KINDS}
SERVED_VERSIONS = frozenset(version for version, _ in SERVED_KINDS)

Converter = Callable[[Any, Mapping[str, str] | None], dict[str, Any]]
_CONVERTERS: dict[type[ApiModel], Converter] = {
    NodePoolV1beta1: lambda obj, _: nodepool.to_v1(obj),
    NodeClaimV1beta1: nodeclaim.to_v1,
    EC2NodeClassV1beta1: lambda obj, _: ec2nodeclass.to_v1(obj),
    NodePool: lambda obj, _: nodepool.to_v1beta1(obj),
    NodeClaim: lambda obj, _: nodeclaim.to_v1beta1(obj),
    EC2NodeClass: lambda obj, _: ec2nodeclass.to_v1beta1(obj),
}


class ConversionError(ValueError):
    """The object cannot be converted: it is invalid, or the result would be. Names object and fields."""

    def __init__(self, kind: str, name: str, api_version: str, problem: str, errors: list[FieldError]) -> None:
        self.kind, self.name, self.api_version, self.errors = kind, name, api_version, errors
        details = "; ".join(str(e) for e in errors)
        subject = f'{kind or "object"} "{name}"' + (f" ({api_version})" if api_version else "")
        super().__init__(f"{subject} {problem}" + (f": {details}" if details else ""))


def _identity(document: Mapping[str, Any]) -> tuple[str, str, str]:
    metadata = document.get("metadata")
    name = metadata.get("name", "") if isinstance(metadata, Mapping) else ""
    return str(document.get("kind") or ""), str(name or ""), str(document.get("apiVersion") or "")


def convert(
    document: Mapping[str, Any],
    desired_api_version: str,
    nodepool_expire_after: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``document`` as ``desired_api_version`` ("karpenter.sh/v1", "karpenter.k8s.aws/v1beta1", ...).

    ``nodepool_expire_after`` maps NodePool names to their v1 ``template.spec.expireAfter`` where the
    caller knows them (the offline converter does; the webhook does not): a v1beta1 NodeClaim takes its
    NodePool's value from it. An object already at the desired version is validated and returned as
    it came. Raises ConversionError.
    """
    if not isinstance(document, Mapping):
        raise ConversionError("", "", "", "is not an object", [])
    kind, name, version = _identity(document)
    if desired_api_version not in SERVED_VERSIONS:
        served = ", ".join(sorted(SERVED_VERSIONS))
        problem = f"cannot be converted to {desired_api_version}: serving {served}"
        raise ConversionError(kind, name, version, problem, [])
    if version.split("/", 1)[0] != desired_api_version.split("/", 1)[0]:
        problem = f"cannot be converted to {desired_api_version}: another API group"
        raise ConversionError(kind, name, version, problem, [])
    versions = [v for v, k in SERVED_KINDS if k == kind]
    if versions and desired_api_version not in versions:  # an unknown kind: parsing below says so
        problem = f"cannot be converted to {desired_api_version}: {kind} is served as {', '.join(versions)}"
        raise ConversionError(kind, name, version, problem, [])
    try:
        source = parse(document, SERVED_KINDS)
    except InvalidObjectError as error:
        raise ConversionError(kind, name, version, "is invalid", error.errors) from None
    if version == desired_api_version:
        return dict(document)
    try:
        converted = _CONVERTERS[type(source)](source, nodepool_expire_after)
    except CompatibilityAnnotationError as error:
        raise ConversionError(
            kind, name, version, "is invalid", [FieldError(error.path, "compatibility annotation", error.problem)]
        ) from None
    try:
        return parse(converted, SERVED_KINDS).to_dict()
    except InvalidObjectError as error:
        problem = f"cannot be represented in {desired_api_version}"
        raise ConversionError(kind, name, version, problem, error.errors) from None
