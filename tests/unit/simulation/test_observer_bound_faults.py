"""The world's own reads for the cost bound go through the API its faults hit: an injected failure there keeps
the last options the NodePools allowed (or no bound for that sample), and never fails the run."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from autoscaler.kube.port import TransientClusterError
from autoscaler_dev.world import costbound, observer
from autoscaler_dev.world.observer import Observer

POOL = {"metadata": {"name": "default", "resourceVersion": "1"}}


def watcher(pools: list[dict[str, Any]]) -> Any:
    sim = SimpleNamespace(kube=SimpleNamespace(list=lambda api, kind: pools))
    return SimpleNamespace(sim=sim, _options_by_version=None, _nodepools=list)


def test_a_failed_read_keeps_the_last_options_or_gives_none(monkeypatch: pytest.MonkeyPatch) -> None:
    pools = [POOL]
    watching = watcher(pools)
    known = ([costbound.Option(2.0, 8.0, 0.1)], {})
    monkeypatch.setattr(observer, "paid_options", lambda sim, scenario, nodepools: known)
    assert Observer._options(watching, None) == known  # type: ignore[arg-type]

    def failing(sim: Any, scenario: Any, nodepools: Any) -> Any:
        raise TransientClusterError("GET /apis/karpenter.k8s.aws/v1/ec2nodeclasses/default: 503 (after 5 attempts)")

    monkeypatch.setattr(observer, "paid_options", failing)
    pools[0] = {"metadata": {"name": "default", "resourceVersion": "2"}}  # a NodePool changed: read again
    assert Observer._options(watching, None) == known  # type: ignore[arg-type]
    assert Observer._options(watcher([POOL]), None) == ([], {})  # type: ignore[arg-type]
