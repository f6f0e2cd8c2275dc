"""`make layers` and how synth picks layers up: built, placeholder, stale or built for another runtime."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra import build_layers
from infra.constructs.layers import PLACEHOLDER_MARKER, LayerBuildMismatchError, resolve_layer


def test_autoscaler_layer_is_the_package_under_python(tmp_path: Path) -> None:
    layer = build_layers.build("autoscaler", tmp_path, python_version="3.13", architecture="arm64")
    assert (layer / "python" / "autoscaler" / "settings.py").is_file()
    assert (layer / "python" / "autoscaler" / "metrics.py").is_file()
    assert not list(layer.rglob("__pycache__"))
    info = json.loads((tmp_path / "autoscaler.json").read_text())
    assert info == {"python": "3.13", "architecture": "arm64", "inputs": build_layers.inputs_digest("autoscaler")}
    source = resolve_layer(tmp_path, "autoscaler", python_version="3.13", architecture="arm64")
    assert (source.path, source.built, source.stale) == (layer, True, False)


def test_rebuilding_replaces_the_previous_build(tmp_path: Path) -> None:
    build_layers.build("autoscaler", tmp_path, python_version="3.13", architecture="arm64")
    (tmp_path / "autoscaler" / "python" / "leftover.py").write_text("")
    build_layers.build("autoscaler", tmp_path, python_version="3.13", architecture="arm64")
    assert not (tmp_path / "autoscaler" / "python" / "leftover.py").exists()


def test_dependencies_are_wheels_for_the_lambda_platform() -> None:
    command = build_layers.pip_command(Path("/out"), python_version="3.12", architecture="arm64")
    joined = " ".join(command)
    assert "--platform manylinux_2_28_aarch64 --platform manylinux2014_aarch64" in joined
    assert "--only-binary=:all:" in command
    assert "--python-version 3.12" in joined
    assert "--implementation cp" in joined
    assert "--no-compile" in command  # bytecode of the host's Python would be useless on Lambda's
    assert command[-6:] == [
        "--target",
        "/out",
        "-r",
        str(build_layers.REQUIREMENTS),
        "-c",
        str(build_layers.CONSTRAINTS),
    ]
    x86 = " ".join(build_layers.pip_command(Path("/out"), python_version="3.13", architecture="x86_64"))
    assert "--platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64" in x86


def test_unbuilt_layer_becomes_a_placeholder(tmp_path: Path) -> None:
    source = resolve_layer(tmp_path, "dependencies", python_version="3.13", architecture="arm64")
    assert not source.built
    assert (source.path / "python" / PLACEHOLDER_MARKER).is_file()


def _fake_build(root: Path, name: str, **info: str) -> None:
    (root / name / "python").mkdir(parents=True)
    (root / f"{name}.json").write_text(json.dumps(info))


def test_a_layer_built_for_another_runtime_is_refused(tmp_path: Path) -> None:
    _fake_build(tmp_path, "dependencies", python="3.13", architecture="x86_64", inputs="x")
    with pytest.raises(LayerBuildMismatchError, match=r"built for .*x86_64.* the functions run .*arm64"):
        resolve_layer(tmp_path, "dependencies", python_version="3.13", architecture="arm64")


def test_a_layer_built_from_older_inputs_is_stale(tmp_path: Path) -> None:
    _fake_build(tmp_path, "dependencies", python="3.13", architecture="arm64", inputs="old")
    source = resolve_layer(tmp_path, "dependencies", python_version="3.13", architecture="arm64")
    assert source.built and source.stale
