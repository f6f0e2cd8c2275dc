"""The sample events under events/forwarder/ are what the forwarder sends, in EventBridge's envelope."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autoscaler.events import DETAIL_TYPES, FORWARDER_SOURCE, WATCHED_KINDS, ClusterEventDetail

DETAIL_FIELDS = [field.alias or name for name, field in ClusterEventDetail.model_fields.items()]
SAMPLES = sorted((Path(__file__).parents[3] / "events" / "forwarder").glob("*.json"))


def test_every_kind_has_samples() -> None:
    kinds = {json.loads(p.read_text())["detail"]["object"]["kind"] for p in SAMPLES}
    assert kinds == set(WATCHED_KINDS)


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_sample_matches_the_schema(path: Path) -> None:
    event = json.loads(path.read_text())
    assert event["source"] == FORWARDER_SOURCE and event["detail-type"] in DETAIL_TYPES
    detail = event["detail"]
    assert set(detail) <= set(DETAIL_FIELDS) and detail["version"] == "1"
    kind, change = event["detail-type"].split(" ", 1)
    assert detail["object"]["kind"] == kind and detail["change"] == change
    assert {"apiVersion", "kind", "name", "uid", "resourceVersion"} <= set(detail["object"])
    assert path.stem == event["detail-type"].lower().replace(" ", "-")
