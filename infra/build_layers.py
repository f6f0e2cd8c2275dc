"""`make layers`: build the two Lambda layers for the functions' Python and architecture, without docker.

    python -m infra.build_layers --python-version 3.13 --architecture arm64 [--out build/layers] [--only NAME]

- autoscaler: a copy of the shipped package `layers/autoscaler/autoscaler` under `python/` (no network); the dev
  package (`dev/autoscaler_dev`) is never part of it.
- dependencies: `pip install --platform manylinux... --only-binary=:all: --python-version X --target ...` of
  `layers/dependencies/requirements.txt`, constrained by `constraints.txt` so the layer runs the versions the
  tests ran. Wheels only: nothing is compiled here, so the host's Python and CPU do not matter.

Each build writes `<out>/<name>.json` (Python, architecture, digest of its inputs), which synth checks.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from infra.config import ARCHITECTURES, PYTHON_VERSIONS, REPO_ROOT

PACKAGE_DIR = REPO_ROOT / "layers" / "autoscaler" / "autoscaler"
REQUIREMENTS = REPO_ROOT / "layers" / "dependencies" / "requirements.txt"
CONSTRAINTS = REPO_ROOT / "constraints.txt"
_IGNORED = ("__pycache__", ".mypy_cache")


def _platform_tags(architecture: str) -> list[str]:
    machine = "aarch64" if architecture == "arm64" else "x86_64"
    # Lambda's Python 3.12+ runtimes run Amazon Linux 2023 (glibc 2.34): manylinux_2_28 wheels and older fit.
    return [f"manylinux_2_28_{machine}", f"manylinux2014_{machine}"]


def inputs_digest(name: str) -> str:
    """A digest of what a layer is built from, so synth can tell a stale build: for the autoscaler layer, exactly
    the files it ships (``autoscaler_files``), so that nothing else (the dev package, tests) republishes it."""
    digest = hashlib.sha256()
    files = list(autoscaler_files().values()) if name == "autoscaler" else [REQUIREMENTS, CONSTRAINTS]
    for path in files:
        digest.update(str(path.relative_to(REPO_ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def autoscaler_files() -> dict[str, Path]:
    """The autoscaler layer's files: path under ``python/`` -> source file, in order. The package without bytecode
    or caches; ``build`` copies exactly these and ``inputs_digest`` covers exactly these."""
    files = {}
    for path in sorted(PACKAGE_DIR.rglob("*")):
        inside = path.relative_to(PACKAGE_DIR.parent)
        if path.is_file() and not any(part in _IGNORED for part in inside.parts) and path.suffix != ".pyc":
            files[inside.as_posix()] = path
    return files


def pip_command(target: Path, *, python_version: str, architecture: str) -> list[str]:
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile"]
    for tag in _platform_tags(architecture):
        command += ["--platform", tag]
    command += ["--implementation", "cp", "--python-version", python_version, "--only-binary=:all:"]
    return [*command, "--target", str(target), "-r", str(REQUIREMENTS), "-c", str(CONSTRAINTS)]


def build_autoscaler(target: Path) -> None:
    for inside, source in autoscaler_files().items():
        (target / inside).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target / inside)


def build(name: str, out: Path, *, python_version: str, architecture: str) -> Path:
    layer = out / name
    if layer.exists():
        shutil.rmtree(layer)
    target = layer / "python"
    target.mkdir(parents=True)
    if name == "autoscaler":
        build_autoscaler(target)
    else:
        subprocess.run(pip_command(target, python_version=python_version, architecture=architecture), check=True)
    info = {"python": python_version, "architecture": architecture, "inputs": inputs_digest(name)}
    (out / f"{name}.json").write_text(json.dumps(info, indent=2) + "\n")
    return layer


def size_mib(path: Path) -> float:
    return sum(file.stat().st_size for file in path.rglob("*") if file.is_file()) / 2**20


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--python-version", choices=PYTHON_VERSIONS, default="3.13")
    parser.add_argument("--architecture", choices=ARCHITECTURES, default="arm64")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "build" / "layers")
    parser.add_argument("--only", choices=("autoscaler", "dependencies"))
    args = parser.parse_args(argv)
    for name in [args.only] if args.only else ["autoscaler", "dependencies"]:
        layer = build(name, args.out, python_version=args.python_version, architecture=args.architecture)
        print(f"layer {name}: {layer} ({size_mib(layer):.1f} MiB unzipped)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
