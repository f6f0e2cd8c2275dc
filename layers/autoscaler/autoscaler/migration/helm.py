"""Read a Karpenter v1beta1 Helm values file for what behaves differently once the controller is gone.

Only two values matter here: the controller's topology spread (Karpenter v1's chart, like this project's
forwarder, spreads its two replicas across zones with ``DoNotSchedule``; v0.37's chart defaulted to
``ScheduleAnyway``) and the drift feature gate (drift is always on in v1).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
