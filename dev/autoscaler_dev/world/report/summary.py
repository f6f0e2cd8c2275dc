"""The run's summary for people: each key with a human label, its value with its unit, in groups (pods; nodes and
cost; disruption; interruption; safety; the run itself).

Keys this module does not know (other parts of the world add their own) are never an error: their group and unit
are guessed from their name (``iam_denied`` goes to safety, ``churn_*`` to disruption, ``*_s`` are seconds) and
their label is the key made readable.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

PODS, NODES, DISRUPTION, INTERRUPTION, SAFETY, RUN = (
    "Pods",
    "Nodes and cost",
    "Disruption",
    "Interruption",
    "Safety",
    "Run",
)
GROUPS = (PODS, NODES, DISRUPTION, INTERRUPTION, SAFETY, RUN)


class Entry(NamedTuple):
    group: str
    label: str
    unit: str = ""  # "s", "$/h", "%", "" (a count or a name)


KNOWN: dict[str, Entry] = {
    "scenario": Entry(RUN, "Scenario"),
    "simulated_seconds": Entry(RUN, "Simulated time", "s"),
    "invocations": Entry(RUN, "Invocations per function"),
    "faults_injected": Entry(RUN, "Faults injected"),
    "invocations_died": Entry(RUN, "Invocations cut short by faults"),
    "malformed_sent": Entry(RUN, "Malformed messages sent"),
    "pods_total": Entry(PODS, "Pods at the end"),
    "pods_running": Entry(PODS, "Pods running"),
    "pods_pending": Entry(PODS, "Pods pending"),
    "all_running_at_s": Entry(PODS, "Every pod running since", "s"),
    "pod_pending_p50_s": Entry(PODS, "Pod pending time, median", "s"),
    "pod_pending_p90_s": Entry(PODS, "Pod pending time, p90", "s"),
    "pod_pending_p99_s": Entry(PODS, "Pod pending time, p99", "s"),
    "pod_pending_max_s": Entry(PODS, "Pod pending time, longest", "s"),
    "max_zone_skew": Entry(PODS, "Largest zone skew of a spread workload (pods)"),
    "pods_started_without_launch": Entry(PODS, "Pods that started on a node Ready before them (no launch waited)"),
    "buffer_headroom_min": Entry(PODS, "CapacityBuffer headroom, least (chunks on Ready nodes)"),
    "buffer_headroom_final": Entry(PODS, "CapacityBuffer headroom at the end (chunks)"),
    "nodes": Entry(NODES, "Nodes at the end"),
    "nodes_peak": Entry(NODES, "Nodes at most"),
    "nodes_by_type": Entry(NODES, "Nodes by instance type / capacity type"),
    "nodes_by_nodepool": Entry(NODES, "Nodes by NodePool at the end"),
    "nodes_peak_by_nodepool": Entry(NODES, "Nodes by NodePool at most"),
    "nodepool_events": Entry(NODES, "Events on NodePools by reason"),
    "nodes_by_capacity_type": Entry(NODES, "Nodes by capacity type at the end"),
    "nodes_peak_by_capacity_type": Entry(NODES, "Nodes by capacity type at most"),
    "launch_capacity_errors": Entry(NODES, "NodeClaims deleted for lack of capacity at launch"),
    "cost_per_hour": Entry(NODES, "Cost at the end", "$/h"),
    "cost_lower_bound": Entry(NODES, "Cost lower bound for the pods' requests", "$/h"),
    "reservations_cost_per_hour": Entry(NODES, "Capacity reservations, paid whether used or not", "$/h"),
    "cpu_utilization": Entry(NODES, "CPU requested / allocatable", "%"),
    "memory_utilization": Entry(NODES, "Memory requested / allocatable", "%"),
    "zones": Entry(NODES, "Zones with nodes"),
    "images_in_use": Entry(NODES, "AMIs in use"),
    "drifted_replaced": Entry(DISRUPTION, "NodeClaims disrupted as drifted"),
    "consolidated": Entry(DISRUPTION, "NodeClaims consolidated (empty or underutilized)"),
    "launches_per_hour": Entry(DISRUPTION, "NodeClaims launched per hour"),
    "evictions_per_hour": Entry(DISRUPTION, "Pods evicted per hour, by reason"),
    "interrupted": Entry(INTERRUPTION, "Spot interruption warnings sent"),
    "spot_interruptions_handled": Entry(INTERRUPTION, "Spot warnings acted on"),
    "interruptions_handled": Entry(INTERRUPTION, "Interruption messages acted on (all kinds)"),
    "max_cordon_seconds": Entry(INTERRUPTION, "Longest warning-to-cordon time", "s"),
    "skipped_events": Entry(SAFETY, "Events skipped and counted"),
    "dead_lettered": Entry(SAFETY, "Messages dead-lettered"),
    "leaked_collected": Entry(SAFETY, "Leaked instances collected"),
    "leaked_at_end": Entry(SAFETY, "Leaked instances at the end"),
    "budget_violations": Entry(SAFETY, "Disruption budget violations"),
    "pdb_violations": Entry(SAFETY, "PodDisruptionBudget violations"),
    "function_errors": Entry(SAFETY, "Function errors"),
    "zonal_shift_read_errors": Entry(SAFETY, "ARC reads that failed (zonal shift)"),
    "function_errors_in_kube_outage": Entry(SAFETY, "Function errors while the Kubernetes API was down"),
    "invariants": Entry(SAFETY, "Invariant violations by invariant"),
    "invariant_violations": Entry(SAFETY, "Invariant violations"),
}

# Name fragments -> group, for keys not in KNOWN; the first that matches wins.
_GUESSES = (
    (("denied", "throttled", "violation", "invariant", "error", "unsafe", "leak", "orphan", "dead"), SAFETY),
    (("interrupt", "cordon", "rebalance", "spot_warning"), INTERRUPTION),
    (("drift", "consolidat", "disrupt", "churn", "saving", "budget", "expire", "replace"), DISRUPTION),
    (("node", "cost", "price", "zone", "instance", "utilization", "capacity", "ami", "image"), NODES),
    (("pod", "pending", "running", "schedul"), PODS),
)
_WORDS = {
    "iam": "IAM",
    "rbac": "RBAC",
    "ec2": "EC2",
    "kube": "Kubernetes",
    "pdb": "PDB",
    "ami": "AMI",
    "cpu": "CPU",
    "s": "",
    "p50": "p50",
    "p90": "p90",
    "p99": "p99",
    "usd": "USD",
}


def entry(key: str) -> Entry:
    """The group, label and unit of a summary key, guessed for a key nobody told this module about."""
    known = KNOWN.get(key)
    if known is not None:
        return known
    group = next((g for fragments, g in _GUESSES if any(f in key for f in fragments)), RUN)
    words = [_WORDS.get(w, w) for w in key.split("_")]
    label = " ".join(w for w in words if w)
    unit = ""
    if key.endswith(("_s", "_seconds")):
        unit = "s"
    elif key.endswith(("_per_hour", "_usd_h")) or key.startswith("cost"):
        unit = "$/h"
    elif key.endswith(("_utilization", "_ratio", "_fraction")):
        unit = "%"
    return Entry(group, label[:1].upper() + label[1:], unit)


def duration(seconds: float) -> str:
    """Seconds as ``1m 05s`` (``42.5 s`` below a minute); infinity as ``never``."""
    if math.isinf(seconds):
        return "never"
    if abs(seconds) < 60:
        return f"{seconds:.1f} s" if not float(seconds).is_integer() else f"{int(seconds)} s"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h {minutes:02d}m {secs:02d}s" if hours else f"{minutes}m {secs:02d}s"


def number(value: float) -> str:
    """Floats with 2 decimals when large, 4 when small, so cents and fractions both stay readable."""
    if math.isnan(value) or math.isinf(value):
        return str(value)
    return f"{value:.2f}" if abs(value) >= 1 or value == 0 else f"{value:.4f}"


def value_text(value: Any, unit: str = "") -> str:
    """One summary value as text, in its unit; ``-`` when there is none."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={value_text(v, unit)}" for k, v in value.items()) or "none"
    if isinstance(value, list | tuple):
        return ", ".join(value_text(v, unit) for v in value) or "none"
    if isinstance(value, int | float):
        if unit == "s":
            return duration(float(value))
        if unit == "$/h":
            return f"${number(float(value))}/h"
        if unit == "%":
            return f"{value * 100:.1f}%"
        return number(value) if isinstance(value, float) else str(value)
    return str(value)


class Row(NamedTuple):
    key: str
    label: str
    text: str


def grouped_summary(summary: Mapping[str, Any]) -> dict[str, list[Row]]:
    """The summary's rows by group, groups in their fixed order (empty ones left out), keys in the summary's."""
    groups: dict[str, list[Row]] = {g: [] for g in GROUPS}
    for key, value in summary.items():
        group, label, unit = entry(str(key))
        groups.setdefault(group, []).append(Row(str(key), label, value_text(value, unit)))
    return {g: rows for g, rows in groups.items() if rows}
