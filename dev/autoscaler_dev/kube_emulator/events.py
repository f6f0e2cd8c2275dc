"""One store of events behind both APIs, as the API server keeps them: an event written through ``v1`` is read
through ``events.k8s.io/v1`` and the other way round (same name, uid and resourceVersion), so the autoscaler's
events.k8s.io events show in ``kubectl get events -A`` and ``kubectl describe``, which read ``v1``."""

from __future__ import annotations

from typing import Any

from autoscaler_dev.kube_emulator.resources import Obj

# (events.k8s.io/v1 field, v1 field) that differ only by name
_RENAMED = (
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("deprecatedSource", "source"),
)
_SHARED = ("eventTime", "series", "reason", "type", "action", "related", "reportingInstance")


def _copy(event: Obj, pairs: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    return {target: event[source] for source, target in pairs if event.get(source) is not None}


def to_core(event: Obj) -> Obj:
    """An events.k8s.io/v1 Event as ``v1`` serves it."""
    core = {"apiVersion": "v1", "kind": "Event", "metadata": event["metadata"]}
    core.update(_copy(event, _RENAMED))
    core.update({k: event[k] for k in _SHARED if event.get(k) is not None})
    if event.get("reportingController"):
        core["reportingComponent"] = event["reportingController"]
        core.setdefault("source", {"component": event["reportingController"]})
    core.setdefault("involvedObject", {})
    return core


def to_events_v1(event: Obj) -> Obj:
    """A ``v1`` Event as events.k8s.io/v1 serves it."""
    swapped = tuple((target, source) for source, target in _RENAMED)
    converted = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": event["metadata"]}
    converted.update(_copy(event, swapped))
    converted.update({k: event[k] for k in _SHARED if event.get(k) is not None})
    reporter = event.get("reportingComponent") or (event.get("source") or {}).get("component")
    if reporter:
        converted["reportingController"] = reporter
    if not converted.get("eventTime"):  # events.k8s.io/v1 requires it; the API server falls back likewise
        moment = event.get("lastTimestamp") or event.get("firstTimestamp") or event["metadata"].get("creationTimestamp")
        converted["eventTime"] = _micro(str(moment)) if moment else None
    return converted


def _micro(moment: str) -> str:
    """A second-precision RFC 3339 time as a MicroTime (``...:05.000000Z``), which clients parse strictly."""
    return moment[:-1] + ".000000Z" if moment.endswith("Z") and "." not in moment else moment
