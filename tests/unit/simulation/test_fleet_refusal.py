"""The world's refused CreateFleet answer, read as the provider reads EC2's: every override of every launch
template the request asked for comes back as a capacity error (a request for two AMIs' templates, e.g. x86 and
arm64, must not leave the second template's offerings looking untried)."""

import botocore.session
from botocore.parsers import create_parser

from autoscaler.providers.aws.fleetrequest import capacity_failures
from autoscaler_dev.world.faults import _fleet_error


def _form() -> dict[str, str]:
    form = {"Action": "CreateFleet", "TargetCapacitySpecification.DefaultTargetCapacityType": "spot"}
    templates = (("lt-amd64", ["m5.large", "c5.large"]), ("lt-arm64", ["m6g.large"]))
    for config, (template, types) in enumerate(templates, 1):
        form[f"LaunchTemplateConfigs.{config}.LaunchTemplateSpecification.LaunchTemplateName"] = template
        for index, instance_type in enumerate(types, 1):
            form[f"LaunchTemplateConfigs.{config}.Overrides.{index}.InstanceType"] = instance_type
            form[f"LaunchTemplateConfigs.{config}.Overrides.{index}.SubnetId"] = "subnet-a"
    return form


def test_every_override_of_every_template_is_refused_and_read_as_a_capacity_failure() -> None:
    model = botocore.session.get_session().get_service_model("ec2").operation_model("CreateFleet")
    answer = create_parser("ec2").parse(
        {"body": _fleet_error(_form()), "headers": {}, "status_code": 200}, model.output_shape
    )
    assert answer["Instances"] == []
    failed = capacity_failures(answer["Errors"], "spot", {"subnet-a": "us-west-2a"})
    assert sorted((f.instance_type, f.zone, f.capacity_type) for f in failed) == [
        ("c5.large", "us-west-2a", "spot"),
        ("m5.large", "us-west-2a", "spot"),
        ("m6g.large", "us-west-2a", "spot"),
    ]
