"""``autoscaler doctor --from-stack NAME | --stack-outputs FILE | --embedded``: read-only checks of a live
installation, each printed ok / warn / fail with what to do (``docs/troubleshooting.md``). Exit 1 when a check
fails. ``--embedded`` installs into the embedded world first (``autoscaler_dev.world.installation``), to show what
a healthy installation answers.

The AWS side is read with the credentials of the environment; the cluster with ``--kubeconfig`` (and
``--context``), or else with an EKS token for the stack's cluster, as the functions connect."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any

from autoscaler.commands import dev_package, stack_outputs

MARKS = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("doctor", help="check a live installation, read-only: ok / warn / fail per part")
    source = stack_outputs.add_source_options(parser)
    source.add_argument(
        "--embedded",
        action="store_true",
        help="install into an embedded AWS and Kubernetes (the dev package) and check that: what healthy looks like",
    )
    parser.add_argument("--kubeconfig", metavar="FILE", help="reach the cluster with this kubeconfig (default: EKS)")
    parser.add_argument("--context", metavar="NAME", help="the kubeconfig context")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    parser.set_defaults(run=run)


class ApiReader:
    """The API server as the checks read it: raw paths, a missing object a LookupError."""

    def __init__(self, rest: Any) -> None:
        self.rest = rest

    def get_path(self, path: str) -> Any:
        from autoscaler.kube.port import NotFoundError

        try:
            return self.rest.exchange("GET", path)[1]
        except NotFoundError as error:
            raise LookupError(path) from error

    def exchange(self, method: str, path: str, **options: Any) -> Any:
        return self.rest.exchange(method, path, **options)


def connect(args: argparse.Namespace, outputs: stack_outputs.StackOutputs, session: Any) -> ApiReader:
    from autoscaler.kube.connect import eks_client, kubeconfig_client
    from autoscaler.kube.rest import KubeRest, RetryPolicy

    if args.kubeconfig:
        client = kubeconfig_client(args.kubeconfig, args.context)
    else:
        client = eks_client(outputs["ClusterName"], session=session)
    return ApiReader(KubeRest(client, retry=RetryPolicy(attempts=2, base_delay=0.2, max_delay=1.0)))


def run(args: argparse.Namespace) -> int:
    import boto3

    from autoscaler.commands.doctor_checks import FAIL, Context, run_checks
    from autoscaler.commands.installation import RenderError

    try:
        if args.embedded:
            findings = _embedded()
        else:
            session = boto3.Session()
            outputs = stack_outputs.read(args, session)
            findings = run_checks(Context(outputs, session, connect(args, outputs, session)))
    except (stack_outputs.StackOutputsError, RenderError) as error:  # RenderError: no tracked RBAC to check against
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.output == "json":
        print(json.dumps([asdict(f) for f in findings], indent=2))
    else:
        _print(findings)
    return 1 if any(f.status == FAIL for f in findings) else 0


def _embedded() -> list[Any]:
    world = dev_package.load("autoscaler_dev.world.installation")  # the moto world and the emulator: not shipped
    with world.EmbeddedInstallation.running() as installation:
        return list(installation.findings())


def _print(findings: list[Any]) -> None:
    width = max(len(f.check) for f in findings)
    for finding in findings:
        print(f"{MARKS[finding.status]}  {finding.check:<{width}}  {finding.detail}")
        if finding.status != "ok" and finding.action:
            print(f"      {'':<{width}}  -> {finding.action}")
    counts = {status: sum(f.status == status for f in findings) for status in MARKS}
    print(f"\n{counts['ok']} ok, {counts['warn']} warnings, {counts['fail']} failures")
