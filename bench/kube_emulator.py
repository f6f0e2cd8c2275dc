"""Requests per second the Kubernetes API emulator serves: get, list, patch and create of NodeClaims.

Three clients, each single-threaded in this process (as a handler is): plain urllib3 (the emulator's own
cost), KubeRest on the official client (what the Cluster adapter pays per call), and the official client's
typed API (CustomObjectsApi) for comparison. The reference is a bare aiohttp server answering a fixed
body to urllib3: the floor of the HTTP stack both share.

    .venv/bin/python bench/kube_emulator.py [--requests N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable

import kubernetes
import urllib3
from aiohttp import web

from autoscaler.kube.connect import plain_client
from autoscaler.kube.resources import KINDS
from autoscaler.kube.rest import KubeRest
from autoscaler_dev.kube_emulator.emulator import KubeEmulator

NODECLAIMS = "/apis/karpenter.sh/v1/nodeclaims"


def nodeclaim(name: str) -> dict[str, object]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "default"}},
        "spec": {
            "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        },
    }


def rate(count: int, call: Callable[[int], object]) -> float:
    started = time.perf_counter()
    for index in range(count):
        call(index)
    return count / (time.perf_counter() - started)


def bare_server() -> str:
    """A fixed-body aiohttp server on a free port, in its own thread."""
    body = json.dumps(nodeclaim("x")).encode()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    loop = asyncio.new_event_loop()

    async def answer(_: web.BaseRequest) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    async def listen() -> None:
        runner = web.ServerRunner(web.Server(answer, access_log=None))
        await runner.setup()
        await web.SockSite(runner, sock).start()

    loop.run_until_complete(listen())
    threading.Thread(target=loop.run_forever, daemon=True).start()
    return f"http://127.0.0.1:{sock.getsockname()[1]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    count = parser.parse_args().requests
    started = time.perf_counter()
    kube = KubeEmulator().start()
    print(f"emulator started in {(time.perf_counter() - started) * 1000:.1f} ms on {kube.url}")

    http = urllib3.PoolManager()
    headers = {"Content-Type": "application/json"}
    merge = {"Content-Type": "application/merge-patch+json"}
    rows: list[tuple[str, float, float, float]] = []

    def raw(method: str, path: str, body: object = None, extra: dict[str, str] | None = None) -> None:
        payload = json.dumps(body).encode() if body is not None else None
        response = http.request(method, kube.url + path, body=payload, headers=extra or headers)
        assert response.status < 300, response.data

    rest = KubeRest(plain_client(kube.url))
    typed = kubernetes.client.CustomObjectsApi(plain_client(kube.url))
    claims = KINDS["NodeClaim"]
    for index in range(200):  # warm every path (pydantic, pools, caches) before measuring
        raw("POST", NODECLAIMS, nodeclaim(f"warm-{index}"))
        rest.get(claims, f"warm-{index}")
        typed.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", f"warm-{index}")
    create = (
        rate(count, lambda i: raw("POST", NODECLAIMS, nodeclaim(f"raw-{i}"))),
        rate(count, lambda i: rest.create(claims, nodeclaim(f"rest-{i}"))),
        rate(
            count,
            lambda i: typed.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", nodeclaim(f"typed-{i}")),
        ),
    )
    rows.append(("create NodeClaim (validated)", *create))
    get = (
        rate(count, lambda i: raw("GET", f"{NODECLAIMS}/raw-{i}")),
        rate(count, lambda i: rest.get(claims, f"rest-{i}")),
        rate(count, lambda i: typed.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", f"typed-{i}")),
    )
    rows.append(("get NodeClaim", *get))
    annotation = {"metadata": {"annotations": {"bench": "1"}}}
    patch = (
        rate(count, lambda i: raw("PATCH", f"{NODECLAIMS}/raw-{i}", annotation, merge)),
        rate(count, lambda i: rest.patch(claims, f"rest-{i}", annotation)),
        rate(
            count,
            lambda i: typed.patch_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", f"typed-{i}", annotation),
        ),
    )
    rows.append(("merge-patch NodeClaim (validated)", *patch))
    lists = max(count // 50, 10)
    page = [("labelSelector", "karpenter.sh/nodepool=default"), ("limit", 500)]
    listed = (
        rate(lists, lambda _: raw("GET", f"{NODECLAIMS}?labelSelector=karpenter.sh/nodepool%3Ddefault&limit=500")),
        rate(lists, lambda _: rest.exchange("GET", claims.path(), query=page)),
        rate(lists, lambda _: typed.list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", limit=500)),
    )
    rows.append(("list one page of 500 NodeClaims (selector)", *listed))
    everything = rate(max(lists // 10, 2), lambda _: rest.list(claims))
    total = 3 * count + 200

    reference = bare_server()
    floor = rate(count, lambda _: http.request("GET", reference + "/x"))

    print(f"\n{count} requests per operation, one client thread, requests/s:")
    print(f"{'operation':40} {'urllib3':>10} {'KubeRest':>10} {'typed':>10}")
    for name, *figures in rows:
        print(f"{name:40} " + " ".join(f"{f:10.0f}" for f in figures))
    print(f"{'reference: bare aiohttp, fixed body':40} {floor:10.0f}")
    print(f"KubeRest.list of all {total} NodeClaims (paginated, decoded): {everything:.1f} lists/s")
    kube.stop()


if __name__ == "__main__":
    main()
