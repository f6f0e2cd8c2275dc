"""The emulator's selector and patch semantics, without a server."""

from __future__ import annotations

import pytest

from autoscaler_dev.kube_emulator.patch import PatchError, apply_patch, json_patch, merge_patch, strategic_merge_patch
from autoscaler_dev.kube_emulator.selectors import (
    SelectorError,
    field_selector,
    label_selector,
    selector_from_label_selector,
)


def labelled(**labels: str) -> dict[str, object]:
    return {"metadata": {"labels": labels}}


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("app=web", {"app": "web"}, True),
        ("app==web", {"app": "db"}, False),
        ("app!=web", {}, True),
        ("app in (web, db)", {"app": "db"}, True),
        ("app notin (web,db)", {"app": "db"}, False),
        ("app notin (web)", {}, True),
        ("tier", {"tier": ""}, True),
        ("!tier", {"tier": "1"}, False),
        ("app=web,tier in (1,2)", {"app": "web", "tier": "2"}, True),
        ("gen>4", {"gen": "5"}, True),
        ("gen<4", {"gen": "x"}, False),
    ],
)
def test_label_selectors(selector: str, labels: dict[str, str], expected: bool) -> None:
    predicate = label_selector(selector)
    assert predicate is not None and predicate(labelled(**labels)) is expected


def test_bad_selectors_are_bad_requests() -> None:
    with pytest.raises(SelectorError):
        label_selector("app in web")
    with pytest.raises(SelectorError, match="field label not supported"):
        field_selector("spec.foo=1", frozenset({"metadata.name"}), "pods")


def test_field_selectors_render_fields_as_the_server_does() -> None:
    fields = frozenset({"spec.nodeName", "spec.unschedulable"})
    unbound = field_selector("spec.nodeName=", fields, "pods")
    assert unbound is not None and unbound({"spec": {}}) and not unbound({"spec": {"nodeName": "n"}})
    schedulable = field_selector("spec.unschedulable=false", fields, "nodes")
    assert schedulable is not None and schedulable({"spec": {}}) and not schedulable({"spec": {"unschedulable": True}})


def test_label_selector_objects() -> None:
    selector = selector_from_label_selector(
        {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}
    )
    assert selector(labelled(app="web")) and not selector(labelled(app="web", tier="1"))
    assert selector_from_label_selector({})(labelled(anything="x"))
    assert not selector_from_label_selector(None)(labelled(app="web"))


def test_merge_patch_removes_nulls_and_replaces_lists() -> None:
    target = {"a": {"b": 1, "c": 2}, "l": [1, 2]}
    assert merge_patch(target, {"a": {"b": None, "d": 3}, "l": [3]}) == {"a": {"c": 2, "d": 3}, "l": [3]}
    assert target == {"a": {"b": 1, "c": 2}, "l": [1, 2]}  # never mutated


def test_json_patch_operations() -> None:
    document = {"metadata": {"finalizers": ["a", "b"], "labels": {"x/y": "1"}}}
    patched = json_patch(
        document,
        [
            {"op": "test", "path": "/metadata/finalizers/0", "value": "a"},
            {"op": "remove", "path": "/metadata/finalizers/0"},
            {"op": "add", "path": "/metadata/finalizers/-", "value": "c"},
            {"op": "replace", "path": "/metadata/labels/x~1y", "value": "2"},
            {"op": "copy", "from": "/metadata/labels", "path": "/metadata/annotations"},
        ],
    )
    assert patched["metadata"] == {"finalizers": ["b", "c"], "labels": {"x/y": "2"}, "annotations": {"x/y": "2"}}
    with pytest.raises(PatchError):
        json_patch(document, [{"op": "test", "path": "/metadata/finalizers/0", "value": "z"}])


def test_strategic_merge_merges_keyed_lists_and_honours_directives() -> None:
    pod = {
        "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]},
        "metadata": {"finalizers": ["a"]},
    }
    patched = strategic_merge_patch(
        pod,
        {
            "status": {
                "conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "$patch": "delete"}]
            },
            "metadata": {"finalizers": ["b"], "$deleteFromPrimitiveList/finalizers": ["a"]},
        },
    )
    assert patched["status"]["conditions"] == [{"type": "Ready", "status": "False"}]
    assert patched["metadata"]["finalizers"] == ["b"]


def test_custom_resources_refuse_strategic_merge() -> None:
    with pytest.raises(PatchError) as error:
        apply_patch({}, {}, "application/strategic-merge-patch+json", custom_resource=True)
    assert error.value.status == 415
