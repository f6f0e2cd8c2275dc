"""Deprecated AMIs: chosen only when nothing newer and not deprecated matches, reported, warned about."""

from __future__ import annotations

from datetime import UTC, datetime

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import AMIRequirement, AMIStatus
from autoscaler.controllers.nodeclass import AMI_DEPRECATED, NodeClassController, metric_points
from autoscaler.metrics import NODECLASS_DEPRECATED_AMIS
from autoscaler.providers.aws.amis import newest_per_requirements
from tests.support.memory_cluster import MemoryCluster
from tests.unit.controllers.test_nodeclass import Clock, ScriptedCloud, nodeclass

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def image(image_id: str, created: str, deprecated_at: str | None = None) -> dict[str, str]:
    found = {"ImageId": image_id, "Name": image_id, "Architecture": "x86_64", "CreationDate": created}
    if deprecated_at:
        found["DeprecationTime"] = deprecated_at
    return found


def test_a_newer_deprecated_image_loses_to_an_older_one_that_is_not() -> None:
    images = [
        image("ami-old", "2026-01-01T00:00:00Z"),
        image("ami-new", "2026-04-01T00:00:00Z", "2026-04-30T00:00:00Z"),
    ]
    (chosen,) = newest_per_requirements(images, {}, NOW)
    assert (chosen.id, chosen.deprecated) == ("ami-old", None)


def test_a_deprecation_still_ahead_does_not_count_and_the_newest_wins() -> None:
    images = [
        image("ami-old", "2026-01-01T00:00:00Z"),
        image("ami-new", "2026-04-01T00:00:00Z", "2027-01-01T00:00:00Z"),
    ]
    (chosen,) = newest_per_requirements(images, {}, NOW)
    assert (chosen.id, chosen.deprecated) == ("ami-new", None)


def test_when_every_match_is_deprecated_the_newest_is_chosen_and_marked() -> None:
    images = [
        image("ami-old", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"),
        image("ami-new", "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"),
    ]
    (chosen,) = newest_per_requirements(images, {}, NOW)
    assert (chosen.id, chosen.deprecated) == ("ami-new", True)
    assert chosen.to_dict()["deprecated"] is True


def test_a_class_resolving_to_a_deprecated_ami_gets_a_warning_event_and_the_metric_counts_it() -> None:
    arch = [AMIRequirement(key=wk.LABEL_ARCH, operator="In", values=["amd64"])]
    amis = [AMIStatus(id="ami-dep", name="al2023-old", requirements=arch, deprecated=True)]
    cluster = MemoryCluster(nodeclass())
    (outcome,) = NodeClassController(cluster, ScriptedCloud(amis_answer=amis), Clock()).reconcile_all()
    assert outcome.deprecated_amis == ("ami-dep",)
    stored = cluster.nodeclass("default")
    assert stored is not None and stored.status is not None and stored.status.amis == amis
    (event,) = [e for e in cluster.events if e.reason == AMI_DEPRECATED]
    assert event.type == "Warning" and "ami-dep (al2023-old)" in event.message
    points = {p.name: p.value for p in metric_points([outcome]) if p.name == NODECLASS_DEPRECATED_AMIS}
    assert points == {NODECLASS_DEPRECATED_AMIS: 1}


def test_a_class_on_current_amis_is_not_warned_about() -> None:
    cluster = MemoryCluster(nodeclass())
    (outcome,) = NodeClassController(cluster, ScriptedCloud(), Clock()).reconcile_all()
    assert outcome.deprecated_amis == () and not [e for e in cluster.events if e.reason == AMI_DEPRECATED]
