"""What converted objects mean for the controllers (effective kubelet and expireAfter), and how conversion
fails: always a ConversionError that names the object, its version and the field."""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler.apis.conversion import (
    CompatibilityAnnotationError,
    ConversionError,
    convert,
    effective_expire_after,
    effective_kubelet,
)
from autoscaler.apis.v1 import EC2NodeClass, KubeletConfiguration, NodeClaim, NodePool
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.validation import parse
from tests.unit.apis.conversion_cases import (
    AWS_V1,
    KUBELET,
    NODECLAIM_V1BETA1,
    NODECLASS_V1BETA1,
    NODEPOOL_V1BETA1,
    V1,
    V1BETA1,
    changed,
    to_v1,
    to_v1beta1,
)


def parsed(document: dict[str, Any]) -> Any:
    return parse(document)


def nodeclass_with_kubelet(kubelet: dict[str, Any] | None) -> EC2NodeClass:
    v1 = to_v1(NODECLASS_V1BETA1)
    if kubelet is not None:
        v1["spec"]["kubelet"] = kubelet
    nodeclass = parsed(v1)
    assert isinstance(nodeclass, EC2NodeClass)
    return nodeclass


def test_the_annotation_takes_precedence_over_the_class_whole() -> None:
    nodepool = parsed(to_v1(NODEPOOL_V1BETA1))
    nodeclass = nodeclass_with_kubelet({"maxPods": 30, "podsPerCore": 4})
    assert effective_kubelet(nodepool, nodeclass) == KubeletConfiguration.model_validate(KUBELET)
    # Not merged: podsPerCore from the class does not leak into the NodePool's settings.
    assert effective_kubelet(nodepool, nodeclass).pods_per_core is None  # type: ignore[union-attr]
    nodeclaim = parsed(to_v1(NODECLAIM_V1BETA1))
    assert effective_kubelet(nodeclaim, nodeclass) == KubeletConfiguration(max_pods=20)


def test_without_the_annotation_the_class_settings_apply() -> None:
    v1 = to_v1(changed(NODEPOOL_V1BETA1, spec__template__spec__kubelet=None))
    nodepool = parsed(v1)
    assert effective_kubelet(nodepool, nodeclass_with_kubelet({"maxPods": 30})) == KubeletConfiguration(max_pods=30)
    assert effective_kubelet(nodepool, nodeclass_with_kubelet(None)) is None
    assert effective_kubelet(None, nodeclass_with_kubelet({"maxPods": 30})) == KubeletConfiguration(max_pods=30)


@pytest.mark.parametrize(
    ("annotation", "problem"),
    [("{not json", "not JSON"), ('{"maxPods": -1}', "invalid kubelet settings: maxPods"), ("[1]", "invalid kubelet")],
)
def test_a_broken_kubelet_annotation_is_a_typed_error(annotation: str, problem: str) -> None:
    v1 = to_v1(NODEPOOL_V1BETA1)
    v1["metadata"]["annotations"][wk.ANNOTATION_KUBELET_COMPATIBILITY] = annotation
    with pytest.raises(CompatibilityAnnotationError, match=problem) as error:
        effective_kubelet(parsed(v1), nodeclass_with_kubelet(None))
    assert error.value.path == f"metadata.annotations[{wk.ANNOTATION_KUBELET_COMPATIBILITY}]"
    with pytest.raises(ConversionError, match=rf'NodePool "default" \({V1}\) is invalid: metadata.annotations\['):
        to_v1beta1(v1)


def test_expire_after_of_a_nodeclaim_converted_without_its_nodepool() -> None:
    nodepool = parsed(to_v1(changed(NODEPOOL_V1BETA1, spec__disruption__expireAfter="Never")))
    assert isinstance(nodepool, NodePool)
    marked = parsed(to_v1(NODECLAIM_V1BETA1))
    assert isinstance(marked, NodeClaim)
    assert effective_expire_after(marked, nodepool) == "Never"
    assert effective_expire_after(marked, None) == "Never"  # its NodePool is gone: Karpenter v1.0's fallback
    resolved = parsed(to_v1(NODECLAIM_V1BETA1, nodepool_expire_after={"default": "48h"}))
    assert effective_expire_after(resolved, nodepool) == "48h"


@pytest.mark.parametrize(
    ("document", "desired", "message"),
    [
        (
            changed(NODEPOOL_V1BETA1, spec__disruption={"consolidationPolicy": "WhenEmpty"}),
            V1,
            f'NodePool "default" ({V1BETA1}) is invalid: spec.disruption: Invalid value: "object": consolidateAfter '
            "must be specified with consolidationPolicy=WhenEmpty",
        ),
        (
            changed(NODECLASS_V1BETA1, spec__tags={"eks:eks-cluster-name": "demo"}),
            AWS_V1,
            f'EC2NodeClass "default" (karpenter.k8s.aws/v1beta1) cannot be represented in {AWS_V1}: spec.tags: '
            'Invalid value: "object": tag contains a restricted tag matching eks:eks-cluster-name',
        ),
        (
            changed(
                NODEPOOL_V1BETA1,
                apiVersion=V1,
                spec__template__spec__kubelet=None,
                spec__disruption=None,
                spec__template__spec__nodeClassRef={"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "a"},
                spec__template__spec__requirements=[{"key": "a", "operator": "Gte", "values": ["1"]}],
            ),
            V1BETA1,
            f"cannot be represented in {V1BETA1}: spec.template.spec.requirements[0].operator: Unsupported value",
        ),
        (NODEPOOL_V1BETA1, "karpenter.k8s.aws/v1", "cannot be converted to karpenter.k8s.aws/v1: another API group"),
        (NODEPOOL_V1BETA1, "karpenter.sh/v2", "cannot be converted to karpenter.sh/v2: serving"),
        (
            changed(NODEPOOL_V1BETA1, kind="Provisioner"),
            V1,
            'Provisioner "default" (karpenter.sh/v1beta1) is invalid: no kind',
        ),
        ({"kind": "NodePool"}, V1, 'NodePool "" cannot be converted to karpenter.sh/v1: another API group'),
    ],
    ids=[
        "invalid input",
        "invalid result",
        "v1-only operator",
        "other group",
        "unknown version",
        "unknown kind",
        "no apiVersion",
    ],
)
def test_conversion_failures_name_object_version_and_field(document: Any, desired: str, message: str) -> None:
    with pytest.raises(ConversionError) as error:
        convert(document, desired)
    assert message in str(error.value)


def test_an_object_already_at_the_desired_version_comes_back_as_it_was() -> None:
    v1 = to_v1(NODECLASS_V1BETA1)
    v1["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    assert convert(v1, AWS_V1) == v1
    with pytest.raises(ConversionError, match="is not an object"):
        convert([], AWS_V1)  # type: ignore[arg-type]
