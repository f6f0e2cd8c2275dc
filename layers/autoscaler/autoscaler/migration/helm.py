"""Read a Karpenter v1beta1 Helm values file for what behaves differently once the controller is gone.

Three values matter here: the controller's topology spread (Karpenter v1's chart, like this project's
forwarder, spreads its two replicas across zones with ``DoNotSchedule``; v0.37's chart defaulted to
``ScheduleAnyway``), the drift feature gate (drift is always on in v1) and the other feature gates, which this
stack takes as ``-c featureGates=...`` (docs/helm-values.md maps every other value).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from autoscaler.settings import FeatureGates

# Karpenter v0.37's chart default, which a values file without the key relied on.
CHART_DEFAULT_SPREAD = [
    {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"}
]


def spread_findings(values: Mapping[str, Any]) -> list[str]:
    constraints = values.get("topologySpreadConstraints", CHART_DEFAULT_SPREAD)
    relied_on_default = "topologySpreadConstraints" not in values
    findings = []
    for index, constraint in enumerate(constraints if isinstance(constraints, list) else []):
        if isinstance(constraint, Mapping) and constraint.get("whenUnsatisfiable") == "ScheduleAnyway":
            where = "the chart default" if relied_on_default else f"topologySpreadConstraints[{index}]"
            findings.append(
                f"{where} spreads over {constraint.get('topologyKey', 'a topology')} with ScheduleAnyway; v1 uses "
                "DoNotSchedule (this project's forwarder too: 2 replicas in 2 zones). Run nodes outside Karpenter's "
                "NodePools in at least two zones, or both replicas cannot schedule."
            )
    return findings


def drift_gate_findings(values: Mapping[str, Any]) -> list[str]:
    settings = values.get("settings")
    gates = settings.get("featureGates") if isinstance(settings, Mapping) else None
    if isinstance(gates, Mapping) and gates.get("drift") is False:
        return [
            "settings.featureGates.drift is false: drift cannot be turned off in v1, so nodes whose NodePool or "
            "EC2NodeClass changed since launch will be replaced. Reconcile those specs first, or expect a roll."
        ]
    return []


def feature_gate_findings(values: Mapping[str, Any]) -> list[str]:
    """Each ``settings.featureGates`` value that differs from Karpenter's default, as the context that keeps it."""
    settings = values.get("settings")
    gates = settings.get("featureGates") if isinstance(settings, Mapping) else None
    if not isinstance(gates, Mapping):
        return []
    defaults = FeatureGates()
    chart_key = {_lower_first(FeatureGates.gate_name(f.name)): f.name for f in fields(FeatureGates)}
    findings = []
    for key, value in gates.items():
        if key == "drift":
            continue  # drift_gate_findings
        attribute = chart_key.get(str(key))
        if attribute is None:
            findings.append(f"settings.featureGates.{key} is not a feature gate of Karpenter v1.14.1: it has no effect")
        elif isinstance(value, bool) and value != getattr(defaults, attribute):
            gate = FeatureGates.gate_name(attribute)
            findings.append(
                f"settings.featureGates.{key} is {str(value).lower()} (the default is {str(not value).lower()}): "
                f"deploy with -c featureGates={gate}={str(value).lower()} to keep it"
            )
    return findings


def _lower_first(name: str) -> str:
    """``SpotToSpotConsolidation`` -> ``spotToSpotConsolidation``, as the chart's values spell a gate."""
    return name[:1].lower() + name[1:]
