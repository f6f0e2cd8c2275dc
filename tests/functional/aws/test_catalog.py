"""The instance type catalogue, prices and the shared cache of unavailable offerings, against moto."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.awsrequest import AWSResponse

from autoscaler.apis.v1 import labels as wk
from autoscaler.cloudprovider.errors import OfferingKey
from autoscaler.providers.aws.pricing import shipped_on_demand_prices
from autoscaler.providers.aws.unavailable import DynamoDBUnavailableOfferings
from autoscaler.runtime import cloud_provider
from autoscaler_dev.world.aws_world import INSTANCE_TYPES, ZONES, AWSWorld


def products(prices: dict[str, float]) -> list[str]:
    """GetProducts' PriceList for ``prices``, as the Pricing API shapes it."""
    return [
        json.dumps(
            {
                "product": {"attributes": {"instanceType": name, "operatingSystem": "Linux"}},
                "terms": {"OnDemand": {"T1": {"priceDimensions": {"D1": {"pricePerUnit": {"USD": f"{price:.4f}"}}}}}},
            }
        )
        for name, price in prices.items()
    ]


def test_instance_types_carry_offerings_in_the_class_zones_with_prices(aws_world: AWSWorld) -> None:
    nodeclass = aws_world.nodeclass("catalog")
    only_two_zones = nodeclass.status.model_copy(update={"subnets": nodeclass.status.subnets[:2]})  # type: ignore[union-attr]
    nodeclass = nodeclass.model_copy(update={"status": only_two_zones})
    settings = aws_world.settings(instance_types=INSTANCE_TYPES)
    cloud = cloud_provider(settings, {"catalog": nodeclass}.get, clients=aws_world.clients())
    types = {
        t.name: t
        for t in cloud.aws.catalog.instance_types(
            nodeclass, None, frozenset({OfferingKey("m5.large", ZONES[0], "spot")})
        )
    }
    assert set(types) == set(INSTANCE_TYPES)
    m5 = types["m5.large"]
    assert {(o.zone, o.capacity_type) for o in m5.offerings} == {
        (z, c) for z in ZONES[:2] for c in ("spot", "on-demand")
    }
    on_demand = next(o for o in m5.offerings if o.capacity_type == "on-demand")
    assert on_demand.price == shipped_on_demand_prices()["m5.large"] and on_demand.zone_id
    assert [o.available for o in m5.offerings if o.zone == ZONES[0] and o.capacity_type == "spot"] == [False]
    assert types["c6g.large"].labels[wk.LABEL_ARCH] == "arm64"
    assert types["g4dn.xlarge"].capacity[wk.RESOURCE_NVIDIA_GPU] == 1
    assert types["inf1.xlarge"].labels[wk.LABEL_INSTANCE_ACCELERATOR_NAME] == "inferentia"
    assert cloud.aws.pricing.on_demand_source == "shipped table (isolated VPC)"


def test_windows_classes_only_offer_amd64_types_and_110_pods(aws_world: AWSWorld) -> None:
    nodeclass = aws_world.nodeclass("win", amiSelectorTerms=[{"alias": "windows2022@latest"}])
    settings = aws_world.settings(instance_types=INSTANCE_TYPES)
    cloud = cloud_provider(settings, {"win": nodeclass}.get, clients=aws_world.clients())
    types = cloud.aws.catalog.instance_types(nodeclass, None, frozenset())
    assert types and all(t.labels[wk.LABEL_ARCH] == "amd64" and t.labels[wk.LABEL_OS] == "windows" for t in types)
    assert {t.capacity[wk.RESOURCE_PODS] for t in types} == {110}


def test_the_pricing_api_is_used_when_reachable_and_the_table_otherwise(aws_world: AWSWorld) -> None:
    nodeclass = aws_world.nodeclass("priced")
    settings = aws_world.settings(isolated_vpc=False, instance_types=INSTANCE_TYPES)
    cloud = cloud_provider(settings, {"priced": nodeclass}.get, clients=aws_world.clients())
    asked: list[dict[str, Any]] = []

    def answer(params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        asked.append(params)
        return AWSResponse("pricing", 200, {}, None), {"PriceList": products({"m5.large": 0.5})}

    cloud.aws.clients.pricing.meta.events.register("before-call.pricing.GetProducts", answer)
    assert cloud.aws.pricing.on_demand("m5.large") == 0.5
    assert cloud.aws.pricing.on_demand("m5.xlarge") == shipped_on_demand_prices()["m5.xlarge"]  # the table fills gaps
    assert cloud.aws.pricing.on_demand_source == "Pricing API" and len(asked) == 1

    unreachable = cloud_provider(aws_world.settings(isolated_vpc=False), {}.get, clients=aws_world.clients())
    unreachable.aws.clients.pricing.meta.events.register(
        "before-call.pricing.GetProducts",
        lambda **_: (
            AWSResponse("pricing", 403, {}, None),
            {"Error": {"Code": "AccessDeniedException", "Message": "no"}},
        ),
    )
    assert unreachable.aws.pricing.on_demand("m5.large") == shipped_on_demand_prices()["m5.large"]
    assert unreachable.aws.pricing.on_demand_source.startswith("shipped table")
    assert unreachable.aws.pricing.on_demand("x9.unknown") is None


def test_dynamodb_unavailable_offerings_are_shared_and_expire(aws_world: AWSWorld) -> None:
    dynamodb = aws_world.client("dynamodb")
    dynamodb.create_table(
        TableName="state",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    dynamodb.put_item(TableName="state", Item={"id": {"S": "lease#provisioner"}, "expiration": {"N": "99999999999"}})
    now = [datetime(2026, 5, 1, 12, 0, tzinfo=UTC)]
    writer = DynamoDBUnavailableOfferings(aws_world.clients(), "state", clock=lambda: now[0])
    reader = DynamoDBUnavailableOfferings(aws_world.clients(), "state", clock=lambda: now[0])
    key = OfferingKey("m5.large", "us-west-2a", "spot")
    writer.mark_unavailable(key, "InsufficientInstanceCapacity")
    writer.mark_unavailable(OfferingKey("c6g.large", "us-west-2b", "on-demand"), "x", ttl=timedelta(minutes=10))
    assert reader.unavailable() == {key, OfferingKey("c6g.large", "us-west-2b", "on-demand")}
    now[0] += timedelta(minutes=4)
    assert reader.unavailable() == {OfferingKey("c6g.large", "us-west-2b", "on-demand")}
    writer.mark_unavailable(key, "again")  # a new mark restarts the three minutes
    assert key in writer.unavailable()  # its own marks at once
    assert key not in reader.unavailable()  # others' within the read TTL
    now[0] += timedelta(seconds=6)
    assert key in reader.unavailable()
