"""The CDK app: `npx cdk synth -c clusterName=<name>` (cdk.json runs this module with the project's venv).

Synth is offline: no context lookups, no docker, no layer builds (see infra/constructs/layers.py).
cdk-nag's AwsSolutions pack runs as a validation plugin, so an unacknowledged finding fails synth and deploy.
"""

from __future__ import annotations

import sys

from aws_cdk import App, Validations
from cdk_nag import AwsSolutionsChecks

from infra.config import AppConfig, ConfigError
from infra.nag import acknowledge_findings
from infra.stacks.autoscaler_stack import AutoscalerStack


def stack_name(cluster_name: str) -> str:
    return f"serverless-karpenter-{cluster_name}"


def build(app: App, config: AppConfig | None = None) -> AutoscalerStack:
    """Add the autoscaler stack (and the cdk-nag checks) to an app; `config` defaults to the app's context."""
    config = config or AppConfig.from_context(app.node.try_get_context)
    stack = AutoscalerStack(
        app,
        "Autoscaler",
        config=config,
        stack_name=stack_name(config.cluster_name),
        description=f"serverless-karpenter: Karpenter v1 nodes on Lambda for EKS cluster {config.cluster_name}",
    )
    stack.acknowledged = acknowledge_findings(stack)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return stack


def main() -> int:
    app = App()
    try:
        build(app)
    except ConfigError as error:
        print(f"serverless-karpenter: {error}", file=sys.stderr)
        return 2
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())
