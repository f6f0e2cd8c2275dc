"""A second, independent look at a consolidation's placements before the command is started. Pure.

The rescheduling (``rescheduling``) asks the scheduler where the candidates' pods would go. Before a command acts
on that answer, this check reads the same placements again straight from the Kubernetes definitions, sharing no
matching code with ``autoscaler.scheduling``: for each pod placed on an existing node, in-flight NodeClaim or new
NodeClaim, that the pod tolerates the target's NoSchedule and NoExecute taints (a new NodeClaim's are its NodePool's),
that its nodeSelector and required node affinity hold for the target's labels (a new NodeClaim's requirements), and
that the requests placed on each target fit its allocatable (a new NodeClaim's largest option). A command that fails
is not started; the pass counts it and logs the reason.

What it leaves out (topology spread, pod affinity, volumes, host ports) the scheduling validator of the dev package
checks in the embedded world, where it runs as a second ``PlacementCheck`` on every command.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from autoscaler.apis.resources import PODS, Resources, add, fits, format_resources, maximum, parse_resources
from autoscaler.kube.objects import Node, Pod
from autoscaler.scheduling import ClusterSnapshot
from autoscaler.scheduling.result import NewNodeClaim, SchedulingResult

Obj = Mapping[str, Any]  # a Kubernetes object as read
# (snapshot, the pods scheduled, the result, the nodes left out) -> what is wrong, one line each
PlacementCheck = Callable[[ClusterSnapshot, Sequence[Obj], SchedulingResult, Collection[str]], list[str]]
_HARD_EFFECTS = ("NoSchedule", "NoExecute")


def check_placements(
    snapshot: ClusterSnapshot, pods: Sequence[Obj], result: SchedulingResult, excluded: Collection[str]
) -> list[str]:
    by_ref = {(Pod(p).namespace or "default", Pod(p).name): p for p in pods}
    nodes = {Node(n).name: n for n in snapshot.nodes if Node(n).name not in excluded}
    new = {claim.hostname: claim for claim in result.new_nodeclaims}
    taints_of_pool = {
        pool.name: [t.model_dump(by_alias=True) for t in pool.spec.template.spec.taints or ()]
        for pool in snapshot.nodepools
    }
    placed: dict[str, list[Obj]] = {}
    errors: list[str] = []
    for ref, where in result.placements.items():
        pod = by_ref.get((ref.namespace, ref.name))
        if pod is None:
            continue
        name = f"pod {ref.namespace}/{ref.name}"
        if where.kind == "new":
            claim = new.get(where.name)
            if claim is None:
                errors.append(f"{name} is placed on an unknown new NodeClaim {where.name}")
                continue
            errors += _check_new(name, pod, claim, taints_of_pool.get(claim.nodepool, []))
        else:
            node = nodes.get(where.name)
            if node is None:
                errors.append(f"{name} is placed on {where.name}, which is not a node it may use")
                continue
            errors += _check_node(name, pod, node)
        placed.setdefault(f"{where.kind}/{where.name}", []).append(pod)
    errors += _check_room(placed, nodes, new, snapshot.bound_pods, set(by_ref))
    return errors


def _check_node(name: str, pod: Obj, node: Obj) -> list[str]:
    view = Node(node)
    errors = [
        f"{name} does not tolerate the taint {t.get('key')}={t.get('value', '')}:{t.get('effect')} of {view.name}"
        for t in view.taints
        if t.get("effect") in _HARD_EFFECTS and not _tolerated(t, Pod(pod).spec.get("tolerations") or ())
    ]
    why = _labels_refuse(pod, view.labels)
    if why:
        errors.append(f"{name} cannot run on {view.name}: {why}")
    return errors


def _check_new(name: str, pod: Obj, claim: NewNodeClaim, taints: Sequence[Mapping[str, Any]]) -> list[str]:
    errors = [
        f"{name} does not tolerate the taint {t.get('key')}={t.get('value', '')}:{t.get('effect')} of NodePool "
        f"{claim.nodepool}"
        for t in taints
        if t.get("effect") in _HARD_EFFECTS and not _tolerated(t, Pod(pod).spec.get("tolerations") or ())
    ]
    allowed = {r["key"]: r for r in claim.node_selector_requirements()}
    for key, value in (Pod(pod).spec.get("nodeSelector") or {}).items():
        if key in allowed and not _allows(allowed[key], str(value)):
            errors.append(f"{name} selects {key}={value}, which a new {claim.nodepool} node cannot have")
        elif key not in allowed and key in claim.labels and claim.labels[key] != value:
            errors.append(f"{name} selects {key}={value}; a new {claim.nodepool} node has {claim.labels[key]}")
    return errors


def _check_room(
    placed: Mapping[str, list[Obj]],
    nodes: Mapping[str, Obj],
    new: Mapping[str, NewNodeClaim],
    bound: Sequence[Obj],
    moving: set[tuple[str, str]],
) -> list[str]:
    # Only the existing nodes that receive pods need what they already carry (summing every bound pod per check
    # made each of a 1,000-node consolidation's simulations cost a pass over all 10,000 pods).
    targets = {target.split("/", 1)[1] for target in placed if not target.startswith("new/")}
    used: dict[str, Resources] = {}
    for pod in bound:
        view = Pod(pod)
        on = view.node_name
        if on in targets and (view.namespace or "default", view.name) not in moving and _counts(view):
            used[on] = add(used.get(on, {}), _requests(pod), {PODS: 1})
    errors = []
    for target, pods in placed.items():
        kind, name = target.split("/", 1)
        wanted = add(*(_requests(p) for p in pods), {PODS: len(pods)})
        if kind == "new":
            claim = new[name]
            room = maximum(o.instance_type.allocatable for o in claim.instance_types) if claim.instance_types else {}
            if not fits(_within(wanted, room), room):
                errors.append(f"the pods placed on new NodeClaim {name} need {_shown(wanted)}; no option holds them")
            continue
        room = parse_resources(Node(nodes[name]).status.get("allocatable"))
        if not fits(_within(add(used.get(name, {}), wanted), room), room):
            errors.append(f"the pods placed on {name} need {_shown(wanted)} more than its allocatable leaves")
    return errors


def _within(wanted: Resources, room: Resources) -> Resources:
    """``wanted`` without a pod count when the target states none (a stand-in for a NodeClaim not launched)."""
    return wanted if PODS in room else {k: v for k, v in wanted.items() if k != PODS}


def _counts(pod: Pod) -> bool:
    return pod.phase not in {"Succeeded", "Failed"} and not pod.deleting


def _requests(pod: Obj) -> Resources:
    """The pod's effective requests: its containers together, or its largest init container, plus overhead."""
    spec = Pod(pod).spec
    containers = add(
        *(parse_resources((c.get("resources") or {}).get("requests")) for c in spec.get("containers") or ())
    )
    init = [parse_resources((c.get("resources") or {}).get("requests")) for c in spec.get("initContainers") or ()]
    return add(maximum([containers, *init]), parse_resources(spec.get("overhead")))


def _shown(amounts: Resources) -> str:
    text = {k: v for k, v in format_resources(amounts).items() if k != PODS}
    return ", ".join(f"{k}={v}" for k, v in sorted(text.items()))


def _tolerated(taint: Mapping[str, Any], tolerations: Sequence[Mapping[str, Any]]) -> bool:
    for toleration in tolerations:
        effect = toleration.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        key, operator = toleration.get("key"), toleration.get("operator") or "Equal"
        if operator == "Exists" and (not key or key == taint.get("key")):
            return True
        if (
            operator == "Equal"
            and key == taint.get("key")
            and (toleration.get("value") or "") == (taint.get("value") or "")
        ):
            return True
    return False


def _labels_refuse(pod: Obj, labels: Mapping[str, str]) -> str | None:
    spec = Pod(pod).spec
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return f"nodeSelector {key}={value}"
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if terms and not any(
        all(_allows(e, labels.get(e.get("key", ""))) for e in t.get("matchExpressions") or ()) for t in terms
    ):
        return "no term of its required node affinity matches"
    return None


def _allows(expression: Mapping[str, Any], value: str | None) -> bool:
    operator, values = expression.get("operator"), [str(v) for v in expression.get("values") or ()]
    if operator == "In":
        return value in values
    if operator == "NotIn":
        return value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and value is not None and values:
        try:
            number, bound = int(value), int(values[0])
        except ValueError:
            return False
        return number > bound if operator == "Gt" else number < bound
    return False
