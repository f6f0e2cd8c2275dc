"""Karpenter v1's interruption decisions, one plan per instance, without any I/O."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.cloudprovider.errors import OfferingKey
from autoscaler.controllers.interruption.decisions import NOT_OURS, Action, plan_batch
from autoscaler.controllers.interruption.index import (
    FRESH_PER_BATCH,
    ClusterIndex,
    IndexPolicy,
    instance_id_of,
    is_cordoned,
)
from autoscaler.controllers.interruption.messages import InterruptionMessage, MessageKind
from autoscaler.controllers.rebalance.recommendation import (
    ANNOTATION_REBALANCE_POLICY,
    ANNOTATION_REBALANCE_RECOMMENDED_AT,
    RebalancePolicy,
    rebalance_policy,
    rebalance_recommended_at,
)
from tests.unit.interruption.builders import make_node, make_nodeclaim, make_nodepool

T0 = datetime(2026, 3, 2, 14, 5, tzinfo=UTC)
A, B, C = "i-000000000000000a1", "i-000000000000000b2", "i-000000000000000c3"
DISRUPTED = {"key": wk.TAINT_DISRUPTED, "effect": "NoSchedule"}


def listed(nodeclaims: list[NodeClaim]) -> list[dict[str, Any]]:
    """NodeClaims as a list answers them: the index parses each when a message names its instance."""
    return [nodeclaim.to_dict() for nodeclaim in nodeclaims]


def message(kind: MessageKind, *instance_ids: str, note: str = "", at: datetime = T0) -> InterruptionMessage:
    return InterruptionMessage(kind, instance_ids, "event", at, note)


def index(deleting: frozenset[str] = frozenset(), cordoned: frozenset[str] = frozenset()) -> ClusterIndex:
    nodeclaims, nodes = [], []
    for name, instance_id, zone in (("a", A, "us-west-2a"), ("b", B, "us-west-2b")):
        nodeclaim = make_nodeclaim(name, instance_id, zone=zone, instance_type="c5.xlarge", node_name=f"node-{name}")
        if instance_id in deleting:
            nodeclaim.metadata.deletion_timestamp = "2026-03-02T14:00:00Z"
        nodeclaims.append(nodeclaim)
        node = make_node(f"node-{name}", instance_id, zone=zone, taints=[DISRUPTED] if instance_id in cordoned else [])
        node["spec"]["unschedulable"] = instance_id in cordoned
        nodes.append(node)
    nodeclaims.append(make_nodeclaim("unregistered", C))  # launched, no Node yet
    return ClusterIndex(listed(nodeclaims), nodes, built_at=T0)


def notify(_: str) -> RebalancePolicy:
    return RebalancePolicy.NOTIFY


def test_provider_ids_and_cordon_state() -> None:
    assert instance_id_of("aws:///us-west-2a/i-0123456789abcdef0") == "i-0123456789abcdef0"
    assert instance_id_of("aws:///i-0123456789abcdef0") is None
    assert instance_id_of("kind://docker/kind/node") is None
    assert instance_id_of(None) is None
    node = make_node("n", A, taints=[DISRUPTED])
    assert not is_cordoned(node)  # tainted but still schedulable
    node["spec"]["unschedulable"] = True
    assert is_cordoned(node)


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        (MessageKind.SPOT_INTERRUPTION, "SpotInterrupted"),
        (MessageKind.CAPACITY_RESERVATION_INTERRUPTION, "CapacityReservationInstanceInterrupted"),
        (MessageKind.SCHEDULED_CHANGE, "ScheduledChange"),
        (MessageKind.INSTANCE_STOPPED, "InstanceStopping"),
        (MessageKind.INSTANCE_TERMINATED, "InstanceTerminating"),
    ],
)
def test_draining_kinds_cordon_and_delete_with_their_event(kind: MessageKind, reason: str) -> None:
    plan = plan_batch([("m1", message(kind, A))], index(), notify)
    (only,) = plan.plans
    assert (only.action, only.cordon, only.delete, only.message_ids) == (Action.CORDON_AND_DRAIN, True, True, ("m1",))
    assert [(n.reason, n.type) for n in only.notices] == [(reason, "Warning")]
    expected = OfferingKey("c5.xlarge", "us-west-2a", "spot") if kind is MessageKind.SPOT_INTERRUPTION else None
    assert only.unavailable == expected


def test_an_instance_without_a_node_is_only_deleted() -> None:
    (only,) = plan_batch([("m1", message(MessageKind.INSTANCE_TERMINATED, C))], index(), notify).plans
    assert (only.cordon, only.delete) == (False, True)


def test_duplicates_and_mixed_kinds_make_one_plan_per_instance() -> None:
    messages = [
        ("m1", message(MessageKind.INSTANCE_TERMINATED, A, note="shutting-down", at=T0 + timedelta(seconds=5))),
        ("m2", message(MessageKind.SPOT_INTERRUPTION, A, note="terminate")),
        ("m3", message(MessageKind.SPOT_INTERRUPTION, A, note="terminate")),
        ("m4", message(MessageKind.REBALANCE_RECOMMENDATION, A)),
    ]
    (only,) = plan_batch(messages, index(), notify).plans
    assert only.kind is MessageKind.SPOT_INTERRUPTION and only.action is Action.CORDON_AND_DRAIN
    assert only.message_ids == ("m1", "m2", "m3", "m4")
    # one event per kind that drains; the rebalance recommendation is moot once the node drains
    assert [n.reason for n in only.notices] == ["SpotInterrupted", "InstanceTerminating"]
    assert "shutting-down" in only.notices[1].message


def test_one_health_event_for_several_instances_plans_each_of_ours() -> None:
    plan = plan_batch([("m1", message(MessageKind.SCHEDULED_CHANGE, A, B, "i-0ffffffffffffffff"))], index(), notify)
    assert sorted(p.instance.instance_id for p in plan.plans) == [A, B]
    assert plan.unmatched == {}


def test_messages_about_other_instances_are_unmatched() -> None:
    plan = plan_batch([("m1", message(MessageKind.SPOT_INTERRUPTION, "i-0ffffffffffffffff"))], index(), notify)
    assert plan.plans == () and plan.unmatched == {"m1": NOT_OURS}


def test_work_already_done_is_not_redone_but_the_offering_is_still_marked() -> None:
    done = index(deleting=frozenset({A}), cordoned=frozenset({A}))
    (only,) = plan_batch([("m1", message(MessageKind.SPOT_INTERRUPTION, A))], done, notify).plans
    assert (only.action, only.cordon, only.delete, only.notices) == (Action.NONE, False, False, ())
    assert only.unavailable == OfferingKey("c5.xlarge", "us-west-2a", "spot")
    half_done = index(deleting=frozenset({A}))
    (only,) = plan_batch([("m1", message(MessageKind.INSTANCE_STOPPED, A))], half_done, notify).plans
    assert (only.action, only.cordon, only.delete) == (Action.CORDON_AND_DRAIN, True, False)


def test_a_nodeclaim_that_does_not_validate_is_skipped_alone() -> None:
    invalid = make_nodeclaim("b", B).to_dict()
    invalid["spec"]["notAField"] = True
    built = ClusterIndex([make_nodeclaim("a", A).to_dict(), invalid], [], built_at=T0)
    assert built.get(B) is None  # not ours, as the Cluster adapter skips what does not validate
    found = built.get(A)
    assert found is not None and found.nodeclaim.name == "a"


def test_an_offering_is_marked_once_per_batch() -> None:
    same_offering = [make_nodeclaim(n, i, instance_type="c5.xlarge") for n, i in (("a", A), ("b", B))]
    shared = ClusterIndex(listed(same_offering), [], built_at=T0)
    plans = plan_batch(
        [("m1", message(MessageKind.SPOT_INTERRUPTION, A)), ("m2", message(MessageKind.SPOT_INTERRUPTION, B))],
        shared,
        notify,
    ).plans
    assert [p.unavailable is not None for p in plans] == [True, False]


def test_a_spot_warning_without_zone_or_type_labels_marks_nothing() -> None:
    nodeclaim = make_nodeclaim("a", A)
    nodeclaim.metadata.labels = {wk.LABEL_NODEPOOL: "default"}
    (only,) = plan_batch(
        [("m1", message(MessageKind.SPOT_INTERRUPTION, A))], ClusterIndex(listed([nodeclaim]), [], built_at=T0), notify
    ).plans
    assert only.unavailable is None and only.delete


def test_rebalance_is_an_event_only_by_default() -> None:
    (only,) = plan_batch([("m1", message(MessageKind.REBALANCE_RECOMMENDATION, A))], index(), notify).plans
    assert (only.action, only.cordon, only.delete, only.annotations) == (Action.NOTIFY, False, False, None)
    assert [(n.reason, n.type) for n in only.notices] == [("RebalanceRecommendation", "Normal")]


def test_rebalance_with_replace_records_the_earliest_recommendation_once() -> None:
    messages = [
        ("m1", message(MessageKind.REBALANCE_RECOMMENDATION, A, at=T0 + timedelta(minutes=1))),
        ("m2", message(MessageKind.REBALANCE_RECOMMENDATION, A, at=T0)),
    ]
    (only,) = plan_batch(messages, index(), lambda _: RebalancePolicy.REPLACE).plans
    assert only.action is Action.REQUEST_REPLACEMENT and not only.cordon and not only.delete
    assert only.annotations == {ANNOTATION_REBALANCE_RECOMMENDED_AT: "2026-03-02T14:05:00Z"}
    assert "replacement is requested" in only.notices[0].message

    recorded = make_nodeclaim("a", A, annotations={ANNOTATION_REBALANCE_RECOMMENDED_AT: "2026-03-02T14:05:00Z"})
    again = ClusterIndex(listed([recorded]), [], built_at=T0)
    (only,) = plan_batch(messages, again, lambda _: RebalancePolicy.REPLACE).plans
    assert (only.action, only.notices) == (Action.NONE, ())


def test_rebalance_for_a_nodeclaim_being_deleted_does_nothing() -> None:
    (only,) = plan_batch(
        [("m1", message(MessageKind.REBALANCE_RECOMMENDATION, A))], index(deleting=frozenset({A})), notify
    ).plans
    assert only.action is Action.NONE and not only.writes


def test_rebalance_policy_annotation() -> None:
    assert rebalance_policy(None) == (RebalancePolicy.NOTIFY, None)
    assert rebalance_policy(make_nodepool("p")) == (RebalancePolicy.NOTIFY, None)
    assert rebalance_policy(make_nodepool("p", {ANNOTATION_REBALANCE_POLICY: "Replace"})) == (
        RebalancePolicy.REPLACE,
        None,
    )
    policy, warning = rebalance_policy(make_nodepool("p", {ANNOTATION_REBALANCE_POLICY: "replace"}))
    assert policy is RebalancePolicy.NOTIFY
    assert warning == f"NodePool p: {ANNOTATION_REBALANCE_POLICY}='replace' is not one of Notify, Replace"


def test_the_recommendation_hand_over_on_the_nodeclaim() -> None:
    def annotated(**annotations: str) -> NodeClaim:
        return make_nodeclaim("a", A, annotations=annotations)

    assert rebalance_recommended_at(annotated()) is None
    recommended = annotated(**{ANNOTATION_REBALANCE_RECOMMENDED_AT: "2026-03-02T14:05:00Z"})
    assert rebalance_recommended_at(recommended) == T0
    assert rebalance_recommended_at(annotated(**{ANNOTATION_REBALANCE_RECOMMENDED_AT: "soon"})) is None


def test_index_policy() -> None:
    built = index()
    policy = IndexPolicy()  # 5 minutes old at most; unknown instances: not sooner than 5 s, or 10 x the build time
    assert policy.needs_rebuild(None, [A], T0)
    assert not policy.needs_rebuild(built, [A, B], T0 + timedelta(minutes=4))
    assert policy.needs_rebuild(built, [A], T0 + timedelta(minutes=5))
    assert not policy.needs_rebuild(built, ["i-0ffffffffffffffff"], T0 + timedelta(seconds=4))
    assert policy.needs_rebuild(built, ["i-0ffffffffffffffff"], T0 + timedelta(seconds=5))
    assert policy.needs_rebuild(built, [C], T0 + timedelta(seconds=5))  # launched, its Node not seen yet
    slow = ClusterIndex([], [], built_at=T0, build_time=timedelta(seconds=2))  # a large cluster
    assert not policy.needs_rebuild(slow, ["i-0ffffffffffffffff"], T0 + timedelta(seconds=19))
    assert policy.needs_rebuild(slow, ["i-0ffffffffffffffff"], T0 + timedelta(seconds=20))
    assert FRESH_PER_BATCH.needs_rebuild(built, [A], T0)
