"""Every function gets the shared defaults: runtime, architecture, layers, SnapStart, tracing, logs, environment."""

from __future__ import annotations

import json
from typing import Any

import pytest

from autoscaler.settings import Settings
from infra.catalog import FUNCTIONS
from infra.constructs.interruption import MAX_RECEIVE_COUNT
from tests.infra.conftest import Synthesized

NAMES = list(FUNCTIONS)
SETTINGS_VARIABLES = {
    "CLUSTER_NAME",
    "FEATURE_GATES",
    "ENABLE_ZONAL_SHIFT",
    "CLUSTER_ENDPOINT",
    "STATE_TABLE_NAME",
    "INTERRUPTION_QUEUE_URL",
    "EVENT_BUS_NAME",
    "VM_MEMORY_OVERHEAD_PERCENT",
    "RESERVED_ENIS",
    "ISOLATED_VPC",
}
POWERTOOLS_VARIABLES = {"POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE", "LOG_LEVEL"}


def test_seven_functions_exist(synth: Synthesized) -> None:
    assert NAMES == [
        "provisioner",
        "interruption",
        "disruption",
        "termination",
        "garbage_collection",
        "nodeclass",
        "conversion",
    ]
    assert len(synth.of_type("AWS::Lambda::Function")) == 7


@pytest.mark.parametrize("name", NAMES)
def test_function_defaults(synth: Synthesized, name: str) -> None:
    function = synth.stack.functions[name]
    props = synth.props(function.function)
    spec = FUNCTIONS[name]
    assert props["Runtime"] == "python3.13"
    assert props["Architectures"] == ["arm64"]
    assert props["Handler"] == f"{name}/handler.handler"
    assert props["SnapStart"] == {"ApplyOn": "PublishedVersions"}
    assert props["TracingConfig"] == {"Mode": "Active"}
    assert props["MemorySize"] == spec.memory_mb
    assert props["Timeout"] == spec.timeout_seconds
    assert props["Role"] == synth.arn(function.role)
    assert props["Layers"] == [synth.ref(layer) for layer in synth.stack.layers.layers]
    assert props["LoggingConfig"] == {"LogGroup": synth.ref(function.log_group)}
    assert synth.props(function.log_group)["RetentionInDays"] == 30


def test_all_functions_share_one_code_asset(synth: Synthesized) -> None:
    keys = {json_key(props["Code"]) for props in _function_props(synth)}
    assert len(keys) == 1


@pytest.mark.parametrize("name", NAMES)
def test_environment_is_exactly_powertools_and_settings(synth: Synthesized, name: str) -> None:
    variables = synth.props(synth.stack.functions[name].function)["Environment"]["Variables"]
    own = {"INTERRUPTION_DLQ_URL", "INTERRUPTION_MAX_RECEIVES"} if name == "interruption" else set()
    assert set(variables) == POWERTOOLS_VARIABLES | SETTINGS_VARIABLES | own
    if own:
        assert variables["INTERRUPTION_DLQ_URL"] == synth.ref(synth.stack.interruption.dead_letters)
        assert variables["INTERRUPTION_MAX_RECEIVES"] == str(MAX_RECEIVE_COUNT)  # the queue's redrive count
    assert variables["POWERTOOLS_SERVICE_NAME"] == name
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == "ServerlessKarpenter"
    assert variables["LOG_LEVEL"] == "INFO"
    assert variables["STATE_TABLE_NAME"] == synth.ref(synth.stack.table)
    assert variables["INTERRUPTION_QUEUE_URL"] == synth.ref(synth.stack.interruption.queue)
    # The functions' own parser accepts what the stack sets (tokens stand in for deploy-time values).
    settings = Settings.from_env(
        {key: value if isinstance(value, str) else "resolved" for key, value in variables.items()}
    )
    assert settings.cluster_name == "demo"
    assert settings.event_bus_name == "serverless-karpenter-demo"
    assert settings.state_table_name == "resolved"
    assert settings.interruption_queue_url == "resolved"
    assert settings.vm_memory_overhead_percent == 0.075
    assert settings.reserved_enis == 0
    assert settings.isolated_vpc is False
    assert settings.spot_to_spot_consolidation is False
    assert settings.enable_zonal_shift is False


def test_variant_settings_reach_the_environment(variant: Synthesized) -> None:
    variables = variant.props(variant.stack.functions["disruption"].function)["Environment"]["Variables"]
    settings = Settings.from_env(
        {key: value if isinstance(value, str) else "resolved" for key, value in variables.items()}
    )
    assert settings.cluster_name == "prod-east"
    assert settings.cluster_endpoint == "https://ABCDEF.gr7.us-east-1.eks.amazonaws.com"
    assert settings.isolated_vpc is True
    assert settings.spot_to_spot_consolidation is True
    assert settings.enable_zonal_shift is True
    props = variant.props(variant.stack.functions["disruption"].function)
    assert props["Runtime"] == "python3.14"
    assert "SnapStart" not in props
    assert props["Architectures"] == ["x86_64"]
    assert variant.props(variant.stack.functions["disruption"].log_group)["RetentionInDays"] == 90


@pytest.mark.parametrize("name", NAMES)
def test_published_version_behind_live_alias(synth: Synthesized, name: str) -> None:
    function = synth.stack.functions[name]
    alias = synth.props(function.alias)
    assert alias["Name"] == "live"
    assert alias["FunctionName"] == synth.ref(function.function)
    version_id = alias["FunctionVersion"]["Fn::GetAtt"][0]
    version = synth.resources[version_id]
    assert version["Type"] == "AWS::Lambda::Version"
    assert version["Properties"]["FunctionName"] == synth.ref(function.function)
    assert version["DeletionPolicy"] == "Delete"  # replaced versions (and their snapshots) do not linger
    invoke_configs = [
        config["Properties"]
        for config in synth.of_type("AWS::Lambda::EventInvokeConfig").values()
        if config["Properties"]["FunctionName"] == synth.ref(function.function)
    ]
    assert invoke_configs == [
        {
            "FunctionName": synth.ref(function.function),
            # the alias ARN's 8th field: its name, "live"
            "Qualifier": {"Fn::Select": [7, {"Fn::Split": [":", synth.ref(function.alias)]}]},
            "MaximumEventAgeInSeconds": 600,
            "MaximumRetryAttempts": 2,
        }
    ]


def test_every_trigger_targets_the_alias_not_latest(synth: Synthesized) -> None:
    """SnapStart only applies to published versions: nothing may invoke $LATEST."""
    aliases = {synth.logical_id(f.alias) for f in synth.stack.functions.values()}
    functions = {synth.logical_id(f.function) for f in synth.stack.functions.values()}
    invokers = [
        *(m["Properties"]["FunctionName"] for m in synth.of_type("AWS::Lambda::EventSourceMapping").values()),
        *(p["Properties"]["FunctionName"] for p in synth.of_type("AWS::Lambda::Permission").values()),
        *(
            target["Arn"]
            for rule in synth.of_type("AWS::Events::Rule").values()
            for target in rule["Properties"]["Targets"]
            if _mentions(target["Arn"], aliases | functions)
        ),
    ]
    assert len(invokers) == 2 + 8 + 6  # 2 queues, 6 rule permissions + the URL's 2, 6 rules to functions
    for invoker in invokers:
        assert _mentions(invoker, aliases) and not _mentions(invoker, functions), invoker
    url = next(iter(synth.of_type("AWS::Lambda::Url").values()))["Properties"]
    assert url["Qualifier"] == "live"


def test_missing_handlers_are_reported_not_hidden(synth: Synthesized) -> None:
    for name, function in synth.stack.functions.items():
        warnings = [entry.data for entry in function.node.metadata if entry.type == "aws:cdk:warning"]
        handler_exists = (synth.stack.config.functions_dir / name / "handler.py").is_file()
        assert any("handler.py does not exist yet" in str(w) for w in warnings) == (not handler_exists)


def _function_props(synth: Synthesized) -> list[dict[str, Any]]:
    return [resource["Properties"] for resource in synth.of_type("AWS::Lambda::Function").values()]


def json_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _mentions(value: Any, logical_ids: set[str]) -> bool:
    text = json.dumps(value)
    return any(f'"{logical_id}"' in text for logical_id in logical_ids)
