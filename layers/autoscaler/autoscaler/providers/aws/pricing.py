"""Prices: on-demand from the Pricing API (falling back to the shipped table), spot from EC2's spot price
history. An offering without a known price is not offered, so both lookups answer ``None`` for unknowns."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from importlib import resources
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from autoscaler.clock import utc_now
from autoscaler.providers.aws.cache import TTLCache

if TYPE_CHECKING:
    from autoscaler.providers.aws.clients import AWSClients

log = logging.getLogger(__name__)
ON_DEMAND_TTL = timedelta(hours=12)
SPOT_TTL = timedelta(hours=1)
SPOT_PRODUCTS = ["Linux/UNIX", "Linux/UNIX (Amazon VPC)"]
_PRICE_FILTERS = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
    "licenseModel": "No License required",
}


def shipped_on_demand_prices() -> dict[str, float]:
    """The price table shipped in the package (see data/README.md for its provenance)."""
    text = resources.files("autoscaler.providers.aws").joinpath("data/ondemand-prices-us-east-1.json").read_text()
    return {name: float(price) for name, price in json.loads(text)["prices"].items()}


def parse_price_list(items: Iterable[str]) -> dict[str, float]:
    """Instance type -> hourly USD price from GetProducts' PriceList (one JSON document per product).
    Products without an instance type or a positive USD price are skipped."""
    prices: dict[str, float] = {}
    for item in items:
        product = json.loads(item)
        instance_type = product.get("product", {}).get("attributes", {}).get("instanceType")
        for term in product.get("terms", {}).get("OnDemand", {}).values():
            for dimension in term.get("priceDimensions", {}).values():
                price = float(dimension.get("pricePerUnit", {}).get("USD", "0") or 0)
                if instance_type and price > 0:
                    prices[instance_type] = price
    return prices


def latest_spot_prices(history: Iterable[dict[str, Any]]) -> dict[tuple[str, str], float]:
    """(instance type, zone) -> the most recent spot price in ``history``."""
    latest: dict[tuple[str, str], tuple[datetime, float]] = {}
    for entry in history:
        key = (entry["InstanceType"], entry["AvailabilityZone"])
        stamp, price = entry["Timestamp"], float(entry["SpotPrice"])
        if key not in latest or stamp > latest[key][0]:
            latest[key] = (stamp, price)
    return {key: price for key, (_, price) in latest.items()}


class Pricing:
    """Cached prices for one region. ``isolated`` skips the Pricing API (no route to it)."""

    def __init__(
        self,
        clients: AWSClients,
        region: str,
        isolated: bool = False,
        clock: Callable[[], datetime] = utc_now,
        instance_type_names: Sequence[str] = (),
    ) -> None:
        self._clients, self._region, self._isolated = clients, region, isolated
        self._names = list(instance_type_names)
        self._on_demand: TTLCache[dict[str, float]] = TTLCache(ON_DEMAND_TTL, clock)
        self._spot: TTLCache[dict[tuple[str, str], float]] = TTLCache(SPOT_TTL, clock)
        self._clock = clock
        self.on_demand_source = ""

    def on_demand(self, instance_type: str) -> float | None:
        return self._on_demand.get_or_load("prices", self._load_on_demand).get(instance_type)

    def spot(self, instance_type: str, zone: str) -> float | None:
        return self._spot.get_or_load("prices", self._load_spot).get((instance_type, zone))

    def _load_on_demand(self) -> dict[str, float]:
        shipped = shipped_on_demand_prices()
        if self._isolated:
            self.on_demand_source = "shipped table (isolated VPC)"
            return shipped
        try:
            fetched = self._fetch_on_demand()
        except (ClientError, BotoCoreError) as error:
            log.warning("Pricing API unavailable, using the shipped price table: %s", error)
            self.on_demand_source = "shipped table (Pricing API unavailable)"
            return shipped
        self.on_demand_source = "Pricing API"
        return {**shipped, **fetched}  # the API wins; the table fills types it did not list

    def _fetch_on_demand(self) -> dict[str, float]:
        filters = [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in _PRICE_FILTERS.items()]
        filters.append({"Type": "TERM_MATCH", "Field": "regionCode", "Value": self._region})
        paginator = self._clients.pricing.get_paginator("get_products")
        items: list[str] = []
        for page in paginator.paginate(ServiceCode="AmazonEC2", Filters=filters):  # type: ignore[arg-type]
            items.extend(page.get("PriceList", []))
        return parse_price_list(items)

    def _load_spot(self) -> dict[tuple[str, str], float]:
        paginator = self._clients.ec2.get_paginator("describe_spot_price_history")
        history: list[dict[str, Any]] = []
        narrowed: dict[str, Any] = (
            {"Filters": [{"Name": "instance-type", "Values": self._names}]} if self._names else {}
        )
        for page in paginator.paginate(ProductDescriptions=SPOT_PRODUCTS, StartTime=self._clock(), **narrowed):
            history.extend(dict(entry) for entry in page.get("SpotPriceHistory", []))
        return latest_spot_prices(history)
