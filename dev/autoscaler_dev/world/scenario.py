"""Simulation scenarios (``events/scenarios/*.yaml``): the cluster to start from, what happens when, and what the
run must show. Validated on load, with the file and field named in every error.

    name: spot-storm
    description: 30% of spot nodes interrupted at once
    duration: 30m          # virtual time
    settle: 20m            # then, while a pod is still pending, at most this much longer (default 0)
    boot: 60s              # instance launched -> Node Ready
    seed: 7                # which nodes a storm picks
    manifests: [...]       # NodePools, EC2NodeClasses, PDBs, DaemonSets: applied at the start
    workloads: [...]       # Deployments (StatefulSets, ReplicaSets, Jobs): API objects their controllers keep
    actions:
      - {at: 10m, interrupt-spot: {fraction: 0.3}}
    expect:
      pods_running: pods_total       # another summary key, a number, or "<op> <number or key>"
      nodes_by_nodepool.static: 2    # one entry of a mapping of counts
      interruptions_handled: ">= 1"
    instanceTypes: [m5.large, ...]  # what the catalogue offers (default: DEFAULT_INSTANCE_TYPES)
    capacity: {spotVcpus: 640, pools: [...]}  # what EC2's pools hold (``ec2_market``; default SCENARIO_CAPACITY)
    featureGates: CapacityBuffer=true  # the functions' FEATURE_GATES (Karpenter's defaults when left out)
    reservations: [{instanceType: m5.large, zone: us-west-2a, count: 3, tags: {team: a}}]  # capacity reservations

Actions: ``scale`` (workload or nodepool, replicas: a NodePool's through its ``scale`` subresource over HTTP, as
``kubectl scale nodepool`` does), ``interrupt-spot`` (fraction), ``publish-ami`` (a new EKS-optimized AMI
behind every alias parameter), ``leak-instance`` (instanceType, nodePool, nodeClass), ``send-malformed`` (the
malformed interruption samples and a garbage cluster event), ``patch`` (kind, name, merge: a live edit),
``forwarder`` (up: false stops forwarding cluster events; the sweeps alone must then converge), ``node-condition``
(nodes, type, status, nodePool: kubelets report a Node condition, ``node_health``), ``zonal-shift`` (zone: a zone
name; expiresIn, default 1h; autoshift: true for one AWS starts) and ``zonal-shift-cancel`` (zone) on the cluster in
ARC (``arc_zonal_shift``; the functions heed it with ``enableZonalShift: true``), and ``kube-outage`` (for: a
duration: the Kubernetes API server answers every request 503 and cuts its watches, then comes back),
``end-reservation`` (tags: the reservations so tagged are cancelled; EC2 keeps their instances running on-demand) and
``interrupt-reservation`` (tags: the owner of those interruptible reservations reclaims them: a two-minute warning,
then EC2 terminates their instances).

``featureGates: "NodeRepair=true"`` sets Karpenter's feature gates for the run, over ``FEATURE_GATES``.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from autoscaler.apis.duration import parse_duration
from autoscaler_dev.world.ec2_market import SCENARIO_CAPACITY, CapacitySettings
from autoscaler_dev.world.faults import FaultRates

ActionKind = Literal[
    "scale",
    "interrupt-spot",
    "publish-ami",
    "leak-instance",
    "send-malformed",
    "patch",
    "forwarder",
    "node-condition",
    "zonal-shift",
    "zonal-shift-cancel",
    "kube-outage",
    "end-reservation",
    "interrupt-reservation",
]
_COMPARISON = re.compile(r"^\s*(>=|<=|==|>|<)\s*(\S+)\s*$")
_OPERATORS: Mapping[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    ">": operator.gt,
    "<": operator.lt,
}


class ScenarioError(ValueError):
    """A scenario file that cannot be run: which file, which field, why."""


def _seconds(value: Any) -> float:
    if isinstance(value, int | float):
        return float(value)
    return parse_duration(str(value)).total_seconds()


class Action(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    at: float
    kind: ActionKind
    args: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Action:
        kinds = [k for k in raw if k != "at"]
        if len(kinds) != 1:
            raise ValueError(f"an action is 'at' plus exactly one of {', '.join(get_args(ActionKind))}, got {kinds}")
        kind = kinds[0]
        args = raw[kind] if raw[kind] is not None else {}
        if not isinstance(args, Mapping):
            raise ValueError(f"action {kind!r} takes a mapping of arguments")
        return cls(at=_seconds(raw.get("at", 0)), kind=kind, args=dict(args))


# The instance types a scenario's NodePools may launch unless it names others: four sizes of current general
# purpose, compute and memory families, x86 and Graviton. The whole moto catalogue takes seconds per describe,
# which the provider repeats every few minutes of virtual time.
DEFAULT_INSTANCE_TYPES = tuple(
    f"{family}.{size}"
    for family in ("c5", "m5", "r5", "c6i", "m6i", "r6i", "c6g", "m6g", "r6g")
    for size in ("large", "xlarge", "2xlarge", "4xlarge")
)


class ScenarioReservation(BaseModel):
    """A capacity reservation the account holds from the start (``reservations:``), tagged so classes select it."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    instance_type: str = Field(alias="instanceType")
    zone: str
    count: int = Field(ge=0)
    match_criteria: Literal["open", "targeted"] = Field(default="targeted", alias="instanceMatchCriteria")
    tags: dict[str, str] = Field(default_factory=dict)
    kind: Literal["default", "capacity-block"] = Field(default="default", alias="reservationType")
    ends_in: float | None = Field(default=None, alias="endsIn")  # seconds after the start (a capacity block's end)
    interruptible: bool = False  # its owner may reclaim it (``interrupt-reservation``)

    @field_validator("ends_in", mode="before")
    @classmethod
    def _ends_in(cls, value: Any) -> float | None:
        return None if value is None else _seconds(value)


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str
    description: str = ""
    duration: float
    settle: float = 0.0
    boot: float = 60.0
    tick: float = 10.0
    seed: int = 0
    instance_types: list[str] = Field(default_factory=lambda: list(DEFAULT_INSTANCE_TYPES), alias="instanceTypes")
    manifests: list[dict[str, Any]] = Field(default_factory=list)
    workloads: list[dict[str, Any]] = Field(default_factory=list)
    actions: list[Action] = Field(default_factory=list)
    expect: dict[str, Any] = Field(default_factory=dict)
    faults: FaultRates = Field(default_factory=FaultRates)
    capacity: CapacitySettings = Field(default_factory=SCENARIO_CAPACITY.model_copy)
    # Karpenter's FEATURE_GATES for the functions, e.g. "CapacityBuffer=true" (gates not named keep their defaults).
    feature_gates: str = Field(default="", alias="featureGates")
    # Karpenter's enableZonalShift setting for the functions (ENABLE_ZONAL_SHIFT)
    enable_zonal_shift: bool = Field(default=False, alias="enableZonalShift")
    reservations: list[ScenarioReservation] = Field(default_factory=list)

    @field_validator("duration", "settle", "boot", "tick", mode="before")
    @classmethod
    def _durations(cls, value: Any) -> float:
        return _seconds(value)

    @field_validator("capacity", mode="before")
    @classmethod
    def _capacity(cls, value: Any) -> Any:
        """What a scenario leaves out of ``capacity`` keeps the scenario defaults (not unlimited pools)."""
        if isinstance(value, Mapping):
            return {**SCENARIO_CAPACITY.model_dump(by_alias=True), **value}
        return value

    @field_validator("actions", mode="before")
    @classmethod
    def _actions(cls, value: Any) -> list[Action]:
        return [a if isinstance(a, Action) else Action.parse(a) for a in value or ()]

    def first(self, seconds: float) -> Scenario:
        """The scenario's first ``seconds`` of virtual time: the actions due by then, the same expectations."""
        actions = [a for a in self.actions if a.at < seconds]
        return self.model_copy(update={"duration": min(self.duration, seconds), "actions": actions})

    def with_consolidation_policy(self, policy: str) -> Scenario:
        """The scenario with every NodePool's ``consolidationPolicy`` set to ``policy``."""

        def changed(manifest: dict[str, Any]) -> dict[str, Any]:
            if manifest.get("kind") != "NodePool":
                return manifest
            spec = manifest.get("spec") or {}
            disruption = {**(spec.get("disruption") or {}), "consolidationPolicy": policy}
            return {**manifest, "spec": {**spec, "disruption": disruption}}

        return self.model_copy(update={"manifests": [changed(m) for m in self.manifests]})

    @classmethod
    def load(cls, path: Path) -> Scenario:
        try:
            raw = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as error:
            raise ScenarioError(f"{path}: {error}") from error
        if not isinstance(raw, Mapping):
            raise ScenarioError(f"{path}: a scenario is a mapping with name, duration, manifests, ...")
        try:
            return cls.model_validate(raw)
        except (ValidationError, ValueError) as error:
            raise ScenarioError(f"{path}: {error}") from error


def check(expected: Any, key: str, summary: Mapping[str, Any]) -> bool:
    """Whether ``summary[key]`` meets ``expected``: a number or text (equal), another key's value, or
    ``"<op> <number or key>"``. ``key.entry`` reads one entry of a mapping of counts (``nodes_by_nodepool.static``,
    ``nodes_by_type.m5.large/spot``: summary keys have no dots), 0 when the mapping lacks it."""
    actual = _value(key, summary)
    op, wanted = operator.eq, expected
    if isinstance(expected, str):
        match = _COMPARISON.match(expected)
        if match:
            op, wanted = _OPERATORS[match.group(1)], match.group(2)
        if isinstance(wanted, str):
            wanted = summary.get(wanted, _number(wanted))
    try:
        return bool(op(actual, wanted))
    except TypeError:
        return False


def _value(key: str, summary: Mapping[str, Any]) -> Any:
    head, dot, entry = key.partition(".")
    if key in summary or not dot:
        return summary.get(key)
    counts = summary.get(head)
    return counts.get(entry, 0) if isinstance(counts, Mapping) else None


def _number(text: str) -> Any:
    try:
        return float(text)
    except ValueError:
        return text
