"""User data per AMI family, rendered as the node will read it (plain text; base64 is the launch
template's business). Pure."""

from __future__ import annotations

from collections.abc import Callable

from autoscaler.apis.v1.ec2nodeclass import AMIFamily
from autoscaler.providers.aws.userdata import bottlerocket, eks_bootstrap, nodeadm, windows
from autoscaler.providers.aws.userdata.options import BootstrapOptions, ClusterInfo, UserDataError


def _custom(options: BootstrapOptions) -> str:
    return options.custom_user_data or ""  # a Custom family boots exactly what the user wrote


_RENDERERS: dict[str, Callable[[BootstrapOptions], str]] = {
    "AL2": eks_bootstrap.render,
    "AL2023": nodeadm.render,
    "Bottlerocket": bottlerocket.render,
    "Windows2019": windows.render,
    "Windows2022": windows.render,
    "Windows2025": windows.render,
    "Custom": _custom,
}


def render(family: AMIFamily, options: BootstrapOptions) -> str:
    """The user data of a node of ``family``. Raises UserDataError for input that cannot be merged."""
    return _RENDERERS[family](options)


__all__ = ["BootstrapOptions", "ClusterInfo", "UserDataError", "render"]
