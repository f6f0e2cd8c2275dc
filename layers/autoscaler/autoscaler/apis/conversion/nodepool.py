"""NodePool karpenter.sh/v1beta1 <-> karpenter.sh/v1.

To v1: ``disruption.expireAfter`` moves to ``template.spec.expireAfter``; ``WhenUnderutilized`` becomes
``WhenEmptyOrUnderutilized`` with ``consolidateAfter: 0s``; the template's kubelet and original node class
reference go to compatibility annotations. Back to v1beta1, what v1beta1 cannot say (budget reasons,
``terminationGracePeriod``, a consolidateAfter other than ``Never`` with ``WhenEmptyOrUnderutilized``, the
``replicas`` of a static NodePool) is dropped, ``Balanced`` reads as ``WhenUnderutilized``, and the rest is
restored.
"""

from __future__ import annotations

from typing import Any

from autoscaler.apis.conversion.annotations import with_annotations
from autoscaler.apis.conversion.claims import V1_ONLY_ANNOTATIONS, spec_to_v1, spec_to_v1beta1
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.apis.v1beta1 import nodepool as v1beta1
from autoscaler.apis.v1beta1.common import GROUP_VERSION

NEVER = "Never"


def _template(template_body: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    return {**({"metadata": template_body["metadata"]} if "metadata" in template_body else {}), "spec": spec}


def _disruption_to_v1(disruption: v1beta1.Disruption) -> dict[str, Any]:
    policy: str = disruption.consolidation_policy
    after = disruption.consolidate_after
    if policy == "WhenUnderutilized":
        # Karpenter v1.0 always writes 0s here; v0.37 read consolidateAfter: Never with WhenUnderutilized as
        # "consolidation off", and so does v1, so we keep Never rather than turn consolidation on.
        policy, after = "WhenEmptyOrUnderutilized", NEVER if after == NEVER else "0s"
    budgets = [b.to_dict() for b in disruption.budgets]
    return {"consolidationPolicy": policy, "consolidateAfter": after, "budgets": budgets}


def to_v1(source: v1beta1.NodePool) -> dict[str, Any]:
    body = source.to_dict()
    spec, template = source.spec, source.spec.template
    template_body = body["spec"]["template"]
    fields, annotations = spec_to_v1(template_body["spec"], template.spec.node_class_ref, template.spec.kubelet)
    fields["expireAfter"] = spec.disruption.expire_after
    drop = () if template.spec.kubelet is not None else (wk.ANNOTATION_KUBELET_COMPATIBILITY,)
    v1_spec: dict[str, Any] = {
        "template": _template(template_body, fields),
        "disruption": _disruption_to_v1(spec.disruption),
        **{k: body["spec"][k] for k in ("limits", "weight") if k in body["spec"]},
    }
    return {
        "apiVersion": wk.API_VERSION,
        "kind": "NodePool",
        "metadata": with_annotations(body["metadata"], annotations, drop),
        "spec": v1_spec,
        **({"status": body["status"]} if "status" in body else {}),
    }


def _disruption_to_v1beta1(nodepool: NodePool) -> dict[str, Any]:
    disruption = nodepool.spec.disruption
    result: dict[str, Any] = {
        "consolidationPolicy": disruption.consolidation_policy,
        "expireAfter": nodepool.spec.template.spec.expire_after,
        "budgets": [b.to_dict() for b in disruption.budgets],
    }
    for budget in result["budgets"]:
        budget.pop("reasons", None)
    if disruption.consolidation_policy in ("WhenEmptyOrUnderutilized", "Balanced"):
        # v1beta1 knows no Balanced; WhenUnderutilized consolidates the same nodes, without Balanced's scoring
        result["consolidationPolicy"] = "WhenUnderutilized"
        if disruption.consolidate_after == NEVER:  # the one value v1beta1 allows with WhenUnderutilized
            result["consolidateAfter"] = NEVER
    else:
        result["consolidateAfter"] = disruption.consolidate_after
    return result


def to_v1beta1(source: NodePool) -> dict[str, Any]:
    body = source.to_dict()
    template_body, annotations = body["spec"]["template"], source.metadata.annotations
    fields = spec_to_v1beta1(template_body["spec"], source.spec.template.spec.node_class_ref, annotations)
    v1beta1_spec: dict[str, Any] = {
        "template": _template(template_body, fields),
        "disruption": _disruption_to_v1beta1(source),
        **{k: body["spec"][k] for k in ("limits", "weight") if k in body["spec"]},
    }
    return {
        "apiVersion": GROUP_VERSION,
        "kind": "NodePool",
        "metadata": with_annotations(body["metadata"], drop=V1_ONLY_ANNOTATIONS),
        "spec": v1beta1_spec,
        **({"status": body["status"]} if "status" in body else {}),
    }
