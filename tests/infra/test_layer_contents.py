"""What ships is only what runs there. The autoscaler layer, file for file as `make layers` packages it, holds no
module of the dev package (the embedded world, the Kubernetes API emulator, the scheduling validator, the Lambda
harness), and nothing in it imports moto or aiohttp, wherever the import statement stands. The forwarder's image
copies nothing more. The scanners are shown to catch what they look for, and the layer's own ``autoscaler``
command, without the dev package, says how to install it."""

from __future__ import annotations

import ast
import hashlib
import os
import subprocess
import sys
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from infra import build_layers
from tests.infra.conftest import REPO_ROOT

DEV_PACKAGE = REPO_ROOT / "dev" / "autoscaler_dev"
DEV_ONLY_IMPORTS = ("moto", "aiohttp", "autoscaler_dev")
# Where the dev machinery lived inside the shipped package before it moved out.
FORMER_HOMES = ("autoscaler/simulation/", "autoscaler/scheduling/validation/", "autoscaler/commands/simulate.py")
DOCKERFILE = REPO_ROOT / "infra" / "manifests" / "forwarder" / "Dockerfile"


def imported_modules(source: str) -> set[str]:
    """Every module a Python file imports: import statements anywhere (module level, in a function, under
    TYPE_CHECKING) and constant names given to ``importlib.import_module`` or ``__import__``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Call) and _names_an_import(node.func) and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.add(first.value)
    return found


def _names_an_import(function: ast.expr) -> bool:
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
    return name in ("import_module", "__import__")


def dev_only_imports(files: Mapping[str, Path]) -> dict[str, list[str]]:
    """Per Python file of ``files``, the dev-only modules it imports."""
    found = {}
    for inside, path in files.items():
        if inside.endswith(".py"):
            modules = imported_modules(path.read_text())
            if hits := sorted(m for m in modules if m.partition(".")[0] in DEV_ONLY_IMPORTS):
                found[inside] = hits
    return found


def dev_modules(files: Mapping[str, Path]) -> list[str]:
    """The files of ``files`` that are dev machinery: outside the ``autoscaler`` package (``autoscaler_dev`` ...),
    where it used to live in the package, or a copy of one of the dev package's modules."""
    dev_sources = {_digest(path) for path in DEV_PACKAGE.rglob("*.py") if path.stat().st_size}
    return [
        inside
        for inside, path in files.items()
        if not inside.startswith("autoscaler/")
        or inside.startswith(FORMER_HOMES)
        or (path.suffix == ".py" and _digest(path) in dev_sources)
    ]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- the layer as it is built ------------------------------------------------------------------------------
def test_the_file_list_is_what_the_build_packages(tmp_path: Path) -> None:
    layer = build_layers.build("autoscaler", tmp_path, python_version="3.13", architecture="arm64") / "python"
    built = sorted(path.relative_to(layer).as_posix() for path in layer.rglob("*") if path.is_file())
    assert built == sorted(build_layers.autoscaler_files())
    assert "autoscaler/runtime.py" in built and "autoscaler/commands/dev_package.py" in built


def test_the_layer_holds_no_dev_machinery() -> None:
    files = build_layers.autoscaler_files()
    assert len(files) > 150  # the whole shipped package, not an empty list that passes anything
    assert dev_modules(files) == []


def test_nothing_in_the_layer_imports_moto_aiohttp_or_the_dev_package() -> None:
    assert dev_only_imports(build_layers.autoscaler_files()) == {}


def test_the_layer_digest_covers_only_what_ships(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A change in the dev package leaves the layer (and so the seven functions) unpublished; one in it does not."""
    before = build_layers.inputs_digest("autoscaler")
    package = tmp_path / "layers" / "autoscaler" / "autoscaler"
    package.mkdir(parents=True)
    (package / "settings.py").write_text("A = 1\n")
    (tmp_path / "dev" / "autoscaler_dev").mkdir(parents=True)
    monkeypatch.setattr(build_layers, "REPO_ROOT", tmp_path)
    monkeypatch.setattr(build_layers, "PACKAGE_DIR", package)
    shipped = build_layers.inputs_digest("autoscaler")
    (tmp_path / "dev" / "autoscaler_dev" / "world.py").write_text("import moto\n")
    assert build_layers.inputs_digest("autoscaler") == shipped
    (package / "settings.py").write_text("A = 2\n")
    assert build_layers.inputs_digest("autoscaler") != shipped != before


# --- the scanners catch what they look for -----------------------------------------------------------------
def test_imports_are_found_wherever_they_stand(tmp_path: Path) -> None:
    sources = {
        "autoscaler/top.py": "import moto\n",
        "autoscaler/local.py": "def serve():\n    from aiohttp import web\n    return web\n",
        "autoscaler/typing_only.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import moto.server\n",
        "autoscaler/by_name.py": "import importlib\nserver = importlib.import_module('moto.server')\n",
        "autoscaler/dev.py": "from autoscaler_dev.world import runner\n",
        "autoscaler/clean.py": "import motorway\nfrom autoscaler import moto_notes\nfrom . import aiohttp_like\n",
    }
    files = {}
    for inside, text in sources.items():
        files[inside] = tmp_path / inside.replace("/", "_")
        files[inside].write_text(text)
    assert dev_only_imports(files) == {
        "autoscaler/top.py": ["moto"],
        "autoscaler/local.py": ["aiohttp"],
        "autoscaler/typing_only.py": ["moto.server"],
        "autoscaler/by_name.py": ["moto.server"],
        "autoscaler/dev.py": ["autoscaler_dev.world"],
    }


def test_dev_modules_are_found_by_place_and_by_content(tmp_path: Path) -> None:
    shipped = tmp_path / "settings.py"
    shipped.write_text("CLUSTER = 'demo'\n")
    copied = tmp_path / "harness.py"
    copied.write_bytes((DEV_PACKAGE / "harness.py").read_bytes())
    files = {
        "autoscaler/settings.py": shipped,
        "autoscaler_dev/world/runner.py": shipped,
        "autoscaler/simulation/runner.py": shipped,
        "autoscaler/harness.py": copied,
    }
    assert dev_modules(files) == [
        "autoscaler_dev/world/runner.py",
        "autoscaler/simulation/runner.py",
        "autoscaler/harness.py",
    ]


# --- the forwarder's image ---------------------------------------------------------------------------------
def copied_sources(dockerfile: str) -> list[str]:
    """The build-context paths a Dockerfile's COPY instructions take (not those from another stage)."""
    sources = []
    for line in dockerfile.splitlines():
        words = line.split()
        if words[:1] == ["COPY"] and not any(w.startswith("--from=") for w in words):
            sources += [w.rstrip("/") for w in words[1:-1] if not w.startswith("--")]
    return sources


def test_the_forwarder_image_copies_the_shipped_package_only() -> None:
    sources = copied_sources(DOCKERFILE.read_text())
    assert "layers/autoscaler" in sources
    dev = DEV_PACKAGE.relative_to(REPO_ROOT)
    # A source that is the dev package or holds it ("." or "dev") would put it in the image's `pip install .`.
    assert [s for s in sources if dev == Path(s) or Path(s) in dev.parents] == []


def test_a_dockerfile_copying_the_checkout_is_caught() -> None:
    sources = copied_sources("FROM python\nCOPY --chown=1:1 . /src\nCOPY --from=build /install /usr/local\n")
    assert sources == ["."]
    assert Path(".") in DEV_PACKAGE.relative_to(REPO_ROOT).parents


# --- the layer's `autoscaler` command, where the dev package is not installed -------------------------------
@dataclass(frozen=True)
class LayerPython:
    """Python over the built layer and the dependencies, without site initialization: no editable install, so no
    ``autoscaler_dev`` (as in the forwarder's image or a Lambda function)."""

    layer: Path

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        path = os.pathsep.join([str(self.layer), sysconfig.get_paths()["purelib"]])
        return subprocess.run(
            [sys.executable, "-S", *args],
            cwd=REPO_ROOT,
            env={**os.environ, "PYTHONPATH": path, "COLUMNS": "200"},  # help lines unwrapped
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def autoscaler(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run("-m", "autoscaler.cli", *args)


@pytest.fixture(scope="module")
def layer_python(tmp_path_factory: pytest.TempPathFactory) -> LayerPython:
    out = tmp_path_factory.mktemp("layer")
    return LayerPython(build_layers.build("autoscaler", out, python_version="3.13", architecture="arm64") / "python")


@pytest.mark.parametrize(
    "args",
    [
        ["simulate", "events/scenarios/scale-out.yaml", "--jobs", "2"],
        ["invoke", "conversion", "events/conversion-review.json"],
        ["plan", "--embedded", "-f", "events/manifests/general-purpose.yaml"],
    ],
    ids=["simulate", "invoke", "plan-embedded"],
)
def test_embedded_world_commands_say_how_to_install_the_dev_package(layer_python: LayerPython, args: list[str]) -> None:
    done = layer_python.autoscaler(*args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"autoscaler {args[0]}: needs the dev package and its dependencies, autoscaler_dev is not installed: "
        "pip install -e '.[dev]' in a checkout of the repository (or make .venv)"
    ]
    assert done.stdout == ""


def test_the_layer_command_runs_from_the_layer_and_its_operator_commands_work(layer_python: LayerPython) -> None:
    where = layer_python.run("-c", "import autoscaler; print(autoscaler.__file__)")
    assert where.stdout.strip() == str(layer_python.layer / "autoscaler" / "__init__.py")
    listed = layer_python.autoscaler("--help")
    assert listed.returncode == 0
    assert listed.stdout.count("(not installed: pip install -e") == 2  # invoke and simulate
    validated = layer_python.autoscaler("validate", "events/manifests")
    assert validated.returncode == 0, validated.stderr
    assert "0 invalid" in validated.stdout
