"""How long the pure launch path takes over a full EC2 catalogue (moto's copy of DescribeInstanceTypes,
1395 types): building InstanceTypes with 3 zones x 2 capacity types of offerings, then choosing the
types for one NodeClaim. Reference in the same run: json-decoding the catalogue, the floor any
per-invocation work over it pays.

Run: .venv/bin/python bench/instance_types.py
"""

from __future__ import annotations

import gzip
import json
import statistics
import time
from importlib import resources
from typing import Any

from autoscaler.apis.v1.common import NodeSelectorRequirementWithMinValues
from autoscaler.cloudprovider.types import Offering
from autoscaler.providers.aws import instancetype, selection
from autoscaler.providers.aws.pricing import shipped_on_demand_prices

ZONES = ("us-west-2a", "us-west-2b", "us-west-2c")
ROUNDS = 5


def catalogue_text() -> bytes:
    return gzip.decompress(resources.files("moto.ec2").joinpath("resources/instance_types.json.gz").read_bytes())


def offerings(name: str, prices: dict[str, float]) -> list[Offering]:
    price = prices.get(name)
    if price is None:
        return []
    return [Offering(z, ct, price * (0.3 if ct == "spot" else 1)) for z in ZONES for ct in ("spot", "on-demand")]


def timed(action: Any) -> tuple[float, Any]:
    samples, result = [], None
    for _ in range(ROUNDS):
        start = time.perf_counter()
        result = action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), result


def main() -> None:
    text = catalogue_text()
    decode_s, infos = timed(lambda: json.loads(text))
    prices = shipped_on_demand_prices()
    settings = instancetype.NodeSettings(family="AL2023", region="us-west-2")

    def build() -> list[Any]:
        built = (instancetype.build(info, settings, offerings(name, prices)) for name, info in infos.items())
        return [it for it in built if it is not None and it.offerings]

    build_s, types = timed(build)
    requirements = [
        NodeSelectorRequirementWithMinValues.model_validate(
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
        )
    ]
    choose_s, chosen = timed(
        lambda: selection.preferred(selection.launchable(types, requirements, {"cpu": 2000}), requirements)
    )
    print(f"catalogue: {len(infos)} instance types, {len(types)} priced")
    print(f"reference  json.loads of the catalogue      {decode_s * 1000:8.1f} ms")
    per_type = build_s / len(infos) * 1e6
    print(f"build      InstanceTypes with offerings     {build_s * 1000:8.1f} ms  ({per_type:.0f} us/type)")
    summary = f"{len(chosen)} types, first {chosen[0].name}"
    print(f"choose     launchable + preferred (60 max)  {choose_s * 1000:8.1f} ms  -> {summary}")


if __name__ == "__main__":
    main()
