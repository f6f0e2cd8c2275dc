"""``python -m autoscaler_dev.iam.synth CONTEXT_JSON OUT.json``: synthesize the stack of this repository's ``infra/``
with CDK context ``CONTEXT_JSON`` (over ``cdk.json``'s) and write its template to ``OUT.json``.

Run in a process of its own (``template.synthesized``), so that a simulation does not load jsii and node. Offline,
with placeholder layers, as the infrastructure tests synthesize.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path


def main(argv: list[str]) -> int:
    context_json, out = argv
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")
    from aws_cdk import App

    from infra.app import build

    root = Path.cwd()
    base = json.loads((root / "cdk.json").read_text())["context"]
    with tempfile.TemporaryDirectory(prefix="autoscaler-synth-") as scratch:
        layers = Path(scratch) / "no-layers"
        layers.mkdir()
        context = {**base, "layersDir": str(layers), **json.loads(context_json)}
        app = App(context=context, outdir=str(Path(scratch) / "cdk.out"))
        stack = build(app)
        template = app.synth().get_stack_by_name(stack.stack_name).template
    Path(out).write_text(json.dumps(template, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
