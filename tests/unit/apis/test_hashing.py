"""Drift hashes change exactly when a hashed field changes, and never with key or list order."""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.apis.v1 import EC2NodeClass, NodePool
from autoscaler.apis.v1.hashing import nodeclass_hash, nodepool_hash, stable_hash
from autoscaler.apis.validation import parse
from tests.unit.apis.test_validation_corpus import BASES


def nodepool(change: dict[str, Any] | None = None) -> NodePool:
    body = copy.deepcopy(BASES["nodepool"])
    body["spec"]["template"]["spec"].update(change or {})
    result = parse(body)
    assert isinstance(result, NodePool)
    return result


def nodeclass(change: dict[str, Any] | None = None) -> EC2NodeClass:
    body = copy.deepcopy(BASES["nodeclass"])
    body["spec"].update(change or {})
    result = parse(body)
    assert isinstance(result, EC2NodeClass)
    return result


def test_nodepool_hash_follows_the_template_but_not_requirements_or_budgets() -> None:
    base = nodepool_hash(nodepool())
    assert nodepool_hash(nodepool({"taints": [{"key": "a", "effect": "NoSchedule"}]})) != base
    assert nodepool_hash(nodepool({"expireAfter": "24h"})) != base
    assert nodepool_hash(nodepool({"terminationGracePeriod": "1h"})) != base
    assert nodepool_hash(nodepool({"requirements": [{"key": "kubernetes.io/arch", "operator": "Exists"}]})) == base
    pool = nodepool()
    pool.spec.disruption.budgets[0].nodes = "50%"
    pool.spec.weight = 10
    assert nodepool_hash(pool) == base


def test_nodeclass_hash_follows_the_launch_settings_but_not_selector_terms() -> None:
    base = nodeclass_hash(nodeclass())
    assert nodeclass_hash(nodeclass({"tags": {"team": "a"}})) != base
    assert nodeclass_hash(nodeclass({"kubelet": {"maxPods": 50}})) != base
    assert nodeclass_hash(nodeclass({"userData": "#!/bin/bash\necho hi"})) != base
    assert nodeclass_hash(nodeclass({"metadataOptions": {"httpPutResponseHopLimit": 2}})) != base
    assert nodeclass_hash(nodeclass({"subnetSelectorTerms": [{"id": "subnet-0abc"}]})) == base
    assert nodeclass_hash(nodeclass({"amiSelectorTerms": [{"alias": "al2023@v20240807"}]})) == base
    # Spelling out the family the alias implies is not drift; changing the family is.
    assert nodeclass_hash(nodeclass({"amiFamily": "AL2023"})) == base
    assert nodeclass_hash(nodeclass({"amiFamily": "Custom"})) != base


def test_the_v1_14_class_fields_hash_as_karpenter_hashes_them() -> None:
    base = nodeclass_hash(nodeclass())
    for hashed in (
        {"placementGroupSelector": {"name": "ml"}},
        {"networkInterfaces": [{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}]},
        {"connectionTracking": {"udpTimeout": 30}},
        {"cpuOptions": {"nestedVirtualization": "enabled"}},
    ):
        assert nodeclass_hash(nodeclass(hashed)) != base, hashed
    volume: dict[str, Any] = {"deviceName": "/dev/xvdb", "ebs": {"snapshotID": "snap-1"}}
    initialized = copy.deepcopy(volume)
    initialized["ebs"]["volumeInitializationRate"] = 200
    assert nodeclass_hash(nodeclass({"blockDeviceMappings": [initialized]})) != nodeclass_hash(
        nodeclass({"blockDeviceMappings": [volume]})
    )
    for ignored in ({"capacityReservationSelectorTerms": [{"id": "cr-0abc"}]}, {"ipPrefixCount": 2}):
        assert nodeclass_hash(nodeclass(ignored)) == base, ignored


def test_zero_values_hash_as_absent() -> None:
    assert nodeclass_hash(nodeclass({"tags": {}})) == nodeclass_hash(nodeclass())
    assert nodeclass_hash(nodeclass({"detailedMonitoring": False})) == nodeclass_hash(nodeclass())


def _shuffled(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: _shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        members = [_shuffled(v, rng) for v in value]
        rng.shuffle(members)
        return members
    return value


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(json_values, st.integers(0, 2**32))
def test_hash_ignores_key_and_list_order(value: Any, seed: int) -> None:
    assert stable_hash(_shuffled(value, random.Random(seed))) == stable_hash(value)


def test_hash_is_the_same_in_another_process() -> None:
    pool = nodepool({"taints": [{"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoExecute"}]})
    script = (
        "import json,sys; from autoscaler.apis.validation import parse; "
        "from autoscaler.apis.v1.hashing import nodepool_hash; "
        "print(nodepool_hash(parse(json.loads(sys.stdin.read()))))"
    )
    other = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(pool.to_dict()),
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345"},
    )
    assert other.stdout.strip() == nodepool_hash(pool)
