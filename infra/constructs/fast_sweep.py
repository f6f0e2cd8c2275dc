"""`-c forwarder=none`: pending pods found with nothing in the cluster, by the provisioner's sweep every few
seconds instead of every minute.

EventBridge schedules stop at one minute, so a Step Functions Express loop sends the sweep: it puts the same
Scheduled Event the one-minute schedule puts on the provisioning FIFO queue, waits, and goes round again for just
under five minutes (an Express execution's limit); a five-minute schedule starts the next loop. Each sweep is a
whole provisioner pass, which reads the pending pods as every pass does, so nothing new runs in Lambda and the
FIFO queue's one message group keeps passes from overlapping. Why this and not a poller or the control plane's
audit log, and what it costs: docs/zero-in-cluster.md.
"""

from __future__ import annotations

from aws_cdk import Aws, Duration, RemovalPolicy
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from autoscaler.routing import PROVISIONING_GROUP

EXECUTION_SECONDS = 300  # an Express execution's limit, and the schedule that starts the next loop


def iterations(seconds: int) -> int:
    """Sweeps per execution: the last one leaves the execution a wait short of its limit."""
    return EXECUTION_SECONDS // seconds


class FastSweep(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        queue: sqs.IQueue,
        seconds: int,
        log_retention: logs.RetentionDays,
        enabled: bool = True,
    ) -> None:
        super().__init__(scope, construct_id)
        start = sfn.Pass(self, "Start", result=sfn.Result.from_object({"sweeps": 0}))
        sweep = tasks.SqsSendMessage(
            self,
            "Sweep",
            queue=queue,
            message_group_id=PROVISIONING_GROUP,
            # The schedule's event (autoscaler.events.ScheduledEvent), so the provisioner cannot tell them apart.
            message_body=sfn.TaskInput.from_object(
                {
                    "version": "0",
                    "id": sfn.JsonPath.uuid(),
                    "detail-type": "Scheduled Event",
                    "source": "aws.events",
                    "account": Aws.ACCOUNT_ID,
                    "time": sfn.JsonPath.string_at("$$.State.EnteredTime"),
                    "region": Aws.REGION,
                    "resources": sfn.JsonPath.array(sfn.JsonPath.string_at("$$.StateMachine.Id")),
                    "detail": {},
                }
            ),
            result_path=sfn.JsonPath.DISCARD,
        )
        count = sfn.Pass(self, "Count", parameters={"sweeps.$": "States.MathAdd($.sweeps, 1)"})
        wait = sfn.Wait(self, "Wait", time=sfn.WaitTime.duration(Duration.seconds(seconds)))
        done = sfn.Succeed(self, "Done")
        more = sfn.Choice(self, "More").when(
            sfn.Condition.number_greater_than_equals("$.sweeps", iterations(seconds)), done
        )
        wait.next(sweep)
        definition = start.next(sweep).next(count).next(more.otherwise(wait))
        self.log_group = logs.LogGroup(self, "Logs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY)
        self.machine = sfn.StateMachine(
            self,
            "Loop",
            definition_body=sfn.DefinitionBody.from_chainable(definition),
            state_machine_type=sfn.StateMachineType.EXPRESS,
            timeout=Duration.seconds(EXECUTION_SECONDS),
            tracing_enabled=True,
            logs=sfn.LogOptions(destination=self.log_group, level=sfn.LogLevel.ALL, include_execution_data=False),
        )
        self.schedule = events.Rule(
            self,
            "Schedule",
            description=f"start the {seconds}-second provisioner sweep loop (no in-cluster forwarder)",
            schedule=events.Schedule.rate(Duration.seconds(EXECUTION_SECONDS)),
            targets=[targets.SfnStateMachine(self.machine)],
            enabled=enabled,
        )
