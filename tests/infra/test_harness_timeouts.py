"""The Lambda harness gives each function the timeout the stack gives it, for every function the stack has."""

from autoscaler.routing import FUNCTIONS
from autoscaler_dev.harness import TIMEOUT_SECONDS, Context
from infra.catalog import FUNCTIONS as STACK


def test_the_harness_times_out_every_function_as_the_stack_does() -> None:
    assert set(TIMEOUT_SECONDS) == set(FUNCTIONS) == set(STACK)
    assert {name: Context.of(name).timeout_seconds for name in FUNCTIONS} == {
        name: spec.timeout_seconds for name, spec in STACK.items()
    }
