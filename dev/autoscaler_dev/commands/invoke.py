"""``autoscaler invoke``: run one function's handler once, in this process, with one event as Lambda passes it.

    autoscaler invoke FUNCTION EVENT.json [-o json]
    autoscaler invoke FUNCTION EVENT.json --embedded [-f MANIFESTS ...] [-o json]

The handler is loaded from ``functions/<FUNCTION>/handler.py`` as a fresh Lambda container imports it and called
with a Lambda-like context (the Lambda harness, ``autoscaler_dev.harness``). Its return value is printed on stdout
as JSON; its own logs and EMF metrics (Powertools JSON) go to stderr.

Without ``--embedded`` the handler runs against real endpoints: whatever its environment says, as in Lambda
(``CLUSTER_NAME``, ``AWS_REGION``, ``CLUSTER_ENDPOINT``, ``STATE_TABLE_NAME``, ``INTERRUPTION_DLQ_URL``, ...;
``autoscaler.settings``), with the caller's AWS credentials and kubeconfig or EKS IAM access. ``--embedded`` starts
the moto world and the Kubernetes API emulator, creates the stack's queues, rules and table in it, applies the
manifests given and points the handler's environment at all of that for the call. An SQS event's
``eventSourceARN`` need not name the embedded queue.

``-o json`` prints one object instead: the function, its return value or error, the seconds it took and, embedded,
the bodies on the stack's dead-letter queues afterwards. Exit codes: 0 the handler returned, 1 it raised,
2 usage (unknown function, an event or manifest file that cannot be read).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autoscaler.commands.manifest_args import add_manifest_arguments, manifest_documents
from autoscaler.routing import FUNCTIONS
from autoscaler_dev.harness import Context, load_handler

if TYPE_CHECKING:
    from autoscaler_dev.world.embedded import EmbeddedCluster
    from autoscaler_dev.world.stack import StackResources

# Variables that would make the handler reach another cluster than the emulator (``kube.connect``).
KUBE_OVERRIDES = ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "invoke",
        help="run one function's handler with one event, embedded or against real endpoints",
        description="Run one handler with one event as Lambda would. Without --embedded it reaches what its "
        "environment names, as in Lambda (CLUSTER_NAME, AWS_REGION, CLUSTER_ENDPOINT, STATE_TABLE_NAME, ...): "
        "real endpoints. The return value goes to stdout, the function's logs to stderr.",
    )
    parser.add_argument("function", metavar="FUNCTION", help=f"one of {', '.join(FUNCTIONS)}")
    parser.add_argument("event", metavar="EVENT.json", help="the event exactly as Lambda passes it (see events/)")
    parser.add_argument(
        "--embedded", action="store_true", help="run in an embedded AWS (moto) and Kubernetes, with the stack's queues"
    )
    add_manifest_arguments(
        parser, "manifests to apply to the embedded cluster first (repeatable; needs --embedded)", operands=False
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=("result", "json"),
        default="result",
        help="result: the return value; json: function, result, error, seconds and dead letters (embedded)",
    )
    parser.set_defaults(run=run)


@dataclass
class EmbeddedWorld:
    cluster: EmbeddedCluster
    stack: StackResources
    environment: dict[str, str]

    def dead_letters(self) -> dict[str, list[str]]:
        """The bodies on each of the stack's dead-letter queues that holds any (read, not removed)."""
        sqs = self.cluster.aws.client("sqs")
        stack = self.stack
        found: dict[str, list[str]] = {}
        for queue in (stack.interruption, stack.provisioning, stack.termination_inbox, stack.nodeclass_inbox):
            received = sqs.receive_message(QueueUrl=queue.dead_letters_url, MaxNumberOfMessages=10, VisibilityTimeout=0)
            bodies = [str(m["Body"]) for m in received.get("Messages", [])]
            if bodies:
                found[queue.dead_letters_url.rsplit("/", 1)[-1]] = bodies
        return found


@contextlib.contextmanager
def start_world() -> Iterator[EmbeddedWorld]:
    """The moto world, the emulator and the stack's resources in it, with the environment the stack gives."""
    from autoscaler_dev.kube_emulator.emulator import KubeEmulator
    from autoscaler_dev.world.aws_world import AWSWorld
    from autoscaler_dev.world.embedded import EmbeddedCluster
    from autoscaler_dev.world.stack import StackResources

    aws = AWSWorld.start()
    try:
        with KubeEmulator() as kube:
            stack = StackResources.create(aws)
            yield EmbeddedWorld(EmbeddedCluster(aws, kube), stack, stack.environment(aws, kube.url))
    finally:
        aws.stop()


def run(args: argparse.Namespace) -> int:
    if args.function not in FUNCTIONS:
        return _usage(f"unknown function {args.function!r}: one of {', '.join(FUNCTIONS)}")
    if args.files and not args.embedded:
        return _usage("-f manifests need --embedded (without it the handler reads the real cluster)")
    try:
        event = json.loads(Path(args.event).read_text())
    except OSError as error:
        return _usage(f"cannot read event {args.event}: {error.strerror or error}")
    except ValueError as error:
        return _usage(f"{args.event} is not JSON: {error}")
    manifests: list[dict[str, Any]] = []
    for document in manifest_documents(args):
        if document.problem:
            return _usage(document.problem)
        manifests.append(document.body)
    if not args.embedded:
        return _report(args, _invoke(args.function, event))
    with start_world() as world:
        for manifest in manifests:
            try:
                world.cluster.apply([manifest])
            except (KeyError, ValueError) as error:  # unknown kinds, invalid objects (ApiError is a ValueError)
                name = (manifest.get("metadata") or {}).get("name")
                return _usage(f"cannot apply {manifest.get('kind')} {name}: {error}")
        with _environment(world.environment):
            _reconcile_nodeclasses(args.function, manifests)
            outcome = _invoke(args.function, event)
        return _report(args, outcome, world.dead_letters())


@dataclass(frozen=True)
class Outcome:
    function: str
    seconds: float
    result: Any = None
    error: str | None = None


def _invoke(name: str, event: Any) -> Outcome:
    """Load the handler and call it once; its stdout (logs, EMF) goes to stderr."""
    from autoscaler import runtime

    runtime.install(None)  # built on first use from this environment, as in a new container
    started = time.perf_counter()
    try:
        with contextlib.redirect_stdout(sys.stderr):  # Powertools' loggers write to the stdout they are made with
            try:
                result = load_handler(name).handler(event, Context.of(name))
            except Exception as failure:  # Lambda reports it as the invocation's error
                traceback.print_exc(file=sys.stderr)
                return Outcome(name, time.perf_counter() - started, error=f"{type(failure).__name__}: {failure}")
        return Outcome(name, time.perf_counter() - started, result)
    finally:
        runtime.install(None)


def _reconcile_nodeclasses(function: str, manifests: list[dict[str, Any]]) -> None:
    """The nodeclass function's pass over the applied EC2NodeClasses, as its schedule would have run before any
    other function sees them in a cluster: without it, the provisioner finds no class Ready and launches nothing."""
    if function == "nodeclass" or not any(m.get("kind") == "EC2NodeClass" for m in manifests):
        return
    from autoscaler.clock import utc_now
    from autoscaler_dev.world.runner import scheduled_event

    outcome = _invoke("nodeclass", scheduled_event("nodeclass", utc_now()))
    if outcome.error is not None:
        print(f"warning: reconciling the EC2NodeClasses first failed: {outcome.error}", file=sys.stderr)


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """``values`` in ``os.environ`` (and no kubeconfig or in-cluster override) for the block; restored after."""
    saved = dict(os.environ)
    for name in KUBE_OVERRIDES:
        os.environ.pop(name, None)
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _report(args: argparse.Namespace, outcome: Outcome, dead_letters: dict[str, list[str]] | None = None) -> int:
    if outcome.error is not None:
        print(f"error: {outcome.function} raised {outcome.error}", file=sys.stderr)
    if args.output == "json":
        answer: dict[str, Any] = {
            "function": outcome.function,
            "result": outcome.result,
            "error": outcome.error,
            "seconds": round(outcome.seconds, 3),
        }
        if dead_letters is not None:
            answer["deadLetters"] = dead_letters
        print(json.dumps(answer, indent=2, default=str))
    elif outcome.error is None:
        print(json.dumps(outcome.result, indent=2, default=str))
    for queue, bodies in (dead_letters or {}).items():
        print(f"note: {len(bodies)} message(s) on {queue}", file=sys.stderr)
    return 1 if outcome.error is not None else 0


def _usage(message: str) -> int:
    print(f"autoscaler invoke: error: {message}", file=sys.stderr)
    return 2
