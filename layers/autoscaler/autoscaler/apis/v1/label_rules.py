"""The label-domain rules of Karpenter v1.14.1's CRDs, over one label key or every key of a label map.

Since v1.1 the CRDs restrict only Karpenter's own domains (``karpenter.sh``, ``karpenter.k8s.aws``) and the
hostname label; ``kubernetes.io`` and ``k8s.io`` keys are no longer checked at admission. Which
``karpenter.k8s.aws`` labels a key may be differs by where it is written (see ``labels.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from autoscaler.apis.rules import Rule
from autoscaler.apis.v1 import labels as wk

Subject = Literal["key", "keys"]


def label_domain_rules(
    subject: Subject, aws_allowed: tuple[str, ...], *, nodepool_restricted: bool
) -> tuple[Rule, ...]:
    """The rules for one key (``"key"``: CEL ``self`` is the key) or every key of a map (``"keys"``).

    ``nodepool_restricted``: the key may not be ``karpenter.sh/nodepool`` (NodePools; a NodeClaim or NodeOverlay
    may name the pool)."""

    def every(check: Callable[[str], bool]) -> Callable[[Any], bool]:
        return check if subject == "key" else (lambda keys: all(check(k) for k in keys))

    def cel(expression: str) -> str:
        if subject == "key":
            return expression.replace("KEY", "self")
        return f"self.all(x, {expression.replace('KEY', 'x')})"

    domain = wk.label_domain
    aws_listed = ", ".join(f'"{k}"' for k in aws_allowed)
    find = 'KEY.find("^([^/]+)")'
    karpenter_allowed = (wk.LABEL_CAPACITY_TYPE, wk.LABEL_NODEPOOL)
    nodepool_rule = Rule(
        'label "karpenter.sh/nodepool" is restricted',
        cel(f'KEY != "{wk.LABEL_NODEPOOL}"'),
        every(lambda k: k != wk.LABEL_NODEPOOL),
    )
    return (
        Rule(
            'label domain "karpenter.sh" is restricted',
            cel(f'KEY in ["{wk.LABEL_CAPACITY_TYPE}", "{wk.LABEL_NODEPOOL}"] || !{find}.endsWith("karpenter.sh")'),
            every(lambda k: k in karpenter_allowed or not domain(k).endswith("karpenter.sh")),
        ),
        *((nodepool_rule,) if nodepool_restricted else ()),
        Rule(
            'label "kubernetes.io/hostname" is restricted',
            cel(f'KEY != "{wk.LABEL_HOSTNAME}"'),
            every(lambda k: k != wk.LABEL_HOSTNAME),
        ),
        Rule(
            'label domain "karpenter.k8s.aws" is restricted',
            cel(f'KEY in [{aws_listed}] || !{find}.endsWith("karpenter.k8s.aws")'),
            every(lambda k: k in aws_allowed or not domain(k).endswith("karpenter.k8s.aws")),
        ),
    )


NODEPOOL_REQUIREMENT_KEY_RULES = label_domain_rules("key", wk.REQUIREMENT_AWS_LABELS, nodepool_restricted=True)
NODECLAIM_REQUIREMENT_KEY_RULES = label_domain_rules("key", wk.REQUIREMENT_AWS_LABELS, nodepool_restricted=False)
OVERLAY_REQUIREMENT_KEY_RULES = label_domain_rules("key", wk.OVERLAY_AWS_LABELS, nodepool_restricted=False)
TEMPLATE_LABEL_RULES = label_domain_rules("keys", wk.TEMPLATE_LABEL_AWS_LABELS, nodepool_restricted=True)
