"""Judge Karpenter's example manifests twice: with ``autoscaler validate`` and with Karpenter's own CRDs.

Point it at the ``examples/`` folder and the CRD folder of the same Karpenter release::

    python -m tools.karpenter_examples /tmp/karpenter/examples /tmp/karpenter/pkg/apis/crds

For each document of a kind those CRDs serve, Karpenter's verdict comes from its CRD (schema defaults applied,
then OpenAPI and CEL evaluated by ``tools.crd_eval``), ours from ``autoscaler validate``; other kinds (the
example workloads) are listed as skipped. The two must agree on admitted or rejected; our warnings (runtime
validation, gated-off fields) are shown beside. The exit status is 1 when any verdict differs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autoscaler.commands.validate import Verdict, judge
from autoscaler.manifests import Document, load_documents
from tools import crd_eval
from tools.crd_walk import load_crds


@dataclass
class Judgement:
    """One example document: Karpenter's CRD's verdict and ours (None when the kind is not Karpenter's)."""

    origin: str
    subject: str
    karpenter: list[str] | None = None  # what Karpenter's CRD rejects (empty: admitted)
    ours: Verdict | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def agree(self) -> bool:
        return self.ours is None or self.karpenter is None or (not self.karpenter) == self.ours.valid


def _schemas(crds: Mapping[str, Mapping[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """The served schema of every CRD version, by (apiVersion, kind)."""
    schemas = {}
    for crd in crds.values():
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            schemas[(f"{group}/{version['name']}", kind)] = crd_eval.served_schema(crd, version["name"])
    return schemas


def karpenter_verdict(schema: Mapping[str, Any], body: Any) -> list[str]:
    """What Karpenter's CRD rejects in ``body`` (after its defaults), as ``path: message``."""
    stored = crd_eval.with_defaults(schema, body)
    failures = crd_eval.schema_failures(schema, stored) + crd_eval.cel_failures(schema, stored)
    return [f"{path or '(object)'}: {message}" for path, message in failures]


def judge_examples(documents: Sequence[Document], crds: Mapping[str, Mapping[str, Any]]) -> list[Judgement]:
    schemas = _schemas(crds)
    judgements = []
    for document in documents:
        body = document.body if isinstance(document.body, dict) else {}
        key = (str(body.get("apiVersion")), str(body.get("kind")))
        subject = f"{key[1]}/{(body.get('metadata') or {}).get('name', '')}"
        judgement = Judgement(document.origin, subject)
        if key in schemas:
            judgement.karpenter = karpenter_verdict(schemas[key], body)
            judgement.ours = judge(document)
        else:
            judgement.notes.append(f"skipped: {key[0]} {key[1]} is not a kind of Karpenter's CRDs")
        judgements.append(judgement)
    return judgements


def _report(judgement: Judgement) -> list[str]:
    if judgement.ours is None or judgement.karpenter is None:
        return [f"SKIPPED   {judgement.subject}  ({judgement.origin}): {'; '.join(judgement.notes)}"]
    theirs = "rejected" if judgement.karpenter else "admitted"
    ours = "rejected" if not judgement.ours.valid else "admitted"
    mark = "AGREE    " if judgement.agree else "DIFFER   "
    lines = [f"{mark} {judgement.subject}  ({judgement.origin}): Karpenter's CRD {theirs}, autoscaler validate {ours}"]
    lines += [f"    Karpenter: {reason}" for reason in judgement.karpenter]
    lines += [f"    ours: {error}" for error in judgement.ours.errors]
    lines += [f"    ours, warning: {warning}" for warning in [*judgement.ours.warnings, *judgement.ours.ignored]]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.karpenter_examples", description=__doc__.split("\n\n")[0])
    parser.add_argument("examples", type=Path, help="Karpenter's examples/ folder at a release tag")
    parser.add_argument("karpenter", type=Path, help="the CRD folder of the same release (pkg/apis/crds)")
    args = parser.parse_args(argv)
    judgements = judge_examples(load_documents([args.examples]), load_crds(args.karpenter))
    for judgement in judgements:
        print("\n".join(_report(judgement)))
    judged = [j for j in judgements if j.ours is not None]
    differ = sum(not j.agree for j in judged)
    rejected = sum(bool(j.karpenter) for j in judged)
    skipped = len(judgements) - len(judged)
    print(
        f"\n{len(judgements)} documents: {len(judged)} Karpenter objects ({rejected} rejected by Karpenter's CRDs)",
        end="",
    )
    print(f", {skipped} skipped; {differ} verdicts differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
