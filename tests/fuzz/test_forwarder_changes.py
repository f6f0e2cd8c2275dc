"""Fuzz the forwarder's change tracking: ``ChangeTracker.observe`` and ``resync`` with random objects.

The strategy is constrained to what an API server can send: every watched object is a JSON object whose
fields, when present, have their schema's types (metadata a map, labels a map of strings, conditions a list
of maps with a unique ``type``...), but any field may be absent and CRD specs hold any JSON. (A ``metadata``
that is a string is impossible from a server and would fail in ``.get``; so would two conditions without a
``type``.) Within that, a tracker answers events or nothing, each event a detail-type the EventBridge rules
know, and never raises.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from autoscaler.events import DETAIL_TYPES, WATCHED_KINDS
from autoscaler.forwarder.changes import BusEvent, ChangeTracker
from tests.fuzz.budget import fuzz
from tests.fuzz.strategies import JSON

NAMES = st.sampled_from(["a", "b", "default", "ns/x", ""]) | st.text(max_size=12)
STRINGS = st.text(max_size=12)
STRING_MAPS = st.dictionaries(
    st.sampled_from(["karpenter.sh/nodepool", "topology.kubernetes.io/zone", "app", "kubernetes.io/config.mirror"])
    | STRINGS,
    STRINGS,
    max_size=3,
)
TIMESTAMPS = st.sampled_from(["2026-03-02T14:05:00Z", ""])


def sparse(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """A map with any subset of ``fields``, each of its schema's type."""
    return st.fixed_dictionaries({}, optional=fields)


# Conditions are a list-map keyed by ``type``: type and status are required, types unique (the tracker sorts
# conditions as (type, status, reason) tuples, which would compare None with str for two untyped ones).
CONDITIONS = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["Ready", "PodScheduled", "Launched", "Drifted"]) | STRINGS,
            "status": st.sampled_from(["True", "False", "Unknown"]),
        },
        optional={"reason": st.sampled_from(["Unschedulable", ""]) | STRINGS, "message": STRINGS},
    ),
    max_size=3,
    unique_by=lambda condition: condition["type"],
)
OWNERS = st.lists(
    sparse({"kind": st.sampled_from(["DaemonSet", "Node", "ReplicaSet"]), "controller": st.booleans()}), max_size=2
)
METADATA = sparse(
    {
        "name": NAMES,
        "namespace": st.sampled_from(["default", "kube-system", ""]),
        "uid": STRINGS,
        "resourceVersion": st.integers(0, 10**6).map(str),
        "deletionTimestamp": TIMESTAMPS,
        "labels": STRING_MAPS,
        "annotations": STRING_MAPS,
        "finalizers": st.lists(STRINGS, max_size=2),
        "ownerReferences": OWNERS,
    }
)
POD_SPEC = sparse({"nodeName": STRINGS, "containers": st.lists(JSON, max_size=1)})
POD_STATUS = sparse(
    {"phase": st.sampled_from(["Pending", "Running", "Succeeded", "Failed", "Unknown"]), "conditions": CONDITIONS}
)
NODE_SPEC = sparse(
    {
        "providerID": STRINGS,
        "unschedulable": st.booleans(),
        "taints": st.lists(sparse({"key": STRINGS, "effect": STRINGS, "value": STRINGS}), max_size=2),
    }
)
CRD_SPEC = st.dictionaries(STRINGS, JSON, max_size=4)  # validated by the CRD schema, any JSON to the tracker
STATUS = sparse({"conditions": CONDITIONS, "nodeName": STRINGS, "providerID": STRINGS})
SHAPES = {
    "Pod": (POD_SPEC, POD_STATUS),
    "Node": (NODE_SPEC, STATUS),
    "NodeClaim": (CRD_SPEC, STATUS),
    "NodePool": (CRD_SPEC, STATUS),
    "EC2NodeClass": (CRD_SPEC, STATUS),
}


def objects(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    spec, status = SHAPES[kind]
    return sparse({"apiVersion": STRINGS, "kind": st.just(kind), "metadata": METADATA, "spec": spec, "status": status})


WATCH = st.sampled_from(["ADDED", "MODIFIED", "DELETED"])  # the watcher forwards only these types
T0 = datetime(2026, 3, 2, 14, 5, tzinfo=UTC)


def assert_events(events: list[BusEvent], kind: str) -> None:
    for event in events:
        assert event.detail_type in DETAIL_TYPES and event.detail_type.startswith(kind), event
        assert event.detail["object"]["kind"] == kind and event.detail["cluster"] == "fuzz"
        json.dumps(event.detail)  # what the publisher sends: it must serialise


@st.composite
def histories(draw: st.DrawFn) -> tuple[str, list[tuple[str, Any]]]:
    """A kind and a sequence of watch events and relists (``None`` type) of that kind's objects."""
    kind = draw(st.sampled_from(WATCHED_KINDS))
    steps = draw(
        st.lists(
            st.tuples(WATCH, objects(kind)) | st.tuples(st.none(), st.lists(objects(kind), max_size=3)),
            min_size=1,
            max_size=6,
        )
    )
    return kind, steps


@fuzz(250)
@given(histories())
def test_any_history_of_watch_events_and_relists_yields_events_or_nothing(
    history: tuple[str, list[tuple[str | None, Any]]],
) -> None:
    """For any sequence of watch events and relists of server-shaped objects, the tracker answers a list of
    events of known detail-types (each serialisable, naming the kind and cluster), never an exception."""
    kind, steps = history
    tracker = ChangeTracker(kind, "fuzz", clock=lambda: T0)
    for index, (watch_type, payload) in enumerate(steps):
        if watch_type is None:
            events = tracker.resync(payload, initial=index == 0)
        else:
            events = tracker.observe(watch_type, payload)
        assert isinstance(events, list)
        assert_events(events, kind)
