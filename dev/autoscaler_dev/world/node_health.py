"""Node health for the embedded world: the scenario's ``node-condition`` action makes kubelets (or the node monitoring
agent) report a condition, e.g. ``{at: 5m, node-condition: {nodes: 2, type: Ready, status: "False"}}``, so a scenario
shows node repair. The nodes are the first ``nodes`` Ready ones by name (of ``nodePool`` when given); each writes its
own Node's status with its own credentials, as a kubelet does. The world remembers which nodes it made unhealthy
and which stayed healthy, for the summary (``repair_summary``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import timestamp
from autoscaler.kube.objects import Node
from autoscaler_dev.kube_emulator.enforcement import forbidden_skipped
from autoscaler_dev.world.scenario import ScenarioError

if TYPE_CHECKING:
    from autoscaler_dev.world.actors import Actors

REPAIR_BLOCKED = "NodeRepairBlocked"


def report_condition(actors: Actors, count: int, kind: str, status: str, nodepool: str | None = None) -> list[str]:
    """Make ``count`` Ready nodes report condition ``kind`` with ``status``; the names of those nodes."""
    if status not in ("True", "False", "Unknown"):
        raise ScenarioError(f"node-condition: status must be True, False or Unknown, got {status!r}")
    nodes = sorted(
        (n for n in actors.kube.list("v1", "Node") if Node(n).ready and not Node(n).deleting),
        key=lambda n: Node(n).name,
    )
    if nodepool is not None:
        nodes = [n for n in nodes if Node(n).labels.get(wk.LABEL_NODEPOOL) == nodepool]
    if len(nodes) < count:
        raise ScenarioError(f"node-condition: {count} nodes asked for, {len(nodes)} Ready")
    now = timestamp(actors.now())
    chosen = nodes[:count]
    for node in chosen:
        name = Node(node).name
        kept = [c for c in (node.get("status") or {}).get("conditions") or () if c.get("type") != kind]
        condition = {"type": kind, "status": status, "reason": "WorldReported", "lastTransitionTime": now}
        condition["lastHeartbeatTime"] = now
        status_now = {**node["status"], "conditions": [*kept, condition]}
        with forbidden_skipped():
            actors.kubelet(name).replace(node, {**node, "status": status_now}, "status")
        actors.reported[name] = f"{kind}={status}"
        actors.timeline.note(actors.elapsed(), "condition", name, f"{kind}={status}")
    actors.healthy_then.update(Node(n).name for n in nodes[count:])
    return [Node(n).name for n in chosen]


def repair_summary(actors: Actors, events: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """What a repair scenario checks: the nodes made unhealthy still there, the healthy ones of that moment gone,
    and the ``NodeRepairBlocked`` events recorded."""
    live = {Node(n).name for n in actors.kube.list("v1", "Node")}
    return {
        "unhealthy_left": sum(1 for name in actors.reported if name in live),
        "healthy_gone": sum(1 for name in actors.healthy_then if name not in live),
        "repair_blocked_events": sum(1 for e in events if e.get("reason") == REPAIR_BLOCKED),
    }
