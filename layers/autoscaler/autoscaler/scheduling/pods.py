"""Pods as the scheduler sees them: identity, labels, resource requests and constraints.

Pods arrive as Kubernetes JSON (camelCase, as the API server serves them). Parsing is memoised by
the text of the parts that matter, so a Deployment's thousand replicas share one set of parsed
requests and constraints.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import InvalidOperation
from typing import Any

from autoscaler.apis.autoscaling.capacitybuffer import is_virtual_pod
from autoscaler.apis.quantity import QuantityError
from autoscaler.apis.resources import PODS, Resources, parse_resources
from autoscaler.scheduling.constraints import PodConstraints, parse_constraints
from autoscaler.scheduling.requirements import RequirementError

# Pod-level resources (spec.resources) override the container aggregate for these resources.
_POD_LEVEL_RESOURCES = ("cpu", "memory")
PARSE_ERRORS = (RequirementError, QuantityError, InvalidOperation, KeyError, ValueError, TypeError, AttributeError)
HostPort = tuple[str, int, str]  # host IP ("" = all addresses), port, protocol


class PodSpecError(ValueError):
    """A pod whose spec cannot be interpreted; it is reported unschedulable with this message."""


@dataclass(frozen=True, slots=True)
class PodRef:
    namespace: str
    name: str
    uid: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def _container_requests(container: Mapping[str, Any]) -> Resources:
    """Requests, with limits standing in for absent requests as the API server defaults them."""
    resources = container.get("resources") or {}
    quantities = dict(resources.get("limits") or {})
    quantities.update(resources.get("requests") or {})
    return parse_resources(quantities)


def _add_into(total: Resources, amount: Mapping[str, int]) -> None:
    for name, value in amount.items():
        total[name] = total.get(name, 0) + value


def _max_into(total: Resources, amount: Mapping[str, int]) -> None:
    for name, value in amount.items():
        if value > total.get(name, 0):
            total[name] = value


def pod_requests(spec: Mapping[str, Any]) -> Resources:
    """What the pod asks of a node, as the kube-scheduler computes it: the sum of its containers and of
    its sidecars (init containers with ``restartPolicy: Always``), or the largest init container (plus
    the sidecars started before it) if that is more; then pod-level requests, overhead and one pod slot."""
    total: Resources = {}
    for container in spec.get("containers") or ():
        _add_into(total, _container_requests(container))
    sidecars: Resources = {}
    init_peak: Resources = {}
    for container in spec.get("initContainers") or ():
        requests = _container_requests(container)
        if container.get("restartPolicy") == "Always":
            _add_into(total, requests)
            _add_into(sidecars, requests)
            _max_into(init_peak, sidecars)
        else:
            running = dict(requests)
            _add_into(running, sidecars)
            _max_into(init_peak, running)
    _max_into(total, init_peak)
    pod_level = parse_resources((spec.get("resources") or {}).get("requests"))
    for name in _POD_LEVEL_RESOURCES:
        if name in pod_level:
            total[name] = pod_level[name]
    _add_into(total, parse_resources(spec.get("overhead")))
    total[PODS] = 1
    return {name: value for name, value in total.items() if value}


def host_ports(spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    ports = []
    for container in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]:
        for port in container.get("ports") or ():
            if port.get("hostPort"):
                ports.append((str(port.get("hostIP") or ""), int(port["hostPort"]), str(port.get("protocol") or "TCP")))
    return tuple(ports)


def claim_names(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """Names of the PersistentVolumeClaims the pod mounts (ephemeral volumes claim ``<pod>-<volume>``)."""
    names = []
    for volume in spec.get("volumes") or ():
        if volume.get("persistentVolumeClaim"):
            names.append(str(volume["persistentVolumeClaim"]["claimName"]))
    return tuple(names)


class PodInfo:
    """A parsed pod. ``requests`` and ``constraints`` are shared between pods with identical specs."""

    __slots__ = (
        "claims",
        "constraints",
        "created",
        "host_ports",
        "label_class",
        "labels",
        "namespace",
        "node_name",
        "owner_kind",
        "raw",
        "ref",
        "requests",
        "terminal",
        "virtual",
    )

    def __init__(
        self, raw: Mapping[str, Any], requests: Resources, constraints: PodConstraints, label_class: int = 0
    ) -> None:
        metadata = raw.get("metadata") or {}
        spec = raw.get("spec") or {}
        status = raw.get("status") or {}
        self.raw = raw
        self.namespace = str(metadata.get("namespace") or "default")
        name = str(metadata.get("name") or metadata.get("generateName") or "")
        self.ref = PodRef(self.namespace, name, str(metadata.get("uid") or f"{self.namespace}/{name}"))
        self.labels: Mapping[str, str] = metadata.get("labels") or {}
        self.label_class = label_class  # pods with equal namespace and labels share it
        self.created = str(metadata.get("creationTimestamp") or "")
        self.requests = requests
        self.constraints = constraints
        self.node_name = str(spec.get("nodeName") or "")
        self.host_ports = host_ports(spec) if _has_host_ports(spec) else ()
        self.claims = claim_names(spec) if spec.get("volumes") else ()
        owners = metadata.get("ownerReferences") or ()
        self.owner_kind = next((str(o.get("kind")) for o in owners if o.get("controller")), "")
        # Finished pods and pods being deleted hold no resources and count for no topology.
        self.terminal = status.get("phase") in ("Succeeded", "Failed") or bool(metadata.get("deletionTimestamp"))
        self.virtual = is_virtual_pod(raw)  # a CapacityBuffer's: scheduled after every real pod


def _has_host_ports(spec: Mapping[str, Any]) -> bool:
    return any(c.get("ports") for c in spec.get("containers") or ()) or bool(spec.get("initContainers"))


class PodParser:
    """Parses pods, memoising requests and constraints by the text of the fields they come from."""

    def __init__(self) -> None:
        self._requests: dict[str, Resources] = {}
        self._constraints: dict[str, PodConstraints] = {}
        self._label_classes: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}

    def parse(self, raw: Mapping[str, Any]) -> PodInfo:
        """Raises PodSpecError with a specific message when the pod cannot be interpreted."""
        try:
            spec = raw.get("spec") or {}
            pod = PodInfo(raw, self._requests_of(spec), self._constraints_of(spec))
            key = (pod.namespace, tuple(sorted(pod.labels.items())))
            pod.label_class = self._label_classes.setdefault(key, len(self._label_classes))
            return pod
        except PARSE_ERRORS as error:
            name = (raw.get("metadata") or {}).get("name") if isinstance(raw, Mapping) else None
            raise PodSpecError(f"pod {name!r} has an invalid spec: {error}") from error

    def parse_many(
        self, pods: Iterable[Mapping[str, Any]]
    ) -> tuple[list[PodInfo], list[tuple[Mapping[str, Any], str]]]:
        """Parsed pods, and the pods that failed with their messages."""
        parsed, failed = [], []
        for raw in pods:
            try:
                parsed.append(self.parse(raw))
            except PodSpecError as error:
                failed.append((raw, str(error)))
        return parsed, failed

    def _requests_of(self, spec: Mapping[str, Any]) -> Resources:
        key = repr(
            (
                [c.get("resources") for c in spec.get("containers") or ()],
                [(c.get("resources"), c.get("restartPolicy")) for c in spec.get("initContainers") or ()],
                spec.get("overhead"),
                spec.get("resources"),
            )
        )
        cached = self._requests.get(key)
        if cached is None:
            cached = self._requests[key] = pod_requests(spec)
        return cached

    def _constraints_of(self, spec: Mapping[str, Any]) -> PodConstraints:
        key = repr(
            (
                spec.get("nodeSelector"),
                spec.get("affinity"),
                spec.get("tolerations"),
                spec.get("topologySpreadConstraints"),
            )
        )
        cached = self._constraints.get(key)
        if cached is None:
            cached = self._constraints[key] = parse_constraints(spec)
        return cached
