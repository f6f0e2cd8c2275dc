"""``autoscaler manifests --from-stack NAME | --stack-outputs FILE``: the cluster side of one installation (CRDs,
the functions' RBAC, the forwarder) rendered from the stack's outputs, to stdout for ``kubectl apply -f -`` or
into a folder for GitOps (with a kustomization.yaml listing the files)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from autoscaler.commands import installation, stack_outputs
from autoscaler.manifests import dump_manifest

# Applied in this order: the kinds before their objects, the namespace before what lives in it.
FILES = ("crds.yaml", "rbac.yaml", "forwarder.yaml")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "manifests", help="render the CRDs, the functions' RBAC and the forwarder for one installation"
    )
    stack_outputs.add_source_options(parser)
    parser.add_argument(
        "--identity",
        choices=installation.IDENTITIES,
        default="pod-identity",
        help="how the forwarder gets its AWS role: EKS Pod Identity (default) or IRSA (Fargate: deploy the stack "
        "with -c forwarderOidcIssuer=...)",
    )
    parser.add_argument("--image", metavar="URI", help="the forwarder's image (default: the ForwarderImageUri output)")
    parser.add_argument(
        "--serve-v1beta1",
        action="store_true",
        help="CRDs also serve v1beta1, converted by the stack's webhook (ConversionWebhookUrl), for clusters that "
        "still store v1beta1 objects",
    )
    parser.add_argument(
        "--ca-bundle", metavar="FILE", help="PEM the API server trusts the webhook with (default: public roots)"
    )
    parser.add_argument("--out", metavar="DIR", help="write crds.yaml, rbac.yaml, forwarder.yaml and a kustomization")
    parser.add_argument(
        "--manifests",
        metavar="DIR",
        type=Path,
        default=installation.TRACKED_MANIFESTS,
        help="the tracked infra/manifests folder rendered from",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        groups = render(args)
    except (stack_outputs.StackOutputsError, installation.RenderError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.out is None:
        sys.stdout.write("---\n".join(dump_manifest(obj) for objects in groups.values() for obj in objects))
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, objects in groups.items():
        (out / name).write_text("---\n".join(dump_manifest(obj) for obj in objects))
    kustomization = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": list(FILES)}
    (out / "kustomization.yaml").write_text(dump_manifest(kustomization))
    print(f"wrote {', '.join(str(out / name) for name in (*FILES, 'kustomization.yaml'))}", file=sys.stderr)
    return 0


def render(args: argparse.Namespace) -> dict[str, list[Any]]:
    outputs = stack_outputs.read(args)
    install = installation.Installation.from_outputs(outputs, image=args.image)
    ca_bundle = None
    if args.ca_bundle:
        path = Path(args.ca_bundle)
        if not path.is_file():
            raise ValueError(f'the path "{args.ca_bundle}" does not exist')
        ca_bundle = path.read_bytes()
    if args.serve_v1beta1 and not install.conversion_url:
        raise ValueError(f"--serve-v1beta1 needs the ConversionWebhookUrl output, which {outputs.source} lacks")
    return dict(
        zip(
            FILES,
            (
                installation.crds(
                    serve_v1beta1=args.serve_v1beta1, conversion_url=install.conversion_url, ca_bundle=ca_bundle
                ),
                installation.functions_rbac(args.manifests),
                installation.forwarder(install, identity=args.identity, tracked=args.manifests),
            ),
            strict=True,
        )
    )
