"""One topology constraint shared by many pods: counts of selected pods per domain, and the domains a
pod may use next.

A spread constraint, a pod affinity term or a pod anti-affinity term is a :class:`TopologyGroup`;
pods of one Deployment share the group, so 1,000 replicas with self anti-affinity are one group.
Ties between equally good domains go to the smallest domain name, so results are reproducible
(Karpenter picks whichever its map iteration yields first).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from autoscaler.apis.v1.labels import LABEL_HOSTNAME
from autoscaler.scheduling.requirements import Requirement, Requirements
from autoscaler.scheduling.selectors import LabelSelector
from autoscaler.scheduling.taints import Taint, Toleration, untolerated

SPREAD, AFFINITY, ANTI_AFFINITY = "topology spread", "pod affinity", "pod anti-affinity"
UNBOUNDED_SKEW = 2**31 - 1


@dataclass(frozen=True, slots=True)
class NodeFilter:
    """Which nodes count for a topology spread: nodes matching the pod's node selector and any of its
    required node affinity terms (nodeAffinityPolicy Honor), and nodes whose taints it tolerates
    (nodeTaintsPolicy Honor)."""

    alternatives: tuple[Requirements, ...]
    honor_affinity: bool
    honor_taints: bool
    tolerations: tuple[Toleration, ...]
    identity: str  # the alternatives as text, so equal filters compare equal

    def matches(self, taints: Iterable[Taint], requirements: Mapping[str, Requirement], allow: frozenset[str]) -> bool:
        if self.honor_taints and untolerated(taints, self.tolerations) is not None:
            return False
        if not self.honor_affinity or not self.alternatives:
            return True
        return any(requirements_of(requirements).incompatibility(alt, allow) is None for alt in self.alternatives)

    def __hash__(self) -> int:
        return hash((self.identity, self.honor_affinity, self.honor_taints, self.tolerations))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NodeFilter):
            return NotImplemented
        return (self.identity, self.honor_affinity, self.honor_taints, self.tolerations) == (
            other.identity,
            other.honor_affinity,
            other.honor_taints,
            other.tolerations,
        )


def requirements_of(requirements: Mapping[str, Requirement]) -> Requirements:
    return requirements if isinstance(requirements, Requirements) else Requirements(requirements)


class TopologyGroup:
    """Counts of the pods ``selector`` selects in ``namespaces``, per value of ``key``."""

    def __init__(
        self,
        kind: str,
        key: str,
        namespaces: frozenset[str],
        selector: LabelSelector | None,
        *,
        max_skew: int = UNBOUNDED_SKEW,
        min_domains: int | None = None,
        node_filter: NodeFilter | None = None,
    ) -> None:
        self.kind = kind
        self.key = key
        self.namespaces = namespaces
        self.selector = selector
        self.max_skew = max_skew
        self.min_domains = min_domains
        self.node_filter = node_filter
        self.domains: dict[str, int] = {}
        self.empty: set[str] = set()
        self.nonempty = 0  # domains with at least one pod
        self.hostname = key == LABEL_HOSTNAME
        # For hostname groups: hosts by count, so that a pod can find the hosts it may use without a scan.
        self.by_count: dict[int, set[str]] = {0: self.empty} if self.hostname else {}
        self._selects: dict[int, bool] = {}

    # --- membership ------------------------------------------------------------------------------
    def selects(self, namespace: str, labels: Mapping[str, str], label_class: int) -> bool:
        cached = self._selects.get(label_class)
        if cached is None:
            cached = self._selects[label_class] = (
                self.selector is not None and namespace in self.namespaces and self.selector.matches(labels)
            )
        return cached

    def counts_node(
        self, taints: Iterable[Taint], requirements: Mapping[str, Requirement], allow: frozenset[str]
    ) -> bool:
        return self.node_filter is None or self.node_filter.matches(taints, requirements, allow)

    # --- domains ---------------------------------------------------------------------------------
    def register(self, *domains: str) -> None:
        for domain in domains:
            if domain not in self.domains:
                self.domains[domain] = 0
                self.empty.add(domain)

    def record(self, *domains: str) -> None:
        for domain in domains:
            count = self.domains.get(domain, 0)
            self.domains[domain] = count + 1
            if count == 0:
                self.empty.discard(domain)
                self.nonempty += 1
            if self.hostname:
                if count:
                    self.by_count[count].discard(domain)
                self.by_count.setdefault(count + 1, set()).add(domain)

    def allowed_hosts(self, selects: bool) -> tuple[set[str], ...] | None:
        """For hostname spreads and anti-affinity: sets whose union holds the registered hosts a pod may
        join (None when the group does not limit hosts by count). Unregistered hosts count zero."""
        if not self.hostname or self.kind == AFFINITY:
            return None
        limit = 0 if self.kind == ANTI_AFFINITY else self.max_skew - selects
        return tuple(hosts for count, hosts in self.by_count.items() if count <= limit)

    def allowed_domains(self, selects: bool, pod_domains: Requirement) -> set[str] | None:
        """For other keys: the domains a pod may use now (a node fixed to any other domain is ruled out),
        or None when this group cannot tell without the node."""
        if self.hostname:
            return None
        if self.kind == SPREAD:
            return set(self.valid_domains(selects, pod_domains))
        if self.kind == ANTI_AFFINITY:
            return {d for d in self.empty if pod_domains.has(d)}
        occupied = {d for d, count in self.domains.items() if count and pod_domains.has(d)}
        if occupied or not self.may_start(selects, pod_domains):
            return occupied
        return {d for d in self.domains if pod_domains.has(d)}  # the first pod may start anywhere

    def next_domains(self, selects: bool, pod_domains: Requirement, node_domains: Requirement) -> Requirement:
        """The domains of ``node_domains`` a pod (which ``selects`` or not) may use under this group."""
        if self.kind == SPREAD:
            return self._spread(selects, pod_domains, node_domains)
        if self.kind == AFFINITY:
            return self._affinity(selects, pod_domains, node_domains)
        return self._anti_affinity(pod_domains, node_domains)

    def _single(self, node_domains: Requirement) -> str | None:
        if self.hostname and not node_domains.complement and len(node_domains.values) == 1:
            return next(iter(node_domains.values))
        return None

    def _candidates(self, node_domains: Requirement) -> Iterable[str]:
        if not node_domains.complement:
            return [d for d in node_domains.values if d in self.domains]
        return [d for d in self.domains if node_domains.has(d)]

    def _result(self, domains: Iterable[str]) -> Requirement:
        return Requirement(self.key, False, frozenset(domains))

    def min_count(self, pod_domains: Requirement) -> int:
        """The smallest count among the domains the pod may use (0 for hostname: a new node is always
        possible; 0 too when fewer than minDomains domains exist)."""
        if self.hostname:
            return 0
        supported = [count for domain, count in self.domains.items() if pod_domains.has(domain)]
        if self.min_domains is not None and len(supported) < self.min_domains:
            return 0
        return min(supported, default=UNBOUNDED_SKEW)

    def _spread(self, selects: bool, pod_domains: Requirement, node_domains: Requirement) -> Requirement:
        host = self._single(node_domains)
        if host is not None:
            allowed = self.domains.get(host, 0) + selects <= self.max_skew
            return self._result((host,) if allowed else ())
        minimum = self.min_count(pod_domains)
        best: tuple[int, str] | None = None
        for domain in self._candidates(node_domains):
            count = self.domains[domain] + selects
            if count - minimum <= self.max_skew and (best is None or (count, domain) < best):
                best = (count, domain)
        return self._result(() if best is None else (best[1],))

    def valid_domains(self, selects: bool, pod_domains: Requirement) -> list[str]:
        """Every domain a spread pod could go to now (for messages)."""
        minimum = self.min_count(pod_domains)
        return sorted(
            d for d, c in self.domains.items() if pod_domains.has(d) and c + selects - minimum <= self.max_skew
        )

    def may_start(self, selects: bool, pod_domains: Requirement) -> bool:
        """Whether a pod may start a new domain of this affinity group: it matches its own term and no selected
        pod is in a domain the pod may use, either because none is anywhere yet or because the pod's own
        requirements rule out the domains they are in (two self-affine pods pinned to different zones each
        start one), as Karpenter's topology groups allow."""
        if not selects:
            return False
        if not self.nonempty:
            return True
        if not pod_domains.complement:
            return not any(self.domains.get(d, 0) for d in pod_domains.values)
        if not pod_domains.values and pod_domains.gte is None and pod_domains.lte is None:
            return False  # every domain is the pod's, and some domain has a pod
        return not any(count and pod_domains.has(d) for d, count in self.domains.items())

    def _affinity(self, selects: bool, pod_domains: Requirement, node_domains: Requirement) -> Requirement:
        host = self._single(node_domains)
        if host is not None:
            if not pod_domains.has(host):
                return self._result(())
            if self.domains.get(host, 0) > 0 or self.may_start(selects, pod_domains):
                return self._result((host,))
            return self._result(())
        options = [d for d in self._candidates(node_domains) if self.domains[d] and pod_domains.has(d)]
        if options:
            return self._result(options)
        if self.may_start(selects, pod_domains):
            # A self-affine pod starts its group in one domain: the smallest the node allows.
            usable = sorted(d for d in self.domains if pod_domains.has(d))
            preferred = [d for d in usable if node_domains.has(d)]
            return self._result(preferred[:1] or usable[:1])
        return self._result(())

    def _anti_affinity(self, pod_domains: Requirement, node_domains: Requirement) -> Requirement:
        host = self._single(node_domains)
        if host is not None:
            return self._result((host,) if self.domains.get(host, 0) == 0 else ())
        if not node_domains.complement and len(node_domains.values) < len(self.empty):
            return self._result(d for d in node_domains.values if d in self.empty and pod_domains.has(d))
        return self._result(d for d in self.empty if node_domains.has(d) and pod_domains.has(d))

    def describe(self) -> str:
        counts = sorted(self.domains.items(), key=lambda item: (-item[1], item[0]))
        shown = ", ".join(f"{d}={c}" for d, c in counts[:8]) + (
            f", and {len(counts) - 8} more" if len(counts) > 8 else ""
        )
        skew = f", maxSkew {self.max_skew}" if self.kind == SPREAD else ""
        return f"{self.kind} on {self.key} for pods matching {self.selector!r}{skew} (counts: {shown or 'none'})"
