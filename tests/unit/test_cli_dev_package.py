"""The sub-commands that need the dev package find it by name. Where it is installed without its dependencies
(``pip install -e .`` without the dev extras), they say in one line how to install them and exit 2; a module missing
from a package that is installed is a bug and is not dressed up as an install problem. (Without the dev package at
all, from the built layer: tests/infra/test_layer_contents.py.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from autoscaler.cli import COMMANDS, build_parser
from autoscaler.commands import dev_package

ROOT = Path(__file__).parents[2]
# The CLI in a process where `blocked` cannot be imported (as if it were not installed).
WITHOUT = (
    "import sys; sys.modules[sys.argv.pop(1)] = None; from autoscaler.cli import main; sys.exit(main(sys.argv[1:]))"
)
INSTALL = "pip install -e '.[dev]' in a checkout of the repository (or make .venv)"


def cli_without(blocked: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT, blocked, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("blocked", "args"),
    [
        ("moto", ["plan", "--embedded", "-f", "events/manifests/general-purpose.yaml"]),
        ("aiohttp", ["simulate", "events/scenarios/spread.yaml"]),
        ("moto", ["invoke", "nodeclass", "events/scheduled-event.json", "--embedded"]),
    ],
    ids=["plan-without-moto", "simulate-without-aiohttp", "invoke-embedded-without-moto"],
)
def test_a_missing_dependency_of_the_world_says_how_to_install_it(blocked: str, args: list[str]) -> None:
    done = cli_without(blocked, *args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"autoscaler {args[0]}: needs the dev package and its dependencies, {blocked} is not installed: {INSTALL}"
    ]


def test_commands_that_need_no_world_run_without_its_dependencies() -> None:
    done = cli_without("moto", "validate", "events/manifests")
    assert done.returncode == 0, done.stderr
    assert "0 invalid" in done.stdout


def test_a_module_missing_from_an_installed_package_is_a_bug_not_an_install_problem() -> None:
    with pytest.raises(ModuleNotFoundError, match=r"autoscaler_dev\.commands\.no_such_command"):
        dev_package.load("autoscaler_dev.commands.no_such_command")
    with pytest.raises(ModuleNotFoundError, match=r"autoscaler\.no_such_module"):
        dev_package.load("autoscaler.no_such_module")


def test_the_dev_commands_are_registered_from_the_dev_package_when_it_is_installed() -> None:
    assert [m for m in COMMANDS if dev_package.is_dev(m)] == [
        "autoscaler_dev.commands.invoke",
        "autoscaler_dev.commands.simulate",
    ]
    simulate = build_parser().parse_args(["simulate", "a.yaml", "--jobs", "2"])
    assert (simulate.jobs, simulate.run.__wrapped__.__module__) == (2, "autoscaler_dev.commands.simulate")
