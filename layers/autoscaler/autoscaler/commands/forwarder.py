"""``autoscaler forwarder --bus NAME``: run the in-cluster event forwarder until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import threading
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("forwarder", help="forward cluster changes to an EventBridge bus (runs in-cluster)")
    parser.add_argument("--bus", required=True, help="name (or ARN) of the EventBridge bus")
    parser.add_argument("--cluster-name", default=os.environ.get("CLUSTER_NAME", ""), help="put in every event")
    parser.add_argument("--namespace", default=os.environ.get("POD_NAMESPACE", "kube-system"), help="of the Lease")
    parser.add_argument("--lease", default="serverless-karpenter-forwarder", help="name of the Lease")
    parser.add_argument("--identity", default=os.environ.get("POD_NAME", socket.gethostname()), help="this replica")
    parser.add_argument("--window", type=float, default=1.0, help="seconds to coalesce bursts per object")
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG", ""), help="instead of in-cluster config")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import boto3

    from autoscaler.forwarder.app import Forwarder
    from autoscaler.forwarder.election import LeaseElector
    from autoscaler.forwarder.publisher import EventBridgePublisher
    from autoscaler.kube.connect import in_cluster_client, kubeconfig_client
    from autoscaler.kube.rest import KubeRest

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    if not args.cluster_name:
        print("autoscaler forwarder: --cluster-name (or CLUSTER_NAME) is required")
        return 2
    rest = KubeRest(kubeconfig_client(args.kubeconfig) if args.kubeconfig else in_cluster_client())
    publisher = EventBridgePublisher(boto3.client("events"), args.bus)
    elector = LeaseElector(rest, args.namespace, args.lease, args.identity)
    forwarder = Forwarder(rest, publisher, elector, args.cluster_name, window=args.window)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    forwarder.run(stop)
    logging.getLogger(__name__).info(
        "stopped: %d events sent, %d dropped", publisher.stats.sent, publisher.stats.dropped
    )
    return 0
