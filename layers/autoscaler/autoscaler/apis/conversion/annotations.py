"""The compatibility annotations that carry v1beta1-only settings through a v1 object, and back.

Formats are Karpenter v1.0's, so objects converted by Karpenter and by us read the same:

- ``compatibility.karpenter.sh/v1beta1-kubelet-conversion``: the v1beta1 kubelet settings as compact JSON
  (fields in Karpenter's order, map keys sorted);
- ``compatibility.karpenter.sh/v1beta1-nodeclass-reference``: the v1beta1 ``nodeClassRef`` as JSON
  (``kind``, ``name``, ``apiVersion``; empty fields left out);
- ``compatibility.karpenter.k8s.aws/v1beta1-ubuntu``: comma-separated list of what the conversion of an
  Ubuntu class changed (``amiFamily``, ``blockDeviceMappings``, ``incompatible``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.kubelet import KubeletConfiguration
from autoscaler.apis.v1beta1.common import NodeClassReference

UBUNTU_AMI_FAMILY = "amiFamily"
UBUNTU_BLOCK_DEVICE_MAPPINGS = "blockDeviceMappings"
UBUNTU_INCOMPATIBLE = "incompatible"


class CompatibilityAnnotationError(ValueError):
    """A compatibility annotation does not hold what its key promises."""

    def __init__(self, key: str, problem: str) -> None:
        self.key, self.problem = key, problem
        super().__init__(f"annotation {key}: {problem}")

    @property
    def path(self) -> str:
        return f"metadata.annotations[{self.key}]"


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def encode_kubelet(kubelet: KubeletConfiguration) -> str:
    """The kubelet settings as Karpenter writes them into the annotation."""
    fields = {k: dict(sorted(v.items())) if isinstance(v, dict) else v for k, v in kubelet.to_dict().items()}
    return _compact(fields)


def decode_kubelet(text: str) -> KubeletConfiguration:
    """The kubelet settings an annotation carries; a typed error when it is not JSON of valid settings."""
    key = wk.ANNOTATION_KUBELET_COMPATIBILITY
    try:
        return KubeletConfiguration.model_validate(json.loads(text))
    except json.JSONDecodeError as error:
        raise CompatibilityAnnotationError(key, f"not JSON ({error.msg} at character {error.pos})") from None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the value"
        raise CompatibilityAnnotationError(key, f"invalid kubelet settings: {where}: {first['msg']}") from None


def encode_reference(reference: NodeClassReference) -> str:
    """The v1beta1 nodeClassRef as Karpenter records it (kind, name, apiVersion; empty ones left out)."""
    fields = {"kind": reference.kind, "name": reference.name, "apiVersion": reference.api_version}
    return _compact({k: v for k, v in fields.items() if v or k == "name"})


def decode_reference(text: str) -> NodeClassReference:
    key = wk.ANNOTATION_NODECLASS_REFERENCE
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise CompatibilityAnnotationError(key, f"not JSON ({error.msg} at character {error.pos})") from None
    if not isinstance(value, dict):
        raise CompatibilityAnnotationError(key, "not a JSON object")
    # Karpenter writes empty strings for fields it left out; read them as absent.
    known = {k: v for k, v in value.items() if k in ("kind", "name", "apiVersion") and v != ""}
    try:
        return NodeClassReference.model_validate({"name": "", **known})
    except ValidationError as error:
        raise CompatibilityAnnotationError(key, f"invalid reference: {error.errors()[0]['msg']}") from None


def ubuntu_changes(annotations: Mapping[str, str] | None) -> frozenset[str]:
    """What the conversion of a v1beta1 Ubuntu class changed; empty when it was not an Ubuntu class."""
    value = (annotations or {}).get(wk.ANNOTATION_UBUNTU_COMPATIBILITY)
    if value is None:
        return frozenset()
    # The annotation's presence alone says the family was changed, whatever else it lists.
    return frozenset({UBUNTU_AMI_FAMILY, *(part.strip() for part in value.split(",") if part.strip())})


def encode_ubuntu_changes(changes: Iterable[str]) -> str:
    order = (UBUNTU_AMI_FAMILY, UBUNTU_BLOCK_DEVICE_MAPPINGS, UBUNTU_INCOMPATIBLE)
    present = set(changes)
    return ",".join(c for c in order if c in present)


def with_annotations(
    metadata: Mapping[str, Any], set_: Mapping[str, str] | None = None, drop: Iterable[str] = ()
) -> dict[str, Any]:
    """A copy of ``metadata`` with annotations set and dropped; an emptied map is left out, as Go's
    ``omitempty`` leaves it out."""
    result, dropped = dict(metadata), set(drop)
    annotations = {k: v for k, v in (metadata.get("annotations") or {}).items() if k not in dropped}
    annotations.update(set_ or {})
    if annotations:
        result["annotations"] = annotations
    else:
        result.pop("annotations", None)
    return result
