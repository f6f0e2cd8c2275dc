"""``autoscaler crds --out DIR``: write the CustomResourceDefinitions generated from the models."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("crds", help="write the NodePool, NodeClaim and EC2NodeClass CRDs")
    parser.add_argument("--out", default="infra/manifests/crds", help="directory to write the CRDs to")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from autoscaler.crds import write_crds

    for path in write_crds(Path(args.out)):
        print(f"wrote {path}")
    return 0
