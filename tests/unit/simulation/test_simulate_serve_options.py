"""``autoscaler simulate`` refuses serve-only options without ``--serve``, with a clear message and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from autoscaler.cli import main

SCENARIO = Path(__file__).resolve().parents[3] / "events" / "scenarios" / "spread.yaml"


@pytest.mark.parametrize("option", [["--kubeconfig", "/tmp/kc"], ["--port", "6443"]])
def test_serve_options_need_serve(option: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(SCENARIO), *option]) == 2
    assert "--kubeconfig and --port go with --serve" in capsys.readouterr().err


def test_serve_takes_one_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(SCENARIO), str(SCENARIO), "--serve"]) == 2
    assert "--serve takes one scenario" in capsys.readouterr().err
