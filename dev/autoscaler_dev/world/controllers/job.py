"""The Job controller (and the kubelet's part of it): up to ``parallelism`` pods at a time until
``completions`` have succeeded; a running pod's containers finish after ``RUN_SECONDS`` of virtual time
(the world runs no container), then the Job is Complete."""

from __future__ import annotations

from autoscaler.clock import parse_time
from autoscaler_dev.world.controllers.common import Context, Obj, condition, owned, pod_from, write_status

RUN_SECONDS = 30.0


def _finish(ctx: Context, pod: Obj) -> Obj:
    """The kubelet's report of a pod whose containers exited 0."""
    started = parse_time((pod.get("status") or {}).get("startTime"))
    if (pod.get("status") or {}).get("phase") != "Running" or started is None:
        return pod
    if (ctx.now() - started).total_seconds() < RUN_SECONDS:
        return pod
    now = ctx.stamp()
    statuses = [
        {
            **c,
            "ready": False,
            "started": False,
            "state": {"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": now}},
        }
        for c in pod["status"].get("containerStatuses") or ()
    ]
    conditions = [
        {**c, "status": "False", "reason": "PodCompleted"} if c.get("type") in ("Ready", "ContainersReady") else c
        for c in pod["status"].get("conditions") or ()
    ]
    status = {**pod["status"], "phase": "Succeeded", "containerStatuses": statuses, "conditions": conditions}
    return ctx.kubelet(str(pod["spec"]["nodeName"])).replace(pod, {"status": status}, "status")


def reconcile(ctx: Context, job: Obj, pods: list[Obj]) -> None:
    spec = job["spec"]
    name = job["metadata"]["name"]
    completions, parallelism = int(spec.get("completions", 1)), int(spec.get("parallelism", 1))
    mine = [_finish(ctx, p) for p in owned(pods, job)]
    # counted in status, as the controller tracks them: a finished pod deleted later (drained) stays counted
    finished = sum((p.get("status") or {}).get("phase") == "Succeeded" for p in mine)
    succeeded = max(finished, int((job.get("status") or {}).get("succeeded") or 0))
    active = [p for p in mine if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    status = dict(job.get("status") or {})
    status.setdefault("startTime", ctx.stamp())
    if succeeded < completions:
        labels = {
            "batch.kubernetes.io/job-name": name,
            "job-name": name,
            "batch.kubernetes.io/controller-uid": job["metadata"]["uid"],
        }
        for _ in range(min(parallelism, completions - succeeded) - len(active)):
            template = spec.get("template") or {}
            pod = pod_from(
                {**template, "spec": {**(template.get("spec") or {}), "restartPolicy": "Never"}}, job, labels=labels
            )
            active.append(ctx.kube.create(pod))
    status.update(
        active=len(active),
        succeeded=succeeded,
        ready=sum(1 for p in active if p.get("status", {}).get("phase") == "Running"),
    )
    if succeeded >= completions and not any(c.get("type") == "Complete" for c in status.get("conditions") or ()):
        now = ctx.stamp()
        status["completionTime"] = now
        status["conditions"] = [
            {
                k: v
                for k, v in condition(
                    "Complete", True, "CompletionsReached", "Reached expected number of succeeded pods", now
                ).items()
                if k != "lastUpdateTime"
            }
        ]
    write_status(ctx, job, status)
