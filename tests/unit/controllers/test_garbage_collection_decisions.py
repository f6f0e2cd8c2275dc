"""Garbage collection's decisions (pure): what counts as leaked, gone, stale or orphaned, and what is kept."""

from __future__ import annotations

from typing import Any

from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.controllers.garbage_collection import ClusterView
from autoscaler.controllers.garbage_collection.decisions import (
    leaked_instances,
    nodeclaims_missing_instances,
    orphaned_instance_profiles,
    ready_node_keeps,
    stale_launch_templates,
)
from tests.unit.controllers.garbage_collection_builders import (
    NOW,
    instance,
    invalid,
    node,
    nodeclaim,
    nodeclass,
    pid,
    profile,
    template,
)


def view(*objects: Any) -> ClusterView:
    """A cluster reading of models and raw JSON objects (Nodes, or Karpenter objects our models reject)."""
    raw = [o if isinstance(o, dict) else o.to_dict() for o in objects]
    return ClusterView.read(
        [o for o in raw if o["kind"] == "NodeClaim"],
        [o for o in raw if o["kind"] == "EC2NodeClass"],
        [o for o in raw if o["kind"] == "Node"],
    )


def names(decisions: list[Any]) -> list[str]:
    """Instances by provider ID, anything else by name."""
    return [d.item.status.provider_id if isinstance(d.item, NodeClaim) else d.item.name for d in decisions]


def test_an_instance_is_leaked_only_when_nothing_refers_to_it_and_it_is_older_than_30_seconds() -> None:
    cluster = view(
        nodeclaim("by-id", "i-referenced"),
        nodeclaim("deleting", "i-of-deleting", deleting=True),
        nodeclaim("recording", None),  # its launch is being recorded: the instance is tagged with its name
        invalid("NodeClaim", "unreadable", status={"providerID": pid("i-of-unreadable")}),
    )
    instances = [
        instance("i-referenced"),
        instance("i-of-deleting"),
        instance("i-of-unreadable"),
        instance("i-tagged", nodeclaim="recording"),
        instance("i-shutting-down", shutting_down=True),
        instance("i-young", age=30),
        instance("i-tag-names-nothing", nodeclaim="never-recorded"),
        instance("i-second-launch", nodeclaim="by-id"),  # tagged for a NodeClaim that records another instance
        instance("i-old", age=31),
    ]
    leaked = leaked_instances(instances, cluster, NOW)
    assert names(leaked) == [pid("i-tag-names-nothing"), pid("i-second-launch"), pid("i-old")]
    assert leaked[2].reason == "launched 31s ago and no NodeClaim refers to it"


def test_an_instance_whose_launch_time_is_unknown_is_kept() -> None:
    unknown = instance("i-unknown").model_copy(deep=True)
    unknown.metadata.creation_timestamp = None
    assert leaked_instances([unknown], view(), NOW) == []


def test_nodeclaims_missing_from_the_live_instances_are_candidates_after_the_grace_period() -> None:
    cluster = view(
        nodeclaim("live", "i-live"),
        nodeclaim("gone", "i-gone"),
        nodeclaim("not-launched"),
        nodeclaim("deleting", "i-gone-2", deleting=True),
        nodeclaim("just-launched", "i-new", age=3600, launched=10),  # the Launched transition counts, not creation
        nodeclaim("launched-a-while-ago", "i-gone-3", age=3600, launched=45),
        nodeclaim("created-recently", "i-gone-4", age=20),
    )
    candidates = nodeclaims_missing_instances(cluster, frozenset({pid("i-live")}), NOW)
    assert [c.name for c in candidates] == ["gone", "launched-a-while-ago"]


def test_a_ready_node_keeps_its_nodeclaim_whatever_the_cloud_says() -> None:
    ready, not_ready = nodeclaim("ready", "i-1", registered=True), nodeclaim("not-ready", "i-2", registered=True)
    by_name = nodeclaim("by-name", "i-3", registered=True, node="node-3")
    cluster = view(
        ready,
        not_ready,
        by_name,
        node("node-1", "i-1", ready=True),
        node("node-2", "i-2", ready=False),
        {**node("node-3", "i-other", ready=True), "spec": {}},  # found through status.nodeName
    )
    assert ready_node_keeps(ready, cluster) is not None
    assert ready_node_keeps(not_ready, cluster) is None
    assert ready_node_keeps(by_name, cluster) is not None
    assert ready_node_keeps(nodeclaim("unregistered", "i-4"), cluster) is None


def test_launch_templates_no_class_ami_combination_uses_are_stale() -> None:
    cluster = view(
        nodeclass("default", amis=("ami-current", "ami-arm")),
        nodeclass("leaving", deleting=True),
        invalid("EC2NodeClass", "unreadable"),
    )
    templates = [
        template("current"),
        template("arm", image="ami-arm"),
        template("old-ami", image="ami-old"),
        template("unknown-ami", image=None),
        template("young", image="ami-old", age=20),
        template("of-gone-class", nodeclass="gone", image=None),
        template("of-leaving-class", nodeclass="leaving"),
        template("of-unreadable-class", nodeclass="unreadable", image="ami-old"),
    ]
    stale = stale_launch_templates(templates, cluster, NOW)
    assert {d.item.name: d.reason for d in stale} == {
        "old-ami": "AMI ami-old is no longer among EC2NodeClass default's AMIs",
        "of-gone-class": "its EC2NodeClass gone is gone",
        "of-leaving-class": "its EC2NodeClass leaving is being deleted",
    }


def test_a_class_without_resolved_amis_leaves_all_its_templates_stale() -> None:
    assert names(stale_launch_templates([template("t")], view(nodeclass(amis=()).model_copy()), NOW)) == ["t"]


def test_profiles_of_gone_classes_are_orphaned_unless_something_may_still_use_them() -> None:
    cluster = view(
        nodeclass("default", profile="named-by-status"),
        invalid("EC2NodeClass", "unreadable"),
        nodeclaim("still-terminating", "i-1", nodeclass="gone-with-nodeclaim", deleting=True),
    )
    profiles = [
        profile("of-default", "default"),
        profile("of-unreadable", "unreadable"),
        profile("named-by-status", "renamed"),
        profile("of-class-with-nodeclaim", "gone-with-nodeclaim"),
        profile("of-class-with-instance", "gone-with-instance"),
        profile("young", "gone", age=20),
        profile("orphan", "gone"),
    ]
    orphaned = orphaned_instance_profiles(profiles, cluster, frozenset({"gone-with-instance"}), NOW)
    assert [(d.item.name, d.reason) for d in orphaned] == [("orphan", "its EC2NodeClass gone is gone")]


def test_the_cluster_reading_counts_objects_our_models_reject() -> None:
    cluster = view(
        nodeclaim("readable", "i-1"),
        invalid("NodeClaim", "unreadable", spec={"nodeClassRef": {"name": "odd"}}, status={"providerID": "p-2"}),
        invalid("EC2NodeClass", "unreadable-class"),
    )
    assert [c.name for c in cluster.nodeclaims] == ["readable"]
    assert cluster.nodeclaim_names == {"readable", "unreadable"}
    assert cluster.provider_ids == {pid("i-1"), "p-2"}
    assert cluster.nodeclaim_classes == {"default", "odd"}
    assert cluster.nodeclass_names == {"unreadable-class"} and not cluster.nodeclasses
