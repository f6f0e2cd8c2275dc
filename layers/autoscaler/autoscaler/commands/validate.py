"""``autoscaler validate FILE...``: check manifests as the API server (and Karpenter) would.

Three verdicts per object: INVALID when the API server would reject it (schema, CEL rules); WARNING when it is
admitted but Karpenter's runtime validation fails (a NodePool then has ``ValidationSucceeded=False`` and is not
Ready), or when it uses a field whose feature gate is off (accepted and ignored); OK otherwise. Only INVALID
objects make the command fail.

A GitOps folder holds other kinds too: Kubernetes' own kinds (Deployments, Services, RBAC, kustomizations...) are
skipped and counted, any other kind is reported as not validated (a warning); Karpenter's API groups are always
validated, so a v1beta1 NodePool or a misspelt kind there is INVALID, as the API server would say.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from autoscaler.apis.feature_gates import gated_off
from autoscaler.apis.validation import KINDS, FieldError, InvalidObjectError, parse, runtime_errors
from autoscaler.commands.manifest_args import add_manifest_arguments, manifest_documents
from autoscaler.kube.objects import Body
from autoscaler.manifests import Document
from autoscaler.settings import FeatureGates, SettingsError

# The API groups whose objects are validated, and Kubernetes' own groups, whose objects are skipped.
KARPENTER_GROUPS = frozenset(api_version.split("/")[0] for api_version, _ in KINDS)
KUBERNETES_GROUPS = frozenset(
    {
        "",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "apps",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "flowcontrol.apiserver.k8s.io",
        "kustomize.config.k8s.io",
        "networking.k8s.io",
        "node.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "resource.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
    }
)
SKIPPED_KUBERNETES = "kubernetes"  # Verdict.skipped: one of Kubernetes' own kinds
SKIPPED_UNKNOWN = "unknown"  # Verdict.skipped: a kind neither Karpenter's nor Kubernetes'


def api_group(api_version: str) -> str:
    return api_version.split("/", maxsplit=1)[0] if "/" in api_version else ""


@dataclass
class Verdict:
    origin: str
    kind: str
    name: str
    errors: list[FieldError] = field(default_factory=list)
    # Admitted, but Karpenter's runtime validation fails (ValidationSucceeded=False).
    warnings: list[FieldError] = field(default_factory=list)
    # Admitted, and inert while a feature gate is off.
    ignored: list[FieldError] = field(default_factory=list)
    # Not validated: SKIPPED_KUBERNETES or SKIPPED_UNKNOWN ("" when validated).
    skipped: str = ""
    api_version: str = ""

    @property
    def valid(self) -> bool:
        return not self.errors


def judge(document: Document, gates: FeatureGates | None = None) -> Verdict:
    body = document.body if isinstance(document.body, dict) else {}
    view = Body(body)
    kind, name = view.kind, view.name
    if document.error is not None:
        return Verdict(document.origin, kind, name, [FieldError("", "yaml", document.error)])
    api_version = str(body.get("apiVersion") or "")
    group = api_group(api_version)
    if kind and api_version and group not in KARPENTER_GROUPS:
        skipped = SKIPPED_KUBERNETES if group in KUBERNETES_GROUPS else SKIPPED_UNKNOWN
        return Verdict(document.origin, kind, name, skipped=skipped, api_version=api_version)
    try:
        obj = parse(document.body)
    except InvalidObjectError as error:
        return Verdict(document.origin, error.kind or kind, error.name or name, error.errors)
    enabled = (gates or FeatureGates()).enabled
    return Verdict(document.origin, kind, name, warnings=runtime_errors(obj), ignored=gated_off(obj, enabled))


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "validate", help="validate NodePool, NodeClaim, EC2NodeClass, NodeOverlay and CapacityBuffer manifests"
    )
    add_manifest_arguments(parser, "YAML files or directories of them (repeatable)", required=True)
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    parser.add_argument(
        "--feature-gates",
        default="",
        metavar="GATES",
        help="Karpenter's feature gates as deployed, e.g. StaticCapacity=true (default: Karpenter's defaults)",
    )
    parser.set_defaults(run=run)


def _print(verdict: Verdict) -> None:
    title = f"{verdict.kind}/{verdict.name}" if verdict.kind else "(unknown object)"
    if verdict.skipped == SKIPPED_KUBERNETES:
        return  # counted in the summary
    if verdict.skipped == SKIPPED_UNKNOWN:
        print(
            f"WARNING  {title}  ({verdict.origin}): {verdict.api_version} {verdict.kind} is not a kind we know: "
            "not validated"
        )
        return
    if not verdict.valid:
        print(f'INVALID  {title}  ({verdict.origin}): The {verdict.kind} "{verdict.name}" is invalid:')
        for error in verdict.errors:
            print(f"  * {error}")
            print(f"      rule: {error.rule}")
        return
    if not verdict.warnings and not verdict.ignored:
        print(f"OK       {title}  ({verdict.origin})")
        return
    print(f"WARNING  {title}  ({verdict.origin}): admitted by the API server, but:")
    if verdict.warnings:
        print(f"  Karpenter's runtime validation fails (ValidationSucceeded=False: the {verdict.kind} is not Ready):")
        for warning in verdict.warnings:
            print(f"  * {warning}")
    for ignored in verdict.ignored:
        print(f"  * {ignored}")


def run(args: argparse.Namespace) -> int:
    try:
        gates = FeatureGates.parse(args.feature_gates)
    except SettingsError as error:
        print(f"--feature-gates: {error}")
        return 2
    verdicts = [judge(d, gates) for d in manifest_documents(args)]
    if args.output == "json":
        print(json.dumps([{**asdict(v), "valid": v.valid} for v in verdicts], indent=2))
    else:
        for verdict in verdicts:
            _print(verdict)
        _summary(verdicts)
    if not verdicts:
        print("no objects found")
        return 1
    return 1 if any(not v.valid for v in verdicts) else 0


def _summary(verdicts: list[Verdict]) -> None:
    checked = [v for v in verdicts if not v.skipped]
    invalid = sum(not v.valid for v in checked)
    warned = sum(v.valid and bool(v.warnings or v.ignored) for v in checked)
    line = f"\n{len(checked)} objects, {len(checked) - invalid} valid ({warned} with warnings), {invalid} invalid"
    kubernetes = sum(v.skipped == SKIPPED_KUBERNETES for v in verdicts)
    unknown = sum(v.skipped == SKIPPED_UNKNOWN for v in verdicts)
    if kubernetes or unknown:
        line += f"; not validated: {kubernetes} Kubernetes objects skipped, {unknown} of unknown kinds"
    print(line)
