"""ObjectRef: which Kubernetes object a read, a write or an event is about. Pure.

It is vocabulary, not a port detail: the API models name themselves with it (``NodeClaim.ref``), the
Cluster port (``kube.port``, which re-exports it) takes it, and events point at it. Kept here, below both,
so that the models need not import the port.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ObjectRef:
    """Which object: kind (``Pod``, ``Node``, ``NodeClaim``, ...), name, and namespace for namespaced kinds.
    ``uid``, when known, pins one incarnation: a delete through the port never removes a namesake."""

    kind: str
    name: str
    namespace: str | None = None
    uid: str | None = None
