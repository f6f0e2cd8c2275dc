"""Server-side tables (meta.k8s.io/v1 Table), which ``kubectl get`` asks for: a CRD's
``additionalPrinterColumns``, and kubectl's familiar columns for the core kinds it shows most."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from autoscaler.clock import parse_time
from autoscaler.crds.columns import cell, evaluate, human_duration
from autoscaler.kube.objects import Body, Node, Pod
from autoscaler_dev.kube_emulator.resources import Obj, ResourceType


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    value: Callable[[Obj, datetime], Any]
    priority: int = 0
    format: str = ""

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.name,
            "priority": self.priority,
        }


def _age(obj: Obj, now: datetime) -> str:
    return str(cell(Body(obj).creation_timestamp, "date", now))


def _path(json_path: str, column_type: str) -> Callable[[Obj, datetime], Any]:
    def value(obj: Obj, now: datetime) -> Any:
        found = evaluate(obj, json_path)
        if found is None:
            return None  # kubectl prints <none>
        if column_type == "date":
            return cell(found, "date", now)
        return found if isinstance(found, (str, int, float, bool)) else str(found)

    return value


_NAME = Column("Name", "string", lambda o, _: Body(o).name or None, format="name")
_AGE = Column("Age", "string", _age)


def _condition(obj: Obj, kind: str) -> str | None:
    condition = Body(obj).condition(kind)
    return None if condition is None else str(condition.get("status"))


def _pod_status(pod: Obj, _now: datetime) -> str:
    view = Pod(pod)
    if view.deleting:
        return "Terminating"
    status = view.status
    for container in status.get("containerStatuses") or ():
        state = container.get("state") or {}
        reason = (state.get("waiting") or {}).get("reason") or (state.get("terminated") or {}).get("reason")
        if reason:
            return str(reason)
    return str(status.get("reason") or status.get("phase") or "Unknown")


def _pod_ready(pod: Obj, _now: datetime) -> str:
    view = Pod(pod)
    statuses = view.status.get("containerStatuses") or ()
    total = len(view.spec.get("containers") or ())
    return f"{sum(bool(c.get('ready')) for c in statuses)}/{total}"


def _node_status(node: Obj, _now: datetime) -> str:
    ready = {"True": "Ready", "False": "NotReady"}.get(_condition(node, "Ready") or "", "Unknown")
    return f"{ready},SchedulingDisabled" if Node(node).unschedulable else ready


def _node_roles(node: Obj, _now: datetime) -> str:
    prefix = "node-role.kubernetes.io/"
    roles = sorted(k[len(prefix) :] for k in Node(node).labels if k.startswith(prefix))
    return ",".join(roles) or "<none>"


def _address(kind: str) -> Callable[[Obj, datetime], Any]:
    def value(node: Obj, _now: datetime) -> Any:
        addresses = Node(node).status.get("addresses") or ()
        return next((a.get("address") for a in addresses if a.get("type") == kind), "<none>")

    return value


_BUILTIN: dict[str, tuple[Column, ...]] = {
    "pods": (
        _NAME,
        Column("Ready", "string", _pod_ready),
        Column("Status", "string", _pod_status),
        Column(
            "Restarts",
            "integer",
            lambda p, _: sum(int(c.get("restartCount", 0)) for c in Pod(p).status.get("containerStatuses") or ()),
        ),
        _AGE,
        Column("IP", "string", lambda p, _: Pod(p).status.get("podIP") or "<none>", 1),
        Column("Node", "string", lambda p, _: Pod(p).node_name or "<none>", 1),
        Column("Nominated Node", "string", lambda p, _: Pod(p).status.get("nominatedNodeName") or "<none>", 1),
        Column("Readiness Gates", "string", lambda p, _: _gates(p), 1),
    ),
    "nodes": (
        _NAME,
        Column("Status", "string", _node_status),
        Column("Roles", "string", _node_roles),
        _AGE,
        Column("Version", "string", lambda n, _: (Node(n).status.get("nodeInfo") or {}).get("kubeletVersion", "")),
        Column("Internal-IP", "string", _address("InternalIP"), 1),
        Column("External-IP", "string", _address("ExternalIP"), 1),
        Column("OS-Image", "string", lambda n, _: _node_info(n, "osImage"), 1),
        Column("Kernel-Version", "string", lambda n, _: _node_info(n, "kernelVersion"), 1),
        Column("Container-Runtime", "string", lambda n, _: _node_info(n, "containerRuntimeVersion"), 1),
    ),
    "deployments": (
        _NAME,
        Column("Ready", "string", lambda d, _: f"{_status(d, 'readyReplicas')}/{_spec_replicas(d)}"),
        Column("Up-to-date", "integer", lambda d, _: _status(d, "updatedReplicas")),
        Column("Available", "integer", lambda d, _: _status(d, "availableReplicas")),
        _AGE,
        Column("Containers", "string", lambda d, _: _containers(d, "name"), 1),
        Column("Images", "string", lambda d, _: _containers(d, "image"), 1),
    ),
    "replicasets": (
        _NAME,
        Column("Desired", "integer", lambda r, _: _spec_replicas(r)),
        Column("Current", "integer", lambda r, _: _status(r, "replicas")),
        Column("Ready", "integer", lambda r, _: _status(r, "readyReplicas")),
        _AGE,
    ),
    "statefulsets": (
        _NAME,
        Column("Ready", "string", lambda s, _: f"{_status(s, 'readyReplicas')}/{_spec_replicas(s)}"),
        _AGE,
    ),
    "daemonsets": (
        _NAME,
        Column("Desired", "integer", lambda d, _: _status(d, "desiredNumberScheduled")),
        Column("Current", "integer", lambda d, _: _status(d, "currentNumberScheduled")),
        Column("Ready", "integer", lambda d, _: _status(d, "numberReady")),
        Column("Up-to-date", "integer", lambda d, _: _status(d, "updatedNumberScheduled")),
        Column("Available", "integer", lambda d, _: _status(d, "numberAvailable")),
        _AGE,
    ),
    "jobs": (
        _NAME,
        Column("Status", "string", lambda j, _: "Complete" if _condition(j, "Complete") == "True" else "Running"),
        Column("Completions", "string", lambda j, _: f"{_status(j, 'succeeded')}/{Body(j).spec.get('completions', 1)}"),
        _AGE,
    ),
    "poddisruptionbudgets": (
        _NAME,
        Column("Min Available", "string", lambda b, _: str(Body(b).spec.get("minAvailable", "N/A"))),
        Column("Max Unavailable", "string", lambda b, _: str(Body(b).spec.get("maxUnavailable", "N/A"))),
        Column("Allowed Disruptions", "integer", lambda b, _: _status(b, "disruptionsAllowed")),
        _AGE,
    ),
    "persistentvolumeclaims": (
        _NAME,
        Column("Status", "string", lambda c, _: Body(c).status.get("phase", "Pending")),
        Column("Volume", "string", lambda c, _: Body(c).spec.get("volumeName", "")),
        Column("StorageClass", "string", lambda c, _: Body(c).spec.get("storageClassName") or "<unset>"),
        _AGE,
    ),
    "namespaces": (
        _NAME,
        Column("Status", "string", lambda n, _: Body(n).status.get("phase", "Active")),
        _AGE,
    ),
    "leases": (_NAME, Column("Holder", "string", lambda o, _: Body(o).spec.get("holderIdentity", "")), _AGE),
    "events": (
        Column("Last Seen", "string", lambda e, now: _since(_last_seen(e), now)),
        Column("Type", "string", lambda e, _: e.get("type", "")),
        Column("Reason", "string", lambda e, _: e.get("reason", "")),
        Column("Object", "string", lambda e, _: _regarding(e)),
        Column("Message", "string", lambda e, _: e.get("note") or e.get("message", "")),
    ),
}


def _since(moment: str | None, now: datetime) -> str:
    if not moment:
        return "<unknown>"
    moment_at = parse_time(moment)
    return human_duration(now - moment_at) if moment_at is not None else moment


def _regarding(event: Obj) -> str:
    target = event.get("regarding") or event.get("involvedObject") or {}
    return f"{str(target.get('kind', '')).lower()}/{target.get('name', '')}"


def columns_for(resource: ResourceType) -> tuple[Column, ...]:
    """A CRD's printer columns after NAME (NAME and AGE when it declares none); kubectl's columns for core kinds."""
    if resource.printer_columns is None:
        return _BUILTIN.get(resource.plural, (_NAME, _AGE))
    if not resource.printer_columns:
        return (_NAME, _AGE)
    declared = (
        Column(str(c["name"]), str(c["type"]), _path(str(c["jsonPath"]), str(c["type"])), int(c.get("priority", 0)))
        for c in resource.printer_columns
    )
    return (_NAME, *declared)


def wants_table(request: Any) -> bool:
    """Whether the client asked for a meta.k8s.io Table (``kubectl get`` does)."""
    return "as=Table" in request.headers.get("Accept", "")


def _row_object(obj: Obj, include: str) -> Obj | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata") or {}}


def table(
    resource: ResourceType,
    objects: Sequence[Obj],
    *,
    now: datetime,
    include_object: str = "Metadata",
    list_metadata: Mapping[str, Any] | None = None,
    with_definitions: bool = True,
) -> Obj:
    columns = columns_for(resource)
    rows = []
    for obj in objects:
        row: Obj = {"cells": [column.value(obj, now) for column in columns]}
        shown = _row_object(obj, include_object)
        if shown is not None:
            row["object"] = shown
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(list_metadata or {}),
        "columnDefinitions": [c.definition() for c in columns] if with_definitions else [],
        "rows": rows,
    }


def _last_seen(event: Obj) -> str | None:
    series = event.get("series") or {}
    return (
        series.get("lastObservedTime")
        or event.get("lastTimestamp")
        or event.get("deprecatedLastTimestamp")
        or event.get("eventTime")
        or (event.get("metadata") or {}).get("creationTimestamp")
    )


def _status(obj: Obj, field: str) -> int:
    return int(Body(obj).status.get(field) or 0)


def _spec_replicas(obj: Obj) -> int:
    return int(Body(obj).spec.get("replicas", 1))


def _containers(workload: Obj, field: str) -> str:
    spec = (Body(workload).spec.get("template") or {}).get("spec") or {}
    return ",".join(str(c.get(field, "")) for c in spec.get("containers") or ())


def _node_info(node: Obj, field: str) -> str:
    return str((Node(node).status.get("nodeInfo") or {}).get(field) or "<unknown>")


def _gates(pod: Obj) -> str:
    gates = Pod(pod).spec.get("readinessGates") or ()
    return ",".join(str(g.get("conditionType")) for g in gates) or "<none>"
