"""The forwarder's image as a Docker image asset: staged at synth without docker, built for the configured
architecture at deploy, its context only what the Dockerfile copies, its URI a stack output; and the forwarder's
role trusted through IRSA when the cluster's OIDC issuer is given (Fargate)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from infra.constructs.forwarder_image import BUILD_CONTEXT, DOCKERFILE
from tests.infra.conftest import REPO_ROOT, Synthesized
from tests.infra.test_layer_contents import copied_sources

ISSUER = "oidc.eks.us-east-1.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE"


def _image_asset(synthesized: Synthesized) -> dict[str, Any]:
    assets = json.loads((synthesized.outdir / f"{synthesized.stack.artifact_id}.assets.json").read_text())
    (image,) = assets["dockerImages"].values()
    return dict(image)


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_the_image_is_staged_at_synth_with_only_what_the_dockerfile_copies(synth: Synthesized) -> None:
    image = _image_asset(synth)
    assert image["source"]["dockerFile"] == DOCKERFILE
    assert image["source"]["platform"] == "linux/amd64"  # the default forwarderArchitecture
    staged = _files(synth.outdir / image["source"]["directory"])
    package = REPO_ROOT / "layers" / "autoscaler" / "autoscaler"
    shipped = {
        str(p.relative_to(REPO_ROOT)) for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    }
    assert shipped <= staged
    assert staged - shipped == {
        "pyproject.toml",
        "constraints.txt",
        "layers/dependencies/requirements.txt",
        DOCKERFILE,
    }


def test_the_build_context_covers_every_copy_of_the_dockerfile() -> None:
    sources = copied_sources((REPO_ROOT / DOCKERFILE).read_text())
    assert sources
    for source in sources:
        assert any(source == path or Path(path).is_relative_to(source) for path in BUILD_CONTEXT), source


def test_the_image_uri_is_an_output_tagged_by_the_context(synth: Synthesized) -> None:
    image = _image_asset(synth)
    (destination,) = image["destinations"].values()
    uri = synth.template["Outputs"]["ForwarderImageUri"]["Value"]["Fn::Sub"]
    assert uri.endswith(f"/{destination['repositoryName']}:{destination['imageTag']}")


def test_the_image_follows_the_forwarder_architecture(variant: Synthesized) -> None:
    assert _image_asset(variant)["source"]["platform"] == "linux/arm64"


def test_irsa_trust_is_added_for_the_forwarder_service_account_only(synth: Synthesized, variant: Synthesized) -> None:
    def trust(synthesized: Synthesized) -> list[dict[str, Any]]:
        return list(synthesized.props(synthesized.stack.access.forwarder_role)["AssumeRolePolicyDocument"]["Statement"])

    assert [s["Principal"] for s in trust(synth)] == [{"Service": "pods.eks.amazonaws.com"}]
    pod_identity, irsa = trust(variant)
    assert pod_identity["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert irsa["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert irsa["Condition"] == {
        "StringEquals": {
            f"{ISSUER}:sub": "system:serviceaccount:kube-system:serverless-karpenter-forwarder",
            f"{ISSUER}:aud": "sts.amazonaws.com",
        }
    }
    provider = json.dumps(irsa["Principal"]["Federated"])
    assert f":oidc-provider/{ISSUER}" in provider
