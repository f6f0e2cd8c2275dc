"""A dashboard of the autoscaler at work, and alarms for what needs a human: dead letters and failing functions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from autoscaler import metrics
from infra.constructs.autoscaler_function import AutoscalerFunction

PERIOD = Duration.minutes(5)
WIDTH = 12


def _custom(metric_name: str, service: str, statistic: str, label: str) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace=metrics.NAMESPACE,
        metric_name=metric_name,
        dimensions_map={metrics.SERVICE_DIMENSION: service},
        statistic=statistic,
        period=PERIOD,
        label=label,
    )


class Monitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        dashboard_name: str,
        functions: Sequence[AutoscalerFunction],
        queues: Mapping[str, sqs.IQueue],
        dead_letter_queues: Mapping[str, sqs.IQueue],
        alarm_email: str | None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.topic = sns.Topic(self, "Alarms", display_name="serverless-karpenter alarms", enforce_ssl=True)
        if alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(alarm_email))
        notify = actions.SnsAction(self.topic)

        self.alarms: list[cloudwatch.Alarm] = []
        for name, queue in dead_letter_queues.items():
            self._alarm(
                f"{name}DeadLetters",
                queue.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum"),
                f"Messages in the {name} dead-letter queue: inspect them, fix the cause, redrive",
                evaluation_periods=1,
                action=notify,
            )
        for function in functions:
            self._alarm(
                f"{function.node.id}Errors",
                function.function.metric_errors(period=PERIOD, statistic="Sum"),
                f"The {function.name} function failed in two of the last three 5-minute periods",
                evaluation_periods=3,
                datapoints_to_alarm=2,
                action=notify,
            )

        self._alarm(
            "ProvisionerFailedPasses",
            cloudwatch.Metric(  # no label: an alarm on a labelled metric is rendered as a metric-math alarm
                namespace=metrics.NAMESPACE,
                metric_name=metrics.PROVISIONER_FAILED_PASSES,
                dimensions_map={metrics.SERVICE_DIMENSION: "provisioner"},
                statistic="Sum",
                period=PERIOD,
            ),
            "Provisioning passes failed in two of the last three 5-minute periods (their batches were acknowledged; "
            "see the provisioner's logs)",
            evaluation_periods=3,
            datapoints_to_alarm=2,
            action=notify,
        )

        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=dashboard_name)
        self.dashboard.add_widgets(
            self._graph(
                "Queue depth", [q.metric_approximate_number_of_messages_visible(label=n) for n, q in queues.items()]
            ),
            self._graph(
                "Dead-letter queue depth",
                [q.metric_approximate_number_of_messages_visible(label=n) for n, q in dead_letter_queues.items()],
            ),
        )
        self.dashboard.add_widgets(
            self._graph("Function errors", [f.function.metric_errors(label=f.name, period=PERIOD) for f in functions]),
            self._graph(
                "Function duration (p99)",
                [f.function.metric_duration(label=f.name, period=PERIOD, statistic="p99") for f in functions],
            ),
        )
        self.dashboard.add_widgets(
            self._graph(
                "NodeClaims launched / terminated",
                [
                    _custom(metrics.NODECLAIMS_LAUNCHED, "provisioner", "Sum", "launched"),
                    _custom(metrics.NODECLAIMS_TERMINATED, "termination", "Sum", "terminated"),
                ],
            ),
            self._graph(
                "Interruption message queue to action (s)",
                [
                    _custom(metrics.INTERRUPTION_MESSAGE_QUEUE_DURATION, "interruption", "p50", "p50"),
                    _custom(metrics.INTERRUPTION_MESSAGE_QUEUE_DURATION, "interruption", "p99", "p99"),
                ],
            ),
        )

    def _graph(self, title: str, series: Sequence[cloudwatch.IMetric]) -> cloudwatch.GraphWidget:
        return cloudwatch.GraphWidget(title=title, left=list(series), width=WIDTH)

    def _alarm(
        self,
        construct_id: str,
        metric: cloudwatch.Metric,
        description: str,
        *,
        evaluation_periods: int,
        action: actions.SnsAction,
        datapoints_to_alarm: int | None = None,
    ) -> None:
        alarm = metric.create_alarm(
            self,
            construct_id,
            alarm_description=description,
            threshold=0,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=evaluation_periods,
            datapoints_to_alarm=datapoints_to_alarm,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        alarm.add_alarm_action(action)
        self.alarms.append(alarm)
