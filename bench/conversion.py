"""How fast the conversion webhook answers: cold start of the handler module and per-review latency.

The API server waits at most the webhook's timeout (10 s by default, 30 s at most) and usually sends one
object per review. Figures: import time of the handler in a fresh interpreter (a Lambda cold start without
SnapStart pays it), and median / p99 time to answer a one-object review per kind and a 100-object review,
next to the time to merely validate the same v1beta1 object (the reference: conversion validates twice).

Run: .venv/bin/python bench/conversion.py
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from autoscaler.apis.conversion import SERVED_KINDS  # noqa: E402
from autoscaler.apis.conversion.review import answer, parse_review  # noqa: E402
from autoscaler.apis.validation import parse  # noqa: E402
from tests.unit.apis.conversion_cases import NODECLAIM_V1BETA1, NODECLASS_V1BETA1, NODEPOOL_V1BETA1  # noqa: E402

COLD_START = """
import json, time
from autoscaler_dev.harness import Context, load_handler
start = time.perf_counter()
module = load_handler("conversion")
imported = time.perf_counter()
event = json.load(open("events/conversion-review.json"))
module.handler(event, Context("conversion", memory_limit_in_mb=256))
print(json.dumps({"import": imported - start, "first": time.perf_counter() - imported}))
"""


def timings(run: Callable[[], Any], repeat: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
    samples.sort()
    return statistics.median(samples) * 1000, samples[int(len(samples) * 0.99) - 1] * 1000


def review(desired: str, objects: list[Any]) -> str:
    request = {"uid": "u", "desiredAPIVersion": desired, "objects": objects}
    return json.dumps({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": request})


def main() -> None:
    runs = [subprocess.check_output([sys.executable, "-c", COLD_START], cwd=ROOT, text=True) for _ in range(3)]
    colds = [json.loads(output.strip().splitlines()[-1]) for output in runs]  # after the handler's own logs
    print("cold start (fresh interpreter, 3 runs)")
    print(f"  import handler        {min(c['import'] for c in colds) * 1000:8.1f} ms (best)")
    print(f"  first review          {min(c['first'] for c in colds) * 1000:8.1f} ms (best)")
    print("\nwarm, per review (median / p99 over 300 runs)")
    for name, document, desired in (
        ("NodePool", NODEPOOL_V1BETA1, "karpenter.sh/v1"),
        ("NodeClaim", NODECLAIM_V1BETA1, "karpenter.sh/v1"),
        ("EC2NodeClass", NODECLASS_V1BETA1, "karpenter.k8s.aws/v1"),
    ):
        body = review(desired, [document])
        median, p99 = timings(lambda body=body: answer(parse_review(body)), 300)
        ref_median, ref_p99 = timings(lambda document=document: parse(document, SERVED_KINDS), 300)
        reference = f"reference: validate only {ref_median:6.2f} / {ref_p99:6.2f} ms"
        print(f"  {name:<13} convert {median:6.2f} / {p99:6.2f} ms   {reference}")
    body = review("karpenter.sh/v1", [NODEPOOL_V1BETA1] * 100)
    median, p99 = timings(lambda: answer(parse_review(body)), 20)
    print(f"  100 NodePools  convert {median:6.1f} / {p99:6.1f} ms   ({len(body) / 1024:.0f} KiB review)")


if __name__ == "__main__":
    main()
