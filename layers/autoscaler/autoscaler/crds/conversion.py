"""CRDs that also serve v1beta1, converted by our webhook: ``autoscaler crds --conversion-webhook URL``.

v1 stays the storage version; v1beta1 is served with Karpenter v0.37's schema (from our v1beta1 models)
and printer columns, and the API server sends every conversion to the webhook URL. The URL is a Lambda
function URL, whose certificate public roots sign, so no caBundle is needed.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from autoscaler.apis.conversion import V1BETA1_KINDS
from autoscaler.crds.generate import CRDKind, structural_schema


def _label_column(name: str, escaped_label: str) -> dict[str, Any]:
    return {"name": name, "type": "string", "jsonPath": f".metadata.labels.{escaped_label}"}


_TYPE = _label_column("Type", "node\\.kubernetes\\.io/instance-type")
_ZONE = _label_column("Zone", "topology\\.kubernetes\\.io/zone")
_READY = {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'}
_AGE = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
_NODECLASS = {"name": "NodeClass", "type": "string", "jsonPath": ".spec.template.spec.nodeClassRef.name"}
# Karpenter v0.37's columns for its v1beta1 versions.
V1BETA1_COLUMNS: dict[str, list[dict[str, Any]]] = {
    "NodePool": [_NODECLASS, {"name": "Weight", "type": "string", "jsonPath": ".spec.weight", "priority": 1}],
    "NodeClaim": [
        _TYPE,
        _ZONE,
        {"name": "Node", "type": "string", "jsonPath": ".status.nodeName"},
        _READY,
        _AGE,
        {**_label_column("Capacity", "karpenter\\.sh/capacity-type"), "priority": 1},
        {**_label_column("NodePool", "karpenter\\.sh/nodepool"), "priority": 1},
        {"name": "NodeClass", "type": "string", "jsonPath": ".spec.nodeClassRef.name", "priority": 1},
    ],
    "EC2NodeClass": [],
}


def check_webhook_url(url: str) -> str:
    """The URL, if the API server accepts it for a webhook (https, a host, no query or fragment)."""
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise ValueError(f"conversion webhook URL must be https://host[/path], got {url!r}")
    if parts.query or parts.fragment or "?" in url or "#" in url:
        raise ValueError(f"conversion webhook URL may not have a query or fragment, got {url!r}")
    return url


def with_conversion(manifest: dict[str, Any], crd: CRDKind, url: str) -> dict[str, Any]:
    """``manifest`` (a v1-only CRD) also serving v1beta1, with webhook conversion through ``url``."""
    model = V1BETA1_KINDS[(f"{crd.group}/v1beta1", crd.kind)]
    v1beta1: dict[str, Any] = {
        "name": "v1beta1",
        "served": True,
        "storage": False,
        "schema": {"openAPIV3Schema": structural_schema(model)},
        "subresources": {"status": {}},
    }
    if V1BETA1_COLUMNS[crd.kind]:
        v1beta1["additionalPrinterColumns"] = V1BETA1_COLUMNS[crd.kind]
    spec = manifest["spec"]
    conversion = {
        "strategy": "Webhook",
        "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"url": check_webhook_url(url)}},
    }
    return {**manifest, "spec": {**spec, "versions": [*spec["versions"], v1beta1], "conversion": conversion}}
