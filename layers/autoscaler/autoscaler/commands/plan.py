"""``autoscaler plan``: what the provisioner would launch for the pending pods, without launching anything.

    autoscaler plan --embedded -f nodepools-and-classes.yaml -f pods.yaml [-o json]
    autoscaler plan --cluster NAME [-f more-pods.yaml] [-o json]
    autoscaler plan --disruption (--embedded -f ... | --cluster NAME) [-o json]

``--embedded`` (the dev package's world: installed with the dev extras) starts the moto world and the Kubernetes API
emulator in this process, applies the manifests (EC2NodeClasses are resolved by the nodeclass controller against the
world), and plans for the pods given.
``--cluster`` reads a real cluster and account (credentials from the environment, as the functions use them)
and plans for its pending pods plus any pods given. Pods may be given as Pods, Deployments, StatefulSets,
ReplicaSets or Jobs (expanded by their replicas); a Pod with ``spec.nodeName`` is a bound pod, part of the
embedded world. Both run the provisioner's own planning code; nothing is created, launched or marked. The plan also
shows how the launcher would launch each NodeClaim (reserved into which reservation, on-demand, spot), the capacity
reservations offered with their price, and (StaticCapacity gate) what the static reconciler would do to each static
NodePool and which pending pods fit its nodes.
``--disruption`` prints what the next disruption pass would do to each node instead (``plan_disruption``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from autoscaler.apis.validation import InvalidObjectError, parse
from autoscaler.commands import dev_package, plan_disruption
from autoscaler.commands.manifest_args import add_manifest_arguments, manifest_paths
from autoscaler.crds.columns import format_table
from autoscaler.manifests import load_documents
from autoscaler.settings import FeatureGates
from autoscaler.workloads import CONTEXT_KINDS, WORKLOAD_KINDS, WorkloadError, expand

EMBEDDED_KINDS = frozenset({"NodePool", "EC2NodeClass", "NodeClaim", "CapacityBuffer", "NodeOverlay"})
BUFFER_SOURCES = frozenset({"PodTemplate"})  # what a CapacityBuffer may refer to besides workloads
SHOWN_TYPES = 4


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "plan", help="the NodeClaims the provisioner would create for pending pods (read-only)"
    )
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--embedded", action="store_true", help="plan in an embedded AWS and Kubernetes (local)")
    target.add_argument("--cluster", metavar="NAME", help="plan against this EKS cluster and its account")
    add_manifest_arguments(
        parser, "manifests: NodePools, EC2NodeClasses and workloads (repeatable; with --cluster, workloads only)"
    )
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table")
    parser.add_argument(
        "--instance-types",
        metavar="NAMES",
        default="",
        help="consider only these instance types, comma-separated (default: all; in the embedded world, every "
        "type moto knows, which takes seconds to describe)",
    )
    parser.add_argument(
        "--disruption",
        action="store_true",
        help="what the next disruption pass would do to each node, and what blocks the others (read-only)",
    )
    parser.add_argument(
        "--feature-gates",
        metavar="GATES",
        default=os.environ.get("FEATURE_GATES", ""),
        help="Karpenter's feature gates as deployed, e.g. CapacityBuffer=true (default: FEATURE_GATES)",
    )
    parser.set_defaults(run=run)


@dataclass
class Manifests:
    objects: list[dict[str, Any]] = field(default_factory=list)  # for the embedded cluster
    pods: list[dict[str, Any]] = field(default_factory=list)  # pending pods to plan for
    errors: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


def read_manifests(files: Sequence[str]) -> Manifests:
    read = Manifests()
    for document in load_documents(files):
        body = document.body
        if document.problem:
            read.errors.append(document.problem)
            continue
        kind = str(body.get("kind"))
        try:
            if kind == "Pod" and (body.get("spec") or {}).get("nodeName"):
                read.objects.append(body)  # already bound: capacity in use, not a pod to plan for
            elif kind in WORKLOAD_KINDS:
                read.pods += expand(body)
            elif kind in EMBEDDED_KINDS:
                read.objects.append(parse(body).to_dict())
            elif kind in CONTEXT_KINDS or kind in BUFFER_SOURCES:
                read.objects.append(body)
            else:
                read.ignored.append(f"{document.origin}: {kind} is not used for planning")
        except (InvalidObjectError, WorkloadError) as error:
            read.errors.append(f"{document.origin}: {error}")
    return read


def run(args: argparse.Namespace) -> int:
    manifests = read_manifests(manifest_paths(args))
    for note in manifests.ignored:
        print(f"warning: {note}", file=sys.stderr)
    if manifests.errors:
        for error in manifests.errors:
            print(f"error: {error}", file=sys.stderr)
        return 1
    names = [n.strip() for n in args.instance_types.split(",") if n.strip()]
    gates = FeatureGates.parse(args.feature_gates)
    if args.embedded:
        plan = _embedded(manifests, names, args.disruption, gates)
    else:
        if manifests.objects:
            print(
                "warning: with --cluster only workloads are read from files; the cluster's own objects are used",
                file=sys.stderr,
            )
        if args.disruption and manifests.pods:
            print("warning: with --cluster --disruption, pods from files are not used", file=sys.stderr)
        plan = _real_cluster(args.cluster, manifests.pods, names, args.disruption, gates)
    for name, why in sorted(plan.skipped_nodepools.items()):
        print(f"warning: nodepool {name} {why}", file=sys.stderr)
    if args.output == "json":
        print(json.dumps(plan.as_dict(), indent=2))
    else:
        print(plan_disruption.render(plan) if args.disruption else render(plan))
    return 0


def _plan(  # noqa: PLR0917 - the command's choices, passed down
    cluster: Any,
    provider: Any,
    index: Any,
    pods: Sequence[dict[str, Any]],
    disruption: bool = False,
    gates: FeatureGates | None = None,
) -> Any:
    """The provisioner's planning (or, with ``disruption``, the disruption assessment), read-only: ``index`` is
    the provider's lookup of EC2NodeClasses; ``gates``: the feature gates as deployed (CapacityBuffer: buffers
    count as demand; NodeOverlay: instance types are overlaid, and the plan shows the types overlays changed)."""
    from autoscaler.clock import utc_now
    from autoscaler.controllers.overlays import effective, evaluate_overlays, read_overlays
    from autoscaler.controllers.provisioning import ProvisioningController
    from autoscaler.controllers.state import ClusterState

    gates = gates or FeatureGates()
    if disruption:
        return plan_disruption.assess(
            cluster, provider, index, buffers=gates.capacity_buffer, overlays=gates.node_overlay
        )
    state = ClusterState.read(cluster)
    if gates.capacity_buffer:
        from autoscaler.controllers.buffers import read_buffers

        state.buffer_pods = read_buffers(cluster).pods
    index.update(state.nodeclasses)
    if gates.node_overlay:
        evaluate_overlays(state, provider, read_overlays(cluster), utc_now())
    plan = ProvisioningController(cluster, provider, provider.aws.unavailable).plan(state, pods)
    plan.overlaid = effective(state, provider, utc_now())
    _capacity(plan, state, cluster, provider, gates)
    return plan


def _capacity(plan: Any, state: Any, cluster: Any, provider: Any, gates: FeatureGates) -> None:
    """What the pass's own code decides for static NodePools (its static reconciler, StaticCapacity gate), how the
    launcher would launch each planned NodeClaim, and the reservations offered (``provisioning.capacity``)."""
    from autoscaler.clock import utc_now
    from autoscaler.cloudprovider.errors import CloudProviderError
    from autoscaler.controllers.provisioning import capacity
    from autoscaler.controllers.provisioning.controller import usable_nodepools
    from autoscaler.controllers.provisioning.plan import LaunchChoice
    from autoscaler.controllers.static import StaticController

    if gates.static_capacity:
        plan.static = StaticController(cluster).describe(state, plan.existing())
    plan.launches = [
        LaunchChoice(error=str(p))
        if isinstance(p, CloudProviderError)
        else LaunchChoice(p.capacity_type, p.reservation.id if p.reservation else None, p.cheapest_price())
        for p in provider.launch_plans([c.nodeclaim for c in plan.nodeclaims], state.overlays)
    ]
    _, types = usable_nodepools(state, provider, utc_now(), {})  # memoized by the provider: the plan's own types
    plan.reservations = capacity.reservations(types, plan.launches)


def _embedded(
    manifests: Manifests, instance_types: Sequence[str], disruption: bool = False, gates: FeatureGates | None = None
) -> Any:
    from autoscaler.controllers.state import NodeClassIndex

    embedded = dev_package.load("autoscaler_dev.world.embedded")  # the moto world and the emulator: not shipped
    if not instance_types:
        print("note: describing every instance type moto knows takes a few seconds", file=sys.stderr)
    with embedded.EmbeddedCluster.start() as world:
        # Disruption reads the world, so the pending pods are part of it (they keep room a move must not take).
        world.apply([*manifests.objects, *(manifests.pods if disruption else ())])
        for outcome in world.resolve_nodeclasses():
            if outcome.ready != "True":
                print(f"warning: EC2NodeClass {outcome.name} is not Ready {outcome.message}".rstrip(), file=sys.stderr)
        index = NodeClassIndex()
        provider = world.provider(index.get, instance_types)
        return _plan(world.cluster(), provider, index, manifests.pods, disruption, gates)


def _real_cluster(
    name: str, pods: Sequence[dict[str, Any]], instance_types: Sequence[str], disruption: bool, gates: FeatureGates
) -> Any:
    from autoscaler.controllers.state import NodeClassIndex
    from autoscaler.kube.connect import cluster_from_environment
    from autoscaler.runtime import cloud_provider
    from autoscaler.settings import Settings

    settings = Settings.from_env({**os.environ, "CLUSTER_NAME": name})
    settings = replace(settings, instance_types=tuple(instance_types) or settings.instance_types)
    # The shared marks of unavailable offerings are read (never written) when the state table is named.
    index = NodeClassIndex()
    provider = cloud_provider(settings, index.get)
    return _plan(cluster_from_environment(settings), provider, index, pods, disruption, gates)


def _types(names: Sequence[str]) -> str:
    shown = ", ".join(names[:SHOWN_TYPES])
    return f"{shown} and {len(names) - SHOWN_TYPES} more" if len(names) > SHOWN_TYPES else shown


def render(plan: Any) -> str:
    """The plan as tables: NodeClaims, their pods, pods on existing capacity, unschedulable pods, a total."""
    sections = []
    claims = plan.nodeclaims
    if claims:
        rows = [
            [
                str(number),
                claim.nodepool,
                _types([o.name for o in claim.decision.instance_types]),
                ",".join(claim.zones()),
                ",".join(claim.capacity_types()),
                plan.launches[number - 1].text() if number <= len(plan.launches) else "-",
                f"{plan.launch_price(number - 1):.4f}",
                str(len(claim.pods)),
            ]
            for number, claim in enumerate(claims, 1)
        ]
        headers = ["#", "NODEPOOL", "INSTANCE TYPES", "ZONES", "CAPACITY", "LAUNCHES AS", "$/HOUR", "PODS"]
        sections.append(format_table(headers, rows))
        sections.append(
            "\n".join(f"{number}: {', '.join(str(p) for p in claim.pods)}" for number, claim in enumerate(claims, 1))
        )
    existing = plan.existing()
    if existing:
        rows = [[str(pod), f"{where.kind}/{where.name}"] for pod, where in sorted(existing.items(), key=str)]
        sections.append(format_table(["POD", "FITS ON EXISTING"], rows))
    if plan.unschedulable:
        rows = [[str(pod), reason] for pod, reason in sorted(plan.unschedulable.items(), key=str)]
        sections.append(format_table(["POD", "UNSCHEDULABLE BECAUSE"], rows))
    buffered = plan.buffered()
    if buffered:
        rows = [
            [f"{ns}/{name}", str(d.on_nodes), str(d.in_flight), str(d.new), str(d.failed)]
            for (ns, name), d in sorted(buffered.items())
        ]
        sections.append(format_table(["CAPACITYBUFFER", "ON NODES", "LAUNCHING", "NEW", "NOWHERE"], rows))
    if plan.overlaid:
        rows = [
            [
                r["nodepool"],
                r["instanceType"],
                f"{r['price']:.4f}",
                f"{r['effectivePrice']:.4f}",
                ",".join(f"{k}={v}" for k, v in r["capacity"].items()) or "-",
                ",".join(r["overlays"]),
            ]
            for r in plan.overlaid
        ]
        # The cheapest available offering of any zone and capacity type, before and after the overlays.
        headers = ["NODEPOOL", "OVERLAID TYPE", "CHEAPEST $/HOUR", "EFFECTIVE $/HOUR", "ADDED CAPACITY", "OVERLAYS"]
        sections.append(format_table(headers, rows))
    sections += _kept_capacity(plan)
    price = plan.price()
    sections.append(
        f"{len(claims)} NodeClaims for {sum(len(c.pods) for c in claims)} pods at ${price:.4f}/hour; "
        f"{len(existing)} pods fit existing capacity; {len(plan.unschedulable)} unschedulable"
    )
    return "\n\n".join(sections)


def _kept_capacity(plan: Any) -> list[str]:
    """The static NodePools and the capacity reservations, as tables."""
    sections = []
    if plan.static:
        rows = [
            [
                name,
                str(s["replicas"]),
                str(s["running"]),
                str(s["pending_disruption"]),
                str(s["create"]),
                ", ".join(f"{claim} ({why})" for claim, why in s["remove"].items()) or "-",
                str(len(s["pods"])),
                s.get("held") or "",
            ]
            for name, s in plan.static.items()
        ]
        headers = [
            "STATIC NODEPOOL",
            "REPLICAS",
            "RUNNING",
            "BEING REPLACED",
            "TO CREATE",
            "TO REMOVE",
            "PENDING PODS ON IT",
            "HELD",
        ]
        sections.append(format_table(headers, rows))
    if plan.reservations:
        rows = [
            [
                r["reservation"],
                r["reservationType"],
                r["instanceType"],
                r["zone"],
                str(r["free"]),
                "yes" if r["available"] else "no",
                f"{r['pricePerHour']:.3g}",
                ",".join(r["nodePools"]),
                ",".join(map(str, r["nodeClaims"])) or "-",
            ]
            for r in plan.reservations
        ]
        headers = ["RESERVATION", "KIND", "TYPE", "ZONE", "FREE", "AVAILABLE", "$/HOUR", "NODEPOOLS", "NODECLAIMS"]
        sections.append(format_table(headers, rows))
    return sections
