"""The two Lambda layers every function uses: the autoscaler core and its third-party dependencies.

`make layers` builds them without docker into `build/layers/<name>/python/...` (pip's `--platform` and
`--only-binary` for the dependencies) and writes `build/layers/<name>.json` saying for which Python and
architecture. Synth never builds and never needs the network: a layer that is not built yet is replaced by a
placeholder (synth and tests work on a fresh clone) and the stack carries a warning that deploying it would
ship functions that cannot import their code. A built layer for another Python or architecture is an error.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from aws_cdk import Annotations, RemovalPolicy
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.build_layers import inputs_digest

LAYER_NAMES = ("autoscaler", "dependencies")
PLACEHOLDER_MARKER = "PLACEHOLDER"


class LayerBuildMismatchError(ValueError):
    """A built layer targets another Python version or architecture than the stack's functions."""


@dataclass(frozen=True)
class LayerSource:
    name: str
    path: Path
    built: bool
    stale: bool = False  # built from other sources than the current ones


def resolve_layer(layers_dir: Path, name: str, *, python_version: str, architecture: str) -> LayerSource:
    """The built layer directory if `make layers` made one for this runtime, else a placeholder."""
    built = layers_dir / name
    info_file = layers_dir / f"{name}.json"
    if (built / "python").is_dir() and info_file.is_file():
        info = json.loads(info_file.read_text())
        wanted = {"python": python_version, "architecture": architecture}
        found = {key: info.get(key) for key in wanted}
        if found != wanted:
            raise LayerBuildMismatchError(
                f"layer {name} in {built} was built for {found}, the functions run {wanted}: "
                f"run make layers PYTHON_VERSION={python_version} ARCH={architecture}"
            )
        return LayerSource(name, built, built=True, stale=info.get("inputs") != inputs_digest(name))
    return LayerSource(name, _placeholder(name), built=False)


def _placeholder(name: str) -> Path:
    # The CDK copies an asset into cdk.out during synth, so a temporary directory is enough.
    root = Path(tempfile.mkdtemp(prefix=f"serverless-karpenter-{name}-layer-"))
    (root / "python").mkdir()
    (root / "python" / PLACEHOLDER_MARKER).write_text(f"layer {name} not built: run `make layers` before deploying\n")
    return root


class FunctionLayers(Construct):
    """One LayerVersion per layer, shared by every function."""

    def __init__(
        self, scope: Construct, construct_id: str, *, layers_dir: Path, python_version: str, architecture: str
    ) -> None:
        super().__init__(scope, construct_id)
        runtime = lambda_.Runtime(f"python{python_version}", lambda_.RuntimeFamily.PYTHON)
        arch = lambda_.Architecture.ARM_64 if architecture == "arm64" else lambda_.Architecture.X86_64
        self.sources = [
            resolve_layer(layers_dir, name, python_version=python_version, architecture=architecture)
            for name in LAYER_NAMES
        ]
        self.layers: list[lambda_.ILayerVersion] = []
        for source in self.sources:
            layer = lambda_.LayerVersion(
                self,
                source.name.capitalize(),
                code=lambda_.Code.from_asset(str(source.path), exclude=["**/__pycache__", "**/*.pyc"]),
                compatible_runtimes=[runtime],
                compatible_architectures=[arch],
                description=f"serverless-karpenter {source.name} for Python {python_version} on {architecture}",
                removal_policy=RemovalPolicy.DESTROY,
            )
            if not source.built:
                Annotations.of(layer).add_warning_v2(
                    "serverless-karpenter:layerNotBuilt",
                    f"layer {source.name} is a placeholder: run `make layers` before `cdk deploy`",
                )
            elif source.stale:
                Annotations.of(layer).add_warning_v2(
                    "serverless-karpenter:layerStale",
                    f"layer {source.name} was built from older sources: run `make layers` again",
                )
            self.layers.append(layer)

    @property
    def all_built(self) -> bool:
        return all(source.built for source in self.sources)
