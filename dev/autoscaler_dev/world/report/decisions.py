"""The decision log: every decision the functions logged, as a sentence a person can read — which pods went to
which NodePool on which instance types at what price and why the others were not chosen, each disruption command
with its reason and predicted saving, each interruption action with its latency, each garbage-collection removal
with its reason. Rows are grouped in sections (provisioning, disruption, interruption, garbage collection)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from autoscaler_dev.world.report.summary import duration, number
from autoscaler_dev.world.timeline import Decision

PROVISIONING, DISRUPTION, INTERRUPTION, COLLECTION, OTHER = (
    "Provisioning",
    "Disruption",
    "Interruption",
    "Garbage collection",
    "Other decisions",
)
_SECTION = {
    "provisioned": PROVISIONING,
    "launched": PROVISIONING,
    "launch-failed": PROVISIONING,
    "disrupting": DISRUPTION,
    "not-disrupted": DISRUPTION,
    "expired": DISRUPTION,
    "interruption": INTERRUPTION,
    "collected": COLLECTION,
}
SHOWN_OPTIONS = 4  # instance types named per decision; the rest are counted


class Row(NamedTuple):
    t: float
    what: str
    subject: str
    why: str


def _price(value: Any) -> str:
    return f"${number(float(value))}/h" if isinstance(value, int | float) else "price unknown"


def _options(options: Sequence[Sequence[Any]]) -> str:
    named = ", ".join(f"{name} {_price(price)}" for name, price in options[:SHOWN_OPTIONS])
    rest = len(options) - SHOWN_OPTIONS
    return named + (f" and {rest} more" if rest > 0 else "")


def _pods(fields: Mapping[str, Any]) -> str:
    names = [str(n) for n in fields.get("pod_names") or ()]
    count = int(fields.get("pods") or len(names))
    shown = ", ".join(names[:3]) + (", ..." if count > 3 else "")
    return f"{count} pod{'s' if count != 1 else ''} ({shown})" if names else f"{count} pods"


def _provisioned(d: Decision, launched: Decision | None, pools: Decision | None) -> Row:
    f = d.fields
    options = [tuple(o) for o in f.get("instance_types") or ()]
    pool = str(f.get("nodepool", ""))
    offered = (pools.fields.get("offered") or {}).get(pool) if pools else None
    parts = [f"{_pods(f)} on NodePool {pool}, requests {_text(f.get('requests'))}."]
    fit = f"{len(options)} instance types fit" + (f" of the {offered} it offers" if offered else "")
    if offered and offered > len(options):
        fit += f" ({offered - len(options)} too small or ruled out by the requirements)"
    parts.append(f"{fit}, cheapest first: {_options(options)}.")
    zones, capacity = _text(f.get("zones")) or "any", _text(f.get("capacity_types")) or "any"
    parts.append(f"Zones {zones}; capacity {capacity}.")
    if launched is not None:
        lf = launched.fields
        chosen = str(lf.get("instance_type"))
        listed = {str(n): p for n, p in options}.get(chosen)
        strategy = _strategy(str(lf.get("capacity_type")), bool(lf.get("price_overlaid")))
        parts.append(
            f"Launched {chosen} ({lf.get('capacity_type')}, {lf.get('zone')}), listed at {_price(listed)}:"
            f" CreateFleet's {strategy} pick among these options."
        )
    skipped = (pools.fields.get("skipped") or {}) if pools else {}
    if skipped:
        parts.append("Not taking part: " + "; ".join(f"NodePool {n} {why}" for n, why in skipped.items()) + ".")
    return Row(d.t, "provisioned", str(f.get("nodeclaim", "")), " ".join(parts))


def _strategy(capacity_type: str, price_overlaid: bool) -> str:
    """The allocation strategy the launcher asked CreateFleet for (prioritized: by a NodeOverlay's prices)."""
    if price_overlaid:
        return "capacity-optimized-prioritized" if capacity_type == "spot" else "prioritized (by overlaid price)"
    return "price-capacity-optimized" if capacity_type == "spot" else "lowest-price"


def _disrupting(d: Decision) -> Row:
    f = d.fields
    nodes = ", ".join(
        f"{c.get('node')} ({c.get('instance_type')} {c.get('capacity_type')}, {_price(c.get('price'))},"
        f" {c.get('pods')} pods)"
        for c in f.get("candidates") or ()
    )
    text = f"{f.get('reason')}: {f.get('action')} {nodes}"
    replacements = f.get("replacements") or []
    if replacements:
        text += f" with {len(replacements)} new node(s): " + "; ".join(_options(r) for r in replacements)
    saving = f.get("savings")
    if isinstance(saving, int | float):
        text += f". Predicted saving {_price(saving)}"
    subject = ", ".join(str(c.get("nodeclaim")) for c in f.get("candidates") or ())
    return Row(d.t, f"disrupting ({f.get('consolidation_type') or 'drift'})", subject, text + ".")


def _not_disrupted(d: Decision) -> Row:
    reasons = Counter(str(why) for why in (d.fields.get("blocked") or {}).values())
    text = "; ".join(f"{count} x {why}" for why, count in reasons.most_common())
    return Row(d.t, "not disrupted", f"{sum(reasons.values())} nodes", text)


def _interruption(d: Decision) -> Row:
    f = d.fields
    latency = f.get("latency_s")
    after = f", {duration(float(latency))} after the warning" if isinstance(latency, int | float) else ""
    return Row(
        d.t,
        f"interruption ({f.get('kind')})",
        str(f.get("node") or f.get("instance_id")),
        f"{f.get('action')} NodeClaim {f.get('nodeclaim')} (instance {f.get('instance_id')}){after}.",
    )


def _text(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value))
    return str(value or "")


def rows(decisions: Sequence[Decision]) -> dict[str, list[Row]]:
    """The decision log by section, in time order within each; a launch is told with the NodeClaim it was
    provisioned for (a replacement's launch, provisioned by disruption, stands alone)."""
    launches = {str(d.fields.get("nodeclaim")): d for d in decisions if d.kind == "launched"}
    told: set[str] = set()
    sections: dict[str, list[Row]] = {}
    pools: Decision | None = None
    for d in decisions:
        section = _SECTION.get(d.kind, OTHER)
        row: Row | None
        if d.kind == "nodepools":
            pools, row = d, None
        elif d.kind == "provisioned":
            name = str(d.fields.get("nodeclaim"))
            told.add(name)
            row = _provisioned(d, launches.get(name), pools)
        elif d.kind == "launched":
            f = d.fields
            where = f"{f.get('instance_type')} ({f.get('capacity_type')}, {f.get('zone')})"
            row = None if str(f.get("nodeclaim")) in told else Row(d.t, "launched", str(f.get("nodeclaim")), where)
        elif d.kind == "disrupting":
            row = _disrupting(d)
        elif d.kind == "not-disrupted":
            row = _not_disrupted(d)
        elif d.kind == "interruption":
            row = _interruption(d)
        elif d.kind == "collected":
            f = d.fields
            row = Row(d.t, f"collected {f.get('resource')}", str(f.get("collected")), _text(f.get("reason")))
        elif d.kind == "expired":
            row = Row(d.t, "expired", _text(d.fields.get("nodeclaims")), "past the NodePool's expireAfter")
        else:
            row = Row(d.t, d.kind, d.function, d.message)
        if row is not None:
            sections.setdefault(section, []).append(row)
    order = (PROVISIONING, DISRUPTION, INTERRUPTION, COLLECTION, OTHER)
    return {s: sections[s] for s in order if s in sections}


def fates(decisions: Sequence[Decision]) -> dict[str, str]:
    """NodeClaim -> the decision that ended it (interrupted, disrupted with its reason, collected)."""
    ended: dict[str, str] = {}
    for d in decisions:
        f = d.fields
        if d.kind == "interruption":
            ended.setdefault(str(f.get("nodeclaim")), f"interrupted ({f.get('kind')})")
        elif d.kind == "disrupting":
            for c in f.get("candidates") or ():
                ended.setdefault(str(c.get("nodeclaim")), f"{f.get('reason')}: {f.get('action')}")
        elif d.kind == "collected" and f.get("resource") == "NodeClaim":
            ended.setdefault(str(f.get("collected")), f"collected: {f.get('reason')}")
        elif d.kind == "launch-failed":
            ended.setdefault(str(f.get("nodeclaim")), f"launch failed: {f.get('reason')}")
        elif d.kind == "expired":
            for name in f.get("nodeclaims") or ():
                ended.setdefault(str(name), "expired")
    return ended
