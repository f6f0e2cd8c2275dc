"""Karpenter v1.14.1's runtime validation: what its controller checks after the API server stored the object.

A NodePool that fails it keeps ``ValidationSucceeded=False`` (reason ``NodePoolValidationFailed``, the problems
joined by ``; `` as the message) and is not Ready, so it launches nothing; a NodeOverlay likewise. The checks
are label and taint key syntax, label values, restricted label domains, duplicate taints, values a well-known
label can never take, and a NodeOverlay adding capacity of a resource every node reports. Checks that restate
an admission rule (operators, ``In`` without values, ``minValues``, integer operators) are left to admission.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from autoscaler.apis.rules import RuntimeRule
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.common import is_label_value

_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class _Taint(Protocol):
    key: str
    value: str | None
    effect: str


class _Requirement(Protocol):
    key: str
    operator: str
    values: list[str] | None


def qualified_name_problem(text: str) -> str | None:
    """Why ``text`` is not a qualified name (``[prefix/]name``), or None when it is one."""
    prefix, slash, name = text.rpartition("/")
    if "/" in prefix:
        return "it may contain at most one '/'"
    if slash and not prefix:
        return "the prefix before '/' may not be empty"
    if slash and (len(prefix) > 253 or not _SUBDOMAIN.match(prefix)):
        return "its prefix must be a lowercase DNS subdomain of at most 253 characters"
    if not name:
        return "its name may not be empty"
    if len(name) > 63:
        return "its name may have at most 63 characters"
    if not _NAME.match(name):
        return "its name must be letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
    return None


def restricted_label_problem(key: str) -> str | None:
    """Why Karpenter does not let a NodePool use label ``key``, or None: a key in its domains must be well known."""
    if key in wk.API_WELL_KNOWN_LABELS:
        return None
    domain = wk.label_domain(key)
    if any(domain == d or domain.endswith("." + d) for d in wk.API_RESTRICTED_LABEL_DOMAINS):
        return f'label "{key}" is in a domain Karpenter reserves and is not one of its well-known labels'
    if key == wk.LABEL_HOSTNAME:
        return f'label "{key}" is reserved: it names the node'
    return None


def label_problems(labels: Mapping[str, str]) -> list[str]:
    problems = []
    for key in sorted(labels):
        if (reason := qualified_name_problem(key)) is not None:
            problems.append(f'labels: key "{key}" is not a qualified name: {reason}')
        if not is_label_value(labels[key]):
            problems.append(f'labels["{key}"]: "{labels[key]}" is not a valid label value')
        if (reason := restricted_label_problem(key)) is not None:
            problems.append(f"labels: {reason}")
    return problems


def taint_problems(taints: Sequence[_Taint], startup_taints: Sequence[_Taint]) -> list[str]:
    """Key and value syntax, and no key and effect twice across both lists."""
    problems, seen = [], set()
    for field, group in (("taints", taints), ("startupTaints", startup_taints)):
        for taint in group:
            if (reason := qualified_name_problem(taint.key)) is not None:
                problems.append(f'{field}: key "{taint.key}" is not a qualified name: {reason}')
            if taint.value and (reason := qualified_name_problem(taint.value)) is not None:
                problems.append(
                    f'{field}: value "{taint.value}" of key "{taint.key}" is not a qualified name: {reason}'
                )
            if (taint.key, taint.effect) in seen:
                problems.append(
                    f"{field}: taint {taint.key}:{taint.effect} is repeated (a key and effect may appear once)"
                )
            seen.add((taint.key, taint.effect))
    return problems


def requirement_problems(requirement: _Requirement, min_values: int | None = None) -> list[str]:
    """A requirement's key (as Karpenter normalizes deprecated labels), its values, and whether a well-known label
    can take any of them."""
    key = wk.normalize_label(requirement.key)
    problems = []
    if (reason := restricted_label_problem(key)) is not None:
        problems.append(f"requirements: {reason}")
    if (reason := qualified_name_problem(key)) is not None:
        problems.append(f'requirements: key "{key}" is not a qualified name: {reason}')
    values = requirement.values or []
    problems += [
        f'requirements: "{v}" for key "{key}" is not a valid label value' for v in values if not is_label_value(v)
    ]
    known = wk.WELL_KNOWN_VALUES.get(key)
    if known is not None and requirement.operator == "In":
        valid = [v for v in values if v in known]
        expected = ", ".join(sorted(known))
        if not valid:
            problems.append(f'requirements: key "{key}" can only be one of {expected}; none of {values} is')
        elif min_values is not None and len(valid) < min_values:
            problems.append(
                f'requirements: key "{key}" needs {min_values} values among {expected}, has {len(valid)} of them'
            )
    return problems


def _template_problems(template: Any) -> list[str]:
    spec = template.spec
    labels = template.metadata.labels if template.metadata is not None else None
    problems = label_problems(labels or {})
    problems += taint_problems(spec.taints or [], spec.startup_taints or [])
    for requirement in spec.requirements:
        problems += requirement_problems(requirement, requirement.min_values)
    return problems


def _overlay_problems(spec: Any) -> list[str]:
    problems = [p for requirement in spec.requirements for p in requirement_problems(requirement)]
    problems += [
        f"capacity: {name} is a resource every node reports; an overlay may only add extended resources"
        for name in sorted(spec.capacity or {})
        if name in wk.API_WELL_KNOWN_RESOURCES
    ]
    return problems


NODEPOOL_TEMPLATE_RULES = (RuntimeRule("NodePool runtime validation", _template_problems),)
NODEOVERLAY_SPEC_RULES = (RuntimeRule("NodeOverlay runtime validation", _overlay_problems),)


def joined(problems: Iterable[str]) -> str:
    """The problems as one condition message, as Karpenter joins its errors."""
    return "; ".join(problems)
