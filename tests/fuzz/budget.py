"""The fuzz budget: derandomized by default, scaled by profile, so that ``tests/fuzz`` stays under a minute.

``HYPOTHESIS_PROFILE=ci`` (default): a fixed derandomized search, reproducible in CI and locally.
``HYPOTHESIS_PROFILE=dev``: random, with ten times the examples, for a longer hunt before a release.
The profile is applied per test through :func:`fuzz`, never loaded globally, so that the unit tests'
own properties keep their settings when both directories run in one session.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
_SCALE = {"ci": 1, "dev": 10}.get(PROFILE, 1)
_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


def fuzz(max_examples: int) -> settings:
    """Settings for one fuzz test: ``max_examples`` under ``ci`` (derandomized), scaled up under ``dev``."""
    return settings(
        max_examples=max_examples * _SCALE,
        deadline=None,
        derandomize=PROFILE != "dev",
        database=None,
        suppress_health_check=_QUIET,
        print_blob=True,
    )
