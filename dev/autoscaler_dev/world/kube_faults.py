"""Kubernetes API faults, in the emulator's request path and its store:

- ``kube_errors``: a request answered 429 (with Retry-After), 500 or 503, or 409 on writes;
- an outage (the ``kube-outage`` action): every request answered 503 until it ends, open watches cut;
- ``kube_page``: lists served at most that many items a page (a server may return fewer than the limit), so that
  small worlds paginate too;
- ``continue_expired``: a list's next page answered 410 Gone, reason Expired (its continue token too old, as after
  an etcd compaction).

Each refused request is counted by kind (an outage counts every request it refuses as ``kube_outage``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from autoscaler_dev.kube_emulator.errors import ApiError
from autoscaler_dev.kube_emulator.server import Fault, KubeApi

if TYPE_CHECKING:
    from autoscaler_dev.world.faults import Faults

_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of the "
    "results. Continuing with the provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may show up in the list."
)


class KubeFaults:
    def __init__(self, faults: Faults) -> None:
        self.faults = faults
        self.outage_until = 0.0

    def outage(self, seconds: float) -> None:
        """Refuse every request for ``seconds`` of virtual time from now."""
        self.outage_until = max(self.outage_until, self.faults.now() + seconds)

    @property
    def down(self) -> bool:
        return self.faults.now() < self.outage_until

    def wrap(self, api: KubeApi) -> None:
        faults, rates = self.faults, self.faults.rates
        take = api.faults.take

        def maybe(method: str, path: str) -> Fault | None:
            planned = take(method, path)
            if planned is not None:
                return planned
            if self.down:
                with faults.lock:
                    faults.injected["kube_outage"] += 1
                return Fault(503)
            if faults.chance(rates.kube_errors, "kube_errors"):
                status = faults.random.choice((429, 500, 503, 409) if method in ("PUT", "PATCH") else (429, 500, 503))
                return Fault(status, retry_after=1 if status == 429 else None)
            return None

        api.faults.take = maybe  # type: ignore[method-assign]
        if rates.kube_page or rates.continue_expired:
            self._wrap_lists(api)

    def _wrap_lists(self, api: KubeApi) -> None:
        faults, rates, store = self.faults, self.faults.rates, api.store
        select = store.select

        def paged(
            resource: Any, namespace: str, predicate: Any = None, limit: int = 0, continue_token: str = ""
        ) -> Any:
            if continue_token and faults.chance(rates.continue_expired, "continue_expired"):
                raise ApiError(410, "Expired", _EXPIRED)
            if limit and rates.kube_page:  # a plain list (no limit) is whole, as the API server's is
                limit = min(limit, rates.kube_page)
            return select(resource, namespace, predicate, limit, continue_token)

        store.select = paged  # type: ignore[method-assign]
