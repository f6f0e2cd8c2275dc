"""The forwarder's container image, built and pushed by `cdk deploy` as a Docker image asset.

Synth only stages the build context into cdk.out (no docker, no network); `cdk deploy` builds it for the cluster's
node architecture and pushes it to the bootstrap stack's ECR repository, tagged by the context's hash, so a change
to the shipped package is a new tag and `autoscaler manifests` renders a Deployment that rolls. Why an asset rather
than a repository of the stack's own plus a push target: one command deploys everything, the tag follows the source,
and nothing in the stack holds images that outlive it (docs/deploy.md).

The context is what the Dockerfile copies and nothing else: the shipped package and its pins, not the dev package,
tests or the repository's virtualenv.
"""

from __future__ import annotations

from aws_cdk import IgnoreMode
from aws_cdk import aws_ecr_assets as ecr_assets
from constructs import Construct

from infra.config import REPO_ROOT

DOCKERFILE = "infra/manifests/forwarder/Dockerfile"
# Every path the Dockerfile copies (and the Dockerfile itself), relative to the repository's root.
BUILD_CONTEXT = (
    "pyproject.toml",
    "constraints.txt",
    "layers/dependencies/requirements.txt",
    "layers/autoscaler/autoscaler",
    DOCKERFILE,
)
PLATFORMS = {"arm64": ecr_assets.Platform.LINUX_ARM64, "x86_64": ecr_assets.Platform.LINUX_AMD64}


def context_patterns() -> list[str]:
    """Docker ignore patterns keeping only BUILD_CONTEXT (without bytecode), for the asset's staging and hash."""
    return ["*", *(f"!{path}" for path in BUILD_CONTEXT), "**/__pycache__", "**/*.pyc"]


class ForwarderImage(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, architecture: str) -> None:
        super().__init__(scope, construct_id)
        self.asset = ecr_assets.DockerImageAsset(
            self,
            "Image",
            directory=str(REPO_ROOT),
            file=DOCKERFILE,
            platform=PLATFORMS[architecture],
            exclude=context_patterns(),
            ignore_mode=IgnoreMode.DOCKER,
        )
        self.image_uri = self.asset.image_uri
